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
// expected O(log M) rounds suffice; memory is O(n1+n2). The estimate and
// both bounds lie within a few σ_U of M/2, so their three selections share
// their first rounds (bracket).
//
// xs and ys must be sorted and free of NaN. The result is deterministic.
func HodgesLehmann(xs, ys []float64, alpha float64) Shift {
	n1, n2 := len(xs), len(ys)
	if n1 == 0 || n2 == 0 {
		return Shift{Estimate: math.NaN(), Low: math.NaN(), High: math.NaN()}
	}
	sel := newDiffSelector(xs, ys)
	m := int64(n1) * int64(n2)
	k := mosesK(xs, ys, alpha)
	if k >= 1 {
		// The estimate's rank and the interval's lie in one band: the
		// three selections start from its bracket.
		sel.bracket(k, m+1-k)
	}
	var est float64
	if m%2 == 1 {
		est = sel.kth(m/2 + 1)
	} else {
		lo := sel.kth(m / 2)
		est = (lo + sel.next(m/2, lo)) / 2
	}
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
	// band: when bandLo ≤ k ≤ bandHi, kth starts from the columns
	// [bandStart[0][i], bandStart[1][i]) that bracket found, not the whole
	// matrix.
	bandLo, bandHi int64
	bandStart      [2][]int
	// padded is ys followed by bandWindow NaNs, for countBand.
	padded []float64
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

// countBand is countBelow for finite samples and a pivot t that is one of
// the candidates, the differences in columns [lo[i], hi[i]): it fills
// s.less and s.leq with what countBelow fills them with, and returns the
// same sums. kth and bracket narrow the columns by pivots, dropping those
// at or below a lower pivot and those at or above an upper one, so a
// candidate lies strictly above every difference dropped below it, and
// row i's counts for t are at least lo[i].
//
// Row i's counts are also at least row i−1's (x_i ≥ x_{i−1}), so every
// column before start = max(lo[i], less[i−1]) is below t. countRow counts
// from start by comparing a window of four columns at once, without a
// branch on the comparisons: where fewer than four of them are ≤ t (all
// but a few rows) the counts are start plus the window's. countBelow's
// walk mispredicts where it stops, about once a row; here a row waits
// for the one before it instead, so the rows are counted as two
// interleaved halves, whose chains of rows overlap.
func (s *diffSelector) countBand(t float64) (less, leq int64) {
	if s.padded == nil {
		// ys and NaNs past it: a window may reach past n2, and its
		// differences there are NaN, neither < t nor ≤ t.
		s.padded = append(slices.Clip(s.ys), make([]float64, 4)...)
		for j := len(s.ys); j < len(s.padded); j++ {
			s.padded[j] = math.NaN()
		}
	}
	n1 := len(s.xs)
	half := n1 / 2
	ys, xs, lo := s.padded, s.xs[:n1], s.lo[:n1]
	lessOut, leqOut := s.less[:n1], s.leq[:n1]
	a, b := 0, 0 // the last less count of the first half's rows and of the second's
	for i := range half {
		j := half + i
		x, y := xs[i], xs[j]
		sa, sb := max(a, lo[i]), max(b, lo[j])
		wa, wb := ys[sa:sa+4:sa+4], ys[sb:sb+4:sb+4]
		da0, da1, da2, da3 := wa[0]-x, wa[1]-x, wa[2]-x, wa[3]-x
		db0, db1, db2, db3 := wb[0]-y, wb[1]-y, wb[2]-y, wb[3]-y
		a = sa + b2i(da0 < t) + b2i(da1 < t) + b2i(da2 < t) + b2i(da3 < t)
		ea := sa + b2i(da0 <= t) + b2i(da1 <= t) + b2i(da2 <= t) + b2i(da3 <= t)
		b = sb + b2i(db0 < t) + b2i(db1 < t) + b2i(db2 < t) + b2i(db3 < t)
		eb := sb + b2i(db0 <= t) + b2i(db1 <= t) + b2i(db2 <= t) + b2i(db3 <= t)
		if ea == sa+4 {
			a, ea = walkRow(ys, x, t, a, ea)
		}
		if eb == sb+4 {
			b, eb = walkRow(ys, y, t, b, eb)
		}
		lessOut[i], leqOut[i] = a, ea
		lessOut[j], leqOut[j] = b, eb
	}
	if n1%2 == 1 {
		x, sb := xs[n1-1], max(b, lo[n1-1])
		b, eb := walkRow(ys, x, t, sb, sb)
		lessOut[n1-1], leqOut[n1-1] = b, eb
	}
	for i := range n1 {
		less += int64(lessOut[i])
		leq += int64(leqOut[i])
	}
	return less, leq
}

// walkRow finishes counting x's row of differences below t (from a) and
// at most t (from b ≥ a) one column at a time, every column before a below
// t and every one before b at most t; padded's NaNs stop it at n2.
func walkRow(padded []float64, x, t float64, a, b int) (int, int) {
	if a == b {
		for padded[a]-x < t {
			a++
		}
		b = a
	}
	for padded[b]-x <= t {
		b++
	}
	return a, b
}

// b2i is 1 for true and 0 for false, without a branch.
func b2i(c bool) int {
	if c {
		return 1
	}
	return 0
}

// kth returns the k-th smallest difference (1-based, 1 ≤ k ≤ n1·n2).
//
// Each round brackets the answer between two pivots read off a sample of
// the remaining candidates at the ranks around k's (Floyd and Rivest, CACM
// 18:165, 1975): the band between them, ±2.5 standard deviations of a
// sample rank, holds at most about 2.5/√S of the candidates (S the
// sample's size: a sixth at 256, half that at 1024), where one
// uniformly random pivot keeps three quarters on average. It starts from
// bracket's band when k is in it. Pivots only affect speed: the
// answer is the k-th difference either way. With an infinite value, whose
// differences may be NaN and then order nothing, each round takes one
// random pivot (kthRandom).
func (s *diffSelector) kth(k int64) float64 {
	n1, n2 := len(s.xs), len(s.ys)
	if math.IsInf(s.xs[0], 0) || math.IsInf(s.xs[n1-1], 0) || math.IsInf(s.ys[0], 0) || math.IsInf(s.ys[n2-1], 0) {
		return s.kthRandom(k)
	}
	if s.bandStart[0] != nil && s.bandLo <= k && k <= s.bandHi {
		copy(s.lo, s.bandStart[0])
		copy(s.hi, s.bandStart[1])
	} else {
		for i := range s.lo {
			s.lo[i], s.hi[i] = 0, n2
		}
	}
	if s.leq2 == nil {
		s.leq2 = make([]int, n1)
	}
	sample := make([]float64, s.sampleSize())
	S := len(sample)
	for {
		cand, below := s.candidates()
		if cand <= s.finishAt() {
			return s.finish(k, cand)
		}
		s.sampleCandidates(sample, cand)
		// The answer's rank among the candidates is k − below; the
		// sample's ranks around it, ± 2.5 standard deviations of a
		// sample rank.
		at := float64(k-below) / float64(cand) * float64(S)
		sd := math.Sqrt(at * (1 - at/float64(S)))
		iLo, iHi := int(at-2.5*sd-1), int(at+2.5*sd+1)
		if iLo >= 0 {
			pLo := selectKth(sample, iLo)
			lessLo, leqLo := s.countBand(pLo)
			switch {
			case k <= lessLo: // below the lower pivot
				for i := range n1 {
					s.hi[i] = min(s.hi[i], s.less[i])
				}
				continue
			case k <= leqLo:
				return pLo
			}
			copy(s.leq2, s.leq)
		}
		if iHi < S {
			// Selecting pLo left the sample's values above it past iLo.
			from := max(iLo+1, 0)
			pHi := selectKth(sample[from:], iHi-from)
			lessHi, leqHi := s.countBand(pHi)
			switch {
			case k <= lessHi: // between the pivots (or below the upper)
				for i := range n1 {
					s.hi[i] = min(s.hi[i], s.less[i])
				}
			case k <= leqHi:
				return pHi
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

// sampleSize is how many candidates kth and bracket draw a round for their
// pivots: a larger sample leaves a narrower band between them (at most
// about 2.5/√S of the candidates) for the price of selecting in it, which
// pays once the sweeps are long.
func (s *diffSelector) sampleSize() int {
	if len(s.xs)+len(s.ys) < 2048 {
		return 256
	}
	return 1024
}

// finishAt is how few candidates kth collects and selects among instead of
// sweeping again: one sweep's worth.
func (s *diffSelector) finishAt() int64 { return int64(len(s.xs) + len(s.ys)) }

// candidates returns how many differences are still in play, and how many
// lie below them.
func (s *diffSelector) candidates() (cand, below int64) {
	for i := range s.lo {
		cand += int64(s.hi[i] - s.lo[i])
		below += int64(s.lo[i])
	}
	return cand, below
}

// bracket finds columns that hold the kLo-th to the kHi-th differences,
// for kth to start from when its k is among them: rounds as kth's, with
// the lower pivot below kLo's rank and the upper above kHi's, while a
// round keeps under half the candidates. Finite samples only.
func (s *diffSelector) bracket(kLo, kHi int64) {
	n1, n2 := len(s.xs), len(s.ys)
	if math.IsInf(s.xs[0], 0) || math.IsInf(s.xs[n1-1], 0) || math.IsInf(s.ys[0], 0) || math.IsInf(s.ys[n2-1], 0) {
		return
	}
	for i := range s.lo {
		s.lo[i], s.hi[i] = 0, n2
	}
	if s.leq2 == nil {
		s.leq2 = make([]int, n1)
	}
	sample := make([]float64, s.sampleSize())
	S := len(sample)
	for {
		cand, below := s.candidates()
		if cand <= s.finishAt() {
			break
		}
		atLo := float64(kLo-below) / float64(cand) * float64(S)
		atHi := float64(kHi-below) / float64(cand) * float64(S)
		iLo := int(atLo - 2.5*math.Sqrt(atLo*(1-atLo/float64(S))) - 1)
		iHi := int(atHi + 2.5*math.Sqrt(atHi*(1-atHi/float64(S))) + 1)
		if iHi-iLo > S/2 {
			break
		}
		s.sampleCandidates(sample, cand)
		// Both pivots are counted in the round's band (countBand's
		// premise), before either narrows it.
		raiseLo, narrowed := false, false
		if iLo >= 0 {
			if _, leq := s.countBand(selectKth(sample, iLo)); kLo > leq {
				copy(s.leq2, s.leq)
				raiseLo, narrowed = true, true
			}
		}
		if iHi < S {
			from := max(iLo+1, 0)
			if less, _ := s.countBand(selectKth(sample[from:], iHi-from)); kHi <= less {
				for i := range n1 {
					s.hi[i] = min(s.hi[i], s.less[i])
				}
				narrowed = true
			}
		}
		if raiseLo {
			for i := range n1 {
				s.lo[i] = max(s.lo[i], s.leq2[i])
			}
		}
		if !narrowed {
			break
		}
	}
	s.bandLo, s.bandHi = kLo, kHi
	s.bandStart = [2][]int{slices.Clone(s.lo), slices.Clone(s.hi)}
}

// sampleCandidates fills out with remaining candidates, one drawn
// uniformly from each of len(out) equal runs of the cand left in row
// order (a stratified sample: its ranks come sorted, and they pick up the
// candidates in one walk over the rows). The values are left unsorted.
func (s *diffSelector) sampleCandidates(out []float64, cand int64) {
	S := int64(len(out))
	j := 0
	var start int64 // the rank of row i's first candidate
	next := s.stratum(0, cand, S)
	for i := range s.xs {
		w := int64(s.hi[i] - s.lo[i])
		for j < len(out) && next < start+w {
			out[j] = s.ys[s.lo[i]+int(next-start)] - s.xs[i]
			j++
			next = s.stratum(int64(j), cand, S)
		}
		start += w
	}
}

// stratum draws a rank from the j-th of S equal runs of cand ranks.
func (s *diffSelector) stratum(j, cand, S int64) int64 {
	if j >= S {
		return cand
	}
	lo, hi := j*cand/S, (j+1)*cand/S
	if hi <= lo {
		return lo
	}
	return lo + s.rng.Int64N(hi-lo)
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
