package otlp

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// pbuf.bytes reads a one-byte length inline, and shortBytes reads only
// those: they must agree with reading the length as a varint (bytesSlow),
// in what they return and in where they leave the reader, a failed read
// included (warnings name that offset).
func TestPbufBytesAgreesWithSlow(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 100000; n++ {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = byte(rng.IntN(16))
			if rng.IntN(8) == 0 {
				b[i] = byte(rng.Uint32())
			}
		}
		start := rng.IntN(len(b) + 1)
		fast, slow := pbuf{b: b, i: start}, pbuf{b: b, i: start}
		got, okFast := fast.bytes()
		want, okSlow := slow.bytesSlow()
		if okFast != okSlow || !bytes.Equal(got, want) || fast.i != slow.i {
			t.Fatalf("% x from %d: bytes() = % x, %v at %d; bytesSlow() = % x, %v at %d", b, start, got, okFast, fast.i, want, okSlow, slow.i)
		}
		// shortBytes reads what bytes does where it reads at all, and
		// otherwise leaves the reader where it was.
		short := pbuf{b: b, i: start}
		if got, ok := short.shortBytes(); ok && (!okSlow || !bytes.Equal(got, want) || short.i != slow.i) || !ok && short.i != start {
			t.Fatalf("% x from %d: shortBytes() = % x, %v at %d; bytesSlow() = % x, %v at %d", b, start, got, ok, short.i, want, okSlow, slow.i)
		}
	}
}

func TestPbufFixed64(t *testing.T) {
	b := binary.LittleEndian.AppendUint64([]byte{0xff}, 0x0102030405060708)
	p := pbuf{b: b, i: 1}
	if v, ok := p.fixed64(); !ok || v != 0x0102030405060708 || p.i != 9 {
		t.Fatalf("fixed64 = %#x, %v at %d", v, ok, p.i)
	}
	if _, ok := (&pbuf{b: b, i: 2}).fixed64(); ok {
		t.Fatal("fixed64 read past the end")
	}
}
