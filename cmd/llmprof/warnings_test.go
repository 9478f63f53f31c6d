package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dustin/go-humanize"
)

// TestWarningSummaryOnStderr: with -o the report goes to a file, yet stderr
// says how many warnings there were and quotes them, here two files that no
// decoder reads; and stderr, not a terminal, has no progress line.
func TestWarningSummaryOnStderr(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"trace.otlp.jsonl.gz", "gpu.nsys.sqlite.gz"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "demo", name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, dir, name, b)
	}
	writeFile(t, dir, "notes.txt", []byte("not a trace\n"))
	writeFile(t, dir, "README.md", []byte("# nothing here\n"))
	code, stdout, stderr := runLLMProf(t, "analyze", "-o", filepath.Join(t.TempDir(), "r.txt"), dir)
	if code != ExitOK {
		t.Fatalf("analyze exited %d: %s", code, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q with -o", stdout)
	}
	if !strings.Contains(stderr, "llmprof: 3 warnings") || !strings.Contains(stderr, "notes.txt") || !strings.Contains(stderr, "README.md") {
		t.Errorf("stderr does not summarize the warnings:\n%s", stderr)
	}
	if strings.ContainsAny(stderr, "\r\033") {
		t.Errorf("progress or escape codes on a stderr that is not a terminal: %q", stderr)
	}
}

// TestProgressOnTerminal: with stderr a terminal, analyze draws its progress
// line (stage, files, bytes) and clears it before the summary.
func TestProgressOnTerminal(t *testing.T) {
	var out, errOut strings.Builder
	code := Main(context.Background(), []string{"analyze", filepath.Join("..", "..", "testdata", "demo")},
		&IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut, ErrTTY: true})
	if code != ExitOK {
		t.Fatalf("analyze exited %d: %s", code, errOut.String())
	}
	e := errOut.String()
	size := humanize.Bytes(uint64(committedDemo(t).Bytes))
	if !strings.Contains(e, "\r\033[Kreading 0/2 files, 0 B of "+size) || !strings.Contains(e, "2/2 files") || !strings.Contains(e, "\r\033[Kllmprof: 1 warning") {
		t.Errorf("no progress line, or not cleared before the summary: %q", e)
	}
}
