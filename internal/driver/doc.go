// Package driver runs the analysis pipeline on raw inputs, the one place
// where its stages are wired together:
//
//	files ──► decoders ──► ingest.Trace ──► align ──► attribution ──► causal, signals ──► report
//
// Run decodes the inputs with Decoders (or the decoders given), aligns their
// clocks, attributes each request's latency and adds the infrastructure
// signals and the tenant regression; the Result feeds every command that
// reads raw runs: Report builds what `analyze` renders, CompareRun and Load
// give `diff` its runs (compare.Load reads saved analyses itself and asks
// the driver only for raw runs, so driver imports compare and not the other
// way round), ParquetPartition and PerfettoOptions decide what `export`
// writes. The commands in cmd/llmprof keep flags, help, exit codes and
// streams.
package driver
