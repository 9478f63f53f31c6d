package compare_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/internal/shareddata"
)

func TestKernelMetricNames(t *testing.T) {
	for _, tc := range []struct {
		rule string
		ok   bool
	}{
		{"kernel.attention<+5%", true},
		{"kernel.norm_activation<+10%", true},
		{"kernel:'flash_fwd.*'<+5%", true},
		{"kernel:flash_fwd<+5%", true},
		{"kernel.attn<+5%", false},       // not a category key
		{"kernel:'('<+5%", false},        // not a regular expression
		{"kernel:''<+5%", false},         // no pattern
		{"kernel.attention<+1ms", false}, // kernel rules are relative
	} {
		t.Run(tc.rule, func(t *testing.T) {
			_, err := compare.ParseGate(tc.rule)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseGate(%q) error %v, want ok=%v", tc.rule, err, tc.ok)
			}
		})
	}
}

// kernelOnlyRun is a run with no requests and the given identities, each
// with n launches of base ns × (1 ± 5%) × factor.
func kernelOnlyRun(seed uint64, n int, factor map[string]float64, base map[string]float64) compare.Run {
	rng := rand.New(rand.NewPCG(seed, 1))
	kr := &compare.KernelRun{}
	for _, name := range []string{"flash_fwd_kernel", "paged_attention_v2_kernel", "sm90_gemm", "nvjet_gemm"} {
		cat := "attention"
		if name == "sm90_gemm" || name == "nvjet_gemm" {
			cat = "gemm"
		}
		u := compare.KernelUnit{Name: name, Grid: [3]uint32{132, 1, 1}, Block: [3]uint16{128, 1, 1}, Category: cat}
		f := factor[cat]
		if f == 0 {
			f = 1
		}
		for range n {
			u.Durations = append(u.Durations, base[name]*f*(0.95+0.1*rng.Float64()))
		}
		kr.Units = append(kr.Units, u)
		kr.Launches += n
	}
	return compare.Run{Kernels: kr}
}

var kernelBase = map[string]float64{"flash_fwd_kernel": 80_000, "paged_attention_v2_kernel": 30_000, "sm90_gemm": 120_000, "nvjet_gemm": 60_000}

// Two kernel-only runs (a profiler trace has no requests) compare at the
// kernel level, and the gate decides the category and pattern rules.
func TestKernelOnlyGate(t *testing.T) {
	opts := compare.DefaultOptions()
	opts.Policy.Gates = mustGates(t, "kernel.attention<+5%", "kernel.gemm<+5%", "kernel:'flash_fwd'<+5%")
	base := kernelOnlyRun(1, 400, nil, kernelBase)
	cand := kernelOnlyRun(2, 400, map[string]float64{"attention": 1.6}, kernelBase)
	res, err := compare.Compare(compare.Side{Label: "b", Runs: []compare.Run{base}}, compare.Side{Label: "c", Runs: []compare.Run{cand}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]compare.Verdict{"kernel.attention": compare.Fail, "kernel.gemm": compare.Pass, "kernel:'flash_fwd'": compare.Fail}
	for _, m := range res.Metrics {
		if m.Gate == nil {
			continue
		}
		if m.Gate.Verdict != want[m.Name] {
			t.Errorf("%s: %s (%s), want %s", m.Name, m.Gate.Verdict, m.Gate.Reason, want[m.Name])
		}
		if m.Name == "kernel.attention" && !(m.CILowPct < 60 && m.CIHighPct > 60) {
			t.Errorf("kernel.attention interval %.1f%% … %.1f%% does not hold the true +60%%", m.CILowPct, m.CIHighPct)
		}
	}
	if res.Kernels == nil || len(res.Kernels.Groups) != 3 {
		t.Fatalf("kernel groups: %+v", res.Kernels)
	}
	if res.Unit != "kernel identity" {
		t.Errorf("unit %q", res.Unit)
	}
}

// The pool is the time-share-weighted mean of the identities' log changes:
// with identical per-identity changes it is that change whatever the
// weights, and one slowed identity moves the pool by its share of the time.
func TestKernelPoolIsTimeWeighted(t *testing.T) {
	opts := compare.DefaultOptions()
	base := kernelOnlyRun(3, 300, nil, kernelBase)
	cand := kernelOnlyRun(4, 300, nil, kernelBase)
	// flash (80 µs) 2× slower, paged (30 µs) unchanged: log change ln 2 on
	// 80/110 of the attention time.
	for i := range cand.Kernels.Units {
		if u := &cand.Kernels.Units[i]; u.Name == "flash_fwd_kernel" {
			for j := range u.Durations {
				u.Durations[j] *= 2
			}
		}
	}
	res, err := compare.Compare(compare.Side{Label: "b", Runs: []compare.Run{base}}, compare.Side{Label: "c", Runs: []compare.Run{cand}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range res.Kernels.Groups {
		if g.Metric != "kernel.attention" {
			continue
		}
		want := math.Expm1(80.0/110*math.Ln2) * 100
		if math.Abs(g.DeltaPct-want) > 1.5 {
			t.Errorf("pooled attention change %.2f%%, want ≈ %.2f%% (time-weighted)", g.DeltaPct, want)
		}
		if g.Tau < 0.3 {
			t.Errorf("τ = %.3f: two identities changing by ×2 and ×1 disagree by far more", g.Tau)
		}
		return
	}
	t.Fatal("no kernel.attention group")
}

// HTA's trace-diff pair (a training step on two builds and GPUs): diff
// lists the kernels that changed, ran on one side only, and their counts
// and times, which must equal a count of the decoded traces' kernels by
// name — the count ingest/kineto's TestRealFilesCounts checks, file by
// file, against an independent reading of the JSON with encoding/json.
func TestKernelsHTATraceDiff(t *testing.T) {
	bPath := shareddata.Path(t, "testdata/kineto/hta-trace_diff-control-control.json.gz")
	cPath := shareddata.Path(t, "testdata/kineto/hta-trace_diff-test-test.json.gz")
	load := func(p string) (compare.Run, kernelCount) {
		tr, err := ingest.Open(context.Background(), []string{p}, []ingest.Decoder{kineto.Decoder{}}, ingest.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := countKernels(tr)
		res := attribution.Analyze(tr, attribution.DefaultOptions)
		return compare.Run{RunID: p, Kernels: compare.KernelsFromTrace(tr, res)}, want
	}
	runB, wantB := load(bPath)
	runC, wantC := load(cPath)
	res, err := compare.Compare(compare.Side{Label: "control", Runs: []compare.Run{runB}},
		compare.Side{Label: "test", Runs: []compare.Run{runC}}, compare.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	k := res.Kernels
	if k.LaunchesBaseline != wantB.launches || k.LaunchesCandidate != wantC.launches {
		t.Errorf("launches %d and %d, the traces have %d and %d kernels", k.LaunchesBaseline, k.LaunchesCandidate, wantB.launches, wantC.launches)
	}
	seen := 0
	added, removed, changed := 0, 0, 0
	for _, n := range k.Names {
		b, c := wantB.byName[n.Name], wantC.byName[n.Name]
		if n.CountBaseline != b.count || n.CountCandidate != c.count {
			t.Errorf("%s: %d and %d launches, the trace has %d and %d", n.Name, n.CountBaseline, n.CountCandidate, b.count, c.count)
		}
		// Kineto's dur is in µs: the totals must match to the µs.
		if math.Abs(n.BaselineMS*1e3-b.us) > 0.5 || math.Abs(n.CandidateMS*1e3-c.us) > 0.5 {
			t.Errorf("%s: %.3f and %.3f ms, the trace sums to %.3f and %.3f", n.Name, n.BaselineMS, n.CandidateMS, b.us/1e3, c.us/1e3)
		}
		switch n.Status {
		case "added":
			added++
			if b.count != 0 || c.count == 0 {
				t.Errorf("%s is listed as added with %d and %d launches in the traces", n.Name, b.count, c.count)
			}
		case "removed":
			removed++
			if c.count != 0 || b.count == 0 {
				t.Errorf("%s is listed as removed with %d and %d launches in the traces", n.Name, b.count, c.count)
			}
		case "changed":
			changed++
		}
		seen++
	}
	union := map[string]bool{}
	for n := range wantB.byName {
		union[n] = true
	}
	onlyC := 0
	for n := range wantC.byName {
		if !union[n] {
			onlyC++
		}
		union[n] = true
	}
	onlyB := len(union) - len(wantC.byName)
	if seen != len(union) || added != onlyC || removed != onlyB {
		t.Errorf("%d names (%d added, %d removed), the trace has %d (%d only in test, %d only in control)", seen, added, removed, len(union), onlyC, onlyB)
	}
	if changed == 0 {
		t.Error("no kernel name of both runs changed: the test build's kernels run on another GPU and must")
	}
	// Every identity listed as changed has an interval that excludes 0.
	for _, u := range k.Identities {
		if u.Significant && !(u.CILowPct > 0 || u.CIHighPct < 0) {
			t.Errorf("%s %s: significant with interval %.1f%% … %.1f%%", u.Name, u.Launch, u.CILowPct, u.CIHighPct)
		}
	}
	t.Logf("%d names: %d changed, %d added, %d removed; groups:", seen, changed, added, removed)
	for _, g := range k.Groups {
		t.Logf("  %s: %d identities, %+.1f%% [%+.1f%%, %+.1f%%]", g.Metric, g.Identities, g.DeltaPct, g.CILowPct, g.CIHighPct)
	}
}

type kernelCount struct {
	launches int
	byName   map[string]struct {
		count int
		us    float64
	}
}

// countKernels counts a trace's kernels by name: launches and total
// microseconds.
func countKernels(tr *ingest.Trace) kernelCount {
	out := kernelCount{byName: map[string]struct {
		count int
		us    float64
	}{}}
	for i := range tr.GPUOps {
		o := &tr.GPUOps[i]
		if o.Kind != ingest.OpKernel {
			continue
		}
		out.launches++
		c := out.byName[tr.Str(o.Name)]
		c.count++
		c.us += float64(o.Duration()) / 1e3
		out.byName[tr.Str(o.Name)] = c
	}
	return out
}
