// Package sqlite3shell runs SQL with the sqlite3 command-line shell for
// tests: the reference the nsys summaries and the GPU analysis are checked
// against shares no code with llmprof's own SQLite reading.
package sqlite3shell

import (
	"os/exec"
	"strings"
	"testing"
)

const (
	unitSep   = "\x1f"
	recordSep = "\x1e"
)

// Rows runs query on file (read-only) and returns the rows as strings;
// NULL reads as "". It skips the test when sqlite3 is not installed and
// fails it when the query fails.
func Rows(tb testing.TB, file, query string) [][]string {
	tb.Helper()
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		tb.Skip("the sqlite3 shell is not installed; skipping the cross-check against SQL")
	}
	out, err := exec.Command(bin, "-readonly", "-batch", "-noheader", "-separator", unitSep, "-newline", recordSep, file, query).CombinedOutput()
	if err != nil {
		tb.Fatalf("sqlite3 %s: %v\n%s\nquery:\n%s", file, err, out, query)
	}
	var rows [][]string
	for _, rec := range strings.Split(string(out), recordSep) {
		if rec != "" {
			rows = append(rows, strings.Split(rec, unitSep))
		}
	}
	return rows
}
