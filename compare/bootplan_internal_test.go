package compare

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmprof/llmprof/internal/stat"
)

// TestTokenBootstrapMatchesExpandedCounts: a token series' replicates
// (bootPlan.addTokens: the units' multiplicities read through unitGroups
// and SortedView.ByUnit) are those of the series with each token drawn as
// often as its request, expanded to one count per token and read by
// stat.ResampledMean and the plain view, bit for bit. The tokens of a unit
// come in several runs; in one series some are NaN, in the other none (the
// sum without a NaN test per value).
func TestTokenBootstrapMatchesExpandedCounts(t *testing.T) {
	for _, withNaN := range []bool{true, false} {
		tokenBootstrapMatchesExpandedCounts(t, withNaN)
	}
}

func tokenBootstrapMatchesExpandedCounts(t *testing.T, withNaN bool) {
	rng := rand.New(rand.NewPCG(11, 12))
	const units, reps, seed, stream = 40, 200, 3, "tokens"
	var values []float64
	var unit []int32
	for range 600 {
		v := math.Round(1e3 * math.Exp(rng.NormFloat64()))
		if rng.IntN(20) == 0 && withNaN {
			v = math.NaN()
		}
		values = append(values, v)
		unit = append(unit, int32(rng.IntN(units)))
	}
	fam := &Family{Kind: KindLatency}
	specs := []spec{{name: "mean", fam: fam, stat: StatMean}, {name: "p50", fam: fam, q: 0.5}, {name: "p99", fam: fam, q: 0.99}}
	var b bootPlan
	for _, s := range specs {
		b.addTokens(s, values, unit)
	}
	got := b.run(units, 1, reps, seed, stream)

	view := stat.NewSortedView(values)
	expanded := make([]int32, len(values))
	rs := stat.NewResampler(units, 1, seed, stream)
	for rep := range reps {
		counts := rs.Next()
		total := 0
		for j, u := range unit {
			expanded[j] = counts[u]
			total += int(counts[u])
		}
		for _, s := range specs {
			want := stat.ResampledMean(values, expanded, total)
			if s.stat != StatMean {
				want = view.Quantile(expanded, total, s.q)
			}
			if g := got[s.name][rep]; math.Float64bits(g) != math.Float64bits(want) {
				t.Fatalf("NaN %v, replicate %d, %s: %v, want %v", withNaN, rep, s.name, g, want)
			}
		}
	}
}
