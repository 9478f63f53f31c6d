// Package synth generates deterministic synthetic LLM serving runs with known
// ground truth. It sits beside the pipeline, feeding it: tests, benchmarks and
// `llmprof demo` write its runs as OTLP (and, through package nsys, as an
// Nsight Systems export), run llmprof on them, and compare what llmprof
// recovers with the truth returned here as Go values.
//
// The simulator is a small continuous-batching engine per model: requests
// from several tenants arrive (Poisson or bursty), are tokenized, wait in a
// FIFO queue, are admitted into engine steps under a batch-size, token-budget
// and KV-cache capacity, are preempted (recompute) when the KV cache runs out,
// and emit one token per step. Every step is a CPU scheduling phase, a
// sequence of GPU kernels launched from the engine thread (GEMMs, attention,
// norms and activations, collectives, sampling, copies) with launch gaps and
// occasional CPU stalls, and a CPU post-processing phase. All of it is seeded:
// the same Config gives the same run, byte for byte.
//
// Time is Unix ns on the reference clock (the OTLP side). The GPU side can be
// put on a second clock with a chosen offset, drift, jitter and step, as an
// nsys export would be.
package synth
