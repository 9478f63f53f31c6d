package attribution_test

import (
	"math"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/synth"
)

// A simulated run written the way a real vLLM V1 server exports it (TTFT ≠
// queue + prefill, e2e shorter than the span): every request's stages,
// TTFT, TPOT, both E2Es and the unexported time before the queue match the
// simulator's truth.
func TestSynthTruthVLLMServerStyle(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(11, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	res := decodeRun(t, run, synth.StyleVLLMServer, synth.JSONLines)
	if len(res.Requests) != len(run.Requests) {
		t.Fatalf("%d requests, want %d", len(res.Requests), len(run.Requests))
	}
	byID := map[string]*attribution.Request{}
	for i := range res.Requests {
		byID[res.ID(&res.Requests[i])] = &res.Requests[i]
	}
	var preQueue, e2e float64
	for i := range run.Requests {
		q := &run.Requests[i]
		r := byID[q.ID]
		checkStageSum(t, res, r)
		lagFirst, lagLast := q.VLLMFrontendLag()
		// Attributes are float seconds: allow their rounding.
		close := func(got, want float64) bool { return math.Abs(got-want) <= 2 }
		if ttft := q.TTFT() + lagFirst; !close(r.TTFT, float64(ttft)) {
			t.Fatalf("%s: ttft %v, truth %d (first token %d after arrival, then a %d ns hop)", q.ID, r.TTFT, ttft, q.TTFT(), lagFirst)
		}
		if e2eAttr := attribution.E2EAttr(res, r); r.E2E != float64(q.VLLMServerEnd()-q.Arrival) || !close(e2eAttr, float64(q.LastToken()+lagLast-q.Arrival)) {
			t.Fatalf("%s: e2e %v (attribute %v)", q.ID, r.E2E, e2eAttr)
		}
		for st, want := range map[attribution.Stage]int64{attribution.StageQueue: q.Queue(), attribution.StagePrefill: q.Prefill(), attribution.StageDecode: q.Decode()} {
			if math.Abs(float64(r.Stages[st]-want)) > 2 {
				t.Fatalf("%s: %s %d, truth %d", q.ID, st, r.Stages[st], want)
			}
		}
		if tpot, ok := q.TPOT(); ok && math.Abs(r.TPOT-tpot) > 1 {
			t.Fatalf("%s: tpot %v, truth %v", q.ID, r.TPOT, tpot)
		}
		// (A request scheduled at once has an empty queue: prefill follows.)
		if gaps := res.Gaps(r); len(gaps) == 0 || gaps[0].From != r.Arrival || (gaps[0].After != attribution.StageQueue && q.Queue() > 0) ||
			math.Abs(float64(gaps[0].To-gaps[0].From-(q.Tokenize()+lagFirst))) > 2 {
			t.Fatalf("%s: gaps %+v, truth %d before the queue", q.ID, gaps, q.Tokenize()+lagFirst)
		}
		preQueue += float64(q.Tokenize() + lagFirst)
		e2e += float64(r.E2E)
	}
	bs := res.BlindSpots
	if bs.Largest == nil || bs.Largest.Before != "start" || bs.Largest.After != "queue" || math.Abs(bs.Largest.Share-preQueue/e2e) > 1e-6 {
		t.Errorf("largest blind spot %+v, truth %.4f before the queue", bs.Largest, preQueue/e2e)
	}
	if res.E2E.WithAttribute != len(run.Requests) {
		t.Errorf("e2e note %+v", res.E2E)
	}
}
