package spill

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestRefusal: spill files go where every write lands in blocks reserved
// beforehand; a file system in memory, copy-on-write or across a network
// gets none.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   uint32
		want string // in the refusal; "" for none
	}{
		{"ext4", unix.EXT4_SUPER_MAGIC, ""},
		{"xfs", unix.XFS_SUPER_MAGIC, ""},
		{"overlayfs", unix.OVERLAYFS_SUPER_MAGIC, ""},
		{"tmpfs", unix.TMPFS_MAGIC, "tmpfs"},
		{"ramfs", unix.RAMFS_MAGIC, "tmpfs"},
		{"btrfs", unix.BTRFS_SUPER_MAGIC, "copy-on-write"},
		{"bcachefs", unix.BCACHEFS_SUPER_MAGIC, "copy-on-write"},
		{"zfs", zfsMagic, "copy-on-write"},
		{"nfs", unix.NFS_SUPER_MAGIC, "network"},
		{"cifs", unix.CIFS_SUPER_MAGIC, "network"},
		{"smb2", unix.SMB2_SUPER_MAGIC, "network"},
		{"fuse", unix.FUSE_SUPER_MAGIC, "FUSE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := refusal(tc.fs)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("refusal(%#x) = %q, want one naming %q", tc.fs, got, tc.want)
			}
		})
	}
}

// BenchmarkResidentRead is the governor's cost a tick (one read of
// /proc/self/statm), beside what the tables save.
func BenchmarkResidentRead(b *testing.B) {
	r := newResident()
	defer r.close()
	for b.Loop() {
		if r.read() == 0 {
			b.Fatal("no resident set")
		}
	}
}

// TestNoRiseAcrossTicksWithoutTables: while Free has given back every
// table the governor reads nothing; the resident set's growth in that time
// is no rise between two ticks, and a table mapped after it finds the
// marks at the budget, not lowered by that growth (the pages then dropped
// would be faulted in again at once).
func TestNoRiseAcrossTicksWithoutTables(t *testing.T) {
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	rss := newResident()
	defer rss.close()
	const grow = 256 << 20
	Budget(1 << 40)
	a := Slice[byte](MinBytes)
	time.Sleep(20 * tick) // the governor reads the resident set with a in
	Free(a)
	heap := make([]byte, grow)
	for i := 0; i < len(heap); i += 4096 {
		heap[i] = 1
	}
	// The resident set now fits under the budget's high mark (an eighth
	// under it, with no rise seen) with 16 MiB to spare; the growth,
	// capped at a quarter of the budget, would not.
	Budget((rss.read() + 16<<20) * 8 / 7)
	time.Sleep(20 * tick)
	b := Slice[byte](MinBytes)
	time.Sleep(50 * tick)
	if st := Read(); st.Drops != 0 {
		t.Errorf("%d drops of a table under the budget after the heap grew %d MiB with no table mapped, want none", st.Drops, grow>>20)
	}
	Free(b)
	runtime.KeepAlive(heap)
}

// Make is n zero values, on the heap as in a spill file.
func TestMakeIsFullLengthZeros(t *testing.T) {
	zeros := func(s []int64, n int) bool {
		if len(s) != n {
			return false
		}
		for _, v := range s {
			if v != 0 {
				return false
			}
		}
		return true
	}
	if s := Make[int64](1000); !zeros(s, 1000) {
		t.Errorf("Make(1000) without spilling: length %d or a value not zero", len(s))
	}
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 40)
	n := MinBytes / 8
	s := Make[int64](n)
	if !zeros(s, n) || Read().Mapped < int64(MinBytes) {
		t.Errorf("Make(%d) while spilling: length %d, %d bytes mapped; want %d zeros in a spill file", n, len(s), Read().Mapped, n)
	}
	Free(s)
}

// Grow keeps a table that has the room, and otherwise moves its elements
// to a new table with it, in a spill file while spilling, giving the old
// one back.
func TestGrowMovesIntoRoom(t *testing.T) {
	s := append(make([]int64, 0, 4), 1, 2, 3)
	if g := Grow(s, 4); &g[0] != &s[0] || len(g) != 3 {
		t.Errorf("Grow to a capacity s has moved it")
	}
	if g := Grow(s, 100); cap(g) < 100 || !slices.Equal(g, []int64{1, 2, 3}) {
		t.Errorf("Grow(s, 100) = %v, capacity %d; want s's elements with room for 100", g, cap(g))
	}
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 40)
	small := Make[int64](MinBytes / 8)
	small[len(small)-1] = 7
	grown := Grow(small, MinBytes/4)
	if cap(grown) < MinBytes/4 || len(grown) != MinBytes/8 || grown[len(grown)-1] != 7 {
		t.Errorf("Grow while spilling: length %d, capacity %d, last %d; want %d elements, the last 7, room for %d", len(grown), cap(grown), grown[len(grown)-1], MinBytes/8, MinBytes/4)
	}
	if got := Read().Mapped; got != int64(2*MinBytes) {
		t.Errorf("%d bytes mapped after Grow, want the new table's %d alone (the old one given back)", got, 2*MinBytes)
	}
	Free(grown)
}

// A table in a spill file whole grows where it is: its bytes kept, no
// second table mapped beside it (the most mapped at once is the grown
// table's size alone), and its pages written stay resident. A slice of a
// table moves, as before, and the table stays.
func TestGrowExtendsASpilledTableInPlace(t *testing.T) {
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 40)
	table := Make[int64](MinBytes / 8)
	for i := range table {
		table[i] = int64(i)
	}
	grown := Grow(table, MinBytes/2)
	if cap(grown) != MinBytes/2 || len(grown) != MinBytes/8 {
		t.Fatalf("Grow: length %d, capacity %d; want %d, %d", len(grown), cap(grown), MinBytes/8, MinBytes/2)
	}
	for i, v := range grown {
		if v != int64(i) {
			t.Fatalf("grown[%d] = %d, want %d", i, v, i)
		}
	}
	st := Read()
	if st.Mapped != 4*MinBytes || st.Peak != 4*MinBytes {
		t.Errorf("mapped %d, at most %d; want the grown table's %d both times (no copy beside the old one)", st.Mapped, st.Peak, 4*MinBytes)
	}
	grown = append(grown, 42)
	if grown[MinBytes/8] != 42 || cap(grown) != MinBytes/2 {
		t.Errorf("an append into the grown room moved the table or lost the value")
	}
	part := grown[1:]
	moved := Grow(part, MinBytes)
	if Read().Mapped != 4*MinBytes+8*MinBytes || moved[0] != 1 {
		t.Errorf("a slice of a table: mapped %d, first %d; want a new table of %d beside the old one, and the slice's values", Read().Mapped, moved[0], 8*MinBytes)
	}
	Free(moved)
	Free(grown)
	if Read().Mapped != 0 {
		t.Errorf("%d bytes still mapped after both tables were given back", Read().Mapped)
	}
}

// A table's pages are in the page cache, zeros written, when Slice gives
// it and when Grow extends it (writeZeros): the first touch of a page maps
// it rather than reading it in through the file system. None of it is
// mapped into the process, so none counts in the resident set, until it is
// touched.
func TestSpillFilesAreWrittenBeforeTouched(t *testing.T) {
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 40)
	table := Slice[byte](MinBytes)
	if Read().Mapped != MinBytes {
		t.Fatalf("%d bytes mapped, want the table's %d in a spill file", Read().Mapped, MinBytes)
	}
	// check looks at mem, a table's room not touched yet, in a mapping
	// whose pages touched so far are touched KiB.
	check := func(what string, mem []byte, touched int) {
		t.Helper()
		if cached, pages := cachedPages(t, mem); cached != pages {
			t.Errorf("%s: %d of %d pages in the page cache, want all", what, cached, pages)
		}
		if rss := mappedRss(t, mem); rss != touched {
			t.Errorf("%s: %d KiB of its mapping resident, want the %d KiB touched", what, rss, touched)
		}
		for i := 0; i < len(mem); i += 4096 {
			if mem[i] != 0 {
				t.Fatalf("%s: byte %d is %d, want zero", what, i, mem[i])
			}
		}
	}
	check("a new table", table[:cap(table)], 0) // reads every page
	table = append(table, 1)
	grown := Grow(table, 2*MinBytes)
	if cap(grown) != 2*MinBytes || Read().Mapped != 2*MinBytes {
		t.Fatalf("Grow: capacity %d, %d bytes mapped; want the table grown in place to %d", cap(grown), Read().Mapped, 2*MinBytes)
	}
	check("a grown table's new room", grown[MinBytes:cap(grown)], MinBytes>>10)
	if grown[0] != 1 {
		t.Errorf("Grow lost the byte written")
	}
	Free(grown)
}

// cachedPages counts mem's pages that are in the page cache (mincore: for
// a shared file mapping, whether the file's page is cached, mapped or not),
// and its pages.
func cachedPages(t *testing.T, mem []byte) (cached, pages int) {
	t.Helper()
	page := os.Getpagesize()
	vec := make([]byte, (len(mem)+page-1)/page)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(unsafe.SliceData(mem))), uintptr(len(mem)), uintptr(unsafe.Pointer(unsafe.SliceData(vec))))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	for _, v := range vec {
		cached += int(v & 1)
	}
	return cached, len(vec)
}

// mappedRss is the resident KiB of the mapping that starts at or holds
// mem's first byte (/proc/self/smaps).
func mappedRss(t *testing.T, mem []byte) int {
	t.Helper()
	return rssAt(t, uintptr(unsafe.Pointer(unsafe.SliceData(mem))))
}

// rssAt is the resident KiB of the mapping that holds address at
// (/proc/self/smaps).
func rssAt(t *testing.T, at uintptr) int {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 {
			in = lo <= at && at < hi
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Rss:"); ok && in {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")))
			if err != nil {
				t.Fatalf("smaps: %q: %v", line, err)
			}
			return kb
		}
	}
	t.Fatalf("no mapping holds %#x in /proc/self/smaps", at)
	return 0
}

// A table's file is reserved and its zeros written without the package's
// lock, which the governor takes at every tick: with it held, a 1 GiB
// table kept the governor (and Read, Free, every other Slice) waiting for
// seconds, while nothing could be dropped.
func TestReserveRunsOutsideTheLock(t *testing.T) {
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 40)
	var calls, locked int
	reserving = func() {
		calls++
		if !state.mu.TryLock() {
			locked++
			return
		}
		state.mu.Unlock()
	}
	defer func() { reserving = nil }()
	table := Slice[byte](MinBytes)
	grown := Grow(table, 2*MinBytes)
	if cap(grown) != 2*MinBytes || Read().Mapped != 2*MinBytes {
		t.Fatalf("Grow: capacity %d, %d bytes mapped; want the table grown in place to %d", cap(grown), Read().Mapped, 2*MinBytes)
	}
	Free(grown)
	if calls != 2 || locked != 0 {
		t.Errorf("reserve ran %d times (want 2: Slice, Grow), %d of them with the lock held (want 0)", calls, locked)
	}
}

// The program's droppable pages are the executable's mappings that are not
// writable and that the process has not written: not a writable one, not
// one with anonymous (written) pages, not another file's.
func TestParseProgram(t *testing.T) {
	const exe = "/usr/local/bin/llmprof"
	smaps := `00400000-00402000 r--p 00000000 fe:00 99 /usr/local/bin/llmprof
Rss:                   8 kB
Anonymous:             0 kB
00402000-01429000 r-xp 00002000 fe:00 99 /usr/local/bin/llmprof
Size:              16540 kB
Rss:               10268 kB
Anonymous:             0 kB
01429000-02435000 r--p 01029000 fe:00 99 /usr/local/bin/llmprof
Anonymous:             0 kB
02435000-02436000 r--p 02034000 fe:00 99 /usr/local/bin/llmprof
Anonymous:             4 kB
02436000-0250b000 rw-p 02035000 fe:00 99 /usr/local/bin/llmprof
Anonymous:           232 kB
0250b000-0260b000 rw-p 00000000 00:00 0
Anonymous:          1024 kB
7f0000000000-7f0000100000 r-xp 00000000 fe:00 12 /usr/lib/libc.so.6
Anonymous:             0 kB
7f0000200000-7f0000300000 r-xp 00000000 fe:00 99 /usr/local/bin/llmprof (deleted)
Anonymous:             0 kB
`
	got := parseProgram([]byte(smaps), exe)
	want := [][2]uintptr{{0x400000, 0x402000}, {0x402000, 0x1429000}, {0x1429000, 0x2435000}}
	if !slices.Equal(got.spans, want) {
		t.Errorf("parseProgram: spans %x, want %x", got.spans, want)
	}
	// A path with spaces is the rest of the header line.
	const spaced = "/home/a user/go/bin/llmprof"
	smaps = "00402000-01429000 r-xp 00002000 fe:00 99                         " + spaced + "\nAnonymous:             0 kB\n" +
		"01429000-02435000 r--p 01029000 fe:00 99 /home/a\nAnonymous:             0 kB\n"
	if got := parseProgram([]byte(smaps), spaced); !slices.Equal(got.spans, [][2]uintptr{{0x402000, 0x1429000}}) {
		t.Errorf("parseProgram of %q: spans %x, want the one mapping of it", spaced, got.spans)
	}
}

// Dropping the program's pages takes the test binary's own code and
// constants out of its page tables: counted from /proc/self/pagemap (a
// page table entry's present bit) into buffers made before, so that little
// runs between the drop and the count to map pages in again.
func TestProgramPagesDrop(t *testing.T) {
	p := programPages()
	here := reflect.ValueOf(TestProgramPagesDrop).Pointer()
	if !slices.ContainsFunc(p.spans, func(s [2]uintptr) bool { return s[0] <= here && here < s[1] }) {
		t.Fatalf("programPages: spans %x, none holds this test's code at %#x", p.spans, here)
	}
	pm, err := os.Open("/proc/self/pagemap")
	if err != nil {
		t.Skipf("no /proc/self/pagemap: %v", err)
	}
	defer pm.Close()
	page := uintptr(os.Getpagesize())
	bufs := make([][]byte, len(p.spans))
	for i, s := range p.spans {
		bufs[i] = make([]byte, 8*((s[1]-s[0])/page))
	}
	present := func() (n int) {
		for i, s := range p.spans {
			if _, err := pm.ReadAt(bufs[i], int64(s[0]/page*8)); err != nil {
				t.Fatalf("pagemap: %v", err)
			}
			for j := 0; j < len(bufs[i]); j += 8 {
				n += int(bufs[i][j+7] >> 7) // bit 63: present
			}
		}
		return n
	}
	before := present()
	p.drop()
	after := present()
	t.Logf("program pages mapped: %d before the drop, %d after", before, after)
	if after >= before/2 {
		t.Errorf("program pages mapped: %d after the drop, %d before; want under half", after, before)
	}
}

// Over the budget with every table's pages out, the governor takes the
// program's out too, at most once each programEvery.
func TestGovernorDropsProgramPages(t *testing.T) {
	if len(programPages().spans) == 0 {
		t.Skip("no program mappings found in /proc/self/smaps")
	}
	release, err := Enable(t.TempDir())
	if err != nil {
		t.Skipf("spilling is not possible here: %v", err)
	}
	defer release()
	Budget(1 << 20) // below what the test binary holds before any table
	start := time.Now()
	table := Slice[byte](MinBytes)
	defer Free(table)
	// Two drops at least, however late the governor's ticks come on a
	// loaded machine; a deadline, not a fixed sleep, bounds the wait.
	st := Read()
	for deadline := start.Add(30 * time.Second); st.ProgramDrops < 2 && time.Now().Before(deadline); st = Read() {
		time.Sleep(tick)
	}
	elapsed := time.Since(start)
	if most := int(elapsed/programEvery) + 1; st.ProgramDrops < 2 || st.ProgramDrops > most {
		t.Errorf("%d drops of the program's pages in %v over the budget, want 2 to %d (one each %v at most)", st.ProgramDrops, elapsed, most, programEvery)
	}
}
