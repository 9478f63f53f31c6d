package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/compare/comparetest"
)

// historyDir writes n small saved analyses, named in order (the series
// and its change points are tested in internal/driver/history_test.go).
func historyDir(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	for i := range n {
		writeJSON(t, dir, fmt.Sprintf("n%02d.json", i), analysis(comparetest.Workload{Requests: 40, Seed: uint64(100 + i)}.Run()))
	}
	return dir
}

// TestHistoryUsage: bad flags are usage errors (exit 2).
func TestHistoryUsage(t *testing.T) {
	dir := historyDir(t, 3)
	for _, args := range [][]string{
		{"history", dir, "--metric", "tpot.p42"},
		{"history", dir, "--order", "random"},
		{"history", dir, "--unit", "token"},
		{"history", dir, "--format", "yaml"},
		{"history", dir, "--out", "history.html"},
		{"history", dir, "--since", "yesterday"},
		{"history", dir, "--gate", "tpot.p50"},
	} {
		if code, _, stderr := runLLMProf(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args[2:], code, ExitUsage, stderr)
		}
	}
}

// TestHistoryGateExit: a gate rule that fails is exit 3 with its one line on
// stderr (a rule on a metric no run has fails), and --strict fails on input
// warnings (exit 1).
func TestHistoryGateExit(t *testing.T) {
	dir := historyDir(t, 3)
	code, _, stderr := runLLMProf(t, "history", dir, "--metric", "tpot.p50", "--gate", "tenant.ghost<+1ms")
	if code != ExitRegression || !strings.Contains(stderr, "tenant.ghost < +1ms no run has it") {
		t.Errorf("exit %d, want %d: %s", code, ExitRegression, stderr)
	}
	writeFile(t, dir, "README.txt", []byte("not a run\n"))
	if code, _, stderr := runLLMProf(t, "history", "--strict", dir, "--metric", "tpot.p50"); code != ExitError || !strings.Contains(stderr, "--strict") {
		t.Errorf("--strict: exit %d, want %d: %s", code, ExitError, stderr)
	}
}
