package parquetw

import (
	"encoding/binary"
	"testing"
)

// Skipping a list of bools consumes a byte an element (the compact
// protocol's encoding in collections), so every element costs input and a
// footer of nested bool lists is linear to skip, not quadratic (it once
// took two minutes for 320 KB).
func TestSkipBoolListConsumesInput(t *testing.T) {
	const n = 1000
	b := []byte{0xF0 | ctTrue}
	b = binary.AppendUvarint(b, n)
	for range n {
		b = append(b, 1)
	}
	d := &decoder{b: b}
	if err := d.skip(ctList); err != nil {
		t.Fatal(err)
	}
	if d.pos != len(b) {
		t.Fatalf("skipped %d of %d bytes", d.pos, len(b))
	}
	// A list claiming more bools than bytes left is malformed.
	d = &decoder{b: b[:len(b)-1]}
	if err := d.skip(ctList); err == nil {
		t.Fatal("a list of bools longer than its bytes was accepted")
	}
	// A map of bool to bool: two bytes an entry.
	m := binary.AppendUvarint(nil, 3)
	m = append(m, ctTrue<<4|ctFalse, 1, 2, 1, 2, 1, 2)
	d = &decoder{b: m}
	if err := d.skip(ctMap); err != nil || d.pos != len(m) {
		t.Fatalf("map: %v, skipped %d of %d bytes", err, d.pos, len(m))
	}
}
