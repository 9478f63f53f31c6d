package synth

import (
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

func TestParseSlowdown(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want map[ingest.KernelCategory]float64
		ok   bool
	}{
		{"attention=1.6", map[ingest.KernelCategory]float64{ingest.CategoryAttention: 1.6}, true},
		{"gemm=1.3, attention=1.6", map[ingest.KernelCategory]float64{ingest.CategoryGEMM: 1.3, ingest.CategoryAttention: 1.6}, true},
		{"norm/activation=0.8", map[ingest.KernelCategory]float64{ingest.CategoryNormActivation: 0.8}, true},
		{"attn=1.6", nil, false},
		{"attention", nil, false},
		{"attention=0", nil, false},
		{"attention=x", nil, false},
		{"", nil, false},
	} {
		got, err := ParseSlowdown(tc.in)
		if (err == nil) != tc.ok {
			t.Errorf("ParseSlowdown(%q): error %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("ParseSlowdown(%q) = %v, want %v", tc.in, got, tc.want)
		}
		for c, f := range tc.want {
			if got[c] != f {
				t.Errorf("ParseSlowdown(%q)[%s] = %v, want %v", tc.in, c, got[c], f)
			}
		}
	}
}

// Slow multiplies the slowed category's simulated kernel durations by its
// factor and leaves the others alone (the same workload, the same noise).
func TestSlowScalesOneCategory(t *testing.T) {
	totals := func(slow map[ingest.KernelCategory]float64) [ingest.NumKernelCategories]float64 {
		cfg := DefaultConfig(3, time.Second)
		cfg.Models = cfg.Models[:1]
		cfg.Tenants = cfg.Tenants[:2]
		if slow != nil {
			cfg.Slow(slow)
		}
		run, err := Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var out [ingest.NumKernelCategories]float64
		for _, op := range run.Ops {
			out[op.Category] += float64(op.End - op.Start)
		}
		return out
	}
	base := totals(nil)
	slow := totals(map[ingest.KernelCategory]float64{ingest.CategoryAttention: 1.6})
	if r := slow[ingest.CategoryAttention] / base[ingest.CategoryAttention]; r < 1.55 || r > 1.65 {
		t.Errorf("attention time ×%.3f, want ≈ 1.6", r)
	}
	if r := slow[ingest.CategoryNormActivation] / base[ingest.CategoryNormActivation]; r < 0.95 || r > 1.05 {
		t.Errorf("norm/activation time ×%.3f, want ≈ 1", r)
	}
}
