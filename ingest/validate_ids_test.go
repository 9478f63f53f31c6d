package ingest

import (
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
