package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/synth"
)

// synthDecoder stands in for the OTLP and nsys decoders: a file starting
// "synth-test otlp" decodes to the llm.step spans of a synth run on the
// reference clock, "synth-test gpu" to its GPU-side trace on a clock 2.5 s
// off and 80 ppm fast.
type synthDecoder struct{ run *synth.Run }

func (synthDecoder) Name() string { return "synth-test" }

func (synthDecoder) Sniff(in *ingest.Input) bool {
	return bytes.HasPrefix(in.Head, []byte("synth-test "))
}

func (d synthDecoder) Decode(_ context.Context, in *ingest.Input, t *ingest.Trace) error {
	path := t.Sources[0].Path
	switch {
	case bytes.HasPrefix(in.Head, []byte("synth-test otlp")):
		t.Sources[0].Clock = ingest.ClockDomain{Name: "realtime@synth", Kind: ingest.ClockRealtime}
		name := t.Strings.Intern("llm.step")
		for _, st := range d.run.Steps {
			t.Spans = append(t.Spans, ingest.Span{TraceID: st.TraceID, ID: st.SpanID, Name: name, Start: st.Start, End: st.End,
				Origin: ingest.OriginOTLP, Resource: -1, Scope: -1})
		}
	case bytes.HasPrefix(in.Head, []byte("synth-test gpu")):
		*t = *d.run.GPUTrace()
		t.Sources[0].Path = path
	}
	return nil
}

func synthInputs(t *testing.T) (*synth.Run, []string) {
	t.Helper()
	cfg := synth.DefaultConfig(5, time.Second)
	cfg.GPUClock = synth.ClockError{OffsetNs: 2_500_000_000, DriftPPM: 80}
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var paths []string
	for _, part := range []string{"otlp", "gpu"} {
		p := filepath.Join(dir, part+".txt")
		if err := os.WriteFile(p, []byte("synth-test "+part+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return run, paths
}

func TestExportPerfetto(t *testing.T) {
	run, inputs := synthInputs(t)
	out := filepath.Join(t.TempDir(), "run.json.gz")
	var stdout, stderr bytes.Buffer
	opts := &ExportOptions{IO: &IOStreams{Out: &stdout, ErrOut: &stderr}, Inputs: inputs,
		Decoders: []ingest.Decoder{synthDecoder{run}}, Perfetto: out}
	if err := runExport(context.Background(), opts); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr.String())
	}
	msg := stderr.String()
	t.Logf("stderr:\n%s", msg)
	for _, want := range []string{"CLOCK ALIGNMENT  reference: realtime@synth", "nsys:synth", "refined", "causality: 0 of", "wrote "} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr lacks %q:\n%s", want, msg)
		}
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("output is not gzip: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OtherData struct {
			Alignment []struct {
				Domain  string `json:"domain"`
				Status  string `json:"status"`
				Refined bool   `json:"refined"`
			} `json:"alignment"`
		} `json:"otherData"`
		TraceEvents []struct {
			Ph     string `json:"ph"`
			BindID string `json:"bind_id"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("export does not parse: %v", err)
	}
	al := doc.OtherData.Alignment
	if len(al) != 2 || al[0].Status != "reference" || al[1].Domain != "nsys:synth" || !al[1].Refined {
		t.Errorf("alignment metadata %+v", al)
	}
	count := map[string]int{}
	for _, e := range doc.TraceEvents {
		count[e.Ph]++
		if e.BindID != "" {
			count["bind"]++
		}
	}
	// A mirror arrow is skipped when alignment leaves the NVTX range starting
	// a ns before its span (Perfetto would drop an arrow ending before it
	// starts); nearly all are drawn.
	if count["b"] != len(run.Steps) || count["X"] < len(run.Ops) || count["f"] != len(run.Ops) ||
		count["bind"]%2 != 0 || count["bind"] < 2*len(run.Steps)*9/10 {
		t.Errorf("events %v; want %d async spans, ≥ %d slices, %d launch arrows, ~%d mirror arrow ends", count, len(run.Steps), len(run.Ops), len(run.Ops), 2*len(run.Steps))
	}
}

func TestExportUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no output chosen", []string{"export", "x.jsonl"}, ExitUsage, "--perfetto"},
		{"no input", []string{"export", "--perfetto", "out.json"}, ExitUsage, "export: missing <input>"},
		{"missing file", []string{"export", "--perfetto", filepath.Join(t.TempDir(), "o.json"), "/nonexistent/trace.jsonl"}, ExitError, "/nonexistent/trace.jsonl"},
		{"help", []string{"export", "--help"}, ExitOK, "ui.perfetto.dev"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runLLMProf(t, tc.args...)
			if code != tc.code || !strings.Contains(stdout+stderr, tc.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s%s", code, tc.code, tc.want, stdout, stderr)
			}
		})
	}
}

func TestExportUnknownReference(t *testing.T) {
	run, inputs := synthInputs(t)
	var stderr bytes.Buffer
	opts := &ExportOptions{IO: &IOStreams{Out: io.Discard, ErrOut: &stderr}, Inputs: inputs,
		Decoders: []ingest.Decoder{synthDecoder{run}}, Perfetto: filepath.Join(t.TempDir(), "o.json"), Reference: "nsys:elsewhere"}
	err := runExport(context.Background(), opts)
	if code := exitCode(err, io.Discard); code != ExitUsage || !strings.Contains(err.Error(), "nsys:synth") {
		t.Fatalf("err %v (exit %d), want a usage error listing the domains", err, code)
	}
}
