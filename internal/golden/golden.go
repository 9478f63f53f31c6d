// Package golden compares test output with files under testdata/, and
// rewrites them when LLMPROF_UPDATE_GOLDEN=1 is set in the environment
// (review the diff, then commit):
//
//	LLMPROF_UPDATE_GOLDEN=1 go test ./...
//
// An environment variable rather than a -update flag: `go test ./... -update`
// fails in every package that does not define the flag, and the variable
// reaches every test binary of one run. The flag is still accepted in the
// packages that import this one.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/ (same as LLMPROF_UPDATE_GOLDEN=1)")

// Update reports whether golden files are to be rewritten: LLMPROF_UPDATE_GOLDEN
// is set and not empty or "0", or -update was given.
func Update() bool {
	if v := os.Getenv("LLMPROF_UPDATE_GOLDEN"); v != "" && v != "0" {
		return true
	}
	return *update
}

// Check compares got with the golden file at path (relative to the test's
// package directory), or writes it under -update.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if Update() {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden file %s: %v (run with LLMPROF_UPDATE_GOLDEN=1 to create it)", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with LLMPROF_UPDATE_GOLDEN=1 to accept):\n%s", path, diff(want, got))
	}
}

// diff shows the first differing lines, enough to see what changed.
func diff(want, got []byte) string {
	wl := bytes.Split(want, []byte("\n"))
	gl := bytes.Split(got, []byte("\n"))
	var b bytes.Buffer
	shown := 0
	for i := 0; i < max(len(wl), len(gl)) && shown < 12; i++ {
		var w, g []byte
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if !bytes.Equal(w, g) {
			b.WriteString("line ")
			b.WriteString(strconv.Itoa(i + 1))
			b.WriteString(":\n  want: ")
			b.Write(w)
			b.WriteString("\n  got:  ")
			b.Write(g)
			b.WriteString("\n")
			shown++
		}
	}
	return b.String()
}
