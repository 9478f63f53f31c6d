package compare

import (
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// The bootstrap, blocked or not, sees the variation inside each run. Slow
// changes of state — a preemption storm, a burst of long prompts, one
// tenant's share of the traffic — move a whole run's statistics, and with
// one run per side they are what a false "fail" is made of. Batch means
// (Law & Kelton, Simulation Modeling and Analysis, §9.5.3) see them: each
// side's requests are cut into Segments contiguous stretches in arrival
// order, the statistic is computed on each, and the spread of the paired
// segment differences δ_k (segment k of the candidate against segment k of
// the baseline) estimates the variance of the whole runs' change, s_δ²/K.
// The change then has the interval d ± t_{K−1}·s_δ/√K on the log scale
// (raw where a value is ≤ 0), and the metric's interval is the union of
// that and the bootstrap's: a rule fails only when both agree. It applies
// where the requests are autocorrelated (batchMeansOn).

// Segments is the most stretches batch means cut a side into; fewer when
// the run is short against its requests' lifetimes (segmentCount).
const Segments = 8

// segmentLives is how many mean request lifetimes a segment spans at
// least. On the simulator (docs/diff.md) 1 and 1.5 left token.other and
// token.gpu.idle — means made of a few CPU stalls that hit every request
// alive — false-failing in 7–11% of replayed pairs; 2 kept every metric
// within α.
const segmentLives = 2

// segmentCount is how many stretches batch means cut both sides into.
// Requests alive at the same moment share the engine's state — a CPU stall,
// a preemption storm, the batch they decode in — so stretches shorter than
// a request's life are correlated and would understate the variance. Each
// segment spans at least twice the mean request lifetime (end-to-end
// latency), by each side's duration: Segments at most, 2 at least (with
// Student's t on 1 degree of freedom, an honest, wide interval for a run
// that holds few independent stretches). Without durations or end-to-end
// latency, Segments.
func (c *comparison) segmentCount() int {
	k := Segments
	for _, p := range []*pooled{c.base, c.cand} {
		var dur float64
		for _, r := range p.runs {
			dur += r.DurationMS
		}
		life := mean(known(p.series["e2e"]))
		if dur > 0 && life > 0 && !math.IsNaN(life) {
			k = min(k, int(dur/(segmentLives*life)))
		}
	}
	return max(2, k)
}

// minSegmentUnits is the fewest requests a segment must hold for batch
// means to be computed at all (smaller sides rely on the bootstrap).
const minSegmentUnits = 10

// segmentValues returns metric s on each of Segments contiguous stretches
// of side p's requests; nil when the side is too short.
func (c *comparison) segmentValues(p *pooled, s spec) []float64 {
	K := c.segments
	if p.n < K*minSegmentUnits {
		return nil
	}
	out := make([]float64, 0, K)
	for k := range K {
		lo, hi := k*p.n/K, (k+1)*p.n/K
		var v float64
		switch {
		case s.kind() == KindBucket:
			v = newRatioSeries(p.fam[s.fam.fam][s.bucket][lo:hi], p.out[lo:hi]).value()
		case s.isITL():
			a, b := lo*len(p.itl)/p.n, hi*len(p.itl)/p.n
			if p.itlReq != nil {
				a = sort.Search(len(p.itlReq), func(j int) bool { return int(p.itlReq[j]) >= lo })
				b = sort.Search(len(p.itlReq), func(j int) bool { return int(p.itlReq[j]) >= hi })
			}
			if b-a < 2 {
				return nil
			}
			v = segmentStat(p.itl[a:b], s)
		default:
			x := known(p.series[s.series()][lo:hi])
			if len(x) < 2 {
				return nil
			}
			v = segmentStat(x, s)
		}
		if math.IsNaN(v) {
			return nil
		}
		out = append(out, v)
	}
	return out
}

func segmentStat(x []float64, s spec) float64 {
	if s.stat == StatShift {
		s.q = 0.5
	}
	return pointStat(x, s)
}

// batchMeans is the between-segment view of one metric's change.
type batchMeans struct {
	log    bool    // on the log scale
	d, se  float64 // the whole-run change and its standard error
	t      distuv.StudentsT
	lo, hi float64 // the 1−α interval of the change, in percent
}

// newBatchMeans compares the segment values of both sides around the
// whole-run values pb and pc; ok is false when it cannot (too few
// requests, a segment without the statistic).
func (c *comparison) newBatchMeans(s spec, pb, pc float64) (batchMeans, bool) {
	sb, sc := c.segmentValues(c.base, s), c.segmentValues(c.cand, s)
	if sb == nil || sc == nil || math.IsNaN(pb) || math.IsNaN(pc) {
		return batchMeans{}, false
	}
	bm := batchMeans{log: pb > 0 && pc > 0 && allPositive(sb, sc)}
	tr := func(x []float64) []float64 { return x }
	if bm.log {
		tr = logs
		bm.d = math.Log(pc / pb)
	} else {
		if pb == 0 {
			return batchMeans{}, false
		}
		bm.d = pc - pb
	}
	// Segment k of one side is paired with segment k of the other: the
	// same stretch of the workload's schedule when runs replay it (the same
	// prompts and arrival seed), so a warm-up ramp both share cancels; for
	// unrelated schedules the pairing costs only degrees of freedom.
	lb, lc := tr(sb), tr(sc)
	diffs := make([]float64, len(lb))
	for k := range diffs {
		diffs[k] = lc[k] - lb[k]
	}
	bm.se = stddev(diffs) / math.Sqrt(float64(len(diffs)))
	nu := float64(len(diffs) - 1)
	if bm.se == 0 {
		return batchMeans{}, false
	}
	bm.t = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}
	half := bm.t.Quantile(1-c.opts.Alpha/2) * bm.se
	if bm.log {
		bm.lo, bm.hi = pctOfLog(bm.d-half), pctOfLog(bm.d+half)
	} else {
		bm.lo, bm.hi = pctOf(bm.d-half, pb), pctOf(bm.d+half, pb)
	}
	return bm, true
}

// p is the two-sided p-value for no change.
func (bm batchMeans) p() float64 { return 2 * (1 - bm.t.CDF(math.Abs(bm.d)/bm.se)) }

// pFail is the one-sided p-value against "the change does not breach g",
// for a metric whose baseline value is pb.
func (bm batchMeans) pFail(g Gate, pb float64) float64 {
	thr := g.Threshold
	switch {
	case g.Relative && bm.log:
		if thr <= -100 {
			return 1
		}
		thr = math.Log1p(thr / 100)
	case g.Relative:
		thr = thr / 100 * pb
	case bm.log:
		if pb+thr <= 0 {
			if g.Op == Below {
				return 0
			}
			return 1
		}
		thr = math.Log((pb + thr) / pb)
	}
	z := (bm.d - thr) / bm.se
	if g.Op == Below {
		return 1 - bm.t.CDF(z)
	}
	return bm.t.CDF(z)
}

// widen makes a metric's interval, p-value and MDE the more cautious of
// its own and the batch means', and its gate test need both to fail.
func (c *comparison) widen(w *work, bm batchMeans, pb float64) {
	m := w.m
	base := pb
	if bm.lo < m.CILowPct {
		m.CILowPct = bm.lo
		if base != 0 {
			m.CILow = base * bm.lo / 100
		}
	}
	if bm.hi > m.CIHighPct {
		m.CIHighPct = bm.hi
		if base != 0 {
			m.CIHigh = base * bm.hi / 100
		}
	}
	m.P = math.Max(m.P, bm.p())
	m.Significant = m.P <= c.opts.Alpha
	mde := (bm.t.Quantile(1-c.opts.Alpha/2) + c.zb) * bm.se
	if bm.log {
		mde = pctOfLog(mde)
	} else {
		mde = pctOf(mde, pb)
	}
	if !(mde <= m.MDEPct) {
		m.MDEPct = mde
		if base != 0 {
			m.MDE = base * mde / 100
		}
	}
	inner := w.pFail
	w.pFail = func(g Gate) float64 {
		p := bm.pFail(g, pb)
		if inner != nil {
			p = math.Max(p, inner(g))
		}
		return p
	}
}

// batchMeansOn says whether intervals are joined with batch means: when a
// side's requests are resampled in blocks (autocorrelation detected, or
// blocks asked for). Independent requests keep the bootstrap's full power.
func (c *comparison) batchMeansOn() bool {
	return c.opts.Block != 0 && (c.base.block > 1 || c.cand.block > 1)
}
