package otlptest

import (
	"fmt"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Synthetic is a generator of large, realistic OTLP dumps for benchmarks:
// batches as an exporter sends them (one resource, one scope, Spans spans),
// made of vLLM llm_request spans (15 gen_ai.* attributes) and llmprof
// llm.request spans (15 llm.* and gen_ai.* attributes, every second one with
// per-token llm.token events). It is deterministic for a given Seed.
type Synthetic struct {
	Seed uint64
	// Spans per batch (default 512, the OpenTelemetry SDK's batch size).
	Spans int

	rng   *rand.Rand
	batch int
	now   int64
}

var (
	models  = []string{"meta-llama/Llama-3.1-8B-Instruct", "Qwen/Qwen2.5-32B-Instruct", "mistralai/Mistral-7B-Instruct-v0.3"}
	tenants = []string{"tenant-a", "tenant-b", "tenant-c", "tenant-d", "batch-jobs"}
	hosts   = []string{"gpu-node-1", "gpu-node-2", "gpu-node-3"}
)

// Next returns the next batch.
func (g *Synthetic) Next() ptrace.Traces {
	if g.rng == nil {
		g.rng = rand.New(rand.NewPCG(g.Seed, 0x6c6c6d70726f66))
		g.now = T0
	}
	n := g.Spans
	if n <= 0 {
		n = 512
	}
	g.batch++
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	host := hosts[g.batch%len(hosts)]
	ra := rs.Resource().Attributes()
	ra.PutStr("service.name", "vllm")
	ra.PutStr("host.name", host)
	ra.PutInt("process.pid", int64(4000+g.batch%len(hosts)))
	ra.PutStr("telemetry.sdk.language", "python")
	ra.PutStr("telemetry.sdk.name", "opentelemetry")
	ra.PutStr("telemetry.sdk.version", "1.27.0")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("vllm.llm_engine")
	ss.Scope().SetVersion("0.10.1")
	spans := ss.Spans()
	spans.EnsureCapacity(n)
	for i := 0; i < n; i++ {
		g.span(spans.AppendEmpty(), i)
	}
	return td
}

func (g *Synthetic) span(sp ptrace.Span, i int) {
	r := g.rng
	var tid [16]byte
	var sid [8]byte
	for k := range tid {
		tid[k] = byte(r.Uint32())
	}
	for k := range sid {
		sid[k] = byte(r.Uint32())
	}
	sp.SetTraceID(pcommon.TraceID(tid))
	sp.SetSpanID(pcommon.SpanID(sid))
	if r.IntN(2) == 0 {
		var pid [8]byte
		for k := range pid {
			pid[k] = byte(r.Uint32())
		}
		sp.SetParentSpanID(pcommon.SpanID(pid))
	}
	g.now += int64(r.IntN(2_000_000))
	queue := r.Float64() * 0.05
	prefill := 0.01 + r.Float64()*0.2
	out := 1 + r.IntN(512)
	tpot := 0.008 + r.Float64()*0.03
	decode := tpot * float64(out-1)
	e2e := queue + prefill + decode + 0.002
	sp.SetStartTimestamp(pcommon.Timestamp(g.now))
	sp.SetEndTimestamp(pcommon.Timestamp(g.now + int64(e2e*1e9)))
	sp.SetKind(ptrace.SpanKindServer)
	model := models[r.IntN(len(models))]
	id := fmt.Sprintf("cmpl-%016x-%d", r.Uint64(), i)
	a := sp.Attributes()
	a.EnsureCapacity(15)
	if i%2 == 0 {
		sp.SetName("llm_request")
		a.PutStr("gen_ai.response.model", model)
		a.PutStr("gen_ai.request.id", id)
		a.PutDouble("gen_ai.request.temperature", float64(r.IntN(11))/10)
		a.PutDouble("gen_ai.request.top_p", 0.95)
		a.PutInt("gen_ai.request.max_tokens", 512)
		a.PutInt("gen_ai.request.n", 1)
		a.PutInt("gen_ai.usage.prompt_tokens", int64(16+r.IntN(4096)))
		a.PutInt("gen_ai.usage.completion_tokens", int64(out))
		a.PutDouble("gen_ai.latency.time_in_queue", queue)
		a.PutDouble("gen_ai.latency.time_to_first_token", queue+prefill)
		a.PutDouble("gen_ai.latency.e2e", e2e)
		a.PutDouble("gen_ai.latency.time_in_scheduler", queue/10)
		a.PutDouble("gen_ai.latency.time_in_model_prefill", prefill)
		a.PutDouble("gen_ai.latency.time_in_model_decode", decode)
		a.PutDouble("gen_ai.latency.time_in_model_inference", prefill+decode)
		return
	}
	sp.SetName("llm.request")
	a.PutStr("llm.request.id", id)
	a.PutStr("llm.tenant", tenants[r.IntN(len(tenants))])
	a.PutStr("llm.model_id", model)
	a.PutInt("llm.input_length", int64(16+r.IntN(4096)))
	a.PutInt("llm.output_length", int64(out))
	a.PutDouble("llm.cache_hit_ratio", float64(r.IntN(101))/100)
	a.PutStr("llm.prompt_template_hash", fmt.Sprintf("%016x", r.Uint64()%64))
	a.PutStr("gen_ai.operation.name", "chat")
	a.PutStr("gen_ai.request.model", model)
	a.PutInt("gen_ai.usage.input_tokens", int64(16+r.IntN(4096)))
	a.PutInt("gen_ai.usage.output_tokens", int64(out))
	a.PutBool("gen_ai.request.stream", r.IntN(4) != 0)
	a.PutStr("server.address", "10.0.3.17")
	a.PutInt("server.port", 8000)
	a.PutStr("http.route", "/v1/chat/completions")
	if i%4 == 1 {
		t := g.now + int64((queue+prefill)*1e9)
		for k := 0; k < 4 && k < out; k++ {
			ev := sp.Events().AppendEmpty()
			ev.SetName("llm.token")
			ev.SetTimestamp(pcommon.Timestamp(t))
			ev.Attributes().PutInt("llm.token.index", int64(k))
			t += int64(tpot * 1e9)
		}
	}
	sp.Status().SetCode(ptrace.StatusCodeOk)
}
