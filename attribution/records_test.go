package attribution

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"unsafe"

	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// A Request and the records of its Result's tables hold no pointers: the
// collector never scans them, and spill.Slice may put them in a file (it
// refuses types with pointers). A field that brings a pointer back (a
// slice, a string, a map) fails here.
func TestRecordsHoldNoPointers(t *testing.T) {
	for _, typ := range []reflect.Type{
		reflect.TypeFor[Request](), reflect.TypeFor[Gap](), reflect.TypeFor[StageSegment](),
	} {
		if path, ok := spilltest.PointerIn(typ); ok {
			t.Errorf("%v holds a pointer: %s", typ, path)
		}
	}
}

// While spilling is on, the requests and their tables of token times and
// stage segments are each in a spill file (spill.Free gives its bytes
// back), and they are the ones made on the heap. The llmprof spans have
// token events and no gaps, vLLM's server spans gaps and no token events.
func TestRequestTablesSpill(t *testing.T) {
	run := stallingRun(t)
	for _, tc := range []struct {
		name  string
		style synth.Style
		has   []string // the tables that must not be empty
	}{
		{"llmprof spans", synth.StyleLLM, []string{"requests", "token times", "stage segments"}},
		{"vllm server", synth.StyleVLLMServer, []string{"requests", "stage segments"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := synthtrace.Decode(t, run, tc.style, synth.JSONLines, "trace.jsonl")
			tables := func(res *Result) string {
				return fmt.Sprintf("%v %v %v", res.Requests, res.tokenTimes, res.segs)
			}
			want := tables(Analyze(tr, DefaultOptions))

			spilltest.Enable(t)
			spill.Budget(64 << 10) // tables of 8 KiB and more in files
			res := Analyze(tr, DefaultOptions)
			if tables(res) != want {
				t.Errorf("spilled, the requests and their tables differ from those made on the heap")
			}
			for _, tab := range []struct {
				name string
				n    int
				size uintptr
				free func()
			}{
				{"requests", len(res.Requests), unsafe.Sizeof(Request{}), func() { spill.Free(res.Requests) }},
				{"token times", len(res.tokenTimes), unsafe.Sizeof(int64(0)), func() { spill.Free(res.tokenTimes) }},
				{"stage segments", len(res.segs), unsafe.Sizeof(StageSegment{}), func() { spill.Free(res.segs) }},
			} {
				if tab.n == 0 {
					if slices.Contains(tc.has, tab.name) {
						t.Errorf("no %s", tab.name)
					}
					continue
				}
				before := spill.Read().Mapped
				tab.free()
				if bytes, given := int64(tab.n)*int64(tab.size), before-spill.Read().Mapped; given < bytes {
					t.Errorf("%d %s (%d bytes): %d bytes of spill files given back, want them all", tab.n, tab.name, bytes, given)
				}
			}
		})
	}
}
