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

// kernelSynthRun simulates a serving run of workload seed (synth.DefaultConfig)
// with the given kernel categories slowed, through the real pipeline (OTLP,
// the GPU side, attribution), to a Run with its kernels.
func kernelSynthRun(tb testing.TB, seed int64, d time.Duration, slow map[ingest.KernelCategory]float64) compare.Run {
	tb.Helper()
	cfg := synth.DefaultConfig(seed, d)
	if slow != nil {
		cfg.Slow(slow)
	}
	run, err := synth.Generate(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tr := synthtrace.WithGPU(tb, run, true)
	res := attribution.Analyze(tr, attribution.DefaultOptions)
	r := compare.FromAttribution(res)
	r.Kernels = compare.KernelsFromTrace(tr, res)
	r.RunID = fmt.Sprintf("seed %d slow %v", seed, slow)
	return r
}

// withoutSteps is r with its kernels grouped as a trace without engine steps
// would group them (an nsys export or profiler trace alone): by name and
// launch configuration only.
func withoutSteps(r compare.Run) compare.Run {
	flat := &compare.KernelRun{Launches: r.Kernels.Launches}
	idx := map[string]int{}
	for _, u := range r.Kernels.Units {
		k := u.Name + "\x00" + u.Launch()
		j, ok := idx[k]
		if !ok {
			j = len(flat.Units)
			idx[k] = j
			flat.Units = append(flat.Units, compare.KernelUnit{Name: u.Name, Short: u.Short, Grid: u.Grid, Block: u.Block, Category: u.Category})
		}
		flat.Units[j].Durations = append(flat.Units[j].Durations, u.Durations...)
	}
	r.Kernels = flat
	return r
}

// kernelCase is one candidate variant of the validation.
type kernelCase struct {
	name string
	slow map[ingest.KernelCategory]float64
	// want is the category the kernel rules must find first ("" for none).
	want string
}

var kernelCases = []kernelCase{
	{"unchanged", nil, ""},
	{"attention×1.6", map[ingest.KernelCategory]float64{ingest.CategoryAttention: 1.6}, "attention"},
	{"gemm×1.3", map[ingest.KernelCategory]float64{ingest.CategoryGEMM: 1.3}, "gemm"},
}

// kernelValidation simulates pairs of DIFFERENT workloads (baseline seed
// 7000+i, candidate seed 9000+i), the candidate unchanged or with a kernel
// category slowed, and gates each pair with the kernel rules and
// tpot.p50<+5%. It returns, per case, the counts the docs/diff.md tables
// report.
type kernelTally struct {
	pairs int
	// ruleFails counts gate failures per rule; strict counts, per kernel
	// category, intervals that exclude 0 (the strictest threshold).
	ruleFails map[string]int
	strict    map[string]int
	// first counts pairs in which the wanted category is the largest
	// significant kernel change.
	first int
}

var kernelRules = []string{"kernel.attention<+5%", "kernel.gemm<+5%", "kernel.norm_activation<+5%", "kernel.sampling<+5%", "tpot.p50<+5%"}

// shared takes the runs from sharedStepRun: the step validation's, whose
// cases include these with the same slowed categories.
func kernelValidation(t *testing.T, pairs int, d time.Duration, flat, shared bool) map[string]*kernelTally {
	t.Helper()
	simulate := func(seed int64, slow map[ingest.KernelCategory]float64) compare.Run {
		if shared {
			return sharedStepRun(t, seed, 0, d, stepCase{slow: slow, load: 1})
		}
		return kernelSynthRun(t, seed, d, slow)
	}
	type job struct {
		i int
		c int // -1: the baseline
	}
	var jobs []job
	for i := range pairs {
		jobs = append(jobs, job{i, -1})
		for c := range kernelCases {
			jobs = append(jobs, job{i, c})
		}
	}
	base := make([]compare.Run, pairs)
	cand := make([][]compare.Run, len(kernelCases))
	for c := range cand {
		cand[c] = make([]compare.Run, pairs)
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if j.c < 0 {
				base[j.i] = simulate(int64(7000+j.i), nil)
				return
			}
			cand[j.c][j.i] = simulate(int64(9000+j.i), kernelCases[j.c].slow)
		}()
	}
	wg.Wait()
	if flat {
		for i := range base {
			base[i] = withoutSteps(base[i])
			for c := range cand {
				cand[c][i] = withoutSteps(cand[c][i])
			}
		}
	}
	opts := kernelRuleOptions(t)
	out := map[string]*kernelTally{}
	for c, kc := range kernelCases {
		tl := &kernelTally{pairs: pairs, ruleFails: map[string]int{}, strict: map[string]int{}}
		out[kc.name] = tl
		for i := range pairs {
			var res *compare.Result
			if shared && !flat {
				res = sharedKernelCompare(t, stepRunKey(int64(7000+i), 0, d, stepCase{load: 1}),
					stepRunKey(int64(9000+i), 0, d, stepCase{slow: kc.slow, load: 1}), base[i], cand[c][i])
			} else {
				var err error
				res, err = compare.Compare(compare.Side{Label: "base", Runs: []compare.Run{base[i]}},
					compare.Side{Label: "cand", Runs: []compare.Run{cand[c][i]}}, opts)
				if err != nil {
					t.Fatal(err)
				}
			}
			var best string
			bestPct := 0.0
			for _, m := range res.Metrics {
				if m.Gate != nil && m.Gate.Verdict == compare.Fail {
					tl.ruleFails[m.Name]++
				}
				cat, ok := strings.CutPrefix(m.Name, "kernel.")
				if !ok || math.IsNaN(m.CILowPct) {
					continue
				}
				if m.CILowPct > 0 || m.CIHighPct < 0 {
					tl.strict[cat]++
					if math.Abs(m.DeltaPct) > bestPct {
						best, bestPct = cat, math.Abs(m.DeltaPct)
					}
				}
			}
			if kc.want != "" && best == kc.want {
				tl.first++
			}
		}
	}
	return out
}

func logKernelTally(t *testing.T, tallies map[string]*kernelTally) {
	for _, kc := range kernelCases {
		tl := tallies[kc.name]
		var parts []string
		for _, r := range kernelRules {
			m := strings.SplitN(r, "<", 2)[0]
			parts = append(parts, fmt.Sprintf("%s %d", r, tl.ruleFails[m]))
		}
		var strict []string
		for _, c := range ingest.KernelCategories() {
			if n, ok := tl.strict[c.Info().Key]; ok {
				strict = append(strict, c.Info().Key+" "+strconv.Itoa(n))
			}
		}
		t.Logf("%s, %d pairs: gate fails: %s; intervals excluding 0: %s; slowed category first: %d",
			kc.name, tl.pairs, strings.Join(parts, ", "), strings.Join(strict, ", "), tl.first)
	}
}

// checkKernelTally asserts the bounds: on unchanged pairs of
// different workloads every kernel rule false-fails at most α + 2 Monte
// Carlo errors; with attention ×1.6 or gemm ×1.3 the slowed category's rule
// fails, with that category the largest kernel change, in ≥ 90% of pairs.
func checkKernelTally(t *testing.T, tallies map[string]*kernelTally) {
	alpha := compare.DefaultOptions().Alpha
	null := tallies["unchanged"]
	bound := mcBound(alpha, null.pairs)
	for _, r := range kernelRules {
		m := strings.SplitN(r, "<", 2)[0]
		if !strings.HasPrefix(m, "kernel.") {
			continue
		}
		if rate := float64(null.ruleFails[m]) / float64(null.pairs); rate > bound {
			t.Errorf("unchanged: %s false-failed in %d of %d pairs (%.1f%% > %.1f%%)", r, null.ruleFails[m], null.pairs, 100*rate, 100*bound)
		}
	}
	for _, kc := range kernelCases[1:] {
		tl := tallies[kc.name]
		fails := tl.ruleFails["kernel."+kc.want]
		if fails*10 < tl.pairs*9 || tl.first*10 < tl.pairs*9 {
			t.Errorf("%s: kernel.%s<+5%% failed in %d of %d pairs, %s first in %d (want ≥ 90%%)", kc.name, kc.want, fails, tl.pairs, kc.want, tl.first)
		}
	}
}

// TestKernelRulesDifferentWorkloads is the reduced validation (3 pairs of
// 3 s runs, the length of the long form's, simulated once for this test and
// TestStepCostDifferentWorkloads: sharedStepRun);
// TestKernelRulesDifferentWorkloadsLong the full one behind LLMPROF_LONG
// (the docs/diff.md tables).
func TestKernelRulesDifferentWorkloads(t *testing.T) {
	tallies := kernelValidation(t, 3, 3*time.Second, false, true)
	logKernelTally(t, tallies)
	checkKernelTally(t, tallies)
}

func TestKernelRulesDifferentWorkloadsLong(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("a long Monte Carlo (100 pairs of different workloads); set LLMPROF_LONG=1 to run it")
	}
	pairs := 100
	if s := os.Getenv("LLMPROF_KERNEL_PAIRS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LLMPROF_KERNEL_PAIRS=%q is not a positive number", s)
		}
		pairs = n
	}
	tallies := kernelValidation(t, pairs, 3*time.Second, false, false)
	logKernelTally(t, tallies)
	checkKernelTally(t, tallies)
}

// TestKernelRulesWithoutStepsLong measures the same pairs grouped as a trace
// without engine steps would be (an nsys export or a profiler trace alone):
// identities by name and launch configuration only. It asserts the power
// (the slowed category's rule fails in ≥ 90% of pairs) and reports the
// false fails without bounding them: the grid does not encode the batch of
// the simulator's GEMMs, and docs/diff.md says what that costs.
func TestKernelRulesWithoutStepsLong(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("a long Monte Carlo; set LLMPROF_LONG=1 to run it")
	}
	pairs := 30
	if s := os.Getenv("LLMPROF_KERNEL_PAIRS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LLMPROF_KERNEL_PAIRS=%q is not a positive number", s)
		}
		pairs = n
	}
	tallies := kernelValidation(t, pairs, 3*time.Second, true, false)
	logKernelTally(t, tallies)
	for _, kc := range kernelCases[1:] {
		tl := tallies[kc.name]
		if fails := tl.ruleFails["kernel."+kc.want]; fails*10 < tl.pairs*9 {
			t.Errorf("%s without steps: kernel.%s<+5%% failed in %d of %d pairs (want ≥ 90%%)", kc.name, kc.want, fails, tl.pairs)
		}
	}
}
