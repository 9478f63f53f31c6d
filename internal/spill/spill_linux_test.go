package spill

import (
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

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
	// The resident set now fits the budget with 32 MiB to spare; the
	// growth, capped at a quarter of the budget, would not.
	Budget(rss.read() + 32<<20)
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
