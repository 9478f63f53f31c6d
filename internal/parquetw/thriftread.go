package parquetw

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// decoder reads the Thrift compact protocol: structs whose fields a
// callback picks out by id, every other field skipped, lists and nesting
// bounded by the bytes left and a depth limit, so that no input makes it
// loop, recurse without end or allocate more than it holds.
type decoder struct {
	b     []byte
	pos   int
	depth int
}

var errThrift = errors.New("malformed Thrift metadata")

const (
	ctByte   = 3
	ctI16    = 4
	ctDouble = 7
	ctSet    = 10
	ctMap    = 11
	maxDepth = 16
)

func (d *decoder) byte() (byte, error) {
	if d.pos >= len(d.b) {
		return 0, errThrift
	}
	c := d.b[d.pos]
	d.pos++
	return c, nil
}

func (d *decoder) uvarint() (uint64, error) {
	v, n := binary.Uvarint(d.b[d.pos:])
	if n <= 0 {
		return 0, errThrift
	}
	d.pos += n
	return v, nil
}

func (d *decoder) varint() (int64, error) {
	u, err := d.uvarint()
	return int64(u>>1) ^ -int64(u&1), err
}

func (d *decoder) binary() ([]byte, error) {
	n, err := d.uvarint()
	if err != nil || n > uint64(len(d.b)-d.pos) {
		return nil, errThrift
	}
	v := d.b[d.pos : d.pos+int(n)]
	d.pos += int(n)
	return v, nil
}

// list reads a list header: the element type and count (bounded by the
// bytes left, as every element takes one at least).
func (d *decoder) list() (byte, int, error) {
	h, err := d.byte()
	if err != nil {
		return 0, 0, err
	}
	n := uint64(h >> 4)
	if n == 15 {
		if n, err = d.uvarint(); err != nil {
			return 0, 0, err
		}
	}
	if n > uint64(len(d.b)-d.pos) {
		return 0, 0, errThrift
	}
	return h & 0x0f, int(n), nil
}

// strct reads a struct, calling field for each field; field returns false
// for a field it does not read, which is then skipped.
func (d *decoder) strct(field func(id int16, typ byte) (bool, error)) error {
	if d.depth++; d.depth > maxDepth {
		return errThrift
	}
	defer func() { d.depth-- }()
	var last int16
	for {
		h, err := d.byte()
		if err != nil {
			return err
		}
		if h == 0 {
			return nil // stop
		}
		typ := h & 0x0f
		id := last + int16(h>>4)
		if h>>4 == 0 {
			v, err := d.varint()
			if err != nil || v != int64(int16(v)) {
				return errThrift
			}
			id = int16(v)
		}
		last = id
		ok, err := field(id, typ)
		if err != nil {
			return err
		}
		if !ok {
			if err := d.skip(typ); err != nil {
				return err
			}
		}
	}
}

// skipElem passes over one element of a list, set or map. A bool there is a
// byte of its own (in a field it lives in the field header, which skip
// assumes): read as nothing, a list of a million bools would cost no input
// and a list of such lists quadratic time.
func (d *decoder) skipElem(typ byte) error {
	if typ == ctTrue || typ == ctFalse {
		_, err := d.byte()
		return err
	}
	return d.skip(typ)
}

// skip passes over one value of the given type (a field's: a bool is in its
// header).
func (d *decoder) skip(typ byte) error {
	switch typ {
	case ctTrue, ctFalse:
		return nil
	case ctByte:
		_, err := d.byte()
		return err
	case ctI16, ctI32, ctI64:
		_, err := d.uvarint()
		return err
	case ctDouble:
		if len(d.b)-d.pos < 8 {
			return errThrift
		}
		d.pos += 8
		return nil
	case ctBinary:
		_, err := d.binary()
		return err
	case ctList, ctSet:
		et, n, err := d.list()
		if err != nil {
			return err
		}
		for range n {
			if err := d.nested(func() error { return d.skipElem(et) }); err != nil {
				return err
			}
		}
		return nil
	case ctMap:
		n, err := d.uvarint()
		if err != nil || n > uint64(len(d.b)-d.pos) {
			return errThrift
		}
		if n == 0 {
			return nil
		}
		kv, err := d.byte()
		if err != nil {
			return err
		}
		for range n {
			if err := d.nested(func() error { return d.skipElem(kv >> 4) }); err != nil {
				return err
			}
			if err := d.nested(func() error { return d.skipElem(kv & 0x0f) }); err != nil {
				return err
			}
		}
		return nil
	case ctStruct:
		return d.strct(func(int16, byte) (bool, error) { return false, nil })
	}
	return fmt.Errorf("%w: type %d", errThrift, typ)
}

func (d *decoder) nested(f func() error) error {
	if d.depth++; d.depth > maxDepth {
		return errThrift
	}
	defer func() { d.depth-- }()
	return f()
}

// int reads an integer field of any width into an int64.
func (d *decoder) int(typ byte) (int64, error) {
	if typ != ctI16 && typ != ctI32 && typ != ctI64 && typ != ctByte {
		return 0, errThrift
	}
	if typ == ctByte {
		b, err := d.byte()
		return int64(int8(b)), err
	}
	return d.varint()
}
