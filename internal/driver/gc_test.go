package driver

import (
	"runtime/debug"
	"testing"
)

// gcPercent is the collector's target now.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// tightGC holds the lowest target asked for until its holders release, then
// restores the one before; a GOGC in the environment is left alone.
func TestTightGC(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	outer := tightGC(50)
	if got := gcPercent(); got != 50 {
		t.Fatalf("target %d under tightGC(50), want 50", got)
	}
	inner := tightGC(10)
	if got := gcPercent(); got != 10 {
		t.Fatalf("target %d under tightGC(50) and tightGC(10), want 10", got)
	}
	outer() // released out of order: the lower target stays
	outer()
	if got := gcPercent(); got != 10 {
		t.Fatalf("target %d once tightGC(50) released, want 10", got)
	}
	inner()
	if got := gcPercent(); got != 100 {
		t.Fatalf("target %d once all released, want the 100 before", got)
	}

	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200)
	release := tightGC(10)
	if got := gcPercent(); got != 200 {
		t.Errorf("target %d with GOGC=200 set, want 200 (the user's)", got)
	}
	release()
}
