package causal_test

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// A Request holds no pointer: the collector never scans FromAttribution's
// table of them, and spill.Slice may put it in a file (it refuses types
// with pointers). A field that brings a pointer back (a string, a slice)
// fails here.
func TestRequestHoldsNoPointers(t *testing.T) {
	typ := reflect.TypeFor[causal.Request]()
	if path, ok := spilltest.PointerIn(typ); ok {
		t.Errorf("%v holds a pointer: %s", typ, path)
	}
}

// A Request is one cache line, 64 bytes with no padding: the passes over a
// target's requests (collectRows) read one line a request, not two (72
// bytes, the 2-byte placements last).
func TestRequestIsOneCacheLine(t *testing.T) {
	if got := unsafe.Sizeof(causal.Request{}); got != 64 {
		t.Errorf("a Request is %d bytes, want 64", got)
	}
}

// While spilling is on, FromAttribution's requests are in a spill file
// (spill.Free gives its bytes back), and they are the ones made on the
// heap.
func TestFromAttributionSpills(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(3, 20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tr := synthtrace.Decode(t, run, synth.StyleLLM, synth.JSONLines, "trace.jsonl")
	att := attribution.Analyze(tr, attribution.DefaultOptions)
	want := fmt.Sprint(causal.FromAttribution(att, tr))

	spilltest.Enable(t)
	spill.Budget(64 << 10) // tables of 8 KiB and more in files
	reqs := causal.FromAttribution(att, tr)
	if fmt.Sprint(reqs) != want {
		t.Errorf("spilled, the requests differ from those made on the heap")
	}
	bytes := int64(len(reqs)) * int64(unsafe.Sizeof(causal.Request{}))
	if bytes < 8<<10 {
		t.Fatalf("%d requests (%d bytes): too few for a spill file", len(reqs), bytes)
	}
	before := spill.Read().Mapped
	spill.Free(reqs)
	if given := before - spill.Read().Mapped; given < bytes {
		t.Errorf("%d requests (%d bytes): %d bytes of spill files given back, want them all", len(reqs), bytes, given)
	}
}

// TenantOf gives one Tenant a name, "" the zero one, and String gives the
// name back, from any goroutine (go test -race).
func TestTenantOf(t *testing.T) {
	if causal.TenantOf("") != 0 || causal.Tenant(0).String() != "" {
		t.Fatalf(`TenantOf("") = %d, Tenant(0) = %q; want 0 and ""`, causal.TenantOf(""), causal.Tenant(0).String())
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				name := fmt.Sprintf("tenant-of-%d", (i*7+g)%100)
				tn := causal.TenantOf(name)
				if tn == 0 || tn.String() != name {
					t.Errorf("TenantOf(%q) = %d, named %q", name, tn, tn.String())
				}
			}
		}()
	}
	wg.Wait()
	for i := range 100 {
		name := fmt.Sprintf("tenant-of-%d", i)
		if a, b := causal.TenantOf(name), causal.TenantOf(name); a != b || a.String() != name {
			t.Errorf("TenantOf(%q) = %d, then %d (%q)", name, a, b, b.String())
		}
	}
	if causal.TenantOf("x-a") == causal.TenantOf("x-b") {
		t.Errorf("two names, one Tenant")
	}
}
