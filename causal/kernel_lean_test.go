package causal

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// The kernel fit's memory (docs/design.md, "What the analysis holds on
// top"): what it no longer holds a copy of for every row gives the digits
// of the copies it replaced.

// leanRun is a target's rows over 1200 steps, some of them not linked to a
// step, one alone in its identity, with two sources' overlaps of each row and each source's share of
// each step's window.
func leanRun(seed uint64) (rows []kernelRow, groups int, use batchUse, xs, shares [][]float64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	const perStep = 8
	groups = perStep + 1
	var steps []KernelStep
	xs = make([][]float64, 2)
	shares = make([][]float64, 2)
	for s := 0; s < 1200; s++ {
		at := int64(s) * 10e6
		steps = append(steps, KernelStep{Start: at, End: at + 9e6, Size: float64(1 + rng.IntN(64)), Tokens: float64(1 + rng.IntN(4096)), Context: float64(1 + rng.IntN(1<<16))})
		s0, s1 := rng.Float64(), rng.Float64()
		shares[0], shares[1] = append(shares[0], s0), append(shares[1], s1)
		for g := 0; g < perStep; g++ {
			x0, x1 := rng.Float64(), rng.Float64()*rng.Float64()
			d := math.Exp(10+0.1*float64(g)+0.05*math.Log(steps[s].Tokens)+0.1*rng.NormFloat64()) * (1 + 0.3*s0 + 0.2*x0 + 0.05*x1)
			step := int32(s)
			if rng.IntN(40) == 0 {
				step = -1 // a kernel no step launched: keeps its own overlap
			}
			rows = append(rows, kernelRow{start: at + int64(g)*1e6, dur: int64(d), group: int32(g), step: step, cat: kernelCat(g)})
			xs[0], xs[1] = append(xs[0], x0), append(xs[1], x1)
			if s == 600 && g == 0 {
				// The one kernel of its identity: no freedom left, a
				// dropped row of the plan.
				rows = append(rows, kernelRow{start: at + 5e5, dur: int64(d), group: perStep, step: step, cat: kernelCat(0)})
				xs[0], xs[1] = append(xs[0], x1), append(xs[1], x0)
			}
		}
	}
	return rows, groups, batchUse{steps: steps}, xs, shares
}

// kernelCat is two categories, by identity.
func kernelCat(g int) ingest.KernelCategory {
	if g%2 == 0 {
		return ingest.CategoryGEMM
	}
	return ingest.CategoryAttention
}

// sameFit reports whether two fits have the same coefficients, errors and
// blocks, bit for bit.
func sameFit(a, b kernelFit) bool {
	if a.reason != b.reason || len(a.beta) != len(b.beta) {
		return false
	}
	for j := range a.beta {
		if math.Float64bits(a.beta[j]) != math.Float64bits(b.beta[j]) || math.Float64bits(a.se[j]) != math.Float64bits(b.se[j]) {
			return false
		}
	}
	return a.n == b.n && a.blocks == b.blocks && a.blockNs == b.blockNs
}

// SpecStep's fit read through the steps' shares (overlapSet) gives the
// digits of the fit of each row's copy of its step's share (rowShares), on
// all rows and on a category's.
func TestStepSharesFitMatchesRowOverlaps(t *testing.T) {
	rows, groups, use, xs, shares := leanRun(3)
	ys := rowShares(rows, xs, shares)
	o := KernelOptions{}.withDefaults()
	plan := newWithinPlan(rows, groups, use, nil)
	sel := make([]bool, len(rows))
	for r := range rows {
		sel[r] = rows[r].cat == ingest.CategoryGEMM
	}
	for _, tc := range []struct {
		name string
		sel  []bool
	}{{"all rows", nil}, {"a category", sel}} {
		want := fitKernels(rows, groups, use, ys, tc.sel, o, plan, formOverlap, nil)
		got := fitOverlaps(rows, groups, use, overlapSet{x: xs, step: shares}, tc.sel, o, plan, formOverlap, nil)
		if want.reason != "" {
			t.Fatalf("%s: %s", tc.name, want.reason)
		}
		if !sameFit(want, got) {
			t.Errorf("%s: through the shares β %v, se %v; the rows' copies β %v, se %v", tc.name, got.beta, got.se, want.beta, want.se)
		}
	}
	// The shares are read: other shares give other digits.
	other := [][]float64{shares[1], shares[0]}
	if got := fitOverlaps(rows, groups, use, overlapSet{x: xs, step: other}, nil, o, plan, formOverlap, nil); sameFit(got, fitKernels(rows, groups, use, ys, nil, o, plan, formOverlap, nil)) {
		t.Errorf("swapped shares give the same fit")
	}
}

// Weighting each identity's residuals as they are written (fillDesign)
// gives the digits of weighting every row's after they are filled.
func TestFillWeightedMatchesWeightingAfter(t *testing.T) {
	rows, groups, use, _, _ := leanRun(5)
	rng := rand.New(rand.NewPCG(5, 9))
	p := newWithinPlan(rows, groups, use, nil)
	const ncol = 3
	vals := make([][]float64, ncol)
	for c := range vals {
		vals[c] = make([]float64, p.kept)
		for i := range vals[c] {
			vals[c][i] = rng.NormFloat64() * float64(c+1)
		}
	}
	fill := func(i, a int, v [][]float64) bool {
		for c := range v {
			v[c][a] = vals[c][i]
		}
		return true
	}
	weight := make([]float64, groups)
	for g := range weight {
		weight[g] = 1 / (0.05 + rng.Float64())
	}
	y, design := make([]float64, p.kept), make([]float64, p.kept*(ncol-1))
	p.fillDesign(ncol, fill, nil, y, design, nil, nil)
	// Each kept row's group, in row order.
	groupOf := make([]int32, 0, p.kept)
	for r := range rows {
		if p.keep[r] {
			groupOf = append(groupOf, rows[r].group)
		}
	}
	for a, g := range groupOf {
		y[a] *= weight[g]
		for c := range ncol - 1 {
			design[a*(ncol-1)+c] *= weight[g]
		}
	}
	gy, gd := make([]float64, p.kept), make([]float64, p.kept*(ncol-1))
	p.fillDesign(ncol, fill, weight, gy, gd, nil, nil)
	for a := range y {
		if math.Float64bits(y[a]) != math.Float64bits(gy[a]) {
			t.Fatalf("row %d: response %v, weighted after %v", a, gy[a], y[a])
		}
	}
	for i := range design {
		if math.Float64bits(design[i]) != math.Float64bits(gd[i]) {
			t.Fatalf("design entry %d: %v, weighted after %v", i, gd[i], design[i])
		}
	}
}

// The fits of all of a target's rows read its overlaps in the plan's
// layout: SpecStep's fit through the layout's steps gives the digits of the
// fit of each row's copy of its step's share, and the layout read back in
// the rows' order is the overlaps it was made of.
func TestLaidOverlapsMatchRowOrder(t *testing.T) {
	rows, groups, use, xs, shares := leanRun(8)
	o := KernelOptions{}.withDefaults()
	plan := newWithinPlan(rows, groups, use, nil)
	if len(plan.dropped) == 0 {
		t.Fatal("no dropped rows: the layout's second part is not tested")
	}
	lay := plan.layout(rows, overlapSet{x: xs})
	for j := range xs {
		back := slices.Clone(lay.x[j])
		plan.toRowOrder(back)
		for r := range xs[j] {
			if math.Float64bits(back[r]) != math.Float64bits(xs[j][r]) {
				t.Fatalf("source %d, row %d: %v back, was %v", j, r, back[r], xs[j][r])
			}
		}
	}
	ys := rowShares(rows, xs, shares)
	want := fitKernels(rows, groups, use, ys, nil, o, plan, formOverlap, nil)
	got := fitLaid(rows, groups, laidOverlaps{x: lay.x, step: shares, stepOf: plan.layoutSteps(rows)}, o, plan, formOverlap, nil)
	if want.reason != "" || !sameFit(want, got) {
		t.Errorf("through the layout's steps β %v, se %v (%q); the rows' copies β %v, se %v (%q)", got.beta, got.se, got.reason, want.beta, want.se, want.reason)
	}
	if model, laid := fitKernels(rows, groups, use, xs, nil, o, plan, formRate, nil), fitLaid(rows, groups, lay, o, plan, formRate, nil); !sameFit(model, laid) {
		t.Errorf("SpecRate from the layout β %v, from the rows β %v", laid.beta, model.beta)
	}
}

// kernelRegression gives the caller its overlaps back in the rows' order,
// the same values, after the fits that read them in the plan's layout.
func TestKernelRegressionGivesOverlapsBack(t *testing.T) {
	rows, groups, use, xs, shares := leanRun(9)
	before := make([][]float64, len(xs))
	for j := range xs {
		before[j] = append([]float64(nil), xs[j]...)
	}
	sources := []busyKey{{"a", 0}, {"b", 0}}
	pairs := kernelRegression(busyKey{"t", 0}, sources, []bool{false, false}, []int16{-1, -1}, rows, groups, use, xs, shares, KernelOptions{}.withDefaults(), true)
	if !pairs[0].Estimable || len(pairs[0].Sensitivity) != 2 || len(pairs[0].ByCategory) == 0 {
		t.Fatalf("pair a: estimable %v, %d specifications, %d categories (%s)", pairs[0].Estimable, len(pairs[0].Sensitivity), len(pairs[0].ByCategory), pairs[0].Reason)
	}
	for j := range xs {
		if len(xs[j]) != len(before[j]) {
			t.Fatalf("source %d: %d overlaps back, had %d", j, len(xs[j]), len(before[j]))
		}
		for r := range xs[j] {
			if math.Float64bits(xs[j][r]) != math.Float64bits(before[j][r]) {
				t.Fatalf("source %d, row %d: %v back, was %v", j, r, xs[j][r], before[j][r])
			}
		}
	}
}

// A plan built from the full plan's bases alone (what the per-category
// fits hold) is the plan built from the full plan, and so is the fit.
func TestPlanFromBasesAlone(t *testing.T) {
	all, groups, _, allX, _ := leanRun(10)
	// With batch controls, so that the bases are more than the constant:
	// the rows of a step only, as kernelRows keeps them.
	var rows []kernelRow
	xs := make([][]float64, len(allX))
	for r := range all {
		if all[r].step >= 0 {
			rows = append(rows, all[r])
			for j := range xs {
				xs[j] = append(xs[j], allX[j][r])
			}
		}
	}
	use := batchUse{size: true, tok: true, ctx: true, steps: leanSteps(rows)}
	full := newWithinPlan(rows, groups, use, nil)
	sel := make([]bool, len(rows))
	var sub []kernelRow
	for r := range rows {
		if sel[r] = rows[r].cat == ingest.CategoryGEMM; sel[r] {
			sub = append(sub, rows[r])
		}
	}
	want, got := newWithinPlan(sub, groups, use, full), newWithinPlan(sub, groups, use, full.bases())
	if !slices.Equal(want.order, got.order) || !slices.Equal(want.dest, got.dest) || !slices.Equal(want.rank, got.rank) || want.absorbed != got.absorbed || len(want.segs) != len(got.segs) {
		t.Fatalf("from the bases: %d kept in %d segs, absorbed %d; from the plan: %d in %d, %d", got.kept, len(got.segs), got.absorbed, want.kept, len(want.segs), want.absorbed)
	}
	for i := range want.segs {
		w, g := want.segs[i].basis, got.segs[i].basis
		if (w == nil) != (g == nil) || w != nil && &w[0][0] != &g[0][0] {
			t.Fatalf("seg %d: not the full plan's basis", i)
		}
	}
	o := KernelOptions{}.withDefaults()
	if a, b := fitKernels(rows, groups, use, xs, sel, o, full, formOverlap, nil), fitKernels(rows, groups, use, xs, sel, o, full.bases(), formOverlap, nil); a.reason != "" || !sameFit(a, b) {
		t.Errorf("category fit from the bases β %v (%q), from the plan β %v (%q)", b.beta, b.reason, a.beta, a.reason)
	}
}

// leanSteps is steps for rows' step indices with batch measures that vary.
func leanSteps(rows []kernelRow) []KernelStep {
	last := int32(0)
	for _, r := range rows {
		last = max(last, r.step)
	}
	steps := make([]KernelStep, last+1)
	for s := range steps {
		steps[s] = KernelStep{Size: float64(1 + s%61), Tokens: float64(1 + (s*37)%4093), Context: float64(1 + (s*101)%65521)}
	}
	return steps
}

// rowShares is each source's overlap a row as SpecStep reads it: the row's
// step's share where it has a step, its own overlap otherwise (the per-row
// copy the kernel fit held before stepShares).
func rowShares(rows []kernelRow, xs, shares [][]float64) [][]float64 {
	ys := make([][]float64, len(xs))
	for j := range ys {
		ys[j] = make([]float64, len(rows))
		for r := range rows {
			ys[j][r] = xs[j][r]
			if rows[r].step >= 0 {
				ys[j][r] = shares[j][rows[r].step]
			}
		}
	}
	return ys
}
