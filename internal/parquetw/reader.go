package parquetw

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/klauspost/compress/zstd"
)

// A Reader reads back the files a Writer writes, and any Parquet file of the
// same shape: flat columns of the types of Type, data pages v1 in PLAIN or
// RLE_DICTIONARY encoding, uncompressed or zstd. It is what `llmprof analyze
// --parquet` needs, no more, so that the binary still carries no general
// Parquet library (the package doc). Everything else is an error, never a
// panic or a hang: every length and count read from the file is checked
// against the bytes that hold it (FuzzReader).
type Reader struct {
	r       io.ReaderAt
	size    int64
	columns []Column
	groups  []readGroup
	dec     *zstd.Decoder
}

type readGroup struct {
	rows   int64
	chunks []readChunk
}

type readChunk struct {
	codec           int64
	values          int64
	start, compSize int64 // the chunk's bytes: its first page, all pages
}

// maxGroupRows bounds the rows of one row group a Reader accepts (twice the
// Writer's default, 1<<16), and so what one column of it can cost: a run of
// nulls takes a few bytes whatever its length.
const maxGroupRows = 1 << 17

// maxPage bounds one page, uncompressed: the writer cuts pages at 1 MiB
// (pageTarget), so only a single value past it makes a larger one.
const maxPage = 64 << 20

var errFormat = errors.New("parquetw: not a file this reader reads")

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errFormat, fmt.Sprintf(format, args...))
}

// NewReader reads the footer of the size-byte file r.
func NewReader(r io.ReaderAt, size int64) (*Reader, error) {
	if size < 12 {
		return nil, formatErr("%d bytes", size)
	}
	tail := make([]byte, 8)
	if _, err := r.ReadAt(tail, size-8); err != nil {
		return nil, err
	}
	if string(tail[4:]) != "PAR1" {
		return nil, formatErr("no PAR1 at the end")
	}
	n := int64(binary.LittleEndian.Uint32(tail))
	if n > size-12 {
		return nil, formatErr("footer of %d bytes in a %d-byte file", n, size)
	}
	meta := make([]byte, n)
	if _, err := r.ReadAt(meta, size-8-n); err != nil {
		return nil, err
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxPage))
	if err != nil {
		return nil, err
	}
	pr := &Reader{r: r, size: size, dec: dec}
	if err := pr.footer(meta); err != nil {
		dec.Close()
		return nil, err
	}
	return pr, nil
}

// Close releases the decompressor.
func (r *Reader) Close() { r.dec.Close() }

// Columns are the file's columns.
func (r *Reader) Columns() []Column { return r.columns }

// Column is the index of the column named name, or -1.
func (r *Reader) Column(name string) int {
	for i, c := range r.columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// RowGroups is the number of row groups.
func (r *Reader) RowGroups() int { return len(r.groups) }

// GroupRows is the number of rows of row group g.
func (r *Reader) GroupRows(g int) int { return int(r.groups[g].rows) }

type schemaElem struct {
	typ, rep, conv int64
	name           string
	children       int64
	hasType        bool
}

func (r *Reader) footer(meta []byte) error {
	d := &decoder{b: meta}
	var schema []schemaElem
	var groups []readGroup
	err := d.strct(func(id int16, typ byte) (bool, error) {
		switch {
		case id == 2 && typ == ctList:
			_, n, err := d.list()
			if err != nil {
				return true, err
			}
			for range n {
				e := schemaElem{conv: -1} // 0 is UTF8: absent must differ
				err := d.strct(func(id int16, typ byte) (bool, error) {
					var err error
					switch id {
					case 1:
						e.typ, err = d.int(typ)
						e.hasType = true
					case 3:
						e.rep, err = d.int(typ)
					case 4:
						var b []byte
						b, err = d.binary()
						e.name = string(b)
					case 5:
						e.children, err = d.int(typ)
					case 6:
						e.conv, err = d.int(typ)
					default:
						return false, nil
					}
					return true, err
				})
				if err != nil {
					return true, err
				}
				schema = append(schema, e)
			}
			return true, nil
		case id == 4 && typ == ctList:
			_, n, err := d.list()
			if err != nil {
				return true, err
			}
			for range n {
				g, err := readRowGroup(d)
				if err != nil {
					return true, err
				}
				groups = append(groups, g)
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("parquetw: footer: %w", err)
	}
	if len(schema) < 2 || schema[0].hasType || schema[0].children != int64(len(schema)-1) {
		return formatErr("the schema is not one flat level of columns")
	}
	for _, e := range schema[1:] {
		c, err := columnOf(e)
		if err != nil {
			return err
		}
		r.columns = append(r.columns, c)
	}
	for gi, g := range groups {
		if g.rows < 0 || g.rows > maxGroupRows || len(g.chunks) != len(r.columns) {
			return formatErr("row group %d: %d rows, %d columns", gi, g.rows, len(g.chunks))
		}
		for ci, c := range g.chunks {
			if c.start < 4 || c.compSize < 0 || c.start > r.size-8 || c.compSize > r.size-8-c.start {
				return formatErr("row group %d column %d: bytes %d+%d outside the file", gi, ci, c.start, c.compSize)
			}
			if c.values != g.rows {
				return formatErr("row group %d column %d: %d values in %d rows", gi, ci, c.values, g.rows)
			}
		}
	}
	// The chunks of a file do not overlap; refusing those that do keeps a
	// small file from naming the same bytes for a decoding without end.
	var spans [][2]int64
	for _, g := range groups {
		for _, c := range g.chunks {
			spans = append(spans, [2]int64{c.start, c.start + c.compSize})
		}
	}
	slices.SortFunc(spans, func(a, b [2]int64) int { return cmp.Compare(a[0], b[0]) })
	for i := 1; i < len(spans); i++ {
		if spans[i][0] < spans[i-1][1] {
			return formatErr("column chunks overlap at byte %d", spans[i][0])
		}
	}
	r.groups = groups
	return nil
}

// columnOf maps a schema element onto a Column.
func columnOf(e schemaElem) (Column, error) {
	c := Column{Name: e.name, Optional: e.rep == 1}
	if e.children != 0 || (e.rep != 0 && e.rep != 1) || !e.hasType {
		return c, formatErr("column %q is nested or repeated", e.name)
	}
	switch {
	case e.typ == ptBoolean:
		c.Type = Bool
	case e.typ == ptInt32 && e.conv == convDate:
		c.Type = Date
	case e.typ == ptInt32:
		c.Type = Int32
	case e.typ == ptInt64 && e.conv == convTimestampMicros:
		c.Type = TimestampMicros
	case e.typ == ptInt64:
		c.Type = Int64
	case e.typ == ptDouble:
		c.Type = Double
	case e.typ == ptByteArray && e.conv == convUTF8:
		c.Type = String
	case e.typ == ptByteArray:
		c.Type = Binary
	default:
		return c, formatErr("column %q has physical type %d", e.name, e.typ)
	}
	return c, nil
}

func readRowGroup(d *decoder) (readGroup, error) {
	var g readGroup
	err := d.strct(func(id int16, typ byte) (bool, error) {
		switch {
		case id == 1 && typ == ctList:
			_, n, err := d.list()
			if err != nil {
				return true, err
			}
			for range n {
				c := readChunk{start: -1}
				dataOff, dictOff := int64(-1), int64(-1)
				err := d.strct(func(id int16, typ byte) (bool, error) {
					if id != 3 || typ != ctStruct {
						return false, nil
					}
					return true, d.strct(func(id int16, typ byte) (bool, error) {
						var err error
						switch id {
						case 4:
							c.codec, err = d.int(typ)
						case 5:
							c.values, err = d.int(typ)
						case 7:
							c.compSize, err = d.int(typ)
						case 9:
							dataOff, err = d.int(typ)
						case 11:
							dictOff, err = d.int(typ)
						default:
							return false, nil
						}
						return true, err
					})
				})
				if err != nil {
					return true, err
				}
				c.start = dataOff
				if dictOff >= 0 && dictOff < dataOff {
					c.start = dictOff
				}
				g.chunks = append(g.chunks, c)
			}
			return true, nil
		case id == 3:
			var err error
			g.rows, err = d.int(typ)
			return true, err
		}
		return false, nil
	})
	return g, err
}

// Values are one column of one row group, a value per row: Valid says which
// rows have one (nil: every row, a required column), and the slice of the
// column's type holds them (the zero value in a null's place). Bytes are
// String and Binary values; they share the page buffers, read-only.
type Values struct {
	Valid  []bool
	Bool   []bool
	Int32  []int32
	Int64  []int64
	Double []float64
	Bytes  [][]byte
}

// Null reports whether row i is null.
func (v *Values) Null(i int) bool { return v.Valid != nil && !v.Valid[i] }

// Read decodes column c of row group g.
func (r *Reader) Read(g, c int) (*Values, error) {
	if g < 0 || g >= len(r.groups) || c < 0 || c >= len(r.columns) {
		return nil, fmt.Errorf("parquetw: no column %d in row group %d", c, g)
	}
	ch := r.groups[g].chunks[c]
	col := r.columns[c]
	if ch.codec != 0 && ch.codec != codecZstd {
		return nil, formatErr("column %s: compression codec %d (want zstd or none)", col.Name, ch.codec)
	}
	buf := make([]byte, ch.compSize)
	if _, err := r.r.ReadAt(buf, ch.start); err != nil {
		return nil, err
	}
	rows := int(r.groups[g].rows)
	out := &Values{}
	if col.Optional {
		out.Valid = make([]bool, 0, rows)
	}
	var dict *Values
	d := &decoder{b: buf}
	for n := 0; n < rows; {
		h, err := pageHeader(d)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", col.Name, err)
		}
		if h.comp > int64(len(buf)-d.pos) || h.uncomp > maxPage || h.uncomp < 0 {
			return nil, formatErr("column %s: page of %d bytes (%d compressed), %d left", col.Name, h.uncomp, h.comp, len(buf)-d.pos)
		}
		body := buf[d.pos : d.pos+int(h.comp)]
		d.pos += int(h.comp)
		if ch.codec == codecZstd {
			if body, err = r.dec.DecodeAll(body, make([]byte, 0, min(h.uncomp, 1<<24))); err != nil {
				return nil, fmt.Errorf("column %s: %w", col.Name, err)
			}
		}
		if int64(len(body)) != h.uncomp {
			return nil, formatErr("column %s: page of %d bytes, its header says %d", col.Name, len(body), h.uncomp)
		}
		switch h.typ {
		case pageDictionary:
			// The writer encodes only strings by dictionary, and only while
			// the dictionary stays under maxDict: a dictionary of raw bytes,
			// or a larger one, is refused, so that two-byte index runs cannot
			// repeat a large value without end.
			if dict != nil || n > 0 || col.Type != String {
				return nil, formatErr("column %s: a dictionary page out of place", col.Name)
			}
			if h.uncomp > maxDict || int64(h.values) > int64(rows) {
				return nil, formatErr("column %s: a dictionary of %d values in %d bytes for %d rows", col.Name, h.values, h.uncomp, rows)
			}
			dict = &Values{}
			if _, err := plain(body, col.Type, int(h.values), dict); err != nil {
				return nil, fmt.Errorf("column %s: dictionary: %w", col.Name, err)
			}
		case pageData:
			if h.values < 0 || h.values > int64(rows-n) {
				return nil, formatErr("column %s: a page of %d values, %d rows left", col.Name, h.values, rows-n)
			}
			if err := dataPage(body, col, int(h.values), h.enc, dict, out); err != nil {
				return nil, fmt.Errorf("column %s: %w", col.Name, err)
			}
			n += int(h.values)
		default:
			return nil, formatErr("column %s: page type %d", col.Name, h.typ)
		}
	}
	return out, nil
}

type page struct {
	typ, uncomp, comp, values, enc int64
}

func pageHeader(d *decoder) (page, error) {
	h := page{typ: -1, enc: -1}
	err := d.strct(func(id int16, typ byte) (bool, error) {
		var err error
		switch id {
		case 1:
			h.typ, err = d.int(typ)
		case 2:
			h.uncomp, err = d.int(typ)
		case 3:
			h.comp, err = d.int(typ)
		case 5, 7: // data page v1, dictionary page
			if typ != ctStruct {
				return false, nil
			}
			err = d.strct(func(id int16, typ byte) (bool, error) {
				var err error
				switch id {
				case 1:
					h.values, err = d.int(typ)
				case 2:
					h.enc, err = d.int(typ)
				default:
					return false, nil
				}
				return true, err
			})
		default:
			return false, nil
		}
		return true, err
	})
	if err == nil && h.comp < 0 {
		err = errThrift
	}
	return h, err
}

// dataPage appends a data page's n rows to out.
func dataPage(b []byte, col Column, n int, enc int64, dict *Values, out *Values) error {
	present := n
	if col.Optional {
		if len(b) < 4 {
			return formatErr("no definition levels")
		}
		ln := binary.LittleEndian.Uint32(b)
		if uint64(ln) > uint64(len(b)-4) {
			return formatErr("definition levels of %d bytes", ln)
		}
		levels, err := hybrid(b[4:4+ln], n, 1)
		if err != nil {
			return err
		}
		b = b[4+ln:]
		present = 0
		for _, l := range levels {
			out.Valid = append(out.Valid, l == 1)
			if l == 1 {
				present++
			}
		}
	}
	vals := &Values{}
	switch enc {
	case encPlain:
		if _, err := plain(b, col.Type, present, vals); err != nil {
			return err
		}
	case encRLEDictionary, 2: // 2: PLAIN_DICTIONARY, its older name
		if dict == nil {
			return formatErr("dictionary-encoded page without a dictionary")
		}
		if len(b) < 1 || b[0] > 32 {
			return formatErr("dictionary index width")
		}
		idx, err := hybrid(b[1:], present, int(b[0]))
		if err != nil {
			return err
		}
		for _, i := range idx {
			if int(i) >= len(dict.Bytes) {
				return formatErr("dictionary index %d of %d", i, len(dict.Bytes))
			}
			vals.Bytes = append(vals.Bytes, dict.Bytes[i])
		}
	default:
		return formatErr("encoding %d", enc)
	}
	// Spread the values over the rows, a zero value for each null.
	k := 0
	start := len(out.Valid) - n
	for row := range n {
		ok := !col.Optional || out.Valid[start+row]
		switch col.Type {
		case Bool:
			out.Bool = append(out.Bool, ok && vals.Bool[k])
		case Int32, Date:
			out.Int32 = append(out.Int32, pick(vals.Int32, k, ok))
		case Int64, TimestampMicros:
			out.Int64 = append(out.Int64, pick(vals.Int64, k, ok))
		case Double:
			out.Double = append(out.Double, pick(vals.Double, k, ok))
		default:
			out.Bytes = append(out.Bytes, pick(vals.Bytes, k, ok))
		}
		if ok {
			k++
		}
	}
	return nil
}

func pick[T any](v []T, k int, ok bool) T {
	var zero T
	if !ok {
		return zero
	}
	return v[k]
}

// plain decodes n PLAIN values of type t from b into v, returning the bytes
// used.
func plain(b []byte, t Type, n int, v *Values) (int, error) {
	size := map[Type]int{Int32: 4, Date: 4, Int64: 8, TimestampMicros: 8, Double: 8}[t]
	if t == Bool {
		if n < 0 || (n+7)/8 > len(b) {
			return 0, formatErr("%d booleans in %d bytes", n, len(b))
		}
		for i := range n {
			v.Bool = append(v.Bool, b[i/8]>>(i%8)&1 == 1)
		}
		return (n + 7) / 8, nil
	}
	if size > 0 {
		if n < 0 || n > len(b)/size {
			return 0, formatErr("%d values of %d bytes in %d bytes", n, size, len(b))
		}
		for i := range n {
			p := b[i*size:]
			switch t {
			case Int32, Date:
				v.Int32 = append(v.Int32, int32(binary.LittleEndian.Uint32(p)))
			case Int64, TimestampMicros:
				v.Int64 = append(v.Int64, int64(binary.LittleEndian.Uint64(p)))
			default:
				v.Double = append(v.Double, math.Float64frombits(binary.LittleEndian.Uint64(p)))
			}
		}
		return n * size, nil
	}
	if n < 0 || n > len(b)/4 {
		return 0, formatErr("%d strings in %d bytes", n, len(b))
	}
	pos := 0
	for range n {
		if len(b)-pos < 4 {
			return 0, formatErr("a string past the page's end")
		}
		ln := binary.LittleEndian.Uint32(b[pos:])
		pos += 4
		if uint64(ln) > uint64(len(b)-pos) {
			return 0, formatErr("a string of %d bytes, %d left", ln, len(b)-pos)
		}
		v.Bytes = append(v.Bytes, b[pos:pos+int(ln):pos+int(ln)])
		pos += int(ln)
	}
	return pos, nil
}

// hybrid decodes n values of the given bit width from the RLE/bit-packing
// hybrid encoding (the inverse of appendHybrid).
func hybrid(b []byte, n, width int) ([]uint32, error) {
	if width < 0 || width > 32 {
		return nil, formatErr("bit width %d", width)
	}
	out := make([]uint32, 0, min(n, 1<<16))
	pos := 0
	vbytes := (width + 7) / 8
	for len(out) < n {
		h, k := binary.Uvarint(b[pos:])
		if k <= 0 {
			return nil, formatErr("a run header past the end (%d of %d values)", len(out), n)
		}
		pos += k
		if h&1 == 0 { // an RLE run
			count := h >> 1
			if count == 0 || vbytes > len(b)-pos {
				return nil, formatErr("an RLE run of %d", count)
			}
			var v uint32
			for i := range vbytes {
				v |= uint32(b[pos+i]) << (8 * i)
			}
			pos += vbytes
			for c := uint64(0); c < count && len(out) < n; c++ {
				out = append(out, v)
			}
			continue
		}
		groups := h >> 1
		if groups == 0 || groups > uint64(len(b)-pos)/uint64(max(width, 1)) {
			return nil, formatErr("%d bit-packed groups in %d bytes", groups, len(b)-pos)
		}
		bitsAt := pos * 8
		for i := uint64(0); i < groups*8 && len(out) < n; i++ {
			var v uint32
			for j := range width {
				bit := bitsAt + int(i)*width + j
				v |= uint32(b[bit/8]>>(bit%8)&1) << j
			}
			out = append(out, v)
		}
		pos += int(groups) * width
	}
	return out, nil
}
