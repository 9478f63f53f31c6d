package attribution

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sortDistribution is distribution as it was written before it selected
// its quantiles: sort, sum in sorted order, read the order statistics.
func sortDistribution(ns []float64) Distribution {
	d := Distribution{N: len(ns)}
	if len(ns) == 0 {
		nan := math.NaN()
		d.P50, d.P90, d.P95, d.P99, d.Max, d.Mean = nan, nan, nan, nan, nan, nan
		return d
	}
	slices.Sort(ns)
	var sum float64
	for _, v := range ns {
		sum += v
	}
	d.P50 = Percentile(ns, 50) / 1e6
	d.P90 = Percentile(ns, 90) / 1e6
	d.P95 = Percentile(ns, 95) / 1e6
	d.P99 = Percentile(ns, 99) / 1e6
	d.Max = ns[len(ns)-1] / 1e6
	d.Mean = sum / float64(len(ns)) / 1e6
	return d
}

// distribution's quantiles by selection, and its mean, are bit for bit those
// of sorting first (and sortedDistribution's, given the sorted values): on whole nanoseconds (selected), fractions (sorted, as
// TPOT's are), ties, and sums past 2^53.
func TestDistributionMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	gens := map[string]func() float64{
		"whole ns":  func() float64 { return float64(rng.Int64N(5_000_000_000)) },
		"ties":      func() float64 { return float64(rng.IntN(4) * 1000) },
		"fractions": func() float64 { return rng.Float64() * 1e7 },
		"past 2^53": func() float64 { return float64(rng.Int64N(1<<52) + 1<<51) },
		"negative":  func() float64 { return float64(rng.Int64N(2000) - 1000) },
	}
	for name, gen := range gens {
		for n := 0; n < 300; n += 1 + n/10 {
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = gen()
			}
			want := sortDistribution(slices.Clone(xs))
			got := distribution(slices.Clone(xs))
			if presorted := sortedDistribution(slices.Sorted(slices.Values(xs))); presorted != want && n > 0 {
				t.Fatalf("%s, n=%d: sortedDistribution = %+v, sorting first %+v", name, n, presorted, want)
			}
			for _, f := range []struct {
				name string
				a, b float64
			}{{"p50", got.P50, want.P50}, {"p90", got.P90, want.P90}, {"p95", got.P95, want.P95}, {"p99", got.P99, want.P99}, {"max", got.Max, want.Max}, {"mean", got.Mean, want.Mean}} {
				if math.Float64bits(f.a) != math.Float64bits(f.b) {
					t.Fatalf("%s, n=%d: %s = %v, sorted %v", name, n, f.name, f.a, f.b)
				}
			}
			if got.N != want.N {
				t.Fatalf("%s, n=%d: N = %d, sorted %d", name, n, got.N, want.N)
			}
		}
	}
}
