package compare_test

import (
	"fmt"
	"math"
	"os"
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

// stepCase is one candidate variant of the step-level validation.
type stepCase struct {
	name string
	slow map[ingest.KernelCategory]float64
	// load multiplies every tenant's arrival rate: bigger batches, the
	// same kernels.
	load float64
	// slowed: the step cost truly moved.
	slowed bool
}

var stepCases = []stepCase{
	{"unchanged", nil, 1, false},
	{"attention×1.6", map[ingest.KernelCategory]float64{ingest.CategoryAttention: 1.6}, 1, true},
	{"gemm×1.3", map[ingest.KernelCategory]float64{ingest.CategoryGEMM: 1.3}, 1, true},
	{"load×1.6 (bigger batches, same kernels)", nil, 1.6, false},
}

// stepRules are gated together in every pair, as a CI job would.
var stepRules = []string{"step.cost<+5%", "step.cost.decode<+5%", "step.cost.prefill<+5%",
	"ttft.adj<+10%", "tpot.adj<+5%", "itl.adj<+5%", "e2e.adj<+10%"}

// stepSynthRun simulates workload seed (synth.DefaultConfig) through the
// real pipeline to a Run with its steps.
func stepSynthRun(tb testing.TB, seed, noise int64, d time.Duration, sc stepCase) compare.Run {
	tb.Helper()
	cfg := synth.DefaultConfig(seed, d)
	cfg.NoiseSeed = noise
	if sc.slow != nil {
		cfg.Slow(sc.slow)
	}
	for i := range cfg.Tenants {
		cfg.Tenants[i].Rate *= sc.load
	}
	run, err := synth.Generate(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tr := synthtrace.WithGPU(tb, run, true)
	res := attribution.Analyze(tr, attribution.DefaultOptions)
	r := compare.FromAttribution(res)
	r.Kernels = compare.KernelsFromTrace(tr, res)
	r.RunID = fmt.Sprintf("seed %d noise %d %s", seed, noise, sc.name)
	return r
}

// sharedStepRun is stepSynthRun for the plain suite's runs, which
// TestStepCostDifferentWorkloads and TestKernelRulesDifferentWorkloads both
// take (workload seeds 7000+ and 9000+, 3 s, no noise seed): each is
// simulated once per test binary and kept. The long forms simulate their
// own, which would not fit in memory together.
func sharedStepRun(tb testing.TB, seed, noise int64, d time.Duration, sc stepCase) compare.Run {
	tb.Helper()
	f, _ := stepRunCache.LoadOrStore(stepRunKey(seed, noise, d, sc), sync.OnceValue(func() compare.Run {
		return stepSynthRun(tb, seed, noise, d, sc)
	}))
	return f.(func() compare.Run)()
}

// stepRunCache holds sharedStepRun's runs by key, each a func that
// simulates it once.
var stepRunCache sync.Map

// stepRunKey names a sharedStepRun run: what it simulates, not the case's
// label.
func stepRunKey(seed, noise int64, d time.Duration, sc stepCase) string {
	return fmt.Sprintf("%d %d %v %v load %g", seed, noise, d, sc.slow, sc.load)
}

// sharedKernelCompare compares two sharedStepRun runs, named by their
// stepRunKey, under the kernel rules (kernelRuleOptions), once per test
// binary: TestStepCostDifferentWorkloads and
// TestKernelRulesDifferentWorkloads gate the same pairs with the same
// options, and each takes the one result.
func sharedKernelCompare(tb testing.TB, baseKey, candKey string, base, cand compare.Run) *compare.Result {
	tb.Helper()
	f, _ := kernelCompareCache.LoadOrStore(baseKey+" | "+candKey, sync.OnceValues(func() (*compare.Result, error) {
		return compare.Compare(compare.Side{Label: "base", Runs: []compare.Run{base}},
			compare.Side{Label: "cand", Runs: []compare.Run{cand}}, kernelRuleOptions(tb))
	}))
	res, err := f.(func() (*compare.Result, error))()
	if err != nil {
		tb.Fatal(err)
	}
	return res
}

// kernelCompareCache holds sharedKernelCompare's results by pair.
var kernelCompareCache sync.Map

// kernelRuleOptions are the options both validations gate the kernel
// rules with.
func kernelRuleOptions(tb testing.TB) compare.Options {
	opts := compare.DefaultOptions()
	opts.Reps = 50 // the request-level bootstrap is not what is measured here
	opts.Policy.Gates = mustGates(tb, kernelRules...)
	return opts
}

type stepTally struct {
	pairs int
	fails map[string]int // gate failures per metric
	// excl counts intervals excluding 0 per metric (the strictest rule).
	excl map[string]int
	// rawMoved counts pairs whose raw step time changed significantly
	// (all steps).
	rawMoved int
	// costPass counts pairs in which step.cost<+5% passed.
	costPass int
	rawPct   []float64
	costPct  []float64
}

// stepValidation simulates pairs of DIFFERENT workloads (baseline seed
// 7000+i, candidate seed 9000+i) or, replayed, one workload seed 7000+i
// with another noise seed per side, for every case, and gates each with
// stepRules and, separately, with the kernel rules (kernelRules). shared
// takes the runs from sharedStepRun.
func stepValidation(t *testing.T, pairs int, d time.Duration, replayed, shared bool) map[string]*stepTally {
	t.Helper()
	simulate := stepSynthRun
	if shared {
		simulate = sharedStepRun
	}
	base := make([]compare.Run, pairs)
	cand := make([][]compare.Run, len(stepCases))
	for c := range cand {
		cand[c] = make([]compare.Run, pairs)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i := range pairs {
		for c := -1; c < len(stepCases); c++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if c < 0 {
					base[i] = simulate(t, int64(7000+i), noiseOf(replayed, 1), d, stepCases[0])
					return
				}
				cand[c][i] = simulate(t, candSeed(i, replayed), noiseOf(replayed, 2), d, stepCases[c])
			}()
		}
	}
	wg.Wait()
	opts := compare.DefaultOptions()
	opts.Reps = 50 // the bootstrap metrics are not what is measured here
	opts.Policy.Gates = mustGates(t, stepRules...)
	out := map[string]*stepTally{}
	for c, sc := range stepCases {
		tl := &stepTally{pairs: pairs, fails: map[string]int{}, excl: map[string]int{}}
		out[sc.name] = tl
		for i := range pairs {
			res, err := compare.Compare(compare.Side{Label: "base", Runs: []compare.Run{base[i]}},
				compare.Side{Label: "cand", Runs: []compare.Run{cand[c][i]}}, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Metrics {
				if m.Gate != nil && m.Gate.Verdict == compare.Fail {
					tl.fails[m.Name]++
				}
				if m.Name == compare.MetricStepCost && m.Gate != nil && m.Gate.Verdict == compare.Pass {
					tl.costPass++
				}
				if m.Gate != nil && m.CannotDecide == "" && !math.IsNaN(m.CILowPct) && (m.CILowPct > 0 || m.CIHighPct < 0) {
					tl.excl[m.Name]++
				}
			}
			var kres *compare.Result
			if shared {
				kres = sharedKernelCompare(t, stepRunKey(int64(7000+i), noiseOf(replayed, 1), d, stepCases[0]),
					stepRunKey(candSeed(i, replayed), noiseOf(replayed, 2), d, sc), base[i], cand[c][i])
			} else {
				kres, err = compare.Compare(compare.Side{Label: "base", Runs: []compare.Run{base[i]}},
					compare.Side{Label: "cand", Runs: []compare.Run{cand[c][i]}}, kernelRuleOptions(t))
				if err != nil {
					t.Fatal(err)
				}
			}
			for _, m := range kres.Metrics {
				if m.Gate != nil && m.Gate.Verdict == compare.Fail && strings.HasPrefix(m.Name, "kernel.") {
					tl.fails[m.Name]++
				}
				if m.Gate != nil && strings.HasPrefix(m.Name, "kernel.") && !math.IsNaN(m.CILowPct) && (m.CILowPct > 0 || m.CIHighPct < 0) {
					tl.excl[m.Name]++
				}
			}
			if res.Steps != nil && len(res.Steps.Buckets) > 0 {
				b := res.Steps.Buckets[0]
				if b.RawLowPct > 0 || b.RawHighPct < 0 {
					tl.rawMoved++
				}
				tl.rawPct = append(tl.rawPct, b.RawPct)
				tl.costPct = append(tl.costPct, b.CostPct)
			}
		}
	}
	return out
}

// candSeed is pair i's candidate workload seed: 9000+i, or the baseline's
// 7000+i replayed.
func candSeed(i int, replayed bool) int64 {
	if replayed {
		return int64(7000 + i)
	}
	return int64(9000 + i)
}

func noiseOf(replayed bool, n int64) int64 {
	if replayed {
		return n
	}
	return 0
}

func logStepTally(t *testing.T, tallies map[string]*stepTally) {
	t.Logf("gate fails (intervals excluding 0) per rule, all rules gated together")
	t.Logf("| candidate | %s | step.cost<+5%% passed | raw step time moved | raw step time (median) | step.cost (median) |", strings.Join(stepRules, " | "))
	for _, sc := range stepCases {
		tl := tallies[sc.name]
		var cells []string
		for _, r := range stepRules {
			m := strings.SplitN(r, "<", 2)[0]
			cells = append(cells, fmt.Sprintf("%d (%d)", tl.fails[m], tl.excl[m]))
		}
		for _, r := range kernelRules[:4] {
			m := strings.SplitN(r, "<", 2)[0]
			cells = append(cells, fmt.Sprintf("%s %d (%d)", r, tl.fails[m], tl.excl[m]))
		}
		t.Logf("| %s (%d pairs) | %s | %d | %d | %+.1f%% | %+.1f%% |", sc.name, tl.pairs, strings.Join(cells, " | "), tl.costPass, tl.rawMoved, medianOf(tl.rawPct), medianOf(tl.costPct))
	}
}

func medianOf(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), x...)
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

// checkStepTally asserts the bounds on pairs of different
// workloads. Unchanged: no step or adjusted rule false-fails above α + 2
// Monte Carlo errors, and no step interval excludes 0 above it either (the
// strictest rule). Gemm ×1.3 (≈ +20% of step time): step.cost<+5% fails
// in ≥ 90% of pairs. Attention ×1.6 moves the simulator's step time by
// only ≈ +6% (attention is a tenth of it), which a +5% rule cannot be
// expected to catch; the step cost's interval must exclude 0 in ≥ 90% of
// pairs (a "< +0%" rule would fail). Bigger batches with the same kernels:
// the raw step time moves in ≥ 2/3 of pairs while step.cost<+5% passes in
// ≥ 90% (the decomposition puts the change into the composition).
func checkStepTally(t *testing.T, tallies map[string]*stepTally) {
	alpha := compare.DefaultOptions().Alpha
	for _, sc := range stepCases {
		tl := tallies[sc.name]
		bound := mcBound(alpha, tl.pairs)
		at90 := func(n int) bool { return n*10 >= tl.pairs*9 }
		switch {
		case sc.load != 1:
			// The raw change must be there for the case to test anything
			// (in two thirds of pairs; 91 of 100 in the long run).
			if tl.rawMoved*3 < tl.pairs*2 || !at90(tl.costPass) {
				t.Errorf("%s: raw step time moved in %d of %d pairs (want ≥ 2/3), step.cost<+5%% passed in %d (want ≥ 90%%)", sc.name, tl.rawMoved, tl.pairs, tl.costPass)
			}
			if f := tl.fails[compare.MetricStepCost]; float64(f)/float64(tl.pairs) > bound {
				t.Errorf("%s: step.cost<+5%% failed in %d of %d pairs", sc.name, f, tl.pairs)
			}
		case !sc.slowed:
			for _, r := range stepRules {
				m := strings.SplitN(r, "<", 2)[0]
				if rate := float64(tl.fails[m]) / float64(tl.pairs); rate > bound {
					t.Errorf("%s: %s false-failed in %d of %d pairs (%.1f%% > %.1f%%)", sc.name, r, tl.fails[m], tl.pairs, 100*rate, 100*bound)
				}
				if rate := float64(tl.excl[m]) / float64(tl.pairs); strings.HasPrefix(m, "step.") && rate > bound {
					t.Errorf("%s: %s's interval excluded 0 in %d of %d pairs (%.1f%% > %.1f%%)", sc.name, m, tl.excl[m], tl.pairs, 100*rate, 100*bound)
				}
			}
		case sc.slow[ingest.CategoryGEMM] != 0:
			if f := tl.fails[compare.MetricStepCost]; !at90(f) {
				t.Errorf("%s: step.cost<+5%% failed in %d of %d pairs (want ≥ 90%%)", sc.name, f, tl.pairs)
			}
		default:
			if e := tl.excl[compare.MetricStepCost]; !at90(e) {
				t.Errorf("%s: step.cost's interval excluded 0 in %d of %d pairs (want ≥ 90%%)", sc.name, e, tl.pairs)
			}
		}
	}
}

// TestStepCostDifferentWorkloads is the reduced validation (3 pairs of 3 s
// runs); TestStepCostDifferentWorkloadsLong the full one behind
// LLMPROF_LONG (the docs/diff.md tables).
func TestStepCostDifferentWorkloads(t *testing.T) {
	tallies := stepValidation(t, 3, 3*time.Second, false, true)
	logStepTally(t, tallies)
	checkStepTally(t, tallies)
}

func TestStepCostDifferentWorkloadsLong(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("a long Monte Carlo (100 pairs of different workloads); set LLMPROF_LONG=1 to run it")
	}
	pairs := 100
	if s := os.Getenv("LLMPROF_STEP_PAIRS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LLMPROF_STEP_PAIRS=%q is not a positive number", s)
		}
		pairs = n
	}
	tallies := stepValidation(t, pairs, 3*time.Second, false, false)
	logStepTally(t, tallies)
	checkStepTally(t, tallies)
}

// TestStepCostReplayedLong is the same validation on one workload replayed
// (the same seed, another noise seed per side): docs/diff.md's replayed
// table, with the kernel rules' fails beside the step and adjusted ones.
func TestStepCostReplayedLong(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("a long Monte Carlo (50 replayed pairs); set LLMPROF_LONG=1 to run it")
	}
	pairs := 50
	if s := os.Getenv("LLMPROF_STEP_PAIRS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LLMPROF_STEP_PAIRS=%q is not a positive number", s)
		}
		pairs = n
	}
	tallies := stepValidation(t, pairs, 3*time.Second, true, false)
	logStepTally(t, tallies)
	checkStepTally(t, tallies)
}
