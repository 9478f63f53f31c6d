package attribution

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortTPOT's radix sort orders the values as a sort by value does, bit for
// bit, on both of its paths (comparison below 512 values), with ties,
// negative values and values whose high digits all agree.
func TestSortTPOTMatchesSortByValue(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 5, 511, 512, 513, 5000, 44544} {
		for kind := range 4 {
			o := make(tpotOrder, n)
			for i := range o {
				var v float64
				switch kind {
				case 0: // TPOTs in ns, fractional
					v = float64(int64(rng.ExpFloat64()*2.3e7)) / float64(1+rng.IntN(300))
				case 1: // a few distinct values
					v = float64(rng.IntN(7)) * 1e6
				case 2: // both signs
					v = rng.NormFloat64() * 1e3
				case 3: // one exponent: only the low digits differ
					v = math.Float64frombits(math.Float64bits(1<<20) | uint64(rng.Int64N(1<<33)))
				}
				o[i] = tpotSample{v, int32(i)}
			}
			want := slices.Clone(o)
			slices.SortStableFunc(want, func(a, b tpotSample) int { return cmp.Compare(a.v, b.v) })
			sortTPOT(o)
			for i := range o {
				if math.Float64bits(o[i].v) != math.Float64bits(want[i].v) {
					t.Fatalf("n=%d kind=%d: element %d is %v, want %v", n, kind, i, o[i].v, want[i].v)
				}
			}
		}
	}
}

// BenchmarkSortTPOT: sortTPOT against the comparison sort it replaced, on
// 44,544 TPOTs (the requests of bench/otlp.sh's 30 MiB dump) drawn as
// TestSortTPOTMatchesSortByValue's first kind.
func BenchmarkSortTPOT(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	in := make(tpotOrder, 44544)
	for i := range in {
		in[i] = tpotSample{float64(int64(rng.ExpFloat64()*2.3e7)) / float64(1+rng.IntN(300)), int32(i)}
	}
	o := make(tpotOrder, len(in))
	for _, c := range []struct {
		name string
		sort func(tpotOrder)
	}{
		{"radix", sortTPOT},
		{"comparison", func(o tpotOrder) {
			slices.SortFunc(o, func(a, b tpotSample) int { // no NaN: no cmp.Compare
				switch {
				case a.v < b.v:
					return -1
				case a.v > b.v:
					return 1
				}
				return 0
			})
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				copy(o, in)
				c.sort(o)
			}
		})
	}
}
