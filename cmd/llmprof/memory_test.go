package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestMemoryLimit: --memory-limit changes how hard the collector works and
// puts the GPU ops in a spill file, never the report; a run whose peak
// passes it says so on stderr, and that the tables were spilled; the
// runtime's limit is restored after Main; a bad size is a usage error.
func TestMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	code, free, stderr := runLLMProf(t, "analyze", "--memory-limit", "0", "--format", "json", "../../testdata/demo")
	if code != ExitOK {
		t.Fatalf("--memory-limit 0: exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "memory limit") {
		t.Errorf("no limit, yet a note: %s", stderr)
	}
	code, tight, stderr := runLLMProf(t, "analyze", "--memory-limit", "1MiB", "--format", "json", "../../testdata/demo")
	if code != ExitOK {
		t.Fatalf("--memory-limit 1MiB: exit %d: %s", code, stderr)
	}
	if tight != free {
		t.Errorf("the report under a 1 MiB limit differs from the unlimited one")
	}
	if !strings.Contains(stderr, "passed the memory limit 1.0 MiB (--memory-limit)") {
		t.Errorf("a run past its limit says nothing of it: %q", stderr)
	}
	if runtime.GOOS == "linux" && !strings.Contains(stderr, "of its largest tables were kept in a spill file") {
		t.Errorf("under a 1 MiB limit the GPU ops were not spilled: %q", stderr)
	}
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("the runtime's limit is %d after Main, was %d", got, before)
	}
	code, _, stderr = runLLMProf(t, "analyze", "--memory-limit", "lots", "../../testdata/demo")
	if code != ExitUsage || !strings.Contains(stderr, "--memory-limit") {
		t.Errorf("--memory-limit lots: exit %d, %q; want a usage error naming the flag", code, stderr)
	}
}
