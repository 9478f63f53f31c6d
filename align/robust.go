package align

import (
	"math"
	"slices"

	"github.com/llmprof/llmprof/internal/stat"
)

// weightedLine fits r = a + d·u by weighted least squares (weights w); with
// fixDrift it fits the weighted mean offset only. Used on bracket midpoints,
// weighted 1/width² (docs/statistics.md A.4 step 2a).
func weightedLine(u, r, w []float64, fixDrift bool) (a, d float64) {
	var sw, su, sr float64
	for i := range u {
		sw += w[i]
		su += w[i] * u[i]
		sr += w[i] * r[i]
	}
	if sw == 0 {
		return 0, 0
	}
	mu, mr := su/sw, sr/sw
	if fixDrift {
		return mr, 0
	}
	var suu, sur float64
	for i := range u {
		du := u[i] - mu
		suu += w[i] * du * du
		sur += w[i] * du * (r[i] - mr)
	}
	if suu == 0 {
		return mr, 0
	}
	d = sur / suu
	return mr - d*mu, d
}

// absResidualQuantiles returns the p50 and p99 of |r − (a + d·u)|.
func absResidualQuantiles(u, r []float64, a, d float64) (p50, p99 float64) {
	res := make([]float64, len(u))
	for i := range u {
		res[i] = math.Abs(r[i] - a - d*u[i])
	}
	slices.Sort(res)
	return stat.Quantile(res, 0.5), stat.Quantile(res, 0.99)
}
