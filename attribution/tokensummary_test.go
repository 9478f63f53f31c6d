package attribution

import (
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// summarizeTokens adds each request's decode tokens to the groups once per
// request and finds stalls among the tokens it kept: the figures are those
// of adding every token to every group, and the stalls those of a second
// walk (which it falls back to when it kept too many).
func TestTokenSummaryPerRequestSums(t *testing.T) {
	checkPerTokenSums(t, Analyze(stallingTrace(t), DefaultOptions), 0)
}

// stallingRun is a simulated 15 s run in which 1% of the steps stall,
// generated once for the four tests that read it (none changes it).
func stallingRun(t *testing.T) *synth.Run {
	t.Helper()
	run, err := stallingRunOnce()
	if err != nil {
		t.Fatal(err)
	}
	return run
}

var stallingRunOnce = sync.OnceValues(func() (*synth.Run, error) {
	cfg := synth.DefaultConfig(12, 15*time.Second)
	cfg.StallProbability = 0.01
	cfg.StallNs = 80_000_000 // well above 3× any model's median inter-token latency
	return synth.Generate(cfg)
})

// stallingTrace is stallingRun decoded with its GPU side (NVTX kept), once
// for the tests that analyze it (six, TestStallsFoundWhereInjected among
// them): Analyze leaves a trace as it found it, and each test still runs
// its own analysis. The trace is read whole when decoded, so the first
// test's temporary directory may go with that test.
func stallingTrace(t *testing.T) *ingest.Trace {
	t.Helper()
	stallingTraceOnce.Do(func() { stallingTraceOnce.tr = synthtrace.WithGPU(t, stallingRun(t), true) })
	if stallingTraceOnce.tr == nil {
		t.Fatal("the stalling run's trace was not decoded (see the first test that read it)")
	}
	return stallingTraceOnce.tr
}

var stallingTraceOnce struct {
	sync.Once
	tr *ingest.Trace
}

// checkPerTokenSums checks summarizeTokens against every token of res added
// to every group it belongs to, and its stalls (over the stall threshold;
// 0: the automatic one) against a second walk.
func checkPerTokenSums(t *testing.T, res *Result, stall time.Duration) {
	t.Helper()
	got := summarizeTokens(res, stall)
	if got.Stalls.Count == 0 || len(got.ByTenant) < 2 || len(got.ByModel) < 1 {
		t.Fatalf("the run should have stalls, tenants and models: %d stalls, %d tenants, %d models",
			got.Stalls.Count, len(got.ByTenant), len(got.ByModel))
	}

	// Every token added to every group it belongs to.
	decode, firstTokens := BucketShares{Name: "decode"}, BucketShares{Name: "first"}
	positions := []BucketShares{{Name: "0"}, {Name: "1"}, {Name: "2–9"}, {Name: "10–99"}, {Name: "100+"}}
	tenants, models := map[string]*BucketShares{}, map[string]*BucketShares{}
	sums := make([]RequestBuckets, len(res.Requests))
	res.EachToken(func(tb *TokenBreakdown) {
		for b, v := range tb.Buckets {
			sums[tb.Request].All[b] += v
		}
		switch {
		case tb.Index < 1:
			positions[0].add(tb)
		case tb.Index < 2:
			positions[1].add(tb)
		case tb.Index < 10:
			positions[2].add(tb)
		case tb.Index < 100:
			positions[3].add(tb)
		default:
			positions[4].add(tb)
		}
		if tb.Index == 0 {
			sums[tb.Request].First = tb.Buckets
			firstTokens.add(tb)
			return
		}
		r := &res.Requests[tb.Request]
		decode.add(tb)
		for m, name := range map[*map[string]*BucketShares]string{&tenants: res.Tenant(r), &models: res.Model(r)} {
			if (*m)[name] == nil {
				(*m)[name] = &BucketShares{Name: name}
			}
			(*m)[name].add(tb)
		}
	})
	decode.finish()
	firstTokens.finish()
	if !reflect.DeepEqual(got.Decode, decode) {
		t.Errorf("decode tokens: %+v, per token %+v", got.Decode, decode)
	}
	if !reflect.DeepEqual(got.First, firstTokens) {
		t.Errorf("first tokens: %+v, per token %+v", got.First, firstTokens)
	}
	for i := range positions {
		positions[i].finish()
	}
	if !reflect.DeepEqual(got.ByPosition, positions) {
		t.Errorf("by position: %+v, per token %+v", got.ByPosition, positions)
	}
	if got.ByPosition[4].Tokens == 0 {
		t.Errorf("no token past the 100th: the test does not cover every position group")
	}
	if want := sortedGroups(tenants); !reflect.DeepEqual(got.ByTenant, want) {
		t.Errorf("by tenant: %+v, per token %+v", got.ByTenant, want)
	}
	if want := sortedGroups(models); !reflect.DeepEqual(got.ByModel, want) {
		t.Errorf("by model: %+v, per token %+v", got.ByModel, want)
	}
	for i := range sums {
		var got RequestBuckets
		if !res.TokenBuckets(i, &got) || got != sums[i] {
			t.Errorf("request %d: token sums %+v, per token %+v", i, got, sums[i])
			break
		}
		// TokenBucketSums: the same sums in the buckets it names, every
		// other bucket zero.
		var named RequestBuckets
		bs, all, first := res.TokenBucketSums(i)
		if len(all) != len(bs) || len(first) != len(bs) {
			t.Fatalf("request %d: TokenBucketSums gave %d buckets, %d and %d sums", i, len(bs), len(all), len(first))
		}
		for j, b := range bs {
			named.All[b], named.First[b] = all[j], first[j]
		}
		if named != sums[i] {
			t.Errorf("request %d: TokenBucketSums %+v, per token %+v", i, named, sums[i])
			break
		}
	}

	// The stalls found by walking the tokens again.
	defer func(n int) { stallCandidatesMax = n }(stallCandidatesMax)
	stallCandidatesMax = 0
	if again := summarizeTokens(res, stall); !reflect.DeepEqual(again, got) {
		t.Errorf("stalls from the kept tokens %+v, from a second walk %+v", got.Stalls, again.Stalls)
	}
}
