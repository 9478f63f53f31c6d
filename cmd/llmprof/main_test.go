package main

import (
	"bytes"
	"os"
	"strings"
	"syscall"
	"testing"
)

func TestExitCodes(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
	}{
		{"version", []string{"version"}, ExitOK},
		{"unknown command", []string{"frobnicate"}, ExitUsage},
		{"unknown flag", []string{"analyze", "--frobnicate", "x"}, ExitUsage},
		{"missing argument", []string{"analyze"}, ExitUsage},
		{"bad format", []string{"analyze", "--format", "yaml", "x"}, ExitUsage},
		{"bad slo", []string{"analyze", "--slo", "ttft=fast", "x"}, ExitUsage},
		{"missing file", []string{"analyze", "/nonexistent/trace.jsonl"}, ExitError},
		{"help", []string{"analyze", "--help"}, ExitOK},
		{"root help", []string{}, ExitOK},
		{"too many arguments", []string{"diff", "a", "b", "c"}, ExitUsage},
		{"argument to version", []string{"version", "x"}, ExitUsage},
		{"bad flag value", []string{"demo", "--seed", "seven", "x"}, ExitUsage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runLLMProf(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d (stderr: %s)", code, tc.code, stderr)
			}
		})
	}
}

// TestInvalidArgumentIsNotUsage: an I/O error whose text contains "invalid
// argument" (EINVAL) is an error, not a usage mistake; the exit code follows
// the error's type, never its wording.
func TestInvalidArgumentIsNotUsage(t *testing.T) {
	var buf bytes.Buffer
	err := &os.PathError{Op: "read", Path: "trace.jsonl", Err: syscall.EINVAL}
	if code := exitCode(err, &buf); code != ExitError {
		t.Fatalf("exit code %d for %v, want %d", code, err, ExitError)
	}
}

func TestUnknownCommandSuggests(t *testing.T) {
	code, _, stderr := runLLMProf(t, "analyse")
	if code != ExitUsage || !strings.Contains(stderr, "did you mean analyze?") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
}

func TestRegressionErrorMapsToExit3(t *testing.T) {
	var buf bytes.Buffer
	if code := exitCode(&RegressionError{Summary: "ttft.p99 regressed"}, &buf); code != ExitRegression {
		t.Fatalf("exit code %d, want %d", code, ExitRegression)
	}
}
