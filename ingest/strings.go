package ingest

import (
	"hash/maphash"
	"math"
	"math/bits"
	"unsafe"
)

// StrID identifies an interned string in a Trace's string table. The zero
// StrID is always the empty string.
type StrID uint32

// Strings is an append-only intern table. It is not safe for concurrent
// mutation: each decoder fills the table of its own Trace, and Merge remaps
// IDs when traces are combined.
//
// Its index is an open-addressed table of its own rather than a
// map[string]StrID: a trace interns a new string or two a span (a request
// ID), and a map looked each one up twice, to miss and then to insert, with a
// cache miss on its control word and another on its keys each time — 5% of
// an OTLP analyze's CPU. Here each slot is 8 bytes, the ID and the string's
// 32-bit hash, so that a new string is placed in the one probe that found it
// absent, a slot whose hash differs is passed without reading its string,
// and the table, holding no pointers, is not scanned by the collector.
//
// Nor is the list of strings: each ID's bytes are found by their chunk and
// place in it (strRef), not by a string header, and the table copies a new
// string's bytes into a chunk of its own. As headers, the 148,605 strings of
// bench/otlp.sh's 100 MiB dump (its request IDs) were as many pointers that
// every collection followed, nine collections a run under the spill budget
// (docs/otlp.md, "Twenty-second pass").
type Strings struct {
	refs   []strRef
	chunks [][]byte // the strings' bytes, appended to and never moved
	// shared is 1 + the index in chunks of the chunk short strings are
	// copied into now; 0 before the first.
	shared int
	// slots holds hash<<32 | ID for each string but the empty one, at the
	// slot its hash's low bits pick or, taken, the next free one (linear
	// probing); 0 is a free slot. It is never more than half full.
	slots []uint64
}

// A strRef is where an ID's bytes are: n bytes from off in chunks[chunk],
// or the whole chunk when n is ownChunk (a string of its own chunk, which
// may be longer than a uint32 counts).
type strRef struct{ chunk, off, n uint32 }

// ownChunk is strRef.n for a string that is a whole chunk of its own.
const ownChunk = math.MaxUint32

// strChunk is the size of a chunk that strings share, and strOwn the length
// from which a string gets a chunk of its own (so as not to leave most of a
// chunk unused).
const (
	strChunk = 64 << 10
	strOwn   = strChunk / 8
)

// stringsSeed hashes the strings of every table: random, so that no input
// can choose strings that collide, and one for the process, so that two
// tables that interned the same strings in the same order hold the same
// slots and compare equal (reflect.DeepEqual, as nsys's tests compare a
// parallel read's model with a sequential one's), as maps of the same
// contents did. (A table Grow made room in may have more slots.)
var stringsSeed = maphash.MakeSeed()

// NewStrings returns a table holding only the empty string.
func NewStrings() *Strings {
	return &Strings{refs: []strRef{{}}}
}

// minSlots is the size of the first table.
const minSlots = 64

// Intern returns the ID of s, adding it if it is new.
func (s *Strings) Intern(v string) StrID {
	h := s.hash(v)
	id, i := s.find(v, h)
	if id != 0 || v == "" {
		return id
	}
	return s.add(v, h, i)
}

// InternBytes is Intern for a byte slice: b's bytes are copied only when
// they are new, and the table is probed once.
func (s *Strings) InternBytes(b []byte) StrID {
	if len(b) == 0 {
		return 0
	}
	return s.InternHashed(b, s.HashBytes(b))
}

// HashBytes is the hash of b that InternHashed and Prefetch take.
func (s *Strings) HashBytes(b []byte) uint32 {
	return s.hash(unsafe.String(unsafe.SliceData(b), len(b)))
}

// Prefetch starts to bring into the cache the slot where a string whose
// hash is h is looked for first, without waiting for it: a decoder that
// knows a string it will intern some work later (the OTLP decoder, a
// span's request ID, interned at the span's end) issues it then, and the
// probe, a cache miss in a table of a few MB, finds the slot there. It is a
// hint only: no string is added, and a table that grows meanwhile is only
// probed where it is.
func (s *Strings) Prefetch(h uint32) {
	if len(s.slots) > 0 {
		prefetch(unsafe.Pointer(&s.slots[int(h)&(len(s.slots)-1)]))
	}
}

// InternHashed is InternBytes for a b whose hash, h, HashBytes gave.
func (s *Strings) InternHashed(b []byte, h uint32) StrID {
	if len(b) == 0 {
		return 0
	}
	// A view of b, only compared here, never kept: the table keeps a copy
	// of its bytes (add).
	v := unsafe.String(unsafe.SliceData(b), len(b))
	id, i := s.find(v, h)
	if id != 0 {
		return id
	}
	return s.add(v, h, i)
}

// Lookup returns the ID of v if v has been interned.
func (s *Strings) Lookup(v string) (StrID, bool) {
	if v == "" {
		return 0, true
	}
	id, _ := s.find(v, s.hash(v))
	return id, id != 0
}

func (s *Strings) hash(v string) uint32 { return uint32(maphash.String(stringsSeed, v)) }

// find returns the ID of v, whose hash is h, or 0 and the free slot where v
// belongs when the table does not hold it. The empty string is never in
// the slots: its ID, 0, is what find returns for it.
func (s *Strings) find(v string, h uint32) (StrID, int) {
	if len(s.slots) == 0 {
		return 0, -1
	}
	mask := len(s.slots) - 1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		e := s.slots[i]
		if e == 0 {
			return 0, i
		}
		if uint32(e>>32) == h && s.Get(StrID(uint32(e))) == v {
			return StrID(uint32(e)), i
		}
	}
}

// add appends a copy of v, which hashes to h and which find placed at slot
// i, and returns its ID.
func (s *Strings) add(v string, h uint32, i int) StrID {
	id := StrID(len(s.refs))
	s.refs = append(s.refs, s.keep(v))
	if 2*len(s.refs) > len(s.slots) {
		s.rehash(2 * len(s.refs))
		_, i = s.find(v, h)
	}
	s.slots[i] = uint64(h)<<32 | uint64(id)
	return id
}

// keep copies v's bytes into the chunks, past every byte handed out before
// (which are never written again), and returns where they are.
func (s *Strings) keep(v string) strRef {
	if len(v) >= strOwn {
		s.chunks = append(s.chunks, []byte(v))
		return strRef{chunk: uint32(len(s.chunks) - 1), n: ownChunk}
	}
	last := s.shared - 1
	if last < 0 || cap(s.chunks[last])-len(s.chunks[last]) < len(v) {
		s.chunks = append(s.chunks, make([]byte, 0, strChunk))
		last = len(s.chunks) - 1
		s.shared = last + 1
	}
	c := s.chunks[last]
	off := len(c)
	s.chunks[last] = append(c, v...)
	return strRef{chunk: uint32(last), off: uint32(off), n: uint32(len(v))}
}

// rehash makes the table at least n slots (a power of two, never fewer than
// minSlots) and places every string again, from the hashes the slots hold.
func (s *Strings) rehash(n int) {
	size := max(minSlots, 1<<bits.Len(uint(n-1)))
	if size <= len(s.slots) {
		return
	}
	old := s.slots
	s.slots = make([]uint64, size)
	mask := size - 1
	for _, e := range old {
		if e == 0 {
			continue
		}
		i := int(e>>32) & mask
		for s.slots[i] != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = e
	}
}

// Get returns the string with the given ID. An ID the table never handed out
// yields "" rather than a panic, so a corrupt model degrades visibly.
func (s *Strings) Get(id StrID) string {
	if int(id) >= len(s.refs) {
		return ""
	}
	r := s.refs[id]
	if r.n == 0 {
		return ""
	}
	c := s.chunks[r.chunk]
	if r.n == ownChunk {
		return unsafe.String(unsafe.SliceData(c), len(c))
	}
	return unsafe.String(&c[r.off], int(r.n))
}

// Len is the number of interned strings, the empty string included.
func (s *Strings) Len() int { return len(s.refs) }

// Grow makes room for n more strings, so that interning them grows neither
// the references nor the index step by step: a decoder that can tell how many
// strings are coming (the OTLP decoder, from the input's size) spares the
// index's rehashing, which was 3% of an OTLP analyze whose every span holds
// a new request ID. The references' capacity stands for the room made: a call
// asking for no more than it holds does nothing.
func (s *Strings) Grow(n int) {
	want := len(s.refs) + n
	if n <= 0 || cap(s.refs) >= want {
		return
	}
	refs := make([]strRef, len(s.refs), want)
	copy(refs, s.refs)
	s.refs = refs
	s.rehash(2 * want)
}
