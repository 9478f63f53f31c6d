package driver

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/llmprof/llmprof/history"
)

// TestOptionErrors: each command's bad settings are *OptionError (the
// commands' usage exit code), found before any input is read: the paths
// here do not exist.
func TestOptionErrors(t *testing.T) {
	ctx := context.Background()
	missing := []string{"/nonexistent/run"}
	for name, call := range map[string]func() error{
		"analyze --slo":           func() error { _, err := AnalyzeFlags{SLO: "ttft=fast"}.Options(); return err },
		"analyze --top":           func() error { _, err := AnalyzeFlags{Top: -1}.Options(); return err },
		"analyze --metric-memory": func() error { _, err := AnalyzeFlags{MetricMemory: -1}.Options(); return err },
		"tenants --bin":           func() error { _, err := TenantFlags{Metrics: "ttft"}.Options(); return err },
		"tenants --metric":        func() error { _, err := TenantFlags{Bin: time.Second, Metrics: "ttfb"}.Options(); return err },
		"tenants --tenant-pid": func() error {
			_, err := TenantFlags{Bin: time.Second, Metrics: "ttft", Pids: []string{"x=a"}}.Options()
			return err
		},
		"diff --gate": func() error {
			_, err := Diff(ctx, diffOptions(DiffOptions{Baseline: missing, Candidate: missing, Gates: []string{"ttft.p99<10"}}))
			return err
		},
		"diff --alpha": func() error {
			o := diffOptions(DiffOptions{Baseline: missing, Candidate: missing})
			o.Alpha = 0.9
			_, err := Diff(ctx, o)
			return err
		},
		"history --unit": func() error {
			_, _, err := History(ctx, HistoryOptions{Paths: missing, Unit: "token", Detect: history.DefaultOptions().Detect})
			return err
		},
		"stats REPORT": func() error { _, err := Stats(ctx, "cuda_gpu_nothing_sum", missing, nil); return err },
	} {
		var oe *OptionError
		if err := call(); !errors.As(err, &oe) {
			t.Errorf("%s: %v, want an *OptionError", name, err)
		}
	}
	// A missing input is the input's error, not an option's.
	var oe *OptionError
	if _, err := Diff(ctx, diffOptions(DiffOptions{Baseline: missing, Candidate: missing})); err == nil || errors.As(err, &oe) {
		t.Errorf("a missing input: %v, want an error that is no *OptionError", err)
	}
}
