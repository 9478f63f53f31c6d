package ingest

import (
	"fmt"
	"testing"
)

// Grow keeps every ID, makes room that the next n strings fit in without
// the list moving, and does nothing when asked for less than it has.
func TestStringsGrow(t *testing.T) {
	s := NewStrings()
	for i := range 100 {
		s.Intern(fmt.Sprint("a", i))
	}
	s.Grow(1000)
	list := &s.list[:cap(s.list)][cap(s.list)-1]
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
	if &s.list[:cap(s.list)][cap(s.list)-1] != list {
		t.Errorf("the list moved while the %d strings Grow made room for were interned", 1000)
	}
	n := cap(s.list)
	s.Grow(0)
	s.Grow(-5)
	s.Grow(cap(s.list) - len(s.list))
	if cap(s.list) != n || s.Len() != 1101 {
		t.Errorf("Grow within the room changed the table: cap %d (was %d), len %d", cap(s.list), n, s.Len())
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
