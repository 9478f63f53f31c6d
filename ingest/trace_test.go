package ingest

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// The model must hold ten million GPU ops in well under 1 GiB (docs/design.md §3).
func TestGPUOpSize(t *testing.T) {
	if got := unsafe.Sizeof(GPUOp{}); got > 48 {
		t.Fatalf("GPUOp is %d bytes, want at most 48 (what few ops have or many share is an OpShape)", got)
	}
	// A run holds millions of CUDA API calls: the most numerous CPU-side
	// records, in a table of their own.
	if got := unsafe.Sizeof(APICall{}); got > 40 {
		t.Fatalf("APICall is %d bytes, want at most 40 (a call is no span)", got)
	}
	// NVTX ranges and operators can be millions too.
	if got := unsafe.Sizeof(Span{}); got > 96 {
		t.Fatalf("Span is %d bytes, want at most 96 (attributes live in the trace's AttrArena, events and links in SpanExtras)", got)
	}
	if got := unsafe.Sizeof(Attr{}); got != 16 {
		t.Fatalf("Attr is %d bytes", got)
	}
}

// The span table, its attributes, events and links and the other big
// record tables hold no pointers: the collector never scans them, and spill.Slice may put them in
// a file (it refuses types with pointers, internal/spill). A field that
// brings a pointer back (a slice, a string, a map) fails here.
func TestRecordsHoldNoPointers(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[Span](), reflect.TypeFor[Attr](), reflect.TypeFor[SpanExtra](), reflect.TypeFor[Event](),
		reflect.TypeFor[Link](), reflect.TypeFor[APICall](), reflect.TypeFor[GPUOp](),
	} {
		if path, ok := spilltest.PointerIn(typ); ok {
			t.Errorf("%v holds a pointer: %s", typ, path)
		}
	}
}

func TestWarningsCoalesce(t *testing.T) {
	var ws Warnings
	for i := 0; i < 25; i++ {
		ws.Addf("a.jsonl", "line 1", "bad", "bad %d", i)
	}
	ws.Addf("b.jsonl", "", "bad", "other file")
	if len(ws.List) != maxPerCode+1 {
		t.Fatalf("kept %d warnings, want %d", len(ws.List), maxPerCode+1)
	}
	if ws.Len() != 26 {
		t.Fatalf("Len = %d, want 26", ws.Len())
	}
	if got := ws.List[maxPerCode-1].String(); !strings.Contains(got, "and 15 more like this") || !strings.HasPrefix(got, "a.jsonl:line 1: ") {
		t.Fatalf("summary line = %q", got)
	}
}

func sampleTrace(prefix string) *Trace {
	t := New()
	t.Sources = []Source{{Path: prefix + ".json", Format: "test"}}
	arr := len(t.Arrays)
	t.Arrays = append(t.Arrays, []Value{StringValue(t.Strings.Intern(prefix + "-r1")), StringValue(t.Strings.Intern("r2"))})
	t.Resources = append(t.Resources, Resource{Attrs: []Attr{NewAttr(t.Strings.Intern("service.name"), StringValue(t.Strings.Intern(prefix)))}})
	t.Spans = append(t.Spans, Span{
		TraceID: TraceID{1}, ID: SpanID{2}, Name: t.Strings.Intern(prefix + ".span"), Start: 10, End: 5,
		Attrs:    t.AddAttrs(NewAttr(t.Strings.Intern("ids"), ArrayValue(arr)), NewAttr(t.Strings.Intern("n"), IntValue(3))),
		Resource: 0, Scope: -1,
	})
	t.GPUOps = append(t.GPUOps, GPUOp{Start: 3, End: 4, Name: t.Strings.Intern(prefix + ".kernel")})
	return t
}

func TestMergeRemapsIDs(t *testing.T) {
	a, b := sampleTrace("a"), sampleTrace("b")
	m := Merge(a, b)
	if len(m.Sources) != 2 || len(m.Spans) != 2 || len(m.GPUOps) != 2 {
		t.Fatalf("merged counts: %d sources %d spans %d ops", len(m.Sources), len(m.Spans), len(m.GPUOps))
	}
	if got := m.Str(m.Spans[1].Name); got != "b.span" {
		t.Errorf("second span name = %q", got)
	}
	if got := m.Spans[1].Source; got != 1 {
		t.Errorf("second span source = %d", got)
	}
	v, ok := m.Attr(m.SpanAttrs(&m.Spans[1]), "ids")
	if !ok || strings.Join(m.StringList(v), ",") != "b-r1,r2" {
		t.Errorf("array attribute after merge = %v", m.StringList(v))
	}
	if s, _ := m.AttrString(m.Resources[m.Spans[1].Resource].Attrs, "service.name"); s != "b" {
		t.Errorf("resource of second span = %q", s)
	}
	if got := m.Str(m.GPUOps[1].Name); got != "b.kernel" {
		t.Errorf("second op name = %q", got)
	}
}

func TestValidateClampsAndSorts(t *testing.T) {
	m := Merge(sampleTrace("a"), sampleTrace("b"))
	m.Validate()
	for _, s := range m.Spans {
		if s.End < s.Start {
			t.Fatalf("span not clamped: %+v", s)
		}
	}
	if m.Warnings.Len() == 0 || !strings.Contains(m.Warnings.List[0].String(), "a.json: span \"a.span\"") {
		t.Fatalf("warnings = %v", m.Warnings.List)
	}
	var buf bytes.Buffer
	if err := m.Dump(&buf, DumpOptions{Sources: true, Warnings: true}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"ids"=["a-r1", "r2"]`, `name="b.kernel"`, "warning a.json"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("dump lacks %q:\n%s", want, buf.String())
		}
	}
}

func TestLaunchCalls(t *testing.T) {
	tr := New()
	api := func(pid, corr uint32, origin SpanOrigin) {
		tr.APICalls = append(tr.APICalls, APICall{Pid: pid, Correlation: corr, Origin: origin})
	}
	api(1, 10, OriginCUDARuntime)
	api(1, 0, OriginCUDARuntime) // no correlation: never a launch
	api(2, 10, OriginCUDADriver)
	api(1, 12, OriginCUDARuntime)
	tr.Spans = []Span{{Pid: 1, Origin: OriginNVTX}} // a span: never a launch
	tr.GPUOps = []GPUOp{
		{Pid: 1, Correlation: 10},
		{Pid: 2, Correlation: 10}, // same correlation, other process
		{Pid: 1, Correlation: 11},
		{Pid: 1, Correlation: 0},
		{Pid: 1, Correlation: 12},
		{Pid: 1, Correlation: 12}, // a graph launch: two ops, one call
		{Pid: 3, Correlation: 10},
	}
	got := tr.LaunchCalls()
	want := []int32{0, 2, -1, -1, 3, 3, -1}
	if !slices.Equal(got, want) {
		t.Fatalf("LaunchCalls = %v, want %v", got, want)
	}
}

// Byte-identical copies of spans (a dump given twice) are one warning with
// a count; a reused span ID on another span still warns on its own.
func TestExactDuplicateSpansOneWarning(t *testing.T) {
	tr := New()
	tr.Sources = []Source{{Path: "dump.jsonl"}}
	name, other := tr.Strings.Intern("llm.request"), tr.Strings.Intern("other")
	span := Span{TraceID: TraceID{1}, ID: SpanID{1}, Name: name, Start: 10, End: 20, Origin: OriginOTLP, Resource: -1, Scope: -1}
	for range 4 {
		tr.Spans = append(tr.Spans, span)
	}
	renamed := span
	renamed.Name = other
	tr.Spans = append(tr.Spans, renamed)
	tr.Validate()
	var got []string
	for _, w := range tr.Warnings.List {
		got = append(got, w.Code+": "+w.Msg)
	}
	all := strings.Join(got, "\n")
	if len(got) != 2 || !strings.Contains(all, "duplicate-spans: 3 spans are exact copies of an earlier span") ||
		!strings.Contains(all, `duplicate-span-id: span ID 0100000000000000 appears twice in trace 01000000000000000000000000000000 ("llm.request" and "other")`) {
		t.Errorf("warnings:\n%s", all)
	}
}
