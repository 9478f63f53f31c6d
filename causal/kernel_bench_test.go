package causal_test

import (
	"testing"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/synth"
)

// BenchmarkKernelAnalyze times the kernel view of the tenant analysis
// (KernelAnalyze, with the per-category fits) on one simulated 30 s run of
// four tenants on two GPUs, taken through the pipeline once (pipe), against
// a reference in the same process: the attribution of that run's requests,
// which every analysis does before it. bench/causal.sh prints the ratio.
func BenchmarkKernelAnalyze(b *testing.B) {
	pp := pipe(b, synth.MultiTenantGPUConfig(1, 30*time.Second, injectedStretch))
	kin := causal.KernelInputFromAttribution(pp.tr, pp.tm, pp.att, pp.reqs)
	b.Run("reference-attribution", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			attribution.Analyze(pp.tr, attribution.Options{RequestsOnly: true})
		}
	})
	b.Run("kernel-view", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			causal.KernelAnalyze(kin, causal.KernelOptions{})
		}
	})
}
