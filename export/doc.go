// Package export writes the merged, aligned timeline for other tools: it is
// the last stage of the pipeline, beside report,
//
//	files ──► decoders ──► ingest.Trace ──► align ──► attribution ──► report, export
//
// WritePerfetto streams Chrome trace JSON (the Trace Event Format) that
// ui.perfetto.dev and chrome://tracing open: OTLP spans as async slices
// grouped into processes by a Grouping (service by default; requests by
// tenant once attribution supplies the mapping), CPU threads with NVTX ranges
// and CUDA API calls, GPU streams with kernels and copies, samples as
// counters, and flow arrows from each API call to the GPU ops it launched and
// along caller-given links (an OTLP span to the NVTX range mirroring it).
//
// Perfetto draws a track's slices as a stack, so slices that do not nest are
// spread over overflow lanes rather than dropped; async cookies are
// process-scoped (id2.local) so groups never collide; timestamps are µs with
// ns precision relative to a whole-second base, because Perfetto parses ts
// as a double and absolute Unix µs would lose the ns. Parquet tables will
// join this package later.
package export
