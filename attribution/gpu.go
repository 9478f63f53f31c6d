package attribution

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"strconv"

	"github.com/llmprof/llmprof/ingest"
)

// GPUOptions tune AnalyzeGPU. The zero value is DefaultGPUOptions.
type GPUOptions struct {
	// TopKernels is how many kernels are listed (default 10).
	TopKernels int `json:"top_kernels"`
	// TopGaps is how many idle gaps are listed, longest first (default 10).
	TopGaps int `json:"top_gaps"`
	// MemoryPoints bounds each device's memory-usage series (default 200).
	MemoryPoints int `json:"memory_points"`
}

// DefaultGPUOptions are the defaults documented on GPUOptions.
var DefaultGPUOptions = GPUOptions{TopKernels: 10, TopGaps: 10, MemoryPoints: 200}

func (o GPUOptions) withDefaults() GPUOptions {
	if o.TopKernels <= 0 {
		o.TopKernels = DefaultGPUOptions.TopKernels
	}
	if o.TopGaps <= 0 {
		o.TopGaps = DefaultGPUOptions.TopGaps
	}
	if o.MemoryPoints <= 1 {
		o.MemoryPoints = DefaultGPUOptions.MemoryPoints
	}
	return o
}

// GPU is the GPU section of analyze: how busy each device and stream was,
// why it sat idle, which kernels and kernel categories took the time, and
// how device memory was used. Times are on the reference clock (after
// align); durations are in milliseconds.
type GPU struct {
	// Hosts lists the hosts (or captures) the devices belong to, with the
	// input files of each; more than one means the inputs are unrelated
	// and nothing is joined across them.
	Hosts            []GPUHost      `json:"hosts"`
	Devices          []GPUDevice    `json:"devices"`
	Streams          []GPUStream    `json:"streams"`
	IdleGaps         []IdleGap      `json:"idle_gaps"`
	TopKernels       []KernelTime   `json:"top_kernels"`
	KernelCategories []CategoryTime `json:"kernel_categories"`
	// Uncategorized is the GPU time the kernel taxonomy (kernelcat.go)
	// leaves in "other", with the names that hold most of it: a gap in
	// the taxonomy shows instead of hiding in one bar.
	Uncategorized Uncategorized `json:"uncategorized"`
	Memory        []GPUMemory   `json:"memory,omitempty"`
	Options       GPUOptions    `json:"options"`

	// sourceHosts is each source's GPUDevice.Host (by SourceID).
	sourceHosts []string
}

// DeviceHost is the GPUDevice.Host of the GPU ops of source src: with the
// device index, the identity of the device an op ran on. A GPU section read
// back from JSON has none ("").
func (g *GPU) DeviceHost(src ingest.SourceID) string {
	if int(src) < len(g.sourceHosts) {
		return g.sourceHosts[src]
	}
	return ""
}

// Uncategorized is the GPU time in category "other": TotalMs, its Share
// of all GPU time, and the kernels that hold most of it (Top, each with its
// share of all GPU time).
type Uncategorized struct {
	TotalMs float64      `json:"total_ms"`
	Share   float64      `json:"share"`
	Top     []KernelTime `json:"top"`
}

// uncategorizedTop is how many uncategorized kernel names are listed.
const uncategorizedTop = 5

// GPUDevice is one device's busy and idle time over its active window,
// from its first op's start to its last op's end. Busy is the union of its
// ops' intervals (kernels, memcpy, memset, whole-graph executions;
// synchronization records are CPU-side waits and count for nothing), so
// concurrent streams are not double-counted. Idle is the rest of the
// window, split by cause: IdleNoWorkMs + IdleWaitingCPUMs + IdleUnknownMs =
// IdleMs, and BusyMs + IdleMs = WindowMs, exactly (in ns before rounding).
type GPUDevice struct {
	// Host is the machine (or, when the input names none, the capture) the
	// device belongs to: devices are (host, device), never an index alone.
	Host        string  `json:"host,omitempty"`
	Device      int16   `json:"device"`
	Name        string  `json:"name,omitempty"`
	Ops         int     `json:"ops"`
	StartNs     int64   `json:"start_ns"`
	EndNs       int64   `json:"end_ns"`
	WindowMs    float64 `json:"window_ms"`
	BusyMs      float64 `json:"busy_ms"`
	IdleMs      float64 `json:"idle_ms"`
	Utilization float64 `json:"utilization"`
	Gaps        int     `json:"gaps"`
	// IdleNoWorkMs is idle time while the launching thread was not inside
	// any CUDA API call: nothing had been asked of the GPU.
	IdleNoWorkMs float64 `json:"idle_no_work_ms"`
	// IdleWaitingCPUMs is idle time while the launching thread was inside
	// a CUDA API call (a launch, a copy, a synchronization): the GPU waited
	// on the CPU.
	IdleWaitingCPUMs float64 `json:"idle_waiting_cpu_ms"`
	// IdleUnknownMs is idle time before ops whose launching thread is
	// unknown (no CUDA API calls in the input, or ops without a launch).
	IdleUnknownMs float64 `json:"idle_unknown_ms"`
}

// GPUStream is one stream's busy time (the union of its ops) and its share
// of its device's window.
type GPUStream struct {
	Host        string  `json:"host,omitempty"`
	Device      int16   `json:"device"`
	Pid         uint32  `json:"pid"`
	Stream      uint32  `json:"stream"`
	Ops         int     `json:"ops"`
	BusyMs      float64 `json:"busy_ms"`
	Utilization float64 `json:"utilization"`
}

// IdleCause says why a device sat idle.
type IdleCause uint8

const (
	// IdleNoWork: the launching thread was mostly outside the CUDA API.
	IdleNoWork IdleCause = iota
	// IdleWaitingCPU: the launching thread was mostly inside a CUDA API call.
	IdleWaitingCPU
	// IdleUnknown: no launching thread is known.
	IdleUnknown
)

var idleCauseNames = [...]string{"no_work", "waiting_cpu", "unknown"}

// String is the cause as the JSON report writes it.
func (c IdleCause) String() string {
	if int(c) < len(idleCauseNames) {
		return idleCauseNames[c]
	}
	return "cause(" + strconv.Itoa(int(c)) + ")"
}

// MarshalText writes the cause's name.
func (c IdleCause) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// IdleGap is one interval inside a device's window where it ran nothing.
// The launching thread is the one that launched the op ending the gap (or,
// failing that, the op before it); WaitingCPUMs is the part of the gap that
// thread spent inside CUDA API calls, and Cause is waiting_cpu when that is
// at least half the gap.
type IdleGap struct {
	Host         string    `json:"host,omitempty"`
	Device       int16     `json:"device"`
	StartNs      int64     `json:"start_ns"`
	DurationMs   float64   `json:"duration_ms"`
	Cause        IdleCause `json:"cause"`
	WaitingCPUMs float64   `json:"waiting_cpu_ms"`
	Pid          uint32    `json:"pid,omitempty"`
	Tid          uint32    `json:"tid,omitempty"`
	// API is the CUDA call that covered most of the gap, if any.
	API string `json:"api,omitempty"`
	// NextOp is the op that ended the gap.
	NextOp string `json:"next_op"`
}

// KernelTime is the GPU time of the kernels of one name (the short name
// where the input gives one).
type KernelTime struct {
	Name     string  `json:"name"`
	Category string  `json:"category"`
	Count    int     `json:"count"`
	TotalMs  float64 `json:"total_ms"`
	AvgUs    float64 `json:"avg_us"`
	// Share is of all kernel time.
	Share float64 `json:"share"`
}

// CategoryTime is the GPU time of one kernel category: the sum of its ops'
// durations (kernels on concurrent streams each count), and its share of
// the sum over all categories.
type CategoryTime struct {
	Name    string  `json:"name"`
	TotalMs float64 `json:"total_ms"`
	Share   float64 `json:"share"`
}

// GPUMemory is one device's memory use from allocation events: live bytes
// over time (device, managed and array memory; pinned and pageable host
// memory is left out), the peak, and a fragmentation indicator.
//
// Fragmentation at an instant is 1 − live bytes / address extent, where the
// extent runs from the lowest live allocation's address to the highest
// live allocation's end: 0 when the live allocations are contiguous,
// approaching 1 when a few allocations pin a large, mostly free range (the
// pattern that makes a caching allocator's reserved memory grow although
// live memory does not). It is an indicator of address-space holes, not of
// the driver's physical fragmentation, which the events do not show.
type GPUMemory struct {
	Host      string `json:"host,omitempty"`
	Device    int16  `json:"device"`
	Allocs    int    `json:"allocs"`
	Frees     int    `json:"frees"`
	PeakBytes int64  `json:"peak_bytes"`
	PeakNs    int64  `json:"peak_ns"`
	EndBytes  int64  `json:"end_bytes"`
	// UnmatchedFrees are releases of allocations made before the capture.
	UnmatchedFrees int `json:"unmatched_frees,omitempty"`
	// FragmentationAtPeak is the indicator when live bytes peaked;
	// MaxFragmentation its largest value while live bytes were at least half
	// the peak (below that, a small remainder in a large range says little).
	FragmentationAtPeak float64 `json:"fragmentation_at_peak"`
	MaxFragmentation    float64 `json:"max_fragmentation"`
	// Series is live bytes over time, at most GPUOptions.MemoryPoints points,
	// each the largest value within its slice of the time range.
	Series []MemoryPoint `json:"series"`
}

// MemoryPoint is live bytes at an instant.
type MemoryPoint struct {
	TimeNs int64 `json:"t_ns"`
	Bytes  int64 `json:"bytes"`
}

func nsMs(ns int64) float64 { return float64(ns) / 1e6 }

func fraction(part, whole int64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// AnalyzeGPU computes the GPU section from a trace (GPU ops sorted by start,
// as Validate leaves them). It is a pure computation: sort and sweep, no
// all-pairs joins.
func AnalyzeGPU(t *ingest.Trace, opts GPUOptions) *GPU {
	return analyzeGPU(t, opts, t.LaunchCalls(), gpuHosts(t, nil))
}

// analyzeGPU is AnalyzeGPU with the launch join (t.LaunchCalls) already made
// and the sources' hosts resolved.
func analyzeGPU(t *ingest.Trace, opts GPUOptions, calls []int32, hosts hostMap) *GPU {
	opts = opts.withDefaults()
	g := &GPU{Options: opts, Hosts: hosts.list(t), Devices: []GPUDevice{}, Streams: []GPUStream{}, IdleGaps: []IdleGap{}, TopKernels: []KernelTime{}}
	g.sourceHosts = make([]string, len(t.Sources))
	for i := range g.sourceHosts {
		g.sourceHosts[i] = hosts.label(hosts.of(ingest.SourceID(i)))
	}
	threads := newThreadCalls(t)
	cats := NewCategoryCache(t)

	names := map[devKey]string{}
	for _, d := range t.Devices {
		names[devKey{hosts.of(d.Source), d.ID}] = d.Name
	}
	type devState struct {
		dev  GPUDevice
		open bool
		end  int64 // end of the current busy interval
		last int   // op that set end
		// idle time by cause, ns
		noWork, cpu, unknown int64
	}
	devs := map[devKey]*devState{}
	type streamKey struct {
		dev         devKey
		pid, stream uint32
	}
	type streamState struct {
		ops       int
		busy, end int64
		open      bool
	}
	streams := map[streamKey]*streamState{}
	gaps := newLongestGaps()
	var catTotal [NumKernelCategories]int64
	type kernelAgg struct {
		count int
		total int64
		cat   KernelCategory
	}
	kernels := map[ingest.StrID]*kernelAgg{}
	var kernelTotal int64

	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		if !o.Busy() {
			continue
		}
		d := o.End - o.Start
		cat := cats.Of(o)
		catTotal[cat] += d
		if o.Kind == ingest.OpKernel {
			name := o.ShortName
			if name == 0 {
				name = o.Name
			}
			k := kernels[name]
			if k == nil {
				k = &kernelAgg{cat: cat}
				kernels[name] = k
			}
			k.count++
			k.total += d
			kernelTotal += d
		}

		dk := devKey{hosts.of(o.Source), o.Device}
		ds := devs[dk]
		if ds == nil {
			ds = &devState{dev: GPUDevice{Host: hosts.label(dk.host), Device: o.Device, Name: names[dk], StartNs: o.Start}}
			devs[dk] = ds
		}
		ds.dev.Ops++
		switch {
		case !ds.open:
			ds.open, ds.end, ds.last = true, o.End, i
		case o.Start > ds.end:
			// A gap: the device ran nothing in [end, o.Start).
			gap := idleGapOf(t, calls, threads, ds.last, i, ds.end, o.Start)
			ds.dev.Gaps++
			switch gap.cause {
			case IdleUnknown:
				ds.unknown += gap.len()
			default:
				ds.cpu += gap.covered
				ds.noWork += gap.len() - gap.covered
			}
			gaps.offer(gap, opts.TopGaps)
			ds.end, ds.last = o.End, i
		default:
			if o.End > ds.end {
				ds.end, ds.last = o.End, i
			}
		}
		ds.dev.EndNs = max(ds.dev.EndNs, o.End)

		sk := streamKey{dk, o.Pid, o.Stream}
		ss := streams[sk]
		if ss == nil {
			ss = &streamState{}
			streams[sk] = ss
		}
		ss.ops++
		switch {
		case !ss.open || o.Start >= ss.end:
			ss.busy += d
			ss.end, ss.open = o.End, true
		case o.End > ss.end:
			ss.busy += o.End - ss.end
			ss.end = o.End
		}
	}

	for _, ds := range devs {
		dv := &ds.dev
		window := dv.EndNs - dv.StartNs
		idle := ds.noWork + ds.cpu + ds.unknown
		busy := window - idle
		dv.WindowMs, dv.BusyMs, dv.IdleMs = nsMs(window), nsMs(busy), nsMs(idle)
		dv.IdleNoWorkMs, dv.IdleWaitingCPUMs, dv.IdleUnknownMs = nsMs(ds.noWork), nsMs(ds.cpu), nsMs(ds.unknown)
		dv.Utilization = fraction(busy, window)
		g.Devices = append(g.Devices, *dv)
	}
	slices.SortFunc(g.Devices, func(a, b GPUDevice) int { return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Device, b.Device)) })
	for k, ss := range streams {
		window := int64(0)
		if ds := devs[k.dev]; ds != nil {
			window = ds.dev.EndNs - ds.dev.StartNs
		}
		g.Streams = append(g.Streams, GPUStream{Host: hosts.label(k.dev.host), Device: k.dev.dev, Pid: k.pid, Stream: k.stream, Ops: ss.ops,
			BusyMs: nsMs(ss.busy), Utilization: fraction(ss.busy, window)})
	}
	slices.SortFunc(g.Streams, func(a, b GPUStream) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Device, b.Device), cmp.Compare(a.Pid, b.Pid), cmp.Compare(a.Stream, b.Stream))
	})

	found := gaps.sorted()
	for i := range found {
		gp := &found[i]
		next := &t.GPUOps[gp.next]
		ig := IdleGap{Host: hosts.label(hosts.of(next.Source)), Device: next.Device, StartNs: gp.start, DurationMs: nsMs(gp.len()), Cause: gp.cause,
			WaitingCPUMs: nsMs(gp.covered), Pid: gp.thread.pid, Tid: gp.thread.tid, NextOp: opName(t, &t.GPUOps[gp.next])}
		if gp.cause != IdleUnknown {
			if c := threads.longest(gp.thread, gp.start, gp.end); c >= 0 {
				ig.API = t.Str(t.APICalls[c].Name)
			}
		}
		g.IdleGaps = append(g.IdleGaps, ig)
	}

	var catSum int64
	for _, v := range catTotal {
		catSum += v
	}
	g.KernelCategories = make([]CategoryTime, NumKernelCategories)
	for c := range NumKernelCategories {
		g.KernelCategories[c] = CategoryTime{Name: KernelCategory(c).String(), TotalMs: nsMs(catTotal[c]), Share: fraction(catTotal[c], catSum)}
	}

	g.Uncategorized = Uncategorized{TotalMs: nsMs(catTotal[CategoryOther]), Share: fraction(catTotal[CategoryOther], catSum), Top: []KernelTime{}}
	for name, k := range kernels {
		if k.cat == CategoryOther {
			g.Uncategorized.Top = append(g.Uncategorized.Top, KernelTime{Name: t.Str(name), Category: k.cat.String(), Count: k.count,
				TotalMs: nsMs(k.total), AvgUs: float64(k.total) / float64(k.count) / 1e3, Share: fraction(k.total, catSum)})
		}
	}
	slices.SortFunc(g.Uncategorized.Top, func(a, b KernelTime) int {
		return cmp.Or(cmp.Compare(b.TotalMs, a.TotalMs), cmp.Compare(a.Name, b.Name))
	})
	if len(g.Uncategorized.Top) > uncategorizedTop {
		g.Uncategorized.Top = g.Uncategorized.Top[:uncategorizedTop]
	}
	for name, k := range kernels {
		g.TopKernels = append(g.TopKernels, KernelTime{Name: t.Str(name), Category: k.cat.String(), Count: k.count,
			TotalMs: nsMs(k.total), AvgUs: float64(k.total) / float64(k.count) / 1e3, Share: fraction(k.total, kernelTotal)})
	}
	slices.SortFunc(g.TopKernels, func(a, b KernelTime) int {
		return cmp.Or(cmp.Compare(b.TotalMs, a.TotalMs), cmp.Compare(a.Name, b.Name))
	})
	if len(g.TopKernels) > opts.TopKernels {
		g.TopKernels = g.TopKernels[:opts.TopKernels]
	}
	g.Memory = memoryUsage(t, opts.MemoryPoints, hosts)
	return g
}

// opName is an op's display name: the short name of a kernel when known.
func opName(t *ingest.Trace, o *ingest.GPUOp) string {
	if o.ShortName != 0 {
		return t.Str(o.ShortName)
	}
	return t.Str(o.Name)
}

// threadKey is a CPU thread.
type threadKey struct{ pid, tid uint32 }

// gap is an idle interval with what is known of its cause.
type gap struct {
	start, end int64
	next       int // the op that ended the gap
	thread     threadKey
	covered    int64 // ns of the gap the thread spent inside CUDA API calls
	cause      IdleCause
}

func (g *gap) len() int64 { return g.end - g.start }

// idleGapOf describes the gap [start, end) that op next ended; prev is the
// op whose end opened it.
func idleGapOf(t *ingest.Trace, calls []int32, threads *threadCalls, prev, next int, start, end int64) gap {
	g := gap{start: start, end: end, next: next, cause: IdleUnknown}
	c := calls[next]
	if c < 0 {
		c = calls[prev]
	}
	if c < 0 {
		return g
	}
	s := &t.APICalls[c]
	g.thread = threadKey{s.Pid, s.Tid}
	g.covered = threads.covered(g.thread, start, end)
	g.cause = IdleNoWork
	if 2*g.covered >= g.len() {
		g.cause = IdleWaitingCPU
	}
	return g
}

// threadCalls holds, per thread, its CUDA API calls in start order and the
// union of their intervals (a runtime call and the driver calls it makes
// overlap).
type threadCalls struct {
	t     *ingest.Trace
	calls map[threadKey][]int32
	union map[threadKey][][2]int64
}

func newThreadCalls(t *ingest.Trace) *threadCalls {
	tc := &threadCalls{t: t, calls: map[threadKey][]int32{}, union: map[threadKey][][2]int64{}}
	for i := range t.APICalls {
		s := &t.APICalls[i]
		k := threadKey{s.Pid, s.Tid}
		tc.calls[k] = append(tc.calls[k], int32(i))
		u := tc.union[k]
		if n := len(u); n > 0 && s.Start <= u[n-1][1] {
			u[n-1][1] = max(u[n-1][1], s.End)
		} else {
			u = append(u, [2]int64{s.Start, s.End})
		}
		tc.union[k] = u
	}
	return tc
}

// covered is how much of [start, end) the thread spent inside API calls.
func (tc *threadCalls) covered(k threadKey, start, end int64) int64 {
	u := tc.union[k]
	i, _ := slices.BinarySearchFunc(u, start, func(iv [2]int64, s int64) int { return cmp.Compare(iv[1], s+1) })
	var n int64
	for ; i < len(u) && u[i][0] < end; i++ {
		n += max(0, min(u[i][1], end)-max(u[i][0], start))
	}
	return n
}

// longest returns the API call of the thread that overlaps [start, end)
// the most, or -1.
func (tc *threadCalls) longest(k threadKey, start, end int64) int32 {
	best, bestLen := int32(-1), int64(0)
	for _, c := range tc.calls[k] {
		s := &tc.t.APICalls[c]
		if s.Start >= end {
			break
		}
		if l := min(s.End, end) - max(s.Start, start); l > bestLen {
			best, bestLen = c, l
		}
	}
	return best
}

// minHeap is a container/heap over a slice, ordered by less.
type minHeap[T any] struct {
	items []T
	less  func(a, b T) bool
}

func (h *minHeap[T]) Len() int           { return len(h.items) }
func (h *minHeap[T]) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *minHeap[T]) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *minHeap[T]) Push(x any)         { h.items = append(h.items, x.(T)) }
func (h *minHeap[T]) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}

// longestGaps keeps the longest gaps seen: a min-heap on length, so the
// shortest kept is the one to replace.
type longestGaps struct{ h minHeap[gap] }

func newLongestGaps() *longestGaps {
	return &longestGaps{minHeap[gap]{less: func(a, b gap) bool {
		return a.len() < b.len() || (a.len() == b.len() && a.start > b.start)
	}}}
}

func (l *longestGaps) offer(g gap, limit int) {
	if l.h.Len() < limit {
		heap.Push(&l.h, g)
		return
	}
	if l.h.items[0].len() < g.len() {
		l.h.items[0] = g
		heap.Fix(&l.h, 0)
	}
}

// sorted returns the gaps longest first (ties: earlier first).
func (l *longestGaps) sorted() []gap {
	out := slices.Clone(l.h.items)
	slices.SortFunc(out, func(a, b gap) int { return cmp.Or(cmp.Compare(b.len(), a.len()), cmp.Compare(a.start, b.start)) })
	return out
}

// isDeviceMemory reports whether a memory event is about memory on the GPU.
func isDeviceMemory(e *ingest.MemoryEvent) bool {
	return e.Device >= 0 && e.Kind != ingest.MemPinned && e.Kind != ingest.MemPageable
}

// memoryUsage replays allocation events per device.
func memoryUsage(t *ingest.Trace, points int, hosts hostMap) []GPUMemory {
	type liveKey struct {
		pid  uint32
		addr uint64
	}
	type alloc struct {
		bytes int64
		gen   int64
	}
	type devMem struct {
		m         GPUMemory
		live      map[liveKey]alloc
		liveBytes int64
		gen       int64
		lows      addrHeap // allocation starts, min first
		highs     addrHeap // allocation ends, max first (negated)
		trace     []MemoryPoint
		frag      []float64
	}
	devs := map[devKey]*devMem{}
	for i := range t.MemoryEvents {
		e := &t.MemoryEvents[i]
		if !isDeviceMemory(e) {
			continue
		}
		dk := devKey{hosts.of(e.Source), e.Device}
		dm := devs[dk]
		if dm == nil {
			dm = &devMem{m: GPUMemory{Host: hosts.label(dk.host), Device: e.Device}, live: map[liveKey]alloc{}, lows: newAddrHeap(), highs: newAddrHeap()}
			devs[dk] = dm
		}
		k := liveKey{e.Pid, e.Address}
		switch e.Op {
		case ingest.MemAlloc:
			dm.m.Allocs++
			if old, ok := dm.live[k]; ok { // an address reused without its free: replace
				dm.liveBytes -= old.bytes
			}
			dm.gen++
			a := alloc{int64(e.Bytes), dm.gen}
			dm.live[k] = a
			dm.liveBytes += a.bytes
			heap.Push(&dm.lows.minHeap, addrEntry{int64(e.Address), k.pid, e.Address, a.gen})
			heap.Push(&dm.highs.minHeap, addrEntry{-int64(e.Address + e.Bytes), k.pid, e.Address, a.gen})
		case ingest.MemFree:
			old, ok := dm.live[k]
			if !ok {
				dm.m.UnmatchedFrees++
				continue
			}
			dm.m.Frees++
			dm.liveBytes -= old.bytes
			delete(dm.live, k)
		}
		isLive := func(x addrEntry) bool {
			a, ok := dm.live[liveKey{x.pid, x.addr}]
			return ok && a.gen == x.gen
		}
		frag := 0.0
		if dm.liveBytes > 0 {
			lo, lok := dm.lows.top(isLive)
			hi, hok := dm.highs.top(isLive)
			if lok && hok {
				if extent := -hi - lo; extent > 0 {
					frag = max(0, 1-float64(dm.liveBytes)/float64(extent))
				}
			}
		}
		dm.trace = append(dm.trace, MemoryPoint{e.Time, dm.liveBytes})
		dm.frag = append(dm.frag, frag)
		if dm.liveBytes > dm.m.PeakBytes {
			dm.m.PeakBytes, dm.m.PeakNs, dm.m.FragmentationAtPeak = dm.liveBytes, e.Time, frag
		}
	}
	var out []GPUMemory
	for _, dm := range devs {
		for i, p := range dm.trace {
			if 2*p.Bytes >= dm.m.PeakBytes && dm.frag[i] > dm.m.MaxFragmentation {
				dm.m.MaxFragmentation = dm.frag[i]
			}
		}
		dm.m.EndBytes = dm.liveBytes
		dm.m.Series = downsample(dm.trace, points)
		out = append(out, dm.m)
	}
	slices.SortFunc(out, func(a, b GPUMemory) int { return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Device, b.Device)) })
	return out
}

// downsample keeps at most n points: the time range is cut into n equal
// slices and each slice keeps its largest value, so peaks survive.
func downsample(pts []MemoryPoint, n int) []MemoryPoint {
	if len(pts) <= n {
		return slices.Clone(pts)
	}
	t0, t1 := pts[0].TimeNs, pts[len(pts)-1].TimeNs
	width := max(1, int64(math.Ceil(float64(t1-t0+1)/float64(n))))
	var out []MemoryPoint
	for _, p := range pts {
		slot := (p.TimeNs - t0) / width
		if k := len(out); k > 0 && (out[k-1].TimeNs-t0)/width == slot {
			if p.Bytes > out[k-1].Bytes {
				out[k-1] = p
			}
			continue
		}
		out = append(out, p)
	}
	return out
}

// addrEntry is a live allocation's start (or negated end) in a heap with
// lazy deletion: entries of freed allocations are dropped when they surface.
type addrEntry struct {
	key  int64
	pid  uint32
	addr uint64
	gen  int64
}

// addrHeap is a min-heap of addrEntry by key.
type addrHeap struct{ minHeap[addrEntry] }

func newAddrHeap() addrHeap {
	return addrHeap{minHeap[addrEntry]{less: func(a, b addrEntry) bool { return a.key < b.key }}}
}

// top returns the smallest key among live entries, dropping dead ones.
func (h *addrHeap) top(live func(addrEntry) bool) (int64, bool) {
	for h.Len() > 0 {
		if live(h.items[0]) {
			return h.items[0].key, true
		}
		heap.Pop(&h.minHeap)
	}
	return 0, false
}
