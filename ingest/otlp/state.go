package otlp

import (
	"context"
	"encoding/binary"
	"math"

	"github.com/klauspost/compress/zstd"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
)

// state is everything one decode call owns: the trace it appends to, the
// string cache, the slabs that attributes, events and links are carved from,
// the scratch slices a span is assembled in, and the tables that let repeated
// resources and scopes (every JSON line repeats its resource) share one entry.
// A Decoder keeps no state between calls, so one Decoder may decode many
// inputs in parallel.
type state struct {
	t   *ingest.Trace
	src ingest.SourceID
	// pos is the position of the record being decoded ("line 12", "record 3",
	// "byte 4096"), prefixed to every warning.
	pos string
	// off is the byte offset of the protobuf message being decoded (-1 when
	// none), added to the position of warnings about it.
	off int64

	strs       [strCacheSize]cacheEntry
	slotSets   [slotSetCount]slotSet // see protoSpanAttr
	slotSet    int                   // the set of the span being decoded
	slotVictim int
	later      laterStr // see slotValue

	attrSlab slab[ingest.Attr]

	// Scratch slices a span is assembled in before its parts are kept.
	spanAttrs, eventAttrs, linkAttrs []ingest.Attr
	ownerAttrs                       []ingest.Attr // of a resource or scope
	events                           []ingest.Event
	links                            []ingest.Link
	// pending holds the attributes of the span's events and links until
	// the span is kept (their ranges are of pending until then): the
	// span's own are being decoded at the arena's end meanwhile.
	pending []ingest.Attr

	// Resources and scopes are looked up first by their encoded bytes (cheap,
	// and it skips decoding a repeated resource altogether), then by value.
	resByRaw, scopeByRaw     map[string]int32
	resByValue, scopeByValue map[string]int32
	keyBuf, rawBuf           []byte

	sub    *jsonScanner // for deferred resources and scopes
	b64buf []byte

	zstd *zstd.Decoder // for zstd-compressed records, made on first use
	zbuf []byte

	// spans counts the spans this state appended; strings0 and attrs0 are
	// the string table's and the attribute arena's lengths before the
	// first.
	spans, strings0, attrs0 int
	// sizeHint is the input's size when known (see readAllLimit).
	sizeHint int64
	// consumed is how much of the input the records decoded so far took
	// (readFramed keeps it), for spanCapacity's estimate; 0 when unknown.
	consumed int64
	// ctx, when set, is checked between the resource spans of a raw
	// protobuf stream, which has no records to check it between.
	ctx context.Context
}

func newState(t *ingest.Trace, src ingest.SourceID) *state {
	d := &state{
		t:            t,
		src:          src,
		off:          -1,
		resByRaw:     map[string]int32{},
		scopeByRaw:   map[string]int32{},
		resByValue:   map[string]int32{},
		scopeByValue: map[string]int32{},
		strings0:     t.Strings.Len(),
		attrs0:       len(t.AttrArena),
	}
	// A trace that already holds resources (DecodePayload called once per
	// captured payload) shares them rather than adding a copy per call.
	for i, r := range t.Resources {
		d.resByValue[string(d.resourceKey(r.Attrs, r.SchemaURL))] = int32(i)
	}
	for i, s := range t.Scopes {
		d.scopeByValue[string(d.scopeKey(s.Name, s.Version, s.Attrs))] = int32(i)
	}
	return d
}

// warnf records a warning at the current position.
func (d *state) warnf(code, format string, args ...any) {
	if d.off >= 0 {
		d.warnAt(d.off, code, format, args...)
		return
	}
	d.t.Warnf(d.src, d.pos, code, format, args...)
}

// strCacheSize is the number of entries of the direct-mapped string cache.
// Attribute keys, span names and most string values repeat from span to span,
// so a small cache answers most lookups with one hash of a few loads and one
// comparison, before the string table (ingest.Strings) is consulted.
const strCacheSize = 1 << strCacheBits

const strCacheBits = 10

type cachedStr struct {
	s  string
	id ingest.StrID
}

// cacheEntry is an entry of the direct-mapped cache: a string, its ID and
// its tag, more bits of the hash that picked the entry (cached), in what
// was the entry's padding. A string that misses is most often one new to
// the trace (a request ID, one a span) whose entry holds another of its
// length, interned long before and no longer in the processor's cache:
// the tags differ, and the comparison that would have waited for that
// string's bytes to learn so is not made.
type cacheEntry struct {
	s   string
	id  ingest.StrID
	tag uint32
}

// intern returns the StrID of b, interning it in the trace's table.
func (d *state) intern(b []byte) ingest.StrID {
	if len(b) == 0 {
		return 0
	}
	e, tag := d.cached(b)
	if e.tag == tag && e.s == string(b) {
		return e.id
	}
	if d.later.on {
		d.internLater()
	}
	return d.internTable(b, e, tag, d.t.Strings.HashBytes(b))
}

// cached returns the entry of the direct-mapped cache where b would be,
// and the tag b's entry holds when it is b's.
func (d *state) cached(b []byte) (*cacheEntry, uint32) {
	n := len(b)
	var h uint64
	if n >= 8 {
		h = binary.LittleEndian.Uint64(b) ^ binary.LittleEndian.Uint64(b[n-8:])*0x9E3779B97F4A7C15
	} else {
		for _, c := range b {
			h = h<<8 | uint64(c)
		}
	}
	h = (h ^ uint64(n)) * 0xff51afd7ed558ccd
	return &d.strs[h>>(64-strCacheBits)], uint32(h >> (32 - strCacheBits))
}

// internTable interns b, whose hash in the table is h and whose entry of
// the cache is e (tag its tag), in the trace's table.
func (d *state) internTable(b []byte, e *cacheEntry, tag, h uint32) ingest.StrID {
	// The table copies only a new string's bytes: one that recurs and
	// misses the cache (its slot taken by another) is not copied again at
	// each occurrence.
	n0 := d.t.Strings.Len()
	id := d.t.Strings.InternHashed(b, h)
	// A string seen for the first time is likely unique (an ID): it does not
	// evict a cached one. One that recurs is cached when it is seen again.
	if int(id) < n0 || e.s == "" {
		*e = cacheEntry{d.t.Strings.Get(id), id, tag}
	}
	return id
}

// laterStr is a span attribute's string value whose interning waits until
// the span's end (see slotValue).
type laterStr struct {
	on   bool
	h    uint32 // its hash in the string table
	tag  uint32 // its tag in the cache
	attr int    // the index of its attribute in spanAttrs
	b    []byte
	e    *cacheEntry
	slot *attrSlot
}

// slotValue returns the value of a span attribute whose string value s
// (not empty) differs from the one its slot remembers, and which is to be
// appended at spanAttrs[len(spanAttrs)]. A value that misses the cache too
// is most often new to the trace (a request ID, one a span): its lookup in
// the string table, a cache miss in a table of a few MB, is the decode's
// one stall a span. So the string's slot in the table is fetched ahead
// (Strings.Prefetch) and the value interned later, when the rest of the
// span has been decoded (internLater), the attribute appended meanwhile
// with a placeholder that internLater replaces.
//
// Strings get their IDs in the order they are first interned, and the IDs
// are kept as they were: a string is interned later only while no other
// reaches the table. Any other lookup that misses the cache (intern,
// internString) interns the waiting one first, and so do the span's end
// (protoSpan, before appendSpan) and its being dropped (resetSpan), so
// that the table receives the same strings in the same order, and the
// caches the same entries, as when each was interned where it was read.
// Nothing reads a span's attributes before its end.
func (d *state) slotValue(s []byte, slot *attrSlot) ingest.Value {
	e, tag := d.cached(s)
	if e.tag == tag && e.s == string(s) {
		slot.val = cachedStr{d.t.Strings.Get(e.id), e.id}
		return ingest.StringValue(e.id)
	}
	if internNow {
		id := d.intern(s)
		slot.val = cachedStr{d.t.Strings.Get(id), id}
		return ingest.StringValue(id)
	}
	if d.later.on {
		d.internLater()
	}
	h := d.t.Strings.HashBytes(s)
	d.t.Strings.Prefetch(h)
	d.later = laterStr{on: true, h: h, tag: tag, attr: len(d.spanAttrs), b: s, e: e, slot: slot}
	return ingest.StringValue(0)
}

// internNow, which only tests set, has slotValue intern each string where
// it is read, as the decode did before it waited: the decode whose string
// table the waiting one must match (TestLaterStringKeepsIDs).
var internNow bool

// internLater interns the string value slotValue left waiting, and puts
// its ID in its attribute and its slot.
func (d *state) internLater() {
	l := &d.later
	id := d.internTable(l.b, l.e, l.tag, l.h)
	l.slot.val = cachedStr{d.t.Strings.Get(id), id}
	a := &d.spanAttrs[l.attr]
	*a = ingest.NewAttr(a.Key, ingest.StringValue(id))
	*l = laterStr{}
}

// internString is intern for a string.
func (d *state) internString(s string) ingest.StrID {
	if d.later.on {
		d.internLater()
	}
	return d.t.Strings.Intern(s)
}

// slab hands out sub-slices of large chunks, so that the attributes of
// resources and scopes cost no allocation of their own. Chunks grow from small (a
// single small payload wastes little) to large.
type slab[T any] struct {
	buf  []T
	next int
}

const (
	slabFirst = 256
	slabMax   = 32 << 10
)

// carve copies items into the slab and returns the copy, capped so that an
// append to it can never overwrite a neighbour.
func (s *slab[T]) carve(items []T) []T {
	n := len(items)
	if n == 0 {
		return nil
	}
	if cap(s.buf)-len(s.buf) < n {
		if s.next == 0 {
			s.next = slabFirst
		}
		size := max(s.next, n)
		s.next = min(s.next*2, slabMax)
		s.buf = make([]T, 0, size)
	}
	start := len(s.buf)
	s.buf = append(s.buf, items...)
	return s.buf[start:len(s.buf):len(s.buf)]
}

// beginSpan readies the scratch slices for a new span. Its attributes are
// appended straight into the free space of the trace's attribute arena, so
// that keeping them costs no copy unless there were more than the space
// held.
func (d *state) beginSpan() {
	d.spanAttrs = d.arenaTail(spanAttrsFree)
	d.events, d.links, d.pending = d.events[:0], d.links[:0], d.pending[:0]
}

// pend keeps the attributes of one of the span's events or links in
// pending until the span is kept (appendSpan), and returns their range
// there.
func (d *state) pend(attrs []ingest.Attr) ingest.AttrRange {
	if len(attrs) == 0 {
		return ingest.AttrRange{}
	}
	off := len(d.pending)
	d.pending = append(d.pending, attrs...)
	return ingest.AttrRange{Off: uint32(off), Len: uint32(len(attrs))}
}

// spanAttrsFree is the free space beginSpan leaves for a span's attributes
// in the arena: most spans have fewer.
const spanAttrsFree = 64

// arenaTail is the trace's AttrTail: free space for minFree attributes,
// the arena grown to arenaCapacity when it has less. The capacity, an
// estimate in floating point, is worked out only then, not at every span.
func (d *state) arenaTail(minFree int) []ingest.Attr {
	if a := d.t.AttrArena; cap(a)-len(a) >= minFree {
		return a[len(a):]
	}
	return d.t.AttrTail(minFree, d.arenaCapacity())
}

// inArenaTail reports whether the span's attributes are still where
// arenaTail put them: they grew no larger than the free space.
func (d *state) inArenaTail() bool {
	a := d.t.AttrArena
	return len(d.spanAttrs) > 0 && cap(a) > len(a) && &d.spanAttrs[0] == &a[:len(a)+1][len(a)]
}

// appendSpan adds a finished span, its attributes to the arena, then the
// attributes of its events and links, and those to the trace's tables.
func (d *state) appendSpan(sp *ingest.Span) {
	switch n := len(d.spanAttrs); {
	case n == 0:
		sp.Attrs = ingest.AttrRange{}
	case d.inArenaTail():
		sp.Attrs = d.t.CommitAttrs(n)
	default:
		d.arenaTail(n)
		sp.Attrs = d.t.AddAttrs(d.spanAttrs...)
	}
	sp.Extra = 0
	if len(d.events) > 0 || len(d.links) > 0 {
		at := d.t.AddAttrs(d.pending...)
		rebase := func(r *ingest.AttrRange) {
			if at.Len == 0 {
				*r = ingest.AttrRange{} // none pending, or past MaxAttrs
			} else if r.Len > 0 {
				r.Off += at.Off
			}
		}
		for i := range d.events {
			rebase(&d.events[i].Attrs)
		}
		for i := range d.links {
			rebase(&d.links[i].Attrs)
		}
		sp.Extra = d.t.AddExtra(d.events, d.links)
	}
	sp.Source = d.src
	sp.Origin = ingest.OriginOTLP
	d.spanAttrs, d.events, d.links, d.pending = nil, d.events[:0], d.links[:0], d.pending[:0]
	if len(d.t.Spans) == cap(d.t.Spans) {
		grown := spill.Grow(d.t.Spans, d.spanCapacity())
		d.t.Spans = grown
		// The string table grows with the spans, at the rate of new
		// strings a span brought so far (a request ID each, typically),
		// for the spans the whole input is estimated to hold: once, where
		// the slice may take two steps (spanCapacity's bound).
		if d.spans > 0 {
			d.t.Strings.Grow(d.stringsAhead(cap(grown) - len(grown)))
		}
	}
	d.t.Spans = append(d.t.Spans, *sp)
	d.spans++
}

// arenaCapacity is the capacity to grow the attribute arena to: room, at
// the rate of attributes a span brought so far, for the spans the span
// slice has room for or, more, the spans the input is estimated to hold
// (bounded as spanCapacity bounds the slice), so that the arena grows with
// the spans, in as few steps; never less than doubling. Without an
// estimate (a capture's payload, decoded into a trace that may already be
// full of spans: record's decoder) the slice's room is the whole trace's,
// not this state's, and the room made is at most eight times the
// attributes this state brought (at least 4,096), as stringsAhead's is.
func (d *state) arenaCapacity() int {
	a := d.t.AttrArena
	c := max(2*cap(a), 4096)
	if d.spans > 0 {
		brought := len(a) - d.attrs0
		perSpan := float64(brought) / float64(d.spans)
		spans := float64(cap(d.t.Spans))
		est, ok := d.spansEstimate()
		if ok {
			est += float64(len(d.t.Spans) - d.spans) // and those of other inputs
			spans = max(spans, min(est, float64(8*cap(d.t.Spans))))
		}
		ahead := perSpan * (spans - float64(len(d.t.Spans)))
		if !ok {
			ahead = min(ahead, float64(8*max(brought, 4096)))
		}
		c = max(c, len(a)+int(ahead)+spanAttrsFree)
	}
	return c
}

// stringsAhead is the new strings to make room for when the span slice has
// grown by room: at the rate of new strings a span brought so far, for the
// spans the slice has room for or, more, the spans the input is estimated
// to hold still — bounded, as spanCapacity bounds the slice, by eight times
// the slice's capacity, since an estimate from small early records may be
// far too high. Without an estimate the room is the whole trace's (see
// arenaCapacity), and the strings made room for are at most eight times
// those this state brought (at least 1,024): a capture's payload whose first
// span held thousands of new strings would otherwise take that span's rate
// for every span the trace has room for.
func (d *state) stringsAhead(room int) int {
	brought := d.t.Strings.Len() - d.strings0
	perSpan := float64(brought) / float64(d.spans)
	more := float64(room)
	est, ok := d.spansEstimate()
	if !ok {
		return int(min(perSpan*more, float64(8*max(brought, 1024))))
	}
	more = max(more, min(est-float64(d.spans), float64(8*cap(d.t.Spans))))
	return int(perSpan * more)
}

// spanCapacity is the capacity to grow the full span slice to. append grows a
// large slice by a quarter at a time, copying the spans about five times
// over; doubling copies them about twice. Where the input's size and the
// bytes that its spans so far took are known, it grows to the spans the
// whole input holds at that rate, plus a sixteenth, so that a file of
// uniform records is copied once, early, and its slice is not left up to
// half empty; never less than doubling, nor more than eight times the
// capacity, should the records ahead be smaller than those behind.
func (d *state) spanCapacity() int {
	c := max(2*cap(d.t.Spans), 1024)
	if est, ok := d.spansEstimate(); ok {
		est += float64(len(d.t.Spans) - d.spans) // and those of other inputs
		c = max(c, int(min(est, float64(8*cap(d.t.Spans)))))
	}
	return c
}

// spansEstimate is the spans this state's input holds, plus a sixteenth, at
// the rate of the records read so far; ok is false when the input's size or
// that rate is unknown.
func (d *state) spansEstimate() (float64, bool) {
	if d.sizeHint > d.consumed && d.consumed > 0 && d.spans > 0 {
		est := float64(d.spans) * float64(d.sizeHint) / float64(d.consumed)
		return est + est/16, true
	}
	return 0, false
}

// resetSpan clears the scratch slices after a span that was not kept.
func (d *state) resetSpan() {
	if d.later.on {
		d.internLater()
	}
	d.spanAttrs, d.events, d.links, d.pending = nil, d.events[:0], d.links[:0], d.pending[:0]
	d.eventAttrs, d.linkAttrs = d.eventAttrs[:0], d.linkAttrs[:0]
}

// setResource points spans[from:] that have no resource yet at idx.
func (d *state) setResource(from int, idx int32) {
	for i := from; i < len(d.t.Spans); i++ {
		if d.t.Spans[i].Resource < 0 {
			d.t.Spans[i].Resource = idx
		}
	}
}

// setScope points spans[from:] that have no scope yet at idx.
func (d *state) setScope(from int, idx int32) {
	for i := from; i < len(d.t.Spans); i++ {
		if d.t.Spans[i].Scope < 0 {
			d.t.Spans[i].Scope = idx
		}
	}
}

// tableMark remembers how long the value tables were, so that the arrays and
// maps of a resource or scope that turns out to be a repeat can be dropped.
type tableMark struct{ arrays, maps int }

func (d *state) markTables() tableMark { return tableMark{len(d.t.Arrays), len(d.t.Maps)} }

// dropTables forgets arrays and maps appended since m. Only valid when
// nothing appended since m is referenced.
func (d *state) dropTables(m tableMark) {
	clear(d.t.Arrays[m.arrays:])
	clear(d.t.Maps[m.maps:])
	d.t.Arrays = d.t.Arrays[:m.arrays]
	d.t.Maps = d.t.Maps[:m.maps]
}

// addResource returns the index of the resource with these attributes and
// schema, adding it when no equal resource exists. attrs is copied. Arrays and
// maps appended since m belong to attrs alone and are dropped on a repeat.
// An empty resource is no resource: -1.
func (d *state) addResource(attrs []ingest.Attr, schema ingest.StrID, m tableMark) int32 {
	if len(attrs) == 0 && schema == 0 {
		d.dropTables(m)
		return -1
	}
	d.keyBuf = d.resourceKey(attrs, schema)
	if idx, ok := d.resByValue[string(d.keyBuf)]; ok {
		d.dropTables(m)
		return idx
	}
	idx := int32(len(d.t.Resources))
	d.t.Resources = append(d.t.Resources, ingest.Resource{Attrs: d.attrSlab.carve(attrs), SchemaURL: schema})
	d.resByValue[string(d.keyBuf)] = idx
	return idx
}

// addScope is addResource for instrumentation scopes.
func (d *state) addScope(name, version ingest.StrID, attrs []ingest.Attr, m tableMark) int32 {
	if len(attrs) == 0 && name == 0 && version == 0 {
		d.dropTables(m)
		return -1
	}
	d.keyBuf = d.scopeKey(name, version, attrs)
	if idx, ok := d.scopeByValue[string(d.keyBuf)]; ok {
		d.dropTables(m)
		return idx
	}
	idx := int32(len(d.t.Scopes))
	d.t.Scopes = append(d.t.Scopes, ingest.Scope{Name: name, Version: version, Attrs: d.attrSlab.carve(attrs)})
	d.scopeByValue[string(d.keyBuf)] = idx
	return idx
}

// resourceKey and scopeKey serialize a resource or scope by value (array and
// map contents included, not their table indices), so equal ones compare
// equal whatever encoding or record they came from.
func (d *state) resourceKey(attrs []ingest.Attr, schema ingest.StrID) []byte {
	b := binary.AppendUvarint(d.keyBuf[:0], uint64(schema))
	return d.appendAttrsKey(b, attrs, 0)
}

func (d *state) scopeKey(name, version ingest.StrID, attrs []ingest.Attr) []byte {
	b := binary.AppendUvarint(d.keyBuf[:0], uint64(name))
	b = binary.AppendUvarint(b, uint64(version))
	return d.appendAttrsKey(b, attrs, 0)
}

func (d *state) appendAttrsKey(b []byte, attrs []ingest.Attr, depth int) []byte {
	b = binary.AppendUvarint(b, uint64(len(attrs)))
	for _, a := range attrs {
		b = binary.AppendUvarint(b, uint64(a.Key))
		b = d.appendValueKey(b, a.Value(), depth)
	}
	return b
}

func (d *state) appendValueKey(b []byte, v ingest.Value, depth int) []byte {
	b = append(b, byte(v.Kind()))
	if depth > maxDepth {
		return b
	}
	switch v.Kind() {
	case ingest.KindArray:
		var vals []ingest.Value
		if v.Index() < len(d.t.Arrays) {
			vals = d.t.Arrays[v.Index()]
		}
		b = binary.AppendUvarint(b, uint64(len(vals)))
		for _, e := range vals {
			b = d.appendValueKey(b, e, depth+1)
		}
	case ingest.KindMap:
		var m []ingest.Attr
		if v.Index() < len(d.t.Maps) {
			m = d.t.Maps[v.Index()]
		}
		b = d.appendAttrsKey(b, m, depth+1)
	case ingest.KindString, ingest.KindBytes:
		b = binary.AppendUvarint(b, uint64(v.Str()))
	case ingest.KindInt:
		b = binary.AppendVarint(b, v.Int())
	case ingest.KindDouble:
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v.Double()))
	case ingest.KindBool:
		if v.Bool() {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	return b
}

// rawKey builds the lookup key of an encoded resource or scope: the encoding
// tag, the schema ID and the raw bytes.
func (d *state) rawKey(enc byte, schema ingest.StrID, raw []byte) []byte {
	b := append(d.rawBuf[:0], enc)
	b = binary.AppendUvarint(b, uint64(schema))
	b = append(b, raw...)
	d.rawBuf = b
	return b
}

// maxDepth bounds the nesting of array and map values (and of JSON skipped
// over), so that hostile input cannot exhaust the stack.
const maxDepth = 64
