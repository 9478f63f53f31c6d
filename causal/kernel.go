package causal

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
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
			done, _ := slices.BinarySearch(r.Tokens, s.Start)
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

// kernelRow is one target kernel in one regression.
type kernelRow struct {
	op         int
	start, dur int64
	y          float64
	group      int
	size, tok  float64
	ctx        float64
	cat        attribution.KernelCategory
	// step is the row's index in KernelInput.Steps (-1 when not linked).
	step int32
}

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
	// Each tenant's kernels by device, and the union of its work there.
	byPid := map[uint32]string{}
	for pid, name := range tm.ByPid {
		byPid[pid] = name
	}
	kernels := map[busyKey][]int{}
	order := kernelsByStart(t.GPUOps)
	unmapped := 0
	for _, i := range order {
		op := &t.GPUOps[i]
		name, ok := byPid[op.Pid]
		if !ok {
			unmapped++
			continue
		}
		if op.End <= op.Start {
			continue
		}
		k := busyKey{name, op.Device}
		kernels[k] = append(kernels[k], i)
	}
	if unmapped > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d kernels of processes with no tenant were left out", unmapped))
	}
	keys := make([]busyKey, 0, len(kernels))
	for k := range kernels {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b busyKey) int {
		if c := cmp.Compare(a.tenant, b.tenant); c != 0 {
			return c
		}
		return cmp.Compare(a.device, b.device)
	})
	unions := map[busyKey][]interval{}
	allDevices := map[string][]interval{}
	for _, k := range keys {
		unions[k] = unionOf(t.GPUOps, kernels[k])
	}
	for _, name := range tm.Tenants() {
		var idx []int
		for _, k := range keys {
			if k.tenant == name {
				idx = append(idx, kernels[k]...)
			}
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(t.GPUOps[a].Start, t.GPUOps[b].Start) })
		allDevices[name] = unionOf(t.GPUOps, idx)
	}
	instance := tenantInstances(tm)

	// Step of each op, for the batch controls.
	stepOf := make([]int32, len(t.GPUOps))
	for i := range stepOf {
		stepOf[i] = -1
	}
	for si := range in.Steps {
		for _, oi := range in.Steps[si].Ops {
			if oi >= 0 && int(oi) < len(stepOf) {
				stepOf[oi] = int32(si)
			}
		}
	}
	cats := attribution.NewCategoryCache(t)
	controlsNoted := false
	var rowOf []int32
	if len(in.Steps) > 0 {
		rowOf = make([]int32, len(t.GPUOps))
		for i := range rowOf {
			rowOf[i] = -1
		}
	}

	for _, target := range keys {
		var sources []busyKey
		var isolated []bool
		var srcDev []int16
		for _, name := range tm.Tenants() {
			if name == target.tenant || tm.shareMembers(name, target.tenant) {
				continue
			}
			k := busyKey{name, target.device}
			if _, same := unions[k]; same {
				sources = append(sources, k)
				iso := false
				if a, b := instance[k], instance[target]; a >= 0 && b >= 0 && a != b {
					iso = true
				}
				isolated = append(isolated, iso)
				srcDev = append(srcDev, -1)
				continue
			}
			if len(allDevices[name]) == 0 {
				continue
			}
			dev := int16(-1)
			for _, kk := range keys {
				if kk.tenant == name {
					dev = kk.device
					break
				}
			}
			sources = append(sources, busyKey{name, -1})
			isolated = append(isolated, true)
			srcDev = append(srcDev, dev)
		}
		if len(sources) == 0 {
			continue
		}
		rows, groups, use := kernelRows(t, kernels[target], stepOf, in.Steps, cats)
		if !controlsNoted {
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
			controlsNoted = true
		}
		xs := make([][]float64, len(sources))
		var ys [][]float64
		if len(in.Steps) > 0 {
			ys = make([][]float64, len(sources))
		}
		for j, s := range sources {
			busy := unions[s]
			if s.device < 0 {
				busy = allDevices[s.tenant]
			}
			xs[j] = overlaps(rows, busy)
			if ys != nil {
				ys[j] = stepOverlaps(rows, busy, xs[j])
			}
		}
		pairs := kernelRegression(target, sources, isolated, srcDev, rows, groups, use, xs, ys, o, !o.NoCategories)
		if len(in.Steps) > 0 {
			// Each op's row, for every pair of this target (and back to -1
			// after them: only the target's ops were set).
			for r := range rows {
				rowOf[rows[r].op] = int32(r)
			}
			for j := range pairs {
				if pairs[j].Estimable {
					pairs[j].Impact = impact(in, tm, target.tenant, rows, rowOf, xs[j], &pairs[j])
				}
			}
			for r := range rows {
				rowOf[rows[r].op] = -1
			}
		}
		res.Pairs = append(res.Pairs, pairs...)
	}
	judgeKernels(res, o)
	return res
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

// unionOf merges the intervals of ops idx (sorted by start).
func unionOf(ops []ingest.GPUOp, idx []int) []interval {
	var out []interval
	for _, i := range idx {
		a, b := ops[i].Start, ops[i].End
		if b <= a {
			continue
		}
		if n := len(out); n > 0 && a <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, b)
			continue
		}
		out = append(out, interval{a, b})
	}
	return out
}

// interval is [start, end) in ns.
type interval struct{ start, end int64 }

// overlaps is, for each row (sorted by start), the share of its interval the
// sorted disjoint intervals cover: one forward sweep.
func overlaps(rows []kernelRow, busy []interval) []float64 {
	x := make([]float64, len(rows))
	j := 0
	for r := range rows {
		a, b := rows[r].start, rows[r].start+rows[r].dur
		for j < len(busy) && busy[j].end <= a {
			j++
		}
		var c int64
		for l := j; l < len(busy) && busy[l].start < b; l++ {
			c += max(0, min(b, busy[l].end)-max(a, busy[l].start))
		}
		x[r] = float64(c) / float64(rows[r].dur)
	}
	return x
}

// batchUse says which of the step's batch measures the regression controls
// for.
type batchUse struct{ size, tok, ctx bool }

// identity is a kernel's fixed-effect group: its name, launch shape, and
// which launch of that name in its engine step it is (0 when not linked to
// a step).
type identity struct {
	name  ingest.StrID
	grid  [3]uint32
	block [3]uint16
	nth   int
}

type stepName struct {
	step int32
	name ingest.StrID
}

// kernelRows gathers the target's kernels (sorted by start) with their
// identity and step batch; the batch controls are used when at least 90% of
// the kernels carry them (the others are then left out).
func kernelRows(t *ingest.Trace, idx []int, stepOf []int32, steps []KernelStep, cats *attribution.CategoryCache) ([]kernelRow, int, batchUse) {
	rows := make([]kernelRow, 0, len(idx))
	groupOf := map[identity]int{}
	nth := map[stepName]int{}
	haveSize, haveTok, haveCtx := 0, 0, 0
	for _, i := range idx {
		op := &t.GPUOps[i]
		r := kernelRow{op: i, start: op.Start, dur: op.End - op.Start, cat: cats.Of(op), step: stepOf[i]}
		r.y = math.Log(float64(r.dur))
		if s := stepOf[i]; s >= 0 {
			r.size, r.tok, r.ctx = steps[s].Size, steps[s].Tokens, steps[s].Context
		}
		if r.size > 0 {
			haveSize++
		}
		if r.tok > 0 {
			haveTok++
		}
		if r.ctx > 0 {
			haveCtx++
		}
		id := identity{name: op.Name, grid: op.Grid, block: op.Block}
		if s := stepOf[i]; s >= 0 {
			// The n-th launch of a name in a step is the same layer's op from
			// step to step (one name serves several projections of a layer).
			k := stepName{s, op.Name}
			id.nth = nth[k]
			nth[k]++
		}
		g, ok := groupOf[id]
		if !ok {
			g = len(groupOf)
			groupOf[id] = g
		}
		r.group = g
		rows = append(rows, r)
	}
	enough := func(n int) bool { return len(rows) > 0 && float64(n) >= controlCoverage*float64(len(rows)) }
	use := batchUse{size: enough(haveSize), tok: enough(haveTok), ctx: enough(haveCtx)}
	if use.size || use.tok || use.ctx {
		kept := rows[:0]
		for _, r := range rows {
			if (!use.size || r.size > 0) && (!use.tok || r.tok > 0) && (!use.ctx || r.ctx > 0) {
				kept = append(kept, r)
			}
		}
		rows = kept
	}
	return rows, len(groupOf), use
}

// withinPlan residualizes columns on each identity's own intercept and
// batch slopes (Frisch–Waugh: the pooled regression of the residuals gives
// the β of the model with those effects). The controls do not change across
// the Gauss–Newton steps of a fit, so each group's members and orthonormal
// basis are found once (newWithinPlan) and applied to every step's columns.
// Rows of a group with no residual freedom are left out. The columns are
// laid out group by group (order), so that each group's rows are adjacent
// in memory, and written back in row order.
type withinPlan struct {
	members [][]int
	// basis is each group's orthonormal basis of its controls; nil for a
	// group without rows or without freedom left.
	basis [][][]float64
	// absorbed is the number of parameters the bases take.
	absorbed int
	// keep says which rows are in a group with freedom left; kept counts
	// them and dropped lists the others.
	keep    []bool
	kept    int
	dropped []int
	// order is the kept rows group by group, segs each group's span of it,
	// and dest each entry's index among the kept rows in row order.
	order, dest []int
	segs        []withinSeg
}

// withinSeg is one group's rows in a withinPlan's order.
type withinSeg struct {
	from, to int
	basis    [][]float64
}

// newWithinPlan finds the members and bases of rows' groups. A group whose
// rows in rows are all the rows it has in full (same rows, same order) takes
// its basis from full instead of computing it again; full may be nil.
func newWithinPlan(rows []kernelRow, groups int, use batchUse, full *withinPlan) *withinPlan {
	p := &withinPlan{members: make([][]int, groups), basis: make([][][]float64, groups), keep: make([]bool, len(rows)),
		order: make([]int, 0, len(rows))}
	// Each group's rows in order, as slices of one array (a counting sort).
	count := make([]int, groups+1)
	for r := range rows {
		count[rows[r].group+1]++
	}
	for g := 1; g <= groups; g++ {
		count[g] += count[g-1]
	}
	all := make([]int, len(rows))
	for r := range rows {
		g := rows[r].group
		all[count[g]] = r
		count[g]++
	}
	from := 0
	for g := range p.members {
		if count[g] > from {
			p.members[g] = all[from:count[g]:count[g]]
		}
		from = count[g]
	}
	for g, m := range p.members {
		if len(m) == 0 {
			continue
		}
		var basis [][]float64
		if full != nil && len(full.members[g]) == len(m) {
			basis = full.basis[g]
			if basis == nil {
				continue // no freedom in full: none here either
			}
		} else {
			z := [][]float64{constant(len(m))}
			// A quadratic in each log batch measure: kernel time is affine in
			// the work (a fixed cost plus a per-token one), not a power of it.
			for _, use := range []struct {
				on bool
				of func(kernelRow) float64
			}{{use.size, func(r kernelRow) float64 { return r.size }}, {use.tok, func(r kernelRow) float64 { return r.tok }},
				{use.ctx, func(r kernelRow) float64 { return r.ctx }}} {
				if !use.on {
					continue
				}
				c, c2 := make([]float64, len(m)), make([]float64, len(m))
				for a, r := range m {
					c[a] = math.Log(use.of(rows[r]))
					c2[a] = c[a] * c[a]
				}
				z = append(z, c, c2)
			}
			basis = orthoBasis(z, 1e-8)
			if len(m) <= len(basis) {
				continue // no freedom left: the group says nothing about β
			}
		}
		p.basis[g] = basis
		p.absorbed += len(basis)
		p.segs = append(p.segs, withinSeg{from: len(p.order), to: len(p.order) + len(m), basis: basis})
		p.order = append(p.order, m...)
		for _, r := range m {
			p.keep[r] = true
		}
	}
	pos := make([]int, len(rows))
	for r := range rows {
		if p.keep[r] {
			pos[r] = p.kept
			p.kept++
		} else {
			p.dropped = append(p.dropped, r)
		}
	}
	p.dest = make([]int, len(p.order))
	for i, r := range p.order {
		p.dest[i] = pos[r]
	}
	return p
}

// apply residualizes each of cols (of length kept, in the plan's order) in
// place on the identity effects, and writes it to the matching outs in row
// order.
func (p *withinPlan) apply(cols, outs [][]float64) {
	for _, s := range p.segs {
		v := func(c int) []float64 { return cols[c][s.from:s.to] }
		// Four columns at a time: their products are independent chains
		// of additions the processor overlaps.
		c := 0
		for ; c+4 <= len(cols); c += 4 {
			residualize4(v(c), v(c+1), v(c+2), v(c+3), s.basis)
		}
		if c+2 <= len(cols) {
			residualize2(v(c), v(c+1), s.basis)
			c += 2
		}
		if c < len(cols) {
			residualize(v(c), s.basis)
		}
	}
	for c, out := range outs {
		col := cols[c][:len(p.dest)]
		for i, d := range p.dest {
			out[d] = col[i]
		}
	}
}

// residualize subtracts from v its projection on the orthonormal basis,
// twice for stability (modified Gram–Schmidt): for each pass and each q in
// turn, v −= (v·q) q. Each subtraction runs in the loop that forms the next
// product, which changes the passes over memory but not a single operation
// or its order (the digits are those of the two loops written apart).
func residualize(v []float64, basis [][]float64) {
	n := len(basis)
	if n == 0 {
		return
	}
	d := dot(v, basis[0])
	for s := 0; s < 2*n-1; s++ {
		q, next := basis[s%n][:len(v)], basis[(s+1)%n][:len(v)]
		e := 0.0
		for a := range v {
			v[a] -= d * q[a]
			e += v[a] * next[a]
		}
		d = e
	}
	q := basis[n-1][:len(v)]
	for a := range v {
		v[a] -= d * q[a]
	}
}

// residualize2 is residualize of two vectors of one length at once, each
// with the same operations in the same order as alone.
func residualize2(v0, v1 []float64, basis [][]float64) {
	n := len(basis)
	if n == 0 {
		return
	}
	l := len(v0)
	v1 = v1[:l]
	q := basis[0][:l]
	var d0, d1 float64
	for a := range v0 {
		d0 += v0[a] * q[a]
		d1 += v1[a] * q[a]
	}
	for s := 0; s < 2*n-1; s++ {
		q, next := basis[s%n][:l], basis[(s+1)%n][:l]
		var e0, e1 float64
		for a := range v0 {
			v0[a] -= d0 * q[a]
			e0 += v0[a] * next[a]
			v1[a] -= d1 * q[a]
			e1 += v1[a] * next[a]
		}
		d0, d1 = e0, e1
	}
	q = basis[n-1][:l]
	for a := range v0 {
		v0[a] -= d0 * q[a]
		v1[a] -= d1 * q[a]
	}
}

// residualize4 is residualize of four vectors of one length at once, each
// with the same operations in the same order as alone.
func residualize4(v0, v1, v2, v3 []float64, basis [][]float64) {
	n := len(basis)
	if n == 0 {
		return
	}
	l := len(v0)
	v1, v2, v3 = v1[:l], v2[:l], v3[:l]
	q := basis[0][:l]
	var d0, d1, d2, d3 float64
	for a := range v0 {
		d0 += v0[a] * q[a]
		d1 += v1[a] * q[a]
		d2 += v2[a] * q[a]
		d3 += v3[a] * q[a]
	}
	for s := 0; s < 2*n-1; s++ {
		q, next := basis[s%n][:l], basis[(s+1)%n][:l]
		var e0, e1, e2, e3 float64
		for a := range v0 {
			v0[a] -= d0 * q[a]
			e0 += v0[a] * next[a]
			v1[a] -= d1 * q[a]
			e1 += v1[a] * next[a]
			v2[a] -= d2 * q[a]
			e2 += v2[a] * next[a]
			v3[a] -= d3 * q[a]
			e3 += v3[a] * next[a]
		}
		d0, d1, d2, d3 = e0, e1, e2, e3
	}
	q = basis[n-1][:l]
	for a := range v0 {
		v0[a] -= d0 * q[a]
		v1[a] -= d1 * q[a]
		v2[a] -= d2 * q[a]
		v3[a] -= d3 * q[a]
	}
}

// orthoBasis is an orthonormal basis of the columns' span (modified
// Gram–Schmidt, twice), leaving out columns that add no direction.
func orthoBasis(cols [][]float64, tol float64) [][]float64 {
	basis, _ := gramSchmidt(cols, tol)
	return basis
}

// kernelFit is one pooled within regression.
type kernelFit struct {
	beta, se []float64
	// df is blocks − 1; coefDF each coefficient's degrees of freedom (of
	// the block length its interval was taken from), dfs the same by fit
	// column.
	df          int
	coefDF, dfs []int
	blocks      int
	blockNs     int64
	kind        SEKind
	n           int
	estimable   []bool
	reason      string
}

// fitKernels fits the within-transformed log durations on the overlaps of
// rows sel (nil: all) with block-clustered errors. full is the identity
// effects of all rows (newWithinPlan; nil: found here), whose bases the
// groups sel keeps whole reuse.
func fitKernels(rows []kernelRow, groups int, use batchUse, xs [][]float64, sel []bool, o KernelOptions, full *withinPlan, form stretchForm) kernelFit {
	f := kernelFit{estimable: make([]bool, len(xs))}
	var sub []kernelRow
	var subX [][]float64
	if sel == nil {
		sub, subX = rows, xs
	} else {
		n := 0
		for _, in := range sel {
			if in {
				n++
			}
		}
		sub = make([]kernelRow, 0, n)
		subX = make([][]float64, len(xs))
		for j := range subX {
			subX[j] = make([]float64, 0, n)
		}
		for r := range rows {
			if sel[r] {
				sub = append(sub, rows[r])
				for j := range xs {
					subX[j] = append(subX[j], xs[j][r])
				}
			}
		}
	}
	plan := full
	if sel != nil || plan == nil {
		plan = newWithinPlan(sub, groups, use, full)
	}
	k := len(xs)
	f.n = plan.kept
	if f.n < o.MinKernels || f.n-plan.absorbed < 10*k {
		f.reason = fmt.Sprintf("only %d kernels with freedom left after their identity effects (need %d, and 10 per source)", f.n, o.MinKernels)
		return f
	}
	// idx are the kept rows, in order.
	idx := make([]int, 0, f.n)
	for r := range sub {
		if plan.keep[r] {
			idx = append(idx, r)
		}
	}
	// Gauss–Newton on log d = effects + log(1 + Σ s_j x_j): each step is the
	// within regression of the working response y − log(1 + Σ s x) on
	// x_j / (1 + Σ s x); the first, from s = 0, is the log-linear model.
	// formRate is log d = effects − log(1 − Σ c_j x_j), the same with
	// 1 − Σ c x for 1 + Σ s x (the derivative's sign is absorbed by the
	// working response's: y + log(1 − Σ c x), columns x_j / (1 − Σ c x)).
	stretch := make([]float64, k)
	var (
		fit    *olsFit
		kept   []bool
		colOf  = make([]int, k)
		nonVar = make([]bool, k)
	)
	var weight []float64
	for j := range nonVar {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, v := range subX[j] {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		nonVar[j] = !(hi-lo > 1e-9)
	}
	// The log durations and overlaps of the kept rows in the plan's order,
	// and each step's columns: the working response and each varying
	// source's, in that order (cols), residualized into row order (outs;
	// rewritten each step, fitColumns copies them into its design).
	yp := make([]float64, f.n)
	xp := make([][]float64, k)
	for i, r := range plan.order {
		yp[i] = sub[r].y
	}
	yy := make([]float64, f.n)
	cols, outs := [][]float64{make([]float64, f.n)}, [][]float64{yy}
	var xcols [][]float64
	for j := range xp {
		xp[j] = make([]float64, f.n)
		for i, r := range plan.order {
			xp[j][i] = subX[j][r]
		}
		colOf[j] = -1
		if !nonVar[j] {
			colOf[j] = len(xcols)
			c := make([]float64, f.n)
			xcols = append(xcols, c)
			cols, outs = append(cols, make([]float64, f.n)), append(outs, c)
		}
	}
	if len(xcols) == 0 {
		f.reason = "no source's overlap varies across the target's kernels"
		return f
	}
	var sc olsScratch // the steps' designs: only the last step's fit is kept
	for iter := 0; iter < 30; iter++ {
		// The rows left out still have to keep their duration positive.
		for _, r := range plan.dropped {
			den := 1.0
			for j := range subX {
				den += form.sign() * stretch[j] * subX[j][r]
			}
			if den <= 0 {
				f.reason = "the stretch model diverged (a source's overlap shortens kernels to nothing)"
				return f
			}
		}
		for i := range yp {
			den := 1.0
			for j := range xp {
				den += form.sign() * stretch[j] * xp[j][i]
			}
			if den <= 0 {
				f.reason = "the stretch model diverged (a source's overlap shortens kernels to nothing)"
				return f
			}
			cols[0][i] = yp[i] - form.sign()*math.Log(den)
			for j, c := range colOf {
				if c >= 0 {
					cols[c+1][i] = xp[j][i] / den
				}
			}
		}
		plan.apply(cols, outs)
		if weight != nil {
			for a := range yy {
				yy[a] *= weight[a]
			}
			for _, c := range xcols {
				for a := range c {
					c[a] *= weight[a]
				}
			}
		}
		var err error
		fit, kept, err = fitColumnsReusing(xcols, yy, &sc)
		if err != nil {
			f.reason = fmt.Sprintf("kernel regression failed: %v", err)
			return f
		}
		if weight == nil {
			// Weighted least squares from here on: each identity's rows by
			// the inverse of its residual standard deviation, so that kernels
			// whose time depends on what the trace cannot see (attention on
			// the context length) count for less than ones the identity and
			// batch pin down. The clustered errors stay valid for any weights.
			weight = identityWeights(sub, idx, fit.resid, groups)
		}
		step := 0.0
		next := 0
		for j := 0; j < k; j++ {
			if colOf[j] < 0 || !kept[colOf[j]] {
				continue
			}
			next = 0
			for c := 0; c < colOf[j]; c++ {
				if kept[c] {
					next++
				}
			}
			stretch[j] += fit.beta[next]
			step = math.Max(step, math.Abs(fit.beta[next]))
		}
		if step < 1e-7 && iter > 0 {
			break
		}
	}
	// Time blocks: the block length of the score series over the bins in
	// which the target ran kernels (its idle time holds no scores, and
	// counting it as zeros would hide the dependence of its busy stretches).
	t0 := sub[idx[0]].start
	for _, r := range idx {
		t0 = min(t0, sub[r].start)
	}
	rank := map[int64]int{}
	binOf := make([]int, f.n)
	bins := make([]int64, 0, len(idx))
	for _, r := range idx {
		bins = append(bins, (sub[r].start-t0)/o.ScoreBin)
	}
	sorted := slices.Clone(bins)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	for i, v := range sorted {
		rank[v] = i
	}
	for a := range idx {
		binOf[a] = rank[bins[a]]
	}
	// The block is as long as the longer of the scores' dependence and the
	// regressors': a source's activity comes in stretches (its steps, its
	// bursts), and a slow drift of what the controls miss makes every kernel
	// of one stretch err alike, which the scores show only once the drift
	// is large. Clustering at the scale the "treatment" varies at is the
	// design-based advice of Abadie, Athey, Imbens & Wooldridge (2023).
	blockBins := 1.0
	for j := 0; j < fit.k; j++ {
		score := make([]float64, len(sorted))
		reg := make([]float64, len(sorted))
		count := make([]float64, len(sorted))
		for a := range idx {
			score[binOf[a]] += fit.x.At(a, j) * fit.resid[a]
			reg[binOf[a]] += fit.x.At(a, j)
			count[binOf[a]]++
		}
		for i := range reg {
			reg[i] /= count[i]
		}
		blockBins = math.Max(blockBins, math.Max(blockLength(score), blockLength(reg)))
	}
	b := int(math.Ceil(blockBins))
	f.blockNs = int64(b) * o.ScoreBin
	labels := make([]int, f.n)
	for a := range idx {
		labels[a] = binOf[a] / b
	}
	cov, g, ok := fit.clusterJackknife(labels)
	f.kind = SEClusterJackknife
	if !ok {
		cov, g = fit.cluster(labels)
		f.kind = SEClusterCR1
	}
	f.blocks = g
	if g < o.MinBlocks {
		f.reason = fmt.Sprintf("the errors stay correlated for %s: only %d time blocks (need %d)", fmtDuration(f.blockNs), g, o.MinBlocks)
		return f
	}
	f.df = g - 1
	ses := se(cov)
	// The block length is itself estimated, and too short a block
	// understates the variance: each coefficient keeps the wider of its
	// intervals with blocks of b and of 2b bins (each with its own degrees
	// of freedom). In the simulator b alone covered the truth in 88% of 50
	// runs at a nominal 95%.
	f.dfs = make([]int, len(ses))
	for c := range f.dfs {
		f.dfs[c] = f.df
	}
	labels2 := make([]int, f.n)
	for a := range idx {
		labels2[a] = binOf[a] / (2 * b)
	}
	cov2, g2, ok2 := fit.clusterJackknife(labels2)
	if ok2 && g2 >= 5 {
		ses2 := se(cov2)
		for c := range ses {
			if tCritical(o.Alpha, g2-1)*ses2[c] > tCritical(o.Alpha, f.df)*ses[c] {
				ses[c], f.dfs[c] = ses2[c], g2-1
			}
		}
	}
	f.beta, f.se, f.coefDF = make([]float64, k), make([]float64, k), make([]int, k)
	// fitColumns may have dropped collinear columns: index the kept ones.
	fitIndex := make([]int, len(kept))
	next := 0
	for c := range kept {
		fitIndex[c] = -1
		if kept[c] {
			fitIndex[c] = next
			next++
		}
	}
	for j := 0; j < k; j++ {
		f.beta[j], f.se[j] = math.NaN(), math.NaN()
		if colOf[j] < 0 || fitIndex[colOf[j]] < 0 {
			continue
		}
		c := fitIndex[colOf[j]]
		f.beta[j], f.se[j], f.estimable[j] = stretch[j], ses[c], true
		f.coefDF[j] = f.dfs[c]
	}
	return f
}

// stretchForm is how a kernel's overlap enters its log duration.
type stretchForm int

const (
	// formOverlap: log(1 + s·x), the model the stretch is reported in.
	formOverlap stretchForm = iota
	// formRate: −log(1 − c·x), s = c/(1 − c): the kernel progresses 1 + s
	// times slower while overlapped (processor sharing), so the time added
	// is proportional to the time overlapped. The two agree at x = 0 and
	// x = 1 and differ in between.
	formRate
)

func (f stretchForm) sign() float64 {
	if f == formRate {
		return -1
	}
	return 1
}

// minEffectP is the p-value of H0: |β| ≤ δ against |β| > δ: P(t > (|b| −
// δ)/se) with df degrees of freedom, the size-α test at the boundary of the
// null interval (the far tail is negligible there); δ = 0 gives the
// classical two-sided p-value, and |b| ≤ δ gives 1.
func minEffectP(b, se, delta float64, df int) float64 {
	if math.IsNaN(b) || math.IsNaN(se) || se <= 0 || df <= 0 {
		return math.NaN()
	}
	z := (math.Abs(b) - delta) / se
	switch {
	case delta == 0:
		return tTwoSided(z, df)
	case z <= 0:
		return 1
	}
	return tTwoSided(z, df) / 2
}

// identityWeights is 1/σ_g for each row of idx, σ_g the root mean squared
// residual of its identity (the median σ where a group has too few rows or
// no residual at all).
func identityWeights(sub []kernelRow, idx []int, resid []float64, groups int) []float64 {
	ss := make([]float64, groups)
	n := make([]int, groups)
	for a, r := range idx {
		g := sub[r].group
		ss[g] += resid[a] * resid[a]
		n[g]++
	}
	sigma := make([]float64, groups)
	var all []float64
	for g := range sigma {
		if n[g] >= 5 && ss[g] > 0 {
			sigma[g] = math.Sqrt(ss[g] / float64(n[g]))
			all = append(all, sigma[g])
		}
	}
	med := 1.0
	if len(all) > 0 {
		slices.Sort(all)
		med = all[len(all)/2]
	}
	w := make([]float64, len(idx))
	for a, r := range idx {
		s := sigma[sub[r].group]
		if s == 0 {
			s = med
		}
		w[a] = 1 / s
	}
	return w
}

// kernelRegression fits one target's kernels on one GPU against every
// source's overlap at once.
// ys, when the kernels are linked to steps, are the step-level overlaps of
// SpecStep.
func kernelRegression(target busyKey, sources []busyKey, isolated []bool, srcDev []int16, rows []kernelRow, groups int, use batchUse, xs, ys [][]float64, o KernelOptions, byCat bool) []KernelPair {
	pairs := make([]KernelPair, len(sources))
	for j, s := range sources {
		pairs[j] = KernelPair{
			Source: s.tenant, Target: target.tenant, Device: target.device, SourceDevice: srcDev[j],
			Isolated: isolated[j], Verdict: VerdictNotEstimable,
			StretchPct: nan, CILowPct: nan, CIHighPct: nan, ModelCILowPct: nan, ModelCIHighPct: nan, Coef: nan, SE: nan, P: nan, Q: nan,
			MeanOverlap: nan, Kernels: len(rows), Identities: groups,
		}
		if len(rows) > 0 {
			m := 0.0
			for _, v := range xs[j] {
				m += v
			}
			pairs[j].MeanOverlap = Float(m / float64(len(rows)))
		}
	}
	plan := newWithinPlan(rows, groups, use, nil)
	f := fitKernels(rows, groups, use, xs, nil, o, plan, formOverlap)
	for j := range pairs {
		p := &pairs[j]
		p.Kernels, p.Blocks, p.BlockNs = f.n, f.blocks, f.blockNs
		if f.reason != "" {
			p.Reason = f.reason
			continue
		}
		if !f.estimable[j] {
			p.Reason = fmt.Sprintf("%s's overlap with %s's kernels does not vary or moves in lockstep with another source's", p.Source, p.Target)
			continue
		}
		b, s, df := f.beta[j], f.se[j], f.coefDF[j]
		crit := tCritical(o.Alpha, df)
		p.Estimable = true
		p.Coef, p.SE, p.SEKind = Float(b), Float(s), f.kind
		p.PZero = Float(tTwoSided(b/s, df))
		p.P = Float(minEffectP(b, s, o.MinEffectPct/100, df))
		p.StretchPct, p.CILowPct, p.CIHighPct = Float(100*b), Float(100*(b-crit*s)), Float(100*(b+crit*s))
		p.ModelCILowPct, p.ModelCIHighPct = p.CILowPct, p.CIHighPct
	}
	if f.reason != "" {
		return pairs
	}
	specBand(pairs, rows, groups, use, xs, ys, o, plan)
	if !byCat {
		return pairs
	}
	present := map[attribution.KernelCategory]int{}
	for _, r := range rows {
		present[r.cat]++
	}
	var catList []attribution.KernelCategory
	for c, n := range present {
		if n >= o.MinKernels && n < len(rows) {
			catList = append(catList, c)
		}
	}
	slices.Sort(catList)
	for _, c := range catList {
		sel := make([]bool, len(rows))
		for r := range rows {
			sel[r] = rows[r].cat == c
		}
		fc := fitKernels(rows, groups, use, xs, sel, o, plan, formOverlap)
		if fc.reason != "" {
			continue
		}
		for j := range pairs {
			if !pairs[j].Estimable || !fc.estimable[j] {
				continue
			}
			b, s := fc.beta[j], fc.se[j]
			crit := tCritical(o.Alpha, fc.coefDF[j])
			pairs[j].ByCategory = append(pairs[j].ByCategory, CategoryStretch{
				Category: c.String(), Kernels: fc.n,
				StretchPct: Float(100 * b), CILowPct: Float(100 * (b - crit*s)), CIHighPct: Float(100 * (b + crit*s)),
				P: Float(tTwoSided(b/s, fc.coefDF[j])),
			})
		}
	}
	return pairs
}

// specBand fits the alternative specifications (SpecRate on the kernels'
// overlaps xs, SpecStep on their steps' ys when there are steps) and widens
// each estimable pair's interval to the band of all of them. The model's
// interval is valid only if the interference works the way the model says;
// in the simulator, where it can work otherwise, the model's point estimate
// stays within a few points of the truth but its interval, which narrows as
// the run grows, misses it (docs/tenants.md).
func specBand(pairs []KernelPair, rows []kernelRow, groups int, use batchUse, xs, ys [][]float64, o KernelOptions, plan *withinPlan) {
	type spec struct {
		name string
		xs   [][]float64
		form stretchForm
	}
	specs := []spec{{SpecRate, xs, formRate}}
	if ys != nil {
		specs = append(specs, spec{SpecStep, ys, formOverlap})
	}
	for _, sp := range specs {
		f := fitKernels(rows, groups, use, sp.xs, nil, o, plan, sp.form)
		if f.reason != "" {
			continue
		}
		for j := range pairs {
			p := &pairs[j]
			if !p.Estimable || !f.estimable[j] {
				continue
			}
			b, se := f.beta[j], f.se[j]
			crit := tCritical(o.Alpha, f.coefDF[j])
			lo, hi := b-crit*se, b+crit*se
			if sp.form == formRate {
				// s = c/(1 − c) is increasing in c below 1; at or past 1 a
				// fully overlapped kernel would never finish: no band.
				if hi >= 1 {
					continue
				}
				b, lo, hi = b/(1-b), lo/(1-lo), hi/(1-hi)
			}
			p.Sensitivity = append(p.Sensitivity, SpecStretch{Spec: sp.name, StretchPct: Float(100 * b), CILowPct: Float(100 * lo), CIHighPct: Float(100 * hi)})
			p.CILowPct = Float(math.Min(float64(p.CILowPct), 100*lo))
			p.CIHighPct = Float(math.Max(float64(p.CIHighPct), 100*hi))
		}
	}
}

// stepOverlaps is, for each row (sorted by start), the share of its step's
// window — from the first of the rows in the step to the end of the last —
// that the sorted disjoint busy intervals cover; a row with no step keeps
// its own overlap x.
func stepOverlaps(rows []kernelRow, busy []interval, x []float64) []float64 {
	win := map[int32]interval{}
	for _, r := range rows {
		if r.step < 0 {
			continue
		}
		w, ok := win[r.step]
		if !ok {
			w = interval{r.start, r.start + r.dur}
		}
		w.start, w.end = min(w.start, r.start), max(w.end, r.start+r.dur)
		win[r.step] = w
	}
	share := make(map[int32]float64, len(win))
	for s, w := range win {
		share[s] = float64(busyWithin(busy, w.start, w.end)) / float64(w.end-w.start)
	}
	y := make([]float64, len(rows))
	for i, r := range rows {
		y[i] = x[i]
		if r.step >= 0 {
			y[i] = share[r.step]
		}
	}
	return y
}

// busyWithin is how much of [a, b) the sorted disjoint intervals cover.
func busyWithin(busy []interval, a, b int64) int64 {
	j, _ := slices.BinarySearchFunc(busy, a, func(v interval, t int64) int { return cmp.Compare(v.end, t+1) })
	var c int64
	for ; j < len(busy) && busy[j].start < b; j++ {
		c += max(0, min(b, busy[j].end)-max(a, busy[j].start))
	}
	return c
}

// blockLength is the Politis & White (2004) automatic block length for the
// circular block bootstrap, with the correction of Patton, Politis & White
// (2009): b = (2 Ĝ² / D̂)^{1/3} n^{1/3}, D̂ = (4/3) ĝ(0)², from the flat-top
// lag window over 2m̂ lags, m̂ the first lag after which K_N = max(5,
// √log10 n) autocorrelations in a row are insignificant (|ρ| < 2√(log10 n /
// n)). It is at least 1 and at most min(3√n, n/3).
func blockLength(x []float64) float64 {
	n := len(x)
	if n < 8 {
		return 1
	}
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	c := make([]float64, n)
	for i, v := range x {
		c[i] = v - mean
	}
	kn := int(math.Max(5, math.Ceil(math.Sqrt(math.Log10(float64(n))))))
	bmax := math.Ceil(math.Min(3*math.Sqrt(float64(n)), float64(n)/3))
	maxLag := min(n-1, int(bmax)+kn)
	acov := make([]float64, maxLag+1)
	for k := 0; k <= maxLag; k++ {
		s := 0.0
		for i := k; i < n; i++ {
			s += c[i] * c[i-k]
		}
		acov[k] = s / float64(n)
	}
	if acov[0] <= 0 {
		return 1
	}
	thresh := 2 * math.Sqrt(math.Log10(float64(n))/float64(n))
	mhat := -1
	for m := 0; m+kn <= maxLag; m++ {
		ok := true
		for k := 1; k <= kn; k++ {
			if math.Abs(acov[m+k]/acov[0]) >= thresh {
				ok = false
				break
			}
		}
		if ok {
			mhat = m
			break
		}
	}
	if mhat < 0 {
		mhat = maxLag - kn
	}
	M := min(2*mhat, maxLag)
	lambda := func(t float64) float64 {
		t = math.Abs(t)
		switch {
		case t <= 0.5:
			return 1
		case t <= 1:
			return 2 * (1 - t)
		}
		return 0
	}
	g, g0 := 0.0, acov[0]
	for k := 1; k <= M; k++ {
		w := lambda(float64(k) / float64(M))
		g += 2 * w * float64(k) * acov[k]
		g0 += 2 * w * acov[k]
	}
	d := 4.0 / 3 * g0 * g0
	if d <= 0 || M == 0 {
		return 1
	}
	b := math.Cbrt(2*g*g/d) * math.Cbrt(float64(n))
	return math.Min(math.Max(1, b), bmax)
}

// impact is the source's share of the target's request latency, for the
// requests of the target's tenants that the target's steps served. rowOf is
// each op's index in rows (-1 for ops not in rows).
func impact(in KernelInput, tm *TenantMap, target string, rows []kernelRow, rowOf []int32, x []float64, p *KernelPair) []Impact {
	if math.IsNaN(float64(p.CILowPct)) || math.IsNaN(float64(p.CIHighPct)) {
		return nil
	}
	// The point estimate and the interval's ends.
	coefs := [3]float64{float64(p.Coef), float64(p.CILowPct) / 100, float64(p.CIHighPct) / 100}
	member := map[string]bool{}
	for _, m := range tm.Members(target) {
		member[m] = true
	}
	n := len(in.Requests)
	// sums[phase][coef][request]: phase 0 up to the first token, 1 after.
	var sums [2][3][]float64
	for ph := range sums {
		for b := range sums[ph] {
			sums[ph][b] = make([]float64, n)
		}
	}
	for si := range in.Steps {
		s := &in.Steps[si]
		var extra [3]float64
		any := false
		for _, oi := range s.Ops {
			if oi < 0 || int(oi) >= len(rowOf) || rowOf[oi] < 0 {
				continue
			}
			r := rowOf[oi]
			any = true
			for b, c := range coefs {
				// The kernel took base·(1 + s·x): s·x/(1 + s·x) of it is
				// the source's.
				extra[b] += float64(rows[r].dur) * c * x[r] / (1 + c*x[r])
			}
		}
		if !any {
			continue
		}
		for _, ri := range s.Requests {
			if ri < 0 || int(ri) >= n {
				continue
			}
			q := &in.Requests[ri]
			if !member[q.Tenant] || q.TTFT <= 0 {
				continue
			}
			ph := 1
			if s.End <= q.Arrival+q.TTFT+firstTokenTol(s, in.SlackNs) {
				ph = 0
			}
			for b := range coefs {
				sums[ph][b][ri] += extra[b]
			}
		}
	}
	pr := make([]float64, n)
	for ri := range pr {
		pr[ri] = (sums[0][0][ri] + sums[1][0][ri]) / 1e6
	}
	p.perRequest = pr
	var out []Impact
	for ph, m := range []Metric{MetricTTFT, MetricTPOT} {
		var tot [3]float64
		var base float64
		count := 0
		for ri := range in.Requests {
			q := &in.Requests[ri]
			if !member[q.Tenant] {
				continue
			}
			lat, ok := q.Latency(m)
			if !ok {
				continue
			}
			div := 1.0
			if m == MetricTPOT {
				div = float64(q.OutputTokens - 1)
			}
			for b := range coefs {
				tot[b] += sums[ph][b][ri] / div
			}
			base += float64(lat)
			count++
		}
		if count == 0 {
			continue
		}
		c := float64(count) * 1e6
		lo, hi := math.Min(tot[1], tot[2]), math.Max(tot[1], tot[2])
		out = append(out, Impact{
			Metric: m, Requests: count, EffectMs: Float(tot[0] / c), CILowMs: Float(lo / c), CIHighMs: Float(hi / c),
			BaselineMs: Float(base / c), Share: Float(tot[0] / base),
		})
	}
	return out
}

// firstTokenTol is how far after a request's first token a step of its
// batch may end and still count as up to the first token (TTFT) rather than
// after it (TPOT). The step that produces the first token ends at the
// token's own instant, and the two are written by different clocks (the
// step span or NVTX range, the request's token event), so with no tolerance
// jitter of microseconds puts about half of those steps after the token.
//
// The tie rule: a step ending no later than the token plus the larger of the
// alignment's timestamp slack and half the step's own duration counts as up
// to the first token. Half the step's duration is safe: the engine runs its
// steps one after another, so the step after the one that produced the
// token starts when that one ends and ends a whole step's length after the
// token; only jitter of more than half a step could mistake one for the
// other.
func firstTokenTol(s *KernelStep, slackNs int64) int64 {
	if slackNs <= 0 {
		slackNs = align.DefaultOptions().TimestampSlackNs
	}
	if s.Start > 0 && s.End > s.Start {
		return max(slackNs, (s.End-s.Start)/2)
	}
	return slackNs
}

// RequestCost returns, per source tenant, the milliseconds each request
// (KernelInput.Requests' order, n of them) lost to that source's concurrent
// work on its kernels: the point estimate of the Impact of every pair that
// is not a negative control, summed over targets. Sources without such a
// pair are absent. diff compares these series as tenant.NAME
// (compare.TenantSeries).
func (r *KernelResult) RequestCost(n int) map[string][]float64 {
	if r == nil {
		return nil
	}
	out := map[string][]float64{}
	for i := range r.Pairs {
		p := &r.Pairs[i]
		if p.Isolated || !p.Estimable || len(p.perRequest) != n {
			continue
		}
		s := out[p.Source]
		if s == nil {
			s = make([]float64, n)
			out[p.Source] = s
		}
		for j, v := range p.perRequest {
			s[j] += v
		}
	}
	return out
}

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
