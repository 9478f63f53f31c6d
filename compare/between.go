package compare

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmprof/llmprof/internal/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// The between-run bound: with one run per side, the variance between runs
// (another machine, day or workload draw) cannot be estimated, but it is not
// zero, and where a side's requests are too dependent for its own interval
// to be trusted (too few effective samples, a tail made of a few episodes)
// or the runs served different workloads, the within-run interval alone
// would decide on noise. The gate then uses a stated bound σ on the
// between-run standard deviation of the metric's log value: the change's
// interval is the within-run one widened in quadrature by z·√2·σ (a
// difference of two runs has twice one run's variance), and its p-values
// come from the same normal approximation, so a p ≤ α/2 is exactly an
// interval past the threshold.
//
// σ is the 95% upper confidence bound √(Σd²/2k)·√(k/χ²_{0.05,k}) on the
// between-run σ of the log statistic over k A/A pairs (d the pairs' log
// ratios), the largest over the pairs each table was calibrated on
// (compare/between_test.go, TestBetweenRunBoundCalibration, figures in
// docs/diff.md): replayed — the real nightly vLLM runs of one configuration
// (../shared/testdata/vllm-bench 02, 03, 04) and simulator runs of one
// workload seed with other noise; different — simulator runs of different
// workload seeds (no real pair of different prompt draws is in the
// repository). A floor of 1% stands for what the calibration cannot see
// (another machine, another day). The shift uses the median's bound. Metrics
// without a figure (queue, buckets, rates) are not decided this way.
var (
	betweenReplayed = map[string]float64{
		"ttft.p50": 0.064, "ttft.p90": 0.103, "ttft.p99": 0.033, "ttft.mean": 0.059,
		"tpot.p50": 0.028, "tpot.p90": 0.030, "tpot.p99": 0.023, "tpot.mean": 0.013,
		"itl.p50": 0.011, "itl.p90": 0.054, "itl.p99": 0.123, "itl.mean": 0.010,
		"e2e.p50": 0.049, "e2e.p90": 0.041, "e2e.p99": 0.015, "e2e.mean": 0.016,
	}
	betweenDifferent = map[string]float64{
		"ttft.p50": 1.52, "ttft.p90": 0.603, "ttft.p99": 0.398, "ttft.mean": 0.677,
		"tpot.p50": 0.106, "tpot.p90": 0.677, "tpot.p99": 0.824, "tpot.mean": 0.343,
		"itl.p50": 0.039, "itl.p90": 0.535, "itl.p99": 0.532, "itl.mean": 0.344,
		"e2e.p50": 0.424, "e2e.p90": 0.447, "e2e.p99": 0.403, "e2e.mean": 0.419,
	}
)

// betweenPaired is the bound for a tail quantile (p90, p99) of one workload
// replayed with its requests paired, where the interval is the paired block
// bootstrap's alone (pairedTail): not the whole A/A spread of the statistic
// but the part of it that interval does not hold. Over k A/A pairs with log
// changes d and bootstrap standard errors s (the interval's half toward 0
// over z), σ is the 95% upper confidence bound on the excess variance τ²
// of d ~ N(0, s² + τ²) — the τ at which Σ d²/(s² + τ²) falls to χ²_{0.05,k}
// — divided by √2 (per run, as above), the largest over the sources and
// two bootstrap seeds (rounded up, with the 1% floor): the real nightly
// runs 02/03/04 (200 requests: no p99 of a request latency is decided
// there) and 30 simulator replays (20 s, workload seeds 7000–7029, noise 1
// against 2).
// TestPairedTailBoundCalibration recomputes both; docs/diff.md has the
// table.
var betweenPaired = map[string]float64{
	"ttft.p90": 0.090, "ttft.p99": 0.013,
	"tpot.p90": 0.010, "tpot.p99": 0.010,
	"itl.p90": 0.013, "itl.p99": 0.123,
	"e2e.p90": 0.040, "e2e.p99": 0.010,
}

// BetweenRunBound is the between-run bound σ (log scale) of a latency
// statistic ("itl.p50") for runs of one replayed workload, or of different
// workloads; false when there is none.
func BetweenRunBound(name string, replayed bool) (float64, bool) {
	name = strings.Replace(name, "."+StatShift, ".p50", 1)
	t := betweenDifferent
	if replayed {
		t = betweenReplayed
	}
	s, ok := t[name]
	return max(s, 0.01), ok
}

// PairedTailBound is the bound σ of a tail quantile ("itl.p90") of one
// replayed workload with paired requests, decided from the paired block
// bootstrap alone (betweenPaired); false when there is none.
func PairedTailBound(name string) (float64, bool) {
	s, ok := betweenPaired[name]
	return max(s, 0.01), ok
}

// pairedTail reports whether s is a tail quantile of a replayed workload
// with paired requests, one run per side, with a paired bound: its interval
// is the paired block bootstrap's widened by PairedTailBound, without batch
// means. Segment quantiles of an eighth of a run are noisy and biased for a
// p90 or p99 (a segment's p99 is nearly its maximum; ITL's p90 sits at the
// edge of the decode-step mode and jumps between modes from one segment to
// the next), and their union with the bootstrap kept GEMM kernels 30%
// slower from failing itl.p90<+10% in 21 of 30 replayed simulator pairs;
// the paired resampling of the same request blocks already cancels the
// episodes both runs share, and the bound holds what it misses.
func (c *comparison) pairedTail(s spec) bool {
	if !c.paired || len(c.base.runs) != 1 || len(c.cand.runs) != 1 || s.kind() != KindLatency ||
		s.stat == StatMean || s.stat == StatShift || s.q < tailQuantile {
		return false
	}
	_, ok := PairedTailBound(s.name)
	return ok
}

// bounded reports whether w can be decided with the between-run bound: one
// run per side, a latency statistic with a figure, an interval on the log
// scale.
func (c *comparison) bounded(w *work) bool {
	if len(c.base.runs) != 1 || len(c.cand.runs) != 1 || w.spec.kind() != KindLatency || w.m.Note == noteRawShift {
		return false
	}
	_, ok := BetweenRunBound(w.spec.name, c.res.Workload != DesignDifferent)
	return ok
}

// applyBound widens w's interval by the between-run bound and replaces its
// p-values by those of the same interval; why says what made the bound
// necessary.
func (c *comparison) applyBound(w *work) {
	m := w.m
	sigma, _ := BetweenRunBound(w.spec.name, c.res.Workload != DesignDifferent)
	design := "one replayed workload"
	if c.pairedTail(w.spec) {
		sigma, _ = PairedTailBound(w.spec.name)
		design = "one replayed workload, paired requests; σ beyond the paired interval"
	}
	if math.IsInf(m.CILowPct, 0) || math.IsInf(m.CIHighPct, 0) || math.IsNaN(m.DeltaPct) || math.IsInf(m.DeltaPct, 0) || m.CILowPct <= -100 || m.DeltaPct <= -100 {
		// No finite log interval to widen: the reason for the bound
		// stands, so the metric is not decided.
		w.short = fmt.Sprintf("%s: %s, and its interval has no finite log ratio to widen by the between-run bound", m.Name, w.boundWhy)
		w.shortN = stat.MinSamplesForU(c.opts.Alpha)
		return
	}
	w.withinLo, w.withinHi, w.withinKnown = m.CILowPct, m.CIHighPct, true
	e, le, he := math.Log1p(m.DeltaPct/100), math.Log1p(m.CILowPct/100), math.Log1p(m.CIHighPct/100)
	b := c.za * math.Sqrt2 * sigma
	hlo, hhi := math.Hypot(e-le, b), math.Hypot(he-e, b)
	lo, hi := e-hlo, e+hhi
	scale := m.Baseline
	if math.IsNaN(scale) && m.DeltaPct != 0 {
		scale = m.Delta / (m.DeltaPct / 100)
	}
	m.CILowPct, m.CIHighPct = pctOfLog(lo), pctOfLog(hi)
	m.CILow, m.CIHigh = scale*m.CILowPct/100, scale*m.CIHighPct/100
	seLo, seHi := hlo/c.za, hhi/c.za
	se := func(d float64) float64 { // the half of the interval a test of d uses
		if d > 0 {
			return seLo
		}
		return seHi
	}
	m.P = math.Min(1, 2*(1-distuv.UnitNormal.CDF(math.Abs(e)/se(e))))
	m.Significant = m.P <= c.opts.Alpha
	m.MDEPct = pctOfLog((c.za + c.zb) * (seLo + seHi) / 2)
	m.MDE = scale * m.MDEPct / 100
	if c.res.Workload == DesignDifferent {
		design = "different workloads"
	}
	note := fmt.Sprintf("one run per side (%s; %s): interval and p include the between-run bound σ = %.1f%% (docs/diff.md)", design, w.boundWhy, 100*sigma)
	if m.Note != "" {
		note = m.Note + "; " + note
	}
	m.Note = note
	base := scale
	w.pFail = func(g Gate) float64 {
		thr, ok := gateOnScale(g, true, base)
		if !ok {
			return 1
		}
		d := e - thr
		if g.Op == Below {
			return 1 - distuv.UnitNormal.CDF(d/se(d))
		}
		return distuv.UnitNormal.CDF(d / se(d))
	}
}

// betweenVar is the variance a between-run spread σ (of one run's log
// value) adds to the difference of the two sides' pooled estimates: each
// side's requests or steps pool its runs, whose run effects average out to
// σ²/r for r runs — 2σ² with one run per side. The levels that pool runs
// rather than compare them as units (the step and adjusted request levels)
// add it; adding 2σ² whatever the runs made a rule with a bound of 40% (the
// adjusted ones across different workloads) unable to pass with any number
// of runs.
func (c *comparison) betweenVar(sigma float64) float64 {
	rb, rc := max(len(c.base.runs), 1), max(len(c.cand.runs), 1)
	return sigma * sigma * (1/float64(rb) + 1/float64(rc))
}
