package cupti

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/llmprof/llmprof/ingest"
)

// SourceFormat is the format of a decoded file's source.
const SourceFormat = "llmprof-cupti"

// Options place a file's records.
type Options struct {
	// Host is the ingest.HostID of the machine that recorded the file, and
	// Boot its boot ID: CUPTI's clock is per host and boot, so every file of
	// one capture shares the clock domain "cupti@<Host>/<Boot>" and one
	// alignment fit.
	Host, Boot string
}

// Result says what a decode found besides the records.
type Result struct {
	Pid uint32
	// Truncated: the file ends inside a record (the process was killed
	// while writing); every complete record before it is kept.
	Truncated bool
	// Clean: the library's final flush is there (the clock record of its
	// atexit flush, or of the flush its SIGTERM/SIGINT handler made).
	Clean bool
	// Dropped counts records CUPTI itself dropped (a full buffer).
	Dropped uint64
	// Incomplete counts activity records without a valid interval (CUPTI
	// writes zero timestamps for work unfinished at a forced flush).
	Incomplete int
	// Unknown counts records of kinds this version does not know.
	Unknown int
	// DriverFolded counts driver API calls dropped because the runtime
	// call that made them has the same correlation ID (one launching call
	// per correlation, as nsys and Kineto show it).
	DriverFolded int
}

// Decode reads one .lpcupti file of size bytes from r into t, whose
// Sources[0] is the file's source: kernels, memcpys, memsets and
// synchronizations as GPU ops, runtime and driver API calls as spans with
// their correlation IDs, and every clock record as an ingest.AnchorClockPair
// (Local = the CUPTI timestamp, [RefLow, RefHigh] = the CLOCK_REALTIME
// bracket). Errors name the file (name) and the offset of the bad record: a
// header that is not this format, a record whose size is impossible, a
// string defined out of order or referred to before its definition. A file
// cut inside a record is not an error (Result.Truncated). Memory is bounded
// by the records themselves: no size read from the file allocates more than
// MaxRecord bytes.
func Decode(name string, r io.Reader, size int64, t *ingest.Trace, opts Options) (Result, error) {
	d := &decoder{name: name, t: t, r: bufio.NewReaderSize(r, 1<<16), remaining: size}
	if len(t.Sources) == 0 {
		t.Sources = []ingest.Source{{Path: name}}
	}
	res, err := d.run(opts)
	if err != nil {
		return res, fmt.Errorf("%s: %w", name, err)
	}
	return res, nil
}

type decoder struct {
	name      string
	t         *ingest.Trace
	r         *bufio.Reader
	off       int64
	remaining int64
	buf       []byte
	strs      []ingest.StrID // by id-1
	res       Result
	anchors   []ingest.ClockAnchor
	pid       uint32
}

var (
	errShort = errors.New("short")
	le       = binary.LittleEndian
)

func (d *decoder) read(n int) ([]byte, error) {
	if cap(d.buf) < n {
		d.buf = make([]byte, n)
	}
	b := d.buf[:n]
	k, err := io.ReadFull(d.r, b)
	d.off += int64(k)
	d.remaining -= int64(k)
	if err == io.ErrUnexpectedEOF || err == io.EOF {
		return b[:k], errShort
	}
	return b, err
}

func (d *decoder) run(opts Options) (Result, error) {
	h, err := d.read(HeaderSize)
	if err == errShort {
		return d.res, fmt.Errorf("%d bytes: too short for the %d-byte header of a CUPTI capture file", len(h), HeaderSize)
	}
	if err != nil {
		return d.res, err
	}
	if string(h[:8]) != Magic {
		return d.res, fmt.Errorf("not a CUPTI capture file of llmprof (magic %q, want %q)", printable(h[:8]), Magic)
	}
	version, hsize := le.Uint16(h[8:]), le.Uint16(h[10:])
	if version == 0 || version > FormatVersion {
		return d.res, fmt.Errorf("format version %d; this llmprof reads version %d (upgrade llmprof)", version, FormatVersion)
	}
	if hsize < HeaderSize || hsize%8 != 0 {
		return d.res, fmt.Errorf("header size %d: want a multiple of 8, at least %d", hsize, HeaderSize)
	}
	d.pid = le.Uint32(h[12:])
	d.res.Pid = d.pid
	api, runtime := le.Uint32(h[16:]), le.Uint32(h[20:])
	if extra := int(hsize) - HeaderSize; extra > 0 {
		if _, err := d.read(extra); err != nil {
			return d.res, fmt.Errorf("header of %d bytes: %w", hsize, shortErr(err))
		}
	}
	src := &d.t.Sources[0]
	src.Format = SourceFormat
	src.Producer = "llmprof CUPTI injection (CUPTI API " + strconv.FormatUint(uint64(api), 10) +
		", library " + strconv.FormatUint(uint64(runtime), 10) + ")"
	src.Host = opts.Host
	src.Clock = ingest.ClockDomain{Name: "cupti@" + opts.Host + "/" + opts.Boot, Kind: ingest.ClockMonotonic}

	for {
		at := d.off
		rh, err := d.read(8)
		if err == errShort {
			if len(rh) > 0 {
				d.res.Truncated = true
			}
			break
		}
		if err != nil {
			return d.res, err
		}
		kind, size := le.Uint16(rh[0:]), le.Uint32(rh[4:])
		if size < 8 || size%8 != 0 || size > MaxRecord {
			return d.res, fmt.Errorf("offset %d: record size %d (kind %d): want a multiple of 8 from 8 to %d", at, size, kind, MaxRecord)
		}
		n := int(size) - 8
		if int64(n) > d.remaining {
			// The rest of the file is shorter than the record: cut off.
			d.res.Truncated = true
			break
		}
		p, err := d.read(n)
		if err == errShort {
			d.res.Truncated = true
			break
		}
		if err != nil {
			return d.res, err
		}
		want, known := payloadSize[kind]
		if !known {
			d.res.Unknown++
			continue
		}
		if n < want {
			return d.res, fmt.Errorf("offset %d: %s record of %d bytes, want at least %d", at, kindName(kind), size, want+8)
		}
		if err := d.record(kind, p, at); err != nil {
			return d.res, fmt.Errorf("offset %d: %w", at, err)
		}
	}
	d.finish()
	return d.res, nil
}

func shortErr(err error) error {
	if err == errShort {
		return errors.New("the file ends inside it")
	}
	return err
}

func kindName(k uint16) string {
	switch k {
	case KindClock:
		return "clock"
	case KindString:
		return "string"
	case KindKernel:
		return "kernel"
	case KindMemcpy:
		return "memcpy"
	case KindMemset:
		return "memset"
	case KindSync:
		return "synchronization"
	case KindAPI:
		return "API"
	case KindDropped:
		return "dropped"
	}
	return "kind " + strconv.Itoa(int(k))
}

// str resolves a string id; 0 is the empty name.
func (d *decoder) str(id uint32, what string) (ingest.StrID, error) {
	if id == 0 {
		return 0, nil
	}
	if uint64(id) > uint64(len(d.strs)) {
		return 0, fmt.Errorf("%s names string %d, which no earlier string record defines (%d defined)", what, id, len(d.strs))
	}
	return d.strs[id-1], nil
}

// interval converts CUPTI's unsigned times; ok is false for a record
// without a valid one.
func (d *decoder) interval(start, end uint64) (int64, int64, bool) {
	if start == 0 || end < start || end > math.MaxInt64 {
		d.res.Incomplete++
		return 0, 0, false
	}
	return int64(start), int64(end), true
}

func device(id uint32) int16 {
	if id > math.MaxInt16 {
		return -1
	}
	return int16(id)
}

func dim16(v uint32) uint16 {
	if v > math.MaxUint16 {
		return math.MaxUint16
	}
	return uint16(v)
}

func (d *decoder) record(kind uint16, p []byte, at int64) error {
	t := d.t
	switch kind {
	case KindString:
		id, n := le.Uint32(p[0:]), le.Uint32(p[4:])
		if uint64(n) > uint64(len(p)-8) {
			return fmt.Errorf("string %d of %d bytes in a record with room for %d", id, n, len(p)-8)
		}
		if uint64(id) != uint64(len(d.strs))+1 {
			return fmt.Errorf("string id %d out of order (the next is %d)", id, len(d.strs)+1)
		}
		d.strs = append(d.strs, t.Strings.InternBytes(p[8:8+n]))
	case KindClock:
		c := int64(le.Uint64(p[8:]))
		lo, hi := int64(le.Uint64(p[16:])), int64(le.Uint64(p[24:]))
		label := le.Uint32(p[0:])
		if label == ClockEnd || label == ClockSignal {
			d.res.Clean = true
		}
		if c <= 0 || hi < lo {
			t.Warnf(0, "offset "+strconv.FormatInt(at, 10), "cupti-bad-clock",
				"clock record with CUPTI time %d and realtime bracket [%d, %d]: not used", c, lo, hi)
			return nil
		}
		d.anchors = append(d.anchors, ingest.ClockAnchor{Kind: ingest.AnchorClockPair, Local: c, RefLow: lo, RefHigh: hi})
	case KindKernel:
		name, err := d.str(le.Uint32(p[40:]), "kernel")
		if err != nil {
			return err
		}
		start, end, ok := d.interval(le.Uint64(p[0:]), le.Uint64(p[8:]))
		if !ok {
			return nil
		}
		t.GPUOps = append(t.GPUOps, ingest.GPUOp{
			Start: start, End: end, Name: name, Kind: ingest.OpKernel,
			Correlation: le.Uint32(p[24:]), Device: device(le.Uint32(p[28:])), Stream: le.Uint32(p[36:]),
			Pid: d.pid,
			Shape: t.InternShape(ingest.OpShape{
				GraphID: le.Uint32(p[44:]),
				Grid:    [3]uint32{le.Uint32(p[48:]), le.Uint32(p[52:]), le.Uint32(p[56:])},
				Block:   [3]uint16{dim16(le.Uint32(p[60:])), dim16(le.Uint32(p[64:])), dim16(le.Uint32(p[68:]))},
			}),
		})
	case KindMemcpy:
		start, end, ok := d.interval(le.Uint64(p[0:]), le.Uint64(p[8:]))
		if !ok {
			return nil
		}
		ck := p[56]
		op := ingest.GPUOp{Start: start, End: end, Kind: ingest.OpMemcpy,
			Correlation: le.Uint32(p[32:]), Device: device(le.Uint32(p[40:])), Stream: le.Uint32(p[48:]),
			Shape: t.InternShape(ingest.OpShape{Bytes: le.Uint64(p[16:]), GraphID: le.Uint32(p[52:])}),
			Pid:   d.pid, Name: t.Strings.Intern(MemcpyName(ck))}
		if int(ck) < len(memcpyKinds) {
			op.Copy = memcpyKinds[ck]
		}
		t.GPUOps = append(t.GPUOps, op)
	case KindMemset:
		start, end, ok := d.interval(le.Uint64(p[0:]), le.Uint64(p[8:]))
		if !ok {
			return nil
		}
		t.GPUOps = append(t.GPUOps, ingest.GPUOp{Start: start, End: end, Kind: ingest.OpMemset,
			Correlation: le.Uint32(p[32:]), Device: device(le.Uint32(p[36:])), Stream: le.Uint32(p[44:]),
			Shape: t.InternShape(ingest.OpShape{Bytes: le.Uint64(p[16:]), GraphID: le.Uint32(p[48:])}),
			Pid:   d.pid, Name: t.Strings.Intern(MemsetName)})
	case KindSync:
		start, end, ok := d.interval(le.Uint64(p[0:]), le.Uint64(p[8:]))
		if !ok {
			return nil
		}
		// CUPTI gives a synchronization no device; its stream (or context)
		// says where.
		t.GPUOps = append(t.GPUOps, ingest.GPUOp{Start: start, End: end, Kind: ingest.OpSync,
			Correlation: le.Uint32(p[16:]), Stream: le.Uint32(p[24:]), Device: -1, Pid: d.pid,
			Name: t.Strings.Intern(SyncName(le.Uint32(p[32:])))})
	case KindAPI:
		name, err := d.str(le.Uint32(p[36:]), "API call")
		if err != nil {
			return err
		}
		start, end, ok := d.interval(le.Uint64(p[0:]), le.Uint64(p[8:]))
		if !ok {
			return nil
		}
		origin := ingest.OriginCUDARuntime
		switch p[40] {
		case DomainDriver:
			origin = ingest.OriginCUDADriver
		case DomainRuntime:
		default:
			return fmt.Errorf("API call with domain %d: want 1 (driver) or 2 (runtime)", p[40])
		}
		if name == 0 {
			name = t.Strings.Intern("cbid " + strconv.FormatUint(uint64(le.Uint32(p[20:])), 10))
		}
		// The return code is a cudaError_t or CUresult, a C enum: its 32
		// bits are a signed int.
		t.APICalls = append(t.APICalls, ingest.APICall{Name: name, Start: start, End: end,
			Pid: le.Uint32(p[24:]), Tid: le.Uint32(p[28:]), Correlation: le.Uint32(p[16:]), Origin: origin,
			Return: int32(le.Uint32(p[32:]))})
	case KindDropped:
		d.res.Dropped += le.Uint64(p[0:])
	}
	return nil
}

// finish folds driver calls into the runtime calls that made them and fills
// the source's counts, anchors and warnings.
func (d *decoder) finish() {
	t := d.t
	var runtime []uint32
	for i := range t.APICalls {
		if s := &t.APICalls[i]; s.Origin == ingest.OriginCUDARuntime && s.Correlation != 0 {
			runtime = append(runtime, s.Correlation)
		}
	}
	slices.Sort(runtime)
	t.APICalls = slices.DeleteFunc(t.APICalls, func(s ingest.APICall) bool {
		if s.Origin != ingest.OriginCUDADriver || s.Correlation == 0 {
			return false
		}
		_, found := slices.BinarySearch(runtime, s.Correlation)
		if found {
			d.res.DriverFolded++
		}
		return found
	})
	src := &t.Sources[0]
	src.Anchors = d.anchors
	src.Spans, src.GPUOps = t.CPURecordCount(), len(t.GPUOps)
	src.Meta = map[string]string{
		"pid":           strconv.FormatUint(uint64(d.pid), 10),
		"driver_folded": strconv.Itoa(d.res.DriverFolded),
	}
	pos := "pid " + strconv.FormatUint(uint64(d.pid), 10)
	if d.res.Truncated {
		t.Warnf(0, pos, "cupti-truncated", "the file ends inside a record (the process was killed while writing): every complete record before it is kept")
	}
	if !d.res.Clean {
		t.Warnf(0, pos, "cupti-no-end", "no final flush: the process was killed (SIGKILL, a crash) or left through _exit, and the records still in CUPTI's buffers are lost")
	}
	if len(d.anchors) == 0 {
		t.Warnf(0, pos, "cupti-no-clock", "no clock record: the CUPTI times cannot be placed on the wall clock")
	}
	if d.res.Dropped > 0 {
		t.Warnf(0, pos, "cupti-dropped", "CUPTI dropped %d activity records (its buffers were full)", d.res.Dropped)
	}
	if d.res.Incomplete > 0 {
		t.Warnf(0, pos, "cupti-incomplete", "%d activity records without a valid start and end (unfinished at a forced flush): skipped", d.res.Incomplete)
	}
	if d.res.Unknown > 0 {
		t.Warnf(0, pos, "cupti-unknown-record", "%d records of kinds this llmprof does not know: skipped", d.res.Unknown)
	}
}

func printable(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		out[i] = c
	}
	return string(out)
}

// Op names, the same as nsys stats prints and nsys/convert.go names them
// (the test checks they agree): CUpti_ActivityMemcpyKind and nsys's
// ENUM_CUDA_MEMCPY_OPER share their values.
var memcpyLabels = [...]string{"Unknown", "Host-to-Device", "Device-to-Host", "Host-to-Array", "Array-to-Host",
	"Array-to-Array", "Array-to-Device", "Device-to-Array", "Device-to-Device", "Host-to-Host", "Peer-to-Peer"}

// memcpyKinds maps CUpti_ActivityMemcpyKind to the model's copy kinds:
// arrays count as device memory.
var memcpyKinds = [...]ingest.CopyKind{ingest.CopyUnknown, ingest.CopyHtoD, ingest.CopyDtoH, ingest.CopyHtoD, ingest.CopyDtoH,
	ingest.CopyDtoD, ingest.CopyDtoD, ingest.CopyDtoD, ingest.CopyDtoD, ingest.CopyHtoH, ingest.CopyPtoP}

// MemcpyName names a memcpy of CUPTI copy kind k.
func MemcpyName(k uint8) string {
	if int(k) < len(memcpyLabels) {
		return "[CUDA memcpy " + memcpyLabels[k] + "]"
	}
	return "[CUDA memcpy kind " + strconv.Itoa(int(k)) + "]"
}

// MemsetName names every memset.
const MemsetName = "[CUDA memset]"

var syncLabels = [...]string{"Unknown", "Event sync", "Stream wait sync", "Stream sync", "Context sync"}

// SyncName names a synchronization of CUpti_ActivitySynchronizationType k.
func SyncName(k uint32) string {
	if int(k) < len(syncLabels) {
		return "[CUDA " + syncLabels[k] + "]"
	}
	return "[CUDA sync type " + strconv.FormatUint(uint64(k), 10) + "]"
}
