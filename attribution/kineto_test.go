package attribution_test

import (
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/synth"
)

// TestTokenBreakdownMatchesTruthKineto is TestTokenBreakdownMatchesTruth
// with the GPU side read back from PyTorch profiler traces (one per engine,
// gzip'd, on a GPU-side clock 1.7 s off the OTLP clock and drifting) instead
// of merged from the model: decoded, aligned by the step annotations'
// span_id=, steps joined to their kernels through the annotations, every
// token's buckets equal to the simulator's truth. 5 s runs: already with
// preemptions and stalls in them (checked), as at 10 s; the cost is the
// traces' writing and decoding, linear in the run's length.
func TestTokenBreakdownMatchesTruthKineto(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts kineto.WriteOptions
	}{
		{"cuda, base after events", kineto.WriteOptions{Times: kineto.BaseAfter}},
		{"rocm, absolute times", kineto.WriteOptions{Times: kineto.Absolute, ROCm: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := synth.DefaultConfig(11, 5*time.Second)
			cfg.Models[0].KVTokens = 9_000 // force preemptions
			cfg.StallProbability = 0.01
			cfg.GPUClock = synth.ClockError{OffsetNs: 1_734_000_000, DriftPPM: 35, JitterNs: 20_000}
			run, err := synth.Generate(cfg)
			if err != nil {
				t.Fatal(err)
			}
			preempted, stalled := 0, 0
			for i := range run.Requests {
				preempted += len(run.Requests[i].Preemptions)
			}
			for i := range run.Steps {
				if run.Steps[i].Stalled {
					stalled++
				}
			}
			if preempted == 0 || stalled == 0 {
				t.Fatalf("%d preemptions, %d stalled steps: the run must have both", preempted, stalled)
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
		byID[res.ID(&res.Requests[i])] = i
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
				t.Fatalf("%s token %d: %s = %d ns, truth %d ns", res.ID(&res.Requests[tb.Request]), tb.Index, b, tb.Buckets[b], wb[b])
			}
		}
		gpu += tb.Buckets[attribution.BucketGPUGEMM] + tb.Buckets[attribution.BucketGPUAttention]
	})
	if tokens == 0 || gpu == 0 || res.Tokens == nil || res.Tokens.Estimated != 0 {
		t.Fatalf("%d tokens, %d ns of GPU GEMM+attention, summary %+v: the GPU buckets must be filled", tokens, gpu, res.Tokens)
	}
}

// Every shared Kineto trace and nsys export with kernels: the taxonomy
// leaves under 5% of GPU time in other, and the GPU section reports that
// share and the names that hold it. HTA's MI250 trace has its hipBLASLt
// GEMMs (Cijk_…) in gemm.
func TestUncategorizedShareOnSharedFiles(t *testing.T) {
	var paths []string
	paths = append(paths, shareddata.Glob(t, "testdata/kineto/*.json.gz")...)
	paths = append(paths, shareddata.Glob(t, "testdata/nsys/*.sqlite")...)
	files := 0
	for _, path := range paths {
		var tr *ingest.Trace
		var err error
		if strings.HasSuffix(path, ".sqlite") {
			tr, err = nsys.Decoder{Tables: nsys.Kernels | nsys.MemoryOps}.DecodeFile(context.Background(), path)
		} else {
			tr, err = decodeKineto(path)
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		g := attribution.AnalyzeGPU(tr, attribution.DefaultGPUOptions)
		var gpuMs float64
		for _, c := range g.KernelCategories {
			gpuMs += c.TotalMs
		}
		if gpuMs == 0 {
			continue
		}
		files++
		u := g.Uncategorized
		other := g.KernelCategories[attribution.CategoryOther]
		if math.Abs(u.TotalMs-other.TotalMs) > 1e-9 || math.Abs(u.Share-other.Share) > 1e-12 {
			t.Errorf("%s: uncategorized %+v disagrees with the other category %+v", filepath.Base(path), u, other)
		}
		var top float64
		for _, k := range u.Top {
			top += k.Share
		}
		if u.Share > 0 && (len(u.Top) == 0 || top > u.Share+1e-9) {
			t.Errorf("%s: other %.4f, its top names %v", filepath.Base(path), u.Share, u.Top)
		}
		t.Logf("%s: other %.2f%% of GPU time", filepath.Base(path), 100*u.Share)
		if u.Share >= 0.05 {
			t.Errorf("%s: %.1f%% of GPU time uncategorized; most in %+v", filepath.Base(path), 100*u.Share, u.Top)
		}
		if strings.Contains(path, "mi250") {
			for _, k := range g.TopKernels {
				if strings.HasPrefix(k.Name, "Cijk_") && k.Category != "gemm" {
					t.Errorf("MI250: %s is %s", k.Name, k.Category)
				}
			}
			if g.KernelCategories[attribution.CategoryGEMM].Share < 0.2 {
				t.Errorf("MI250: gemm share %.3f", g.KernelCategories[attribution.CategoryGEMM].Share)
			}
		}
	}
	if files < 10 {
		t.Fatalf("%d shared files with kernels, want the 14 of testdata/README.md", files)
	}
}

func decodeKineto(path string) (*ingest.Trace, error) {
	in, err := ingest.NewInput(path)
	if err != nil {
		return nil, err
	}
	rc, err := in.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return kineto.Decoder{}.DecodeReader(context.Background(), rc, path)
}
