package attribution

import (
	"slices"
	"testing"
)

// TestChunksTakeIsCapped: slices taken one after another share an array,
// and an append past one's room reallocates it instead of overwriting the
// next; a slice longer than a chunk gets an array of its own.
func TestChunksTakeIsCapped(t *testing.T) {
	var c chunks[int64]
	a := append(c.take(2), 1, 2)
	b := append(c.take(3), 3, 4, 5)
	if cap(a) != 2 || cap(b) != 3 {
		t.Fatalf("cap(a) %d, cap(b) %d: want 2 and 3", cap(a), cap(b))
	}
	a = append(a, 9)
	if !slices.Equal(b, []int64{3, 4, 5}) || !slices.Equal(a, []int64{1, 2, 9}) {
		t.Fatalf("a %v, b %v after appending to a: want [1 2 9] and [3 4 5]", a, b)
	}
	big := c.take(chunkLen + 1)
	if cap(big) != chunkLen+1 || len(big) != 0 {
		t.Fatalf("take(%d): len %d cap %d", chunkLen+1, len(big), cap(big))
	}
	var none *chunks[int64]
	if s := none.take(4); cap(s) != 4 {
		t.Fatalf("nil chunks: cap %d, want 4", cap(s))
	}
}

// TestCarveByGroup: each group's slice has exactly its count's room, in
// group order, and filling one leaves the others as they were.
func TestCarveByGroup(t *testing.T) {
	all := make([]int32, 6)
	gs := carveByGroup(all, []int32{2, 0, 4})
	gs[0] = append(gs[0], 1, 2)
	gs[2] = append(gs[2], 3, 4, 5, 6)
	if !slices.Equal(all, []int32{1, 2, 3, 4, 5, 6}) || cap(gs[1]) != 0 {
		t.Fatalf("all %v, cap of the empty group %d", all, cap(gs[1]))
	}
	gs[0] = append(gs[0], 7)
	if all[2] != 3 {
		t.Fatalf("an append past group 0's room overwrote group 2: %v", all)
	}
}
