package synth

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/llmprof/llmprof/ingest"
)

// GPUClockTime maps a reference-clock instant onto the configured GPU-side
// clock, without jitter.
func (r *Run) GPUClockTime(t int64) int64 {
	c := r.Config.GPUClock
	out := t + c.OffsetNs + int64(math.Round(c.DriftPPM*1e-6*float64(t-r.Config.Start)))
	if c.StepAt != 0 && t >= c.StepAt {
		out += c.StepNs
	}
	return out
}

// GPUTrace returns what Nsight Systems would have recorded of the run, on the
// configured GPU-side clock: every kernel and copy with the CUDA runtime call
// that launched it (matching correlation IDs), the engine thread's stream
// synchronizations, an NVTX range per engine step whose text carries the
// mirrored llm.step span's ID ("step 12 span_id=<hex>"), process, thread and
// device names. Jitter (Config.GPUClock.JitterNs, half-normal, inward) is
// applied to the NVTX ranges only, so launch/kernel causality holds exactly.
func (r *Run) GPUTrace() *ingest.Trace { return r.GPUTraceWindow(math.MinInt64, math.MaxInt64) }

// GPUTraceWindow is GPUTrace for the steps that start in [from, to) on the
// reference clock — what `nsys profile --delay --duration` captures of a
// long run.
func (r *Run) GPUTraceWindow(from, to int64) *ingest.Trace {
	t := ingest.New()
	t.Sources = []ingest.Source{{
		Path: "synth", Format: "synth-gpu", Producer: "llmprof synth",
		Clock: ingest.ClockDomain{Name: "nsys:synth", Kind: ingest.ClockNsysSession},
	}}
	rng := rand.New(rand.NewPCG(uint64(r.Config.Seed), 0x6e767478)) // "nvtx"
	// The NVTX push happens a little after the span starts and the pop a
	// little before it ends (a range nests inside the span it mirrors), so
	// the jitter is one-sided, inward.
	jit := func() int64 {
		if r.Config.GPUClock.JitterNs == 0 {
			return 0
		}
		return int64(math.Abs(rng.NormFloat64()) * float64(r.Config.GPUClock.JitterNs))
	}
	ts := r.GPUClockTime
	// One launch call per op, one NVTX range and one sync per step.
	t.Spans = make([]ingest.Span, 0, len(r.Steps))
	t.APICalls = make([]ingest.APICall, 0, len(r.Ops)+len(r.Steps))
	t.GPUOps = make([]ingest.GPUOp, 0, len(r.Ops))
	launchK := t.Strings.Intern("cudaLaunchKernel")
	graphLaunch := t.Strings.Intern("cudaGraphLaunch")
	memcpyAsync := t.Strings.Intern("cudaMemcpyAsync")
	memsetAsync := t.Strings.Intern("cudaMemsetAsync")
	syncName := t.Strings.Intern("cudaStreamSynchronize")
	// A kernel's name and shape recur op after op: the last name and the
	// last shape seen under each name ID skip the intern tables' hashing
	// (a tenth of this function's time) when they recur; the IDs are the
	// ones the tables would give.
	var lastName string
	var lastNameID ingest.StrID
	type shapeSeen struct {
		shape ingest.OpShape
		id    ingest.ShapeID
	}
	var lastShape []shapeSeen
	for e, eng := range r.Engines {
		t.Processes = append(t.Processes, ingest.Process{Pid: eng.Pid, Name: "python3 -m vllm.entrypoints.openai.api_server --model " + eng.Model})
		t.Threads = append(t.Threads, ingest.Thread{Pid: eng.Pid, Tid: eng.Tid, Name: "EngineCore_" + fmt.Sprint(e)})
		t.Devices = append(t.Devices, ingest.Device{ID: int16(eng.Device), Name: "NVIDIA H200", SMs: 132, MemoryBytes: 143771336704})
	}
	for si := range r.Steps {
		st := &r.Steps[si]
		if st.Start < from || st.Start >= to {
			continue
		}
		eng := &r.Engines[st.Engine]
		text := fmt.Sprintf("step %d span_id=%s", st.Index, hex.EncodeToString(st.SpanID[:]))
		t.Spans = append(t.Spans, ingest.Span{
			Name: t.Strings.Intern(text), Start: ts(st.Start) + jit(), End: max(ts(st.End)-jit(), ts(st.Start)),
			Pid: eng.Pid, Tid: eng.Tid, Origin: ingest.OriginNVTX, Resource: -1, Scope: -1,
		})
		var lastLaunchEnd, gpuEnd int64
		// A decode step replayed as a CUDA graph (vLLM captures its decode
		// batch sizes): one cudaGraphLaunch, whose correlation ID all the
		// graph's kernels carry, instead of one launch per kernel.
		graph := r.Config.CUDAGraphs && st.Phase == "decode" && st.EndOp > st.FirstOp
		var graphID, graphCorr uint32
		if graph {
			graphID, graphCorr = cudaGraphID(len(st.Requests)), r.Ops[st.FirstOp].Correlation
			first, last := &r.Ops[st.FirstOp], &r.Ops[st.EndOp-1]
			t.APICalls = append(t.APICalls, ingest.APICall{
				Name: graphLaunch, Start: ts(first.LaunchStart), End: ts(last.LaunchEnd),
				Pid: eng.Pid, Tid: eng.Tid, Correlation: graphCorr, Origin: ingest.OriginCUDARuntime,
			})
		}
		for oi := st.FirstOp; oi < st.EndOp; oi++ {
			op := &r.Ops[oi]
			api := launchK
			kind := ingest.OpKernel
			cp := ingest.CopyUnknown
			switch op.Kind {
			case MemcpyHtoD:
				api, kind, cp = memcpyAsync, ingest.OpMemcpy, ingest.CopyHtoD
			case MemcpyDtoH:
				api, kind, cp = memcpyAsync, ingest.OpMemcpy, ingest.CopyDtoH
			case Memset:
				api, kind = memsetAsync, ingest.OpMemset
			}
			corr := op.Correlation
			if graph {
				corr = graphCorr
			} else {
				t.APICalls = append(t.APICalls, ingest.APICall{
					Name: api, Start: ts(op.LaunchStart), End: ts(op.LaunchEnd),
					Pid: eng.Pid, Tid: eng.Tid, Correlation: corr, Origin: ingest.OriginCUDARuntime,
				})
			}
			if op.Name != lastName || lastNameID == 0 {
				lastName, lastNameID = op.Name, t.Strings.Intern(op.Name)
			}
			g := ingest.GPUOp{
				Start: ts(op.Start), End: ts(op.End), Name: lastNameID,
				Stream: 7, Correlation: corr, Pid: eng.Pid, Device: int16(eng.Device),
				Kind: kind, Copy: cp,
			}
			sh := ingest.OpShape{Bytes: op.Bytes, GraphID: graphID}
			if kind == ingest.OpKernel {
				sh.Grid = [3]uint32{max(op.GridX, 1), 1, 1}
				sh.Block = [3]uint16{uint16(max(op.BlockX, 1)), 1, 1}
			}
			if int(g.Name) >= len(lastShape) {
				lastShape = append(lastShape, make([]shapeSeen, int(g.Name)+1-len(lastShape))...)
			}
			if seen := &lastShape[g.Name]; seen.id != 0 && seen.shape == sh {
				g.Shape = seen.id
			} else {
				g.Shape = t.InternShape(sh)
				*seen = shapeSeen{sh, g.Shape}
			}
			t.GPUOps = append(t.GPUOps, g)
			lastLaunchEnd, gpuEnd = op.LaunchEnd, op.End
		}
		if st.EndOp > st.FirstOp {
			t.APICalls = append(t.APICalls, ingest.APICall{
				Name: syncName, Start: ts(lastLaunchEnd), End: ts(max(lastLaunchEnd, gpuEnd) + 2_000),
				Pid: eng.Pid, Tid: eng.Tid, Origin: ingest.OriginCUDARuntime,
			})
		}
	}
	t.Sources[0].Spans = t.CPURecordCount()
	t.Sources[0].GPUOps = len(t.GPUOps)
	// Each table is one time-ordered run per engine: merged, the sort
	// below finds them in order and returns (order.go).
	t.Spans, _ = mergeRuns(t.Spans, func(s *ingest.Span) int64 { return s.Start })
	t.APICalls, _ = mergeRuns(t.APICalls, func(c *ingest.APICall) int64 { return c.Start })
	t.GPUOps, _ = mergeRuns(t.GPUOps, func(o *ingest.GPUOp) int64 { return o.Start })
	t.Sort()
	return t
}

// cudaGraphID is the CUDA graph a decode step of batch requests replays.
// vLLM captures one graph per size of its cudagraph_capture_sizes — 1, 2, 4,
// then multiples of 8 below 256 and of 16 up to 512 (max_num_seqs × 2 by
// default) — and pads a batch to the smallest size that holds it; the driver
// numbers the graphs as they are captured, the largest size first. So an
// engine's decode steps share a few dozen graph IDs, as in a real capture,
// not one each.
func cudaGraphID(batch int) uint32 {
	sizes := 0 // capture sizes up to and including the one the batch pads to
	for _, s := range captureSizes {
		sizes++
		if s >= batch {
			break
		}
	}
	return uint32(len(captureSizes) - sizes + 1)
}

// captureSizes are vLLM's default CUDA graph batch sizes, ascending.
var captureSizes = func() []int {
	sizes := []int{1, 2, 4}
	for s := 8; s < 256; s += 8 {
		sizes = append(sizes, s)
	}
	for s := 256; s <= 512; s += 16 {
		sizes = append(sizes, s)
	}
	return sizes
}()
