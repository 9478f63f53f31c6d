package main

import (
	"bytes"
	"context"
	"testing"
)

// run executes llmprof with fake streams and returns stdout, stderr and the
// exit code.
func run(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, &IOStreams{Out: &out, ErrOut: &errOut, In: &bytes.Buffer{}})
	return out.String(), errOut.String(), code
}

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
			_, stderr, code := run(t, tc.args...)
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
