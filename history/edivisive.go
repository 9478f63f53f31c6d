package history

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
)

// DetectOptions configure change-point detection. DefaultDetectOptions
// documents the defaults and where each comes from.
type DetectOptions struct {
	// Alpha is the significance level a change point's permutation
	// p-value must reach (the merge step's level; the split step uses the
	// relaxed WeakAlpha).
	Alpha float64 `json:"alpha"`
	// Permutations is the number of random permutations per test.
	Permutations int `json:"permutations"`
	// MinSize is the fewest units (runs) on either side of a split.
	MinSize int `json:"min_size"`
	// Window is the sliding window's length in units; windows overlap by
	// half (Otava's split step). A series no longer than Window is one
	// window.
	Window int `json:"window"`
	// Seed seeds the permutations (same data and seed, same answer).
	Seed uint64 `json:"seed"`
}

// DefaultDetectOptions are the defaults of `llmprof history`.
//
//   - Window 50: Otava's default window (otava/series.py AnalysisOptions,
//     window_len = 50), overlapping by half (otava/analysis.py split: step =
//     window_len / 2).
//   - MinSize 1: Otava splits any two non-empty pieces (its calculator only
//     needs an interval of two points). ecp's e.divisive defaults to
//     min.size = 30, which would forbid any change in a month of nightly
//     runs.
//   - Alpha 0.01 with 499 permutations: Otava's max_pvalue default of 0.001
//     is for its Student's t-test; a permutation p-value (1 + k)/(R + 1)
//     cannot go below 1/(R + 1), so 0.001 would need thousands of
//     permutations per test. ecp's sig.lvl = 0.05 with R = 199 is the
//     paper's choice; at 0.05 one flat series in twenty would report a
//     change, which a nightly gate cannot live with. 0.01 with 499
//     permutations keeps the smallest p-value (0.002) well below the
//     level and the Monte Carlo error of p near 0.01 about ±0.0045.
func DefaultDetectOptions() DetectOptions {
	return DetectOptions{Alpha: 0.01, Permutations: 499, MinSize: 1, Window: 50, Seed: 1}
}

// weakAlpha is the split step's relaxed level (otava/analysis.py
// compute_change_points: ten times the level below 0.05, twice it below
// 0.5): the "weak" change points the merge step then confirms or drops.
func weakAlpha(a float64) float64 {
	switch {
	case a < 0.05:
		return a * 10
	case a < 0.5:
		return a * 2
	}
	return a
}

// ChangePoint is one detected change: Index is the first unit (run) after
// it, Q the e-divisive statistic that located it, P its permutation
// p-value in the final segmentation.
type ChangePoint struct {
	Index int
	Q     float64
	P     float64
	// RunP is the run-level t-test's p-value that confirmed a change
	// found on requests (confirmByRuns); NaN for run points.
	RunP float64
}

// series is a sequence of units (runs), each holding one value (run
// level) or many (its requests), sorted once by value so that the
// block sums of pairwise distances come from one sweep.
type series struct {
	start []int // start[u] is the first point of unit u; start[len] = n
	vals  []float64
	// order lists the points by value; label[i] is point i's unit in the
	// current arrangement (permutations shuffle labels within segments).
	order []int
	label []int
	units int
	// scratch
	w, prefix []float64
	cnt       []float64
	sum       []float64
}

func newSeries(units [][]float64) *series {
	s := &series{units: len(units), start: make([]int, len(units)+1)}
	for u, vs := range units {
		s.start[u] = len(s.vals)
		for _, v := range vs {
			s.vals = append(s.vals, v)
			s.label = append(s.label, u)
		}
	}
	s.start[len(units)] = len(s.vals)
	s.order = make([]int, len(s.vals))
	for i := range s.order {
		s.order[i] = i
	}
	sort.SliceStable(s.order, func(a, b int) bool { return s.vals[s.order[a]] < s.vals[s.order[b]] })
	U := s.units
	s.w = make([]float64, U*U)
	s.prefix = make([]float64, (U+1)*(U+1))
	s.cnt = make([]float64, U)
	s.sum = make([]float64, U)
	return s
}

// blockSums fills w[a][b] = Σ_{i∈a, j∈b} |x_i − x_j| under the current
// labels (both orders, so w[a][a] is twice the within-unit pair sum) and
// its 2-D prefix sums, in O(n·units) from the sorted order: for each point,
// the distance to every earlier (smaller) point of unit a is
// x·count_a − sum_a.
func (s *series) blockSums() {
	U := s.units
	clear(s.w)
	clear(s.cnt)
	clear(s.sum)
	for _, i := range s.order {
		x, u := s.vals[i], s.label[i]
		for a := range U {
			if s.cnt[a] == 0 {
				continue
			}
			d := x*s.cnt[a] - s.sum[a]
			s.w[a*U+u] += d
			s.w[u*U+a] += d
		}
		s.cnt[u]++
		s.sum[u] += x
	}
	P := U + 1
	for a := range U {
		for b := range U {
			s.prefix[(a+1)*P+b+1] = s.w[a*U+b] + s.prefix[a*P+b+1] + s.prefix[(a+1)*P+b] - s.prefix[a*P+b]
		}
	}
}

// rect is Σ w[a][b] over a ∈ [a0, a1), b ∈ [b0, b1).
func (s *series) rect(a0, a1, b0, b1 int) float64 {
	P := s.units + 1
	return s.prefix[a1*P+b1] - s.prefix[a0*P+b1] - s.prefix[a1*P+b0] + s.prefix[a0*P+b0]
}

// q is the e-divisive statistic Q̂(X, Y; α = 1) of Matteson & James (2014)
// for X = units [lo, tau), Y = units [tau, kappa):
//
//	Q̂ = 2/(n+m) ΣΣ|X−Y| − 2m/((n+m)(n−1)) Σ_{i<k}|X_i−X_k| − 2n/((n+m)(m−1)) Σ_{j<k}|Y_j−Y_k|
//
// with n, m the points in X and Y; a within term of one point is zero (as
// in Otava's PairDistanceCalculator).
func (s *series) q(lo, tau, kappa int) float64 {
	n := float64(s.start[tau] - s.start[lo])
	m := float64(s.start[kappa] - s.start[tau])
	if n == 0 || m == 0 {
		return math.Inf(-1)
	}
	between := s.rect(lo, tau, tau, kappa)
	v := 2 / (n + m) * between
	if n > 1 {
		v -= 2 * m / ((n + m) * (n - 1)) * s.rect(lo, tau, lo, tau) / 2
	}
	if m > 1 {
		v -= 2 * n / ((n + m) * (m - 1)) * s.rect(tau, kappa, tau, kappa) / 2
	}
	return v
}

// candidate is the best split of the units [lo, hi): the τ (and κ ≤ hi)
// maximizing Q̂, both pieces at least minSize units; ok is false when the
// interval is too short. Ties go to the smallest τ, then κ (numpy argmax
// in Otava's calculator).
func (s *series) candidate(lo, hi, minSize int, fixedKappa bool) (tau int, q float64, ok bool) {
	q = math.Inf(-1)
	for t := lo + minSize; t+minSize <= hi; t++ {
		k0 := t + minSize
		if fixedKappa {
			k0 = hi
		}
		for k := k0; k <= hi; k++ {
			if v := s.q(lo, t, k); v > q {
				tau, q, ok = t, v, true
			}
		}
	}
	return tau, q, ok
}

// best is the best candidate over the segments cut by cps within [lo, hi).
func (s *series) best(lo, hi int, cps []int, minSize int) (tau int, q float64, ok bool) {
	q = math.Inf(-1)
	prev := lo
	for i := 0; i <= len(cps); i++ {
		next := hi
		if i < len(cps) {
			next = cps[i]
		}
		if t, v, found := s.candidate(prev, next, minSize, false); found && v > q {
			tau, q, ok = t, v, true
		}
		prev = next
	}
	return tau, q, ok
}

// shuffle permutes the labels of the points of units [lo, hi) within each
// segment cut by cps: a permutation of the values within each segment, the
// null of no further change (Matteson & James 2014, section 3.2; Otava's
// PermutationsSignificanceTester shuffles each interval).
func (s *series) shuffle(rng *rand.Rand, lo, hi int, cps []int) {
	prev := lo
	for i := 0; i <= len(cps); i++ {
		next := hi
		if i < len(cps) {
			next = cps[i]
		}
		seg := s.label[s.start[prev]:s.start[next]]
		// Labels within a segment are non-decreasing runs of unit
		// numbers; reset them, then shuffle.
		j := 0
		for u := prev; u < next; u++ {
			for range s.start[u+1] - s.start[u] {
				seg[j] = u
				j++
			}
		}
		rng.Shuffle(len(seg), func(a, b int) { seg[a], seg[b] = seg[b], seg[a] })
		prev = next
	}
}

func (s *series) resetLabels() {
	for u := range s.units {
		for i := s.start[u]; i < s.start[u+1]; i++ {
			s.label[i] = u
		}
	}
}

// pValue is (1 + #{permuted ≥ observed}) / (R + 1), the permutation
// p-value that counts the observed arrangement as one of the permutations
// (so it is exact at any R; Otava's significance_test.py leaves the 1 out).
func pValue(exceed, perms int) float64 { return float64(1+exceed) / float64(perms+1) }

// divisive is e-divisive means on the units [lo, hi) (Matteson & James
// 2014; Otava's ChangePointDetector with the permutation tester): split at
// the best candidate over all current segments while its permutation test
// is significant at level alpha. The returned change points are sorted.
func (s *series) divisive(rng *rand.Rand, lo, hi int, o DetectOptions, alpha float64) []ChangePoint {
	var cps []int
	var out []ChangePoint
	for {
		s.resetLabels()
		s.blockSums()
		tau, obs, ok := s.best(lo, hi, cps, o.MinSize)
		if !ok {
			break
		}
		exceed := 0
		for range o.Permutations {
			s.shuffle(rng, lo, hi, cps)
			s.blockSums()
			if _, v, ok := s.best(lo, hi, cps, o.MinSize); ok && v >= obs {
				exceed++
			}
		}
		p := pValue(exceed, o.Permutations)
		if p > alpha {
			break
		}
		cps = append(cps, tau)
		slices.Sort(cps)
		out = append(out, ChangePoint{Index: tau, Q: obs, P: p})
	}
	s.resetLabels()
	slices.SortFunc(out, func(a, b ChangePoint) int { return a.Index - b.Index })
	return out
}

// splitTest is the merge step's test of one change point at tau between
// its neighbours lo and hi: Q̂(X = [lo, tau), Y = [tau, hi)) against the
// permuted segment's largest Q̂ over every split, so that choosing tau
// by maximizing is part of the null and the p-value stays valid.
func (s *series) splitTest(rng *rand.Rand, lo, tau, hi int, o DetectOptions) (q, p float64) {
	s.resetLabels()
	s.blockSums()
	q = s.q(lo, tau, hi)
	exceed := 0
	for range o.Permutations {
		s.shuffle(rng, lo, hi, nil)
		s.blockSums()
		if _, v, ok := s.candidate(lo, hi, o.MinSize, true); ok && v >= q {
			exceed++
		}
	}
	s.resetLabels()
	return q, pValue(exceed, o.Permutations)
}

// Detect finds the change points of a series of units (runs), each
// holding one value (a run-level series) or several (the run's requests):
// Otava's procedure (otava/analysis.py compute_change_points) with
// e-divisive's permutation test in place of its t-test. Split: overlapping
// windows of o.Window units, each searched by e-divisive means at the
// relaxed level weakAlpha(o.Alpha), their change points pooled. Merge:
// every pooled point is tested between its neighbours (splitTest), the
// weakest above o.Alpha dropped and its neighbours tested again, until all
// are significant. A change can only fall between units.
func Detect(units [][]float64, o DetectOptions) []ChangePoint {
	if len(units) < 2 || o.MinSize < 1 || o.Permutations < 1 {
		return nil
	}
	s := newSeries(units)
	rng := rand.New(rand.NewPCG(o.Seed, 0x6564697669736976))
	window := o.Window
	if window < 2*o.MinSize {
		window = 2 * o.MinSize
	}
	weak := weakAlpha(o.Alpha)
	var found []int
	U := len(units)
	for start := 0; start < U; {
		end := min(start+window, U)
		cps := s.divisive(rng, start, end, o, weak)
		for _, c := range cps {
			if !slices.Contains(found, c.Index) {
				found = append(found, c.Index)
			}
		}
		if end == U {
			break
		}
		next := start + window/2
		if len(cps) > 0 {
			next = max(next, cps[len(cps)-1].Index)
		}
		start = next
	}
	slices.Sort(found)
	cps := make([]ChangePoint, len(found))
	bounds := func(i int) (int, int) {
		lo, hi := 0, U
		if i > 0 {
			lo = cps[i-1].Index
		}
		if i+1 < len(cps) {
			hi = cps[i+1].Index
		}
		return lo, hi
	}
	test := func(i int) {
		lo, hi := bounds(i)
		cps[i].Q, cps[i].P = s.splitTest(rng, lo, cps[i].Index, hi, o)
		cps[i].RunP = math.NaN()
	}
	for i, idx := range found {
		cps[i].Index = idx
	}
	for i := range cps {
		test(i)
	}
	for len(cps) > 0 {
		weakest := 0
		for i := range cps {
			if cps[i].P > cps[weakest].P {
				weakest = i
			}
		}
		if cps[weakest].P <= o.Alpha {
			break
		}
		cps = slices.Delete(cps, weakest, weakest+1)
		if weakest > 0 {
			test(weakest - 1)
		}
		if weakest < len(cps) {
			test(weakest)
		}
	}
	return cps
}
