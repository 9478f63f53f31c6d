package synth

import (
	"fmt"
	"io"

	"github.com/llmprof/llmprof/ingest/kineto"
)

// KinetoTrace is one engine's part of the GPU side, written as the PyTorch
// profiler (Kineto) would have: one file per process, its rank.
type KinetoTrace struct {
	// Name is a file name in the form tensorboard_trace_handler writes
	// ("{worker}.{ns}.pt.trace.json"), the worker being vLLM's
	// "{instance}-rank-{rank}".
	Name  string
	Pid   uint32
	Write func(w io.Writer) error
}

// KinetoTraces returns the GPU side of the steps that start in [from, to)
// (GPUTraceWindow) as one Kineto trace per engine. Its NVTX ranges become
// user_annotation ranges ("step 12 span_id=<hex>", as a record_function
// around the model runner would name them), CUDA calls cuda_runtime events
// and GPU ops kernel/gpu_memcpy events joined by correlation and ac2g
// flows. Kineto stamps CPU and GPU events on one host clock: the run's GPU
// clock (Config.GPUClock).
func (r *Run) KinetoTraces(from, to int64, opts kineto.WriteOptions) []KinetoTrace {
	gpu := r.GPUTraceWindow(from, to)
	out := make([]KinetoTrace, 0, len(r.Engines))
	for rank, eng := range r.Engines {
		o := opts
		o.Pid, o.Rank, o.WorldSize = eng.Pid, rank, len(r.Engines)
		name := fmt.Sprintf("synth-rank-%d.%d.pt.trace.json", rank, r.GPUClockTime(max(from, r.Config.Start)))
		out = append(out, KinetoTrace{Name: name, Pid: eng.Pid, Write: func(w io.Writer) error { return kineto.Write(w, gpu, o) }})
	}
	return out
}
