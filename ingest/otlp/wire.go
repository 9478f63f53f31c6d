package otlp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"math"
)

// Protobuf wire types (https://protobuf.dev/programming-guides/encoding/).
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

var (
	// errTruncated: the input ended inside a message whose length said more
	// was to come. It ends the input; everything complete before it is kept.
	errTruncated = errors.New("truncated: the input ends inside a message")
	errVarint    = errors.New("malformed varint")
	errWireType  = errors.New("unsupported wire type")
	errLength    = errors.New("length runs past the end of the enclosing message")
)

// pbuf reads protobuf fields from a byte slice that holds one whole message
// (a span, a key-value, a resource). It is the hot path of protobuf decoding,
// so each method is small enough to inline and reports failure with ok=false;
// the caller names the problem.
type pbuf struct {
	b []byte
	i int
}

func (p *pbuf) more() bool { return p.i < len(p.b) }

func (p *pbuf) varint() (uint64, bool) {
	if p.i < len(p.b) && p.b[p.i] < 0x80 {
		v := uint64(p.b[p.i])
		p.i++
		return v, true
	}
	return p.varintSlow()
}

func (p *pbuf) varintSlow() (uint64, bool) {
	v, n := consumeVarint(p.b[p.i:])
	if n <= 0 {
		return 0, false
	}
	p.i += n
	return v, true
}

// tag reads a field key: the field number and the wire type.
func (p *pbuf) tag() (num uint64, typ int, ok bool) {
	k, ok := p.varint()
	return k >> 3, int(k & 7), ok
}

// bytes reads a length-delimited field's content (a view of the input).
func (p *pbuf) bytes() ([]byte, bool) {
	// A length under 128, one byte, is the usual case: read here, without
	// varint's call (neither it nor bytes inlines).
	if i := p.i; i < len(p.b) && p.b[i] < 0x80 {
		n := int(p.b[i])
		p.i = i + 1
		if n > len(p.b)-p.i {
			return nil, false // past the length, as bytesSlow leaves it
		}
		p.i += n
		return p.b[i+1 : p.i], true
	}
	return p.bytesSlow()
}

// shortBytes is bytes for a length under 128, small enough to inline; for
// anything else ok is false and the reader has not moved (bytes then reads
// it, or fails as it would have).
func (p *pbuf) shortBytes() ([]byte, bool) {
	i := p.i
	if i >= len(p.b) || p.b[i] >= 0x80 || int(p.b[i]) > len(p.b)-i-1 {
		return nil, false
	}
	p.i = i + 1 + int(p.b[i])
	return p.b[i+1 : p.i], true
}

// bytesSlow is bytes for a length of more than one byte.
func (p *pbuf) bytesSlow() ([]byte, bool) {
	n, ok := p.varint()
	if !ok || n > uint64(len(p.b)-p.i) {
		return nil, false
	}
	b := p.b[p.i : p.i+int(n)]
	p.i += int(n)
	return b, true
}

func (p *pbuf) fixed64() (uint64, bool) {
	if len(p.b)-p.i < 8 {
		return 0, false
	}
	v := binary.LittleEndian.Uint64(p.b[p.i:])
	p.i += 8
	return v, true
}

// skip passes over a field of the given wire type.
func (p *pbuf) skip(typ int) bool {
	switch typ {
	case wireVarint:
		_, ok := p.varint()
		return ok
	case wireFixed64:
		if len(p.b)-p.i < 8 {
			return false
		}
		p.i += 8
		return true
	case wireBytes:
		_, ok := p.bytes()
		return ok
	case wireFixed32:
		if len(p.b)-p.i < 4 {
			return false
		}
		p.i += 4
		return true
	}
	return false // groups (3, 4) were removed from proto3; 6 and 7 do not exist
}

// consumeVarint decodes a varint at the start of b. n is its length, 0 when
// b ends inside it, -1 when it is longer than 10 bytes.
func consumeVarint(b []byte) (v uint64, n int) {
	for i := 0; i < len(b); i++ {
		if i == 10 {
			return 0, -1
		}
		c := b[i]
		v |= uint64(c&0x7f) << (7 * uint(i))
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, 0
}

func float64frombits(u uint64) float64 { return math.Float64frombits(u) }

// wireReader is where the outer levels of an ExportTraceServiceRequest
// (resource spans, scope spans) are read from: a byte slice for payloads and
// framed records, a stream for a raw protobuf file, so that a file of any size
// is decoded one span message at a time.
type wireReader interface {
	// varint reads a varint; io.EOF when the input ends before it begins.
	varint() (uint64, error)
	// next returns the next n bytes, valid until the next call.
	next(n int) ([]byte, error)
	skip(n int64) error
	offset() int64
}

type sliceReader struct {
	b []byte
	i int
}

func (r *sliceReader) varint() (uint64, error) {
	if r.i >= len(r.b) {
		return 0, io.EOF
	}
	v, n := consumeVarint(r.b[r.i:])
	switch {
	case n == 0:
		return 0, errTruncated
	case n < 0:
		return 0, errVarint
	}
	r.i += n
	return v, nil
}

func (r *sliceReader) next(n int) ([]byte, error) {
	if n > len(r.b)-r.i {
		r.i = len(r.b)
		return nil, errTruncated
	}
	b := r.b[r.i : r.i+n]
	r.i += n
	return b, nil
}

func (r *sliceReader) skip(n int64) error {
	if n > int64(len(r.b)-r.i) {
		r.i = len(r.b)
		return errTruncated
	}
	r.i += int(n)
	return nil
}

func (r *sliceReader) offset() int64 { return int64(r.i) }

type streamReader struct {
	r   *bufio.Reader
	off int64
	buf []byte
}

func (r *streamReader) varint() (uint64, error) {
	var v uint64
	for i := 0; ; i++ {
		if i == 10 {
			return 0, errVarint
		}
		c, err := r.r.ReadByte()
		if err != nil {
			if err == io.EOF && i > 0 {
				return 0, errTruncated
			}
			return 0, err
		}
		r.off++
		v |= uint64(c&0x7f) << (7 * uint(i))
		if c < 0x80 {
			return v, nil
		}
	}
}

func (r *streamReader) next(n int) ([]byte, error) {
	if cap(r.buf) < n {
		r.buf = make([]byte, n)
	}
	b := r.buf[:n]
	got, err := io.ReadFull(r.r, b)
	r.off += int64(got)
	if err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, errTruncated
		}
		return nil, err
	}
	return b, nil
}

func (r *streamReader) skip(n int64) error {
	for n > 0 {
		step := int(min(n, 1<<30))
		got, err := r.r.Discard(step)
		r.off += int64(got)
		n -= int64(got)
		if err != nil {
			if err == io.EOF {
				return errTruncated
			}
			return err
		}
	}
	return nil
}

func (r *streamReader) offset() int64 { return r.off }

// readLen reads the length of a length-delimited field and checks that it
// fits in the enclosing message, which ends at end (-1: at the end of input).
func readLen(r wireReader, end int64) (int64, error) {
	n, err := r.varint()
	if err == io.EOF {
		return 0, errTruncated
	}
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt64/2 || (end >= 0 && int64(n) > end-r.offset()) {
		return 0, errLength
	}
	return int64(n), nil
}

// skipField passes over a field of wire type typ in r.
func skipField(r wireReader, typ int, end int64) error {
	switch typ {
	case wireVarint:
		_, err := r.varint()
		if err == io.EOF {
			return errTruncated
		}
		return err
	case wireFixed64:
		return r.skip(8)
	case wireFixed32:
		return r.skip(4)
	case wireBytes:
		n, err := readLen(r, end)
		if err != nil {
			return err
		}
		return r.skip(n)
	}
	return errWireType
}
