package causal_test

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/synth"
)

// mechanismCase is an interference mechanism the kernel model does not
// assume (synth.Mechanism), with the source's arrivals.
type mechanismCase struct {
	name string
	mech synth.Mechanism
	// burst, when set, is A's BurstFactor: bursts of burst × its rate and
	// silences burst − 1 times as long as them (MultiTenantGPUConfig's A is
	// bursty at the default 5).
	burst float64
}

var mechanismCases = []mechanismCase{
	{"overlap-proportional", synth.StretchRate, 0},
	{"step-coincident", synth.StretchStep, 0},
	{"step-coincident, burstier source", synth.StretchStep, 12},
}

// mechanismRun is one run of impactConfig with A → B working by mc's
// mechanism, through the whole pipeline to the kernel view's A → B pair.
func mechanismRun(t testing.TB, mc mechanismCase, seed int64, d time.Duration) causal.KernelPair {
	t.Helper()
	c := impactConfig(seed, d)
	c.Interference[0].Mechanism = mc.mech
	if mc.burst > 0 {
		for i := range c.Tenants {
			if c.Tenants[i].Name == "A" {
				c.Tenants[i].BurstFactor = mc.burst
			}
		}
	}
	pp := pipe(t, c)
	kr := causal.KernelAnalyze(causal.KernelInputFromAttribution(pp.tr, pp.tm, pp.att, pp.reqs), causal.KernelOptions{NoCategories: true})
	for _, p := range kr.Pairs {
		if p.Source == "A" && p.Target == "B" {
			return p
		}
	}
	t.Fatalf("%s seed %d: no A → B pair", mc.name, seed)
	return causal.KernelPair{}
}

// mechanismCell tallies one mechanism at one run length.
type mechanismCell struct {
	seeds, found, covered, modelCovered, within int
	lines                                       []string
}

func mechanismSweep(t *testing.T, mc mechanismCase, d time.Duration, seeds int) mechanismCell {
	pairs := make([]causal.KernelPair, seeds)
	sem := make(chan struct{}, max(1, min(2, runtime.GOMAXPROCS(0))))
	var wg sync.WaitGroup
	for s := range pairs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			pairs[s] = mechanismRun(t, mc, int64(s+1), d)
		}()
	}
	wg.Wait()
	var c mechanismCell
	truth := 100 * injectedStretch
	for s, p := range pairs {
		c.seeds++
		if p.Verdict == causal.VerdictInterference {
			c.found++
		}
		if float64(p.CILowPct) <= truth && truth <= float64(p.CIHighPct) {
			c.covered++
		}
		if float64(p.ModelCILowPct) <= truth && truth <= float64(p.ModelCIHighPct) {
			c.modelCovered++
		}
		if d := float64(p.StretchPct) - truth; d >= -0.15*truth && d <= 0.15*truth {
			c.within++
		}
		line := fmt.Sprintf("%s %s seed %d: %+.2f%% [%+.2f, %+.2f], model [%+.2f, %+.2f]", mc.name, d, s+1,
			float64(p.StretchPct), float64(p.CILowPct), float64(p.CIHighPct), float64(p.ModelCILowPct), float64(p.ModelCIHighPct))
		for _, sp := range p.Sensitivity {
			line += fmt.Sprintf("; %s %+.2f%% [%+.2f, %+.2f]", sp.Spec, float64(sp.StretchPct), float64(sp.CILowPct), float64(sp.CIHighPct))
		}
		c.lines = append(c.lines, line)
	}
	return c
}

// One 30 s run under each of two mechanisms the kernel model does not
// assume: the stretch is found, and its interval (the specification band)
// covers the injected 35%. TestKernelMechanismsLong is the sweep. A
// validation (2 s of CPU), behind LLMPROF_LONG since issue 32's cut of the
// plain suite: the regression it caught there, an interval that is the
// model's alone, fails TestKernelSynthQuick's band check (isBand).
func TestKernelMechanismsQuick(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("a validation under other interference mechanisms (two 30 s runs); set LLMPROF_LONG=1 to run it")
	}
	// Seed 1: under step-coincident stretch the model's own interval,
	// +29.1 … +32.6%, misses 35% there.
	for _, mc := range mechanismCases[:2] {
		p := mechanismRun(t, mc, 1, 30*time.Second)
		t.Logf("%s: A → B %+.2f%% [%+.2f, %+.2f], model [%+.2f, %+.2f], %v", mc.name, float64(p.StretchPct), float64(p.CILowPct), float64(p.CIHighPct),
			float64(p.ModelCILowPct), float64(p.ModelCIHighPct), p.Sensitivity)
		if p.Verdict != causal.VerdictInterference || !(float64(p.CILowPct) <= 100*injectedStretch && 100*injectedStretch <= float64(p.CIHighPct)) {
			t.Errorf("%s: A → B %s, interval [%+.2f, %+.2f] does not cover %.0f%%", mc.name, p.Verdict, float64(p.CILowPct), float64(p.CIHighPct), 100*injectedStretch)
		}
	}
}

// The "Done when" of issue 29 for the kernel stretch: coverage of the
// injected stretch at least 90% at 30, 60 and 180 s under mechanisms the
// model does not assume. Behind LLMPROF_LONG; LLMPROF_MECH_SEEDS seeds per
// mechanism and length (default 10). Its log is the table in
// docs/tenants.md.
func TestKernelMechanismsLong(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("set LLMPROF_LONG=1 for the kernel stretch's coverage under other interference mechanisms")
	}
	seeds := 10
	if v := os.Getenv("LLMPROF_MECH_SEEDS"); v != "" {
		if _, err := fmt.Sscan(v, &seeds); err != nil || seeds < 1 {
			t.Fatalf("LLMPROF_MECH_SEEDS=%q: want a positive count", v)
		}
	}
	var table strings.Builder
	table.WriteString("| mechanism | run | found | within ±15% | band covers 35% | the model's interval alone |\n| --- | --- | --- | --- | --- | --- |\n")
	for _, mc := range mechanismCases {
		for _, d := range []time.Duration{30 * time.Second, 60 * time.Second, 180 * time.Second} {
			start := time.Now()
			c := mechanismSweep(t, mc, d, seeds)
			for _, l := range c.lines {
				t.Log(l)
			}
			fmt.Fprintf(&table, "| %s | %s | %d of %d | %d | %d | %d |\n", mc.name, d, c.found, c.seeds, c.within, c.covered, c.modelCovered)
			t.Logf("%s %s done in %s", mc.name, d, time.Since(start).Round(time.Second))
			if float64(c.covered) < 0.9*float64(c.seeds) || float64(c.found) < 0.9*float64(c.seeds) {
				t.Errorf("%s, %s: found in %d, interval covers the truth in %d of %d seeds (need 90%%)", mc.name, d, c.found, c.covered, c.seeds)
			}
		}
	}
	t.Log("\n" + table.String())
}
