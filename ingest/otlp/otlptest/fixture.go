// Package otlptest builds OTLP test data for the otlp decoder's tests and
// benchmarks: a small realistic LLM-serving trace (Fixture), a synthetic
// generator of large dumps (Synthetic), and encoders that write one
// ptrace.Traces in every form the decoder reads. The encodings come from the
// OpenTelemetry Collector's own marshalers (pdata) wherever one exists, so the
// decoder is tested against what real exporters write, not against itself.
package otlptest

import (
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// T0 is the fixture's epoch: 2026-01-01T00:00:00Z in Unix ns.
const T0 = int64(1767225600) * 1e9

// us is a fixture time: T0 plus a number of microseconds. Fixture times are
// whole microseconds so that Jaeger (µs resolution) carries them exactly.
func us(n int64) pcommon.Timestamp { return pcommon.Timestamp(T0 + n*1000) }

func traceID(n byte) pcommon.TraceID {
	return pcommon.TraceID{0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6, 0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, n}
}

func spanID(n byte) pcommon.SpanID {
	return pcommon.SpanID{0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, n}
}

// Fixture returns a small, realistic trace of an LLM server: three stock vLLM
// llm_request spans (gen_ai.* attributes, latencies in float seconds, parents
// in the client's service, so absent), and a server instrumented with
// llmprof's llm.* conventions: llm.request spans with child stage spans and
// llm.token events, a KV-cache lookup, an llm.step span with a string-array
// attribute, a map attribute and links to the requests it batched, OK and
// error statuses, resource attributes (with an array) and scope attributes.
//
// Each trace's spans are contiguous and no two traces start at the same
// instant, so an encoding that groups spans by trace (Jaeger) keeps the order.
func Fixture() ptrace.Traces {
	td := ptrace.NewTraces()

	// A vLLM engine process.
	rs := td.ResourceSpans().AppendEmpty()
	rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
	ra := rs.Resource().Attributes()
	ra.PutStr("service.name", "vllm")
	ra.PutStr("host.name", "gpu-node-7")
	ra.PutInt("process.pid", 4242)
	ra.PutStr("telemetry.sdk.language", "python")
	ra.PutStr("telemetry.sdk.version", "1.27.0")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("vllm.llm_engine")
	ss.Scope().SetVersion("0.10.1")
	ss.Scope().Attributes().PutStr("vllm.process_kind", "engine")
	for i, r := range []struct {
		id                     string
		start, end             int64
		prompt, completion     int64
		queue, ttft, e2e       float64
		prefill, decode, infer float64
		temperature, topP      float64
		maxTokens, n           int64
	}{
		{"cmpl-7f3a9c1e-0", 0, 1_234_500, 512, 128, 0.0123, 0.0871, 1.2345, 0.0748, 1.1451, 1.2199, 0.7, 0.95, 256, 1},
		{"cmpl-a01b22d4-0", 20_000, 640_250, 1024, 64, 0.0405, 0.1602, 0.62025, 0.1197, 0.4586, 0.5783, 0, 1, 64, 1},
		{"cmpl-c9d8e7f6-0", 41_000, 3_051_000, 128, 512, 0.0008, 0.0213, 3.01, 0.0205, 2.9887, 3.0092, 1.2, 0.9, 512, 2},
	} {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(traceID(byte(1 + i)))
		sp.SetSpanID(spanID(byte(0x10 + i)))
		sp.SetParentSpanID(pcommon.SpanID{0xc1, 0x1e, 0x47, 0, 0, 0, 0, byte(1 + i)}) // the client's span
		sp.SetName("llm_request")
		sp.SetKind(ptrace.SpanKindServer)
		sp.SetStartTimestamp(us(r.start))
		sp.SetEndTimestamp(us(r.end))
		a := sp.Attributes()
		a.PutStr("gen_ai.response.model", "meta-llama/Llama-3.1-8B-Instruct")
		a.PutStr("gen_ai.request.id", r.id)
		if r.temperature != 0 { // vLLM V1 sets sampling keys only when truthy
			a.PutDouble("gen_ai.request.temperature", r.temperature)
		}
		a.PutDouble("gen_ai.request.top_p", r.topP)
		a.PutInt("gen_ai.request.max_tokens", r.maxTokens)
		a.PutInt("gen_ai.request.n", r.n)
		a.PutInt("gen_ai.usage.prompt_tokens", r.prompt)
		a.PutInt("gen_ai.usage.completion_tokens", r.completion)
		a.PutDouble("gen_ai.latency.time_in_queue", r.queue)
		a.PutDouble("gen_ai.latency.time_to_first_token", r.ttft)
		a.PutDouble("gen_ai.latency.e2e", r.e2e)
		a.PutDouble("gen_ai.latency.time_in_model_prefill", r.prefill)
		a.PutDouble("gen_ai.latency.time_in_model_decode", r.decode)
		a.PutDouble("gen_ai.latency.time_in_model_inference", r.infer)
	}

	// A server instrumented with llmprof's llm.* conventions.
	rs = td.ResourceSpans().AppendEmpty()
	ra = rs.Resource().Attributes()
	ra.PutStr("service.name", "llm-server")
	ra.PutStr("host.name", "gpu-node-7")
	ra.PutInt("process.pid", 5151)
	ra.PutStr("deployment.environment", "staging")
	args := ra.PutEmptySlice("process.command_args")
	for _, s := range []string{"python", "-m", "server", "--model", "llama-3.1-8b"} {
		args.AppendEmpty().SetStr(s)
	}
	ss = rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("llmprof.instrumentation")
	ss.Scope().SetVersion("0.1.0")
	ss.Scope().Attributes().PutStr("llmprof.conventions", "v1")

	type stage struct {
		name       string
		start, end int64
	}
	requests := []struct {
		trace      byte
		id, tenant string
		start, end int64
		in, out    int64
		cacheHit   float64
		tokens     []int64
		stages     []stage
		err        string
	}{
		{4, "r-0001", "tenant-a", 100_000, 318_000, 384, 4, 0.25,
			[]int64{190_000, 232_000, 275_000, 317_000},
			[]stage{{"llm.tokenize", 100_000, 101_500}, {"llm.queue", 101_500, 140_000}, {"llm.prefill", 140_000, 190_000},
				{"llm.decode", 190_000, 317_000}, {"llm.detokenize", 317_000, 317_400}, {"llm.stream", 317_400, 318_000}}, ""},
		{5, "r-0002", "tenant-b", 120_000, 236_000, 2048, 1, 0,
			[]int64{233_000},
			[]stage{{"llm.tokenize", 120_000, 124_000}, {"llm.queue", 124_000, 141_000}, {"llm.prefill", 141_000, 233_000}}, "client disconnected"},
	}
	for i, r := range requests {
		root := spanID(byte(0x40 + 0x10*i))
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(traceID(r.trace))
		sp.SetSpanID(root)
		sp.SetName("llm.request")
		sp.SetKind(ptrace.SpanKindServer)
		sp.SetStartTimestamp(us(r.start))
		sp.SetEndTimestamp(us(r.end))
		a := sp.Attributes()
		a.PutStr("llm.request.id", r.id)
		a.PutStr("llm.tenant", r.tenant)
		a.PutStr("llm.model_id", "llama-3.1-8b")
		a.PutInt("llm.input_length", r.in)
		a.PutInt("llm.output_length", r.out)
		a.PutDouble("llm.cache_hit_ratio", r.cacheHit)
		a.PutEmptyBytes("llm.prompt_template_hash").FromRaw([]byte{0x9c, 0x3e, 0x01, 0xf7, 0x55, 0xa0, 0x2b, 0xd4})
		for k, at := range r.tokens {
			ev := sp.Events().AppendEmpty()
			ev.SetName("llm.token")
			ev.SetTimestamp(us(at))
			ev.Attributes().PutInt("llm.token.index", int64(k))
		}
		if r.err != "" {
			sp.Status().SetCode(ptrace.StatusCodeError)
			sp.Status().SetMessage(r.err)
		} else {
			sp.Status().SetCode(ptrace.StatusCodeOk)
		}
		for k, st := range r.stages {
			c := ss.Spans().AppendEmpty()
			c.SetTraceID(traceID(r.trace))
			c.SetSpanID(spanID(byte(0x41 + 0x10*i + k)))
			c.SetParentSpanID(root)
			c.SetName(st.name)
			c.SetKind(ptrace.SpanKindInternal)
			c.SetStartTimestamp(us(st.start))
			c.SetEndTimestamp(us(st.end))
			if st.name == "llm.prefill" {
				kv := ss.Spans().AppendEmpty()
				kv.SetTraceID(traceID(r.trace))
				kv.SetSpanID(spanID(byte(0x4f + 0x10*i)))
				kv.SetParentSpanID(c.SpanID())
				kv.SetName("llm.kv_cache.lookup")
				kv.SetKind(ptrace.SpanKindInternal)
				kv.SetStartTimestamp(us(st.start + 200))
				kv.SetEndTimestamp(us(st.start + 1_100))
				kv.Attributes().PutBool("llm.kv_cache.hit", r.cacheHit > 0)
				kv.Attributes().PutInt("llm.kv_cache.hit_tokens", int64(r.cacheHit*float64(r.in)))
			}
		}
	}

	// The engine's steps, in a scope of their own.
	ss = rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("llmprof.engine")
	ss.Scope().SetVersion("0.1.0")
	step := ss.Spans().AppendEmpty()
	step.SetTraceID(traceID(6))
	step.SetSpanID(spanID(0x60))
	step.SetName("llm.step")
	step.SetKind(ptrace.SpanKindInternal)
	step.SetStartTimestamp(us(231_500))
	step.SetEndTimestamp(us(233_500))
	a := step.Attributes()
	a.PutInt("llm.step.id", 17)
	a.PutStr("llm.step.phase", "mixed")
	ids := a.PutEmptySlice("llm.batch.request_ids")
	ids.AppendEmpty().SetStr("r-0001")
	ids.AppendEmpty().SetStr("r-0002")
	a.PutInt("llm.batch.size", 2)
	a.PutInt("llm.batch.tokens", 2)
	timing := a.PutEmptyMap("llm.step.timing_us")
	timing.PutInt("schedule", 120)
	timing.PutInt("forward", 1_640)
	timing.PutDouble("sample", 37.5)
	for i, r := range requests {
		l := step.Links().AppendEmpty()
		l.SetTraceID(traceID(r.trace))
		l.SetSpanID(spanID(byte(0x40 + 0x10*i)))
		l.Attributes().PutStr("llm.link.reason", "batched")
	}
	return td
}
