package causal

import (
	"fmt"
	"testing"

	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// A target's kernel fits keep their arrays of a value a row — the design,
// its scaled copy, the response and residuals, the layout and the plan —
// in spill files while spilling is on, give the pairs of a fit on the heap
// to the digit, and give every file back: once kernelRegression returns
// and its caller frees the rows and overlaps (as KernelAnalyze does), the
// spill files hold what they held before.
func TestKernelFitSpills(t *testing.T) {
	rows, groups, use, xs, shares := leanRun(9)
	sources := []busyKey{{"a", 0}, {"b", 0}}
	o := KernelOptions{}.withDefaults()
	regress := func() string {
		// The rows and overlaps in tables, as kernelRows and overlapsOf
		// make them.
		r := append(spill.Slice[kernelRow](len(rows)), rows...)
		x := make([][]float64, len(xs))
		for j := range xs {
			x[j] = append(spill.Make[float64](len(xs[j]))[:0], xs[j]...)
		}
		pairs := kernelRegression(busyKey{"t", 0}, sources, []bool{false, false}, []int16{-1, -1}, r, groups, use, x, shares, o, true)
		freeColumns(x)
		spill.Free(r)
		// %v writes each float's shortest exact digits (NaN as NaN).
		return fmt.Sprintf("%+v", pairs)
	}
	want := regress()

	spilltest.Enable(t)
	// Tables of 32 KiB and more in files: a float a row of the target's
	// 9600 rows, and of a category's 4800.
	spill.Budget(256 << 10)
	got := regress()
	if got != want {
		t.Errorf("spilled, the pairs are\n%s\non the heap\n%s", got, want)
	}
	n := int64(len(rows))
	// The caller's rows and overlaps (48 bytes a row) and, at the fit's
	// peak, at least its design and scaled copy (16 bytes a row each with
	// two sources), the response and the right-hand side (8 each).
	if s, least := spill.Read(), 48*n+48*n; s.Peak < least {
		t.Errorf("at most %d bytes in spill files at once, want at least %d (the fit's design, scaled copy, response and residuals beside the rows)", s.Peak, least)
	}
	if s := spill.Read(); s.Mapped != 0 {
		t.Errorf("%d bytes still in spill files after the fits, want none", s.Mapped)
	}
}
