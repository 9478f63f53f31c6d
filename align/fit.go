package align

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/llmprof/llmprof/internal/stat"
)

// point is a soft anchor: the domain's local instant x is believed to be the
// reference instant y, give or take an unknown small error of either sign (a
// matched event), or the midpoint of a clock-pair bracket (weight > 0).
type point struct {
	x, y   int64
	weight float64 // 1/width² for a bracket midpoint; 0 for a matched event
}

func (p point) bracket() bool { return p.weight > 0 }

// hardBound is a one-sided guarantee: f(x) ≥ y (lower) or f(x) ≤ y. When y
// comes from a domain aligned before this one, slack is that domain's bound:
// the guarantee is only f(x) ≥ y − slack (or ≤ y + slack), while y itself
// remains the best guess.
type hardBound struct {
	x, y  int64
	slack int64
	lower bool
}

// halfPlane returns the bound in a segment's frame, loosened by its slack
// or not.
func (h hardBound) halfPlane(center, a0 int64, loose bool) halfPlane {
	c := h.y - h.x - a0
	if loose {
		if h.lower {
			c -= h.slack
		} else {
			c += h.slack
		}
	}
	return halfPlane{u: toSeconds(h.x, center), c: float64(c), lower: h.lower}
}

// anchorSet is everything that ties one domain to the already aligned ones.
type anchorSet struct {
	points []point
	hard   []hardBound
	counts AnchorCounts
	// partnerUnknown: some anchors lean on a domain whose own alignment
	// has no guaranteed bound, so neither can this one.
	partnerUnknown bool
	// causal: some hard bounds are causal ones, loosened by the timestamp
	// slack.
	causal bool
}

// rank orders domains by the strength of their anchors (docs/design.md §6): clock
// pairs, then hard causal bounds, then matched events, then sequences.
func (s *anchorSet) rank() (int, int) {
	c := s.counts
	switch {
	case c.ClockPair > 0:
		return 4, c.ClockPair
	case c.Causal > 0:
		return 3, c.Causal
	case c.Matched > 0:
		return 2, c.Matched
	case c.Sequence > 0:
		return 1, c.Sequence
	}
	return 0, 0
}

// segmentFit maps one stretch of a domain's clock (between clock steps)
// onto the reference: f(x) = x + a0 + a + d·(x − center)/1e9.
type segmentFit struct {
	from   int64 // first local instant it covers; math.MinInt64 for the first segment
	center int64
	a0     int64
	a, d   float64 // ns, ns/s
	// poly is the feasible (a, d) region of the hard bounds, nil when there
	// were none or they contradicted each other.
	poly        polygon
	driftFitted bool
	anchors     int
	// Residuals of the soft anchors, when there were any.
	haveResiduals bool
	p50, p99      float64
	// bound is the guaranteed |error| over the segment's records.
	boundKnown bool
	bound      float64
}

// offsetAt returns f(x) − x in ns, rounded.
func (s *segmentFit) offsetAt(x int64) int64 {
	return s.a0 + int64(math.Round(s.a+s.d*float64(x-s.center)/1e9))
}

// mapTime returns f(x).
func (s *segmentFit) mapTime(x int64) int64 { return x + s.offsetAt(x) }

// interval returns the guaranteed range of f(x); ok is false when the hard
// bounds do not close it.
func (s *segmentFit) interval(x int64) (lo, hi int64, ok bool) {
	if !s.boundKnown || s.poly == nil {
		return 0, 0, false
	}
	u := float64(x-s.center) / 1e9
	l, h, openLo, openHi := s.poly.rangeAt(u)
	if openLo || openHi {
		return 0, 0, false
	}
	base := x + s.a0
	return base + int64(math.Floor(l)), base + int64(math.Ceil(h)), true
}

// fitter fits one domain; it carries the options and what it learned.
type fitter struct {
	opts     Options
	dmax     float64 // ns per second
	lo, hi   int64   // the domain's record range, local time
	warnings []string
	segments int // segments created so far (bounded by MaxSteps+1)
}

func (f *fitter) warnf(format string, args ...any) {
	f.warnings = append(f.warnings, fmt.Sprintf(format, args...))
}

// errContradiction is returned when the anchors of a domain cannot all be
// true of any single clock mapping, so that any alignment would be a guess.
type errContradiction struct{ msg string }

func (e *errContradiction) Error() string { return e.msg }

// fit maps the domain piecewise: clock steps found in the soft anchors split
// it first, then each piece is fitted (and may split again where its hard
// bounds admit no single line).
func (f *fitter) fit(set *anchorSet) ([]segmentFit, error) {
	pts := slices.Clone(set.points)
	slices.SortFunc(pts, func(p, q point) int { return cmp.Compare(p.x, q.x) })
	hard := slices.Clone(set.hard)
	slices.SortStableFunc(hard, func(p, q hardBound) int { return cmp.Compare(p.x, q.x) })

	breaks := f.findSteps(pts)
	var segs []segmentFit
	from := int64(math.MinInt64)
	hi := 0
	for k := 0; k <= len(breaks); k++ {
		to := int64(math.MaxInt64)
		if k < len(breaks) {
			to = breaks[k]
		}
		segPts := pts[:0:0]
		for _, p := range pts {
			if p.x >= from && p.x < to {
				segPts = append(segPts, p)
			}
		}
		lo := hi
		for hi < len(hard) && hard[hi].x < to {
			hi++
		}
		out, err := f.fitSegment(segPts, hard[lo:hi], from, to)
		if err != nil {
			return nil, err
		}
		segs = append(segs, out...)
		from = to
	}
	return segs, nil
}

// frame picks a segment's centre (median anchor time) and coarse offset a0
// (median y − x), exactly in int64, so that the float64 arithmetic of the fit
// only ever sees small numbers (docs/statistics.md A.4: int64 ns ± float64 loses
// precision beyond 2^53 ns).
func frame(pts []point, hard []hardBound) (center, a0 int64) {
	var xs, ds []int64
	if len(pts) > 0 {
		for _, p := range pts {
			xs = append(xs, p.x)
			ds = append(ds, p.y-p.x)
		}
	} else {
		for _, h := range hard {
			xs = append(xs, h.x)
			ds = append(ds, h.y-h.x)
		}
	}
	slices.Sort(xs)
	slices.Sort(ds)
	return xs[len(xs)/2], ds[len(ds)/2]
}

func toSeconds(x, center int64) float64 { return float64(x-center) / 1e9 }

// fitSegment fits one segment [from, to) of local time.
func (f *fitter) fitSegment(pts []point, hard []hardBound, from, to int64) ([]segmentFit, error) {
	f.segments++
	if len(pts) == 0 && len(hard) == 0 {
		// A stretch with no anchors (only possible between steps found
		// elsewhere) borrows nothing: it is reported as having no bound.
		return []segmentFit{{from: from}}, nil
	}
	center, a0 := frame(pts, hard)
	s := segmentFit{from: from, center: center, a0: a0, anchors: len(pts) + len(hard)}

	// The soft estimate.
	u := make([]float64, len(pts))
	r := make([]float64, len(pts))
	for i, p := range pts {
		u[i] = toSeconds(p.x, center)
		r[i] = float64(p.y - p.x - a0)
	}
	haveEstimate := len(pts) > 0
	if haveEstimate {
		var err error
		pts, u, r, err = f.estimate(&s, pts, u, r)
		if err != nil {
			return nil, err
		}
	}

	// The hard feasible region.
	hs := make([]halfPlane, len(hard))
	for i, h := range hard {
		hs[i] = h.halfPlane(center, a0, true)
	}
	hardOK := false
	if len(hs) > 0 {
		if !haveEstimate {
			s.a = medianC(hs)
		}
		poly := intersect(f.dmax, hs)
		if poly == nil && f.segments <= f.opts.MaxSteps {
			if k, ok := f.feasibleSplit(hs, s.d); ok {
				bound := (hard[k-1].x + hard[k].x) / 2
				f.warnf("clock step near local time %d: no single line satisfies the hard bounds on both sides; fitted piecewise", bound)
				f.segments--
				return f.splitAt(pts, hard, from, to, bound)
			}
		}
		if poly == nil {
			var dropped int
			poly, dropped = dropViolators(hs, vertex{s.a, s.d}, f.dmax)
			if poly != nil {
				f.warnf("%d of %d hard bounds were violated by more than the others and dropped (mis-paired correlation IDs or an NVTX range not inside its span)", dropped, len(hs))
			}
		}
		switch {
		case poly == nil && hasBrackets(pts):
			return nil, &errContradiction{fmt.Sprintf("the clock-pair anchors contradict each other: no mapping with |drift| ≤ %g ppm passes through all their brackets", f.opts.MaxDriftPPM)}
		case poly == nil:
			f.warnf("the hard bounds (%d) contradict each other beyond the %s timestamp slack: an assumption behind them does not hold here (an NVTX range outside the span it mirrors, or mis-paired launches); no guaranteed bound", len(hs), fmtNs(float64(f.opts.TimestampSlackNs)))
		default:
			hardOK = true
			s.poly = poly
			if !haveEstimate {
				// Hug the bounds as they are (the partner's best guess),
				// not as loosened for the guarantee.
				tight := make([]halfPlane, len(hard))
				for i, h := range hard {
					tight[i] = h.halfPlane(center, a0, false)
				}
				tp := intersect(f.dmax, tight)
				if tp == nil {
					tight, tp = hs, poly
				}
				v := envelopeEstimate(tp, tight)
				s.a, s.d = v.a, v.d
			}
			scale := math.Max(1, math.Max(math.Abs(toSeconds(f.lo, center)), math.Abs(toSeconds(f.hi, center))))
			v := poly.project(vertex{s.a, s.d}, scale)
			s.a, s.d = v.a, v.d
		}
	}

	if haveEstimate {
		s.haveResiduals = true
		s.p50, s.p99 = absResidualQuantiles(u, r, s.a, s.d)
	}
	if hardOK {
		s.boundKnown, s.bound = f.boundOver(&s, max(from, f.lo), min(to-1, f.hi))
	}
	return []segmentFit{s}, nil
}

// estimate computes the soft point estimate into s, dropping matched events
// that are far off the fit. It returns the points kept.
func (f *fitter) estimate(s *segmentFit, pts []point, u, r []float64) ([]point, []float64, []float64, error) {
	f.solve(s, pts, u, r)
	tol := float64(f.opts.MatchToleranceNs)
	var matched, out int
	for i, p := range pts {
		if p.bracket() {
			continue
		}
		matched++
		if math.Abs(r[i]-s.a-s.d*u[i]) > tol {
			out++
		}
	}
	if out == 0 {
		return pts, u, r, nil
	}
	// Theil–Sen tolerates about 29% outliers; beyond a quarter the "fit"
	// is one of several stories the anchors tell.
	if 4*out > matched {
		return nil, nil, nil, &errContradiction{fmt.Sprintf(
			"the matched events contradict each other: %d of %d lie more than %s from the best single mapping", out, matched, fmtNs(tol))}
	}
	keepP := pts[:0:0]
	var keepU, keepR []float64
	for i, p := range pts {
		if !p.bracket() && math.Abs(r[i]-s.a-s.d*u[i]) > tol {
			continue
		}
		keepP = append(keepP, p)
		keepU = append(keepU, u[i])
		keepR = append(keepR, r[i])
	}
	f.warnf("%d of %d matched events lie more than %s from the fit and were dropped as mis-matched", out, matched, fmtNs(tol))
	f.solve(s, keepP, keepU, keepR)
	return keepP, keepU, keepR, nil
}

// solve fits the line through the soft anchors: weighted least squares on
// bracket midpoints when there are brackets (docs/statistics.md A.4 2a, dropping
// the widest 10% as the Intel Trace Collector does), else Theil–Sen on the
// matched events (2c). With less than MinDriftSpan of leverage the drift is
// poorly identified and is fixed at zero (2c) — unless the anchors plainly
// disagree: when a zero-drift line leaves residuals more than 1.5× as
// scattered as the fitted slope does, the slope is real (hundreds of ppm show
// within seconds) and is kept.
func (f *fitter) solve(s *segmentFit, pts []point, u, r []float64) {
	var bu, br, bw []float64
	for i, p := range pts {
		if p.bracket() {
			bu, br, bw = append(bu, u[i]), append(br, r[i]), append(bw, p.weight)
		}
	}
	if len(bu) > 0 {
		if len(bw) >= 10 {
			cut := slices.Clone(bw)
			slices.Sort(cut)
			limit := cut[len(cut)/10] // weights below this are the widest 10%
			for i := range bw {
				if bw[i] < limit {
					bw[i] = 0
				}
			}
		}
		a, d := weightedLine(bu, br, bw, len(bu) < 2)
		a0, _ := weightedLine(bu, br, bw, true)
		s.a, s.d, s.driftFitted = f.chooseDrift(bu, br, a, d, a0, len(bu) >= 2)
		return
	}
	if len(u) < 3 {
		s.a, s.d, s.driftFitted = stat.Median(slices.Clone(r)), 0, false
		return
	}
	a, d, ok := stat.TheilSen(u, r)
	s.a, s.d, s.driftFitted = f.chooseDrift(u, r, a, d, stat.Median(slices.Clone(r)), ok)
}

// chooseDrift picks between the fitted line (a, d) and the zero-drift line
// at offset a0, as solve describes.
func (f *fitter) chooseDrift(u, r []float64, a, d, a0 float64, fitted bool) (float64, float64, bool) {
	if !fitted {
		return a0, 0, false
	}
	if spread(u)*1e9 >= float64(f.opts.MinDriftSpanNs) {
		return a, d, true
	}
	fixedScale, _ := absResidualQuantiles(u, r, a0, 0)
	fitScale, _ := absResidualQuantiles(u, r, a, d)
	if fixedScale <= 1.5*fitScale {
		return a0, 0, false
	}
	return a, d, true
}

func spread(u []float64) float64 {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range u {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return hi - lo
}

func hasBrackets(pts []point) bool {
	for _, p := range pts {
		if p.bracket() {
			return true
		}
	}
	return false
}

func medianC(hs []halfPlane) float64 {
	cs := make([]float64, len(hs))
	for i, h := range hs {
		cs[i] = h.c
	}
	return stat.Median(cs)
}

// splitAt fits [from, at) and [at, to) separately.
func (f *fitter) splitAt(pts []point, hard []hardBound, from, to, at int64) ([]segmentFit, error) {
	var lp, rp []point
	for _, p := range pts {
		if p.x < at {
			lp = append(lp, p)
		} else {
			rp = append(rp, p)
		}
	}
	k, _ := slices.BinarySearchFunc(hard, at, func(h hardBound, x int64) int { return cmp.Compare(h.x, x) })
	left, err := f.fitSegment(lp, hard[:k], from, at)
	if err != nil {
		return nil, err
	}
	right, err := f.fitSegment(rp, hard[k:], at, to)
	if err != nil {
		return nil, err
	}
	return append(left, right...), nil
}

// feasibleSplit looks for a clock step hidden in the hard bounds: an index k
// (between constraints at distinct times) such that the bounds before k and
// those from k on are each satisfiable although all together are not. Among
// the admissible k it takes the one where the bounds' level jumps most.
func (f *fitter) feasibleSplit(hs []halfPlane, d float64) (int, bool) {
	n := len(hs)
	minSeg := f.opts.MinSegmentAnchors
	if n < 2*minSeg {
		return 0, false
	}
	firstFail := func(order func(i int) int) int {
		p := newBox(f.dmax)
		buf := make(polygon, 0, 16)
		for i := range n {
			buf = p.clip(hs[order(i)], buf)
			p, buf = buf, p
			if len(p) == 0 {
				return i
			}
		}
		return n
	}
	k1 := firstFail(func(i int) int { return i })                 // [0, k1) feasible
	k2 := n - 1 - firstFail(func(i int) int { return n - 1 - i }) // (k2, n) feasible
	lo, hi := max(k2+1, minSeg), min(k1, n-minSeg)
	best, bestJump := -1, 0.0
	e := make([]float64, n)
	for i, h := range hs {
		e[i] = h.c - d*h.u
	}
	for k := lo; k <= hi; k++ {
		if hs[k-1].u == hs[k].u {
			continue
		}
		l := stat.Median(slices.Clone(e[k-minSeg : k]))
		r := stat.Median(slices.Clone(e[k : k+minSeg]))
		if j := math.Abs(r - l); best < 0 || j > bestJump {
			best, bestJump = k, j
		}
	}
	return best, best > 0
}

// dropViolators removes the constraints the estimate violates most (at most
// 1% of them, docs/statistics.md A.4 step 1) and intersects the rest.
func dropViolators(hs []halfPlane, est vertex, dmax float64) (polygon, int) {
	limit := len(hs) / 100
	if limit == 0 {
		return nil, 0
	}
	idx := make([]int, len(hs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(i, j int) int {
		return cmp.Compare(hs[i].signedSlack(est), hs[j].signedSlack(est))
	})
	drop := 0
	for drop < limit && hs[idx[drop]].signedSlack(est) < 0 {
		drop++
	}
	if drop == 0 {
		return nil, 0
	}
	skip := make(map[int]bool, drop)
	for _, i := range idx[:drop] {
		skip[i] = true
	}
	kept := make([]halfPlane, 0, len(hs)-drop)
	for i, h := range hs {
		if !skip[i] {
			kept = append(kept, h)
		}
	}
	return intersect(dmax, kept), drop
}

// envelopeEstimate is the point estimate from hard bounds alone. With bounds
// on both sides it is the centre of the feasible region; with lower bounds
// only (kernel after launch) it is the line hugging them, the vertex that
// minimises the total slack Σ(f(x_j) − L_j) (Moon, Skelly and Towsley,
// INFOCOM 1999), and symmetrically for upper bounds only.
func envelopeEstimate(p polygon, hs []halfPlane) vertex {
	if p.bounded() {
		return p.centroid()
	}
	var nLo, nHi int
	var uLo, uHi float64
	for _, h := range hs {
		if h.lower {
			nLo++
			uLo += h.u
		} else {
			nHi++
			uHi += h.u
		}
	}
	// The vertex sits on bounds loosened by the 1 ns resolution (clipSlack);
	// lift it onto the bounds themselves.
	lift := clipSlack
	if nLo == 0 {
		lift = -clipSlack
	}
	best, bestObj := p[0], math.Inf(1)
	for _, v := range p {
		// Minimise slack above the lower bounds, or below the upper ones.
		obj := float64(nLo)*v.a + v.d*uLo - (float64(nHi)*v.a + v.d*uHi)
		if math.Abs(v.a) >= polyReach/2 {
			continue
		}
		if obj < bestObj {
			best, bestObj = v, obj
		}
	}
	best.a += lift
	return best
}

// boundOver returns the guaranteed |error| of the segment's estimate over
// local times [x0, x1]: the farthest the feasible region reaches from the
// estimate. The distance is convex in x (the region's extremes are maxima of
// lines), so the ends of the range suffice.
func (f *fitter) boundOver(s *segmentFit, x0, x1 int64) (bool, float64) {
	if x1 < x0 {
		x0, x1 = s.center, s.center
	}
	worst := 0.0
	for _, x := range [2]int64{x0, x1} {
		u := toSeconds(x, s.center)
		lo, hi, openLo, openHi := s.poly.rangeAt(u)
		if openLo || openHi {
			return false, 0
		}
		est := s.a + s.d*u
		worst = math.Max(worst, math.Max(hi-est, est-lo))
	}
	return true, math.Ceil(worst)
}

// fmtNs formats a duration in ns the way warnings print it.
func fmtNs(ns float64) string {
	a := math.Abs(ns)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3f s", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3f ms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}
