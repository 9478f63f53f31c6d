package main

import (
	"strings"
	"testing"
)

// diff's help and its --format and --out errors list every format it
// writes, html included (report.DiffFormats).
func TestDiffFormatsListed(t *testing.T) {
	_, help, _ := runLLMProf(t, "diff", "--help")
	if !strings.Contains(help, "output format: text, markdown, json, junit or html") {
		t.Errorf("help does not list html:\n%s", help)
	}
	for _, args := range [][]string{{"diff", "--format", "yaml", "a", "b"}, {"diff", "--out", "yaml=x", "a", "b"}} {
		code, _, stderr := runLLMProf(t, args...)
		if code != ExitUsage || !strings.Contains(stderr, "text, markdown, json, junit or html") {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
	}
}
