package stat

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/spill/spilltest"
)

// A Spilled scratch keeps the scaled copy and the right-hand side in spill
// files while spilling is on: the fit is the one of a scratch on the heap,
// digit for digit; a larger fit gives the smaller buffers back as it
// replaces them, and Free gives back the rest.
func TestFitOLSSpilledScratch(t *testing.T) {
	const k = 3
	rng := rand.New(rand.NewPCG(5, 5))
	design := func(n int) (*mat.Dense, []float64) {
		data := make([]float64, n*k)
		y := make([]float64, n)
		for i := range n {
			for j := range k {
				data[i*k+j] = rng.NormFloat64()
			}
			y[i] = data[i*k] - 0.5*data[i*k+2] + rng.NormFloat64()
		}
		return mat.NewDense(n, k, data), y
	}
	x1, y1 := design(2000)
	x2, y2 := design(4000)
	var heap Scratch
	want1, err1 := FitOLS(x1, y1, &heap)
	if err1 != nil {
		t.Fatal(err1)
	}
	wantResid1 := append([]float64(nil), want1.Resid...)
	want2, err2 := FitOLS(x2, y2, &heap)
	if err2 != nil {
		t.Fatal(err2)
	}

	spilltest.Enable(t)
	spill.Budget(64 << 10) // tables of 8 KiB and more in files
	sc := Scratch{Spilled: true}
	got1, err := FitOLS(x1, y1, &sc)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := spill.Read().Mapped, int64(8*2000*(k+1)); got != want {
		t.Errorf("after a fit of 2000 rows %d bytes in spill files, want %d (the scaled copy and the right-hand side)", got, want)
	}
	sameOLS(t, "2000 rows", got1, want1, wantResid1)
	got2, err := FitOLS(x2, y2, &sc)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := spill.Read().Mapped, int64(8*4000*(k+1)); got != want {
		t.Errorf("after a fit of 4000 rows %d bytes in spill files, want %d (the smaller buffers given back)", got, want)
	}
	sameOLS(t, "4000 rows", got2, want2, want2.Resid)
	sc.Free()
	if got := spill.Read().Mapped; got != 0 {
		t.Errorf("after Free %d bytes in spill files, want 0", got)
	}
}

// sameOLS reports where got is not want (whose residuals are resid) bit for
// bit.
func sameOLS(t *testing.T, name string, got, want *OLS, resid []float64) {
	t.Helper()
	same := func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return false
			}
		}
		return true
	}
	if !same(got.Beta, want.Beta) || !same(got.Resid, resid) || math.Float64bits(got.RSS) != math.Float64bits(want.RSS) ||
		math.Float64bits(got.Cond) != math.Float64bits(want.Cond) || !mat.Equal(got.XtXInv, want.XtXInv) {
		t.Errorf("%s: spilled β %v, RSS %v, cond %v; on the heap β %v, RSS %v, cond %v", name, got.Beta, got.RSS, got.Cond, want.Beta, want.RSS, want.Cond)
	}
}
