package compare

import (
	"testing"

	"github.com/llmprof/llmprof/internal/testgc"
)

// TestMain runs the package's tests at GOGC 300 unless $GOGC sets one: at
// the default 100% the collections cost about 7% of the binary's CPU (15.9 s
// against 14.8 s, medians of three alternated runs; peak RSS 447 MB against
// 539 MB). No test here reads the heap or depends on when a collection
// runs, and nothing the package imports sets a memory budget in a test
// (internal/spill spills only under one).
func TestMain(m *testing.M) { testgc.Main(m) }
