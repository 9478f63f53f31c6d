package ingest

import (
	"cmp"
	"maps"
	"math/bits"
	"slices"

	"github.com/llmprof/llmprof/internal/spill"
)

// Validate checks the model once after decoding and merging. Problems become
// warnings; the few that would break downstream invariants are repaired and
// the warning says how (an interval with end before start is clamped to zero
// length). Records are sorted by start time so that analyses can sweep.
//
// Each table is read once, in order: a spilled one's pages are dropped
// behind the pass when the process is over its memory budget
// (spill.Behind).
func (t *Trace) Validate() {
	behind := spill.DropBehind(t.Spans)
	for i := range t.Spans {
		behind.Passed(i)
		s := &t.Spans[i]
		if s.End < s.Start {
			t.Warnf(s.Source, "", "span-end-before-start",
				"span %q (%s) ends %d ns before it starts; clamped to zero length",
				t.Str(s.Name), s.ID, s.Start-s.End)
			s.End = s.Start
		}
	}
	behind = spill.DropBehind(t.APICalls)
	for i := range t.APICalls {
		behind.Passed(i)
		c := &t.APICalls[i]
		if c.End < c.Start {
			t.Warnf(c.Source, "", "span-end-before-start",
				"span %q (%s) ends %d ns before it starts; clamped to zero length",
				t.Str(c.Name), SpanID{}, c.Start-c.End)
			c.End = c.Start
		}
	}
	behind = spill.DropBehind(t.GPUOps)
	for i := range t.GPUOps {
		behind.Passed(i)
		o := &t.GPUOps[i]
		if o.End < o.Start {
			t.Warnf(o.Source, "", "op-end-before-start",
				"%s %q ends %d ns before it starts; clamped to zero length",
				o.Kind, t.Str(o.Name), o.Start-o.End)
			o.End = o.Start
		}
	}
	t.checkSpanIDs()
	t.Sort()
}

// checkSpanIDs reports duplicate span IDs within a trace and counts spans whose
// parent is not in the input. A missing parent is normal for a server span
// whose client lives elsewhere, so it is one informational line per source,
// not a warning per span.
func (t *Trace) checkSpanIDs() {
	type key struct {
		trace TraceID
		span  SpanID
	}
	// Size the map for the spans that have IDs: an nsys trace holds
	// millions of CUDA API and NVTX spans and no OTLP span.
	withID := 0
	for i := range t.Spans {
		if s := &t.Spans[i]; s.Origin == OriginOTLP && !s.ID.IsZero() {
			withID++
		}
	}
	// The first span of each ID, keyed by the 8-byte span ID alone (one
	// probe a put, SpanIDTable), and the first of each (trace, span ID)
	// pair whose span ID an earlier span of another trace holds.
	seen := NewSpanIDTable(withID)
	other := map[key]int{}
	lookup := func(tr TraceID, id SpanID) (int, bool) {
		j, ok := seen.Get(id)
		if !ok || t.Spans[j].TraceID == tr {
			return int(j), ok
		}
		k, ok := other[key{tr, id}]
		return k, ok
	}
	// Exact copies (same IDs, name and times: a file given twice, or
	// concatenated dumps) are one warning per source with a count, not one
	// per span.
	exact := map[SourceID]int{}
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin != OriginOTLP || s.ID.IsZero() {
			continue
		}
		// The span ID is looked up once, to find a duplicate or to put
		// the span there if new.
		first, taken := seen.PutFirst(s.ID, int32(i))
		j, dup := int(first), taken
		if taken && t.Spans[j].TraceID != s.TraceID {
			j, dup = other[key{s.TraceID, s.ID}]
		}
		if dup {
			if o := &t.Spans[j]; o.Name == s.Name && o.Start == s.Start && o.End == s.End && o.Parent == s.Parent {
				exact[s.Source]++
				continue
			}
			t.Warnf(s.Source, "", "duplicate-span-id",
				"span ID %s appears twice in trace %s (%q and %q); both kept",
				s.ID, s.TraceID, t.Str(t.Spans[j].Name), t.Str(s.Name))
			continue
		}
		if taken {
			other[key{s.TraceID, s.ID}] = i
		}
	}
	for _, src := range slices.Sorted(maps.Keys(exact)) {
		t.Warnf(src, "", "duplicate-spans",
			"%d spans are exact copies of an earlier span (same trace and span ID, name, parent, start and end: the input given twice, or dumps concatenated?); all kept", exact[src])
	}
	// Counted by source in a slice, not a map: every span with a parent
	// outside the input (half an OTLP dump's) counts. Only the input's
	// sources are reported.
	dangling := make([]int, len(t.Sources))
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin != OriginOTLP || s.Parent.IsZero() || int(s.Source) >= len(dangling) {
			continue
		}
		if _, ok := lookup(s.TraceID, s.Parent); !ok {
			dangling[s.Source]++
		}
	}
	for src := SourceID(0); int(src) < len(t.Sources); src++ {
		if n := dangling[src]; n > 0 {
			t.Warnf(src, "", "dangling-parent",
				"%d span(s) have a parent that is not in the input; treated as local roots", n)
		}
	}
}

// Sort orders spans, API calls, GPU ops, samples and memory events by time
// (stable, so equal times keep input order), in place. Already sorted slices
// are detected in O(n).
func (t *Trace) Sort() {
	sortByTime(t.Spans, func(s *Span) int64 { return s.Start })
	sortByTime(t.APICalls, func(c *APICall) int64 { return c.Start })
	sortByTime(t.GPUOps, func(o *GPUOp) int64 { return o.Start })
	sortByTime(t.Samples, func(s *Sample) int64 { return s.Time })
	sortByTime(t.MemoryEvents, func(m *MemoryEvent) int64 { return m.Time })
}

// sortByTime sorts records stably by a time key, in place. Records are large
// (a Span is 120 bytes), so instead of moving them through a stable sort's
// merges it sorts keys that carry each record's index — the index breaks
// ties, which makes the order stable — and then moves each record into its
// place by following the permutation's cycles: no second array of records,
// whose size (the whole table) would otherwise be the peak of memory use.
//
// The keys are one uint64 each, the time since the earliest in the high
// bits and the index in the low ones, whenever the times' range fits beside
// the index (10 M records leave 40 bits, 18 minutes of nanoseconds; 100 k
// records 39 hours): plain integers sort without a comparison function,
// about 3× faster than (time, index) pairs, in half their memory. Wider
// ranges sort the pairs.
//
// The passes over the records read them in order, and drop the pages of a
// spilled table behind them when the process is over its memory budget
// (spill.Behind): a table already in order, as most are, is read once and
// left.
func sortByTime[T any](recs []T, key func(*T) int64) {
	sorted := true
	behind := spill.DropBehind(recs)
	for i := 1; i < len(recs); i++ {
		behind.Passed(i)
		if key(&recs[i]) < key(&recs[i-1]) {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	lo, hi := key(&recs[0]), key(&recs[0])
	behind = spill.DropBehind(recs)
	for i := range recs {
		behind.Passed(i)
		at := key(&recs[i])
		lo, hi = min(lo, at), max(hi, at)
	}
	idxBits := bits.Len(uint(len(recs) - 1))
	if span := uint64(hi) - uint64(lo); idxBits >= 64 || span>>(64-idxBits) != 0 {
		sortByTimePairs(recs, key)
		return
	}
	order := make([]uint64, len(recs))
	behind = spill.DropBehind(recs)
	for i := range recs {
		behind.Passed(i)
		order[i] = (uint64(key(&recs[i]))-uint64(lo))<<idxBits | uint64(i)
	}
	slices.Sort(order)
	mask := uint64(1)<<idxBits - 1
	permute(recs, order, func(o *uint64) int { return int(*o & mask) }, func(o *uint64, i int) { *o = uint64(i) })
}

// sortByTimePairs is sortByTime for times whose range does not fit beside
// the index in one uint64: it sorts (time, index) pairs.
func sortByTimePairs[T any](recs []T, key func(*T) int64) {
	type ref struct {
		at  int64
		idx int
	}
	refs := make([]ref, len(recs))
	for i := range recs {
		refs[i] = ref{key(&recs[i]), i}
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.idx, b.idx)
	})
	permute(recs, refs, func(r *ref) int { return r.idx }, func(r *ref, i int) { r.idx = i })
}

// permute moves into position i the record now at index from(&order[i]),
// in place. It walks each cycle once, marking a position done by setting
// its index to itself (set).
func permute[T, O any](recs []T, order []O, from func(*O) int, set func(*O, int)) {
	for i := range order {
		if from(&order[i]) == i {
			continue
		}
		tmp := recs[i]
		j := i
		for {
			k := from(&order[j])
			set(&order[j], j)
			if k == i {
				recs[j] = tmp
				break
			}
			recs[j] = recs[k]
			j = k
		}
	}
}
