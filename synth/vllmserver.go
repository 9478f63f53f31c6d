package synth

import (
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// StyleVLLMServer is stock vLLM V1 as a real server exports it
// (docs/server-spans.md): the llm_request span starts at the API server's
// arrival_time, here Request.Arrival, so the time up to the engine's queue
// is inside the span but in no attribute; TTFT and e2e are taken on the API
// server's clock when the first and the final output batch reach it
// (Request.VLLMFrontendLag after the engine emitted them); queue, prefill and
// decode are engine-core intervals; and the span ends once the final batch
// is detokenized, Request.Detokenize after it arrived. So TTFT ≠ queue +
// prefill, and e2e is shorter than the span, as on real servers. The span's
// process.pid is the API server's, not the engine's that runs the kernels.
const StyleVLLMServer Style = 100

// VLLMFrontendLag is how long the first and the last output batch take from
// the engine core to the API server in StyleVLLMServer (the ZMQ hop and the
// output handler's wake-up): deterministic per request, 100–250 µs for the
// first and up to 100 µs more for the last.
func (r *Request) VLLMFrontendLag() (first, last int64) {
	first = 100_000 + int64(r.Index%4)*50_000
	return first, first + int64(r.Index%3)*50_000
}

// VLLMServerEnd is when the StyleVLLMServer span ends.
func (r *Request) VLLMServerEnd() int64 {
	_, last := r.VLLMFrontendLag()
	return r.LastToken() + last + r.Detokenize()
}

func (r *Run) vllmServerRequestSpans(td ptrace.Traces, q *Request) {
	r.vllmRequestSpans(td, q)
	rss := td.ResourceSpans()
	// vLLM V1 traces requests in the API server process, not in the engine
	// core that launches the kernels.
	rss.At(rss.Len()-1).Resource().Attributes().PutInt("process.pid", int64(r.Engines[q.Engine].Pid)+1)
	s := rss.At(rss.Len() - 1).ScopeSpans().At(0).Spans().At(0)
	lagFirst, lagLast := q.VLLMFrontendLag()
	setTimes(s, q.Arrival, q.VLLMServerEnd())
	sec := func(ns int64) float64 { return float64(ns) / 1e9 }
	at := s.Attributes()
	at.PutDouble("gen_ai.latency.time_to_first_token", sec(q.FirstToken()+lagFirst-q.Arrival))
	at.PutDouble("gen_ai.latency.e2e", sec(q.LastToken()+lagLast-q.Arrival))
}
