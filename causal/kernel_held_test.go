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
		want, absorbed, kept := referenceWithin(tc.rows, groups, use, cols)
		if p.absorbed != absorbed || p.kept != kept {
			t.Fatalf("%s: plan absorbs %d and keeps %d rows, reference %d and %d", tc.name, p.absorbed, p.kept, absorbed, kept)
		}
		in, outs := make([][]float64, ncol), make([][]float64, ncol)
		for j := range in {
			in[j] = make([]float64, p.kept)
			for i, r := range p.order {
				in[j][i] = cols[j][r]
			}
			outs[j] = make([]float64, p.kept)
		}
		p.apply(in, outs)
		for j := range outs {
			for a := range outs[j] {
				if math.Float64bits(outs[j][a]) != math.Float64bits(want[j][a]) {
					t.Fatalf("%s: column %d row %d is %v, reference %v", tc.name, j, a, outs[j][a], want[j][a])
				}
			}
		}
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
