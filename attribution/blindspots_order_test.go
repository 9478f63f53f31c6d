package attribution

import (
	"slices"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// TestBlindSpotsGapOrderDeterministic: two gap groups with the same
// total, start and end but different missing stages compared equal in
// blindSpots' sort (total, then Before+After), so their order followed Go's
// map iteration and `analyze --format json` differed from run to run on the
// same input (found in review comparing two builds on generated OTLP input;
// the sort now breaks every tie).
func TestBlindSpotsGapOrderDeterministic(t *testing.T) {
	res := &Result{Requests: make([]Request, 2), gaps: []Gap{{From: 0, To: 1e6, Before: StageOther, After: StageOther}}}
	for i := range res.Requests {
		res.Requests[i] = Request{Arrival: 0, End: 1e6, gaps: extent{0, 1}}
	}
	res.Requests[0].present = 1 << StageDecode
	res.Requests[1].present = 1 << StageQueue
	first := blindSpots(ingest.New(), res).Gaps
	for range 50 {
		if got := blindSpots(ingest.New(), res).Gaps; !slices.EqualFunc(got, first, func(a, b GapSummary) bool { return a.Span == b.Span }) {
			t.Fatalf("gap order changed between calls: %q then %q", first[0].Span, got[0].Span)
		}
	}
}
