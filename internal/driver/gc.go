package driver

import (
	"os"
	"runtime/debug"
	"slices"
	"sync"
)

// The collector's target (GOGC) while the pipeline runs. Go lets the heap
// grow to (1 + GOGC/100)× what was live after the last collection, and at
// the default of 100 analyze's peak RSS was twice its live heap. Most of
// what is live is pointer-free arrays — the GPU ops, the kernel rows, the
// fits' columns — that a collection does not scan, so collecting more often
// costs little CPU (docs/design.md, "Memory model", has the figures).
var (
	// runGCPercent holds from decoding to the report.
	runGCPercent = 50
	// tenantGCPercent holds while the tenant regression runs: its kernel
	// view's fits allocate and drop arrays of tens of bytes a kernel on top
	// of the model.
	tenantGCPercent = 10
)

// gcTargets are the targets asked for (tightGC) and not yet released, and
// the one before the first.
type gcTargets struct {
	mu     sync.Mutex
	active []int
	saved  int
}

var gcTarget gcTargets

// tightGC sets the collector's target to percent, or lower where another
// holder asked for less, until the returned function is called, unless the
// GOGC environment variable is set (the user's choice stands). When the
// last holder releases, the target is what it was before the first.
func tightGC(percent int) (release func()) {
	if os.Getenv("GOGC") != "" {
		return func() {}
	}
	g := &gcTarget
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.active) == 0 {
		g.saved = debug.SetGCPercent(percent)
	}
	g.active = append(g.active, percent)
	debug.SetGCPercent(slices.Min(g.active))
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.active = slices.Delete(g.active, slices.Index(g.active, percent), slices.Index(g.active, percent)+1)
			if len(g.active) == 0 {
				debug.SetGCPercent(g.saved)
				return
			}
			debug.SetGCPercent(slices.Min(g.active))
		})
	}
}
