package driver

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/export"
)

// TestExportDemoGroupsRequestsByTenant places the README's demo run as
// `llmprof export --perfetto` does: the requests are drawn per tenant, and
// the arrows from requests to their first step and from OTLP spans to the
// NVTX ranges mirroring them are drawn.
func TestExportDemoGroupsRequestsByTenant(t *testing.T) {
	a := run(t, Options{RequestsOnly: true, Tenants: TenantOptions{Skip: true}}, demoDir)
	popts := PerfettoOptions([]string{demoDir}, a)
	// One arrow per mirrored span and one per request that a step served.
	served := map[int32]bool{}
	for _, st := range a.Attr.Steps {
		for _, r := range st.Requests {
			served[r] = true
		}
	}
	if want := len(align.Mirrors(a.Trace)) + len(served); len(popts.Links) != want || len(served) == 0 {
		t.Errorf("%d links, want %d mirrors + %d served requests", len(popts.Links), len(align.Mirrors(a.Trace)), len(served))
	}
	var b bytes.Buffer
	st, err := export.WritePerfetto(&b, a.Trace, popts)
	if err != nil {
		t.Fatal(err)
	}
	// Each event's args are kept raw (still checked as JSON) and read for
	// the process names only: a map of every event's args was most of
	// the test's CPU.
	var doc struct {
		TraceEvents []struct {
			Ph   string          `json:"ph"`
			Name string          `json:"name"`
			Args json.RawMessage `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	tenants := map[string]bool{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "M" && e.Name == "process_name" {
			var args map[string]any
			if err := json.Unmarshal(e.Args, &args); err != nil {
				t.Fatal(err)
			}
			if n, _ := args["name"].(string); strings.HasPrefix(n, "tenant ") {
				tenants[n] = true
			}
		}
	}
	for _, want := range []string{"tenant search", "tenant chat", "tenant batch-eval"} {
		if !tenants[want] {
			t.Errorf("no %q process in the export (have %v)", want, tenants)
		}
	}
	if st.LinkFlows == 0 || st.LinkFlows+st.LinksSkipped != len(popts.Links) {
		t.Errorf("%d link arrows drawn, %d skipped, of %d links", st.LinkFlows, st.LinksSkipped, len(popts.Links))
	}
}
