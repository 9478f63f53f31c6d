package compare_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/compare/comparetest"
)

// withPrompts gives run r prompt lengths drawn from seed: the same seed,
// the same workload.
func withPrompts(r compare.Run, seed int) compare.Run {
	r.InputTokens = make(compare.Series, r.Requests)
	for i := range r.InputTokens {
		r.InputTokens[i] = float64(64 + (i*7919+seed*104729)%2000)
	}
	return r
}

func compareWith(t *testing.T, b, c compare.Run, workload string, rules ...string) *compare.Result {
	t.Helper()
	o := fastOptions(rules...)
	o.Workload = workload
	res, err := compare.Compare(side("base", b), side("cand", c), o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestReplayedWorkloadIsPaired: a candidate in which every request of the
// baseline's workload is exactly 3% slower. Paired, the interval of the
// change is narrow around +3% and excludes 0; the same runs taken as
// independent draws cannot see past the requests' own spread.
func TestReplayedWorkloadIsPaired(t *testing.T) {
	b := withPrompts(comparetest.Workload{Requests: 400, Seed: 3}.Run(), 1)
	c := scaled(b, 3)
	paired := compareWith(t, b, c, compare.WorkloadAuto, "ttft.p50<+1%")
	if paired.Workload != compare.DesignReplayed || paired.Unit != "request (paired)" {
		t.Fatalf("workload %q, unit %q; want replayed, paired", paired.Workload, paired.Unit)
	}
	indep := compareWith(t, b, c, compare.WorkloadIndependent, "ttft.p50<+1%")
	if indep.Workload != compare.DesignAssumed {
		t.Errorf("--workload independent: %q", indep.Workload)
	}
	for _, name := range []string{"ttft.p50", "ttft.mean", "ttft.shift", "e2e.p50", "e2e.shift", "tpot.p90", "token.gpu.attention"} {
		p, u := metric(t, paired, name), metric(t, indep, name)
		if strings.Contains(p.Note, "between-run bound") {
			// Autocorrelated requests: the interval includes the
			// between-run bound, wider than pairing alone; it must still
			// hold the truth.
			if !(p.CILowPct < 3 && p.CIHighPct > 3) {
				t.Errorf("%s paired with the between-run bound: [%+.2f, %+.2f] misses +3%%", name, p.CILowPct, p.CIHighPct)
			}
			continue
		}
		if !(p.CILowPct > 0 && p.CILowPct < 3.01 && p.CIHighPct > 2.99) {
			t.Errorf("%s paired: %+.2f%% [%+.2f, %+.2f], want an interval above 0 holding +3%%", name, p.DeltaPct, p.CILowPct, p.CIHighPct)
		}
		if pw, uw := p.CIHighPct-p.CILowPct, u.CIHighPct-u.CILowPct; !(pw < uw/4) {
			t.Errorf("%s: paired interval %.2f points wide, independent %.2f: pairing should remove the requests' own spread", name, pw, uw)
		}
	}
	if m := metric(t, paired, "ttft.shift"); m.Method != compare.MethodPairedHodgesLehmann {
		t.Errorf("paired ttft.shift: method %s, want %s", m.Method, compare.MethodPairedHodgesLehmann)
	}
	// Absolute thresholds are the ratio they make at the baseline median
	// (3% of it is well above 0.1 ms and well below 100 ms).
	for rule, want := range map[string]compare.Verdict{"ttft.shift<+0.1ms": compare.Fail, "ttft.shift<+100ms": compare.Pass} {
		res := compareWith(t, b, c, compare.WorkloadAuto, rule)
		if g := metric(t, res, "ttft.shift").Gate; g.Verdict != want {
			t.Errorf("paired %s: %s (%s), want %s", rule, g.Verdict, g.Reason, want)
		}
	}
	if g := metric(t, paired, "ttft.p50").Gate; g.Verdict != compare.Fail {
		t.Errorf("paired ttft.p50<+1%%: %s (%s), want fail", g.Verdict, g.Reason)
	}
}

// TestDifferentWorkloadsDecideLargeChanges: with one run per side of
// different workloads, latency statistics are decided with the between-run
// bound for different workloads (compare/between.go): a 50% slowdown fails
// tpot.p50<+5%, a 2% one stays inconclusive (never a pass: the bound is wider
// than the threshold), and the other metrics say what would decide.
func TestDifferentWorkloadsDecideLargeChanges(t *testing.T) {
	b := withPrompts(comparetest.Workload{Requests: 400, Seed: 3}.Run(), 1)
	c := scaled(withPrompts(comparetest.Workload{Requests: 400, Seed: 4}.Run(), 2), 50)
	res := compareWith(t, b, c, compare.WorkloadAuto, "tpot.p50<+5%")
	if res.Workload != compare.DesignDifferent {
		t.Fatalf("workload %q, want different", res.Workload)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "different workloads") {
		t.Errorf("warnings %q do not say the workloads differ", res.Warnings)
	}
	for _, m := range res.Metrics {
		if m.Method == compare.MethodNone {
			continue
		}
		_, bounded := compare.BetweenRunBound(m.Name, false)
		bounded = bounded || m.Method == compare.MethodAdjusted // its own bound, compare.AdjustedBound
		switch {
		case bounded && (m.CannotDecide != "" || !strings.Contains(m.Note, "between-run bound")):
			t.Errorf("%s: not decided with the bound (%q, note %q)", m.Name, m.CannotDecide, m.Note)
		case !bounded && !strings.Contains(m.CannotDecide, "different workloads"):
			t.Errorf("%s decided without a bound (%q)", m.Name, m.CannotDecide)
		}
	}
	if g := metric(t, res, "tpot.p50").Gate; g.Verdict != compare.Fail || !res.Gate.Failed {
		t.Errorf("+50%%, tpot.p50<+5%%: %s (%s), gate failed %v; want fail", g.Verdict, g.Reason, res.Gate.Failed)
	}
	small := scaled(withPrompts(comparetest.Workload{Requests: 400, Seed: 4}.Run(), 2), 2)
	if g := metric(t, compareWith(t, b, small, compare.WorkloadAuto, "tpot.p50<+5%"), "tpot.p50").Gate; g.Verdict != compare.Inconclusive {
		t.Errorf("+2%%, tpot.p50<+5%%: %s (%s); want inconclusive", g.Verdict, g.Reason)
	}
	// A different request count is a different workload too.
	short := withPrompts(comparetest.Workload{Requests: 380, Seed: 3}.Run(), 1)
	if res := compareWith(t, b, short, compare.WorkloadAuto); res.Workload != compare.DesignDifferent {
		t.Errorf("400 against 380 requests: workload %q", res.Workload)
	}
	// --workload independent decides from within-run variation.
	if res := compareWith(t, b, c, compare.WorkloadIndependent, "tpot.p50<+5%"); metric(t, res, "tpot.p50").Gate.Verdict != compare.Fail {
		t.Errorf("--workload independent, +50%%: tpot.p50 %s", metric(t, res, "tpot.p50").Gate.Verdict)
	}
}

// TestWorkloadUnknownAndForced: without prompt lengths diff cannot tell
// and says so; --workload paired needs one request for each; a few
// requests out of order still count as a replay.
func TestWorkloadUnknownAndForced(t *testing.T) {
	b := comparetest.Workload{Requests: 300, Seed: 5}.Run()
	c := comparetest.Workload{Requests: 300, Seed: 6}.Run()
	res := compareWith(t, b, c, compare.WorkloadAuto)
	if res.Workload != compare.DesignUnknown || !strings.Contains(strings.Join(res.Warnings, "\n"), "cannot tell whether both runs replayed one workload") {
		t.Errorf("no prompt lengths: workload %q, warnings %q", res.Workload, res.Warnings)
	}
	o := fastOptions()
	o.Workload = compare.WorkloadPaired
	short := comparetest.Workload{Requests: 299, Seed: 6}.Run()
	if _, err := compare.Compare(side("base", b), side("cand", short), o); err == nil || !strings.Contains(err.Error(), "300 requests, candidate 299") {
		t.Errorf("--workload paired with 300 and 299 requests: %v", err)
	}
	o.Workload = "matched"
	if _, err := compare.Compare(side("base", b), side("cand", c), o); err == nil || !strings.Contains(err.Error(), `workload "matched"`) {
		t.Errorf("--workload matched: %v", err)
	}
	// Two neighbours swapped in every 20 requests: 90% agree.
	pb := withPrompts(b, 1)
	pc := withPrompts(c, 1)
	for i := 0; i+1 < len(pc.InputTokens); i += 20 {
		pc.InputTokens[i], pc.InputTokens[i+1] = pc.InputTokens[i+1], pc.InputTokens[i]
	}
	if res := compareWith(t, pb, pc, compare.WorkloadAuto); res.Workload != compare.DesignReplayed {
		t.Errorf("10%% of prompts swapped with a neighbour: workload %q, want replayed", res.Workload)
	}
	// The same prompts in another order (sent all at once): one workload,
	// unpaired, decided.
	rev := withPrompts(c, 1)
	slices.Reverse(rev.InputTokens)
	res = compareWith(t, pb, rev, compare.WorkloadAuto)
	if res.Workload != compare.DesignReordered || res.Unit != "request" || !strings.Contains(strings.Join(res.Warnings, "\n"), "same prompts in another order") {
		t.Errorf("prompts reversed: workload %q, unit %q, warnings %q", res.Workload, res.Unit, res.Warnings)
	}
	if m := metric(t, res, "ttft.p50"); strings.Contains(m.CannotDecide, "different workloads") {
		t.Errorf("prompts reversed: ttft.p50 %q", m.CannotDecide)
	}
}

// TestForcedPairingSaysHowLittleThePromptsAgree: --workload paired on
// two independent draws pairs them, and warns.
func TestForcedPairingSaysHowLittleThePromptsAgree(t *testing.T) {
	b := withPrompts(comparetest.Workload{Requests: 300, Seed: 5}.Run(), 1)
	c := withPrompts(comparetest.Workload{Requests: 300, Seed: 6}.Run(), 2)
	res := compareWith(t, b, c, compare.WorkloadPaired)
	if res.Workload != compare.DesignReplayed || !strings.Contains(strings.Join(res.Warnings, "\n"), "--workload paired: the prompt lengths agree at only") {
		t.Errorf("--workload paired on two draws: workload %q, warnings %q", res.Workload, res.Warnings)
	}
}
