package attribution_test

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// decodeRun takes a synthetic run through the OTLP decoder and attributes
// it: the whole pipeline but the renderer.
func decodeRun(t *testing.T, run *synth.Run, style synth.Style, enc synth.Encoding) *attribution.Result {
	t.Helper()
	return attribution.Analyze(synthtrace.Decode(t, run, style, enc, "trace"), attribution.DefaultOptions)
}

func TestSynthTruthLLMProfStyle(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		run, err := synth.Generate(synth.DefaultConfig(seed, 15*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		res := decodeRun(t, run, synth.StyleLLM, synth.ProtoFramed)
		if len(res.Requests) != len(run.Requests) {
			t.Fatalf("seed %d: %d requests attributed, %d generated", seed, len(res.Requests), len(run.Requests))
		}
		byID := map[string]*attribution.Request{}
		for i := range res.Requests {
			byID[res.ID(&res.Requests[i])] = &res.Requests[i]
		}
		var ttfts []float64
		for i := range run.Requests {
			q := &run.Requests[i]
			r := byID[q.ID]
			if r == nil {
				t.Fatalf("seed %d: request %s missing", seed, q.ID)
			}
			checkStageSum(t, res, r)
			tpot, hasTPOT := q.TPOT()
			want := []struct {
				name      string
				got, want float64
			}{
				{"ttft", r.TTFT, float64(q.TTFT())},
				{"e2e", r.E2E, float64(q.E2E())},
				{"queue", r.Queue, float64(q.Queue())},
				{"tokenize", float64(r.Stages[attribution.StageTokenize]), float64(q.Tokenize())},
				{"queue stage", float64(r.Stages[attribution.StageQueue]), float64(q.Queue())},
				{"prefill", float64(r.Stages[attribution.StagePrefill]), float64(q.Prefill())},
				{"decode", float64(r.Stages[attribution.StageDecode]), float64(q.Decode())},
				{"detokenize", float64(r.Stages[attribution.StageDetokenize]), float64(q.Detokenize())},
				{"stream", float64(r.Stages[attribution.StageStream]), float64(q.Stream())},
				{"other", float64(r.Stages[attribution.StageOther]), 0},
			}
			if hasTPOT {
				want = append(want, struct {
					name      string
					got, want float64
				}{"tpot", r.TPOT, tpot})
			} else if !math.IsNaN(r.TPOT) {
				t.Errorf("%s: one-token request has TPOT %v", q.ID, r.TPOT)
			}
			for _, w := range want {
				if math.Abs(w.got-w.want) > 1e-6 {
					t.Fatalf("seed %d %s: %s = %v, truth %v", seed, q.ID, w.name, w.got, w.want)
				}
			}
			if tenant, model := res.Tenant(r), res.Model(r); tenant != q.Tenant || model != q.Model || r.InputTokens != q.InputTokens || r.OutputTokens != q.OutputTokens {
				t.Fatalf("%s: tenant/model/tokens %s/%s/%d/%d, truth %s/%s/%d/%d", q.ID, tenant, model, r.InputTokens, r.OutputTokens, q.Tenant, q.Model, q.InputTokens, q.OutputTokens)
			}
			if len(res.ITLs(r)) != len(q.Tokens)-1 {
				t.Fatalf("%s: %d ITLs, want %d", q.ID, len(res.ITLs(r)), len(q.Tokens)-1)
			}
			ttfts = append(ttfts, float64(q.TTFT()))
		}
		// The overall p99 equals numpy's percentile of the truth.
		slices.Sort(ttfts)
		if got, want := res.Overall.Metrics.TTFT.P99, attribution.Percentile(ttfts, 99)/1e6; math.Abs(got-want) > 1e-9 {
			t.Fatalf("seed %d: TTFT p99 = %v ms, truth %v ms", seed, got, want)
		}
	}
}

func TestSynthTruthVLLMStyle(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(5, 15*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	res := decodeRun(t, run, synth.StyleVLLM, synth.JSONLines)
	if len(res.Requests) != len(run.Requests) || res.Styles[attribution.StyleVLLM] != len(run.Requests) {
		t.Fatalf("%d requests (%v), want %d vLLM requests", len(res.Requests), res.Styles, len(run.Requests))
	}
	byID := map[string]*attribution.Request{}
	for i := range res.Requests {
		byID[res.ID(&res.Requests[i])] = &res.Requests[i]
	}
	for i := range run.Requests {
		q := &run.Requests[i]
		r := byID[q.ID]
		checkStageSum(t, res, r)
		// vLLM's arrival_time is after tokenization: its figures start there.
		if r.Arrival != q.Enqueued || r.TTFT != float64(q.FirstToken()-q.Enqueued) || r.E2E != float64(q.LastToken()-q.Enqueued) {
			t.Fatalf("%s: arrival/ttft/e2e = %d/%v/%v", q.ID, r.Arrival, r.TTFT, r.E2E)
		}
		if r.Stages[attribution.StagePrefill] != q.Prefill() || r.Stages[attribution.StageDecode] != q.Decode() || r.Stages[attribution.StageQueue] != q.Queue() {
			t.Fatalf("%s: stages %v", q.ID, r.Stages)
		}
		if tenant, model := res.Tenant(r), res.Model(r); tenant != q.Tenant || model != q.Model {
			t.Fatalf("%s: tenant %q model %q, truth %q %q", q.ID, tenant, model, q.Tenant, q.Model)
		}
	}
}

func checkStageSum(t *testing.T, res *attribution.Result, r *attribution.Request) {
	t.Helper()
	var sum int64
	for _, v := range r.Stages {
		sum += v
	}
	if sum != r.End-r.Arrival {
		t.Fatalf("request %s: stages sum to %d, E2E %d", res.ID(r), sum, r.End-r.Arrival)
	}
}

// TestBlindSpotsOnSynthWithoutTokenizeAndStream removes the llm.tokenize and
// llm.stream spans from a simulated run: the blind-spot section must name
// exactly those two gaps, with the shares the simulator's truth gives them.
func TestBlindSpotsOnSynthWithoutTokenizeAndStream(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(9, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tr := synthtrace.Decode(t, run, synth.StyleLLM, synth.ProtoFramed, "trace.pbf")
	kept := tr.Spans[:0]
	for _, s := range tr.Spans {
		if n := tr.Str(s.Name); n != "llm.tokenize" && n != "llm.stream" {
			kept = append(kept, s)
		}
	}
	tr.Spans = kept
	bs := attribution.Analyze(tr, attribution.DefaultOptions).BlindSpots
	var e2e, tokenize, stream float64
	for i := range run.Requests {
		q := &run.Requests[i]
		e2e += float64(q.E2E())
		tokenize += float64(q.Tokenize())
		stream += float64(q.Stream())
	}
	if len(bs.Gaps) != 2 {
		t.Fatalf("gaps = %+v, want the two removed stages", bs.Gaps)
	}
	want := map[string]struct {
		before, after, likely, span string
		share                       float64
	}{
		"tokenize": {"start", "queue", "tokenize", "llm.tokenize", tokenize / e2e},
		"stream":   {"detokenize", "end", "stream", "llm.stream", stream / e2e},
	}
	for _, g := range bs.Gaps {
		// The gap at the start also names ingress and templating, which
		// the simulator does not model; the missing stage comes last.
		if len(g.Likely) == 0 {
			t.Fatalf("gap %+v names no likely stage", g)
		}
		missing := g.Likely[len(g.Likely)-1]
		w, ok := want[missing]
		if !ok || g.Before != w.before || g.After != w.after || !strings.HasSuffix(g.Span, w.span) || math.Abs(g.Share-w.share) > 1e-9 {
			t.Errorf("gap %+v, want %+v", g, w)
		}
		delete(want, missing)
	}
	if math.Abs(bs.UnexplainedShare-(tokenize+stream)/e2e) > 1e-9 {
		t.Errorf("unexplained share %v, truth %v", bs.UnexplainedShare, (tokenize+stream)/e2e)
	}
}
