package kineto

import (
	"bufio"
	"cmp"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmprof/llmprof/ingest"
)

// TimeLayout is how Write places times, one of the layouts Kineto has
// written (docs/kineto.md).
type TimeLayout uint8

const (
	// BaseBefore writes ts relative to baseTimeNanoseconds, with the base
	// before traceEvents (Kineto since 2025-03).
	BaseBefore TimeLayout = iota
	// BaseAfter writes the base after traceEvents (2024-05 to 2025-03), so
	// a reader learns it only at the end.
	BaseAfter
	// Absolute writes epoch µs with no base (before 2024-05).
	Absolute
)

// WriteOptions tune Write.
type WriteOptions struct {
	Times TimeLayout
	// ROCm writes HIP runtime names (hipLaunchKernel for cudaLaunchKernel)
	// and ROCm's hex-string streams in the runtime calls' args.
	ROCm bool
	// Rank and WorldSize fill distributedInfo when WorldSize > 0.
	Rank, WorldSize int
	// Memory writes a [memory] instant event per memory event.
	Memory bool
	// Pid, if not 0, writes only that process's records (and the devices
	// its GPU ops ran on): Kineto writes one file per process.
	Pid uint32
}

// baseQuantum is Kineto's base-time granularity, 7,889,238 s
// (ChromeTraceBaseTime: Unix time floored to a multiple of it).
const baseQuantum = 7_889_238 * 1_000_000_000

// Write writes the trace's NVTX ranges (as user_annotation), CPU ops,
// CUDA runtime and driver calls, GPU ops and memory events as a Kineto
// Chrome trace, with the quirks of real ones: CPU events first and GPU
// activities after them (so the file is not in time order), µs with three
// decimals, ac2g flows from each launch to its GPU ops, process and thread
// name metadata, the capture window span and its end marker. OTLP spans
// are not written. It is the inverse of Decoder up to what the format has
// no place for (attributes, OTLP spans).
func Write(w io.Writer, t *ingest.Trace, opts WriteOptions) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	x := &writer{w: bw, t: t, opts: opts}
	x.write()
	return bw.Flush()
}

type writer struct {
	w     *bufio.Writer
	t     *ingest.Trace
	opts  WriteOptions
	base  int64
	buf   []byte
	first bool
}

func (x *writer) write() {
	t := x.t
	lo, hi := int64(0), int64(0)
	seen := false
	see := func(a, b int64) {
		if !seen {
			lo, hi, seen = a, b, true
		}
		lo, hi = min(lo, a), max(hi, b)
	}
	for i := range t.Spans {
		if t.Spans[i].Origin != ingest.OriginOTLP && x.mine(t.Spans[i].Pid) {
			see(t.Spans[i].Start, t.Spans[i].End)
		}
	}
	for i := range t.APICalls {
		if x.mine(t.APICalls[i].Pid) {
			see(t.APICalls[i].Start, t.APICalls[i].End)
		}
	}
	used := map[int16]bool{}
	for i := range t.GPUOps {
		if x.mine(t.GPUOps[i].Pid) {
			see(t.GPUOps[i].Start, t.GPUOps[i].End)
			used[t.GPUOps[i].Device] = true
		}
	}
	if x.opts.Times != Absolute {
		x.base = lo / baseQuantum * baseQuantum
	}
	x.raw("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [")
	n := 0
	for _, d := range t.Devices {
		if x.opts.Pid != 0 && !used[d.ID] {
			continue
		}
		if n > 0 {
			x.raw(",")
		}
		n++
		x.buf = append(x.buf[:0], "\n    {\"id\": "...)
		x.buf = strconv.AppendInt(x.buf, int64(d.ID), 10)
		x.buf = append(x.buf, ", \"name\": "...)
		x.buf = appendJSONString(x.buf, d.Name)
		x.buf = append(x.buf, ", \"totalGlobalMem\": "...)
		x.buf = strconv.AppendUint(x.buf, d.MemoryBytes, 10)
		x.buf = append(x.buf, ", \"numSms\": "...)
		x.buf = strconv.AppendInt(x.buf, int64(d.SMs), 10)
		x.buf = append(x.buf, ", \"warpSize\": "...)
		if x.opts.ROCm {
			x.buf = append(x.buf, "64}"...)
		} else {
			x.buf = append(x.buf, "32}"...)
		}
		x.w.Write(x.buf)
	}
	x.raw("\n  ],\n")
	if x.opts.WorldSize > 0 {
		x.raw(`  "distributedInfo": {"backend": "nccl", "rank": ` + strconv.Itoa(x.opts.Rank) +
			`, "world_size": ` + strconv.Itoa(x.opts.WorldSize) + "},\n")
	}
	if x.opts.Times == BaseBefore {
		x.raw(`  "baseTimeNanoseconds": ` + strconv.FormatInt(x.base, 10) + ",\n")
	}
	x.raw("  \"traceEvents\": [")
	x.first = true
	x.metadata()
	x.cpuSide()
	x.gpuSide()
	x.memory()
	if seen {
		x.event(`"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler"`, lo, hi-lo, true, "")
		x.event(`"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": ""`, hi, 0, false, "")
	}
	x.raw("\n  ],\n  \"traceName\": \"llmprof-synth.pt.trace.json\",\n")
	if x.opts.Times == BaseAfter {
		x.raw("  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": " + strconv.FormatInt(x.base, 10) + "\n}\n")
	} else {
		x.raw("  \"displayTimeUnit\": \"ms\"\n}\n")
	}
}

func (x *writer) raw(s string) { x.w.WriteString(s) }

// mine reports whether a record of process pid is written.
func (x *writer) mine(pid uint32) bool { return x.opts.Pid == 0 || pid == x.opts.Pid }

// event writes one event: head holds its first members, then ts (and dur
// if hasDur) and args (a JSON object's members, or none).
func (x *writer) event(head string, ts, dur int64, hasDur bool, args string) {
	b := x.buf[:0]
	if !x.first {
		b = append(b, ',')
	}
	x.first = false
	b = append(b, "\n  {"...)
	b = append(b, head...)
	b = append(b, `, "ts": `...)
	b = x.appendTime(b, ts-x.base)
	if hasDur {
		b = append(b, `, "dur": `...)
		b = x.appendTime(b, dur)
	}
	if args != "" {
		b = append(b, `, "args": {`...)
		b = append(b, args...)
		b = append(b, '}')
	}
	b = append(b, '}')
	x.buf = b
	x.w.Write(b)
}

// appendTime writes ns as µs with three decimals, as Kineto's fmtTs does.
func (x *writer) appendTime(b []byte, ns int64) []byte {
	if ns < 0 {
		b = append(b, '-')
		ns = -ns
	}
	b = strconv.AppendInt(b, ns/1000, 10)
	f := ns % 1000
	return append(b, '.', byte('0'+f/100), byte('0'+f/10%10), byte('0'+f%10))
}

func (x *writer) metadata() {
	t := x.t
	for _, p := range t.Processes {
		if !x.mine(p.Pid) {
			continue
		}
		x.event(`"name": "process_name", "ph": "M", "pid": `+strconv.FormatUint(uint64(p.Pid), 10)+`, "tid": 0`,
			x.base, 0, false, `"name": `+string(appendJSONString(nil, p.Name)))
	}
	for _, th := range t.Threads {
		if !x.mine(th.Pid) {
			continue
		}
		x.event(`"name": "thread_name", "ph": "M", "pid": `+strconv.FormatUint(uint64(th.Pid), 10)+`, "tid": `+
			strconv.FormatUint(uint64(th.Tid), 10), x.base, 0, false, `"name": `+string(appendJSONString(nil, th.Name)))
	}
	devs := map[int16]bool{}
	for i := range t.GPUOps {
		if x.mine(t.GPUOps[i].Pid) {
			devs[t.GPUOps[i].Device] = true
		}
	}
	ids := make([]int16, 0, len(devs))
	for d := range devs {
		ids = append(ids, d)
	}
	slices.Sort(ids)
	for _, d := range ids {
		if d < 0 {
			continue
		}
		id := strconv.Itoa(int(d))
		x.event(`"name": "process_labels", "ph": "M", "pid": `+id+`, "tid": 0`, x.base, 0, false, `"labels": "GPU `+id+`"`)
	}
}

// cpuSide writes the spans and API calls by start time (in the trace's
// order of the two, ingest.CPURecords), a launch's s flow after it.
func (x *writer) cpuSide() {
	t := x.t
	launched := map[uint64]bool{}
	for i := range t.GPUOps {
		if o := &t.GPUOps[i]; o.Correlation != 0 {
			launched[uint64(o.Pid)<<32|uint64(o.Correlation)] = true
		}
	}
	start := func(r ingest.CPURef) int64 {
		if c, ok := r.Call(); ok {
			return t.APICalls[c].Start
		}
		i, _ := r.Span()
		return t.Spans[i].Start
	}
	refs := make([]ingest.CPURef, 0, t.CPURecordCount())
	for r := range t.CPURecords() {
		if c, ok := r.Call(); ok {
			if x.mine(t.APICalls[c].Pid) {
				refs = append(refs, r)
			}
		} else if i, _ := r.Span(); t.Spans[i].Origin != ingest.OriginOTLP && x.mine(t.Spans[i].Pid) {
			refs = append(refs, r)
		}
	}
	slices.SortStableFunc(refs, func(a, b ingest.CPURef) int { return cmp.Compare(start(a), start(b)) })
	var head strings.Builder
	n := 1
	for _, r := range refs {
		if c, ok := r.Call(); ok {
			x.call(&t.APICalls[c], &head, strconv.Itoa(n), launched)
			n++
			continue
		}
		i, _ := r.Span()
		s := &t.Spans[i]
		cat := ""
		switch s.Origin {
		case ingest.OriginNVTX:
			cat = "user_annotation"
		case ingest.OriginCPUOp:
			cat = "cpu_op"
			if v, _ := t.AttrString(t.SpanAttrs(s), AttrCategory); v == "python_function" {
				cat = "python_function"
			}
		default:
			continue
		}
		x.head(&head, cat, t.Str(s.Name), s.Pid, s.Tid)
		ext := strconv.Itoa(n)
		n++
		x.event(head.String(), s.Start, s.Duration(), true, `"External id": `+ext+`, "Ev Idx": `+ext)
	}
}

// head writes the start of a CPU-side event: its phase, category, name,
// pid and tid.
func (x *writer) head(head *strings.Builder, cat, name string, pid, tid uint32) {
	head.Reset()
	head.WriteString(`"ph": "X", "cat": "` + cat + `", "name": `)
	head.Write(appendJSONString(nil, name))
	head.WriteString(`, "pid": ` + strconv.FormatUint(uint64(pid), 10) + `, "tid": ` + strconv.FormatUint(uint64(tid), 10))
}

// call writes a runtime or driver call (ext its External id), and the s
// end of its launch's flow when it launched an op.
func (x *writer) call(c *ingest.APICall, head *strings.Builder, ext string, launched map[uint64]bool) {
	cat := "cuda_runtime"
	if c.Origin == ingest.OriginCUDADriver {
		cat = "cuda_driver"
	}
	name := x.t.Str(c.Name)
	if x.opts.ROCm {
		name = hipName(name)
	}
	x.head(head, cat, name, c.Pid, c.Tid)
	corr := strconv.FormatUint(uint64(c.Correlation), 10)
	args := `"External id": ` + ext + `, "cbid": 211, "correlation": ` + corr
	if x.opts.ROCm {
		args = `"External id": ` + ext + `, "cid": 1, "correlation": ` + corr
	}
	x.event(head.String(), c.Start, c.Duration(), true, args)
	if c.Correlation != 0 && launched[uint64(c.Pid)<<32|uint64(c.Correlation)] {
		x.event(`"ph": "s", "id": `+corr+`, "pid": `+strconv.FormatUint(uint64(c.Pid), 10)+`, "tid": `+strconv.FormatUint(uint64(c.Tid), 10)+
			`, "cat": "ac2g", "name": "ac2g"`, c.Start, 0, false, "")
	}
}

// gpuSide writes the GPU ops in their order (CUPTI's buffers), each with the
// f end of its launch's flow.
func (x *writer) gpuSide() {
	t := x.t
	var head, args strings.Builder
	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		sh := t.ShapeOf(o)
		if !x.mine(o.Pid) {
			continue
		}
		dev := strconv.Itoa(int(max(o.Device, 0)))
		stream := strconv.FormatUint(uint64(o.Stream), 10)
		corr := strconv.FormatUint(uint64(o.Correlation), 10)
		name := t.Str(o.Name)
		cat := "kernel"
		args.Reset()
		args.WriteString(`"device": ` + dev + `, "context": 1, "stream": ` + stream + `, "correlation": ` + corr)
		switch o.Kind {
		case ingest.OpKernel, ingest.OpGraph:
			args.WriteString(`, "grid": [` + u32(sh.Grid[0]) + ", " + u32(sh.Grid[1]) + ", " + u32(sh.Grid[2]) + `]`)
			args.WriteString(`, "block": [` + u32(uint32(sh.Block[0])) + ", " + u32(uint32(sh.Block[1])) + ", " + u32(uint32(sh.Block[2])) + `]`)
		case ingest.OpMemcpy:
			cat = "gpu_memcpy"
			name = memcpyName(o.Copy)
			args.WriteString(`, "bytes": ` + strconv.FormatUint(sh.Bytes, 10))
		case ingest.OpMemset:
			cat = "gpu_memset"
			name = "Memset (Device)"
			args.WriteString(`, "bytes": ` + strconv.FormatUint(sh.Bytes, 10))
		case ingest.OpSync:
			cat = "cuda_sync"
		}
		if sh.GraphID != 0 {
			args.WriteString(`, "graph id": ` + u32(sh.GraphID))
		}
		head.Reset()
		head.WriteString(`"ph": "X", "cat": "` + cat + `", "name": `)
		head.Write(appendJSONString(nil, name))
		head.WriteString(`, "pid": ` + dev + `, "tid": ` + stream)
		x.event(head.String(), o.Start, o.Duration(), true, args.String())
		if o.Correlation != 0 {
			x.event(`"ph": "f", "id": `+corr+`, "pid": `+dev+`, "tid": `+stream+`, "cat": "ac2g", "name": "ac2g", "bp": "e"`,
				o.Start, 0, false, "")
		}
	}
}

func (x *writer) memory() {
	if !x.opts.Memory {
		return
	}
	t := x.t
	for i := range t.MemoryEvents {
		m := &t.MemoryEvents[i]
		if !x.mine(m.Pid) {
			continue
		}
		bytes := int64(m.Bytes)
		if m.Op == ingest.MemFree {
			bytes = -bytes
		}
		devType, devID := "0", "-1"
		if m.Device >= 0 {
			devType, devID = "1", strconv.Itoa(int(m.Device))
		}
		x.event(`"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": `+
			strconv.FormatUint(uint64(m.Pid), 10)+`, "tid": `+strconv.FormatUint(uint64(m.Pid), 10),
			m.Time, 0, false, `"Total Reserved": 0, "Total Allocated": 0, "Bytes": `+strconv.FormatInt(bytes, 10)+
				`, "Addr": `+strconv.FormatUint(m.Address, 10)+`, "Device Id": `+devID+`, "Device Type": `+devType)
	}
}

func u32(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// memcpyName is Kineto's name for a memcpy of a direction
// (CuptiActivity.cpp memcpyName: "Memcpy <kind> (<src> -> <dst>)").
func memcpyName(k ingest.CopyKind) string {
	switch k {
	case ingest.CopyHtoD:
		return "Memcpy HtoD (Pinned -> Device)"
	case ingest.CopyDtoH:
		return "Memcpy DtoH (Device -> Pinned)"
	case ingest.CopyDtoD:
		return "Memcpy DtoD (Device -> Device)"
	case ingest.CopyHtoH:
		return "Memcpy HtoH (Pinned -> Pinned)"
	case ingest.CopyPtoP:
		return "Memcpy PtoP (Device -> Device)"
	}
	return "Memcpy Unknown (Unknown -> Unknown)"
}

// hipName is a CUDA runtime name's HIP counterpart.
func hipName(name string) string {
	if rest, ok := strings.CutPrefix(name, "cuda"); ok {
		return "hip" + rest
	}
	return name
}

// appendJSONString appends s as a JSON string (invalid UTF-8 becomes U+FFFD).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
