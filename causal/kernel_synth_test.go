package causal_test

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// injectedStretch is the slowdown the kernel tests inject: a kernel of B's
// engine fully overlapped by A's work takes 35% longer (synth/interference.go).
const injectedStretch = 0.35

// piped is a simulated run taken through the pipeline up to the tenants:
// OTLP and the GPU side decoded, attribution (requests only), the requests
// causal reads, and the processes named after the requests they serve.
type piped struct {
	run  *synth.Run
	tr   *ingest.Trace
	att  *attribution.Result
	reqs []causal.Request
	tm   *causal.TenantMap
}

func pipe(t testing.TB, cfg synth.Config) piped {
	t.Helper()
	run, err := synth.Generate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr := synthtrace.WithGPU(t, run, true)
	att := attribution.Analyze(tr, attribution.Options{RequestsOnly: true})
	reqs := causal.FromAttribution(att, tr)
	return piped{run: run, tr: tr, att: att, reqs: reqs, tm: causal.MapTenants(tr, causal.MapOptions{Served: causal.ServedTenants(tr, att)})}
}

// kernelRun takes one simulated run through the whole pipeline (pipe) and
// returns the tenant analysis with the kernel view.
func kernelRun(t testing.TB, seed int64, d time.Duration) *causal.Result {
	t.Helper()
	pp := pipe(t, synth.MultiTenantGPUConfig(seed, d, injectedStretch))
	tr, att, reqs, tm := pp.tr, pp.att, pp.reqs, pp.tm
	load, err := causal.BuildLoad(tr, reqs, tm, causal.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kin := causal.KernelInputFromAttribution(tr, tm, att, reqs)
	opts := causal.DefaultOptions()
	opts.NoLagModel = true
	res, err := causal.Analyze(causal.Input{Requests: reqs, Load: load, Mapping: tm, Kernels: &kin}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// kernelRunLight is kernelRun without the request-level regression and the
// per-category fits: the kernel view alone, for the long sweep.
func kernelRunLight(t testing.TB, seed int64, d time.Duration) *causal.Result {
	t.Helper()
	pp := pipe(t, synth.MultiTenantGPUConfig(seed, d, injectedStretch))
	tr, att, reqs, tm := pp.tr, pp.att, pp.reqs, pp.tm
	kr := causal.KernelAnalyze(causal.KernelInputFromAttribution(tr, tm, att, reqs), causal.KernelOptions{NoCategories: true})
	return &causal.Result{Kernel: kr, Mapping: tm, Tenants: []causal.TenantSummary{{Requests: len(reqs)}}}
}

// pairTally counts what a sweep must never show: self-pairs, and links
// among the pairs without an injected effect (false links), those across
// GPUs or MIG instances apart.
type pairTally struct {
	nullPairs, falseLinks        int
	isolatedPairs, isolatedFalse int
	selfPairs                    int
	lines                        []string
}

// self counts p if it pairs a tenant (or a shared source) with itself.
func (k *pairTally) self(source, target string, tm *causal.TenantMap) {
	if source == target || slices.Contains(tm.Members(source), target) {
		k.selfPairs++
	}
}

// null counts p, a pair without an injected effect.
func (k *pairTally) null(seed int64, p causal.KernelPair) {
	k.nullPairs++
	if p.Isolated {
		k.isolatedPairs++
	}
	if p.Significant(0.05) {
		k.falseLinks++
		if p.Isolated {
			k.isolatedFalse++
		}
		k.lines = append(k.lines, fmt.Sprintf("seed %d: false link %s → %s %+.2f%% q %.2g", seed, p.Source, p.Target, float64(p.StretchPct), float64(p.Q)))
	}
}

// kernelTally counts a seed sweep of the kernel view against the truth.
type kernelTally struct {
	pairTally
	seeds, found, within, covered int
	rawZero                       int // null pairs with the classical p(s = 0) < 0.05
	costWrong                     int // seeds whose per-request cost series are wrong
	bandWrong                     int // seeds whose A → B interval is not its specification band
	stretches                     []float64
}

func (k *kernelTally) add(seed int64, res *causal.Result) {
	kr := res.Kernel
	k.seeds++
	for _, p := range kr.Pairs {
		k.self(p.Source, p.Target, res.Mapping)
		if p.Source == "A" && p.Target == "B" {
			s := float64(p.StretchPct) / 100
			k.stretches = append(k.stretches, s)
			if p.Estimable && float64(p.Q) < 0.01 && p.Verdict == causal.VerdictInterference {
				k.found++
			}
			if math.Abs(s-injectedStretch) <= 0.15*injectedStretch {
				k.within++
			}
			if float64(p.CILowPct) <= 100*injectedStretch && 100*injectedStretch <= float64(p.CIHighPct) {
				k.covered++
			}
			if !isBand(p) {
				k.bandWrong++
				k.lines = append(k.lines, fmt.Sprintf("seed %d: A → B interval [%+.2f, %+.2f] is not the band of the model's [%+.2f, %+.2f] and its specifications %v",
					seed, float64(p.CILowPct), float64(p.CIHighPct), float64(p.ModelCILowPct), float64(p.ModelCIHighPct), p.Sensitivity))
			}
			k.lines = append(k.lines, fmt.Sprintf("seed %d: A → B %+.2f%% [%+.2f, %+.2f] q %.2g, %d kernels, %d blocks of %s",
				seed, 100*s, float64(p.CILowPct), float64(p.CIHighPct), float64(p.Q), p.Kernels, p.Blocks, time.Duration(p.BlockNs)))
			continue
		}
		if p.Estimable && float64(p.PZero) < 0.05 {
			k.rawZero++
		}
		k.null(seed, p)
	}
	for _, p := range res.Pairs {
		k.self(p.Source, p.Target, res.Mapping)
	}
	// What diff compares as tenant.NAME: A's cost to the requests, positive;
	// none for D, whose pairs are all negative controls.
	n := 0
	for _, ts := range res.Tenants {
		n += ts.Requests
	}
	cost := kr.RequestCost(n)
	total := 0.0
	for _, v := range cost["A"] {
		total += v
	}
	if total <= 0 || cost["D"] != nil {
		k.costWrong++
	}
}

// isBand reports whether a pair's interval is its specification band
// (kernel_fit.go): the least interval holding the model's own and every
// other specification's, of which there must be some. Without the band the
// model's interval alone misses the injected stretch under mechanisms it
// does not assume (TestKernelMechanismsLong; seed 1's step-coincident run
// gives +29.1 … +32.6% against 35%), which a plain go test no longer runs.
func isBand(p causal.KernelPair) bool {
	lo, hi := float64(p.ModelCILowPct), float64(p.ModelCIHighPct)
	for _, sp := range p.Sensitivity {
		lo, hi = math.Min(lo, float64(sp.CILowPct)), math.Max(hi, float64(sp.CIHighPct))
	}
	return len(p.Sensitivity) > 0 && float64(p.CILowPct) == lo && float64(p.CIHighPct) == hi
}

func (k *kernelTally) summary() string {
	rate := func(n, d int) float64 { return 100 * float64(n) / float64(max(1, d)) }
	mean := 0.0
	for _, s := range k.stretches {
		mean += s
	}
	mean /= float64(max(1, len(k.stretches)))
	return fmt.Sprintf("%d seeds: A → B found (q < 0.01) %.0f%%, within ±15%% %.0f%%, 95%% CI covers %.0f%%, mean stretch %.2f%% (truth %.0f%%); "+
		"false links at q < 0.05: %d of %d null pairs (%.1f%%), %d of %d across GPUs; self-pairs %d; null pairs with classical p(s = 0) < 0.05: %.1f%%",
		k.seeds, rate(k.found, k.seeds), rate(k.within, k.seeds), rate(k.covered, k.seeds), 100*mean, 100*injectedStretch,
		k.falseLinks, k.nullPairs, rate(k.falseLinks, k.nullPairs), k.isolatedFalse, k.isolatedPairs, k.selfPairs, rate(k.rawZero, k.nullPairs))
}

func kernelSweep(t *testing.T, seeds int, d time.Duration, light bool) *kernelTally {
	var mu sync.Mutex
	k := &kernelTally{}
	sem := make(chan struct{}, max(1, min(2, runtime.GOMAXPROCS(0))))
	var wg sync.WaitGroup
	results := make([]*causal.Result, seeds)
	for s := 1; s <= seeds; s++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(seed int) {
			defer wg.Done()
			defer func() { <-sem }()
			var res *causal.Result
			if light {
				res = kernelRunLight(t, int64(seed), d)
			} else {
				res = kernelRun(t, int64(seed), d)
			}
			mu.Lock()
			results[seed-1] = res
			one := &kernelTally{}
			one.add(int64(seed), res)
			t.Logf("seed %d done: %s", seed, strings.Join(one.lines, "; "))
			mu.Unlock()
		}(s)
	}
	wg.Wait()
	for i, res := range results {
		k.add(int64(i+1), res)
	}
	return k
}

// 30 s runs (a typical nsys capture): the kernel view finds the injected
// A → B stretch, close to the truth, and no other link; no pair tests a
// tenant against itself, and the interval is the specification band
// (isBand). TestKernelSynthLong is the 50-seed version. One run in a plain
// go test, two under LLMPROF_LONG (the kernel view fits each target three
// times for its specification band; TestKernelMechanismsQuick, behind
// LLMPROF_LONG, adds two more runs). The one run still fails with the
// overlaps halved (kernel_busy.go, overlapsOf: the stretch comes out +70%,
// outside ±15%), and with the band left out (the model's interval alone).
func TestKernelSynthQuick(t *testing.T) {
	seeds := 1
	if os.Getenv("LLMPROF_LONG") != "" {
		seeds = 2
	}
	k := kernelSweep(t, seeds, 30*time.Second, false)
	t.Log(k.summary())
	for _, l := range k.lines {
		t.Log(l)
	}
	if k.found != k.seeds || k.within != k.seeds {
		t.Errorf("A → B found in %d and within ±15%% in %d of %d seeds", k.found, k.within, k.seeds)
	}
	if k.falseLinks > 1 || k.selfPairs > 0 || k.costWrong > 0 || k.bandWrong > 0 {
		t.Errorf("%d false links, %d self-pairs, %d seeds with wrong request costs, %d whose interval is not the specification band",
			k.falseLinks, k.selfPairs, k.costWrong, k.bandWrong)
	}
}

// The "Done when" of docs/tenants.md: 50 seeds of 30 s runs. Behind
// LLMPROF_LONG (about 5 minutes on two cores).
func TestKernelSynthLong(t *testing.T) {
	if os.Getenv("LLMPROF_LONG") == "" {
		t.Skip("set LLMPROF_LONG=1 for the 50-seed kernel-level validation")
	}
	k := kernelSweep(t, 50, 30*time.Second, true)
	t.Log(k.summary())
	for _, l := range k.lines {
		t.Log(l)
	}
	rate := func(n, d int) float64 { return float64(n) / float64(max(1, d)) }
	if rate(k.found, k.seeds) < 0.9 || rate(k.within, k.seeds) < 0.9 || rate(k.covered, k.seeds) < 0.9 {
		t.Errorf("A → B: found %d, within ±15%% %d, covered %d of %d seeds (need 90%%)", k.found, k.within, k.covered, k.seeds)
	}
	if rate(k.falseLinks, k.nullPairs) > 0.05 || k.selfPairs > 0 {
		t.Errorf("false links %d of %d null pairs (max 5%%), self-pairs %d", k.falseLinks, k.nullPairs, k.selfPairs)
	}
}
