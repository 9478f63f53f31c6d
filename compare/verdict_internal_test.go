package compare

import (
	"strings"
	"testing"
)

// TestHolmMessageArithmetic: two rules both past their thresholds, the
// smaller p (0.015) above Holm's first level (0.0125), the other (0.02)
// under its own level (0.025). Holm rejects neither, and the second's reason
// must not claim 0.02 > 0.025: it says where the step-down stopped.
func TestHolmMessageArithmetic(t *testing.T) {
	c := &comparison{opts: DefaultOptions(), res: &Result{}}
	for _, r := range []struct {
		name string
		p    float64
	}{{"tpot.p50", 0.015}, {"itl.p50", 0.02}} {
		g, err := ParseGate(r.name + "<+5%")
		if err != nil {
			t.Fatal(err)
		}
		c.opts.Policy.Gates = append(c.opts.Policy.Gates, g)
		m := Metric{Name: r.name, CILowPct: 6, CIHighPct: 20, DeltaPct: 12}
		c.res.Metrics = append(c.res.Metrics, m)
		p := r.p
		c.works = append(c.works, &work{spec: spec{name: r.name}, m: &c.res.Metrics[len(c.res.Metrics)-1], pFail: func(Gate) float64 { return p }})
	}
	c.applyGates()
	first, second := c.res.Metrics[0].Gate, c.res.Metrics[1].Gate
	if first.Verdict != Inconclusive || second.Verdict != Inconclusive {
		t.Fatalf("verdicts %s, %s; want both inconclusive under Holm", first.Verdict, second.Verdict)
	}
	if !strings.Contains(first.Reason, "p = 0.015 > 0.0125") {
		t.Errorf("first: %s", first.Reason)
	}
	if strings.Contains(second.Reason, "0.02 > 0.025") || !strings.Contains(second.Reason, "p = 0.02 ≤ 0.025, but Holm's step-down stopped at tpot.p50, p = 0.015 > 0.0125") {
		t.Errorf("second: %s", second.Reason)
	}
}

// TestEffectiveNMessageCannotContradict: an effective n of 19.6 against a
// floor of 20 printed "≈ 20 … under the 20"; it is floored.
func TestEffectiveNMessageCannotContradict(t *testing.T) {
	c := &comparison{opts: DefaultOptions(), res: &Result{},
		base: &pooled{runs: make([]Run, 2)}, cand: &pooled{runs: make([]Run, 2)}}
	s := spec{name: "ttft.p50", fam: latencyFamily("ttft"), stat: "p50", q: 0.5}
	w := &work{spec: s, m: &Metric{Name: s.name}, unitsOf: "samples"}
	dep := dependence{neff: map[string]metricNeff{s.name: {neff: 19.6, n: 1112}}}
	c.requireEffective(w, dep, dependence{})
	if !strings.Contains(w.short, "effective n ≈ 19 of 1112, under the 20") {
		t.Errorf("reason %q", w.short)
	}
}
