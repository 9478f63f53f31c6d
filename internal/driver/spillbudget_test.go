package driver

import (
	"runtime"
	"runtime/debug"
	"testing"
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
	if got, want := spillBudget(input), int64(gcFloorBase+input+len(held)); got < want {
		t.Errorf("spillBudget(%d) with %d MiB live = %d MiB, want at least %d MiB", input, len(held)>>20, got>>20, want>>20)
	}
	runtime.KeepAlive(held)
	debug.SetMemoryLimit(64 << 20)
	if got := spillBudget(input); got != 64<<20 {
		t.Errorf("under a 64 MiB limit spillBudget = %d MiB, want the limit", got>>20)
	}
}
