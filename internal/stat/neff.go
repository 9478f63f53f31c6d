package stat

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
	var m float64
	for _, v := range x {
		m += v
	}
	m /= float64(n)
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
