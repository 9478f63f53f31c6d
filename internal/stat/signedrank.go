package stat

import (
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// PairedHodgesLehmann estimates the location of paired differences d (the
// candidate's request i minus the baseline's request i) by the one-sample
// Hodges–Lehmann estimator, the median of the N = n(n+1)/2 Walsh averages
// (d_i + d_j)/2, i ≤ j, with the distribution-free interval dual to the
// Wilcoxon signed-rank test: [W_(C), W_(N+1−C)] (Hollander & Wolfe,
// Nonparametric Statistical Methods, §3.2), C from the normal
// approximation of the signed-rank statistic. It assumes independent,
// symmetrically distributed differences; fewer than MinSignedRankN give no
// interval (K = 0).
//
// The Walsh averages are never formed: the k-th is found by bisection on
// its value, each step counting the averages at or below a value in O(n)
// with two pointers over the sorted differences, so time is O(n log n) and
// memory O(n).
func PairedHodgesLehmann(d []float64, alpha float64) Shift {
	n := len(d)
	if n == 0 {
		return Shift{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN()}
	}
	s := slices.Clone(d)
	slices.Sort(s)
	N := int64(n) * int64(n+1) / 2
	var est float64
	if N%2 == 1 {
		est = walshKth(s, N/2+1)
	} else {
		est = (walshKth(s, N/2) + walshKth(s, N/2+1)) / 2
	}
	c := signedRankC(n, alpha)
	if c < 1 {
		return Shift{Estimate: est, Low: math.Inf(-1), High: math.Inf(1)}
	}
	return Shift{Estimate: est, Low: walshKth(s, c), High: walshKth(s, N+1-c), K: c}
}

// MinSignedRankN is the fewest pairs for which the normal approximation of
// the signed-rank statistic is used for an interval (its exact tail is
// within a few tenths of a percent from 20 on; Hollander & Wolfe, §3.1).
const MinSignedRankN = 20

// signedRankC is the order statistic of the Walsh averages that bounds the
// 1−α interval: C = N + 1 − ⌈N/2 + ½ + z_{α/2}·σ⌉, σ² = n(n+1)(2n+1)/24,
// so that W_(C) > δ exactly when SignedRankTest's upper p-value at δ is at
// most α/2 (without ties); 0 when n is too small.
func signedRankC(n int, alpha float64) int64 {
	if n < MinSignedRankN {
		return 0
	}
	nf := float64(n)
	N := nf * (nf + 1) / 2
	z := distuv.UnitNormal.Quantile(1 - alpha/2)
	c := int64(N) + 1 - int64(math.Ceil(N/2+0.5+z*math.Sqrt(nf*(nf+1)*(2*nf+1)/24)))
	return max(c, 0)
}

// walshAtMost counts the Walsh averages (s_i + s_j)/2, i ≤ j, that are ≤ t,
// and those < t, for sorted s.
func walshAtMost(s []float64, t float64) (leq, less int64) {
	n := len(s)
	b, a := n-1, n-1
	for i := range n {
		// The largest j with s_i + s_j ≤ 2t falls as s_i grows.
		for b >= 0 && s[i]+s[b] > 2*t {
			b--
		}
		for a >= 0 && s[i]+s[a] >= 2*t {
			a--
		}
		if b >= i {
			leq += int64(b - i + 1)
		}
		if a >= i {
			less += int64(a - i + 1)
		}
	}
	return leq, less
}

// walshKth returns the k-th smallest Walsh average of sorted s (1-based),
// to the resolution of float64: the smallest t at which walshAtMost counts
// k. Every average lies in [s_0, s_{n−1}].
func walshKth(s []float64, k int64) float64 {
	lo, hi := s[0], s[len(s)-1]
	if leq, _ := walshAtMost(s, lo); leq >= k {
		return lo
	}
	for {
		mid := lo + (hi-lo)/2
		if mid <= lo || mid >= hi {
			return hi
		}
		if leq, _ := walshAtMost(s, mid); leq >= k {
			hi = mid
		} else {
			lo = mid
		}
	}
}

// SignedRankTest returns the one-sided p-values, from the normal
// approximation with continuity correction, that the differences' location
// is at most delta (upper: small when d − delta is mostly positive) and at
// least delta (lower). T+ is the number of Walsh averages of d − delta above
// 0, ties counted half (Tukey's identity with the signed-rank statistic).
func SignedRankTest(sorted []float64, delta float64) (pUpper, pLower float64) {
	n := len(sorted)
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	nf := float64(n)
	N := nf * (nf + 1) / 2
	leq, less := walshAtMost(sorted, delta)
	tplus := N - float64(leq) + float64(leq-less)/2
	sigma := math.Sqrt(nf * (nf + 1) * (2*nf + 1) / 24)
	mu := N / 2
	return distuv.UnitNormal.Survival((tplus - mu - 0.5) / sigma), distuv.UnitNormal.CDF((tplus - mu + 0.5) / sigma)
}
