package compare_test

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/llmprof/llmprof/compare"
	"gonum.org/v1/gonum/stat/distuv"
)

// TestAdjustedRealNightly is the adjusted request level on vLLM's nightly
// benchmark files (200 ShareGPT prompts with their input and output
// lengths, no arrival times, so no concurrency): TP8 against each TP4×PP2
// run fails the adjusted ITL and TTFT rules; the runs of one configuration
// (02, 03, 04) pass the adjusted ITL, TPOT and E2E rules and do not fail
// the TTFT one (its between-run bound, σ = 5.9%, keeps ±10% undecided).
func TestAdjustedRealNightly(t *testing.T) {
	r01, r02, r03, r04 := realRun(t, "01_tp8_pp1"), realRun(t, "02_tp4_pp2_no_IB"), realRun(t, "03_tp4_pp2_IB"), realRun(t, "04_tp4_pp2_IB")
	verdicts := func(res *compare.Result) map[string]compare.Verdict {
		out := map[string]compare.Verdict{}
		for _, m := range res.Metrics {
			if m.Gate != nil {
				out[m.Name] = m.Gate.Verdict
			}
		}
		return out
	}
	for _, c := range []compare.Run{r02, r03, r04} {
		res := gateOn(t, r01, c, "itl.adj<+10%", "ttft.adj<+10%")
		if v := verdicts(res); v["itl.adj"] != compare.Fail || v["ttft.adj"] != compare.Fail {
			logGate(t, res)
			t.Errorf("TP8 vs %s: %v, want itl.adj and ttft.adj failed", c.RunID, v)
		}
	}
	for _, p := range [][2]compare.Run{{r04, r03}, {r03, r04}, {r02, r03}, {r02, r04}} {
		res := gateOn(t, p[0], p[1], "itl.adj<+10%", "tpot.adj<+10%", "e2e.adj<+10%", "ttft.adj<+10%")
		v := verdicts(res)
		if v["itl.adj"] != compare.Pass || v["tpot.adj"] != compare.Pass || v["e2e.adj"] != compare.Pass || v["ttft.adj"] == compare.Fail {
			logGate(t, res)
			t.Errorf("%s vs %s, one configuration: %v, want itl.adj, tpot.adj, e2e.adj passed and ttft.adj not failed", p[0].RunID, p[1].RunID, v)
		}
	}
}

// TestAdjustedBoundCalibration calibrates the between-run bound of the
// adjusted metrics for different workloads (compare.AdjustedBound): pairs
// of unchanged simulator runs of different workload seeds (3000+i against
// 3500+i, independent of the validation's seeds), each pair's adjusted log
// change d, and the 95% upper confidence bound √(Σd²/(2k))·√(k/χ²_{0.05,k})
// on the σ of one run's adjusted log value, as TestBetweenRunBoundCalibration
// does for the raw statistics. The table must cover it (at the long run's
// sample size, which set it) and no pair may differ beyond 3.29·√2·σ.
// The plain suite runs 2 pairs, .ci/run's plain form (LLMPROF_CI_HEAVY) 4,
// LLMPROF_LONG 30. The 2 pairs hold the largest TTFT change of the 4
// (117.9%): AdjustedBound at half its value fails them (beyond 97.7%).
func TestAdjustedBoundCalibration(t *testing.T) {
	k := 2
	if os.Getenv("LLMPROF_CI_HEAVY") != "" {
		k = 4
	}
	long := os.Getenv("LLMPROF_LONG") != ""
	if long {
		k = 30
	}
	var which []seedNoise
	for i := range k {
		which = append(which, seedNoise{int64(3000 + i), 0}, seedNoise{int64(3500 + i), 0})
	}
	runs := synthRuns(t, which, 3*time.Second, 1)
	opts := compare.DefaultOptions()
	opts.Reps = 20
	sum, worst := map[string]float64{}, map[string]float64{}
	n := map[string]int{}
	for i := 0; i < len(runs); i += 2 {
		res, err := compare.Compare(compare.Side{Label: "b", Runs: runs[i : i+1]}, compare.Side{Label: "c", Runs: runs[i+1 : i+2]}, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Metrics {
			if m.Method != compare.MethodAdjusted || m.CannotDecide != "" {
				continue
			}
			d := math.Log1p(m.DeltaPct / 100)
			sum[m.Name] += d * d
			worst[m.Name] = math.Max(worst[m.Name], math.Abs(d))
			n[m.Name]++
		}
	}
	for _, name := range compare.AdjustedMetrics {
		kk := float64(n[name])
		if kk == 0 {
			t.Errorf("%s: no pair decided it", name)
			continue
		}
		upper := math.Sqrt(sum[name]/(2*kk)) * math.Sqrt(kk/distuv.ChiSquared{K: kk}.Quantile(0.05))
		sigma := compare.AdjustedBound(name, false)
		t.Logf("%s: %d pairs of different workloads, largest |log change| %.1f%%, 95%% upper bound σ ≤ %.1f%%; table %.1f%%", name, n[name], 100*worst[name], 100*upper, 100*sigma)
		if worst[name] > 3.29*math.Sqrt2*sigma {
			t.Errorf("%s: a pair differs by %.1f%% (log), beyond 3.29·√2·σ = %.1f%%", name, 100*worst[name], 100*3.29*math.Sqrt2*sigma)
		}
		if long && upper > sigma*1.005 {
			t.Errorf("%s: the pairs give a 95%% upper bound σ ≤ %.1f%%, above the table's %.1f%%", name, 100*upper, 100*sigma)
		}
	}
}
