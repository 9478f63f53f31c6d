package parquetw

import "encoding/binary"

// compact is a writer of the Thrift compact protocol, just enough of it for
// the Parquet page headers and footer: structs, lists of structs, i32, i64,
// bool and binary fields. Field ids are tracked per struct nesting level so
// that short (delta) field headers are used where the protocol allows.
type compact struct {
	b    []byte
	last []int16 // previous field id, per open struct
}

// Compact protocol type codes.
const (
	ctTrue   = 1
	ctFalse  = 2
	ctI32    = 5
	ctI64    = 6
	ctBinary = 8
	ctList   = 9
	ctStruct = 12
)

func (c *compact) varint(v uint64) { c.b = binary.AppendUvarint(c.b, v) }

func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func (c *compact) field(id int16, typ byte) {
	top := len(c.last) - 1
	if d := id - c.last[top]; d > 0 && d <= 15 {
		c.b = append(c.b, byte(d)<<4|typ)
	} else {
		c.b = append(c.b, typ)
		c.varint(zigzag(int64(id)))
	}
	c.last[top] = id
}

// begin opens the top-level struct.
func (c *compact) begin() { c.last = append(c.last[:0], 0) }

func (c *compact) i32(id int16, v int32) {
	c.field(id, ctI32)
	c.varint(zigzag(int64(v)))
}

func (c *compact) i64(id int16, v int64) {
	c.field(id, ctI64)
	c.varint(zigzag(v))
}

func (c *compact) boolean(id int16, v bool) {
	if v {
		c.field(id, ctTrue)
	} else {
		c.field(id, ctFalse)
	}
}

func (c *compact) binary(id int16, v []byte) {
	c.field(id, ctBinary)
	c.varint(uint64(len(v)))
	c.b = append(c.b, v...)
}

func (c *compact) str(id int16, v string) {
	c.field(id, ctBinary)
	c.varint(uint64(len(v)))
	c.b = append(c.b, v...)
}

// structField opens a struct-valued field; end closes it.
func (c *compact) structField(id int16) {
	c.field(id, ctStruct)
	c.last = append(c.last, 0)
}

// end closes the innermost struct (or list element, or the top level).
func (c *compact) end() {
	c.b = append(c.b, 0)
	c.last = c.last[:len(c.last)-1]
}

// list opens a list-valued field of n elements of type elem.
func (c *compact) list(id int16, elem byte, n int) {
	c.field(id, ctList)
	if n < 15 {
		c.b = append(c.b, byte(n)<<4|elem)
	} else {
		c.b = append(c.b, 0xf0|elem)
		c.varint(uint64(n))
	}
}

// elem opens a struct element of a list; end closes it.
func (c *compact) elem() { c.last = append(c.last, 0) }

// listI32 and listStr write list elements of those types.
func (c *compact) listI32(v int32) { c.varint(zigzag(int64(v))) }

func (c *compact) listStr(v string) {
	c.varint(uint64(len(v)))
	c.b = append(c.b, v...)
}
