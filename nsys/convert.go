package nsys

import (
	"math"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// The tables read in bulk, with the columns read from each (by name) and
// the index of each column in a row. Absent optional columns read as NULL.
const (
	tableKernel  = "CUPTI_ACTIVITY_KIND_KERNEL"
	tableMemcpy  = "CUPTI_ACTIVITY_KIND_MEMCPY"
	tableMemset  = "CUPTI_ACTIVITY_KIND_MEMSET"
	tableSync    = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
	tableGraph   = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
	tableRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME"
	tableNVTX    = "NVTX_EVENTS"
	tableMetrics = "GPU_METRICS"
	tableMemory  = "CUDA_GPU_MEMORY_USAGE_EVENTS"
)

// Columns shared by every GPU activity table, first in each column list.
const (
	gStart = iota
	gEnd
	gDevice
	gStream
	gCorr
	gPid
	gNext // first table-specific column
)

func gpuCols(extra ...column) []column {
	return append([]column{req("start"), req("end"), exp("deviceId"), exp("streamId"), expNull("correlationId"), expNull("globalPid")}, extra...)
}

var (
	kernelCols = gpuCols(exp("demangledName"), exp("shortName"), opt("mangledName"),
		exp("gridX"), exp("gridY"), exp("gridZ"), exp("blockX"), exp("blockY"), exp("blockZ"),
		opt("graphId"), opt("graphNodeId"))
	memcpyCols = gpuCols(exp("bytes"), exp("copyKind"))
	memsetCols = gpuCols(exp("bytes"))
	syncCols   = gpuCols(exp("syncType"))
	graphCols  = gpuCols(exp("graphId"))
)

const (
	kDemangled = gNext + iota
	kShort
	kMangled
	kGridX
	kGridY
	kGridZ
	kBlockX
	kBlockY
	kBlockZ
	kGraphID
	kGraphNode
)

const (
	mBytes = gNext + iota
	mCopyKind
)

const sSyncType = gNext

const grGraphID = gNext

var runtimeCols = []column{req("start"), req("end"), exp("eventClass"), expNull("globalTid"), expNull("correlationId"), exp("nameId"), exp("returnValue")}

const (
	rStart = iota
	rEnd
	rClass
	rTid
	rCorr
	rName
	rReturn
)

var nvtxCols = []column{req("start"), expNull("end"), req("eventType"), expNull("category"), expNull("text").text(),
	expNull("globalTid"), expNull("endGlobalTid"), expNull("textId"), expNull("domainId"),
	opt("int64Value"), opt("uint64Value"), opt("int32Value"), opt("uint32Value"), opt("doubleValue").real(), opt("floatValue").real()}

const (
	nStart = iota
	nEnd
	nType
	nCategory
	nText
	nTid
	nEndTid
	nTextID
	nDomain
	nInt64
	nUint64
	nInt32
	nUint32
	nDouble
	nFloat
)

// NVTX event types (ENUM_NSYS_EVENT_TYPE).
const (
	nvtxCategoryDef  = 33
	nvtxMark         = 34
	nvtxPushPop      = 59
	nvtxStartEnd     = 60
	nvtxtPushPop     = 70
	nvtxtStartEnd    = 71
	nvtxDomainCreate = 75
)

var metricCols = []column{expNull("timestamp"), req("typeId"), req("metricId"), req("value").real()}

const (
	xTime = iota
	xType
	xMetric
	xValue
)

var memoryCols = []column{req("start"), expNull("globalPid"), expNull("deviceId"), expNull("address"), exp("bytes"),
	expNull("memKind"), exp("memoryOperationType"), expNull("correlationId")}

const (
	uStart = iota
	uPid
	uDevice
	uAddress
	uBytes
	uKind
	uOp
	uCorr
)

// time converts a stored timestamp to the model's epoch ns.
func (d *decoder) time(table string, r *row, col string, ts int64) (int64, bool) {
	t := d.epoch + ts
	if (ts > 0 && t < d.epoch) || (ts < 0 && t > d.epoch) {
		d.warnf(rowPos(table, r.rowid), "bad-value", "%s %d overflows when added to the session start; row skipped", col, ts)
		return 0, false
	}
	return t, true
}

// interval converts a row's start and end columns, clamping an end before
// the start (with a warning).
func (d *decoder) interval(q *query, r *row, startCol, endCol int) (start, end int64, ok bool) {
	if start, ok = d.time(q.table, r, "start", r.cells[startCol].v); !ok {
		return 0, 0, false
	}
	if end, ok = d.time(q.table, r, "end", r.cells[endCol].v); !ok {
		return 0, 0, false
	}
	if end < start {
		d.warnf(rowPos(q.table, r.rowid), "end-before-start", "ends %d ns before it starts; clamped to zero length", start-end)
		end = start
	}
	return start, end, true
}

// checkNulls reports NULLs in NOT NULL columns. A NULL in a required column
// drops the row; elsewhere the value is taken as 0 and the row kept.
func (d *decoder) checkNulls(q *query, r *row) bool {
	bad := nullNotNull(q.cols, q.present, r)
	if len(bad) == 0 {
		return true
	}
	for _, name := range bad {
		for _, c := range q.cols {
			if c.name == name && c.need == required {
				d.warnf(rowPos(q.table, r.rowid), "null-value",
					"%s is NULL although nsys declares it NOT NULL; row skipped", strings.Join(bad, ", "))
				return false
			}
		}
	}
	d.warnf(rowPos(q.table, r.rowid), "null-value",
		"%s is NULL although nsys declares it NOT NULL; taken as 0", strings.Join(bad, ", "))
	return true
}

// gpuOp fills the fields every GPU activity row has.
func (d *decoder) gpuOp(q *query, r *row, kind ingest.GPUOpKind) (ingest.GPUOp, bool) {
	if !d.checkNulls(q, r) {
		return ingest.GPUOp{}, false
	}
	c := r.cells
	op := ingest.GPUOp{Kind: kind, Device: -1}
	var ok bool
	if op.Start, op.End, ok = d.interval(q, r, gStart, gEnd); !ok {
		return op, false
	}
	if !c[gDevice].null {
		if op.Device, ok = int16Of(c[gDevice].v); !ok {
			d.warnf(rowPos(q.table, r.rowid), "bad-value", "deviceId %d is not a device ordinal; device unknown", c[gDevice].v)
		}
	}
	if op.Stream, ok = uint32Of(c[gStream].v); !ok {
		d.warnf(rowPos(q.table, r.rowid), "bad-value", "streamId %d out of range; taken as 0", c[gStream].v)
	}
	if op.Correlation, ok = uint32Of(c[gCorr].v); !ok {
		d.warnf(rowPos(q.table, r.rowid), "bad-value", "correlationId %d out of range; taken as 0", c[gCorr].v)
	}
	op.Pid = pidOf(c[gPid].v)
	return op, true
}

func (d *decoder) kernel(q *query, r *row) (ingest.GPUOp, bool) {
	op, ok := d.gpuOp(q, r, ingest.OpKernel)
	if !ok {
		return op, false
	}
	c := r.cells
	demangled := d.name(q.table, r, "demangledName", c[kDemangled])
	op.ShortName = d.name(q.table, r, "shortName", c[kShort])
	switch d.opts.KernelName {
	case KernelShort:
		op.Name = op.ShortName
	case KernelMangled:
		op.Name = demangled
		if !c[kMangled].null {
			op.Name = d.name(q.table, r, "mangledName", c[kMangled])
		}
	default:
		op.Name = demangled
	}
	var sh ingest.OpShape
	for i := range 3 {
		g, b := c[kGridX+i].v, c[kBlockX+i].v
		if g < 0 || g > math.MaxUint32 || b < 0 || b > math.MaxUint16 {
			d.warnf(rowPos(q.table, r.rowid), "bad-value", "launch dimensions grid %d block %d out of range; taken as 0", g, b)
			g, b = 0, 0
		}
		sh.Grid[i], sh.Block[i] = uint32(g), uint16(b)
	}
	switch {
	case !c[kGraphID].null:
		sh.GraphID, _ = uint32Of(c[kGraphID].v)
	case !c[kGraphNode].null && !q.present[kGraphID]:
		d.graphNodeOnly++
	}
	op.Shape = d.t.InternShape(sh)
	return op, true
}

// name resolves a StringIds reference of a row; a dangling one is reported
// and shown as such.
func (d *decoder) name(table string, r *row, col string, c cell) ingest.StrID {
	if c.null {
		return 0
	}
	s, ok := d.names.lookup(c.v)
	if !ok {
		d.warnf(rowPos(table, r.rowid), "dangling-string", "%s %d is not in StringIds", col, c.v)
		return unknownName(d.t.Strings, col, c.v)
	}
	return s
}

// memcpyLabels are ENUM_CUDA_MEMCPY_OPER's labels (identical in every nsys
// release from 2023.1 to 2026.1); a memcpy is named "[CUDA memcpy <label>]"
// as in nsys stats.
var memcpyLabels = [...]string{"Unknown", "Host-to-Device", "Device-to-Host", "Host-to-Array", "Array-to-Host",
	"Array-to-Array", "Array-to-Device", "Device-to-Array", "Device-to-Device", "Host-to-Host", "Peer-to-Peer",
	"Unified Host-to-Device", "Unified Device-to-Host", "Unified Device-to-Device"}

// memcpyKinds maps ENUM_CUDA_MEMCPY_OPER to the model's simplified copy
// kinds: arrays count as device memory, unified-memory migrations by their
// direction.
var memcpyKinds = [...]ingest.CopyKind{ingest.CopyUnknown, ingest.CopyHtoD, ingest.CopyDtoH, ingest.CopyHtoD, ingest.CopyDtoH,
	ingest.CopyDtoD, ingest.CopyDtoD, ingest.CopyDtoD, ingest.CopyDtoD, ingest.CopyHtoH, ingest.CopyPtoP,
	ingest.CopyHtoD, ingest.CopyDtoH, ingest.CopyDtoD}

// MemcpyName is the op name of a memcpy of the given ENUM_CUDA_MEMCPY_OPER
// kind, as nsys stats prints it.
func MemcpyName(kind int64) string {
	if kind >= 0 && kind < int64(len(memcpyLabels)) {
		return "[CUDA memcpy " + memcpyLabels[kind] + "]"
	}
	return "[CUDA memcpy kind " + strconv.FormatInt(kind, 10) + "]"
}

// MemsetName is the op name of every memset, as nsys stats prints it.
const MemsetName = "[CUDA memset]"

func (d *decoder) memcpy(q *query, r *row) (ingest.GPUOp, bool) {
	op, ok := d.gpuOp(q, r, ingest.OpMemcpy)
	if !ok {
		return op, false
	}
	c := r.cells
	op.Shape = d.t.InternShape(ingest.OpShape{Bytes: d.bytes(q.table, r, c[mBytes])})
	kind := c[mCopyKind].v
	if kind >= 0 && kind < int64(len(memcpyKinds)) {
		op.Copy = memcpyKinds[kind]
	} else {
		d.warnf(rowPos(q.table, r.rowid), "bad-value", "copyKind %d is not a known memcpy kind", kind)
	}
	op.Name = d.t.Strings.Intern(MemcpyName(kind))
	return op, true
}

func (d *decoder) bytes(table string, r *row, c cell) uint64 {
	if c.v < 0 {
		d.warnf(rowPos(table, r.rowid), "bad-value", "bytes %d is negative; taken as 0", c.v)
		return 0
	}
	return uint64(c.v)
}

func (d *decoder) memset(q *query, r *row) (ingest.GPUOp, bool) {
	op, ok := d.gpuOp(q, r, ingest.OpMemset)
	if !ok {
		return op, false
	}
	op.Shape = d.t.InternShape(ingest.OpShape{Bytes: d.bytes(q.table, r, r.cells[mBytes])})
	op.Name = d.t.Strings.Intern(MemsetName)
	return op, true
}

// syncLabels are ENUM_CUPTI_SYNC_TYPE's labels.
var syncLabels = [...]string{"Unknown", "Event sync", "Stream wait sync", "Stream sync", "Context sync"}

// SyncName is the op name of a synchronization of the given
// ENUM_CUPTI_SYNC_TYPE kind.
func SyncName(kind int64) string {
	if kind >= 0 && kind < int64(len(syncLabels)) {
		return "[CUDA " + syncLabels[kind] + "]"
	}
	return "[CUDA sync type " + strconv.FormatInt(kind, 10) + "]"
}

func (d *decoder) sync(q *query, r *row) (ingest.GPUOp, bool) {
	op, ok := d.gpuOp(q, r, ingest.OpSync)
	if !ok {
		return op, false
	}
	op.Name = d.t.Strings.Intern(SyncName(r.cells[sSyncType].v))
	return op, true
}

// GraphName is the op name of a whole CUDA graph execution.
func GraphName(graphID uint32) string {
	return "[CUDA graph " + strconv.FormatUint(uint64(graphID), 10) + "]"
}

func (d *decoder) graph(q *query, r *row) (ingest.GPUOp, bool) {
	op, ok := d.gpuOp(q, r, ingest.OpGraph)
	if !ok {
		return op, false
	}
	id, ok := uint32Of(r.cells[grGraphID].v)
	if !ok {
		d.warnf(rowPos(q.table, r.rowid), "bad-value", "graphId %d out of range; taken as 0", r.cells[grGraphID].v)
	}
	op.Shape = d.t.InternShape(ingest.OpShape{GraphID: id})
	op.Name = d.t.Strings.Intern(GraphName(id))
	return op, true
}

// StripAPIVersion removes the API-version suffix nsys appends to CUDA API
// names ("cudaLaunchKernel_v7000" → "cudaLaunchKernel",
// "cudaGetDeviceProperties_v2_v12000" → "cudaGetDeviceProperties_v2"). Only
// 4- and 5-digit versions are suffixes; "cuMemAlloc_v2" is a real name.
func StripAPIVersion(name string) string {
	i := strings.LastIndex(name, "_v")
	if i < 0 {
		return name
	}
	digits := name[i+2:]
	if len(digits) < 4 || len(digits) > 5 {
		return name
	}
	for _, ch := range digits {
		if ch < '0' || ch > '9' {
			return name
		}
	}
	return name[:i]
}

func (d *decoder) apiName(table string, r *row, c cell) ingest.StrID {
	if s, ok := d.apiNames[c.v]; ok && !c.null {
		return s
	}
	s := d.name(table, r, "nameId", c)
	if s != 0 {
		s = d.t.Strings.Intern(StripAPIVersion(d.t.Str(s)))
	}
	if !c.null {
		d.apiNames[c.v] = s
	}
	return s
}

func (d *decoder) runtime(q *query, r *row) (ingest.APICall, bool) {
	if !d.checkNulls(q, r) {
		return ingest.APICall{}, false
	}
	c := r.cells
	s := ingest.APICall{Origin: ingest.OriginCUDARuntime}
	var ok bool
	if s.Start, s.End, ok = d.interval(q, r, rStart, rEnd); !ok {
		return s, false
	}
	// ENUM_NSYS_EVENT_CLASS: 0 CUDA runtime, 1 CUDA driver.
	if c[rClass].v == 1 {
		s.Origin = ingest.OriginCUDADriver
	}
	s.Pid, s.Tid = pidOf(c[rTid].v), tidOf(c[rTid].v)
	if s.Correlation, ok = uint32Of(c[rCorr].v); !ok {
		d.warnf(rowPos(q.table, r.rowid), "bad-value", "correlationId %d out of range; taken as 0", c[rCorr].v)
	}
	s.Name = d.apiName(q.table, r, c[rName])
	// cudaError_t and CUresult are C enums: a value beyond 32 bits is not
	// one.
	if rv := c[rReturn].v; rv < math.MinInt32 || rv > math.MaxInt32 {
		d.warnf(rowPos(q.table, r.rowid), "bad-value", "returnValue %d out of range; taken as 0", rv)
	} else {
		s.Return = int32(rv)
	}
	return s, true
}

// nvtxRef identifies an NVTX domain or category: its id within a process.
type nvtxRef struct {
	pid uint32
	id  int64
}

func (d *decoder) nvtx(q *query, r *row, domains map[nvtxRef]ingest.StrID) (ingest.Span, bool) {
	if !d.checkNulls(q, r) {
		return ingest.Span{}, false
	}
	c := r.cells
	var typ ingest.StrID
	switch c[nType].v {
	case nvtxPushPop, nvtxtPushPop:
		typ = d.keys.typePushPop
	case nvtxStartEnd, nvtxtStartEnd:
		typ = d.keys.typeStartEnd
	case nvtxMark:
		typ = d.keys.typeMark
	default:
		// Domain and category definitions and naming events are not ranges.
		return ingest.Span{}, false
	}
	s := ingest.Span{Resource: -1, Scope: -1, Origin: ingest.OriginNVTX}
	var ok bool
	if s.Start, ok = d.time(q.table, r, "start", c[nStart].v); !ok {
		return s, false
	}
	unclosed := false
	switch {
	case typ == d.keys.typeMark:
		s.End = s.Start
	case c[nEnd].null:
		// A range still open when the capture stopped; nsys's reports end
		// it at the last NVTX timestamp, and so do we.
		unclosed = true
		s.End = max(d.nvtxEnd, s.Start)
		d.warnf(rowPos(q.table, r.rowid), "nvtx-unclosed", "NVTX range was never closed; it is taken to end at the last NVTX timestamp")
	default:
		if s.Start, s.End, ok = d.interval(q, r, nStart, nEnd); !ok {
			return s, false
		}
	}
	s.Pid, s.Tid = pidOf(c[nTid].v), tidOf(c[nTid].v)
	switch {
	case !c[nTextID].null:
		s.Name = d.name(q.table, r, "textId", c[nTextID])
	case r.text != nil:
		s.Name = d.t.Strings.InternBytes(r.text)
	}

	n := 1
	domain := ingest.StrID(0)
	if !c[nDomain].null && c[nDomain].v != 0 {
		var known bool
		if domain, known = domains[nvtxRef{s.Pid, c[nDomain].v}]; !known {
			domain = d.t.Strings.Intern("domain " + strconv.FormatInt(c[nDomain].v, 10))
		}
		n++
	}
	category := !c[nCategory].null && c[nCategory].v != 0
	if category {
		n++
	}
	payload, hasPayload := nvtxPayload(c)
	if hasPayload {
		n++
	}
	if !c[nEndTid].null {
		n++
	}
	if unclosed {
		n++
	}
	// Built in place at the end of the trace's attribute arena.
	attrs := d.t.AttrTail(n, 0)
	attrs = append(attrs, ingest.NewAttr(d.keys.nvtxType, ingest.StringValue(typ)))
	if domain != 0 {
		attrs = append(attrs, ingest.NewAttr(d.keys.nvtxDomain, ingest.StringValue(domain)))
	}
	if category {
		attrs = append(attrs, ingest.NewAttr(d.keys.nvtxCategory, ingest.IntValue(c[nCategory].v)))
	}
	if hasPayload {
		attrs = append(attrs, ingest.NewAttr(d.keys.nvtxPayload, payload))
	}
	if !c[nEndTid].null {
		attrs = append(attrs, ingest.NewAttr(d.keys.nvtxEndTid, ingest.IntValue(int64(tidOf(c[nEndTid].v)))))
	}
	if unclosed {
		attrs = append(attrs, ingest.NewAttr(d.keys.nvtxUnclosed, ingest.BoolValue(true)))
	}
	s.Attrs = d.t.CommitAttrs(len(attrs))
	return s, true
}

// nvtxPayload returns the event's payload, whichever union member is set.
func nvtxPayload(c []cell) (ingest.Value, bool) {
	switch {
	case !c[nInt64].null:
		return ingest.IntValue(c[nInt64].v), true
	case !c[nUint64].null:
		return ingest.IntValue(c[nUint64].v), true
	case !c[nInt32].null:
		return ingest.IntValue(c[nInt32].v), true
	case !c[nUint32].null:
		return ingest.IntValue(c[nUint32].v), true
	case !c[nDouble].null:
		return ingest.DoubleValue(c[nDouble].float()), true
	case !c[nFloat].null:
		return ingest.DoubleValue(c[nFloat].float()), true
	}
	return ingest.Value{}, false
}

// metricRef identifies a GPU metric: GPU_METRICS rows carry (typeId,
// metricId), which TARGET_INFO_GPU_METRICS names; the ids are "not assumed
// to be stable", so samples are keyed by the name.
type metricRef struct{ typeID, metricID int64 }

func (d *decoder) metric(q *query, r *row, names map[metricRef]ingest.StrID) (ingest.Sample, bool) {
	if !d.checkNulls(q, r) {
		return ingest.Sample{}, false
	}
	c := r.cells
	if c[xTime].null {
		d.warnf(rowPos(q.table, r.rowid), "null-value", "timestamp is NULL; sample skipped")
		return ingest.Sample{}, false
	}
	s := ingest.Sample{Instance: -1}
	var ok bool
	if s.Time, ok = d.time(q.table, r, "timestamp", c[xTime].v); !ok {
		return s, false
	}
	ref := metricRef{c[xType].v, c[xMetric].v}
	if s.Metric, ok = names[ref]; !ok {
		s.Metric = d.t.Strings.Intern("nsys metric " + strconv.FormatInt(ref.typeID, 10) + "/" + strconv.FormatInt(ref.metricID, 10))
		d.warnf(rowPos(q.table, r.rowid), "unknown-metric", "typeId %d metricId %d is not in TARGET_INFO_GPU_METRICS", ref.typeID, ref.metricID)
		names[ref] = s.Metric
	}
	s.Value = c[xValue].float()
	// The low byte of typeId is the GPU (as nsys2prv reads it); the rest
	// identifies the metric set and the VM.
	s.Device = int16(c[xType].v & 0xFF)
	return s, true
}

func (d *decoder) memoryEvent(q *query, r *row) (ingest.MemoryEvent, bool) {
	if !d.checkNulls(q, r) {
		return ingest.MemoryEvent{}, false
	}
	c := r.cells
	e := ingest.MemoryEvent{Device: -1}
	var ok bool
	if e.Time, ok = d.time(q.table, r, "start", c[uStart].v); !ok {
		return e, false
	}
	switch c[uOp].v {
	case 0:
		e.Op = ingest.MemAlloc
	case 1:
		e.Op = ingest.MemFree
	default:
		d.warnf(rowPos(q.table, r.rowid), "bad-value", "memoryOperationType %d is neither allocation (0) nor deallocation (1); row skipped", c[uOp].v)
		return e, false
	}
	e.Kind = ingest.MemUnknown
	if k := c[uKind].v; !c[uKind].null && k >= 0 && k <= int64(ingest.MemUnknown) {
		e.Kind = ingest.MemoryKind(k)
	}
	if !c[uDevice].null {
		e.Device, _ = int16Of(c[uDevice].v)
	}
	e.Address = uint64(c[uAddress].v)
	e.Bytes = d.bytes(q.table, r, c[uBytes])
	e.Pid = pidOf(c[uPid].v)
	e.Correlation, _ = uint32Of(c[uCorr].v)
	return e, true
}
