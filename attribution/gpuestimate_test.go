package attribution_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// Stock vLLM spans (no llm.step) with the nsys export of the same run: the
// per-token GPU buckets are filled, marked estimated, and their totals per
// kernel category are within 10% of the simulator's truth; the stalls are
// one line per time window.
func TestStockVLLMWithNsysEstimatesGPU(t *testing.T) {
	for _, style := range []synth.Style{synth.StyleVLLM, synth.StyleVLLMServer} {
		cfg := synth.DefaultConfig(4, 10*time.Second)
		cfg.GPUClock = synth.ClockError{} // one clock: no alignment needed
		run, err := synth.Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		tr := ingest.Merge(synthtrace.Decode(t, run, style, synth.JSONLines, "trace.jsonl"), run.GPUTrace())
		tr.Validate()
		res := attribution.Analyze(tr, attribution.DefaultOptions)
		if len(res.Steps) != 0 || res.Tokens == nil || !res.Tokens.GPUEstimated {
			t.Fatalf("style %d: steps %d, tokens %+v", style, len(res.Steps), res.Tokens)
		}
		if !strings.Contains(res.Tokens.GPUEstimate, "shared among concurrent requests") {
			t.Errorf("gpu estimate note = %q", res.Tokens.GPUEstimate)
		}
		var truth [attribution.NumKernelCategories]float64
		names := map[string]attribution.KernelCategory{}
		for c := range attribution.NumKernelCategories {
			names[attribution.KernelCategory(c).String()] = attribution.KernelCategory(c)
		}
		for _, op := range run.Ops {
			truth[names[op.Category.String()]] += float64(op.End - op.Start)
		}
		bucketOf := map[string]attribution.Bucket{}
		for b, n := range attribution.BucketNames() {
			bucketOf[n] = attribution.Bucket(b)
		}
		var got [attribution.NumKernelCategories]float64
		for i := range res.Requests {
			rb := new(attribution.RequestBuckets)
			if !res.TokenBuckets(i, rb) {
				t.Fatal("no token buckets")
			}
			for c := range attribution.NumKernelCategories {
				b, ok := bucketOf["gpu."+strings.ReplaceAll(attribution.KernelCategory(c).String(), "/", "_")]
				if !ok {
					t.Fatalf("no bucket for %s", attribution.KernelCategory(c))
				}
				got[c] += float64(rb.All[b])
			}
		}
		for c := range attribution.NumKernelCategories {
			if truth[c] == 0 && got[c] == 0 {
				continue
			}
			if rel := math.Abs(got[c]-truth[c]) / truth[c]; rel > 0.10 {
				t.Errorf("style %d: %s: estimated %.1f ms, truth %.1f ms (%.1f%% off)", style, attribution.KernelCategory(c), got[c]/1e6, truth[c]/1e6, 100*rel)
			}
		}
		// Each engine's kernels go to its own model's requests (by pid in
		// StyleVLLM, by the model in the process name in StyleVLLMServer,
		// whose spans come from the API server process).
		truthByModel, gotByModel := map[string]float64{}, map[string]float64{}
		for si := range run.Steps {
			st := &run.Steps[si]
			for _, op := range run.Ops[st.FirstOp:st.EndOp] {
				truthByModel[run.Engines[st.Engine].Model] += float64(op.End - op.Start)
			}
		}
		for i := range res.Requests {
			rb := new(attribution.RequestBuckets)
			res.TokenBuckets(i, rb)
			for b := attribution.BucketGPUGEMM; b <= attribution.BucketGPUOther; b++ {
				gotByModel[res.Model(&res.Requests[i])] += float64(rb.All[b])
			}
		}
		for m, want := range truthByModel {
			if rel := math.Abs(gotByModel[m]-want) / want; rel > 0.10 {
				t.Errorf("style %d: model %s: estimated %.1f ms of GPU time, truth %.1f ms", style, m, gotByModel[m]/1e6, want/1e6)
			}
		}
		// The share model: first tokens get the prefill part of each step's
		// GPU time (its prompt tokens' share of the batch's tokens).
		var truthPrefill, gotPrefill, all float64
		for si := range run.Steps {
			st := &run.Steps[si]
			var d float64
			for _, op := range run.Ops[st.FirstOp:st.EndOp] {
				d += float64(op.End - op.Start)
			}
			if n := st.PrefillTokens + st.DecodeTokens; n > 0 {
				truthPrefill += d * float64(st.PrefillTokens) / float64(n)
			}
			all += d
		}
		for i := range res.Requests {
			rb := new(attribution.RequestBuckets)
			res.TokenBuckets(i, rb)
			for c := range attribution.NumKernelCategories {
				gotPrefill += float64(rb.First[bucketOf["gpu."+strings.ReplaceAll(attribution.KernelCategory(c).String(), "/", "_")]])
			}
		}
		if rel := math.Abs(gotPrefill-truthPrefill) / all; rel > 0.10 {
			t.Errorf("style %d: prefill share of GPU time %.1f%%, truth %.1f%%", style, 100*gotPrefill/all, 100*truthPrefill/all)
		}
		t.Logf("style %d: prefill share of GPU time %.1f%% (truth %.1f%%)", style, 100*gotPrefill/all, 100*truthPrefill/all)
		// Every token's buckets still sum to its interval.
		res.EachToken(func(tb *attribution.TokenBreakdown) {
			var sum int64
			for _, v := range tb.Buckets {
				if v < 0 {
					t.Fatalf("negative bucket in %+v", tb)
				}
				sum += v
			}
			if sum != tb.Interval || !tb.GPUEstimated {
				t.Fatalf("token %d of request %d: buckets sum to %d, interval %d (gpu estimated %v)", tb.Index, tb.Request, sum, tb.Interval, tb.GPUEstimated)
			}
		})
		// Stalls: no two events of one request touch in time.
		for i, a := range res.Tokens.Stalls.Worst {
			if a.WindowMs == 0 && a.Step < 0 {
				t.Errorf("stall %+v has neither step nor window", a)
			}
			for _, b := range res.Tokens.Stalls.Worst[i+1:] {
				if a.Request == b.Request && a.WindowStartNs+int64(a.WindowMs*1e6) >= b.WindowStartNs && b.WindowStartNs+int64(b.WindowMs*1e6) >= a.WindowStartNs {
					t.Errorf("request %s listed twice for one window: %+v %+v", a.Request, a, b)
				}
			}
		}
		t.Logf("style %d: estimated/truth per category: %v / %v; %d stall events of %d stalled tokens", style, got, truth, len(res.Tokens.Stalls.Worst), res.Tokens.Stalls.Count)
	}
}
