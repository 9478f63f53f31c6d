package ingest

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// opsTrace is a one-source trace whose GPU ops have starts from, in order,
// with the given spare capacity.
func opsTrace(from []int64, spare int) *Trace {
	t := New()
	t.Sources = []Source{{Path: "x", Format: "test"}}
	t.GPUOps = make([]GPUOp, 0, len(from)+spare)
	for _, s := range from {
		t.GPUOps = append(t.GPUOps, GPUOp{Start: s, End: s + 1})
	}
	return t
}

func opStarts(m *Trace) (starts []int64, srcs []SourceID) {
	for _, o := range m.GPUOps {
		starts, srcs = append(starts, o.Start), append(srcs, o.Source)
	}
	return starts, srcs
}

// Merge lays records out in part order whichever way it gets there: the one
// part that has any moved as it is, the largest part's array reused when it
// has room (its records moved up past the parts before it), or a new array.
func TestMergeConcatenatesInPartOrder(t *testing.T) {
	for _, tc := range []struct {
		name   string
		parts  [][]int64
		spare  []int
		reused int // the part whose array the result must be (-1: a new one)
	}{
		{"one part with records", [][]int64{nil, {5, 6, 7}, nil}, []int{0, 0, 0}, 1},
		{"largest has room, in the middle", [][]int64{{1}, {2, 3, 4}, {8, 9}}, []int{0, 3, 0}, 1},
		{"largest has room, last", [][]int64{{1, 2}, {3}, {4, 5, 6}}, []int{0, 0, 3}, 2},
		{"largest has room, first", [][]int64{{1, 2, 3}, {4}}, []int{1, 0}, 0},
		{"no room", [][]int64{{1}, {2, 3, 4}, {8, 9}}, []int{0, 2, 0}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var parts []*Trace
			var want []int64
			var wantSrc []SourceID
			for i, p := range tc.parts {
				parts = append(parts, opsTrace(p, tc.spare[i]))
				want = append(want, p...)
				for range p {
					wantSrc = append(wantSrc, SourceID(i))
				}
			}
			var arr *GPUOp
			if tc.reused >= 0 {
				arr = unsafeFirst(parts[tc.reused].GPUOps)
			}
			m := Merge(parts...)
			got, src := opStarts(m)
			if !slices.Equal(got, want) || !slices.Equal(src, wantSrc) {
				t.Fatalf("merged starts %v sources %v, want %v %v", got, src, want, wantSrc)
			}
			if first := unsafeFirst(m.GPUOps); (arr != nil) != (first == arr) {
				t.Errorf("result array reused = %v, want %v", first == arr, arr != nil)
			}
			for i, p := range parts {
				if p.GPUOps != nil {
					t.Errorf("part %d still holds its GPU ops", i)
				}
			}
			if m.Spans == nil || len(m.Spans) != 0 {
				t.Errorf("spans of a merge without spans = %#v, want empty", m.Spans)
			}
		})
	}
}

func unsafeFirst(s []GPUOp) *GPUOp {
	if cap(s) == 0 {
		return nil
	}
	return &s[:1][0]
}

// The in-place sort gives the order of a stable sort, on inputs with many
// ties and long permutation cycles, whether the times' range fits beside
// the index in one key (spreads up to 2⁵⁰ with 5000 records; negative
// times) or not (2⁶² and the whole int64 range: the pairs).
func TestSortByTimeInPlaceIsStable(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 10, 1000, 5000} {
		for _, spread := range []int64{1, 3, 1 << 40, 1 << 50, 1 << 62, -1} {
			recs := make([]Sample, n)
			for i := range recs {
				switch spread {
				case -1:
					recs[i] = Sample{Time: int64(r.Uint64()), Pid: uint32(i)}
				case 1 << 50:
					recs[i] = Sample{Time: r.Int64N(spread) - spread/2, Pid: uint32(i)}
				default:
					recs[i] = Sample{Time: r.Int64N(spread), Pid: uint32(i)}
				}
			}
			want := slices.Clone(recs)
			slices.SortStableFunc(want, func(a, b Sample) int { return cmp.Compare(a.Time, b.Time) })
			sortByTime(recs, func(s *Sample) int64 { return s.Time })
			if !slices.Equal(recs, want) {
				t.Fatalf("n=%d spread=%d: in-place sort differs from a stable sort", n, spread)
			}
		}
	}
}

// BenchmarkSortByTime sorts 2 M GPU ops of a 10-minute run in time order
// except for the streams' interleaving (each op up to 1 ms early or late),
// the shape of a merged nsys export; pairs is the (time, index) sort that
// times too far apart fall back to.
func BenchmarkSortByTime(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	base := make([]GPUOp, 2_000_000)
	const t0, step = int64(1_700_000_000_000_000_000), int64(300_000)
	for i := range base {
		base[i] = GPUOp{Start: t0 + int64(i)*step + r.Int64N(2_000_000) - 1_000_000}
	}
	ops := make([]GPUOp, len(base))
	start := func(o *GPUOp) int64 { return o.Start }
	b.Run("packed", func(b *testing.B) {
		for b.Loop() {
			copy(ops, base)
			sortByTime(ops, start)
		}
	})
	b.Run("pairs", func(b *testing.B) {
		for b.Loop() {
			copy(ops, base)
			sortByTimePairs(ops, start)
		}
	})
}

// Merge keeps each op's shape: a part's shape IDs are its own table's, and the
// merged trace has one table, with a shape two parts share kept once.
func TestMergeRemapsShapes(t *testing.T) {
	a, b := New(), New()
	a.Sources, b.Sources = []Source{{Path: "a"}}, []Source{{Path: "b"}}
	gemm := OpShape{Grid: [3]uint32{132, 1, 1}, Block: [3]uint16{256, 1, 1}}
	copy4k := OpShape{Bytes: 4096}
	graph := OpShape{Grid: [3]uint32{8, 1, 1}, Block: [3]uint16{128, 1, 1}, GraphID: 3}
	a.GPUOps = []GPUOp{{Start: 1, Shape: a.InternShape(gemm)}, {Start: 2, Shape: a.InternShape(copy4k)}, {Start: 3}}
	// b interns them in another order, so its IDs differ from a's.
	b.GPUOps = []GPUOp{{Start: 4, Shape: b.InternShape(graph)}, {Start: 5, Shape: b.InternShape(copy4k)}, {Start: 6, Shape: b.InternShape(gemm)}}
	want := []OpShape{gemm, copy4k, {}, graph, copy4k, gemm}
	m := Merge(a, b)
	if len(m.GPUOps) != len(want) {
		t.Fatalf("%d ops, want %d", len(m.GPUOps), len(want))
	}
	for i := range m.GPUOps {
		if got := m.ShapeOf(&m.GPUOps[i]); got != want[i] {
			t.Errorf("op %d: shape %+v, want %+v", i, got, want[i])
		}
	}
	if len(m.Shapes) != 3 {
		t.Errorf("%d shapes in the merged table, want 3 (each distinct one once)", len(m.Shapes))
	}
	if id := m.InternShape(copy4k); id != m.GPUOps[1].Shape || m.InternShape(OpShape{}) != 0 {
		t.Errorf("interning a known shape again gives %d, want %d; the zero shape must be 0", id, m.GPUOps[1].Shape)
	}
}

// Merging rebases each part's attribute ranges and extras onto the merged
// arena and side table: every span keeps its own attributes, events and
// links, read by value (strings through the merged table), whether the
// parts' arenas go to a new array or into the largest part's.
func TestMergeKeepsSpanAttributesAndEvents(t *testing.T) {
	// part's arena has capacity c, or just its length when c is 0.
	part := func(prefix string, spans, c int) *Trace {
		t := New()
		t.Sources = []Source{{Path: prefix, Format: "test"}}
		t.AttrArena = make([]Attr, 0, c)
		key := t.Strings.Intern(prefix + ".key")
		for i := range spans {
			s := Span{Name: t.Strings.Intern(fmt.Sprintf("%s.%d", prefix, i)), Start: int64(i), End: int64(i + 1), Resource: -1, Scope: -1}
			// Spans without attributes or extras among those with them.
			if i%3 != 1 {
				attrs := []Attr{NewAttr(key, StringValue(t.Strings.Intern(fmt.Sprintf("%s-v%d", prefix, i))))}
				for j := range i % 4 {
					attrs = append(attrs, NewAttr(t.Strings.Intern(fmt.Sprint("n", j)), IntValue(int64(i*10+j))))
				}
				s.Attrs = t.AddAttrs(attrs...)
			}
			if i%2 == 0 {
				s.Extra = t.AddExtra(
					[]Event{{Name: t.Strings.Intern(prefix + ".event"), Time: int64(i),
						Attrs: t.AddAttrs(NewAttr(key, StringValue(t.Strings.Intern(prefix+"-e"))))}},
					[]Link{{SpanID: SpanID{byte(i)}, Attrs: t.AddAttrs(NewAttr(key, IntValue(int64(i))))}})
			}
			if i%4 == 0 {
				// A second event, after other spans' events.
				t.AddEvent(&s, Event{Name: t.Strings.Intern(prefix + ".later"), Time: int64(i + 1)})
			}
			t.Spans = append(t.Spans, s)
		}
		if c == 0 {
			t.AttrArena = slices.Clip(t.AttrArena)
		}
		return t
	}
	spanText := func(t *Trace, s *Span) string {
		b := t.Str(s.Name) + t.dumpAttrs(t.SpanAttrs(s))
		for _, e := range t.Events(s) {
			b += fmt.Sprintf(" event %d %s%s", e.Time, t.Str(e.Name), t.dumpAttrs(t.EventAttrs(&e)))
		}
		for _, l := range t.Links(s) {
			b += fmt.Sprintf(" link %s%s", l.SpanID, t.dumpAttrs(t.LinkAttrs(&l)))
		}
		return b
	}
	for _, tc := range []struct {
		name string
		caps []int // each part's arena capacity (0: its length)
	}{
		{"new arena", []int{0, 0, 0}},
		{"largest part's arena", []int{0, 256, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := []*Trace{part("a", 7, tc.caps[0]), part("b", 20, tc.caps[1]), part("c", 5, tc.caps[2])}
			largest := &parts[1].AttrArena[0]
			var want []string
			for _, p := range parts {
				for i := range p.Spans {
					want = append(want, spanText(p, &p.Spans[i]))
				}
			}
			m := Merge(parts...)
			var got []string
			for i := range m.Spans {
				got = append(got, spanText(m, &m.Spans[i]))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("merged spans:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if !strings.Contains(want[len(want)-2], `c.3 "c.key"="c-v3" "n0"=30`) || !strings.Contains(want[0], `event 0 a.event "a.key"="a-e" event 1 a.later link`) {
				t.Fatalf("the parts' spans lack what the test gave them: %q, %q", want[0], want[len(want)-2])
			}
			if reused := &m.AttrArena[0] == largest; reused != (tc.caps[1] > 0) {
				t.Errorf("merged arena is the largest part's: %v, want %v", reused, tc.caps[1] > 0)
			}
		})
	}
}
