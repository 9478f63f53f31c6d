package compare_test

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// TestFromAttribution checks the samples diff reads against the attribution
// they come from: per-request metrics in ms, every ITL, and token buckets
// equal to the sum over each request's streamed token breakdowns.
func TestFromAttribution(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(3, 4*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	res := attribution.Analyze(synthtrace.WithGPU(t, run, true), attribution.Options{SLO: attribution.SLO{TTFT: 100 * time.Millisecond}})
	got := compare.FromAttribution(res)
	if err := got.Validate(); err != nil {
		t.Fatal(err)
	}
	if got.Requests != len(res.Requests) || got.SLO != "ttft=100ms" || got.Good != res.Overall.Goodput.Good {
		t.Fatalf("requests %d slo %q good %d", got.Requests, got.SLO, got.Good)
	}
	itl := 0
	for i, r := range res.Requests {
		if got.TTFT[i] != r.TTFT/1e6 || got.E2E[i] != r.E2E/1e6 {
			t.Fatalf("request %d: ttft %v e2e %v from %v %v", i, got.TTFT[i], got.E2E[i], r.TTFT, r.E2E)
		}
		itl += len(res.ITLs(&r))
	}
	if len(got.ITL) != itl {
		t.Fatalf("%d ITLs, want %d", len(got.ITL), itl)
	}
	if cap(got.ITL) != itl {
		t.Errorf("the ITLs' array holds %d, made for %d: not made to size from the overall summary", itl, cap(got.ITL))
	}
	all := make([][attribution.NumBuckets]int64, len(res.Requests))
	first := make([][attribution.NumBuckets]int64, len(res.Requests))
	res.EachToken(func(tb *attribution.TokenBreakdown) {
		for b, v := range tb.Buckets {
			all[tb.Request][b] += v
			if tb.Index == 0 {
				first[tb.Request][b] += v
			}
		}
	})
	checked := 0
	for b := attribution.Bucket(0); b < attribution.NumBuckets; b++ {
		series, ok := got.Tokens[b.String()]
		if !ok {
			for i := range all {
				if all[i][b] != 0 {
					t.Fatalf("bucket %s dropped though request %d has %d ns", b, i, all[i][b])
				}
			}
			continue
		}
		for i := range all {
			if math.Abs(series[i]-float64(all[i][b])/1e6) > 1e-9 || math.Abs(got.FirstToken[b.String()][i]-float64(first[i][b])/1e6) > 1e-9 {
				t.Fatalf("bucket %s request %d: %v / %v ms, streamed %d / %d ns", b, i, series[i], got.FirstToken[b.String()][i], all[i][b], first[i][b])
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no token bucket to check")
	}
}

// TestFromAttributionModels: the run's models are its requests' distinct
// models, sorted, however the requests interleave them (FromAttribution
// remembers the last few it added, and keeps them all in a map).
func TestFromAttributionModels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		models []string // the requests', in order
		want   []string
	}{
		{"one", []string{"a", "a", "a"}, []string{"a"}},
		{"two interleaved", []string{"b", "a", "b", "b", "a"}, []string{"a", "b"}},
		{"more than remembered", []string{"f", "e", "d", "c", "b", "a", "f", "a", "g", "e", "h", "a"}, []string{"a", "b", "c", "d", "e", "f", "g", "h"}},
		{"empty and unknown", []string{"", "x", ""}, []string{"", "x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &attribution.Result{}
			for i, m := range tc.models {
				res.AddRequest(attribution.Request{Arrival: int64(i), End: int64(i) + 10, InputTokens: -1, OutputTokens: -1}, attribution.Labels{Model: m})
			}
			if got := compare.FromAttribution(res).Models; !slices.Equal(got, tc.want) {
				t.Errorf("models %q, want %q", got, tc.want)
			}
		})
	}
}

// TestFromAttributionArrivals: arrivals are from the earliest request,
// whether the requests come in arrival order (Analyze's) or not.
func TestFromAttributionArrivals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		arrivals []int64
		want     []float64
	}{
		{"in order", []int64{3e6, 5e6, 9e6}, []float64{0, 2, 6}},
		{"an earlier one later", []int64{5e6, 3e6, 9e6}, []float64{2, 0, 6}},
		{"the earliest last", []int64{5e6, 9e6, 1e6}, []float64{4, 8, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := &attribution.Result{}
			for _, a := range tc.arrivals {
				res.AddRequest(attribution.Request{Arrival: a, End: a + 10, InputTokens: -1, OutputTokens: -1}, attribution.Labels{Model: "m"})
			}
			if got := compare.FromAttribution(res).ArrivalMS; !slices.Equal(got, compare.Series(tc.want)) {
				t.Errorf("arrivals %v ms, want %v", got, tc.want)
			}
		})
	}
}
