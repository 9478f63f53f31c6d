package attribution_test

import (
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/synth"
)

// truthBuckets maps the simulator's truth onto the report's buckets
// (tokenization is pre-queue CPU work: other).
func truthBuckets(tt *synth.TokenTruth) [attribution.NumBuckets]int64 {
	var b [attribution.NumBuckets]int64
	b[attribution.BucketQueue] = tt.Queue
	b[attribution.BucketPreempted] = tt.Preempted
	b[attribution.BucketCPUSchedule] = tt.CPUSchedule
	for c := range ingest.NumKernelCategories {
		b[attribution.BucketGPUFirst+attribution.Bucket(c)] = tt.GPU[c]
	}
	b[attribution.BucketGPUIdle] = tt.GPUIdle
	b[attribution.BucketCPUPostprocess] = tt.CPUPostprocess
	b[attribution.BucketOther] = tt.Other + tt.Tokenize
	return b
}

func TestTokenBreakdownMatchesTruth(t *testing.T) {
	cfg := synth.DefaultConfig(11, 15*time.Second)
	cfg.Models[0].KVTokens = 9_000 // force preemptions
	cfg.StallProbability = 0.01
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	res := attribution.Analyze(decodeWithGPU(t, run, false), attribution.DefaultOptions)
	byID := map[string]int{}
	for i := range res.Requests {
		byID[res.ID(&res.Requests[i])] = i
	}
	truth := map[int][]synth.TokenTruth{}
	for i := range run.Requests {
		q := &run.Requests[i]
		truth[byID[q.ID]] = run.TokenTruths(q)
	}
	tokens, preempted := 0, 0
	res.EachToken(func(tb *attribution.TokenBreakdown) {
		tokens++
		want := truth[tb.Request][tb.Index]
		var sum int64
		for _, v := range tb.Buckets {
			sum += v
		}
		if sum != tb.Interval || tb.Interval != want.To-want.From {
			t.Fatalf("%s token %d: buckets sum to %d, interval %d, truth interval %d",
				res.ID(&res.Requests[tb.Request]), tb.Index, sum, tb.Interval, want.To-want.From)
		}
		wb := truthBuckets(&want)
		for b := attribution.Bucket(0); b < attribution.NumBuckets; b++ {
			tol := max(int64(10_000), wb[b]/100)
			if d := tb.Buckets[b] - wb[b]; d > tol || d < -tol {
				t.Fatalf("%s token %d: %s = %d ns, truth %d ns", res.ID(&res.Requests[tb.Request]), tb.Index, b, tb.Buckets[b], wb[b])
			}
		}
		if wb[attribution.BucketPreempted] > 0 {
			preempted++
		}
	})
	if tokens == 0 || preempted == 0 {
		t.Fatalf("%d tokens, %d preempted: the run must exercise preemption", tokens, preempted)
	}
	if res.Tokens == nil || res.Tokens.Tokens != tokens || res.Tokens.Estimated != 0 {
		t.Fatalf("summary = %+v", res.Tokens)
	}
}

func TestStallsFoundWhereInjected(t *testing.T) {
	// A 15 s run in which 1% of the steps stall for 80 ms, well above 3×
	// any model's median inter-token latency (attribution's stallingRun,
	// generated and decoded once for the package's tests).
	run := attribution.StallingRun(t)
	res := attribution.Analyze(attribution.StallingTrace(t), attribution.DefaultOptions)
	// Every decode token emitted by a stalled step is a stall caused by idle
	// GPU time (launches held back by the CPU) in that step. (Other stalls
	// are real too: decode tokens held up by a long prefill in a mixed step
	// show up with cause gpu.gemm or gpu.attention.)
	stalled := map[int64]bool{}
	for _, s := range run.Steps {
		if s.Stalled {
			stalled[int64(s.Index)] = true
		}
	}
	if len(stalled) == 0 {
		t.Fatal("no stall injected")
	}
	byID := map[string]int{}
	for i := range res.Requests {
		byID[res.ID(&res.Requests[i])] = i
	}
	truth := map[int][]synth.TokenTruth{}
	for i := range run.Requests {
		truth[byID[run.Requests[i].ID]] = run.TokenTruths(&run.Requests[i])
	}
	found, hidden := 0, 0
	res.EachToken(func(tb *attribution.TokenBreakdown) {
		if tb.Index == 0 || tb.Step < 0 || !stalled[res.Steps[tb.Step].ID] {
			return
		}
		// A pause of the launching thread hides behind kernels already
		// queued: in a step with a long prefill the GPU may never go idle,
		// and then the stall costs nothing and is not the token's cause.
		// The truth says which tokens the pause did leave idle.
		if truth[tb.Request][tb.Index].GPUIdle < 20_000_000 {
			hidden++
			return
		}
		thr := res.Tokens.Stalls.ThresholdMs[res.Model(&res.Requests[tb.Request])]
		if float64(tb.Interval)/1e6 <= thr {
			t.Errorf("token %d of %s in stalled step %d took %v, under the %v ms threshold",
				tb.Index, res.ID(&res.Requests[tb.Request]), res.Steps[tb.Step].ID, time.Duration(tb.Interval), thr)
		}
		if tb.Buckets[attribution.BucketGPUIdle] < 20_000_000 {
			t.Errorf("stalled step %d: gpu.idle only %v", res.Steps[tb.Step].ID, time.Duration(tb.Buckets[attribution.BucketGPUIdle]))
		}
		found++
	})
	st := res.Tokens.Stalls
	t.Logf("%d tokens in stalled steps left the GPU idle, %d hid the pause; stalls by cause %v", found, hidden, st.ByCause)
	if found == 0 || found < hidden || float64(st.ByCause["gpu.idle"]) < 0.95*float64(found) {
		t.Fatalf("%d tokens in stalled steps (%d hidden); stalls by cause %v", found, hidden, st.ByCause)
	}
	if len(st.Worst) == 0 || st.Worst[0].Step < 0 {
		t.Fatalf("worst stalls = %+v", st.Worst)
	}
}

func TestEstimatedTokensForStockVLLM(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(13, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	res := decodeRun(t, run, synth.StyleVLLM, synth.JSONLines)
	ts := res.Tokens
	if ts == nil || ts.Tokens == 0 || ts.Estimated != ts.Tokens {
		t.Fatalf("tokens %+v: every token of stock vLLM input is estimated", ts)
	}
	if len(ts.Unfilled) < 2 {
		t.Fatalf("unfilled = %v: must say the GPU buckets cannot be filled and that times are estimated", ts.Unfilled)
	}
	var prefill, decode int64
	res.EachToken(func(tb *attribution.TokenBreakdown) {
		for b, v := range tb.Buckets {
			switch attribution.Bucket(b) {
			case attribution.BucketQueue, attribution.BucketOther:
			case attribution.BucketStagePrefill:
				if v != 0 && tb.Index != 0 {
					t.Fatalf("decode token %d has %d ns of prefill", tb.Index, v)
				}
				prefill += v
			case attribution.BucketStageDecode:
				if v != 0 && tb.Index == 0 {
					t.Fatalf("first token has %d ns of decode", v)
				}
				decode += v
			default:
				if v != 0 {
					t.Fatalf("estimated token filled %s without GPU data", attribution.Bucket(b))
				}
			}
		}
	})
	// vLLM's latency attributes place prefill and decode: the tokens carry
	// them as the request stages do.
	var wantPrefill, wantDecode int64
	for i := range res.Requests {
		wantPrefill += res.Requests[i].Stages[attribution.StagePrefill]
		wantDecode += res.Requests[i].Stages[attribution.StageDecode]
	}
	if prefill == 0 || decode == 0 || prefill > wantPrefill || decode > wantDecode {
		t.Fatalf("tokens hold %d ns of prefill and %d of decode; the stages %d and %d", prefill, decode, wantPrefill, wantDecode)
	}
}
