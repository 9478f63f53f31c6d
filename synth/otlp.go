package synth

import (
	"encoding/binary"
	"fmt"
	"io"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Style is the span vocabulary a run is written in.
type Style int

const (
	// StyleLLM is llmprof's own conventions (docs/design.md §5): llm.request with
	// stage child spans, llm.token events, llm.step spans, KV-cache lookups
	// and model load spans.
	StyleLLM Style = iota
	// StyleVLLM is stock vLLM V1: one llm_request span per request with
	// gen_ai.latency.* attributes in float seconds, child of the calling
	// tenant's client span. It starts at vLLM's arrival_time, which is after
	// tokenization (Request.Enqueued), and ends at the last token.
	StyleVLLM
)

// Encoding is the OTLP file form to write.
type Encoding int

const (
	JSONLines   Encoding = iota // collector file exporter, format: json
	JSONDoc                     // one OTLP/JSON TracesData document
	Proto                       // one binary ExportTraceServiceRequest
	ProtoFramed                 // file exporter, format: proto (4-byte big-endian length + message)
)

// batchRequests is how many requests go in one exported batch (one JSON line
// or one framed record), as an SDK's batch span processor would group them.
const batchRequests = 64

// WriteOTLP writes the run's spans in the given style and encoding.
func (r *Run) WriteOTLP(w io.Writer, style Style, enc Encoding) error {
	var batches []ptrace.Traces
	emit := func(td ptrace.Traces) error {
		r.jitterOTLP(td)
		if enc == JSONDoc || enc == Proto {
			batches = append(batches, td)
			return nil
		}
		return writeBatch(w, td, enc)
	}
	for lo := 0; lo < len(r.Requests); lo += batchRequests {
		hi := min(lo+batchRequests, len(r.Requests))
		td := ptrace.NewTraces()
		for i := lo; i < hi; i++ {
			switch style {
			case StyleLLM:
				r.llmRequestSpans(td, &r.Requests[i])
			case StyleVLLM:
				r.vllmRequestSpans(td, &r.Requests[i])
			case StyleVLLMServer:
				r.vllmServerRequestSpans(td, &r.Requests[i])
			}
		}
		if err := emit(td); err != nil {
			return err
		}
	}
	if style == StyleLLM {
		const batchSteps = 256
		for lo := 0; lo < len(r.Steps); lo += batchSteps {
			td := ptrace.NewTraces()
			if lo == 0 {
				r.modelLoadSpans(td)
			}
			for i := lo; i < min(lo+batchSteps, len(r.Steps)); i++ {
				r.stepSpan(td, &r.Steps[i])
			}
			if err := emit(td); err != nil {
				return err
			}
		}
	}
	if enc == JSONDoc || enc == Proto {
		all := ptrace.NewTraces()
		for _, td := range batches {
			td.ResourceSpans().MoveAndAppendTo(all.ResourceSpans())
		}
		return writeBatch(w, all, enc)
	}
	return nil
}

func writeBatch(w io.Writer, td ptrace.Traces, enc Encoding) error {
	switch enc {
	case JSONLines, JSONDoc:
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	case Proto:
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case ProtoFramed:
		b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			return err
		}
		var hdr [4]byte
		binary.BigEndian.PutUint32(hdr[:], uint32(len(b)))
		if _, err := w.Write(hdr[:]); err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	return fmt.Errorf("synth: unknown encoding %d", enc)
}

// scopeSpans appends a resource with the engine's attributes and returns its
// scope's span slice.
func (r *Run) engineScope(td ptrace.Traces, e int, service string) ptrace.SpanSlice {
	rs := td.ResourceSpans().AppendEmpty()
	eng := &r.Engines[e]
	a := rs.Resource().Attributes()
	a.PutStr("service.name", service)
	a.PutStr("host.name", "gpu-node-1")
	a.PutInt("process.pid", int64(eng.Pid))
	if len(eng.Tenants) == 1 {
		a.PutStr("llm.tenant", eng.Tenants[0]) // a dedicated engine belongs to its tenant
	}
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("llmprof.synth")
	ss.Scope().SetVersion("1")
	return ss.Spans()
}

func (r *Run) llmRequestSpans(td ptrace.Traces, q *Request) {
	spans := r.engineScope(td, q.Engine, "llm-engine-"+q.Model)
	req := spans.AppendEmpty()
	req.SetTraceID(pcommon.TraceID(q.TraceID))
	req.SetSpanID(pcommon.SpanID(q.SpanID))
	req.SetName("llm.request")
	req.SetKind(ptrace.SpanKindServer)
	setTimes(req, q.Arrival, q.End)
	a := req.Attributes()
	a.PutStr("llm.request.id", q.ID)
	a.PutStr("llm.tenant", q.Tenant)
	a.PutStr("llm.model_id", q.Model)
	a.PutInt("llm.input_length", int64(q.InputTokens))
	a.PutInt("llm.output_length", int64(len(q.Tokens)))
	a.PutDouble("llm.cache_hit_ratio", float64(q.CachedTokens)/float64(q.InputTokens))
	a.PutStr("llm.prompt_template_hash", fmt.Sprintf("%08x", 0x5eed0000+uint32(len(q.Tenant))))
	a.PutStr("llm.finish_reason", q.Finish)
	req.Status().SetCode(ptrace.StatusCodeOk)
	for i, t := range q.Tokens {
		ev := req.Events().AppendEmpty()
		ev.SetName("llm.token")
		ev.SetTimestamp(pcommon.Timestamp(t))
		ev.Attributes().PutInt("llm.token.index", int64(i))
	}
	child := func(kind int, name string, start, end int64) ptrace.Span {
		s := spans.AppendEmpty()
		s.SetTraceID(pcommon.TraceID(q.TraceID))
		s.SetSpanID(pcommon.SpanID(derivedID(q.SpanID, kind)))
		s.SetParentSpanID(pcommon.SpanID(q.SpanID))
		s.SetName(name)
		s.SetKind(ptrace.SpanKindInternal)
		setTimes(s, start, end)
		return s
	}
	child(1, "llm.tokenize", q.Arrival, q.Enqueued)
	child(2, "llm.queue", q.Enqueued, q.FirstScheduled)
	kv := child(3, "llm.kv_cache.lookup", q.FirstScheduled+10_000, q.FirstScheduled+40_000)
	kv.Attributes().PutBool("llm.kv_cache.hit", q.CacheHit)
	kv.Attributes().PutInt("llm.kv_cache.hit_tokens", int64(q.CachedTokens))
	child(4, "llm.prefill", q.FirstScheduled, q.FirstToken())
	if len(q.Tokens) > 1 {
		child(5, "llm.decode", q.FirstToken(), q.LastToken())
	}
	child(6, "llm.detokenize", q.LastToken(), q.StreamStart)
	child(7, "llm.stream", q.StreamStart, q.End)
}

func (r *Run) stepSpan(td ptrace.Traces, st *Step) {
	spans := r.engineScope(td, st.Engine, "llm-engine-"+r.Engines[st.Engine].Model)
	s := spans.AppendEmpty()
	s.SetTraceID(pcommon.TraceID(st.TraceID))
	s.SetSpanID(pcommon.SpanID(st.SpanID))
	s.SetName("llm.step")
	s.SetKind(ptrace.SpanKindInternal)
	setTimes(s, st.Start, st.End)
	a := s.Attributes()
	a.PutInt("llm.step.id", int64(st.Index))
	a.PutStr("llm.step.phase", st.Phase)
	ids := a.PutEmptySlice("llm.batch.request_ids")
	ids.EnsureCapacity(len(st.Requests))
	for _, i := range st.Requests {
		ids.AppendEmpty().SetStr(r.Requests[i].ID)
	}
	a.PutInt("llm.batch.size", int64(len(st.Requests)))
	a.PutInt("llm.batch.tokens", int64(st.PrefillTokens+st.DecodeTokens))
}

func (r *Run) modelLoadSpans(td ptrace.Traces) {
	for e := range r.Engines {
		eng := &r.Engines[e]
		spans := r.engineScope(td, e, "llm-engine-"+eng.Model)
		s := spans.AppendEmpty()
		var tid [16]byte
		var sid [8]byte
		binary.BigEndian.PutUint64(tid[:8], 0x10ad000000000000|uint64(e+1))
		binary.BigEndian.PutUint64(sid[:], 0x10ad000000000000|uint64(e+1))
		s.SetTraceID(pcommon.TraceID(tid))
		s.SetSpanID(pcommon.SpanID(sid))
		s.SetName("llm.model.load")
		setTimes(s, eng.LoadStart, eng.LoadEnd)
		s.Attributes().PutStr("llm.model_id", eng.Model)
	}
}

func (r *Run) vllmRequestSpans(td ptrace.Traces, q *Request) {
	// The tenant's client span: the caller that propagated traceparent.
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", q.Tenant)
	cs := rs.ScopeSpans().AppendEmpty()
	cs.Scope().SetName("opentelemetry.instrumentation.httpx")
	client := cs.Spans().AppendEmpty()
	client.SetTraceID(pcommon.TraceID(q.TraceID))
	clientID := derivedID(q.SpanID, 9)
	client.SetSpanID(pcommon.SpanID(clientID))
	client.SetName("POST /v1/completions")
	client.SetKind(ptrace.SpanKindClient)
	setTimes(client, q.Arrival-300_000, q.End+300_000)

	eng := &r.Engines[q.Engine]
	rs = td.ResourceSpans().AppendEmpty()
	a := rs.Resource().Attributes()
	a.PutStr("service.name", "vllm")
	a.PutStr("host.name", "gpu-node-1")
	a.PutInt("process.pid", int64(eng.Pid))
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("vllm.llm_engine")
	s := ss.Spans().AppendEmpty()
	s.SetTraceID(pcommon.TraceID(q.TraceID))
	s.SetSpanID(pcommon.SpanID(q.SpanID))
	s.SetParentSpanID(pcommon.SpanID(clientID))
	s.SetName("llm_request")
	s.SetKind(ptrace.SpanKindServer)
	setTimes(s, q.Enqueued, q.LastToken())
	sec := func(ns int64) float64 { return float64(ns) / 1e9 }
	at := s.Attributes()
	at.PutStr("gen_ai.request.id", q.ID)
	at.PutStr("gen_ai.response.model", q.Model)
	at.PutInt("gen_ai.usage.prompt_tokens", int64(q.InputTokens))
	at.PutInt("gen_ai.usage.completion_tokens", int64(len(q.Tokens)))
	at.PutInt("gen_ai.request.max_tokens", 2048)
	at.PutDouble("gen_ai.request.top_p", 0.95)
	at.PutDouble("gen_ai.latency.time_in_queue", sec(q.FirstScheduled-q.Enqueued))
	at.PutDouble("gen_ai.latency.time_to_first_token", sec(q.FirstToken()-q.Enqueued))
	at.PutDouble("gen_ai.latency.e2e", sec(q.LastToken()-q.Enqueued))
	at.PutDouble("gen_ai.latency.time_in_model_prefill", sec(q.FirstToken()-q.FirstScheduled))
	at.PutDouble("gen_ai.latency.time_in_model_decode", sec(q.LastToken()-q.FirstToken()))
	at.PutDouble("gen_ai.latency.time_in_model_inference", sec(q.LastToken()-q.FirstScheduled))
}

func setTimes(s ptrace.Span, start, end int64) {
	s.SetStartTimestamp(pcommon.Timestamp(start))
	s.SetEndTimestamp(pcommon.Timestamp(end))
}

// derivedID gives a request's child spans distinct, deterministic IDs.
func derivedID(base [8]byte, kind int) [8]byte {
	x := binary.BigEndian.Uint64(base[:]) ^ (uint64(kind) * 0x9e3779b97f4a7c15)
	x ^= x >> 31
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 29
	var out [8]byte
	binary.BigEndian.PutUint64(out[:], x|1)
	return out
}
