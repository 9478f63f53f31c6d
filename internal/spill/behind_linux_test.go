package spill

import (
	"encoding/binary"
	"os"
	"testing"
	"unsafe"
)

// mappedPages says, page by page, which of mem's pages are mapped into the
// process now (/proc/self/pagemap's present bit; mincore would say whether
// the page cache holds them, mapped or not).
func mappedPages(t *testing.T, mem []byte) []bool {
	t.Helper()
	f, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no /proc/self/pagemap: %v", err)
	}
	defer f.Close()
	page := uintptr(os.Getpagesize())
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(mem))) / page
	hi := (uintptr(unsafe.Pointer(unsafe.SliceData(mem))) + uintptr(len(mem)) + page - 1) / page
	buf := make([]byte, 8*(hi-lo))
	if _, err := f.ReadAt(buf, int64(lo*8)); err != nil {
		t.Skipf("reading /proc/self/pagemap: %v", err)
	}
	out := make([]bool, hi-lo)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(buf[8*i:])>>63 == 1
	}
	return out
}

func countTrue(b []bool) (n int) {
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}

// withOverMark makes Behind see the process over (or under) the
// governor's mark for the test.
func withOverMark(t *testing.T, over bool) {
	old := overMark
	overMark = func() bool { return over }
	t.Cleanup(func() { overMark = old })
}

// A pass over a spilled table with a Behind keeps only the part near it
// mapped when the process is over its mark, loses no byte, and drops
// nothing under the mark.
func TestDropBehindKeepsThePassSmall(t *testing.T) {
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 40) // the governor never drops: only the pass does
	const n = 16 * MinBytes / 8
	s := Make[int64](n)
	defer Free(s)
	for i := range s {
		s[i] = int64(i) * 7
	}
	mem := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n*8)
	if got := countTrue(mappedPages(t, mem)); got < len(mem)/os.Getpagesize()*9/10 {
		t.Fatalf("after writing the table %d of its %d pages are mapped; want nearly all", got, len(mem)/os.Getpagesize())
	}

	withOverMark(t, false)
	b := DropBehind(s)
	var sum int64
	for i := range s {
		b.Passed(i)
		sum += s[i]
	}
	pages := mappedPages(t, mem)
	if got := countTrue(pages); got < len(pages)*9/10 {
		t.Errorf("under the mark a pass left %d of %d pages mapped; want nearly all", got, len(pages))
	}

	// Out of the process, as the governor leaves a table: the pass maps
	// what it reads.
	dropRange(mem)
	if got := countTrue(mappedPages(t, mem)); got != 0 {
		t.Fatalf("%d pages mapped after the table was dropped", got)
	}
	withOverMark(t, true)
	before := Read().BehindDrops
	b = DropBehind(s)
	sum = 0
	most := 0
	for i := range s {
		b.Passed(i)
		sum += s[i]
		if i%(MinBytes/8) == MinBytes/8-1 {
			most = max(most, countTrue(mappedPages(t, mem)))
		}
	}
	if want := int64(7) * n * (n - 1) / 2; sum != want {
		t.Errorf("over the mark the pass read a sum of %d; want %d", sum, want)
	}
	// The pass dropped the pages before it every behindStep (MinBytes under
	// this budget): at most
	// two steps' worth were mapped at once, where without the drops the
	// whole table would be.
	page := os.Getpagesize()
	if limit := 2*MinBytes/page + 1; most > limit {
		t.Errorf("over the mark a pass kept up to %d pages mapped; want at most %d (two steps)", most, limit)
	}
	if Read().BehindDrops <= before || Read().BehindBytes == 0 {
		t.Errorf("Stats: %d drops behind passes, %d bytes; want some", Read().BehindDrops, Read().BehindBytes)
	}
	// Every byte is there still: the dropped pages come back from the page
	// cache.
	for i := range s {
		if s[i] != int64(i)*7 {
			t.Fatalf("s[%d] = %d after the drops; want %d", i, s[i], int64(i)*7)
		}
	}
}

// A Behind over part of a spilled table drops only the pages wholly within
// the part it has passed: not the pages before the part, nor a page it
// shares with them.
func TestDropBehindStaysInItsPart(t *testing.T) {
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 40)
	const n = 8 * MinBytes / 8
	s := Make[int64](n)
	defer Free(s)
	for i := range s {
		s[i] = 1
	}
	page := os.Getpagesize()
	from := 3*page/8 + 5 // an element inside the fourth page
	part := s[from:]
	withOverMark(t, true)
	b := DropBehind(part)
	for i := range part {
		b.Passed(i)
	}
	mem := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), n*8)
	pages := mappedPages(t, mem)
	for p := range 4 {
		if !pages[p] {
			t.Errorf("page %d, before the part or shared with it, was dropped", p)
		}
	}
	if dropped := len(pages) - countTrue(pages); dropped < len(pages)/2 {
		t.Errorf("the pass over the part dropped %d of %d pages; want most", dropped, len(pages))
	}
}

// A Behind does nothing for a table on the heap, for the zero Behind and
// with spilling off: Passed never fails.
func TestDropBehindOffTheFile(t *testing.T) {
	withOverMark(t, true)
	heap := make([]int64, 1<<20)
	b := DropBehind(heap)
	var zero Behind
	for i := range heap {
		b.Passed(i)
		zero.Passed(i)
	}
	if b.mem != nil || zero.mem != nil {
		t.Errorf("a Behind of a heap table or the zero Behind holds a mapping")
	}
	var empty []int64
	e := DropBehind(empty)
	e.Passed(0)
}
