package stat

import (
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// clusterJackknifeRowByRow is ClusterJackknife as it was before it took
// two rows at a time: the reference its sums must match to the bit.
func clusterJackknifeRowByRow(f *OLS, groups []int) (*mat.SymDense, int, bool) {
	k := f.K
	xtxs, scores := map[int][]float64{}, map[int][]float64{}
	var order []int
	xtx := make([]float64, k*k)
	for i := 0; i < f.N; i++ {
		if _, seen := xtxs[groups[i]]; !seen {
			xtxs[groups[i]], scores[groups[i]] = make([]float64, k*k), make([]float64, k)
			order = append(order, groups[i])
		}
		p, s := xtxs[groups[i]], scores[groups[i]]
		row, e := f.X.RawRowView(i), f.Resid[i]
		for a := range k {
			s[a] += float64(row[a] * e)
			for b := a; b < k; b++ {
				p[a*k+b] += float64(row[a] * row[b])
			}
		}
	}
	for _, label := range order {
		for a := range xtx {
			xtx[a] += xtxs[label][a]
		}
	}
	acc, a := mat.NewSymDense(k, nil), mat.NewSymDense(k, nil)
	var ch mat.Cholesky
	var d mat.VecDense
	for _, label := range order {
		for r := range k {
			for c := r; c < k; c++ {
				a.SetSym(r, c, xtx[r*k+c]-xtxs[label][r*k+c])
			}
		}
		if !ch.Factorize(a) {
			return nil, len(order), false
		}
		if err := ch.SolveVecTo(&d, mat.NewVecDense(k, scores[label])); err != nil {
			return nil, len(order), false
		}
		acc.SymRankOne(acc, 1, &d)
	}
	g := len(order)
	acc.ScaleSym(float64(g-1)/float64(g), acc)
	return acc, g, true
}

// TestClusterJackknifeMatchesRowByRow checks ClusterJackknife, which sums
// two rows of a cluster at a time, and ClusterJackknifeOrCR1 against the
// row-at-a-time sums and Cluster, to the bit: on labels in runs (odd and
// even lengths), alternating labels (no two rows of a cluster together),
// and a design where leaving a cluster out is singular (a column nonzero
// in one cluster only), where ClusterJackknifeOrCR1 is Cluster's CR1.
func TestClusterJackknifeMatchesRowByRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n, k := 301, 4
	for _, tc := range []struct {
		name     string
		label    func(i int) int
		singular bool
	}{
		{"runs", func(i int) int { return i / 7 }, false},
		{"runs of two and three", func(i int) int { return i/2 + i/5 }, false},
		{"alternating", func(i int) int { return i % 13 }, false},
		{"mixed", func(i int) int { return (i / 3) % 11 }, false},
		{"singular", func(i int) int { return i / 30 }, true},
	} {
		x := make([]float64, n*k)
		y := make([]float64, n)
		groups := make([]int, n)
		for i := range n {
			groups[i] = tc.label(i)
			x[i*k] = 1
			for j := 1; j < k; j++ {
				x[i*k+j] = rng.NormFloat64()
			}
			if tc.singular {
				x[i*k+k-1] = 0
				if groups[i] == 3 {
					x[i*k+k-1] = rng.NormFloat64()
				}
			}
			y[i] = rng.NormFloat64()
		}
		f, err := FitOLS(mat.NewDense(n, k, x), y, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		want, wantG, wantOK := clusterJackknifeRowByRow(f, groups)
		got, g, ok := f.ClusterJackknife(groups)
		if ok != wantOK || g != wantG || ok == tc.singular {
			t.Fatalf("%s: ok %v g %d, row by row ok %v g %d", tc.name, ok, g, wantOK, wantG)
		}
		orCR1, g2, ok2 := f.ClusterJackknifeOrCR1(groups, ClusterCount)
		if ok2 != ok || g2 != g {
			t.Fatalf("%s: ClusterJackknifeOrCR1 ok %v g %d, ClusterJackknife's %v %d", tc.name, ok2, g2, ok, g)
		}
		if !ok {
			cr1, g1 := f.Cluster(groups, ClusterCount)
			if g1 != g || sameBits(orCR1.RawSymmetric().Data, cr1.RawSymmetric().Data) >= 0 {
				t.Errorf("%s: CR1 from the jackknife's scores %v, Cluster's %v", tc.name, orCR1, cr1)
			}
			continue
		}
		if i := sameBits(got.RawSymmetric().Data, want.RawSymmetric().Data); i >= 0 {
			t.Errorf("%s: covariance element %d %v, row by row %v", tc.name, i, got.RawSymmetric().Data[i], want.RawSymmetric().Data[i])
		}
		if i := sameBits(orCR1.RawSymmetric().Data, want.RawSymmetric().Data); i >= 0 {
			t.Errorf("%s: ClusterJackknifeOrCR1 element %d differs", tc.name, i)
		}
	}
}
