package attribution

import (
	"testing"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/ingest"
)

// Three captures: a and b from one machine, c from another. b has no clock
// anchor, so it cannot be aligned: even on a's machine its device 0 is not
// a's device 0.
func TestGPUHostsKeepUnalignedCapturesApart(t *testing.T) {
	tr := ingest.New()
	epoch := int64(1_764_000_000_000_000_000)
	for _, s := range []struct {
		path, host string
		anchored   bool
	}{{"a.sqlite", "h1", true}, {"b.sqlite", "h1", false}, {"c.sqlite", "h2", true}} {
		src := ingest.Source{Path: s.path, Format: "nsys-sqlite", Host: s.host, Clock: ingest.ClockDomain{Name: "nsys:" + s.path, Kind: ingest.ClockNsysSession}}
		if s.anchored {
			src.Anchors = []ingest.ClockAnchor{{Kind: ingest.AnchorEpoch, Local: epoch, RefLow: epoch, RefHigh: epoch}}
		}
		tr.Sources = append(tr.Sources, src)
	}
	k := tr.Strings.Intern("gemm_kernel")
	for src := range 3 {
		for i := range int64(3) {
			at := epoch + int64(src)*1_000 + i*10_000
			tr.GPUOps = append(tr.GPUOps, ingest.GPUOp{Start: at, End: at + 5_000, Name: k, Device: 0, Pid: 7, Stream: 1, Source: ingest.SourceID(src), Kind: ingest.OpKernel})
		}
	}
	tr.Validate()
	ar, err := align.Align(tr, align.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if ar.Joinable(1) || !ar.Joinable(2) {
		t.Fatalf("joinable: b %v, c %v", ar.Joinable(1), ar.Joinable(2))
	}
	g := analyzeGPU(tr, GPUOptions{}, tr.LaunchCalls(), gpuHosts(tr, ar))
	want := map[string]int{"host h1": 3, "host h1 (b.sqlite)": 3, "host h2": 3}
	if len(g.Devices) != 3 {
		t.Fatalf("devices = %+v", g.Devices)
	}
	for _, d := range g.Devices {
		if want[d.Host] != d.Ops || d.Device != 0 || d.WindowMs != 0.025 {
			t.Errorf("device %+v", d)
		}
	}
	if len(g.Hosts) != 3 || g.Hosts[1].Name != "host h1 (b.sqlite)" || g.Hosts[1].Joined || !g.Hosts[0].Joined {
		t.Errorf("hosts = %+v", g.Hosts)
	}
}
