package compare_test

import (
	"math"
	"testing"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/compare/comparetest"
	"github.com/llmprof/llmprof/internal/orderstat"
)

// TestRunValueIsDiffsPerRunValue: with several runs per side diff reports
// each metric's value as the median of the per-run values; RunValue gives
// those per-run values, so their median is what diff shows.
func TestRunValueIsDiffsPerRunValue(t *testing.T) {
	var base, cand []compare.Run
	for i := range 3 {
		base = append(base, comparetest.Workload{Requests: 200, Seed: uint64(10 + i)}.Run())
		cand = append(cand, comparetest.Workload{Requests: 200, Seed: uint64(20 + i), AttentionFactor: 1.3}.Run())
	}
	o := compare.DefaultOptions()
	o.Reps = 50
	res, err := compare.Compare(compare.Side{Runs: base}, compare.Side{Runs: cand}, o)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, m := range res.Metrics {
		var vb, vc []float64
		for i := range base {
			b, okb := compare.RunValue(&base[i], m.Name)
			c, okc := compare.RunValue(&cand[i], m.Name)
			if okb {
				vb = append(vb, b)
			}
			if okc {
				vc = append(vc, c)
			}
		}
		if math.IsNaN(m.Baseline) {
			continue
		}
		if len(vb) != 3 || len(vc) != 3 {
			t.Errorf("%s: RunValue has %d and %d runs, want 3", m.Name, len(vb), len(vc))
			continue
		}
		for _, pair := range [][2]float64{{orderstat.Median(vb), m.Baseline}, {orderstat.Median(vc), m.Candidate}} {
			if math.Abs(pair[0]-pair[1]) > 1e-9*math.Abs(pair[1]) {
				t.Errorf("%s: median of RunValue %v, diff shows %v", m.Name, pair[0], pair[1])
			}
		}
		checked++
	}
	if checked < 10 {
		t.Errorf("only %d metrics checked", checked)
	}
	if v := compare.RequestValues(&base[0], "itl.p50"); len(v) != 200 {
		t.Errorf("itl.p50 request values: %d, want one per request (200)", len(v))
	}
	if _, ok := compare.RunValue(&base[0], "tpot.shift"); ok {
		t.Error("a shift has no per-run value")
	}
}
