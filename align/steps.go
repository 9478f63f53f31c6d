package align

import (
	"math"
	"slices"

	"github.com/llmprof/llmprof/internal/stat"
)

// findSteps returns the local times at which the clock of a domain steps
// (settimeofday, an NTP step, a VM migration): places where the residuals of
// the soft anchors, sorted by time, jump to a new level and stay there for at
// least MinSegmentAnchors anchors on each side. It is binary segmentation
// (docs/statistics.md A.4 step 0, after Paxson, SIGMETRICS 1998) with a robust
// jump statistic: the difference of the medians of the k anchors after and
// the k before a candidate split, k = MinSegmentAnchors. A jump counts when it
// exceeds max(10·scale, StepMinNs), where scale is the median absolute first
// difference of the detrended residuals divided by √2 — an estimate of the
// noise that a single step does not inflate (a global MAD would be half the
// step itself).
//
// Assumptions: anchors on either side of a step are dense enough that k of
// them lie between consecutive steps; drift is smooth, so detrending with a
// slope taken from nearby pairs leaves the local level flat.
func (f *fitter) findSteps(pts []point) []int64 {
	k := f.opts.MinSegmentAnchors
	if len(pts) < 2*k || f.opts.MaxSteps <= 0 {
		return nil
	}
	pts = f.withoutBursts(pts)
	if len(pts) < 2*k {
		return nil
	}
	center, a0 := frame(pts, nil)
	u := make([]float64, len(pts))
	r := make([]float64, len(pts))
	for i, p := range pts {
		u[i] = toSeconds(p.x, center)
		r[i] = float64(p.y - p.x - a0)
	}
	var splits []int
	var rec func(lo, hi int)
	rec = func(lo, hi int) {
		if len(splits) >= f.opts.MaxSteps {
			return
		}
		s, ok := f.strongestStep(u[lo:hi], r[lo:hi], pts[lo:hi], k)
		if !ok {
			return
		}
		splits = append(splits, lo+s)
		rec(lo, lo+s)
		rec(lo+s, hi)
	}
	rec(0, len(pts))
	slices.Sort(splits)
	out := make([]int64, len(splits))
	for i, s := range splits {
		// The step happened somewhere between the two anchors; split half
		// way (records in between are ambiguous by at most that gap).
		out[i] = pts[s-1].x + (pts[s].x-pts[s-1].x)/2 + 1
	}
	return out
}

// strongestStep finds the split index in one run of sorted anchors.
func (f *fitter) strongestStep(u, r []float64, pts []point, k int) (int, bool) {
	n := len(u)
	if n < 2*k {
		return 0, false
	}
	d := localSlope(u, r)
	e := make([]float64, n)
	for i := range n {
		e[i] = r[i] - d*u[i]
	}
	diffs := make([]float64, 0, n-1)
	for i := 1; i < n; i++ {
		diffs = append(diffs, math.Abs(e[i]-e[i-1]))
	}
	scale := stat.Median(diffs) / math.Sqrt2
	threshold := math.Max(10*scale, float64(f.opts.StepMinNs))

	win := make([]float64, k)
	med := func(from int) float64 {
		copy(win, e[from:from+k])
		return stat.Median(win)
	}
	best, bestJump := -1, 0.0
	for s := k; s <= n-k; s++ {
		if pts[s].x == pts[s-1].x {
			continue
		}
		if j := math.Abs(med(s) - med(s-k)); j > bestJump {
			best, bestJump = s, j
		}
	}
	if best < 0 || bestJump <= threshold {
		return 0, false
	}
	// The coarse split can be off by a couple of anchors (a window with
	// one anchor from the other side has the same median). Refine: put the
	// split where assigning each nearby anchor to the nearer of the two
	// levels costs least.
	left, right := med(best-k), med(best)
	from, to := max(k, best-k+1), min(n-k, best+k-1)
	bestCost, refined := math.Inf(1), best
	for s := from; s <= to; s++ {
		if pts[s].x == pts[s-1].x {
			continue
		}
		cost := 0.0
		for i := max(0, best-2*k); i < min(n, best+2*k); i++ {
			if i < s {
				cost += math.Abs(e[i] - left)
			} else {
				cost += math.Abs(e[i] - right)
			}
		}
		if cost < bestCost || (cost == bestCost && abs(s-best) < abs(refined-best)) {
			bestCost, refined = cost, s
		}
	}
	return refined, true
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// withoutBursts drops, for the step search only, anchors farther than
// MatchToleranceNs from the running median of the 4k+1 anchors around them
// (k = MinSegmentAnchors). A few adjacent mismatched events would otherwise
// look like a short-lived level; a real step moves the running median within
// 2k anchors, so the anchors after it survive. The estimate later sees every
// anchor again and judges mismatches on its own.
func (f *fitter) withoutBursts(pts []point) []point {
	m := 2 * f.opts.MinSegmentAnchors
	if len(pts) < 2*m+1 {
		return pts
	}
	tol := float64(f.opts.MatchToleranceNs)
	center, a0 := frame(pts, nil)
	u := make([]float64, len(pts))
	r := make([]float64, len(pts))
	for i, p := range pts {
		u[i] = toSeconds(p.x, center)
		r[i] = float64(p.y - p.x - a0)
	}
	// Detrend first: drift moves the level by up to MaxDriftPPM·window.
	d := localSlope(u, r)
	for i := range r {
		r[i] -= d * u[i]
	}
	win := make([]float64, 0, 2*m+1)
	out := make([]point, 0, len(pts))
	for i, p := range pts {
		lo := max(0, min(i-m, len(pts)-2*m-1))
		win = append(win[:0], r[lo:lo+2*m+1]...)
		if math.Abs(r[i]-stat.Median(win)) <= tol {
			out = append(out, p)
		}
	}
	return out
}

// localSlope is the Theil–Sen slope over pairs of anchors 2 to 9 apart in
// time order: few such pairs straddle a step, so a step barely moves it
// (a global slope would tilt towards the step). Neighbours are skipped
// because the two ends of one matched span are neighbours whose slope is
// all jitter over a short span.
func localSlope(u, r []float64) float64 {
	n := len(u)
	var slopes []float64
	for i := range n {
		for j := i + 2; j <= i+9 && j < n; j++ {
			if du := u[j] - u[i]; du != 0 {
				slopes = append(slopes, (r[j]-r[i])/du)
			}
		}
	}
	if len(slopes) == 0 {
		for i := 1; i < n; i++ {
			if du := u[i] - u[i-1]; du != 0 {
				slopes = append(slopes, (r[i]-r[i-1])/du)
			}
		}
	}
	if len(slopes) == 0 {
		return 0
	}
	return stat.Median(slopes)
}
