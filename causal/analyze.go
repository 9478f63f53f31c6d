package causal

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Options configures Analyze. The zero value of a field means its default
// (DefaultOptions), so new knobs never change a caller's results.
type Options struct {
	// Metrics to explain; default TTFT and TPOT.
	Metrics []Metric `json:"metrics"`
	// Controls are the target's own covariates held fixed; default
	// AllControls. Set NoControls to run without any (only to show what
	// confounding does).
	Controls   []Control `json:"controls"`
	NoControls bool      `json:"no_controls,omitempty"`
	// ClusterWidth groups requests into time clusters for the robust
	// standard errors (requests that overlap share shocks); 0 (default)
	// adapts it to the run: 20 s on long runs (10 s, the statistics
	// reference's choice, over-rejected true nulls in the simulator: 6.3% at
	// a nominal 5%), shorter when the target's requests span less than
	// 1.2·MinClusters·20 s, never below 1 s nor the 90th percentile of the
	// target's exposure windows (see autoClusterWidth).
	ClusterWidth int64 `json:"cluster_ns"`
	// PeriodEffects adds a fixed effect per period of this length from the
	// first request (statistics reference B.2's hour effects), absorbing
	// slow common drivers such as a diurnal cycle; 0 (default) adds none.
	PeriodEffects int64 `json:"period_ns,omitempty"`
	// NoCalibration leaves the pairs' standard errors as fitted instead of
	// widening them by what the negative controls show (calibrate); only
	// to show what the calibration does.
	NoCalibration bool `json:"no_calibration,omitempty"`
	// MaxTenants bounds the tenants analyzed pair by pair: beyond it only
	// those with the most load are, and the others are merged into one
	// source (boundTenants, Result.Others); default DefaultMaxTenants.
	MaxTenants int `json:"max_tenants"`
	// Step is the change of load effects are quoted for; default 0.1 (ten
	// percentage points) for fractions, else a round number within the
	// smallest tenant's standard deviation of load.
	Step float64 `json:"step"`
	// Alpha is the false discovery rate and 1 − confidence level; 0.05.
	Alpha float64 `json:"alpha"`
	// Dependent switches Benjamini–Hochberg to Benjamini–Yekutieli, valid
	// under any dependence between pairs.
	Dependent bool `json:"dependent,omitempty"`
	// MinRequests and MinClusters: below them a target's regression is not
	// estimable (also when requests < 10 per parameter). Defaults 50 and 10.
	MinRequests int `json:"min_requests"`
	MinClusters int `json:"min_clusters"`
	// MinBins: below it (or 10 per parameter) the lag model is not
	// estimable; default 100 (B.3: HAC needs about 100 bins).
	MinBins int `json:"min_bins"`
	// MinEffectPct is the practical threshold in percent per Step below
	// which a significant effect is "negligible"; default 1.
	MinEffectPct float64 `json:"min_effect_pct"`
	// Lags of the source's load in the lag model; 0 picks enough bins to
	// cover 90% of the target's exposure windows (at most 10).
	Lags int `json:"lags"`
	// Leads of the source's load tested as placebo; default 2.
	Leads int `json:"leads"`
	// MaxAR is the largest autoregressive order of the target's series the
	// lag model considers (chosen by BIC); default 2.
	MaxAR int `json:"max_ar"`
	// NoLagModel skips the lag model.
	NoLagModel bool `json:"no_lag_model,omitempty"`
}

// DefaultOptions returns the defaults every zero field stands for.
func DefaultOptions() Options {
	return Options{
		Metrics:      []Metric{MetricTTFT, MetricTPOT},
		Controls:     slices.Clone(AllControls),
		Alpha:        0.05,
		MinRequests:  50,
		MinClusters:  10,
		MinBins:      100,
		MinEffectPct: 1,
		Leads:        2,
		MaxAR:        2,
	}
}

func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Metrics == nil {
		o.Metrics = d.Metrics
	}
	if o.NoControls {
		o.Controls = nil
	} else if o.Controls == nil {
		o.Controls = d.Controls
	}
	if o.Alpha <= 0 {
		o.Alpha = d.Alpha
	}
	if o.MinRequests <= 0 {
		o.MinRequests = d.MinRequests
	}
	if o.MinClusters <= 0 {
		o.MinClusters = d.MinClusters
	}
	if o.MinBins <= 0 {
		o.MinBins = d.MinBins
	}
	if o.MinEffectPct <= 0 {
		o.MinEffectPct = d.MinEffectPct
	}
	if o.Leads <= 0 {
		o.Leads = d.Leads
	}
	if o.MaxAR <= 0 {
		o.MaxAR = d.MaxAR
	}
	if o.MaxTenants <= 0 {
		o.MaxTenants = DefaultMaxTenants
	}
	return o
}

// Input is what Analyze works on: the requests of every tenant and every
// tenant's binned load on one grid.
type Input struct {
	Requests []Request
	Load     *Load
	// Mapping, when the load came from processes, is echoed in the result.
	Mapping *TenantMap
	// Kernels, when set, adds the kernel-level view (KernelAnalyze) with
	// this result's α, FDR procedure and practical threshold.
	Kernels *KernelInput
}

// Assumptions are printed with every result: the effects are attributable
// interference only under them (statistics reference B.3).
var Assumptions = []string{
	"no unmeasured common driver of the source's load and the target's latency beyond the controls (the target's batch size and prompt and completion lengths) and period effects",
	"the target's controls are not themselves caused by the source's load (they are set by the target's own arrivals)",
	"interference is log-linear in the source's load over the range observed; effects outside it are extrapolation",
	"errors are independent across time clusters (request level) and their autocorrelation dies out within the Newey–West bandwidth (bin level)",
	"clocks of the load and the requests are aligned to well within one bin",
	"the lag model's Granger test shows predictive precedence, not proof; a significant placebo (the source's future load predicting the target) marks an association, not interference",
}

// Analyze estimates, for every ordered pair of tenants (source A, target B)
// and metric, the effect of A's load on B's latency:
//
//  1. request level: for B's requests, log latency on the time-weighted
//     exposure to every other tenant's load during the request, B's controls
//     and optional period effects, by OLS with standard errors clustered by
//     time (leave-one-cluster-out CV3, t with G−1 df);
//  2. bin level: B's mean log latency per bin on A's load now and L bins
//     back, M bins ahead (placebo), B's own past and controls, with
//     Newey–West errors; a Granger test on the lags;
//  3. Benjamini–Hochberg q-values across all pairs and metrics.
//
// It returns an error only for unusable input (no load); too little data
// makes pairs not estimable, with the reason.
func Analyze(in Input, opts Options) (*Result, error) {
	if in.Load == nil {
		return nil, errors.New("tenant analysis: no load series")
	}
	if in.Load.Grid.Width <= 0 || in.Load.Grid.N <= 0 {
		return nil, errors.New("tenant analysis: load has an empty grid")
	}
	if len(in.Load.Values) != len(in.Load.Tenants) {
		return nil, errors.New("tenant analysis: load has a series count different from its tenant count")
	}
	o := opts.withDefaults()
	load := in.Load
	if load.cum == nil {
		load.finish()
	}
	res := &Result{
		Load:        load.Kind,
		LoadUnit:    load.Kind.Unit(),
		BinNs:       load.Grid.Width,
		ClusterNs:   o.ClusterWidth,
		PeriodNs:    o.PeriodEffects,
		Alpha:       o.Alpha,
		Correction:  "benjamini-hochberg",
		Metrics:     o.Metrics,
		Controls:    o.Controls,
		Mapping:     in.Mapping,
		Assumptions: Assumptions,
		Notes:       slices.Clone(load.Notes),
	}
	if o.Dependent {
		res.Correction = "benjamini-yekutieli"
	}
	res.Step = o.Step
	if res.Step <= 0 {
		res.Step = defaultStep(load)
	}

	// The requests are grouped by their Tenant, a number
	// (groupByTenant); the groups are named after.
	groups, group, bad := groupByTenant(in.Requests)
	byTenant := make(map[string][]*Request, len(groups))
	for tn, g := range group {
		byTenant[tn.String()] = groups[g]
	}
	if bad > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d requests without a tenant were left out", bad))
	}
	load, byTenant, res.Others = boundTenants(load, byTenant, o.MaxTenants)
	if res.Others != nil {
		res.Notes = append(res.Notes, fmt.Sprintf("%d tenants: the %d with the most load are analyzed pair by pair (MaxTenants), the other %d (%d requests) are merged into the source %q",
			o.MaxTenants+res.Others.Tenants, o.MaxTenants, res.Others.Tenants, res.Others.Requests, res.Others.Name))
	}
	res.Tenants = summarize(byTenant, load, in.Mapping)
	targets := make([]string, 0, len(byTenant))
	for name := range byTenant {
		targets = append(targets, name)
	}
	slices.Sort(targets)

	var sc regressScratch
	var rsc rowScratch
	largest := 0
	for _, reqs := range byTenant {
		largest = max(largest, len(reqs))
	}
	// The design's columns: the constant, the other tenants' exposures and
	// the controls (period effects, when asked for, grow it further).
	sc.reserve(largest, 1+len(load.Tenants)+len(o.Controls), len(o.Controls), &rsc)
	// Every target's exposures to its sources and its latencies, for
	// each metric, at most (the rows are some of its requests).
	kept := 0
	for _, target := range targets {
		kept += keptFloats(len(byTenant[target]), len(sourcesOf(load, target)))
	}
	sc.kept = newKeptTable(kept * len(o.Metrics))
	for _, m := range o.Metrics {
		for _, target := range targets {
			rows, notes := collectRows(byTenant[target], m, o.Controls, &rsc)
			if load.ObservedTo > load.ObservedFrom {
				// A bin of slack: a request ends a little after the last
				// kernel of its step (detokenizing, streaming).
				from, to := load.ObservedFrom-load.Grid.Width, load.ObservedTo+load.Grid.Width
				in, out := rows.obs[:0], 0
				for _, r := range rows.obs {
					if r.start >= from && r.end <= to {
						in = append(in, r)
					} else {
						out++
					}
				}
				rows.obs = in
				if out > 0 {
					notes = append(notes, fmt.Sprintf("%d requests outside the %.1f s the load was measured in (the GPU capture) were left out", out, float64(load.ObservedTo-load.ObservedFrom)/1e9))
				}
			}
			for _, n := range notes {
				res.Notes = append(res.Notes, fmt.Sprintf("%s %s: %s", target, m, n))
			}
			pairs := requestRegression(target, m, rows, load, o, res.Step, &sc)
			var lagIn *lagInput // the target's, shared by its sources
			for _, p := range pairs {
				if !o.NoLagModel {
					if lagIn == nil {
						lagIn = newLagInput(rows, load, o, &sc)
					}
					p.Lag = lagRegression(p.Source, target, rows, load, o, res.Step, lagIn)
				}
				res.Pairs = append(res.Pairs, *p)
			}
		}
	}
	markIsolation(res)
	judge(res, o)
	// Nothing widens a pair after judge: the exposures and latencies its
	// shareAt reads are given back with the scratch.
	for i := range res.Pairs {
		res.Pairs[i].shareAt = nil
	}
	sc.free()
	if in.Kernels != nil {
		res.Kernel = KernelAnalyze(*in.Kernels, KernelOptions{Alpha: o.Alpha, Dependent: o.Dependent, MinEffectPct: o.MinEffectPct})
	}
	return res, nil
}

// groupByTenant groups the requests by their Tenant, a number, in the order
// of each tenant's first request, and counts those without one (bad);
// group maps a tenant to its group. A tenant's group is looked up only
// where the tenant changes from the request before. Each group is capped
// at its length: an append to one moves it rather than writing into the
// next.
func groupByTenant(reqs []Request) (groups [][]*Request, group map[Tenant]int, bad int) {
	// The groups are counted first, then carved from one array, each to
	// its size: appended request by request, their arrays were regrown
	// to 5 MB allocated for 1.2 MB kept on the 100 MiB OTLP dump of
	// docs/otlp.md.
	var counts []int
	group = map[Tenant]int{}
	var slots tenantSlots // group's numbers, read without hashing
	last, at := Tenant(0), -1
	for i := range reqs {
		r := &reqs[i]
		if r.Tenant == 0 {
			bad++
			continue
		}
		if r.Tenant != last {
			g, ok := slots.get(r.Tenant)
			if !ok {
				g = int32(len(counts))
				slots.set(r.Tenant, g)
				group[r.Tenant] = int(g)
				counts = append(counts, 0)
			}
			last, at = r.Tenant, int(g)
		}
		counts[at]++
	}
	groups = make([][]*Request, len(counts))
	all := make([]*Request, len(reqs)-bad)
	for g, c := range counts {
		groups[g], all = all[:0:c], all[c:]
	}
	last, at = Tenant(0), -1
	for i := range reqs {
		r := &reqs[i]
		if r.Tenant == 0 {
			continue
		}
		if r.Tenant != last {
			g, _ := slots.get(r.Tenant)
			last, at = r.Tenant, int(g)
		}
		groups[at] = append(groups[at], r)
	}
	return groups, group, bad
}

// defaultStep is 0.1 for fractions of capacity; otherwise the largest of 1,
// 2 or 5 × 10^k not above the smallest tenant's standard deviation of load
// (over its busy bins), so that "+step of A" stays within what every source
// was seen to vary by and no effect is an extrapolation.
func defaultStep(l *Load) float64 {
	if l.Kind.fraction() {
		return 0.1
	}
	smallest := math.Inf(1)
	for _, v := range l.Values {
		var sum, sum2, n float64
		for _, x := range v {
			if x > 0 {
				sum += x
				sum2 += x * x
				n++
			}
		}
		if n < 2 {
			continue
		}
		if sd := math.Sqrt(math.Max(0, (sum2-sum*sum/n)/(n-1))); sd > 0 {
			smallest = math.Min(smallest, sd)
		}
	}
	if math.IsInf(smallest, 1) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(smallest)))
	for _, m := range []float64{5, 2, 1} {
		if m*p <= smallest {
			return m * p
		}
	}
	return p
}

// summarize lists every tenant that has requests or load.
func summarize(byTenant map[string][]*Request, load *Load, mapping *TenantMap) []TenantSummary {
	names := slices.Clone(load.Tenants)
	for n := range byTenant {
		names = append(names, n)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	out := make([]TenantSummary, 0, len(names))
	for _, n := range names {
		s := TenantSummary{Name: n, Requests: len(byTenant[n]), MeanLoad: nan, Device: -1, Instance: -1}
		if v := load.Series(n); v != nil {
			sum := 0.0
			for _, x := range v {
				sum += x
			}
			s.MeanLoad = Float(sum / float64(len(v)))
		}
		s.Device, s.Instance = tenantPlacement(byTenant[n], n, mapping)
		out = append(out, s)
	}
	return out
}

// tenantPlacement is the most common device and MIG instance among a
// tenant's requests; either one unknown there is taken from the tenant's
// processes in the mapping. The requests' devices and instances are counted
// in one walk of them (a line of the request table each, read once).
func tenantPlacement(reqs []*Request, name string, mapping *TenantMap) (int16, int16) {
	var devs, insts modeCount
	for _, r := range reqs {
		devs.add(r.Device)
		insts.add(r.Instance)
	}
	dev, inst := devs.mode(), insts.mode()
	if mapping != nil && (dev < 0 || inst < 0) {
		var mdevs, minsts []int16
		for _, e := range mapping.Entries {
			if e.Tenant == name {
				mdevs = append(mdevs, e.Device)
				minsts = append(minsts, e.Instance)
			}
		}
		if dev < 0 {
			dev = mode(len(mdevs), func(i int) int16 { return mdevs[i] })
		}
		if inst < 0 {
			inst = mode(len(minsts), func(i int) int16 { return minsts[i] })
		}
	}
	return dev, inst
}

// mode is the most common non-negative value of at(0) … at(n−1) (the
// smallest on ties), or −1.
func mode(n int, at func(int) int16) int16 {
	var c modeCount
	for i := range n {
		c.add(at(i))
	}
	return c.mode()
}

// modeCount counts values for mode. Devices and instances are small
// numbers, counted in an array.
type modeCount struct {
	small [64]int
	large map[int16]int
}

// add counts v; a negative v is not counted.
func (c *modeCount) add(v int16) {
	switch {
	case v < 0:
	case int(v) < len(c.small):
		c.small[v]++
	default:
		if c.large == nil {
			c.large = map[int16]int{}
		}
		c.large[v]++
	}
}

// mode is the most common value counted (the smallest on ties), or −1.
func (c *modeCount) mode() int16 {
	best, bestN := int16(-1), 0
	for v, n := range c.small { // ascending: a tie keeps the smaller
		if n > bestN {
			best, bestN = int16(v), n
		}
	}
	for v, n := range c.large {
		if n > bestN || (n == bestN && v < best) {
			best, bestN = v, n
		}
	}
	return best
}

// markIsolation flags the pairs whose tenants share no GPU resources: on
// different devices, or on different MIG instances of one device.
func markIsolation(res *Result) {
	place := map[string]TenantSummary{}
	for _, t := range res.Tenants {
		place[t.Name] = t
	}
	for i := range res.Pairs {
		a, b := place[res.Pairs[i].Source], place[res.Pairs[i].Target]
		switch {
		case a.Device >= 0 && b.Device >= 0 && a.Device != b.Device:
			res.Pairs[i].Isolated = true
		case a.Instance >= 0 && b.Instance >= 0 && a.Instance != b.Instance && (a.Device == b.Device || a.Device < 0 || b.Device < 0):
			res.Pairs[i].Isolated = true
		}
	}
}

// MinControls is the fewest estimable negative controls of a metric that
// calibrate its other pairs (calibrate).
const MinControls = 3

// calibrate widens every request-level pair that is not a negative control
// by what its metric's negative controls show. A control (source and target
// on different GPUs or MIG instances) has no effect by construction, so its
// p-value is a draw from the null distribution the test assumes: λ, the mean
// of z² over the controls (z the normal quantile of each two-sided p), is 1
// in expectation when the p-values are calibrated and larger when the time
// clusters leave dependence in, or a driver the controls miss moves every
// tenant (the genomic-control idea of Devlin & Roeder 1999, with the
// controls as the null set). Every other pair of the metric has its SE
// multiplied by √max(1, λ): its interval widens and its p-value grows; never
// the other way, so a lucky set of controls cannot make a pair look surer.
func calibrate(res *Result, o Options) {
	for _, m := range res.Metrics {
		var z2 []float64
		for i := range res.Pairs {
			p := &res.Pairs[i]
			if p.Metric == m && p.Isolated && p.Estimable && !p.P.IsNaN() {
				z := distuv.UnitNormal.Quantile(1 - math.Max(float64(p.P), 1e-300)/2)
				z2 = append(z2, z*z)
			}
		}
		c := ControlCalibration{Metric: m, Controls: len(z2), Lambda: 1}
		if len(z2) >= MinControls {
			c.Calibrated = true
			c.Lambda = Float(math.Max(1, stat.Mean(z2, nil)))
		} else if len(res.Pairs) > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: %d negative controls (pairs across GPUs or MIG instances) estimable, fewer than %d: its p-values are not calibrated on them", m, len(z2), MinControls))
		}
		res.Calibration = append(res.Calibration, c)
		if c.Lambda <= 1 {
			continue
		}
		f := math.Sqrt(float64(c.Lambda))
		for i := range res.Pairs {
			p := &res.Pairs[i]
			if p.Metric == m && !p.Isolated && p.Estimable {
				p.widen(f, o.Alpha)
			}
		}
	}
}

// widen multiplies the pair's SE by f and recomputes what rests on it.
func (p *Pair) widen(f, alpha float64) {
	b, s := float64(p.Coef), float64(p.SE)*f
	crit := tCritical(alpha, p.df)
	lo, hi := b-crit*s, b+crit*s
	p.SE, p.Calibration = Float(s), Float(f)
	p.P = Float(tTwoSided(b/s, p.df))
	p.CILowPct, p.CIHighPct = Float(pct(lo, p.step)), Float(pct(hi, p.step))
	p.CILowMs = Float(float64(p.BaselineMs) * pct(lo, p.step) / 100)
	p.CIHighMs = Float(float64(p.BaselineMs) * pct(hi, p.step) / 100)
	if p.shareAt != nil {
		a, c := p.shareAt(lo), p.shareAt(hi)
		p.ShareLow, p.ShareHigh = Float(math.Min(a, c)), Float(math.Max(a, c))
	}
}

// judge calibrates the pairs on the negative controls, computes q-values
// across every estimable pair and metric that is not a control, and reads
// each pair by the reporting rule.
func judge(res *Result, o Options) {
	if !o.NoCalibration {
		calibrate(res, o)
	}
	ps := make([]float64, len(res.Pairs))
	controls := map[Metric]int{}
	for i, p := range res.Pairs {
		ps[i] = math.NaN()
		switch {
		case p.Isolated && p.Estimable:
			controls[p.Metric]++
		case p.Estimable:
			ps[i] = float64(p.P)
		}
	}
	qs := qValues(ps, o.Dependent)
	// A negative control cannot interfere: when one is significant among
	// its metric's controls (Bonferroni, so that a metric's controls fire
	// by chance with probability at most α) and above the practical
	// threshold, a driver the controls miss moves that metric, and the
	// metric's interference findings are marked confounded.
	fired := map[Metric]bool{}
	for i := range res.Pairs {
		p := &res.Pairs[i]
		p.Q = Float(qs[i])
		if !p.Isolated || !p.Estimable {
			continue
		}
		p.Q = Float(math.Min(1, float64(p.P)*float64(controls[p.Metric])))
		if p.Significant(o.Alpha) && math.Abs(float64(p.EffectPct)) >= o.MinEffectPct {
			res.Notes = append(res.Notes, fmt.Sprintf("negative control fired: %s → %s (%s) run on different GPUs or MIG instances yet p = %.3g (%.3g after Bonferroni over the metric's %d controls), %+.1f%%; suspect a common driver the controls miss",
				p.Source, p.Target, p.Metric, float64(p.P), float64(p.Q), controls[p.Metric], float64(p.EffectPct)))
			fired[p.Metric] = true
		}
	}
	for i := range res.Pairs {
		p := &res.Pairs[i]
		switch {
		case !p.Estimable:
			p.Verdict = VerdictNotEstimable
		case p.Isolated && p.Significant(o.Alpha) && math.Abs(float64(p.EffectPct)) >= o.MinEffectPct:
			p.Verdict = VerdictControlFired
		case p.Isolated:
			p.Verdict = VerdictControl
		case p.Q.IsNaN() || float64(p.Q) >= o.Alpha:
			p.Verdict = VerdictNoEvidence
		case p.Coef <= 0:
			p.Verdict = VerdictAssociation
		case p.Lag != nil && p.Lag.Estimable && float64(p.Lag.PlaceboP) < o.Alpha:
			p.Verdict = VerdictAssociation
		case float64(p.EffectPct) < o.MinEffectPct:
			p.Verdict = VerdictNegligible
		case fired[p.Metric]:
			p.Verdict = VerdictConfounded
		default:
			p.Verdict = VerdictInterference
		}
	}
	for _, m := range res.Metrics {
		if fired[m] {
			res.Notes = append(res.Notes, fmt.Sprintf("%s: a negative control fired, so its interference findings are marked confounded", m))
		}
	}
}
