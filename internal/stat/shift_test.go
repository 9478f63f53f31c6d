package stat

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// allDiffs forms every pairwise difference: the brute force the selector
// avoids, used here as the reference.
func allDiffs(xs, ys []float64) []float64 {
	d := make([]float64, 0, len(xs)*len(ys))
	for _, x := range xs {
		for _, y := range ys {
			d = append(d, y-x)
		}
	}
	slices.Sort(d)
	return d
}

func randomSample(rng *rand.Rand, n int, shift float64, rounded bool) []float64 {
	out := make([]float64, n)
	for i := range out {
		v := math.Exp(rng.NormFloat64()*0.5) + shift
		if rounded { // ms-rounded latencies produce ties
			v = math.Round(v*4) / 4
		}
		out[i] = v
	}
	slices.Sort(out)
	return out
}

func TestDiffSelectorMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 60 {
		n1, n2 := 1+rng.IntN(40), 1+rng.IntN(40)
		xs := randomSample(rng, n1, 0, trial%2 == 0)
		ys := randomSample(rng, n2, 0.2, trial%3 == 0)
		want := allDiffs(xs, ys)
		sel := newDiffSelector(xs, ys)
		for k := int64(1); k <= int64(len(want)); k++ {
			if got := sel.kth(k); got != want[k-1] {
				t.Fatalf("trial %d (%d×%d): D_(%d) = %v, want %v", trial, n1, n2, k, got, want[k-1])
			}
		}
	}
}

// TestHodgesLehmannMatchesBruteForce checks the estimate and the Moses
// bounds against the sorted pairwise differences, with k taken from the
// enumerated U distribution.
func TestHodgesLehmannMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 100 {
		n1, n2 := 4+rng.IntN(5), 4+rng.IntN(5)
		xs := randomSample(rng, n1, 0, false)
		ys := randomSample(rng, n2, 0.3, false)
		d := allDiffs(xs, ys)
		m := len(d)
		med := d[m/2]
		if m%2 == 0 {
			med = (d[m/2-1] + d[m/2]) / 2
		}
		cum := enumerateU(n1, n2)
		k := 0
		for u := range cum {
			if cum[u] <= 0.025 {
				k = u + 1
			}
		}
		s := HodgesLehmann(xs, ys, 0.05)
		if s.Estimate != med {
			t.Fatalf("trial %d: estimate %v, want %v", trial, s.Estimate, med)
		}
		if k == 0 {
			if !math.IsInf(s.Low, -1) || !math.IsInf(s.High, 1) {
				t.Fatalf("trial %d (%d×%d): want an infinite interval, got [%v, %v]", trial, n1, n2, s.Low, s.High)
			}
			continue
		}
		if s.Low != d[k-1] || s.High != d[m-k] || s.K != int64(k) {
			t.Fatalf("trial %d (%d×%d): CI [%v, %v] k=%d, want [%v, %v] k=%d", trial, n1, n2, s.Low, s.High, s.K, d[k-1], d[m-k], k)
		}
	}
}

// TestHodgesLehmannBracketMatchesBruteForce: past the exact table the three
// selections start from bracket's band; the estimate and the bounds must
// still be the sorted pairwise differences at their ranks, with and without
// ties, and the band must have been used.
func TestHodgesLehmannBracketMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	banded := 0
	for trial := range 24 {
		n1, n2 := 100+rng.IntN(500), 100+rng.IntN(500)
		xs := randomSample(rng, n1, 0, trial%2 == 0)
		ys := randomSample(rng, n2, 0.05*float64(trial%4), trial%3 == 0)
		d := allDiffs(xs, ys)
		m := len(d)
		med := (d[(m-1)/2] + d[m/2]) / 2
		k := mosesK(xs, ys, 0.05)
		s := HodgesLehmann(xs, ys, 0.05)
		if s.Estimate != med || s.K != k || s.Low != d[k-1] || s.High != d[int64(m)-k] {
			t.Fatalf("trial %d (%d×%d): %v ± [%v, %v] k=%d, want %v ± [%v, %v] k=%d",
				trial, n1, n2, s.Estimate, s.Low, s.High, s.K, med, d[k-1], d[int64(m)-k], k)
		}
		sel := newDiffSelector(xs, ys)
		sel.bracket(k, int64(m)+1-k)
		if cand, _ := sel.candidates(); cand < int64(m) {
			banded++
		}
	}
	if banded == 0 {
		t.Fatal("bracket never narrowed the candidates: the test does not exercise it")
	}
}

// TestHodgesLehmannLargeSamples runs where forming the pairs is impossible
// (10¹⁰ differences, 80 GB): the selector must need O(n) memory.
func TestHodgesLehmannLargeSamples(t *testing.T) {
	if testing.Short() {
		t.Skip("large-sample run")
	}
	rng := rand.New(rand.NewPCG(5, 6))
	n := 100_000
	xs := randomSample(rng, n, 0, false)
	ys := randomSample(rng, n, 0, false)
	for i := range ys {
		ys[i] += 0.1
	}
	s := HodgesLehmann(xs, ys, 0.05)
	if math.Abs(s.Estimate-0.1) > 0.02 || !(s.Low < 0.1 && s.High > 0.1) {
		t.Errorf("shift 0.1: estimate %v, CI [%v, %v]", s.Estimate, s.Low, s.High)
	}
}

// TestShiftUTestIsDualOfMoses: the interval's lower bound exceeds δ exactly
// when the one-sided test rejects "shift ≤ δ" at α/2.
func TestShiftUTestIsDualOfMoses(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	for trial := range 200 {
		n1, n2 := 5+rng.IntN(60), 5+rng.IntN(60)
		xs := randomSample(rng, n1, 0, false)
		ys := randomSample(rng, n2, 0.4, false)
		s := HodgesLehmann(xs, ys, 0.05)
		for _, delta := range []float64{s.Low - 1e-9, s.Low + 1e-9, s.High - 1e-9, s.High + 1e-9, 0} {
			pu, pl := ShiftUTest(xs, ys, delta)
			if (s.Low > delta) != (pu <= 0.025) {
				t.Fatalf("trial %d (%d×%d) δ=%v: low %v > δ is %v, but p_upper = %v", trial, n1, n2, delta, s.Low, s.Low > delta, pu)
			}
			if (s.High < delta) != (pl <= 0.025) {
				t.Fatalf("trial %d (%d×%d) δ=%v: high %v < δ is %v, but p_lower = %v", trial, n1, n2, delta, s.High, s.High < delta, pl)
			}
		}
	}
}

// TestOrderStatMatchesSort: the selector's last step selects what a sort
// would give, also when NaN is among the values.
func TestOrderStatMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		n := 1 + rng.IntN(300)
		vals := make([]float64, n)
		for i := range vals {
			vals[i] = math.Round(rng.NormFloat64() * 4)
		}
		if trial%5 == 0 {
			vals[rng.IntN(n)] = math.NaN()
		}
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		for k := range n {
			got, want := orderStat(slices.Clone(vals), k), sorted[k]
			if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("trial %d, n=%d: order statistic %d = %v, want %v", trial, n, k, got, want)
			}
		}
	}
}

// TestDiffSelectorLargerMatchesSort: samples large enough for several
// rounds of sampled pivots, with and without ties, every 997th order
// statistic and the extremes against the sorted differences.
func TestDiffSelectorLargerMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 6 {
		n1, n2 := 200+rng.IntN(300), 200+rng.IntN(300)
		xs := randomSample(rng, n1, 0, trial%2 == 0)
		ys := randomSample(rng, n2, 0.1, trial%3 == 0)
		want := allDiffs(xs, ys)
		sel := newDiffSelector(xs, ys)
		m := int64(len(want))
		for _, k := range append([]int64{1, 2, m / 2, m/2 + 1, m - 1, m}, func() (ks []int64) {
			for k := int64(3); k < m; k += 997 {
				ks = append(ks, k)
			}
			return ks
		}()...) {
			if got := sel.kth(k); got != want[k-1] {
				t.Fatalf("trial %d (%d×%d): D_(%d) = %v, want %v", trial, n1, n2, k, got, want[k-1])
			}
		}
	}
}

// TestCountBandMatchesCountBelow: for a pivot among the candidates of a
// band cut by a lower and an upper pivot, as kth and bracket cut theirs,
// countBand fills the rows' counts and returns the sums countBelow does:
// with and without ties, odd and even row counts, one side far longer than
// the other (rows that walk past their window), and the whole matrix as
// the band.
func TestCountBandMatchesCountBelow(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	sizes := [][2]int{{1, 1}, {1, 9}, {9, 1}, {2, 3}, {7, 400}, {400, 7}, {301, 300}, {64, 65}}
	for trial := range 400 {
		var n1, n2 int
		if trial < len(sizes) {
			n1, n2 = sizes[trial][0], sizes[trial][1]
		} else {
			n1, n2 = 1+rng.IntN(120), 1+rng.IntN(120)
		}
		xs := randomSample(rng, n1, 0, trial%2 == 0)
		ys := randomSample(rng, n2, 0.1, trial%3 == 0)
		d := allDiffs(xs, ys)
		band := newDiffSelector(xs, ys)
		full := newDiffSelector(xs, ys)
		for i := range n1 {
			band.lo[i], band.hi[i] = 0, n2
		}
		if trial%4 != 0 { // cut the band at two differences
			r1, r2 := rng.IntN(len(d)), rng.IntN(len(d))
			lower, upper := d[min(r1, r2)], d[max(r1, r2)]
			full.countBelow(lower)
			copy(band.lo, full.leq)
			full.countBelow(upper)
			copy(band.hi, full.less)
		}
		var cands []float64
		for i, x := range xs {
			for j := band.lo[i]; j < band.hi[i]; j++ {
				cands = append(cands, ys[j]-x)
			}
		}
		if len(cands) == 0 {
			continue
		}
		for range 5 {
			p := cands[rng.IntN(len(cands))]
			less, leq := band.countBand(p)
			wantLess, wantLeq := full.countBelow(p)
			if less != wantLess || leq != wantLeq || !slices.Equal(band.less, full.less) || !slices.Equal(band.leq, full.leq) {
				t.Fatalf("trial %d (%d×%d), pivot %v: counts %d, %d (rows %v, %v), want %d, %d (rows %v, %v)",
					trial, n1, n2, p, less, leq, band.less, band.leq, wantLess, wantLeq, full.less, full.leq)
			}
		}
	}
}

// TestHodgesLehmannUnbalancedMatchesBruteForce: one side far longer than
// the other (rows of the difference matrix that count past countBand's
// window, or hardly move), with and without ties, against the sorted
// pairwise differences.
func TestHodgesLehmannUnbalancedMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for trial, n := range [][2]int{{5, 900}, {900, 5}, {61, 1400}, {1400, 61}, {333, 1001}, {1001, 333}} {
		xs := randomSample(rng, n[0], 0, trial%2 == 0)
		ys := randomSample(rng, n[1], 0.1, trial%2 == 0)
		d := allDiffs(xs, ys)
		m := len(d)
		med := (d[(m-1)/2] + d[m/2]) / 2
		k := mosesK(xs, ys, 0.05)
		s := HodgesLehmann(xs, ys, 0.05)
		if k < 1 || s.Estimate != med || s.K != k || s.Low != d[k-1] || s.High != d[int64(m)-k] {
			t.Fatalf("trial %d (%d×%d): %v ± [%v, %v] k=%d, want %v ± [%v, %v] k=%d",
				trial, n[0], n[1], s.Estimate, s.Low, s.High, s.K, med, d[max(k-1, 0)], d[int64(m)-max(k, 1)], k)
		}
	}
}
