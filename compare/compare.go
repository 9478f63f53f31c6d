package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/llmprof/llmprof/internal/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Block settings besides a positive block length: BlockAuto always
// resamples blocks of ⌈n^⅓⌉ consecutive requests; BlockDetect (the default)
// does so, with blocks at least n/n_eff long, when the requests are
// autocorrelated; 0 never does.
const (
	BlockAuto   = -1
	BlockDetect = -2
)

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
	// independently, BlockAuto uses ⌈n^⅓⌉, BlockDetect (the default) blocks
	// only when the requests are autocorrelated, a positive value that
	// length.
	Block int `json:"block"`
	// PoolRuns treats several runs per side as one long run instead of
	// replicates. Default false: with at least two runs on both sides the
	// run is the replication unit.
	PoolRuns bool `json:"pool_runs"`
	// AllowModelChange compares runs that served disjoint sets of models.
	AllowModelChange bool `json:"allow_model_change"`
	// Workload says how one run per side is compared: WorkloadAuto (the
	// default; "" means it too), WorkloadPaired or WorkloadIndependent
	// (compare/workload.go).
	Workload string `json:"workload"`
	// Policy holds the gate rules.
	Policy Policy `json:"-"`
}

// DefaultOptions returns the defaults documented on Options.
func DefaultOptions() Options {
	return Options{Alpha: 0.05, Power: 0.8, Reps: 2000, Seed: 1, Block: BlockDetect, Workload: WorkloadAuto}
}

func (o Options) validate() error {
	switch {
	case !(o.Alpha > 0 && o.Alpha < 0.5):
		return fmt.Errorf("alpha %v is not in (0, 0.5)", o.Alpha)
	case !(o.Power > 0 && o.Power < 1):
		return fmt.Errorf("power %v is not in (0, 1)", o.Power)
	case o.Reps < 10:
		return fmt.Errorf("bootstrap replicates %d: want at least 10 (2000 by default)", o.Reps)
	case o.Block < BlockDetect:
		return fmt.Errorf("block %d: want 0 (off), %d (auto), %d (detect) or a positive length", o.Block, BlockAuto, BlockDetect)
	case o.Workload != "" && o.Workload != WorkloadAuto && o.Workload != WorkloadPaired && o.Workload != WorkloadIndependent:
		return fmt.Errorf("workload %q: want %s, %s or %s", o.Workload, WorkloadAuto, WorkloadPaired, WorkloadIndependent)
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
	// InputWarnings are the inputs' own problems (Input.Warnings); every
	// report shows them, and diff --strict fails on them.
	InputWarnings []string
	// History says the baseline's runs include earlier baselines
	// (--baseline-history), so one candidate run is judged against their
	// spread.
	History bool
}

// ErrNoOverlap means the two sides share no metric that could be compared.
var ErrNoOverlap = errors.New("baseline and candidate have no metric in common")

// Compare compares candidate against baseline metric by metric and applies
// the gate policy in opts. It fails on unusable input (an empty side, an
// invalid run, disjoint models, nothing in common) and never turns a
// problem into a pass.
func Compare(baseline, candidate Side, opts Options) (*Result, error) {
	c, err := compareSides(baseline, candidate, opts)
	if err != nil {
		return nil, err
	}
	return c.res, nil
}

// compareSides is Compare, returning its state.
func compareSides(baseline, candidate Side, opts Options) (*comparison, error) {
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
	nb, nc := len(baseline.Runs), len(candidate.Runs)
	c.runLevel = nb >= 2 && nc >= 2 && !opts.PoolRuns
	c.history = nb >= 2 && nc == 1 && !opts.PoolRuns
	for _, s := range []Side{baseline, candidate} {
		res.InputWarnings = append(res.InputWarnings, s.InputWarnings...)
	}
	// Kernel traces without requests (a PyTorch profiler trace, an nsys
	// export of a training step) are compared at the kernel level only.
	requestLevel := res.Baseline.Requests > 0 && res.Candidate.Requests > 0
	if !requestLevel && (res.Baseline.Requests > 0 || res.Candidate.Requests > 0) {
		c.warnf("only one side has requests: request-level metrics are not compared")
	}
	switch {
	case c.runLevel:
		res.Unit = "run"
	case c.history:
		res.Unit = "run (baseline history)"
	case nb > 1 && !opts.PoolRuns:
		c.warnf("baseline has %d runs, candidate %d: run-level replication needs at least two runs on both sides, so requests are pooled", nb, nc)
	case nb == 1 && nc == 1 && requestLevel:
		if err := c.decideWorkload(); err != nil {
			return nil, err
		}
		if res.Workload != DesignDifferent {
			c.warnf("one run per side: the intervals hold the variation within each run, not between runs (another machine or day); "+
				"give ≥ 2 earlier baselines (--baseline-history DIR) to include run-to-run variance, or ≥ %d runs per side for run-level replication", stat.MinSamplesForU(opts.Alpha))
		}
	}
	if !requestLevel {
		res.Unit = "kernel identity"
	}
	if identicalSides(baseline.Runs, candidate.Runs) && sameKernels(baseline.Runs, candidate.Runs) {
		c.identical = true
		c.warnf("baseline and candidate hold identical samples: comparing a run with itself proves nothing, so no rule can pass")
	}
	for _, s := range []SideSummary{res.Baseline, res.Candidate} {
		if s.TokensEstimated {
			c.warnf("%s: token buckets are estimated from request-level attributes", s.Label)
		}
	}
	var specs []spec
	if requestLevel {
		specs = c.specs()
	}
	switch {
	case len(specs) == 0:
	case c.runLevel:
		c.computeRunLevel(specs)
	case c.history:
		c.computeHistory(specs)
	default:
		c.computeRequestLevel(specs)
		for _, w := range c.works {
			c.requireWorkload(w)
			if w.boundWhy != "" && w.short == "" {
				c.applyBound(w)
			}
		}
	}
	c.computeKernels(baseline, candidate)
	c.computeSteps(baseline, candidate)
	if requestLevel {
		c.computeAdjusted()
	}
	if len(c.works) == 0 {
		return nil, fmt.Errorf("%w (baseline %s, candidate %s)", ErrNoOverlap, baseline.Label, candidate.Label)
	}
	for _, w := range c.works {
		if w.spec.fam.Kind != KindKernel {
			c.explain(w)
		}
		w.m.CannotDecide = w.short
		res.Metrics = append(res.Metrics, *w.m)
	}
	c.kernelEvidence()
	c.applyGates()
	return c, nil
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
		if r.Kernels != nil {
			sum.Launches += r.Kernels.Launches
		}
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
	history    bool // several baseline runs, one candidate run
	paired     bool // one workload replayed: request i of each side is one request
	segments   int  // stretches per side for batch means (segmentCount)
	// pairedNeff is the effective sample size of each metric's paired
	// differences (pairedN), with a replayed workload and blocks on.
	pairedNeff map[string]metricNeff
	identical  bool // both sides hold the same samples
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
	series map[string][]float64 // latency family name → per request; absent when no run has it
	itl    []float64
	// itlReq[j] is the pooled request of ITL gap j, so a bootstrap can
	// resample whole requests with their tokens; nil when some run does not
	// say which gaps belong to which request.
	itlReq []int32
	// itlPerRequest is the mean number of ITL gaps per request, the block
	// length of the token-level bootstrap when itlReq is unknown.
	itlPerRequest float64
	out           []float64 // output tokens per request; nil when unknown
	fam           [numFams]map[string][]float64
	hasFam        [numFams]bool
	// runStart[i] is the first pooled request of run i.
	runStart []int
	// block is the bootstrap block length in requests (1: independent).
	block int
}

func pool(s Side, keys [numFams][]string) *pooled {
	p := &pooled{label: s.Label, runs: s.Runs, series: map[string][]float64{}, block: 1}
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
	for _, f := range Families {
		if f.Kind != KindLatency || f.series == nil {
			continue
		}
		if v := gather(f.series, math.NaN()); v != nil {
			p.series[f.Name] = v
		}
	}
	p.out = gather(func(r *Run) Series { return r.OutputTokens }, math.NaN())
	clustered := true
	for i := range s.Runs {
		r := &s.Runs[i]
		counts := r.itlCounts()
		if counts == nil {
			clustered = false
		}
		j := 0
		for req, k := range counts {
			for range k {
				if v := r.ITL[j]; !math.IsNaN(v) {
					p.itlReq = append(p.itlReq, int32(p.runStart[i]+req))
				}
				j++
			}
		}
		p.itl = append(p.itl, r.ITL.known()...)
	}
	if !clustered || len(p.itlReq) != len(p.itl) {
		p.itlReq = nil
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

// itlCounts returns how many ITL gaps each request contributed, from
// itl_counts or, failing that, from output_tokens − 1 when those add up;
// nil when neither does.
func (r *Run) itlCounts() []int {
	sum := func(c []int) int {
		t := 0
		for _, v := range c {
			t += v
		}
		return t
	}
	if len(r.ITLCounts) == r.Requests && sum(r.ITLCounts) == len(r.ITL) {
		return r.ITLCounts
	}
	if len(r.OutputTokens) != r.Requests {
		return nil
	}
	c := make([]int, r.Requests)
	for i, v := range r.OutputTokens {
		if math.IsNaN(v) {
			return nil
		}
		c[i] = max(0, int(v)-1)
	}
	if sum(c) != len(r.ITL) {
		return nil
	}
	return c
}

// known returns the values of a pooled series that are not NaN.
func known(x []float64) []float64 { return Series(x).known() }

// spec is one metric to compute: its family and, by kind, the statistic or
// the bucket.
type spec struct {
	name   string
	fam    *Family
	stat   string  // latency: "p50" … "shift"
	q      float64 // latency quantiles
	bucket string  // bucket families
}

func (s spec) kind() Kind { return s.fam.Kind }
func (s spec) series() string {
	if s.fam.Kind == KindLatency {
		return s.fam.Name
	}
	return ""
}
func (s spec) isITL() bool { return s.fam.Kind == KindLatency && s.fam.series == nil }

// specs lists the metrics both sides can be compared on, in display order,
// and records why the others cannot.
func (c *comparison) specs() []spec {
	c.absent = map[string]string{}
	b, k := c.base, c.cand
	allRuns := append(slices.Clone(b.runs), k.runs...)
	var out []spec
	for i := range Families {
		f := &Families[i]
		switch f.Kind {
		case KindLatency:
			nb, nk := c.count(b, f.Name), c.count(k, f.Name)
			if nb == 0 || nk == 0 {
				if nb+nk > 0 {
					why := fmt.Sprintf("%s has no %s values", cmpSide(nb == 0, b.label, k.label), f.Name)
					c.warnf("%s: not compared: %s", f.Name, why)
					c.absent[f.Name] = why
				} else {
					c.absent[f.Name] = fmt.Sprintf("neither side has %s values", f.Name)
				}
				continue
			}
			for _, st := range LatencyStats {
				q := statQ[st]
				if st == StatShift {
					q = 0.5 // across runs, the shift of the per-run medians
				}
				out = append(out, spec{name: f.Name + "." + st, fam: f, stat: st, q: q})
			}
		case KindRate:
			why := ""
			for _, r := range allRuns {
				if !(r.DurationMS > 0) {
					why = "some runs have no duration_ms"
					break
				}
				if _, ok := f.count(&r); !ok {
					why = fmt.Sprintf("some runs cannot count %s", f.Doc)
					if f.Name == MetricGoodput {
						why = "goodput needs every run counted against the same SLO (analyze --slo)"
					}
					break
				}
			}
			if why == "" && f.Name == MetricGoodput {
				for _, r := range allRuns {
					if r.SLO != allRuns[0].SLO {
						why = "goodput needs every run counted against the same SLO (analyze --slo)"
						c.warnf("goodput: not compared: runs were counted against different SLOs")
						break
					}
				}
			}
			if why != "" {
				c.absent[f.Name] = why
				continue
			}
			out = append(out, spec{name: f.Name, fam: f})
		case KindBucket:
			fi := f.fam
			if b.out == nil || k.out == nil {
				c.absent[f.Name] = "output token counts are missing, so time per token is unknown"
				continue
			}
			switch {
			case b.hasFam[fi] && k.hasFam[fi]:
			case b.hasFam[fi] || k.hasFam[fi]:
				why := fmt.Sprintf("%s has no %s", cmpSide(!b.hasFam[fi], b.label, k.label), famNames[fi])
				c.absent[f.Name] = why
				if fi == famTenants {
					c.warnf("tenants: not compared: %s (tenant attribution did not run there)", why)
				}
				continue
			default:
				c.absent[f.Name] = fmt.Sprintf("neither side has %s", famNames[fi])
				continue
			}
			order := sortedKeys(b.fam[fi])
			if f.buckets != nil {
				order = inOrder(f.buckets, b.fam[fi])
			}
			for _, bucket := range order {
				out = append(out, spec{name: f.Name + bucket, fam: f, bucket: bucket})
			}
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
	if latencyFamily(series) != nil && latencyFamily(series).series == nil {
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
	// runSD, with a baseline history, is the spread of the baseline's
	// per-run values (log scale where positive): it, not the samples,
	// limits the verdict, and neededRuns turns it into runs per side.
	runSD float64
	// missing: the metric has no data on a side (or is not computed in
	// this mode); a rule on it fails unless Policy.AllowMissing.
	missing bool
	// boundWhy, with one run per side, says why the metric is decided with
	// the between-run bound (compare/between.go); withinLo/Hi are its
	// within-run interval before the bound widened it.
	boundWhy           string
	withinLo, withinHi float64
	withinKnown        bool
}

func (c *comparison) newWork(s spec, method Method, nb, nk int) *work {
	m := &Metric{
		Name: s.name, Unit: s.fam.Unit, Better: s.fam.Better, Method: method,
		NBaseline: nb, NCandidate: nk,
		Baseline: math.NaN(), Candidate: math.NaN(),
		Delta: math.NaN(), DeltaPct: math.NaN(),
		CILow: math.Inf(-1), CIHigh: math.Inf(1), CILowPct: math.Inf(-1), CIHighPct: math.Inf(1),
		P: math.NaN(), MDE: math.NaN(), MDEPct: math.NaN(),
	}
	w := &work{spec: s, m: m, unitsOf: "samples"}
	if s.isITL() {
		w.unitsOf = "tokens"
	}
	if method == MethodRunLevel || method == MethodHistory {
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
// scale with percentages relative to the baseline median. inflate ≥ 1
// widens the interval about the estimate (and shrinks the test statistic)
// by the square root of the design effect of autocorrelated requests.
//
// With shiftOnly the metric is the shift itself (".shift"): no values are
// printed beside it, because the shift is not the difference of any two
// numbers one could show. Otherwise (run-level replication) the values are
// the medians of the per-run values and the change is theirs, so the change
// column is the change of the values shown; the interval and the p-value
// are the shift's.
func (c *comparison) shiftMetric(w *work, xb, xc []float64, inflate float64, shiftOnly bool) {
	m := w.m
	alpha := c.opts.Alpha
	sb, sc := sortedCopy(xb), sortedCopy(xc)
	mb, mc := stat.Quantile(sb, 0.5), stat.Quantile(sc, 0.5)
	u := stat.MannWhitney(sb, sc)
	m.P = inflateP(u.P, inflate, true)
	m.Significant = m.P <= alpha
	raw := stat.HodgesLehmann(sb, sc, alpha)
	widen := func(est, lo, hi float64) (float64, float64) {
		return est - inflate*(est-lo), est + inflate*(hi-est)
	}
	m.Delta = raw.Estimate
	m.CILow, m.CIHigh = widen(raw.Estimate, raw.Low, raw.High)
	ares := math.Sqrt(math.Pi / 3) // 1/√ARE of U vs t under normality (docs/diff.md)
	seRaw := inflate * ares * math.Sqrt(variance(sb)/float64(len(sb))+variance(sc)/float64(len(sc)))
	m.MDE = (c.za + c.zb) * seRaw
	logScale := allPositive(sb, sc)
	var lb, lc []float64
	var logEst, logLo, logHi float64 // the widened interval on logs
	if logScale {
		lb, lc = logs(sb), logs(sc)
		l := stat.HodgesLehmann(lb, lc, alpha)
		lo, hi := widen(l.Estimate, l.Low, l.High)
		logEst, logLo, logHi = l.Estimate, lo, hi
		m.DeltaPct = pctOfLog(l.Estimate)
		m.CILowPct, m.CIHighPct = pctOfLog(lo), pctOfLog(hi)
		seLog := inflate * ares * math.Sqrt(variance(lb)/float64(len(lb))+variance(lc)/float64(len(lc)))
		m.MDEPct = pctOfLog((c.za + c.zb) * seLog)
	} else {
		m.DeltaPct = pctOf(m.Delta, mb)
		m.CILowPct, m.CIHighPct = pctOf(m.CILow, mb), pctOf(m.CIHigh, mb)
		m.MDEPct = pctOf(m.MDE, mb)
		m.Note = noteRawShift
	}
	// The MDE on the scale of the interval it sits beside: the interval's
	// half-width is z_{1−α/2}·SE, so the MDE is (z_{1−α/2}+z_{power})·SE read
	// off it (a variance-based SE on raw, heavy-tailed values — queue time
	// with zeros — printed an MDE of ±234% beside an interval ±6–8% wide).
	if hw := (m.CIHigh - m.CILow) / 2; raw.K > 0 && hw > 0 && !math.IsInf(hw, 0) {
		m.MDE = (c.za + c.zb) / c.za * hw
		if logScale {
			m.MDEPct = pctOfLog((c.za + c.zb) / c.za * (logHi - logLo) / 2)
		} else {
			m.MDEPct = pctOf(m.MDE, mb)
		}
	}
	// The p-value is the interval's own: the test that rejects exactly when
	// the printed interval excludes 0. The rank test's p beside a widened
	// interval could contradict it (p < 0.001 beside an interval across 0,
	// where ties in queue times made the two disagree).
	if raw.K > 0 {
		if logScale {
			m.P = pOfInterval(logEst, logLo, logHi, c.za)
		} else {
			m.P = pOfInterval(raw.Estimate, m.CILow, m.CIHigh, c.za)
		}
		m.Significant = m.P <= alpha
	}
	if shiftOnly {
		if m.Note == "" {
			m.Note = "Hodges–Lehmann shift: the median of all candidate − baseline differences"
		}
	} else {
		m.Baseline, m.Candidate = mb, mc
		m.Delta = mc - mb
		m.DeltaPct = pctOf(m.Delta, mb)
	}
	if raw.K == 0 {
		need := stat.MinSamplesForU(alpha)
		m.MinN = need
		w.short = fmt.Sprintf("%s needs ≥ %d %s per side for a finite interval (have %d and %d)", m.Name, need, w.unitsOf, len(sb), len(sc))
		w.shortN = need
	} else {
		m.MinN = stat.MinSamplesForU(alpha)
	}
	w.pFail = func(g Gate) float64 {
		var pu, pl float64
		switch {
		case !g.Relative:
			pu, pl = stat.ShiftUTest(sb, sc, g.Threshold)
		case logScale:
			pu, pl = stat.ShiftUTest(lb, lc, math.Log1p(g.Threshold/100))
		default:
			pu, pl = stat.ShiftUTest(sb, sc, g.Threshold/100*mb)
		}
		if g.Op == Below {
			return inflateP(pu, inflate, false)
		}
		return inflateP(pl, inflate, false)
	}
}

// pOfInterval is the two-sided p-value of an estimate whose 1−α interval
// is [lo, hi] (z its z_{1−α/2}): the half of the interval toward 0 read as
// z standard errors, so p ≤ α exactly when the interval excludes 0.
func pOfInterval(est, lo, hi, z float64) float64 {
	half := est - lo
	if est < 0 {
		half = hi - est
	}
	switch {
	case math.IsInf(half, 0) || math.IsNaN(half):
		return math.NaN()
	case half <= 0 && est == 0:
		return 1
	case half <= 0:
		return 0 // a point interval away from 0
	}
	return math.Min(1, 2*(1-distuv.UnitNormal.CDF(math.Abs(est)/(half/z))))
}

// noteRawShift marks a shift measured on the raw scale (zeros present),
// which the between-run bound, a bound on log values, cannot widen.
const noteRawShift = "zeros present: shift on the raw scale, percent of the baseline median"

// gateOnScale is gate g's threshold on the scale a change is measured on:
// a log ratio where logScale, else a raw change; a relative threshold is a
// share of base, and an absolute one on the log scale is the ratio it makes
// at base. ok is false when base plus an absolute threshold is not positive
// (no log ratio reaches it).
func gateOnScale(g Gate, logScale bool, base float64) (thr float64, ok bool) {
	switch {
	case g.Relative && logScale:
		return math.Log1p(g.Threshold / 100), true
	case g.Relative:
		return g.Threshold / 100 * base, true
	case logScale:
		if base+g.Threshold <= 0 {
			return 0, false
		}
		return math.Log((base + g.Threshold) / base), true
	}
	return g.Threshold, true
}

// inflateP divides the normal score of a p-value by inflate (the square
// root of a design effect): the p-value the same statistic would have with
// inflate² times its variance.
func inflateP(p, inflate float64, twoSided bool) float64 {
	if inflate <= 1 || math.IsNaN(p) {
		return p
	}
	if twoSided {
		z := distuv.UnitNormal.Quantile(1 - p/2)
		return 2 * (1 - distuv.UnitNormal.CDF(z/inflate))
	}
	z := distuv.UnitNormal.Quantile(1 - p)
	return 1 - distuv.UnitNormal.CDF(z/inflate)
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
// side (pb, pc are the statistic on the original samples): the change is
// pc − pb, the change of the two values shown.
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
	m.CILow, m.CIHigh = stat.PercentileInterval(d.abs, c.opts.Alpha)
	rlo, rhi := stat.PercentileInterval(d.ratio, c.opts.Alpha)
	m.CILowPct, m.CIHighPct = 100*(rlo-1), 100*(rhi-1)
	m.P = stat.TwoSidedP(d.abs)
	m.Significant = m.P <= c.opts.Alpha
	m.MDE = (c.za + c.zb) * stddev(d.abs)
	m.MDEPct = pctOfLog((c.za + c.zb) * stddev(d.logr))
	if dropped := d.reps - len(d.abs); dropped > d.reps/100 {
		m.Note = fmt.Sprintf("%d of %d bootstrap replicates undefined (too few known values)", dropped, d.reps)
	}
	w.pFail = func(g Gate) float64 {
		if g.Relative {
			return stat.TailP(d.ratio, 1+g.Threshold/100, g.Op == Below)
		}
		return stat.TailP(d.abs, g.Threshold, g.Op == Below)
	}
}

// minBootstrapN is the fewest units per side for which a percentile
// bootstrap interval of a mean or a ratio of sums is trusted in a verdict.
// On skewed data (5% of requests 3–10× slower) the one-sided error of the
// mean's interval measured 5% at n = 20 and 4% at 50 against a nominal
// 2.5% (docs/diff.md, "How it was validated"), so the floor is 50.
const minBootstrapN = 50

// computeRequestLevel treats requests as the replication unit. Every
// bootstrapped metric of a side comes from one resample of its requests per
// replicate: latency quantiles and means, per-token buckets, and ITL, whose
// tokens travel with their request (a cluster bootstrap: the gaps of one
// request share its fate). Requests are resampled in blocks when they are
// autocorrelated (decideBlocks). The shift is the Hodges–Lehmann estimate.
func (c *comparison) computeRequestLevel(specs []spec) {
	c.segments = c.segmentCount()
	depB, depC := c.decideDependence(specs)
	method := MethodBootstrap
	if c.base.block > 1 || c.cand.block > 1 {
		method = MethodBlockBootstrap
	}
	clustered := c.base.itlReq != nil && c.cand.itlReq != nil
	var reqB, reqC, itlB, itlC bootPlan
	type pending struct {
		w      *work
		pb, pc float64
		tokens bool // replicates from the separate token plan
	}
	var boots []pending
	for _, s := range specs {
		switch {
		case s.kind() == KindRate:
			w := c.newWork(s, MethodNone, len(c.base.runs), len(c.cand.runs))
			w.m.Baseline, w.m.Candidate = rateOf(s.fam, c.base.runs), rateOf(s.fam, c.cand.runs)
			w.m.Delta = w.m.Candidate - w.m.Baseline
			w.m.DeltaPct = pctOf(w.m.Delta, w.m.Baseline)
			w.unitsOf = "runs"
			w.m.MinN = stat.MinSamplesForU(c.opts.Alpha)
			w.short = fmt.Sprintf("%s is one value per run: a confident answer needs run-level replication, ≥ %d runs per side (have %d and %d)",
				s.name, w.m.MinN, len(c.base.runs), len(c.cand.runs))
			w.shortN = w.m.MinN
		case s.kind() == KindLatency && s.stat == StatShift && c.paired && !s.isITL() &&
			allPositive(known(c.base.series[s.series()]), known(c.cand.series[s.series()])):
			c.pairedShiftMetric(s, depB, depC)
		case s.kind() == KindLatency && s.stat == StatShift:
			var xb, xc []float64
			if s.isITL() {
				xb, xc = c.base.itl, c.cand.itl
			} else {
				xb, xc = known(c.base.series[s.series()]), known(c.cand.series[s.series()])
			}
			w := c.newWork(s, MethodHodgesLehmann, len(xb), len(xc))
			f := inflation(depB, depC, s.name)
			if s.isITL() {
				// Tokens of one request are not independent: the design
				// effect counts requests (or, without them, clusters of
				// itlPerRequest gaps).
				eb, ek := depB.neff[s.name], depC.neff[s.name]
				if eb.neff > 0 && ek.neff > 0 {
					f = math.Sqrt((1/eb.neff + 1/ek.neff) / (1/float64(len(xb)) + 1/float64(len(xc))))
				} else {
					f *= math.Sqrt(max(1, (c.base.itlPerRequest+c.cand.itlPerRequest)/2))
				}
				f = max(f, 1)
			}
			c.shiftMetric(w, xb, xc, f, true)
			if c.batchMeansOn() && allPositive(xb, xc) {
				mb := quantileOf(xb, 0.5)
				if bm, ok := c.newBatchMeans(s, mb, mb*(1+w.m.DeltaPct/100)); ok {
					c.widen(w, bm, mb)
				}
			}
			c.requireEffective(w, depB, depC)
		case s.isITL() && clustered:
			w := c.newWork(s, MethodClusterBootstrap, len(c.base.itl), len(c.cand.itl))
			reqB.addTokens(s, c.base.itl, c.base.itlReq)
			reqC.addTokens(s, c.cand.itl, c.cand.itlReq)
			boots = append(boots, pending{w: w, pb: pointStat(c.base.itl, s), pc: pointStat(c.cand.itl, s)})
			c.requireStat(w, s)
			c.requireEffective(w, depB, depC)
		case s.isITL():
			w := c.newWork(s, MethodBlockBootstrap, len(c.base.itl), len(c.cand.itl))
			itlB.add(s, c.base.itl)
			itlC.add(s, c.cand.itl)
			boots = append(boots, pending{w: w, pb: pointStat(c.base.itl, s), pc: pointStat(c.cand.itl, s), tokens: true})
			w.m.Note = "which gaps belong to which request is unknown: blocks of tokens stand in for requests"
			c.requireStat(w, s)
			c.requireEffective(w, depB, depC)
		case s.kind() == KindLatency:
			vb, vc := c.base.series[s.series()], c.cand.series[s.series()]
			w := c.newWork(s, method, c.count(c.base, s.series()), c.count(c.cand, s.series()))
			reqB.add(s, vb)
			reqC.add(s, vc)
			boots = append(boots, pending{w: w, pb: pointStat(known(vb), s), pc: pointStat(known(vc), s)})
			c.requireStat(w, s)
			c.requireEffective(w, depB, depC)
		default: // per-token bucket
			rb := newRatioSeries(c.base.fam[s.fam.fam][s.bucket], c.base.out)
			rc := newRatioSeries(c.cand.fam[s.fam.fam][s.bucket], c.cand.out)
			w := c.newWork(s, method, len(rb.units), len(rc.units))
			reqB.addRatio(s.name, rb)
			reqC.addRatio(s.name, rc)
			boots = append(boots, pending{w: w, pb: rb.value(), pc: rc.value()})
			w.requireN(minBootstrapN, " for a bootstrap interval")
			c.requireEffective(w, depB, depC)
		}
	}
	if len(boots) == 0 {
		return
	}
	itlBlock := func(p *pooled) int {
		return max(int(math.Ceil(p.itlPerRequest))*p.block, blockLen(BlockAuto, len(p.itl)))
	}
	var outs [4]map[string][]float64
	var wg sync.WaitGroup
	// Paired requests are resampled together: the same draws of the same
	// blocks on both sides, so what request i shares across the runs
	// cancels in the change.
	blockB, blockC, streamB, streamC := c.base.block, c.cand.block, "baseline/requests", "candidate/requests"
	if c.paired {
		blockB = max(blockB, blockC)
		blockC, streamB, streamC = blockB, "paired/requests", "paired/requests"
	}
	jobs := []func() map[string][]float64{
		func() map[string][]float64 {
			return reqB.run(c.base.n, blockB, c.opts.Reps, c.opts.Seed, streamB)
		},
		func() map[string][]float64 {
			return reqC.run(c.cand.n, blockC, c.opts.Reps, c.opts.Seed, streamC)
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
		if p.tokens {
			repsB, repsC = outs[2][name], outs[3][name]
		}
		c.bootMetric(p.w, p.pb, p.pc, repsB, repsC)
		// A paired tail is decided from the paired bootstrap and its
		// bound (pairedTail), not from segment quantiles.
		if c.batchMeansOn() && !c.pairedTail(p.w.spec) {
			if bm, ok := c.newBatchMeans(p.w.spec, p.pb, p.pc); ok {
				c.widen(p.w, bm, p.pb)
			}
		}
	}
}

// minQuantileBootstrapN is the floor for a bootstrapped quantile; the
// binomial rule (MinSamplesForQuantile) is stricter for p90 and p99.
const minQuantileBootstrapN = 20

// requireStat applies the sample-size floors of a bootstrapped statistic.
func (c *comparison) requireStat(w *work, s spec) {
	if q, ok := statQ[s.stat]; ok {
		w.requireN(max(stat.MinSamplesForQuantile(q, c.opts.Alpha), minQuantileBootstrapN), "")
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
	if s.stat == StatMean {
		return mean(x)
	}
	return quantileOf(x, s.q)
}

// autocorrelated is the effective-sample-size ratio below which requests
// count as autocorrelated: n_eff < n/2 (docs/diff.md).
const autocorrelated = 0.5

func sideWord(base bool) string {
	if base {
		return "baseline requests"
	}
	return "candidate requests"
}

// rateOf is a rate pooled over runs: total count over total duration.
func rateOf(f *Family, runs []Run) float64 {
	var num, dur float64
	for i := range runs {
		v, ok := f.count(&runs[i])
		if !ok {
			return math.NaN()
		}
		num += v
		dur += runs[i].DurationMS
	}
	if dur <= 0 {
		return math.NaN()
	}
	return num / (dur / 1000)
}

// computeRunLevel treats each run as one observation: every metric becomes
// a per-run value and the two sets of runs are compared with Welch's t on
// the log scale (welchMetric; the run is the replication unit).
func (c *comparison) computeRunLevel(specs []spec) {
	for _, s := range specs {
		vb, vc := c.perRun(c.base, s), c.perRun(c.cand, s)
		w := c.newWork(s, MethodRunLevel, len(vb), len(vc))
		if len(vb) == 0 || len(vc) == 0 {
			w.short = fmt.Sprintf("%s: no run has a value on one side", s.name)
			continue
		}
		c.welchMetric(w, vb, vc)
		c.requireRunSamples(w, s)
	}
}

// welchMetric compares per-run values with Welch's t on the log scale (raw
// where a value is ≤ 0): the change is the ratio of the sides' geometric
// means, its interval d ± t_{ν,1−α/2}·se with se² = s_b²/k_b + s_c²/k_c and
// ν the Welch–Satterthwaite degrees of freedom, and every p-value — the
// change's and each gate rule's — comes from the same t, so a rule fails
// exactly when its interval is past the threshold at the rule's level.
// Unlike the exact rank test of a few runs (4 against 4 has a smallest
// one-sided p of 1/70 = 0.0143, above Holm's 0.025/2 for two rules), its
// p-values are continuous, so every Holm level can be met; its error rate
// with 2–5 runs per side and 1–6 rules is measured in
// TestRunLevelGateErrorRates (docs/diff.md).
func (c *comparison) welchMetric(w *work, vb, vc []float64) {
	m := w.m
	logScale := allPositive(vb, vc)
	tr := func(x []float64) []float64 {
		if logScale {
			return logs(x)
		}
		return x
	}
	tb, tc := tr(vb), tr(vc)
	kb, kc := float64(len(tb)), float64(len(tc))
	mb, mc := mean(tb), mean(tc)
	d := mc - mb
	m.MinN = 2
	if len(tb) < 2 || len(tc) < 2 {
		w.short = fmt.Sprintf("%s needs ≥ 2 runs with a value per side (have %d and %d)", m.Name, len(tb), len(tc))
		w.shortN = 2
		return
	}
	vB, vC := variance(tb)/kb, variance(tc)/kc
	se := math.Sqrt(vB + vC)
	nu := kb + kc - 2
	if se > 0 {
		nu = (vB + vC) * (vB + vC) / (vB*vB/(kb-1) + vC*vC/(kc-1))
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: nu}
	tq := t.Quantile(1 - c.opts.Alpha/2)
	lo, hi := d-tq*se, d+tq*se
	tp := t.Quantile(c.opts.Power)
	if logScale {
		m.Baseline, m.Candidate = math.Exp(mb), math.Exp(mc)
		m.DeltaPct, m.CILowPct, m.CIHighPct = pctOfLog(d), pctOfLog(lo), pctOfLog(hi)
		m.CILow, m.CIHigh = m.Baseline*m.CILowPct/100, m.Baseline*m.CIHighPct/100
		m.MDEPct = pctOfLog((tq + tp) * se)
		m.MDE = m.Baseline * m.MDEPct / 100
	} else {
		m.Baseline, m.Candidate = mb, mc
		m.CILow, m.CIHigh = lo, hi
		m.CILowPct, m.CIHighPct = pctOf(lo, mb), pctOf(hi, mb)
		m.MDE = (tq + tp) * se
		m.MDEPct = pctOf(m.MDE, mb)
		m.Note = "values ≤ 0 present: Welch's t on the raw scale"
	}
	m.Delta = m.Candidate - m.Baseline
	m.DeltaPct = pctOf(m.Delta, m.Baseline)
	pOf := func(z float64, below bool) float64 { // one-sided p of d − thr = z·se
		if se == 0 {
			if (below && z > 0) || (!below && z < 0) {
				return 0
			}
			return 1
		}
		if below {
			return 1 - t.CDF(z)
		}
		return t.CDF(z)
	}
	if se == 0 {
		m.P = 1
		if d != 0 {
			m.P = 0
		}
	} else {
		m.P = 2 * (1 - t.CDF(math.Abs(d)/se))
	}
	m.Significant = m.P <= c.opts.Alpha
	if m.Note == "" {
		m.Note = fmt.Sprintf("Welch's t over %d and %d runs (log scale): geometric means per side", len(tb), len(tc))
	}
	base := m.Baseline
	w.pFail = func(g Gate) float64 {
		thr, ok := gateOnScale(g, logScale, base)
		if !ok {
			return 1
		}
		z := 0.0
		if se > 0 {
			z = (d - thr) / se
		} else {
			z = d - thr
		}
		return pOf(z, g.Op == Below)
	}
}

// requireRunSamples marks a per-run quantile short when the requests behind
// it are too few.
func (c *comparison) requireRunSamples(w *work, s spec) {
	if q, ok := statQ[s.stat]; ok && w.short == "" {
		nb, nc := c.count(c.base, s.series()), c.count(c.cand, s.series())
		if need := stat.MinSamplesForQuantile(q, c.opts.Alpha); nb < need || nc < need {
			w.short = fmt.Sprintf("%s needs ≥ %d samples per side (have %d and %d)", s.name, need, nb, nc)
			w.shortN = need
		}
	}
}

// computeHistory compares one candidate run against several baseline runs
// (a baseline history): each metric is one value per run, and the
// candidate's value is judged against the spread of the baseline's — a
// prediction interval, d ± t_{k−1}·s·√(1 + 1/k) on the log scale (raw where
// a value is ≤ 0), s the standard deviation over the k baseline runs. The
// spread holds the run-to-run variance and each run's own sampling noise,
// so the verdict includes both. The baseline value is the geometric mean of
// its runs, so the change is that of the values shown.
func (c *comparison) computeHistory(specs []spec) {
	for _, s := range specs {
		vb, vc := c.perRun(c.base, s), c.perRun(c.cand, s)
		w := c.newWork(s, MethodHistory, len(vb), len(vc))
		if len(vb) < 2 || len(vc) != 1 {
			w.short = fmt.Sprintf("%s: a baseline history needs ≥ 2 baseline runs with a value and one candidate run (have %d and %d)", s.name, len(vb), len(vc))
			w.shortN = 2
			continue
		}
		c.historyMetric(w, vb, vc[0])
		c.requireRunSamples(w, s)
	}
}

func (c *comparison) historyMetric(w *work, vb []float64, vc float64) {
	m := w.m
	k := float64(len(vb))
	logScale := allPositive(vb, []float64{vc})
	tr := func(v float64) float64 { return v }
	if logScale {
		tr = math.Log
	}
	var tb []float64
	for _, v := range vb {
		tb = append(tb, tr(v))
	}
	mu, sd := mean(tb), stddev(tb)
	d := tr(vc) - mu
	se := sd * math.Sqrt(1+1/k)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: k - 1}
	tq := t.Quantile(1 - c.opts.Alpha/2)
	lo, hi := d-tq*se, d+tq*se
	m.MinN = 2
	w.runSD = sd
	if !logScale && mu != 0 {
		w.runSD = sd / math.Abs(mu)
	}
	if logScale {
		m.Baseline = math.Exp(mu)
	} else {
		m.Baseline = mu
	}
	m.Candidate = vc
	m.Delta = vc - m.Baseline
	m.DeltaPct = pctOf(m.Delta, m.Baseline)
	if logScale {
		m.CILow, m.CIHigh = m.Baseline*math.Expm1(lo), m.Baseline*math.Expm1(hi)
		m.CILowPct, m.CIHighPct = pctOfLog(lo), pctOfLog(hi)
		m.MDEPct = pctOfLog((c.za + c.zb) * se)
		m.MDE = m.Baseline * m.MDEPct / 100
	} else {
		m.CILow, m.CIHigh = lo, hi
		m.CILowPct, m.CIHighPct = pctOf(lo, m.Baseline), pctOf(hi, m.Baseline)
		m.MDE = (c.za + c.zb) * se
		m.MDEPct = pctOf(m.MDE, m.Baseline)
	}
	if se == 0 {
		m.P = 1
		if d != 0 {
			m.P = 0
		}
	} else {
		m.P = 2 * (1 - t.CDF(math.Abs(d)/se))
	}
	m.Significant = m.P <= c.opts.Alpha
	m.Note = fmt.Sprintf("candidate run against the spread of %d baseline runs (prediction interval)", len(vb))
	w.pFail = func(g Gate) float64 {
		thr, ok := gateOnScale(g, logScale, m.Baseline)
		if !ok {
			return 1
		}
		if se == 0 {
			if (g.Op == Below && d > thr) || (g.Op == Above && d < thr) {
				return 0
			}
			return 1
		}
		z := (d - thr) / se
		if g.Op == Below {
			return 1 - t.CDF(z)
		}
		return t.CDF(z)
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
		case s.kind() == KindRate:
			v = rateOf(s.fam, p.runs[i:i+1])
		case s.isITL():
			x := r.ITL.known()
			if len(x) == 0 {
				continue
			}
			v = pointStat(x, s)
		case s.kind() == KindLatency:
			x := known(p.series[s.series()][lo:hi])
			if len(x) == 0 {
				continue
			}
			v = pointStat(x, s)
		default:
			num := p.fam[s.fam.fam][s.bucket]
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
	view   stat.SortedView
	stats  []spec
	// unit[j] is the resampled unit (request) that value j belongs to,
	// for token series, whose view reads the units' multiplicities
	// (SortedView.ByUnit); nil when values are per unit.
	unit []int32
	// groups are the runs of consecutive values of one unit, in value
	// order (a request's tokens are usually one run).
	groups []unitGroup
	// noNaN says no value is NaN, so a replicate's token sum needs no
	// test per value.
	noNaN bool
	// finite says every value is finite: a unit drawn 0 times then adds
	// 0·v = ±0 to a sum, which leaves it as it was (tokenSums).
	finite bool
	// Prefix sums for block resamples (nil until needed).
	sum   []float64
	known []int32
	// zeroed is values with 0 for NaN, when the series (of units) has a
	// mean and every known value is finite: run sums a batch's means
	// from it (meanSums); nil otherwise.
	zeroed []float64
}

// unitGroup is values [start, end) of a token series, all of one unit.
type unitGroup struct{ unit, start, end int32 }

// unitGroups splits a token series' values into runs of one unit each.
func unitGroups(unit []int32) []unitGroup {
	var out []unitGroup
	for j, u := range unit {
		if n := len(out); n > 0 && out[n-1].unit == u {
			out[n-1].end++
			continue
		}
		out = append(out, unitGroup{u, int32(j), int32(j + 1)})
	}
	return out
}

type planRatio struct {
	name string
	r    ratioSeries
}

// add asks for statistic s of a series; statistics of one series share its
// sorted view.
func (b *bootPlan) add(s spec, values []float64) {
	for i := range b.series {
		if b.series[i].stats[0].fam == s.fam && b.series[i].unit == nil {
			b.series[i].stats = append(b.series[i].stats, s)
			return
		}
	}
	b.series = append(b.series, planSeries{values: values, view: stat.NewSortedView(values), stats: []spec{s}})
}

// addTokens asks for statistic s of a token series whose values belong to
// units (requests): a replicate that draws a request k times draws each of
// its tokens k times (the cluster bootstrap).
func (b *bootPlan) addTokens(s spec, values []float64, unit []int32) {
	for i := range b.series {
		if b.series[i].unit != nil && b.series[i].stats[0].fam == s.fam {
			b.series[i].stats = append(b.series[i].stats, s)
			return
		}
	}
	b.series = append(b.series, planSeries{values: values, view: stat.NewSortedView(values).ByUnit(unit), stats: []spec{s}, unit: unit, groups: unitGroups(unit),
		noNaN: !slices.ContainsFunc(values, math.IsNaN), finite: !slices.ContainsFunc(values, nonFinite)})
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
	rs := stat.NewResampler(n, block, seed, stream)
	blocks := rs.Block() > 1
	if blocks {
		for i := range b.series {
			if b.series[i].unit == nil {
				b.series[i].sum, b.series[i].known = stat.PrefixSums(b.series[i].values)
			}
		}
	}
	for i := range b.series {
		ps := &b.series[i]
		if ps.unit != nil || blocks || !slices.ContainsFunc(ps.stats, func(s spec) bool { return s.stat == StatMean }) ||
			slices.ContainsFunc(ps.values, func(v float64) bool { return math.IsInf(v, 0) }) {
			continue
		}
		ps.zeroed = make([]float64, len(ps.values))
		for j, v := range ps.values {
			if !math.IsNaN(v) {
				ps.zeroed[j] = v
			}
		}
	}
	finiteRatio := make([]bool, len(b.ratios))
	for i, pr := range b.ratios {
		finiteRatio[i] = pr.r.finite()
	}
	// Replicates are drawn repBatch at a time, in the order one at a time
	// would draw them, so that sums of a series over each run together.
	var batch [repBatch][]int32
	var drawn [repBatch][][2]int32 // the blocks of each resample
	for r := range batch {
		batch[r] = make([]int32, n)
	}
	for rep0 := 0; rep0 < reps; rep0 += repBatch {
		nb := min(repBatch, reps-rep0)
		for r := range nb { // a short last batch leaves stale counts, whose sums are not read
			copy(batch[r], rs.Next())
			if blocks {
				drawn[r] = append(drawn[r][:0], rs.Spans()...)
			}
		}
		for _, ps := range b.series {
			var totals [repBatch]int
			var sums [repBatch]float64
			summed := ps.unit != nil && ps.finite
			if summed {
				ps.tokenSums(&batch, &totals, &sums)
			}
			if ps.zeroed != nil {
				sums = ps.meanSums(&batch)
			}
			for r := range nb {
				rep, counts := rep0+r, batch[r]
				total, tokenSum := totals[r], sums[r]
				var blockAvg float64
				spans := blocks && ps.unit == nil
				switch {
				case summed:
				case ps.unit != nil:
					// Each value drawn as often as its unit: the size and
					// the sum in one pass over the drawn units' values,
					// added in value order as stat.ResampledMean adds them.
					for _, g := range ps.groups {
						c := counts[g.unit]
						if c == 0 {
							continue
						}
						total += int(c) * int(g.end-g.start)
						if ps.noNaN {
							for _, v := range ps.values[g.start:g.end] {
								tokenSum += float64(c) * v
							}
							continue
						}
						for _, v := range ps.values[g.start:g.end] {
							if !math.IsNaN(v) {
								tokenSum += float64(c) * v
							}
						}
					}
				case spans:
					blockAvg, total = stat.BlockMean(drawn[r], ps.sum, ps.known)
				default:
					total = ps.view.Total(ps.values, counts)
				}
				totals[r] = total
				for _, s := range ps.stats {
					switch {
					case s.stat == StatMean && spans:
						out[s.name][rep] = blockAvg
					case s.stat == StatMean && ps.unit != nil:
						out[s.name][rep] = math.NaN()
						if total != 0 {
							out[s.name][rep] = tokenSum / float64(total)
						}
					case s.stat == StatMean && ps.zeroed != nil:
						// stat.ResampledMean's mean, from meanSums' sum
						out[s.name][rep] = math.NaN()
						if total != 0 {
							out[s.name][rep] = tokenSum / float64(total)
						}
					case s.stat == StatMean:
						out[s.name][rep] = stat.ResampledMean(ps.values, counts, total)
					case nb < repBatch:
						out[s.name][rep] = ps.view.Quantile(counts, total, s.q)
					}
				}
			}
			if nb < repBatch {
				continue
			}
			for _, s := range ps.stats {
				if s.stat != StatMean {
					// A token series' total counts its unknown values
					// too (as its mean's does): sized only without them.
					v := ps.view.QuantileBatch(&batch, &totals, s.q, ps.unit == nil || ps.noNaN)
					copy(out[s.name][rep0:], v[:])
				}
			}
		}
		for i, pr := range b.ratios {
			if finiteRatio[i] {
				v := pr.r.resampledBatch(&batch)
				copy(out[pr.name][rep0:rep0+nb], v[:nb])
				continue
			}
			for r := range nb {
				out[pr.name][rep0+r] = pr.r.resampled(batch[r])
			}
		}
	}
	return out
}

// meanSums is, for each of the batch's resamples, the sum
// stat.ResampledMean divides by the resample's size: Σ count·value over the
// known values, in value order, to the bit. zeroed's 0 for a NaN, and a
// value whose unit was drawn 0 times, add ±0, which leave a sum that
// starts at +0 as it was (as in tokenSums).
func (ps *planSeries) meanSums(batch *[repBatch][]int32) [repBatch]float64 {
	n := len(ps.zeroed)
	c0, c1, c2, c3 := batch[0][:n], batch[1][:n], batch[2][:n], batch[3][:n]
	var s0, s1, s2, s3 float64
	for i, v := range ps.zeroed {
		s0 += float64(c0[i]) * v
		s1 += float64(c1[i]) * v
		s2 += float64(c2[i]) * v
		s3 += float64(c3[i]) * v
	}
	return [repBatch]float64{s0, s1, s2, s3}
}

// repBatch is how many replicates bootPlan.run draws before it reads
// them. A replicate's token sum is one chain of additions, each waiting
// for the one before; four replicates' chains, summed in one pass over
// the values, run side by side.
const repBatch = 4

// tokenSums is a replicate's token count and sum for each of the batch's
// resamples: as run adds them one replicate at a time (the drawn units'
// values in value order, each times its unit's count), to the bit. A unit
// that a replicate did not draw adds 0·v, ±0 for a finite v, which leaves
// the sum as it was: a sum that starts at +0 is never −0 (x + y is −0
// only when both are), and s + ±0 = s for any other s.
func (ps *planSeries) tokenSums(batch *[repBatch][]int32, totals *[repBatch]int, sums *[repBatch]float64) {
	c0, c1, c2, c3 := batch[0], batch[1], batch[2], batch[3]
	var s0, s1, s2, s3 float64
	var t0, t1, t2, t3 int
	for _, g := range ps.groups {
		u := g.unit
		a, b, c, d := c0[u], c1[u], c2[u], c3[u]
		if a|b|c|d == 0 {
			continue
		}
		w := int(g.end - g.start)
		t0 += int(a) * w
		t1 += int(b) * w
		t2 += int(c) * w
		t3 += int(d) * w
		fa, fb, fc, fd := float64(a), float64(b), float64(c), float64(d)
		for _, v := range ps.values[g.start:g.end] {
			s0 += fa * v
			s1 += fb * v
			s2 += fc * v
			s3 += fd * v
		}
	}
	*totals = [repBatch]int{t0, t1, t2, t3}
	*sums = [repBatch]float64{s0, s1, s2, s3}
}

// identicalSides reports whether both sides hold the same runs, value for
// value (a file copied under another name).
func identicalSides(a, b []Run) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		// Runs that differ differ in their samples almost always: a
		// sample that would print differently (below) settles it without
		// marshalling both runs, which took 4% of compare's tests' CPU.
		if !samePrinted(x.TTFT, y.TTFT) || !samePrinted(x.TPOT, y.TPOT) || !samePrinted(x.E2E, y.E2E) || !samePrinted(x.ITL, y.ITL) {
			return false
		}
		x.RunID, y.RunID = "", ""
		bx, err1 := json.Marshal(x)
		by, err2 := json.Marshal(y)
		if err1 != nil || err2 != nil || !bytes.Equal(bx, by) {
			return false
		}
	}
	return true
}

// samePrinted reports whether two series could marshal alike: the same
// length and, value for value, the same float64 (bit for bit, so that −0
// and +0 differ as "-0" and "0" do), or both NaN or infinite, which
// Series.MarshalJSON writes as null. When it says no, the JSON differs.
func samePrinted(a, b Series) bool {
	if len(a) != len(b) {
		return false
	}
	for i, v := range a {
		w := b[i]
		if math.Float64bits(v) != math.Float64bits(w) && !(nonFinite(v) && nonFinite(w)) {
			return false
		}
	}
	return true
}

func nonFinite(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// SameRun reports whether two runs hold identical samples (their IDs
// aside): the same run under two names, such as a copy of the candidate
// in its own baseline history.
func SameRun(a, b Run) bool { return identicalSides([]Run{a}, []Run{b}) }
