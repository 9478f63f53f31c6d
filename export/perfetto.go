package export

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/llmprof/llmprof/ingest"
)

// Placement puts an OTLP span on a Perfetto process (Group) and, within it,
// a family of async tracks (Track): spans that share a placement nest under
// their parents, and concurrent ones spread over parallel lanes.
type Placement struct {
	Group string
	Track string
}

// Grouping says where OTLP span t.Spans[i] is drawn. ok=false lets the span
// take its parent's placement (so a request's stages follow the request), or
// ByService's when no ancestor has one.
type Grouping func(t *ingest.Trace, i int) (p Placement, ok bool)

// ByService groups OTLP spans by their resource's service.name, one track
// family per trace. It is the default Grouping.
func ByService(t *ingest.Trace, i int) (Placement, bool) {
	s := &t.Spans[i]
	service := "unknown service"
	if s.Resource >= 0 && int(s.Resource) < len(t.Resources) {
		if v, ok := t.AttrString(t.Resources[s.Resource].Attrs, "service.name"); ok && v != "" {
			service = v
		}
	}
	return Placement{Group: service, Track: "trace " + s.TraceID.String()}, true
}

// BySpanID places the listed spans (for example each request span under its
// tenant, with the request ID as its track); every other span inherits from
// its nearest listed ancestor, else falls back to ByService.
func BySpanID(m map[ingest.SpanID]Placement) Grouping {
	return func(t *ingest.Trace, i int) (Placement, bool) {
		p, ok := m[t.Spans[i].ID]
		return p, ok
	}
}

// Link draws a flow arrow from span t.Spans[From] to span t.Spans[To], or to
// GPU op t.GPUOps[To] when ToOp is set: an OTLP span to the NVTX range that
// mirrors it, a request to its engine steps, a step to its kernels.
type Link struct {
	From int
	To   int
	ToOp bool
}

// PerfettoOptions tune WritePerfetto.
type PerfettoOptions struct {
	// Grouping places OTLP spans; nil means ByService.
	Grouping Grouping
	// Links are flow arrows to draw besides the launch arrows (each CUDA API
	// call to the GPU ops it launched), which are always drawn.
	Links []Link
	// NoSpanEvents leaves out OTLP span events (token events can be
	// numerous).
	NoSpanEvents bool
	// Metadata is written as the trace's "otherData" object (Chrome's trace
	// viewer shows it under Metadata): the alignment table, the inputs.
	Metadata map[string]any
	// Stages are request stages no span shows (placed from latency
	// attributes: attribution.Request.DerivedSegments), drawn as async
	// slices on a row of their own beside their request span, so that a
	// timeline of such a request shows its queue, prefill and decode.
	Stages []StageSlice
}

// StageSlice is one derived stage of the request span Span (an index into
// the trace's spans): Name over [From, To). The stages of one request must
// not overlap.
type StageSlice struct {
	Span     int
	Name     string
	From, To int64
}

// PerfettoStats describes what was written.
type PerfettoStats struct {
	Events int `json:"events"`
	// LaunchFlows counts arrows from an API call to a GPU op; LinkFlows the
	// caller's links drawn.
	LaunchFlows int `json:"launch_flows"`
	LinkFlows   int `json:"link_flows"`
	// LinksSkipped counts links not drawn: an end out of range, an event
	// that already carries another arrow, or a target that starts before a
	// source with several targets (Perfetto binds arrows in time order).
	LinksSkipped int `json:"links_skipped"`
	// OverflowLanes counts extra tracks opened for slices that do not nest.
	OverflowLanes int `json:"overflow_lanes"`
	// BaseNs is the Unix ns instant that ts 0 stands for.
	BaseNs int64 `json:"base_ns"`
}

// Process sort order: requests on top, then CPU processes, then GPUs, then
// counters without a home.
const (
	sortOTLP = iota
	sortCPU
	sortGPU
	sortCounters
)

// firstSyntheticID starts the pids and tids invented for groups, GPUs and
// overflow lanes, above any Linux pid (pid_max ≤ 4194304).
const firstSyntheticID = 100_000_000

// flowIDBase starts the v2 flow (bind_id) numbering, far from the small
// numbers Perfetto assigns to v1 flows internally.
const flowIDBase = uint64(1) << 40

// WritePerfetto writes t — normally merged and aligned — as Chrome trace JSON
// that ui.perfetto.dev and chrome://tracing open: OTLP spans as async slices
// grouped by Grouping; each CPU thread with its NVTX ranges and CUDA API
// calls; each GPU's streams with kernels, copies and sets; samples as
// counters; flow arrows from each API call to the GPU ops it launched and
// along opts.Links; process and thread names. Events are streamed to w as
// they are produced; memory holds only per-track index lists. Timestamps are
// µs (ns precision) after Stats.BaseNs, which is in otherData.
func WritePerfetto(w io.Writer, t *ingest.Trace, opts PerfettoOptions) (PerfettoStats, error) {
	if opts.Grouping == nil {
		opts.Grouping = ByService
	}
	x := &exporter{t: t, opts: opts, nextID: firstSyntheticID, usedPid: map[int64]bool{}, usedTid: map[int64]bool{}}
	x.stats.BaseNs = baseTime(t)
	x.ew = newEventWriter(w, x.stats.BaseNs)
	if err := x.header(w); err != nil {
		return x.stats, err
	}
	x.layout()
	x.writeMetadata()
	x.writeOTLP()
	x.writeThreads()
	x.writeGPU()
	x.writeCounters()
	x.stats.Events = x.ew.events
	if x.ew.err == nil {
		_, x.ew.err = x.ew.w.WriteString("\n]}\n")
	}
	if x.ew.err == nil {
		x.ew.err = x.ew.w.Flush()
	}
	return x.stats, x.ew.err
}

// baseTime is the earliest timestamp, floored to a whole second.
func baseTime(t *ingest.Trace) int64 {
	first, ok := int64(0), false
	see := func(v int64) {
		if !ok || v < first {
			first, ok = v, true
		}
	}
	for i := range t.Spans {
		see(t.Spans[i].Start)
	}
	for i := range t.APICalls {
		see(t.APICalls[i].Start)
	}
	for i := range t.GPUOps {
		see(t.GPUOps[i].Start)
	}
	for i := range t.Samples {
		see(t.Samples[i].Time)
	}
	const s = int64(1e9)
	if first >= 0 {
		return first / s * s
	}
	return (first - s + 1) / s * s
}

type exporter struct {
	t     *ingest.Trace
	opts  PerfettoOptions
	ew    *eventWriter
	stats PerfettoStats
	args  argWriter

	nextID           int64
	usedPid, usedTid map[int64]bool
	procs            []proc
	procKeys         []procKey
	procIdx          map[procKey]int

	// cpu is every span and API call in the trace's order
	// (ingest.CPURecords): a thread track's idx are positions in it, and
	// a launch arrow's ID is its call's position + 1.
	cpu []ingest.CPURef
	// callPos is each API call's position in cpu.
	callPos []int32
	// Thread tracks of CPU-side spans and API calls, GPU streams, OTLP tracks.
	threads []*threadTrack
	streams []*threadTrack
	tracks  []*otlpTrack

	// Launch flows: the API call (index into APICalls) of each GPU op's
	// (source, pid, correlation), and which calls launched something.
	calls       map[callKey]int32
	anyCalls    map[anyCallKey]int32
	callSources []bool // sources that have API calls
	launched    []bool
	cookies     uint64

	// stageRows are the pid and cookie of each request with opts.Stages,
	// by its span.
	stageRows map[int]stageRow

	// Caller links, by the index of the event they bind to.
	outSpan map[int]uint64
	inSpan  map[int]uint64
	inOp    map[int]uint64
}

type stageRow struct {
	proc   int
	cookie uint64
}

type procKey struct {
	kind  int // sortOTLP, sortCPU, sortGPU, sortCounters
	src   ingest.SourceID
	id    int64 // pid or device
	group string
}

type proc struct {
	pid  int64
	name string
	sort int
}

type callKey struct {
	src       ingest.SourceID
	pid, corr uint32
}

type anyCallKey struct{ pid, corr uint32 }

// threadTrack is one CPU thread or one GPU stream: its records in draw order
// and the tid of each lane.
type threadTrack struct {
	proc int
	name string
	idx  []int32 // positions in cpu, or ops, sorted by start then longer first
	lane []int32
	tids []int64
}

// otlpTrack is one placement's spans.
type otlpTrack struct {
	proc    int
	idx     []int32
	parent  []int32 // position in idx of the parent span, or -1
	lane    []int32
	cookies []uint64
}

func (x *exporter) header(w io.Writer) error {
	meta := map[string]any{"generator": "llmprof export --perfetto", "base_ns": x.stats.BaseNs}
	for k, v := range x.opts.Metadata {
		meta[k] = v
	}
	other, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("perfetto export: metadata: %w", err)
	}
	bw := x.ew.w
	bw.WriteString(`{"displayTimeUnit":"ns","otherData":`)
	bw.Write(other)
	_, err = bw.WriteString(",\n\"traceEvents\":[\n")
	return err
}

// allocID returns want when it is free and positive, else a fresh synthetic
// ID, and marks it used.
func (x *exporter) allocID(used map[int64]bool, want int64) int64 {
	if want > 0 && want < firstSyntheticID && !used[want] {
		used[want] = true
		return want
	}
	for used[x.nextID] {
		x.nextID++
	}
	id := x.nextID
	used[id] = true
	x.nextID++
	return id
}

func (x *exporter) process(k procKey, name string, realPid int64) int {
	if i, ok := x.procIdx[k]; ok {
		return i
	}
	p := proc{pid: x.allocID(x.usedPid, realPid), name: name, sort: k.kind}
	x.procs = append(x.procs, p)
	x.procKeys = append(x.procKeys, k)
	x.procIdx[k] = len(x.procs) - 1
	return len(x.procs) - 1
}

// layout decides processes, threads, lanes and flows before anything is
// drawn (metadata events come first).
func (x *exporter) layout() {
	x.procIdx = map[procKey]int{}
	x.layoutOTLP()
	x.layoutThreads()
	x.layoutGPU()
	x.layoutCounters()
	x.layoutLaunches()
	x.layoutLinks()
}

func (x *exporter) layoutOTLP() {
	t := x.t
	type spanKey struct {
		trace ingest.TraceID
		span  ingest.SpanID
	}
	byID := map[spanKey]int32{}
	for i := range t.Spans {
		if s := &t.Spans[i]; s.Origin == ingest.OriginOTLP && !s.ID.IsZero() {
			byID[spanKey{s.TraceID, s.ID}] = int32(i)
		}
	}
	parentOf := func(i int) int32 {
		s := &t.Spans[i]
		if s.Parent.IsZero() {
			return -1
		}
		if p, ok := byID[spanKey{s.TraceID, s.Parent}]; ok {
			return p
		}
		return -1
	}
	// Resolve placements, inheriting along the parent chain.
	const unresolved, resolving = -1, -2
	place := make(map[int32]int, 0)
	placements := []Placement{}
	placeIdx := map[Placement]int{}
	var resolve func(i int32) int
	resolve = func(i int32) int {
		if v, ok := place[i]; ok {
			if v == resolving {
				return unresolved // a parent cycle: fall back below
			}
			return v
		}
		place[i] = resolving
		p, ok := x.opts.Grouping(t, int(i))
		v := unresolved
		if ok {
			v = internPlacement(&placements, placeIdx, p)
		} else if par := parentOf(int(i)); par >= 0 {
			v = resolve(par)
		}
		if v == unresolved {
			p, _ = ByService(t, int(i))
			v = internPlacement(&placements, placeIdx, p)
		}
		place[i] = v
		return v
	}
	trackOf := map[int]*otlpTrack{}
	var order []int
	for i := range t.Spans {
		if t.Spans[i].Origin != ingest.OriginOTLP {
			continue
		}
		pl := resolve(int32(i))
		tr := trackOf[pl]
		if tr == nil {
			p := placements[pl]
			tr = &otlpTrack{proc: x.process(procKey{kind: sortOTLP, group: p.Group}, p.Group, 0)}
			trackOf[pl] = tr
			order = append(order, pl)
		}
		tr.idx = append(tr.idx, int32(i))
	}
	for _, pl := range order {
		tr := trackOf[pl]
		sortByStart(t, tr.idx)
		pos := make(map[int32]int32, len(tr.idx))
		for j, i := range tr.idx {
			pos[i] = int32(j)
		}
		items := make([]interval, len(tr.idx))
		tr.parent = make([]int32, len(tr.idx))
		for j, i := range tr.idx {
			s := &t.Spans[i]
			par := int32(-1)
			if p := parentOf(int(i)); p >= 0 {
				if q, ok := pos[p]; ok && q < int32(j) {
					par = q
				}
			}
			tr.parent[j] = par
			items[j] = interval{start: s.Start, end: s.End, parent: par}
		}
		var n int
		tr.lane, n = packLanes(items, nestParent)
		x.stats.OverflowLanes += n - 1
		tr.cookies = make([]uint64, n)
		for l := range tr.cookies {
			x.cookies++
			tr.cookies[l] = x.cookies
		}
		x.tracks = append(x.tracks, tr)
	}
	x.stageRows = map[int]stageRow{}
	for _, st := range x.opts.Stages {
		if st.Span < 0 || st.Span >= len(t.Spans) || t.Spans[st.Span].Origin != ingest.OriginOTLP {
			continue
		}
		if _, ok := x.stageRows[st.Span]; !ok {
			x.cookies++
			x.stageRows[st.Span] = stageRow{proc: trackOf[resolve(int32(st.Span))].proc, cookie: x.cookies}
		}
	}
}

func internPlacement(list *[]Placement, idx map[Placement]int, p Placement) int {
	if i, ok := idx[p]; ok {
		return i
	}
	*list = append(*list, p)
	idx[p] = len(*list) - 1
	return len(*list) - 1
}

// sortByStart orders span indices by start, then longer first, then index.
func sortByStart(t *ingest.Trace, idx []int32) {
	slices.SortFunc(idx, func(a, b int32) int {
		sa, sb := &t.Spans[a], &t.Spans[b]
		return cmp.Or(cmp.Compare(sa.Start, sb.Start), cmp.Compare(sb.End, sa.End), cmp.Compare(a, b))
	})
}

func sortOpsByStart(t *ingest.Trace, idx []int32) {
	slices.SortFunc(idx, func(a, b int32) int {
		oa, ob := &t.GPUOps[a], &t.GPUOps[b]
		return cmp.Or(cmp.Compare(oa.Start, ob.Start), cmp.Compare(ob.End, oa.End), cmp.Compare(a, b))
	})
}

func (x *exporter) multiSource(kind func(i int) (ingest.SourceID, bool), n int) bool {
	first, seen := ingest.SourceID(0), false
	for i := range n {
		src, ok := kind(i)
		if !ok {
			continue
		}
		if seen && src != first {
			return true
		}
		first, seen = src, true
	}
	return false
}

func (x *exporter) layoutThreads() {
	t := x.t
	type threadKey struct {
		src      ingest.SourceID
		pid, tid uint32
	}
	x.cpu = slices.Collect(t.CPURecords())
	x.callPos = make([]int32, len(t.APICalls))
	for p, r := range x.cpu {
		if c, ok := r.Call(); ok {
			x.callPos[c] = int32(p)
		}
	}
	keyOf := func(p int) (threadKey, bool) {
		if c, ok := x.cpu[p].Call(); ok {
			a := &t.APICalls[c]
			return threadKey{a.Source, a.Pid, a.Tid}, true
		}
		i, _ := x.cpu[p].Span()
		s := &t.Spans[i]
		return threadKey{s.Source, s.Pid, s.Tid}, s.Origin != ingest.OriginOTLP
	}
	many := x.multiSource(func(p int) (ingest.SourceID, bool) {
		k, ok := keyOf(p)
		return k.src, ok
	}, len(x.cpu))
	byKey := map[threadKey]*threadTrack{}
	var keys []threadKey
	for p := range x.cpu {
		k, ok := keyOf(p)
		if !ok {
			continue
		}
		th := byKey[k]
		if th == nil {
			th = &threadTrack{}
			byKey[k] = th
			keys = append(keys, k)
		}
		th.idx = append(th.idx, int32(p))
	}
	slices.SortFunc(keys, func(a, b threadKey) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.pid, b.pid), cmp.Compare(a.tid, b.tid))
	})
	for _, k := range keys {
		th := byKey[k]
		name := x.processName(k.src, k.pid)
		if many {
			name += " [" + filepath.Base(t.Sources[k.src].Path) + "]"
		}
		th.proc = x.process(procKey{kind: sortCPU, src: k.src, id: int64(k.pid)}, name, int64(k.pid))
		th.name = x.threadName(k.src, k.pid, k.tid)
		slices.SortFunc(th.idx, func(a, b int32) int {
			sa, ea := x.cpuTimes(a)
			sb, eb := x.cpuTimes(b)
			return cmp.Or(cmp.Compare(sa, sb), cmp.Compare(eb, ea), cmp.Compare(a, b))
		})
		items := make([]interval, len(th.idx))
		for j, p := range th.idx {
			start, end := x.cpuTimes(p)
			items[j] = interval{start: start, end: end, parent: -1}
		}
		var n int
		th.lane, n = packLanes(items, nestContained)
		th.tids = x.laneTids(int64(k.tid), n)
		x.threads = append(x.threads, th)
	}
}

// cpuTimes are the start and end of the span or call at position p of cpu.
func (x *exporter) cpuTimes(p int32) (start, end int64) {
	if c, ok := x.cpu[p].Call(); ok {
		return x.t.APICalls[c].Start, x.t.APICalls[c].End
	}
	i, _ := x.cpu[p].Span()
	return x.t.Spans[i].Start, x.t.Spans[i].End
}

// laneTids gives lane 0 the real tid when it is free and every overflow lane
// a synthetic one.
func (x *exporter) laneTids(real int64, n int) []int64 {
	tids := make([]int64, n)
	for l := range tids {
		want := int64(0)
		if l == 0 {
			want = real
		}
		tids[l] = x.allocID(x.usedTid, want)
	}
	x.stats.OverflowLanes += n - 1
	return tids
}

func (x *exporter) processName(src ingest.SourceID, pid uint32) string {
	name := ""
	for _, p := range x.t.Processes {
		if p.Pid == pid && (p.Source == src || name == "") {
			name = p.Name
		}
	}
	switch {
	case name == "" && pid == 0:
		return "process (unknown pid)"
	case name == "":
		return fmt.Sprintf("process %d", pid)
	}
	return fmt.Sprintf("%s (pid %d)", name, pid)
}

func (x *exporter) threadName(src ingest.SourceID, pid, tid uint32) string {
	name := ""
	for _, th := range x.t.Threads {
		if th.Pid == pid && th.Tid == tid && (th.Source == src || name == "") {
			name = th.Name
		}
	}
	if name == "" {
		return fmt.Sprintf("thread %d", tid)
	}
	return fmt.Sprintf("%s (tid %d)", name, tid)
}

func (x *exporter) layoutGPU() {
	t := x.t
	type streamKey struct {
		src    ingest.SourceID
		device int16
		stream uint32
	}
	byKey := map[streamKey]*threadTrack{}
	var keys []streamKey
	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		k := streamKey{o.Source, o.Device, o.Stream}
		st := byKey[k]
		if st == nil {
			st = &threadTrack{}
			byKey[k] = st
			keys = append(keys, k)
		}
		st.idx = append(st.idx, int32(i))
	}
	slices.SortFunc(keys, func(a, b streamKey) int {
		return cmp.Or(cmp.Compare(a.src, b.src), cmp.Compare(a.device, b.device), cmp.Compare(a.stream, b.stream))
	})
	many := x.multiSource(func(i int) (ingest.SourceID, bool) { return t.GPUOps[i].Source, true }, len(t.GPUOps))
	for _, k := range keys {
		st := byKey[k]
		name := x.deviceName(k.src, k.device)
		if many {
			name += " [" + filepath.Base(t.Sources[k.src].Path) + "]"
		}
		st.proc = x.process(procKey{kind: sortGPU, src: k.src, id: int64(k.device)}, name, 0)
		st.name = fmt.Sprintf("stream %d", k.stream)
		sortOpsByStart(t, st.idx)
		items := make([]interval, len(st.idx))
		for j, i := range st.idx {
			items[j] = interval{start: t.GPUOps[i].Start, end: t.GPUOps[i].End, parent: -1}
		}
		var n int
		st.lane, n = packLanes(items, nestNever)
		st.tids = x.laneTids(0, n)
		x.streams = append(x.streams, st)
	}
}

func (x *exporter) deviceName(src ingest.SourceID, dev int16) string {
	if dev < 0 {
		return "GPU (unknown device)"
	}
	name := ""
	for _, d := range x.t.Devices {
		if d.ID == dev && (d.Source == src || name == "") {
			name = d.Name
		}
	}
	if name == "" {
		return fmt.Sprintf("GPU %d", dev)
	}
	return fmt.Sprintf("GPU %d %s", dev, name)
}

// layoutCounters makes sure every sample has a process: the CPU process of
// its pid, else its GPU, else a counters process of its source.
func (x *exporter) layoutCounters() {
	t := x.t
	for i := range t.Samples {
		x.sampleProc(&t.Samples[i])
	}
}

func (x *exporter) sampleProc(s *ingest.Sample) int {
	if s.Pid != 0 {
		for i, k := range x.procKeys {
			if k.kind == sortCPU && k.id == int64(s.Pid) {
				return i
			}
		}
		return x.process(procKey{kind: sortCPU, src: s.Source, id: int64(s.Pid)}, x.processName(s.Source, s.Pid), int64(s.Pid))
	}
	if s.Device >= 0 {
		if i, ok := x.procIdx[procKey{kind: sortGPU, src: s.Source, id: int64(s.Device)}]; ok {
			return i
		}
		for i, k := range x.procKeys {
			if k.kind == sortGPU && k.id == int64(s.Device) {
				return i
			}
		}
		return x.process(procKey{kind: sortGPU, src: s.Source, id: int64(s.Device)}, x.deviceName(s.Source, s.Device), 0)
	}
	name := "counters"
	if int(s.Source) < len(x.t.Sources) {
		name += " [" + filepath.Base(x.t.Sources[s.Source].Path) + "]"
	}
	return x.process(procKey{kind: sortCounters, src: s.Source}, name, 0)
}

// layoutLaunches indexes the API calls by (source, pid, correlation ID) and
// marks those that launched a GPU op, so the call's slice can start an arrow.
func (x *exporter) layoutLaunches() {
	t := x.t
	x.calls = map[callKey]int32{}
	x.anyCalls = map[anyCallKey]int32{}
	hasCalls := make([]bool, len(t.Sources))
	for i := range t.APICalls {
		s := &t.APICalls[i]
		if s.Correlation == 0 {
			continue
		}
		x.calls[callKey{s.Source, s.Pid, s.Correlation}] = int32(i)
		k := anyCallKey{s.Pid, s.Correlation}
		if _, dup := x.anyCalls[k]; dup {
			x.anyCalls[k] = -1
		} else {
			x.anyCalls[k] = int32(i)
		}
		if int(s.Source) < len(hasCalls) {
			hasCalls[s.Source] = true
		}
	}
	x.callSources = hasCalls
	x.launched = make([]bool, len(t.APICalls))
	for i := range t.GPUOps {
		if c, _, ok := x.launchArrow(&t.GPUOps[i]); ok {
			x.launched[c] = true
		}
	}
}

// launchArrow returns the call that launched op and the instant inside the
// op where its arrow ends; ok is false when there is no call, or the op ended
// before its call started (a causality violation an arrow cannot show).
func (x *exporter) launchArrow(o *ingest.GPUOp) (call int32, at int64, ok bool) {
	c := x.callOf(o, x.callSources)
	if c < 0 {
		return -1, 0, false
	}
	// Bind inside the op, not before its launch started, or the arrow would
	// end before it began and Perfetto would drop it.
	from := max(o.Start, x.t.APICalls[c].Start)
	if from > o.End {
		return -1, 0, false
	}
	return c, from + (o.End-from)/2, true
}

// callOf returns the API call that launched op, or -1: the call with the
// same pid and correlation ID in the op's own source, or — for a source
// with no API calls — the one such call across all sources.
func (x *exporter) callOf(o *ingest.GPUOp, hasCalls []bool) int32 {
	if o.Correlation == 0 {
		return -1
	}
	if int(o.Source) < len(hasCalls) && hasCalls[o.Source] {
		if c, ok := x.calls[callKey{o.Source, o.Pid, o.Correlation}]; ok {
			return c
		}
		return -1
	}
	if c, ok := x.anyCalls[anyCallKey{o.Pid, o.Correlation}]; ok {
		return c
	}
	return -1
}

// layoutLinks assigns a bind ID to each caller link that can be drawn.
func (x *exporter) layoutLinks() {
	t := x.t
	x.outSpan, x.inSpan, x.inOp = map[int]uint64{}, map[int]uint64{}, map[int]uint64{}
	next := flowIDBase
	for _, l := range x.opts.Links {
		if l.From < 0 || l.From >= len(t.Spans) || l.To < 0 || (l.ToOp && l.To >= len(t.GPUOps)) || (!l.ToOp && l.To >= len(t.Spans)) {
			x.stats.LinksSkipped++
			continue
		}
		from := &t.Spans[l.From]
		toStart := int64(0)
		if l.ToOp {
			toStart = t.GPUOps[l.To].Start
		} else {
			toStart = t.Spans[l.To].Start
		}
		// An event carries one bind ID: a span that already starts a link
		// reuses its ID (one arrow to many targets); one that is a target
		// cannot take another. (Launch calls, the other arrows' ends, are
		// API calls, never spans.)
		id, isOut := x.outSpan[l.From]
		busyFrom := !isOut && x.inSpan[l.From] != 0
		busyTo := false
		if l.ToOp {
			busyTo = x.inOp[l.To] != 0
		} else {
			busyTo = x.inSpan[l.To] != 0 || x.outSpan[l.To] != 0
		}
		if busyFrom || busyTo {
			x.stats.LinksSkipped++
			continue
		}
		if toStart < from.Start {
			// Perfetto binds the arrow's end only after its start, in time
			// order (and always draws it from the earlier slice): a target
			// that starts first must carry the start. That works for a span
			// target whose source has no other arrow; otherwise skip.
			if isOut || l.ToOp {
				x.stats.LinksSkipped++
				continue
			}
			id = next
			next++
			x.outSpan[l.To] = id
			x.inSpan[l.From] = id
			x.stats.LinkFlows++
			continue
		}
		if !isOut {
			id = next
			next++
			x.outSpan[l.From] = id
		}
		if l.ToOp {
			x.inOp[l.To] = id
		} else {
			x.inSpan[l.To] = id
		}
		x.stats.LinkFlows++
	}
}

func (x *exporter) writeMetadata() {
	ew := x.ew
	for _, p := range x.procs {
		ew.begin("M")
		ew.str("name", "process_name")
		ew.int("pid", p.pid)
		x.args.reset()
		x.args.str("name", p.name)
		ew.raw("args", x.args.done())
		ew.end()
		ew.begin("M")
		ew.str("name", "process_sort_index")
		ew.int("pid", p.pid)
		x.args.reset()
		x.args.int("sort_index", int64(p.sort))
		ew.raw("args", x.args.done())
		ew.end()
	}
	thread := func(th *threadTrack, sort int) {
		for l, tid := range th.tids {
			name := th.name
			if l > 0 {
				name += " (overlap " + strconv.Itoa(l) + ")"
			}
			ew.begin("M")
			ew.str("name", "thread_name")
			ew.int("pid", x.procs[th.proc].pid)
			ew.int("tid", tid)
			x.args.reset()
			x.args.str("name", name)
			ew.raw("args", x.args.done())
			ew.end()
			ew.begin("M")
			ew.str("name", "thread_sort_index")
			ew.int("pid", x.procs[th.proc].pid)
			ew.int("tid", tid)
			x.args.reset()
			x.args.int("sort_index", int64(sort+l))
			ew.raw("args", x.args.done())
			ew.end()
		}
	}
	for i, th := range x.threads {
		thread(th, i*1000)
	}
	for i, st := range x.streams {
		thread(st, i*1000)
	}
}

// writeOTLP draws each track's spans as async slices: per lane, in start
// order, closing finished slices ('e') before opening the next ('b') so that
// every cookie's slices nest.
func (x *exporter) writeOTLP() {
	t := x.t
	for _, tr := range x.tracks {
		pid := x.procs[tr.proc].pid
		stacks := make([][]int32, len(tr.cookies))
		closeUntil := func(l int, until int64, all bool) {
			s := stacks[l]
			for len(s) > 0 {
				top := &t.Spans[tr.idx[s[len(s)-1]]]
				if !all && !(top.End <= until && top.Start < until) {
					break
				}
				x.asyncEnd(top, pid, tr.cookies[l])
				s = s[:len(s)-1]
			}
			stacks[l] = s
		}
		for j, i := range tr.idx {
			l := tr.lane[j]
			s := &t.Spans[i]
			closeUntil(int(l), s.Start, false)
			x.asyncBegin(int(i), pid, tr.cookies[l])
			stacks[l] = append(stacks[l], int32(j))
		}
		for l := range stacks {
			closeUntil(l, 0, true)
		}
	}
	x.writeStages()
}

// writeStages draws opts.Stages: per request one row (cookie) of
// back-to-back slices, which nest trivially.
func (x *exporter) writeStages() {
	ew := x.ew
	for _, st := range x.opts.Stages {
		row, ok := x.stageRows[st.Span]
		if !ok || st.To < st.From {
			continue
		}
		pid := x.procs[row.proc].pid
		for _, ph := range []string{"b", "e"} {
			ew.begin(ph)
			ew.str("cat", "llmprof.stage")
			ew.str("name", nameOr(st.Name))
			ew.int("pid", pid)
			ew.int("tid", pid)
			if ph == "b" {
				ew.ts("ts", st.From)
			} else {
				ew.ts("ts", st.To)
			}
			ew.raw("id2", cookieJSON(row.cookie))
			if ph == "b" {
				x.args.reset()
				x.args.str("request_span_id", x.t.Spans[st.Span].ID.String())
				x.args.str("placed_from", "request attributes or events (no stage span)")
				ew.raw("args", x.args.done())
			}
			ew.end()
		}
	}
}

func (x *exporter) asyncBegin(i int, pid int64, cookie uint64) {
	t, ew := x.t, x.ew
	s := &t.Spans[i]
	ew.begin("b")
	ew.str("cat", "otlp")
	ew.str("name", nameOr(t.Str(s.Name)))
	ew.int("pid", pid)
	ew.int("tid", pid)
	ew.ts("ts", s.Start)
	ew.raw("id2", cookieJSON(cookie))
	if id, ok := x.outSpan[i]; ok {
		ew.str("bind_id", flowHex(id))
		ew.boolean("flow_out", true)
	} else if id, ok := x.inSpan[i]; ok {
		ew.str("bind_id", flowHex(id))
		ew.boolean("flow_in", true)
	}
	x.args.reset()
	x.args.str("span_id", s.ID.String())
	x.args.str("trace_id", s.TraceID.String())
	if !s.Parent.IsZero() {
		x.args.str("parent_span_id", s.Parent.String())
	}
	if s.Kind != ingest.SpanKindUnspecified {
		x.args.str("kind", s.Kind.String())
	}
	if s.Status != ingest.StatusUnset {
		x.args.str("status", s.Status.String())
	}
	if s.StatusMsg != 0 {
		x.args.str("status_message", t.Str(s.StatusMsg))
	}
	x.attrs(t.SpanAttrs(s))
	ew.raw("args", x.args.done())
	ew.end()
	if x.opts.NoSpanEvents {
		return
	}
	for _, e := range t.Events(s) {
		ew.begin("n")
		ew.str("cat", "otlp")
		ew.str("name", nameOr(t.Str(e.Name)))
		ew.int("pid", pid)
		ew.int("tid", pid)
		ew.ts("ts", e.Time)
		ew.raw("id2", cookieJSON(cookie))
		if attrs := t.EventAttrs(&e); len(attrs) > 0 {
			x.args.reset()
			x.attrs(attrs)
			ew.raw("args", x.args.done())
		}
		ew.end()
	}
}

func (x *exporter) asyncEnd(s *ingest.Span, pid int64, cookie uint64) {
	ew := x.ew
	ew.begin("e")
	ew.str("cat", "otlp")
	ew.str("name", nameOr(x.t.Str(s.Name)))
	ew.int("pid", pid)
	ew.int("tid", pid)
	ew.ts("ts", s.End)
	ew.raw("id2", cookieJSON(cookie))
	ew.end()
}

// nameOr names the unnamed: Perfetto shows an empty name as a null.
func nameOr(name string) string {
	if name == "" {
		return "(unnamed)"
	}
	return name
}

func cookieJSON(c uint64) []byte {
	return []byte(`{"local":"0x` + strconv.FormatUint(c, 16) + `"}`)
}

func flowHex(id uint64) string { return "0x" + strconv.FormatUint(id, 16) }

// attrs appends typed attribute values to the args object.
func (x *exporter) attrs(as []ingest.Attr) {
	t := x.t
	for _, a := range as {
		k := t.Str(a.Key)
		v := a.Value()
		switch v.Kind() {
		case ingest.KindString:
			x.args.str(k, t.Str(v.Str()))
		case ingest.KindInt:
			x.args.int(k, v.Int())
		case ingest.KindDouble:
			x.args.float(k, v.Double())
		case ingest.KindBool:
			x.args.boolean(k, v.Bool())
		default:
			x.args.str(k, t.FormatValue(v))
		}
	}
}

var originCategory = map[ingest.SpanOrigin]string{
	ingest.OriginNVTX:          "nvtx",
	ingest.OriginCUDARuntime:   "cuda_runtime",
	ingest.OriginCUDADriver:    "cuda_driver",
	ingest.OriginOSRuntime:     "osrt",
	ingest.OriginCPUOp:         "cpu_op",
	ingest.OriginGPUAnnotation: "gpu_user_annotation",
}

// writeThreads draws CPU-side spans and API calls as complete ('X')
// slices, each lane on its own thread track, and starts a launch arrow ('s',
// v1 flow) from every API call that launched a GPU op.
func (x *exporter) writeThreads() {
	t, ew := x.t, x.ew
	for _, th := range x.threads {
		pid := x.procs[th.proc].pid
		for j, p := range th.idx {
			tid := th.tids[th.lane[j]]
			if c, ok := x.cpu[p].Call(); ok {
				x.writeCall(c, p, pid, tid)
				continue
			}
			i, _ := x.cpu[p].Span()
			s := &t.Spans[i]
			x.threadSlice(s.Origin, s.Name, pid, tid, s.Start, s.End)
			if id, ok := x.outSpan[i]; ok {
				ew.str("bind_id", flowHex(id))
				ew.boolean("flow_out", true)
			} else if id, ok := x.inSpan[i]; ok {
				ew.str("bind_id", flowHex(id))
				ew.boolean("flow_in", true)
			}
			x.args.reset()
			x.attrs(t.SpanAttrs(s))
			if x.args.n > 0 {
				ew.raw("args", x.args.done())
			}
			ew.end()
		}
	}
}

// threadSlice begins the complete slice of a span or call on a thread
// track: its category, name, track and times; the caller adds the rest.
func (x *exporter) threadSlice(origin ingest.SpanOrigin, name ingest.StrID, pid, tid, start, end int64) {
	ew := x.ew
	ew.begin("X")
	ew.str("cat", originCategory[origin])
	ew.str("name", nameOr(x.t.Str(name)))
	ew.int("pid", pid)
	ew.int("tid", tid)
	ew.ts("ts", start)
	ew.dur("dur", end-start)
}

// writeCall draws API call c, at position p of cpu, and the start of its
// launch arrow when it launched a GPU op.
func (x *exporter) writeCall(c int, p int32, pid, tid int64) {
	t, ew := x.t, x.ew
	s := &t.APICalls[c]
	x.threadSlice(s.Origin, s.Name, pid, tid, s.Start, s.End)
	x.args.reset()
	if s.Correlation != 0 {
		x.args.int("correlation", int64(s.Correlation))
	}
	if s.Return != 0 {
		x.args.int(ingest.APIReturnKey, int64(s.Return))
	}
	if x.args.n > 0 {
		ew.raw("args", x.args.done())
	}
	ew.end()
	if x.launched[c] {
		// The arrow leaves from the middle of the call, where it is the
		// innermost slice of its thread.
		ew.begin("s")
		ew.str("cat", "launch")
		ew.str("name", "launch")
		ew.int("id", int64(p)+1)
		ew.int("pid", pid)
		ew.int("tid", tid)
		ew.ts("ts", s.Start+(s.End-s.Start)/2)
		ew.end()
	}
}

var opCategory = [...]string{"kernel", "gpu_memcpy", "gpu_memset", "gpu_sync"}

// writeGPU draws GPU ops as complete slices on their stream's lane and ends
// each op's launch arrow ('f', bound to the op's slice).
func (x *exporter) writeGPU() {
	t, ew := x.t, x.ew
	for _, st := range x.streams {
		pid := x.procs[st.proc].pid
		for j, i := range st.idx {
			o := &t.GPUOps[i]
			sh := t.ShapeOf(o)
			tid := st.tids[st.lane[j]]
			ew.begin("X")
			cat := "gpu"
			if int(o.Kind) < len(opCategory) {
				cat = opCategory[o.Kind]
			}
			ew.str("cat", cat)
			ew.str("name", nameOr(t.Str(o.Name)))
			ew.int("pid", pid)
			ew.int("tid", tid)
			ew.ts("ts", o.Start)
			ew.dur("dur", o.End-o.Start)
			if id, ok := x.inOp[int(i)]; ok {
				ew.str("bind_id", flowHex(id))
				ew.boolean("flow_in", true)
			}
			x.args.reset()
			x.args.int("device", int64(o.Device))
			x.args.int("stream", int64(o.Stream))
			if o.Correlation != 0 {
				x.args.int("correlation", int64(o.Correlation))
			}
			switch o.Kind {
			case ingest.OpKernel:
				x.args.str("grid", fmt.Sprintf("[%d,%d,%d]", sh.Grid[0], sh.Grid[1], sh.Grid[2]))
				x.args.str("block", fmt.Sprintf("[%d,%d,%d]", sh.Block[0], sh.Block[1], sh.Block[2]))
				if sh.GraphID != 0 {
					x.args.int("graph_id", int64(sh.GraphID))
				}
			case ingest.OpMemcpy, ingest.OpMemset:
				x.args.int("bytes", int64(sh.Bytes))
				if o.Kind == ingest.OpMemcpy {
					x.args.str("copy", o.Copy.String())
				}
			}
			ew.raw("args", x.args.done())
			ew.end()
			c, at, ok := x.launchArrow(o)
			if !ok {
				continue
			}
			ew.begin("f")
			ew.str("cat", "launch")
			ew.str("name", "launch")
			ew.int("id", int64(x.callPos[c])+1)
			ew.str("bp", "e")
			ew.int("pid", pid)
			ew.int("tid", tid)
			ew.ts("ts", at)
			ew.end()
			x.stats.LaunchFlows++
		}
	}
}

// writeCounters draws samples as counter events, one series per metric (and
// MIG instance) in the process the sample is about.
func (x *exporter) writeCounters() {
	t, ew := x.t, x.ew
	for i := range t.Samples {
		s := &t.Samples[i]
		name := nameOr(t.Str(s.Metric))
		if se := t.SeriesOf(s); se != nil {
			name = t.SeriesKey(se) // a labelled series (Prometheus, OTLP metrics): one track per label set
		}
		if s.Instance >= 0 {
			name += " mig" + strconv.Itoa(int(s.Instance))
		}
		if s.Pid != 0 && s.Device >= 0 {
			name += " gpu" + strconv.Itoa(int(s.Device))
		}
		ew.begin("C")
		ew.str("name", name)
		ew.int("pid", x.procs[x.sampleProc(s)].pid)
		ew.ts("ts", s.Time)
		x.args.reset()
		x.args.float("value", s.Value)
		ew.raw("args", x.args.done())
		ew.end()
	}
}
