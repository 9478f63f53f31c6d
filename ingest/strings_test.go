package ingest

import (
	"fmt"
	"reflect"
	"strconv"
	"testing"
)

// Grow keeps every ID, makes room that the next n strings fit in without
// the references moving, and does nothing when asked for less than it has.
func TestStringsGrow(t *testing.T) {
	s := NewStrings()
	for i := range 100 {
		s.Intern(fmt.Sprint("a", i))
	}
	s.Grow(1000)
	refs := &s.refs[:cap(s.refs)][cap(s.refs)-1]
	for i := range 100 {
		if id, ok := s.Lookup(fmt.Sprint("a", i)); !ok || id != StrID(i+1) || s.Get(id) != fmt.Sprint("a", i) {
			t.Fatalf("a%d: ID %d (%v) after Grow, want %d", i, id, ok, i+1)
		}
	}
	for i := range 1000 {
		if id := s.Intern(fmt.Sprint("b", i)); id != StrID(101+i) {
			t.Fatalf("b%d: ID %d, want %d", i, id, 101+i)
		}
	}
	if &s.refs[:cap(s.refs)][cap(s.refs)-1] != refs {
		t.Errorf("the references moved while the %d strings Grow made room for were interned", 1000)
	}
	n := cap(s.refs)
	s.Grow(0)
	s.Grow(-5)
	s.Grow(cap(s.refs) - len(s.refs))
	if cap(s.refs) != n || s.Len() != 1101 {
		t.Errorf("Grow within the room changed the table: cap %d (was %d), len %d", cap(s.refs), n, s.Len())
	}
}

// InternBytes allocates only for a string the table does not hold: a
// present one is found without a copy, and a new one is copied once.
func TestInternBytesAllocatesOnlyNew(t *testing.T) {
	s := NewStrings()
	b := []byte("cmpl-present")
	id := s.InternBytes(b)
	if got := testing.AllocsPerRun(100, func() {
		if s.InternBytes(b) != id {
			t.Fatal("a present string got another ID")
		}
	}); got != 0 {
		t.Errorf("InternBytes of a present string: %.0f allocations, want 0", got)
	}
	n := s.Len()
	if s.InternBytes([]byte("cmpl-new")) != StrID(n) || s.Get(StrID(n)) != "cmpl-new" {
		t.Errorf("a new string: not added as ID %d", n)
	}
}

// The table agrees with a map over many strings that share prefixes and
// lengths, through every rehash from the first table up: each string keeps
// the ID it first got, whether interned again as a string or as bytes, and
// one never interned is not found.
func TestStringsAgreeWithMap(t *testing.T) {
	s := NewStrings()
	want := map[string]StrID{"": 0}
	key := func(i int) string { return fmt.Sprintf("%0*x", 1+i%23, i) }
	for i := range 50000 {
		k := key(i)
		var id StrID
		if i%2 == 0 {
			id = s.Intern(k)
		} else {
			id = s.InternBytes([]byte(k))
		}
		if w, ok := want[k]; ok {
			if id != w {
				t.Fatalf("%q: ID %d, first got %d", k, id, w)
			}
			continue
		}
		if id != StrID(len(want)) {
			t.Fatalf("%q: new string got ID %d, want %d", k, id, len(want))
		}
		want[k] = id
	}
	if s.Len() != len(want) {
		t.Fatalf("Len %d, want %d", s.Len(), len(want))
	}
	for k, w := range want {
		if id, ok := s.Lookup(k); !ok || id != w || s.Get(w) != k {
			t.Fatalf("Lookup(%q) = %d, %v; want %d (Get %q)", k, id, ok, w, s.Get(w))
		}
		if id := s.InternBytes([]byte(k)); id != w {
			t.Fatalf("InternBytes(%q) again = %d, want %d", k, id, w)
		}
	}
	for _, k := range []string{"g", "0g", key(50000), key(49999) + "0"} {
		if id, ok := s.Lookup(k); ok {
			t.Errorf("Lookup(%q) found ID %d (%q), never interned", k, id, s.Get(id))
		}
	}
	if s.Len() != len(want) {
		t.Errorf("looking up added strings: Len %d, want %d", s.Len(), len(want))
	}
}

// InternBytes hashes and compares the caller's bytes in place but keeps a
// copy of them: bytes written over after the call change neither the
// string nor what it is found by; nor do later strings, copied after it
// into the same chunk, nor a long string's own chunk.
func TestInternBytesKeepsACopy(t *testing.T) {
	s := NewStrings()
	b := []byte("req-0001")
	id := s.InternBytes(b)
	copy(b, "XXXX")
	if got := s.Get(id); got != "req-0001" {
		t.Fatalf("after the caller's bytes changed, Get = %q, want %q", got, "req-0001")
	}
	if got, ok := s.Lookup("req-0001"); !ok || got != id {
		t.Errorf(`Lookup("req-0001") = %d, %v; want %d`, got, ok, id)
	}
	if got := s.InternBytes(b); got == id {
		t.Errorf("%q: the ID of %q", b, "req-0001")
	}
	if got := s.InternBytes(nil); got != 0 {
		t.Errorf("empty bytes: ID %d, want 0", got)
	}
	if got, ok := s.Lookup(""); !ok || got != 0 || s.Intern("") != 0 || s.Get(0) != "" {
		t.Errorf(`Lookup("") = %d, %v; want 0, true`, got, ok)
	}
	// Enough short strings to fill several shared chunks, and long ones
	// of their own between them, each read back after all were added.
	long := make([]byte, strOwn)
	want := map[StrID]string{id: "req-0001"}
	for i := range 3 * strChunk / 8 {
		v := []byte(fmt.Sprintf("%07d", i))
		if i%5000 == 0 {
			long[0] = byte('a' + i/5000)
			v = long
		}
		want[s.InternBytes(v)] = string(v)
		long[1] = 'z' // written over after the call
	}
	if len(s.chunks) < 4 {
		t.Fatalf("%d chunks for %d bytes of strings, want several", len(s.chunks), 3*strChunk)
	}
	for id, v := range want {
		if got := s.Get(id); got != v {
			t.Fatalf("ID %d: %q, want %q", id, got, v)
		}
	}
	if s.Get(StrID(s.Len())) != "" {
		t.Error("an ID past the table is not the empty string")
	}
}

// Adding a string allocates only for its chunk: a thousand new request IDs,
// after Grow made room for their references and slots, cost a chunk or two.
func TestInternAllocatesChunks(t *testing.T) {
	s := NewStrings()
	s.Grow(5000)
	var buf []byte
	next := 0
	allocs := testing.AllocsPerRun(2, func() {
		for range 1000 {
			buf = strconv.AppendInt(append(buf[:0], "cmpl-0000-"...), int64(next), 10)
			s.InternBytes(buf)
			next++
		}
	})
	if allocs > 2 {
		t.Errorf("interning 1000 new strings: %.0f allocations, want at most 2 (chunks)", allocs)
	}
}

// The table's references and slots hold no pointer, and it holds a pointer
// a chunk, not a string: the collector does not walk its strings.
func TestStringsHoldNoPointerAString(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[strRef](), reflect.TypeFor[uint64]()} {
		if pointers(typ) {
			t.Errorf("%v holds a pointer", typ)
		}
	}
}

func pointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.String, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return pointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if pointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}

// Two tables that interned the same strings in the same order are equal
// field for field, as the maps they replaced were: nsys's tests compare a
// parallel read's model with a sequential one's by reflect.DeepEqual.
func TestStringsEqualForTheSameStrings(t *testing.T) {
	a, b := NewStrings(), NewStrings()
	for i := range 1000 {
		k := fmt.Sprint("s", i)
		a.Intern(k)
		b.InternBytes([]byte(k))
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("tables of the same 1,000 strings in the same order differ")
	}
}

// InternHashed, given HashBytes's hash, interns as Intern does, and
// Prefetch, a hint, changes nothing, on an empty table or a full one.
func TestInternHashedAgreesWithIntern(t *testing.T) {
	a, b := NewStrings(), NewStrings()
	b.Prefetch(b.HashBytes([]byte("x")))
	for i := range 5000 {
		v := strconv.Itoa(i % 3000)
		h := b.HashBytes([]byte(v))
		b.Prefetch(h)
		if got, want := b.InternHashed([]byte(v), h), a.Intern(v); got != want {
			t.Fatalf("InternHashed(%q) = %d, Intern = %d", v, got, want)
		}
	}
	if id := b.InternHashed(nil, b.HashBytes(nil)); id != 0 {
		t.Errorf("InternHashed of the empty string = %d, want 0", id)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("the tables differ")
	}
}
