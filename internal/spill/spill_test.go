package spill

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"
)

type rec struct {
	At  int64
	Val uint32
	K   [2]uint16
}

// recSize is unsafe.Sizeof(rec{}).
const recSize = 16

// TestSliceKeepsEveryByteUnderABudget: a table in a spill file reads back
// what was written after the governor has taken its pages out of the
// process, and the process's resident memory came back under the budget.
func TestSliceKeepsEveryByteUnderABudget(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("spill files are built for Linux only")
	}
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	r := newResident()
	defer r.close()
	base := r.read()
	if base == 0 {
		t.Skip("no /proc/self/statm")
	}
	// A budget 16 MiB above what the process holds now, and a 96 MiB
	// table: the governor must take most of the table's pages out.
	budget := base + 16<<20
	Budget(budget)
	const n = 96 << 20 / recSize
	recs := Slice[rec](n)
	if cap(recs) != n || len(recs) != 0 {
		t.Fatalf("Slice: len %d cap %d, want 0 and %d", len(recs), cap(recs), n)
	}
	for i := range n {
		recs = append(recs, rec{At: int64(i) * 7, Val: uint32(i), K: [2]uint16{uint16(i), 1}})
	}
	if st := Read(); st.Mapped != n*recSize {
		t.Fatalf("mapped %d bytes, want %d: the table is not in a spill file", st.Mapped, n*recSize)
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.read() > budget && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if cur := r.read(); cur > budget {
		t.Errorf("resident %d MiB stayed above the budget %d MiB", cur>>20, budget>>20)
	}
	if st := Read(); st.Drops == 0 || st.DroppedBytes == 0 {
		t.Errorf("stats %+v: the governor never dropped a page", st)
	}
	for i := range recs {
		if want := (rec{At: int64(i) * 7, Val: uint32(i), K: [2]uint16{uint16(i), 1}}); recs[i] != want {
			t.Fatalf("record %d is %+v after the drop, want %+v", i, recs[i], want)
		}
	}
}

// TestSliceOnTheHeap: without a budget, below MinBytes, or before Enable,
// Slice is make.
func TestSliceOnTheHeap(t *testing.T) {
	if s := Slice[rec](1 << 20); cap(s) != 1<<20 || Read().Mapped != 0 {
		t.Errorf("not enabled: cap %d, mapped %d", cap(s), Read().Mapped)
	}
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	_ = Slice[rec](1 << 20) // no budget yet
	Budget(1 << 30)
	_ = Slice[rec](MinBytes/recSize - 1) // too small
	if st := Read(); st.Mapped != 0 {
		t.Errorf("mapped %d bytes, want none", st.Mapped)
	}
	if s := Slice[rec](MinBytes / recSize); cap(s) != MinBytes/recSize || Read().Mapped != MinBytes {
		t.Errorf("at MinBytes with a budget: cap %d, mapped %d, want %d in a file", cap(s), Read().Mapped, MinBytes)
	}
	// Under a small budget, a table of a 32nd of it is large.
	Budget(4 << 20)
	before := Read().Mapped
	_ = Slice[rec](1<<17/recSize - 1)
	if got := Read().Mapped; got != before {
		t.Errorf("under a 4 MiB budget a table under 128 KiB was mapped")
	}
	_ = Slice[rec](1 << 17 / recSize)
	if got := Read().Mapped - before; got != 1<<17 {
		t.Errorf("under a 4 MiB budget a 128 KiB table: mapped %d bytes, want 131072", got)
	}
}

// TestSliceLargerThanAddressSpace: a table of more bytes than an int holds
// panics as make does, without a budget or with one; it is never mapped
// (a 32-bit system mapped int(size) bytes, 4 GiB + 1 MiB as 1 MiB, under a
// slice of 4097 MiB).
func TestSliceLargerThanAddressSpace(t *testing.T) {
	if strconv.IntSize == 64 {
		t.Skip("an int holds every table's size on a 64-bit system")
	}
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 30)
	defer func() {
		if r := recover(); r == nil {
			t.Errorf("no panic; mapped %d bytes", Read().Mapped)
		}
		if m := Read().Mapped; m != 0 {
			t.Errorf("mapped %d bytes", m)
		}
	}()
	s := Slice[[1 << 20]byte](4097)
	t.Errorf("Slice of 4097 MiB gave cap %d", cap(s))
}

func TestRecSize(t *testing.T) {
	if s := unsafe.Sizeof(rec{}); s != recSize {
		t.Fatalf("rec is %d bytes, recSize says %d", s, recSize)
	}
}

func TestSliceRefusesPointers(t *testing.T) {
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "holds pointers") {
			t.Errorf("recovered %v, want a panic naming pointers", r)
		}
	}()
	_ = Slice[struct {
		A int
		S []byte
	}](10)
}

func TestEnableRefusesMemoryDirectories(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	if _, err := os.Stat("/dev/shm"); err != nil {
		t.Skip("no /dev/shm")
	}
	release, err := Enable("/dev/shm")
	defer release()
	if err == nil || !strings.Contains(err.Error(), "tmpfs") {
		t.Errorf("Enable(/dev/shm): %v, want a refusal naming tmpfs", err)
	}
}

// TestEnableIsShared: a second Enable shares the first's state, and the
// tables stay mapped until the last release.
func TestEnableIsShared(t *testing.T) {
	first, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	second, err := Enable(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	Budget(1 << 30)
	recs := Slice[rec](MinBytes / recSize)
	first()
	first() // a second call does nothing
	if current() != 1<<30 {
		t.Errorf("budget %d after the first release, want it kept", current())
	}
	recs = append(recs, rec{At: 1}) // still mapped: a fault here would crash
	second()
	if current() != 0 || Read().Mapped != 0 {
		t.Errorf("after the last release: budget %d, mapped %d", current(), Read().Mapped)
	}
	_ = recs
}

// TestGovernorStartsWithFirstTable: Enable and Budget start no governor
// (it would read the resident set every tick of every command); the first
// table mapped does, and the last release stops it.
func TestGovernorStartsWithFirstTable(t *testing.T) {
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 30)
	if governing() {
		t.Fatal("a governor runs with no table mapped")
	}
	_ = Slice[rec](MinBytes / recSize)
	if !governing() {
		t.Fatal("no governor after a table was mapped")
	}
	release()
	if governing() {
		t.Fatal("the governor outlived the last release")
	}
}

func governing() bool {
	state.mu.Lock()
	defer state.mu.Unlock()
	return state.done != nil
}

// scanCPU fills a 256 MiB table made by make (budget 0) or by Slice under
// budget, reads (or rewrites) all of it b.N times, and reports the
// process's CPU time (user+sys, the governor's thread included) a pass and
// what the governor dropped.
func scanCPU(b *testing.B, budget int64, write bool) {
	spilled := budget > 0
	if runtime.GOOS != "linux" {
		b.Skip("Linux only")
	}
	const n = 256 << 20 / recSize
	var recs []rec
	if spilled {
		release, err := Enable(b.TempDir())
		if err != nil {
			b.Skipf("spilling is not possible here: %v", err)
		}
		defer release()
		Budget(budget)
		recs = Slice[rec](n)
		if Read().Mapped == 0 {
			b.Fatal("not spilled")
		}
	} else {
		recs = make([]rec, 0, n)
	}
	for i := range n {
		recs = append(recs, rec{At: int64(i), Val: uint32(i)})
	}
	var sum int64
	start := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		for i := range recs {
			sum += recs[i].At
			if write {
				recs[i].Val++
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N)/1e6, "cpu-ms/pass")
	if sum == 0 {
		b.Fatal("nothing read")
	}
	st := Read()
	b.ReportMetric(float64(st.Drops), "drops")
	b.ReportMetric(float64(st.DroppedBytes>>20), "dropped-MiB")
}

// overBudget is below what the Go heap alone holds: the governor can never
// get under it. roomy is a budget the process never reaches.
const overBudget, roomy = 1, 1 << 40

func BenchmarkScanHeap(b *testing.B)                 { scanCPU(b, 0, false) }
func BenchmarkScanSpilled(b *testing.B)              { scanCPU(b, roomy, false) }
func BenchmarkScanSpilledOverBudget(b *testing.B)    { scanCPU(b, overBudget, false) }
func BenchmarkRewriteHeap(b *testing.B)              { scanCPU(b, 0, true) }
func BenchmarkRewriteSpilled(b *testing.B)           { scanCPU(b, roomy, true) }
func BenchmarkRewriteSpilledOverBudget(b *testing.B) { scanCPU(b, overBudget, true) }

// TestFreeUnmapsOnlyItsTable: Free gives back the file of a table Slice
// spilled, and leaves the others, heap slices and slices that do not start
// at a table's first element alone.
func TestFreeUnmapsOnlyItsTable(t *testing.T) {
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 30)
	const n = MinBytes / recSize
	a, b := Slice[rec](n), Slice[rec](n)
	a, b = a[:n], b[:n]
	b[n-1] = rec{At: 42}
	if st := Read(); st.Mapped != 2*MinBytes {
		t.Fatalf("mapped %d bytes, want %d", st.Mapped, 2*MinBytes)
	}
	Free(a[1:])
	Free(make([]rec, n))
	Free[rec](nil)
	if st := Read(); st.Mapped != 2*MinBytes {
		t.Fatalf("after freeing slices that are no table: mapped %d bytes, want %d", st.Mapped, 2*MinBytes)
	}
	Free(a)
	if st := Read(); st.Mapped != MinBytes || st.Peak != 2*MinBytes {
		t.Errorf("after Free: mapped %d, peak %d; want %d and %d", st.Mapped, st.Peak, MinBytes, 2*MinBytes)
	}
	if b[n-1].At != 42 {
		t.Errorf("the other table lost its bytes: %+v", b[n-1])
	}
	Free(b)
	if st := Read(); st.Mapped != 0 {
		t.Errorf("after freeing both: mapped %d", st.Mapped)
	}
}

// TestPacingLeavesRoomForTheLastRise: after the resident set rose by r
// between two ticks, the governor drops from r under the budget (at least an
// eighth, at most a quarter of it), to an eighth lower; the room shrinks
// again as ticks pass without such a rise, and drops do not count as one.
func TestPacingLeavesRoomForTheLastRise(t *testing.T) {
	const budget = 800 << 20
	var p pacing
	if high, low := p.marks(500<<20, budget); high != budget-budget/8 || low != high-budget/8 {
		t.Fatalf("first tick: marks %d, %d MiB; want an eighth under the budget and an eighth under that", high>>20, low>>20)
	}
	high, low := p.marks(650<<20, budget) // rose 150 MiB in one tick
	if high != budget-150<<20 || low != high-budget/8 {
		t.Errorf("after a 150 MiB rise: marks %d, %d MiB; want %d, %d", high>>20, low>>20, (budget-150<<20)>>20, (budget-150<<20-budget/8)>>20)
	}
	p.dropped(400 << 20)
	if high, _ := p.marks(410<<20, budget); high != budget-(150<<20-150<<20/riseDecay) {
		t.Errorf("a smaller rise after a drop: high %d, want the 150 MiB rise decayed one tick", high)
	}
	for range 4000 {
		p.marks(410<<20, budget)
	}
	if high, _ := p.marks(410<<20, budget); high != budget-budget/8 {
		t.Errorf("after 8 s without a rise: high %d MiB, want an eighth under the budget again", high>>20)
	}
	p.marks(900<<20, budget) // a rise of 490 MiB: the room is capped
	if high, _ := p.marks(900<<20, budget); high != budget-budget/4 {
		t.Errorf("after a rise larger than the budget's quarter: high %d MiB, want %d", high>>20, (budget-budget/4)>>20)
	}
}
