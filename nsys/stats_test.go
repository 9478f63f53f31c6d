package nsys

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// A sorter sorts as slices.Sort does, through its radix path too and with
// its buffer reused for larger and smaller inputs: random values, negative
// ones, the extremes, values sharing their high bytes (nanosecond
// durations) and all-equal ones.
func TestSorter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	gens := map[string]func() int64{
		"any":       func() int64 { return int64(r.Uint64()) },
		"durations": func() int64 { return 1000 + r.Int64N(1_000_000) },
		"small":     func() int64 { return r.Int64N(7) - 3 },
		"equal":     func() int64 { return 42 },
		"extremes":  func() int64 { return []int64{math.MinInt64, math.MaxInt64, 0, -1, 1}[r.IntN(5)] },
	}
	var st sorter
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, radixMin - 1, radixMin, 100_003, 10_000} {
			v := make([]int64, n)
			for i := range v {
				v[i] = gen()
			}
			want := slices.Clone(v)
			slices.Sort(want)
			st.sort(v)
			if !slices.Equal(v, want) {
				t.Fatalf("%s, %d values: not sorted as slices.Sort sorts them", name, n)
			}
		}
	}
}
