package attribution_test

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// decodeWithGPU decodes a run's OTLP and merges the GPU side as nsys would
// record it (on the reference clock: these tests need no alignment).
func decodeWithGPU(t *testing.T, run *synth.Run, dropNVTX bool) *ingest.Trace {
	t.Helper()
	return synthtrace.WithGPU(t, run, !dropNVTX)
}

// stepsRun is the simulated run the step tests read (4 engines, 5 s),
// generated once for all of them: none changes it.
var stepsRun = sync.OnceValues(func() (*synth.Run, error) {
	return synth.Generate(synth.DefaultConfig(4, 5*time.Second))
})

func TestStepsFindTheirGPUOps(t *testing.T) {
	run, err := stepsRun()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		dropNVTX bool
		via      attribution.OpsVia
	}{{"nvtx projection", false, attribution.OpsNVTX}, {"time window", true, attribution.OpsWindow}} {
		t.Run(tc.name, func(t *testing.T) {
			tr := decodeWithGPU(t, run, tc.dropNVTX)
			res := attribution.Analyze(tr, attribution.DefaultOptions)
			if len(res.Steps) != len(run.Steps) || len(res.Engines) != len(run.Engines) {
				t.Fatalf("%d steps on %d engines, want %d on %d", len(res.Steps), len(res.Engines), len(run.Steps), len(run.Engines))
			}
			truth := map[int64]*synth.Step{}
			for i := range run.Steps {
				truth[int64(run.Steps[i].Index)] = &run.Steps[i]
			}
			for _, st := range res.Steps {
				want := truth[st.ID]
				if st.OpsVia != tc.via || len(st.Ops) != want.EndOp-want.FirstOp || len(st.Requests) != len(want.Requests) {
					t.Fatalf("step %d: %d ops via %s, %d requests; want %d ops via %s, %d requests",
						st.ID, len(st.Ops), st.OpsVia, len(st.Requests), want.EndOp-want.FirstOp, tc.via, len(want.Requests))
				}
				for j, oi := range st.Ops {
					if tr.GPUOps[oi].Correlation != run.Ops[want.FirstOp+j].Correlation {
						t.Fatalf("step %d op %d: correlation %d, want %d", st.ID, j, tr.GPUOps[oi].Correlation, run.Ops[want.FirstOp+j].Correlation)
					}
				}
			}
		})
	}
}

// With steps that report the tokens they computed, inflated hits are found
// exactly (the simulator knows which hits recomputed their prefix). 10 s
// runs (about 93 hits, 15–19 of them inflated, each); LLMPROF_LONG=1 runs the
// 20 s runs of before (170 and 30).
func TestInflatedHitsByStepAccounting(t *testing.T) {
	d := 10 * time.Second
	if os.Getenv("LLMPROF_LONG") != "" {
		d = 20 * time.Second
	}
	for _, seed := range []int64{1, 2} {
		run, err := synth.Generate(synth.DefaultConfig(seed, d))
		if err != nil {
			t.Fatal(err)
		}
		res := attribution.Analyze(decodeWithGPU(t, run, false), attribution.DefaultOptions)
		truth := map[string]bool{}
		hits := 0
		for _, q := range run.Requests {
			if q.CacheHit {
				hits++
			}
			if q.InflatedHit {
				truth[q.ID] = true
			}
		}
		kv := res.KVCache
		got := map[string]bool{}
		for _, h := range kv.Inflated {
			got[h.ID] = true
			if !truth[h.ID] {
				t.Errorf("seed %d: %s flagged inflated but was a genuine hit", seed, h.ID)
			}
		}
		decided := float64(kv.ByAccounting) / float64(hits)
		missed := 0
		for id := range truth {
			if !got[id] {
				missed++
			}
		}
		t.Logf("seed %d: %d hits, %d inflated; %d decided by accounting, %d by timing; %d flagged, %d missed", seed, hits, len(truth), kv.ByAccounting, kv.ByTiming, len(kv.Inflated), missed)
		if decided < 0.9 || float64(missed) > 0.1*float64(len(truth)) {
			t.Fatalf("seed %d: step accounting decided only %.0f%% of hits and missed %d of %d inflated", seed, 100*decided, missed, len(truth))
		}
	}
}

// With decode steps replayed as CUDA graphs, one launch call carries the
// correlation ID of all the step's kernels: the NVTX projection must still
// give each step all of its ops.
func TestStepsWithCUDAGraphs(t *testing.T) {
	cfg := synth.DefaultConfig(5, 4*time.Second)
	cfg.CUDAGraphs = true
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := attribution.Analyze(decodeWithGPU(t, run, false), attribution.DefaultOptions)
	graphs := 0
	for _, st := range res.Steps {
		want := &run.Steps[st.ID]
		if st.OpsVia != attribution.OpsNVTX || len(st.Ops) != want.EndOp-want.FirstOp {
			t.Fatalf("step %d (%s): %d ops via %s, want %d", st.ID, want.Phase, len(st.Ops), st.OpsVia, want.EndOp-want.FirstOp)
		}
		if want.Phase == "decode" {
			graphs++
		}
	}
	if graphs == 0 {
		t.Fatal("no decode step to replay as a graph")
	}
}

// TestFinerThanAlignmentFlagged: steps that find their GPU ops by time window
// across clocks with no known alignment bound are flagged; with NVTX mirrors
// (an exact join) nothing is.
func TestFinerThanAlignmentFlagged(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(6, 3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		nvtx bool
		want bool
	}{{"time window, unaligned GPU clock", false, true}, {"NVTX projection", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			tr := decodeWithGPU(t, run, !tc.nvtx)
			ar, err := align.Align(tr, align.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			res := attribution.Analyze(tr, attribution.Options{Alignment: ar})
			flagged := false
			for _, w := range res.Warnings {
				flagged = flagged || w.Code == "finer-than-alignment"
			}
			if flagged != tc.want {
				t.Fatalf("finer-than-alignment warning %v, want %v (warnings %v)", flagged, tc.want, res.Warnings)
			}
		})
	}
}

// TestRequestsOnlySkipsOnlyTheTokenSummary: commands that show no token section
// skip its walks, and keep requests, steps and everything else.
func TestRequestsOnlySkipsOnlyTheTokenSummary(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(7, 2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tr := decodeWithGPU(t, run, false)
	full := attribution.Analyze(tr, attribution.DefaultOptions)
	lean := attribution.Analyze(tr, attribution.Options{RequestsOnly: true})
	if full.Tokens == nil || lean.Tokens != nil || full.GPU == nil || lean.GPU != nil {
		t.Fatalf("token summary: full %v, lean %v; GPU section: full %v, lean %v", full.Tokens != nil, lean.Tokens != nil, full.GPU != nil, lean.GPU != nil)
	}
	if len(lean.Requests) != len(full.Requests) || len(lean.Steps) != len(full.Steps) || lean.Overall.Metrics != full.Overall.Metrics {
		t.Fatal("RequestsOnly changed the request or step analysis")
	}
}
