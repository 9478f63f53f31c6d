package report

import (
	"testing"

	"github.com/llmprof/llmprof/compare"
)

// TestPlural: one run, one span; never "1 runs".
func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 runs", 1: "1 run", 2: "2 runs", 1500: "1,500 runs"} {
		if got := plural(n, "run"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
	if got := sideLine(compare.SideSummary{Label: "base", Runs: 1, Requests: 1}); got != "base (1 run, 1 request)" {
		t.Errorf("sideLine = %q", got)
	}
}
