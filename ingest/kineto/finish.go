package kineto

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// absoluteMinNs tells epoch timestamps from relative ones when a file has
// no baseTimeNanoseconds: 10^14 µs is 1973. Relative timestamps stay below
// the base's period, 7,889,238 s (docs/kineto.md).
const absoluteMinNs = 1e17

// finish places the times on the Unix clock, joins the GPU side to its
// processes, names processes and threads and describes the source.
func (d *decoder) finish() {
	t := d.t
	src := &t.Sources[0]
	src.Format = Format
	src.Producer = "PyTorch profiler (Kineto)"
	d.place(src)
	d.joinProcesses()
	d.names()
	d.unlistedDevices()
	if d.counts.rocm > d.counts.cuda {
		d.meta(MetaGPU, "rocm")
	} else if d.counts.cuda > 0 {
		d.meta(MetaGPU, "cuda")
	}
	d.summaryWarnings()
	src.Spans, src.GPUOps = t.CPURecordCount(), len(t.GPUOps)
}

// place adds baseTimeNanoseconds to every time, or decides that the times
// are epoch µs already, and sets the clock domain. Kineto stamps CPU and GPU
// events on one host CLOCK_REALTIME-based clock (docs/kineto.md), so one
// domain per file.
func (d *decoder) place(src *ingest.Source) {
	clock := ingest.ClockDomain{Name: "kineto:" + baseName(src.Path), Kind: ingest.ClockRealtime}
	switch {
	case d.hasBase:
		d.meta(MetaBaseTime, strconv.FormatInt(d.base, 10))
		d.meta(MetaTimestamps, "relative")
		// Kineto clamps a relative ts below 0 to 0: such a time is invalid.
		d.dropZeroTimes()
		if d.shift(d.base) {
			d.added = d.base
		} else {
			d.warnf("baseTimeNanoseconds", "bad-value", "baseTimeNanoseconds %d overflows when added to the timestamps; they stay relative", d.base)
			clock.Kind = ingest.ClockUnknown
		}
	case !d.sawTime || d.maxTs >= absoluteMinNs:
		d.meta(MetaTimestamps, "absolute")
	default:
		d.meta(MetaTimestamps, "relative-unanchored")
		clock.Kind = ingest.ClockUnknown
		d.warnf("", "no-base-time", "timestamps are relative (largest %d µs) but the trace has no baseTimeNanoseconds "+
			"(PyTorch builds of 2024-04/05 wrote such files): they cannot be placed on the wall clock", d.maxTs/1000)
	}
	src.Clock = clock
}

// dropZeroTimes removes records whose relative ts is exactly 0.
func (d *decoder) dropZeroTimes() {
	t := d.t
	n := 0
	keepSpan := make([]bool, len(t.Spans))
	for i := range t.Spans {
		keepSpan[i] = t.Spans[i].Start != 0
	}
	if slices.Contains(keepSpan, false) {
		// gpuAnnotationSpan indexes t.Spans: renumber it.
		newIdx := make([]int32, len(t.Spans))
		j := int32(0)
		for i, k := range keepSpan {
			newIdx[i] = j
			if k {
				j++
			}
		}
		ann := d.gpuAnnotationSpan[:0]
		for _, i := range d.gpuAnnotationSpan {
			if keepSpan[i] {
				ann = append(ann, newIdx[i])
			}
		}
		d.gpuAnnotationSpan = ann
		k := 0
		for i := range t.Spans {
			if keepSpan[i] {
				t.Spans[k] = t.Spans[i]
				k++
			}
		}
		n += len(t.Spans) - k
		t.Spans = t.Spans[:k]
	}
	var dropped int
	t.APICalls, dropped = dropZeroTime(t.APICalls, func(c *ingest.APICall) int64 { return c.Start })
	n += dropped
	t.GPUOps, dropped = dropZeroTime(t.GPUOps, func(o *ingest.GPUOp) int64 { return o.Start })
	n += dropped
	t.MemoryEvents, dropped = dropZeroTime(t.MemoryEvents, func(e *ingest.MemoryEvent) int64 { return e.Time })
	n += dropped
	if n > 0 {
		d.warnf("", "zero-time", "%d events have ts 0 (Kineto writes a time before the trace's base as 0): dropped", n)
	}
}

// dropZeroTime keeps, in order and in place, the records whose time is not
// 0, and says how many it dropped.
func dropZeroTime[T any](recs []T, at func(*T) int64) ([]T, int) {
	k := 0
	for i := range recs {
		if at(&recs[i]) != 0 {
			recs[k] = recs[i]
			k++
		}
	}
	return recs[:k], len(recs) - k
}

// shift adds base to every time; false (and nothing changed) if any time
// would overflow.
func (d *decoder) shift(base int64) bool {
	t := d.t
	ok := func(x int64) bool {
		s := x + base
		return !((base > 0 && s < x) || (base < 0 && s > x))
	}
	for i := range t.Spans {
		if !ok(t.Spans[i].End) || !ok(t.Spans[i].Start) {
			return false
		}
	}
	for i := range t.APICalls {
		if !ok(t.APICalls[i].End) || !ok(t.APICalls[i].Start) {
			return false
		}
	}
	for i := range t.GPUOps {
		if !ok(t.GPUOps[i].End) || !ok(t.GPUOps[i].Start) {
			return false
		}
	}
	for i := range t.MemoryEvents {
		if !ok(t.MemoryEvents[i].Time) {
			return false
		}
	}
	for i := range t.Spans {
		t.Spans[i].Start += base
		t.Spans[i].End += base
	}
	for i := range t.APICalls {
		t.APICalls[i].Start += base
		t.APICalls[i].End += base
	}
	for i := range t.GPUOps {
		t.GPUOps[i].Start += base
		t.GPUOps[i].End += base
	}
	for i := range t.MemoryEvents {
		t.MemoryEvents[i].Time += base
	}
	return true
}

// joinProcesses gives every GPU op the process of the call that launched it
// (same args.correlation: CUPTI's id, unique per process, docs/kineto.md
// §4), which is what ingest.LaunchCalls joins on. A GPU op's own pid is its
// device. Ops with no launch in the file get the file's main process.
func (d *decoder) joinProcesses() {
	t := d.t
	main := d.mainPid()
	d.fillCorrelationFromFlows()
	type call struct {
		corr uint32
		pid  uint32
	}
	var calls []call
	for i := range t.APICalls {
		if c := &t.APICalls[i]; c.Correlation != 0 {
			calls = append(calls, call{c.Correlation, c.Pid})
		}
	}
	slices.SortFunc(calls, func(a, b call) int { return cmp.Compare(a.corr, b.corr) })
	unmatched := 0
	var firstUnmatched *ingest.GPUOp
	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		o.Pid = main
		if o.Correlation == 0 {
			continue
		}
		j, found := slices.BinarySearchFunc(calls, o.Correlation, func(c call, corr uint32) int { return cmp.Compare(c.corr, corr) })
		if found {
			o.Pid = calls[j].pid
			continue
		}
		unmatched++
		if firstUnmatched == nil {
			firstUnmatched = o
		}
	}
	if unmatched > 0 && len(calls) > 0 {
		d.warnf("", "no-launch", "%d GPU ops have a correlation id that no runtime or driver call in the file carries "+
			"(the first: %s %q, correlation %d); they are kept without their launch",
			unmatched, firstUnmatched.Kind, truncate([]byte(t.Str(firstUnmatched.Name))), firstUnmatched.Correlation)
	}
	for _, i := range d.gpuAnnotationSpan {
		t.Spans[i].Pid = main
	}
	// Python functions of the main thread may carry pid 0; Kineto means
	// the process (GenericActivityProfiler overrides it, docs/kineto.md).
	for i := range t.Spans {
		if s := &t.Spans[i]; s.Pid == 0 && s.Origin == ingest.OriginCPUOp {
			s.Pid = main
		}
	}
}

// mainPid is the process of most CUDA API calls, else of most CPU spans.
func (d *decoder) mainPid() uint32 {
	t := d.t
	count := map[uint32]int{}
	for i := range t.APICalls {
		count[t.APICalls[i].Pid]++
	}
	if len(count) == 0 {
		for i := range t.Spans {
			if t.Spans[i].Origin != ingest.OriginGPUAnnotation {
				count[t.Spans[i].Pid]++
			}
		}
	}
	best, bestN := uint32(0), 0
	for pid, n := range count {
		if n > bestN || (n == bestN && pid < best) {
			best, bestN = pid, n
		}
	}
	return best
}

// fillCorrelationFromFlows gives GPU ops without args.correlation the id of
// the ac2g flow that ends on them (same device, stream and ts), as old
// traces may only link them so.
func (d *decoder) fillCorrelationFromFlows() {
	t := d.t
	missing := false
	for i := range t.GPUOps {
		if t.GPUOps[i].Correlation == 0 && t.GPUOps[i].Kind != ingest.OpSync {
			missing = true
			break
		}
	}
	if !missing || len(d.flows) == 0 {
		return
	}
	type key struct{ pid, tid, ts int64 }
	byKey := make(map[key]int64, len(d.flows))
	for _, f := range d.flows {
		byKey[key{f.pid, f.tid, f.ts}] = f.id
	}
	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		if o.Correlation != 0 {
			continue
		}
		if id, ok := byKey[key{int64(o.Device), int64(o.Stream), o.Start - d.added}]; ok && id > 0 && id <= math.MaxUint32 {
			o.Correlation = uint32(id)
		}
	}
}

// names keeps the process and thread names of the processes that have CPU
// spans (Kineto names every GPU index too, used or not).
func (d *decoder) names() {
	t := d.t
	pids := map[uint32]bool{}
	threads := map[threadRef]bool{}
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin == ingest.OriginGPUAnnotation {
			continue
		}
		pids[s.Pid] = true
		threads[threadRef{s.Pid, s.Tid}] = true
	}
	for i := range t.APICalls {
		c := &t.APICalls[i]
		pids[c.Pid] = true
		threads[threadRef{c.Pid, c.Tid}] = true
	}
	for _, pid := range sortedKeys(pids) {
		if name, ok := d.procNames[pid]; ok {
			t.Processes = append(t.Processes, ingest.Process{Pid: pid, Name: name})
		}
	}
	refs := make([]threadRef, 0, len(threads))
	for r := range threads {
		refs = append(refs, r)
	}
	slices.SortFunc(refs, func(a, b threadRef) int { return cmp.Or(cmp.Compare(a.pid, b.pid), cmp.Compare(a.tid, b.tid)) })
	for _, r := range refs {
		if name, ok := d.threadNames[r]; ok {
			t.Threads = append(t.Threads, ingest.Thread{Pid: r.pid, Tid: r.tid, Name: name})
		}
	}
}

func sortedKeys(m map[uint32]bool) []uint32 {
	out := make([]uint32, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// summaryWarnings reports, once per kind, what was read but not used.
func (d *decoder) summaryWarnings() {
	t, c := d.t, &d.counts
	kernels := 0
	for i := range t.GPUOps {
		if t.GPUOps[i].Kind == ingest.OpKernel {
			kernels++
		}
	}
	switch {
	case c.rangeProf > 0 && kernels == 0:
		d.warnf("", "no-kernels", "no kernel activity: the trace is a CUPTI range-profiler capture (%d cuda_profiler_range "+
			"counter events, not read); GPU time and launch delays are unknown", c.rangeProf)
	case len(t.GPUOps) == 0 && d.n > 0:
		if acc, n := d.otherAccelerator(); n > 0 {
			d.warnf("", "no-gpu", "no CUDA or ROCm activity: the trace is from another accelerator (%d events of %s, not read); "+
				"its device time and launch delays are unknown", n, acc)
			break
		}
		d.warnf("", "no-gpu", "no GPU activity (a CPU-only capture): no kernels, copies or synchronizations")
	}
	if c.noDur > 0 {
		d.warnf("", "no-dur", "%d complete events have no dur; skipped", c.noDur)
	}
	if c.noTs > 3 {
		d.warnf("", "bad-time", "%d events in all had no valid ts or dur and were skipped", c.noTs)
	}
	if c.negDur > 0 {
		d.warnf("", "negative-dur", "%d events have a negative dur (a re-processed trace?); clamped to zero length", c.negDur)
	}
	if c.oom > 0 {
		d.warnf("", "out-of-memory", "%d [OutOfMemory] events: the CUDA caching allocator failed to allocate during the capture", c.oom)
	}
	for _, name := range d.unknownOrder {
		d.warnf("", "unknown-category", "%d events of category %q, not read", d.unknownCats[name], name)
	}
}

// NoProperties names a device that GPU ops run on but deviceProperties
// does not list (absent, or listing other indices: a vLLM MI300X trace
// lists devices 0–3 and runs its ops on device 6), so that the device shows
// by its index and says why it has no name.
const NoProperties = "(no properties in the trace)"

// unlistedDevices adds a Device for every device index of the GPU ops that
// deviceProperties does not list.
func (d *decoder) unlistedDevices() {
	t := d.t
	listed := map[int16]bool{}
	for _, dev := range t.Devices {
		listed[dev.ID] = true
	}
	var missing []int16
	for i := range t.GPUOps {
		if dev := t.GPUOps[i].Device; dev >= 0 && !listed[dev] {
			listed[dev] = true
			missing = append(missing, dev)
		}
	}
	slices.Sort(missing)
	for _, dev := range missing {
		t.Devices = append(t.Devices, ingest.Device{ID: dev, Name: NoProperties})
	}
}

// otherAccelerator finds the activity of accelerators the decoder does not
// read among the unknown categories, by the prefixes of libkineto's
// ActivityType names: MTIA (mtia_runtime, mtia_ccp_events, mtia_insight),
// Intel XPU, Habana HPU, MLU, GCU, Glow, and PyTorch's out-of-tree
// backends (privateuse1_runtime, privateuse1_driver). It returns the
// categories seen and their events.
func (d *decoder) otherAccelerator() (string, int) {
	var cats []string
	n := 0
	for _, c := range d.unknownOrder {
		lc := strings.ToLower(c)
		for _, p := range []string{"mtia_", "privateuse1_", "xpu_", "hpu_", "mlu_", "gcu_", "glow_"} {
			if strings.HasPrefix(lc, p) {
				cats = append(cats, c)
				n += d.unknownCats[c]
				break
			}
		}
	}
	return strings.Join(cats, ", "), n
}
