// Package cuptitest writes the .lpcupti layout of llmprof's CUPTI injection
// library (record/cupti/format.go) from Go, for tests only: the decoder and
// the capture reader are checked against streams built here from the
// documented layout, with its own constants, not the decoder's.
package cuptitest

import (
	"bytes"
	"encoding/binary"
)

// The layout's constants, as record/cupti/format.go documents them.
const (
	Magic         = "LLMPCUPT"
	FormatVersion = 1
	HeaderSize    = 32

	KindClock   = 1
	KindString  = 2
	KindKernel  = 3
	KindMemcpy  = 4
	KindMemset  = 5
	KindSync    = 6
	KindAPI     = 7
	KindDropped = 8

	ClockStart    = 0
	ClockPeriodic = 1
	ClockEnd      = 2
	ClockSignal   = 3

	DomainDriver  = 1
	DomainRuntime = 2
)

// Stream is a .lpcupti file being written.
type Stream struct {
	bytes.Buffer
}

// New starts a stream with its header.
func New(pid, api, runtime uint32) *Stream {
	w := &Stream{}
	w.WriteString(Magic)
	w.U16(FormatVersion)
	w.U16(HeaderSize)
	w.U32(pid)
	w.U32(api)
	w.U32(runtime)
	w.U32(0)
	w.U32(0)
	return w
}

// U8, U16, U32 and U64 append little-endian integers.
func (w *Stream) U8(v uint8)   { w.WriteByte(v) }
func (w *Stream) U16(v uint16) { _ = binary.Write(w, binary.LittleEndian, v) }
func (w *Stream) U32(v uint32) { _ = binary.Write(w, binary.LittleEndian, v) }
func (w *Stream) U64(v uint64) { _ = binary.Write(w, binary.LittleEndian, v) }

// Record writes a record of kind whose payload body appends, padded to 8.
func (w *Stream) Record(kind uint16, body func(p *Stream)) {
	p := &Stream{}
	body(p)
	for p.Len()%8 != 0 {
		p.U8(0)
	}
	w.U16(kind)
	w.U16(0)
	w.U32(uint32(8 + p.Len()))
	w.Write(p.Bytes())
}

// Str writes a string record.
func (w *Stream) Str(id uint32, s string) {
	w.Record(KindString, func(p *Stream) { p.U32(id); p.U32(uint32(len(s))); p.WriteString(s) })
}

// Clock writes a clock record.
func (w *Stream) Clock(label uint32, cupti uint64, lo, hi, mono int64) {
	w.Record(KindClock, func(p *Stream) {
		p.U32(label)
		p.U32(0)
		p.U64(cupti)
		p.U64(uint64(lo))
		p.U64(uint64(hi))
		p.U64(uint64(mono))
	})
}

// Kernel is a kernel record's fields.
type Kernel struct {
	Start, End, GraphNode                           uint64
	Corr, Device, Context, Stream, Name, Graph      uint32
	GX, GY, GZ, BX, BY, BZ, StaticSmem, DynamicSmem int32
	Regs                                            uint16
	Kind                                            uint8
}

// Kernel writes a kernel record.
func (w *Stream) Kernel(k Kernel) {
	w.Record(KindKernel, func(p *Stream) {
		p.U64(k.Start)
		p.U64(k.End)
		p.U64(k.GraphNode)
		for _, v := range []uint32{k.Corr, k.Device, k.Context, k.Stream, k.Name, k.Graph} {
			p.U32(v)
		}
		for _, v := range []int32{k.GX, k.GY, k.GZ, k.BX, k.BY, k.BZ, k.StaticSmem, k.DynamicSmem} {
			p.U32(uint32(v))
		}
		p.U16(k.Regs)
		p.U8(k.Kind)
		p.U8(0)
		p.U32(0)
	})
}

// Memcpy is a memcpy record's fields.
type Memcpy struct {
	Start, End, Bytes, GraphNode                      uint64
	Corr, RuntimeCorr, Device, Context, Stream, Graph uint32
	CopyKind, SrcKind, DstKind, Flags                 uint8
}

// Memcpy writes a memcpy record.
func (w *Stream) Memcpy(m Memcpy) {
	w.Record(KindMemcpy, func(p *Stream) {
		p.U64(m.Start)
		p.U64(m.End)
		p.U64(m.Bytes)
		p.U64(m.GraphNode)
		for _, v := range []uint32{m.Corr, m.RuntimeCorr, m.Device, m.Context, m.Stream, m.Graph} {
			p.U32(v)
		}
		p.U8(m.CopyKind)
		p.U8(m.SrcKind)
		p.U8(m.DstKind)
		p.U8(m.Flags)
		p.U32(0)
	})
}

// Memset is a memset record's fields.
type Memset struct {
	Start, End, Bytes, GraphNode                uint64
	Corr, Device, Context, Stream, Graph, Value uint32
	Flags, MemKind                              uint16
}

// Memset writes a memset record.
func (w *Stream) Memset(m Memset) {
	w.Record(KindMemset, func(p *Stream) {
		p.U64(m.Start)
		p.U64(m.End)
		p.U64(m.Bytes)
		p.U64(m.GraphNode)
		for _, v := range []uint32{m.Corr, m.Device, m.Context, m.Stream, m.Graph, m.Value} {
			p.U32(v)
		}
		p.U16(m.Flags)
		p.U16(m.MemKind)
		p.U32(0)
	})
}

// Sync writes a synchronization record.
func (w *Stream) Sync(start, end uint64, corr, context, stream, event, typ uint32) {
	w.Record(KindSync, func(p *Stream) {
		p.U64(start)
		p.U64(end)
		for _, v := range []uint32{corr, context, stream, event, typ, 0} {
			p.U32(v)
		}
	})
}

// API writes a runtime or driver API call.
func (w *Stream) API(start, end uint64, corr, cbid, pid, tid, ret, name uint32, domain uint8) {
	w.Record(KindAPI, func(p *Stream) {
		p.U64(start)
		p.U64(end)
		for _, v := range []uint32{corr, cbid, pid, tid, ret, name} {
			p.U32(v)
		}
		p.U8(domain)
	})
}

// Dropped writes a dropped-records record.
func (w *Stream) Dropped(n uint64, stream uint32) {
	w.Record(KindDropped, func(p *Stream) { p.U64(n); p.U32(stream); p.U32(0) })
}
