package driver

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
	"golang.org/x/sys/unix"
)

// gcPercent is the collector's target now.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// pacedPercent reaches the floor while the live heap is below it, and is
// the percentage asked for above it; the runtime's minimum heap, scaled by
// the percentage like its goal, never passes the floor.
func TestPacedPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		percent            int
		floor, live, roots int64
		want               int
	}{
		{50, 64 * mib, 32 * mib, 0, 100},          // 32 MB × 2 = 64 MB
		{50, 64 * mib, 24 * mib, 8 * mib, 125},    // 24 + (24 + 8) × 1.25 = 64
		{50, 64 * mib, 64 * mib, 0, 50},           // at the floor: the percentage
		{10, 64 * mib, 1 << 30, mib, 10},          // far above it
		{50, 100 * mib, 0, 0, 2500},               // no collection yet: the minimum heap, 4 MB × 25
		{50, 100 * mib, mib / 2, mib / 4, 2500},   // a collection at start-up: the minimum heap binds, not 0.5 + 0.75 × 132
		{50, 1 << 62, 1, 0, 1 << 30},              // capped
		{50, gcFloorBase, gcFloorBase - 1, 0, 50}, // rounding down never goes below the percentage
	} {
		if got := pacedPercent(c.percent, c.floor, c.live, c.roots); got != c.want {
			t.Errorf("pacedPercent(%d, %d, %d, %d) = %d, want %d", c.percent, c.floor, c.live, c.roots, got, c.want)
		}
	}
}

// heapGoal is the runtime's heap goal now.
func heapGoal() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

// The goal the runtime computes from the paced percentage is the floor,
// whatever the live heap: with one just after a collection at start-up
// (small, under the runtime's minimum heap) and with one of a few hundred
// MB.
func TestTightGCGoalIsTheFloor(t *testing.T) {
	gcAt100(t)
	const input = 512 << 20
	for _, ballast := range []int{0, 256 << 20} {
		live := make([]int64, ballast/8) // marked live, never scanned
		runtime.GC()
		h := tightGC(runGCPercent)
		h.floor(input)
		if goal, floor := heapGoal(), int64(gcFloorBase+input); goal > floor+floor/50 || goal < floor-floor/10 {
			live, _ := heapState()
			t.Errorf("live heap %d MB: goal %d MB, want the floor, %d MB", live>>20, goal>>20, floor>>20)
		}
		h.release()
		runtime.KeepAlive(live)
	}
}

// tightGC holds the lowest target asked for, raised to reach the highest
// floor, until its holders release, then restores the one before; a GOGC in
// the environment is left alone.
func TestTightGC(t *testing.T) {
	gcAt100(t)
	// A live heap far above every floor here, so that the percentages
	// show as asked for. Pointer-free, so that collections mark it live
	// without scanning it: 2.6 GB of pointers below took 4 s of CPU to
	// scan, once per collection.
	ballast := make([]int64, (4*gcFloorBase)/8)
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
	live, roots := heapState()
	inner.floor(8 * live)
	if got, want := gcPercent(), pacedPercent(10, gcFloorBase+8*live, live, roots); got != want || got < 500 {
		t.Fatalf("target %d under a floor of 8× the live heap, want %d", got, want)
	}
	// ... and the watcher lowers it again once a collection finds the
	// heap grown past the floor.
	grown := make([]int64, 10*live/8)
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
	runtime.KeepAlive(grown)

	t.Setenv("GOGC", "200")
	debug.SetGCPercent(200)
	h := tightGC(10)
	h.floor(1 << 30)
	if got := gcPercent(); got != 200 {
		t.Errorf("target %d with GOGC=200 set, want 200 (the user's)", got)
	}
	h.release()
}

// ceiledPercent lowers the percentage where the heap's goal would pass the
// ceiling, to no less than ceilingPercent, and leaves it alone without one.
func TestCeiledPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		percent              int
		ceiling, live, roots int64
		want                 int
	}{
		{50, 0, 400 * mib, 0, 50},                          // no ceiling
		{50, 700 * mib, 400 * mib, 0, 50},                  // 400 × 1.5 = 600 fits
		{50, 500 * mib, 400 * mib, 0, 25},                  // 400 + 400 × 0.25 = 500
		{50, 500 * mib, 380 * mib, 20 * mib, 30},           // 380 + 400 × 0.3 = 500
		{50, 400 * mib, 390 * mib, 0, ceilingPercent},      // at the ceiling: the least percentage
		{50, 400 * mib, 404 * mib, 0, ceilingPercent + 1},  // a hundredth past it: a point more
		{50, 300 * mib, 330 * mib, 0, ceilingPercent + 10}, // a tenth past it
		{50, 300 * mib, 400 * mib, 0, 43},                  // a third past it
		{50, 22 * mib, 65 * mib, 0, 50},                    // far past it (a 30 MiB OTLP dump's spans): percent
		{20, 300 * mib, 400 * mib, 0, 20},                  // never above percent
		{2500, 500 * mib, 0, 0, 2500},                      // no collection yet
		{5, 300 * mib, 400 * mib, 0, 5},                    // below the least percentage: never raised
		{-1, 300 * mib, 400 * mib, 0, -1},                  // the collector off (a lingering target before): stays off
	} {
		if got := ceiledPercent(c.percent, c.ceiling, 0, c.live, c.roots, ceilingPercent); got != c.want {
			t.Errorf("ceiledPercent(%d, %d, 0, %d, %d) = %d, want %d", c.percent, c.ceiling>>20, c.live>>20, c.roots>>20, got, c.want)
		}
	}
	// The runtime's overhead takes room under the ceiling, and only
	// room: the live heap is past the ceiling, which raises the least
	// percentage, only past the whole of it.
	for _, c := range []struct {
		percent                        int
		ceiling, overhead, live, roots int64
		want                           int
	}{
		{50, 400 * mib, 50 * mib, 200 * mib, 0, 50},  // room for 75%
		{50, 400 * mib, 150 * mib, 200 * mib, 0, 25}, // room for 25%
		{50, 400 * mib, 250 * mib, 200 * mib, 0, ceilingPercent},
		{50, 400 * mib, 250 * mib, 440 * mib, 0, ceilingPercent + 10}, // a tenth past the whole ceiling
		{50, 400 * mib, -1, 200 * mib, 0, 50},                         // no overhead read
	} {
		if got := ceiledPercent(c.percent, c.ceiling, c.overhead, c.live, c.roots, ceilingPercent); got != c.want {
			t.Errorf("ceiledPercent(%d, %d, %d, %d, %d) = %d, want %d", c.percent, c.ceiling>>20, c.overhead>>20, c.live>>20, c.roots>>20, got, c.want)
		}
	}
	// After a futile collection the least percentage is raised
	// (futilePercent), past the overshoot's, never past percent.
	for _, c := range []struct {
		percent, least int
		ceiling, live  int64
		want           int
	}{
		{50, 30, 400 * mib, 390 * mib, 30},                         // at the ceiling: the raised least
		{50, 30, 300 * mib, 400 * mib, 43},                         // a third past it: the overshoot's, higher
		{20, 30, 400 * mib, 390 * mib, 20},                         // never above percent
		{50, ceilingPercent, 400 * mib, 390 * mib, ceilingPercent}, // not raised: as before
	} {
		if got := ceiledPercent(c.percent, c.ceiling, 0, c.live, 0, c.least); got != c.want {
			t.Errorf("ceiledPercent(%d, %d, 0, %d, 0, %d) = %d, want %d", c.percent, c.ceiling>>20, c.live>>20, c.least, got, c.want)
		}
	}
	if o := runtimeOverhead(); o <= 0 {
		t.Errorf("runtimeOverhead() = %d: the runtime holds metadata and free pages besides its objects", o)
	}
}

// A collection that freed less than half of what was allocated since the
// one before raises the least percentage by as much as it freed little, up
// to futileMaxPercent; one that freed more leaves ceilingPercent. The
// figures are a 100 MiB OTLP dump's (gctrace), whose live heap grows with
// what attribution keeps: at a 10% ceiling its collections marked 45-60 MB
// to free 0-4 MB, 20 times a run.
func TestFutilePercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		prevLive, goal, live int64
		want                 int
	}{
		{44 * mib, 49 * mib, 44 * mib, ceilingPercent},   // freed all it allocated
		{40 * mib, 50 * mib, 45 * mib, ceilingPercent},   // freed half
		{40 * mib, 50 * mib, 45*mib + mib/2, 22},         // freed 4.5 of 10: 10 × 10 / 4.5
		{40 * mib, 50 * mib, 46 * mib, 25},               // freed 4 of 10: 10 × 10 / 4
		{40 * mib, 50 * mib, 48 * mib, futileMaxPercent}, // freed 2 of 10: 50, capped
		{40 * mib, 50 * mib, 49 * mib, futileMaxPercent}, // freed 1 of 10: 100, capped
		{44 * mib, 48 * mib, 48 * mib, futileMaxPercent}, // freed nothing ("44->48->48 MB, 48 MB goal")
		{51 * mib, 53 * mib, 59 * mib, futileMaxPercent}, // the heap passed its goal while marking
		{50 * mib, 50 * mib, 40 * mib, ceilingPercent},   // no room: nothing to judge
		{0, 0, 8 * mib, ceilingPercent},                  // no goal noted
	} {
		if got := futilePercent(c.prevLive, c.goal, c.live); got != c.want {
			t.Errorf("futilePercent(%d, %d, %d) = %d, want %d", c.prevLive>>20, c.goal>>20, c.live>>20, got, c.want)
		}
	}
}

// A raised least percentage lets the heap's goal pass the ceiling (less
// the runtime's overhead) only by the bytes of the tables in spill files,
// whose pages the governor can take out to make room.
func TestLeastPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		least                                  int
		ceiling, overhead, mapped, live, roots int64
		want                                   int
	}{
		{50, 56 * mib, 8 * mib, 119 * mib, 50 * mib, 0, 50},                   // the 100 MiB dump: room enough
		{50, 56 * mib, 8 * mib, 18 * mib, 50 * mib, 0, 32},                    // 56 − 8 + 18 = 66: 16 MB above 50
		{50, 56 * mib, 8 * mib, 0, 50 * mib, 0, ceilingPercent},               // nothing spilled: no room past the ceiling
		{50, 56 * mib, 8 * mib, 0, 80 * mib, 0, ceilingPercent},               // already past it: never below ceilingPercent
		{25, 56 * mib, 8 * mib, 119 * mib, 50 * mib, 0, 25},                   // never above least
		{ceilingPercent, 56 * mib, 0, 119 * mib, 50 * mib, 0, ceilingPercent}, // not raised
		{50, 0, 0, 119 * mib, 50 * mib, 0, ceilingPercent},                    // no ceiling
		{50, 56 * mib, 8 * mib, 119 * mib, 0, 0, ceilingPercent},              // no collection yet
	} {
		if got := leastPercent(c.least, c.ceiling, c.overhead, c.mapped, c.live, c.roots); got != c.want {
			t.Errorf("leastPercent(%d, %d, %d, %d, %d, %d) = %d, want %d", c.least, c.ceiling>>20, c.overhead>>20, c.mapped>>20, c.live>>20, c.roots>>20, got, c.want)
		}
	}
}

// Under a ceiling, a collection that frees little of what was allocated
// since the one before raises the target for the next past the ceiling's
// least percentage, where spilled tables give the room; one that frees
// what was allocated brings it back. On the pacer before, the target
// stayed at the ceiling's 10%.
func TestFutileCollectionRaisesTheTarget(t *testing.T) {
	gcAt100(t)
	spilltest.Enable(t)
	spill.Budget(1 << 30)
	table := spill.Make[int64](128 << 20 / 8) // mapped: the room past the ceiling
	if spill.Read().Mapped == 0 {
		t.Skip("the table was not put in a spill file")
	}
	ballast := make([]int64, (4*gcFloorBase)/8)
	// The free pages earlier tests' ballasts left are the runtime's
	// overhead, which takes the room under the ceiling and past it
	// (leastPercent) until the scavenger gives them back: now.
	debug.FreeOSMemory()
	h := tightGC(50)
	defer h.release()
	live, roots := heapState()
	h.ceiling(live + (live+roots)/10) // the goal at the ceiling's least
	if got := gcPercent(); got > ceilingPercent+2 {
		t.Fatalf("target %d under a ceiling 10%% above the live heap, want %d", got, ceilingPercent)
	}
	pacer.mu.Lock()
	goal := pacer.goal
	pacer.mu.Unlock()
	// Keep 60% of the way to the goal, and collect: the collection frees
	// 40% of what it could have (futilePercent: 25%).
	kept := make([]int64, (goal-live)*6/10/8)
	runtime.GC()
	waitPercent(t, func(p int) bool { return p >= 20 }, "after a collection that freed 40% of its room, want 25")
	// Drop what was kept: the next collection frees it all.
	runtime.KeepAlive(kept)
	kept = nil
	runtime.GC()
	waitPercent(t, func(p int) bool { return p <= ceilingPercent+2 }, fmt.Sprintf("after a collection that freed all, want %d", ceilingPercent))
	runtime.KeepAlive(ballast)
	runtime.KeepAlive(table)
}

// waitPercent waits for the watcher to set a target that ok accepts
// (it looks every watchEvery), and fails with why after 10 s.
func waitPercent(t *testing.T, ok func(int) bool, why string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(gcPercent()) {
		if time.Now().After(deadline) {
			t.Fatalf("target %d %s", gcPercent(), why)
		}
		time.Sleep(time.Millisecond)
	}
}

// A ceiling under the heap's goal at the paced percentage lowers the
// target until the hold that set it is released; a floor above the
// ceiling does not raise the goal past it.
func TestTightGCCeiling(t *testing.T) {
	gcAt100(t)
	ballast := make([]int64, (4*gcFloorBase)/8)
	runtime.GC()
	h := tightGC(50)
	defer h.release()
	live, roots := heapState()
	h.floor(16 * live) // would let the heap grow 16-fold
	h.ceiling(live + (live+roots)/5)
	// The runtime's overhead, which the target takes off the ceiling,
	// moves from one read to the next, so the target is checked against
	// the range a ceiling sets (TestCeiledPercent has the arithmetic).
	if got := gcPercent(); got > 20 || got < ceilingPercent {
		t.Errorf("target %d under a ceiling 20%% above the live heap, want %d-20", got, ceilingPercent)
	}
	h.ceiling(0)
	if got := gcPercent(); got < 1000 {
		t.Errorf("target %d once the ceiling is lifted, want the floor's (over 1000)", got)
	}
	runtime.KeepAlive(ballast)
}

// spillCeiling leaves an eighth of the budget and what the runtime does
// not hold outside the heap.
func TestSpillCeiling(t *testing.T) {
	if spillCeiling(0) != 0 {
		t.Errorf("a ceiling without a budget")
	}
	const budget = 1 << 30
	o1 := outsideRuntime()
	c := spillCeiling(budget)
	o2 := outsideRuntime()
	if lo, hi := budget-max(o1, o2)-budget/8, budget-min(o1, o2)-budget/8; c < lo || c > hi {
		t.Errorf("spillCeiling(1 GiB) = %d MiB, want 896 MiB less the %d-%d MiB outside the runtime", c>>20, o1>>20, o2>>20)
	}
	if got := spillCeiling(1 << 10); got != 1 && got != 1<<10-1<<7 {
		t.Errorf("spillCeiling(1 KiB) = %d, want the least ceiling, 1 (or 896 bytes with nothing outside)", got)
	}
}

// outsideRuntime counts a file's pages mapped into the process once they
// are resident: a 64 MiB file, mapped shared and written.
func TestOutsideRuntimeCountsFilePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/status")
	}
	const size = 64 << 20
	f, err := os.CreateTemp(t.TempDir(), "pages")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	before := outsideRuntime()
	mem, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Skip(err)
	}
	defer unix.Munmap(mem)
	for i := 0; i < size; i += 4096 {
		mem[i] = 1
	}
	if got := outsideRuntime() - before; got < size-size/8 || got > size+size/4 {
		t.Errorf("outside the runtime grew %d MiB with a 64 MiB file mapped", got>>20)
	}
}

// The ceiling a run set outlives its holds while spilling is on (the
// command writes its output from spilled tables after the pipeline), and
// the target before the first hold comes back once spilling ends.
func TestCeilingLingersWhileSpilling(t *testing.T) {
	release, ceil, ballast := lingeringCeiling(t)
	if got := gcPercent(); got > 20 || got < ceilingPercent {
		t.Errorf("target %d after the hold, with spilling on: want the ceiling's, at most 20", got)
	}
	release()
	deadline := time.Now().Add(10 * time.Second)
	for gcPercent() != 100 {
		if time.Now().After(deadline) {
			t.Fatalf("target %d after spilling ended, want the 100 before", gcPercent())
		}
		time.Sleep(time.Millisecond)
	}
	// Without spilling, releasing the hold restores the target at once.
	h := tightGC(50)
	h.ceiling(ceil)
	h.release()
	if got := gcPercent(); got != 100 {
		t.Errorf("target %d after the hold without spilling, want 100", got)
	}
	runtime.KeepAlive(ballast)
}

// A run that starts after spilling has ended, before the watcher of the
// earlier run's lingering ceiling has looked (every watchEvery: in-process
// commands, as tests run them, follow one another sooner), is paced without
// that ceiling, and its release restores the target before both.
func TestCeilingEndsWithSpillingBeforeTheWatcherLooks(t *testing.T) {
	release, _, ballast := lingeringCeiling(t)
	// The lingering ceiling's watcher stops without looking again, as
	// one that has not yet seen spilling end.
	pacer.mu.Lock()
	pacer.epoch++
	pacer.mu.Unlock()
	release()
	h := tightGC(50)
	if got := gcPercent(); got != 50 {
		t.Errorf("target %d for a run after spilling ended, want its own 50 (the ceiling gone with spilling)", got)
	}
	h.release()
	if got := gcPercent(); got != 100 {
		t.Errorf("target %d after the run, want the 100 before both", got)
	}
	runtime.KeepAlive(ballast)
}

// lingeringCeiling starts what both tests above start from: spilling on
// (released with release, and at the test's end), the target 100 before
// (restored at the end), a live heap of the ballast, and a run's hold with
// a ceiling 20% above that heap, released, so that the ceiling lingers.
func lingeringCeiling(t *testing.T) (release func(), ceil int64, ballast []int64) {
	t.Helper()
	gcAt100(t)
	release, err := spill.Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	t.Cleanup(release)
	spill.Budget(1 << 30)
	ballast = make([]int64, (4*gcFloorBase)/8)
	runtime.GC()
	h := tightGC(50)
	live, roots := heapState()
	ceil = live + (live+roots)/5
	h.ceiling(ceil)
	h.release()
	return release, ceil, ballast
}

// gcAt100 clears GOGC and sets the collector's target to 100 for the test,
// restoring the one before at its end: the pacer's tests start from it.
func gcAt100(t *testing.T) {
	t.Helper()
	t.Setenv("GOGC", "")
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
}

// The tenant regression tightens the collector only for a trace with GPU
// ops, whose kernel view's fits churn; without them the pipeline's own
// pacing stands.
func TestTenantGCOnlyWithGPUOps(t *testing.T) {
	gcAt100(t)
	holds := func() int {
		pacer.mu.Lock()
		defer pacer.mu.Unlock()
		return len(pacer.holds)
	}
	release := tenantGC(&ingest.Trace{})
	if n, p := holds(), gcPercent(); n != 0 || p != 100 {
		t.Errorf("without GPU ops: %d holds, target %d; want none and 100", n, p)
	}
	release()
	release = tenantGC(&ingest.Trace{GPUOps: make([]ingest.GPUOp, 1)})
	if n := holds(); n != 1 {
		t.Errorf("with GPU ops: %d holds, want 1", n)
	}
	release()
	if n, p := holds(), gcPercent(); n != 0 || p != 100 {
		t.Errorf("after release: %d holds, target %d; want none and 100", n, p)
	}
}
