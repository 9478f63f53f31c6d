package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"strconv"
	"unsafe"

	"github.com/llmprof/llmprof/internal/spill"
)

// Trace is everything llmprof knows about one run: CPU-side spans, GPU
// operations, counter samples and where each came from. Decoders fill it,
// Validate checks it once, align rewrites its times onto the reference clock,
// and every analysis reads it.
type Trace struct {
	Strings *Strings

	Sources []Source
	Spans   []Span
	// AttrArena holds the attributes of every span, span event and link,
	// a span's being the range Span.Attrs of it (SpanAttrs reads them,
	// AddAttrs adds them):
	// one array of pointer-free records, like Spans itself, so that neither
	// is scanned by the collector and both may live in a spill file
	// (internal/spill).
	AttrArena []Attr
	// SpanExtras say where the events and links of the spans that have
	// any (Span.Extra) lie in SpanEvents and SpanLinks: few spans do.
	// Events and Links read them. None of the three holds pointers.
	SpanExtras []SpanExtra
	SpanEvents []Event
	SpanLinks  []Link
	// APICalls are the CUDA runtime and driver API calls, apart from Spans:
	// a run holds millions, and a call has none of what an OTLP span has.
	APICalls []APICall
	GPUOps   []GPUOp
	Samples  []Sample
	// Series are the labelled metric series (Prometheus, OTLP metrics) that
	// samples may belong to; see Sample.Series and ingest/metrics.go.
	Series []Series
	// MemoryEvents are device-memory allocations and releases, where the
	// input records them (nsys --cuda-memory-usage).
	MemoryEvents []MemoryEvent

	// Resources and Scopes are shared by many spans (OTLP resource and
	// instrumentation scope); spans refer to them by index.
	Resources []Resource
	Scopes    []Scope

	// Arrays and Maps hold the elements of array and map attribute values.
	Arrays [][]Value
	Maps   [][]Attr

	Devices   []Device
	Processes []Process
	Threads   []Thread

	// Shapes are the distinct GPU op shapes; GPUOp.Shape k is Shapes[k-1]
	// (ShapeOf, InternShape).
	Shapes []OpShape
	// shapeIDs finds a shape in Shapes; built on first use.
	shapeIDs map[OpShape]ShapeID

	Warnings Warnings
}

// New returns an empty Trace with a string table.
func New() *Trace {
	return &Trace{Strings: NewStrings()}
}

// SourceID indexes Trace.Sources.
type SourceID uint16

// Source describes one input file (or capture directory) and the clock its
// timestamps are in.
type Source struct {
	Path     string
	Format   string // detailed format, e.g. "otlp-json-lines", "nsys-sqlite"
	Producer string // what wrote it, when known, e.g. "nsys 2025.1.1.110"
	Clock    ClockDomain
	Anchors  []ClockAnchor
	// Host is an opaque identity of the machine that recorded the source
	// (a hash, never the host name itself), empty when the input does not
	// say: equal values mean the same machine. GPU devices are identified by
	// (host or capture session, device), never by index alone.
	Host string
	// Counts of records this source contributed; Spans counts its CUDA
	// API calls too.
	Spans, GPUOps, Samples int
	// Meta holds format-specific facts worth showing (export options, schema
	// version). Never secrets or environment variables.
	Meta map[string]string
}

// ClockKind says what kind of clock a domain's timestamps come from.
type ClockKind uint8

const (
	// ClockUnknown: the decoder could not tell.
	ClockUnknown ClockKind = iota
	// ClockRealtime: a host's CLOCK_REALTIME, Unix ns (OTLP spans, NVML).
	ClockRealtime
	// ClockNsysSession: Nsight Systems session time plus its utcEpochNs anchor.
	ClockNsysSession
	// ClockMonotonic: a host monotonic clock mapped to Unix ns by clock pairs.
	ClockMonotonic
)

var clockKindNames = [...]string{"unknown", "realtime", "nsys-session", "monotonic"}

func (k ClockKind) String() string {
	if int(k) < len(clockKindNames) {
		return clockKindNames[k]
	}
	return "clock(" + strconv.Itoa(int(k)) + ")"
}

// ClockDomain names the clock a source's timestamps are on. Sources with the
// same Name share one alignment fit. A host's clock is named after its
// identity (Source.Host, an ingest.HostID), never its name.
type ClockDomain struct {
	Name string // e.g. "realtime@1a2b3c4d", "nsys:report1.sqlite"
	Kind ClockKind
}

// AnchorKind is the strength class of a clock anchor (docs/design.md §6).
type AnchorKind uint8

const (
	// AnchorClockPair: a bracketed read of the domain clock and the reference
	// clock; the reference instant lies in [RefLow, RefHigh].
	AnchorClockPair AnchorKind = iota + 1
	// AnchorEpoch: the domain declares its own offset to Unix time (nsys
	// utcEpochNs); the uncertainty is unknown.
	AnchorEpoch
)

// ClockAnchor relates an instant in a source's clock domain to the reference
// clock.
type ClockAnchor struct {
	Kind AnchorKind
	// Local is the instant as stored in the model for this source.
	Local int64
	// RefLow and RefHigh bound the same instant on the reference clock.
	RefLow, RefHigh int64
}

// Resource is an OTLP resource: the attributes of the process that emitted
// spans (service.name, host.name, process.pid, ...).
type Resource struct {
	Attrs     []Attr
	SchemaURL StrID
}

// Scope is an OTLP instrumentation scope.
type Scope struct {
	Name, Version StrID
	Attrs         []Attr
}

// TraceID is a 16-byte trace identifier.
type TraceID [16]byte

// SpanID is an 8-byte span identifier.
type SpanID [8]byte

func (id TraceID) String() string { return hex.EncodeToString(id[:]) }
func (id SpanID) String() string  { return hex.EncodeToString(id[:]) }

// IsZero reports whether the ID is all zeros (absent).
func (id TraceID) IsZero() bool { return id == TraceID{} }

// IsZero reports whether the ID is all zeros (absent).
func (id SpanID) IsZero() bool { return id == SpanID{} }

// SpanKind is the OTLP span kind.
type SpanKind uint8

// OTLP span kinds.
const (
	SpanKindUnspecified SpanKind = iota
	SpanKindInternal
	SpanKindServer
	SpanKindClient
	SpanKindProducer
	SpanKindConsumer
)

var spanKindNames = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}

func (k SpanKind) String() string {
	if int(k) < len(spanKindNames) {
		return spanKindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// SpanOrigin says which kind of CPU-side record a span is.
type SpanOrigin uint8

const (
	OriginOTLP        SpanOrigin = iota // an OpenTelemetry span
	OriginNVTX                          // an NVTX push/pop or start/end range (or mark, End == Start)
	OriginCUDARuntime                   // a CUDA runtime API call
	OriginCUDADriver                    // a CUDA driver API call
	OriginOSRuntime                     // an OS runtime call traced by nsys
	// OriginCPUOp is a framework operator or Python function on a CPU
	// thread (PyTorch profiler cpu_op, python_function).
	OriginCPUOp
	// OriginGPUAnnotation is a range on a GPU stream that mirrors a CPU
	// annotation (PyTorch profiler gpu_user_annotation): Pid is the
	// process, Tid the stream, the gpu.device attribute the device.
	OriginGPUAnnotation
)

var originNames = [...]string{"otlp", "nvtx", "cuda-runtime", "cuda-driver", "os-runtime", "cpu-op", "gpu-annotation"}

func (o SpanOrigin) String() string {
	if int(o) < len(originNames) {
		return originNames[o]
	}
	return "origin(" + strconv.Itoa(int(o)) + ")"
}

// StatusCode is the OTLP status code.
type StatusCode uint8

// OTLP status codes.
const (
	StatusUnset StatusCode = iota
	StatusOK
	StatusError
)

var statusNames = [...]string{"unset", "ok", "error"}

func (c StatusCode) String() string {
	if int(c) < len(statusNames) {
		return statusNames[c]
	}
	return "status(" + strconv.Itoa(int(c)) + ")"
}

// Span is a CPU-side interval: an OTLP span, an NVTX range, an operator.
// CUDA API calls are APICalls, not spans.
//
// A run can hold millions of NVTX ranges and operators, so a span holds no
// pointers: its attributes are a range of the trace's AttrArena and its
// events and links — what only OTLP spans have and few of those use — an
// index into the trace's SpanExtras, which says where they lie in
// SpanEvents and SpanLinks (none of those holds pointers either). The
// collector then never scans the span table, which may live in a spill
// file (internal/spill), and the fields are ordered so that the struct has
// no padding to speak of: 96 bytes (docs/design.md §3).
type Span struct {
	TraceID   TraceID
	ID        SpanID
	Parent    SpanID
	Name      StrID
	StatusMsg StrID
	Start     int64
	End       int64
	// Attrs is where the span's attributes lie in Trace.AttrArena: read
	// them with Trace.SpanAttrs, add them with Trace.AddAttrs.
	Attrs AttrRange
	// Extra is the span's events and links, Trace.SpanExtras[Extra-1]; 0
	// when it has neither. Read them with Trace.Events and Trace.Links.
	Extra uint32
	// Resource and Scope index Trace.Resources and Trace.Scopes; -1 if none.
	Resource int32
	Scope    int32
	// Pid and Tid are the process and thread (0 when unknown, e.g. OTLP).
	Pid, Tid uint32

	Source SourceID
	Kind   SpanKind
	Origin SpanOrigin
	Status StatusCode
}

// AttrRange is where the attributes of a span, span event or link lie in
// its trace's AttrArena: AttrArena[Off : Off+Len].
type AttrRange struct {
	Off, Len uint32
}

// SpanExtra is where a span's OTLP span events and links lie:
// SpanEvents[EventOff : EventOff+EventLen] and SpanLinks[LinkOff :
// LinkOff+LinkLen] of its trace.
type SpanExtra struct {
	EventOff, EventLen uint32
	LinkOff, LinkLen   uint32
}

// SpanAttrs are the span's attributes, in input order: a slice of the
// trace's AttrArena, capped so that an append to it cannot overwrite the
// next span's. An AttrRange outside the arena (a span from another trace)
// has none.
func (t *Trace) SpanAttrs(s *Span) []Attr { return t.attrsIn(s.Attrs) }

// EventAttrs are the attributes of one of the trace's span events.
func (t *Trace) EventAttrs(e *Event) []Attr { return t.attrsIn(e.Attrs) }

// LinkAttrs are the attributes of one of the trace's span links.
func (t *Trace) LinkAttrs(l *Link) []Attr { return t.attrsIn(l.Attrs) }

func (t *Trace) attrsIn(r AttrRange) []Attr {
	lo, hi := uint64(r.Off), uint64(r.Off)+uint64(r.Len)
	if r.Len == 0 || hi > uint64(len(t.AttrArena)) {
		return nil
	}
	return t.AttrArena[lo:hi:hi]
}

// MaxAttrs is the most attributes the spans of one trace may hold, as many
// as an AttrRange can index (64 GiB of them).
const MaxAttrs = math.MaxUint32

// AddAttrs appends attrs to the trace's AttrArena and returns their range,
// for a span's, event's or link's Attrs. Attributes past MaxAttrs are not
// kept (a warning says so): the range is then empty.
func (t *Trace) AddAttrs(attrs ...Attr) AttrRange {
	if len(attrs) == 0 {
		return AttrRange{}
	}
	// attrs may be a slice of the arena itself: appendSpilled copies it
	// before a grown arena gives the old one back.
	off := len(t.AttrArena)
	if uint64(off)+uint64(len(attrs)) > MaxAttrs {
		t.Warnings.Addf("", "", "attributes-dropped", "the spans hold more than %d attributes; the attributes of the spans past them are dropped", uint64(MaxAttrs))
		return AttrRange{}
	}
	t.AttrArena = appendSpilled(t.AttrArena, attrs...)
	return AttrRange{Off: uint32(off), Len: uint32(len(attrs))}
}

// AttrTail returns an empty slice over the free space at the end of the
// AttrArena, at least n long, for a decoder to build a span's attributes
// in place and keep them with CommitAttrs. When the arena has less room it
// grows, to capacity c or more (at least double), in a new array from
// spill.Slice (a spill file when spilling is on and the arena is large,
// internal/spill); the one it replaces is given back at once (spill.Free),
// so no slice of the arena taken before may be used afterwards.
func (t *Trace) AttrTail(n, c int) []Attr {
	if a := t.AttrArena; cap(a)-len(a) < n {
		t.AttrArena = spill.Grow(a, max(c, 2*cap(a), len(a)+n, 1024))
	}
	return t.AttrArena[len(t.AttrArena):]
}

// CommitAttrs keeps the first n attributes of the arena's free space, which
// the caller filled through a slice from AttrTail, and returns their range.
// Attributes past MaxAttrs are not kept (a warning says so).
func (t *Trace) CommitAttrs(n int) AttrRange {
	off := len(t.AttrArena)
	if n <= 0 {
		return AttrRange{}
	}
	if uint64(off)+uint64(n) > MaxAttrs {
		t.Warnings.Addf("", "", "attributes-dropped", "the spans hold more than %d attributes; the attributes of the spans past them are dropped", uint64(MaxAttrs))
		return AttrRange{}
	}
	t.AttrArena = t.AttrArena[:off+n]
	return AttrRange{Off: uint32(off), Len: uint32(n)}
}

// appendSpilled is append for the trace's pointer-free tables: growing, to
// at least double (as AttrTail's), the table grows through spill.Grow (in
// its spill file where it is in one), unless items are a slice of s
// itself, which spill.Grow would give back or move first: then it moves to
// a new array from spill.Slice, items copied before the old array is given
// back.
func appendSpilled[T any](s []T, items ...T) []T {
	if cap(s)-len(s) >= len(items) {
		return append(s, items...)
	}
	c := max(2*cap(s), len(s)+len(items), 1024)
	if !overlaps(s, items) {
		return append(spill.Grow(s, c), items...)
	}
	grown := append(spill.Slice[T](c), s...)
	grown = append(grown, items...)
	spill.Free(s)
	return grown
}

// overlaps reports whether items lie in s's array.
func overlaps[T any](s, items []T) bool {
	if cap(s) == 0 || len(items) == 0 {
		return false
	}
	size := unsafe.Sizeof(*new(T))
	lo := uintptr(unsafe.Pointer(unsafe.SliceData(s[:1])))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(items)))
	return at >= lo && at < lo+uintptr(cap(s))*size
}

// AddExtra appends events and links to the trace's SpanEvents and
// SpanLinks and returns the value of Span.Extra that refers to them (0,
// none, when there are neither). Their attributes are ranges of the
// trace's AttrArena already (AddAttrs).
func (t *Trace) AddExtra(events []Event, links []Link) uint32 {
	if len(events) == 0 && len(links) == 0 {
		return 0
	}
	x := SpanExtra{
		EventOff: uint32(len(t.SpanEvents)), EventLen: uint32(len(events)),
		LinkOff: uint32(len(t.SpanLinks)), LinkLen: uint32(len(links)),
	}
	t.SpanEvents = appendSpilled(t.SpanEvents, events...)
	t.SpanLinks = appendSpilled(t.SpanLinks, links...)
	t.SpanExtras = appendSpilled(t.SpanExtras, x)
	return uint32(len(t.SpanExtras))
}

// extra is the span's SpanExtra, nil when it has none.
func (t *Trace) extra(s *Span) *SpanExtra {
	if s.Extra == 0 || int(s.Extra) > len(t.SpanExtras) {
		return nil
	}
	return &t.SpanExtras[s.Extra-1]
}

// Events are the span's events (OTLP span events), in input order: a
// slice of the trace's SpanEvents.
func (t *Trace) Events(s *Span) []Event {
	x := t.extra(s)
	if x == nil || uint64(x.EventOff)+uint64(x.EventLen) > uint64(len(t.SpanEvents)) {
		return nil
	}
	return t.SpanEvents[x.EventOff : x.EventOff+x.EventLen : x.EventOff+x.EventLen]
}

// Links are the span's links to other spans, in input order: a slice of
// the trace's SpanLinks.
func (t *Trace) Links(s *Span) []Link {
	x := t.extra(s)
	if x == nil || uint64(x.LinkOff)+uint64(x.LinkLen) > uint64(len(t.SpanLinks)) {
		return nil
	}
	return t.SpanLinks[x.LinkOff : x.LinkOff+x.LinkLen : x.LinkOff+x.LinkLen]
}

// AddEvent appends an event to the span's events (its attributes a range
// of the trace's AttrArena: AddAttrs). A span's events are contiguous, so
// its others are copied to the end of SpanEvents first; copies of the span
// in the trace share them: they refer to the same SpanExtra.
func (t *Trace) AddEvent(s *Span, e Event) {
	x := t.extra(s)
	if x == nil {
		s.Extra = t.AddExtra([]Event{e}, nil)
		return
	}
	off := len(t.SpanEvents)
	t.SpanEvents = appendSpilled(t.SpanEvents, t.Events(s)...)
	t.SpanEvents = appendSpilled(t.SpanEvents, e)
	x.EventOff, x.EventLen = uint32(off), x.EventLen+1
}

// Duration is End − Start.
func (s *Span) Duration() int64 { return s.End - s.Start }

// APICall is one CUDA runtime or driver API call (cudaLaunchKernel,
// cudaGraphLaunch, cuMemcpyAsync, …). A run holds millions — most of its
// CPU-side records — and a call has only a name, its times, its thread, its
// correlation and its return code, so it is a table of its own rather than
// a Span: 40 bytes against the 120 a call took as a span (docs/design.md
// §3). Its Origin is OriginCUDARuntime or OriginCUDADriver.
type APICall struct {
	Start int64
	End   int64
	Name  StrID
	// Pid and Tid are the calling process and thread.
	Pid, Tid uint32
	// Correlation ties the call to the GPU ops it launched (GPUOp.Correlation
	// of the same Pid); 0 when the input has none.
	Correlation uint32
	// Return is the call's return code (cudaError_t or CUresult): 0 for
	// success. Perfetto, the nsys export and Dump show a nonzero one as
	// the attribute APIReturnKey.
	Return int32
	Source SourceID
	Origin SpanOrigin
}

// APIReturnKey names a call's nonzero return code where calls are written
// as slices or spans with attributes (Perfetto, Dump).
const APIReturnKey = "cuda.return_value"

// Duration is End − Start.
func (c *APICall) Duration() int64 { return c.End - c.Start }

// Event is a timestamped annotation on a span (an OTLP span event). Its
// attributes lie in the trace's AttrArena, as a span's do (EventAttrs).
type Event struct {
	Name  StrID
	Time  int64
	Attrs AttrRange
}

// Link points from a span to another span, possibly in another trace. Its
// attributes lie in the trace's AttrArena (LinkAttrs).
type Link struct {
	TraceID TraceID
	SpanID  SpanID
	Attrs   AttrRange
}

// GPUOpKind says what a GPU operation is.
type GPUOpKind uint8

const (
	OpKernel GPUOpKind = iota
	OpMemcpy
	OpMemset
	OpSync
	// OpGraph is a whole CUDA graph execution, recorded as one interval when
	// the profiler traced graphs as a unit (nsys --cuda-graph-trace=graph)
	// rather than node by node; its kernels are not separately visible.
	OpGraph
)

var opKindNames = [...]string{"kernel", "memcpy", "memset", "sync", "graph"}

func (k GPUOpKind) String() string {
	if int(k) < len(opKindNames) {
		return opKindNames[k]
	}
	return "op(" + strconv.Itoa(int(k)) + ")"
}

// CopyKind is the direction of a memcpy (CUPTI's memcpy kinds, simplified).
type CopyKind uint8

const (
	CopyUnknown CopyKind = iota
	CopyHtoD
	CopyDtoH
	CopyDtoD
	CopyHtoH
	CopyPtoP
)

var copyKindNames = [...]string{"unknown", "HtoD", "DtoH", "DtoD", "HtoH", "PtoP"}

func (k CopyKind) String() string {
	if int(k) < len(copyKindNames) {
		return copyKindNames[k]
	}
	return "copy(" + strconv.Itoa(int(k)) + ")"
}

// GPUOp is one kernel, memcpy, memset or synchronization on a GPU. There can
// be tens of millions, so it has no attribute map, every string is a StrID,
// and what only some ops have or what many ops share — a copy's size, a
// kernel's launch dimensions, its CUDA graph — is an OpShape the op points
// at (Trace.ShapeOf). The fields are ordered so that the struct has no
// padding (48 bytes; with the shape inline it was 72, and GPU ops were a
// third of analyze's live heap: docs/design.md §3).
type GPUOp struct {
	Start int64
	End   int64
	// Name is the op's full name: for a kernel the demangled name with
	// template arguments, as nsys and CUPTI report it.
	Name StrID
	// Stream and Correlation as CUPTI reports them; Correlation matches the
	// launching API call (APICall.Correlation) of the same Pid.
	Stream      uint32
	Correlation uint32
	Pid         uint32
	// ShortName is a kernel's base name without namespace, template
	// arguments or parameters (nsys shortName, e.g. "flash_fwd_kernel" for
	// "void flash_fwd_kernel<Flash_fwd_kernel_traits<...>>(Flash_fwd_params)");
	// 0 when the input does not give one.
	ShortName StrID
	// Shape is the op's size, launch dimensions and graph (Trace.ShapeOf);
	// 0 when it has none of them.
	Shape ShapeID
	// Device is the CUDA device ordinal; -1 when unknown.
	Device int16
	Source SourceID
	Kind   GPUOpKind
	Copy   CopyKind
}

// ShapeID identifies an OpShape in a Trace's shape table. The zero ShapeID
// is always the zero shape.
type ShapeID uint32

// OpShape is what a GPU op has besides its times and names. Few ops differ
// in it — a kernel is launched with the same dimensions from the same graph
// again and again — so the trace keeps each distinct shape once.
type OpShape struct {
	// Bytes is the size of a memcpy or memset.
	Bytes uint64
	// Grid and Block are launch dimensions of a kernel.
	Grid  [3]uint32
	Block [3]uint16
	// GraphID is the CUDA graph the kernel was launched from, or the graph
	// a whole-graph execution ran (0 if none).
	GraphID uint32
}

// InternShape returns the ID of s in t's shape table, adding it if new.
func (t *Trace) InternShape(s OpShape) ShapeID {
	if s == (OpShape{}) {
		return 0
	}
	if t.shapeIDs == nil {
		t.shapeIDs = make(map[OpShape]ShapeID, len(t.Shapes))
		for i, v := range t.Shapes {
			t.shapeIDs[v] = ShapeID(i + 1)
		}
	}
	if id, ok := t.shapeIDs[s]; ok {
		return id
	}
	t.Shapes = append(t.Shapes, s)
	id := ShapeID(len(t.Shapes))
	t.shapeIDs[s] = id
	return id
}

// ShapeOf is o's shape: the zero shape when o has none (or its ID is not in
// t's table).
func (t *Trace) ShapeOf(o *GPUOp) OpShape {
	if o.Shape == 0 || int(o.Shape) > len(t.Shapes) {
		return OpShape{}
	}
	return t.Shapes[o.Shape-1]
}

// Busy reports whether the op occupies its device: kernels, copies, memsets
// and whole-graph executions. A synchronization record is the host waiting
// on the device (a synchronizing API call), not work. A device's busy time
// is the union of the intervals of its busy ops, a device being (host,
// device index): the GPU section and its HTML timeline (attribution/gpu.go,
// report/htmlviews.go) and a step's GPU buckets (attribution/tokens.go). A
// tenant's gpu_busy load (causal/load.go) is narrower on purpose: the union
// of the tenant's kernels, whose contention it measures (docs/tenants.md).
func (o *GPUOp) Busy() bool { return o.Kind != OpSync }

// Duration is End − Start.
func (o *GPUOp) Duration() int64 { return o.End - o.Start }

// Sample is one point of a counter time series (NVML, nsys GPU metrics,
// Prometheus and OTLP metrics).
type Sample struct {
	Time   int64
	Value  float64
	Metric StrID
	// Series is the labelled series the sample belongs to (0: none).
	Series SeriesID
	// Pid is the process the sample is about (0: device-level).
	Pid uint32
	// Device is the GPU ordinal; Instance the MIG GPU instance (-1: none).
	Device   int16
	Instance int16
	Source   SourceID
}

// MemoryOp says whether a memory event allocates or releases.
type MemoryOp uint8

const (
	MemAlloc MemoryOp = iota
	MemFree
)

func (o MemoryOp) String() string {
	if o == MemFree {
		return "free"
	}
	return "alloc"
}

// MemoryKind is the kind of memory an event is about (CUPTI's memory kinds).
type MemoryKind uint8

const (
	MemPageable MemoryKind = iota
	MemPinned
	MemDevice
	MemArray
	MemManaged
	MemDeviceStatic
	MemManagedStatic
	MemUnknown
)

var memKindNames = [...]string{"pageable", "pinned", "device", "array", "managed", "device-static", "managed-static", "unknown"}

func (k MemoryKind) String() string {
	if int(k) < len(memKindNames) {
		return memKindNames[k]
	}
	return "mem(" + strconv.Itoa(int(k)) + ")"
}

// MemoryEvent is one allocation or release of GPU-visible memory (nsys
// CUDA_GPU_MEMORY_USAGE_EVENTS). A release names the address and size of the
// allocation it ends.
type MemoryEvent struct {
	Time    int64
	Address uint64
	Bytes   uint64
	Pid     uint32
	// Correlation matches the API call that caused the event (0 if none).
	Correlation uint32
	// Device is the CUDA device ordinal; -1 for host memory or unknown.
	Device int16
	Source SourceID
	Op     MemoryOp
	Kind   MemoryKind
}

// Device describes a GPU seen in the input.
type Device struct {
	ID          int16
	Name        string
	UUID        string
	SMs         int
	MemoryBytes uint64
	Source      SourceID
}

// Process names a process seen in the input.
type Process struct {
	Pid    uint32
	Name   string
	Source SourceID
}

// Thread names a thread seen in the input.
type Thread struct {
	Pid, Tid uint32
	Name     string
	Source   SourceID
}

// HostID is the opaque identity Source.Host holds for a machine named name:
// the first 4 bytes of the name's SHA-256, in hex. Every decoder that learns
// a host name (an nsys export's Hostname, a PyTorch profiler trace's
// host_name, OTLP's host.name, a capture's hostname) turns it into
// Source.Host through this one function, so inputs from one machine group
// together whatever their format, and the name itself never leaves the
// decoder: clock domains ("realtime@<HostID>") and Parquet's host column are
// named from Source.Host. An empty name (no host known) has no identity: "".
func HostID(name string) string {
	if name == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:4])
}
