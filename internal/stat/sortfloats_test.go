package stat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortFloatsMatchesSlicesSort: the slice SortFloats leaves is
// slices.Sort's bit for bit, on both sides of the radix threshold, with
// ties, negatives, zeros and infinities, and with a −0 or a NaN (which
// send it to slices.Sort).
func TestSortFloatsMatchesSlicesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 24 {
		n := []int{1, 100, radixFloatsMin - 1, radixFloatsMin, radixFloatsMin + 777, 40000}[trial%6]
		xs := make([]float64, n)
		for i := range xs {
			v := math.Exp(rng.NormFloat64()*2) - 0.5
			switch {
			case trial%4 == 1: // ms-rounded: many ties
				v = math.Round(v*4) / 4
			case trial%4 == 2 && rng.IntN(50) == 0:
				v = []float64{0, math.Inf(1), math.Inf(-1), math.MaxFloat64, -math.SmallestNonzeroFloat64}[rng.IntN(5)]
			}
			xs[i] = v
		}
		if trial%4 == 3 && trial/6%2 == 0 {
			xs[rng.IntN(n)] = math.Copysign(0, -1)
		}
		if trial%4 == 3 && trial/6%2 == 1 {
			xs[rng.IntN(n)] = math.NaN()
		}
		want := slices.Clone(xs)
		slices.Sort(want)
		got := slices.Clone(xs)
		SortFloats(got)
		for i := range want {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				t.Fatalf("trial %d (n=%d): [%d] = %v, slices.Sort has %v", trial, n, i, got[i], want[i])
			}
		}
	}
}

func BenchmarkSortFloats(b *testing.B) {
	for _, n := range []int{4096, 8192, 65536} {
		rng := rand.New(rand.NewPCG(1, 2))
		src := make([]float64, n)
		for i := range src {
			src[i] = math.Exp(rng.NormFloat64()*0.5 + 3)
		}
		xs := make([]float64, n)
		b.Run(fmt.Sprintf("slices.Sort/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				copy(xs, src)
				slices.Sort(xs)
			}
		})
		b.Run(fmt.Sprintf("SortFloats/n=%d", n), func(b *testing.B) {
			for b.Loop() {
				copy(xs, src)
				SortFloats(xs)
			}
		})
	}
}
