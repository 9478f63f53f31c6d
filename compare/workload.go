package compare

import (
	"fmt"
	"math"

	"github.com/llmprof/llmprof/internal/stat"
)

// One run per side holds two kinds of variation. Within the run, requests
// differ and neighbours in time share their fate; the bootstrap, blocks and
// batch means see that. Between runs, the workload itself differs — other
// prompts, other arrival times, another tenant's burst — and so does the
// state the serving system drifts into (KV-cache pressure, preemption
// storms), which a short run holds one draw of. On the simulator the run to
// run spread of a median was 1.3–3× what even the halves of one run show
// (docs/diff.md), so no within-run interval can stand in for it.
//
// What one run per side can decide depends on the design:
//
//   - The same workload replayed on both sides (a benchmark run with its
//     seed: the same prompts in the same order on the same schedule) makes
//     request i of the baseline and request i of the candidate the same
//     request. Diff pairs them: both sides are resampled with the same
//     requests (and blocks), so what the two runs share cancels and the
//     interval is that of the change, not of two unrelated draws.
//   - Different workloads cannot be told apart from a change of the code
//     with one run each: the run is the replication unit, and with one of
//     them per side every request-level metric is inconclusive, saying
//     what would decide (a replayed workload, earlier baselines, runs per
//     side).
//
// Replay is recognised from the prompt lengths (Run.InputTokens), which a
// replay reproduces request by request and different workloads do not.

// Workload settings of Options.Workload.
const (
	// WorkloadAuto (the default) pairs requests when the prompt lengths
	// show one workload replayed, leaves one-run-per-side metrics
	// undecided when they show different workloads, and treats the runs as
	// draws of one workload (with a warning) when they cannot tell.
	WorkloadAuto = "auto"
	// WorkloadPaired pairs request i with request i: the runs replayed one
	// workload (both sides must hold as many requests).
	WorkloadPaired = "paired"
	// WorkloadIndependent treats the two runs as independent draws of one
	// workload: intervals hold within-run variation only, as when the
	// prompts cannot be compared.
	WorkloadIndependent = "independent"
)

// Workload designs a comparison found (Result.Workload).
const (
	DesignReplayed  = "replayed"  // one workload on both sides: requests paired
	DesignDifferent = "different" // the prompts differ: one run per side cannot decide
	DesignUnknown   = "unknown"   // no prompt lengths to tell; treated as one workload
	DesignAssumed   = "assumed"   // --workload independent: treated as one workload
	// DesignReordered: the same prompts in another order (a benchmark that
	// sends them all at once, so the server sees them in any order): one
	// workload, but request i of one run is not request i of the other, so
	// the requests are compared unpaired.
	DesignReordered = "reordered"
)

// replayAgreement is the share of requests whose prompt lengths must agree,
// position by position, for two runs to count as one workload replayed (a
// few requests swapped in arrival order, or failed, do not break a replay),
// or once both are sorted for the same prompts reordered. Two independent
// draws of as many prompts from one length distribution agree far less: at
// most 9–28% for 200–10,000 log-normal lengths (median 300, log-sd 0.5), and
// 61% for 2000 from a narrow one (median 100, log-sd 0.3), the highest of 20
// pairs of draws (TestIndependentDrawsAreNotAReplay).
const replayAgreement = 0.9

// workloadMatch compares the prompt lengths of two runs in arrival order:
// ok is false when either lacks them (for more than a tenth of its
// requests); agree is the share of positions whose lengths are equal, and
// sameSet the share once both are sorted (the same prompts in any order).
func workloadMatch(b, c *Run) (agree, sameSet float64, ok bool) {
	known := func(r *Run) bool {
		if len(r.InputTokens) != r.Requests || r.Requests == 0 {
			return false
		}
		k := 0
		for _, v := range r.InputTokens {
			if !math.IsNaN(v) {
				k++
			}
		}
		return float64(k) >= 0.9*float64(r.Requests)
	}
	if !known(b) || !known(c) {
		return 0, 0, false
	}
	if b.Requests != c.Requests {
		return 0, 0, true
	}
	equal := func(x, y []float64) float64 {
		same := 0
		for i, v := range x {
			if v == y[i] && !math.IsNaN(v) {
				same++
			}
		}
		return float64(same) / float64(len(x))
	}
	return equal(b.InputTokens, c.InputTokens), equal(sortedCopy(b.InputTokens), sortedCopy(c.InputTokens)), true
}

// decideWorkload sets c.paired and the result's design for one run per
// side. It fails when pairing is asked for and cannot be done.
func (c *comparison) decideWorkload() error {
	if len(c.base.runs) != 1 || len(c.cand.runs) != 1 {
		return nil // several runs per side: the run is the unit, or they are pooled
	}
	b, k := &c.base.runs[0], &c.cand.runs[0]
	agree, sameSet, ok := workloadMatch(b, k)
	switch c.opts.Workload {
	case WorkloadPaired:
		if b.Requests != k.Requests {
			return fmt.Errorf("--workload paired: baseline has %d requests, candidate %d; pairing needs one request for each", b.Requests, k.Requests)
		}
		c.pair()
		if ok && agree < replayAgreement {
			c.warnf("--workload paired: the prompt lengths agree at only %.0f%% of requests; pairing request i with request i assumes one workload replayed", 100*agree)
		}
	case WorkloadIndependent:
		c.res.Workload = DesignAssumed
		c.warnf("--workload independent: the two runs are taken as independent draws of one workload; the intervals hold the variation within each run, not the difference between workloads")
	default:
		switch {
		case !ok:
			c.res.Workload = DesignUnknown
			c.warnf("cannot tell whether both runs replayed one workload (no prompt lengths, input_tokens, on a side): the intervals assume they did; if the prompts differ, a change may be the workload's")
		case agree >= replayAgreement:
			c.pair()
		case sameSet >= replayAgreement:
			c.res.Workload = DesignReordered
			c.warnf("both runs served the same prompts in another order (their lengths agree at %.0f%% of requests once sorted, %.0f%% in arrival order): one workload, compared unpaired", 100*sameSet, 100*agree)
		default:
			c.res.Workload = DesignDifferent
			what := fmt.Sprintf("the prompt lengths agree at %.0f%% of requests", 100*agree)
			if b.Requests != k.Requests {
				what = fmt.Sprintf("%d requests against %d", b.Requests, k.Requests)
			}
			c.warnf("the two runs served different workloads (%s): with one run per side a change cannot be told from the difference of workloads and run-to-run variance, so no request-level metric is decided; "+
				"replay the same workload (the same prompts and arrival seed, e.g. vllm bench serve --seed), give ≥ 2 earlier baselines (--baseline-history), or ≥ %d runs per side; --workload independent decides from within-run variation alone", what, stat.MinSamplesForU(c.opts.Alpha))
		}
	}
	return nil
}

// pair compares request i of the baseline with request i of the candidate.
func (c *comparison) pair() {
	c.paired = true
	c.res.Workload = DesignReplayed
	c.res.Unit = "request (paired)"
}

// requireWorkload marks a request-level metric undecided when the runs
// served different workloads (decideWorkload); that reason comes before any
// other, since no amount of data within the two runs would remove it.
func (c *comparison) requireWorkload(w *work) {
	if c.res.Workload != DesignDifferent || w.m.Method == MethodNone {
		return
	}
	if w.short == "" && c.bounded(w) {
		if w.boundWhy == "" {
			w.boundWhy = "the runs served different workloads"
		}
		return
	}
	need := stat.MinSamplesForU(c.opts.Alpha)
	w.short = fmt.Sprintf("%s: the runs served different workloads; one run of each cannot separate a change from the difference of workloads; a replayed workload, ≥ 2 earlier baselines (--baseline-history) or ≥ %d runs per side would", w.m.Name, need)
	w.shortN = need
	w.unitsOf = "runs"
}

// pairedShiftMetric is ".shift" for one workload replayed: the one-sample
// Hodges–Lehmann estimate of the requests' log changes, candidate request i
// against baseline request i, with the signed-rank interval and test; an
// absolute gate threshold is the ratio it makes at the baseline median. The
// interval is widened, and the test statistic shrunk, by √(n/n_eff) of the
// differences (dependence.go), and joined to batch means where requests
// are autocorrelated, as for the two-sample shift. Only for positive
// latencies: with zeros (queue time) the differences pile up at 0, and the
// signed-rank test's normal approximation false-failed half the replayed
// simulator pairs, so such a shift stays two-sample.
func (c *comparison) pairedShiftMetric(s spec, depB, depC dependence) {
	vb, vc := c.base.series[s.series()], c.cand.series[s.series()]
	var b, d []float64
	for i := range vb {
		if !math.IsNaN(vb[i]) && !math.IsNaN(vc[i]) {
			b = append(b, vb[i])
			d = append(d, math.Log(vc[i])-math.Log(vb[i]))
		}
	}
	w := c.newWork(s, MethodPairedHodgesLehmann, len(d), len(d))
	m := w.m
	alpha := c.opts.Alpha
	mb := quantileOf(b, 0.5)
	inflate := 1.0
	if e := c.pairedNeff[s.name]; e.n > 0 && e.neff > 0 {
		inflate = math.Max(1, math.Sqrt(float64(e.n)/e.neff))
	}
	hl := stat.PairedHodgesLehmann(d, alpha)
	lo, hi := hl.Estimate-inflate*(hl.Estimate-hl.Low), hl.Estimate+inflate*(hl.High-hl.Estimate)
	sorted := sortedCopy(d)
	pu, pl := stat.SignedRankTest(sorted, 0)
	m.P = math.Min(1, 2*math.Min(inflateP(pu, inflate, false), inflateP(pl, inflate, false)))
	m.Significant = m.P <= alpha
	seD := inflate * math.Sqrt(math.Pi/3) * stddev(d) / math.Sqrt(float64(max(1, len(d))))
	m.DeltaPct, m.CILowPct, m.CIHighPct = pctOfLog(hl.Estimate), pctOfLog(lo), pctOfLog(hi)
	m.Delta, m.CILow, m.CIHigh = mb*m.DeltaPct/100, mb*m.CILowPct/100, mb*m.CIHighPct/100
	m.MDEPct = pctOfLog((c.za + c.zb) * seD)
	m.MDE = mb * m.MDEPct / 100
	m.Note = "paired Hodges–Lehmann shift: the median of the Walsh averages of the requests' log changes (Wilcoxon signed-rank interval)"
	m.MinN = stat.MinSignedRankN
	if hl.K == 0 {
		w.short = fmt.Sprintf("%s needs ≥ %d paired requests for an interval (have %d)", m.Name, stat.MinSignedRankN, len(d))
		w.shortN = stat.MinSignedRankN
	}
	w.pFail = func(g Gate) float64 {
		delta, ok := gateOnScale(g, true, mb)
		if !ok {
			return 1
		}
		pu, pl := stat.SignedRankTest(sorted, delta)
		if g.Op == Below {
			return inflateP(pu, inflate, false)
		}
		return inflateP(pl, inflate, false)
	}
	if c.batchMeansOn() {
		if bm, ok := c.newBatchMeans(s, mb, mb*(1+m.DeltaPct/100)); ok {
			c.widen(w, bm, mb)
		}
	}
	c.requireEffective(w, depB, depC)
}
