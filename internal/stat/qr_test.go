package stat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
)

// gonumQR is what FitOLS called before householderQR: Geqrf of a, then
// Ormqr(Left, Trans) of its Q on y, in place.
func gonumQR(a []float64, m, k int, tau, y []float64) {
	qr := blas64.General{Rows: m, Cols: k, Stride: k, Data: a}
	var query [1]float64
	lapack64.Geqrf(qr, tau, query[:], -1)
	work := make([]float64, int(query[0]))
	lapack64.Geqrf(qr, tau, work, len(work))
	rhs := blas64.General{Rows: m, Cols: 1, Stride: 1, Data: y}
	lapack64.Ormqr(blas.Left, blas.Trans, qr, tau, rhs, query[:], -1)
	work = make([]float64, int(query[0]))
	lapack64.Ormqr(blas.Left, blas.Trans, qr, tau, rhs, work, len(work))
}

// unfusedQR is gonumQR written out: Geqrf's unblocked Dgeqr2 (Dlarfg, then
// Dlarf on the columns right of the reflector) and Ormqr's Dorm2r (Dlarf
// on y, reflector by reflector) on the row-major a, as lapack/gonum
// spells them, with gonum's amd64 BLAS kernels' arithmetic: L2NormInc's
// scaled sum, each product rounded before it is added (float64(x*y)),
// GemvT's sums over the rows in order, Ger's (−τ·v_r)·w_j. It is the
// reference householderQR is held to on every platform; where gonum's
// kernels are that assembly (gonumUnfused), it is checked against gonum
// to the bit as well.
func unfusedQR(a []float64, m, k int, tau, y []float64) {
	work := make([]float64, k)
	dscal := func(alpha float64, x []float64, n, inc int) {
		for i := range n {
			if alpha == 0 {
				x[i*inc] = 0
			} else {
				x[i*inc] *= alpha
			}
		}
	}
	dnrm2 := func(x []float64, n, inc int) float64 {
		if n == 1 {
			return math.Abs(x[0])
		}
		scale, ssq := 0.0, 1.0
		for i := range n {
			v := x[i*inc]
			if v == 0 {
				continue
			}
			absxi := math.Abs(v)
			if math.IsNaN(absxi) {
				return math.NaN()
			}
			if scale < absxi {
				s := scale / absxi
				ssq = 1 + float64(ssq*s*s)
				scale = absxi
			} else {
				s := absxi / scale
				ssq += float64(s * s)
			}
		}
		if math.IsInf(scale, 1) {
			return math.Inf(1)
		}
		return scale * math.Sqrt(ssq)
	}
	// dlarf applies I − τ v vᵀ from the left to the mv×nc matrix c (row
	// stride ldc), v's elements v[r·ldv].
	dlarf := func(mv, nc int, v []float64, ldv int, t float64, c []float64, ldc int) {
		if t == 0 {
			return
		}
		lastv := mv - 1
		for lastv >= 0 && v[lastv*ldv] == 0 {
			lastv--
		}
		lastc := -1
		for j := nc - 1; j >= 0 && lastc < 0; j-- {
			for r := 0; r <= lastv; r++ {
				if c[r*ldc+j] != 0 {
					lastc = j
					break
				}
			}
		}
		if lastv < 0 || lastc < 0 {
			return
		}
		w := work[:lastc+1]
		clear(w)
		for r := 0; r <= lastv; r++ {
			for j := range w {
				w[j] += float64(v[r*ldv] * c[r*ldc+j])
			}
		}
		for r := 0; r <= lastv; r++ {
			tv := -t * v[r*ldv]
			for j := range w {
				c[r*ldc+j] += float64(tv * w[j])
			}
		}
	}
	for i := range k {
		// Dlarfg(m−i, a[i][i], a[i+1:][i]).
		alpha, beta, t := a[i*k+i], a[i*k+i], 0.0
		if n := m - i; n > 1 {
			x := a[(i+1)*k+i:]
			if xnorm := dnrm2(x, n-1, k); xnorm != 0 {
				beta = -math.Copysign(math.Hypot(alpha, xnorm), alpha)
				knt := 0
				if math.Abs(beta) < qrSafmin {
					for {
						knt++
						dscal(1/qrSafmin, x, n-1, k)
						beta *= 1 / qrSafmin
						alpha *= 1 / qrSafmin
						if math.Abs(beta) >= qrSafmin {
							break
						}
					}
					beta = -math.Copysign(math.Hypot(alpha, dnrm2(x, n-1, k)), alpha)
				}
				t = (beta - alpha) / beta
				dscal(1/(alpha-beta), x, n-1, k)
				for range knt {
					beta *= qrSafmin
				}
			}
		}
		a[i*k+i], tau[i] = beta, t
		if i < k-1 {
			a[i*k+i] = 1
			dlarf(m-i, k-i-1, a[i*k+i:], k, t, a[i*k+i+1:], k)
			a[i*k+i] = beta
		}
	}
	for i := range k {
		aii := a[i*k+i]
		a[i*k+i] = 1
		dlarf(m-i, 1, a[i*k+i:], k, tau[i], y[i:], 1)
		a[i*k+i] = aii
	}
}

// sameBits reports the first index where a and b differ to the bit, any
// NaN matching any other where nanAny.
func sameBits(a, b []float64, nanAny ...bool) int {
	for i := range a {
		if len(nanAny) > 0 && nanAny[0] && math.IsNaN(a[i]) && math.IsNaN(b[i]) {
			continue
		}
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return i
		}
	}
	return -1
}

// qrCase is a design and response householderQR is checked on.
type qrCase struct {
	name string
	m, k int
	a, y []float64
	// nonFinite marks a case whose NaNs may differ in their sign and
	// payload (the order of an operation's operands picks them): FitOLS
	// gives householderQR finite inputs only.
	nonFinite bool
}

// qrCases are random designs and the shapes that take householderQR's
// rare branches: zeros trailing a column (Dlarf's last row of v), whole
// columns of zeros (τ = 0, Dlarf's last column), tiny columns (Dlarfg's
// rescaling), signed zeros, repeated columns, a zero response and NaN.
func qrCases() []qrCase {
	rng := rand.New(rand.NewPCG(7, 32))
	var cases []qrCase
	add := func(name string, m, k int, fill func(a, y []float64)) {
		a, y := make([]float64, m*k), make([]float64, m)
		for i := range a {
			a[i] = rng.NormFloat64()
		}
		for i := range y {
			y[i] = rng.NormFloat64()
		}
		if fill != nil {
			fill(a, y)
		}
		nonFinite := false
		for _, v := range append(a[:len(a):len(a)], y...) {
			nonFinite = nonFinite || math.IsNaN(v) || math.IsInf(v, 0)
		}
		cases = append(cases, qrCase{name, m, k, a, y, nonFinite})
	}
	for _, k := range []int{1, 2, 3, 5, 8, 9, 13, 32} {
		for _, m := range []int{k + 1, k + 2, 2*k + 3, 100, 1001} {
			add(fmt.Sprintf("random %dx%d", m, k), m, k, nil)
		}
	}
	add("design-like", 5000, 8, func(a, _ []float64) {
		for r := range 5000 {
			a[r*8] = 1
			for j := 1; j < 8; j++ {
				a[r*8+j] = math.Abs(a[r*8+j]) * float64(j*j)
			}
		}
	})
	add("zeros trailing columns", 60, 5, func(a, _ []float64) {
		for r := 40; r < 60; r++ {
			for j := range 5 {
				a[r*5+j] = 0
			}
		}
	})
	add("zeros trailing one column", 60, 5, func(a, _ []float64) {
		for r := 30; r < 60; r++ {
			a[r*5+1] = 0
		}
		for r := 10; r < 20; r++ {
			a[r*5+1] = 0
		}
	})
	add("zero column", 50, 4, func(a, _ []float64) {
		for r := range 50 {
			a[r*4+1] = 0
		}
	})
	add("zero last columns", 50, 4, func(a, _ []float64) {
		for r := range 50 {
			a[r*4+2], a[r*4+3] = 0, math.Copysign(0, -1)
		}
	})
	add("zero below the diagonal", 30, 3, func(a, _ []float64) {
		for r := 1; r < 30; r++ {
			a[r*3] = 0
		}
	})
	add("last column zero but a corner", 40, 6, func(a, _ []float64) {
		for r := range 40 {
			a[r*6+5] = 0
		}
		a[17*6+5] = 2.5
	})
	add("tiny column", 40, 3, func(a, _ []float64) {
		for r := range 40 {
			a[r*3+1] *= 1e-305
		}
	})
	add("tiny everything", 40, 3, func(a, y []float64) {
		for i := range a {
			a[i] *= 1e-310
		}
	})
	add("signed zeros", 40, 4, func(a, y []float64) {
		for r := range 40 {
			if r%3 == 0 {
				a[r*4+2] = math.Copysign(0, -1)
				y[r] = math.Copysign(0, -1)
			}
		}
	})
	add("last element underflows once scaled", 40, 3, func(a, y []float64) {
		// Column 0 ones but its last row, the least subnormal: scaled by
		// 1/(α−β) (below 1/2) it becomes zero, and Dlarf's rows end a
		// row earlier than the column's last nonzero element says.
		for r := range 40 {
			a[r*3] = 1
		}
		a[39*3] = 5e-324
		y[39] = 0
	})
	add("one column whose last element underflows once scaled", 40, 1, func(a, _ []float64) {
		for r := range 40 {
			a[r] = 1
		}
		a[39] = 5e-324
	})
	add("repeated column", 80, 4, func(a, _ []float64) {
		for r := range 80 {
			a[r*4+3] = a[r*4+1]
		}
	})
	add("zero response", 50, 4, func(_, y []float64) { clear(y) })
	add("response zero but its ends", 50, 4, func(_, y []float64) {
		for r := 1; r < 49; r++ {
			y[r] = 0
		}
	})
	add("NaN", 30, 3, func(a, _ []float64) { a[12*3+1] = math.NaN() })
	add("Inf", 30, 3, func(a, _ []float64) { a[12*3+2] = math.Inf(-1) })
	return cases
}

// transpose returns the m×k row-major a column-major (or a k×m one
// row-major).
func transpose(a []float64, m, k int) []float64 {
	t := make([]float64, len(a))
	for i := range m {
		for j := range k {
			t[j*m+i] = a[i*k+j]
		}
	}
	return t
}

// TestHouseholderQRMatchesGonum checks householderQR against unfusedQR,
// gonum's Geqrf and Ormqr written out without fused multiply-adds, to the
// bit (the factored matrix, τ and Qᵀy), and, where gonum's BLAS kernels
// are its amd64 assembly (gonumUnfused), both against gonum's Geqrf and
// Ormqr themselves, which FitOLS called before. Elsewhere gonum's Go
// kernels may fuse (internal/asm/f64's noasm files) and differ from both
// in the last digits; householderQR does not (its float64(x*y)), so its
// bits are gonum's amd64 ones on every platform.
func TestHouseholderQRMatchesGonum(t *testing.T) {
	if !gonumUnfused {
		t.Log("gonum's BLAS kernels are its Go versions here (they may fuse): householderQR is compared with unfusedQR only")
	}
	for _, c := range qrCases() {
		wantA, wantY, wantTau := append([]float64(nil), c.a...), append([]float64(nil), c.y...), make([]float64, c.k)
		unfusedQR(wantA, c.m, c.k, wantTau, wantY)
		if gonumUnfused {
			gA, gY, gTau := append([]float64(nil), c.a...), append([]float64(nil), c.y...), make([]float64, c.k)
			gonumQR(gA, c.m, c.k, gTau, gY)
			if i := sameBits(wantA, gA, c.nonFinite); i >= 0 {
				t.Errorf("%s: unfusedQR's factor element (%d, %d) = %v, gonum %v", c.name, i/c.k, i%c.k, wantA[i], gA[i])
			}
			if i := sameBits(wantTau, gTau, c.nonFinite); i >= 0 {
				t.Errorf("%s: unfusedQR's tau[%d] = %v, gonum %v", c.name, i, wantTau[i], gTau[i])
			}
			if i := sameBits(wantY, gY, c.nonFinite); i >= 0 {
				t.Errorf("%s: unfusedQR's (Qᵀy)[%d] = %v, gonum %v", c.name, i, wantY[i], gY[i])
			}
		}
		gotA, gotY, gotTau := transpose(c.a, c.m, c.k), append([]float64(nil), c.y...), make([]float64, c.k)
		householderQR(gotA, c.m, c.k, gotTau, gotY, make([]float64, c.k))
		gotA = transpose(gotA, c.k, c.m)
		if i := sameBits(gotA, wantA, c.nonFinite); i >= 0 {
			t.Errorf("%s: factor element (%d, %d) = %v, unfusedQR %v", c.name, i/c.k, i%c.k, gotA[i], wantA[i])
		}
		if i := sameBits(gotTau, wantTau, c.nonFinite); i >= 0 {
			t.Errorf("%s: tau[%d] = %v, unfusedQR %v", c.name, i, gotTau[i], wantTau[i])
		}
		if i := sameBits(gotY, wantY, c.nonFinite); i >= 0 {
			t.Errorf("%s: (Qᵀy)[%d] = %v, unfusedQR %v", c.name, i, gotY[i], wantY[i])
		}
		// Without the last reflector's vector stored (FitOLS's way): the
		// same τ, Qᵀy and factor but below the last column's diagonal.
		gotA, gotY, gotTau = transpose(c.a, c.m, c.k), append([]float64(nil), c.y...), make([]float64, c.k)
		householderQRFrom(gotA, c.m, c.k, gotTau, gotY, make([]float64, c.k), l2norm{}, false, false)
		gotA = transpose(gotA, c.k, c.m)
		for r := c.k; r < c.m; r++ {
			gotA[r*c.k+c.k-1] = wantA[r*c.k+c.k-1]
		}
		if i := sameBits(gotA, wantA, c.nonFinite); i >= 0 {
			t.Errorf("%s, last vector not kept: factor element (%d, %d) = %v, unfusedQR %v", c.name, i/c.k, i%c.k, gotA[i], wantA[i])
		}
		if i := sameBits(gotTau, wantTau, c.nonFinite); i >= 0 {
			t.Errorf("%s, last vector not kept: tau[%d] = %v, unfusedQR %v", c.name, i, gotTau[i], wantTau[i])
		}
		if i := sameBits(gotY, wantY, c.nonFinite); i >= 0 {
			t.Errorf("%s, last vector not kept: (Qᵀy)[%d] = %v, unfusedQR %v", c.name, i, gotY[i], wantY[i])
		}
	}
}

// sameFit reports how two fits of the same data differ to the bit, or "".
func sameFit(a, b *OLS) string {
	switch {
	case sameBits(a.Beta, b.Beta) >= 0:
		return fmt.Sprintf("beta %v, %v", a.Beta, b.Beta)
	case sameBits(a.Resid, b.Resid) >= 0:
		return fmt.Sprintf("residual %d", sameBits(a.Resid, b.Resid))
	case sameBits(a.XtXInv.RawSymmetric().Data, b.XtXInv.RawSymmetric().Data) >= 0:
		return "(X'X)⁻¹"
	case sameBits([]float64{a.RSS, a.Cond, a.MinPivot}, []float64{b.RSS, b.Cond, b.MinPivot}) >= 0:
		return fmt.Sprintf("RSS, cond, min pivot %v %v %v, %v %v %v", a.RSS, a.Cond, a.MinPivot, b.RSS, b.Cond, b.MinPivot)
	}
	return ""
}

// TestFitOLSFusedMatchesGonum checks FitOLS and FitOLSColumns, which
// factor by householderQR, against FitOLS through gonum's Geqrf and
// Ormqr (fusedQRWidth 0), every figure to the bit, on the finite designs
// of qrCases with a constant column added; FitOLSColumns against FitOLS
// on every platform, the two against gonum's where its kernels do not
// fuse (gonumUnfused; elsewhere TestHouseholderQRMatchesGonum holds the
// QR to unfusedQR).
func TestFitOLSFusedMatchesGonum(t *testing.T) {
	if !gonumUnfused {
		t.Log("gonum's BLAS kernels are its Go versions here (they may fuse): FitOLSColumns is compared with FitOLS only")
	}
	fitted := 0
	for _, c := range qrCases() {
		if c.nonFinite {
			continue
		}
		n, k := c.m+1, c.k+1
		x := make([]float64, n*k)
		cols := make([][]float64, k)
		for j := range cols {
			cols[j] = make([]float64, n)
		}
		for i := range n {
			x[i*k], cols[0][i] = 1, 1
			for j := 1; j < k; j++ {
				v := c.a[(i%c.m)*c.k+j-1] + float64(i)*1e-3*float64(j)
				x[i*k+j], cols[j][i] = v, v
			}
		}
		y := append(append([]float64(nil), c.y...), 0.5)
		fusedQRWidth = 0
		want, wantErr := FitOLS(mat.NewDense(n, k, x), y, nil)
		fusedQRWidth = maxFusedQR
		got, gotErr := FitOLS(mat.NewDense(n, k, x), y, nil)
		gotCols, gotColsErr := FitOLSColumns(mat.NewDense(n, k, x), cols, y, nil)
		if (wantErr != nil) != (gotErr != nil) || (wantErr != nil) != (gotColsErr != nil) {
			t.Errorf("%s: errors %v, %v, gonum's %v", c.name, gotErr, gotColsErr, wantErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		fitted++
		if d := sameFit(gotCols, got); d != "" {
			t.Errorf("%s: FitOLSColumns differs from FitOLS: %s", c.name, d)
		}
		if !gonumUnfused {
			continue
		}
		if d := sameFit(got, want); d != "" {
			t.Errorf("%s: FitOLS differs from gonum's: %s", c.name, d)
		}
		if d := sameFit(gotCols, want); d != "" {
			t.Errorf("%s: FitOLSColumns differs from gonum's: %s", c.name, d)
		}
	}
	if fitted < 40 {
		t.Errorf("only %d of the designs fitted", fitted)
	}
}

func BenchmarkHouseholderQR(b *testing.B) {
	for _, m := range []int{7400, 74000} {
		k := 8
		rng := rand.New(rand.NewPCG(3, 4))
		a0, y0 := make([]float64, m*k), make([]float64, m)
		for i := range a0 {
			a0[i] = rng.NormFloat64()
		}
		for i := range y0 {
			y0[i] = rng.NormFloat64()
		}
		a, y, tau, w := make([]float64, m*k), make([]float64, m), make([]float64, k), make([]float64, k)
		b.Run(fmt.Sprintf("gonum/%dx%d", m, k), func(b *testing.B) {
			for b.Loop() {
				copy(a, a0)
				copy(y, y0)
				gonumQR(a, m, k, tau, y)
			}
		})
		b.Run(fmt.Sprintf("fused/%dx%d", m, k), func(b *testing.B) {
			for b.Loop() {
				copy(a, a0)
				copy(y, y0)
				householderQR(a, m, k, tau, y, w)
			}
		})
	}
}

// TestFitOLSColumnsChecksLengths: FitOLSColumns lays its scaled copy out by
// the columns' length, so a column longer or shorter than the design is an
// error, not a fit of misplaced rows (or an index out of range).
func TestFitOLSColumnsChecksLengths(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	n, k := 40, 3
	x := make([]float64, n*k)
	cols := make([][]float64, k)
	for j := range cols {
		cols[j] = make([]float64, n+5)
	}
	for i := range n {
		for j := range k {
			v := rng.NormFloat64()
			x[i*k+j], cols[j][i] = v, v
		}
	}
	y := make([]float64, n)
	for i := range y {
		y[i] = rng.NormFloat64()
	}
	for _, tc := range []struct {
		name string
		cols [][]float64
	}{
		{"a short column", [][]float64{cols[0][:n], cols[1][:n-1], cols[2][:n]}},
		{"long columns", [][]float64{cols[0], cols[1], cols[2]}},
	} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					err = fmt.Errorf("panic: %v", r)
					t.Errorf("%s: %v", tc.name, err)
				}
			}()
			_, err = FitOLSColumns(mat.NewDense(n, k, x), tc.cols, y, nil)
		}()
		if err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := FitOLSColumns(mat.NewDense(n, k, x), [][]float64{cols[0][:n], cols[1][:n], cols[2][:n]}, y, nil); err != nil {
		t.Errorf("columns of the design's length: %v", err)
	}
}
