package nsys

import (
	"os/exec"
	"strings"
	"testing"
)

// The reference for the summaries is the sqlite3 shell running the nsys
// stats definitions as SQL on the same file: it shares no code with the
// decoder or the Go summaries.

const (
	unitSep   = "\x1f"
	recordSep = "\x1e"
)

// sqlite3Rows runs query with the sqlite3 shell on file and returns the
// rows as strings (NULL reads as ""). It skips the test when sqlite3 is not
// installed.
func sqlite3Rows(t *testing.T, file, query string) [][]string {
	t.Helper()
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("the sqlite3 shell is not installed; skipping the cross-check against SQL")
	}
	cmd := exec.Command(bin, "-readonly", "-batch", "-noheader", "-separator", unitSep, "-newline", recordSep, file, query)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sqlite3 %s: %v\n%s\nquery:\n%s", file, err, out, query)
	}
	var rows [][]string
	for _, rec := range strings.Split(string(out), recordSep) {
		if rec == "" {
			continue
		}
		rows = append(rows, strings.Split(rec, unitSep))
	}
	return rows
}
