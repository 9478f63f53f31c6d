package causal

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Groups that ran in the same steps share one basis the plan holds, built
// once; a plan that may hold none builds each where it is applied. Held or
// not, full plan or a subset's, the residuals are the plain
// residualization's digit for digit, and the plan absorbs and keeps what it
// does.
func TestWithinPlanHeldBases(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 21))
	const groups = 24
	var steps []KernelStep
	var rows []kernelRow
	for s := 0; s < 400; s++ {
		steps = append(steps, KernelStep{Size: float64(1 + rng.IntN(64)), Tokens: float64(1 + rng.IntN(4096)), Context: float64(1 + rng.IntN(1<<16))})
		for g := 0; g < groups; g++ {
			// Groups below 12 run in every step (one sequence of steps);
			// the others in a step now and then (a sequence each), the last
			// ones too rarely to keep.
			if g < 12 || rng.IntN(g-8) == 0 && (g < 22 || rng.IntN(100) == 0) {
				rows = append(rows, kernelRow{group: int32(g), step: int32(s)})
			}
		}
	}
	use := batchUse{size: true, tok: true, ctx: true, steps: steps}
	var sub []kernelRow
	for _, r := range rows {
		if r.group%3 != 1 || rng.IntN(2) == 0 {
			sub = append(sub, r) // groups 1, 4, 7, ... split, the others whole
		}
	}
	held := newWithinPlan(rows, groups, use, nil)
	none := newWithinPlanHolding(rows, groups, use, nil, 0)
	for _, tc := range []struct {
		name string
		rows []kernelRow
		plan *withinPlan
		held bool
	}{
		{"held", rows, held, true},
		{"none held", rows, none, false},
		{"subset of held", sub, newWithinPlan(sub, groups, use, held), true},
		{"subset of none held", sub, newWithinPlanHolding(sub, groups, use, none, 0), false},
	} {
		p := tc.plan
		nHeld := 0
		for _, s := range p.segs {
			if s.basis != nil {
				nHeld++
			}
		}
		if tc.held && nHeld != len(p.segs) || !tc.held && nHeld != 0 {
			t.Errorf("%s: %d of %d bases held", tc.name, nHeld, len(p.segs))
		}
		if tc.held != (p.ctlStep == nil) {
			t.Errorf("%s: steps of the rows kept %v, want %v", tc.name, p.ctlStep != nil, !tc.held)
		}
		const ncol = 3
		cols := make([][]float64, ncol)
		for j := range cols {
			cols[j] = make([]float64, len(tc.rows))
			for r := range cols[j] {
				cols[j][r] = rng.NormFloat64() + float64(j)*math.Log(use.measure(&tc.rows[r], 1))
			}
		}
		checkPlanAgainstReference(t, tc.name, p, tc.rows, groups, use, cols)
	}
	// The twelve groups of every step hold one basis between them.
	first := held.segs[held.segOf[0]].basis
	for g := 1; g < 12; g++ {
		if b := held.segs[held.segOf[g]].basis; &b[0][0] != &first[0][0] {
			t.Errorf("group %d's basis is a copy of group 0's, not the same memory", g)
		}
	}
	if held.segs[held.segOf[12]].basis == nil || &held.segs[held.segOf[12]].basis[0][0] == &first[0][0] {
		t.Errorf("group 12, in steps of its own, shares group 0's basis")
	}
}

// SpecRate's fit, started from the model's fit's first step (the
// log-linear model, the same in both forms), gives the digits of the fit
// that takes that step itself; a start that is not that step gives others.
func TestRateFitFromFirstStep(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 4))
	const groups, perStep = 8, 8
	var steps []KernelStep
	var rows []kernelRow
	xs := make([][]float64, 2)
	for s := 0; s < 1500; s++ {
		at := int64(s) * 10e6
		steps = append(steps, KernelStep{Start: at, End: at + 9e6, Size: float64(1 + rng.IntN(64)), Tokens: float64(1 + rng.IntN(4096)), Context: float64(1 + rng.IntN(1<<16))})
		for g := 0; g < perStep; g++ {
			x0, x1 := rng.Float64(), rng.Float64()*rng.Float64()
			d := math.Exp(10+0.1*float64(g)+0.05*math.Log(steps[s].Tokens)+0.1*rng.NormFloat64()) * (1 + 0.3*x0 + 0.05*x1)
			rows = append(rows, kernelRow{start: at + int64(g)*1e6, dur: int64(d), group: int32(g % groups), step: int32(s)})
			xs[0], xs[1] = append(xs[0], x0), append(xs[1], x1)
		}
	}
	use := batchUse{size: true, tok: true, ctx: true, steps: steps}
	o := KernelOptions{}.withDefaults()
	plan := newWithinPlan(rows, groups, use, nil)
	model := fitKernels(rows, groups, use, xs, nil, o, plan, formOverlap, nil)
	if model.reason != "" || model.first == nil {
		t.Fatalf("the model's fit: %q, first step %v", model.reason, model.first)
	}
	want := fitKernels(rows, groups, use, xs, nil, o, plan, formRate, nil)
	got := fitKernels(rows, groups, use, xs, nil, o, plan, formRate, model.first)
	if want.reason != "" || got.reason != "" {
		t.Fatalf("rate fits: %q, %q", want.reason, got.reason)
	}
	same := func(a, b kernelFit) bool {
		for j := range a.beta {
			if math.Float64bits(a.beta[j]) != math.Float64bits(b.beta[j]) || math.Float64bits(a.se[j]) != math.Float64bits(b.se[j]) {
				return false
			}
		}
		return a.n == b.n && a.blocks == b.blocks && a.blockNs == b.blockNs
	}
	if !same(want, got) {
		t.Errorf("from the first step: β %v, se %v; taking it: β %v, se %v", got.beta, got.se, want.beta, want.se)
	}
	flat := &firstStep{stretch: model.first.stretch, sigma: make([]float64, groups)}
	for g := range flat.sigma {
		flat.sigma[g] = 1
	}
	if other := fitKernels(rows, groups, use, xs, nil, o, plan, formRate, flat); same(want, other) {
		t.Errorf("a start with other weights gives the same digits: the start is not used")
	}
}
