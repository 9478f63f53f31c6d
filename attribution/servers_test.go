package attribution

import (
	"math"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

const us = int64(1000)

// A real vLLM 0.29.0 llm_request span (docs/server-spans.md §1.7): the
// attributes are anchored on the first token, not laid end to end, so the
// 57.7 ms that vLLM does not export lies before the queue, not after decode.
func TestVLLM029AttributeAnchors(t *testing.T) {
	b := newBuilder()
	b.span(1, ingest.SpanID{}, b.resource("vllm"), "llm_request", 0, 254_922*us,
		"gen_ai.request.id", "chatcmpl-1", "gen_ai.usage.prompt_tokens", 14, "gen_ai.usage.completion_tokens", 8,
		"gen_ai.latency.time_to_first_token", 0.115546, "gen_ai.latency.time_in_queue", 5.46e-5,
		"gen_ai.latency.time_in_model_prefill", 0.057815, "gen_ai.latency.time_in_model_decode", 0.138305,
		"gen_ai.latency.time_in_model_inference", 0.19612, "gen_ai.latency.e2e", 0.253597)
	res := b.analyze(DefaultOptions)
	checkPartition(t, res)
	if len(res.Requests) != 1 {
		t.Fatalf("%d requests", len(res.Requests))
	}
	r := res.Requests[0]
	const preQueue = 115_546*us - 57_815*us - 54_600 // TTFT − prefill − queue
	const post = 254_922*us - (115_546*us + 138_305*us)
	want := map[Stage]int64{StageQueue: 54_600, StagePrefill: 57_815 * us, StageDecode: 138_305 * us, StageOther: preQueue + post}
	for st := Stage(0); st < NumStages; st++ {
		if r.Stages[st] != want[st] {
			t.Errorf("stage %s = %d ns, want %d", st, r.Stages[st], want[st])
		}
	}
	for _, m := range []struct {
		name      string
		got, want float64
	}{
		{"ttft", r.TTFT, float64(115_546 * us)},
		{"tpot", r.TPOT, float64(138_305*us) / 7},
		{"e2e (span)", r.E2E, float64(254_922 * us)},
		{"e2e attribute", res.e2eAttr(&r), float64(253_597 * us)},
		{"queue", r.Queue, 54_600},
	} {
		if !near(m.got, m.want) {
			t.Errorf("%s = %v, want %v", m.name, m.got, m.want)
		}
	}
	if r.FirstToken != 115_546*us || r.LastToken != 253_851*us {
		t.Errorf("first/last token at %d/%d", r.FirstToken, r.LastToken)
	}
	if len(res.Gaps(&r)) != 2 || res.Gaps(&r)[0] != (Gap{0, preQueue, StageOther, StageQueue}) || res.Gaps(&r)[1] != (Gap{253_851 * us, 254_922 * us, StageDecode, StageOther}) {
		t.Errorf("gaps = %+v", res.Gaps(&r))
	}
	// The two E2Es differ by 1.325 ms: both are reported.
	if n := res.E2E; n.Used != "span duration" || n.Attribute != "gen_ai.latency.e2e" || n.WithAttribute != 1 || n.Differ != 1 ||
		math.Abs(float64(n.SpanP50Ms)-254.922) > 1e-9 || math.Abs(float64(n.AttributeP50Ms)-253.597) > 1e-9 {
		t.Errorf("e2e note = %+v", n)
	}
	bs := res.BlindSpots
	if bs.Largest == nil || bs.Largest.Before != "start" || bs.Largest.After != "queue" {
		t.Fatalf("largest blind spot = %+v, want the time before the queue", bs.Largest)
	}
	if got := strings.Join(bs.Largest.Likely, ","); got != "ingress,prompt templating,tokenize" ||
		!strings.Contains(bs.Largest.Span, "ingress") || !strings.Contains(bs.Largest.Span, "llm.tokenize") {
		t.Errorf("advice = %+v", bs.Largest)
	}
	if math.Abs(bs.Largest.TotalMs-float64(preQueue)/1e6) > 1e-9 {
		t.Errorf("gap before the queue = %v ms, want %v", bs.Largest.TotalMs, float64(preQueue)/1e6)
	}
	if len(bs.Gaps) != 2 || bs.Gaps[1].Before != "decode" || strings.Join(bs.Gaps[1].Likely, ",") != "detokenize,stream" {
		t.Errorf("gaps = %+v", bs.Gaps)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings = %v", res.Warnings)
	}
}

// vLLM V0 (time_in_queue from arrival, no prefill/decode split) and an
// attribute set whose TTFT is smaller than queue + prefill by a sub-ms clock
// residual (API-server vs engine clocks): the queue is clipped to the span,
// silently.
func TestAttributeAnchorsResiduals(t *testing.T) {
	b := newBuilder()
	b.span(1, ingest.SpanID{}, b.resource("vllm"), "llm_request", 0, 100*ms,
		"gen_ai.latency.time_to_first_token", 0.030, "gen_ai.latency.time_in_queue", 0.0102,
		"gen_ai.latency.time_in_model_prefill", 0.020, "gen_ai.latency.time_in_model_decode", 0.060, "gen_ai.latency.e2e", 0.0905)
	res := b.analyze(DefaultOptions)
	checkPartition(t, res)
	r := res.Requests[0]
	if r.Stages[StageQueue] != 10*ms || r.Stages[StagePrefill] != 20*ms || r.Stages[StageDecode] != 60*ms || r.Stages[StageOther] != 10*ms {
		t.Errorf("stages = %v", r.Stages)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("a 0.2 ms residual is no problem: %v", res.Warnings)
	}
	// No TTFT: the first token is e2e − decode after the start.
	b = newBuilder()
	b.span(2, ingest.SpanID{}, b.resource("vllm"), "llm_request", 0, 100*ms,
		"gen_ai.latency.time_in_queue", 0.002, "gen_ai.latency.time_in_model_prefill", 0.020,
		"gen_ai.latency.time_in_model_decode", 0.060, "gen_ai.latency.e2e", 0.095, "gen_ai.usage.completion_tokens", 7)
	res = b.analyze(DefaultOptions)
	r = res.Requests[0]
	if r.Stages[StageQueue] != 2*ms || r.Stages[StagePrefill] != 20*ms || r.Stages[StageDecode] != 60*ms || res.Gaps(&r)[0] != (Gap{0, 13 * ms, StageOther, StageQueue}) {
		t.Errorf("stages = %v, gaps %+v", r.Stages, res.Gaps(&r))
	}
	if !near(r.TPOT, float64(10*ms)) {
		t.Errorf("tpot = %v", r.TPOT)
	}
}

// An SGLang 0.5 request trace (docs/server-spans.md §2.7): the root is
// " Req <rid[:8]>" without a rid attribute, with gen_ai.latency.* that the
// tokenizer measured at output arrival (non-streaming: decode ≈ 0); the
// slices hold the real split.
func TestSGLang05Trace(t *testing.T) {
	b := newBuilder()
	res := b.resource("sglang")
	root := b.span(1, ingest.SpanID{}, res, " Req req-sgla", 0, 300*ms,
		"gen_ai.request.id", "req-sglang-001", "gen_ai.usage.prompt_tokens", 20, "gen_ai.usage.completion_tokens", 8,
		"gen_ai.latency.time_to_first_token", 0.2996, "gen_ai.latency.e2e", 0.300,
		"gen_ai.latency.time_in_model_prefill", 0.2956, "gen_ai.latency.time_in_model_decode", 4.4e-5,
		"gen_ai.latency.time_in_model_inference", 0.296)
	tok := b.span(1, root, res, "Tokenizer (host:1a2b3c4d | pid:77)", 0, 4*ms, "thread_label", "Tokenizer")
	b.span(1, tok, res, "tokenize", 0, 3_200*us)
	b.span(1, tok, res, "api_server_dispatch", 3_400*us, 4*ms)
	sch := b.span(1, root, res, "Scheduler [TP 0] [PP 0] (host:1a2b3c4d | pid:78)", 4_600*us, 296*ms, "tp_rank", 0)
	b.span(1, sch, res, "request_process", 4_600*us, 5_100*us)
	b.span(1, sch, res, "prefill_waiting", 5_100*us, 5_200*us)
	pf := b.span(1, sch, res, "prefill_forward", 5_200*us, 60*ms)
	b.span(1, pf, res, "chunked_prefill", 5_200*us, 30*ms)
	b.span(1, pf, res, "chunked_prefill", 30*ms, 60*ms)
	df := b.span(1, sch, res, "decode_forward", 60*ms, 296*ms)
	for i := range int64(7) {
		from := 60*ms + i*236*ms/7
		b.span(1, df, res, "decode_loop", from, 60*ms+(i+1)*236*ms/7, "decode_ct", int(i+1))
	}
	out := b.analyze(DefaultOptions)
	checkPartition(t, out)
	if len(out.Requests) != 1 {
		t.Fatalf("%d requests (%v)", len(out.Requests), out.Styles)
	}
	r := &out.Requests[0]
	if r.Style() != StyleSGLang || out.ID(r) != "req-sglang-001" {
		t.Fatalf("style %s id %s", r.Style(), out.ID(r))
	}
	want := map[Stage]int64{
		StageTokenize: 3_200*us + 600*us + 500*us, StageQueue: 100 * us,
		StagePrefill: 54_800 * us, StageDecode: 236 * ms,
		StageOther: 200*us + 600*us + 4*ms, // tokenize→dispatch, the IPC hop, scheduler end → root end
	}
	for st := Stage(0); st < NumStages; st++ {
		if r.Stages[st] != want[st] {
			t.Errorf("stage %s = %d, want %d", st, r.Stages[st], want[st])
		}
	}
	if share := float64(r.Stages[StageOther]) / r.E2E; share >= 0.10 {
		t.Errorf("other = %.1f%% of E2E", 100*share)
	}
	if !near(r.TPOT, float64(236*ms)/7) || !near(r.TTFT, float64(60*ms)) {
		t.Errorf("tpot %v ttft %v, want the decode_forward span / 7 and the prefill end", r.TPOT, r.TTFT)
	}
	var disagree []string
	for _, w := range out.Warnings {
		if w.Code == "latency-attributes-disagree" {
			disagree = append(disagree, w.Msg)
			for i := 0; i < w.More; i++ {
				disagree = append(disagree, "")
			}
		}
	}
	// Decode (0.044 ms vs 236 ms), prefill (295.6 vs 54.8) and TTFT (299.6
	// vs 60) disagree beyond 2×.
	if len(disagree) != 3 || !strings.Contains(disagree[0], "gen_ai.latency.time_in_model_prefill = 295.600 ms but the prefill span covers 54.800 ms") {
		t.Errorf("disagreement warnings = %q", disagree)
	}
	covered := map[string]bool{}
	for _, bp := range out.BlindSpots.Breakpoints {
		covered[bp.Name] = bp.Covered
	}
	if !covered["decode"] || !covered["decode steps"] || !covered["queue"] || !covered["tokenize"] {
		t.Errorf("breakpoints = %+v", out.BlindSpots.Breakpoints)
	}
}

// A span merely named like an SGLang root, without any attribute SGLang
// sets on one, is no request.
func TestSGLangNameAloneIsNoRequest(t *testing.T) {
	b := newBuilder()
	b.span(1, ingest.SpanID{}, b.resource("app"), "Req handler", 0, 10*ms, "http.method", "GET")
	if out := b.analyze(DefaultOptions); len(out.Requests) != 0 {
		t.Fatalf("requests = %+v", out.Requests)
	}
}

// Stage spans and attributes that agree (within 2×) raise no warning, and
// the check also runs for llmprof's own convention.
func TestCrossCheckAgreeing(t *testing.T) {
	b := newBuilder()
	res := b.resource("engine")
	r := b.span(1, ingest.SpanID{}, res, "llm.request", 0, 100*ms, "gen_ai.latency.time_in_model_decode", 0.055, "gen_ai.latency.time_in_queue", 0.030)
	b.span(1, r, res, "llm.queue", 0, 10*ms)
	b.span(1, r, res, "llm.prefill", 10*ms, 40*ms)
	b.span(1, r, res, "llm.decode", 40*ms, 90*ms)
	out := b.analyze(DefaultOptions)
	if len(out.Warnings) != 1 || out.Warnings[0].Code != "latency-attributes-disagree" || !strings.Contains(out.Warnings[0].Msg, "time_in_queue = 30.000 ms but the queue span covers 10.000 ms (3.0×)") {
		t.Errorf("warnings = %v", out.Warnings)
	}
}
