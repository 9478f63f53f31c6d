package compare_test

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// synthRun simulates a serving run (synth.DefaultConfig: three tenants on
// two models, continuous batching, preemptions) and takes it through the
// real pipeline — OTLP bytes, the OTLP decoder, the GPU side as nsys would
// record it, attribution — to the samples diff compares. seed draws the
// workload (prompts, arrivals), noise the system's randomness (kernel
// jitter, CPU stalls): one seed with two noises is one benchmark run twice.
// gemm scales the GEMM kernels (1: unchanged).
func synthRun(tb testing.TB, seed, noise int64, d time.Duration, gemm float64) compare.Run {
	tb.Helper()
	cfg := synth.DefaultConfig(seed, d)
	cfg.NoiseSeed = noise
	if gemm != 1 {
		for i := range cfg.Models {
			cfg.Models[i].CategorySpeed = map[ingest.KernelCategory]float64{ingest.CategoryGEMM: gemm}
		}
	}
	run, err := synth.Generate(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	res := attribution.Analyze(synthtrace.WithGPU(tb, run, true), attribution.DefaultOptions)
	r := compare.FromAttribution(res)
	r.RunID = fmt.Sprintf("seed %d noise %d", seed, noise)
	return r
}

// issueGates are the rules of issue 14: what a team would write.
var issueGates = []string{"tpot.p50<+2%", "tpot.p90<+3%", "itl.p90<+3%", "ttft.p90<+5%"}

// seedNoise names one simulated run: its workload seed and noise seed.
type seedNoise struct{ seed, noise int64 }

// synthRuns simulates runs in parallel (two at a time).
func synthRuns(tb testing.TB, which []seedNoise, d time.Duration, gemm float64) []compare.Run {
	out := make([]compare.Run, len(which))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, w := range which {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = synthRun(tb, w.seed, w.noise, d, gemm)
		}()
	}
	wg.Wait()
	return out
}

// sharedSynthRuns is synthRuns for runs that more than one test simulates
// (TestSynthIssueGates and the plain TestSynthTailRulesDecide use the same
// seeds): each is simulated once per test binary and kept, shared. A Run's
// series are only read by compare. Keep the set small: every run stays in
// memory until the binary exits.
func sharedSynthRuns(tb testing.TB, which []seedNoise, d time.Duration, gemm float64) []compare.Run {
	tb.Helper()
	out := make([]compare.Run, len(which))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, w := range which {
		f, _ := synthCache.LoadOrStore(synthKey{w, d, gemm}, sync.OnceValue(func() compare.Run {
			return synthRun(tb, w.seed, w.noise, d, gemm)
		}))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = f.(func() compare.Run)()
		}()
	}
	wg.Wait()
	return out
}

type synthKey struct {
	which seedNoise
	d     time.Duration
	gemm  float64
}

// synthCache holds the shared runs, each a func that simulates it once.
var synthCache sync.Map

// scaled returns a copy of r whose latencies and bucket times are all
// (1+pct/100)× longer: a true change of exactly pct% in every statistic.
func scaled(r compare.Run, pct float64) compare.Run {
	f := 1 + pct/100
	mul := func(s compare.Series) compare.Series {
		if s == nil {
			return nil
		}
		out := make(compare.Series, len(s))
		for i, v := range s {
			out[i] = v * f
		}
		return out
	}
	mulMap := func(m map[string]compare.Series) map[string]compare.Series {
		if m == nil {
			return nil
		}
		out := map[string]compare.Series{}
		for k, v := range m {
			out[k] = mul(v)
		}
		return out
	}
	r.TTFT, r.TPOT, r.E2E, r.Queue, r.ITL = mul(r.TTFT), mul(r.TPOT), mul(r.E2E), mul(r.Queue), mul(r.ITL)
	r.Stages, r.Tokens, r.FirstToken, r.Tenants = mulMap(r.Stages), mulMap(r.Tokens), mulMap(r.FirstToken), mulMap(r.Tenants)
	r.RunID += fmt.Sprintf(" +%g%%", pct)
	return r
}

// calibrate simulates pairs of unchanged runs — one workload replayed (a
// seed, two noises), one run per side — and counts, per metric, how often a
// rule at the strictest threshold (+0% or −0%) would fail: a decided
// interval that excludes 0. Every metric's rate must stay within α plus
// twice its Monte Carlo error, and so must the issue's gates. With power it
// also counts, on the first powerPairs pairs and for true changes of +5,
// +10 and +20%, how often the rule "< +0%" fails (the power table of
// docs/diff.md). Runs of different workloads (pair i's baseline against
// pair i+1's candidate), decided with the different-workload between-run
// bound (compare/between.go), must not exclude 0 nor fail the gates more
// often than α plus Monte Carlo error either.
func calibrate(t *testing.T, pairs int, d time.Duration, reps int, powerPairs int) {
	var which []seedNoise
	for i := range pairs {
		which = append(which, seedNoise{int64(5000 + i), 1}, seedNoise{int64(5000 + i), 2})
	}
	runs := synthRuns(t, which, d, 1)
	alpha := compare.DefaultOptions().Alpha
	falseFails := map[string]int{}
	decided := map[string]int{}
	detected := map[float64]map[string]int{5: {}, 10: {}, 20: {}}
	gateFails, differentDecided, differentPairs, differentGateFails := 0, 0, 0, 0
	differentFails := map[string]int{}
	for i := range pairs {
		b, c := runs[2*i], runs[2*i+1]
		res := compareSynth(t, b, c, reps, uint64(i+1), issueGates...)
		if res.Workload != compare.DesignReplayed {
			t.Fatalf("%s vs %s: workload %q, want %q (one seed replayed)", b.RunID, c.RunID, res.Workload, compare.DesignReplayed)
		}
		if res.Gate.Failed {
			gateFails++
		}
		for _, m := range res.Metrics {
			if m.CannotDecide != "" {
				continue
			}
			decided[m.Name]++
			if m.CILowPct > 0 || m.CIHighPct < 0 {
				falseFails[m.Name]++
			}
		}
		if next := runs[(2*i+3)%len(runs)]; pairs > 1 {
			res := compareSynth(t, b, next, reps, uint64(i+1), issueGates...)
			if res.Workload != compare.DesignDifferent {
				t.Errorf("%s vs %s: workload %q, want %q", b.RunID, next.RunID, res.Workload, compare.DesignDifferent)
			}
			// Different workloads decide with the between-run bound
			// (compare/between.go): an unchanged configuration must not
			// fail a ±0 rule more often than α allows.
			differentPairs++
			if res.Gate.Fail > 0 {
				differentGateFails++
			}
			for _, m := range res.Metrics {
				if m.CannotDecide == "" && m.Method != compare.MethodNone {
					differentDecided++
					if m.CILowPct > 0 || m.CIHighPct < 0 {
						differentFails[m.Name]++
					}
				}
			}
		}
		if i >= powerPairs {
			continue
		}
		for pct, det := range detected {
			res := compareSynth(t, b, scaled(c, pct), reps, uint64(i+1))
			for _, m := range res.Metrics {
				if m.CannotDecide == "" && m.CILowPct > 0 {
					det[m.Name]++
				}
			}
		}
	}
	limit := mcBound(alpha, pairs)
	var names []string
	for k := range decided {
		names = append(names, k)
	}
	sort.Strings(names)
	var sb strings.Builder
	for _, k := range names {
		rate := float64(falseFails[k]) / float64(pairs)
		fmt.Fprintf(&sb, "\n  %-24s false fails %3d/%d (%4.1f%%), decided in %3d", k, falseFails[k], pairs, 100*rate, decided[k])
		if powerPairs > 0 {
			fmt.Fprintf(&sb, "; power (%d pairs) +5%% %3.0f%%, +10%% %3.0f%%, +20%% %3.0f%%", powerPairs,
				100*float64(detected[5][k])/float64(powerPairs), 100*float64(detected[10][k])/float64(powerPairs), 100*float64(detected[20][k])/float64(powerPairs))
		}
		if rate > limit {
			t.Errorf("%s: interval excluded 0 in %d of %d unchanged pairs (%.1f%%), want ≤ %.1f%% (α + 2 MC errors)", k, falseFails[k], pairs, 100*rate, 100*limit)
		}
	}
	if differentPairs > 0 && float64(differentGateFails)/float64(differentPairs) > mcBound(alpha, differentPairs) {
		t.Errorf("different workloads: the gates %v failed in %d of %d unchanged pairs", issueGates, differentGateFails, differentPairs)
	}
	for k, n := range differentFails {
		if rate := float64(n) / float64(differentPairs); rate > mcBound(alpha, differentPairs) {
			t.Errorf("different workloads: %s's interval excluded 0 in %d of %d unchanged pairs", k, n, differentPairs)
		}
	}
	t.Logf("%d pairs of %v runs (one workload replayed); the issue's gates failed in %d; different workloads (%d pairs): the gates failed in %d, %d metrics decided, excluded 0 in %v; per metric:%s", pairs, d, gateFails, differentPairs, differentGateFails, differentDecided, differentFails, sb.String())
	if float64(gateFails)/float64(pairs) > limit {
		t.Errorf("the gates %v failed in %d of %d unchanged pairs", issueGates, gateFails, pairs)
	}
}

// TestSynthCalibrationQuick is the small version of the calibration,
// behind LLMPROF_LONG since issue 32's cut of the plain suite (2.4 s of
// CPU): its four replayed pairs are TestSynthCalibration's first four. A
// plain go test still checks what it sweeps on fewer pairs: unchanged
// replayed runs pass the issue's gates (TestSynthIssueGates) and fail no
// quantile rule at +0% (TestSynthTailRulesDecide), different workloads
// fail no step, adjusted or kernel rule (TestStepCostDifferentWorkloads,
// TestKernelRulesDifferentWorkloads), and the between-run bound covers
// the A/A spread of the real and simulated runs
// (TestBetweenRunBoundCalibration). compare.BetweenRunBound at a quarter of
// its value passes these four pairs; it fails TestBetweenRunBoundCalibration
// and TestBenchDifferentDrawsGate.
func TestSynthCalibrationQuick(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("a Monte Carlo calibration (4 seed pairs; TestSynthCalibration's first 4); set LLMPROF_LONG=1 to run it")
	}
	calibrate(t, 4, 8*time.Second, 300, 0)
}

// TestSynthCalibration: ≥ 200 seed pairs of an unchanged configuration;
// behind LLMPROF_LONG (.ci/run sets it). Its log is the table in docs/diff.md.
func TestSynthCalibration(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("a long Monte Carlo (200 seed pairs); set LLMPROF_LONG=1 to run it")
	}
	pairs, d := 200, 8*time.Second
	if v, err := strconv.Atoi(os.Getenv("LLMPROF_CALIBRATION_PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	// LLMPROF_CALIBRATION_SECONDS sets the runs' length (docs/diff.md's
	// table for 60 s runs).
	if v, err := strconv.Atoi(os.Getenv("LLMPROF_CALIBRATION_SECONDS")); err == nil && v > 0 {
		d = time.Duration(v) * time.Second
	}
	calibrate(t, pairs, d, 300, min(pairs, 50))
}

// compareSynth compares two simulated runs under rules.
func compareSynth(tb testing.TB, b, c compare.Run, reps int, seed uint64, rules ...string) *compare.Result {
	tb.Helper()
	opts := compare.DefaultOptions()
	opts.Reps, opts.Seed = reps, seed
	for _, s := range rules {
		g, err := compare.ParseGate(s)
		if err != nil {
			tb.Fatal(err)
		}
		opts.Policy.Gates = append(opts.Policy.Gates, g)
	}
	res, err := compare.Compare(compare.Side{Label: "base", Runs: []compare.Run{b}}, compare.Side{Label: "cand", Runs: []compare.Run{c}}, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// issueGateRuns are TestSynthIssueGates's 20 s runs: two workloads, each
// replayed with two noise seeds. The plain forms of TestSynthTailRulesDecide,
// TestBetweenRunBoundCalibration and TestPairedTailBoundCalibration share
// them (sharedSynthRuns).
var issueGateRuns = []seedNoise{{9000, 1}, {9000, 2}, {9001, 1}, {9001, 2}}

// TestSynthIssueGates is the "done when" of issue 14 on the simulator:
// unchanged runs (one workload replayed, other noise) do not fail the rules
// a team would write, and the same workload on GEMM kernels 30% slower
// still fails tpot.p50<+5% with gpu.gemm ranked first in the explanation.
func TestSynthIssueGates(t *testing.T) {
	const d = 20 * time.Second
	runs := sharedSynthRuns(t, issueGateRuns, d, 1)
	for i := 0; i+1 < len(runs); i += 2 {
		res := compareSynth(t, runs[i], runs[i+1], 300, 1, issueGates...)
		if res.Gate.Failed {
			for _, m := range res.Metrics {
				if m.Gate != nil {
					t.Logf("%s: %s: %s", m.Gate.Rule, m.Gate.Verdict, m.Gate.Reason)
				}
			}
			t.Errorf("%s vs %s, unchanged: the gate failed", runs[i].RunID, runs[i+1].RunID)
		}
	}
	// The same workload (prompts, arrivals: a benchmark replayed with its
	// seed) on GEMM kernels 30% slower.
	slow := sharedSynthRuns(t, []seedNoise{{9000, 2}}, d, 1.3)[0]
	res := compareSynth(t, runs[0], slow, 300, 1, "tpot.p50<+5%")
	var m compare.Metric
	for _, x := range res.Metrics {
		if x.Name == "tpot.p50" {
			m = x
		}
	}
	if m.Gate == nil || m.Gate.Verdict != compare.Fail || !res.Gate.Failed {
		t.Fatalf("GEMM 30%% slower: tpot.p50 %+.1f%% [%+.1f%%, %+.1f%%]: %v", m.DeltaPct, m.CILowPct, m.CIHighPct, m.Gate)
	}
	if len(m.Explanation) == 0 || m.Explanation[0].Bucket != "gpu.gemm" || m.Mixed {
		t.Errorf("GEMM 30%% slower: explanation %v (mixed %v), want gpu.gemm first", m.Explanation, m.Mixed)
	}
	t.Logf("GEMM 30%% slower: tpot.p50 %s → %s (%+.1f%%, %s)", strconv.FormatFloat(m.Baseline, 'f', 2, 64), strconv.FormatFloat(m.Candidate, 'f', 2, 64), m.DeltaPct, m.Gate.Reason)
}

// TestSynthTailRulesDecide is issue 29's tail case on the simulator: one
// workload replayed, one run per side, tails decided from the paired block
// bootstrap widened by the paired bound (compare.PairedTailBound). The
// workload seeds (9000+) are not those the bound was calibrated on
// (7000+). With GEMM kernels 30% slower the gate itl.p90<+10%,
// ttft.p99<+10% must fail each rule in ≥ 90% of pairs; on unchanged replays
// each quantile rule at +0% (ttft, tpot, itl, e2e; p50, p90, p99) may fail
// no more often than α/2 plus twice its Monte Carlo error, and the gate of
// all twelve (Holm) no more than α/2 plus that either. A rule's own fail
// is its p ≤ α/2, the level it would have alone. LLMPROF_LONG runs 30
// pairs of 40 s runs (docs/diff.md's table), the plain suite 1 of 20 s
// (2 with LLMPROF_CI_HEAVY, as .ci/run runs it), where every GEMM rule must
// fail and the unchanged twelve-rule gate may not. At 20 s
// (LLMPROF_TAIL_SECONDS=20) the long run falls short for itl.p90: 23 of 30,
// the misses moving +13–14%, likely regressions not gated (docs/diff.md).
// The plain pair is TestSynthIssueGates's runs, no simulation of its own;
// it fails with the paired bound at 0 (the unchanged gate fails) and with
// the tails decided as before the paired path (compare/between.go,
// pairedTail: neither GEMM rule fails).
func TestSynthTailRulesDecide(t *testing.T) {
	pairs := 1
	if os.Getenv("LLMPROF_CI_HEAVY") != "" {
		pairs = 2
	}
	long := os.Getenv("LLMPROF_LONG") != ""
	if long {
		pairs = 30
	}
	if v, err := strconv.Atoi(os.Getenv("LLMPROF_TAIL_PAIRS")); err == nil && v > 0 {
		pairs = v
	}
	d := 20 * time.Second
	if long {
		d = 40 * time.Second
	}
	// LLMPROF_TAIL_SECONDS sets the runs' length (docs/diff.md's 20 s rows).
	if v, err := strconv.Atoi(os.Getenv("LLMPROF_TAIL_SECONDS")); err == nil && v > 0 {
		d = time.Duration(v) * time.Second
	}
	var which []seedNoise
	for i := range pairs {
		which = append(which, seedNoise{int64(9000 + i), 1}, seedNoise{int64(9000 + i), 2})
	}
	var slowWhich []seedNoise
	for i := range pairs {
		slowWhich = append(slowWhich, seedNoise{int64(9000 + i), 2})
	}
	simulate := synthRuns
	if !long {
		// The plain form's runs are TestSynthIssueGates's.
		simulate = sharedSynthRuns
	}
	runs, slow := simulate(t, which, d, 1), simulate(t, slowWhich, d, 1.3)
	var quantileRules []string
	for _, f := range []string{"ttft", "tpot", "itl", "e2e"} {
		for _, q := range []string{"p50", "p90", "p99"} {
			quantileRules = append(quantileRules, f+"."+q+"<+0%")
		}
	}
	tailRules := []string{"itl.p90<+10%", "ttft.p99<+10%"}
	alpha := compare.DefaultOptions().Alpha
	tailFails := map[string]int{}
	nullFails := map[string]int{}
	gateFails, nullGateFails := 0, 0
	for i := range pairs {
		b, c := runs[2*i], runs[2*i+1]
		res := compareSynth(t, b, slow[i], 300, uint64(i+1), tailRules...)
		if res.Workload != compare.DesignReplayed {
			t.Fatalf("%s vs %s: workload %q, want %q", b.RunID, slow[i].RunID, res.Workload, compare.DesignReplayed)
		}
		if res.Gate.Failed {
			gateFails++
		}
		for _, m := range res.Metrics {
			if m.Gate != nil {
				if m.Gate.Verdict == compare.Fail {
					tailFails[m.Name]++
				}
				t.Logf("GEMM ×1.3, pair %d: %s %s %+.1f%% [%+.1f%%, %+.1f%%]: %s", i, m.Gate.Rule, m.Gate.Verdict, m.DeltaPct, m.CILowPct, m.CIHighPct, m.Gate.Reason)
			}
		}
		res = compareSynth(t, b, c, 300, uint64(i+1), quantileRules...)
		if res.Gate.Failed {
			nullGateFails++
		}
		for _, m := range res.Metrics {
			if m.Gate != nil && m.Gate.PFail <= alpha/2 {
				nullFails[m.Name]++
				t.Logf("unchanged, pair %d: %s alone would fail: %+.1f%% [%+.1f%%, %+.1f%%], p = %.3g", i, m.Gate.Rule, m.DeltaPct, m.CILowPct, m.CIHighPct, m.Gate.PFail)
			}
		}
	}
	var sb strings.Builder
	for _, r := range quantileRules {
		name := strings.TrimSuffix(r, "<+0%")
		fmt.Fprintf(&sb, "\n  %-9s unchanged, fails alone %2d/%d", name, nullFails[name], pairs)
	}
	t.Logf("%d replayed pairs of %v: GEMM ×1.3 failed itl.p90<+10%% in %d, ttft.p99<+10%% in %d, the gate in %d; unchanged: the twelve-rule gate failed in %d; per rule:%s",
		pairs, d, tailFails["itl.p90"], tailFails["ttft.p99"], gateFails, nullGateFails, sb.String())
	limit := mcBound(alpha/2, pairs)
	for _, r := range tailRules {
		name := strings.Split(r, "<")[0]
		if long && float64(tailFails[name]) < 0.9*float64(pairs) {
			t.Errorf("GEMM ×1.3: %s failed in %d of %d pairs, want ≥ 90%%", r, tailFails[name], pairs)
		}
		if !long && tailFails[name] != pairs {
			t.Errorf("GEMM ×1.3: %s failed in %d of %d pairs, want all", r, tailFails[name], pairs)
		}
	}
	for name, n := range nullFails {
		if long && float64(n)/float64(pairs) > limit {
			t.Errorf("unchanged replays: %s<+0%% failed alone in %d of %d", name, n, pairs)
		}
	}
	if (long && float64(nullGateFails)/float64(pairs) > limit) || (!long && nullGateFails > 0) {
		t.Errorf("unchanged replays: the twelve-rule gate failed in %d of %d", nullGateFails, pairs)
	}
}
