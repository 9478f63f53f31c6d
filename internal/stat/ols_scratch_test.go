package stat

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"

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
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f, err := FitOLS(x, y, &sc)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
		t.Errorf("a fit with a warm Scratch allocated %d bytes, want under 64 KiB (a residual a row is %d)", got, 8*n)
	}
	for i := range n {
		want := y[i] - (data[i*k]*f.Beta[0] + data[i*k+1]*f.Beta[1])
		if math.Float64bits(f.Resid[i]) != math.Float64bits(want) {
			t.Fatalf("residual %d: %v, want %v", i, f.Resid[i], want)
		}
	}
}
