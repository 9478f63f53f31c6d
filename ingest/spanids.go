package ingest

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
)

// SpanIDTable maps span IDs to spans by index: open addressing with linear
// probing in one array of (ID, span) pairs, the ID as a 64-bit number. Both
// of a trace's indexes of its span IDs use it: Validate's check for
// duplicates and dangling parents (checkSpanIDs) and attribution's parent
// links (attribution/requests.go, newSpanIndex). A Go map of the same did
// each put as a lookup then an insert, two hashings and probes of a table
// of groups: 8% of attribution's CPU on an OTLP dump with a span per
// request (148k spans), and Validate's map 2% of an analyze of it. The
// hash mixes the ID with a seed drawn for each table, so that no input can
// choose IDs that pile up in one stretch of it (span IDs are random in
// well-behaved input, but the input is not trusted); nothing depends on
// the order of the slots.
type SpanIDTable struct {
	slots []spanIDSlot
	seed  uint64
}

// spanIDSlot is an entry, the ID in two halves so that a slot is 12
// bytes, not 16: id 0 marks an empty one (a zero span ID is never put).
type spanIDSlot struct {
	lo, hi uint32
	span   int32
}

func (s *spanIDSlot) id() uint64 { return uint64(s.lo) | uint64(s.hi)<<32 }

// NewSpanIDTable makes a table for up to n IDs: 4/3 of n slots and one
// (any count, not a power of two: home reduces the hash by a multiply), so
// that it is never more than three quarters full. A power of two made
// 262,144 slots for the 148,480 IDs of the 100 MiB OTLP dump of
// docs/otlp.md, 4 MiB of 16-byte slots, where these are 198,000 and
// 2.3 MiB.
func NewSpanIDTable(n int) *SpanIDTable {
	return &SpanIDTable{slots: make([]spanIDSlot, n+n/3+1), seed: rand.Uint64()}
}

// spanIDKey is id as the table's key (0 for the zero ID only).
func spanIDKey(id SpanID) uint64 { return binary.LittleEndian.Uint64(id[:]) }

// home is the slot where key's probe starts: the key mixed (the
// finalizer of MurmurHash3, whose every output bit depends on every input
// bit), scaled to the table's length (the high word of its product with
// it: Lemire's multiply-shift reduction).
func (t *SpanIDTable) home(key uint64) int {
	x := key ^ t.seed
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	h, _ := bits.Mul64(x, uint64(len(t.slots)))
	return int(h)
}

// slot returns the slot of key: its own, or the empty one where it would
// go. key must not be 0, and the table must hold fewer keys than it was
// made for (an empty slot ends every probe).
func (t *SpanIDTable) slot(key uint64) *spanIDSlot {
	for h := t.home(key); ; {
		if s := &t.slots[h]; s.id() == key || s.id() == 0 {
			return s
		}
		if h++; h == len(t.slots) {
			h = 0
		}
	}
}

// PutFirst returns the span of id and true when the table has one, else
// puts span there and returns it and false. id must not be zero, and the
// table must hold fewer IDs than it was made for.
func (t *SpanIDTable) PutFirst(id SpanID, span int32) (int32, bool) {
	key := spanIDKey(id)
	s := t.slot(key)
	if s.id() == key {
		return s.span, true
	}
	s.lo, s.hi, s.span = uint32(key), uint32(key>>32), span
	return span, false
}

// Get returns the span of id, if the table has one (never for the zero
// ID).
func (t *SpanIDTable) Get(id SpanID) (int32, bool) {
	key := spanIDKey(id)
	if key == 0 {
		return 0, false
	}
	s := t.slot(key)
	return s.span, s.id() == key
}
