package compare

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/llmprof/llmprof/internal/orderstat"
	"gonum.org/v1/gonum/stat/distuv"
)

// BlockAuto selects the moving-block bootstrap with blocks of ⌈n^⅓⌉
// consecutive requests (docs/statistics.md C.2).
const BlockAuto = -1

// Options tune Compare. Start from DefaultOptions; the JSON tags are the
// names under which a report echoes them.
type Options struct {
	// Alpha is the two-sided significance level: intervals are 1−α, a
	// change is significant when p ≤ α, and each gate rule is a one-sided
	// test at α/2 (so "fail" means the interval's lower bound is above the
	// threshold). Default 0.05.
	Alpha float64 `json:"alpha"`
	// Power is the probability of detecting a true change of the minimum
	// detectable effect. Default 0.8.
	Power float64 `json:"power"`
	// Reps is the number of bootstrap replicates. Default 2000, enough for
	// the 2.5% and 97.5% percentiles to sit on ~50 replicates each.
	Reps int `json:"bootstrap_reps"`
	// Seed makes the bootstrap reproducible: the same inputs and seed give
	// the same report. Default 1.
	Seed uint64 `json:"seed"`
	// Block is the bootstrap block length in requests: 0 resamples requests
	// independently, BlockAuto uses ⌈n^⅓⌉, a positive value that length.
	// Use it when requests are autocorrelated (one long run). Default 0.
	Block int `json:"block"`
	// PoolRuns treats several runs per side as one long run instead of
	// replicates. Default false: with at least two runs on both sides the
	// run is the replication unit.
	PoolRuns bool `json:"pool_runs"`
	// AllowModelChange compares runs that served disjoint sets of models.
	AllowModelChange bool `json:"allow_model_change"`
	// Policy holds the gate rules.
	Policy Policy `json:"-"`
}

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{Alpha: 0.05, Power: 0.8, Reps: 2000, Seed: 1}
}

func (o Options) validate() error {
	switch {
	case !(o.Alpha > 0 && o.Alpha < 0.5):
		return fmt.Errorf("alpha %v is not in (0, 0.5)", o.Alpha)
	case !(o.Power > 0 && o.Power < 1):
		return fmt.Errorf("power %v is not in (0, 1)", o.Power)
	case o.Reps < 10:
		return fmt.Errorf("bootstrap replicates %d: want at least 10 (2000 by default)", o.Reps)
	case o.Block < BlockAuto:
		return fmt.Errorf("block %d: want 0 (off), %d (auto) or a positive length", o.Block, BlockAuto)
	}
	seen := map[string]bool{}
	for _, g := range o.Policy.Gates {
		if err := ValidMetric(g.Metric); err != nil {
			return err
		}
		if seen[g.Metric] {
			return fmt.Errorf("metric %s is gated twice; give one rule per metric", g.Metric)
		}
		seen[g.Metric] = true
	}
	return nil
}

// Side is one side of a comparison: its runs and a label for reports (the
// file names it came from).
type Side struct {
	Label string
	Runs  []Run
}

// ErrNoOverlap means the two sides share no metric that could be compared.
var ErrNoOverlap = errors.New("baseline and candidate have no metric in common")

// Compare compares candidate against baseline metric by metric and applies
// the gate policy in opts. It fails on unusable input (an empty side, an
// invalid run, disjoint models, nothing in common) and never turns a
// problem into a pass.
func Compare(baseline, candidate Side, opts Options) (*Result, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	for _, s := range []Side{baseline, candidate} {
		if len(s.Runs) == 0 {
			return nil, fmt.Errorf("%s: no runs", s.Label)
		}
		for i := range s.Runs {
			if err := s.Runs[i].Validate(); err != nil {
				return nil, fmt.Errorf("%s: %s: %w", s.Label, runName(s.Runs, i), err)
			}
		}
	}
	c := &comparison{opts: opts}
	c.za = distuv.UnitNormal.Quantile(1 - opts.Alpha/2)
	c.zb = distuv.UnitNormal.Quantile(opts.Power)
	res := &Result{
		Baseline:  summarize(baseline),
		Candidate: summarize(candidate),
		Options:   opts,
		Unit:      "request",
	}
	c.res = res
	if err := c.checkModels(); err != nil {
		return nil, err
	}
	keys := unionFamilyKeys(baseline.Runs, candidate.Runs)
	c.base = pool(baseline, keys)
	c.cand = pool(candidate, keys)
	c.runLevel = len(baseline.Runs) >= 2 && len(candidate.Runs) >= 2 && !opts.PoolRuns
	if c.runLevel {
		res.Unit = "run"
	} else if (len(baseline.Runs) > 1 || len(candidate.Runs) > 1) && !opts.PoolRuns {
		c.warnf("baseline has %d run(s), candidate %d: run-level replication needs at least two runs on both sides, so requests are pooled", len(baseline.Runs), len(candidate.Runs))
	}
	for _, s := range []SideSummary{res.Baseline, res.Candidate} {
		if s.TokensEstimated {
			c.warnf("%s: token buckets are estimated from request-level attributes", s.Label)
		}
	}
	specs := c.specs()
	if len(specs) == 0 {
		return nil, fmt.Errorf("%w (baseline %s, candidate %s)", ErrNoOverlap, baseline.Label, candidate.Label)
	}
	if c.runLevel {
		c.computeRunLevel(specs)
	} else {
		c.computeRequestLevel(specs)
	}
	for _, w := range c.works {
		c.explain(w)
		res.Metrics = append(res.Metrics, *w.m)
	}
	c.applyGates()
	return res, nil
}

func runName(runs []Run, i int) string {
	if runs[i].RunID != "" {
		return fmt.Sprintf("run %q", runs[i].RunID)
	}
	return fmt.Sprintf("run %d", i+1)
}

func summarize(s Side) SideSummary {
	sum := SideSummary{Label: s.Label, Runs: len(s.Runs)}
	models := map[string]bool{}
	for i, r := range s.Runs {
		sum.RunIDs = append(sum.RunIDs, cmpOr(r.RunID, fmt.Sprintf("#%d", i+1)))
		sum.Requests += r.Requests
		sum.Tokens += len(r.ITL)
		sum.TokensEstimated = sum.TokensEstimated || r.TokensEstimated
		for _, m := range r.Models {
			models[m] = true
		}
	}
	sum.Models = sortedKeys(models)
	return sum
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// comparison holds the state of one Compare call.
type comparison struct {
	opts       Options
	za, zb     float64
	res        *Result
	base, cand *pooled
	runLevel   bool
	works      []*work
	// absent says, per metric name, why it could not be compared.
	absent map[string]string
}

func (c *comparison) warnf(format string, args ...any) {
	c.res.Warnings = append(c.res.Warnings, fmt.Sprintf(format, args...))
}

func (c *comparison) checkModels() error {
	b, k := c.res.Baseline.Models, c.res.Candidate.Models
	if len(b) == 0 || len(k) == 0 || slices.Equal(b, k) {
		return nil
	}
	overlap := false
	for _, m := range b {
		if slices.Contains(k, m) {
			overlap = true
		}
	}
	if !overlap && !c.opts.AllowModelChange {
		return fmt.Errorf("baseline %s serves %s but candidate %s serves %s: these are different models (pass --allow-model-change to compare them anyway)",
			c.res.Baseline.Label, strings.Join(b, ", "), c.res.Candidate.Label, strings.Join(k, ", "))
	}
	c.warnf("models differ: baseline serves %s, candidate %s", strings.Join(b, ", "), strings.Join(k, ", "))
	return nil
}

// Attribution families of a Run.
const (
	famStages = iota
	famTokens
	famFirst
	famTenants
	numFams
)

var famNames = [numFams]string{"stages_ms", "tokens_ms", "first_token_ms", "tenants_ms"}

func families(r *Run) [numFams]map[string]Series {
	return [numFams]map[string]Series{r.Stages, r.Tokens, r.FirstToken, r.Tenants}
}

// unionFamilyKeys lists, per family, every bucket either side has, so both
// sides get the same buckets (zero where a run has the family but not the
// bucket: attribution ran and found no time there).
func unionFamilyKeys(sides ...[]Run) [numFams][]string {
	var sets [numFams]map[string]bool
	for f := range sets {
		sets[f] = map[string]bool{}
	}
	for _, runs := range sides {
		for i := range runs {
			for f, m := range families(&runs[i]) {
				for k := range m {
					sets[f][k] = true
				}
			}
		}
	}
	var keys [numFams][]string
	for f := range sets {
		keys[f] = sortedKeys(sets[f])
	}
	return keys
}

// pooled is one side's runs concatenated in order: per-request arrays of
// length n with NaN where a run lacks the series.
type pooled struct {
	label  string
	runs   []Run
	n      int
	series map[string][]float64 // "ttft" … "queue"; absent when no run has it
	itl    []float64
	// itlPerRequest is the mean number of ITL gaps per request, the natural
	// block length for the token-level bootstrap.
	itlPerRequest float64
	out           []float64 // output tokens per request; nil when unknown
	fam           [numFams]map[string][]float64
	hasFam        [numFams]bool
	// runStart[i] is the first pooled request of run i.
	runStart []int
}

func latencySeries(r *Run, name string) Series {
	switch name {
	case "ttft":
		return r.TTFT
	case "tpot":
		return r.TPOT
	case "e2e":
		return r.E2E
	case "queue":
		return r.Queue
	}
	return nil
}

func pool(s Side, keys [numFams][]string) *pooled {
	p := &pooled{label: s.Label, runs: s.Runs, series: map[string][]float64{}}
	for i := range p.fam {
		p.fam[i] = map[string][]float64{}
	}
	for _, r := range s.Runs {
		p.runStart = append(p.runStart, p.n)
		p.n += r.Requests
	}
	p.runStart = append(p.runStart, p.n)
	gather := func(get func(r *Run) Series, fill float64) []float64 {
		any := false
		for i := range s.Runs {
			if get(&s.Runs[i]) != nil {
				any = true
			}
		}
		if !any {
			return nil
		}
		out := make([]float64, 0, p.n)
		for i := range s.Runs {
			r := &s.Runs[i]
			v := get(r)
			if v == nil {
				for range r.Requests {
					out = append(out, math.NaN())
				}
				continue
			}
			if len(v) == 0 {
				for range r.Requests {
					out = append(out, fill)
				}
				continue
			}
			out = append(out, v...)
		}
		return out
	}
	for _, name := range LatencyMetrics {
		if name == "itl" {
			continue
		}
		if v := gather(func(r *Run) Series { return latencySeries(r, name) }, math.NaN()); v != nil {
			p.series[name] = v
		}
	}
	p.out = gather(func(r *Run) Series { return r.OutputTokens }, math.NaN())
	for _, r := range s.Runs {
		p.itl = append(p.itl, r.ITL.known()...)
	}
	if p.n > 0 {
		p.itlPerRequest = float64(len(p.itl)) / float64(p.n)
	}
	for f := range numFams {
		for i := range s.Runs {
			if families(&s.Runs[i])[f] != nil {
				p.hasFam[f] = true
			}
		}
		if !p.hasFam[f] {
			continue
		}
		for _, k := range keys[f] {
			p.fam[f][k] = gather(func(r *Run) Series {
				m := families(r)[f]
				if m == nil {
					return nil // the run lacks the family: unknown
				}
				if v, ok := m[k]; ok && v != nil {
					return v
				}
				return Series{} // family present, bucket absent: zero
			}, 0)
		}
	}
	return p
}

// known returns the values of a pooled series that are not NaN.
func known(x []float64) []float64 { return Series(x).known() }

// spec is one metric to compute.
type spec struct {
	name   string
	unit   string
	series string  // latency series ("ttft" … "itl"); "" for others
	stat   string  // "p50", "p90", "p99", "mean"
	q      float64 // quantile for p-stats
	fam    int     // per-token metrics: the family
	bucket string  // per-token metrics: the bucket
	rate   string  // rate metrics: the rate name
}

var statQ = map[string]float64{"p50": 0.5, "p90": 0.9, "p99": 0.99}

// specs lists the metrics both sides can be compared on, in display order,
// and records why the others cannot.
func (c *comparison) specs() []spec {
	c.absent = map[string]string{}
	b, k := c.base, c.cand
	var out []spec
	for _, name := range LatencyMetrics {
		nb, nk := c.count(b, name), c.count(k, name)
		if nb == 0 || nk == 0 {
			if nb+nk > 0 {
				why := fmt.Sprintf("%s has no %s values", cmpSide(nb == 0, b.label, k.label), name)
				c.warnf("%s: not compared: %s", name, why)
				c.absent[name] = why
			} else {
				c.absent[name] = fmt.Sprintf("neither side has %s values", name)
			}
			continue
		}
		for _, st := range LatencyStats {
			out = append(out, spec{name: name + "." + st, unit: "ms", series: name, stat: st, q: statQ[st]})
		}
	}
	// Rates: one value per run.
	allRuns := append(slices.Clone(b.runs), k.runs...)
	durations := true
	tokens := true
	for _, r := range allRuns {
		durations = durations && r.DurationMS > 0
		tokens = tokens && len(r.OutputTokens) == r.Requests && r.Requests > 0
	}
	if durations {
		out = append(out, spec{name: MetricThroughput, unit: "req/s", rate: MetricThroughput})
		if tokens {
			out = append(out, spec{name: MetricTokenThroughput, unit: "tok/s", rate: MetricTokenThroughput})
		} else {
			c.absent[MetricTokenThroughput] = "output token counts are missing from some runs"
		}
	} else {
		c.absent[MetricThroughput] = "some runs have no duration_ms"
		c.absent[MetricTokenThroughput] = c.absent[MetricThroughput]
	}
	slo := b.runs[0].SLO
	sameSLO := slo != ""
	for _, r := range allRuns {
		sameSLO = sameSLO && r.SLO == slo
	}
	switch {
	case durations && sameSLO:
		out = append(out, spec{name: MetricGoodput, unit: "req/s", rate: MetricGoodput})
	case !durations:
		c.absent[MetricGoodput] = c.absent[MetricThroughput]
	default:
		c.absent[MetricGoodput] = "goodput needs every run counted against the same SLO (analyze --slo)"
		for _, r := range allRuns {
			if r.SLO != "" {
				c.warnf("goodput: not compared: runs were counted against different SLOs")
				break
			}
		}
	}
	// Per-token buckets.
	if b.out == nil || k.out == nil {
		for _, p := range []string{prefixStage, prefixToken, prefixTenant} {
			c.absent[p] = "output token counts are missing, so time per token is unknown"
		}
		return out
	}
	perToken := []struct {
		fam    int
		prefix string
	}{{famStages, prefixStage}, {famTokens, prefixToken}, {famTenants, prefixTenant}}
	for _, pt := range perToken {
		f, prefix := pt.fam, pt.prefix
		switch {
		case b.hasFam[f] && k.hasFam[f]:
		case b.hasFam[f] || k.hasFam[f]:
			why := fmt.Sprintf("%s has no %s", cmpSide(!b.hasFam[f], b.label, k.label), famNames[f])
			c.absent[prefix] = why
			if f == famTenants {
				c.warnf("tenants: not compared: %s (tenant attribution did not run there)", why)
			}
		default:
			c.absent[prefix] = fmt.Sprintf("neither side has %s", famNames[f])
		}
	}
	for _, pt := range perToken {
		f, prefix := pt.fam, pt.prefix
		if !b.hasFam[f] || !k.hasFam[f] {
			continue
		}
		order := sortedKeys(b.fam[f])
		switch f {
		case famStages:
			order = inOrder(StageBuckets, b.fam[f])
		case famTokens:
			order = inOrder(TokenBuckets, b.fam[f])
		}
		for _, bucket := range order {
			out = append(out, spec{name: prefix + bucket, unit: "ms/token", fam: f, bucket: bucket})
		}
	}
	return out
}

func inOrder(canon []string, m map[string][]float64) []string {
	var out []string
	for _, k := range canon {
		if _, ok := m[k]; ok {
			out = append(out, k)
		}
	}
	return out
}

func cmpSide(isBase bool, base, cand string) string {
	if isBase {
		return "baseline " + base
	}
	return "candidate " + cand
}

func (c *comparison) count(p *pooled, series string) int {
	if series == "itl" {
		return len(p.itl)
	}
	n := 0
	for _, v := range p.series[series] {
		if !math.IsNaN(v) {
			n++
		}
	}
	return n
}

// work is one metric being computed: the public Metric plus what the gate
// needs to test it.
type work struct {
	spec spec
	m    *Metric
	// pFail returns the one-sided p-value against "the change does not
	// breach g's threshold"; nil when the metric has no test.
	pFail func(g Gate) float64
	// short is set when the metric has too few units for a confident
	// verdict: the reason, and the units per side needed.
	short   string
	shortN  int
	unitsOf string // "samples", "tokens", "runs"
}

func (c *comparison) newWork(s spec, method Method, nb, nk int) *work {
	m := &Metric{
		Name: s.name, Unit: s.unit, Method: method,
		NBaseline: nb, NCandidate: nk,
		Baseline: math.NaN(), Candidate: math.NaN(),
		Delta: math.NaN(), DeltaPct: math.NaN(),
		CILow: math.Inf(-1), CIHigh: math.Inf(1), CILowPct: math.Inf(-1), CIHighPct: math.Inf(1),
		P: math.NaN(), MDE: math.NaN(), MDEPct: math.NaN(),
	}
	w := &work{spec: s, m: m, unitsOf: "samples"}
	if s.series == "itl" {
		w.unitsOf = "tokens"
	}
	if method == MethodRunLevel {
		w.unitsOf = "runs"
	}
	c.works = append(c.works, w)
	return w
}

// requireN marks the work short of data when either side has fewer than
// need units.
func (w *work) requireN(need int, why string) {
	if w.m.MinN < need {
		w.m.MinN = need
	}
	if (w.m.NBaseline < need || w.m.NCandidate < need) && w.short == "" {
		w.short = fmt.Sprintf("%s needs ≥ %d %s per side%s (have %d and %d)", w.m.Name, need, w.unitsOf, why, w.m.NBaseline, w.m.NCandidate)
		w.shortN = need
	}
}

// shiftMetric fills w from the Hodges–Lehmann shift of xc over xb (known
// values, any order): on logs when every value is positive, else on the raw
// scale with percentages relative to the baseline median.
func (c *comparison) shiftMetric(w *work, xb, xc []float64) {
	m := w.m
	alpha := c.opts.Alpha
	sb, sc := sortedCopy(xb), sortedCopy(xc)
	m.Baseline, m.Candidate = orderstat.Quantile(sb, 0.5), orderstat.Quantile(sc, 0.5)
	u := MannWhitney(sb, sc)
	m.P = u.P
	m.Significant = u.P <= alpha
	raw := HodgesLehmann(sb, sc, alpha)
	m.Delta, m.CILow, m.CIHigh = raw.Estimate, raw.Low, raw.High
	ares := math.Sqrt(math.Pi / 3) // 1/√ARE of U vs t under normality (docs/statistics.md C.2)
	seRaw := ares * math.Sqrt(variance(sb)/float64(len(sb))+variance(sc)/float64(len(sc)))
	m.MDE = (c.za + c.zb) * seRaw
	logScale := allPositive(sb, sc)
	var lb, lc []float64
	if logScale {
		lb, lc = logs(sb), logs(sc)
		l := HodgesLehmann(lb, lc, alpha)
		m.DeltaPct = pctOfLog(l.Estimate)
		m.CILowPct, m.CIHighPct = pctOfLog(l.Low), pctOfLog(l.High)
		seLog := ares * math.Sqrt(variance(lb)/float64(len(lb))+variance(lc)/float64(len(lc)))
		m.MDEPct = pctOfLog((c.za + c.zb) * seLog)
	} else {
		m.DeltaPct = pctOf(m.Delta, m.Baseline)
		m.CILowPct, m.CIHighPct = pctOf(m.CILow, m.Baseline), pctOf(m.CIHigh, m.Baseline)
		m.MDEPct = pctOf(m.MDE, m.Baseline)
		m.Note = "zeros present: shift on the raw scale, percent of the baseline median"
	}
	if raw.K == 0 {
		need := minSamplesForU(alpha)
		m.MinN = need
		w.short = fmt.Sprintf("%s needs ≥ %d %s per side for a finite interval (have %d and %d)", m.Name, need, w.unitsOf, len(sb), len(sc))
		w.shortN = need
	} else {
		m.MinN = minSamplesForU(alpha)
	}
	w.pFail = func(g Gate) float64 {
		var pu, pl float64
		switch {
		case !g.Relative:
			pu, pl = shiftUTest(sb, sc, g.Threshold)
		case logScale:
			pu, pl = shiftUTest(lb, lc, math.Log1p(g.Threshold/100))
		default:
			pu, pl = shiftUTest(sb, sc, g.Threshold/100*m.Baseline)
		}
		if g.Op == Below {
			return pu
		}
		return pl
	}
}

func variance(x []float64) float64 { s := stddev(x); return s * s }

// pctOfLog converts a log ratio to a percent change; ±Inf stay ±Inf so an
// infinite interval stays infinite.
func pctOfLog(l float64) float64 {
	if math.IsInf(l, 0) {
		return l
	}
	return 100 * math.Expm1(l)
}

func pctOf(d, base float64) float64 {
	if base == 0 || math.IsNaN(base) {
		return math.NaN()
	}
	return 100 * d / base
}

// bootMetric fills w from bootstrap replicates of the statistic on each
// side (pb, pc are the statistic on the original samples).
func (c *comparison) bootMetric(w *work, pb, pc float64, repsB, repsC []float64) {
	m := w.m
	m.Baseline, m.Candidate = pb, pc
	m.Delta = pc - pb
	switch {
	case pb > 0:
		m.DeltaPct = 100 * (pc/pb - 1)
	case pb == 0 && pc == 0:
		m.DeltaPct = 0
	case pb == 0:
		m.DeltaPct = math.Inf(1)
	}
	d := newBootDiff(repsB, repsC)
	m.CILow, m.CIHigh = percentileInterval(d.abs, c.opts.Alpha)
	rlo, rhi := percentileInterval(d.ratio, c.opts.Alpha)
	m.CILowPct, m.CIHighPct = 100*(rlo-1), 100*(rhi-1)
	m.P = twoSidedP(d.abs)
	m.Significant = m.P <= c.opts.Alpha
	m.MDE = (c.za + c.zb) * stddev(d.abs)
	m.MDEPct = pctOfLog((c.za + c.zb) * stddev(d.logr))
	if dropped := d.reps - len(d.abs); dropped > d.reps/100 {
		m.Note = fmt.Sprintf("%d of %d bootstrap replicates undefined (too few known values)", dropped, d.reps)
	}
	w.pFail = func(g Gate) float64 {
		if g.Relative {
			return tailP(d.ratio, 1+g.Threshold/100, g.Op == Below)
		}
		return tailP(d.abs, g.Threshold, g.Op == Below)
	}
}

// minBootstrapN is the fewest units per side for which a percentile
// bootstrap interval of a mean or a ratio of sums is trusted in a verdict.
// docs/statistics.md C.2 warns below 20; on skewed data (5% of requests 3–10×
// slower) the one-sided error of the mean's interval measured 5% at n = 20
// and 4% at 50 against a nominal 2.5%, so the floor is 50.
const minBootstrapN = 50

// computeRequestLevel treats requests (tokens for itl) as the replication
// unit: Hodges–Lehmann for medians of independent requests, the bootstrap
// for everything else.
func (c *comparison) computeRequestLevel(specs []spec) {
	blockReq := c.opts.Block
	method := MethodBootstrap
	if blockReq != 0 {
		method = MethodBlockBootstrap
	}
	// Plans: one resample of requests per replicate serves every request
	// metric; ITL tokens get their own.
	var reqB, reqC, itlB, itlC bootPlan
	type pending struct {
		w      *work
		pb, pc float64
	}
	var boots []pending
	for _, s := range specs {
		switch {
		case s.rate != "":
			w := c.newWork(s, MethodNone, len(c.base.runs), len(c.cand.runs))
			w.m.Baseline, w.m.Candidate = rateOf(s.rate, c.base.runs), rateOf(s.rate, c.cand.runs)
			w.m.Delta = w.m.Candidate - w.m.Baseline
			w.m.DeltaPct = pctOf(w.m.Delta, w.m.Baseline)
			w.unitsOf = "runs"
			w.m.MinN = minSamplesForU(c.opts.Alpha)
			w.short = fmt.Sprintf("%s is one value per run: a confident answer needs run-level replication, ≥ %d runs per side (have %d and %d)",
				s.name, w.m.MinN, len(c.base.runs), len(c.cand.runs))
			w.shortN = w.m.MinN
		case s.series == "itl":
			w := c.newWork(s, MethodBlockBootstrap, len(c.base.itl), len(c.cand.itl))
			itlB.add(s, c.base.itl)
			itlC.add(s, c.cand.itl)
			boots = append(boots, pending{w, pointStat(c.base.itl, s), pointStat(c.cand.itl, s)})
			c.requireStat(w, s)
		case s.series != "" && s.stat == "p50" && blockReq == 0:
			xb, xc := known(c.base.series[s.series]), known(c.cand.series[s.series])
			w := c.newWork(s, MethodHodgesLehmann, len(xb), len(xc))
			c.shiftMetric(w, xb, xc)
		case s.series != "":
			vb, vc := c.base.series[s.series], c.cand.series[s.series]
			w := c.newWork(s, method, c.count(c.base, s.series), c.count(c.cand, s.series))
			reqB.add(s, vb)
			reqC.add(s, vc)
			boots = append(boots, pending{w, pointStat(known(vb), s), pointStat(known(vc), s)})
			c.requireStat(w, s)
		default: // per-token bucket
			rb := newRatioSeries(c.base.fam[s.fam][s.bucket], c.base.out)
			rc := newRatioSeries(c.cand.fam[s.fam][s.bucket], c.cand.out)
			w := c.newWork(s, method, len(rb.units), len(rc.units))
			reqB.addRatio(s.name, rb)
			reqC.addRatio(s.name, rc)
			boots = append(boots, pending{w, rb.value(), rc.value()})
			w.requireN(minBootstrapN, " for a bootstrap interval")
		}
	}
	if len(boots) == 0 {
		return
	}
	blockB, blockC := blockLen(blockReq, c.base.n), blockLen(blockReq, c.cand.n)
	itlBlock := func(p *pooled) int {
		return max(int(math.Ceil(p.itlPerRequest)), blockLen(BlockAuto, len(p.itl)))
	}
	var outs [4]map[string][]float64
	var wg sync.WaitGroup
	jobs := []func() map[string][]float64{
		func() map[string][]float64 {
			return reqB.run(c.base.n, blockB, c.opts.Reps, c.opts.Seed, "baseline/requests")
		},
		func() map[string][]float64 {
			return reqC.run(c.cand.n, blockC, c.opts.Reps, c.opts.Seed, "candidate/requests")
		},
		func() map[string][]float64 {
			return itlB.run(len(c.base.itl), itlBlock(c.base), c.opts.Reps, c.opts.Seed, "baseline/itl")
		},
		func() map[string][]float64 {
			return itlC.run(len(c.cand.itl), itlBlock(c.cand), c.opts.Reps, c.opts.Seed, "candidate/itl")
		},
	}
	for i, job := range jobs {
		wg.Go(func() { outs[i] = job() })
	}
	wg.Wait()
	for _, p := range boots {
		name := p.w.spec.name
		repsB, repsC := outs[0][name], outs[1][name]
		if p.w.spec.series == "itl" {
			repsB, repsC = outs[2][name], outs[3][name]
		}
		c.bootMetric(p.w, p.pb, p.pc, repsB, repsC)
	}
	if blockReq == 0 {
		c.checkAutocorrelation()
	}
}

// minQuantileBootstrapN is the floor for a bootstrapped quantile; the
// binomial rule (MinSamplesForQuantile) is stricter for p90 and p99.
const minQuantileBootstrapN = 20

// requireStat applies the sample-size floors of a bootstrapped statistic.
func (c *comparison) requireStat(w *work, s spec) {
	if q, ok := statQ[s.stat]; ok {
		w.requireN(max(MinSamplesForQuantile(q, c.opts.Alpha), minQuantileBootstrapN), "")
		return
	}
	w.requireN(minBootstrapN, " for a bootstrap interval")
}

// blockLen resolves the block setting for n units.
func blockLen(block, n int) int {
	if block == BlockAuto {
		return max(1, int(math.Ceil(math.Cbrt(float64(n)))))
	}
	return max(1, block)
}

// pointStat is a latency statistic on a sample of known values.
func pointStat(x []float64, s spec) float64 {
	if s.stat == "mean" {
		return mean(x)
	}
	return orderstat.Quantile(sortedCopy(x), s.q)
}

// checkAutocorrelation warns when requests look autocorrelated, because
// then the independent-request intervals are too narrow.
func (c *comparison) checkAutocorrelation() {
	for _, p := range []*pooled{c.base, c.cand} {
		for _, name := range LatencyMetrics {
			x := known(p.series[name])
			if len(x) < 50 {
				continue
			}
			if !allPositive(x) {
				continue
			}
			neff := EffectiveN(logs(x))
			if neff < 0.5*float64(len(x)) {
				c.warnf("%s: %s of %s look autocorrelated (effective n ≈ %.0f of %d): intervals assume independent requests; use --block auto",
					p.label, name, sideWord(p == c.base), neff, len(x))
				return
			}
		}
	}
}

func sideWord(base bool) string {
	if base {
		return "baseline requests"
	}
	return "candidate requests"
}

// rateOf is a rate pooled over runs: total count over total duration.
func rateOf(rate string, runs []Run) float64 {
	var num, dur float64
	for _, r := range runs {
		num += rateNumerator(rate, &r)
		dur += r.DurationMS
	}
	if dur <= 0 {
		return math.NaN()
	}
	return num / (dur / 1000)
}

func rateNumerator(rate string, r *Run) float64 {
	switch rate {
	case MetricThroughput:
		return float64(r.Completed)
	case MetricGoodput:
		return float64(r.Good)
	case MetricTokenThroughput:
		var s float64
		for _, v := range r.OutputTokens {
			if !math.IsNaN(v) {
				s += v
			}
		}
		return s
	}
	return math.NaN()
}

// computeRunLevel treats each run as one observation: every metric becomes
// a per-run value and the two sets of runs are compared with the U test,
// Hodges–Lehmann and Moses (docs/statistics.md C.2, "replication unit first").
func (c *comparison) computeRunLevel(specs []spec) {
	for _, s := range specs {
		vb, vc := c.perRun(c.base, s), c.perRun(c.cand, s)
		w := c.newWork(s, MethodRunLevel, len(vb), len(vc))
		if len(vb) == 0 || len(vc) == 0 {
			w.short = fmt.Sprintf("%s: no run has a value on one side", s.name)
			continue
		}
		c.shiftMetric(w, vb, vc)
		// A per-run quantile is only as good as the requests behind it.
		if q, ok := statQ[s.stat]; ok && w.short == "" {
			nb, nc := c.count(c.base, s.series), c.count(c.cand, s.series)
			if need := MinSamplesForQuantile(q, c.opts.Alpha); nb < need || nc < need {
				w.short = fmt.Sprintf("%s needs ≥ %d samples per side (have %d and %d)", s.name, need, nb, nc)
				w.shortN = need
			}
		}
	}
}

// perRun returns the metric's value for each run of a side that has one.
func (c *comparison) perRun(p *pooled, s spec) []float64 {
	var out []float64
	for i := range p.runs {
		r := &p.runs[i]
		lo, hi := p.runStart[i], p.runStart[i+1]
		var v float64
		switch {
		case s.rate != "":
			v = rateOf(s.rate, p.runs[i:i+1])
		case s.series == "itl":
			x := r.ITL.known()
			if len(x) == 0 {
				continue
			}
			v = pointStat(x, s)
		case s.series != "":
			x := known(p.series[s.series][lo:hi])
			if len(x) == 0 {
				continue
			}
			v = pointStat(x, s)
		default:
			num := p.fam[s.fam][s.bucket]
			if num == nil || p.out == nil {
				continue
			}
			v = newRatioSeries(num[lo:hi], p.out[lo:hi]).value()
		}
		if !math.IsNaN(v) {
			out = append(out, v)
		}
	}
	return out
}

// bootPlan lists what one side's bootstrap computes per replicate.
type bootPlan struct {
	series []planSeries
	ratios []planRatio
}

type planSeries struct {
	values []float64
	view   sortedView
	stats  []spec
	// Prefix sums for block resamples (nil until needed).
	sum   []float64
	known []int32
}

type planRatio struct {
	name string
	r    ratioSeries
}

// add asks for statistic s of a series; statistics of one series share its
// sorted view.
func (b *bootPlan) add(s spec, values []float64) {
	for i := range b.series {
		if b.series[i].stats[0].series == s.series {
			b.series[i].stats = append(b.series[i].stats, s)
			return
		}
	}
	b.series = append(b.series, planSeries{values: values, view: newSortedView(values), stats: []spec{s}})
}

func (b *bootPlan) addRatio(name string, r ratioSeries) {
	b.ratios = append(b.ratios, planRatio{name, r})
}

// run draws reps resamples of n units and returns each statistic's
// replicate values by metric name.
func (b *bootPlan) run(n, block, reps int, seed uint64, stream string) map[string][]float64 {
	out := map[string][]float64{}
	if n == 0 || (len(b.series) == 0 && len(b.ratios) == 0) {
		return out
	}
	for _, ps := range b.series {
		for _, s := range ps.stats {
			out[s.name] = make([]float64, reps)
		}
	}
	for _, pr := range b.ratios {
		out[pr.name] = make([]float64, reps)
	}
	rs := newResampler(n, block, seed, stream)
	blocks := rs.block > 1
	if blocks {
		for i := range b.series {
			b.series[i].sum, b.series[i].known = prefixSums(b.series[i].values)
		}
	}
	for rep := range reps {
		counts := rs.next()
		for _, ps := range b.series {
			var total int
			var blockAvg float64
			if blocks {
				blockAvg, total = blockMean(rs.spans, ps.sum, ps.known)
			} else {
				total = ps.view.total(ps.values, counts)
			}
			for _, s := range ps.stats {
				switch {
				case s.stat == "mean" && blocks:
					out[s.name][rep] = blockAvg
				case s.stat == "mean":
					out[s.name][rep] = resampledMean(ps.values, counts, total)
				default:
					out[s.name][rep] = ps.view.quantile(counts, total, s.q)
				}
			}
		}
		for _, pr := range b.ratios {
			out[pr.name][rep] = pr.r.resampled(counts)
		}
	}
	return out
}
