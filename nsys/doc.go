// Package nsys reads Nsight Systems SQLite exports into the model and
// reproduces nsys stats' summaries from it: it is a decoder, the first stage
// of the pipeline
//
//	files ──► decoders (nsys) ──► ingest.Trace ──► align ──► attribution ──► report
//
// Decoder turns an export of any nsys release from 2023.1 to 2026.1 into an
// ingest.Trace: kernels, memcpys, memsets, synchronizations and whole-graph
// executions become GPU ops; CUDA runtime and driver calls and NVTX ranges
// and marks become spans; GPU metrics become samples; CUDA memory-usage
// events become memory events. Tables and columns are found by name, since
// nsys creates tables only for data it collected and adds columns with every
// release; what is absent is a warning, never an error. Rows are streamed in
// time order and converted as they arrive.
//
// The summaries (KernelSummary, APISummary, NVTXSummary, NVTXProjection, …)
// follow the definitions of the nsys stats reports of the same names and are
// computed from the model, not with SQL, so they prove the decoder: the tests
// hold the equivalent SQL and check both agree on real exports.
//
// WriteSQLite goes the other way: it writes a trace's GPU ops, CUDA API calls
// and NVTX ranges as an export in the current nsys schema, for synthetic runs
// and benchmarks.
//
// Times are epoch ns: an export's session-relative timestamps plus its
// TARGET_INFO_SESSION_START_TIME.utcEpochNs (nothing is added when the export
// was made with --ts-normalize). The source's clock domain is
// ClockNsysSession, with that start time as an AnchorEpoch anchor.
package nsys
