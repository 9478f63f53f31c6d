package ingest

import "maps"

// StrID identifies an interned string in a Trace's string table. The zero
// StrID is always the empty string.
type StrID uint32

// Strings is an append-only intern table. It is not safe for concurrent
// mutation: each decoder fills the table of its own Trace, and Merge remaps
// IDs when traces are combined.
type Strings struct {
	list  []string
	index map[string]StrID
}

// NewStrings returns a table holding only the empty string.
func NewStrings() *Strings {
	return &Strings{list: []string{""}, index: map[string]StrID{"": 0}}
}

// Intern returns the ID of s, adding it if it is new.
func (s *Strings) Intern(v string) StrID {
	if id, ok := s.index[v]; ok {
		return id
	}
	id := StrID(len(s.list))
	s.list = append(s.list, v)
	s.index[v] = id
	return id
}

// InternBytes is Intern for a byte slice; it allocates only when b is new.
func (s *Strings) InternBytes(b []byte) StrID {
	return s.InternBytesWith(b, func(b []byte) string { return string(b) })
}

// InternBytesWith is InternBytes with the string of a new b made by keep
// (a decoder's slab of copies) rather than allocated on its own: keep is
// called only when b is new, so a string that recurs is never copied
// again, and the table is looked up once.
func (s *Strings) InternBytesWith(b []byte, keep func([]byte) string) StrID {
	if id, ok := s.index[string(b)]; ok { // no allocation: the compiler special-cases this lookup
		return id
	}
	v := keep(b)
	id := StrID(len(s.list))
	s.list = append(s.list, v)
	s.index[v] = id
	return id
}

// Lookup returns the ID of v if v has been interned.
func (s *Strings) Lookup(v string) (StrID, bool) {
	id, ok := s.index[v]
	return id, ok
}

// Get returns the string with the given ID. An ID the table never handed out
// yields "" rather than a panic, so a corrupt model degrades visibly.
func (s *Strings) Get(id StrID) string {
	if int(id) >= len(s.list) {
		return ""
	}
	return s.list[id]
}

// Len is the number of interned strings, the empty string included.
func (s *Strings) Len() int { return len(s.list) }

// Grow makes room for n more strings, so that interning them grows neither
// the list nor the index step by step: a decoder that can tell how many
// strings are coming (the OTLP decoder, from the input's size) spares the
// index's rehashing, which was 3% of an OTLP analyze whose every span holds
// a new request ID. The list's capacity stands for the room made: a call
// asking for no more than it holds does nothing.
func (s *Strings) Grow(n int) {
	want := len(s.list) + n
	if n <= 0 || cap(s.list) >= want {
		return
	}
	list := make([]string, len(s.list), want)
	copy(list, s.list)
	index := make(map[string]StrID, want)
	maps.Copy(index, s.index)
	s.list, s.index = list, index
}
