package compare_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/compare/comparetest"
)

func fastOptions(rules ...string) compare.Options {
	o := compare.DefaultOptions()
	o.Reps = 400
	for _, r := range rules {
		g, err := compare.ParseGate(r)
		if err != nil {
			panic(err)
		}
		o.Policy.Gates = append(o.Policy.Gates, g)
	}
	return o
}

func side(label string, runs ...compare.Run) compare.Side {
	return compare.Side{Label: label, Runs: runs}
}

var ciGates = []string{"ttft.p99<+10%", "tpot.p50<+5%", "e2e.p90<+10%", "itl.p50<+5%"}

// TestInjectedAttentionRegression: attention kernels 50% slower fail the
// gate, and every metric's explanation ranks gpu.attention first.
func TestInjectedAttentionRegression(t *testing.T) {
	b := comparetest.Workload{Requests: 600, Seed: 1}.Run()
	c := comparetest.Workload{Requests: 600, Seed: 2, AttentionFactor: 1.5}.Run()
	res, err := compare.Compare(side("base", b), side("cand", c), fastOptions(ciGates...))
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate.Verdict != compare.Fail || !res.Gate.Failed {
		t.Fatalf("gate %+v, want fail", res.Gate)
	}
	for _, name := range []string{"tpot.p50", "itl.p50"} {
		if g := metric(t, res, name).Gate; g.Verdict != compare.Fail {
			t.Errorf("%s: %s (%s), want fail", name, g.Verdict, g.Reason)
		}
	}
	for _, name := range []string{"ttft.p50", "ttft.p99", "tpot.p50", "tpot.p99", "itl.p50", "e2e.p50", "e2e.p90"} {
		m := metric(t, res, name)
		if len(m.Explanation) == 0 || m.Explanation[0].Bucket != "gpu.attention" || m.Explanation[0].DeltaMS <= 0 {
			t.Errorf("%s: explanation %v, want gpu.attention first and positive", name, m.Explanation)
		}
	}
	// The bucket metric itself: +50% per token, within its interval.
	if m := metric(t, res, "token.gpu.attention"); !(m.CILowPct < 50 && 50 < m.CIHighPct) || !m.Significant {
		t.Errorf("token.gpu.attention: %+.1f%% [%+.1f, %+.1f], want the interval to cover +50%%", m.DeltaPct, m.CILowPct, m.CIHighPct)
	}
}

// TestNoisyNeighbourExplained: another tenant steals 1.5 ms per token; the
// explanation names it first.
func TestNoisyNeighbourExplained(t *testing.T) {
	b := comparetest.Workload{Requests: 600, Seed: 1}.Run()
	c := comparetest.Workload{Requests: 600, Seed: 2, NeighbourMS: 1.5}.Run()
	res, err := compare.Compare(side("base", b), side("cand", c), fastOptions(ciGates...))
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate.Verdict != compare.Fail {
		t.Fatalf("gate %s, want fail", res.Gate.Verdict)
	}
	for _, name := range []string{"tpot.p50", "e2e.p50"} {
		m := metric(t, res, name)
		if len(m.Explanation) == 0 || m.Explanation[0].Bucket != "tenant:noisy" {
			t.Errorf("%s: explanation %v, want tenant:noisy first", name, m.Explanation)
		}
	}
	if m := metric(t, res, "tpot.p50"); math.Abs(m.Explanation[0].DeltaMS-1.5) > 0.05 {
		t.Errorf("tpot.p50: tenant:noisy %+.3f ms/token, injected 1.5", m.Explanation[0].DeltaMS)
	}
}

// TestRunAgainstItselfNeverPasses: the same samples on both sides prove
// nothing: a loud warning, and no rule passes (issue 18: the gate never
// passes what it could not judge).
func TestRunAgainstItselfNeverPasses(t *testing.T) {
	r := comparetest.Workload{Requests: 600, Seed: 1}.Run()
	res, err := compare.Compare(side("base", r), side("cand", r), fastOptions(ciGates...))
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate.Pass != 0 || res.Gate.Verdict == compare.Pass || len(res.Warnings) == 0 || !strings.Contains(strings.Join(res.Warnings, "\n"), "identical samples") {
		t.Fatalf("gate %+v, warnings %q: want no pass and a warning", res.Gate, res.Warnings)
	}
}

// TestUnchangedRunPasses: an unchanged workload, another seed, passes rules
// its 600 requests can decide (its queueing is autocorrelated, so tails
// need runs; p99 needs thousands for a ±10% rule anyway).
func TestUnchangedRunPasses(t *testing.T) {
	r := comparetest.Workload{Requests: 600, Seed: 1}.Run()
	r2 := comparetest.Workload{Requests: 600, Seed: 2}.Run()
	res, err := compare.Compare(side("base", r), side("cand", r2), fastOptions("ttft.p50<+10%", "tpot.p50<+5%", "e2e.p50<+15%", "itl.p50<+5%"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate.Verdict != compare.Pass || res.Gate.Failed {
		for _, m := range res.Metrics {
			if m.Gate != nil {
				t.Logf("%s: %s: %s", m.Name, m.Gate.Verdict, m.Gate.Reason)
			}
		}
		t.Fatalf("gate %+v, want pass", res.Gate)
	}
	for _, m := range res.Metrics {
		if m.Significant {
			t.Errorf("%s significant (p = %v) against itself", m.Name, m.P)
		}
	}
}

// TestDifferentSeedsSameWorkloadPass: an unchanged workload, measured twice.
func TestDifferentSeedsSameWorkloadPass(t *testing.T) {
	b := comparetest.Workload{Requests: 800, Seed: 11}.Run()
	c := comparetest.Workload{Requests: 800, Seed: 12}.Run()
	res, err := compare.Compare(side("base", b), side("cand", c), fastOptions("tpot.p50<+5%", "e2e.p50<+10%"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Gate.Verdict != compare.Pass {
		t.Errorf("gate %s, want pass", res.Gate.Verdict)
	}
}

func TestReproducible(t *testing.T) {
	b := comparetest.Workload{Requests: 300, Seed: 1}.Run()
	c := comparetest.Workload{Requests: 300, Seed: 2, QueueFactor: 2}.Run()
	run := func(seed uint64) []compare.Metric {
		o := fastOptions()
		o.Seed = seed
		res, err := compare.Compare(side("b", b), side("c", c), o)
		if err != nil {
			t.Fatal(err)
		}
		return res.Metrics
	}
	a1, a2, other := run(5), run(5), run(6)
	same := func(x, y []compare.Metric) bool {
		jx, _ := json.Marshal(fmtMetrics(x))
		jy, _ := json.Marshal(fmtMetrics(y))
		return string(jx) == string(jy)
	}
	if !same(a1, a2) {
		t.Error("same seed, different results")
	}
	if same(a1, other) {
		t.Error("different seeds, identical bootstrap results")
	}
}

// fmtMetrics makes metrics comparable with NaN (JSON cannot hold it).
func fmtMetrics(ms []compare.Metric) []string {
	var out []string
	for _, m := range ms {
		b, _ := json.Marshal(struct {
			N            string
			A, B, C, D   string
			Explanations int
		}{m.Name, ftoa(m.CILow), ftoa(m.CIHigh), ftoa(m.P), ftoa(m.MDE), len(m.Explanation)})
		out = append(out, string(b))
	}
	return out
}

func ftoa(v float64) string { return strings.TrimSpace(strings.Repeat(" ", 0) + jsonFloat(v)) }

func jsonFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "x"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestRatesNeedRunLevelReplication(t *testing.T) {
	one := func(seed uint64) compare.Run {
		return comparetest.Workload{Requests: 200, Seed: seed, RunID: "r"}.Run()
	}
	// One run per side: a rate has no interval; its rule is inconclusive
	// and says how many runs it needs.
	res, err := compare.Compare(side("b", one(1)), side("c", one(2)), fastOptions("throughput>-5%"))
	if err != nil {
		t.Fatal(err)
	}
	g := metric(t, res, "throughput").Gate
	if g.Verdict != compare.Inconclusive || g.NeededN != 4 || !strings.Contains(g.Reason, "runs per side") {
		t.Errorf("one run per side: %s, needed %d, %q", g.Verdict, g.NeededN, g.Reason)
	}
	// Six runs per side: run-level comparison with a finite interval.
	var bs, cs []compare.Run
	for i := range uint64(6) {
		bs = append(bs, one(10+i))
		cs = append(cs, one(20+i))
	}
	res, err = compare.Compare(side("b", bs...), side("c", cs...), fastOptions("throughput>-50%"))
	if err != nil {
		t.Fatal(err)
	}
	m := metric(t, res, "throughput")
	if res.Unit != "run" || m.Method != compare.MethodRunLevel || m.NBaseline != 6 || math.IsInf(m.CILowPct, 0) {
		t.Errorf("six runs: unit %s, method %s, n %d, CI [%v, %v]", res.Unit, m.Method, m.NBaseline, m.CILowPct, m.CIHighPct)
	}
	if m.Gate.Verdict != compare.Pass {
		t.Errorf("throughput > -50%%: %s (%s)", m.Gate.Verdict, m.Gate.Reason)
	}
}

// TestBadInput: problems never become a pass.
func TestBadInput(t *testing.T) {
	good := comparetest.Workload{Requests: 100, Seed: 1}.Run()
	other := comparetest.Workload{Requests: 100, Seed: 2, Model: "mistral-7b"}.Run()
	onlyTTFT := compare.Run{Requests: 3, TTFT: compare.Series{1, 2, 3}}
	onlyE2E := compare.Run{Requests: 3, E2E: compare.Series{1, 2, 3}}
	short := good
	short.TTFT = short.TTFT[:10]
	for _, tc := range []struct {
		name string
		b, c compare.Side
		opts compare.Options
		want string
		is   error
	}{
		{"different models", side("base.json", good), side("cand.json", other), fastOptions(), "different models", nil},
		{"no overlap", side("base.json", onlyTTFT), side("cand.json", onlyE2E), fastOptions(), "no metric in common", compare.ErrNoOverlap},
		{"empty side", side("base.json"), side("cand.json", good), fastOptions(), "base.json: no runs", nil},
		{"empty run", side("base.json", compare.Run{}), side("cand.json", good), fastOptions(), "empty run", nil},
		{"inconsistent run", side("base.json", good), side("cand.json", short), fastOptions(), "cand.json: run 1: ttft_ms has 10 values for 100 requests", nil},
		{"duplicate gate", side("b", good), side("c", good), fastOptions("ttft.p50<+5%", "ttft.p50<+2ms"), "gated twice", nil},
		{"bad alpha", side("b", good), side("c", good), func() compare.Options { o := fastOptions(); o.Alpha = 0.7; return o }(), "alpha", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := compare.Compare(tc.b, tc.c, tc.opts)
			if err == nil {
				t.Fatalf("no error; gate %v", res.Gate.Verdict)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to mention %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
		})
	}
	// Allowed explicitly, a model change compares with a warning.
	o := fastOptions()
	o.AllowModelChange = true
	res, err := compare.Compare(side("b", good), side("c", other), o)
	if err != nil || len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "models differ") {
		t.Errorf("allowed model change: err %v, warnings %v", err, res.Warnings)
	}
}

// TestGateOnMissingMetric: a rule whose metric one side lacks fails the
// gate with the reason; under AllowMissing it is inconclusive, never a pass,
// and fails the gate under FailOnInconclusive.
func TestGateOnMissingMetric(t *testing.T) {
	b := comparetest.Workload{Requests: 200, Seed: 1}.Run()
	c := comparetest.Workload{Requests: 200, Seed: 2}.Run()
	b.Queue = nil
	o := fastOptions("queue.p50<+5%", "tenant.ghost<+1ms")
	res, err := compare.Compare(side("b", b), side("c", c), o)
	if err != nil {
		t.Fatal(err)
	}
	if q := metric(t, res, "queue.p50").Gate; q.Verdict != compare.Fail || !strings.Contains(q.Reason, "--allow-missing") || !res.Gate.Failed {
		t.Errorf("queue.p50 without baseline data: %s %q, gate failed %v; want fail", q.Verdict, q.Reason, res.Gate.Failed)
	}
	o.Policy.AllowMissing = true
	res, _ = compare.Compare(side("b", b), side("c", c), o)
	q := metric(t, res, "queue.p50").Gate
	if q.Verdict != compare.Inconclusive || !strings.Contains(q.Reason, "baseline b has no queue values") {
		t.Errorf("queue.p50: %s %q", q.Verdict, q.Reason)
	}
	if g := metric(t, res, "tenant.ghost").Gate; g.Verdict != compare.Inconclusive {
		t.Errorf("tenant.ghost: %s %q", g.Verdict, g.Reason)
	}
	if res.Gate.Verdict != compare.Inconclusive || res.Gate.Failed {
		t.Errorf("gate %+v: want inconclusive, not failed", res.Gate)
	}
	o.Policy.FailOnInconclusive = true
	res, _ = compare.Compare(side("b", b), side("c", c), o)
	if !res.Gate.Failed {
		t.Error("FailOnInconclusive: gate did not fail")
	}
}

// TestHolmCorrection: with many rules a borderline failure is held back;
// alone it fails.
func TestHolmCorrection(t *testing.T) {
	b := comparetest.Workload{Requests: 400, Seed: 1}.Run()
	c := comparetest.Workload{Requests: 400, Seed: 2, AttentionFactor: 1.5}.Run()
	// Find a threshold just below the tpot.shift interval's lower bound, so
	// the rule fails alone at α/2 but not at α/2/m.
	probe, err := compare.Compare(side("b", b), side("c", c), fastOptions("tpot.shift<+0%"))
	if err != nil {
		t.Fatal(err)
	}
	low := metric(t, probe, "tpot.shift").CILowPct
	rule := "tpot.shift<+" + strings.TrimRight(strings.TrimRight(strconvF(low-0.05), "0"), ".") + "%"
	alone, _ := compare.Compare(side("b", b), side("c", c), fastOptions(rule))
	if g := metric(t, alone, "tpot.shift").Gate; g.Verdict != compare.Fail {
		t.Fatalf("%s alone: %s (%s), want fail", rule, g.Verdict, g.Reason)
	}
	many, _ := compare.Compare(side("b", b), side("c", c), fastOptions(rule, "ttft.p50<+50%", "e2e.p50<+50%", "queue.p50<+50%", "itl.p50<+50%", "ttft.mean<+50%"))
	g := metric(t, many, "tpot.shift").Gate
	if g.Verdict != compare.Inconclusive || !strings.Contains(g.Reason, "Holm") {
		t.Errorf("%s among 6 rules: %s (%s), want inconclusive after Holm", rule, g.Verdict, g.Reason)
	}
	if g.HolmLevel >= 0.025 {
		t.Errorf("Holm level %v, want below α/2", g.HolmLevel)
	}
}

func strconvF(v float64) string {
	b, _ := json.Marshal(math.Round(v*100) / 100)
	return string(b)
}

func TestRunJSONRoundTrip(t *testing.T) {
	r := comparetest.Workload{Requests: 20, Seed: 1, RunID: "a"}.Run()
	r.TTFT[3] = math.NaN()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"schema":"llmprof.samples/v1"`) {
		t.Errorf("JSON does not start with the schema: %.60s", b)
	}
	if !strings.Contains(string(b), ",null,") {
		t.Error("NaN not written as null")
	}
	var back compare.Run
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(back.TTFT[3]) || back.TTFT[4] != r.TTFT[4] || back.RunID != "a" || len(back.Tokens) != len(r.Tokens) || back.Tenants == nil {
		t.Errorf("round trip lost data: %+v", back.TTFT[:5])
	}
	for _, tc := range []struct{ name, in, want string }{
		{"other schema", `{"schema":"llmprof.samples/v2","requests":1}`, `schema "llmprof.samples/v2" is not supported`},
		{"bad element", `{"requests":1,"ttft_ms":[1,"x"]}`, "not a number or null"},
		{"NaN literal", `{"requests":1,"ttft_ms":[NaN]}`, "invalid character"},
		{"Inf literal", `{"requests":1,"ttft_ms":[1,Inf]}`, "invalid character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r compare.Run
			err := json.Unmarshal([]byte(tc.in), &r)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzSeriesJSON: the hand-written array scanner never panics and agrees
// with encoding/json on what it accepts.
func FuzzSeriesJSON(f *testing.F) {
	for _, s := range []string{`[1,2,3]`, `[null, 1.5e3 ,-2]`, `[]`, `null`, `[1,]`, `[,]`, `[1e400]`, `["1"]`, `[01]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var s compare.Series
		err := json.Unmarshal([]byte(in), &s)
		var ref []*float64
		refErr := json.Unmarshal([]byte(in), &ref)
		if err == nil && refErr != nil {
			t.Errorf("%q: accepted, encoding/json says %v", in, refErr)
		}
		if err == nil && len(s) != len(ref) {
			t.Errorf("%q: %d values, encoding/json %d", in, len(s), len(ref))
		}
	})
}

// BenchmarkCompare is a full comparison of two 2000-request runs with token
// buckets (about 220k ITL gaps per side) at the default 2000 replicates.
func BenchmarkCompare(b *testing.B) {
	base := comparetest.Workload{Requests: 2000, Seed: 1}.Run()
	cand := comparetest.Workload{Requests: 2000, Seed: 2, AttentionFactor: 1.2}.Run()
	opts := fastOptions("ttft.p99<+10%", "tpot.p50<+5%", "itl.p99<+10%")
	opts.Reps = compare.DefaultOptions().Reps
	b.ReportAllocs()
	for b.Loop() {
		if _, err := compare.Compare(side("b", base), side("c", cand), opts); err != nil {
			b.Fatal(err)
		}
	}
}
