package record

import (
	"fmt"
	"reflect"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// A capture table is declared once, as a Go struct whose fields carry
// `arrow:"column_name"` tags (and optionally `unit:"ns"`); tableSchema derives
// the Arrow schema from it and moves rows between the struct and Arrow
// batches. Writer and reader share that one declaration, so the format cannot
// drift between them. A pointer field is a nullable column: nil is NULL.
//
// Supported field types: bool, int16, int32, int64, uint8, uint16, uint32,
// uint64, float64, string, []byte, and pointers to the scalar ones.

// SchemaVersion is the version of the capture format (manifest and tables).
// Readers accept tables with extra columns and fill missing ones with zero
// values, so adding a column does not bump it; renaming or retyping one does.
const SchemaVersion = 1

type tableSchema struct {
	name   string
	typ    reflect.Type
	schema *arrow.Schema
	cols   []tableColumn
}

type tableColumn struct {
	name     string
	field    int // index of the struct field
	nullable bool
	kind     reflect.Kind // of the value (after the pointer, if any)
	bytes    bool         // a []byte column
	dtype    arrow.DataType
}

// newTableSchema derives the schema of table name from the struct type R.
// It panics on an unsupported field type: that is a bug in this package's
// own declarations, caught by the first test that touches the table.
func newTableSchema[R any](name string) *tableSchema {
	typ := reflect.TypeFor[R]()
	ts := &tableSchema{name: name, typ: typ}
	var fields []arrow.Field
	for i := range typ.NumField() {
		sf := typ.Field(i)
		colName := sf.Tag.Get("arrow")
		if colName == "" || colName == "-" {
			continue
		}
		c := tableColumn{name: colName, field: i}
		ft := sf.Type
		if ft.Kind() == reflect.Pointer {
			c.nullable = true
			ft = ft.Elem()
		}
		c.kind = ft.Kind()
		switch {
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8:
			c.bytes, c.dtype = true, arrow.BinaryTypes.Binary
		case ft.Kind() == reflect.String:
			c.dtype = arrow.BinaryTypes.String
		default:
			c.dtype = primitiveType(ft.Kind())
		}
		if c.dtype == nil {
			panic(fmt.Sprintf("record: table %s: field %s has unsupported type %s", name, sf.Name, sf.Type))
		}
		var md arrow.Metadata
		if unit := sf.Tag.Get("unit"); unit != "" {
			md = arrow.NewMetadata([]string{"unit"}, []string{unit})
		}
		fields = append(fields, arrow.Field{Name: colName, Type: c.dtype, Nullable: c.nullable, Metadata: md})
		ts.cols = append(ts.cols, c)
	}
	ts.schema = arrow.NewSchema(fields, nil)
	return ts
}

func primitiveType(k reflect.Kind) arrow.DataType {
	switch k {
	case reflect.Bool:
		return arrow.FixedWidthTypes.Boolean
	case reflect.Int16:
		return arrow.PrimitiveTypes.Int16
	case reflect.Int32:
		return arrow.PrimitiveTypes.Int32
	case reflect.Int64:
		return arrow.PrimitiveTypes.Int64
	case reflect.Uint8:
		return arrow.PrimitiveTypes.Uint8
	case reflect.Uint16:
		return arrow.PrimitiveTypes.Uint16
	case reflect.Uint32:
		return arrow.PrimitiveTypes.Uint32
	case reflect.Uint64:
		return arrow.PrimitiveTypes.Uint64
	case reflect.Float64:
		return arrow.PrimitiveTypes.Float64
	}
	return nil
}

// withMetadata returns the schema carrying the table's identification, so a
// lone .arrows file still says what it is.
func (ts *tableSchema) withMetadata(captureID string) *arrow.Schema {
	md := arrow.NewMetadata(
		[]string{"llmprof.table", "llmprof.schema_version", "llmprof.capture_id"},
		[]string{ts.name, strconv.Itoa(SchemaVersion), captureID})
	return arrow.NewSchema(ts.schema.Fields(), &md)
}

// appendRow appends one struct value to the builder and returns how many
// variable-length bytes (strings, payloads) it added, for batch sizing.
func (ts *tableSchema) appendRow(b *array.RecordBuilder, row reflect.Value) int {
	n := 0
	for i, c := range ts.cols {
		fb := b.Field(i)
		v := row.Field(c.field)
		if c.nullable {
			if v.IsNil() {
				fb.AppendNull()
				continue
			}
			v = v.Elem()
		}
		switch c.kind {
		case reflect.Bool:
			fb.(*array.BooleanBuilder).Append(v.Bool())
		case reflect.Int16:
			fb.(*array.Int16Builder).Append(int16(v.Int()))
		case reflect.Int32:
			fb.(*array.Int32Builder).Append(int32(v.Int()))
		case reflect.Int64:
			fb.(*array.Int64Builder).Append(v.Int())
		case reflect.Uint8:
			fb.(*array.Uint8Builder).Append(uint8(v.Uint()))
		case reflect.Uint16:
			fb.(*array.Uint16Builder).Append(uint16(v.Uint()))
		case reflect.Uint32:
			fb.(*array.Uint32Builder).Append(uint32(v.Uint()))
		case reflect.Uint64:
			fb.(*array.Uint64Builder).Append(v.Uint())
		case reflect.Float64:
			fb.(*array.Float64Builder).Append(v.Float())
		case reflect.String:
			s := v.String()
			fb.(*array.StringBuilder).Append(s)
			n += len(s)
		case reflect.Slice:
			p := v.Bytes()
			fb.(*array.BinaryBuilder).Append(p)
			n += len(p)
		}
	}
	return n
}

// rowReader fills struct values from the batches of one stream. Columns are
// matched by name, so a file with extra columns (a newer writer) or missing
// ones (an older writer) still reads; a column whose type differs from the
// declaration is an error, since its values cannot be trusted.
type rowReader struct {
	ts  *tableSchema
	idx []int // per declared column: index in the file's schema, or -1
}

func (ts *tableSchema) reader(file *arrow.Schema) (*rowReader, error) {
	rr := &rowReader{ts: ts, idx: make([]int, len(ts.cols))}
	for i, c := range ts.cols {
		rr.idx[i] = -1
		ids := file.FieldIndices(c.name)
		if len(ids) == 0 {
			continue
		}
		f := file.Field(ids[0])
		if !arrow.TypeEqual(f.Type, c.dtype) {
			return nil, fmt.Errorf("table %s: column %s has type %s, want %s", ts.name, c.name, f.Type, c.dtype)
		}
		rr.idx[i] = ids[0]
	}
	return rr, nil
}

// read sets row (a settable struct value) from row i of rec. Byte slices are
// copied, so rows outlive the batch.
func (rr *rowReader) read(rec arrow.RecordBatch, i int, row reflect.Value) {
	for ci, c := range rr.ts.cols {
		dst := row.Field(c.field)
		col := rr.idx[ci]
		if col < 0 {
			dst.SetZero()
			continue
		}
		arr := rec.Column(col)
		if arr.IsNull(i) {
			dst.SetZero()
			continue
		}
		if c.nullable {
			p := reflect.New(dst.Type().Elem())
			dst.Set(p)
			dst = p.Elem()
		}
		switch a := arr.(type) {
		case *array.Boolean:
			dst.SetBool(a.Value(i))
		case *array.Int16:
			dst.SetInt(int64(a.Value(i)))
		case *array.Int32:
			dst.SetInt(int64(a.Value(i)))
		case *array.Int64:
			dst.SetInt(a.Value(i))
		case *array.Uint8:
			dst.SetUint(uint64(a.Value(i)))
		case *array.Uint16:
			dst.SetUint(uint64(a.Value(i)))
		case *array.Uint32:
			dst.SetUint(uint64(a.Value(i)))
		case *array.Uint64:
			dst.SetUint(a.Value(i))
		case *array.Float64:
			dst.SetFloat(a.Value(i))
		case *array.String:
			dst.SetString(a.Value(i))
		case *array.Binary:
			dst.SetBytes(append([]byte(nil), a.Value(i)...))
		}
	}
}
