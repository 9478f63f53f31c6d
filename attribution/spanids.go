package attribution

import (
	"encoding/binary"
	"math/bits"
	"math/rand/v2"

	"github.com/llmprof/llmprof/ingest"
)

// spanIDTable maps span IDs to spans, for newSpanIndex: open addressing
// with linear probing in one array of (ID, span) pairs, the ID as a 64-bit
// number. A Go map of the same did each of the index's puts as a lookup
// then an insert, two hashings and probes of a table of groups: 8% of
// Analyze's CPU on an OTLP dump with a span per request (148k spans). The
// hash mixes the ID with a seed drawn for each table, so that no input
// can choose IDs that pile up in one stretch of it (span IDs are random
// in well-behaved input, but the input is not trusted).
type spanIDTable struct {
	slots []spanIDSlot
	shift uint // 64 − log2(len(slots))
	seed  uint64
}

// spanIDSlot is an entry: id 0 marks an empty one (a zero span ID is
// never put).
type spanIDSlot struct {
	id   uint64
	span int32
}

// newSpanIDTable makes a table for up to n IDs: a power of two of slots,
// at least 4/3 of n, so that it is never more than three quarters full.
func newSpanIDTable(n int) *spanIDTable {
	size := max(16, 1<<bits.Len(uint(n+n/3)))
	return &spanIDTable{slots: make([]spanIDSlot, size), shift: uint(64 - bits.TrailingZeros(uint(size))), seed: rand.Uint64()}
}

// spanIDKey is id as the table's key (0 for the zero ID).
func spanIDKey(id ingest.SpanID) uint64 { return binary.LittleEndian.Uint64(id[:]) }

// home is the slot where key's probe starts: the key mixed (the
// finalizer of MurmurHash3, whose every output bit depends on every input
// bit), its top bits.
func (t *spanIDTable) home(key uint64) uint64 {
	x := key ^ t.seed
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x >> t.shift
}

// slot returns the slot of key: its own, or the empty one where it would
// go. key must not be 0, and the table must hold fewer keys than it was
// made for (an empty slot ends every probe).
func (t *spanIDTable) slot(key uint64) *spanIDSlot {
	mask := uint64(len(t.slots) - 1)
	for h := t.home(key); ; h = (h + 1) & mask {
		if s := &t.slots[h]; s.id == key || s.id == 0 {
			return s
		}
	}
}

// putFirst returns the span of key and true when the table has one, else
// puts span there and returns it and false (key not 0).
func (t *spanIDTable) putFirst(key uint64, span int32) (int32, bool) {
	s := t.slot(key)
	if s.id == key {
		return s.span, true
	}
	s.id, s.span = key, span
	return span, false
}

// get returns the span of key (not 0), if the table has one.
func (t *spanIDTable) get(key uint64) (int32, bool) {
	s := t.slot(key)
	return s.span, s.id == key
}
