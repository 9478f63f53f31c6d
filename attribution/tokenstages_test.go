package attribution

import (
	"strings"
	"testing"
)

// tokenSplit walks a result's tokens and returns each token's buckets.
func tokenSplit(res *Result) [][NumBuckets]int64 {
	var out [][NumBuckets]int64
	res.EachToken(func(tb *TokenBreakdown) { out = append(out, tb.Buckets) })
	return out
}

// Inputs with no scheduling data — no steps, no queue — leave no token time
// in queue: what is not known is named unattributed, and the summary says
// what is missing.
func TestTokensWithoutSchedulingData(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(b *builder)
	}{
		{"llm.request with token events (a first record capture)", func(b *builder) {
			id := b.span(1, [8]byte{}, b.resource("svc"), "llm.request", 0, 100*ms, "llm.model", "m")
			for _, at := range []int64{40, 50, 60, 70} {
				b.event(id, "llm.token", at*ms)
			}
		}},
		{"GenAI chat span (semconv, time_to_first_chunk)", func(b *builder) {
			// docs/otlp-inputs.md §3.1: name "{operation} {model}", the
			// required operation and provider, usage and the first chunk.
			b.span(1, [8]byte{}, b.resource("client"), "chat llama-3.1-8b", 0, 100*ms,
				"gen_ai.operation.name", "chat", "gen_ai.provider.name", "openai", "gen_ai.request.model", "llama-3.1-8b",
				"gen_ai.usage.input_tokens", 12, "gen_ai.usage.output_tokens", 1, "gen_ai.response.time_to_first_chunk", 0.04)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder()
			c.build(b)
			res := b.analyze(DefaultOptions)
			toks := tokenSplit(res)
			if len(toks) == 0 {
				t.Fatal("no tokens")
			}
			for i, bk := range toks {
				var sum int64
				for _, v := range bk {
					sum += v
				}
				if bk[BucketQueue] != 0 || bk[BucketUnattributed] != sum || sum == 0 {
					t.Errorf("token %d: queue %d, unattributed %d of %d", i, bk[BucketQueue], bk[BucketUnattributed], sum)
				}
			}
			if res.Tokens.First.Buckets[BucketQueue].Share != 0 {
				t.Errorf("first tokens' queue share %v", res.Tokens.First.Buckets[BucketQueue].Share)
			}
			if !strings.Contains(strings.Join(res.Tokens.Unfilled, "\n"), "of 1 requests: no scheduling data") {
				t.Errorf("unfilled does not name the gap: %q", res.Tokens.Unfilled)
			}
		})
	}
}

// vLLM 0.29's attributes (docs/server-spans.md §1.7) place queue and
// prefill before the first token and decode after it: the tokens carry them
// as the request's stages do, and nothing is unattributed.
func TestTokensFromAttributeStages(t *testing.T) {
	b := newBuilder()
	b.span(1, [8]byte{}, b.resource("vllm"), "llm_request", 0, 254_922*us,
		"gen_ai.request.id", "chatcmpl-1", "gen_ai.usage.prompt_tokens", 14, "gen_ai.usage.completion_tokens", 8,
		"gen_ai.latency.time_to_first_token", 0.115546, "gen_ai.latency.time_in_queue", 5.46e-5,
		"gen_ai.latency.time_in_model_prefill", 0.057815, "gen_ai.latency.time_in_model_decode", 0.138305,
		"gen_ai.latency.time_in_model_inference", 0.19612, "gen_ai.latency.e2e", 0.253597)
	res := b.analyze(DefaultOptions)
	toks := tokenSplit(res)
	if len(toks) != 8 {
		t.Fatalf("%d tokens", len(toks))
	}
	first := toks[0]
	if first[BucketStagePrefill] != 57_815*us || first[BucketQueue] != 54_600 || first[BucketOther] != 115_546*us-57_815*us-54_600 {
		t.Errorf("first token: prefill %d, queue %d, other %d", first[BucketStagePrefill], first[BucketQueue], first[BucketOther])
	}
	var decode int64
	for i, bk := range toks {
		decode += bk[BucketStageDecode]
		if bk[BucketUnattributed] != 0 {
			t.Errorf("token %d: %d ns unattributed", i, bk[BucketUnattributed])
		}
	}
	if decode != 138_305*us {
		t.Errorf("decode tokens hold %d ns of decode, want %d", decode, 138_305*us)
	}
	segs := res.DerivedSegments(&res.Requests[0])
	if len(segs) != 3 || segs[0].Stage != StageQueue || segs[1].Stage != StagePrefill || segs[2].Stage != StageDecode {
		t.Errorf("derived segments %+v", segs)
	}
}
