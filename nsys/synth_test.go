package nsys

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/synth"
)

// The demo path: the simulator's GPU-side trace written as an export and
// read back. Every op and call survives, the NVTX step ranges project onto
// exactly their step's ops, and the kernel summary is the simulator's.
func TestSynthRunAsExport(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(3, 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	in := run.GPUTrace()
	path := filepath.Join(t.TempDir(), "synth.sqlite")
	if err := WriteSQLite(path, in, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out, err := Decoder{}.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.GPUOps) != len(in.GPUOps) || len(out.Spans) != len(in.Spans) {
		t.Fatalf("%d ops, %d spans back; wrote %d, %d", len(out.GPUOps), len(out.Spans), len(in.GPUOps), len(in.Spans))
	}
	for _, w := range out.Warnings.List {
		t.Errorf("warning: %s", w)
	}

	// Each step's NVTX range ("step <index> span_id=<hex>") owns its step's ops.
	launched := map[int]int{}
	for _, st := range run.Steps {
		launched[st.Index] = st.EndOp - st.FirstOp
	}
	projected := 0
	for _, p := range NVTXProjection(out) {
		var index int
		if _, err := fmt.Sscanf(p.Name, ":step %d ", &index); err != nil {
			t.Fatalf("range %q: %v", p.Name, err)
		}
		projected++
		if p.NumGPUOps != launched[index] {
			t.Errorf("%s: %d ops projected, the step launched %d", p.Name, p.NumGPUOps, launched[index])
		}
	}
	if projected == 0 {
		t.Error("no step range was projected")
	}

	// The kernel summary by name matches the simulator's ops.
	totals := map[string]int64{}
	for i := range in.GPUOps {
		if o := &in.GPUOps[i]; o.Kind == ingest.OpKernel {
			totals[in.Str(o.Name)] += o.End - o.Start
		}
	}
	got := KernelSummary(out, KernelDemangled)
	if len(got) != len(totals) {
		t.Errorf("%d kernel names, the run has %d", len(got), len(totals))
	}
	for _, k := range got {
		if totals[k.Name] != k.Total {
			t.Errorf("%.60s: %d ns, the run has %d", k.Name, k.Total, totals[k.Name])
		}
	}
}

// A trace written in pieces is the same export, byte for byte, as the
// trace written whole: the simulator's capture in 40 ms pieces (steps
// straddle their boundaries) against GPUTraceWindow's whole trace.
func TestWriteSQLitePartsSameBytes(t *testing.T) {
	cfg := synth.DemoConfig(4, 2*time.Second)
	cfg.CUDAGraphs = true
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	from, to := cfg.Start+int64(500*time.Millisecond), cfg.Start+int64(1500*time.Millisecond)
	dir := t.TempDir()
	whole, pieces := filepath.Join(dir, "whole.sqlite"), filepath.Join(dir, "pieces.sqlite")
	if err := WriteSQLite(whole, run.GPUTraceWindow(from, to), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	head, parts := run.GPUTraceParts(from, to, int64(40*time.Millisecond))
	n := 0
	counted := func(yield func(*ingest.Trace) error) error {
		n = 0
		return parts(func(p *ingest.Trace) error { n++; return yield(p) })
	}
	if err := WriteSQLiteParts(pieces, head, counted, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("%d pieces; the test wants many", n)
	}
	if a, b := readBoth(t, whole, pieces); !bytes.Equal(a, b) {
		t.Fatalf("the export written in %d pieces (%d bytes) differs from the one written whole (%d bytes)", n, len(b), len(a))
	}
}

// readBoth reads two files a test wrote.
func readBoth(t *testing.T, x, y string) (a, b []byte) {
	t.Helper()
	a, err := os.ReadFile(x)
	if err != nil {
		t.Fatal(err)
	}
	if b, err = os.ReadFile(y); err != nil {
		t.Fatal(err)
	}
	return a, b
}
