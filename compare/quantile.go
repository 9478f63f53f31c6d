package compare

import (
	"math"
	"slices"
)

// MinSamplesForQuantile is the smallest sample size for which a
// distribution-free, equal-tailed 1−α confidence interval of the q-quantile
// has finite bounds: the interval [x_(1), x_(n)] must leave at most α/2
// outside on each side, so max(q, 1−q)^n ≤ α/2 (binomial order statistics,
// as benchstat's QuantileCI; docs/diff.md). At α = 0.05 that is 6 for
// the median, 36 for p90, 72 for p95 and 368 for p99. Below it a quantile
// comparison can never be confident, so the gate says inconclusive.
func MinSamplesForQuantile(q, alpha float64) int {
	p := max(q, 1-q)
	if p >= 1 {
		return math.MaxInt32
	}
	n := math.Log(alpha/2) / math.Log(p)
	// Guard against n landing a hair above an integer by rounding error.
	return int(math.Ceil(n - 1e-9))
}

// mean returns the arithmetic mean, NaN for an empty sample.
func mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// stddev returns the sample standard deviation (n−1 denominator).
func stddev(x []float64) float64 {
	if len(x) < 2 {
		return math.NaN()
	}
	m := mean(x)
	var s float64
	for _, v := range x {
		s += (v - m) * (v - m)
	}
	return math.Sqrt(s / float64(len(x)-1))
}

// sortedCopy returns x sorted ascending, leaving x alone.
func sortedCopy(x []float64) []float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s
}

// allPositive reports whether every value is > 0, so logs exist.
func allPositive(xs ...[]float64) bool {
	for _, x := range xs {
		for _, v := range x {
			if !(v > 0) {
				return false
			}
		}
	}
	return true
}

// logs returns the natural logs of x.
func logs(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = math.Log(v)
	}
	return out
}

// EffectiveN is the effective sample size of an autocorrelated series,
// n / (1 + 2 Σ_{k≥1} ρ̂_k), summing the sample autocorrelations until the
// first non-positive one (the initial-positive-sequence truncation of Geyer
// 1992, Stat. Sci. 7:473; docs/diff.md). It assumes a stationary series
// in time order; it is capped at n and at most 200 lags are summed.
func EffectiveN(x []float64) float64 {
	n := len(x)
	if n < 3 {
		return float64(n)
	}
	m := mean(x)
	var c0 float64
	for _, v := range x {
		c0 += (v - m) * (v - m)
	}
	if c0 == 0 {
		return float64(n)
	}
	sum := 0.0
	for k := 1; k < min(n-1, 200); k++ {
		var ck float64
		for i := k; i < n; i++ {
			ck += (x[i] - m) * (x[i-k] - m)
		}
		rho := ck / c0
		if rho <= 0 {
			break
		}
		sum += rho
	}
	return min(float64(n), float64(n)/(1+2*sum))
}
