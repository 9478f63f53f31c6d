// Package attribution turns an aligned ingest.Trace into latency facts: it is
// the analysis stage of the pipeline, after align and before causal, compare
// and report.
//
// # Requests
//
// Requests finds one span per request in any of the conventions real servers
// emit — llmprof's own llm.* spans, stock vLLM's llm_request (V0 and V1),
// SGLang's request/slice tree, TGI's handler spans with Rust Duration
// strings, Triton's InferRequest with timestamp events, and client-side
// OpenTelemetry GenAI / OpenLIT / OpenLLMetry / Langfuse spans — through one
// normalization table (normalize.go). For each it derives arrival, TTFT,
// TPOT, ITLs, E2E, queue time, token counts, the finish state, and a
// partition of E2E into disjoint stages (tokenize, queue, prefill, decode,
// inference when a source does not split prefill from decode, detokenize,
// stream) plus an explicit remainder, other. The partition is exact: the
// stages of every request sum to its E2E, and tests check it on every input.
// Latency attributes are placed from their own anchors (the first token at
// start + TTFT, queue and prefill ending there, decode after it;
// attrstages.go), and checked against stage spans where both exist. Without
// engine steps, GPU ops are shared among the requests whose prefill or decode
// window holds them (gpuestimate.go, estimated); GPU devices are keyed by
// host and device (gpuhosts.go). docs/servers.md has the details.
//
// # Definitions
//
// As `vllm bench serve` uses them: TTFT = first token − arrival; TPOT =
// (last token − first token) / (output tokens − 1); ITL = the gaps between
// consecutive token emissions; E2E = end of the request span − arrival; queue
// = time waiting to be scheduled (from enqueue to first scheduling; without an
// explicit enqueue, from arrival). Percentiles interpolate linearly between
// order statistics (numpy's default), so any figure can be checked with one
// line of Python.
package attribution
