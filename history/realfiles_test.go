package history

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// TestVLLMBenchNightly: the four real `benchmark_serving.py` results of
// ../shared/testdata/vllm-bench/ (01 TP 8, then 02–04 TP 4 × PP 2, whose
// ITL p50 is about twice TP 8's), ordered by the date each carries, report
// one change at 02 for ITL and TTFT and none among 02–04 (03 and 04 are an
// A/A pair). With four runs the points are the requests (UnitRequest).
func TestVLLMBenchNightly(t *testing.T) {
	files := shareddata.Glob(t, "testdata/vllm-bench/surajssd-llm-k8s-0[1-4]_*qps_04.json")
	if len(files) != 4 {
		t.Fatalf("%d files, want 4", len(files))
	}
	// Named newest first: the dates put them back in order.
	rev := slices.Clone(files)
	slices.Reverse(rev)
	s, err := Load(context.Background(), rev, compare.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	order, err := s.Order(OrderAuto)
	if err != nil || order != OrderTime {
		t.Fatalf("order %q, %v; want time", order, err)
	}
	for i, r := range s.Runs {
		if r.Path != files[i] {
			t.Fatalf("run %d is %s, want %s", i+1, r.Path, files[i])
		}
	}
	o := DefaultOptions()
	o.Compare.Reps = 200
	res, err := Analyze(s, o)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range res.Metrics {
		seen[m.Name] = true
		var at []int
		for _, c := range m.Changes {
			at = append(at, c.Index)
		}
		t.Logf("%s (%s): values %v changes %v %s", m.Name, m.Points, m.Values, at, m.Note)
		switch m.Name {
		// TPOT and E2E are derived from ttfts and itls (the nightly files
		// carry no latencies): they double with ITL.
		case "itl.p50", "ttft.p50", "ttft.p90", "tpot.p50", "e2e.p50", "e2e.p90":
			if m.Points != UnitRequest || !slices.Equal(at, []int{1}) {
				t.Errorf("%s: changes at %v on %s points, want [1] (run 02) on requests", m.Name, at, m.Points)
				continue
			}
			c := m.Changes[0]
			if c.P > o.Detect.Alpha || !(c.After > 1.5*c.Before) {
				t.Errorf("%s: change p = %v, levels %v → %v", m.Name, c.P, c.Before, c.After)
			}
			if c.Comparison == nil || c.BaseRuns != 1 || c.CandRuns != 3 || math.IsNaN(c.Comparison.DeltaPct) {
				t.Errorf("%s: change not sized by compare: %+v (%s)", m.Name, c.Comparison, c.Note)
			}
		default:
			if len(at) != 0 {
				t.Errorf("%s: changes at %v", m.Name, at)
			}
		}
	}
	if !seen["itl.p50"] || !seen["ttft.p50"] {
		t.Errorf("metrics %v lack itl.p50 or ttft.p50", seen)
	}
}
