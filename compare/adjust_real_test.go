package compare_test

import (
	"testing"

	"github.com/llmprof/llmprof/compare"
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
