package driver

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// gcPercent is the collector's target now.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// pacedPercent reaches the floor while the live heap is below it, and is
// the percentage asked for above it.
func TestPacedPercent(t *testing.T) {
	for _, c := range []struct {
		percent     int
		floor, live int64
		want        int
	}{
		{50, 64 << 20, 32 << 20, 100},          // 32 MB × 2 = 64 MB
		{50, 64 << 20, 64 << 20, 50},           // at the floor: the percentage
		{10, 64 << 20, 1 << 30, 10},            // far above it
		{50, 100 << 20, 0, 100*25 - 100},       // no collection yet: from the runtime's 4 MB minimum
		{50, 1 << 62, 1, 1 << 30},              // capped
		{50, gcFloorBase, gcFloorBase - 1, 50}, // rounding down never goes below the percentage
	} {
		if got := pacedPercent(c.percent, c.floor, c.live); got != c.want {
			t.Errorf("pacedPercent(%d, %d, %d) = %d, want %d", c.percent, c.floor, c.live, got, c.want)
		}
	}
}

// tightGC holds the lowest target asked for, raised to reach the highest
// floor, until its holders release, then restores the one before; a GOGC in
// the environment is left alone.
func TestTightGC(t *testing.T) {
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	// A live heap far above every floor here, so that the percentages
	// show as asked for.
	ballast := make([]*int, (4*gcFloorBase)/8)
	runtime.GC()
	outer := tightGC(50)
	if got := gcPercent(); got != 50 {
		t.Fatalf("target %d under tightGC(50), want 50", got)
	}
	inner := tightGC(10)
	if got := gcPercent(); got != 10 {
		t.Fatalf("target %d under tightGC(50) and tightGC(10), want 10", got)
	}
	outer.release() // released out of order: the lower target stays
	outer.release()
	if got := gcPercent(); got != 10 {
		t.Fatalf("target %d once tightGC(50) released, want 10", got)
	}
	// A floor above the live heap raises the target to reach it ...
	live := liveHeap()
	inner.floor(8 * live)
	if got, want := gcPercent(), pacedPercent(10, gcFloorBase+8*live, liveHeap()); got != want || got < 500 {
		t.Fatalf("target %d under a floor of 8× the live heap, want %d", got, want)
	}
	// ... and the watcher lowers it again once a collection finds the
	// heap grown past the floor.
	ballast = append(ballast, make([]*int, 10*live/8)...)
	runtime.GC()
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() != 10 {
		if time.Now().After(deadline) {
			t.Fatalf("target %d after the live heap passed the floor, want 10", gcPercent())
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	inner.release()
	if got := gcPercent(); got != 100 {
		t.Fatalf("target %d once all released, want the 100 before", got)
	}
	runtime.KeepAlive(ballast)

	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200)
	h := tightGC(10)
	h.floor(1 << 30)
	if got := gcPercent(); got != 200 {
		t.Errorf("target %d with GOGC=200 set, want 200 (the user's)", got)
	}
	h.release()
}
