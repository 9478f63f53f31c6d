package otlp

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp/otlptest"
)

// stringsAhead makes room at the rate of new strings a span brought so
// far, for the spans the input is estimated to hold still, but never for
// more than eight times the span slice's capacity: an input whose first
// records are tiny beside the rest estimates far too many spans.
func TestStringsAheadBounded(t *testing.T) {
	tr := ingest.New()
	d := newState(tr, 0)
	for i := range 100 {
		tr.Strings.Intern("request-" + strconv.Itoa(i))
	}
	tr.Spans = make([]ingest.Span, 100, 200)
	d.spans = 100
	// A well-founded estimate: 1000 spans in all, 900 still to come.
	d.sizeHint, d.consumed = 10_000, 1_000
	if got, want := d.stringsAhead(100), 1062-100; got < want-2 || got > want+2 {
		t.Errorf("stringsAhead with 1000 spans estimated = %d, want about %d", got, want)
	}
	// Tiny early records: 10^11 spans estimated, room for 8 × 200 only.
	d.sizeHint, d.consumed = 1<<40, 1_000
	if got := d.stringsAhead(100); got != 1600 {
		t.Errorf("stringsAhead with an estimate of 10^11 spans = %d, want 1600 (8 × the capacity)", got)
	}
	// Without an estimate: the room the slice has.
	d.sizeHint = 0
	if got := d.stringsAhead(100); got != 100 {
		t.Errorf("stringsAhead without an estimate = %d, want 100", got)
	}
	// One payload of a capture decoded into a trace already holding a
	// million spans (record's decoder: a state a payload): its first span
	// brought 5,000 new strings, and the trace has room for a million more.
	// The rate of that one span is not the trace's: at most eight times
	// what the state brought, where it asked for 5 × 10⁹ (80 GB of list).
	big := ingest.New()
	p := newState(big, 0)
	for i := range 5000 {
		big.Strings.Intern("attr-" + strconv.Itoa(i))
	}
	big.Spans = make([]ingest.Span, 1<<20, 1<<21)
	p.spans = 1
	if got := p.stringsAhead(1 << 20); got != 8*5000 {
		t.Errorf("stringsAhead of a payload's first span = %d, want %d (8 × the strings it brought)", got, 8*5000)
	}
}

// A JSON Lines input's span slice grows, as a framed file's does, to the
// spans the whole input is estimated to hold at the rate of the lines read
// so far (spanCapacity): without the lines' bytes counted it doubled, to
// 8192 spans for these 6400, and allocated about three times the slice.
func TestJSONLinesSpanCapacity(t *testing.T) {
	g := &otlptest.Synthetic{Seed: 1, Spans: 64}
	batches := make([]ptrace.Traces, 100)
	for i := range batches {
		batches[i] = g.Next()
	}
	data := otlptest.JSONLines(batches)
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: "spans.jsonl"}}
	if err := (&Decoder{}).decode(context.Background(), bufio.NewReader(bytes.NewReader(data)), formJSONLines, tr, 0, int64(len(data))); err != nil {
		t.Fatal(err)
	}
	n := len(tr.Spans)
	if n != 6400 {
		t.Fatalf("%d spans decoded, want 6400", n)
	}
	if c := cap(tr.Spans); c > n+n/8 {
		t.Errorf("span slice capacity %d for %d spans, want at most %d (the estimate's sixteenth and some)", c, n, n+n/8)
	}
}

// The strings intern adds are copied into the string table's chunks, not
// allocated one by one: a thousand new request IDs cost a chunk or two (the
// string table's room made beforehand), and each string keeps its bytes
// when the input's buffer is overwritten and when later strings fill the
// chunk. A long string gets a chunk of its own.
func TestInternCopiesIntoChunks(t *testing.T) {
	tr := ingest.New()
	d := newState(tr, 0)
	tr.Strings.Grow(5000)
	var buf []byte
	next := 0
	name := func(i int) []byte {
		buf = append(buf[:0], "cmpl-0000-"...)
		return strconv.AppendInt(buf, int64(i), 10)
	}
	allocs := testing.AllocsPerRun(2, func() {
		for range 1000 {
			d.intern(name(next))
			next++
		}
	})
	if allocs > 10 {
		t.Errorf("interning 1000 new strings: %.0f allocations, want at most 10 (the table's chunks)", allocs)
	}
	long := bytes.Repeat([]byte("x"), 64<<10)
	longID := d.intern(long)
	long[0] = 'y'
	for i := range next {
		want := "cmpl-0000-" + strconv.Itoa(i)
		if id, ok := tr.Strings.Lookup(want); !ok || tr.Str(id) != want {
			t.Fatalf("string %q: interned as %q (found %v)", want, tr.Str(id), ok)
		}
	}
	if got := tr.Str(longID); len(got) != 64<<10 || got[0] != 'x' {
		t.Errorf("the long string changed with its input: starts %q, %d bytes", got[:1], len(got))
	}
}

// A string that recurs but misses intern's cache, its slot taken by another
// recurring string, is found in the table, not added (and copied) again:
// two such strings alternating a thousand times leave the table as it was
// after their first two, and allocate nothing.
func TestInternCopiesARecurringStringOnce(t *testing.T) {
	tr := ingest.New()
	d := newState(tr, 0)
	// Two strings of one cache slot: interned in turn, each evicts the
	// other, so every lookup misses the cache.
	slot := func(s string) *cacheEntry {
		d.strs = [strCacheSize]cacheEntry{}
		d.intern([]byte(s))
		for i := range d.strs {
			if d.strs[i].s == s {
				return &d.strs[i]
			}
		}
		return nil
	}
	var a, b string
	seen := map[*cacheEntry]string{}
	for i := 0; b == ""; i++ {
		s := "model-" + strconv.Itoa(i)
		e := slot(s)
		if e == nil {
			t.Fatalf("%q is not in the cache after intern", s)
		}
		if o, ok := seen[e]; ok {
			a, b = o, s
		}
		seen[e] = s
	}
	d.strs = [strCacheSize]cacheEntry{}
	d.intern([]byte(a))
	d.intern([]byte(b))
	used := tr.Strings.Len()
	ba, bb := []byte(a), []byte(b)
	allocs := testing.AllocsPerRun(10, func() {
		for range 100 {
			d.intern(ba)
			d.intern(bb)
		}
	})
	if got := tr.Strings.Len(); got != used || allocs != 0 {
		t.Errorf("the table holds %d strings after 2,000 lookups of %q and %q, want the %d it had (%.0f allocations)", got, a, b, used, allocs)
	}
}

// The attribute arena's growth is bounded as the string table's is: one
// payload of a capture (no size estimate) decoded into a trace already
// full of spans, whose first span brought 1,000 attributes, makes room for
// at most eight times them (at least 4,096) beyond what the arena holds,
// not 1,000 for every span the trace has room for.
func TestArenaCapacityOfAPayload(t *testing.T) {
	tr := ingest.New()
	tr.Spans = make([]ingest.Span, 1<<20, 1<<21)
	tr.AttrArena = make([]ingest.Attr, 100_000)
	d := newState(tr, 0)
	tr.AttrArena = append(tr.AttrArena, make([]ingest.Attr, 1000)...)
	tr.AttrArena = tr.AttrArena[:len(tr.AttrArena):len(tr.AttrArena)]
	d.spans = 1
	got := d.arenaCapacity()
	if most := max(2*cap(tr.AttrArena), len(tr.AttrArena)+8*4096+spanAttrsFree); got > most {
		t.Errorf("arenaCapacity of a payload's first span = %d, want at most %d", got, most)
	}
	// A file's decode, with an estimate, is not held to that bound: 1,000
	// spans of 15 attributes read from a sixteenth of a file grow the arena
	// to the whole file's 16,000 spans' worth (plus a sixteenth) at once,
	// where eight times the 15,000 attributes would leave it to double
	// late and end up to half empty.
	file := ingest.New()
	f := newState(file, 0)
	file.Spans = make([]ingest.Span, 1000, 4096)
	file.AttrArena = make([]ingest.Attr, 15_000)
	f.spans = 1000
	f.sizeHint, f.consumed = 16<<20, 1<<20
	if got, want := f.arenaCapacity(), 15*17_000; got < want {
		t.Errorf("arenaCapacity of a file with 17,000 spans estimated = %d, want at least %d", got, want)
	}
}
