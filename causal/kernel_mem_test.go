package causal

import (
	"math"
	"runtime"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// The kernel view's peak of live heap (docs/design.md, "The kernel view's
// peak"): what a fit holds beside its own buffers.

// spillPeak is the most bytes in spill files at once while f runs, beyond
// those mapped when it starts, with tables of 32 KiB and more in files;
// before runs first, its tables counted as mapped.
func spillPeak(t *testing.T, before func(), f func()) int64 {
	var peak int64
	t.Run("", func(t *testing.T) {
		spilltest.Enable(t)
		spill.Budget(256 << 10)
		before()
		base := spill.Read().Mapped
		f()
		peak = spill.Read().Peak - base
	})
	return peak
}

// A category's fit reads the target's rows and overlaps where they are
// (newSelectedPlan): at its peak it maps what the fit of a copy of its rows
// and overlaps maps, not the copy besides (32 bytes a row and 8 a source).
func TestCategoryFitCopiesNoRows(t *testing.T) {
	rows, groups, use, xs, _ := leanRun(5)
	o := KernelOptions{}.withDefaults()
	full := newWithinPlan(rows, groups, use, nil)
	sel := make([]bool, len(rows))
	n := 0
	for r := range rows {
		if sel[r] = rows[r].cat == ingest.CategoryGEMM; sel[r] {
			n++
		}
	}
	var want, got kernelFit
	var sub []kernelRow
	var subX [][]float64
	copied := spillPeak(t, func() {
		// The copy the category fits took, in tables as they took it.
		sub = spill.Slice[kernelRow](n)
		subX = make([][]float64, len(xs))
		for j := range subX {
			subX[j] = spill.Slice[float64](n)
		}
		for r := range rows {
			if sel[r] {
				sub = append(sub, rows[r])
				for j := range subX {
					subX[j] = append(subX[j], xs[j][r])
				}
			}
		}
	}, func() {
		plan := newWithinPlan(sub, groups, use, full)
		lay := plan.layout(sub, overlapSet{x: subX})
		want = fitLaid(sub, groups, lay, o, plan, formOverlap, nil)
		freeColumns(lay.x)
		plan.free()
	})
	inPlace := spillPeak(t, func() {}, func() {
		got = fitKernels(rows, groups, use, xs, sel, o, full, formOverlap, nil)
	})
	if want.reason != "" || !sameFit(want, got) {
		t.Fatalf("in place: β %v se %v (%q); of the copy: β %v se %v (%q)", got.beta, got.se, got.reason, want.beta, want.se, want.reason)
	}
	// Room for the plan's flags of every row of the target, not only the
	// category's (a byte a row, on the heap here): 8 bytes a row.
	if inPlace > copied+8*int64(n) {
		t.Errorf("the category fit mapped %d bytes at its peak, the fit of a copy of its %d rows %d: a copy of the rows or overlaps (%d bytes) is held", inPlace, n, copied, (32+8*int64(len(xs)))*int64(n))
	}
}

// The layout goes back to the rows' order in its own table (toRowOrder):
// the same values, each at its row, with a bit a row of memory besides, not
// a copy of the column (8 bytes a row) beside the layout.
func TestToRowOrderInPlace(t *testing.T) {
	rows, groups, use, xs, _ := leanRun(6)
	plan := newWithinPlan(rows, groups, use, nil)
	if len(plan.dropped) == 0 {
		t.Fatal("no dropped rows: the layout's second part is not tested")
	}
	lay := plan.layout(rows, overlapSet{x: xs})
	x := lay.x[0]
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	plan.toRowOrder(x)
	runtime.ReadMemStats(&after)
	for r := range xs[0] {
		if math.Float64bits(x[r]) != math.Float64bits(xs[0][r]) {
			t.Fatalf("row %d: %v back, was %v", r, x[r], xs[0][r])
		}
	}
	if got, most := after.TotalAlloc-before.TotalAlloc, uint64(len(x)/4); got > most {
		t.Errorf("putting %d values back allocated %d bytes, want at most %d (a bit a row, in the allocator's size classes)", len(x), got, most)
	}
}

// Before the layout goes back to the rows' order, the plan gives back what
// only its fits read (freeFitIndex), in spill files here: what is left is
// its order, its dropped rows and its bases.
func TestPlanFreesFitIndexFirst(t *testing.T) {
	all, groups, _, _, _ := leanRun(6)
	// Every row linked to a step, as kernelRows keeps them with controls.
	var rows []kernelRow
	for _, r := range all {
		if r.step >= 0 {
			rows = append(rows, r)
		}
	}
	use := batchUse{size: true, tok: true, ctx: true, steps: leanSteps(rows)}
	spilltest.Enable(t)
	spill.Budget(64 << 10) // tables of 8 KiB and more in files
	plan := newWithinPlanHolding(rows, groups, use, nil, 0)
	if plan.dest == nil || plan.keep == nil || plan.ctlStep == nil {
		t.Fatal("the plan has no destinations, flags or steps to give back")
	}
	mapped := spill.Read().Mapped
	plan.freeFitIndex()
	want := mapped - int64(len(plan.order))*4*2 - int64(len(rows)) // dest and ctlStep (int32), keep (bool)
	if got := spill.Read().Mapped; got != want || plan.dest != nil || plan.keep != nil || plan.ctlStep != nil {
		t.Errorf("%d bytes mapped after freeFitIndex, want %d (dest nil %v, keep nil %v, ctlStep nil %v)", got, want, plan.dest == nil, plan.keep == nil, plan.ctlStep == nil)
	}
	if len(plan.order) == 0 {
		t.Error("the order is gone: the layout cannot go back to row order")
	}
	plan.free()
	if got := spill.Read().Mapped; got != 0 {
		t.Errorf("%d bytes mapped after free, want 0", got)
	}
}

// Once the Gauss–Newton steps are done, the fit gives back the response
// and the design's scaled copy (freeSolve) before its clustered errors,
// which read neither: in spill files here, 8 bytes a row and 8 a row and
// column less, and the errors those of the fit that held them.
func TestFitFreesSolveBeforeErrors(t *testing.T) {
	rows, groups, use, xs, _ := leanRun(4)
	o := KernelOptions{}.withDefaults()
	want := fitKernels(rows, groups, use, xs, nil, o, nil, formOverlap, nil)
	spilltest.Enable(t)
	spill.Budget(256 << 10) // tables of 32 KiB and more in files: a float a row
	plan := newWithinPlan(rows, groups, use, nil)
	defer plan.free()
	lay := plan.layout(rows, overlapSet{x: xs})
	defer freeColumns(lay.x)
	gn, reason := gaussNewton(plan, rows, lay, groups, formOverlap, nil)
	defer gn.free()
	if reason != "" {
		t.Fatal(reason)
	}
	n, k := int64(plan.kept), int64(gn.fit.k)
	mapped := spill.Read().Mapped
	gn.freeSolve()
	if got, want := spill.Read().Mapped, mapped-8*n-8*n*k; got != want || gn.fit.Y != nil || gn.yy != nil {
		t.Errorf("%d bytes mapped after freeSolve, want %d (the response's %d and the scaled copy's %d given back); Y nil %v", got, want, 8*n, 8*n*k, gn.fit.Y == nil)
	}
	var f kernelFit
	f.n = plan.kept
	ses, reason := f.clusterErrors(gn.fit, rows, plan.keep, o)
	if reason != "" || len(ses) != len(want.se) {
		t.Fatalf("errors %v (%q), want %v", ses, reason, want.se)
	}
	for c := range ses {
		if math.Float64bits(ses[c]) != math.Float64bits(want.se[c]) {
			t.Errorf("se %d: %v, the fit that held its response and scaled copy %v", c, ses[c], want.se[c])
		}
	}
}
