package stat

import (
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Shift is a Hodges–Lehmann shift estimate with its Moses confidence
// interval, in the units of the samples it was computed from.
type Shift struct {
	// Estimate is the median of all pairwise differences y_j − x_i.
	Estimate float64
	// Low and High bound the 1−α interval; ±Inf when the samples are too
	// small for one (see MinSamplesForU).
	Low, High float64
	// K is the order statistic of the pairwise differences that Low is
	// (High is the (M+1−K)-th); 0 when the interval is infinite.
	K int64
}

// HodgesLehmann estimates the location shift of y (candidate) over x
// (baseline) and its Moses 1−α confidence interval (Hodges & Lehmann 1963,
// Ann. Math. Statist. 34:598–611; Moses's interval as in Hollander & Wolfe,
// Nonparametric Statistical Methods, §4.3).
//
// Assumptions: independent observations and a shift model, y ~ x + Δ. The
// interval is [D_(k), D_(M+1−k)] over the M = n1·n2 sorted pairwise
// differences D, with k the largest integer such that P_H0(U ≤ k−1) ≤ α/2:
// from the exact distribution of U up to 50 per side (with ties it is an
// approximation), from the tie-corrected normal approximation beyond. Its
// coverage is at least 1−α in the continuous case.
//
// The M differences are never formed: D_(k) is selected in the implicit
// sorted matrix (x and y sorted, D_ij = y_j − x_i increasing along rows and
// decreasing down columns) by randomized pivoting, as in Monahan's algorithm
// for the one-sample estimator (ACM TOMS 10:265, 1984) and Johnson &
// Mizoguchi (SIAM J. Comput. 7:147, 1978) for X+Y. Each round counts the
// differences below a pivot in O(n1+n2) by a two-pointer sweep, and an
// expected O(log M) rounds suffice; memory is O(n1+n2).
//
// xs and ys must be sorted and free of NaN. The result is deterministic.
func HodgesLehmann(xs, ys []float64, alpha float64) Shift {
	n1, n2 := len(xs), len(ys)
	if n1 == 0 || n2 == 0 {
		return Shift{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN()}
	}
	sel := newDiffSelector(xs, ys)
	m := int64(n1) * int64(n2)
	var est float64
	if m%2 == 1 {
		est = sel.kth(m/2 + 1)
	} else {
		lo := sel.kth(m / 2)
		est = (lo + sel.next(m/2, lo)) / 2
	}
	k := mosesK(xs, ys, alpha)
	if k < 1 {
		return Shift{Estimate: est, Low: math.Inf(-1), High: math.Inf(1)}
	}
	return Shift{Estimate: est, Low: sel.kth(k), High: sel.kth(m + 1 - k), K: k}
}

// mosesK is the largest k with P_H0(U ≤ k−1) ≤ α/2, or 0 if none. Up to 50
// per side it reads k from the exact distribution of U, also when there are
// ties (where that table is an approximation, as is the normal one; ties
// among ms-rounded latencies are few relative to n). Beyond, the normal
// approximation with tie correction. Samples too small for any exact tail
// of α/2 get no interval, and neither do samples whose pooled values are all
// equal (σ_U = 0: the approximation would return a single point).
func mosesK(xs, ys []float64, alpha float64) int64 {
	n1, n2 := len(xs), len(ys)
	m := int64(n1) * int64(n2)
	if minAttainableP(n1, n2)/2 > alpha/2*(1+1e-9) || xs[0] == xs[n1-1] && ys[0] == ys[n2-1] && xs[0] == ys[0] {
		return 0
	}
	if n1 <= exactUMax && n2 <= exactUMax {
		d := exactU(n1, n2)
		var k int64
		for u := 0; u <= n1*n2; u++ {
			if d.cdf(u) > alpha/2 {
				break
			}
			k = int64(u) + 1 // P(U ≤ u) ≤ α/2, so k−1 = u qualifies
		}
		return min(k, (m+1)/2)
	}
	_, tieSum := uStatistic(xs, ys)
	_, sigma := uMoments(n1, n2, tieSum)
	if sigma == 0 {
		return 0
	}
	z := distuv.UnitNormal.Quantile(1 - alpha/2)
	// P(U ≤ k−1) ≈ Φ((k−1+½−M/2)/σ) ≤ α/2  ⇔  k ≤ M/2 − zσ + ½.
	k := int64(math.Floor(float64(m)/2 - z*sigma + 0.5))
	return max(0, min(k, (m+1)/2))
}

// hasDup reports whether a sorted sample contains equal values.
func hasDup(a []float64) bool {
	for i := 1; i < len(a); i++ {
		if a[i] == a[i-1] {
			return true
		}
	}
	return false
}

// diffSelector selects order statistics of D_ij = y_j − x_i without forming
// the n1·n2 differences.
type diffSelector struct {
	xs, ys []float64
	// lo[i], hi[i]: row i's columns still in play are [lo[i], hi[i]).
	lo, hi []int
	less   []int // scratch: per row, columns with D < pivot
	leq    []int // scratch: per row, columns with D ≤ pivot
	leq2   []int // scratch: kth's copy of the lower pivot's leq
	rng    *rand.Rand
}

func newDiffSelector(xs, ys []float64) *diffSelector {
	n1 := len(xs)
	return &diffSelector{
		xs: xs, ys: ys,
		lo: make([]int, n1), hi: make([]int, n1),
		less: make([]int, n1), leq: make([]int, n1),
		// A fixed seed: pivots only affect speed, never the answer, and a
		// fixed sequence keeps the run time reproducible.
		rng: rand.New(rand.NewPCG(0x9e3779b97f4a7c15, uint64(n1)<<32|uint64(len(ys)))),
	}
}

// countBelow returns #{D < t} and #{D ≤ t}, filling s.less and s.leq per
// row. As i grows x_i grows, so the column boundary y_j < t + x_i only moves
// right: one sweep over both arrays.
func (s *diffSelector) countBelow(t float64) (less, leq int64) {
	n2 := len(s.ys)
	a, b := 0, 0
	for i, x := range s.xs {
		for a < n2 && s.ys[a]-x < t {
			a++
		}
		if b < a {
			b = a
		}
		for b < n2 && s.ys[b]-x <= t {
			b++
		}
		s.less[i], s.leq[i] = a, b
		less += int64(a)
		leq += int64(b)
	}
	return less, leq
}

// kth returns the k-th smallest difference (1-based, 1 ≤ k ≤ n1·n2).
//
// Each round brackets the answer between two pivots read off a sample of
// the remaining candidates at the ranks around k's (Floyd and Rivest, CACM
// 18:165, 1975): the band between them holds about a tenth of the
// candidates, where one uniformly random pivot keeps three quarters on
// average, so about a third of the sweeps. Pivots only affect speed: the
// answer is the k-th difference either way. With an infinite value, whose
// differences may be NaN and then order nothing, each round takes one
// random pivot (kthRandom).
func (s *diffSelector) kth(k int64) float64 {
	n1, n2 := len(s.xs), len(s.ys)
	if math.IsInf(s.xs[0], 0) || math.IsInf(s.xs[n1-1], 0) || math.IsInf(s.ys[0], 0) || math.IsInf(s.ys[n2-1], 0) {
		return s.kthRandom(k)
	}
	for i := range s.lo {
		s.lo[i], s.hi[i] = 0, n2
	}
	if s.leq2 == nil {
		s.leq2 = make([]int, n1)
	}
	var sample [selectSample]float64
	for {
		var cand, below int64
		for i := range n1 {
			cand += int64(s.hi[i] - s.lo[i])
			below += int64(s.lo[i])
		}
		if cand <= int64(4*(n1+n2)) {
			return s.finish(k, cand)
		}
		s.sampleCandidates(sample[:], cand)
		// The answer's rank among the candidates is k − below; the
		// sample's ranks around it, ± 2.5 standard deviations of a
		// sample rank.
		at := float64(k-below) / float64(cand) * selectSample
		sd := math.Sqrt(at * (1 - at/selectSample))
		iLo, iHi := int(at-2.5*sd-1), int(at+2.5*sd+1)
		if iLo >= 0 {
			lessLo, leqLo := s.countBelow(sample[iLo])
			switch {
			case k <= lessLo: // below the lower pivot
				for i := range n1 {
					s.hi[i] = min(s.hi[i], s.less[i])
				}
				continue
			case k <= leqLo:
				return sample[iLo]
			}
			copy(s.leq2, s.leq)
		}
		if iHi < selectSample {
			lessHi, leqHi := s.countBelow(sample[iHi])
			switch {
			case k <= lessHi: // between the pivots (or below the upper)
				for i := range n1 {
					s.hi[i] = min(s.hi[i], s.less[i])
				}
			case k <= leqHi:
				return sample[iHi]
			default: // above the upper pivot
				for i := range n1 {
					s.lo[i] = max(s.lo[i], s.leq[i])
				}
				continue
			}
		}
		if iLo >= 0 { // above the lower pivot
			for i := range n1 {
				s.lo[i] = max(s.lo[i], s.leq2[i])
			}
		}
	}
}

// selectSample is how many candidates kth draws a round for its pivots.
const selectSample = 256

// sampleCandidates fills out with remaining candidates drawn uniformly (with
// replacement) among the cand left, sorted: the ranks drawn, sorted, are
// picked up in one walk over the rows.
func (s *diffSelector) sampleCandidates(out []float64, cand int64) {
	ranks := make([]int64, len(out))
	for j := range ranks {
		ranks[j] = s.rng.Int64N(cand)
	}
	slices.Sort(ranks)
	j := 0
	var start int64 // the rank of row i's first candidate
	for i := range s.xs {
		w := int64(s.hi[i] - s.lo[i])
		for j < len(ranks) && ranks[j] < start+w {
			out[j] = s.ys[s.lo[i]+int(ranks[j]-start)] - s.xs[i]
			j++
		}
		start += w
	}
	slices.Sort(out)
}

// candidate returns the r-th remaining candidate (0-based, row by row).
func (s *diffSelector) candidate(r int64) float64 {
	for i := range s.xs {
		w := int64(s.hi[i] - s.lo[i])
		if r < w {
			return s.ys[s.lo[i]+int(r)] - s.xs[i]
		}
		r -= w
	}
	panic("stat: candidate out of range")
}

// finish returns the k-th difference when the cand candidates left are few:
// it collects and selects them.
func (s *diffSelector) finish(k, cand int64) float64 {
	var below int64
	vals := make([]float64, 0, cand)
	for i := range s.xs {
		below += int64(s.lo[i])
		for j := s.lo[i]; j < s.hi[i]; j++ {
			vals = append(vals, s.ys[j]-s.xs[i])
		}
	}
	return orderStat(vals, int(k-below-1))
}

// kthRandom is kth with one uniformly random candidate as the pivot of each
// round.
func (s *diffSelector) kthRandom(k int64) float64 {
	n1, n2 := len(s.xs), len(s.ys)
	for i := range s.lo {
		s.lo[i], s.hi[i] = 0, n2
	}
	for {
		var cand int64
		for i := range n1 {
			cand += int64(s.hi[i] - s.lo[i])
		}
		// Few candidates left: collect them and finish directly.
		if cand <= int64(4*(n1+n2)) {
			return s.finish(k, cand)
		}
		pivot := s.candidate(s.rng.Int64N(cand))
		less, leq := s.countBelow(pivot)
		switch {
		case k <= less: // the answer is below the pivot
			for i := range n1 {
				s.hi[i] = min(s.hi[i], s.less[i])
			}
		case k > leq: // above it
			for i := range n1 {
				s.lo[i] = max(s.lo[i], s.leq[i])
			}
		default:
			return pivot
		}
	}
}

// next returns the (k+1)-th smallest difference given v, the k-th: v again
// if more than k differences are ≤ v, else the smallest difference above v,
// which in row i is the first column past those ≤ v (y_j − x_i grows with
// j). One sweep instead of a second selection; with an infinite value,
// whose differences may be NaN, it selects.
func (s *diffSelector) next(k int64, v float64) float64 {
	n1, n2 := len(s.xs), len(s.ys)
	if math.IsInf(s.xs[0], 0) || math.IsInf(s.xs[n1-1], 0) || math.IsInf(s.ys[0], 0) || math.IsInf(s.ys[n2-1], 0) || math.IsNaN(v) {
		return s.kth(k + 1)
	}
	if _, leq := s.countBelow(v); leq > k {
		return v
	}
	above := math.Inf(1)
	for i, x := range s.xs {
		if j := s.leq[i]; j < n2 {
			above = min(above, s.ys[j]-x)
		}
	}
	return above
}

// orderStat is the k-th smallest of vals (0-based), as vals sorted would
// have it: by selection, or by a sort when NaN (the difference of two
// infinities) leaves selection's order undefined. It reorders vals.
func orderStat(vals []float64, k int) float64 {
	if slices.ContainsFunc(vals, math.IsNaN) {
		slices.Sort(vals)
		return vals[k]
	}
	return selectKth(vals, k)
}

// ShiftUTest returns the one-sided U-test p-values for the hypotheses that
// the shift of y over x is at most delta (upper: small when y − delta still
// exceeds x) and at least delta (lower). They are the test duals of the Moses
// interval: its lower bound exceeds delta exactly when pUpper ≤ α/2.
func ShiftUTest(xs, ys []float64, delta float64) (pUpper, pLower float64) {
	n1, n2 := len(xs), len(ys)
	sel := newDiffSelector(xs, ys)
	less, leq := sel.countBelow(delta)
	m := float64(n1) * float64(n2)
	// U of (y − delta) over x: pairs with D > delta, ties ½.
	u := m - float64(leq) + float64(leq-less)/2
	exact := n1 <= exactUMax && n2 <= exactUMax && leq == less && !hasDup(xs) && !hasDup(ys)
	var tieSum float64
	if !exact {
		shifted := make([]float64, n2)
		for j, y := range ys {
			shifted[j] = y - delta
		}
		_, tieSum = uStatistic(xs, shifted)
	}
	return uUpperTail(u, n1, n2, exact, tieSum), uLowerTail(u, n1, n2, exact, tieSum)
}
