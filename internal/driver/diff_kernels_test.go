package driver

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/report"
	"github.com/llmprof/llmprof/synth"
)

// kernelDiffDoc is the part of diff's JSON the kernel tests read.
type kernelDiffDoc struct {
	Unit    string `json:"unit"`
	Kernels *struct {
		Groups []struct {
			Metric    string   `json:"metric"`
			DeltaPct  *float64 `json:"delta_pct"`
			CILowPct  *float64 `json:"ci_low_pct"`
			CIHighPct *float64 `json:"ci_high_pct"`
		} `json:"groups"`
		Names []struct {
			Status string `json:"status"`
		} `json:"names"`
	} `json:"kernels"`
	Gate struct {
		Verdict string `json:"verdict"`
	} `json:"gate"`
}

// Two PyTorch-profiler traces (HTA's trace-diff pair, no requests) compare
// at the kernel level: a row per category with an interval, the changed and
// one-sided kernels listed, and the gate decides on them.
func TestDiffKinetoTracesComparesKernels(t *testing.T) {
	b := shareddata.Path(t, "testdata/kineto/hta-trace_diff-control-control.json.gz")
	c := shareddata.Path(t, "testdata/kineto/hta-trace_diff-test-test.json.gz")
	reps := compare.DefaultOptions().Reps
	res, _ := diffJSON(t, DiffOptions{Baseline: []string{b}, Candidate: []string{c}, Reps: reps})
	var text strings.Builder
	if err := report.WriteDiffText(&text, res, report.DiffOptions{}); err != nil || res.Gate.Failed {
		t.Fatalf("gate failed %v, %v", res.Gate.Failed, err)
	}
	stdout := text.String()
	for _, want := range []string{"kernel.gemm", "kernels: ", "added    candidate only", "removed  baseline only", "replication unit: kernel identity"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("text lacks %q:\n%s", want, stdout)
		}
	}
	res, js := diffJSON(t, DiffOptions{Baseline: []string{b}, Candidate: []string{c}, Reps: reps, Gates: []string{"kernel:'elementwise'<+5%"}})
	var doc kernelDiffDoc
	if err := json.Unmarshal(js, &doc); err != nil || !res.Gate.Failed {
		t.Fatal(err)
	}
	if doc.Kernels == nil || len(doc.Kernels.Groups) == 0 || doc.Gate.Verdict != "fail" {
		t.Fatalf("kernels %+v, gate %s", doc.Kernels, doc.Gate.Verdict)
	}
	status := map[string]int{}
	for _, n := range doc.Kernels.Names {
		status[n.Status]++
	}
	if status["added"] == 0 || status["removed"] == 0 || status["changed"] == 0 {
		t.Errorf("kernel names by status: %v", status)
	}
}

// Two Nsight Systems exports (the simulator's GPU side, no OTLP) of
// different workloads, the candidate's attention kernels 60% slower: the
// attention rule fails with an interval that holds the truth, gemm passes.
func TestDiffNsysExportsComparesKernels(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, seed int64, slow map[ingest.KernelCategory]float64) string {
		cfg := synth.DefaultConfig(seed, 2*time.Second)
		if slow != nil {
			cfg.Slow(slow)
		}
		run, err := synth.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := nsys.WriteSQLite(p, run.GPUTrace(), nsys.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		return p
	}
	b := write("base.sqlite", 1, nil)
	c := write("cand.sqlite", 2, map[ingest.KernelCategory]float64{ingest.CategoryAttention: 1.6})
	res, js := diffJSON(t, DiffOptions{Baseline: []string{b}, Candidate: []string{c}, Reps: compare.DefaultOptions().Reps,
		Gates: []string{"kernel.attention<+5%", "kernel.gemm<+20%"}})
	var doc kernelDiffDoc
	if err := json.Unmarshal(js, &doc); err != nil || !res.Gate.Failed {
		t.Fatal(err)
	}
	if doc.Unit != "kernel identity" || doc.Kernels == nil {
		t.Fatalf("unit %q, kernels %v", doc.Unit, doc.Kernels)
	}
	for _, g := range doc.Kernels.Groups {
		if g.Metric != "kernel.attention" {
			continue
		}
		if g.CILowPct == nil || g.CIHighPct == nil || *g.CILowPct > 60 || *g.CIHighPct < 60 {
			t.Errorf("kernel.attention %v … %v does not hold the true +60%%", g.CILowPct, g.CIHighPct)
		}
		return
	}
	t.Fatalf("no kernel.attention group: %s", js)
}
