package causal

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// pairKey names one ordered pair and metric.
type pairKey struct {
	source, target string
	metric         Metric
}

func (k pairKey) String() string { return k.source + "→" + k.target + " " + k.metric.String() }

// pairTally counts, over seeds, how one pair's estimates relate to the truth.
type pairTally struct {
	n            int
	covered      int // truth inside the 95% CI
	naiveCovered int // truth inside the classical-OLS 95% CI
	significant  int // q < 0.05
	raw          int // p < 0.05
	interference int // verdict interference
	isolated     int
	lagN         int
	lagCovered   int
	granger      int // Granger p < 0.05
	placebo      int // placebo p < 0.05
	sumEffect    float64
	truth        float64
}

func (p *pairTally) rate(x int) float64 { return float64(x) / float64(max(1, p.n)) }
func (p *pairTally) lagRate(x int) float64 {
	return float64(x) / float64(max(1, p.lagN))
}

// tally aggregates a seed sweep without keeping every run in memory.
type tally struct {
	mu    sync.Mutex
	seeds int
	pairs map[pairKey]*pairTally
	// fdp is each seed's false discovery proportion (0 when nothing is
	// discovered).
	fdp []float64
}

func (t *tally) add(run *simRun, res *Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pairs == nil {
		t.pairs = map[pairKey]*pairTally{}
	}
	t.seeds++
	discoveries, false_ := 0, 0
	for i := range res.Pairs {
		p := &res.Pairs[i]
		k := pairKey{p.Source, p.Target, p.Metric}
		pt := t.pairs[k]
		if pt == nil {
			pt = &pairTally{}
			t.pairs[k] = pt
		}
		truth := run.truth(p.Source, p.Target, p.Metric, res.Step)
		pt.truth = truth
		pt.n++
		if !p.Estimable {
			continue
		}
		if float64(p.CILowPct) <= truth && truth <= float64(p.CIHighPct) {
			pt.covered++
		}
		crit := 1.96
		if lo, hi := pct(float64(p.Coef)-crit*p.naiveSE, res.Step), pct(float64(p.Coef)+crit*p.naiveSE, res.Step); lo <= truth && truth <= hi {
			pt.naiveCovered++
		}
		if p.Significant(0.05) {
			pt.significant++
			discoveries++
			if truth == 0 {
				false_++
			}
		}
		if float64(p.P) < 0.05 {
			pt.raw++
		}
		if p.Verdict == VerdictInterference {
			pt.interference++
		}
		if p.Isolated {
			pt.isolated++
		}
		pt.sumEffect += float64(p.EffectPct)
		if l := p.Lag; l != nil && l.Estimable {
			pt.lagN++
			if float64(l.CILowPct) <= truth && truth <= float64(l.CIHighPct) {
				pt.lagCovered++
			}
			if float64(l.GrangerP) < 0.05 {
				pt.granger++
			}
			if float64(l.PlaceboP) < 0.05 {
				pt.placebo++
			}
		}
	}
	f := 0.0
	if discoveries > 0 {
		f = float64(false_) / float64(discoveries)
	}
	t.fdp = append(t.fdp, f)
}

// null returns the pairs with no injected effect, in a stable order.
func (t *tally) keys(null bool) []pairKey {
	var out []pairKey
	for k, p := range t.pairs {
		if (p.truth == 0) == null {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b pairKey) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// pooled sums a count over the given pairs and divides by their trials.
func (t *tally) pooled(keys []pairKey, count func(*pairTally) int, lag bool) float64 {
	num, den := 0, 0
	for _, k := range keys {
		p := t.pairs[k]
		num += count(p)
		if lag {
			den += p.lagN
		} else {
			den += p.n
		}
	}
	return float64(num) / float64(max(1, den))
}

func (t *tally) meanFDP() float64 {
	s := 0.0
	for _, f := range t.fdp {
		s += f
	}
	return s / float64(max(1, len(t.fdp)))
}

// table renders the tally for the test log (go test -v), the figures quoted
// in docs/tenants.md.
func (t *tally) table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d seeds\n%-12s %7s %8s %6s %6s %6s %6s %8s %8s %8s\n", t.seeds, "pair", "truth%", "mean%", "cover", "naive", "q<.05", "p<.05", "lagcov", "granger", "placebo")
	keys := append(t.keys(false), t.keys(true)...)
	for _, k := range keys {
		p := t.pairs[k]
		fmt.Fprintf(&b, "%-12s %7.2f %8.2f %6.3f %6.3f %6.3f %6.3f %8.3f %8.3f %8.3f\n", k, p.truth, p.sumEffect/float64(max(1, p.n)),
			p.rate(p.covered), p.rate(p.naiveCovered), p.rate(p.significant), p.rate(p.raw),
			p.lagRate(p.lagCovered), p.lagRate(p.granger), p.lagRate(p.placebo))
	}
	fmt.Fprintf(&b, "mean false discovery proportion %.4f\n", t.meanFDP())
	return b.String()
}

// sweep simulates and analyzes seeds 1..n on every core. Each seed is
// deterministic, so the tally does not depend on scheduling.
func sweep(n int, cfg func(seed uint64) simConfig, opts Options) *tally {
	return sweepRuns(n, func(s uint64) *simRun { return simulate(cfg(s)) }, opts)
}

// simulateSeeds simulates seeds 1..n on every core, for tests that analyze
// the same runs under several options (sweepRuns): the analysis only reads
// a run.
func simulateSeeds(n int, cfg func(seed uint64) simConfig) []*simRun {
	runs := make([]*simRun, n)
	sweepRuns(n, func(s uint64) *simRun {
		runs[s-1] = simulate(cfg(s))
		return nil
	}, Options{})
	return runs
}

// defaultSeeds is how many seeds of defaultSim the plain suite simulates:
// TestConfounderNeedsControls's runs, which TestSynthRecoversInjectedEffectAndNoOther's
// plain form analyzes too.
const defaultSeeds = 60

// defaultRuns are seeds 1..defaultSeeds of defaultSim, simulated once per
// test binary (the analysis only reads a run).
var defaultRuns = sync.OnceValue(func() []*simRun { return simulateSeeds(defaultSeeds, defaultSim) })

// defaultLagSeeds is how many of defaultRuns TestSynthRecoversInjectedEffectAndNoOther's
// plain form tallies, the only reader of their lag models.
const defaultLagSeeds = 50

// defaultAnalyses are defaultRuns analyzed with the default options, once:
// TestSynthRecoversInjectedEffectAndNoOther's plain form (the first
// defaultLagSeeds) and TestConfounderNeedsControls's "with controls" case
// (all 60) tally them. The runs past defaultLagSeeds skip the lag model,
// which only the first test reads: the request-level results do not depend
// on it (TestNoLagModelKeepsRequestLevel), and it is over half an
// analysis's CPU.
var defaultAnalyses = sync.OnceValue(func() []*Result {
	runs := defaultRuns()
	out := make([]*Result, len(runs))
	sweepRuns(len(runs), func(s uint64) *simRun {
		out[s-1] = runs[s-1].analyze(Options{NoLagModel: s > defaultLagSeeds})
		return nil
	}, Options{})
	return out
})

// TestNoLagModelKeepsRequestLevel: skipping the lag model leaves every
// request-level result as it was (what defaultAnalyses relies on for its
// runs past defaultLagSeeds), on one of them.
func TestNoLagModelKeepsRequestLevel(t *testing.T) {
	run := defaultRuns()[defaultSeeds-1]
	with, without := run.analyze(Options{}), defaultAnalyses()[defaultSeeds-1]
	if without.Pairs[0].Lag != nil {
		t.Fatal("the run past defaultLagSeeds was analyzed with the lag model")
	}
	lagged := 0
	for i := range with.Pairs {
		if with.Pairs[i].Lag != nil {
			lagged++
		}
		with.Pairs[i].Lag = nil
	}
	if lagged == 0 {
		t.Fatal("no pair has a lag model: the comparison shows nothing")
	}
	a, err := json.Marshal(with)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(without)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("the request-level results differ without the lag model:\n%s\n%s", a, b)
	}
}

// defaultTally tallies the first n of defaultAnalyses.
func defaultTally(n int) *tally {
	runs, res := defaultRuns(), defaultAnalyses()
	t := &tally{}
	for i := range n {
		t.add(runs[i], res[i])
	}
	return t
}

// sweepRuns analyzes run(s) for seeds 1..n on every core (nothing for a nil
// run).
func sweepRuns(n int, run func(seed uint64) *simRun, opts Options) *tally {
	t := &tally{}
	seeds := make(chan uint64)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range seeds {
				if r := run(s); r != nil {
					t.add(r, r.analyze(opts))
				}
			}
		}()
	}
	for s := 1; s <= n; s++ {
		seeds <- uint64(s)
	}
	close(seeds)
	wg.Wait()
	return t
}

// The acceptance test of issue 7: tenants A, B, C share a GPU (MIG instance
// 0), D runs alone on instance 1; A's load adds a known effect to B's TTFT
// and TPOT and nothing else; a diurnal driver moves every tenant's load and
// B's own batch size. Over 200 seeds (50 in the plain suite, defaultTally):
//
//   - the injected effect lies inside its 95% CI in about 95% of seeds, and
//     the classical OLS interval, blind to clustering, under-covers;
//   - pairs with no effect are significant at FDR 5% in at most 5% of seeds
//     (each pair), their raw p-values are calibrated, and the false
//     discovery proportion averages at most 5%;
//   - D, on its own MIG instance, is flagged isolated and never linked;
//   - the lag model recovers the effect, its Granger test finds A → B, and
//     Granger and the lead placebo reject null pairs at about their level.
func TestSynthRecoversInjectedEffectAndNoOther(t *testing.T) {
	var tl *tally
	seeds, slack := 200, 0.0
	if os.Getenv("LLMPROF_LONG") == "" {
		// The documented 200-seed table runs under LLMPROF_LONG; a plain
		// go test checks a quarter of it with room for the Monte Carlo
		// error: the first 50 of TestConfounderNeedsControls's runs,
		// analyzed once for both tests.
		seeds, slack = defaultLagSeeds, 0.03
		tl = defaultTally(seeds)
	} else {
		tl = sweep(seeds, defaultSim, Options{})
	}
	t.Log("\n" + tl.table())

	effects := tl.keys(false)
	if len(effects) != 2 {
		t.Fatalf("pairs with an effect: %v, want A→B for ttft and tpot", effects)
	}
	for _, k := range effects {
		p := tl.pairs[k]
		if c := p.rate(p.covered); c < 0.90-slack || c > 0.99+slack {
			t.Errorf("%s: truth inside the 95%% CI in %.3f of seeds, want about 0.95", k, c)
		}
		if c := p.rate(p.naiveCovered); c > 0.88 {
			t.Errorf("%s: classical OLS CI covers %.3f; the clustered errors should be what makes coverage right", k, c)
		}
		if bias := p.sumEffect/float64(p.n) - p.truth; bias < -0.5 || bias > 0.5 {
			t.Errorf("%s: mean effect %.2f%% vs truth %.2f%% (bias %.2f pp)", k, p.sumEffect/float64(p.n), p.truth, bias)
		}
		if s := p.rate(p.significant); s < 0.99 {
			t.Errorf("%s: significant in %.3f of seeds, want all", k, s)
		}
		if s := p.rate(p.interference); s < 0.85 {
			t.Errorf("%s: verdict interference in %.3f of seeds", k, s)
		}
		if p.isolated != 0 {
			t.Errorf("%s: marked isolated", k)
		}
		if c := p.lagRate(p.lagCovered); p.lagN < seeds || c < 0.85-slack {
			t.Errorf("%s: lag model estimable in %d seeds, cumulative effect covered in %.3f", k, p.lagN, c)
		}
	}
	if g := tl.pairs[pairKey{"A", "B", MetricTPOT}]; g.lagRate(g.granger) < 0.9 {
		t.Errorf("A→B tpot: Granger test rejects in only %.3f of seeds", g.lagRate(g.granger))
	}

	nulls := tl.keys(true)
	for _, k := range nulls {
		p := tl.pairs[k]
		if s := p.rate(p.significant); s > 0.05+slack {
			t.Errorf("%s: no effect injected, yet significant at FDR 5%% in %.3f of seeds", k, s)
		}
		isolated := k.source == "D" || k.target == "D"
		if isolated != (p.isolated == p.n) {
			t.Errorf("%s: isolated in %d of %d seeds, want %v", k, p.isolated, p.n, isolated)
		}
	}
	if r := tl.pooled(nulls, func(p *pairTally) int { return p.raw }, false); r < 0.03-slack || r > 0.07+slack {
		t.Errorf("null pairs: raw p < 0.05 in %.4f of tests, want about 0.05", r)
	}
	// FDR is an expectation: the mean over seeds has a standard error of
	// about 0.01 here, so allow two of them.
	if f := tl.meanFDP(); f > 0.07 {
		t.Errorf("mean false discovery proportion %.4f > 0.05", f)
	}
	if r := tl.pooled(nulls, func(p *pairTally) int { return p.granger }, true); r > 0.08+slack {
		t.Errorf("null pairs: Granger rejects in %.4f of tests", r)
	}
	all := append(slices.Clone(nulls), effects...)
	if r := tl.pooled(all, func(p *pairTally) int { return p.placebo }, true); r > 0.08+slack {
		t.Errorf("lead placebo rejects in %.4f of tests, want about 0.05", r)
	}
}

// The shared diurnal driver moves every tenant's load and B's own batch
// size. Without controls it creates links that are not there (even to the
// MIG-isolated D) and inflates A → B; B's controls, period effects that
// absorb the slow driver, or the calibration on the negative controls
// (which the driver moves too) remove them. Request level, 60 seeds (the
// lag model, which these checks do not read, only where the analyses are
// shared: defaultTally).
func TestConfounderNeedsControls(t *testing.T) {
	seeds := defaultSeeds
	if testing.Short() {
		seeds = 30
	}
	tests := []struct {
		name string
		opts Options
		// confounded: whether false links are expected to appear.
		confounded bool
		// shared: the case reads TestSynthRecoversInjectedEffectAndNoOther's
		// analyses of the same runs (defaultTally).
		shared bool
	}{
		{"with controls", Options{}, false, true},
		{"no controls, not calibrated", Options{NoLagModel: true, NoControls: true, NoCalibration: true}, true, false},
		// The diurnal driver moves D's latency with A's, B's and C's load
		// too, so the negative controls see it and the calibration widens
		// every pair by it.
		{"no controls, calibrated on the negative controls", Options{NoLagModel: true, NoControls: true}, false, false},
		{"period effects, no controls", Options{NoLagModel: true, NoControls: true, PeriodEffects: 60e9}, false, false},
	}
	runs := defaultRuns()[:seeds] // the same runs for every case
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var tl *tally
			if tc.shared && seeds == defaultSeeds {
				tl = defaultTally(seeds)
			} else {
				tl = sweepRuns(seeds, func(s uint64) *simRun { return runs[s-1] }, tc.opts)
			}
			t.Log("\n" + tl.table())
			for _, src := range []string{"C", "D"} {
				for _, m := range []Metric{MetricTTFT, MetricTPOT} {
					p := tl.pairs[pairKey{src, "B", m}]
					s := p.rate(p.significant)
					if src == "D" && !tc.confounded && tc.opts.NoControls {
						// The control firing is how the calibration sees
						// the driver: it is not a link.
						continue
					}
					switch {
					case tc.confounded && s < 0.2:
						t.Errorf("%s→B %s: false link in only %.3f of seeds; the confounder should show without controls", src, m, s)
					case !tc.confounded && s > 0.05:
						t.Errorf("%s→B %s: false link in %.3f of seeds, want ≤ 0.05", src, m, s)
					}
				}
			}
			for _, m := range []Metric{MetricTTFT, MetricTPOT} {
				p := tl.pairs[pairKey{"A", "B", m}]
				c := p.rate(p.covered)
				if tc.confounded && c > 0.85 {
					t.Errorf("A→B %s: coverage %.3f without controls; the confounder should bias it", m, c)
				}
				if !tc.confounded && c < 0.88 {
					t.Errorf("A→B %s: coverage %.3f", m, c)
				}
			}
		})
	}
}

// lengthRow is the request-level regression's record at one run length.
type lengthRow struct {
	seconds                     int
	seeds                       int
	estimable                   map[Metric]int
	covered                     map[Metric]int
	nullTests, nullSig, nullRaw int
	clusters, widthNs           []float64
}

// clusterCoverage runs the request-level regression (no lag model) on
// seeds of defaultSim cut to the given length, with the cluster widths
// autoClusterWidth picks, and tallies A → B's coverage and the null pairs.
func clusterCoverage(seconds, seeds int) lengthRow {
	row := lengthRow{seconds: seconds, seeds: seeds, estimable: map[Metric]int{}, covered: map[Metric]int{}}
	var mu sync.Mutex
	jobs := make(chan uint64)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range jobs {
				cfg := defaultSim(s)
				cfg.seconds = seconds
				run := simulate(cfg)
				res := run.analyze(Options{NoLagModel: true})
				mu.Lock()
				for i := range res.Pairs {
					p := &res.Pairs[i]
					if p.Metric == MetricE2E {
						continue
					}
					truth := run.truth(p.Source, p.Target, p.Metric, res.Step)
					if truth != 0 {
						if !p.Estimable {
							continue
						}
						row.estimable[p.Metric]++
						row.clusters = append(row.clusters, float64(p.Clusters))
						row.widthNs = append(row.widthNs, float64(p.ClusterNs))
						if float64(p.CILowPct) <= truth && truth <= float64(p.CIHighPct) {
							row.covered[p.Metric]++
						}
						continue
					}
					if !p.Estimable {
						continue
					}
					row.nullTests++
					if p.Significant(0.05) {
						row.nullSig++
					}
					if float64(p.P) < 0.05 {
						row.nullRaw++
					}
				}
				mu.Unlock()
			}
		}()
	}
	for s := 1; s <= seeds; s++ {
		jobs <- uint64(s)
	}
	close(jobs)
	wg.Wait()
	return row
}

func (r lengthRow) String() string {
	mean := func(v []float64) float64 {
		s := 0.0
		for _, x := range v {
			s += x
		}
		return s / float64(max(1, len(v)))
	}
	rate := func(n, d int) float64 { return float64(n) / float64(max(1, d)) }
	return fmt.Sprintf("%4d s: A→B estimable ttft %.3f tpot %.3f; covered ttft %.3f tpot %.3f; clusters %.1f of %.1f s; null pairs raw p<.05 %.3f, q<.05 %.3f (%d tests)",
		r.seconds, rate(r.estimable[MetricTTFT], r.seeds), rate(r.estimable[MetricTPOT], r.seeds),
		rate(r.covered[MetricTTFT], r.estimable[MetricTTFT]), rate(r.covered[MetricTPOT], r.estimable[MetricTPOT]),
		mean(r.clusters), mean(r.widthNs)/1e9, rate(r.nullRaw, r.nullTests), rate(r.nullSig, r.nullTests), r.nullTests)
}

// The cluster widths that adapt to the run length (autoClusterWidth):
// where the request level is estimable at 30, 60, 120 and 180 s, A → B's
// 95% interval covers the truth in about 95% of seeds and the null pairs'
// p-values stay calibrated. 50 seeds per length in the plain suite, with
// room for their Monte Carlo error; 1,000 with LLMPROF_LONG, whose log is
// the table in docs/tenants.md.
func TestSynthClusterWidthCoverage(t *testing.T) {
	seeds, slack := 50, 0.04
	if os.Getenv("LLMPROF_LONG") != "" {
		seeds, slack = 1000, 0.0
	}
	for _, sec := range []int{30, 60, 120, 180, 300} {
		r := clusterCoverage(sec, seeds)
		t.Log(r)
		for _, m := range []Metric{MetricTTFT, MetricTPOT} {
			if r.estimable[m] < seeds/2 {
				continue
			}
			if c := float64(r.covered[m]) / float64(r.estimable[m]); c < 0.90-slack {
				t.Errorf("%d s, A→B %s: interval covers the truth in %.3f of %d estimable seeds, want about 0.95", sec, m, c, r.estimable[m])
			}
		}
		if r.nullTests > 0 {
			if raw := float64(r.nullRaw) / float64(r.nullTests); raw > 0.08+slack {
				t.Errorf("%d s: null pairs' raw p < 0.05 in %.3f of %d tests", sec, raw, r.nullTests)
			}
		}
	}
}
