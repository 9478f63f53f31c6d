package synth

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

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
	steps, jitter := r.windowSteps(from, to)
	b := r.newGPUBuilder(len(r.Ops), len(r.Steps))
	for i, si := range steps {
		b.step(si, jitter[i])
	}
	t := b.finish()
	t.Sources[0].Spans = t.CPURecordCount()
	t.Sources[0].GPUOps = len(t.GPUOps)
	return t
}

// windowSteps returns the steps that start in [from, to), in the run's
// order, and each one's NVTX jitter: how much later its range is pushed and
// how much earlier popped. The NVTX push happens a little after the span
// starts and the pop a little before it ends (a range nests inside the span
// it mirrors), so the jitter is one-sided, inward.
func (r *Run) windowSteps(from, to int64) ([]int32, [][2]int64) {
	rng := rand.New(rand.NewPCG(uint64(r.Config.Seed), 0x6e767478)) // "nvtx"
	jit := func() int64 {
		if r.Config.GPUClock.JitterNs == 0 {
			return 0
		}
		return int64(math.Abs(rng.NormFloat64()) * float64(r.Config.GPUClock.JitterNs))
	}
	var steps []int32
	var jitter [][2]int64
	for si := range r.Steps {
		if st := &r.Steps[si]; st.Start < from || st.Start >= to {
			continue
		}
		push := jit()
		steps = append(steps, int32(si))
		jitter = append(jitter, [2]int64{push, jit()})
	}
	return steps, jitter
}

// gpuBuilder appends the GPU records of steps to a trace: per step an NVTX
// range, a launch call per op (or one graph launch), the ops and a
// synchronization.
type gpuBuilder struct {
	r *Run
	t *ingest.Trace

	launchK, graphLaunch, memcpyAsync, memsetAsync, syncName ingest.StrID
	// A kernel's name and shape recur op after op: each name's ID, interned
	// when the name first appears, and the last shape seen under each name
	// ID skip the intern tables' hashing (a tenth of GPUTraceWindow's time)
	// when they recur; the IDs are the ones the tables would give.
	names     []ingest.StrID // by Op.NameID; 0 until interned
	lastShape []shapeSeen
}

type shapeSeen struct {
	shape ingest.OpShape
	id    ingest.ShapeID
}

// newGPUBuilder starts a trace with the engines' processes, threads and
// devices, its tables sized for ops GPU ops and steps steps.
func (r *Run) newGPUBuilder(ops, steps int) *gpuBuilder {
	t := ingest.New()
	t.Sources = []ingest.Source{{
		Path: "synth", Format: "synth-gpu", Producer: "llmprof synth",
		Clock: ingest.ClockDomain{Name: "nsys:synth", Kind: ingest.ClockNsysSession},
	}}
	// One launch call per op, one NVTX range and one sync per step.
	t.Spans = make([]ingest.Span, 0, steps)
	t.APICalls = make([]ingest.APICall, 0, ops+steps)
	t.GPUOps = make([]ingest.GPUOp, 0, ops)
	b := &gpuBuilder{r: r, t: t,
		launchK:     t.Strings.Intern("cudaLaunchKernel"),
		graphLaunch: t.Strings.Intern("cudaGraphLaunch"),
		memcpyAsync: t.Strings.Intern("cudaMemcpyAsync"),
		memsetAsync: t.Strings.Intern("cudaMemsetAsync"),
		syncName:    t.Strings.Intern("cudaStreamSynchronize"),
	}
	for e, eng := range r.Engines {
		t.Processes = append(t.Processes, ingest.Process{Pid: eng.Pid, Name: "python3 -m vllm.entrypoints.openai.api_server --model " + eng.Model})
		t.Threads = append(t.Threads, ingest.Thread{Pid: eng.Pid, Tid: eng.Tid, Name: "EngineCore_" + fmt.Sprint(e)})
		t.Devices = append(t.Devices, ingest.Device{ID: int16(eng.Device), Name: "NVIDIA H200", SMs: 132, MemoryBytes: 143771336704})
	}
	return b
}

// step appends step si's records, its NVTX range moved inward by jitter.
func (b *gpuBuilder) step(si int32, jitter [2]int64) {
	r, t, ts := b.r, b.t, b.r.GPUClockTime
	st := &r.Steps[si]
	eng := &r.Engines[st.Engine]
	text := fmt.Sprintf("step %d span_id=%s", st.Index, hex.EncodeToString(st.SpanID[:]))
	t.Spans = append(t.Spans, ingest.Span{
		Name: t.Strings.Intern(text), Start: ts(st.Start) + jitter[0], End: max(ts(st.End)-jitter[1], ts(st.Start)),
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
			Name: b.graphLaunch, Start: ts(first.LaunchStart), End: ts(last.LaunchEnd),
			Pid: eng.Pid, Tid: eng.Tid, Correlation: graphCorr, Origin: ingest.OriginCUDARuntime,
		})
	}
	for oi := st.FirstOp; oi < st.EndOp; oi++ {
		op := &r.Ops[oi]
		api := b.launchK
		kind := ingest.OpKernel
		cp := ingest.CopyUnknown
		switch op.Kind {
		case MemcpyHtoD:
			api, kind, cp = b.memcpyAsync, ingest.OpMemcpy, ingest.CopyHtoD
		case MemcpyDtoH:
			api, kind, cp = b.memcpyAsync, ingest.OpMemcpy, ingest.CopyDtoH
		case Memset:
			api, kind = b.memsetAsync, ingest.OpMemset
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
		if int(op.NameID) >= len(b.names) {
			b.names = append(b.names, make([]ingest.StrID, int(op.NameID)+1-len(b.names))...)
		}
		if b.names[op.NameID] == 0 {
			b.names[op.NameID] = t.Strings.Intern(r.OpName(op))
		}
		g := ingest.GPUOp{
			Start: ts(op.Start), End: ts(op.End), Name: b.names[op.NameID],
			Stream: 7, Correlation: corr, Pid: eng.Pid, Device: int16(eng.Device),
			Kind: kind, Copy: cp,
		}
		sh := ingest.OpShape{Bytes: op.Bytes, GraphID: graphID}
		if kind == ingest.OpKernel {
			sh.Grid = [3]uint32{max(op.GridX, 1), 1, 1}
			sh.Block = [3]uint16{uint16(max(op.BlockX, 1)), 1, 1}
		}
		if int(g.Name) >= len(b.lastShape) {
			b.lastShape = append(b.lastShape, make([]shapeSeen, int(g.Name)+1-len(b.lastShape))...)
		}
		if seen := &b.lastShape[g.Name]; seen.id != 0 && seen.shape == sh {
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
			Name: b.syncName, Start: ts(lastLaunchEnd), End: ts(max(lastLaunchEnd, gpuEnd) + 2_000),
			Pid: eng.Pid, Tid: eng.Tid, Origin: ingest.OriginCUDARuntime,
		})
	}
}

// finish puts the trace's tables in time order and returns it.
func (b *gpuBuilder) finish() *ingest.Trace {
	t := b.t
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

// GPUTraceParts is GPUTraceWindow(from, to) in pieces of about every ns of
// GPU time each, for nsys.WriteSQLiteParts: head holds the processes,
// threads and devices, and parts gives pieces whose tables, each piece's
// after the one before, are GPUTraceWindow's in the same order — built
// piece by piece, so that a long run's capture never needs more memory
// than one piece of it. A piece holds the records that start in its time
// range, built from the steps that have one there (a step whose records
// straddle a boundary is built for each side and each keeps its own).
func (r *Run) GPUTraceParts(from, to, every int64) (head *ingest.Trace, parts func(yield func(*ingest.Trace) error) error) {
	if every <= 0 {
		every = math.MaxInt64
	}
	steps, jitter := r.windowSteps(from, to)
	// Each step's earliest and latest record start, from a build of its
	// records alone.
	lo, hi := make([]int64, len(steps)), make([]int64, len(steps))
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	var b *gpuBuilder
	for i, si := range steps {
		if b == nil || i%4096 == 0 { // a fresh one now and then: the NVTX texts pile up in its strings
			b = r.newGPUBuilder(0, 0)
		}
		b.t.Spans, b.t.APICalls, b.t.GPUOps = b.t.Spans[:0], b.t.APICalls[:0], b.t.GPUOps[:0]
		b.step(si, jitter[i])
		lo[i], hi[i] = stepExtent(b.t)
		first, last = min(first, lo[i]), max(last, hi[i])
	}
	if len(steps) == 0 {
		first, last = 0, 0
	}
	if (last-first)/every >= maxPieces {
		every = (last-first)/maxPieces + 1
	}
	piece := func(at int64) int64 { return (at - first) / every }
	n := piece(last) + 1
	// The steps each piece builds, in the run's order.
	members := make([][]int32, n)
	for i := range steps {
		for k := piece(lo[i]); k <= piece(hi[i]); k++ {
			members[k] = append(members[k], int32(i))
		}
	}
	head = r.newGPUBuilder(0, 0).t
	parts = func(yield func(*ingest.Trace) error) error {
		for k := range members {
			if len(members[k]) == 0 {
				continue
			}
			b := r.newGPUBuilder(0, 0)
			for _, i := range members[k] {
				b.step(steps[i], jitter[i])
			}
			in := func(at int64) bool { return piece(at) == int64(k) }
			b.t.Spans = slices.DeleteFunc(b.t.Spans, func(s ingest.Span) bool { return !in(s.Start) })
			b.t.APICalls = slices.DeleteFunc(b.t.APICalls, func(c ingest.APICall) bool { return !in(c.Start) })
			b.t.GPUOps = slices.DeleteFunc(b.t.GPUOps, func(o ingest.GPUOp) bool { return !in(o.Start) })
			t := b.finish()
			t.Sources[0].Spans = t.CPURecordCount()
			t.Sources[0].GPUOps = len(t.GPUOps)
			if err := yield(t); err != nil {
				return err
			}
		}
		return nil
	}
	return head, parts
}

// maxPieces bounds GPUTraceParts' pieces, whatever every is asked for (a
// variable for its test).
var maxPieces int64 = 1 << 16

// stepExtent is the earliest and latest start of t's records.
func stepExtent(t *ingest.Trace) (lo, hi int64) {
	lo, hi = math.MaxInt64, math.MinInt64
	see := func(at int64) { lo, hi = min(lo, at), max(hi, at) }
	for i := range t.Spans {
		see(t.Spans[i].Start)
	}
	for i := range t.APICalls {
		see(t.APICalls[i].Start)
	}
	for i := range t.GPUOps {
		see(t.GPUOps[i].Start)
	}
	return lo, hi
}
