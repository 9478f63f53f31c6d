package otlp

import (
	"strconv"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// stringsAhead makes room at the rate of new strings a span brought so
// far, for the spans the input is estimated to hold still, but never for
// more than eight times the span slice's capacity: an input whose first
// records are tiny beside the rest estimates far too many spans.
func TestStringsAheadBounded(t *testing.T) {
	tr := ingest.New()
	d := newState(tr, 0)
	for i := range 100 {
		tr.Strings.Intern("request-" + strconv.Itoa(i))
	}
	tr.Spans = make([]ingest.Span, 100, 200)
	d.spans = 100
	// A well-founded estimate: 1000 spans in all, 900 still to come.
	d.sizeHint, d.consumed = 10_000, 1_000
	if got, want := d.stringsAhead(100), 1062-100; got < want-2 || got > want+2 {
		t.Errorf("stringsAhead with 1000 spans estimated = %d, want about %d", got, want)
	}
	// Tiny early records: 10^11 spans estimated, room for 8 × 200 only.
	d.sizeHint, d.consumed = 1<<40, 1_000
	if got := d.stringsAhead(100); got != 1600 {
		t.Errorf("stringsAhead with an estimate of 10^11 spans = %d, want 1600 (8 × the capacity)", got)
	}
	// Without an estimate: the room the slice has.
	d.sizeHint = 0
	if got := d.stringsAhead(100); got != 100 {
		t.Errorf("stringsAhead without an estimate = %d, want 100", got)
	}
}
