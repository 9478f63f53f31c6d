package report_test

import (
	"bytes"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/report"
	"github.com/llmprof/llmprof/synth"
)

// TestColumnsWriteTheirRun: a report whose samples are columns
// (Input.Columns) writes, byte for byte, what it writes with the samples
// made whole (compare.FromAttribution), which checkSameJSON holds to
// encoding/json: on synthetic runs of both span styles and with GPU
// records, on a Result built by hand with the values the fast paths leave
// to strconv (fractions of a nanosecond, −0, NaN, under 100 ns and from
// 1000 s on, a count of a million, an earlier arrival than the first), and
// on a run without requests.
func TestColumnsWriteTheirRun(t *testing.T) {
	type namedResult struct {
		name string
		res  *attribution.Result
	}
	var results []namedResult
	opts := attribution.Options{SLO: attribution.SLO{TTFT: 200 * time.Millisecond, TPOT: 20 * time.Millisecond}}
	for _, style := range []synth.Style{synth.StyleLLM, synth.StyleVLLM} {
		run, err := synth.Generate(synth.DefaultConfig(1, 4*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		tr := synthtrace.Decode(t, run, style, synth.JSONLines, "trace.jsonl")
		results = append(results, namedResult{fmt.Sprint(style), attribution.Analyze(tr, opts)})
	}
	run, err := synth.Generate(synth.DefaultConfig(3, 4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	results = append(results, namedResult{"gpu", attribution.Analyze(synthtrace.WithGPU(t, run, true), opts)})

	odd := &attribution.Result{}
	values := []float64{0, math.Copysign(0, -1), 0.5, 99, 100, 123456789, 1e12 - 1, 1e12, 3.3e13, math.NaN(), -250, 1 << 53, 1<<53 + 2, 7.25}
	for i, v := range values {
		r := attribution.Request{Arrival: int64(1000 - 10*i), TTFT: v, TPOT: v / 3, E2E: -v, Queue: v * 1e3,
			InputTokens: []int{-1, 0, 999_999, 1_000_000, 12}[i%5], OutputTokens: []int{7, -1, 1_000_000, 0}[i%4]}
		r.Stages[attribution.StagePrefill] = int64([]float64{0, 1, 99, 100, 1e12, -7, 5e15}[i%7])
		odd.AddRequest(r, attribution.Labels{Model: []string{"m<1>", "m&2", ""}[i%3], Finish: []string{"", "error"}[i%2]})
	}
	results = append(results, namedResult{"by hand", odd}, namedResult{"empty", &attribution.Result{}})

	for _, tc := range results {
		t.Run(tc.name, func(t *testing.T) {
			samples := compare.FromAttribution(tc.res)
			whole := report.New(report.Input{Version: "test", Trace: &ingest.Trace{}, Attr: tc.res, Samples: &samples})
			checkSameJSON(t, whole)
			cols := report.New(report.Input{Version: "test", Trace: &ingest.Trace{}, Attr: tc.res, Columns: compare.ColumnsOf(tc.res)})
			var want, got bytes.Buffer
			if err := whole.WriteJSON(&want); err != nil {
				t.Fatal(err)
			}
			if err := cols.WriteJSON(&got); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("columns differ from the run's series:\n%s", firstDifference(got.Bytes(), want.Bytes()))
			}
			if !bytes.Contains(got.Bytes(), []byte(`"schema": "llmprof.samples/v1"`)) {
				t.Fatal("no samples written")
			}
		})
	}
}
