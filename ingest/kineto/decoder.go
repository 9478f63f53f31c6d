package kineto

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/jsonscan"
	"github.com/llmprof/llmprof/internal/spill"
)

// Decoder reads PyTorch profiler (Kineto) Chrome-trace JSON — what
// torch.profiler's export_chrome_trace and tensorboard_trace_handler write,
// CUDA and ROCm — into the model. The zero Decoder reads everything.
type Decoder struct {
	// SkipPython drops python_function events (with_stack=True writes one
	// per Python call, roughly doubling a trace, and they carry no GPU work).
	SkipPython bool
}

// Name implements ingest.Decoder.
func (Decoder) Name() string { return "kineto" }

// Format is the Source.Format of a decoded Kineto trace.
const Format = "kineto-json"

// Source.Meta keys the decoder sets. Nothing else from the file's top level
// is kept: it can hold user, host and job names.
const (
	MetaSchemaVersion = "kineto.schema_version"
	MetaBaseTime      = "kineto.base_time_ns" // baseTimeNanoseconds, added to every ts
	MetaTimeUnit      = "kineto.display_time_unit"
	MetaTimestamps    = "kineto.timestamps" // "absolute", "relative" (to the base) or "relative-unanchored"
	MetaRank          = "kineto.rank"       // distributedInfo.rank
	MetaWorldSize     = "kineto.world_size" // distributedInfo.world_size
	MetaBackend       = "kineto.backend"    // distributedInfo.backend
	MetaNCCLVersion   = "kineto.nccl_version"
	MetaCUPTIVersion  = "kineto.cupti_version"
	MetaCUDARuntime   = "kineto.cuda_runtime_version"
	MetaCUDADriver    = "kineto.cuda_driver_version"
	MetaGPU           = "kineto.gpu" // "cuda" or "rocm", from the runtime call names
)

// Span attributes the decoder sets.
const (
	// AttrCategory is set on CPU spans that are not cpu_op (python_function)
	// and on user annotations, with the event's cat.
	AttrCategory = "kineto.cat"
	// AttrDevice is the GPU of a gpu_user_annotation span, whose Tid is the
	// stream.
	AttrDevice = "gpu.device"
	// AttrNVTXType is what makes a user annotation read as an NVTX
	// push/pop range (nsys.NVTXPushPop) to the NVTX summaries.
	AttrNVTXType = "nvtx.type"
	nvtxPushPop  = "push_pop"
)

// Sniff implements ingest.Decoder: a JSON object whose first bytes name
// Kineto's top-level keys. Kineto writes schemaVersion first, then
// deviceProperties or distributedInfo; later writers (a json.dump of a
// loaded trace) may sort the keys, which puts baseTimeNanoseconds and
// deviceProperties before traceEvents too. llmprof's own Perfetto export
// (traceEvents and otherData, no schemaVersion) is not taken for one.
func (Decoder) Sniff(in *ingest.Input) bool {
	if in.Dir {
		return false
	}
	h := bytes.TrimLeft(in.Head, " \t\r\n\xef\xbb\xbf")
	if len(h) == 0 || h[0] != '{' {
		return false
	}
	kineto := bytes.Contains(h, []byte(`"schemaVersion"`)) || bytes.Contains(h, []byte(`"deviceProperties"`)) ||
		bytes.Contains(h, []byte(`"baseTimeNanoseconds"`)) || bytes.Contains(h, []byte(`"distributedInfo"`))
	return kineto && (bytes.Contains(h, []byte(`"traceEvents"`)) || bytes.Contains(h, []byte(`"schemaVersion"`)))
}

// Decode implements ingest.Decoder.
func (dec Decoder) Decode(ctx context.Context, in *ingest.Input, t *ingest.Trace) error {
	rc, err := in.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	// Size the record slices once from the file's size (about one span per
	// 500 bytes and one GPU op per 2 KB in real and synthetic traces; a
	// gzip'd trace is taken as 8× its size): growing them by appending
	// would copy them and, at the peak, hold two copies.
	size := in.Size
	if in.Compression != ingest.CompressionNone {
		size = min(size*8, 1<<36)
	}
	if t.Spans == nil && t.APICalls == nil && t.GPUOps == nil {
		// The spans hold no pointers: past the memory budget they live
		// in a spill file (internal/spill).
		t.Spans = spill.Slice[ingest.Span](int(size / 1024))
		t.APICalls = make([]ingest.APICall, 0, size/1024)
		t.GPUOps = make([]ingest.GPUOp, 0, size/2048)
	}
	return dec.decode(ctx, rc, t)
}

// DecodeReader decodes a trace from r into a new Trace named path (Validate
// is not run).
func (dec Decoder) DecodeReader(ctx context.Context, r io.Reader, path string) (*ingest.Trace, error) {
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: path, Format: dec.Name()}}
	if err := dec.decode(ctx, r, t); err != nil {
		return nil, &ingest.InputError{Path: path, Err: err}
	}
	return t, nil
}

func (dec Decoder) decode(ctx context.Context, r io.Reader, t *ingest.Trace) error {
	d := newDecoder(ctx, dec, t)
	if err := d.read(r); err != nil {
		return err
	}
	d.finish()
	return nil
}

// category is what an event's cat says it is.
type category uint8

const (
	catUnknown category = iota
	catNone             // no cat member
	catCPUOp
	catPython
	catUserAnnotation
	catGPUAnnotation
	catRuntime
	catDriver
	catKernel
	catMemcpy
	catMemset
	catSync
	catMemoryInstant
	catFlow      // ac2g and its older names
	catIgnored   // known, carries nothing llmprof uses
	catRangeProf // cuda_profiler_range: CUPTI range profiler counters
	catTrace     // the capture window span
)

// categories maps cat values, lower-cased (gpu_user_Annotation was spelled
// so until 2022), including the names Kineto used before 2021-06
// (docs/kineto.md).
var categories = map[string]category{
	"cpu_op": catCPUOp, "operator": catCPUOp,
	"python_function": catPython,
	"user_annotation": catUserAnnotation, "user": catUserAnnotation,
	"gpu_user_annotation": catGPUAnnotation,
	"cuda_runtime":        catRuntime, "runtime": catRuntime,
	"cuda_driver": catDriver,
	"kernel":      catKernel,
	"gpu_memcpy":  catMemcpy, "memcpy": catMemcpy,
	"gpu_memset": catMemset, "memset": catMemset,
	"cuda_sync":         catSync,
	"cpu_instant_event": catMemoryInstant,
	"ac2g":              catFlow, "async_cpu_to_gpu": catFlow, "async_gpu": catFlow, "async": catFlow,
	"fwdbwd": catIgnored, "cuda_event": catIgnored,
	"cuda_profiler_range": catRangeProf,
	"trace":               catTrace,
}

// event is one traceEvents element as read; its slices are reused.
type event struct {
	ph       byte
	cat      category
	rawCat   []byte
	name     []byte
	pid, tid ident
	ts, dur  int64
	hasTs    bool
	hasDur   bool
	badTime  bool
	id       ident
	args     []byte
	hasArgs  bool
	argsOff  int64
}

// ident is a pid, tid or flow id: a number, or a string ("Spans").
type ident struct {
	num   int64
	isNum bool
}

// eventArgs holds the args members the decoder uses.
type eventArgs struct {
	correlation, device, inDevice, stream, bytes, graphID opt
	grid, block                                           [3]opt
	devType, devID, addr, memBytes                        opt
	kind                                                  []byte
	name                                                  []byte
}

// opt is an optional integer.
type opt struct {
	v  int64
	ok bool
}

// flowEnd is an ac2g flow's finishing end, on a GPU op's track.
type flowEnd struct {
	pid, tid, ts, id int64
}

type threadRef struct{ pid, tid uint32 }

type decoder struct {
	ctx  context.Context
	opts Decoder
	t    *ingest.Trace
	sc   *jsonscan.Scanner
	as   jsonscan.Scanner // reads captured args
	ev   event
	a    eventArgs
	n    int // traceEvents elements read

	base              int64
	hasBase           bool
	added             int64 // what finish added to every time (the base, once placed)
	minTs, maxTs      int64
	sawTime           bool
	gpuAnnotationSpan []int32 // indices of gpu_user_annotation spans (pid to fix)
	flows             []flowEnd
	procNames         map[uint32]string
	threadNames       map[threadRef]string
	unknownCats       map[string]int
	unknownOrder      []string
	counts            struct {
		flowS, flowF, ignored, rangeProf, trace, noDur, noTs, negDur, zeroTs, counters, oom, rocm, cuda int
	}
	keys struct {
		cat, device, nvtxType                       ingest.StrID
		python, userAnnotation, gpuAnnotation, push ingest.StrID
	}
}

func newDecoder(ctx context.Context, opts Decoder, t *ingest.Trace) *decoder {
	d := &decoder{ctx: ctx, opts: opts, t: t, procNames: map[uint32]string{}, threadNames: map[threadRef]string{},
		unknownCats: map[string]int{}}
	s := t.Strings
	d.keys.cat, d.keys.device, d.keys.nvtxType = s.Intern(AttrCategory), s.Intern(AttrDevice), s.Intern(AttrNVTXType)
	d.keys.python, d.keys.userAnnotation, d.keys.gpuAnnotation = s.Intern("python_function"), s.Intern("user_annotation"), s.Intern("gpu_user_annotation")
	d.keys.push = s.Intern(nvtxPushPop)
	return d
}

func (d *decoder) warnf(pos, code, format string, args ...any) {
	d.t.Warnf(0, pos, code, format, args...)
}

func (d *decoder) pos() string { return "traceEvents[" + strconv.Itoa(d.n) + "]" }

// read walks the top-level object. A file cut off or damaged after some
// events keeps those events, with a warning; one that is unreadable from the
// start is an error.
func (d *decoder) read(r io.Reader) error {
	d.sc = &jsonscan.Scanner{LaxSkip: true}
	s := d.sc
	s.ResetReader(r)
	if s.Peek() != '{' {
		s.Fail("expected an object") // null, too, which Open would take for nothing
	}
	if !s.Open('{') {
		return fmt.Errorf("not a PyTorch profiler trace: %v", s.Err())
	}
	sawEvents := false
	first := true
	for s.Member(&first) {
		switch string(s.Key()) {
		case "traceEvents":
			sawEvents = true
			if err := d.readEvents(); err != nil {
				return err
			}
		case "schemaVersion":
			d.meta(MetaSchemaVersion, d.scalar())
		case "displayTimeUnit":
			d.meta(MetaTimeUnit, d.scalar())
		case "baseTimeNanoseconds":
			if v, ok := parseInt(s.Number()); ok && s.Err() == nil {
				d.base, d.hasBase = v, true
			} else if s.Err() == nil {
				d.warnf("baseTimeNanoseconds", "bad-value", "baseTimeNanoseconds is not an integer; timestamps stay relative")
			}
		case "deviceProperties":
			d.readDevices()
		case "distributedInfo":
			d.readDistributed()
		case "cupti_version":
			d.meta(MetaCUPTIVersion, d.scalar())
		case "cuda_runtime_version":
			d.meta(MetaCUDARuntime, d.scalar())
		case "cuda_driver_version":
			d.meta(MetaCUDADriver, d.scalar())
		case "host_name":
			if h := d.scalar(); h != "" {
				// Source.Host, as the nsys decoder sets it for an export:
				// ranks on one machine group together, on two never merge.
				d.t.Sources[0].Host = ingest.HostID(h)
			}
		default:
			s.Skip()
		}
	}
	s.End()
	if s.Err() != nil {
		if d.n == 0 {
			return fmt.Errorf("not a readable PyTorch profiler trace: %w", s.Err())
		}
		d.warnf("", "truncated", "%v; the %d events before it were kept", s.Err(), d.n)
	}
	if !sawEvents && s.Err() == nil {
		d.warnf("", "no-events", "no traceEvents array: nothing recorded")
	}
	return nil
}

// scalar reads a number or string as text (for metadata); anything else is
// skipped.
func (d *decoder) scalar() string {
	s := d.sc
	switch c := s.Peek(); {
	case c == '"':
		return string(s.Str())
	case c == '-' || c >= '0' && c <= '9':
		return string(s.Number())
	}
	s.Skip()
	return ""
}

func (d *decoder) meta(key, v string) {
	if v == "" {
		return
	}
	src := &d.t.Sources[0]
	if src.Meta == nil {
		src.Meta = map[string]string{}
	}
	if len(v) > 64 {
		v = v[:64]
	}
	src.Meta[key] = v
}

func (d *decoder) readDevices() {
	s := d.sc
	if s.Peek() != '[' {
		s.Skip()
		return
	}
	first := true
	s.Open('[')
	for s.Elem(&first) {
		if s.Peek() != '{' {
			s.Skip()
			continue
		}
		var dev ingest.Device
		var id opt
		f := true
		s.Open('{')
		for s.Member(&f) {
			switch string(s.Key()) {
			case "id":
				id = d.intValue(s)
			case "name":
				if s.Peek() == '"' {
					dev.Name = string(s.Str())
				} else {
					s.Skip()
				}
			case "totalGlobalMem":
				if v := d.intValue(s); v.ok && v.v > 0 {
					dev.MemoryBytes = uint64(v.v)
				}
			case "numSms":
				if v := d.intValue(s); v.ok && v.v > 0 && v.v < 1<<20 {
					dev.SMs = int(v.v)
				}
			default:
				s.Skip()
			}
		}
		if id.ok && id.v >= 0 && id.v < 1<<15 {
			dev.ID = int16(id.v)
			d.t.Devices = append(d.t.Devices, dev)
		}
	}
}

func (d *decoder) readDistributed() {
	s := d.sc
	if s.Peek() != '{' {
		s.Skip()
		return
	}
	first := true
	s.Open('{')
	for s.Member(&first) {
		switch string(s.Key()) {
		case "rank":
			d.meta(MetaRank, d.scalar())
		case "world_size":
			d.meta(MetaWorldSize, d.scalar())
		case "backend":
			d.meta(MetaBackend, d.scalar())
		case "nccl_version":
			d.meta(MetaNCCLVersion, d.scalar())
		default:
			s.Skip()
		}
	}
}

// intValue reads an integer member that may be written as a number, a
// decimal string or a hex string ("0x0", ROCm streams); ok is false for
// anything else (which is consumed).
func (d *decoder) intValue(s *jsonscan.Scanner) opt {
	switch c := s.Peek(); {
	case c == '"':
		return parseIntText(s.Str())
	case c == '-' || c >= '0' && c <= '9':
		b := s.Number()
		if v, ok := parseInt(b); ok {
			return opt{v, true}
		}
		// A float (an old trace's "blocks per SM" style value): take its
		// integer part.
		if ns, ok := microsToNanos(b); ok {
			return opt{ns / 1000, true}
		}
		return opt{}
	}
	s.Skip()
	return opt{}
}

func parseIntText(b []byte) opt {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		v, err := strconv.ParseUint(string(b[2:]), 16, 64)
		return opt{int64(v), err == nil}
	}
	v, ok := parseInt(b)
	return opt{v, ok}
}

// parseInt parses a decimal integer's text.
func parseInt(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	neg := b[0] == '-'
	i := 0
	if neg {
		i = 1
	}
	if i == len(b) {
		return 0, false
	}
	var v uint64
	for ; i < len(b); i++ {
		c := b[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if v > (1<<63)/10 {
			return 0, false
		}
		v = v*10 + uint64(c-'0')
	}
	if neg {
		if v > 1<<63 {
			return 0, false
		}
		return -int64(v), true
	}
	if v > 1<<63-1 {
		return 0, false
	}
	return int64(v), true
}

func (d *decoder) readEvents() error {
	s := d.sc
	if s.Peek() != '[' {
		s.Fail("traceEvents is not an array")
		return nil
	}
	first := true
	s.Open('[')
	for s.Elem(&first) {
		if d.n&0xffff == 0 {
			if err := d.ctx.Err(); err != nil {
				return err
			}
		}
		if s.Peek() != '{' {
			d.warnf(d.pos(), "bad-event", "event is not an object; skipped")
			s.Skip()
			d.n++
			continue
		}
		d.readEvent()
		if s.Err() != nil {
			return nil
		}
		d.event()
		d.n++
	}
	return nil
}

// readEvent reads one event object into d.ev.
func (d *decoder) readEvent() {
	s := d.sc
	e := &d.ev
	*e = event{rawCat: e.rawCat[:0], name: e.name[:0], args: e.args[:0], cat: catNone}
	first := true
	s.Open('{')
	for s.Member(&first) {
		k := s.Key()
		if len(k) == 0 {
			s.Skip()
			continue
		}
		switch string(k) {
		case "ph":
			if b := d.strOrSkip(); len(b) > 0 {
				e.ph = b[0]
			}
		case "cat":
			b := d.strOrSkip()
			e.rawCat = append(e.rawCat[:0], b...)
			e.cat = lookupCategory(b)
		case "name":
			e.name = append(e.name[:0], d.strOrSkip()...)
		case "pid":
			e.pid = d.ident(s)
		case "tid":
			e.tid = d.ident(s)
		case "id":
			e.id = d.ident(s)
		case "ts":
			e.ts, e.hasTs = d.time(s, e)
		case "dur":
			e.dur, e.hasDur = d.time(s, e)
		case "args":
			if e.cat != catNone && !wantsArgs(e.cat) && e.ph != 'M' {
				s.Skip()
				continue
			}
			e.argsOff = s.Offset()
			e.args = s.AppendValue(e.args[:0])
			e.hasArgs = true
		default:
			s.Skip()
		}
	}
}

// wantsArgs says which categories' args the decoder reads; the others
// (cpu_op's input shapes and call stacks, the bulk of a trace) are skipped
// unread.
func wantsArgs(c category) bool {
	switch c {
	case catRuntime, catDriver, catKernel, catMemcpy, catMemset, catSync, catMemoryInstant, catUnknown:
		return true
	}
	return false
}

func lookupCategory(b []byte) category {
	if c, ok := categories[string(b)]; ok {
		return c
	}
	if len(b) <= 32 {
		var lower [32]byte
		for i, c := range b {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			lower[i] = c
		}
		if c, ok := categories[string(lower[:len(b)])]; ok {
			return c
		}
	}
	return catUnknown
}

func (d *decoder) strOrSkip() []byte {
	s := d.sc
	if s.Peek() == '"' {
		return s.Str()
	}
	s.Skip()
	return nil
}

func (d *decoder) ident(s *jsonscan.Scanner) ident {
	switch c := s.Peek(); {
	case c == '"':
		s.Skip()
		return ident{}
	case c == '-' || c >= '0' && c <= '9':
		v, ok := parseInt(s.Number())
		return ident{num: v, isNum: ok}
	}
	s.Skip()
	return ident{}
}

// time reads a ts or dur (µs) as nanoseconds.
func (d *decoder) time(s *jsonscan.Scanner, e *event) (int64, bool) {
	var b []byte
	switch c := s.Peek(); {
	case c == '"':
		b = s.Str()
	case c == '-' || c >= '0' && c <= '9':
		b = s.Number()
	default:
		s.Skip()
		e.badTime = true
		return 0, false
	}
	v, ok := microsToNanos(b)
	if !ok {
		e.badTime = true
	}
	return v, ok
}

// readArgs parses the captured args object of the current event.
func (d *decoder) readArgs() {
	d.a = eventArgs{kind: d.a.kind[:0], name: d.a.name[:0]}
	e := &d.ev
	if !e.hasArgs {
		return
	}
	s := &d.as
	s.LaxSkip = true
	s.ResetAt(e.args, e.argsOff, 0)
	if s.Peek() != '{' {
		return
	}
	a := &d.a
	first := true
	s.Open('{')
	for s.Member(&first) {
		switch string(s.Key()) {
		case "correlation":
			a.correlation = d.intValue(s)
		case "device":
			a.device = d.intValue(s)
		case "inDevice":
			a.inDevice = d.intValue(s)
		case "stream":
			a.stream = d.intValue(s)
		case "bytes":
			a.bytes = d.intValue(s)
		case "graph id":
			a.graphID = d.intValue(s)
		case "grid":
			d.triple(s, &a.grid)
		case "block":
			d.triple(s, &a.block)
		case "Device Type":
			a.devType = d.intValue(s)
		case "Device Id":
			a.devID = d.intValue(s)
		case "Addr":
			a.addr = d.intValue(s)
		case "Bytes":
			a.memBytes = d.intValue(s)
		case "kind":
			if s.Peek() == '"' {
				a.kind = append(a.kind[:0], s.Str()...)
			} else {
				s.Skip()
			}
		case "name":
			if s.Peek() == '"' {
				a.name = append(a.name[:0], s.Str()...)
			} else {
				s.Skip()
			}
		default:
			s.Skip()
		}
	}
}

func (d *decoder) triple(s *jsonscan.Scanner, dst *[3]opt) {
	if s.Peek() != '[' {
		s.Skip()
		return
	}
	first := true
	s.Open('[')
	for i := 0; s.Elem(&first); i++ {
		v := d.intValue(s)
		if i < 3 {
			dst[i] = v
		}
	}
}

// baseName is the file name used in the clock domain's name.
func baseName(path string) string { return filepath.Base(path) }
