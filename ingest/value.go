package ingest

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"
)

// ValueKind is the type of an attribute value, mirroring OTLP's AnyValue.
type ValueKind uint8

// The value kinds. KindEmpty is an attribute present without a value.
const (
	KindEmpty ValueKind = iota
	KindString
	KindBool
	KindInt
	KindDouble
	KindBytes
	KindArray
	KindMap
)

var kindNames = [...]string{"empty", "string", "bool", "int", "double", "bytes", "array", "map"}

func (k ValueKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Value is a compact typed attribute value. Scalars live in num (an int64, the
// bits of a float64, 0/1 for a bool); strings and bytes are a StrID in num;
// arrays and maps are an index into the Trace's Arrays or Maps.
type Value struct {
	kind ValueKind
	num  uint64
}

// Constructors. String, Bytes, Array and Map values hold IDs of a Trace and
// are meaningful only with that Trace.

func StringValue(id StrID) Value  { return Value{KindString, uint64(id)} }
func BytesValue(id StrID) Value   { return Value{KindBytes, uint64(id)} }
func IntValue(v int64) Value      { return Value{KindInt, uint64(v)} }
func DoubleValue(v float64) Value { return Value{KindDouble, math.Float64bits(v)} }
func ArrayValue(index int) Value  { return Value{KindArray, uint64(index)} }
func MapValue(index int) Value    { return Value{KindMap, uint64(index)} }
func EmptyValue() Value           { return Value{} }
func BoolValue(v bool) Value {
	if v {
		return Value{KindBool, 1}
	}
	return Value{KindBool, 0}
}

// Kind reports the value's type.
func (v Value) Kind() ValueKind { return v.kind }

// Str is the StrID of a string or bytes value (0 otherwise).
func (v Value) Str() StrID {
	if v.kind == KindString || v.kind == KindBytes {
		return StrID(v.num)
	}
	return 0
}

// Int is the value of an int attribute (a double is truncated, 0 otherwise).
func (v Value) Int() int64 {
	switch v.kind {
	case KindInt:
		return int64(v.num)
	case KindDouble:
		return int64(math.Float64frombits(v.num))
	case KindBool:
		return int64(v.num)
	}
	return 0
}

// Double is the value of a numeric attribute as float64 (NaN otherwise).
func (v Value) Double() float64 {
	switch v.kind {
	case KindDouble:
		return math.Float64frombits(v.num)
	case KindInt:
		return float64(int64(v.num))
	}
	return math.NaN()
}

// Bool is the value of a bool attribute.
func (v Value) Bool() bool { return v.kind == KindBool && v.num != 0 }

// Index is the Arrays or Maps index of an array or map value.
func (v Value) Index() int { return int(v.num) }

// Attr is one key/value attribute. The value is stored flattened (16 bytes
// in all, not 24) because a trace holds tens of millions of attributes; use
// NewAttr to build one and Value to read it.
type Attr struct {
	Key  StrID
	kind ValueKind
	num  uint64
}

// NewAttr returns the attribute key=v.
func NewAttr(key StrID, v Value) Attr { return Attr{Key: key, kind: v.kind, num: v.num} }

// Value is the attribute's value.
func (a Attr) Value() Value { return Value{a.kind, a.num} }

// SetValue replaces the attribute's value.
func (a *Attr) SetValue(v Value) { a.kind, a.num = v.kind, v.num }

// Get returns the value of the attribute with the given key in attrs.
func Get(attrs []Attr, key StrID) (Value, bool) {
	for _, a := range attrs {
		if a.Key == key {
			return Value{a.kind, a.num}, true
		}
	}
	return Value{}, false
}

// Key returns the StrID of an attribute key, or ok=false when no attribute
// anywhere in the trace has that key (so a lookup would always miss).
func (t *Trace) Key(name string) (StrID, bool) { return t.Strings.Lookup(name) }

// Str returns the string with the given ID.
func (t *Trace) Str(id StrID) string { return t.Strings.Get(id) }

// Attr looks an attribute up by name.
func (t *Trace) Attr(attrs []Attr, key string) (Value, bool) {
	id, ok := t.Strings.Lookup(key)
	if !ok {
		return Value{}, false
	}
	return Get(attrs, id)
}

// AttrString returns a string attribute by name; a non-string value is
// formatted with FormatValue.
func (t *Trace) AttrString(attrs []Attr, key string) (string, bool) {
	v, ok := t.Attr(attrs, key)
	if !ok {
		return "", false
	}
	if v.kind == KindString {
		return t.Str(v.Str()), true
	}
	return t.FormatValue(v), true
}

// StringList returns the elements of an array attribute as strings (a single
// string value is a one-element list).
func (t *Trace) StringList(v Value) []string {
	switch v.kind {
	case KindArray:
		if v.Index() >= len(t.Arrays) {
			return nil
		}
		vals := t.Arrays[v.Index()]
		out := make([]string, len(vals))
		for i, e := range vals {
			if e.kind == KindString {
				out[i] = t.Str(e.Str())
			} else {
				out[i] = t.FormatValue(e)
			}
		}
		return out
	case KindString:
		return []string{t.Str(v.Str())}
	}
	return nil
}

// FormatValue renders a value the way the canonical dump prints it: strings
// quoted, bytes base64, doubles in shortest form, arrays and maps recursively.
func (t *Trace) FormatValue(v Value) string {
	var b strings.Builder
	t.formatValue(&b, v, 0)
	return b.String()
}

func (t *Trace) formatValue(b *strings.Builder, v Value, depth int) {
	if depth > 32 {
		b.WriteString("…")
		return
	}
	switch v.kind {
	case KindEmpty:
		b.WriteString("<empty>")
	case KindString:
		b.WriteString(strconv.Quote(t.Str(v.Str())))
	case KindBool:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case KindInt:
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case KindDouble:
		b.WriteString(strconv.FormatFloat(v.Double(), 'g', -1, 64))
	case KindBytes:
		b.WriteString("b64:")
		b.WriteString(base64.StdEncoding.EncodeToString([]byte(t.Str(v.Str()))))
	case KindArray:
		b.WriteByte('[')
		if v.Index() < len(t.Arrays) {
			for i, e := range t.Arrays[v.Index()] {
				if i > 0 {
					b.WriteString(", ")
				}
				t.formatValue(b, e, depth+1)
			}
		}
		b.WriteByte(']')
	case KindMap:
		b.WriteByte('{')
		if v.Index() < len(t.Maps) {
			for i, a := range t.Maps[v.Index()] {
				if i > 0 {
					b.WriteString(", ")
				}
				b.WriteString(t.Str(a.Key))
				b.WriteString(": ")
				t.formatValue(b, a.Value(), depth+1)
			}
		}
		b.WriteByte('}')
	default:
		b.WriteString(v.kind.String())
	}
}
