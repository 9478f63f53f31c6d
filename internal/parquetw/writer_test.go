package parquetw

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// The tests read what the writer wrote with arrow-go's Parquet reader (a
// test-only dependency: it does not enter the binary) and compare every
// value, the schema's logical types and the column statistics.

// cell is one written value; null when ok is false.
type cell struct {
	ok  bool
	b   bool
	i   int64
	f   float64
	s   string
	typ Type
}

var allTypes = []Column{
	{"b", Bool, false}, {"nb", Bool, true},
	{"i32", Int32, false}, {"ni32", Int32, true},
	{"i64", Int64, false}, {"ni64", Int64, true},
	{"f", Double, false}, {"nf", Double, true},
	{"s", String, false}, {"ns", String, true},
	{"d", Date, false}, {"nd", Date, true},
	{"ts", TimestampMicros, false}, {"nts", TimestampMicros, true},
}

// gen makes rows of random values: nullProb of an optional cell being null,
// strings from a vocabulary of vocab words (0: all distinct) of up to
// strLen bytes.
func gen(r *rand.Rand, cols []Column, rows int, nullProb float64, vocab, strLen int) [][]cell {
	words := make([]string, vocab)
	for i := range words {
		words[i] = randString(r, strLen)
	}
	out := make([][]cell, rows)
	for i := range out {
		row := make([]cell, len(cols))
		for j, c := range cols {
			x := cell{ok: !(c.Optional && r.Float64() < nullProb), typ: c.Type}
			switch c.Type {
			case Bool:
				x.b = r.IntN(3) == 0
			case Int32, Date:
				x.i = int64(int32(r.Uint32()))
				if r.IntN(4) == 0 {
					x.i = int64(r.IntN(5)) // runs of small values
				}
			case Int64, TimestampMicros:
				x.i = int64(r.Uint64())
			case Double:
				x.f = r.NormFloat64() * 1e6
				if r.IntN(10) == 0 {
					x.f = math.Copysign(0, float64(r.IntN(2)*2-1))
				}
				x.i = int64(math.Float64bits(x.f)) // compared bit for bit
			case String, Binary:
				if vocab > 0 {
					x.s = words[r.IntN(vocab)]
				} else {
					x.s = randString(r, strLen)
				}
			}
			if !x.ok {
				x = cell{typ: c.Type}
			}
			row[j] = x
		}
		out[i] = row
	}
	return out
}

func randString(r *rand.Rand, n int) string {
	var b strings.Builder
	k := r.IntN(n + 1)
	for range k {
		b.WriteByte(byte(' ' + r.IntN(95)))
	}
	if r.IntN(7) == 0 {
		b.WriteString("é✓") // multi-byte UTF-8
	}
	return b.String()
}

func write(t testing.TB, cols []Column, rows [][]cell, opts Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, cols, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		for j, x := range row {
			switch {
			case !x.ok:
				w.Null(j)
			case x.typ == Bool:
				w.Bool(j, x.b)
			case x.typ == Int32 || x.typ == Date:
				w.Int32(j, int32(x.i))
			case x.typ == Int64 || x.typ == TimestampMicros:
				w.Int64(j, x.i)
			case x.typ == Double:
				w.Double(j, x.f)
			case x.typ == Binary:
				w.Bytes(j, []byte(x.s))
			default:
				w.String(j, x.s)
			}
		}
		if err := w.EndRow(); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// check reads data back and compares it with rows.
func check(t *testing.T, data []byte, cols []Column, rows [][]cell, rgRows int) {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("arrow-go cannot open the file: %v", err)
	}
	defer pf.Close()
	if got := pf.NumRows(); got != int64(len(rows)) {
		t.Fatalf("num_rows %d, wrote %d", got, len(rows))
	}
	wantGroups := (len(rows) + rgRows - 1) / rgRows
	if pf.NumRowGroups() != wantGroups {
		t.Errorf("%d row groups, want %d", pf.NumRowGroups(), wantGroups)
	}
	checkSchema(t, pf.MetaData().Schema, cols)
	for g := 0; g < pf.NumRowGroups(); g++ {
		rg := pf.MetaData().RowGroup(g)
		lo, hi := g*rgRows, min((g+1)*rgRows, len(rows))
		if rg.NumRows() != int64(hi-lo) {
			t.Errorf("row group %d: %d rows, want %d", g, rg.NumRows(), hi-lo)
		}
		for j, c := range cols {
			checkStats(t, rg, j, c, rows[lo:hi], g)
		}
	}

	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1000}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatalf("arrow-go cannot read the file: %v", err)
	}
	defer tbl.Release()
	if tbl.NumRows() != int64(len(rows)) {
		t.Fatalf("read %d rows, wrote %d", tbl.NumRows(), len(rows))
	}
	for j, c := range cols {
		f := tbl.Schema().Field(j)
		if f.Name != c.Name || f.Nullable != c.Optional || f.Type.String() != arrowType(c.Type) {
			t.Errorf("column %d read as %s %s nullable=%v, want %s %s nullable=%v", j, f.Name, f.Type, f.Nullable, c.Name, arrowType(c.Type), c.Optional)
			continue
		}
		i := 0
		for _, chunk := range tbl.Column(j).Data().Chunks() {
			for k := 0; k < chunk.Len(); k, i = k+1, i+1 {
				want := rows[i][j]
				if got := readCell(chunk, k, c.Type); got != want {
					t.Fatalf("column %s row %d: read %+v, wrote %+v", c.Name, i, got, want)
				}
			}
		}
	}
}

func arrowType(t Type) string {
	return map[Type]string{Bool: "bool", Int32: "int32", Int64: "int64", Double: "float64", String: "utf8",
		Date: "date32", TimestampMicros: "timestamp[us, tz=UTC]"}[t]
}

func readCell(a arrow.Array, k int, t Type) cell {
	x := cell{typ: t, ok: a.IsValid(k)}
	if !x.ok {
		return x
	}
	switch a := a.(type) {
	case *array.Boolean:
		x.b = a.Value(k)
	case *array.Int32:
		x.i = int64(a.Value(k))
	case *array.Date32:
		x.i = int64(a.Value(k))
	case *array.Int64:
		x.i = a.Value(k)
	case *array.Timestamp:
		x.i = int64(a.Value(k))
	case *array.Float64:
		x.f = a.Value(k)
		x.i = int64(math.Float64bits(x.f))
	case *array.String:
		x.s = a.Value(k)
	default:
		panic(fmt.Sprintf("unexpected array %T", a))
	}
	return x
}

func checkSchema(t *testing.T, s *schema.Schema, cols []Column) {
	t.Helper()
	if s.NumColumns() != len(cols) {
		t.Fatalf("%d columns in the schema, wrote %d", s.NumColumns(), len(cols))
	}
	want := map[Type]struct{ phys, logical, conv string }{
		Bool:            {"BOOLEAN", "None", "NONE"},
		Int32:           {"INT32", "Int(bitWidth=32, isSigned=true)", "INT_32"},
		Int64:           {"INT64", "Int(bitWidth=64, isSigned=true)", "INT_64"},
		Double:          {"DOUBLE", "None", "NONE"},
		String:          {"BYTE_ARRAY", "String", "UTF8"},
		Date:            {"INT32", "Date", "DATE"},
		TimestampMicros: {"INT64", "Timestamp(isAdjustedToUTC=true, timeUnit=microseconds, is_from_converted_type=false, force_set_converted_type=false)", "TIMESTAMP_MICROS"},
	}
	for j, c := range cols {
		sc := s.Column(j)
		w := want[c.Type]
		got := struct{ phys, logical, conv string }{sc.PhysicalType().String(), sc.LogicalType().String(), sc.ConvertedType().String()}
		if got != w || sc.Name() != c.Name || (sc.MaxDefinitionLevel() == 1) != c.Optional || sc.MaxRepetitionLevel() != 0 {
			t.Errorf("column %d: %s %+v def=%d rep=%d; want %s %+v optional=%v", j, sc.Name(), got, sc.MaxDefinitionLevel(), sc.MaxRepetitionLevel(), c.Name, w, c.Optional)
		}
	}
}

// checkStats compares a column chunk's statistics with its rows.
func checkStats(t *testing.T, rg *metadata.RowGroupMetaData, j int, c Column, rows [][]cell, g int) {
	t.Helper()
	cc, err := rg.ColumnChunk(j)
	if err != nil {
		t.Fatal(err)
	}
	if cc.Compression() != compress.Codecs.Zstd {
		t.Errorf("row group %d column %s: compression %v, want zstd", g, c.Name, cc.Compression())
	}
	if cc.NumValues() != int64(len(rows)) {
		t.Errorf("row group %d column %s: %d values, want %d", g, c.Name, cc.NumValues(), len(rows))
	}
	set, err := cc.StatsSet()
	if err != nil || !set {
		t.Fatalf("row group %d column %s: no statistics (%v)", g, c.Name, err)
	}
	st, err := cc.Statistics()
	if err != nil {
		t.Fatal(err)
	}
	nulls, present := 0, []cell{}
	for _, r := range rows {
		if r[j].ok {
			present = append(present, r[j])
		} else {
			nulls++
		}
	}
	if st.NullCount() != int64(nulls) {
		t.Errorf("row group %d column %s: null_count %d, want %d", g, c.Name, st.NullCount(), nulls)
	}
	if len(present) == 0 {
		if st.HasMinMax() {
			t.Errorf("row group %d column %s: min/max of no values", g, c.Name)
		}
		return
	}
	lo, hi := present[0], present[0]
	less := func(a, b cell) bool {
		switch c.Type {
		case Bool:
			return !a.b && b.b
		case Double:
			return a.f < b.f
		case String:
			return a.s < b.s
		}
		return a.i < b.i
	}
	for _, x := range present {
		if less(x, lo) {
			lo = x
		}
		if less(hi, x) {
			hi = x
		}
	}
	if c.Type == String && (len(lo.s) > maxStatString || len(hi.s) > maxStatString) {
		if st.HasMinMax() {
			t.Errorf("row group %d column %s: min/max of strings over %d bytes", g, c.Name, maxStatString)
		}
		return
	}
	if !st.HasMinMax() {
		t.Fatalf("row group %d column %s: no min/max", g, c.Name)
	}
	var gotLo, gotHi, wantLo, wantHi any
	switch s := st.(type) {
	case *metadata.BooleanStatistics:
		gotLo, gotHi, wantLo, wantHi = s.Min(), s.Max(), lo.b, hi.b
	case *metadata.Int32Statistics:
		gotLo, gotHi, wantLo, wantHi = int64(s.Min()), int64(s.Max()), lo.i, hi.i
	case *metadata.Int64Statistics:
		gotLo, gotHi, wantLo, wantHi = s.Min(), s.Max(), lo.i, hi.i
	case *metadata.Float64Statistics:
		// Zero bounds are written -0 (min) and +0 (max), as the format asks.
		gotLo, gotHi, wantLo, wantHi = s.Min(), s.Max(), lo.f, hi.f
		if lo.f == 0 && !math.Signbit(s.Min()) || hi.f == 0 && math.Signbit(s.Max()) {
			t.Errorf("row group %d column %s: zero bounds %v %v not -0, +0", g, c.Name, s.Min(), s.Max())
		}
	case *metadata.ByteArrayStatistics:
		gotLo, gotHi, wantLo, wantHi = string(s.Min()), string(s.Max()), lo.s, hi.s
	default:
		t.Fatalf("unexpected statistics %T", st)
	}
	if gotLo != wantLo || gotHi != wantHi {
		t.Errorf("row group %d column %s: min/max %v %v, want %v %v", g, c.Name, gotLo, gotHi, wantLo, wantHi)
	}
}

// roundTripCases are the files TestRoundTripAllTypes and TestReaderRoundTrip
// write and read back.
var roundTripCases = []struct {
	name          string
	rows, rgRows  int
	nullProb      float64
	vocab, strLen int
}{
	{"empty", 0, 100, 0.3, 5, 10},
	{"one row", 1, 100, 0, 5, 10},
	{"one row null", 1, 100, 1, 5, 10},
	{"all null", 300, 128, 1, 5, 10},
	{"no nulls", 1000, 1 << 16, 0, 20, 30},
	{"sparse nulls, dictionary", 5000, 1 << 16, 0.05, 50, 40},
	{"half nulls, many row groups", 5003, 97, 0.5, 300, 20},
	{"distinct strings", 3000, 1000, 0.2, 0, 50},
	{"row group of one", 20, 1, 0.5, 3, 5},
	{"pages cut, dictionary given up", 700, 1 << 16, 0.1, 0, 6000},
}

func TestRoundTripAllTypes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range roundTripCases {
		t.Run(tc.name, func(t *testing.T) {
			rows := gen(r, allTypes, tc.rows, tc.nullProb, tc.vocab, tc.strLen)
			data := write(t, allTypes, rows, Options{RowGroupRows: tc.rgRows})
			check(t, data, allTypes, rows, tc.rgRows)
		})
	}
}

// Large strings: pages are cut at pageTarget bytes, the dictionary gives way
// to PLAIN past maxDict, and statistics leave out strings over maxStatString.
func TestRoundTripLargeStrings(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	cols := []Column{{"id", Int64, false}, {"big", String, true}, {"word", String, false}}
	var rows [][]cell
	for i := range 600 {
		big := strings.Repeat(string(rune('a'+i%26)), 1000+r.IntN(9000))
		if i == 7 {
			big = strings.Repeat("z", 3<<20) // one value over a page
		}
		rows = append(rows, []cell{{ok: true, i: int64(i), typ: Int64}, {ok: i%5 != 0, s: big, typ: String}, {ok: true, s: fmt.Sprint(i % 3), typ: String}})
		if !rows[i][1].ok {
			rows[i][1].s = ""
		}
	}
	data := write(t, cols, rows, Options{RowGroupRows: 400})
	check(t, data, cols, rows, 400)
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	cc, _ := pf.MetaData().RowGroup(0).ColumnChunk(1)
	if cc.HasDictionaryPage() {
		t.Errorf("big: a dictionary of %d MB was kept", cc.TotalUncompressedSize()>>20)
	}
	cc, _ = pf.MetaData().RowGroup(0).ColumnChunk(2)
	if !cc.HasDictionaryPage() {
		t.Errorf("word: three distinct values and no dictionary")
	}
	pr, err := pf.RowGroup(0).GetColumnPageReader(1)
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for pr.Next() {
		pages++
	}
	if pages < 3 {
		t.Errorf("big: %d pages for ~5 MB of strings, want them cut at %d bytes", pages, pageTarget)
	}
}

func TestWriterRejects(t *testing.T) {
	var buf bytes.Buffer
	if _, err := NewWriter(&buf, nil, Options{}); err == nil {
		t.Error("no columns accepted")
	}
	if _, err := NewWriter(&buf, []Column{{"a", Int64, false}, {"a", Int64, false}}, Options{}); err == nil {
		t.Error("a repeated column name accepted")
	}
	w, _ := NewWriter(&buf, []Column{{"a", Int64, false}, {"b", String, false}}, Options{})
	w.Int64(0, 1)
	if err := w.EndRow(); err == nil || !strings.Contains(err.Error(), "column b") {
		t.Errorf("a row missing column b: %v", err)
	}
	w, _ = NewWriter(&buf, []Column{{"a", Int64, false}}, Options{})
	w.Null(0)
	if err := w.EndRow(); err == nil || !strings.Contains(err.Error(), "required") {
		t.Errorf("null in a required column: %v", err)
	}
	w, _ = NewWriter(&buf, []Column{{"a", Int64, false}}, Options{})
	w.String(0, "x")
	if err := w.EndRow(); err == nil || !strings.Contains(err.Error(), "not string") {
		t.Errorf("a string in an int64 column: %v", err)
	}
}

// The hybrid encoder against a direct decoder of the format.
func TestHybridRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, width := range []int{1, 2, 3, 7, 8, 9, 13, 17, 24, 32} {
		for _, n := range []int{0, 1, 7, 8, 9, 63, 64, 65, 504, 505, 1000, 5000} {
			vals := make([]uint32, n)
			for i := range vals {
				switch r.IntN(3) {
				case 0:
					vals[i] = uint32(r.Uint64() & (1<<width - 1))
				default:
					if i > 0 {
						vals[i] = vals[i-1] // runs
					}
				}
			}
			enc := appendHybrid(nil, vals, width)
			got, err := decodeHybrid(enc, n, width)
			if err != nil {
				t.Fatalf("width %d n %d: %v", width, n, err)
			}
			for i := range vals {
				if got[i] != vals[i] {
					t.Fatalf("width %d n %d: value %d decoded %d, wrote %d", width, n, i, got[i], vals[i])
				}
			}
		}
	}
}

func decodeHybrid(b []byte, n, width int) ([]uint32, error) {
	var out []uint32
	for len(out) < n {
		h, k := binary.Uvarint(b)
		if k <= 0 {
			return nil, fmt.Errorf("bad header at %d values", len(out))
		}
		b = b[k:]
		if h&1 == 0 {
			nb := (width + 7) / 8
			var v uint32
			for i := 0; i < nb; i++ {
				v |= uint32(b[i]) << (8 * i)
			}
			b = b[nb:]
			for range h >> 1 {
				out = append(out, v)
			}
			continue
		}
		count := int(h>>1) * 8
		if count == 0 || count > 63*8 {
			return nil, fmt.Errorf("bit-packed run of %d", count)
		}
		nbytes := count * width / 8
		var acc uint64
		bitsIn, pos := 0, 0
		for range count {
			for bitsIn < width {
				acc |= uint64(b[pos]) << bitsIn
				pos++
				bitsIn += 8
			}
			out = append(out, uint32(acc&(1<<width-1)))
			acc >>= width
			bitsIn -= width
		}
		b = b[nbytes:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d bytes left after %d values", len(b), n)
	}
	return out[:n], nil
}
