package main

import (
	"strings"
	"testing"
)

// TestHelpExamplesAligned: every command's first example line is indented
// like the others (cobra prints Example as written).
func TestHelpExamplesAligned(t *testing.T) {
	for _, cmd := range []string{"analyze", "diff", "tenants", "export", "record", "demo", "stats"} {
		_, out, _ := runLLMProf(t, cmd, "--help")
		_, ex, ok := strings.Cut(out, "\nExamples:\n")
		if !ok {
			t.Errorf("%s --help has no examples", cmd)
			continue
		}
		ex, _, _ = strings.Cut(ex, "\n\n")
		for _, l := range strings.Split(ex, "\n") {
			if l != "" && !strings.HasPrefix(l, "  ") {
				t.Errorf("%s --help: example line %q is not indented", cmd, l)
			}
		}
	}
	_, out, _ := runLLMProf(t, "diff", "--help")
	if !strings.Contains(out, "json, junit or html") {
		t.Error("diff --help does not list html among the formats")
	}
	_, out, _ = runLLMProf(t, "demo", "--help")
	for _, want := range []string{"four\ntenants on three models", "batch-eval", "--nsys"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo --help does not say %q", want)
		}
	}
}

// TestMissingArgumentNamed: a missing argument is named, not counted.
func TestMissingArgumentNamed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"analyze"}, "analyze: missing <input>"},
		{[]string{"tenants"}, "tenants: missing <input>"},
		{[]string{"diff", "a.json"}, "diff: missing <baseline> and <candidate>"},
		{[]string{"demo", "a", "b"}, "demo: takes at most 1 argument(s)"},
	} {
		code, _, stderr := runLLMProf(t, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "arg(s), only received") {
			t.Errorf("%q: exit %d, stderr %q; want usage exit and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestOutputIntoMissingDirectory: -o into a directory that does not exist
// names the path asked for, not a temporary file.
func TestOutputIntoMissingDirectory(t *testing.T) {
	out := t.TempDir() + "/missing/report.txt"
	code, _, stderr := runLLMProf(t, "analyze", "-o", out, "../../testdata/demo")
	if code == ExitOK || !strings.Contains(stderr, "cannot write "+out) || strings.Contains(stderr, ".llmprof-") {
		t.Errorf("exit %d, stderr %q; want an error naming %s", code, stderr, out)
	}
}
