package attribution

import (
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// Span IDs are unique within a trace only: two traces that reuse the same
// span IDs (a replayed or synthetic export) keep their trees apart, each
// request getting its own trace's stage spans.
func TestSpanIndexSpanIDsSharedAcrossTraces(t *testing.T) {
	b := newBuilder()
	res := b.resource("engine")
	var reqs []ingest.SpanID
	for tr, prefill := range []int64{10 * ms, 30 * ms} {
		start := int64(tr) * 1000 * ms
		r := b.span(byte(tr+1), ingest.SpanID{}, res, "llm.request", start, start+100*ms, "llm.request.id", string(rune('a'+tr)))
		b.span(byte(tr+1), r, res, "llm.prefill", start, start+prefill)
		reqs = append(reqs, r)
	}
	// Give the second trace the first one's span IDs.
	for i := 2; i < 4; i++ {
		s := &b.t.Spans[i]
		s.ID = b.t.Spans[i-2].ID
		if !s.Parent.IsZero() {
			s.Parent = reqs[0]
		}
	}
	got := b.analyze(Options{})
	if len(got.Requests) != 2 {
		t.Fatalf("%d requests, want 2", len(got.Requests))
	}
	for i, want := range []int64{10 * ms, 30 * ms} {
		if r := &got.Requests[i]; r.Stages[StagePrefill] != want {
			t.Errorf("request %s: prefill %d ns, want %d (its own trace's span)", got.ID(r), r.Stages[StagePrefill], want)
		}
	}
	ix := newSpanIndex(b.t)
	for i, want := range [][]int{{1}, {3}} {
		if d := ix.descendants(2 * i); len(d) != 1 || d[0] != want[0] {
			t.Errorf("descendants of span %d = %v, want %v", 2*i, d, want)
		}
		if p, ok := ix.parent(2*i + 1); !ok || p != 2*i {
			t.Errorf("parent of span %d = %d, %v; want %d", 2*i+1, p, ok, 2*i)
		}
	}
}
