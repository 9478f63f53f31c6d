package compare_test

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/internal/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// runStat is a latency statistic of one run ("ttft.p90", "itl.mean"), NaN
// when the run lacks the family.
func runStat(r compare.Run, family, which string) float64 {
	var x compare.Series
	switch family {
	case "ttft":
		x = r.TTFT
	case "tpot":
		x = r.TPOT
	case "itl":
		x = r.ITL
	case "e2e":
		x = r.E2E
	}
	var v []float64
	for _, f := range x {
		if !math.IsNaN(f) {
			v = append(v, f)
		}
	}
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	switch which {
	case "mean":
		s := 0.0
		for _, f := range v {
			s += f
		}
		return s / float64(len(v))
	case "p90":
		return stat.Quantile(v, 0.9)
	case "p99":
		return stat.Quantile(v, 0.99)
	}
	return stat.Quantile(v, 0.5)
}

// aaSpread is, per "family.stat", the largest |log ratio| of a statistic
// between two runs of one configuration over the pairs given, and the 95%
// upper confidence bound on the between-run σ of the log statistic:
// √(Σd²/(2k)) · √(k/χ²_{0.05,k}) for k pairs of differences d (each d has
// variance 2σ²).
func aaSpread(pairs [][2]compare.Run) (maxAbs, upper map[string]float64) {
	out := map[string]float64{}
	upper = map[string]float64{}
	for _, fam := range []string{"ttft", "tpot", "itl", "e2e"} {
		for _, st := range []string{"p50", "p90", "p99", "mean"} {
			for _, p := range pairs {
				a, b := runStat(p[0], fam, st), runStat(p[1], fam, st)
				if a > 0 && b > 0 {
					d := math.Log(b / a)
					out[fam+"."+st] = math.Max(out[fam+"."+st], math.Abs(d))
					upper[fam+"."+st] += d * d
				}
			}
			k := float64(len(pairs))
			chi := distuv.ChiSquared{K: k}.Quantile(0.05)
			upper[fam+"."+st] = math.Sqrt(upper[fam+"."+st]/(2*k)) * math.Sqrt(k/chi)
		}
	}
	return out, upper
}

// realRun is the vLLM nightly benchmark run of one configuration (under
// ../shared/testdata/vllm-bench), loaded once per test binary (five tests read
// them; compare only reads a Run's samples).
func realRun(t *testing.T, config string) compare.Run {
	t.Helper()
	if r, ok := realRuns.Load(config); ok {
		return r.(compare.Run)
	}
	m := shareddata.Glob(t, "testdata/vllm-bench/surajssd-llm-k8s-"+config+"-serving_*.json")
	if len(m) != 1 {
		t.Fatalf("config %s: %d files", config, len(m))
	}
	in, err := compare.Load(t.Context(), m, compare.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, _ := realRuns.LoadOrStore(config, in.Runs[0])
	return r.(compare.Run)
}

// realRuns holds realRun's runs by configuration.
var realRuns sync.Map

// TestBetweenRunBoundCalibration checks the between-run bound
// (compare.BetweenRunBound) against the A/A pairs it was calibrated on: the
// real nightly runs of one configuration (03 and 04, TP4×PP2 with
// InfiniBand; 02, the same without, counted as a third run since it moves
// no statistic more than the two do between each other) and simulator runs
// of different workload seeds. Each statistic's bound must cover the
// largest difference of its log value seen between two runs divided by √2
// times the normal quantile of the gate (a pair's difference has the
// variance of two runs), so the bound is a conservative σ. The figures are
// docs/diff.md's table (go test ./compare -run BetweenRunBound -v).
func TestBetweenRunBoundCalibration(t *testing.T) {
	r02, r03, r04 := realRun(t, "02_tp4_pp2_no_IB"), realRun(t, "03_tp4_pp2_IB"), realRun(t, "04_tp4_pp2_IB")
	real, realU := aaSpread([][2]compare.Run{{r03, r04}, {r02, r03}, {r02, r04}})
	// LLMPROF_LONG: 10 simulated pairs of each design, the table. The
	// plain form: 2 pairs of each design made of TestSynthIssueGates's four
	// runs (workload seeds 9000 and 9001, noise 1 and 2, shared: no
	// simulation of its own), where the 3.29·√2·σ check still applies to
	// every pair and the real pairs' upper bounds are checked in full.
	var diff, repl [][2]compare.Run
	if os.Getenv("LLMPROF_LONG") != "" {
		const n = 20
		var which []seedNoise
		for i := range n {
			which = append(which, seedNoise{int64(100 + i), int64(1 + i)})
		}
		// Replayed: one workload seed, two noise seeds; different: pairs
		// of workload seeds.
		for i := range n / 2 {
			which = append(which, seedNoise{int64(100 + 2*i), 50})
		}
		runs := synthRuns(t, which, 20*time.Second, 1)
		for i := 0; i+1 < n; i += 2 {
			diff = append(diff, [2]compare.Run{runs[i], runs[i+1]})
			repl = append(repl, [2]compare.Run{runs[i], runs[n+i/2]})
		}
	} else {
		r := sharedSynthRuns(t, issueGateRuns, 20*time.Second, 1) // 9000/1, 9000/2, 9001/1, 9001/2
		diff = [][2]compare.Run{{r[0], r[3]}, {r[1], r[2]}}
		repl = [][2]compare.Run{{r[0], r[1]}, {r[2], r[3]}}
	}
	simD, simDU := aaSpread(diff)
	simR, simRU := aaSpread(repl)
	t.Logf("largest |log ratio| between A/A runs (%d real pairs, %d simulated of each design, 20 s runs) and the bound σ", 3, len(diff))
	t.Logf("| statistic | real, replayed | simulator, replayed | σ replayed | simulator, different seeds | σ different |")
	for _, fam := range []string{"ttft", "tpot", "itl", "e2e"} {
		for _, st := range []string{"p50", "p90", "p99", "mean"} {
			name := fam + "." + st
			sr, _ := compare.BetweenRunBound(name, true)
			sd, _ := compare.BetweenRunBound(name, false)
			t.Logf("| %s | %.1f%% (%.1f%%) | %.1f%% (%.1f%%) | %.1f%% | %.1f%% (%.1f%%) | %.1f%% |", name, 100*real[name], 100*realU[name], 100*simR[name], 100*simRU[name], 100*sr, 100*simD[name], 100*simDU[name], 100*sd)
			// No A/A pair may differ beyond 3.29·√2·σ (a 1-in-1000 event
			// under the bound), and the 95% upper bounds computed from
			// the pairs must not exceed σ: the real pairs always, the
			// simulated ones at the long run's sample size, which set the
			// table.
			check := func(src string, v, upper, sigma float64, ucb bool) {
				if v > 3.29*math.Sqrt2*sigma {
					t.Errorf("%s: %s A/A pairs differ by %.1f%% (log), beyond 3.29·√2·σ = %.1f%%", name, src, 100*v, 100*3.29*math.Sqrt2*sigma)
				}
				if ucb && upper > sigma*1.005 {
					t.Errorf("%s: %s A/A pairs give a 95%% upper bound σ ≤ %.2f%%, above the table's %.2f%%", name, src, 100*upper, 100*sigma)
				}
			}
			long := os.Getenv("LLMPROF_LONG") != ""
			check("real replayed", real[name], realU[name], sr, true)
			check("simulated replayed", simR[name], simRU[name], sr, long)
			check("simulated different-workload", simD[name], simDU[name], sd, long)
		}
	}
	_ = fmt.Sprint
}

// gateOn compares one run per side under rules.
func gateOn(t *testing.T, b, c compare.Run, rules ...string) *compare.Result {
	t.Helper()
	opts := compare.DefaultOptions()
	opts.Reps = 500
	for _, r := range rules {
		g, err := compare.ParseGate(r)
		if err != nil {
			t.Fatal(err)
		}
		opts.Policy.Gates = append(opts.Policy.Gates, g)
	}
	res, err := compare.Compare(compare.Side{Label: b.RunID, Runs: []compare.Run{b}}, compare.Side{Label: c.RunID, Runs: []compare.Run{c}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func logGate(t *testing.T, res *compare.Result) {
	t.Helper()
	for _, m := range res.Metrics {
		if m.Gate != nil {
			t.Logf("%s: %s %+.1f%% [%+.1f%%, %+.1f%%]: %s", m.Gate.Rule, m.Gate.Verdict, m.DeltaPct, m.CILowPct, m.CIHighPct, m.Gate.Reason)
		}
	}
}

// TestRealNightlyGate is issue 22's real-file case: vLLM's nightly
// benchmark, 200 ShareGPT prompts, one run per side. TP8 against TP4×PP2
// (with and without InfiniBand) moves ITL p50 by about +107%: the gate
// fails itl.p50<+10% though the requests are too autocorrelated for the
// within-run interval alone (the between-run bound decides). Two runs of
// one configuration (03, 04) pass tpot.p50<+10% and e2e.p50<+10% — TPOT
// and E2E derived from ttfts and itls, since these files have no latencies.
func TestRealNightlyGate(t *testing.T) {
	r01, r02, r03, r04 := realRun(t, "01_tp8_pp1"), realRun(t, "02_tp4_pp2_no_IB"), realRun(t, "03_tp4_pp2_IB"), realRun(t, "04_tp4_pp2_IB")
	for _, c := range []compare.Run{r02, r03, r04} {
		res := gateOn(t, r01, c, "itl.p50<+10%")
		if !res.Gate.Failed || res.Gate.Fail != 1 {
			logGate(t, res)
			t.Errorf("TP8 vs %s: gate %+v, want itl.p50<+10%% failed", c.RunID, res.Gate)
		}
	}
	res := gateOn(t, r04, r03, "tpot.p50<+10%", "e2e.p50<+10%")
	if res.Gate.Verdict != compare.Pass {
		logGate(t, res)
		t.Errorf("03 vs 04, one configuration: gate %+v, want pass", res.Gate)
	}
}

// tailNames are the tail quantiles with a paired bound.
var tailNames = []string{"ttft.p90", "ttft.p99", "tpot.p90", "tpot.p99", "itl.p90", "itl.p99", "e2e.p90", "e2e.p99"}

// withinTails compares an A/A pair of one replayed workload and returns,
// per tail quantile, its log change d and the standard error s of the
// paired bootstrap's interval before the bound (its half toward 0 over
// z_{1−α/2}).
func withinTails(t *testing.T, b, c compare.Run) (d, s map[string]float64) {
	t.Helper()
	opts := compare.DefaultOptions()
	within, res, err := compare.WithinInterval(compare.Side{Label: b.RunID, Runs: []compare.Run{b}}, compare.Side{Label: c.RunID, Runs: []compare.Run{c}}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Workload != compare.DesignReplayed {
		t.Fatalf("%s vs %s: workload %q, want %q", b.RunID, c.RunID, res.Workload, compare.DesignReplayed)
	}
	z := distuv.UnitNormal.Quantile(1 - opts.Alpha/2)
	d, s = map[string]float64{}, map[string]float64{}
	for _, name := range tailNames {
		v, ok := within[name]
		if !ok {
			continue
		}
		e, lo, hi := math.Log1p(v[0]/100), math.Log1p(v[1]/100), math.Log1p(v[2]/100)
		half := e - lo
		if e < 0 {
			half = hi - e
		}
		d[name], s[name] = e, half/z
	}
	return d, s
}

// excessBound is the 95% upper confidence bound on τ where d_i ~ N(0,
// s_i² + τ²): the τ at which Σ d²/(s² + τ²) falls to χ²_{0.05,k} (0 when
// it is below that at τ = 0).
func excessBound(d, s []float64) float64 {
	k := float64(len(d))
	target := distuv.ChiSquared{K: k}.Quantile(0.05)
	S := func(tau float64) float64 {
		sum := 0.0
		for i := range d {
			v := s[i]*s[i] + tau*tau
			switch {
			case v > 0:
				sum += d[i] * d[i] / v
			case d[i] != 0:
				return math.Inf(1)
			}
		}
		return sum
	}
	if S(0) <= target {
		return 0
	}
	lo, hi := 0.0, 1.0
	for S(hi) > target {
		hi *= 2
	}
	for range 60 {
		m := (lo + hi) / 2
		if S(m) > target {
			lo = m
		} else {
			hi = m
		}
	}
	return hi
}

// TestPairedTailBoundCalibration recomputes compare.PairedTailBound: the
// part of the A/A spread of a tail quantile that the paired block
// bootstrap's interval does not hold, over the real nightly runs of one
// configuration (02, 03, 04) and replayed simulator pairs (20 s, noise 1
// against 2; workload seeds 7000+ in the long form, TestSynthIssueGates's
// 9000 and 9001 in the plain one). Each source's 95% upper bound on the
// excess, per run (÷√2), must not exceed the table — the real pairs always,
// the simulated ones at the long run's 30 pairs, which set the table — and
// the A/A pairs whose change lies beyond its interval widened by 1.96·√2·σ
// (a false fail of a ±0 rule) may be no more than α plus twice its Monte
// Carlo error. The figures are docs/diff.md's table (LLMPROF_LONG=1 go test
// ./compare -run PairedTailBoundCalibration -v). A calibration, it runs
// under LLMPROF_LONG or LLMPROF_CI_HEAVY (.ci/run runs its plain form with
// the latter), not in a plain go test, where TestSynthTailRulesDecide's
// unchanged pair still fails its gate if the paired bound is 0.
func TestPairedTailBoundCalibration(t *testing.T) {
	long := os.Getenv("LLMPROF_LONG") != ""
	if !long && os.Getenv("LLMPROF_CI_HEAVY") == "" {
		t.Skip("a calibration of the paired tail bound; set LLMPROF_CI_HEAVY=1 (the plain form .ci/run runs) or LLMPROF_LONG=1 to run it")
	}
	type source struct {
		name  string
		pairs [][2]compare.Run
		ucb   bool // its upper bound must be within the table
	}
	var sources []source
	if _, ok := shareddata.Root(); ok {
		r02, r03, r04 := realRun(t, "02_tp4_pp2_no_IB"), realRun(t, "03_tp4_pp2_IB"), realRun(t, "04_tp4_pp2_IB")
		sources = append(sources, source{"real, replayed", [][2]compare.Run{{r03, r04}, {r02, r03}, {r02, r04}}, true})
	} else {
		t.Log("../shared/testdata is absent: the real pairs are not checked")
	}
	// The plain form checks the two replayed pairs of TestSynthIssueGates
	// (workload seeds 9000 and 9001, shared: no simulation of its own)
	// against the table; the long one the 30 calibration pairs.
	var runs []compare.Run
	if long {
		var which []seedNoise
		for i := range 30 {
			which = append(which, seedNoise{int64(7000 + i), 1}, seedNoise{int64(7000 + i), 2})
		}
		runs = synthRuns(t, which, 20*time.Second, 1)
	} else {
		runs = sharedSynthRuns(t, issueGateRuns, 20*time.Second, 1)
	}
	var sim [][2]compare.Run
	for i := 0; i < len(runs); i += 2 {
		sim = append(sim, [2]compare.Run{runs[i], runs[i+1]})
	}
	sources = append(sources, source{"simulator, replayed", sim, long})
	t.Logf("| statistic | σ (table) | %s |", func() string {
		var h []string
		for _, s := range sources {
			h = append(h, fmt.Sprintf("%s (%d pairs): largest |d| − its interval's half; 95%% bound on σ; pairs beyond the bounded interval", s.name, len(s.pairs)))
		}
		return strings.Join(h, " | ")
	}())
	ds := make([][2]map[string]float64, 0)
	for _, src := range sources {
		for _, p := range src.pairs {
			d, s := withinTails(t, p[0], p[1])
			ds = append(ds, [2]map[string]float64{d, s})
		}
	}
	for _, name := range tailNames {
		sigma, ok := compare.PairedTailBound(name)
		if !ok {
			t.Fatalf("%s: no paired bound", name)
		}
		row := fmt.Sprintf("| %s | %.1f%% |", name, 100*sigma)
		k := 0
		for _, src := range sources {
			var d, s []float64
			worst := math.Inf(-1)
			excluded := 0
			for range src.pairs {
				dd, ss := ds[k][0], ds[k][1]
				k++
				if _, ok := dd[name]; !ok {
					continue
				}
				d, s = append(d, dd[name]), append(s, ss[name])
				z := distuv.UnitNormal.Quantile(0.975)
				worst = math.Max(worst, math.Abs(dd[name])-z*ss[name])
				if math.Abs(dd[name]) > math.Hypot(z*ss[name], z*math.Sqrt2*sigma) {
					excluded++
				}
			}
			if k := len(d); k > 0 && float64(excluded)/float64(k) > mcBound(0.05, k) {
				t.Errorf("%s: %d of %d %s A/A pairs lie beyond their interval widened by 1.96·√2·σ, want ≤ α + 2 MC errors", name, excluded, k, src.name)
			}
			if len(d) == 0 {
				row += " — |"
				continue
			}
			u := excessBound(d, s) / math.Sqrt2
			row += fmt.Sprintf(" %+.1f%%; %.2f%%; %d of %d beyond |", 100*worst, 100*u, excluded, len(d))
			if src.ucb && u > sigma*1.005 && u > 0.01 {
				t.Errorf("%s: %s A/A pairs give a 95%% upper bound σ ≤ %.2f%% beyond the paired interval, above the table's %.2f%%", name, src.name, 100*u, 100*sigma)
			}
		}
		t.Log(row)
	}
}
