package synth

import (
	"math"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

// GPUTraceParts' pieces, one after another, are GPUTraceWindow's tables
// record for record — also where a step's records straddle a boundary
// between pieces, and for a window in the middle of the run.
func TestGPUTracePartsAreTheWindow(t *testing.T) {
	cfg := DemoConfig(5, 4*time.Second)
	cfg.CUDAGraphs = true
	run, err := Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		from, to int64
		every    int64
	}{
		{"whole run in one piece", math.MinInt64, math.MaxInt64, 0},
		{"whole run, 50 ms pieces", math.MinInt64, math.MaxInt64, 50e6},
		{"a window, 7 ms pieces", cfg.Start + 1e9, cfg.Start + 3e9, 7e6},
		{"more pieces than allowed", math.MinInt64, math.MaxInt64, 1},
	} {
		if c.every == 1 {
			defer func(n int64) { maxPieces = n }(maxPieces)
			maxPieces = 64
		}
		t.Run(c.name, func(t *testing.T) {
			want := run.GPUTraceWindow(c.from, c.to)
			head, parts := run.GPUTraceParts(c.from, c.to, c.every)
			if len(head.Processes) != len(want.Processes) || len(head.Threads) != len(want.Threads) || len(head.Devices) != len(want.Devices) {
				t.Errorf("head: %d processes, %d threads, %d devices; want %d, %d, %d",
					len(head.Processes), len(head.Threads), len(head.Devices), len(want.Processes), len(want.Threads), len(want.Devices))
			}
			var spans, calls, ops, pieces int
			err := parts(func(p *ingest.Trace) error {
				pieces++
				for i := range p.Spans {
					if spans >= len(want.Spans) {
						t.Fatalf("more than %d spans", len(want.Spans))
					}
					got, w := p.Spans[i], want.Spans[spans]
					if p.Str(got.Name) != want.Str(w.Name) || got.Start != w.Start || got.End != w.End || got.Pid != w.Pid || got.Tid != w.Tid || got.Origin != w.Origin {
						t.Fatalf("span %d: %+v (%s), want %+v (%s)", spans, got, p.Str(got.Name), w, want.Str(w.Name))
					}
					spans++
				}
				for i := range p.APICalls {
					if calls >= len(want.APICalls) {
						t.Fatalf("more than %d calls", len(want.APICalls))
					}
					got, w := p.APICalls[i], want.APICalls[calls]
					gn, wn := got.Name, w.Name
					got.Name, w.Name = 0, 0
					if p.Str(gn) != want.Str(wn) || got != w {
						t.Fatalf("call %d: %+v (%s), want %+v (%s)", calls, got, p.Str(gn), w, want.Str(wn))
					}
					calls++
				}
				for i := range p.GPUOps {
					if ops >= len(want.GPUOps) {
						t.Fatalf("more than %d ops", len(want.GPUOps))
					}
					got, w := p.GPUOps[i], want.GPUOps[ops]
					gn, wn, gs, ws := got.Name, w.Name, p.ShapeOf(&got), want.ShapeOf(&w)
					got.Name, w.Name, got.Shape, w.Shape = 0, 0, 0, 0
					if p.Str(gn) != want.Str(wn) || gs != ws || got != w {
						t.Fatalf("op %d: %+v (%s, %+v), want %+v (%s, %+v)", ops, got, p.Str(gn), gs, w, want.Str(wn), ws)
					}
					ops++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if spans != len(want.Spans) || calls != len(want.APICalls) || ops != len(want.GPUOps) {
				t.Errorf("%d spans, %d calls, %d ops in %d pieces; want %d, %d, %d", spans, calls, ops, pieces, len(want.Spans), len(want.APICalls), len(want.GPUOps))
			}
			if len(want.GPUOps) == 0 {
				t.Fatal("the window holds no GPU op")
			}
			if c.every == 0 && pieces != 1 || c.every > 1 && pieces < 20 || c.every == 1 && (pieces < 20 || pieces > 64) {
				t.Errorf("%d pieces of %d ns", pieces, c.every)
			}
		})
	}
}
