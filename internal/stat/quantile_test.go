package stat

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestQuantileNumpyLinear(t *testing.T) {
	x := []float64{1, 2, 3, 4, 10}
	// numpy.quantile(x, q) with the default method="linear".
	for _, tc := range []struct {
		name string
		q    float64
		want float64
	}{
		{"min", 0, 1},
		{"p10", 0.1, 1.4},
		{"median", 0.5, 3},
		{"p90", 0.9, 7.6},
		{"p99", 0.99, 9.76},
		{"max", 1, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Quantile(x, tc.q); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("Quantile(%v) = %v, want %v", tc.q, got, tc.want)
			}
		})
	}
	if !math.IsNaN(Quantile(nil, 0.5)) {
		t.Error("empty sample: want NaN")
	}
}

func TestMedianMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n < 60; n++ {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(rng.IntN(7)) // many ties
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		want := sorted[n/2]
		if n%2 == 0 {
			want = (sorted[n/2-1] + sorted[n/2]) / 2
		}
		if got := Median(xs); got != want {
			t.Fatalf("n=%d: median = %g, want %g (%v)", n, got, want, sorted)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("median of nothing is not NaN")
	}
}

func TestTheilSen(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name     string
		n        int
		outliers float64
		noise    float64
	}{
		{"exact line", 50, 0, 0},
		{"noisy", 400, 0, 50},
		{"25% gross outliers", 400, 0.25, 50},
		{"sampled pairs (n > 1449)", 3000, 0.1, 50},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			const a, d = 1234.5, -87.25
			u := make([]float64, tc.n)
			r := make([]float64, tc.n)
			for i := range u {
				u[i] = rng.Float64()*120 - 60
				r[i] = a + d*u[i] + rng.NormFloat64()*tc.noise
				if rng.Float64() < tc.outliers {
					r[i] += 1e7 * (rng.Float64() + 1)
				}
			}
			ga, gd, ok := TheilSen(u, r)
			if !ok {
				t.Fatal("not ok")
			}
			tol := 1e-6 + 10*tc.noise/math.Sqrt(float64(tc.n))
			if math.Abs(ga-a) > tol+tc.outliers*40 || math.Abs(gd-d) > tol/10+tc.outliers {
				t.Errorf("fit a=%g d=%g, want %g %g", ga, gd, a, d)
			}
		})
	}
	if _, _, ok := TheilSen([]float64{1, 1}, []float64{2, 3}); ok {
		t.Error("two points at the same u give no slope")
	}
}

// TestQuantileUnsortedMatchesSort: selection gives Quantile of the sorted
// sample exactly, with ties, at the ends, beyond [0, 1] and with NaN.
func TestQuantileUnsortedMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	qs := []float64{-0.5, 0, 0.01, 0.1, 0.25, 0.5, 0.9, 0.95, 0.99, 1, 1.5}
	for trial := range 400 {
		n := 1 + rng.IntN(200)
		xs := make([]float64, n)
		for i := range xs {
			if trial%2 == 0 {
				xs[i] = float64(rng.IntN(9)) // many ties
			} else {
				xs[i] = math.Exp(rng.NormFloat64())
			}
		}
		if trial%7 == 0 {
			xs[rng.IntN(n)] = math.NaN()
		}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		for _, q := range qs {
			want := Quantile(sorted, q)
			got := QuantileUnsorted(slices.Clone(xs), q)
			if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("trial %d, n=%d, q=%g: %v, want %v", trial, n, q, got, want)
			}
		}
	}
	if !math.IsNaN(QuantileUnsorted(nil, 0.5)) {
		t.Error("quantile of nothing is not NaN")
	}
	// Zeros of both signs: the same zero as the sort picks, sign included
	// (-0 prints as -0).
	negZero := math.Copysign(0, -1)
	for _, xs := range [][]float64{{negZero, 0}, {1, 0, negZero}, {0, negZero, negZero, 0, 2}} {
		for _, q := range []float64{0, 0.25, 0.5} {
			sorted := slices.Clone(xs)
			slices.Sort(sorted)
			want := Quantile(sorted, q)
			if got := QuantileUnsorted(slices.Clone(xs), q); got != want || math.Signbit(got) != math.Signbit(want) {
				t.Errorf("%v at q=%g: %v, want %v as the sort gives", xs, q, got, want)
			}
		}
	}
}
