package driver

import (
	"bytes"
	"io"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// TestSpillBudgetCountsTheLiveHeap: a run opened while an earlier run's
// data is live (diff's baseline after its candidate) gets a budget above
// that data, not below it.
func TestSpillBudgetCountsTheLiveHeap(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	held := make([]byte, 128<<20)
	for i := range held {
		held[i] = byte(i)
	}
	runtime.GC()
	const input = 16 << 20
	if got, want := spillBudget(input), int64(max(input, gcFloorBase)+len(held)); got < want {
		t.Errorf("spillBudget(%d) with %d MiB live = %d MiB, want at least %d MiB", input, len(held)>>20, got>>20, want>>20)
	}
	runtime.KeepAlive(held)
	debug.SetMemoryLimit(64 << 20)
	if got := spillBudget(input); got != 64<<20 {
		t.Errorf("under a 64 MiB limit spillBudget = %d MiB, want the limit", got>>20)
	}
}

// TestSpillBudgetAboveWhatTheProcessHolds: a small run's budget leaves
// the heap gcFloorBase above the resident memory the runtime does not hold
// (the binary's pages), rather than gcFloorBase in all, of which the
// binary took more than half and the heap's ceiling the rest.
func TestSpillBudgetAboveWhatTheProcessHolds(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(1 << 40))
	outside := outsideRuntime()
	if outside == 0 {
		t.Skip("the resident memory outside the runtime is not known here (no /proc)")
	}
	if got, want := spillBudget(1<<20), gcFloorBase+outside; got < want {
		t.Errorf("spillBudget(1 MiB) = %d MiB, want at least %d MiB (gcFloorBase above the %d MiB outside the runtime)", got>>20, want>>20, outside>>20)
	}
}

// TestFloorLessThisRunsSpilledTables: the collector's floor is the run's
// own less the tables it put in spill files, not less an earlier run's
// (diff's candidate's, still mapped while the baseline is read).
func TestFloorLessThisRunsSpilledTables(t *testing.T) {
	if os.Getenv("GOGC") != "" {
		t.Skip("GOGC set: the pacer holds nothing")
	}
	spilltest.Enable(t)
	spill.Budget(1 << 30)
	const table = 8 << 20
	earlier := spill.Slice[int64](table / 8)
	if spill.Read().Mapped != table {
		t.Skip("the earlier table was not spilled")
	}
	h := tightGC(50)
	defer h.release()
	const input = 100 << 20
	h.floor(input)
	if got, want := floorNow(), int64(gcFloorBase+input); got != want {
		t.Errorf("floor %d MiB with an earlier run's %d MiB spilled, want %d MiB", got>>20, table>>20, want>>20)
	}
	own := spill.Slice[int64](table / 8)
	if got, want := floorNow(), int64(gcFloorBase+input-table); got != want {
		t.Errorf("floor %d MiB with %d MiB of the run's own spilled, want %d MiB", got>>20, table>>20, want>>20)
	}
	// The tables freed (spill.Free), the floor is what was asked, never
	// above it: the earlier run's table, mapped before the hold, gives
	// this run no room it did not have.
	spill.Free(own)
	spill.Free(earlier)
	if got, want := floorNow(), int64(gcFloorBase+input); got != want {
		t.Errorf("floor %d MiB once both tables are freed, want %d MiB", got>>20, want>>20)
	}
}

func floorNow() int64 {
	pacer.mu.Lock()
	defer pacer.mu.Unlock()
	return pacer.floor()
}

// TestStatsSpillsPastItsBudget: stats keeps the budget analyze keeps for an
// input of its size (gcHold.budget), so a large export's GPU ops go to a
// spill file past it, and its report is the same as with no budget.
func TestStatsSpillsPastItsBudget(t *testing.T) {
	const demo = "../../testdata/demo/gpu.nsys.sqlite.gz"
	ctx := t.Context()
	free, err := Stats(ctx, "cuda_gpu_kern_sum", []string{demo}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	spilltest.Enable(t)
	// A limit under what the test binary holds: the budget is the limit,
	// and a table of a 32nd of it goes to a file.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(16 << 20))
	spilled, err := Stats(ctx, "cuda_gpu_kern_sum", []string{demo}, io.Discard)
	debug.SetMemoryLimit(1 << 40)
	if err != nil {
		t.Fatal(err)
	}
	if st := spill.Read(); st.Peak == 0 {
		t.Errorf("stats of %s under a 16 MiB limit put no table in a spill file", demo)
	}
	if !reflect.DeepEqual(free.Files[0].Table, spilled.Files[0].Table) {
		t.Errorf("stats of %s: the report under a 16 MiB limit differs from the one without", demo)
	}
}

// TestPassesDropBehindUnderABudget: analyzed under a budget below what the
// process holds, the demo's passes over its spilled tables drop the pages
// behind them (spill.Behind: sortByTime, align, the steps, the token walk,
// the tenant kernel view), and the report is the same bytes as without a
// budget.
func TestPassesDropBehindUnderABudget(t *testing.T) {
	free := analyzeJSON(t, demoDir)
	spilltest.Enable(t)
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(16 << 20))
	a, err := Run(t.Context(), []string{demoDir}, Options{})
	debug.SetMemoryLimit(1 << 40)
	if err != nil {
		t.Fatal(err)
	}
	st := spill.Read()
	var b bytes.Buffer
	if err := a.Report(testVersion).WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	if st.Peak == 0 {
		t.Fatalf("analyze of %s under a 16 MiB limit put no table in a spill file", demoDir)
	}
	if st.BehindDrops == 0 || st.BehindBytes == 0 {
		t.Errorf("under a 16 MiB limit the passes dropped nothing behind them (%d drops, %d bytes; the governor %d)", st.BehindDrops, st.BehindBytes, st.Drops)
	}
	if b.String() != free {
		t.Errorf("the report under a 16 MiB limit, with the passes dropping behind them, differs from the one without")
	}
}
