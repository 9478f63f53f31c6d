package causal

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// FromAttributionServed is FromAttribution and ServedTenants, in one walk:
// the same requests and the same map, on requests whose tenants and
// resources interleave, with spans out of range, a resource without a pid,
// steps of two engines (one out of range) naming a tenant no request span
// gives its pid, and on a synthetic multi-tenant run with its GPU.
func TestFromAttributionServedMatchesBoth(t *testing.T) {
	b := newTraceBuilder()
	b.resource(map[string]ingest.Value{"process.pid": ingest.IntValue(10), "service.name": b.str("vllm")})
	b.resource(map[string]ingest.Value{"process.pid": ingest.IntValue(20)})
	b.resource(map[string]ingest.Value{"service.name": b.str("router")})
	tr := b.t
	for _, res := range []int32{0, 1, 2, 0, -1, 7} {
		tr.Spans = append(tr.Spans, ingest.Span{Resource: res, Scope: -1})
	}
	att := &attribution.Result{
		Engines: []attribution.Engine{{Pid: 30}, {Pid: 10}},
		Steps: []attribution.Step{
			{Engine: 0, Size: 2, Requests: []int32{0, 6}},
			{Engine: 1, Size: 1, Requests: []int32{3, 99}},
			{Engine: 5, Size: 1, Requests: []int32{1}},
		},
	}
	for i, q := range []struct {
		tenant string
		span   int
	}{{"search", 0}, {"chat", 1}, {"search", 0}, {"acme", 3}, {"chat", 2}, {"", 0}, {"acme", 4}, {"chat", 5}, {"search", 9}, {"batch", -1}, {"chat", 0}} {
		att.AddRequest(attribution.Request{Span: q.span, Arrival: int64(i), End: int64(i) + 5, TTFT: 1, TPOT: 2}, attribution.Labels{Tenant: q.tenant})
	}
	check := func(name string, tr *ingest.Trace, att *attribution.Result) {
		t.Helper()
		wantReqs, wantServed := FromAttribution(att, tr), ServedTenants(tr, att)
		reqs, served := FromAttributionServed(att, tr)
		if !slices.Equal(reqs, wantReqs) {
			t.Errorf("%s: requests differ from FromAttribution's", name)
		}
		if fmt.Sprint(served) != fmt.Sprint(wantServed) {
			t.Errorf("%s: served %v, want ServedTenants' %v", name, served, wantServed)
		}
		if len(wantServed) == 0 {
			t.Errorf("%s: no process serves a tenant: the test tests nothing", name)
		}
	}
	check("built", tr, att)

	run, err := synth.Generate(synth.MultiTenantGPUConfig(2, 20*time.Second, 1.0))
	if err != nil {
		t.Fatal(err)
	}
	gtr := synthtrace.WithGPU(t, run, true)
	check("synth", gtr, attribution.Analyze(gtr, attribution.Options{RequestsOnly: true}))
}
