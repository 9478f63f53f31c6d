package main

import (
	"bytes"
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

func TestRegressionErrorMapsToExit3(t *testing.T) {
	var buf bytes.Buffer
	if code := exitCode(&RegressionError{Summary: "ttft.p99 regressed"}, &buf); code != ExitRegression {
		t.Fatalf("exit code %d, want %d", code, ExitRegression)
	}
}
