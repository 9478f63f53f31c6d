package ingest

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
)

// A span ID another trace also uses is no duplicate, and a parent is found
// in its own trace only: checkSpanIDs keys its map by span ID alone and
// keeps the pairs whose span ID an earlier trace holds beside it.
func TestSpanIDsSharedAcrossTraces(t *testing.T) {
	tr := New()
	tr.Sources = []Source{{Path: "dump.pb"}}
	a, b := tr.Strings.Intern("a"), tr.Strings.Intern("b")
	span := func(trace byte, id, parent byte, name StrID) Span {
		s := Span{TraceID: TraceID{trace}, ID: SpanID{id}, Name: name, Start: 10, End: 20, Origin: OriginOTLP, Resource: -1, Scope: -1}
		if parent != 0 {
			s.Parent = SpanID{parent}
		}
		return s
	}
	tr.Spans = []Span{
		span(1, 7, 0, a), // trace 1's span 7
		span(2, 7, 0, a), // trace 2's span 7: the same ID in another trace
		span(2, 8, 7, a), // its parent is trace 2's span 7
		span(3, 9, 7, a), // trace 3 has no span 7: dangling
		span(2, 7, 0, b), // trace 2's span 7 again, another span: a duplicate
		span(1, 7, 0, b), // and trace 1's
	}
	tr.Validate()
	var got []string
	for _, w := range tr.Warnings.List {
		got = append(got, w.Code+": "+w.Msg)
	}
	all := strings.Join(got, "\n")
	want := []string{
		`duplicate-span-id: span ID 0700000000000000 appears twice in trace 02000000000000000000000000000000 ("a" and "b")`,
		`duplicate-span-id: span ID 0700000000000000 appears twice in trace 01000000000000000000000000000000 ("a" and "b")`,
		"dangling-parent: 1 span(s) have a parent that is not in the input",
	}
	if len(got) != len(want) {
		t.Fatalf("warnings:\n%s", all)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("warning %d: %s, want %s", i, got[i], w)
		}
	}
}

// checkSpanIDs agrees with the rule it implements, written plainly: a span
// repeats the first earlier span of its trace and span ID, and a parent is
// missing when no span of the trace has that ID. The IDs are drawn from a
// small range so that repeats within and across traces, exact copies and
// missing parents are all frequent, and the table holds far more spans than
// its first size would.
func TestSpanIDsAgreeWithFirstOccurrence(t *testing.T) {
	tr := New()
	tr.Sources = []Source{{Path: "a.pb"}, {Path: "b.pb"}}
	names := []StrID{tr.Strings.Intern("a"), tr.Strings.Intern("b")}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s := Span{Origin: OriginOTLP, Resource: -1, Scope: -1, Source: SourceID(rng.IntN(2))}
		s.TraceID[0] = byte(rng.IntN(4))
		binary.LittleEndian.PutUint16(s.ID[:], uint16(rng.IntN(3000)))
		if p := rng.IntN(6) * 700; p > 0 { // past 3000: never a span's
			binary.LittleEndian.PutUint16(s.Parent[:], uint16(p))
		}
		s.Name, s.Start, s.End = names[rng.IntN(2)], int64(rng.IntN(2)), 5
		if rng.IntN(3) == 0 {
			s.Origin = OriginNVTX
		}
		tr.Spans = append(tr.Spans, s)
	}
	want := New()
	want.Sources = tr.Sources
	type key struct {
		trace TraceID
		span  SpanID
	}
	first := map[key]int{}
	exact := make([]int, 2)
	for i, s := range tr.Spans {
		if s.Origin != OriginOTLP || s.ID.IsZero() {
			continue
		}
		j, ok := first[key{s.TraceID, s.ID}]
		if !ok {
			first[key{s.TraceID, s.ID}] = i
			continue
		}
		if o := tr.Spans[j]; o.Name == s.Name && o.Start == s.Start && o.End == s.End && o.Parent == s.Parent {
			exact[s.Source]++
			continue
		}
		want.Warnf(s.Source, "", "duplicate-span-id", "span ID %s appears twice in trace %s (%q and %q); both kept",
			s.ID, s.TraceID, tr.Str(tr.Spans[j].Name), tr.Str(s.Name))
	}
	dangling := make([]int, 2)
	for src, n := range exact {
		if n > 0 {
			want.Warnf(SourceID(src), "", "duplicate-spans", "%d spans are exact copies of an earlier span (same trace and span ID, name, parent, start and end: the input given twice, or dumps concatenated?); all kept", n)
		}
	}
	for _, s := range tr.Spans {
		if _, ok := first[key{s.TraceID, s.Parent}]; s.Origin == OriginOTLP && !s.Parent.IsZero() && !ok {
			dangling[s.Source]++
		}
	}
	for src, n := range dangling {
		if n > 0 {
			want.Warnf(SourceID(src), "", "dangling-parent", "%d span(s) have a parent that is not in the input; treated as local roots", n)
		}
	}
	tr.checkSpanIDs()
	if len(want.Warnings.List) < 5 || exact[0] == 0 || dangling[1] == 0 {
		t.Fatalf("the spans drawn exercise too little: %v, %v exact copies, %v dangling", want.Warnings.List, exact, dangling)
	}
	if len(tr.Warnings.List) != len(want.Warnings.List) {
		t.Fatalf("%d warnings, want %d", len(tr.Warnings.List), len(want.Warnings.List))
	}
	for i, w := range want.Warnings.List {
		if g := tr.Warnings.List[i]; g != w {
			t.Fatalf("warning %d: %+v, want %+v", i, g, w)
		}
	}
}

// checkSpanIDs' table of first spans by span ID (SpanIDTable) holds
// 12-byte slots (the ID in two 4-byte halves, then an int32 index), 4/3 as
// many as spans with IDs: for 100,000 spans, 133,334 slots, 1.6 MB, where
// a Go map of int32 values took 131,072 slots of 12 bytes and a control
// byte (1.8 MB) and a power of two of 16-byte slots would be 4 MB. The
// rest, 16 KiB at most, is its other maps and the dangling counts.
func TestCheckSpanIDsMapSlots(t *testing.T) {
	const n = 100_000
	tr := New()
	tr.Sources = []Source{{Path: "dump.pb"}}
	tr.Spans = make([]Span, n)
	for i := range tr.Spans {
		s := &tr.Spans[i]
		*s = Span{TraceID: TraceID{1}, Start: 10, End: 20, Origin: OriginOTLP, Resource: -1, Scope: -1}
		binary.LittleEndian.PutUint64(s.ID[:], uint64(i+1))
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	tr.checkSpanIDs()
	runtime.ReadMemStats(&after)
	if got, most := after.TotalAlloc-before.TotalAlloc, uint64(12*133_334+16<<10); got > most {
		t.Errorf("checkSpanIDs allocated %d bytes for %d spans, want at most %d", got, n, most)
	}
	if len(tr.Warnings.List) != 0 {
		t.Errorf("warnings for distinct IDs without parents: %v", tr.Warnings.List)
	}
}
