package stat

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// Quantiles by selection are Quantile's on the sorted sample, bit for bit,
// on samples with and without ties, of every size up to a few hundred.
func TestQuantilesMatchSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	// The second list reaches the maximum from far below it (maxLast): in
	// the first, 0.999's upper neighbour is the maximum.
	for _, qs := range [][]float64{{0.5, 0.9, 0.95, 0.99, 1, 0, 0.25, 0.999, 0.1}, {0.5, 0.9, 1}} {
		for n := 0; n < 400; n += 1 + n/20 {
			for _, ties := range []bool{false, true} {
				xs := make([]float64, n)
				for i := range xs {
					xs[i] = rng.NormFloat64() * 1e6
					if ties {
						xs[i] = float64(rng.IntN(5))
					}
				}
				sorted := slices.Sorted(slices.Values(xs))
				got := Quantiles(slices.Clone(xs), qs...)
				for i, q := range qs {
					want := Quantile(sorted, q)
					if math.Float64bits(got[i]) != math.Float64bits(want) && !(math.IsNaN(got[i]) && math.IsNaN(want)) {
						t.Fatalf("n=%d ties=%v q=%v: Quantiles %v, Quantile of the sorted sample %v", n, ties, q, got[i], want)
					}
				}
			}
		}
	}
}

// Select is the sorted sample's k-th element for every k, with ties.
func TestSelectMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for n := 1; n < 200; n += 1 + n/10 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(rng.IntN(n/2 + 1))
		}
		sorted := slices.Sorted(slices.Values(xs))
		for k := range n {
			if got := Select(slices.Clone(xs), k); got != sorted[k] {
				t.Fatalf("n=%d: Select(k=%d) = %v, sorted %v", n, k, got, sorted[k])
			}
		}
	}
}

// Select leaves xs partitioned around the k-th element (none larger before
// it, none smaller after) on samples of the shapes that stall a partition:
// one value, two values, sorted, reversed and ties at the minimum, at sizes
// below and above the branch-free partition's threshold (lomutoMin) and the
// sampled pivot's (pivotNear).
func TestSelectPartitions(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	shapes := map[string]func(i, n int) float64{
		"equal":    func(int, int) float64 { return 7 },
		"two":      func(i, _ int) float64 { return float64(i % 2) },
		"sorted":   func(i, _ int) float64 { return float64(i) },
		"reversed": func(i, n int) float64 { return float64(n - i) },
		"zeros":    func(int, int) float64 { return float64(max(0, rng.IntN(10)-7)) },
		"random":   func(int, int) float64 { return rng.NormFloat64() },
	}
	for name, shape := range shapes {
		for _, n := range []int{1, 2, lomutoMin - 1, lomutoMin, lomutoMin + 1, 300, 1000, 1025, 1026, 5000} {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = shape(i, n)
			}
			sorted := slices.Sorted(slices.Values(xs))
			for _, k := range []int{0, n / 10, n / 2, n * 9 / 10, n * 99 / 100, n - 1} {
				ys := slices.Clone(xs)
				got := Select(ys, k)
				if got != sorted[k] || ys[k] != got {
					t.Fatalf("%s n=%d: Select(k=%d) = %v (xs[k] %v), sorted %v", name, n, k, got, ys[k], sorted[k])
				}
				for i, y := range ys {
					if i < k && y > got || i > k && y < got {
						t.Fatalf("%s n=%d k=%d: xs[%d] = %v on the wrong side of %v", name, n, k, i, y, got)
					}
				}
			}
		}
	}
}
