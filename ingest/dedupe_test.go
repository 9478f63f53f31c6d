package ingest

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// twoSources is n spans split over two sources, with dup of the second
// source's spans repeating the first's IDs.
func twoSources(n, dup int) *Trace {
	t := New()
	t.Sources = []Source{{Path: "a.jsonl", Spans: n / 2}, {Path: "b.jsonl", Spans: n - n/2}}
	t.Spans = make([]Span, n)
	for i := range t.Spans {
		id := i
		src := SourceID(0)
		if i >= n/2 {
			src = 1
			if i-n/2 < dup {
				id = i - n/2
			}
		}
		s := &t.Spans[i]
		binary.BigEndian.PutUint64(s.TraceID[8:], uint64(id/4+1)*0x9E3779B97F4A7C15)
		binary.BigEndian.PutUint64(s.ID[:], uint64(id+1)*0xff51afd7ed558ccd)
		s.Source = src
	}
	return t
}

func TestDropDuplicateSpans(t *testing.T) {
	for _, c := range []struct{ n, dup, want int }{{1000, 0, 1000}, {1000, 500, 500}, {1000, 100, 900}} {
		t.Run(fmt.Sprint(c.dup), func(t *testing.T) {
			tr := twoSources(c.n, c.dup)
			dropDuplicateSpans(tr)
			if len(tr.Spans) != c.want || tr.Sources[1].Spans != c.n/2-c.dup {
				t.Errorf("%d spans (want %d), source b %d", len(tr.Spans), c.want, tr.Sources[1].Spans)
			}
			if w := tr.Warnings.List; (c.dup > 0) != (len(w) == 1) {
				t.Errorf("warnings %v", w)
			}
		})
	}
	// Within one source, a repeat is Validate's business, not a duplicate input.
	tr := twoSources(10, 0)
	tr.Spans[1].ID, tr.Spans[1].TraceID = tr.Spans[0].ID, tr.Spans[0].TraceID
	dropDuplicateSpans(tr)
	if len(tr.Spans) != 10 {
		t.Errorf("a repeat within a source was dropped")
	}
}

// BenchmarkDropDuplicateSpans measures the pass over a multi-file input of
// 1 M spans, against copying the span slice once (the floor of any pass that
// rebuilds it), in the same run.
func BenchmarkDropDuplicateSpans(b *testing.B) {
	const n = 1 << 20
	b.Run("copy-reference", func(b *testing.B) {
		tr := twoSources(n, 0)
		for b.Loop() {
			out := make([]Span, len(tr.Spans))
			copy(out, tr.Spans)
		}
	})
	b.Run("no-duplicates", func(b *testing.B) {
		tr := twoSources(n, 0)
		for b.Loop() {
			dropDuplicateSpans(tr)
		}
	})
}
