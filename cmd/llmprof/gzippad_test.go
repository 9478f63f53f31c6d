package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestZeroPaddedGzipInputs: the demo's gzip files (OTLP JSON Lines and an
// nsys SQLite export) with zero bytes after their gzip member — what tape
// tools and some uploaders produce, and gzip -d accepts — analyze exactly as
// the files themselves.
func TestZeroPaddedGzipInputs(t *testing.T) {
	src := filepath.Join("..", "..", "testdata", "demo")
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	padded := 0
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(e.Name(), ".gz") {
			b = append(b, make([]byte, 4096)...)
			padded++
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if padded < 2 {
		t.Fatalf("the demo has %d gzip files, want the OTLP and the nsys one", padded)
	}
	_, want, _ := runLLMProf(t, "analyze", "--format", "json", src)
	code, got, errOut := runLLMProf(t, "analyze", "--format", "json", dir)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The report names its inputs; the rest must be the same.
	got = strings.ReplaceAll(got, dir, src)
	if got != want {
		t.Errorf("the padded inputs analyze differently (%d bytes vs %d)", len(got), len(want))
	}
}
