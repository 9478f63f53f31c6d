// Package parquetw writes flat Parquet files: one level of columns, each
// BOOLEAN, INT32, INT64, DOUBLE, UTF-8 string or raw bytes (with the DATE and
// TIMESTAMP(MICROS, UTC) logical types), required or optional. Pages are
// data pages v1, PLAIN-encoded — strings dictionary-encoded (RLE_DICTIONARY)
// while the chunk's dictionary stays under 1 MiB — and zstd-compressed;
// each column chunk carries min/max/null_count statistics. It is what
// `llmprof export --parquet` needs and no more (export/parquet.go), written
// from the Parquet format's Thrift definitions and encodings so that the
// binary does not carry a general Parquet library and the compute kernels
// it brings (a quarter of a cold build, bench/buildcost.sh).
//
// Rows are appended one value per column, in column order or not, then
// EndRow; every RowGroupRows rows become a row group. Values are buffered
// per row group only.
package parquetw

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/klauspost/compress/zstd"
)

// Type is a column's type: its physical type and logical annotation.
type Type int

const (
	Bool            Type = iota // BOOLEAN
	Int32                       // INT32, INTEGER(32, signed)
	Int64                       // INT64, INTEGER(64, signed)
	Double                      // DOUBLE
	String                      // BYTE_ARRAY, STRING (UTF8)
	Date                        // INT32, DATE: days since 1970-01-01
	TimestampMicros             // INT64, TIMESTAMP(isAdjustedToUTC, MICROS)
	Binary                      // BYTE_ARRAY without a logical type: raw bytes
)

func (t Type) String() string {
	switch t {
	case Bool:
		return "boolean"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Double:
		return "double"
	case String:
		return "string"
	case Date:
		return "date"
	case TimestampMicros:
		return "timestamp_us_utc"
	case Binary:
		return "binary"
	}
	return fmt.Sprintf("Type(%d)", int(t))
}

// Column describes one column.
type Column struct {
	Name     string
	Type     Type
	Optional bool // nullable (definition level 1); else every row has a value
}

// Options tune the file.
type Options struct {
	// RowGroupRows is the rows per row group (0: 1<<16).
	RowGroupRows int
	// CreatedBy is the footer's created_by ("" : "llmprof parquetw").
	CreatedBy string
}

// Parquet enum values (parquet.thrift).
const (
	ptBoolean   = 0
	ptInt32     = 1
	ptInt64     = 2
	ptDouble    = 5
	ptByteArray = 6

	encPlain         = 0
	encRLE           = 3
	encRLEDictionary = 8

	codecZstd = 6

	pageData       = 0
	pageDictionary = 2

	convUTF8            = 0
	convDate            = 6
	convTimestampMicros = 10
	convInt32           = 17
	convInt64           = 18
)

// pageTarget is the encoded size at which a data page is cut; maxDict the
// largest dictionary (PLAIN bytes) before a chunk falls back to PLAIN.
const (
	pageTarget = 1 << 20
	maxDict    = 1 << 20
	// Statistics of longer strings are left out rather than truncated (4096:
	// the limit of arrow-go's writer, which export used before).
	maxStatString = 4096
)

func (t Type) physical() int32 {
	switch t {
	case Bool:
		return ptBoolean
	case Int32, Date:
		return ptInt32
	case Int64, TimestampMicros:
		return ptInt64
	case Double:
		return ptDouble
	}
	return ptByteArray
}

type column struct {
	Column
	n      int      // values (nulls included) in the current row group
	defs   []uint32 // 1 present, 0 null (optional columns only)
	nulls  int
	b      []bool
	i32    []int32
	i64    []int64
	f64    []float64
	s      []string
	chunks []chunkMeta
}

type chunkMeta struct {
	numValues           int64
	uncompressed, compr int64
	dataOffset, dictOff int64 // dictOff < 0: none
	encodings           []int32
	nullCount           int64
	min, max            []byte
	hasMinMax           bool
}

type rowGroupMeta struct {
	rows                 int64
	offset, total, compr int64
}

// Writer writes one Parquet file.
type Writer struct {
	w       *bufio.Writer
	off     int64
	cols    []*column
	rgRows  int
	rows    int // in the current row group
	total   int64
	groups  []rowGroupMeta
	enc     *zstd.Encoder
	created string
	err     error
	closed  bool
	// scratch
	page, comp []byte
	hdr        compact
	idx        []uint32
}

// NewWriter starts a file on w with the given columns.
func NewWriter(w io.Writer, cols []Column, opts Options) (*Writer, error) {
	if len(cols) == 0 {
		return nil, errors.New("parquetw: no columns")
	}
	seen := map[string]bool{}
	pw := &Writer{w: bufio.NewWriterSize(w, 1<<16), rgRows: opts.RowGroupRows, created: opts.CreatedBy}
	if pw.rgRows <= 0 {
		pw.rgRows = 1 << 16
	}
	if pw.created == "" {
		pw.created = "llmprof parquetw"
	}
	for _, c := range cols {
		if c.Name == "" || seen[c.Name] {
			return nil, fmt.Errorf("parquetw: column name %q empty or repeated", c.Name)
		}
		if c.Type < Bool || c.Type > Binary {
			return nil, fmt.Errorf("parquetw: column %s: unknown type %d", c.Name, int(c.Type))
		}
		seen[c.Name] = true
		pw.cols = append(pw.cols, &column{Column: c})
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return nil, err
	}
	pw.enc = enc
	pw.write([]byte("PAR1"))
	return pw, pw.err
}

func (w *Writer) write(p []byte) {
	if w.err != nil {
		return
	}
	_, w.err = w.w.Write(p)
	w.off += int64(len(p))
}

func (w *Writer) col(i int, t ...Type) *column {
	c := w.cols[i]
	ok := false
	for _, tt := range t {
		ok = ok || c.Type == tt
	}
	if !ok && w.err == nil {
		w.err = fmt.Errorf("parquetw: column %s is %s, not %s", c.Name, c.Type, t[0])
	}
	c.n++
	if c.Optional {
		c.defs = append(c.defs, 1)
	}
	return c
}

// Null appends a null to optional column i.
func (w *Writer) Null(i int) {
	c := w.cols[i]
	if !c.Optional && w.err == nil {
		w.err = fmt.Errorf("parquetw: null in required column %s", c.Name)
	}
	c.n++
	c.nulls++
	c.defs = append(c.defs, 0)
}

// Bool appends v to column i.
func (w *Writer) Bool(i int, v bool) { c := w.col(i, Bool); c.b = append(c.b, v) }

// Int32 appends v to column i (Int32 or Date: days since the epoch).
func (w *Writer) Int32(i int, v int32) { c := w.col(i, Int32, Date); c.i32 = append(c.i32, v) }

// Int64 appends v to column i (Int64 or TimestampMicros: µs since the epoch).
func (w *Writer) Int64(i int, v int64) {
	c := w.col(i, Int64, TimestampMicros)
	c.i64 = append(c.i64, v)
}

// Double appends v to column i.
func (w *Writer) Double(i int, v float64) { c := w.col(i, Double); c.f64 = append(c.f64, v) }

// String appends s to column i.
func (w *Writer) String(i int, s string) { c := w.col(i, String); c.s = append(c.s, s) }

// Bytes appends a copy of b to Binary column i.
func (w *Writer) Bytes(i int, b []byte) { c := w.col(i, Binary); c.s = append(c.s, string(b)) }

// EndRow completes a row: every column must have had exactly one value.
func (w *Writer) EndRow() error {
	if w.err != nil {
		return w.err
	}
	w.rows++
	for _, c := range w.cols {
		if c.n != w.rows {
			w.err = fmt.Errorf("parquetw: row %d has %d values in column %s, want 1", w.total+int64(w.rows), c.n-w.rows+1, c.Name)
			return w.err
		}
	}
	if w.rows >= w.rgRows {
		w.flush()
	}
	return w.err
}

// Rows is the number of complete rows appended.
func (w *Writer) Rows() int64 { return w.total + int64(w.rows) }

func (w *Writer) flush() {
	if w.rows == 0 || w.err != nil {
		return
	}
	rg := rowGroupMeta{rows: int64(w.rows), offset: w.off}
	for _, c := range w.cols {
		m := w.writeChunk(c)
		rg.total += m.uncompressed
		rg.compr += m.compr
		c.chunks = append(c.chunks, m)
		c.n, c.nulls = 0, 0
		c.defs, c.b, c.i32, c.i64, c.f64, c.s = c.defs[:0], c.b[:0], c.i32[:0], c.i64[:0], c.f64[:0], c.s[:0]
	}
	w.groups = append(w.groups, rg)
	w.total += int64(w.rows)
	w.rows = 0
}

// valueSize is the PLAIN size of the value at index v of c.
func (c *column) valueSize(v int) int {
	switch c.Type {
	case Bool:
		return 1 // an upper bound (1 bit)
	case Int32, Date:
		return 4
	case Int64, TimestampMicros, Double:
		return 8
	}
	return 4 + len(c.s[v])
}

func (w *Writer) writeChunk(c *column) chunkMeta {
	m := chunkMeta{numValues: int64(c.n), dataOffset: -1, dictOff: -1, nullCount: int64(c.nulls)}
	start := w.off
	var dict []uint32 // each value's dictionary index; nil: plain
	ndict := 0
	if c.Type == String && len(c.s) > 0 {
		dict, ndict = w.writeDictionary(c, &m)
	}
	if dict != nil {
		m.encodings = []int32{encPlain, encRLE, encRLEDictionary}
	} else {
		m.encodings = []int32{encPlain, encRLE}
	}
	// Cut pages by rows: [row, row+k) with values [val, val+nv).
	val := 0
	for row := 0; row < c.n; {
		end, nv, size := row, 0, 0
		for end < c.n && size < pageTarget {
			if !c.Optional || c.defs[end] == 1 {
				if dict != nil {
					size += 4
				} else {
					size += c.valueSize(val + nv)
				}
				nv++
			}
			end++
		}
		if m.dataOffset < 0 {
			m.dataOffset = w.off
		}
		w.writeDataPage(c, row, end, val, val+nv, dict, ndict, &m)
		row, val = end, val+nv
	}
	m.compr = w.off - start
	c.stats(&m)
	return m
}

// writeDictionary writes the dictionary page of a string chunk and returns
// each value's index in it and the dictionary's size, or nil (no page
// written) when the dictionary would exceed maxDict. Each value is looked
// up once, here.
func (w *Writer) writeDictionary(c *column, m *chunkMeta) ([]uint32, int) {
	dict := make(map[string]uint32)
	var order []string
	size := 0
	w.idx = w.idx[:0]
	for _, s := range c.s {
		i, ok := dict[s]
		if !ok {
			size += 4 + len(s)
			if size > maxDict {
				return nil, 0
			}
			i = uint32(len(order))
			dict[s] = i
			order = append(order, s)
		}
		w.idx = append(w.idx, i)
	}
	w.page = w.page[:0]
	for _, s := range order {
		w.page = binary.LittleEndian.AppendUint32(w.page, uint32(len(s)))
		w.page = append(w.page, s...)
	}
	m.dictOff = w.off
	w.writePage(pageDictionary, len(order), -1, m)
	return w.idx, len(order)
}

// writeDataPage writes rows [r0, r1) of c, whose non-null values are
// [v0, v1).
func (w *Writer) writeDataPage(c *column, r0, r1, v0, v1 int, dict []uint32, ndict int, m *chunkMeta) {
	w.page = w.page[:0]
	if c.Optional {
		w.page = append(w.page, 0, 0, 0, 0)
		w.page = appendHybrid(w.page, c.defs[r0:r1], 1)
		binary.LittleEndian.PutUint32(w.page, uint32(len(w.page)-4))
	}
	enc := int32(encPlain)
	switch {
	case dict != nil:
		enc = encRLEDictionary
		width := max(1, bits.Len(uint(ndict-1)))
		w.page = append(w.page, byte(width))
		w.page = appendHybrid(w.page, dict[v0:v1], width)
	case c.Type == Bool:
		var acc byte
		for k, v := range c.b[v0:v1] {
			if v {
				acc |= 1 << (k % 8)
			}
			if k%8 == 7 {
				w.page = append(w.page, acc)
				acc = 0
			}
		}
		if (v1-v0)%8 != 0 {
			w.page = append(w.page, acc)
		}
	case c.Type == Int32 || c.Type == Date:
		for _, v := range c.i32[v0:v1] {
			w.page = binary.LittleEndian.AppendUint32(w.page, uint32(v))
		}
	case c.Type == Int64 || c.Type == TimestampMicros:
		for _, v := range c.i64[v0:v1] {
			w.page = binary.LittleEndian.AppendUint64(w.page, uint64(v))
		}
	case c.Type == Double:
		for _, v := range c.f64[v0:v1] {
			w.page = binary.LittleEndian.AppendUint64(w.page, math.Float64bits(v))
		}
	default:
		for _, s := range c.s[v0:v1] {
			w.page = binary.LittleEndian.AppendUint32(w.page, uint32(len(s)))
			w.page = append(w.page, s...)
		}
	}
	w.writePage(pageData, r1-r0, enc, m)
}

// writePage compresses w.page and writes it with its header; enc < 0 makes
// a dictionary page of n values, else a data page of n values (levels).
func (w *Writer) writePage(typ int32, n int, enc int32, m *chunkMeta) {
	if len(w.page) > math.MaxInt32 {
		w.err = fmt.Errorf("parquetw: page of %d bytes", len(w.page))
		return
	}
	w.comp = w.enc.EncodeAll(w.page, w.comp[:0])
	h := &w.hdr
	h.b = h.b[:0]
	h.begin()
	h.i32(1, typ)
	h.i32(2, int32(len(w.page)))
	h.i32(3, int32(len(w.comp)))
	if typ == pageDictionary {
		h.structField(7)
		h.i32(1, int32(n))
		h.i32(2, encPlain)
		h.end()
	} else {
		h.structField(5)
		h.i32(1, int32(n))
		h.i32(2, enc)
		h.i32(3, encRLE)
		h.i32(4, encRLE)
		h.end()
	}
	h.end()
	m.uncompressed += int64(len(h.b) + len(w.page))
	w.write(h.b)
	w.write(w.comp)
}

// stats sets the chunk's min and max (PLAIN encoded, as the footer wants).
func (c *column) stats(m *chunkMeta) {
	le4 := func(v int32) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }
	le8 := func(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
	switch c.Type {
	case Bool:
		if len(c.b) == 0 {
			return
		}
		lo, hi := true, false
		for _, v := range c.b {
			lo, hi = lo && v, hi || v
		}
		b2 := func(v bool) []byte {
			if v {
				return []byte{1}
			}
			return []byte{0}
		}
		m.min, m.max = b2(lo), b2(hi)
	case Int32, Date:
		if len(c.i32) == 0 {
			return
		}
		lo, hi := c.i32[0], c.i32[0]
		for _, v := range c.i32 {
			lo, hi = min(lo, v), max(hi, v)
		}
		m.min, m.max = le4(lo), le4(hi)
	case Int64, TimestampMicros:
		if len(c.i64) == 0 {
			return
		}
		lo, hi := c.i64[0], c.i64[0]
		for _, v := range c.i64 {
			lo, hi = min(lo, v), max(hi, v)
		}
		m.min, m.max = le8(uint64(lo)), le8(uint64(hi))
	case Double:
		lo, hi, seen := math.Inf(1), math.Inf(-1), false
		for _, v := range c.f64 {
			if math.IsNaN(v) {
				continue // NaN has no place in the order: left out of min/max
			}
			lo, hi, seen = math.Min(lo, v), math.Max(hi, v), true
		}
		if !seen {
			return
		}
		// The format asks for -0 as a zero minimum and +0 as a zero maximum.
		if lo == 0 {
			lo = math.Copysign(0, -1)
		}
		if hi == 0 {
			hi = 0
		}
		m.min, m.max = le8(math.Float64bits(lo)), le8(math.Float64bits(hi))
	case String, Binary:
		if len(c.s) == 0 {
			return
		}
		lo, hi := c.s[0], c.s[0]
		for _, v := range c.s {
			lo, hi = min(lo, v), max(hi, v)
		}
		if len(lo) > maxStatString || len(hi) > maxStatString {
			return
		}
		m.min, m.max = []byte(lo), []byte(hi)
	}
	m.hasMinMax = true
}

// Close writes the last row group and the footer. It does not close the
// underlying writer.
func (w *Writer) Close() error {
	if w.closed {
		return w.err
	}
	w.closed = true
	defer w.enc.Close()
	if w.err != nil {
		return w.err
	}
	for _, c := range w.cols {
		if c.n != w.rows {
			w.err = fmt.Errorf("parquetw: column %s has a value past the last complete row", c.Name)
			return w.err
		}
	}
	w.flush()
	meta := w.footer()
	w.write(meta)
	w.write(binary.LittleEndian.AppendUint32(nil, uint32(len(meta))))
	w.write([]byte("PAR1"))
	if w.err == nil {
		w.err = w.w.Flush()
	}
	return w.err
}

// footer encodes the FileMetaData struct.
func (w *Writer) footer() []byte {
	var e compact
	e.begin()
	e.i32(1, 2) // version
	e.list(2, ctStruct, len(w.cols)+1)
	e.elem() // the root
	e.str(4, "schema")
	e.i32(5, int32(len(w.cols)))
	e.end()
	for _, c := range w.cols {
		e.elem()
		e.i32(1, c.Type.physical())
		rep := int32(0)
		if c.Optional {
			rep = 1
		}
		e.i32(3, rep)
		e.str(4, c.Name)
		switch c.Type {
		case String:
			e.i32(6, convUTF8)
			e.structField(10)
			e.structField(1) // STRING
			e.end()
			e.end()
		case Date:
			e.i32(6, convDate)
			e.structField(10)
			e.structField(6) // DATE
			e.end()
			e.end()
		case TimestampMicros:
			e.i32(6, convTimestampMicros)
			e.structField(10)
			e.structField(8) // TIMESTAMP
			e.boolean(1, true)
			e.structField(2) // unit
			e.structField(2) // MICROS
			e.end()
			e.end()
			e.end()
			e.end()
		case Int32, Int64:
			bw, conv := int8(32), int32(convInt32)
			if c.Type == Int64 {
				bw, conv = 64, convInt64
			}
			e.i32(6, conv)
			e.structField(10)
			e.structField(10) // INTEGER
			e.field(1, 3)     // bitWidth: i8
			e.b = append(e.b, byte(bw))
			e.boolean(2, true)
			e.end()
			e.end()
		}
		e.end()
	}
	e.i64(3, w.total)
	e.list(4, ctStruct, len(w.groups))
	for g, rg := range w.groups {
		e.elem()
		e.list(1, ctStruct, len(w.cols))
		for _, c := range w.cols {
			m := &c.chunks[g]
			first := m.dataOffset
			if m.dictOff >= 0 {
				first = m.dictOff
			}
			e.elem()
			e.i64(2, first)
			e.structField(3)
			e.i32(1, c.Type.physical())
			e.list(2, ctI32, len(m.encodings))
			for _, x := range m.encodings {
				e.listI32(x)
			}
			e.list(3, ctBinary, 1)
			e.listStr(c.Name)
			e.i32(4, codecZstd)
			e.i64(5, m.numValues)
			e.i64(6, m.uncompressed)
			e.i64(7, m.compr)
			e.i64(9, m.dataOffset)
			if m.dictOff >= 0 {
				e.i64(11, m.dictOff)
			}
			e.structField(12)
			e.i64(3, m.nullCount)
			if m.hasMinMax {
				e.binary(5, m.max)
				e.binary(6, m.min)
			}
			e.end()
			e.end()
			e.end()
		}
		e.i64(2, rg.total)
		e.i64(3, rg.rows)
		e.i64(5, rg.offset)
		e.i64(6, rg.compr)
		e.field(7, 4) // ordinal: i16
		e.varint(zigzag(int64(g)))
		e.end()
	}
	e.str(6, w.created)
	e.list(7, ctStruct, len(w.cols))
	for range w.cols {
		e.elem()
		e.structField(1) // TYPE_ORDER
		e.end()
		e.end()
	}
	e.end()
	return e.b
}
