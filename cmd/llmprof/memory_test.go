package main

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/internal/shareddata"
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

// TestMemoryLimitSpillsRealExport: a real Nsight Systems export whose GPU
// ops and API calls pass the threshold under a 1 MiB limit is analyzed
// with its tables in a spill file, and the report is the same bytes as
// without a limit.
func TestMemoryLimitSpillsRealExport(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("spill files are built for Linux only")
	}
	f := shareddata.Path(t, "testdata/nsys/leiwang1999-memfusion-report1-nsys2023.1.2.sqlite")
	code, free, stderr := runLLMProf(t, "analyze", "--memory-limit", "0", "--format", "json", f)
	if code != ExitOK {
		t.Fatalf("no limit: exit %d: %s", code, stderr)
	}
	code, tight, stderr := runLLMProf(t, "analyze", "--memory-limit", "1MiB", "--format", "json", f)
	if code != ExitOK {
		t.Fatalf("--memory-limit 1MiB: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "of its largest tables were kept in a spill file") {
		t.Errorf("under a 1 MiB limit the export's tables were not spilled: %q", stderr)
	}
	if tight != free {
		t.Errorf("the report with spilled tables differs from the unlimited one")
	}
}
