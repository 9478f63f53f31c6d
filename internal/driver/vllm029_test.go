package driver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// vllm029 is one llm_request span as vLLM 0.29.0 exports it (the figures of
// docs/server-spans.md §1.7), in the collector file exporter's JSON form.
const vllm029 = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"vllm"}}]},` +
	`"scopeSpans":[{"scope":{"name":"vllm.llm_engine"},"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331",` +
	`"name":"llm_request","kind":2,"startTimeUnixNano":"1764590000000000000","endTimeUnixNano":"1764590000254922000","attributes":[` +
	`{"key":"gen_ai.request.id","value":{"stringValue":"chatcmpl-0d1e"}},` +
	`{"key":"gen_ai.usage.prompt_tokens","value":{"intValue":"14"}},{"key":"gen_ai.usage.completion_tokens","value":{"intValue":"8"}},` +
	`{"key":"gen_ai.latency.time_to_first_token","value":{"doubleValue":0.115546}},{"key":"gen_ai.latency.e2e","value":{"doubleValue":0.253597}},` +
	`{"key":"gen_ai.latency.time_in_queue","value":{"doubleValue":5.46e-05}},{"key":"gen_ai.latency.time_in_model_prefill","value":{"doubleValue":0.057815}},` +
	`{"key":"gen_ai.latency.time_in_model_decode","value":{"doubleValue":0.138305}},{"key":"gen_ai.latency.time_in_model_inference","value":{"doubleValue":0.19612}}]}]}]}]}`

// The report on the real vLLM 0.29 request: TTFT and TPOT from the
// attributes, both E2Es shown, and the 57.7 ms blind spot placed before the
// queue with spans that would close it.
func TestAnalyzeVLLM029Span(t *testing.T) {
	path := filepath.Join(t.TempDir(), "vllm.jsonl")
	if err := os.WriteFile(path, []byte(vllm029+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := analyzeText(t, 0, Options{}, path)
	flat := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"TTFT 1 115.5", // n, then p50
		"TPOT 1 19.76",
		"E2E 1 254.9",
		"gen_ai.latency.e2e differs by more than 1 ms on 1 of 1 requests: p50 254.9 ms span, 253.6 ms attribute",
		"start → queue 22.6% of E2E in 1 requests (likely ingress, prompt templating, tokenize)",
		"→ add an ingress span (HTTP receive), a chat_template span, llm.tokenize: it would explain 22.6% of E2E (start → queue)",
	} {
		if !strings.Contains(flat, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "decode → end 2") {
		t.Errorf("the unexported time is placed after decode:\n%s", out)
	}
}
