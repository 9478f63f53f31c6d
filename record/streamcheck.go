package record

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// checkedStream passes an Arrow IPC stream to arrow-go one validated
// message at a time. arrow-go trusts the lengths inside a message: a
// flipped bit in a vector length or in a compressed buffer's size prefix
// makes it allocate gigabytes, and the process dies of it (FuzzCapture
// found this) — no recover() helps. So before arrow sees a message, its
// flatbuffer metadata is walked with bounds checks, every vector is checked
// to fit in the metadata, every buffer in the body, and every decompressed
// size against a sane maximum. The first message that fails stops the
// stream there: arrow reads the valid prefix, and err says why the rest was
// not read, exactly as for a file cut short.
type checkedStream struct {
	r    *bufio.Reader
	buf  []byte // validated bytes not yet handed to arrow
	done bool
	err  error // why the stream ended before its end-of-stream marker
	msgs int
}

// Bounds on what a capture table's message can need. Batches are at most
// 4096 rows or 8 MiB of payload plus one payload (≤ 64 MiB); the metadata of
// a schema with a few dozen columns is a few KiB.
const (
	maxMetadataBytes     = 1 << 20
	maxBodyBytes         = 256 << 20
	maxUncompressedBytes = 256 << 20
	maxFieldDepth        = 8
)

func newCheckedStream(r io.Reader) *checkedStream {
	return &checkedStream{r: bufio.NewReaderSize(r, 64<<10)}
}

func (c *checkedStream) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		if c.done {
			return 0, io.EOF
		}
		c.next()
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

func (c *checkedStream) stop(format string, args ...any) {
	c.done = true
	c.err = fmt.Errorf("message %d: "+format, append([]any{c.msgs}, args...)...)
}

func (c *checkedStream) next() {
	var pre [8]byte
	n, err := io.ReadFull(c.r, pre[:])
	switch {
	case n == 0 && errors.Is(err, io.EOF):
		c.done = true // ended between messages, without the marker
		return
	case err != nil:
		c.stop("cut short in its length prefix")
		return
	case !bytes.Equal(pre[:4], arrowContinuation):
		c.stop("no continuation marker (% x)", pre[:4])
		return
	}
	metaLen := int32(binary.LittleEndian.Uint32(pre[4:]))
	if metaLen == 0 { // end-of-stream marker
		c.buf, c.done = pre[:], true
		return
	}
	if metaLen < 0 || metaLen > maxMetadataBytes {
		c.stop("metadata length %d out of range", metaLen)
		return
	}
	msg := make([]byte, 8+int(metaLen))
	copy(msg, pre[:])
	if _, err := io.ReadFull(c.r, msg[8:]); err != nil {
		c.stop("cut short in its metadata")
		return
	}
	hdr, err := checkMessage(msg[8:])
	if err != nil {
		c.stop("%v", err)
		return
	}
	if hdr.bodyLen < 0 || hdr.bodyLen > maxBodyBytes {
		c.stop("body length %d out of range", hdr.bodyLen)
		return
	}
	body := make([]byte, hdr.bodyLen)
	if _, err := io.ReadFull(c.r, body); err != nil {
		c.stop("cut short in its body (%d bytes expected)", hdr.bodyLen)
		return
	}
	if err := hdr.checkBody(body); err != nil {
		c.stop("%v", err)
		return
	}
	c.msgs++
	c.buf = append(msg, body...)
}

// fbuf is a flatbuffer read with bounds checks (the flatbuffers runtime
// does none). Layout: a uoffset to the root table; a table starts with a
// soffset back to its vtable; the vtable holds its size, the table's size
// and one uint16 offset per field (0: absent).
type fbuf []byte

var errFlatbuffer = errors.New("corrupt flatbuffer")

func (b fbuf) u32(at int) (int, error) {
	if at < 0 || at+4 > len(b) {
		return 0, errFlatbuffer
	}
	return int(binary.LittleEndian.Uint32(b[at:])), nil
}

type fbTable struct {
	b       fbuf
	pos, vt int
	vtLen   int
}

func (b fbuf) tableAt(pos int) (fbTable, error) {
	if pos < 0 || pos+4 > len(b) {
		return fbTable{}, errFlatbuffer
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(b[pos:])))
	if vt < 0 || vt+4 > len(b) {
		return fbTable{}, errFlatbuffer
	}
	vtLen := int(binary.LittleEndian.Uint16(b[vt:]))
	if vtLen < 4 || vt+vtLen > len(b) {
		return fbTable{}, errFlatbuffer
	}
	return fbTable{b: b, pos: pos, vt: vt, vtLen: vtLen}, nil
}

// field returns the position of field slot, or 0 when absent; size bytes
// must fit.
func (t fbTable) field(slot, size int) (int, error) {
	o := 4 + 2*slot
	if o+2 > t.vtLen {
		return 0, nil
	}
	off := int(binary.LittleEndian.Uint16(t.b[t.vt+o:]))
	if off == 0 {
		return 0, nil
	}
	at := t.pos + off
	if at+size > len(t.b) {
		return 0, errFlatbuffer
	}
	return at, nil
}

func (t fbTable) u8(slot int) (int, error) {
	at, err := t.field(slot, 1)
	if err != nil || at == 0 {
		return 0, err
	}
	return int(t.b[at]), nil
}

func (t fbTable) i64(slot int) (int64, error) {
	at, err := t.field(slot, 8)
	if err != nil || at == 0 {
		return 0, err
	}
	return int64(binary.LittleEndian.Uint64(t.b[at:])), nil
}

// ref follows an offset field to its target position (0 when absent).
func (t fbTable) ref(slot int) (int, error) {
	at, err := t.field(slot, 4)
	if err != nil || at == 0 {
		return 0, err
	}
	off, err := t.b.u32(at)
	if err != nil {
		return 0, err
	}
	return at + off, nil
}

func (t fbTable) table(slot int) (fbTable, bool, error) {
	at, err := t.ref(slot)
	if err != nil || at == 0 {
		return fbTable{}, false, err
	}
	sub, err := t.b.tableAt(at)
	return sub, err == nil, err
}

// vector returns the position of the first element and the length of a
// vector field whose elements are elem bytes, checked to fit.
func (t fbTable) vector(slot, elem int) (start, n int, err error) {
	at, err := t.ref(slot)
	if err != nil || at == 0 {
		return 0, 0, err
	}
	n, err = t.b.u32(at)
	if err != nil {
		return 0, 0, err
	}
	if n > (len(t.b)-at-4)/max(elem, 1) {
		return 0, 0, fmt.Errorf("%w: vector of %d elements in %d bytes", errFlatbuffer, n, len(t.b))
	}
	return at + 4, n, nil
}

// tables checks a vector of tables and returns them.
func (t fbTable) tables(slot int) ([]fbTable, error) {
	start, n, err := t.vector(slot, 4)
	if err != nil {
		return nil, err
	}
	out := make([]fbTable, n)
	for i := range n {
		at := start + 4*i
		off, err := t.b.u32(at)
		if err != nil {
			return nil, err
		}
		if out[i], err = t.b.tableAt(at + off); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (t fbTable) str(slot int) error {
	_, _, err := t.vector(slot, 1)
	return err
}

// Arrow's Message.fbs, the parts a capture stream holds.
const (
	headerSchema      = 1
	headerDictionary  = 2
	headerRecordBatch = 3
	typeUnion         = 14
	typeTimestamp     = 10
)

type messageHeader struct {
	kind    int
	bodyLen int64
	batch   fbTable
	// compressed: buffers start with their uncompressed length.
	compressed bool
}

func checkMessage(meta []byte) (*messageHeader, error) {
	b := fbuf(meta)
	root, err := b.u32(0)
	if err != nil {
		return nil, err
	}
	msg, err := b.tableAt(root)
	if err != nil {
		return nil, err
	}
	h := &messageHeader{}
	if h.kind, err = msg.u8(1); err != nil {
		return nil, err
	}
	if h.bodyLen, err = msg.i64(3); err != nil {
		return nil, err
	}
	if err := checkKeyValues(msg, 4); err != nil {
		return nil, err
	}
	header, ok, err := msg.table(2)
	if err != nil || !ok {
		return nil, fmt.Errorf("message without header: %w", errFlatbuffer)
	}
	switch h.kind {
	case headerSchema:
		return h, checkSchema(header)
	case headerRecordBatch:
		h.batch = header
		return h, h.checkBatch()
	case headerDictionary:
		return nil, errors.New("dictionary batch: capture tables have no dictionaries")
	}
	return nil, fmt.Errorf("unknown message type %d", h.kind)
}

func checkKeyValues(t fbTable, slot int) error {
	kvs, err := t.tables(slot)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if err := kv.str(0); err != nil {
			return err
		}
		if err := kv.str(1); err != nil {
			return err
		}
	}
	return nil
}

// Schema { endianness; fields: [Field]; custom_metadata; features: [long] }.
func checkSchema(s fbTable) error {
	fields, err := s.tables(1)
	if err != nil {
		return err
	}
	for _, f := range fields {
		if err := checkField(f, 0); err != nil {
			return err
		}
	}
	if err := checkKeyValues(s, 2); err != nil {
		return err
	}
	_, _, err = s.vector(3, 8)
	return err
}

// Field { name; nullable; type_type; type; dictionary; children; custom_metadata }.
func checkField(f fbTable, depth int) error {
	if depth > maxFieldDepth {
		return errors.New("fields nested too deep")
	}
	if err := f.str(0); err != nil {
		return err
	}
	tt, err := f.u8(2)
	if err != nil {
		return err
	}
	typ, _, err := f.table(3)
	if err != nil {
		return err
	}
	switch tt {
	case typeUnion:
		return errors.New("union column: not a capture table")
	case typeTimestamp:
		if err := typ.str(1); err != nil { // timezone
			return err
		}
	}
	if _, ok, err := f.table(4); err != nil || ok {
		if err == nil {
			err = errors.New("dictionary-encoded column: not a capture table")
		}
		return err
	}
	children, err := f.tables(5)
	if err != nil {
		return err
	}
	for _, c := range children {
		if err := checkField(c, depth+1); err != nil {
			return err
		}
	}
	return checkKeyValues(f, 6)
}

// RecordBatch { length; nodes: [FieldNode]; buffers: [Buffer];
// compression: BodyCompression; variadicBufferCounts: [long] }. FieldNode
// and Buffer are 16-byte structs.
func (h *messageHeader) checkBatch() error {
	length, err := h.batch.i64(0)
	if err != nil {
		return err
	}
	// Every capture column has a data buffer; no row takes less than a bit.
	if length < 0 || length > 8*h.bodyLen+8 {
		return fmt.Errorf("batch of %d rows in a %d-byte body", length, h.bodyLen)
	}
	start, n, err := h.batch.vector(1, 16)
	if err != nil {
		return err
	}
	for i := range n {
		at := start + 16*i
		nodeLen := int64(binary.LittleEndian.Uint64(h.batch.b[at:]))
		nulls := int64(binary.LittleEndian.Uint64(h.batch.b[at+8:]))
		if nodeLen < 0 || nodeLen > length || nulls < 0 || nulls > nodeLen {
			return fmt.Errorf("column %d: %d rows, %d nulls in a batch of %d", i, nodeLen, nulls, length)
		}
	}
	if _, _, err := h.batch.vector(2, 16); err != nil {
		return err
	}
	_, h.compressed, err = h.batch.table(3)
	if err != nil {
		return err
	}
	_, _, err = h.batch.vector(4, 8)
	return err
}

// checkBody checks that every buffer lies in the body and that a
// compressed buffer does not claim an absurd decompressed size.
func (h *messageHeader) checkBody(body []byte) error {
	if h.kind != headerRecordBatch {
		return nil
	}
	start, n, err := h.batch.vector(2, 16)
	if err != nil {
		return err
	}
	b := h.batch.b
	for i := range n {
		at := start + 16*i
		off := int64(binary.LittleEndian.Uint64(b[at:]))
		size := int64(binary.LittleEndian.Uint64(b[at+8:]))
		if off < 0 || size < 0 || off > int64(len(body)) || size > int64(len(body))-off {
			return fmt.Errorf("buffer %d (%d+%d) outside the %d-byte body", i, off, size, len(body))
		}
		if h.compressed && size > 0 && size < 8 {
			// arrow-go reads the 8-byte length prefix of any non-empty
			// compressed buffer, past a shorter buffer's end into the
			// bytes after it.
			return fmt.Errorf("compressed buffer %d of %d bytes has no room for its length prefix", i, size)
		}
		if h.compressed && size >= 8 {
			raw := int64(binary.LittleEndian.Uint64(body[off:]))
			if raw < -1 || raw > maxUncompressedBytes {
				return fmt.Errorf("buffer %d claims %d bytes uncompressed", i, raw)
			}
		}
	}
	return nil
}
