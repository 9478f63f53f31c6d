package ingest

import (
	"testing"
	"unsafe"

	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// TestMergeSpillsTheMergedOps: GPU ops and API calls merged from several
// parts into a new array go to a spill file when spilling is on, as a
// decoder's own table would; the records are those of the parts, in order.
func TestMergeSpillsTheMergedOps(t *testing.T) {
	spilltest.Enable(t)
	spill.Budget(1 << 30)
	const n = spill.MinBytes / 48 // each part's table a little under MinBytes; the merged one above
	parts := make([]*Trace, 2)
	for p := range parts {
		tr := New()
		tr.Sources = []Source{{Path: "part"}}
		tr.GPUOps = make([]GPUOp, n)
		tr.APICalls = make([]APICall, n)
		for i := range n {
			tr.GPUOps[i] = GPUOp{Start: int64(p*n + i), Device: -1}
			tr.APICalls[i] = APICall{Start: int64(p*n + i)}
		}
		parts[p] = tr
	}
	before := spill.Read().Mapped
	m := Merge(parts...)
	want := int64(2*n) * int64(unsafe.Sizeof(GPUOp{})+unsafe.Sizeof(APICall{}))
	if got := spill.Read().Mapped - before; got != want {
		t.Errorf("merging spilled %d bytes, want %d (the merged GPU ops and API calls)", got, want)
	}
	if len(m.GPUOps) != 2*n || len(m.APICalls) != 2*n {
		t.Fatalf("merged %d ops, %d calls; want %d of each", len(m.GPUOps), len(m.APICalls), 2*n)
	}
	for i := range m.GPUOps {
		if m.GPUOps[i].Start != int64(i) || m.APICalls[i].Start != int64(i) {
			t.Fatalf("record %d: op at %d, call at %d; want both at %d", i, m.GPUOps[i].Start, m.APICalls[i].Start, i)
		}
	}
}

// TestMergeFreesTheSpilledParts: parts whose tables are in spill files,
// merged into a new array, give their files back (spill.Free), so that a
// run of several exports holds each op in one file, not two.
func TestMergeFreesTheSpilledParts(t *testing.T) {
	spilltest.Enable(t)
	spill.Budget(1 << 30)
	const n = 2 * spill.MinBytes / 48 // each part's table above MinBytes
	before := spill.Read().Mapped
	parts := make([]*Trace, 2)
	for p := range parts {
		tr := New()
		tr.Sources = []Source{{Path: "part"}}
		tr.GPUOps = spill.Slice[GPUOp](n)
		for i := range n {
			tr.GPUOps = append(tr.GPUOps, GPUOp{Start: int64(p*n + i), Device: -1})
		}
		parts[p] = tr
	}
	opSize := int64(unsafe.Sizeof(GPUOp{}))
	if got := spill.Read().Mapped - before; got != 2*n*opSize {
		t.Fatalf("the parts spilled %d bytes, want %d", got, 2*n*opSize)
	}
	m := Merge(parts...)
	if got := spill.Read().Mapped - before; got != 2*n*opSize {
		t.Errorf("after merging %d bytes are in spill files, want %d (the merged table only)", got, 2*n*opSize)
	}
	for i := range m.GPUOps {
		if m.GPUOps[i].Start != int64(i) {
			t.Fatalf("op %d at %d", i, m.GPUOps[i].Start)
		}
	}
}

// The attribute arena grows in spill files while spilling is on, and
// AddAttrs of attributes that are the arena's own (a span given another's)
// keeps them when that growth gives the old file back (spill.Free unmaps
// it: reading it afterwards would fault).
func TestAttrArenaGrowsInSpillFiles(t *testing.T) {
	spilltest.Enable(t)
	spill.Budget(1 << 30)
	tr := New()
	s := Span{Attrs: tr.AddAttrs(NewAttr(1, IntValue(7)), NewAttr(2, IntValue(8)))}
	const n = spill.MinBytes / 16 // 2n attributes: past MinBytes, through several growths
	for range n {
		s.Attrs = tr.AddAttrs(tr.SpanAttrs(&s)...)
	}
	if spill.Read().Mapped < int64(unsafe.Sizeof(Attr{}))*2*n {
		t.Errorf("%d bytes in spill files, want the arena's %d or more", spill.Read().Mapped, 2*n*16)
	}
	if len(tr.AttrArena) != 2*(n+1) {
		t.Fatalf("arena holds %d attributes, want %d", len(tr.AttrArena), 2*(n+1))
	}
	for i, a := range tr.AttrArena {
		if want := NewAttr(StrID(1+i%2), IntValue(int64(7+i%2))); a != want {
			t.Fatalf("attribute %d = %+v, want %+v", i, a, want)
		}
	}
}

// The arena, once in a spill file, grows in it (spill.Grow) when the
// attributes added are not its own: its values kept, and never a second
// arena mapped beside it, so the most mapped at once is the arena's final
// size (a move would map the new one before giving the old back).
func TestAttrArenaGrowsInPlaceInSpillFiles(t *testing.T) {
	spilltest.Enable(t)
	spill.Budget(1 << 30)
	tr := New()
	const n = spill.MinBytes / 8 // n attributes: 8 MiB of them, from below MinBytes up
	for i := range n {
		tr.AddAttrs(NewAttr(StrID(1+i%3), IntValue(int64(i))))
	}
	size := int64(unsafe.Sizeof(Attr{})) * int64(cap(tr.AttrArena))
	if st := spill.Read(); st.Mapped != size || st.Peak != size {
		t.Errorf("mapped %d bytes, at most %d; want the arena's %d both times", st.Mapped, st.Peak, size)
	}
	for i, a := range tr.AttrArena {
		if want := NewAttr(StrID(1+i%3), IntValue(int64(i))); a != want {
			t.Fatalf("attribute %d = %+v, want %+v", i, a, want)
		}
	}
}
