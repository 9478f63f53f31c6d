package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestMedianOfGapsMatchesSortedMedian checks medianITL's selection against
// the median of the sorted gaps it replaced, to the bit: odd and even
// counts, ties (gaps rounded to a few levels), signed zeros and infinities.
func TestMedianOfGapsMatchesSortedMedian(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 5))
	special := []float64{math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)}
	for trial := range 5000 {
		g := make([]float64, rng.IntN(40))
		levels := 1 + rng.IntN(50)
		for i := range g {
			if trial%3 == 0 && rng.IntN(8) == 0 {
				g[i] = special[rng.IntN(len(special))]
				continue
			}
			g[i] = float64(rng.IntN(levels)) * 0.001
		}
		want := median(sortedCopy(g))
		got := medianOfGaps(slices.Clone(g))
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("gaps %v: selection %v, sorted %v", g, got, want)
		}
	}
}
