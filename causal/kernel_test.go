package causal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
)

// kernelTrace builds kernels of tenant B (pid 2, GPU 0) that A's work
// (pid 1, GPU 0) stretches by stretch × the overlapped share, and of D (pid
// 4, GPU 1) that nothing touches; C (pid 3, GPU 0) runs without effect.
func kernelTrace(seed uint64, stretch float64) (*ingest.Trace, *TenantMap) {
	rng := rand.New(rand.NewPCG(seed, 7))
	t := ingest.New()
	names := []ingest.StrID{t.Strings.Intern("gemm_kernel"), t.Strings.Intern("flash_fwd_kernel")}
	var aBusy, cBusy []interval
	busy := func(pid uint32, dev int16, out *[]interval) {
		for at := int64(0); at < 20e9; {
			on := int64(rng.ExpFloat64() * 50e6)
			k := ingest.GPUOp{Start: at, End: at + on, Pid: pid, Device: dev, Kind: ingest.OpKernel, Name: names[0], Shape: t.InternShape(ingest.OpShape{Grid: [3]uint32{64, 1, 1}})}
			t.GPUOps = append(t.GPUOps, k)
			*out = append(*out, interval{k.Start, k.End})
			at += on + int64(rng.ExpFloat64()*80e6)
		}
	}
	busy(1, 0, &aBusy)
	busy(3, 0, &cBusy)
	var dBusy []interval
	busy(4, 1, &dBusy)
	for at := int64(0); at < 20e9; {
		id := rng.IntN(2)
		base := []float64{200e3, 500e3}[id] * (0.95 + 0.1*rng.Float64())
		d := base
		for it := 0; it < 6; it++ {
			d = base * (1 + stretch*float64(coveredBy(aBusy, at, at+int64(d)))/d)
		}
		t.GPUOps = append(t.GPUOps, ingest.GPUOp{Start: at, End: at + int64(d), Pid: 2, Device: 0, Kind: ingest.OpKernel, Name: names[id], Shape: t.InternShape(ingest.OpShape{Grid: [3]uint32{uint32(32 * (id + 1)), 1, 1}})})
		at += int64(d) + 20e3
	}
	slices.SortFunc(t.GPUOps, func(a, b ingest.GPUOp) int { return int(a.Start - b.Start) })
	tm := NewTenantMap(map[uint32]string{1: "A", 2: "B", 3: "C", 4: "D"})
	for i := range tm.Entries {
		tm.Entries[i].Device = 0
		if tm.Entries[i].Pid == 4 {
			tm.Entries[i].Device = 1
		}
	}
	return t, tm
}

func coveredBy(iv []interval, a, b int64) int64 {
	var c int64
	for _, v := range iv {
		c += max(0, min(b, v.end)-max(a, v.start))
	}
	return c
}

func TestKernelAnalyzeRecoversStretch(t *testing.T) {
	tr, tm := kernelTrace(1, 0.3)
	res := KernelAnalyze(KernelInput{Trace: tr, Tenants: tm}, KernelOptions{})
	find := func(src, dst string) *KernelPair {
		for i := range res.Pairs {
			if res.Pairs[i].Source == src && res.Pairs[i].Target == dst {
				return &res.Pairs[i]
			}
		}
		return nil
	}
	ab := find("A", "B")
	if ab == nil || !ab.Estimable {
		t.Fatalf("A → B missing or not estimable: %+v (notes %v)", ab, res.Notes)
	}
	if math.Abs(float64(ab.StretchPct)-30) > 1.5 || float64(ab.CILowPct) > 30 || float64(ab.CIHighPct) < 30 || ab.Verdict != VerdictInterference {
		t.Errorf("A → B stretch %.2f%% [%.2f, %.2f] %s, want 30%% inside", float64(ab.StretchPct), float64(ab.CILowPct), float64(ab.CIHighPct), ab.Verdict)
	}
	if ab.Identities != 2 || ab.Blocks < 10 || ab.BlockNs < 10e6 {
		t.Errorf("identities %d, blocks %d of %d ns", ab.Identities, ab.Blocks, ab.BlockNs)
	}
	if cb := find("C", "B"); cb == nil || cb.Significant(0.05) || cb.Isolated {
		t.Errorf("C → B: %+v", cb)
	}
	db := find("D", "B")
	if db == nil || !db.Isolated || db.SourceDevice != 1 || db.Verdict == VerdictInterference {
		t.Errorf("D → B must be a negative control across GPUs: %+v", db)
	}
	for _, p := range res.Pairs {
		if p.Source == p.Target {
			t.Errorf("self-pair %s", p.Source)
		}
	}
	if !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.Contains(n, "not linked to engine steps") }) {
		t.Errorf("notes %q", res.Notes)
	}

	// Without interference nothing is found.
	tr, tm = kernelTrace(2, 0)
	res = KernelAnalyze(KernelInput{Trace: tr, Tenants: tm}, KernelOptions{})
	for _, p := range res.Pairs {
		if p.Significant(0.05) {
			t.Errorf("null run: %s → %s %.2f%% q %.3g", p.Source, p.Target, float64(p.StretchPct), float64(p.Q))
		}
	}
}

func TestOverlapsMatchBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var busy []interval
	for at := int64(0); at < 1e6; {
		d := int64(rng.IntN(5000) + 1)
		busy = append(busy, interval{at, at + d})
		at += d + int64(rng.IntN(5000)+1)
	}
	var rows []kernelRow
	for at := int64(0); at < 1e6; at += int64(rng.IntN(3000)) {
		rows = append(rows, kernelRow{start: at, dur: int64(rng.IntN(8000) + 1)})
	}
	got := overlaps(rows, busy)
	for i, r := range rows {
		want := float64(coveredBy(busy, r.start, r.start+r.dur)) / float64(r.dur)
		if math.Abs(got[i]-want) > 1e-12 {
			t.Fatalf("row %d: overlap %g, want %g", i, got[i], want)
		}
	}
}

func TestBlockLength(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	iid := make([]float64, 2000)
	ar := make([]float64, 2000)
	for i := range iid {
		iid[i] = rng.NormFloat64()
		if i > 0 {
			ar[i] = 0.95*ar[i-1] + rng.NormFloat64()
		}
	}
	if b := blockLength(iid); b > 3 {
		t.Errorf("independent series: block length %.1f, want about 1", b)
	}
	if b := blockLength(ar); b < 15 {
		t.Errorf("AR(1) with ρ = 0.95: block length %.1f, want long (tens)", b)
	}
	if b := blockLength([]float64{1, 2, 3}); b != 1 {
		t.Errorf("tiny series: %g", b)
	}
}

func TestMinEffectP(t *testing.T) {
	if p := minEffectP(0.005, 0.001, 0.01, 100); p != 1 {
		t.Errorf("inside the null interval: p %g, want 1", p)
	}
	if p := minEffectP(0.02, 0.001, 0.01, 100); p > 1e-10 {
		t.Errorf("10 se above the threshold: p %g", p)
	}
	if p, q := minEffectP(-0.3, 0.1, 0, 50), tTwoSided(3, 50); math.Abs(p-q) > 1e-15 {
		t.Errorf("δ = 0 is the classical test: %g vs %g", p, q)
	}
}

// A process that serves two tenants' requests is one shared source, named
// so; it is never paired with either of its tenants.
func TestServedTenantsAndSharedSource(t *testing.T) {
	b := newTraceBuilder()
	b.resource(map[string]ingest.Value{"process.pid": ingest.IntValue(10), "service.name": b.str("vllm")})
	b.resource(map[string]ingest.Value{"process.pid": ingest.IntValue(20), "service.name": b.str("vllm-acme")})
	b.kernels(10, 20)
	tr := b.t
	span := func(res int32) int {
		tr.Spans = append(tr.Spans, ingest.Span{Resource: res, Scope: -1})
		return len(tr.Spans) - 1
	}
	// Repeated and interleaved, as the requests of a run are: each pid's
	// tenants are listed once.
	att := &attribution.Result{}
	for _, q := range []struct {
		tenant string
		span   int
	}{{"search", span(0)}, {"chat", span(0)}, {"search", span(0)}, {"acme", span(1)}, {"chat", span(0)}, {"acme", span(1)}} {
		att.AddRequest(attribution.Request{Span: q.span}, attribution.Labels{Tenant: q.tenant})
	}
	served := ServedTenants(tr, att)
	if !slices.Equal(served[10], []string{"chat", "search"}) || !slices.Equal(served[20], []string{"acme"}) {
		t.Fatalf("served %v", served)
	}
	tm := MapTenants(tr, MapOptions{Served: served})
	if got := tm.ByPid[10]; got != "chat+search (shared)" {
		t.Errorf("pid 10 is %q", got)
	}
	if got := tm.ByPid[20]; got != "acme" {
		t.Errorf("pid 20 is %q, want the requests' tenant, not service.name", got)
	}
	if m := tm.Members("chat+search (shared)"); !slices.Equal(m, []string{"chat", "search"}) {
		t.Errorf("members %v", m)
	}
	if !tm.shareMembers("chat+search (shared)", "search") || tm.shareMembers("acme", "search") {
		t.Error("shareMembers")
	}
	if len(tm.Notes) != 0 {
		t.Errorf("a resource's service.name is no conflict with the requests: %q", tm.Notes)
	}
	// The request level never pairs the shared source with its tenants.
	l := newLoad(LoadGPUBusy, Grid{Width: 1e9, N: 4}, tm.Tenants())
	l.setMembers(tm)
	var reqs []Request
	for i := 0; i < 60; i++ {
		for _, tenant := range []string{"search", "acme"} {
			reqs = append(reqs, Request{Tenant: TenantOf(tenant), Arrival: int64(i) * 5e7, End: int64(i)*5e7 + 4e8, TTFT: 1e8, TPOT: 1e7, OutputTokens: 20, InputTokens: 100, BatchSize: 4})
		}
	}
	res, err := Analyze(Input{Requests: reqs, Load: l, Mapping: tm}, Options{NoLagModel: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Pairs {
		if p.Source == p.Target || slices.Contains(tm.Members(p.Source), p.Target) {
			t.Errorf("self-pair %s → %s", p.Source, p.Target)
		}
	}
	if res.Pair("chat+search (shared)", "acme", MetricTTFT) == nil {
		t.Error("the shared source must still be paired with other tenants")
	}
}

func TestAutoClusterWidth(t *testing.T) {
	rows := func(span, window int64) []obs {
		var out []obs
		for at := int64(0); at <= span; at += 1e8 {
			out = append(out, obs{start: at, end: at + window})
		}
		return out
	}
	for _, tc := range []struct {
		span, window, want int64
	}{
		{900e9, 1e9, 20e9}, // long run: the validated 20 s
		{30e9, 1e8, 3e9},   // 30 s: 2.5 s clusters, to the nearest second
		{180e9, 5e8, 15e9}, // 180 s: 15 s
		{100e9, 1e8, 8e9},  // 100 s: 8.33 s, to the nearest second
		{30e9, 4.5e9, 5e9}, // windows longer than the span allows: the 90th percentile
		{4e9, 1e8, 1e9},    // never below 1 s
	} {
		if got := autoClusterWidth(rows(tc.span, tc.window), 10); got != tc.want {
			t.Errorf("span %d s, windows %d ms: width %d, want %d", tc.span/1e9, tc.window/1e6, got, tc.want)
		}
	}
}

// batchRow is a row of group g alone in a step of its own, appended to
// steps, with the given batch size, tokens and context.
func batchRow(steps *[]KernelStep, g int, size, tok, ctx float64) kernelRow {
	*steps = append(*steps, KernelStep{Size: size, Tokens: tok, Context: ctx})
	return kernelRow{group: int32(g), step: int32(len(*steps) - 1)}
}

// referenceWithin is the identity residualization written plainly (the
// form withinPlan replaced): each group's basis found anew, each column
// gathered, projected out twice with a product loop and a subtraction loop
// per basis vector, and scattered back to the kept rows.
func referenceWithin(rows []kernelRow, groups int, use batchUse, cols [][]float64) (out [][]float64, absorbed int, kept int) {
	members := make([][]int, groups)
	for r := range rows {
		members[rows[r].group] = append(members[rows[r].group], r)
	}
	full := make([][]float64, len(cols))
	for j := range full {
		full[j] = make([]float64, len(rows))
	}
	keep := make([]bool, len(rows))
	for _, m := range members {
		if len(m) == 0 {
			continue
		}
		z := [][]float64{constant(len(m))}
		for _, u := range []struct {
			on bool
			of func(kernelRow) float64
		}{{use.size, func(r kernelRow) float64 { return use.measure(&r, 0) }}, {use.tok, func(r kernelRow) float64 { return use.measure(&r, 1) }},
			{use.ctx, func(r kernelRow) float64 { return use.measure(&r, 2) }}} {
			if !u.on {
				continue
			}
			c, c2 := make([]float64, len(m)), make([]float64, len(m))
			for a, r := range m {
				c[a] = math.Log(u.of(rows[r]))
				c2[a] = c[a] * c[a]
			}
			z = append(z, c, c2)
		}
		basis := orthoBasis(z, 1e-8)
		if len(m) <= len(basis) {
			continue
		}
		absorbed += len(basis)
		v := make([]float64, len(m))
		for j, col := range cols {
			for a, r := range m {
				v[a] = col[r]
			}
			for pass := 0; pass < 2; pass++ {
				for _, q := range basis {
					d := dot(v, q)
					for a := range v {
						v[a] -= float64(d * q[a])
					}
				}
			}
			for a, r := range m {
				full[j][r] = v[a]
			}
		}
		for _, r := range m {
			keep[r] = true
		}
	}
	out = make([][]float64, len(cols))
	for r := range rows {
		if keep[r] {
			kept++
			for j := range cols {
				out[j] = append(out[j], full[j][r])
			}
		}
	}
	return out, absorbed, kept
}

// The within plan (bases found once, columns laid out group by group, up to
// four residualized at a time with fused loops, and a subset's plan reusing
// the bases of the groups it keeps whole) gives the plain residualization's
// residuals digit for digit, for 1 to 7 columns, with and without batch
// controls, groups too small to keep, and subsets that keep some groups
// whole and split others.
func TestWithinPlanMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for _, use := range []batchUse{{}, {size: true}, {size: true, tok: true, ctx: true}} {
		const groups = 40
		var rows []kernelRow
		var steps []KernelStep
		for r := 0; r < 3000; r++ {
			g := rng.IntN(groups)
			if g%9 == 0 && rng.IntN(20) > 0 {
				continue // a few small groups, some without freedom left
			}
			rows = append(rows, batchRow(&steps, g, float64(1+rng.IntN(64)), float64(1+rng.IntN(4096)), float64(1+rng.IntN(1<<16))))
		}
		use.steps = steps
		full := newWithinPlan(rows, groups, use, nil)
		// A subset: whole groups (even ones) and a share of the odd ones'
		// rows.
		var sub []kernelRow
		for _, r := range rows {
			if r.group%2 == 0 || rng.IntN(3) == 0 {
				sub = append(sub, r)
			}
		}
		for _, tc := range []struct {
			name string
			rows []kernelRow
			plan *withinPlan
		}{{"all rows", rows, full}, {"subset", sub, newWithinPlan(sub, groups, use, full)}} {
			for ncol := 1; ncol <= 7; ncol++ {
				cols := make([][]float64, ncol)
				for j := range cols {
					cols[j] = make([]float64, len(tc.rows))
					for r := range cols[j] {
						cols[j][r] = rng.NormFloat64() + float64(j)*math.Log(use.measure(&tc.rows[r], 0))
					}
				}
				checkPlanAgainstReference(t, fmt.Sprintf("%v %s, %d columns", use, tc.name, ncol), tc.plan, tc.rows, groups, use, cols)
			}
		}
	}
}

// The impact's tie rule: a step of a request's batch that ends within the
// timestamp slack, or within half its own length, after the first token is
// the step that produced it; the engine's next step, ending a whole step
// after the token, is not.
func TestFirstTokenTieRule(t *testing.T) {
	const token = int64(1_000_000_000)
	step := func(start, end int64) *KernelStep { return &KernelStep{Start: start, End: end} }
	cases := []struct {
		name  string
		s     *KernelStep
		slack int64
		up    bool // counts toward TTFT
	}{
		{"ends at the token", step(token-8e6, token), 2_000, true},
		{"ends 5 µs after it (jitter)", step(token-8e6, token+5_000), 2_000, true},
		{"ends before it", step(token-8e6, token-5_000), 2_000, true},
		{"the next step", step(token+5_000, token+8e6+5_000), 2_000, false},
		{"a short next step", step(token+1_000, token+1_000+40_000), 2_000, false},
		{"no start: the slack alone", step(0, token+1_500), 2_000, true},
		{"no start, past the slack", step(0, token+2_500), 2_000, false},
		{"no slack given: the alignment's default", step(0, token+1_500), 0, true},
		{"a wider slack", step(0, token+9_000), 10_000, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.s.End <= token+firstTokenTol(c.s, c.slack); got != c.up {
				t.Errorf("step [%d, %d], slack %d: up to the first token %v, want %v", c.s.Start-token, c.s.End-token, c.slack, got, c.up)
			}
		})
	}
}

// checkPlanAgainstReference applies plan p to cols (one value per row of
// rows, in input order) and checks that it absorbs and keeps the rows the
// plain residualization does and gives its residuals digit for digit.
func checkPlanAgainstReference(t *testing.T, label string, p *withinPlan, rows []kernelRow, groups int, use batchUse, cols [][]float64) {
	t.Helper()
	want, absorbed, kept := referenceWithin(rows, groups, use, cols)
	if p.absorbed != absorbed || p.kept != kept {
		t.Fatalf("%s: plan absorbs %d and keeps %d rows, reference %d and %d", label, p.absorbed, p.kept, absorbed, kept)
	}
	in, outs := make([][]float64, len(cols)), make([][]float64, len(cols))
	for j := range in {
		in[j] = make([]float64, p.kept)
		for i, r := range p.order {
			in[j][i] = cols[j][r]
		}
		outs[j] = make([]float64, p.kept)
	}
	p.apply(in, outs)
	for j := range outs {
		for a := range outs[j] {
			if math.Float64bits(outs[j][a]) != math.Float64bits(want[j][a]) {
				t.Fatalf("%s: column %d row %d is %v, reference %v", label, j, a, outs[j][a], want[j][a])
			}
		}
	}
}
