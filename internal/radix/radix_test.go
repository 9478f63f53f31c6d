package radix

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortMatchesStableSort checks the radix sort against the standard
// library's stable sort on keys shaped like the join's (a few pids in the
// high half, correlation IDs in the low half, many ties: the kernels of one
// graph launch share a correlation), on random keys, and on short slices.
func TestSortMatchesStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := map[string]func(i int) uint64{
		"pids and correlations": func(int) uint64 {
			return uint64(1000+r.IntN(3))<<32 | uint64(r.IntN(5000))
		},
		"one pid, ordered with strays": func(i int) uint64 {
			if r.IntN(50) == 0 {
				return 7<<32 | uint64(r.IntN(i+1))
			}
			return 7<<32 | uint64(i)
		},
		"random": func(int) uint64 { return r.Uint64() },
		"equal":  func(int) uint64 { return 42 },
	}
	for name, gen := range shapes {
		for _, n := range []int{0, 1, 2, 255, 256, 257, 10_000} {
			xs := make([]Keyed, n)
			for i := range xs {
				xs[i] = Keyed{gen(i), int32(i)}
			}
			want := slices.Clone(xs)
			slices.SortStableFunc(want, func(a, b Keyed) int { return cmp.Compare(a.Key, b.Key) })
			Sort(xs)
			if !slices.Equal(xs, want) {
				t.Fatalf("%s, n=%d: radix order differs from the stable sort", name, n)
			}
		}
	}
}

// BenchmarkSort compares the radix sort with the comparison sort the
// join used before, on 2 M keys of one pid with correlations out of order
// the way GPU ops in time order hold them (streams interleaved).
func BenchmarkSort(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	base := make([]Keyed, 2_000_000)
	for i := range base {
		base[i] = Keyed{4242<<32 | uint64(i+r.IntN(2000)-1000+1000), int32(i)}
	}
	xs := make([]Keyed, len(base))
	b.Run("radix", func(b *testing.B) {
		for b.Loop() {
			copy(xs, base)
			Sort(xs)
		}
	})
	b.Run("pdqsort-func", func(b *testing.B) {
		byKey := func(a, b Keyed) int { return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Idx, b.Idx)) }
		for b.Loop() {
			copy(xs, base)
			slices.SortFunc(xs, byKey)
		}
	})
}
