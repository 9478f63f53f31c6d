package driver

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/report"
	"github.com/llmprof/llmprof/synth"
)

// TestDiffRawRuns diffs two raw runs (OTLP directories written by the
// simulator) through the analyze pipeline: the candidate's llama engine is
// 40% slower, so its TPOT regression fails the gate and the explanation
// blames engine-step time, not queueing.
func TestDiffRawRuns(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, speed float64) string {
		cfg := synth.DefaultConfig(21, 16*time.Second)
		cfg.Models[0].Speed = speed
		run, err := synth.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(d, "trace.pbf"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := run.WriteOTLP(f, synth.StyleLLM, synth.ProtoFramed); err != nil {
			t.Fatal(err)
		}
		return d
	}
	base, cand := write("base", 1.0), write("cand", 1.4)
	res, stdout := diffJSON(t, DiffOptions{Baseline: []string{base}, Candidate: []string{cand}, Reps: compare.DefaultOptions().Reps,
		Gates: []string{"tpot.p50<+10%", "queue.p50<+1000%"}})
	if !res.Gate.Failed {
		t.Fatalf("the gate passed:\n%s", stdout)
	}
	var doc struct {
		Metrics []struct {
			Name        string
			Verdict     string
			Explanation []struct {
				Bucket  string
				DeltaMs float64 `json:"delta_ms"`
			}
		}
	}
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range doc.Metrics {
		if m.Name != "tpot.p50" {
			continue
		}
		if m.Verdict != "fail" || len(m.Explanation) == 0 || m.Explanation[0].Bucket == "queue" {
			t.Fatalf("tpot.p50: verdict %s, explanation %+v", m.Verdict, m.Explanation)
		}
		return
	}
	t.Fatalf("no tpot.p50 metric in %s", stdout)
}

// TestDiffReplayedDemo: two demo runs of one workload (--seed) with other
// system noise (--noise-seed) are recognised as a replay and paired, and
// the gates do not fail them; a run of another workload decides
// nothing and says why.
func TestDiffReplayedDemo(t *testing.T) {
	dir := t.TempDir()
	demo := func(name string, seed, noise int64) string {
		o := demoOptions(filepath.Join(dir, name), 6*time.Second)
		o.Seed, o.Noise, o.NsysWindow = seed, noise, 0
		if err := WriteDemo(o); err != nil {
			t.Fatal(err)
		}
		return o.Dir
	}
	a, b, c := demo("a", 7, 1), demo("b", 7, 2), demo("c", 8, 2)
	gates := []string{"tpot.p50<+2%", "tpot.p90<+3%", "itl.p90<+3%", "ttft.p90<+5%"}
	var doc struct{ Unit, Workload string }
	res, stdout := diffJSON(t, DiffOptions{Baseline: []string{a}, Candidate: []string{b}, Gates: gates})
	if res.Gate.Failed {
		t.Fatalf("replayed: the gate failed\n%s", stdout)
	}
	if err := json.Unmarshal(stdout, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Workload != "replayed" || doc.Unit != "request (paired)" {
		t.Errorf("replayed: workload %q, unit %q", doc.Workload, doc.Unit)
	}
	res, _ = diffJSON(t, DiffOptions{Baseline: []string{a}, Candidate: []string{c}, Gates: []string{"tpot.p50<+5%"}})
	var text strings.Builder
	if err := report.WriteDiffText(&text, res, report.DiffOptions{}); err != nil || res.Gate.Failed ||
		!strings.Contains(text.String(), "the runs served different workloads") || !strings.Contains(text.String(), "INCONCLUSIVE") {
		t.Errorf("different workloads: gate failed %v, %v\n%s", res.Gate.Failed, err, text.String())
	}
}
