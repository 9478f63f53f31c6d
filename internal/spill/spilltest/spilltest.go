// Package spilltest turns spilling on for a test (internal/spill), in the
// test's own temporary directory, until the test ends.
package spilltest

import (
	"testing"

	"github.com/llmprof/llmprof/internal/spill"
)

// Enable turns spilling on until t ends, or skips t where spilling is not
// possible (no shared file mappings, or a spill directory that cannot hold
// them: spill.Enable says why). The budget is the caller's to set.
func Enable(t testing.TB) {
	t.Helper()
	release, err := spill.Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	t.Cleanup(release)
}
