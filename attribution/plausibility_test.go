package attribution

import (
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

func warningCodes(res *Result) map[string]string {
	out := map[string]string{}
	for _, w := range res.Warnings {
		out[w.Code] = w.Msg
	}
	return out
}

// TestSGLang05Trace's request with its slices exported without parent
// links: the slices cannot be used, the tokenizer-side attributes give a
// 98.5% prefill and a 0.006 ms TPOT, and both implausibilities are named.
func TestUnparentedSGLangSlices(t *testing.T) {
	b := newBuilder()
	res := b.resource("sglang")
	b.span(1, ingest.SpanID{}, res, " Req req-sgla", 0, 300*ms,
		"gen_ai.request.id", "req-sglang-001", "gen_ai.usage.prompt_tokens", 20, "gen_ai.usage.completion_tokens", 8,
		"gen_ai.latency.time_to_first_token", 0.2996, "gen_ai.latency.e2e", 0.300,
		"gen_ai.latency.time_in_model_prefill", 0.2956, "gen_ai.latency.time_in_model_decode", 4.4e-5,
		"gen_ai.latency.time_in_model_inference", 0.296)
	none := ingest.SpanID{}
	b.span(1, none, res, "tokenize", 0, 3_200*us)
	b.span(1, none, res, "prefill_waiting", 5_100*us, 5_200*us)
	b.span(1, none, res, "prefill_forward", 5_200*us, 60*ms)
	b.span(1, none, res, "decode_forward", 60*ms, 296*ms)
	out := b.analyze(DefaultOptions)
	if len(out.Requests) != 1 {
		t.Fatalf("%d requests", len(out.Requests))
	}
	if tpot := out.Requests[0].TPOT; tpot >= minTokenGap {
		t.Fatalf("TPOT %v ns: the fixture must be implausible", tpot)
	}
	codes := warningCodes(out)
	if m := codes["implausible-tpot"]; !strings.Contains(m, "TPOT under 0.1 ms on 1 of 1 requests (smallest 0.006 ms") {
		t.Errorf("TPOT warning %q", m)
	}
	if m := codes["unparented-stage-spans"]; !strings.Contains(m, "4 stage spans (decode_forward, prefill_forward, prefill_waiting, tokenize) have no parent link") {
		t.Errorf("unparented warning %q", m)
	}
	// Linked, as SGLang exports them: no warning.
	if c := warningCodes(sglangLinked()); c["unparented-stage-spans"] != "" || c["implausible-tpot"] != "" {
		t.Errorf("linked slices warned: %v", c)
	}
}

func sglangLinked() *Result {
	b := newBuilder()
	res := b.resource("sglang")
	root := b.span(1, ingest.SpanID{}, res, " Req req-sgla", 0, 300*ms, "rid", "req-sglang-001", "gen_ai.usage.completion_tokens", 8)
	b.span(1, root, res, "prefill_forward", 5_200*us, 60*ms)
	b.span(1, root, res, "decode_forward", 60*ms, 296*ms)
	return b.analyze(DefaultOptions)
}

// Token events 20 µs apart (events stamped when a chunk is flushed) are
// not inter-token latencies.
func TestImplausibleITL(t *testing.T) {
	b := newBuilder()
	id := b.span(1, ingest.SpanID{}, b.resource("svc"), "llm.request", 0, 100*ms)
	for _, at := range []int64{50 * ms, 50*ms + 20*us, 50*ms + 40*us, 60 * ms} {
		b.event(id, "llm.token", at)
	}
	c := warningCodes(b.analyze(DefaultOptions))
	if m := c["implausible-itl"]; !strings.Contains(m, "ITL under 0.1 ms between 2 pairs of llm.token events (smallest 0.020 ms)") {
		t.Errorf("ITL warning %q (all: %v)", m, c)
	}
}
