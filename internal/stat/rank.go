package stat

import (
	"math"
	"slices"
	"sync"

	"gonum.org/v1/gonum/stat/distuv"
)

// exactUMax is the largest sample size per side for which the U test uses the
// exact null distribution (as R's wilcox.test and go-moremath do for n < 50);
// beyond it the normal approximation is accurate to well under 1e-3 in p.
const exactUMax = 50

// UResult is the outcome of a Mann–Whitney U test of x (baseline) against y
// (candidate).
type UResult struct {
	// U counts the pairs (x_i, y_j) with y_j > x_i, ties counting ½: large U
	// means the candidate tends to be larger. 0 ≤ U ≤ n1·n2.
	U float64
	// P is the two-sided p-value for H0: both samples come from one
	// continuous distribution.
	P float64
	// Exact says P comes from the exact null distribution (no ties, both
	// n ≤ 50); otherwise from the tie-corrected normal approximation with
	// continuity correction.
	Exact bool
}

// MannWhitney runs the two-sided Mann–Whitney U test (Mann & Whitney 1947,
// Ann. Math. Statist. 18:50–60).
//
// Assumptions: observations are independent within and between samples.
// Under H0 every assignment of the pooled ranks to the two samples is equally
// likely. Without ties and with both samples of at most 50, P is computed
// from the exact distribution of U (the count recurrence below); otherwise U
// is standardized with mean n1·n2/2 and the tie-corrected variance
// (n1·n2/12)·((N+1) − Σ(t³−t)/(N(N−1))), with a continuity correction of ½,
// as R's wilcox.test(correct=TRUE) and scipy's mannwhitneyu(method=
// "asymptotic") do. x and y must not contain NaN.
func MannWhitney(x, y []float64) UResult {
	n1, n2 := len(x), len(y)
	if n1 == 0 || n2 == 0 {
		return UResult{U: math.NaN(), P: math.NaN()}
	}
	u, tieSum := uStatistic(x, y)
	if tieSum == 0 && n1 <= exactUMax && n2 <= exactUMax {
		d := exactU(n1, n2)
		lo := d.cdf(int(u))
		hi := 1 - d.cdf(int(u)-1)
		return UResult{U: u, P: min(1, 2*min(lo, hi)), Exact: true}
	}
	mu, sigma := uMoments(n1, n2, tieSum)
	return UResult{U: u, P: normalTwoSided(u, mu, sigma)}
}

// uStatistic returns U for y over x and the tie term Σ(t³−t) of the pooled
// sample, by ranking the pooled sample once (mid-ranks for ties). Samples
// already sorted (HodgesLehmann's and the shift tests' are) are ranked by a
// merge, in O(n1+n2); others by sorting the pooled sample.
func uStatistic(x, y []float64) (u, tieSum float64) {
	if sortedNoNaN(x) && sortedNoNaN(y) {
		return uStatisticSorted(x, y)
	}
	return uStatisticPooled(x, y)
}

// uStatisticPooled is uStatistic by sorting the pooled sample.
func uStatisticPooled(x, y []float64) (u, tieSum float64) {
	type obs struct {
		v   float64
		isY bool
	}
	pool := make([]obs, 0, len(x)+len(y))
	for _, v := range x {
		pool = append(pool, obs{v: v})
	}
	for _, v := range y {
		pool = append(pool, obs{v: v, isY: true})
	}
	slices.SortFunc(pool, func(a, b obs) int {
		switch {
		case a.v < b.v:
			return -1
		case a.v > b.v:
			return 1
		}
		return 0
	})
	var rankSumY float64
	for i := 0; i < len(pool); {
		j := i + 1
		for j < len(pool) && pool[j].v == pool[i].v {
			j++
		}
		t := float64(j - i)
		mid := float64(i+j+1) / 2 // mean of ranks i+1..j
		for k := i; k < j; k++ {
			if pool[k].isY {
				rankSumY += mid
			}
		}
		tieSum += t*t*t - t
		i = j
	}
	n2 := float64(len(y))
	return rankSumY - n2*(n2+1)/2, tieSum
}

// sortedNoNaN reports whether a is ascending and free of NaN.
func sortedNoNaN(a []float64) bool {
	for i, v := range a {
		if math.IsNaN(v) || i > 0 && v < a[i-1] {
			return false
		}
	}
	return true
}

// uStatisticSorted is uStatistic for sorted samples: it walks the pooled
// order by merging them, one group of equal values at a time, and adds the
// same mid-ranks in the same order as the sort does, so the sums are equal
// to the bit.
func uStatisticSorted(x, y []float64) (u, tieSum float64) {
	var rankSumY float64
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		var v float64
		switch {
		case i == len(x):
			v = y[j]
		case j == len(y):
			v = x[i]
		default:
			v = min(x[i], y[j])
		}
		start := i + j
		for i < len(x) && x[i] == v {
			i++
		}
		cy := 0
		for j < len(y) && y[j] == v {
			j++
			cy++
		}
		end := i + j
		t := float64(end - start)
		mid := float64(start+end+1) / 2 // mean of ranks start+1..end
		for range cy {
			rankSumY += mid
		}
		tieSum += t*t*t - t
	}
	n2 := float64(len(y))
	return rankSumY - n2*(n2+1)/2, tieSum
}

// uMoments returns the null mean and the tie-corrected standard deviation of U.
func uMoments(n1, n2 int, tieSum float64) (mu, sigma float64) {
	m := float64(n1) * float64(n2)
	n := float64(n1 + n2)
	v := m / 12 * ((n + 1) - tieSum/(n*(n-1)))
	return m / 2, math.Sqrt(max(v, 0))
}

// normalTwoSided is the two-sided p-value of U under the normal
// approximation with continuity correction.
func normalTwoSided(u, mu, sigma float64) float64 {
	if sigma == 0 {
		return 1
	}
	d := math.Abs(u-mu) - 0.5
	if d <= 0 {
		return 1
	}
	return min(1, 2*distuv.UnitNormal.Survival(d/sigma))
}

// uUpperTail returns P(U ≥ u) under H0 and uLowerTail P(U ≤ u): the one-sided
// p-values the gate needs. exact selects the exact distribution (valid only
// when the compared values have no ties); otherwise the normal
// approximation with continuity correction and tie term tieSum is used.
func uUpperTail(u float64, n1, n2 int, exact bool, tieSum float64) float64 {
	if exact {
		return 1 - exactU(n1, n2).cdf(int(math.Ceil(u))-1)
	}
	mu, sigma := uMoments(n1, n2, tieSum)
	if sigma == 0 {
		return 1
	}
	return distuv.UnitNormal.Survival((u - mu - 0.5) / sigma)
}

func uLowerTail(u float64, n1, n2 int, exact bool, tieSum float64) float64 {
	if exact {
		return exactU(n1, n2).cdf(int(math.Floor(u)))
	}
	mu, sigma := uMoments(n1, n2, tieSum)
	if sigma == 0 {
		return 1
	}
	return distuv.UnitNormal.CDF((u - mu + 0.5) / sigma)
}

// uDist is the exact null distribution of U for sample sizes (n1, n2)
// without ties, as a cumulative table over u = 0..n1·n2.
type uDist struct{ cum []float64 }

// cdf returns P(U ≤ u).
func (d uDist) cdf(u int) float64 {
	switch {
	case u < 0:
		return 0
	case u >= len(d.cum):
		return 1
	}
	return d.cum[u]
}

var (
	uDistMu    sync.Mutex
	uDistCache = map[[2]int]uDist{}
)

// exactU returns the exact null distribution of U, computing it once per
// (n1, n2). The count of arrangements of i x's and j y's with statistic u
// obeys c(i, j, u) = c(i, j−1, u−i) + c(i−1, j, u) (the last-ranked
// observation is either a y, which exceeds all i x's, or an x, which exceeds
// no y), Mann & Whitney (1947) eq. (2). The counts are summed in float64: they
// reach C(100, 50) ≈ 1e29 at n1 = n2 = 50, far inside float64's range, and
// every step is an addition of non-negative terms, so the relative error
// stays at rounding level.
func exactU(n1, n2 int) uDist {
	key := [2]int{n1, n2}
	uDistMu.Lock()
	d, ok := uDistCache[key]
	uDistMu.Unlock()
	if ok {
		return d
	}
	maxU := n1 * n2
	// prev[i] holds c(i, j−1, ·); cur[i] builds c(i, j, ·).
	prev := make([][]float64, n1+1)
	cur := make([][]float64, n1+1)
	for i := range prev {
		prev[i] = make([]float64, maxU+1)
		cur[i] = make([]float64, maxU+1)
		prev[i][0] = 1 // j = 0: one arrangement, U = 0
	}
	for j := 1; j <= n2; j++ {
		for i := 0; i <= n1; i++ {
			c := cur[i]
			clear(c)
			top := i * j
			for u := i; u <= top; u++ {
				c[u] = prev[i][u-i] // the last observation is a y
			}
			if i > 0 {
				for u := 0; u <= (i-1)*j; u++ {
					c[u] += cur[i-1][u] // the last observation is an x
				}
			}
		}
		prev, cur = cur, prev
	}
	counts := prev[n1]
	total := 0.0
	for _, c := range counts {
		total += c
	}
	cum := make([]float64, maxU+1)
	acc := 0.0
	for u, c := range counts {
		acc += c
		cum[u] = acc / total
	}
	d = uDist{cum: cum}
	uDistMu.Lock()
	uDistCache[key] = d
	uDistMu.Unlock()
	return d
}

// minAttainableP is the smallest two-sided exact p-value U can reach with
// these sample sizes, 2/C(n1+n2, n1): below it no data can be significant.
func minAttainableP(n1, n2 int) float64 {
	// log C(n1+n2, n1) via lgamma keeps this finite for any n.
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
	return min(1, 2*math.Exp(-(lg(n1+n2)-lg(n1)-lg(n2))))
}

// MinSamplesForU is the smallest n (per side, equal sizes) at which the exact
// U distribution can put α/2 in one tail, i.e. a two-sided 1−α Moses interval
// is finite: 1/C(2n, n) ≤ α/2. It is 4 at α = 0.05 (benchstat's "need >= 4
// samples to detect a difference").
func MinSamplesForU(alpha float64) int {
	for n := 1; n < 1000; n++ {
		if minAttainableP(n, n)/2 <= alpha/2*(1+1e-9) { // lgamma rounding
			return n
		}
	}
	return 1000
}
