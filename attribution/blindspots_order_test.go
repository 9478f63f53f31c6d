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
	res := &Result{Requests: make([]Request, 2)}
	for i := range res.Requests {
		res.Requests[i] = Request{Arrival: 0, End: 1e6} // one gap, the whole request
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

// appendLikelyMissingList is how blindSpots listed a gap's missing stages
// before missingBetween: a search of canonicalOrder for each end, then the
// stages between them the request lacks.
func appendLikelyMissingList(out []Stage, r *Request, before, after Stage) []Stage {
	pos := func(st Stage, dflt int) int {
		if st == StageInference {
			st = StagePrefill
		}
		if i := slices.Index(canonicalOrder, st); i >= 0 {
			return i
		}
		return dflt
	}
	lo := pos(before, -1)
	hi := pos(after, len(canonicalOrder))
	if after == StageInference {
		hi = pos(StagePrefill, hi)
	}
	for i := lo + 1; i < hi; i++ {
		st := canonicalOrder[i]
		if !r.Has(st) && !(r.Has(StageInference) && (st == StagePrefill || st == StageDecode)) {
			out = append(out, st)
		}
	}
	return out
}

// TestMissingBetween: for every pair of gap ends and every set of stages
// a request can show, missingBetween's set, listed, is the list of the
// stages missing there.
func TestMissingBetween(t *testing.T) {
	for p := range 1 << NumStages {
		present := uint8(p)
		r := &Request{present: present}
		for before := range NumStages {
			for after := range NumStages {
				want := appendLikelyMissingList(nil, r, before, after)
				if got := stageList(missingBetween(r, before, after)); !slices.Equal(got, want) {
					t.Fatalf("present %08b, gap %s → %s: missing %v, want %v", present, before, after, got, want)
				}
			}
		}
	}
}
