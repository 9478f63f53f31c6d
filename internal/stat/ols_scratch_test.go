package stat

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/mat"
)

// A fit with a Scratch puts its residuals in the right-hand side's memory:
// a second fit of 200,000 rows allocates a few KB (the coefficients, the
// inverse, LAPACK's work), not the 1.6 MB of a residual a row, and its
// residuals are y − Xβ to the digit.
func TestFitOLSResidualsInScratch(t *testing.T) {
	const n, k = 200_000, 2
	rng := rand.New(rand.NewPCG(4, 4))
	data := make([]float64, n*k)
	y := make([]float64, n)
	for i := range n {
		data[i*k], data[i*k+1] = rng.NormFloat64(), rng.NormFloat64()
		y[i] = 0.5*data[i*k] - 2*data[i*k+1] + rng.NormFloat64()
	}
	x := mat.NewDense(n, k, data)
	var sc Scratch
	if _, err := FitOLS(x, y, &sc); err != nil {
		t.Fatal(err)
	}
	f, got := fitAllocating(t, x, y, &sc)
	if got > 64<<10 {
		t.Errorf("a fit with a warm Scratch allocated %d bytes, want under 64 KiB (a residual a row is %d)", got, 8*n)
	}
	for i := range n {
		want := y[i] - (data[i*k]*f.Beta[0] + data[i*k+1]*f.Beta[1])
		if math.Float64bits(f.Resid[i]) != math.Float64bits(want) {
			t.Fatalf("residual %d: %v, want %v", i, f.Resid[i], want)
		}
	}
}

// unitColumns' norms and scaled copy are, to the bit, those of a pass down
// each column in turn (each sum from the first row down), also for a view
// whose stride is wider than its columns; and it names the first column
// that cannot be scaled, as that pass stopped at.
func TestUnitColumnsMatchesColumnPasses(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 2))
	const n, k, stride = 1001, 5, 7
	data := make([]float64, n*stride)
	for i := range data {
		data[i] = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-6))
	}
	x := blas64.General{Rows: n, Cols: k, Stride: stride, Data: data}
	scaled, norms := make([]float64, n*k), make([]float64, k)
	if j := unitColumns(x, scaled, norms); j != -1 {
		t.Fatalf("column %d refused", j)
	}
	for j := range k {
		ss := 0.0
		for i := range n {
			ss += data[i*stride+j] * data[i*stride+j]
		}
		norm := math.Sqrt(ss)
		if math.Float64bits(norms[j]) != math.Float64bits(norm) {
			t.Fatalf("column %d: norm %v, a pass down the column %v", j, norms[j], norm)
		}
		for i := range n {
			if got, want := scaled[i*k+j], data[i*stride+j]/norm; math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("row %d column %d: %v, want %v", i, j, got, want)
			}
		}
	}
	for i := range n {
		data[i*stride+1], data[i*stride+3] = 0, math.Inf(1)
	}
	if j := unitColumns(x, scaled, norms); j != 1 {
		t.Errorf("columns 1 (zero) and 3 (infinite) refused as column %d, want 1", j)
	}
}

// Cluster, which looks a cluster up only where the label changes from the
// row before, gives to the bit the covariance of a lookup every row, on
// labels in runs and interleaved (a cluster left and come back to).
func TestClusterLooksUpLabelRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 8))
	const n, k = 600, 3
	data, y, groups := make([]float64, n*k), make([]float64, n), make([]int, n)
	for i := range n {
		data[i*k], data[i*k+1], data[i*k+2] = 1, rng.NormFloat64(), rng.NormFloat64()
		y[i] = data[i*k+1] + rng.NormFloat64()
		groups[i] = i / 40
		if rng.IntN(5) == 0 {
			groups[i] = rng.IntN(n / 40)
		}
	}
	f, err := FitOLS(mat.NewDense(n, k, data), y, nil)
	if err != nil {
		t.Fatal(err)
	}
	scores := map[int][]float64{}
	var order []int
	for i := range n {
		s, ok := scores[groups[i]]
		if !ok {
			s = make([]float64, k)
			scores[groups[i]] = s
			order = append(order, groups[i])
		}
		for j := range k {
			s[j] += data[i*k+j] * f.Resid[i]
		}
	}
	meat := mat.NewSymDense(k, nil)
	for _, g := range order {
		meat.SymRankOne(meat, 1, mat.NewVecDense(k, scores[g]))
	}
	want := f.sandwich(meat, f.clusterFactor(StataCR1, len(order)))
	got, g := f.Cluster(groups, StataCR1)
	if g != len(order) {
		t.Fatalf("%d clusters, want %d", g, len(order))
	}
	for a := range k {
		for b := range k {
			if math.Float64bits(got.At(a, b)) != math.Float64bits(want.At(a, b)) {
				t.Errorf("V[%d,%d] = %v, a lookup every row gives %v", a, b, got.At(a, b), want.At(a, b))
			}
		}
	}
}

// A Scratch keeps LAPACK's workspace from fit to fit: a warm scratch's fit
// allocates under 16 KiB (Ormqr's workspace alone, made each fit, was 33
// KB), and a fit whose workspace held another design's values, wider and
// longer, gives the digits of a fit with a scratch of its own.
func TestFitOLSKeepsWorkspace(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	fitOf := func(n, k int) (*mat.Dense, []float64) {
		data := make([]float64, n*k)
		y := make([]float64, n)
		for i := range data {
			data[i] = rng.NormFloat64()
		}
		for i := range y {
			y[i] = data[i*k] + rng.NormFloat64()
		}
		return mat.NewDense(n, k, data), y
	}
	wide, wideY := fitOf(5000, 9)
	x, y := fitOf(1000, 3)
	var sc Scratch
	if _, err := FitOLS(wide, wideY, &sc); err != nil {
		t.Fatal(err)
	}
	got, b := fitAllocating(t, x, y, &sc)
	if b > 16<<10 {
		t.Errorf("a fit with a warm Scratch allocated %d bytes, want under 16 KiB", b)
	}
	want, err := FitOLS(x, y, nil)
	if err != nil {
		t.Fatal(err)
	}
	for j := range want.Beta {
		if math.Float64bits(got.Beta[j]) != math.Float64bits(want.Beta[j]) {
			t.Errorf("beta %d: %v with the kept workspace, %v with a new one", j, got.Beta[j], want.Beta[j])
		}
	}
	if got.RSS != want.RSS || got.Cond != want.Cond {
		t.Errorf("RSS %v cond %v with the kept workspace, %v %v with a new one", got.RSS, got.Cond, want.RSS, want.Cond)
	}
}

// fitAllocating fits y on x with sc and returns the fit and the bytes the
// fit allocated.
func fitAllocating(t *testing.T, x *mat.Dense, y []float64, sc *Scratch) (*OLS, uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := FitOLS(x, y, sc)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	return f, after.TotalAlloc - before.TotalAlloc
}

// A fit given its design's sums of squares (Scratch.Squares) and leaving
// its residuals for later (DeferResid, SetResid) is the plain fit to the
// bit: coefficients, inverse, condition and residuals; a fit given sums of
// squares of another width fails, and the next fit does not read them.
func TestFitOLSSquaresAndDeferredResid(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 1))
	for _, k := range []int{1, 2, 3, 5} {
		const n = 3000
		data := make([]float64, n*k)
		y := make([]float64, n)
		for i := range data {
			data[i] = rng.NormFloat64() * float64(1+i%k)
		}
		for i := range y {
			y[i] = data[i*k] + rng.NormFloat64()
		}
		x := mat.NewDense(n, k, data)
		want, err := FitOLS(x, y, nil)
		if err != nil {
			t.Fatal(err)
		}
		squares := make([]float64, k)
		for i := range n {
			for j, v := range data[i*k : (i+1)*k] {
				squares[j] += float64(v * v)
			}
		}
		sc := Scratch{Squares: squares, DeferResid: true}
		got, err := FitOLS(x, y, &sc)
		if err != nil {
			t.Fatal(err)
		}
		if sc.Squares != nil || got.Resid != nil || got.RSS != 0 {
			t.Fatalf("k=%d: Squares left %v, Resid before SetResid %v, RSS %v", k, sc.Squares, got.Resid != nil, got.RSS)
		}
		got.SetResid()
		for j := range k {
			if math.Float64bits(got.Beta[j]) != math.Float64bits(want.Beta[j]) {
				t.Fatalf("k=%d: β[%d] %v, want %v", k, j, got.Beta[j], want.Beta[j])
			}
			for l := range k {
				if math.Float64bits(got.XtXInv.At(j, l)) != math.Float64bits(want.XtXInv.At(j, l)) {
					t.Fatalf("k=%d: (X'X)⁻¹[%d,%d] differs", k, j, l)
				}
			}
		}
		if got.Cond != want.Cond || math.Float64bits(got.RSS) != math.Float64bits(want.RSS) {
			t.Fatalf("k=%d: cond %v, RSS %v; want %v, %v", k, got.Cond, got.RSS, want.Cond, want.RSS)
		}
		for i := range n {
			if math.Float64bits(got.Resid[i]) != math.Float64bits(want.Resid[i]) {
				t.Fatalf("k=%d: residual %d %v, want %v", k, i, got.Resid[i], want.Resid[i])
			}
		}
		sc.Squares = make([]float64, k+1)
		if _, err := FitOLS(x, y, &sc); err == nil {
			t.Errorf("k=%d: %d sums of squares for %d columns: no error", k, k+1, k)
		}
		if sc.Squares != nil {
			t.Errorf("k=%d: a failed fit left its sums of squares for the next", k)
		}
	}
}
