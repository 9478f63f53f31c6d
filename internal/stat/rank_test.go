package stat

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestExactUMannWhitney1947 checks the exact null distribution against Table
// I of Mann & Whitney (1947), "On a test of whether one of two random
// variables is stochastically larger than the other", Ann. Math. Statist.
// 18(1):50–60: P(U ≤ u) for n = 3 and n = 5 with m = 1..n, u = 0..5, printed
// to six decimals.
func TestExactUMannWhitney1947(t *testing.T) {
	tables := map[int][][]float64{
		3: {
			{0.250000, 0.100000, 0.050000},
			{0.500000, 0.200000, 0.100000},
			{0.750000, 0.400000, 0.200000},
			{1.000000, 0.600000, 0.350000},
			{1.000000, 0.800000, 0.500000},
			{1.000000, 0.900000, 0.650000},
		},
		5: {
			{0.166667, 0.047619, 0.017857, 0.007937, 0.003968},
			{0.333333, 0.095238, 0.035714, 0.015873, 0.007937},
			{0.500000, 0.190476, 0.071429, 0.031746, 0.015873},
			{0.666667, 0.285714, 0.125000, 0.055556, 0.027778},
			{0.833333, 0.428571, 0.196429, 0.095238, 0.047619},
			{1.000000, 0.571429, 0.285714, 0.142857, 0.075397},
		},
	}
	for n, table := range tables {
		for u, row := range table {
			for mi, want := range row {
				m := mi + 1
				got := exactU(m, n).cdf(u)
				if math.Abs(got-want) > 5e-7 {
					t.Errorf("n=%d m=%d: P(U ≤ %d) = %.6f, table says %.6f", n, m, u, got, want)
				}
			}
		}
	}
}

// TestExactUCriticalValues checks the two-sided α = 0.05 critical values of
// U for equal samples n = 5..20 as printed in standard tables (e.g. Zar,
// Biostatistical Analysis, 5th ed., Table B.11; Siegel & Castellan 1988,
// Table J): the largest u with P(U ≤ u) ≤ 0.025.
func TestExactUCriticalValues(t *testing.T) {
	want := map[int]int{5: 2, 6: 5, 7: 8, 8: 13, 9: 17, 10: 23, 11: 30, 12: 37, 13: 45, 14: 55, 15: 64, 16: 75, 17: 87, 18: 99, 19: 113, 20: 127}
	for n := 5; n <= 20; n++ {
		d := exactU(n, n)
		crit := -1
		for u := 0; u <= n*n; u++ {
			if d.cdf(u) <= 0.025 {
				crit = u
			}
		}
		if crit != want[n] {
			t.Errorf("n=%d: critical U = %d, tables say %d", n, crit, want[n])
		}
	}
}

// enumerateU computes the exact null distribution of U by listing every
// assignment of the ranks 1..n1+n2 to the candidate sample, independently of
// the recurrence in exactU (what scipy's "exact" method tabulates).
func enumerateU(n1, n2 int) []float64 {
	n := n1 + n2
	counts := make([]float64, n1*n2+1)
	var total float64
	var rec func(start, left, rankSum int)
	rec = func(start, left, rankSum int) {
		if left == 0 {
			counts[rankSum-n2*(n2+1)/2]++
			total++
			return
		}
		for r := start; r <= n-left+1; r++ {
			rec(r+1, left-1, rankSum+r)
		}
	}
	rec(1, n2, 0)
	cum := make([]float64, len(counts))
	acc := 0.0
	for u, c := range counts {
		acc += c
		cum[u] = acc / total
	}
	return cum
}

func TestExactUEnumeration(t *testing.T) {
	for n1 := 1; n1 <= 8; n1++ {
		for n2 := 1; n2 <= 8; n2++ {
			want := enumerateU(n1, n2)
			d := exactU(n1, n2)
			for u := range want {
				if got := d.cdf(u); math.Abs(got-want[u]) > 1e-12 {
					t.Fatalf("n1=%d n2=%d: P(U ≤ %d) = %v, enumeration %v", n1, n2, u, got, want[u])
				}
			}
		}
	}
}

// TestMannWhitneyPValues checks p-values against independent
// implementations.
func TestMannWhitneyPValues(t *testing.T) {
	seq := func(from, step float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = from + step*float64(i)
		}
		return out
	}
	l1 := seq(0, 2, 500)
	l2 := seq(-41, 2, 600)
	l3 := append([]float64(nil), l2...)
	copy(l3, l1[:30])
	// ClickHouse's 01560_mann_whitney test data (20 vs 20, with ties).
	chLeft := []float64{310, 195, 530, 155, 530, 245, 385, 450, 465, 545, 170, 180, 125, 180, 230, 75, 430, 480, 495, 295}
	chRight := []float64{116, 171, 176, 421, 111, 326, 481, 111, 346, 441, 261, 411, 206, 521, 456, 446, 296, 51, 426, 261}
	tests := []struct {
		name  string
		x, y  []float64
		want  float64
		tol   float64
		exact bool
	}{
		// go-moremath stats/utest_test.go (exact, no ties): min p for 4 vs 4
		// is 2/70, benchstat's "need >= 4 samples".
		{"4v4 separated", []float64{2, 1, 3, 5}, []float64{12, 11, 13, 15}, 0.028571428571428577, 1e-12, true},
		{"4v4 interleaved", []float64{2, 1, 3, 5}, []float64{0, 4, 6, 7}, 0.485714285714285770, 1e-12, true},
		// HypothesisTests.jl test/wilcoxon.jl ExactMannWhitneyUTest, 4 decimals.
		{"1:10 vs 2.1:2:21", seq(1, 1, 10), seq(2.1, 2, 10), 0.0232, 1e-4, true},
		{"1.5:10:100 vs 2.1:2:21", seq(1.5, 10, 10), seq(2.1, 2, 10), 0.0068, 1e-4, true},
		// R wilcox.test(correct=TRUE), as recorded in go-moremath's tests.
		{"R 500v600", l1, l2, 0.0049335360814172224, 1e-10, false},
		{"R 500v600 ties", l1, l3, 0.0038703814239617884, 1e-10, false},
		// ClickHouse mannWhitneyUTest('two-sided', continuity=1).
		{"ClickHouse 20v20 ties", chLeft, chRight, 0.5426959774289482, 1e-10, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := MannWhitney(tc.x, tc.y)
			if math.Abs(r.P-tc.want) > tc.tol {
				t.Errorf("p = %.16g, want %.16g", r.P, tc.want)
			}
			if r.Exact != tc.exact {
				t.Errorf("exact = %v, want %v", r.Exact, tc.exact)
			}
			// The test is symmetric in its samples.
			if r2 := MannWhitney(tc.y, tc.x); math.Abs(r2.P-r.P) > 1e-12 {
				t.Errorf("p(y, x) = %v ≠ p(x, y) = %v", r2.P, r.P)
			}
		})
	}
}

// TestMannWhitneyExactAgainstEnumeration draws small samples and checks the
// two-sided exact p-value against one computed from the enumerated
// distribution, as scipy.stats.mannwhitneyu(method="exact") defines it:
// min(1, 2·min(P(U ≤ u), P(U ≥ u))).
func TestMannWhitneyExactAgainstEnumeration(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 200 {
		n1, n2 := 1+rng.IntN(7), 1+rng.IntN(7)
		x := make([]float64, n1)
		y := make([]float64, n2)
		for i := range x {
			x[i] = rng.Float64()
		}
		for i := range y {
			y[i] = rng.Float64() + 0.3*rng.Float64()
		}
		cum := enumerateU(n1, n2)
		r := MannWhitney(x, y)
		u := int(r.U)
		lo := cum[u]
		hi := 1.0
		if u > 0 {
			hi = 1 - cum[u-1]
		}
		want := math.Min(1, 2*math.Min(lo, hi))
		if math.Abs(r.P-want) > 1e-12 || !r.Exact {
			t.Fatalf("trial %d (%d v %d): p = %v (exact %v), enumeration %v", trial, n1, n2, r.P, r.Exact, want)
		}
	}
}

func TestMinSamplesForU(t *testing.T) {
	for _, tc := range []struct {
		alpha float64
		want  int
	}{{0.05, 4}, {0.01, 5}, {0.1, 3}, {0.2, 3}} {
		t.Run(fmt.Sprint(tc.alpha), func(t *testing.T) {
			if got := MinSamplesForU(tc.alpha); got != tc.want {
				t.Errorf("MinSamplesForU(%v) = %d, want %d", tc.alpha, got, tc.want)
			}
		})
	}
}

// TestUStatisticSortedMatchesPooled checks the merge that ranks sorted
// samples against ranking the pooled sample by a sort, to the bit: random
// sizes (odd and even, one side empty or of one value), values rounded to
// a few levels so that ties within and across the samples are common, and
// signed zeros and infinities.
func TestUStatisticSortedMatchesPooled(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 32))
	special := []float64{math.Inf(-1), math.Inf(1), math.Copysign(0, -1), 0}
	draw := func(n, levels int) []float64 {
		out := make([]float64, n)
		for i := range out {
			if rng.IntN(20) == 0 {
				out[i] = special[rng.IntN(len(special))]
				continue
			}
			out[i] = float64(rng.IntN(levels)) / 4
		}
		slices.Sort(out)
		return out
	}
	for trial := range 3000 {
		levels := 1 + rng.IntN(3000)
		x, y := draw(rng.IntN(60), levels), draw(rng.IntN(61), levels)
		if trial%7 == 0 {
			x = draw(500+rng.IntN(2), levels)
		}
		u, ties := uStatisticSorted(x, y)
		wu, wties := uStatisticPooled(x, y)
		if math.Float64bits(u) != math.Float64bits(wu) || math.Float64bits(ties) != math.Float64bits(wties) {
			t.Fatalf("n=%d,%d levels %d: merge U=%v ties=%v, sort U=%v ties=%v", len(x), len(y), levels, u, ties, wu, wties)
		}
	}
	// Unsorted samples and NaN go the sort's way.
	if sortedNoNaN([]float64{1, 0}) || sortedNoNaN([]float64{0, math.NaN()}) || !sortedNoNaN([]float64{0, 0, 1}) {
		t.Fatal("sortedNoNaN misjudges")
	}
}
