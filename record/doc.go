// Package record captures a live workload — the first, optional stage of the
// pipeline, before any decoder runs:
//
//	llmprof record ──► run.llmprof/ ──► CaptureDecoder ──► ingest.Trace ──► align ──► …
//
// Record starts a child command, runs an OTLP receiver (gRPC and HTTP, on
// loopback) whose address it hands to the child, samples NVML telemetry next
// to it (behind the linux && cgo build tag; elsewhere, or without a driver,
// the capture says why there is none), optionally wraps the child in
// `nsys profile`, and writes clock-pair snapshots so every table can be put
// on one clock later. Everything lands in a capture directory:
//
//	run.llmprof/
//	  manifest.json         written at start, atomically replaced at the end
//	  otlp.arrows           raw OTLP export requests, byte for byte
//	  clock.arrows          bracketed realtime/monotonic/boottime/raw reads
//	  events.arrows         what the recorder did and saw
//	  gpu_device.arrows     NVML device telemetry (with a GPU)
//	  gpu_buffered.arrows   NVML ring-buffer samples (with a GPU)
//	  gpu_process.arrows    per-process utilization and memory (with a GPU)
//	  gpu_gpm.arrows        GPM metrics on Hopper and newer (with a GPU)
//	  nsys/                 report.nsys-rep and report.sqlite (with --nsys)
//	  torch/                the server's PyTorch profiler traces (with --torch-profiler)
//	  cupti/                the CUPTI injection library and its activity files (with --cupti; package record/cupti)
//
// Each table is a zstd-compressed Arrow IPC stream written batch by batch, so
// a recorder killed mid-write leaves every complete batch readable; the
// manifest then still says "recording", which readers report as an
// interrupted capture.
//
// CaptureDecoder reads a capture back into the model: OTLP payloads through
// package ingest/otlp, NVML rows as ingest.Samples, clock pairs as
// ingest.AnchorClockPair anchors on the capture's monotonic source.
package record
