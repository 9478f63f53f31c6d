package report_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/internal/golden"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/report"
	"github.com/llmprof/llmprof/synth"
)

// demoReport runs the pipeline on a small simulated run written in style.
func demoReport(t *testing.T, style synth.Style) *report.Report {
	t.Helper()
	run, err := synth.Generate(synth.DefaultConfig(1, 4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tr := synthtrace.Decode(t, run, style, synth.JSONLines, "trace.jsonl")
	tr.Sources[0].Path = "trace.jsonl" // stable across temp dirs
	opts := attribution.Options{SLO: attribution.SLO{TTFT: 200 * time.Millisecond, TPOT: 20 * time.Millisecond}}
	return report.New(report.Input{Version: "test", Trace: tr, Attr: attribution.Analyze(tr, opts)})
}

func TestGoldenText(t *testing.T) {
	for _, tc := range []struct {
		name  string
		style synth.Style
	}{{"llmprof", synth.StyleLLM}, {"vllm", synth.StyleVLLM}} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := demoReport(t, tc.style).WriteText(&out, report.TextOptions{}); err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "analyze-"+tc.name+".txt"), out.Bytes())
		})
	}
}

func TestGoldenJSON(t *testing.T) {
	var out bytes.Buffer
	if err := demoReport(t, synth.StyleLLM).WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "analyze-llmprof.json"), out.Bytes())

	// The machine-readable contract (docs/design.md §11) holds.
	var doc map[string]any
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	get := func(path ...string) any {
		var cur any = doc
		for _, p := range path {
			m, ok := cur.(map[string]any)
			if !ok {
				t.Fatalf("%v: %q is not an object", path, p)
			}
			cur = m[p]
		}
		return cur
	}
	if get("schema") != report.Schema {
		t.Fatalf("schema = %v", get("schema"))
	}
	for _, m := range []string{"ttft", "tpot", "itl", "e2e", "queue"} {
		for _, q := range []string{"p50", "p90", "p95", "p99", "max", "mean"} {
			if _, ok := get("requests", "metrics", m, q).(float64); !ok {
				t.Errorf("requests.metrics.%s.%s missing", m, q)
			}
			if _, ok := get("requests", "by_tenant", "search", "metrics", m, q).(float64); !ok {
				t.Errorf("requests.by_tenant.search.metrics.%s.%s missing", m, q)
			}
			if _, ok := get("requests", "by_model", "qwen2.5-7b", "metrics", m, q).(float64); !ok {
				t.Errorf("requests.by_model.qwen2.5-7b.metrics.%s.%s missing", m, q)
			}
		}
	}
	src := get("sources").([]any)[0].(map[string]any)
	for _, k := range []string{"path", "format", "spans", "gpu_ops", "samples", "warnings"} {
		if _, ok := src[k]; !ok {
			t.Errorf("sources[0].%s missing", k)
		}
	}
	for _, st := range get("stages").([]any) {
		m := st.(map[string]any)
		if _, ok := m["total_ms"].(float64); !ok || m["name"] == "" {
			t.Errorf("bad stage %v", m)
		}
	}
	if _, ok := get("warnings").([]any); !ok {
		t.Error("warnings[] missing")
	}
}
