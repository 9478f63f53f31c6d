package compare_test

// Synthetic validation of the gate's statistics (docs/diff.md, "How it was validated"): every
// sweep draws samples with a known truth from fixed seeds, runs the real
// Compare, and checks error rates, power and coverage. The sweeps use 300
// bootstrap replicates instead of the default 2000 to keep the suite fast;
// that widens the Monte Carlo error of a bootstrap bound slightly but does
// not bias it. Sweeps that only look at a median of independent requests
// (Hodges–Lehmann, no bootstrap) use the minimum of 10 replicates, which
// only affects the other rows of the report.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/llmprof/llmprof/compare"
)

const (
	sweepReps = 300
	noReps    = 10 // for sweeps whose metric does not bootstrap
)

// latencies draws n log-normal latencies around 100 ms with log-sd sigma,
// times factor.
func latencies(rng *rand.Rand, n int, sigma, factor float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = factor * 100 * math.Exp(sigma*rng.NormFloat64())
	}
	return out
}

// ttftRun is a run that only has TTFT, so only ttft.* is compared.
func ttftRun(v []float64) compare.Run {
	return compare.Run{Requests: len(v), Completed: len(v), TTFT: v}
}

func mustGates(t testing.TB, rules ...string) []compare.Gate {
	t.Helper()
	var gs []compare.Gate
	for _, r := range rules {
		g, err := compare.ParseGate(r)
		if err != nil {
			t.Fatal(err)
		}
		gs = append(gs, g)
	}
	return gs
}

func sweepOptions(seed uint64, gates []compare.Gate) compare.Options {
	o := compare.DefaultOptions()
	o.Reps = sweepReps
	o.Seed = seed
	o.Policy.Gates = gates
	return o
}

func compareRuns(t testing.TB, b, c []compare.Run, opts compare.Options) *compare.Result {
	t.Helper()
	res, err := compare.Compare(compare.Side{Label: "base", Runs: b}, compare.Side{Label: "cand", Runs: c}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func metric(t testing.TB, res *compare.Result, name string) compare.Metric {
	t.Helper()
	for _, m := range res.Metrics {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no metric %s", name)
	return compare.Metric{}
}

// TestNullFalseFailRate: both sides from one distribution. At the strictest
// threshold (+0%) the gate may fail only by chance, at most α of the time,
// at every sample size; each statistic on its own likewise.
// sweepSeeds is a false-fail sweep's size: the documented figures come
// from the full sweep, which runs under LLMPROF_LONG (.ci/run sets it); a
// plain go test runs a quarter of the seeds.
func sweepSeeds(full int) int {
	if os.Getenv("LLMPROF_LONG") != "" {
		return full
	}
	return full / 4
}

// falseFailLimit is the most false fails a sweep of seeds may show at α:
// α·seeds on the full sweep (docs/diff.md states those counts), α·seeds
// plus two Monte Carlo errors on the quarter a plain go test runs.
func falseFailLimit(seeds int, alpha float64) int {
	if os.Getenv("LLMPROF_LONG") != "" {
		return int(alpha * float64(seeds))
	}
	return int(float64(seeds) * mcBound(alpha, seeds))
}

// mcBound is the highest false-fail rate n Monte Carlo trials at a true
// rate of α may show: α plus two of their standard errors.
func mcBound(alpha float64, n int) float64 {
	return alpha + 2*math.Sqrt(alpha*(1-alpha)/float64(n))
}

// TestNullFalseFailRate's plain form (the doc comment is above
// sweepSeeds) runs 25 seeds a cell (200 under LLMPROF_LONG), half of
// sweepSeeds's quarter, each statistic held to falseFailLimit (3 of 25):
// the bootstrap's percentile intervals at 80% instead of 95%
// (compare.go, stat.PercentileInterval at 4α) exclude 0 in 4 of 25 for
// ttft.p50 and ttft.p90 at n = 1000 and fail it, as they fail 50 seeds.
func TestNullFalseFailRate(t *testing.T) {
	t.Parallel()
	seeds := sweepSeeds(200)
	if os.Getenv("LLMPROF_LONG") == "" {
		seeds = 25
	}
	alpha := compare.DefaultOptions().Alpha
	gates := mustGates(t, "ttft.p50<+0%", "ttft.p90<+0%", "ttft.p99<+0%", "ttft.mean<+0%")
	for _, dist := range []string{"lognormal", "heavy-tailed"} {
		for _, n := range []int{4, 8, 20, 100, 1000} {
			t.Run(fmt.Sprintf("%s/n=%d", dist, n), func(t *testing.T) {
				gateFails := 0
				perMetric := map[string]int{}
				for seed := range uint64(seeds) {
					rng := rand.New(rand.NewPCG(seed, uint64(n)))
					draw := func() []float64 {
						v := latencies(rng, n, 0.3, 1)
						if dist == "heavy-tailed" { // 5% of requests 3–10× slower
							for i := range v {
								if rng.Float64() < 0.05 {
									v[i] *= 3 + 7*rng.Float64()
								}
							}
						}
						return v
					}
					res := compareRuns(t, []compare.Run{ttftRun(draw())}, []compare.Run{ttftRun(draw())}, sweepOptions(seed, gates))
					if res.Gate.Fail > 0 {
						gateFails++
					}
					// Each statistic on its own, unadjusted, where it has
					// enough samples to be decided at all.
					for _, m := range res.Metrics {
						if n >= m.MinN && m.CILowPct > 0 {
							perMetric[m.Name]++
						}
					}
				}
				limit := falseFailLimit(seeds, alpha)
				if gateFails > limit {
					t.Errorf("gate failed in %d of %d seeds with no change; want ≤ %d (α = %v)", gateFails, seeds, limit, alpha)
				}
				for name, c := range perMetric {
					if c > limit {
						t.Errorf("%s: interval above 0 in %d of %d seeds; want ≤ %d", name, c, seeds, limit)
					}
				}
				t.Logf("false fails: gate %d/%d, per metric %v", gateFails, seeds, perMetric)
			})
		}
	}
}

// TestShiftDetectedAndCovered: a 10% slowdown at n = 200 (log-sd 0.3, so
// p99/p50 ≈ 2) is detected in ≥ 80% of seeds, and the Hodges–Lehmann
// interval covers the true +10% in about 95% of them.
func TestShiftDetectedAndCovered(t *testing.T) {
	t.Parallel()
	const seeds, n = 200, 200
	gates := mustGates(t, "ttft.shift<+0%")
	detected, covered := 0, 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 77))
		b := latencies(rng, n, 0.3, 1)
		c := latencies(rng, n, 0.3, 1.1)
		opts := sweepOptions(seed, gates)
		opts.Reps = noReps
		res := compareRuns(t, []compare.Run{ttftRun(b)}, []compare.Run{ttftRun(c)}, opts)
		m := metric(t, res, "ttft.shift")
		if m.Method != compare.MethodHodgesLehmann {
			t.Fatalf("ttft.shift method %s", m.Method)
		}
		if m.Gate.Verdict == compare.Fail {
			detected++
		}
		if m.CILowPct <= 10 && 10 <= m.CIHighPct {
			covered++
		}
	}
	power := float64(detected) / seeds
	coverage := float64(covered) / seeds
	t.Logf("detected %d/%d, covered %d/%d", detected, seeds, covered, seeds)
	if power < 0.8 {
		t.Errorf("10%% shift detected in %.0f%% of seeds, want ≥ 80%%", 100*power)
	}
	// Binomial(200, 0.95) lies in [0.91, 0.99] with probability > 99%.
	if coverage < 0.91 || coverage > 0.99 {
		t.Errorf("HL interval covered the true shift in %.1f%% of seeds, want ≈ 95%%", 100*coverage)
	}
}

// TestMDEMatchesPower: a true shift equal to the reported minimum detectable
// effect is detected with about the configured power (80%).
func TestMDEMatchesPower(t *testing.T) {
	t.Parallel()
	const seeds, n = 200, 200
	rng := rand.New(rand.NewPCG(1, 1))
	probe := compareRuns(t, []compare.Run{ttftRun(latencies(rng, n, 0.3, 1))}, []compare.Run{ttftRun(latencies(rng, n, 0.3, 1))}, sweepOptions(1, nil))
	mde := metric(t, probe, "ttft.shift").MDEPct
	detected := 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 99))
		opts := sweepOptions(seed, nil)
		opts.Reps = noReps
		res := compareRuns(t, []compare.Run{ttftRun(latencies(rng, n, 0.3, 1))}, []compare.Run{ttftRun(latencies(rng, n, 0.3, 1+mde/100))}, opts)
		if metric(t, res, "ttft.shift").Significant {
			detected++
		}
	}
	power := float64(detected) / seeds
	t.Logf("MDE %.2f%%: detected in %d/%d", mde, detected, seeds)
	if power < 0.64 || power > 0.96 {
		t.Errorf("a shift of the MDE (%.2f%%) was detected in %.0f%% of seeds, want 80%% ± 20%%", mde, 100*power)
	}
}

// TestTailOnlyRegression: only the slowest 2% get 1.5× slower. At n = 2000
// p99 fails its gate and p50 passes its own; the tail's buckets are not the
// median's business.
func TestTailOnlyRegression(t *testing.T) {
	t.Parallel()
	const seeds, n = 10, 2000
	z98 := 2.0537489 // Φ⁻¹(0.98)
	gates := mustGates(t, "ttft.p99<+10%", "ttft.p50<+5%")
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 2))
		b := latencies(rng, n, 0.3, 1)
		c := make([]float64, n)
		for i := range c {
			z := rng.NormFloat64()
			c[i] = 100 * math.Exp(0.3*z)
			if z > z98 {
				c[i] *= 1.5
			}
		}
		opts := sweepOptions(seed, gates)
		opts.Reps = 1000
		res := compareRuns(t, []compare.Run{ttftRun(b)}, []compare.Run{ttftRun(c)}, opts)
		p99, p50 := metric(t, res, "ttft.p99"), metric(t, res, "ttft.p50")
		if p99.Gate.Verdict != compare.Fail {
			t.Errorf("seed %d: p99 %s (%s), want fail", seed, p99.Gate.Verdict, p99.Gate.Reason)
		}
		if p50.Gate.Verdict != compare.Pass {
			t.Errorf("seed %d: p50 %s (%s), want pass", seed, p50.Gate.Verdict, p50.Gate.Reason)
		}
	}
}

// TestP99NeedsEnoughSamples: below 368 samples per side p99 is never
// "pass", not even for a large improvement; at 368 it can be. The rule does
// not depend on the draw: a plain go test draws 10 samples a cell, 50 under
// LLMPROF_LONG. The 10 fail as soon as the quantile's least n is cut
// (compare.go, requireN with a quarter of stat.MinSamplesForQuantile: p99
// passes at n = 100 and 367 from the first draw).
func TestP99NeedsEnoughSamples(t *testing.T) {
	t.Parallel()
	gates := mustGates(t, "ttft.p99<+10%")
	seeds := uint64(10)
	if os.Getenv("LLMPROF_LONG") != "" {
		seeds = 50
	}
	for _, n := range []int{20, 100, 367} {
		for _, factor := range []float64{1, 0.7} {
			t.Run(fmt.Sprintf("n=%d/x%.1f", n, factor), func(t *testing.T) {
				for seed := range seeds {
					rng := rand.New(rand.NewPCG(seed, 3))
					res := compareRuns(t, []compare.Run{ttftRun(latencies(rng, n, 0.3, 1))}, []compare.Run{ttftRun(latencies(rng, n, 0.3, factor))}, sweepOptions(seed, gates))
					g := metric(t, res, "ttft.p99").Gate
					if g.Verdict != compare.Inconclusive {
						t.Fatalf("seed %d: p99 at n=%d is %s, want inconclusive", seed, n, g.Verdict)
					}
					if g.NeededN != 368 {
						t.Fatalf("seed %d: needed n = %d, want 368 (reason %q)", seed, g.NeededN, g.Reason)
					}
				}
			})
		}
	}
	rng := rand.New(rand.NewPCG(0, 3))
	res := compareRuns(t, []compare.Run{ttftRun(latencies(rng, 368, 0.3, 1))}, []compare.Run{ttftRun(latencies(rng, 368, 0.3, 0.7))}, sweepOptions(0, gates))
	if g := metric(t, res, "ttft.p99").Gate; g.Verdict != compare.Pass {
		t.Errorf("n=368, 30%% faster: p99 %s (%s), want pass", g.Verdict, g.Reason)
	}
}

// TestBlockBootstrapRestoresLevel: requests whose log latency is AR(1) with
// ρ = 0.5 (a run that drifts through slow and fast phases). Treating them
// as independent fails far more often than α; the block bootstrap brings
// the false-fail rate back to about α/2.
func TestBlockBootstrapRestoresLevel(t *testing.T) {
	t.Parallel()
	const n, rho = 1000, 0.5
	seeds := sweepSeeds(200)
	gates := mustGates(t, "ttft.shift<+0%")
	ar := func(rng *rand.Rand) []float64 {
		out := make([]float64, n)
		x := rng.NormFloat64()
		for i := range out {
			x = rho*x + math.Sqrt(1-rho*rho)*rng.NormFloat64()
			out[i] = 100 * math.Exp(0.3*x)
		}
		return out
	}
	naive, blocked, auto := 0, 0, 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 4))
		b, c := []compare.Run{ttftRun(ar(rng))}, []compare.Run{ttftRun(ar(rng))}
		iid := sweepOptions(seed, gates)
		iid.Reps = noReps
		iid.Block = 0 // independent requests
		if compareRuns(t, b, c, iid).Gate.Fail > 0 {
			naive++
		}
		opts := sweepOptions(seed, gates)
		res := compareRuns(t, b, c, opts) // the default: autocorrelation detected
		if res.Gate.Fail > 0 {
			blocked++
		}
		opts.Block = compare.BlockAuto
		opts.Policy.Gates = mustGates(t, "ttft.p50<+0%")
		res = compareRuns(t, b, c, opts)
		if m := metric(t, res, "ttft.p50"); m.Method != compare.MethodBlockBootstrap {
			t.Fatalf("method %s with blocks", m.Method)
		}
		if res.Gate.Fail > 0 {
			auto++
		}
	}
	t.Logf("false fails: independent %d/%d, detected (shift widened) %d/%d, --block auto (p50) %d/%d", naive, seeds, blocked, seeds, auto, seeds)
	if limit := falseFailLimit(seeds, 0.05); blocked > limit || auto > limit {
		t.Errorf("with autocorrelation handled: %d and %d false fails of %d, want ≤ %d", blocked, auto, seeds, limit)
	}
	if naive <= blocked || naive <= seeds/20 {
		t.Errorf("independent-request test: %d false fails, expected clearly more than α (the failure mode blocks fix)", naive)
	}
}

// TestRunLevelReplication: each run has its own offset (log-sd 0.15: warm-up,
// placement, thermal state). Pooling six runs per side overstates the
// evidence; the run-level comparison keeps false fails within α.
func TestRunLevelReplication(t *testing.T) {
	t.Parallel()
	const runs, perRun = 6, 300
	seeds := sweepSeeds(200)
	gates := mustGates(t, "ttft.shift<+0%")
	side := func(rng *rand.Rand) []compare.Run {
		out := make([]compare.Run, runs)
		for i := range out {
			out[i] = ttftRun(latencies(rng, perRun, 0.3, math.Exp(0.15*rng.NormFloat64())))
			out[i].RunID = fmt.Sprint(i)
		}
		return out
	}
	pooledFails, runFails := 0, 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 5))
		b, c := side(rng), side(rng)
		opts := sweepOptions(seed, gates)
		opts.Reps = noReps
		res := compareRuns(t, b, c, opts)
		if res.Unit != "run" || metric(t, res, "ttft.shift").Method != compare.MethodRunLevel {
			t.Fatalf("unit %s: want run-level replication", res.Unit)
		}
		if res.Gate.Fail > 0 {
			runFails++
		}
		opts.PoolRuns = true
		opts.Block = 0 // requests as independent: what pooling claims
		if compareRuns(t, b, c, opts).Gate.Fail > 0 {
			pooledFails++
		}
	}
	t.Logf("false fails: run-level %d/%d, pooled %d/%d", runFails, seeds, pooledFails, seeds)
	if limit := falseFailLimit(seeds, 0.05); runFails > limit {
		t.Errorf("run-level: %d false fails of %d, want ≤ %d", runFails, seeds, limit)
	}
	if pooledFails <= 2*runFails || pooledFails <= seeds/20 {
		t.Errorf("pooled: %d false fails; expected far more than α (why runs are the unit)", pooledFails)
	}
}

// TestBaselineHistory: each run has its own offset (log-sd 0.15), which no
// single run shows. One candidate run against one baseline run fails far
// more often than α; against a history of five baseline runs (their spread
// is the run-to-run variance) it stays within α, and a 60% slowdown still
// fails.
func TestBaselineHistory(t *testing.T) {
	t.Parallel()
	const seeds, perRun = 200, 300
	gates := mustGates(t, "ttft.shift<+0%")
	run := func(rng *rand.Rand, scale float64) compare.Run {
		return ttftRun(latencies(rng, perRun, 0.3, scale*math.Exp(0.15*rng.NormFloat64())))
	}
	single, history, detected := 0, 0, 0
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 6))
		var hist []compare.Run
		for i := range 5 {
			r := run(rng, 1)
			r.RunID = fmt.Sprint(i)
			hist = append(hist, r)
		}
		cand := []compare.Run{run(rng, 1)}
		opts := sweepOptions(seed, gates)
		opts.Reps = noReps
		opts.Block = 0
		if compareRuns(t, hist[:1], cand, opts).Gate.Fail > 0 {
			single++
		}
		res := compareRuns(t, hist, cand, opts)
		m := metric(t, res, "ttft.p50")
		if m.Method != compare.MethodHistory {
			t.Fatalf("method %s, want %s", m.Method, compare.MethodHistory)
		}
		if got, want := m.DeltaPct, 100*(m.Candidate/m.Baseline-1); math.Abs(got-want) > 1e-9 {
			t.Fatalf("change %v is not the change of the values shown (%v)", got, want)
		}
		if res.Gate.Fail > 0 {
			history++
		}
		if compareRuns(t, hist, []compare.Run{run(rng, 1.6)}, opts).Gate.Fail > 0 {
			detected++
		}
	}
	t.Logf("false fails: one baseline run %d/%d, history of 5 %d/%d; 60%% slower detected %d/%d", single, seeds, history, seeds, detected, seeds)
	if limit := int(0.05 * seeds); history > limit {
		t.Errorf("history: %d false fails of %d, want ≤ %d", history, seeds, limit)
	}
	if single <= 2*max(history, 5) {
		t.Errorf("one baseline run: %d false fails; expected far more than α (why a history is needed)", single)
	}
	if detected < seeds/2 {
		t.Errorf("60%% slowdown detected in %d of %d", detected, seeds)
	}
}
