package attribution

import (
	"bytes"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/ingest/otlp/otlptest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// countStageRuns is how many of res's requests summarizeTokens sums a run at
// a time (tokenWalker.stageRuns) rather than token by token.
func countStageRuns(res *Result) int {
	w := newTokenWalker(res.trace, res)
	runs := [][2]int{{1, 2}, {2, 10}, {10, 100}, {100, 1 << 62}}
	n := 0
	for ri := range res.Requests {
		if w.stageRuns(ri, runs, true, 0, func(*TokenBreakdown) {}, func(int, int, bool, *BucketShares) {}, func(*TokenBreakdown) {}) {
			n++
		}
	}
	return n
}

// Requests with no engine steps are summed a run of tokens at a time: the
// figures, per-request sums and stalls are those of every token added one by
// one (stalls over the mean interval), on vLLM-style spans (token times
// estimated from TTFT and TPOT) and on OTLP exporter batches with per-token
// events.
func TestTokenSummaryStageRuns(t *testing.T) {
	run := stallingRun(t)
	var batches bytes.Buffer
	g := &otlptest.Synthetic{Seed: 3}
	for range 8 {
		batches.Write(otlptest.Frame(otlptest.Proto(g.Next())))
	}
	exported, err := (&otlp.Decoder{}).DecodeReader(t.Context(), "batches.pb", &batches)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		trace *ingest.Trace
	}{
		{"vllm", synthtrace.Decode(t, run, synth.StyleVLLM, synth.JSONLines, "trace.jsonl")},
		{"exporter batches", exported},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Analyze(tc.trace, DefaultOptions)
			if n := countStageRuns(res); n < len(res.Requests)/2 {
				t.Fatalf("%d of %d requests summed by runs: the test does not cover stageRuns", n, len(res.Requests))
			}
			// A threshold at the mean decode interval: stalls in every input.
			stall := time.Duration(summarizeTokens(res, 0).Decode.MeanMs * 1e6)
			checkPerTokenSums(t, res, stall)
		})
	}
}
