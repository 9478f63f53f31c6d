package history

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// otavaSequence and its change points [5, 8] are the reference series of
// Apache Otava's tests/change_point_divisive_test.py (SEQUENCE,
// CHANGE_POINTS_INDS), found there by the permutation tester at
// max_pvalue = 0.01 with 100 permutations.
var otavaSequence = []float64{0.3, 2.4, 1.5, -0.9, -0.5, 99.7, 98.3, 99.1, 149.0, 149.7, 149.5, 149.1, 148.8, 150.0}

// otavaSingle and its change point [10] are the series of Otava's
// tests/analysis_test.py test_single_series_original.
var otavaSingle = []float64{1.02, 0.95, 0.99, 1.00, 1.12, 1.00, 1.01, 0.98, 1.01, 0.96, 0.50, 0.51, 0.48, 0.48, 0.55, 0.50, 0.49, 0.51, 0.50, 0.49}

// slowQ is Q̂(X, Y; 1) straight from Matteson & James (2014), eq. (5)–(6):
// (mn/(m+n))·Ê with Ê = 2/(mn) ΣΣ|X−Y| − C(n,2)⁻¹ Σ|X−X'| − C(m,2)⁻¹ Σ|Y−Y'|
// (an empty within-sum counts zero), written without any of Detect's
// sums.
func slowQ(x, y []float64) float64 {
	n, m := float64(len(x)), float64(len(y))
	var between, wx, wy float64
	for _, a := range x {
		for _, b := range y {
			between += math.Abs(a - b)
		}
	}
	for i := range x {
		for k := i + 1; k < len(x); k++ {
			wx += math.Abs(x[i] - x[k])
		}
	}
	for j := range y {
		for k := j + 1; k < len(y); k++ {
			wy += math.Abs(y[j] - y[k])
		}
	}
	e := 2 / (m * n) * between
	if n > 1 {
		e -= wx / (n * (n - 1) / 2)
	}
	if m > 1 {
		e -= wy / (m * (m - 1) / 2)
	}
	return m * n / (m + n) * e
}

// slowBest is the best (τ, κ) over the segments of z cut by cps.
func slowBest(z []float64, cps []int) (tau int, q float64) {
	q = math.Inf(-1)
	bounds := append(append([]int{0}, cps...), len(z))
	for s := 0; s+1 < len(bounds); s++ {
		lo, hi := bounds[s], bounds[s+1]
		for t := lo + 1; t < hi; t++ {
			for k := t + 1; k <= hi; k++ {
				if v := slowQ(z[lo:t], z[t:k]); v > q {
					tau, q = t, v
				}
			}
		}
	}
	return tau, q
}

// slowDivisive is an independent e-divisive: the recursion of Matteson &
// James (2014, section 3) with slowQ and a permutation test that copies and
// shuffles the values of every segment.
func slowDivisive(z []float64, alpha float64, perms int, seed uint64) []int {
	rng := rand.New(rand.NewPCG(seed, 99))
	var cps []int
	for {
		tau, obs := slowBest(z, cps)
		if math.IsInf(obs, -1) {
			return cps
		}
		exceed := 0
		for range perms {
			p := slices.Clone(z)
			bounds := append(append([]int{0}, cps...), len(z))
			for s := 0; s+1 < len(bounds); s++ {
				seg := p[bounds[s]:bounds[s+1]]
				rng.Shuffle(len(seg), func(a, b int) { seg[a], seg[b] = seg[b], seg[a] })
			}
			if _, v := slowBest(p, cps); v >= obs {
				exceed++
			}
		}
		if float64(1+exceed)/float64(perms+1) > alpha {
			return cps
		}
		cps = append(cps, tau)
		slices.Sort(cps)
	}
}

func runUnits(z []float64) [][]float64 {
	u := make([][]float64, len(z))
	for i, v := range z {
		u[i] = []float64{v}
	}
	return u
}

// TestQMatchesPaper: the swept block sums give the paper's Q̂ for every
// (τ, κ) of Otava's reference series and of random series, and the same
// best split.
func TestQMatchesPaper(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := [][]float64{otavaSequence, otavaSingle}
	for range 5 {
		z := make([]float64, 3+rng.IntN(20))
		for i := range z {
			z[i] = rng.NormFloat64() + float64(i/7)
		}
		cases = append(cases, z)
	}
	for ci, z := range cases {
		s := newSeries(runUnits(z))
		s.blockSums()
		for tau := 1; tau < len(z); tau++ {
			for kappa := tau + 1; kappa <= len(z); kappa++ {
				got, want := s.q(0, tau, kappa), slowQ(z[:tau], z[tau:kappa])
				if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
					t.Fatalf("case %d: Q(0,%d,%d) = %v, paper %v", ci, tau, kappa, got, want)
				}
			}
		}
		tau, q, _ := s.candidate(0, len(z), 1, false)
		wt, wq := slowBest(z, nil)
		if tau != wt || math.Abs(q-wq) > 1e-9*(1+math.Abs(wq)) {
			t.Errorf("case %d: best split %d (Q %v), independent %d (Q %v)", ci, tau, q, wt, wq)
		}
	}
	// Otava's test_calculator_candidate: the first candidate of SEQUENCE.
	if tau, _ := slowBest(otavaSequence, nil); tau != 5 && tau != 8 {
		t.Errorf("reference candidate %d, want one of Otava's change points", tau)
	}
}

// TestQRequestUnits: with several values per unit, Q̂ between unit
// boundaries is the paper's statistic of the pooled values.
func TestQRequestUnits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	units := make([][]float64, 5)
	var flat []float64
	var starts []int
	for u := range units {
		starts = append(starts, len(flat))
		for range 1 + rng.IntN(6) {
			v := rng.NormFloat64()
			units[u] = append(units[u], v)
			flat = append(flat, v)
		}
	}
	starts = append(starts, len(flat))
	s := newSeries(units)
	s.blockSums()
	for tau := 1; tau < 5; tau++ {
		for kappa := tau + 1; kappa <= 5; kappa++ {
			got := s.q(0, tau, kappa)
			want := slowQ(flat[:starts[tau]], flat[starts[tau]:starts[kappa]])
			if math.Abs(got-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("Q(0,%d,%d) = %v, pooled %v", tau, kappa, got, want)
			}
		}
	}
}

// TestDetectOtavaReference: Detect, the independent slowDivisive and
// Otava's own tests agree on the reference series' change points. The
// independent recursion runs at ecp's default level 0.05: Otava's test
// passes at 0.01 because its p-value k/(R+1) is 0 when no permutation beats
// the observed split, while with (1+k)/(R+1) the second split of SEQUENCE
// (three points against six) lands between 0.01 and 0.05. Detect's merge
// step tests it between its neighbours, where it is significant at 0.01.
func TestDetectOtavaReference(t *testing.T) {
	for _, c := range []struct {
		name string
		z    []float64
		want []int
	}{
		{"change_point_divisive_test SEQUENCE", otavaSequence, []int{5, 8}},
		{"analysis_test single series", otavaSingle, []int{10}},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := DefaultDetectOptions()
			o.Permutations = 199
			var got []int
			for _, cp := range Detect(runUnits(c.z), o) {
				got = append(got, cp.Index)
				if cp.P > o.Alpha {
					t.Errorf("change at %d kept with p = %v > %v", cp.Index, cp.P, o.Alpha)
				}
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("Detect: %v, Otava's tests: %v", got, c.want)
			}
			if ind := slowDivisive(c.z, 0.05, 199, 6); !slices.Equal(ind, c.want) {
				t.Errorf("independent e-divisive: %v, Otava's tests: %v", ind, c.want)
			}
		})
	}
}

// TestDetectFlatAndShort: a constant-distribution series and series too
// short to split report nothing; a permutation p-value never reaches
// zero.
func TestDetectFlatAndShort(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	z := make([]float64, 30)
	for i := range z {
		z[i] = 100 + rng.NormFloat64()
	}
	o := DefaultDetectOptions()
	if cps := Detect(runUnits(z), o); len(cps) != 0 {
		t.Errorf("flat series: %+v", cps)
	}
	if cps := Detect(runUnits([]float64{1}), o); cps != nil {
		t.Errorf("one run: %+v", cps)
	}
	if p := pValue(0, 499); p != 1.0/500 {
		t.Errorf("pValue(0, 499) = %v", p)
	}
}

// TestDetectWindows: a series longer than the window (120 nights, window
// 50, so Otava's split step searches overlapping windows) finds steps at
// nights 40 and 85, each within one night, and nothing else.
func TestDetectWindows(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	z := make([]float64, 120)
	for i := range z {
		level := 100.0
		if i >= 40 {
			level = 110
		}
		if i >= 85 {
			level = 95
		}
		z[i] = level * math.Exp(0.02*rng.NormFloat64())
	}
	o := DefaultDetectOptions()
	o.Permutations = 199
	cps := Detect(runUnits(z), o)
	var at []int
	for _, c := range cps {
		at = append(at, c.Index)
	}
	if len(at) != 2 || math.Abs(float64(at[0]-40)) > 1 || math.Abs(float64(at[1]-85)) > 1 {
		t.Errorf("changes at %v, want 40 and 85", at)
	}
}
