package attribution

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

func TestBlindSpotsNameMissingStages(t *testing.T) {
	b := newBuilder()
	res := b.resource("engine")
	// Two requests instrumented without llm.tokenize and llm.stream: 3 ms
	// before the queue and 5 ms after detokenize are unexplained.
	for tr := byte(1); tr <= 2; tr++ {
		off := int64(tr) * 1000 * ms
		r := b.span(tr, ingest.SpanID{}, res, "llm.request", off, off+100*ms, "llm.request.id", "r")
		b.span(tr, r, res, "llm.queue", off+3*ms, off+10*ms)
		b.span(tr, r, res, "llm.prefill", off+10*ms, off+40*ms)
		b.span(tr, r, res, "llm.decode", off+40*ms, off+93*ms)
		b.span(tr, r, res, "llm.detokenize", off+93*ms, off+95*ms)
	}
	out := b.analyze(DefaultOptions)
	bs := out.BlindSpots
	if math.Abs(bs.UnexplainedShare-0.08) > 1e-12 {
		t.Fatalf("unexplained share = %v, want 0.08", bs.UnexplainedShare)
	}
	if len(bs.Gaps) != 2 {
		t.Fatalf("gaps = %+v", bs.Gaps)
	}
	stream, tok := bs.Gaps[0], bs.Gaps[1]
	if stream.Before != "detokenize" || stream.After != "end" || len(stream.Likely) != 1 || stream.Likely[0] != "stream" ||
		stream.Span != "llm.stream" || math.Abs(stream.Share-0.05) > 1e-12 || stream.Requests != 2 {
		t.Errorf("largest gap = %+v", stream)
	}
	// Before the first stage: the server's input handling, tokenization last.
	if tok.Before != "start" || tok.After != "queue" || strings.Join(tok.Likely, ",") != "ingress,prompt templating,tokenize" ||
		tok.Span != "an ingress span (HTTP receive), a chat_template span, llm.tokenize" || math.Abs(tok.Share-0.03) > 1e-12 {
		t.Errorf("second gap = %+v", tok)
	}
	if bs.Largest == nil || bs.Largest.Span != "llm.stream" || bs.Largest.Share != stream.Share {
		t.Errorf("largest gap = %+v, want the stream gap", bs.Largest)
	}
	covered := map[string]bool{}
	for _, bp := range bs.Breakpoints {
		covered[bp.Name] = bp.Covered
	}
	for name, want := range map[string]bool{"queue": true, "prefill": true, "decode": true, "decode steps": false, "tokenize": false, "streaming": false, "auth": false} {
		if covered[name] != want {
			t.Errorf("breakpoint %s covered = %v, want %v", name, covered[name], want)
		}
	}
}

func TestBlindSpotsCallerSeesMore(t *testing.T) {
	b := newBuilder()
	client := b.span(1, ingest.SpanID{}, b.resource("app"), "POST /v1/chat/completions", 0, 1000*ms, "http.request.method", "POST")
	b.span(1, client, b.resource("vllm"), "llm_request", 400*ms, 1000*ms, "gen_ai.latency.e2e", 0.6, "gen_ai.latency.time_to_first_token", 0.1,
		"gen_ai.latency.time_in_queue", 0.05, "gen_ai.latency.time_in_model_prefill", 0.05, "gen_ai.latency.time_in_model_decode", 0.5)
	bs := b.analyze(DefaultOptions).BlindSpots
	if bs.Outside == nil || bs.Outside.TotalMs != 400 || bs.Outside.Requests != 1 {
		t.Fatalf("outside = %+v", bs.Outside)
	}
	if bs.UnexplainedShare != 0 || bs.Largest != bs.Outside || bs.Breakpoints[0].Name != "ingress" || !bs.Breakpoints[0].Covered {
		t.Fatalf("largest %+v, ingress %+v", bs.Largest, bs.Breakpoints[0])
	}
}

// TestBreakpointsFromRequestAttributes: a breakpoint no span shows is
// covered by the requests with time in its stage, counted one a request
// (blindSpots counts them in its walk of the requests, for breakpoints).
func TestBreakpointsFromRequestAttributes(t *testing.T) {
	b := newBuilder()
	res := b.resource("vllm")
	// Three vLLM requests with their latencies as attributes; the third
	// waited no time in the queue.
	for tr, queue := range []float64{0.05, 0.02, 0} {
		off := int64(tr+1) * 1000 * ms
		b.span(byte(tr+1), ingest.SpanID{}, res, "llm_request", off, off+600*ms, "gen_ai.latency.e2e", 0.6, "gen_ai.latency.time_to_first_token", 0.1,
			"gen_ai.latency.time_in_queue", queue, "gen_ai.latency.time_in_model_prefill", 0.05, "gen_ai.latency.time_in_model_decode", 0.5)
	}
	got := map[string]Breakpoint{}
	for _, bp := range b.analyze(DefaultOptions).BlindSpots.Breakpoints {
		got[bp.Name] = bp
	}
	for name, want := range map[string]Breakpoint{
		"queue":     {Name: "queue", Spans: 2, Via: "request attributes", Covered: true},
		"prefill":   {Name: "prefill", Spans: 3, Via: "request attributes", Covered: true},
		"decode":    {Name: "decode", Spans: 3, Via: "request attributes", Covered: true},
		"tokenize":  {Name: "tokenize"},
		"streaming": {Name: "streaming"},
	} {
		if got[name] != want {
			t.Errorf("breakpoint %s = %+v, want %+v", name, got[name], want)
		}
	}
}

// blindSpots computes the section from the attributed requests, their
// callers' extra time read again from the trace, and the trace's span
// names in a walk of its own: the oracle of what Analyze tallies as it
// builds each request (requestTally feeds blindTally).
func blindSpots(t *ingest.Trace, res *Result) BlindSpots {
	var b blindTally
	ix, k := newSpanIndex(t), newKeyCache(t)
	for i := range res.Requests {
		r := &res.Requests[i]
		var extra int64
		if r.Span < len(t.Spans) {
			extra = callerExtra(t, ix, k, r.Span)
		}
		b.add(r, res.Gaps(r), extra)
	}
	return b.spots(t)
}

// TestBlindSpotsTalliedAsBuilt: Analyze tallies the blind spots as it
// builds each request (requestTally); they are what a walk of the built
// requests and their gaps finds.
func TestBlindSpotsTalliedAsBuilt(t *testing.T) {
	for i, tr := range []*ingest.Trace{mixedStagesRun(), stallingTrace(t)} {
		res := Analyze(tr, DefaultOptions)
		if bs := res.BlindSpots; i == 0 && (len(bs.Gaps) < 2 || bs.Outside == nil) {
			t.Fatalf("too few gaps: the test covers little (%+v)", bs)
		}
		if want := blindSpots(tr, res); !reflect.DeepEqual(res.BlindSpots, want) {
			t.Errorf("tallied %+v\nwalked %+v", res.BlindSpots, want)
		}
		if i > 0 {
			continue
		}
		// Each breakpoint counts the spans whose names show it, one a span
		// (the names repeat from span to span: breakpoints' cache of them).
		spans := map[string]int{}
		for _, bp := range res.BlindSpots.Breakpoints {
			spans[bp.Name] = bp.Spans
		}
		for name, want := range map[string]int{"ingress": 6, "queue": 14, "prefill": 14, "decode": 7, "streaming": 0} {
			if spans[name] != want {
				t.Errorf("breakpoint %s: %d spans, want %d", name, spans[name], want)
			}
		}
	}
}

// mixedStagesRun is requests of two conventions, some with stage spans
// that leave gaps and a caller's span around one.
func mixedStagesRun() *ingest.Trace {
	b := newBuilder()
	engine := b.resource("engine")
	for tr := byte(1); tr <= 20; tr++ {
		off := int64(tr) * 1000 * ms
		if tr%3 == 0 {
			client := b.span(tr, ingest.SpanID{}, b.resource("app"), "POST /v1/chat/completions", off, off+900*ms)
			b.span(tr, client, b.resource("vllm"), "llm_request", off+100*ms, off+800*ms, "gen_ai.latency.e2e", 0.7,
				"gen_ai.latency.time_to_first_token", 0.1, "gen_ai.latency.time_in_queue", 0.02*float64(tr%4),
				"gen_ai.latency.time_in_model_prefill", 0.05, "gen_ai.latency.time_in_model_decode", 0.5)
			continue
		}
		r := b.span(tr, ingest.SpanID{}, engine, "llm.request", off, off+100*ms, "llm.request.id", "r")
		b.span(tr, r, engine, "llm.queue", off+int64(tr%4)*ms, off+10*ms)
		b.span(tr, r, engine, "llm.prefill", off+10*ms, off+40*ms)
		if tr%2 == 0 {
			b.span(tr, r, engine, "llm.decode", off+45*ms, off+93*ms)
		}
		b.span(tr, r, engine, "llm.detokenize", off+93*ms, off+95*ms)
	}
	b.t.Validate()
	return b.t
}
