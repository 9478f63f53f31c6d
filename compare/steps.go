package compare

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/internal/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Engine-step level (docs/diff.md, "Engine steps"): an engine step's time is
// a function of its batch — the prompt tokens it prefills, the sequences it
// decodes, the KV tokens they attend over — and a candidate that served
// bigger batches has longer steps without being slower. Within each engine,
// log step time is regressed on the composition, pooled over both sides
// with a side indicator:
//
//	log d = γ·candidate + f(composition) + ε,
//
// f a quadratic in the logs of the composition with its cross terms. γ is
// the cost: the candidate's steps at equal batches. Because the fit has an
// intercept and the side indicator, each side's residuals average zero, so
// the change of the mean log step time splits exactly,
//
//	mean log d_c − mean log d_b = γ + β'(x̄_c − x̄_b),
//
// into cost and composition (an Oaxaca–Blinder decomposition with pooled
// coefficients). Each part is linear in the step times, so its variance is
// the cluster-robust one over blocks of consecutive steps (compare/linfit.go):
// neighbouring steps share a batch and a stall, blocks of them are nearly
// independent. Engines are matched across sides by service and models and
// pooled with their share of the baseline's step time as weight. With one
// run per side the interval also holds a stated between-run bound
// (stepBetweenSigma), since no within-run interval sees a machine or a day;
// with several runs per side their steps are pooled and the bound holds
// too, for the mean of each side's runs (betweenVar).

// prefixStep starts the step metrics: "step.cost" (every step),
// "step.cost.decode" (decode-only steps) and "step.cost.prefill" (steps
// that prefill).
const (
	prefixStep        = "step."
	MetricStepCost    = "step.cost"
	MetricStepDecode  = "step.cost.decode"
	MetricStepPrefill = "step.cost.prefill"
)

// StepMetrics are the step-level metrics, in display order.
var StepMetrics = []string{MetricStepCost, MetricStepDecode, MetricStepPrefill}

// KindStep: a step-level cost, the change of step time at equal batch
// composition (compare/steps.go).
const KindStep = KindKernel + 1

// MethodStepRegression: log step time regressed on batch composition with a
// side indicator, errors clustered by time blocks.
const MethodStepRegression Method = "step-regression"

// stepBetweenSigma is the stated between-run bound on the log cost of one
// run per side: the 1% floor of compare/between.go, for what a within-run
// interval cannot see (another machine, clock or day). It is not
// calibrated on real traces with engine steps (none is in the repository).
const stepBetweenSigma = 0.01

var stepFamily = Family{Name: prefixStep, Kind: KindStep, Unit: "%", Better: LowerIsBetter,
	Doc: "engine steps' time at equal batch composition (step.cost; step.cost.decode, step.cost.prefill by kind of step)"}

func lookupStepMetric(name string) (MetricName, bool, error) {
	if !strings.HasPrefix(name, prefixStep) {
		return MetricName{}, false, nil
	}
	if !slices.Contains(StepMetrics, name) {
		return MetricName{}, true, fmt.Errorf("unknown step metric %q (want one of %s)", name, strings.Join(StepMetrics, ", "))
	}
	return MetricName{Family: &stepFamily, Bucket: strings.TrimPrefix(name, prefixStep)}, true, nil
}

// StepRun is one run's engine steps with their batch composition: what the
// step level needs.
type StepRun struct {
	Steps []StepRow
}

// StepRow is one engine step.
type StepRow struct {
	// Engine names the engine across runs: its service and the models its
	// batches served ("vllm · llama-3.1-8b"); not its pid.
	Engine string
	// StartMS is the step's start since the run's first step; DurMS its
	// length (the llm.step span).
	StartMS, DurMS float64
	// Prefill is the prompt tokens the step processed (llm.batch.tokens
	// minus one per decoding sequence, else the new requests' prompts);
	// Decode the sequences it decoded; KV the tokens those attended over
	// (prompt plus tokens generated so far); PrefillSq the sum of the
	// squared prompt lengths of the requests it prefilled (attention over a
	// prompt grows with its square).
	Prefill, Decode, KV int
	PrefillSq           float64
}

// StepsFromAttribution extracts the engine steps of an attributed run; nil
// when it has none with a known duration.
func StepsFromAttribution(res *attribution.Result) *StepRun {
	if res == nil || len(res.Steps) == 0 {
		return nil
	}
	order := make([]int, len(res.Steps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(res.Steps[a].Start, res.Steps[b].Start) })
	engineName := make([]string, len(res.Engines))
	for e := range res.Engines {
		models := map[string]bool{}
		for _, si := range res.Engines[e].Steps {
			for _, r := range res.Steps[si].Requests {
				if m := res.Model(&res.Requests[r]); m != "" {
					models[m] = true
				}
			}
		}
		name := res.Engines[e].Name
		if i := strings.Index(name, " (pid "); i >= 0 {
			name = name[:i]
		}
		engineName[e] = strings.Join(append([]string{name}, slices.Sorted(maps.Keys(models))...), " · ")
	}
	seen := make([]int, len(res.Requests))
	t0 := res.Steps[order[0]].Start
	out := &StepRun{}
	for _, si := range order {
		st := &res.Steps[si]
		if st.End <= st.Start {
			continue
		}
		row := StepRow{StartMS: float64(st.Start-t0) / 1e6, DurMS: float64(st.End-st.Start) / 1e6}
		if st.Engine >= 0 && st.Engine < len(engineName) {
			row.Engine = engineName[st.Engine]
		}
		newPrompt := 0
		for _, r := range st.Requests {
			in := max(res.Requests[r].InputTokens, 0)
			if seen[r] == 0 {
				newPrompt += in
				row.PrefillSq += float64(in) * float64(in)
			} else {
				row.Decode++
				row.KV += in + seen[r]
			}
			seen[r]++
		}
		switch {
		case st.Tokens >= 0:
			row.Prefill = max(0, st.Tokens-row.Decode)
		default:
			row.Prefill = newPrompt
		}
		if len(st.Requests) == 0 && st.Size > 0 {
			row.Decode = st.Size // a batch without request IDs: its size alone
		}
		out.Steps = append(out.Steps, row)
	}
	if len(out.Steps) == 0 {
		return nil
	}
	return out
}

// StepComparison is the step-level part of a Result.
type StepComparison struct {
	// StepsBaseline and StepsCandidate count each side's steps compared.
	StepsBaseline, StepsCandidate int
	// Buckets: "all", "decode" (decode-only steps), "prefill" (steps that
	// prefill), each with its decomposition.
	Buckets []StepBucket
	// Engines lists the engines compared and those on one side only.
	Engines []string
}

// StepBucket is the decomposition of one kind of step's change.
type StepBucket struct {
	Metric string // "step.cost", "step.cost.decode", "step.cost.prefill"
	Bucket string // "all", "decode", "prefill"
	// NBaseline and NCandidate count the steps.
	NBaseline, NCandidate int
	// MedianBaselineMS and MedianCandidateMS are the median step times.
	MedianBaselineMS, MedianCandidateMS float64
	// RawPct is the change of the geometric mean step time; it is
	// (1+CompositionPct/100)(1+CostPct/100) − 1 exactly. Composition is the
	// part the batches explain, Cost the change at equal batches. Each has
	// its interval (clustered errors, and for the cost the between-run
	// bound with one run per side).
	RawPct, RawLowPct, RawHighPct                         float64
	CompositionPct, CompositionLowPct, CompositionHighPct float64
	CostPct, CostLowPct, CostHighPct                      float64
	P                                                     float64
	Significant                                           bool
}

// stepPart is one pooled estimate on the log scale.
type stepPart struct{ est, v float64 }

// stepEngineFit is one engine's decomposition per bucket.
type stepEngineFit struct {
	weight float64 // baseline step time
	parts  map[string][3]stepPart
	nb, nc map[string]int
	df     int
}

var stepBuckets = []struct{ metric, bucket string }{
	{MetricStepCost, "all"}, {MetricStepDecode, "decode"}, {MetricStepPrefill, "prefill"},
}

// computeSteps compares the two sides' engine steps and adds the step
// metrics; without steps on both sides it records why they are absent.
func (c *comparison) computeSteps(baseline, candidate Side) {
	sb, sc := mergedSteps(baseline.Runs), mergedSteps(candidate.Runs)
	if sb == nil || sc == nil {
		why := "a side has no engine steps (llm.step spans with their batches; raw traces only — saved analyses do not keep them)"
		for _, m := range StepMetrics {
			c.markAbsent(m, why)
		}
		c.markAbsent("step", why)
		return
	}
	byB, byC := groupSteps(sb), groupSteps(sc)
	cmpRes := &StepComparison{StepsBaseline: len(sb), StepsCandidate: len(sc)}
	var fits []stepEngineFit
	for _, e := range slices.Sorted(maps.Keys(byB)) {
		rc, ok := byC[e]
		if !ok {
			cmpRes.Engines = append(cmpRes.Engines, e+" (baseline only)")
			continue
		}
		f, ok := fitEngineSteps(byB[e], rc)
		if !ok {
			cmpRes.Engines = append(cmpRes.Engines, e+" (too few steps to fit)")
			continue
		}
		cmpRes.Engines = append(cmpRes.Engines, e)
		fits = append(fits, f)
	}
	for _, e := range slices.Sorted(maps.Keys(byC)) {
		if _, ok := byB[e]; !ok {
			cmpRes.Engines = append(cmpRes.Engines, e+" (candidate only)")
		}
	}
	oneRun := len(baseline.Runs) == 1 && len(candidate.Runs) == 1
	for _, b := range stepBuckets {
		c.stepMetric(cmpRes, fits, b.metric, b.bucket, oneRun, sb, sc)
	}
	c.res.Steps = cmpRes
}

// mergedSteps concatenates a side's runs' steps, each run's times offset
// past the previous run's end so that time blocks never straddle two runs;
// nil when no run has any.
func mergedSteps(runs []Run) []StepRow {
	var out []StepRow
	off := 0.0
	for i := range runs {
		s := runs[i].Steps
		if s == nil {
			continue
		}
		end := 0.0
		for _, r := range s.Steps {
			end = max(end, r.StartMS+r.DurMS)
			r.StartMS += off
			out = append(out, r)
		}
		off += end + 1
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// groupSteps splits steps by engine.
func groupSteps(rows []StepRow) map[string][]StepRow {
	out := map[string][]StepRow{}
	for _, r := range rows {
		out[r.Engine] = append(out[r.Engine], r)
	}
	return out
}

// stepFeatures is the composition basis of one step: a quadratic in the
// logs of prefill tokens, decode sequences and KV tokens (per sequence),
// their products, whether the step prefills, and the log of its prompts'
// squared lengths.
func stepFeatures(r StepRow) []float64 {
	lp := math.Log1p(float64(r.Prefill))
	ld := math.Log1p(float64(r.Decode))
	lk := 0.0
	if r.Decode > 0 {
		lk = math.Log1p(float64(r.KV) / float64(r.Decode))
	}
	lq := math.Log1p(r.PrefillSq / 1e4)
	hasP := 0.0
	if r.Prefill > 0 {
		hasP = 1
	}
	return []float64{hasP, lp, lp * lp, ld, ld * ld, lk, lk * lk, ld * lk, lp * ld, lq}
}

const minStepsPerBucket = 20

// fitEngineSteps fits one engine's steps of both sides, once with one side
// indicator (bucket "all") and once with one per bucket, and returns each
// bucket's raw change, composition and cost with their clustered variances.
func fitEngineSteps(b, c []StepRow) (stepEngineFit, bool) {
	if len(b) < 2*minStepsPerBucket || len(c) < 2*minStepsPerBucket {
		return stepEngineFit{}, false
	}
	gb, gc := blocksFor(len(b)), blocksFor(len(c))
	tb, tc := make([]float64, len(b)), make([]float64, len(c))
	for i := range b {
		tb[i] = b[i].StartMS
	}
	for i := range c {
		tc[i] = c[i].StartMS
	}
	cluster := append(timeBlocks(tb, gb, 0), timeBlocks(tc, gc, gb)...)
	g := gb + gc
	rows := append(slices.Clone(b), c...)
	n := len(rows)
	y := make([]float64, n)
	isCand := make([]bool, n)
	decode := make([]bool, n)
	var weight float64
	for i, r := range rows {
		y[i] = math.Log(r.DurMS)
		isCand[i] = i >= len(b)
		decode[i] = r.Prefill == 0
		if !isCand[i] {
			weight += r.DurMS
		}
	}
	f := stepEngineFit{weight: weight, parts: map[string][3]stepPart{}, nb: map[string]int{}, nc: map[string]int{}, df: g - 2}
	in := func(bucket string, i int) bool {
		switch bucket {
		case "decode":
			return decode[i]
		case "prefill":
			return !decode[i]
		}
		return true
	}
	for _, bucket := range []string{"all", "decode", "prefill"} {
		for i := range rows {
			if in(bucket, i) {
				if isCand[i] {
					f.nc[bucket]++
				} else {
					f.nb[bucket]++
				}
			}
		}
	}
	// Fit 1: one side indicator. Fit 2: a side indicator per bucket (the
	// basis already has "prefills" as a main effect).
	for fit := range 2 {
		x := make([][]float64, n)
		for i, r := range rows {
			side := 0.0
			if isCand[i] {
				side = 1
			}
			var cols []float64
			if fit == 0 {
				cols = []float64{1, side}
			} else {
				sd, sp := 0.0, 0.0
				if decode[i] {
					sd = side
				} else {
					sp = side
				}
				cols = []float64{1, sd, sp}
			}
			x[i] = append(cols, stepFeatures(r)...)
		}
		x = dropConstant(x, 1+fit+1)
		lf, err := fitLinear(x, y)
		if err != nil {
			continue
		}
		buckets := []string{"all"}
		if fit == 1 {
			buckets = []string{"decode", "prefill"}
		}
		for bi, bucket := range buckets {
			if f.nb[bucket] < minStepsPerBucket || f.nc[bucket] < minStepsPerBucket {
				continue
			}
			// Raw: the difference of the bucket's mean log step times.
			raw := make([]float64, n)
			for i := range rows {
				if !in(bucket, i) {
					continue
				}
				if isCand[i] {
					raw[i] = 1 / float64(f.nc[bucket])
				} else {
					raw[i] = -1 / float64(f.nb[bucket])
				}
			}
			cost := lf.CoefWeights(1 + bi)
			comp := make([]float64, n)
			for i := range comp {
				comp[i] = raw[i] - cost[i]
			}
			var parts [3]stepPart
			for k, w := range [][]float64{raw, comp, cost} {
				parts[k] = stepPart{lf.Estimate(w), lf.ClusteredVar(w, cluster, g, stat.ClusterCount)}
			}
			f.parts[bucket] = parts
		}
	}
	return f, len(f.parts) > 0
}

// dropConstant removes feature columns (from index from on) that do not
// vary, which would make the fit singular (a run with no prefill steps).
func dropConstant(x [][]float64, from int) [][]float64 {
	k := len(x[0])
	keep := make([]bool, k)
	for j := range k {
		keep[j] = j < from
		for i := 1; i < len(x) && !keep[j]; i++ {
			keep[j] = x[i][j] != x[0][j]
		}
	}
	if !slices.Contains(keep, false) {
		return x
	}
	out := make([][]float64, len(x))
	for i, row := range x {
		for j, v := range row {
			if keep[j] {
				out[i] = append(out[i], v)
			}
		}
	}
	return out
}

// stepMetric pools the engines' decompositions of one bucket into a metric.
func (c *comparison) stepMetric(sc *StepComparison, fits []stepEngineFit, name, bucket string, oneRun bool, rb, rc []StepRow) {
	var pooled [3]stepPart
	var wsum float64
	nb, nc, df := 0, 0, math.MaxInt
	for _, f := range fits {
		if _, ok := f.parts[bucket]; ok {
			wsum += f.weight
		}
	}
	for _, f := range fits {
		p, ok := f.parts[bucket]
		if !ok {
			continue
		}
		s := f.weight / wsum
		for k := range pooled {
			pooled[k].est += s * p[k].est
			pooled[k].v += s * s * p[k].v
		}
		nb += f.nb[bucket]
		nc += f.nc[bucket]
		df = min(df, f.df)
	}
	s := spec{name: name, fam: &stepFamily, bucket: bucket}
	w := c.newWork(s, MethodStepRegression, nb, nc)
	w.unitsOf = "engine steps"
	m := w.m
	m.MinN = minStepsPerBucket
	sb := StepBucket{Metric: name, Bucket: bucket, NBaseline: nb, NCandidate: nc,
		MedianBaselineMS: medianStep(rb, bucket), MedianCandidateMS: medianStep(rc, bucket)}
	nan := math.NaN()
	sb.RawPct, sb.RawLowPct, sb.RawHighPct = nan, nan, nan
	sb.CompositionPct, sb.CompositionLowPct, sb.CompositionHighPct = nan, nan, nan
	sb.CostPct, sb.CostLowPct, sb.CostHighPct, sb.P = nan, nan, nan, nan
	if wsum == 0 || math.IsNaN(pooled[2].v) {
		what := map[string]string{"all": "", "decode": " decode-only", "prefill": " prefilling"}[bucket]
		w.short = fmt.Sprintf("%s: no engine ran ≥ %d%s steps on each side to fit step time on batch composition", name, minStepsPerBucket, what)
		w.shortN = minStepsPerBucket
		sc.Buckets = append(sc.Buckets, sb)
		return
	}
	tq := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(max(df, 1))}.Quantile(1 - c.opts.Alpha/2)
	interval := func(p stepPart, extra float64) (est, lo, hi, se float64) {
		se = math.Sqrt(p.v + extra)
		return p.est, p.est - tq*se, p.est + tq*se, se
	}
	// The between-run bound holds with several runs per side too: their
	// steps are pooled, and the blocks do not see what a run shares.
	extra := c.betweenVar(stepBetweenSigma)
	e, lo, hi, _ := interval(pooled[0], extra)
	sb.RawPct, sb.RawLowPct, sb.RawHighPct = pctOfLog(e), pctOfLog(lo), pctOfLog(hi)
	e, lo, hi, _ = interval(pooled[1], 0)
	sb.CompositionPct, sb.CompositionLowPct, sb.CompositionHighPct = pctOfLog(e), pctOfLog(lo), pctOfLog(hi)
	mu, lo, hi, se := interval(pooled[2], extra)
	sb.CostPct, sb.CostLowPct, sb.CostHighPct = pctOfLog(mu), pctOfLog(lo), pctOfLog(hi)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(max(df, 1))}
	m.DeltaPct, m.CILowPct, m.CIHighPct = sb.CostPct, sb.CostLowPct, sb.CostHighPct
	m.P = 2 * t.Survival(math.Abs(mu)/se)
	m.Significant = m.P <= c.opts.Alpha
	m.MDEPct = pctOfLog((tq + t.Quantile(c.opts.Power)) * se)
	sb.P, sb.Significant = m.P, m.Significant
	m.Note = stepWording(sb, oneRun)
	w.pFail = logTFail(mu, se, t)
	sc.Buckets = append(sc.Buckets, sb)
}

// stepWording states both parts of a bucket's change, the sentence every
// renderer shows beside the metric.
func stepWording(b StepBucket, oneRun bool) string {
	kind := map[string]string{"all": "steps", "decode": "decode-only steps", "prefill": "prefilling steps"}[b.Bucket]
	s := fmt.Sprintf("%s %s → %s ms median: raw %s [%s, %s] = composition %s [%s, %s] (the batches the candidate saw) × cost %s [%s, %s] at equal batches",
		kind, fmtNum3(b.MedianBaselineMS), fmtNum3(b.MedianCandidateMS),
		fmtPctShort(b.RawPct), fmtPctShort(b.RawLowPct), fmtPctShort(b.RawHighPct),
		fmtPctShort(b.CompositionPct), fmtPctShort(b.CompositionLowPct), fmtPctShort(b.CompositionHighPct),
		fmtPctShort(b.CostPct), fmtPctShort(b.CostLowPct), fmtPctShort(b.CostHighPct))
	what := "several runs per side, pooled"
	if oneRun {
		what = "one run per side"
	}
	return s + fmt.Sprintf("; %s: the cost's interval includes the between-run bound σ = %.0f%%", what, 100*stepBetweenSigma)
}

func fmtNum3(v float64) string {
	if math.IsNaN(v) {
		return "?"
	}
	return fmt.Sprintf("%.3g", v)
}

func medianStep(rows []StepRow, bucket string) float64 {
	var d []float64
	for _, r := range rows {
		if bucket == "all" || (bucket == "decode") == (r.Prefill == 0) {
			d = append(d, r.DurMS)
		}
	}
	slices.Sort(d)
	return median(d)
}
