package causal

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// kernelsByStart's keys and indexes, a table each the size of the kernels,
// are in spill files while spilling is on (the largest arrays of a long
// run's tenant analysis), and given back once the GPU busy load and the
// tenants' kernel lists are made from them; the lists are one table, given
// back by free: the results are those made on the heap, and the spill
// files hold nothing afterwards.
func TestKernelsByStartSpills(t *testing.T) {
	const n = 20000
	rng := rand.New(rand.NewPCG(5, 11))
	tr := &ingest.Trace{GPUOps: make([]ingest.GPUOp, 0, n+n/10)}
	for range n {
		// Out of start order (BusyLoad sorts only then), with ties.
		start := rng.Int64N(1e9)
		op := kernel(uint32(1+rng.IntN(4)), uint32(rng.IntN(3)), start, start+rng.Int64N(5e6))
		op.Device = int16(rng.IntN(2))
		tr.GPUOps = append(tr.GPUOps, op)
		if rng.IntN(10) == 0 {
			tr.GPUOps = append(tr.GPUOps, ingest.GPUOp{Start: start, End: start + 1e6, Pid: 1, Kind: ingest.OpMemcpy})
		}
	}
	tm := NewTenantMap(map[uint32]string{1: "A", 2: "B", 3: "A"})
	g := Grid{Origin: 0, Width: 1e8, N: 10}
	var lists, listed int64 // the bytes in spill files before free, and in the lists
	run := func() string {
		l := BusyLoad(tr.GPUOps, tm, g)
		k := groupKernels(tr, tm)
		out := fmt.Sprintf("%v %v %v %d", l.Values, l.Notes, k.keys, k.unmapped)
		listed = 0
		for _, key := range k.keys {
			out += fmt.Sprintf(" %v", k.kernels[key])
			listed += int64(4 * len(k.kernels[key]))
		}
		lists = spill.Read().Mapped
		k.free()
		return out
	}
	want := run()

	spilltest.Enable(t)
	// Tables of 8 KiB and more in files: the keys (16 bytes a kernel)
	// and the indexes (8).
	spill.Budget(64 << 10)
	if got := run(); got != want {
		t.Errorf("spilled, the busy load and kernel lists differ from those made on the heap:\n%.300s\nwant\n%.300s", got, want)
	}
	// Both at once, while the indexes are filled from the sorted keys.
	if s, least := spill.Read(), int64(24*n); s.Peak < least {
		t.Errorf("at most %d bytes in spill files at once, want at least %d (the keys and indexes of %d kernels)", s.Peak, least, n)
	}
	if lists < listed {
		t.Errorf("%d bytes in spill files with the kernel lists made, want at least %d (their table)", lists, listed)
	}
	if s := spill.Read(); s.Mapped != 0 {
		t.Errorf("%d bytes still in spill files, want none", s.Mapped)
	}
}
