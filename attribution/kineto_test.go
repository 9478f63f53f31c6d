package attribution_test

import (
	"testing"
	"time"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// TestTokenBreakdownMatchesTruthKineto is TestTokenBreakdownMatchesTruth
// with the GPU side read back from PyTorch profiler traces (one per engine,
// gzip'd, on a GPU-side clock 1.7 s off the OTLP clock and drifting) instead
// of merged from the model: decoded, aligned by the step annotations'
// span_id=, steps joined to their kernels through the annotations, every
// token's buckets equal to the simulator's truth.
func TestTokenBreakdownMatchesTruthKineto(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts kineto.WriteOptions
	}{
		{"cuda, base after events", kineto.WriteOptions{Times: kineto.BaseAfter}},
		{"rocm, absolute times", kineto.WriteOptions{Times: kineto.Absolute, ROCm: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := synth.DefaultConfig(11, 10*time.Second)
			cfg.Models[0].KVTokens = 9_000 // force preemptions
			cfg.StallProbability = 0.01
			cfg.GPUClock = synth.ClockError{OffsetNs: 1_734_000_000, DriftPPM: 35, JitterNs: 20_000}
			run, err := synth.Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			tr := synthtrace.WithKineto(t, run, tc.opts)
			kinetoSources := 0
			for _, s := range tr.Sources {
				if s.Format == kineto.Format {
					kinetoSources++
				}
			}
			if kinetoSources != len(run.Engines) {
				t.Fatalf("%d Kineto sources, want one per engine (%d)", kinetoSources, len(run.Engines))
			}
			ar, err := align.Align(tr, align.DefaultOptions())
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range ar.Fits {
				if f.Status == align.StatusCannotAlign {
					t.Fatalf("domain %s cannot align: %v", f.Domain, f.Warnings)
				}
			}
			res := attribution.Analyze(tr, attribution.Options{Alignment: ar})
			for _, st := range res.Steps {
				if st.OpsVia != attribution.OpsNVTX {
					t.Fatalf("step %d got its ops by %s, not through its annotation", st.ID, st.OpsVia)
				}
			}
			checkTokenTruth(t, run, res)
		})
	}
}

// checkTokenTruth compares every token's buckets with the simulator's.
func checkTokenTruth(t *testing.T, run *synth.Run, res *attribution.Result) {
	t.Helper()
	byID := map[string]int{}
	for i := range res.Requests {
		byID[res.Requests[i].ID] = i
	}
	truth := map[int][]synth.TokenTruth{}
	for i := range run.Requests {
		truth[byID[run.Requests[i].ID]] = run.TokenTruths(&run.Requests[i])
	}
	tokens, gpu := 0, int64(0)
	res.EachToken(func(tb *attribution.TokenBreakdown) {
		tokens++
		want := truth[tb.Request][tb.Index]
		wb := truthBuckets(&want)
		for b := attribution.Bucket(0); b < attribution.NumBuckets; b++ {
			tol := max(int64(10_000), wb[b]/100)
			if d := tb.Buckets[b] - wb[b]; d > tol || d < -tol {
				t.Fatalf("%s token %d: %s = %d ns, truth %d ns", res.Requests[tb.Request].ID, tb.Index, b, tb.Buckets[b], wb[b])
			}
		}
		gpu += tb.Buckets[attribution.BucketGPUGEMM] + tb.Buckets[attribution.BucketGPUAttention]
	})
	if tokens == 0 || gpu == 0 || res.Tokens == nil || res.Tokens.Estimated != 0 {
		t.Fatalf("%d tokens, %d ns of GPU GEMM+attention, summary %+v: the GPU buckets must be filled", tokens, gpu, res.Tokens)
	}
}
