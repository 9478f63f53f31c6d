package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// analyze reads "-" from its standard input, and fails (exit 1, naming each
// file and why) when nothing in the inputs can be analyzed or when it is given
// a saved analysis.
func TestAnalyzeInputs(t *testing.T) {
	demo, err := os.ReadFile(filepath.Join("..", "..", "testdata", "demo", "trace.otlp.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	run := func(stdin []byte, args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), args, &IOStreams{In: bytes.NewReader(stdin), Out: &out, ErrOut: &errOut})
		return code, out.String(), errOut.String()
	}
	want := committedDemo(t).Requests
	code, out, stderr := run(demo, "analyze", "--format", "json", "-")
	if code != ExitOK || !strings.Contains(out, `"path": "<stdin>"`) || !strings.Contains(out, fmt.Sprintf(`"count": %d`, want)) {
		t.Fatalf("analyze - : exit %d, %s\n%.600s", code, stderr, out)
	}
	dir := t.TempDir()
	saved := writeFile(t, dir, "report.json", []byte(out))
	code, _, stderr = run(nil, "analyze", saved)
	if code != ExitError || !strings.Contains(stderr, saved+": a saved llmprof output") || !strings.Contains(stderr, "llmprof diff") {
		t.Errorf("a saved analysis: exit %d, stderr %s", code, stderr)
	}
	a := writeFile(t, dir, "a.jsonl", nil)
	b := writeFile(t, dir, "b.jsonl", nil)
	code, _, stderr = run(nil, "analyze", a, b)
	if code != ExitError || !strings.Contains(stderr, "nothing to analyze") || !strings.Contains(stderr, a+": empty file") || !strings.Contains(stderr, b+": empty file") {
		t.Errorf("empty inputs: exit %d, stderr %s", code, stderr)
	}
}

// --metric-memory bounds the metric samples an input may hold: past it the
// input is an error naming it; under it the metrics are read.
func TestAnalyzeMetricMemory(t *testing.T) {
	demo := filepath.Join("..", "..", "testdata", "demo", "trace.otlp.jsonl.gz")
	var b strings.Builder
	for i := range 40_000 {
		fmt.Fprintf(&b, "m{i=\"%d\"} 1 %d\n", i%4, 1764583200000+int64(i))
	}
	dir := t.TempDir()
	scrape := writeFile(t, dir, "scrape.prom", []byte(b.String()))
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := Main(context.Background(), args, &IOStreams{In: bytes.NewReader(nil), Out: &out, ErrOut: &errOut})
		return code, errOut.String()
	}
	if code, stderr := run("analyze", "--metric-memory", "1", demo, scrape); code != ExitError || !strings.Contains(stderr, scrape+": line ") || !strings.Contains(stderr, "metric budget exceeded: more than 1 MiB") {
		t.Errorf("--metric-memory 1: exit %d, stderr %s", code, stderr)
	}
	if code, stderr := run("analyze", "--metric-memory", "2", demo, scrape); code != ExitOK {
		t.Errorf("--metric-memory 2: exit %d, stderr %s", code, stderr)
	}
	if code, _ := run("analyze", "--metric-memory", "-1", demo); code != ExitUsage {
		t.Errorf("--metric-memory -1: exit %d", code)
	}
}
