package report

import (
	"testing"

	"github.com/llmprof/llmprof/compare"
)

// TestPlural: one run, one span; never "1 runs".
func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 runs", 1: "1 run", 2: "2 runs", 1500: "1,500 runs"} {
		if got := plural(n, "run"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
	if got := sideLine(compare.SideSummary{Label: "base", Runs: 1, Requests: 1}); got != "base (1 run, 1 request)" {
		t.Errorf("sideLine = %q", got)
	}
}

// TestShortenAllUnique: two cuDNN kernels that differ past the cut print
// differently, both at a fixed cut and when elided to fit a width.
func TestShortenAllUnique(t *testing.T) {
	a := "void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)2>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __half const*, __half*)"
	b := "void cudnn::engines_precompiled::nchwToNhwcKernel<__half, __half, float, false, true, (cudnnKernelDataType_t)0>(cudnn::engines_precompiled::nchw2nhwc_params_t<float>, __half const*, __half*)"
	c := "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
	for _, tc := range []struct {
		n   int
		cut func(string, int) string
	}{{60, shorten}, {40, elideMiddle}, {20, shorten}, {18, elideMiddle}} {
		got := shortenAll([]string{a, b, c, a}, tc.n, tc.cut)
		if got[0] == got[1] {
			t.Errorf("n=%d: both kernels print as %q", tc.n, got[0])
		}
		if got[0] != got[3] {
			t.Errorf("n=%d: the same name printed two ways: %q, %q", tc.n, got[0], got[3])
		}
		for i, s := range got {
			if r := []rune(s); len(r) > tc.n {
				t.Errorf("n=%d: %q is %d runes", tc.n, s, len(r))
			}
			if i == 2 && s != tc.cut(c, tc.n) {
				t.Errorf("n=%d: a name without a twin changed: %q", tc.n, s)
			}
		}
		t.Logf("n=%d: %q / %q", tc.n, got[0], got[1])
	}
}
