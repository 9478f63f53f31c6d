package causal

import (
	"math"
	"math/rand/v2"
	"testing"
)

// fillDesign (the kernel fit's columns written one identity at a time into
// the response and a row-major design) gives apply's residuals digit for
// digit, for 1 to 6 columns, with groups too small to keep; a fill that
// stops makes it stop.
func TestFillDesignMatchesApply(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 2))
	const groups = 30
	var rows []kernelRow
	var steps []KernelStep
	for r := 0; r < 2500; r++ {
		g := rng.IntN(groups)
		if g%7 == 0 && rng.IntN(15) > 0 {
			continue
		}
		rows = append(rows, batchRow(&steps, g, float64(1+rng.IntN(64)), float64(1+rng.IntN(4096)), float64(1+rng.IntN(1<<16))))
	}
	use := batchUse{size: true, tok: true, ctx: true, steps: steps}
	p := newWithinPlan(rows, groups, use, nil)
	for ncol := 1; ncol <= 6; ncol++ {
		byRow := make([][]float64, ncol)
		for c := range byRow {
			byRow[c] = make([]float64, len(rows))
			for r := range byRow[c] {
				byRow[c][r] = rng.NormFloat64() + float64(c)*math.Log(use.measure(&rows[r], 1))
			}
		}
		in, outs := make([][]float64, ncol), make([][]float64, ncol)
		for c := range in {
			in[c] = make([]float64, p.kept)
			for i, r := range p.order {
				in[c][i] = byRow[c][r]
			}
			outs[c] = make([]float64, p.kept)
		}
		p.apply(in, outs)
		y, design := make([]float64, p.kept), make([]float64, p.kept*(ncol-1))
		squares := make([]float64, ncol-1)
		ok := p.fillDesign(ncol, func(i, a int, vals [][]float64) bool {
			for c := range vals {
				vals[c][a] = byRow[c][p.order[i]]
			}
			return true
		}, nil, y, design, nil, squares)
		if !ok {
			t.Fatalf("%d columns: fill stopped", ncol)
		}
		// The sums of squares, as stat's columnNorms sums them.
		for c := range squares {
			want := 0.0
			for i := 0; i < p.kept; i++ {
				v := design[i*(ncol-1)+c]
				want += float64(v * v)
			}
			if math.Float64bits(squares[c]) != math.Float64bits(want) {
				t.Fatalf("%d columns: column %d's sum of squares %v, want %v", ncol, c+1, squares[c], want)
			}
		}
		for i := 0; i < p.kept; i++ {
			if math.Float64bits(y[i]) != math.Float64bits(outs[0][i]) {
				t.Fatalf("%d columns: response row %d is %v, apply %v", ncol, i, y[i], outs[0][i])
			}
			for c := 1; c < ncol; c++ {
				if got := design[i*(ncol-1)+c-1]; math.Float64bits(got) != math.Float64bits(outs[c][i]) {
					t.Fatalf("%d columns: column %d row %d is %v, apply %v", ncol, c, i, got, outs[c][i])
				}
			}
		}
	}
	calls := 0
	if p.fillDesign(2, func(int, int, [][]float64) bool { calls++; return calls < 10 }, nil, make([]float64, p.kept), make([]float64, p.kept), nil, nil) || calls != 10 {
		t.Errorf("a fill that stops at its 10th row: %d calls", calls)
	}
}
