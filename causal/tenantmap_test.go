package causal

import (
	"reflect"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// traceBuilder assembles small traces for mapping tests.
type traceBuilder struct{ t *ingest.Trace }

func newTraceBuilder() *traceBuilder { return &traceBuilder{ingest.New()} }

func (b *traceBuilder) resource(attrs map[string]ingest.Value) *traceBuilder {
	var as []ingest.Attr
	for _, k := range []string{"process.pid", "llm.tenant", "tenant.id", "service.name"} {
		if v, ok := attrs[k]; ok {
			as = append(as, ingest.NewAttr(b.t.Strings.Intern(k), v))
		}
	}
	b.t.Resources = append(b.t.Resources, ingest.Resource{Attrs: as})
	return b
}

func (b *traceBuilder) str(s string) ingest.Value { return ingest.StringValue(b.t.Strings.Intern(s)) }

func (b *traceBuilder) kernels(pids ...uint32) *traceBuilder {
	for _, p := range pids {
		b.t.GPUOps = append(b.t.GPUOps, ingest.GPUOp{Start: 0, End: 1, Pid: p, Device: 0, Kind: ingest.OpKernel})
	}
	return b
}

func (b *traceBuilder) process(pid uint32, name string) *traceBuilder {
	b.t.Processes = append(b.t.Processes, ingest.Process{Pid: pid, Name: name})
	return b
}

func (b *traceBuilder) migSample(pid uint32, device, instance int16) *traceBuilder {
	b.t.Samples = append(b.t.Samples, ingest.Sample{Time: 1, Value: 1, Metric: b.t.Strings.Intern(ingest.MetricNVMLProcessSMUtil), Pid: pid, Device: device, Instance: instance})
	return b
}

func TestMapTenants(t *testing.T) {
	type want struct {
		pid    uint32
		tenant string
		via    Via
	}
	tests := []struct {
		name  string
		build func(b *traceBuilder)
		opts  MapOptions
		want  []want
		notes []string
	}{
		{
			name: "resource with int and string pids",
			build: func(b *traceBuilder) {
				b.resource(map[string]ingest.Value{"process.pid": ingest.IntValue(10), "service.name": b.str("chat")})
				b.resource(map[string]ingest.Value{"process.pid": b.str("11"), "service.name": b.str("batch")})
				b.resource(map[string]ingest.Value{"service.name": b.str("no-pid")})
			},
			want: []want{{10, "chat", ViaResource}, {11, "batch", ViaResource}},
		},
		{
			name: "llm.tenant wins over service.name",
			build: func(b *traceBuilder) {
				b.resource(map[string]ingest.Value{"process.pid": ingest.IntValue(10), "llm.tenant": b.str("acme"), "service.name": b.str("vllm")})
			},
			want: []want{{10, "acme", ViaResource}},
		},
		{
			name: "custom keys",
			build: func(b *traceBuilder) {
				b.resource(map[string]ingest.Value{"process.pid": ingest.IntValue(10), "tenant.id": b.str("t1"), "service.name": b.str("vllm")})
			},
			opts: MapOptions{Keys: []string{"service.name"}},
			want: []want{{10, "vllm", ViaResource}},
		},
		{
			name: "override first, conflict noted",
			build: func(b *traceBuilder) {
				b.resource(map[string]ingest.Value{"process.pid": ingest.IntValue(10), "service.name": b.str("chat")})
			},
			opts:  MapOptions{Override: map[uint32]string{10: "gold"}},
			want:  []want{{10, "gold", ViaOverride}},
			notes: []string{`pid 10 is tenant "gold" by override and "chat" by resource`},
		},
		{
			name: "nsys process names for active pids only",
			build: func(b *traceBuilder) {
				b.kernels(20, 21, 22)
				b.process(20, "/opt/venv/bin/python3 -m vllm.entrypoints").process(21, "python3").process(22, "trtllm-serve")
				b.process(23, "idle-helper")
			},
			want:  []want{{20, "python3", ViaProcessName}, {21, "python3", ViaProcessName}, {22, "trtllm-serve", ViaProcessName}},
			notes: []string{`process name "python3" covers 2 pids (20, 21)`},
		},
		{
			name: "resource beats process name",
			build: func(b *traceBuilder) {
				b.kernels(20)
				b.process(20, "python3")
				b.resource(map[string]ingest.Value{"process.pid": ingest.IntValue(20), "service.name": b.str("chat")})
			},
			want: []want{{20, "chat", ViaResource}},
		},
		{
			name: "MIG instance as last resort, orphans noted",
			build: func(b *traceBuilder) {
				b.migSample(30, 0, 1).migSample(31, 0, 2)
				b.kernels(32)
			},
			want:  []want{{30, "gpu0-mig1", ViaMIGInstance}, {31, "gpu0-mig2", ViaMIGInstance}},
			notes: []string{"1 processes with GPU work have no tenant (pids 32)"},
		},
		{
			name:  "MIG off",
			build: func(b *traceBuilder) { b.migSample(30, 0, 1) },
			opts:  MapOptions{NoMIG: true},
			notes: []string{"1 processes with GPU work have no tenant (pids 30)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newTraceBuilder()
			tc.build(b)
			m := MapTenants(b.t, tc.opts)
			if len(m.Entries) != len(tc.want) {
				t.Fatalf("entries %+v, want %+v", m.Entries, tc.want)
			}
			for i, w := range tc.want {
				e := m.Entries[i]
				if e.Pid != w.pid || e.Tenant != w.tenant || e.Via != w.via || m.ByPid[w.pid] != w.tenant {
					t.Errorf("entry %d = %+v, want %+v", i, e, w)
				}
			}
			notes := strings.Join(m.Notes, "\n")
			if len(m.Notes) != len(tc.notes) {
				t.Errorf("notes %q, want %q", m.Notes, tc.notes)
			}
			for _, n := range tc.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("notes %q lack %q", notes, n)
				}
			}
		})
	}
}

func TestTenantMapPlacementAndMethods(t *testing.T) {
	b := newTraceBuilder()
	b.migSample(30, 1, 3)
	b.t.GPUOps = append(b.t.GPUOps, ingest.GPUOp{Pid: 31, Device: 2, Kind: ingest.OpKernel})
	b.process(31, "worker")
	b.resource(map[string]ingest.Value{"process.pid": ingest.IntValue(30), "service.name": b.str("chat")})
	m := MapTenants(b.t, MapOptions{})
	want := []PidTenant{
		{Pid: 30, Tenant: "chat", Via: ViaResource, Key: "service.name", Device: 1, Instance: 3},
		{Pid: 31, Tenant: "worker", Via: ViaProcessName, Device: 2, Instance: -1},
	}
	for i := range want {
		if !reflect.DeepEqual(m.Entries[i], want[i]) {
			t.Errorf("entry %d = %+v, want %+v", i, m.Entries[i], want[i])
		}
	}
	got := m.Methods()
	if len(got) != 2 || got[0] != (ViaCount{ViaResource, 1}) || got[1] != (ViaCount{ViaProcessName, 1}) {
		t.Errorf("Methods = %+v", got)
	}
	if ts := m.Tenants(); len(ts) != 2 || ts[0] != "chat" || ts[1] != "worker" {
		t.Errorf("Tenants = %v", ts)
	}
}
