package compare

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
)

// TestLoadSeriesMixedDirectory: a directory of runs of every kind — a
// saved analysis, a samples file, a `vllm bench serve` result, a raw trace —
// is a series of four runs, the README and vLLM's summary table beside
// them skipped with a warning that names each; a file named as well as
// found in the directory is read once. Named as a side (Load), the same
// directory is one raw run, because it holds a trace; without the trace it
// is a series (IsSeriesDir) of the same runs, minus the trace, in name
// order.
func TestLoadSeriesMixedDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	samples, _ := json.Marshal(map[string]any{"schema": SamplesSchema, "requests": 3, "completed": 3, "duration_ms": 1000, "ttft_ms": []float64{10, 11, 12}})
	runs, err := decodeRuns(samples)
	if err != nil {
		t.Fatal(err)
	}
	write("a-analysis.json", []byte(`{"schema":"llmprof.report/v1","samples":`+string(samples)+`}`))
	write("b-samples.json", samples)
	bench := write("c-bench.json", benchResult(40, 1, 1, true, 0))
	write("d-trace.json", []byte(`{"resourceSpans":[]}`))
	write("README.txt", []byte("nightly results\n"))
	write("e-benchmark_results.json", []byte(`[{"Test name": "serving_llama8B_tp1_sharegpt_qps_1", "Median TTFT (ms)": 20.5}]`))
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	var raw []string
	lopts := WithTraces(TraceRunsForTest{
		Decoders: []ingest.Decoder{&otlp.Decoder{}},
		Analyze: func(_ context.Context, p string) (Run, []string, error) {
			raw = append(raw, filepath.Base(p))
			if st, err := os.Stat(p); err != nil || (!st.IsDir() && !strings.Contains(p, "trace")) || strings.HasSuffix(p, "empty") {
				// What the pipeline says of a file no decoder reads.
				return Run{}, nil, errors.New(p + ": not a trace format llmprof reads")
			}
			return runs[0], nil, nil
		},
	})
	s, err := LoadSeries(context.Background(), []string{dir, bench}, lopts)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, r := range s.Runs {
		files = append(files, filepath.Base(r.Path))
	}
	if strings.Join(files, ",") != "a-analysis.json,b-samples.json,c-bench.json,d-trace.json" {
		t.Errorf("runs from %v", files)
	}
	warned := strings.Join(s.Warnings, "\n")
	for _, want := range []string{filepath.Join(dir, "README.txt") + ": skipped, not a run", filepath.Join(dir, "e-benchmark_results.json") + ": skipped, not a run", filepath.Join(dir, "empty") + ": skipped, not a run"} {
		if !strings.Contains(warned, want) {
			t.Errorf("no warning %q in:\n%s", want, warned)
		}
	}
	if len(s.Runs) != 4 {
		t.Fatalf("%d runs", len(s.Runs))
	}
	if s.Runs[2].Time.IsZero() || !s.Runs[0].Time.IsZero() {
		t.Errorf("times %v %v: the bench result carries its date, the analysis none", s.Runs[2].Time, s.Runs[0].Time)
	}
	if order, err := s.Order(OrderAuto); err != nil || order != OrderName || !strings.Contains(strings.Join(s.Notes, "\n"), "so the runs are in name order") {
		t.Errorf("auto order %q, %v, notes %q", order, err, s.Notes)
	}

	raw = nil
	in, err := Load(context.Background(), []string{dir}, lopts)
	if err != nil || len(in.Runs) != 1 || len(raw) != 1 || IsSeriesDir(dir, lopts) {
		t.Errorf("a directory holding a trace, as a side: %v, %d runs, raw %v", err, len(in.Runs), raw)
	}
	if err := os.Remove(filepath.Join(dir, "d-trace.json")); err != nil {
		t.Fatal(err)
	}
	if !IsSeriesDir(dir, lopts) {
		t.Fatal("a directory of analyses, samples and bench results is not a series")
	}
	in, err = Load(context.Background(), []string{dir}, lopts)
	if err != nil || len(in.Runs) != 3 {
		t.Fatalf("as a side: %v, %d runs", err, len(in.Runs))
	}
	if !bytes.Contains([]byte(strings.Join(in.Warnings, "\n")), []byte("README.txt: skipped, not a run")) {
		t.Errorf("as a side, the README is not named: %q", in.Warnings)
	}
}

// TestLoadSeriesErrorsNameTheFile: a named file that is not a run, and a
// path that does not exist, are errors that name them.
func TestLoadSeriesErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"schema":"llmprof.diff/v1"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bad, filepath.Join(dir, "missing.json")} {
		if _, err := LoadSeries(context.Background(), []string{p}, LoadOptions{}); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := LoadSeries(context.Background(), []string{t.TempDir()}, LoadOptions{}); err == nil || !strings.Contains(err.Error(), "no runs found") {
		t.Errorf("empty directory: %v", err)
	}
}
