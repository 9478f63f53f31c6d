package nsys

import (
	"testing"

	"github.com/llmprof/llmprof/internal/sqlite3shell"
)

// sqlite3Rows runs query with the sqlite3 shell on file: the reference for
// the summaries shares no code with the decoder or the Go summaries.
func sqlite3Rows(t *testing.T, file, query string) [][]string {
	t.Helper()
	return sqlite3shell.Rows(t, file, query)
}
