package kineto

import (
	"bytes"
	"math"

	"github.com/llmprof/llmprof/ingest"
)

// event turns the event just read into model records. Times stay as read
// (relative to baseTimeNanoseconds when the file has one, which may come
// after traceEvents); finish adds the base.
func (d *decoder) event() {
	e := &d.ev
	switch e.ph {
	case 'X':
		d.complete()
	case 'i', 'I':
		d.instant()
	case 's', 'f', 't':
		if e.cat == catFlow {
			d.flow()
		}
	case 'M':
		d.metadata()
	case 'C':
		d.counts.counters++
	}
}

// complete handles a complete ('X') event.
func (d *decoder) complete() {
	e := &d.ev
	switch e.cat {
	case catIgnored, catFlow:
		d.counts.ignored++
		return
	case catRangeProf:
		d.counts.rangeProf++
		return
	case catTrace:
		d.counts.trace++
		return
	case catNone, catUnknown, catMemoryInstant:
		name := string(e.rawCat)
		if e.cat == catNone {
			name = "(no cat)"
		}
		if len(name) > 40 {
			name = name[:40] + "…"
		}
		if _, ok := d.unknownCats[name]; !ok {
			d.unknownOrder = append(d.unknownOrder, name)
		}
		d.unknownCats[name]++
		return
	case catPython:
		if d.opts.SkipPython {
			return
		}
	}
	if !e.hasTs || e.badTime {
		d.counts.noTs++
		if d.counts.noTs <= 3 {
			d.warnf(d.pos(), "bad-time", "%s event %q has no valid ts or dur; skipped", e.rawCat, truncate(e.name))
		}
		return
	}
	if !e.hasDur {
		d.counts.noDur++
		return
	}
	if e.dur < 0 {
		d.counts.negDur++
		e.dur = 0
	}
	end := e.ts + e.dur
	if end < e.ts {
		d.counts.noTs++
		return
	}
	d.see(e.ts)
	switch e.cat {
	case catKernel, catMemcpy, catMemset, catSync:
		d.readArgs()
		d.gpuOp()
	default:
		d.span(end)
	}
}

func (d *decoder) see(ts int64) {
	if !d.sawTime {
		d.minTs, d.maxTs, d.sawTime = ts, ts, true
		return
	}
	d.minTs, d.maxTs = min(d.minTs, ts), max(d.maxTs, ts)
}

func truncate(b []byte) string {
	if len(b) > 60 {
		return string(b[:60]) + "…"
	}
	return string(b)
}

// span adds a CPU-side span: an operator, a Python function, an annotation,
// or a GPU-side annotation; a CUDA/HIP runtime or driver call is an API
// call (apiCall).
func (d *decoder) span(end int64) {
	e := &d.ev
	if e.cat == catRuntime || e.cat == catDriver {
		d.apiCall(end)
		return
	}
	sp := ingest.Span{Name: d.t.Strings.InternBytes(e.name), Start: e.ts, End: end, Resource: -1, Scope: -1,
		Pid: idU32(e.pid), Tid: idU32(e.tid)}
	switch e.cat {
	case catCPUOp:
		sp.Origin = ingest.OriginCPUOp
	case catPython:
		sp.Origin = ingest.OriginCPUOp
		sp.Attrs = d.t.AddAttrs(ingest.NewAttr(d.keys.cat, ingest.StringValue(d.keys.python)))
	case catUserAnnotation:
		// record_function ranges nest on their thread like NVTX push/pop
		// ranges, and serve as them: align's mirrors, the step join and the
		// NVTX summaries read them.
		sp.Origin = ingest.OriginNVTX
		sp.Attrs = d.t.AddAttrs(ingest.NewAttr(d.keys.nvtxType, ingest.StringValue(d.keys.push)),
			ingest.NewAttr(d.keys.cat, ingest.StringValue(d.keys.userAnnotation)))
	case catGPUAnnotation:
		// On the GPU's track (pid = device, tid = stream); its process is
		// set in finish.
		sp.Origin = ingest.OriginGPUAnnotation
		sp.Attrs = d.t.AddAttrs(ingest.NewAttr(d.keys.device, ingest.IntValue(e.pid.num)))
		d.gpuAnnotationSpan = append(d.gpuAnnotationSpan, int32(len(d.t.Spans)))
	}
	d.t.Spans = append(d.t.Spans, sp)
}

// apiCall adds a CUDA/HIP runtime or driver call.
func (d *decoder) apiCall(end int64) {
	e := &d.ev
	c := ingest.APICall{Name: d.t.Strings.InternBytes(e.name), Start: e.ts, End: end,
		Pid: idU32(e.pid), Tid: idU32(e.tid), Origin: ingest.OriginCUDARuntime}
	if e.cat == catDriver {
		c.Origin = ingest.OriginCUDADriver
	}
	d.readArgs()
	c.Correlation = corrOf(d.a.correlation)
	switch {
	case bytes.HasPrefix(e.name, []byte("hip")):
		d.counts.rocm++
	case bytes.HasPrefix(e.name, []byte("cu")):
		d.counts.cuda++
	}
	d.t.APICalls = append(d.t.APICalls, c)
}

func idU32(id ident) uint32 {
	if !id.isNum || id.num < 0 || id.num > math.MaxUint32 {
		return 0
	}
	return uint32(id.num)
}

func corrOf(v opt) uint32 {
	if !v.ok || v.v <= 0 || v.v > math.MaxUint32 {
		return 0
	}
	return uint32(v.v)
}

// gpuOp adds a kernel, memcpy, memset or synchronization. Device and stream
// come from args (pid and tid are the same numbers on CUDA, but ROCm's tid
// may be a queue); the launching process is set in finish.
func (d *decoder) gpuOp() {
	e, a := &d.ev, &d.a
	op := ingest.GPUOp{Start: e.ts, End: e.ts + e.dur, Name: d.t.Strings.InternBytes(e.name), Device: -1,
		Correlation: corrOf(a.correlation)}
	dev := a.device
	if !dev.ok {
		dev = a.inDevice
	}
	if !dev.ok && e.pid.isNum {
		dev = opt{e.pid.num, true}
	}
	if dev.ok && dev.v >= 0 && dev.v < math.MaxInt16 {
		op.Device = int16(dev.v)
	}
	stream := a.stream
	if !stream.ok && e.tid.isNum {
		stream = opt{e.tid.num, true}
	}
	switch {
	case !stream.ok:
	case stream.v < 0:
		// Context and device syncs have no stream (CUPTI's invalid value,
		// written as -1): nsys exports the same as 0xFFFFFFFF.
		op.Stream = math.MaxUint32
	case stream.v <= math.MaxUint32:
		op.Stream = uint32(stream.v)
	}
	var sh ingest.OpShape
	switch e.cat {
	case catKernel:
		op.Kind = ingest.OpKernel
		for i := range 3 {
			if g := a.grid[i]; g.ok && g.v >= 0 && g.v <= math.MaxUint32 {
				sh.Grid[i] = uint32(g.v)
			}
			if b := a.block[i]; b.ok && b.v >= 0 && b.v <= math.MaxUint16 {
				sh.Block[i] = uint16(b.v)
			}
		}
	case catMemcpy:
		op.Kind = ingest.OpMemcpy
		op.Copy = copyKind(e.name, a.kind)
	case catMemset:
		op.Kind = ingest.OpMemset
	case catSync:
		op.Kind = ingest.OpSync
	}
	if a.graphID.ok && a.graphID.v > 0 && a.graphID.v <= math.MaxUint32 {
		sh.GraphID = uint32(a.graphID.v)
	}
	if op.Kind == ingest.OpMemcpy || op.Kind == ingest.OpMemset {
		if a.bytes.ok && a.bytes.v > 0 {
			sh.Bytes = uint64(a.bytes.v)
		}
	}
	op.Shape = d.t.InternShape(sh)
	d.t.GPUOps = append(d.t.GPUOps, op)
}

// copyKind reads a memcpy's direction from its name ("Memcpy HtoD
// (Pageable -> Device)", CuptiActivity.cpp memcpyName) or, on ROCm, from
// args.kind ("HtoD").
func copyKind(name, kind []byte) ingest.CopyKind {
	for _, b := range [][]byte{kind, name} {
		switch {
		case bytes.Contains(b, []byte("HtoD")):
			return ingest.CopyHtoD
		case bytes.Contains(b, []byte("DtoH")):
			return ingest.CopyDtoH
		case bytes.Contains(b, []byte("DtoD")):
			return ingest.CopyDtoD
		case bytes.Contains(b, []byte("HtoH")):
			return ingest.CopyHtoH
		case bytes.Contains(b, []byte("PtoP")):
			return ingest.CopyPtoP
		}
	}
	return ingest.CopyUnknown
}

// instant handles an instant event: PyTorch's [memory] allocator samples
// become memory events; the capture markers carry nothing.
func (d *decoder) instant() {
	e := &d.ev
	if e.cat != catMemoryInstant {
		return
	}
	switch string(e.name) {
	case "[memory]":
	case "[OutOfMemory]":
		d.counts.oom++
		return
	default:
		return
	}
	if !e.hasTs || e.badTime {
		d.counts.noTs++
		return
	}
	d.readArgs()
	a := &d.a
	if !a.memBytes.ok || a.memBytes.v == 0 {
		return
	}
	d.see(e.ts)
	m := ingest.MemoryEvent{Time: e.ts, Pid: idU32(e.pid), Device: -1, Kind: ingest.MemPageable, Op: ingest.MemAlloc}
	if a.addr.ok {
		m.Address = uint64(a.addr.v)
	}
	if a.memBytes.v < 0 {
		m.Op = ingest.MemFree
		if a.memBytes.v == math.MinInt64 {
			return
		}
		m.Bytes = uint64(-a.memBytes.v)
	} else {
		m.Bytes = uint64(a.memBytes.v)
	}
	// Device Type is c10's DeviceType: 0 CPU, 1 CUDA (ROCm builds report
	// CUDA too); Device Id is -1 for the CPU.
	if a.devType.ok && a.devType.v == 1 && a.devID.ok && a.devID.v >= 0 && a.devID.v < math.MaxInt16 {
		m.Device, m.Kind = int16(a.devID.v), ingest.MemDevice
	}
	d.t.MemoryEvents = append(d.t.MemoryEvents, m)
}

// flow records an ac2g flow end: only where a GPU op lacks args.correlation
// are flows used, to give it the id of the flow that ends on it.
func (d *decoder) flow() {
	e := &d.ev
	switch e.ph {
	case 's':
		d.counts.flowS++
	case 'f', 't':
		d.counts.flowF++
		if e.hasTs && e.id.isNum && e.pid.isNum && e.tid.isNum {
			d.flows = append(d.flows, flowEnd{e.pid.num, e.tid.num, e.ts, e.id.num})
		}
	}
}

// metadata reads process and thread names.
func (d *decoder) metadata() {
	e := &d.ev
	name := string(e.name)
	if name != "process_name" && name != "thread_name" {
		return
	}
	d.readArgs()
	if len(d.a.name) == 0 || !e.pid.isNum {
		return
	}
	v := string(d.a.name)
	if len(v) > 256 {
		v = v[:256]
	}
	if name == "process_name" {
		d.procNames[idU32(e.pid)] = v
	} else if e.tid.isNum {
		d.threadNames[threadRef{idU32(e.pid), idU32(e.tid)}] = v
	}
}
