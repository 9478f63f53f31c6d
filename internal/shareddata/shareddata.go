// Package shareddata locates the project's shared reference data (real nsys
// exports and OTLP samples in ../shared/testdata beside the repository) for
// tests. The files are not ours to redistribute, so they are never copied into
// the repository; tests that need them skip with a message when they are absent.
package shareddata

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Root returns the shared folder: $LLMPROF_SHARED if set, else ../shared
// beside the module root. ok is false when it does not exist.
func Root() (string, bool) {
	if dir := os.Getenv("LLMPROF_SHARED"); dir != "" {
		_, err := os.Stat(dir)
		return dir, err == nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			shared := filepath.Join(dir, "..", "shared")
			_, err := os.Stat(shared)
			return shared, err == nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Path returns the path of rel inside the shared folder, or skips the test
// with a message saying what is missing.
func Path(tb testing.TB, rel string) string {
	tb.Helper()
	root, ok := Root()
	if !ok {
		skipAbsent(tb, rel)
	}
	p := filepath.Join(root, rel)
	if _, err := os.Stat(p); err != nil {
		tb.Skipf("shared reference file %s is absent: %v", p, err)
	}
	return p
}

// Glob returns the shared files matching pattern (relative to the shared
// folder), or skips the test when there are none.
func Glob(tb testing.TB, pattern string) []string {
	tb.Helper()
	root, ok := Root()
	if !ok {
		skipAbsent(tb, pattern)
	}
	m, _ := filepath.Glob(filepath.Join(root, pattern))
	if len(m) == 0 {
		tb.Skipf("no shared files match %s in %s", pattern, root)
	}
	return m
}

// announce is done once per test binary: the first test that skips for a
// missing shared folder says so on the terminal.
var announce sync.Once

// skipAbsent skips tb because the shared folder is missing. A plain
// `go test ./...` shows nothing of a passing package's output, skips
// included, so a checkout without ../shared would pass quietly on
// synthetic data alone; the first skip in each package also writes one
// line to the controlling terminal (when there is one; CI runs without a
// terminal and .ci/run says it there), naming the package and how to
// point the tests at the data.
func skipAbsent(tb testing.TB, what string) {
	tb.Helper()
	announce.Do(func() {
		tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer tty.Close()
		wd, _ := os.Getwd()
		fmt.Fprintf(tty, "note: %s: ../shared not found (or set LLMPROF_SHARED); the tests on real files skip\n", filepath.Base(wd))
	})
	tb.Skipf("shared reference data not found (../shared beside the repository, or $LLMPROF_SHARED); skipping test that needs %s", what)
}
