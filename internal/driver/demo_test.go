package driver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/export"
	"github.com/llmprof/llmprof/internal/golden"
	"github.com/llmprof/llmprof/report"
	"github.com/llmprof/llmprof/synth"
)

// demoOptions are `llmprof demo`'s defaults (cmd/llmprof/demo.go) for a
// run of d into dir.
func demoOptions(dir string, d time.Duration) DemoOptions {
	return DemoOptions{Dir: dir, Seed: 1, Duration: d, Style: "llmprof", Encoding: "jsonl", NsysWindow: 3 * time.Second, Log: io.Discard}
}

// TestDemoFixtureUpToDate regenerates the committed demo run (`llmprof demo
// --duration 10s --nsys 2s --gzip testdata/demo`): the same seed must write
// the same bytes, so the fixture is reproducible (and
// LLMPROF_UPDATE_GOLDEN=1 rewrites it after a deliberate change to the
// simulator).
func TestDemoFixtureUpToDate(t *testing.T) {
	o := demoOptions(t.TempDir(), 10*time.Second)
	o.NsysWindow, o.Gzip = 2*time.Second, true
	if err := WriteDemo(o); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"trace.otlp.jsonl.gz", "gpu.nsys.sqlite.gz"} {
		got, err := os.ReadFile(filepath.Join(o.Dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if golden.Update() {
			if err := os.WriteFile(filepath.Join(demoDir, name), got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(filepath.Join(demoDir, name))
		if err != nil {
			t.Fatalf("%v (run with LLMPROF_UPDATE_GOLDEN=1)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/demo/%s is not what `llmprof demo --duration 10s --nsys 2s --gzip` writes now; rerun with LLMPROF_UPDATE_GOLDEN=1 if the change is deliberate", name)
		}
	}
}

// TestDemoMetrics: `llmprof demo --metrics` writes the scrapes and the
// episodes' truth of the demo's four tenants. The episodes once replaced
// the demo's models with DefaultConfig's, and the run failed: tenant
// "embed" uses undefined model "mistral-7b".
func TestDemoMetrics(t *testing.T) {
	o := demoOptions(t.TempDir(), 4*time.Second)
	o.NsysWindow, o.Metrics = 0, true
	if err := WriteDemo(o); err != nil {
		t.Fatal(err)
	}
	for _, name := range synth.MetricFiles {
		if fi, err := os.Stat(filepath.Join(o.Dir, "metrics", name)); err != nil || fi.Size() == 0 {
			t.Errorf("metrics/%s: %v (empty or missing)", name, err)
		}
	}
	b, err := os.ReadFile(filepath.Join(o.Dir, ".episodes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var truths []json.RawMessage
	if err := json.Unmarshal(b, &truths); err != nil || len(truths) != 3 {
		t.Errorf(".episodes.json: %d episodes (%v), want 3", len(truths), err)
	}
}

// TestDemoOptionErrors: a bad --style, --encoding, --duration or --slow is
// an *OptionError, which the command reports as a usage error.
func TestDemoOptionErrors(t *testing.T) {
	for name, edit := range map[string]func(*DemoOptions){
		"style":    func(o *DemoOptions) { o.Style = "jaeger" },
		"encoding": func(o *DemoOptions) { o.Encoding = "xml" },
		"duration": func(o *DemoOptions) { o.Duration = 0 },
		"slow":     func(o *DemoOptions) { o.Slow = "attention" },
	} {
		o := demoOptions(t.TempDir(), time.Second)
		edit(&o)
		var oe *OptionError
		if err := WriteDemo(o); !errors.As(err, &oe) {
			t.Errorf("%s: %v, want an *OptionError", name, err)
		}
	}
}

// TestDemoKinetoAnalyzes: demo --kineto writes one PyTorch profiler trace
// per engine (and no nsys export, or the GPU side would count twice) that
// the pipeline aligns by the step annotations and joins to the steps, and
// the Perfetto export draws the Kineto side too.
func TestDemoKinetoAnalyzes(t *testing.T) {
	o := demoOptions(t.TempDir(), 6*time.Second)
	o.Kineto, o.Gzip, o.NsysWindow = true, true, 2*time.Second
	if err := WriteDemo(o); err != nil {
		t.Fatal(err)
	}
	traces, _ := filepath.Glob(filepath.Join(o.Dir, "*.pt.trace.json.gz"))
	if engines := len(synth.DemoConfig(1, 6*time.Second).Models); len(traces) != engines {
		t.Fatalf("traces %v, want one per engine", traces)
	}
	if _, err := os.Stat(filepath.Join(o.Dir, "gpu.nsys.sqlite.gz")); err == nil {
		t.Error("--kineto also wrote an nsys export: the GPU side would count twice")
	}
	a := run(t, Options{}, o.Dir)
	var b bytes.Buffer
	if err := a.Report(testVersion).WriteText(&b, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"kineto-json", "refined", "GPU\n", "PER TOKEN"} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "WARNINGS") || strings.Contains(out, "cannot align") {
		t.Errorf("the report warns:\n%s", out)
	}
	b.Reset()
	if _, err := export.WritePerfetto(&b, a.Trace, PerfettoOptions([]string{o.Dir}, a)); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Cat string `json:"cat"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	cats := map[string]int{}
	for _, e := range doc.TraceEvents {
		cats[e.Cat]++
	}
	if cats["nvtx"] == 0 || cats["cuda_runtime"] == 0 {
		t.Errorf("export categories %v: want the annotations and launches", cats)
	}
}
