package compare_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/compare/comparetest"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// loadOpts sniffs with the OTLP decoder and "analyzes" a raw input by
// recording its path, so a test sees which inputs were taken as raw.
func loadOpts(raw *[]string) compare.LoadOptions {
	return compare.WithTraces(compare.TraceRunsForTest{
		Decoders: []ingest.Decoder{&otlp.Decoder{}},
		Analyze: func(_ context.Context, p string) (compare.Run, []string, error) {
			*raw = append(*raw, filepath.Base(p))
			return comparetest.Workload{Requests: 20, Seed: 1}.Run(), []string{p + ": line 9: truncated"}, nil
		},
	})
}

func writeTemp(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoadAsksTheDecoders: whether a JSON file is a raw run is the
// decoders' call (their Sniff), not a list of keys of diff's own: Tempo's
// {"batches": …} and a bare Jaeger trace, which analyze reads, are raw runs
// for diff too (issue 16); llmprof's own schemas are samples.
func TestLoadAsksTheDecoders(t *testing.T) {
	dir := t.TempDir()
	otlpDoc, err := os.ReadFile(shareddata.Path(t, "testdata/otlp/otlp-proto-examples-trace.json"))
	if err != nil {
		t.Fatal(err)
	}
	var td struct {
		ResourceSpans json.RawMessage `json:"resourceSpans"`
	}
	if err := json.Unmarshal(otlpDoc, &td); err != nil || td.ResourceSpans == nil {
		t.Fatalf("otlp-proto-examples-trace.json: %v", err)
	}
	tempo := writeTemp(t, dir, "tempo.json", []byte(`{"batches":`+string(td.ResourceSpans)+`}`))
	jaeger := shareddata.Path(t, "testdata/otlp/jaeger-ui_01.json")
	jaegerOTLP := shareddata.Path(t, "testdata/otlp/jaeger-otel_traces_01.json")
	samples, _ := json.Marshal(comparetest.Workload{Requests: 30, Seed: 2}.Run())
	sp := writeTemp(t, dir, "samples.json", samples)
	analysis := writeTemp(t, dir, "analysis.json", []byte(`{"schema":"llmprof.report/v1","warnings":[{"path":"x.jsonl","pos":"line 3","code":"truncated","message":"file ends mid-record"}],"samples":`+string(samples)+`}`))

	var raw []string
	in, err := compare.Load(context.Background(), []string{tempo, jaeger, jaegerOTLP, sp, analysis}, loadOpts(&raw))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(raw, " "); got != "tempo.json jaeger-ui_01.json jaeger-otel_traces_01.json" {
		t.Errorf("raw inputs %q, want the Tempo, Jaeger and OTLP files", got)
	}
	if len(in.Runs) != 5 {
		t.Errorf("%d runs, want 5", len(in.Runs))
	}
	ws := strings.Join(in.Warnings, "\n")
	if !strings.Contains(ws, "tempo.json: line 9: truncated") || !strings.Contains(ws, "analysis.json: x.jsonl:line 3: file ends mid-record") {
		t.Errorf("input warnings not carried:\n%s", ws)
	}

	// Without a pipeline a raw input is an error naming it.
	_, err = compare.Load(context.Background(), []string{tempo}, compare.LoadOptions{Inputs: compare.RunFileDecoders()})
	if err == nil || !strings.Contains(err.Error(), "tempo.json") {
		t.Errorf("raw input without a pipeline: %v", err)
	}
}

// TestLoadHistoryDirectory: a directory of saved runs is a baseline
// history, one run per file; a directory of traces is one raw run.
func TestLoadHistoryDirectory(t *testing.T) {
	hist := t.TempDir()
	for i, seed := range []uint64{4, 5, 6} {
		b, _ := json.Marshal(comparetest.Workload{Requests: 30, Seed: seed}.Run())
		writeTemp(t, hist, "run"+string(rune('a'+i))+".json", b)
	}
	var raw []string
	in, err := compare.Load(context.Background(), []string{hist}, loadOpts(&raw))
	if err != nil || len(in.Runs) != 3 || len(raw) != 0 {
		t.Fatalf("history: %v, %d runs, raw %v", err, len(in.Runs), raw)
	}
	traces := t.TempDir()
	writeTemp(t, traces, "trace.json", []byte(`{"resourceSpans":[]}`))
	in, err = compare.Load(context.Background(), []string{traces}, loadOpts(&raw))
	if err != nil || len(in.Runs) != 1 || len(raw) != 1 {
		t.Fatalf("trace directory: %v, raw %v", err, raw)
	}
}

// TestSavedAnalysisMembersAsEncodingJSON: a saved analysis's members are
// read as json.Unmarshal into a map reads them: the last of a repeated name
// wins, an escaped name is its text, and nesting deeper than the fast
// scanner goes is still read (json's own path).
func TestSavedAnalysisMembersAsEncodingJSON(t *testing.T) {
	dir := t.TempDir()
	one, _ := json.Marshal(comparetest.Workload{Requests: 30, Seed: 2}.Run())
	two, _ := json.Marshal(comparetest.Workload{Requests: 40, Seed: 3}.Run())
	deep := strings.Repeat("[", 600) + strings.Repeat("]", 600)
	for _, c := range []struct {
		name, doc string
		want      int
	}{
		{"repeated", `{"schema":"llmprof.report/v1","samples":` + string(one) + `,"samples":` + string(two) + `}`, 40},
		{"escaped", `{"sch\u0065ma":"llmprof.report/v1","s\u0061mples":` + string(two) + `}`, 40},
		{"deep", `{"schema":"llmprof.report/v1","extra":` + deep + `,"samples":` + string(one) + `}`, 30},
	} {
		p := writeTemp(t, dir, c.name+".json", []byte(c.doc))
		in, err := compare.Load(context.Background(), []string{p}, compare.LoadOptions{Inputs: compare.RunFileDecoders()})
		if err != nil || len(in.Runs) != 1 || in.Runs[0].Requests != c.want {
			t.Errorf("%s: %v, runs %+v, want one run of %d requests", c.name, err, in, c.want)
		}
	}
}

// TestSameInput: the same file under two names is the same input.
func TestSameInput(t *testing.T) {
	dir := t.TempDir()
	b, _ := json.Marshal(comparetest.Workload{Requests: 30, Seed: 2}.Run())
	p := writeTemp(t, dir, "a.json", b)
	link := filepath.Join(dir, "b.json")
	if err := os.Symlink(p, link); err != nil {
		t.Skip(err)
	}
	a, _ := compare.Load(context.Background(), []string{p}, compare.LoadOptions{})
	c, _ := compare.Load(context.Background(), []string{link}, compare.LoadOptions{})
	if _, same := compare.SameInput(a, c); !same {
		t.Error("a file and a symlink to it are not the same input")
	}
	other := writeTemp(t, dir, "c.json", b)
	d, _ := compare.Load(context.Background(), []string{other}, compare.LoadOptions{})
	if _, same := compare.SameInput(a, d); same {
		t.Error("a copy is the same input (it is a different file; Compare flags identical samples)")
	}
}

// FuzzLoad: whatever a file holds, Load returns runs or an error that names
// the file, never a panic.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		`{"schema":"llmprof.report/v1","samples":{"requests":2,"ttft_ms":[1,null]}}`,
		`{"schema":"llmprof.samples/v1","requests":1,"ttft_ms":[1]}`,
		`[{"requests":1,"e2e_ms":[3]}]`,
		`{"batches":[]}`,
		`{"schema":"llmprof.report/v1","samples":[]}`,
		"SQLite format 3\x00",
		`{"requests":1}{"requests":2}`,
		"\x1f\x8b\x08\x00",
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "in.json")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts := compare.WithTraces(compare.TraceRunsForTest{Decoders: []ingest.Decoder{&otlp.Decoder{}}, Analyze: func(_ context.Context, p string) (compare.Run, []string, error) {
			return compare.Run{}, nil, errors.New(p + ": raw")
		}})
		in, err := compare.Load(context.Background(), []string{p}, opts)
		if err != nil {
			if !strings.Contains(err.Error(), "in.json") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		if len(in.Runs) == 0 {
			t.Error("no error and no runs")
		}
	})
}
