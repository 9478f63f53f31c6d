package radix

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

type rec struct {
	key uint64
	seq int
}

// Sort orders as a stable comparison sort does, below and above the
// comparison-sort threshold, with the scratch reused for larger and smaller
// inputs: random keys, keys that share their high bytes, few distinct keys
// (stability shows), all equal, and the extremes.
func TestSortStable(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	gens := map[string]func() uint64{
		"any":      r.Uint64,
		"low":      func() uint64 { return 1000 + r.Uint64N(1_000_000) },
		"few":      func() uint64 { return r.Uint64N(5) << 40 },
		"equal":    func() uint64 { return 7 },
		"extremes": func() uint64 { return []uint64{0, 1, math.MaxUint64, math.MaxUint64 - 1, 1 << 63}[r.IntN(5)] },
	}
	var buf []rec
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, small - 1, small, 100_003, 10_000} {
			v := make([]rec, n)
			for i := range v {
				v[i] = rec{gen(), i}
			}
			want := slices.Clone(v)
			slices.SortStableFunc(want, func(a, b rec) int { return cmp.Compare(a.key, b.key) })
			buf = Sort(v, buf, func(x *rec) uint64 { return x.key })
			if !slices.Equal(v, want) {
				t.Fatalf("%s, %d records: not the stable order", name, n)
			}
		}
	}
}

func BenchmarkSort(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	v := make([]int64, 1_000_000)
	for i := range v {
		v[i] = 1000 + r.Int64N(1_000_000)
	}
	w := make([]int64, len(v))
	var buf []int64
	b.Run("radix", func(b *testing.B) {
		for b.Loop() {
			copy(w, v)
			buf = Sort(w, buf, func(x *int64) uint64 { return uint64(*x) ^ 1<<63 })
		}
	})
	b.Run("slices.Sort", func(b *testing.B) {
		for b.Loop() {
			copy(w, v)
			slices.Sort(w)
		}
	})
}
