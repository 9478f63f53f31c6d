package causal

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	gonumstat "gonum.org/v1/gonum/stat"
)

// quietLevel is gonum's LinInterp 5th percentile of the sorted sample, to
// the bit, for every sample size around the rule's steps, with ties, and
// for samples a sort must handle (NaN, negative zero); the sample itself is
// left as it was.
func TestQuietLevelMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	sorted := func(x []float64) float64 {
		s := slices.Clone(x)
		slices.Sort(s)
		return gonumstat.Quantile(0.05, gonumstat.LinInterp, s, nil)
	}
	for n := 1; n <= 130; n++ {
		for _, draw := range []func() float64{
			func() float64 { return rng.Float64() * 3 },
			func() float64 { return float64(rng.IntN(4)) / 3 },
		} {
			x := make([]float64, n)
			for i := range x {
				x[i] = draw()
			}
			orig := slices.Clone(x)
			if got, want := quietLevel(x), sorted(x); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("n=%d: quietLevel = %v, gonum on the sorted sample %v (sample %v)", n, got, want, orig)
			}
			if !slices.Equal(x, orig) {
				t.Fatalf("n=%d: quietLevel reordered its input", n)
			}
		}
	}
	for _, x := range [][]float64{{1, math.NaN(), 2}, {math.Copysign(0, -1), 0, 0, 1, 2}} {
		if got, want := quietLevel(x), sorted(x); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%v: quietLevel = %v, gonum %v", x, got, want)
		}
	}
}
