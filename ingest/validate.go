package ingest

import (
	"cmp"
	"slices"
)

// Validate checks the model once after decoding and merging. Problems become
// warnings; the few that would break downstream invariants are repaired and
// the warning says how (an interval with end before start is clamped to zero
// length). Records are sorted by start time so that analyses can sweep.
func (t *Trace) Validate() {
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.End < s.Start {
			t.Warnf(s.Source, "", "span-end-before-start",
				"span %q (%s) ends %d ns before it starts; clamped to zero length",
				t.Str(s.Name), s.ID, s.Start-s.End)
			s.End = s.Start
		}
	}
	for i := range t.GPUOps {
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
	seen := make(map[key]int, withID)
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin != OriginOTLP || s.ID.IsZero() {
			continue
		}
		k := key{s.TraceID, s.ID}
		if j, dup := seen[k]; dup {
			t.Warnf(s.Source, "", "duplicate-span-id",
				"span ID %s appears twice in trace %s (%q and %q); both kept",
				s.ID, s.TraceID, t.Str(t.Spans[j].Name), t.Str(s.Name))
			continue
		}
		seen[k] = i
	}
	dangling := map[SourceID]int{}
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin != OriginOTLP || s.Parent.IsZero() {
			continue
		}
		if _, ok := seen[key{s.TraceID, s.Parent}]; !ok {
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

// Sort orders spans, GPU ops, samples and memory events by start time (stable, so equal
// starts keep input order). Already sorted slices are detected in O(n).
func (t *Trace) Sort() {
	if !slices.IsSortedFunc(t.Spans, cmpSpan) {
		slices.SortStableFunc(t.Spans, cmpSpan)
	}
	if !slices.IsSortedFunc(t.GPUOps, cmpOp) {
		slices.SortStableFunc(t.GPUOps, cmpOp)
	}
	if !slices.IsSortedFunc(t.Samples, cmpSample) {
		slices.SortStableFunc(t.Samples, cmpSample)
	}
	if !slices.IsSortedFunc(t.MemoryEvents, cmpMemory) {
		slices.SortStableFunc(t.MemoryEvents, cmpMemory)
	}
}

func cmpSpan(a, b Span) int          { return cmp.Compare(a.Start, b.Start) }
func cmpOp(a, b GPUOp) int           { return cmp.Compare(a.Start, b.Start) }
func cmpSample(a, b Sample) int      { return cmp.Compare(a.Time, b.Time) }
func cmpMemory(a, b MemoryEvent) int { return cmp.Compare(a.Time, b.Time) }
