package report

import (
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// TestWarningSummary: the count by kind (most frequent first, collapsed
// repeats counted), the first three quoted, and nothing without warnings.
func TestWarningSummary(t *testing.T) {
	var b strings.Builder
	WriteWarningSummary(&b, nil)
	if b.Len() != 0 {
		t.Fatalf("no warnings wrote %q", b.String())
	}
	ws := []ingest.Warning{
		{Path: "a.jsonl", Code: "truncated", Msg: "cut short"},
		{Path: "b.txt", Code: "skipped", Msg: "not a trace", More: 2},
		{Path: "c.txt", Code: "skipped", Msg: "not a trace"},
		{Path: "d.txt", Code: "skipped", Msg: "not a trace"},
	}
	WriteWarningSummary(&b, ws)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 5 || lines[0] != "llmprof: 6 warnings (5 skipped, 1 truncated); the report lists them all" || lines[4] != "  … 1 more" {
		t.Errorf("summary:\n%s", b.String())
	}
}
