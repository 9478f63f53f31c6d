package causal_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/internal/synthtrace"
	"github.com/llmprof/llmprof/synth"
)

// kernelRun takes one simulated run through the whole pipeline (OTLP and
// the GPU side decoded, attribution, the tenant mapping from the requests)
// and returns the kernel-level view.
func kernelRun(t *testing.T, seed int64, d time.Duration, slowdown float64) *causal.KernelResult {
	t.Helper()
	run, err := synth.Generate(synth.MultiTenantGPUConfig(seed, d, slowdown))
	if err != nil {
		t.Fatal(err)
	}
	tr := synthtrace.WithGPU(t, run, true)
	att := attribution.Analyze(tr, attribution.DefaultOptions)
	reqs := causal.FromAttribution(att, tr)
	tm := causal.MapTenants(tr, causal.MapOptions{Served: causal.ServedTenants(tr, att)})
	return causal.KernelAnalyze(causal.KernelInputFromAttribution(tr, tm, att, reqs), causal.KernelOptions{})
}

func TestKernelExplore(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		start := time.Now()
		res := kernelRun(t, seed, 30*time.Second, 0.35)
		fmt.Println("seed", seed, time.Since(start), res.Controls, res.Notes)
		for _, p := range res.Pairs {
			fmt.Printf("  %s→%s dev %d iso %v %s stretch %.1f%% [%.1f, %.1f] q %.3g n %d ids %d blocks %d (%s) overlap %.2f %s\n", p.Source, p.Target, p.Device, p.Isolated, p.Verdict,
				float64(p.StretchPct), float64(p.CILowPct), float64(p.CIHighPct), float64(p.Q), p.Kernels, p.Identities, p.Blocks, time.Duration(p.BlockNs), float64(p.MeanOverlap), p.Reason)
			for _, c := range p.ByCategory {
				fmt.Printf("     %s %.1f%% [%.1f, %.1f] n %d\n", c.Category, float64(c.StretchPct), float64(c.CILowPct), float64(c.CIHighPct), c.Kernels)
			}
			for _, im := range p.Impact {
				fmt.Printf("     impact %s %.3f ms [%.3f, %.3f] of %.2f ms (n %d)\n", im.Metric, float64(im.EffectMs), float64(im.CILowMs), float64(im.CIHighMs), float64(im.BaselineMs), im.Requests)
			}
		}
	}
}
