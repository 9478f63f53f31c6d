package otlp

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// splitKeyValue's fast paths (one-byte lengths read inline, then any
// lengths) accept exactly a key and a value, in either order, or one of
// them alone, and agree with splitKeyValueSlow, which reads the fields in
// any order and number, wherever they accept. Cases: each order, lengths
// on both sides of the one-byte boundary, an empty key or value, a field
// missing, repeated or unknown, a wrong wire type, bytes left over or
// missing.
func TestSplitKeyValueAgreesWithSlow(t *testing.T) {
	field := func(b []byte, num protowire.Number, v string) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendString(b, v)
	}
	type kv struct {
		name     string
		b        []byte
		key, val string
		ok       bool
	}
	var cases []kv
	for _, n := range []int{0, 1, 5, 125, 126, 127, 128, 129, 300} {
		k, v := strings.Repeat("k", n), strings.Repeat("v", 130-n%131)
		cases = append(cases,
			kv{"key first", field(field(nil, 1, k), 2, v), k, v, true},
			kv{"value first", field(field(nil, 2, v), 1, k), k, v, true},
			kv{"key alone", field(nil, 1, k), k, "", true},
			kv{"value alone", field(nil, 2, v), "", v, true},
			kv{"key twice", field(field(nil, 1, k), 1, v), "", "", false},
			kv{"unknown field", field(field(field(nil, 1, k), 2, v), 3, "x"), "", "", false},
			kv{"byte left over", append(field(field(nil, 1, k), 2, v), 0), "", "", false},
			kv{"value cut short", field(field(nil, 1, k), 2, v)[:len(k)+len(v)+3], "", "", false},
			kv{"varint value", protowire.AppendVarint(protowire.AppendTag(field(nil, 1, k), 2, protowire.VarintType), uint64(n)), "", "", false},
		)
	}
	for _, c := range cases {
		key, val, ok := splitKeyValue(c.b)
		if ok != c.ok || ok && (string(key) != c.key || string(val) != c.val) {
			t.Errorf("%s (%d bytes): %q, %q, %v; want %q, %q, %v", c.name, len(c.b), trim(key), trim(val), ok, trim([]byte(c.key)), trim([]byte(c.val)), c.ok)
		}
		if !ok {
			continue
		}
		skey, sval, err := splitKeyValueSlow(c.b)
		if err != nil || !bytes.Equal(skey, key) || !bytes.Equal(sval, val) {
			t.Errorf("%s: the slow path reads %q, %q, %v", c.name, trim(skey), trim(sval), err)
		}
	}
	// Random bytes, and valid pairs with bytes changed: whatever the fast
	// paths accept, the slow one reads alike.
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 200000 {
		var b []byte
		if i%2 == 0 {
			b = make([]byte, rng.IntN(12))
			for j := range b {
				b[j] = []byte{0x0a, 0x12, 0x00, 0x01, 0x02, 0x80, 0x81, 0x1a}[rng.IntN(8)]
			}
		} else {
			b = field(field(nil, protowire.Number(1+i%4/2), strings.Repeat("a", rng.IntN(140))), protowire.Number(2-i%4/2), "b")
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		key, val, ok := splitKeyValue(b)
		if vkey, vval, vok := splitValueKey(b); vok && (!ok || !bytes.Equal(vkey, key) || !bytes.Equal(vval, val)) {
			t.Fatalf("% x: splitValueKey %q, %q; splitKeyValue %q, %q, %v", b, vkey, vval, key, val, ok)
		}
		if !ok {
			continue
		}
		skey, sval, err := splitKeyValueSlow(b)
		if err != nil || !bytes.Equal(skey, key) || !bytes.Equal(sval, val) {
			t.Fatalf("% x: fast %q, %q; slow %q, %q, %v", b, key, val, skey, sval, err)
		}
	}
}

// splitValueKey, protoSpanAttr's inline case, reads the value-first pairs
// with one-byte lengths as splitKeyValue does, and nothing else: not the
// key first, not a longer length, not a key length byte with its
// continuation bit set whose value happens to match the bytes left.
func TestSplitValueKey(t *testing.T) {
	field := func(b []byte, num protowire.Number, v string) []byte {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		return protowire.AppendString(b, v)
	}
	for _, n := range []int{0, 1, 5, 127} {
		k, v := strings.Repeat("k", n), strings.Repeat("v", 127-n)
		b := field(field(nil, 2, v), 1, k)
		if key, val, ok := splitValueKey(b); !ok || string(key) != k || string(val) != v {
			t.Errorf("value first, %d-byte key: %q, %q, %v", n, trim(key), trim(val), ok)
		}
	}
	for name, b := range map[string][]byte{
		"key first":          field(field(nil, 1, "k"), 2, "v"),
		"128-byte key":       field(field(nil, 2, "v"), 1, strings.Repeat("k", 128)),
		"128-byte value":     field(field(nil, 2, strings.Repeat("v", 128)), 1, "k"),
		"continuation bit":   append([]byte{0x12, 0x01, 'v', 0x0a, 0x80}, strings.Repeat("k", 128)...),
		"value alone":        field(nil, 2, "v"),
		"a byte left over":   append(field(field(nil, 2, "v"), 1, "k"), 0),
		"the key cut short":  field(field(nil, 2, "v"), 1, "key")[:7],
		"an unknown field 3": field(field(nil, 2, "v"), 3, "k"),
	} {
		if key, val, ok := splitValueKey(b); ok {
			t.Errorf("%s: read as %q, %q", name, trim(key), trim(val))
		}
	}
}

func trim(b []byte) string {
	if len(b) > 12 {
		return string(b[:12]) + "…"
	}
	return string(b)
}
