package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmprof/llmprof/internal/golden"
)

// demoArgs write the run committed under testdata/demo for the README.
var demoArgs = []string{"demo", "--duration", "10s", "--nsys", "2s", "--gzip"}

// TestDemoFixtureUpToDate regenerates the committed demo run: the same seed
// must write the same bytes, so the fixture is reproducible (and LLMPROF_UPDATE_GOLDEN=1
// rewrites it after a deliberate change to the simulator).
func TestDemoFixtureUpToDate(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runLLMProf(t, append(demoArgs, dir)...); code != ExitOK {
		t.Fatalf("demo exited %d: %s", code, stderr)
	}
	fixture := filepath.Join("..", "..", "testdata", "demo")
	for _, name := range []string{"trace.otlp.jsonl.gz", "gpu.nsys.sqlite.gz"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if golden.Update() {
			if err := os.MkdirAll(fixture, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(fixture, name), got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(filepath.Join(fixture, name))
		if err != nil {
			t.Fatalf("%v (run with LLMPROF_UPDATE_GOLDEN=1)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("testdata/demo/%s is not what `llmprof %v` writes now; rerun with LLMPROF_UPDATE_GOLDEN=1 if the change is deliberate", name, demoArgs)
		}
	}
}
