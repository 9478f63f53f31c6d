package ingest

import (
	"slices"
	"testing"
)

// CPURecords lays spans and API calls out as one table sorted by start
// would: by start, the earlier source first at equal starts, and within a
// source the span (the range enclosing the call) before the call.
func TestCPURecordsOrder(t *testing.T) {
	tr := New()
	tr.Spans = []Span{
		{Start: 10, Source: 0},
		{Start: 20, Source: 0}, // ties with call 1 of the same source: first
		{Start: 30, Source: 1}, // ties with call 2 of source 0: after it
		{Start: 50, Source: 0},
	}
	tr.APICalls = []APICall{
		{Start: 5, Source: 0},
		{Start: 20, Source: 0},
		{Start: 30, Source: 0},
		{Start: 60, Source: 1},
	}
	var got []CPURef
	for r := range tr.CPURecords() {
		got = append(got, r)
	}
	want := []CPURef{CallRef(0), SpanRef(0), SpanRef(1), CallRef(1), CallRef(2), SpanRef(2), SpanRef(3), CallRef(3)}
	if !slices.Equal(got, want) {
		t.Fatalf("CPURecords = %v, want %v", got, want)
	}
	if i, ok := CallRef(3).Call(); !ok || i != 3 {
		t.Errorf("CallRef(3).Call() = %d, %v", i, ok)
	}
	if _, ok := CallRef(0).Span(); ok {
		t.Error("CallRef(0) is a span")
	}
	if i, ok := SpanRef(0).Span(); !ok || i != 0 {
		t.Errorf("SpanRef(0).Span() = %d, %v", i, ok)
	}
	// Breaking out must stop the iterator: Go panics when a range function
	// goes on yielding after its loop body returned false.
	n := 0
	for range tr.CPURecords() {
		if n++; n == 3 {
			break
		}
	}
}

// Merge moves each part's API calls into the result with their names and
// sources remapped; Validate clamps a call that ends before it starts and
// sorts the calls by start.
func TestAPICallsMergeValidate(t *testing.T) {
	a, b := New(), New()
	a.Sources = []Source{{Path: "a"}}
	b.Sources = []Source{{Path: "b"}}
	a.Strings.Intern("only in a")
	a.APICalls = []APICall{{Name: a.Strings.Intern("cudaLaunchKernel"), Start: 30, End: 40, Correlation: 7}}
	b.APICalls = []APICall{
		{Name: b.Strings.Intern("cudaMemcpyAsync"), Start: 20, End: 10, Correlation: 8},
		{Name: b.Strings.Intern("cudaLaunchKernel"), Start: 25, End: 26, Origin: OriginCUDADriver},
	}
	m := Merge(a, b)
	m.Validate()
	type row struct {
		name       string
		start, end int64
		src        SourceID
	}
	var got []row
	for _, c := range m.APICalls {
		got = append(got, row{m.Str(c.Name), c.Start, c.End, c.Source})
	}
	want := []row{{"cudaMemcpyAsync", 20, 20, 1}, {"cudaLaunchKernel", 25, 26, 1}, {"cudaLaunchKernel", 30, 40, 0}}
	if !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
	if len(m.Warnings.List) != 1 || m.Warnings.List[0].Code != "span-end-before-start" {
		t.Errorf("warnings = %v, want one span-end-before-start", m.Warnings.List)
	}
}
