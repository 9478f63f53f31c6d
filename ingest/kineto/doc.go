// Package kineto reads PyTorch profiler (Kineto) Chrome-trace JSON into the
// model: it is a decoder, the first stage of the pipeline
//
//	files ──► decoders (kineto) ──► ingest.Trace ──► align ──► attribution ──► report
//
// torch.profiler's export_chrome_trace and tensorboard_trace_handler write
// these *.pt.trace.json(.gz) files (vLLM, SGLang, HTA, TraceLens and
// Perfetto read them). Decoder maps them onto the model nsys exports fill:
// kernel, gpu_memcpy, gpu_memset and cuda_sync events become GPU ops with
// device, stream, correlation, grid, block and bytes; cuda_runtime and
// cuda_driver events (hip* names on ROCm) become the CUDA API spans that
// launched them, joined by args.correlation as nsys joins on
// correlationId; user_annotation (record_function) ranges become NVTX-like
// ranges, so align's mirrors and the step join read them; cpu_op and
// python_function events become CPU-op spans; gpu_user_annotation ranges
// GPU-annotation spans; [memory] instant events memory events;
// deviceProperties the devices and distributedInfo the rank.
//
// The file is scanned as a token stream (internal/jsonscan in stream
// mode), an event at a time: memory is the model plus a window as long as
// the longest event. Times are parsed from their decimal text into
// integer ns (a float64 cannot hold an epoch µs timestamp to the ns) and
// placed on the Unix clock by adding baseTimeNanoseconds once the whole
// file is read, wherever the key sits. docs/kineto.md says what is read, what is not and how the figures
// compare with HTA's.
//
// Write goes the other way, for synthetic runs and benchmarks: it writes a
// trace's GPU ops, CUDA API calls and NVTX ranges as a Kineto trace.
package kineto
