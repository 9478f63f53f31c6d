package cupti

import (
	"bytes"
	"encoding/binary"
)

// streamWriter writes the .lpcupti layout as llmprof_cupti.c does, for
// tests only: the decoder is checked against streams built from the
// documented layout (format.go), not against itself.
type streamWriter struct {
	bytes.Buffer
}

func newStream(pid, api, runtime uint32) *streamWriter {
	w := &streamWriter{}
	w.WriteString(Magic)
	w.u16(FormatVersion)
	w.u16(HeaderSize)
	w.u32(pid)
	w.u32(api)
	w.u32(runtime)
	w.u32(0)
	w.u32(0)
	return w
}

func (w *streamWriter) u8(v uint8)   { w.WriteByte(v) }
func (w *streamWriter) u16(v uint16) { _ = binary.Write(w, binary.LittleEndian, v) }
func (w *streamWriter) u32(v uint32) { _ = binary.Write(w, binary.LittleEndian, v) }
func (w *streamWriter) u64(v uint64) { _ = binary.Write(w, binary.LittleEndian, v) }

// record writes a record of kind whose payload body() appends, padded to 8.
func (w *streamWriter) record(kind uint16, body func(p *streamWriter)) {
	p := &streamWriter{}
	body(p)
	for p.Len()%8 != 0 {
		p.u8(0)
	}
	w.u16(kind)
	w.u16(0)
	w.u32(uint32(8 + p.Len()))
	w.Write(p.Bytes())
}

func (w *streamWriter) str(id uint32, s string) {
	w.record(KindString, func(p *streamWriter) { p.u32(id); p.u32(uint32(len(s))); p.WriteString(s) })
}

func (w *streamWriter) clock(label uint32, cupti uint64, lo, hi, mono int64) {
	w.record(KindClock, func(p *streamWriter) {
		p.u32(label)
		p.u32(0)
		p.u64(cupti)
		p.u64(uint64(lo))
		p.u64(uint64(hi))
		p.u64(uint64(mono))
	})
}

type kernelRec struct {
	start, end, graphNode                           uint64
	corr, device, context, stream, name, graph      uint32
	gx, gy, gz, bx, by, bz, staticSmem, dynamicSmem int32
	regs                                            uint16
	kind                                            uint8
}

func (w *streamWriter) kernel(k kernelRec) {
	w.record(KindKernel, func(p *streamWriter) {
		p.u64(k.start)
		p.u64(k.end)
		p.u64(k.graphNode)
		for _, v := range []uint32{k.corr, k.device, k.context, k.stream, k.name, k.graph} {
			p.u32(v)
		}
		for _, v := range []int32{k.gx, k.gy, k.gz, k.bx, k.by, k.bz, k.staticSmem, k.dynamicSmem} {
			p.u32(uint32(v))
		}
		p.u16(k.regs)
		p.u8(k.kind)
		p.u8(0)
		p.u32(0)
	})
}

type memcpyRec struct {
	start, end, bytes, graphNode                      uint64
	corr, runtimeCorr, device, context, stream, graph uint32
	copyKind, srcKind, dstKind, flags                 uint8
}

func (w *streamWriter) memcpy(m memcpyRec) {
	w.record(KindMemcpy, func(p *streamWriter) {
		p.u64(m.start)
		p.u64(m.end)
		p.u64(m.bytes)
		p.u64(m.graphNode)
		for _, v := range []uint32{m.corr, m.runtimeCorr, m.device, m.context, m.stream, m.graph} {
			p.u32(v)
		}
		p.u8(m.copyKind)
		p.u8(m.srcKind)
		p.u8(m.dstKind)
		p.u8(m.flags)
		p.u32(0)
	})
}

type memsetRec struct {
	start, end, bytes, graphNode                uint64
	corr, device, context, stream, graph, value uint32
	flags, memKind                              uint16
}

func (w *streamWriter) memset(m memsetRec) {
	w.record(KindMemset, func(p *streamWriter) {
		p.u64(m.start)
		p.u64(m.end)
		p.u64(m.bytes)
		p.u64(m.graphNode)
		for _, v := range []uint32{m.corr, m.device, m.context, m.stream, m.graph, m.value} {
			p.u32(v)
		}
		p.u16(m.flags)
		p.u16(m.memKind)
		p.u32(0)
	})
}

func (w *streamWriter) sync(start, end uint64, corr, context, stream, event, typ uint32) {
	w.record(KindSync, func(p *streamWriter) {
		p.u64(start)
		p.u64(end)
		for _, v := range []uint32{corr, context, stream, event, typ, 0} {
			p.u32(v)
		}
	})
}

func (w *streamWriter) api(start, end uint64, corr, cbid, pid, tid, ret, name uint32, domain uint8) {
	w.record(KindAPI, func(p *streamWriter) {
		p.u64(start)
		p.u64(end)
		for _, v := range []uint32{corr, cbid, pid, tid, ret, name} {
			p.u32(v)
		}
		p.u8(domain)
	})
}

func (w *streamWriter) dropped(n uint64, stream uint32) {
	w.record(KindDropped, func(p *streamWriter) { p.u64(n); p.u32(stream); p.u32(0) })
}
