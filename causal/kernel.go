package causal

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
)

// The kernel-level view: the mechanism of interference, measured where it
// happens. For every kernel of tenant B on a GPU, its duration against the
// share of its interval during which each other tenant had work on the same
// GPU:
//
//	log d_i = α_{g(i)} + γ_{g(i)}·log size_i + δ_{g(i)}·log tokens_i + Σ_A β_A·overlap_{A,i} + e_i
//
// g(i) is the kernel's identity (name, grid and block): a GEMM of one shape
// is compared with itself. size and tokens are the batch of the engine step
// that launched the kernel (when attribution linked it to one), with a slope
// per identity, so that B's own larger batches are not read as A's doing.
// exp(β_A) − 1 is the stretch of a kernel that A's work overlaps for its
// whole duration, against one that runs alone. A 30 s capture holds tens of
// thousands of kernels, which makes this estimable where the request level
// (a few hundred requests in a few time clusters) is not.
//
// Standard errors are clustered by contiguous time blocks whose length comes
// from the data: the Politis–White (2004, with Patton, Politis & White 2009's
// correction) automatic block length of the regression's score series,
// binned in ScoreBin steps, with the leave-one-block-out jackknife (CV3) and
// Student t on blocks − 1 degrees of freedom.

// KernelOptions configures the kernel-level analysis. Zero fields take the
// defaults.
type KernelOptions struct {
	// Alpha is the false discovery rate and 1 − confidence level; 0.05.
	Alpha float64 `json:"alpha"`
	// Dependent switches BH to Benjamini–Yekutieli.
	Dependent bool `json:"dependent,omitempty"`
	// MinKernels of the target on a GPU, and 10 per parameter; default 200.
	MinKernels int `json:"min_kernels"`
	// MinBlocks is the fewest time blocks for the clustered errors; 10.
	MinBlocks int `json:"min_blocks"`
	// ScoreBin is the resolution of the score series the block length is
	// chosen on; default 10 ms.
	ScoreBin int64 `json:"score_bin_ns"`
	// MinEffectPct is the practical threshold of the stretch, in percent;
	// default 1.
	MinEffectPct float64 `json:"min_effect_pct"`
	// NoCategories skips the per-category stretches.
	NoCategories bool `json:"no_categories,omitempty"`
}

func (o KernelOptions) withDefaults() KernelOptions {
	if o.Alpha <= 0 {
		o.Alpha = 0.05
	}
	if o.MinKernels <= 0 {
		o.MinKernels = 200
	}
	if o.MinBlocks <= 0 {
		o.MinBlocks = 10
	}
	if o.ScoreBin <= 0 {
		o.ScoreBin = 10e6
	}
	if o.MinEffectPct <= 0 {
		o.MinEffectPct = 1
	}
	return o
}

// KernelStep is one engine step as the kernel view needs it: the GPU ops it
// launched (indices into the trace's GPUOps) and the requests in its batch
// (indices into KernelInput.Requests), with its batch size and tokens (0
// unknown).
type KernelStep struct {
	Start, End   int64
	Ops          []int32
	Requests     []int32
	Size, Tokens float64
	// Context is the batch's KV context in tokens: each request's prompt
	// plus the tokens it had generated when the step started (0 unknown).
	// Attention kernels take time in proportion to it.
	Context float64
}

// KernelInput is what KernelAnalyze works on.
type KernelInput struct {
	Trace   *ingest.Trace
	Tenants *TenantMap
	// Steps, optional, link kernels to their engine step (batch controls)
	// and to the requests they served (the request-level impact).
	Steps []KernelStep
	// Requests are the requests the steps index (FromAttribution's, in the
	// attribution's order).
	Requests []Request
	// SlackNs is how far two timestamps of one instant may disagree (the
	// alignment's timestamp slack, align.Options.TimestampSlackNs); 0 takes
	// align.DefaultOptions'. The impact's tie rule uses it (firstTokenTol).
	SlackNs int64
}

// KernelInputFromAttribution links the trace's kernels to attribution's
// steps and requests.
func KernelInputFromAttribution(t *ingest.Trace, tm *TenantMap, att *attribution.Result, reqs []Request) KernelInput {
	in := KernelInput{Trace: t, Tenants: tm, Requests: reqs}
	if att == nil {
		return in
	}
	in.Steps = make([]KernelStep, 0, len(att.Steps))
	for i := range att.Steps {
		s := &att.Steps[i]
		ks := KernelStep{Start: s.Start, End: s.End, Ops: s.Ops, Requests: s.Requests}
		if s.Size > 0 {
			ks.Size = float64(s.Size)
		} else if len(s.Requests) > 0 {
			ks.Size = float64(len(s.Requests))
		}
		if s.Tokens > 0 {
			ks.Tokens = float64(s.Tokens)
		}
		known := len(s.Requests) > 0
		for _, ri := range s.Requests {
			if ri < 0 || int(ri) >= len(att.Requests) || att.Requests[ri].InputTokens < 0 {
				known = false
				break
			}
			r := &att.Requests[ri]
			done, _ := slices.BinarySearch(att.TokenTimes(r), s.Start)
			ks.Context += float64(r.InputTokens + done)
		}
		if !known {
			ks.Context = 0
		}
		in.Steps = append(in.Steps, ks)
	}
	return in
}

// KernelResult is the kernel-level view of one run.
type KernelResult struct {
	Alpha      float64 `json:"alpha"`
	Correction string  `json:"correction"`
	ScoreBinNs int64   `json:"score_bin_ns"`
	// Controls held fixed, besides the kernel identity.
	Controls []string     `json:"controls"`
	Pairs    []KernelPair `json:"pairs"`
	Notes    []string     `json:"notes,omitempty"`
}

// KernelPair is the stretch the source's concurrent work causes to the
// target's kernels on one GPU.
type KernelPair struct {
	Source string `json:"source"`
	Target string `json:"target"`
	// Device is the target's GPU; SourceDevice the source's when the pair is
	// across GPUs (-1 otherwise).
	Device       int16 `json:"device"`
	SourceDevice int16 `json:"source_device"`

	Estimable bool    `json:"estimable"`
	Reason    string  `json:"reason,omitempty"`
	Verdict   Verdict `json:"verdict"`
	// Isolated: a negative control (the source runs on another GPU or MIG
	// instance); its overlap is measured in time only, and a significant
	// effect points to a common driver.
	Isolated bool `json:"isolated"`

	// StretchPct is 100·(exp(β) − 1): how much longer a target kernel takes
	// when the source's work overlaps all of it than when it runs alone,
	// with its (1−α) interval.
	//
	// The interval is the fitted model's widened to the specification band:
	// from the lowest to the highest end of the model's interval and of the
	// alternative specifications' in Sensitivity, so that it also covers the
	// stretch when the interference works in one of the ways those assume
	// (overlap-proportional, or at the scale of the target's steps) rather
	// than the model's. ModelCILowPct and ModelCIHighPct are the model's
	// own.
	StretchPct     Float `json:"stretch_pct"`
	CILowPct       Float `json:"ci_low_pct"`
	CIHighPct      Float `json:"ci_high_pct"`
	ModelCILowPct  Float `json:"model_ci_low_pct"`
	ModelCIHighPct Float `json:"model_ci_high_pct"`
	// Sensitivity is the stretch under each alternative specification.
	Sensitivity []SpecStretch `json:"sensitivity,omitempty"`
	Coef        Float         `json:"coef"`
	SE          Float         `json:"se"`
	SEKind      SEKind        `json:"se_kind,omitempty"`
	// P tests H0: |s| ≤ MinEffectPct (a minimum-effect test: a stretch
	// below the practical threshold is not a link, however many kernels
	// measure it); PZero is the classical p-value of s = 0. Q is P adjusted
	// across all kernel pairs.
	P     Float `json:"p"`
	PZero Float `json:"p_zero"`
	Q     Float `json:"q"`
	// MeanOverlap is the mean share of the target's kernels overlapped by
	// the source's work.
	MeanOverlap Float `json:"mean_overlap"`
	Kernels     int   `json:"kernels"`
	Identities  int   `json:"identities"`
	Blocks      int   `json:"blocks"`
	BlockNs     int64 `json:"block_ns"`
	// perRequest is, per request of KernelInput.Requests, the ms of its
	// latency (TTFT plus decode) the source's overlap cost it (point
	// estimate); nil without steps.
	perRequest []float64
	// ByCategory: the same regression on each kernel category's kernels.
	ByCategory []CategoryStretch `json:"by_category,omitempty"`
	// Impact is the source's share of the target's request latency: the
	// extra time of the target's kernels the source caused, summed over
	// each request's steps (nil without steps).
	Impact []Impact `json:"impact,omitempty"`
}

// Significant reports whether the pair's q-value is below alpha.
func (p *KernelPair) Significant(alpha float64) bool {
	return p.Estimable && !p.Q.IsNaN() && float64(p.Q) < alpha
}

// SpecStretch is the stretch under one alternative specification of the
// kernel model, fitted on the same kernels with the same controls and time
// blocks' rule.
type SpecStretch struct {
	// Spec is SpecRate or SpecStep.
	Spec       string `json:"spec"`
	StretchPct Float  `json:"stretch_pct"`
	CILowPct   Float  `json:"ci_low_pct"`
	CIHighPct  Float  `json:"ci_high_pct"`
}

// The alternative specifications of the kernel model.
const (
	// SpecRate: log d = effects − log(1 − c·x), the stretch s = c/(1 − c) —
	// the time added proportional to the time overlapped.
	SpecRate = "overlap-proportional"
	// SpecStep: the model's form on the share of the kernel's step (from the
	// target's first kernel in it to the end of its last) the source's work
	// covers, in place of the kernel's own: contention at the granularity of
	// the target's steps.
	SpecStep = "step-overlap"
)

// CategoryStretch is the stretch of one kernel category.
type CategoryStretch struct {
	Category   string `json:"category"`
	Kernels    int    `json:"kernels"`
	StretchPct Float  `json:"stretch_pct"`
	CILowPct   Float  `json:"ci_low_pct"`
	CIHighPct  Float  `json:"ci_high_pct"`
	P          Float  `json:"p"`
}

// Impact is the milliseconds of the target's mean latency attributable to
// the source: for each request, the time its steps' kernels lost to the
// source's overlap, d·(1 − exp(−β·overlap)), summed up to the first token
// (TTFT) and after it per output token (TPOT); the interval is from β's.
type Impact struct {
	Metric     Metric `json:"metric"`
	Requests   int    `json:"requests"`
	EffectMs   Float  `json:"effect_ms"`
	CILowMs    Float  `json:"ci_low_ms"`
	CIHighMs   Float  `json:"ci_high_ms"`
	BaselineMs Float  `json:"baseline_ms"`
	// Share is EffectMs / BaselineMs.
	Share Float `json:"share"`
}

// busyKey is one tenant's work on one device.
type busyKey struct {
	tenant string
	device int16
}

// kernelRow is one target kernel in one regression: 32 bytes, as a run's
// rows are the kernel view's largest table. Its step's batch measures are
// read from the step (batchUse.measure), not copied into each of its
// kernels' rows.
type kernelRow struct {
	start, dur int64
	group      int32
	// op is the row's GPU op (an index into the trace's GPUOps) and step
	// its index in KernelInput.Steps (-1 when not linked).
	op, step int32
	cat      attribution.KernelCategory
}

// logDur is the row's response, the log of its duration (computed where it
// is read: a run's rows are the kernel view's largest table).
func (r *kernelRow) logDur() float64 { return math.Log(float64(r.dur)) }

// KernelAnalyze runs the kernel-level view on every target tenant's kernels
// and GPU, against every other tenant (never one sharing a member with the
// target). Pairs across GPUs or MIG instances are negative controls.
func KernelAnalyze(in KernelInput, opts KernelOptions) *KernelResult {
	o := opts.withDefaults()
	res := &KernelResult{Alpha: o.Alpha, Correction: "benjamini-hochberg", ScoreBinNs: o.ScoreBin}
	if o.Dependent {
		res.Correction = "benjamini-yekutieli"
	}
	t, tm := in.Trace, in.Tenants
	if t == nil || tm == nil {
		res.Notes = append(res.Notes, "no kernels or no process mapping")
		return res
	}
	g := groupKernels(t, tm)
	defer g.free()
	if g.unmapped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d kernels of processes with no tenant were left out", g.unmapped))
	}
	instance := tenantInstances(tm)
	cats := attribution.NewCategoryCache(t)
	controlsNoted := false
	// Each op's step (kernelRows) and each op's row (impact) are 4 bytes a
	// GPU op of the trace: they are made for each target where they are
	// read, not held across its fits, the kernel view's peak of memory.
	for _, target := range g.keys {
		sources, isolated, srcDev := g.sourcesOf(target, tm, instance)
		if len(sources) == 0 {
			continue
		}
		stepOf := opSteps(len(t.GPUOps), in.Steps)
		rows, groups, use := kernelRows(t, g.kernels[target], stepOf, in.Steps, cats)
		spill.Free(stepOf)
		if !controlsNoted {
			noteControls(res, use)
			controlsNoted = true
		}
		// Each source's overlap of each row, and of each step (SpecStep's,
		// read through overlapSet: a float a step, not a row).
		xs := make([][]float64, len(sources))
		var shares [][]float64
		if len(in.Steps) > 0 {
			shares = make([][]float64, len(sources))
		}
		for j, s := range sources {
			xs[j] = overlapsOf(rows, g.busyOf(t.GPUOps, s))
			if shares != nil {
				shares[j] = stepShares(rows, g.busyOf(t.GPUOps, s))
			}
		}
		pairs := kernelRegression(target, sources, isolated, srcDev, rows, groups, use, xs, shares, o, !o.NoCategories)
		if len(in.Steps) > 0 {
			// Each op's row (-1: not the target's), for every pair of this
			// target.
			rowOf := spill.Make[int32](len(t.GPUOps))
			for i := range rowOf {
				rowOf[i] = -1
			}
			for r := range rows {
				rowOf[rows[r].op] = int32(r)
			}
			for j := range pairs {
				if pairs[j].Estimable {
					pairs[j].Impact = impact(in, tm, target.tenant, rows, rowOf, xs[j], &pairs[j])
				}
			}
			spill.Free(rowOf)
		}
		res.Pairs = append(res.Pairs, pairs...)
		// The target's rows and overlaps are spill tables (kernelRows,
		// kernelRegression): given back before the next target's.
		freeColumns(xs)
		spill.Free(rows)
	}
	judgeKernels(res, o)
	return res
}

// tenantKernels is each tenant's kernels by device (indices into the
// trace's GPU ops, by start), the devices in tenant then device order, and
// how many kernels belong to no tenant's process. A source's busy time is
// streamed from its lists (busyOf), not held.
type tenantKernels struct {
	kernels  map[busyKey][]int32
	all      []int32 // the table that holds every list
	keys     []busyKey
	unmapped int
}

// groupKernels sorts t's kernels of positive length by tenant and device.
func groupKernels(t *ingest.Trace, tm *TenantMap) tenantKernels {
	g := tenantKernels{kernels: map[busyKey][]int32{}}
	byStart := kernelsByStart(t.GPUOps)
	// Two passes, counting then filling, so that each list is its exact
	// size (appending leaves up to half of a list's capacity unused).
	keep := func(i int) (busyKey, bool) {
		op := &t.GPUOps[i]
		name, ok := tm.ByPid[op.Pid]
		return busyKey{name, op.Device}, ok && op.End > op.Start
	}
	// Both passes read the ops by start, nearly their order in the table:
	// the pages passed are dropped when the process is over its memory
	// budget (spill.Behind).
	count := map[busyKey]int{}
	behind := spill.DropBehind(t.GPUOps)
	for _, i := range byStart {
		behind.Passed(i)
		if k, ok := keep(i); ok {
			count[k]++
		} else if _, mapped := tm.ByPid[t.GPUOps[i].Pid]; !mapped {
			g.unmapped++
		}
	}
	g.keys = make([]busyKey, 0, len(count))
	total := 0
	for k, n := range count {
		g.keys = append(g.keys, k)
		total += n
	}
	slices.SortFunc(g.keys, func(a, b busyKey) int {
		if c := cmp.Compare(a.tenant, b.tenant); c != 0 {
			return c
		}
		return cmp.Compare(a.device, b.device)
	})
	// The lists are parts of one table (spill.Slice), in the keys' order,
	// each capped at its size.
	g.all = spill.Slice[int32](total)
	at := 0
	for _, k := range g.keys {
		g.kernels[k] = g.all[at : at : at+count[k]]
		at += count[k]
	}
	behind = spill.DropBehind(t.GPUOps)
	for _, i := range byStart {
		behind.Passed(i)
		if k, ok := keep(i); ok {
			g.kernels[k] = append(g.kernels[k], int32(i))
		}
	}
	spill.Free(byStart)
	return g
}

// free gives back the lists' table (spill.Free): nothing may read them
// afterwards.
func (g *tenantKernels) free() {
	spill.Free(g.all)
	g.all, g.kernels = nil, nil
}

// has reports whether the tenant has kernels on the device.
func (g *tenantKernels) has(k busyKey) bool { return len(g.kernels[k]) > 0 }

// onAnyDevice reports whether the tenant has kernels at all.
func (g *tenantKernels) onAnyDevice(tenant string) bool {
	for _, k := range g.keys {
		if k.tenant == tenant {
			return true
		}
	}
	return false
}

// sourcesOf is every tenant that can stretch target's kernels: on the same
// device (isolated when the two run in different MIG instances), or,
// isolated by construction, on another device (device -1, its work on all
// devices; srcDev its first device) as a control. Tenants sharing target's
// engine are not sources.
func (g *tenantKernels) sourcesOf(target busyKey, tm *TenantMap, instance map[busyKey]int16) (sources []busyKey, isolated []bool, srcDev []int16) {
	for _, name := range tm.Tenants() {
		if name == target.tenant || tm.shareMembers(name, target.tenant) {
			continue
		}
		k := busyKey{name, target.device}
		if g.has(k) {
			sources = append(sources, k)
			a, b := instance[k], instance[target]
			isolated = append(isolated, a >= 0 && b >= 0 && a != b)
			srcDev = append(srcDev, -1)
			continue
		}
		if !g.onAnyDevice(name) {
			continue
		}
		dev := int16(-1)
		for _, kk := range g.keys {
			if kk.tenant == name {
				dev = kk.device
				break
			}
		}
		sources = append(sources, busyKey{name, -1})
		isolated = append(isolated, true)
		srcDev = append(srcDev, dev)
	}
	return sources, isolated, srcDev
}

// opSteps is the engine step of each of n ops (-1: none), for the batch
// controls: a table (spill.Slice) the caller gives back.
func opSteps(n int, steps []KernelStep) []int32 {
	stepOf := spill.Make[int32](n)
	for i := range stepOf {
		stepOf[i] = -1
	}
	for si := range steps {
		for _, oi := range steps[si].Ops {
			if oi >= 0 && int(oi) < n {
				stepOf[oi] = int32(si)
			}
		}
	}
	return stepOf
}

// noteControls states the controls the kernel rows carry (the first
// target's: every target's rows come from the same steps).
func noteControls(res *KernelResult, use batchUse) {
	res.Controls = append(res.Controls, "kernel identity (name, grid, block, and the launch of that name within its step)")
	if use.size {
		res.Controls = append(res.Controls, "log batch size of the kernel's step, a quadratic per identity")
	}
	if use.tok {
		res.Controls = append(res.Controls, "log batch tokens of the kernel's step, a quadratic per identity")
	}
	if use.ctx {
		res.Controls = append(res.Controls, "log context tokens of the step's batch (prompt plus tokens generated so far), a quadratic per identity")
	}
	if !use.size && !use.tok && !use.ctx {
		res.Notes = append(res.Notes, "kernels are not linked to engine steps: no batch controls (a tenant's own larger batches may read as interference)")
	}
}

// tenantInstances is the MIG instance of each tenant on each device (-1
// unknown), from its processes.
func tenantInstances(tm *TenantMap) map[busyKey]int16 {
	out := map[busyKey]int16{}
	for _, e := range tm.Entries {
		k := busyKey{e.Tenant, e.Device}
		if cur, ok := out[k]; !ok || cur < 0 {
			out[k] = e.Instance
		}
	}
	return out
}

// interval is [start, end) in ns.
type interval struct{ start, end int64 }

// judgeKernels adjusts the p-values of every kernel pair that is not a
// negative control together and reads each: a negative control (a source on
// another GPU or MIG instance) is never interference nor association; its q
// is its p times the number of controls (Bonferroni among them), and when
// one fires, the kernel view's findings are marked confounded.
func judgeKernels(res *KernelResult, o KernelOptions) {
	ps := make([]float64, len(res.Pairs))
	controls := 0
	for i, p := range res.Pairs {
		ps[i] = math.NaN()
		switch {
		case p.Isolated && p.Estimable:
			controls++
		case p.Estimable:
			ps[i] = float64(p.P)
		}
	}
	qs := qValues(ps, o.Dependent)
	fired := 0
	for i := range res.Pairs {
		p := &res.Pairs[i]
		p.Q = Float(qs[i])
		if p.Isolated && p.Estimable {
			p.Q = Float(math.Min(1, float64(p.P)*float64(controls)))
			if p.Significant(o.Alpha) && math.Abs(float64(p.StretchPct)) >= o.MinEffectPct {
				fired++
			}
		}
	}
	for i := range res.Pairs {
		p := &res.Pairs[i]
		switch {
		case !p.Estimable:
			p.Verdict = VerdictNotEstimable
		case p.Isolated && p.Significant(o.Alpha) && math.Abs(float64(p.StretchPct)) >= o.MinEffectPct:
			p.Verdict = VerdictControlFired
		case p.Isolated:
			p.Verdict = VerdictControl
		case !p.Significant(o.Alpha):
			p.Verdict = VerdictNoEvidence
		case p.Coef <= 0:
			p.Verdict = VerdictAssociation
		case float64(p.StretchPct) < o.MinEffectPct:
			p.Verdict = VerdictNegligible
		case fired > 0:
			p.Verdict = VerdictConfounded
		default:
			p.Verdict = VerdictInterference
		}
	}
	if fired > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d negative controls (pairs across GPUs or MIG instances) came out significant and above the practical threshold: a common driver the controls miss moves kernel durations, so the kernel-level findings are marked confounded", fired))
	}
}
