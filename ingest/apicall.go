package ingest

import "iter"

// CPURef names one CPU-side record of a trace: the span t.Spans[r] for
// r ≥ 0, the API call t.APICalls[^r] for r < 0 (SpanRef, CallRef).
type CPURef int32

// SpanRef refers to t.Spans[i].
func SpanRef(i int) CPURef { return CPURef(i) }

// CallRef refers to t.APICalls[i].
func CallRef(i int) CPURef { return ^CPURef(i) }

// Call returns the index in t.APICalls, and whether r is an API call.
func (r CPURef) Call() (int, bool) { return int(^r), r < 0 }

// Span returns the index in t.Spans, and whether r is a span.
func (r CPURef) Span() (int, bool) { return int(r), r >= 0 }

// CPURecords yields the spans and API calls, both sorted (Validate), merged
// into one time order: by start; at equal starts the record of the earlier
// source first, and within one source the span before the call — the range
// or operator that encloses a call starts with it. Writers that show spans
// and calls in one list (Parquet's spans table, Perfetto's thread tracks,
// Dump) go through it, so that the order does not depend on the calls
// being a table of their own.
func (t *Trace) CPURecords() iter.Seq[CPURef] {
	return func(yield func(CPURef) bool) {
		i, j := 0, 0
		for i < len(t.Spans) || j < len(t.APICalls) {
			if j < len(t.APICalls) && (i == len(t.Spans) || callFirst(&t.APICalls[j], &t.Spans[i])) {
				if !yield(CallRef(j)) {
					return
				}
				j++
				continue
			}
			if !yield(SpanRef(i)) {
				return
			}
			i++
		}
	}
}

// callFirst is CPURecords' order between a call and a span.
func callFirst(c *APICall, s *Span) bool {
	return c.Start < s.Start || c.Start == s.Start && c.Source < s.Source
}

// CPURecordCount is the number of spans and API calls.
func (t *Trace) CPURecordCount() int { return len(t.Spans) + len(t.APICalls) }
