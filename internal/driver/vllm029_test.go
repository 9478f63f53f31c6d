package driver

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/export"
	"github.com/llmprof/llmprof/report"
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

// The real vLLM 0.29 request's stages come from its attributes only: the
// first token carries its queue and prefill, the decode tokens its decode,
// and the Perfetto export draws the three stages beside the request span.
func TestVLLM029TokensAndTimeline(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "vllm.jsonl")
	if err := os.WriteFile(path, []byte(vllm029+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := run(t, Options{}, path)
	var tokens bytes.Buffer
	if err := report.WriteTokens(&tokens, a.Attr, false); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&tokens).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := map[string]int{}
	for i, name := range rows[0] {
		col[name] = i
	}
	first := rows[1]
	// 57.815 ms of prefill and 54.6 µs of queue (docs/server-spans.md §1.7).
	if first[col["stage_prefill_ns"]] != "57815000" || first[col["queue_ns"]] != "54600" {
		t.Errorf("first token: prefill %s ns, queue %s ns", first[col["stage_prefill_ns"]], first[col["queue_ns"]])
	}
	for _, row := range rows[2:] {
		if row[col["stage_decode_ns"]] == "0" || row[col["queue_ns"]] != "0" {
			t.Errorf("decode token %s: decode %s ns, queue %s ns", row[col["token_index"]], row[col["stage_decode_ns"]], row[col["queue_ns"]])
		}
	}
	var timeline bytes.Buffer
	if _, err := export.WritePerfetto(&timeline, a.Trace, PerfettoOptions([]string{path}, a)); err != nil {
		t.Fatal(err)
	}
	raw := timeline.Bytes()
	var doc struct {
		TraceEvents []struct {
			Ph, Cat, Name string
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	var stages []string
	for _, e := range doc.TraceEvents {
		if e.Cat == "llmprof.stage" && e.Ph == "b" {
			stages = append(stages, e.Name)
		}
	}
	if strings.Join(stages, ",") != "queue,prefill,decode" {
		t.Errorf("timeline stage slices %v, want queue, prefill, decode", stages)
	}
}

// llmRequestWithTokens is what a first `llmprof record` of a small service
// receives: one llm.request span with llm.token events and nothing else
// (the span and event names of docs/server-spans.md, the llmprof
// convention).
const llmRequestWithTokens = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},` +
	`"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"llm.request","kind":2,` +
	`"startTimeUnixNano":"1764590000000000000","endTimeUnixNano":"1764590000100000000","attributes":[{"key":"llm.model","value":{"stringValue":"m"}}],` +
	`"events":[{"name":"llm.token","timeUnixNano":"1764590000040000000"},{"name":"llm.token","timeUnixNano":"1764590000050000000"},` +
	`{"name":"llm.token","timeUnixNano":"1764590000060000000"}]}]}]}]}`

// Without steps or a queue stage nothing of a token is queue: the report
// shows it unattributed and says what is missing.
func TestTokensWithoutSchedulingDataReport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "capture.json")
	if err := os.WriteFile(path, []byte(llmRequestWithTokens), 0o644); err != nil {
		t.Fatal(err)
	}
	out := analyzeText(t, 0, Options{}, path)
	// The section, not the findings' pointer to it ("→ PER TOKEN").
	section := out[strings.Index(out, "\nPER TOKEN")+1:]
	section = section[:strings.Index(section, "\n\n")]
	flat := strings.Join(strings.Fields(section), " ")
	for _, want := range []string{"unattr", "first 1 40.00 100.0%", "queue, prefill, decode of 1 of 1 requests: no scheduling data"} {
		if !strings.Contains(flat, want) {
			t.Errorf("per-token section lacks %q:\n%s", want, section)
		}
	}
	if header := strings.Fields(strings.Split(section, "\n")[1]); slices.Contains(header, "queue") {
		t.Errorf("per-token section shows a queue column %v:\n%s", header, section)
	}
}
