package attribution

import (
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

// Parent links that loop (a request span and a chat span each the other's
// parent, a stage span its own parent, a loop of three with a child hanging
// off it) once made analyze walk up forever; each loop's closing link is
// now taken as absent, said in a warning, and the request still found
// (found in review: a crafted OTLP file hung analyze past SIGTERM).
func TestParentCyclesEnd(t *testing.T) {
	b := newBuilder()
	res := b.resource("engine")
	req := b.span(1, ingest.SpanID{}, res, "llm.request", 0, 100*ms, "llm.request.id", "r1")
	chat := b.span(1, req, res, "chat m", 0, 100*ms, "gen_ai.operation.name", "chat")
	b.t.Spans[0].Parent = chat // the request's parent is its own child
	self := b.span(1, ingest.SpanID{}, res, "llm.decode", 10*ms, 90*ms)
	b.t.Spans[len(b.t.Spans)-1].Parent = self
	x := b.span(2, ingest.SpanID{}, res, "x", 0, 5*ms)
	y := b.span(2, x, res, "y", 0, 5*ms)
	z := b.span(2, y, res, "z", 0, 5*ms)
	b.span(2, z, res, "leaf", 0, 5*ms)
	for i := range b.t.Spans {
		if b.t.Spans[i].ID == x {
			b.t.Spans[i].Parent = z
		}
	}
	done := make(chan *Result, 1)
	go func() { done <- b.analyze(Options{}) }()
	var got *Result
	select {
	case got = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("analyze did not end on a trace whose parent links loop")
	}
	if len(got.Requests) != 1 || got.ID(&got.Requests[0]) != "r1" {
		t.Fatalf("requests %v, want r1 alone", len(got.Requests))
	}
	var warned bool
	for _, w := range got.Warnings {
		if w.Code == "parent-cycle" {
			warned = true
			if !strings.HasPrefix(w.Msg, "3 span(s)") {
				t.Errorf("warning %q, want 3 loops cut", w.Msg)
			}
		}
	}
	if !warned {
		t.Errorf("no parent-cycle warning in %v", got.Warnings)
	}
	ix := newSpanIndex(b.t)
	for i := range b.t.Spans {
		steps := 0
		for p, ok := ix.parent(i); ok; p, ok = ix.parent(p) {
			if steps++; steps > len(b.t.Spans) {
				t.Fatalf("span %d: the walk up still loops", i)
			}
		}
	}
}
