package stat

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// walshBrute forms and sorts every Walsh average.
func walshBrute(d []float64) []float64 {
	var w []float64
	for i := range d {
		for j := i; j < len(d); j++ {
			w = append(w, (d[i]+d[j])/2)
		}
	}
	slices.Sort(w)
	return w
}

// TestPairedHodgesLehmannMatchesBruteForce: the estimate and the interval
// bounds are the order statistics of the Walsh averages formed outright,
// with and without ties, and the estimate of the depression-scale data of
// Hollander & Wolfe (the example of R's wilcox.test, paired) is its
// (pseudo)median 0.46.
func TestPairedHodgesLehmannMatchesBruteForce(t *testing.T) {
	x := []float64{1.83, 0.50, 1.62, 2.48, 1.68, 1.88, 1.55, 3.06, 1.30}
	y := []float64{0.878, 0.647, 0.598, 2.05, 1.06, 1.29, 1.06, 3.14, 1.29}
	d := make([]float64, len(x))
	for i := range x {
		d[i] = x[i] - y[i]
	}
	if got := PairedHodgesLehmann(d, 0.05); math.Abs(got.Estimate-0.46) > 1e-12 || got.K != 0 {
		t.Errorf("depression data: estimate %v (K %d), want 0.46 and no interval under %d pairs", got.Estimate, got.K, MinSignedRankN)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{20, 21, 57, 300} {
		for _, ties := range []bool{false, true} {
			d := make([]float64, n)
			for i := range d {
				d[i] = rng.NormFloat64() + 0.3
				if ties {
					d[i] = math.Round(d[i] * 4)
				}
			}
			w := walshBrute(d)
			N := int64(len(w))
			want := w[N/2]
			if N%2 == 0 {
				want = (w[N/2-1] + w[N/2]) / 2
			}
			got := PairedHodgesLehmann(d, 0.05)
			c := signedRankC(n, 0.05)
			if math.Abs(got.Estimate-want) > 1e-12 || got.K != c || got.Low != w[c-1] || got.High != w[N-c] {
				t.Errorf("n %d ties %v: %+v, want estimate %v, [%v, %v] (C %d)", n, ties, got, want, w[c-1], w[N-c], c)
			}
		}
	}
}

// TestSignedRankTestIsTheIntervalsDual: the interval's lower bound exceeds
// δ exactly when the one-sided upper p-value is at most α/2 (and the upper
// bound falls below δ when the lower p-value is), checked midway between
// neighbouring Walsh averages about both bounds; and under a symmetric null
// 5% of 2000 samples of 60 reject at 5%, within Monte Carlo error.
func TestSignedRankTestIsTheIntervalsDual(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rejected := 0
	const reps = 2000
	for r := range reps {
		d := make([]float64, 60)
		for i := range d {
			d[i] = rng.NormFloat64()
		}
		s := slices.Clone(d)
		slices.Sort(s)
		pu, pl := SignedRankTest(s, 0)
		if 2*math.Min(pu, pl) <= 0.05 {
			rejected++
		}
		if r >= 100 {
			continue
		}
		hl := PairedHodgesLehmann(d, 0.05)
		w := walshBrute(d)
		c := int(hl.K)
		for _, i := range []int{c - 3, c - 2, c - 1, c, len(w) - c - 1, len(w) - c, len(w) - c + 1} {
			delta := (w[i] + w[i+1]) / 2
			pu, pl := SignedRankTest(s, delta)
			if (hl.Low > delta) != (pu <= 0.025) {
				t.Fatalf("sample %d, δ %v between W_%d and W_%d: interval [%v, %v], p upper %v", r, delta, i+1, i+2, hl.Low, hl.High, pu)
			}
			if (hl.High < delta) != (pl <= 0.025) {
				t.Fatalf("sample %d, δ %v between W_%d and W_%d: interval [%v, %v], p lower %v", r, delta, i+1, i+2, hl.Low, hl.High, pl)
			}
		}
	}
	if rate := float64(rejected) / reps; math.Abs(rate-0.05) > 3*math.Sqrt(0.05*0.95/reps) {
		t.Errorf("signed-rank test rejected %.3f of %d null samples at 5%%", rate, reps)
	}
}
