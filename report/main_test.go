package report

import (
	"testing"

	"github.com/llmprof/llmprof/internal/testgc"
)

// TestMain runs the package's tests at GOGC 300 unless $GOGC sets one, as
// compare's do: at the default 100% the test binary took 5.6, 6.2 and 7.3 s
// of CPU against 4.5, 4.8 and 5.1 s, three alternated runs (issue 32's tests5
// measurements), most of the difference system time (the heap grown and
// given back again). No test here reads the heap or depends on when a
// collection runs; the browser the layout tests start is another process.
func TestMain(m *testing.M) { testgc.Main(m) }
