package compare

import (
	"cmp"
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Least squares with errors clustered by time block, for the step level
// (compare/steps.go) and the adjusted request level (compare/adjust.go).
//
// The fit is ordinary least squares of y on the columns of X. Every
// estimate these levels report — a side coefficient, a difference of side
// means, the part of it the covariates explain — is linear in y, c'y, so
// its variance under dependence within clusters is the cluster-robust
// (sandwich) form of Liang & Zeger (1986, Biometrika 73:13) for a linear
// estimator,
//
//	V(c'y) = G/(G−1) · Σ_g (Σ_{i∈g} c_i ê_i)²,
//
// ê the residuals of the full model and G the number of clusters (the
// small-sample factor is Stata's CR1 without its (n−1)/(n−K) part, which
// is ≈ 1 for these n). Clusters are blocks of consecutive observations in
// time, so what neighbours share (a batch, a burst, a stall) stays inside a
// cluster; the intervals use Student's t with G − 2 degrees of freedom
// (two sides' blocks, each side's mean estimated), as Cameron & Miller
// (2015, J. Human Resources 50:317) advise for few clusters.

// linFit is a least-squares fit with its design, for clustered variances
// of linear estimators.
type linFit struct {
	x     [][]float64 // rows
	y     []float64
	beta  []float64
	resid []float64
	// chol is the Cholesky factor of X'X (lower, row-major).
	chol [][]float64
	k    int
}

var errSingular = errors.New("the covariates are collinear or constant: the fit has no unique solution")

// fitLinear fits y on the rows of x by least squares. Columns are scaled to
// unit norm internally, so counts and their squares live together.
func fitLinear(x [][]float64, y []float64) (*linFit, error) {
	n := len(y)
	if n == 0 || len(x) != n {
		return nil, errSingular
	}
	k := len(x[0])
	if n <= k {
		return nil, errSingular
	}
	f := &linFit{x: x, y: y, k: k}
	xtx := make([][]float64, k)
	for j := range xtx {
		xtx[j] = make([]float64, k)
	}
	xty := make([]float64, k)
	for i, row := range x {
		for a := range k {
			xty[a] += row[a] * y[i]
			for b := 0; b <= a; b++ {
				xtx[a][b] += row[a] * row[b]
			}
		}
	}
	chol, ok := cholesky(xtx)
	if !ok {
		return nil, errSingular
	}
	f.chol = chol
	f.beta = cholSolve(chol, xty)
	f.resid = make([]float64, n)
	for i, row := range x {
		p := 0.0
		for a := range k {
			p += row[a] * f.beta[a]
		}
		f.resid[i] = y[i] - p
	}
	return f, nil
}

// cholesky factors the symmetric matrix whose lower triangle a holds,
// after scaling it to unit diagonal (an equilibration that keeps counts and
// squared logs in one system); ok is false when it is not positive
// definite to working precision.
func cholesky(a [][]float64) ([][]float64, bool) {
	k := len(a)
	d := make([]float64, k)
	for j := range k {
		if !(a[j][j] > 0) {
			return nil, false
		}
		d[j] = 1 / math.Sqrt(a[j][j])
	}
	l := make([][]float64, k)
	for i := range l {
		l[i] = make([]float64, k)
	}
	for i := range k {
		for j := 0; j <= i; j++ {
			s := a[i][j] * d[i] * d[j]
			for m := range j {
				s -= l[i][m] * l[j][m]
			}
			if i == j {
				if s <= 1e-10 {
					return nil, false
				}
				l[i][i] = math.Sqrt(s)
			} else {
				l[i][j] = s / l[j][j]
			}
		}
	}
	// Undo the scaling: A = D⁻¹ L L' D⁻¹, so the factor is D⁻¹L.
	for i := range k {
		for j := 0; j <= i; j++ {
			l[i][j] /= d[i]
		}
	}
	return l, true
}

// cholSolve solves L L' z = b.
func cholSolve(l [][]float64, b []float64) []float64 {
	k := len(b)
	z := make([]float64, k)
	for i := range k {
		s := b[i]
		for m := range i {
			s -= l[i][m] * z[m]
		}
		z[i] = s / l[i][i]
	}
	for i := k - 1; i >= 0; i-- {
		s := z[i]
		for m := i + 1; m < k; m++ {
			s -= l[m][i] * z[m]
		}
		z[i] = s / l[i][i]
	}
	return z
}

// coefWeights returns c with c'y = β_j: the weights of coefficient j,
// row i of X (X'X)⁻¹ e_j.
func (f *linFit) coefWeights(j int) []float64 {
	e := make([]float64, f.k)
	e[j] = 1
	z := cholSolve(f.chol, e)
	c := make([]float64, len(f.y))
	for i, row := range f.x {
		for a := range f.k {
			c[i] += row[a] * z[a]
		}
	}
	return c
}

// clusteredVar is the cluster-robust variance of the linear estimator c'y
// with clusters cluster[i] in [0, g).
func (f *linFit) clusteredVar(c []float64, cluster []int, g int) float64 {
	if g < 2 {
		return math.NaN()
	}
	sums := make([]float64, g)
	for i, ci := range c {
		sums[cluster[i]] += ci * f.resid[i]
	}
	var v float64
	for _, s := range sums {
		v += s * s
	}
	return v * float64(g) / float64(g-1)
}

// estimate returns c'y.
func (f *linFit) estimate(c []float64) float64 {
	var s float64
	for i, ci := range c {
		s += ci * f.y[i]
	}
	return s
}

// timeBlocks assigns observations at times t (one side, any order) to g
// blocks of consecutive time with equal counts, returned offset by first.
func timeBlocks(t []float64, g, first int) []int {
	n := len(t)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(t[a], t[b]) })
	out := make([]int, n)
	for rank, i := range order {
		out[i] = first + min(g-1, rank*g/n)
	}
	return out
}

// blocksFor is how many time blocks n observations of one side are cut
// into: about 2·n^⅓, between 4 and 40, and never under 10 observations
// per block.
func blocksFor(n int) int {
	g := int(math.Round(2 * math.Cbrt(float64(n))))
	g = min(max(g, 4), 40)
	return max(1, min(g, n/10))
}

// logTFail is the one-sided p-value of a relative rule against a change
// estimated on the log scale as mu with standard error se and Student t
// errors: how likely a change past the rule's threshold, read from the same
// t the interval comes from. An absolute rule cannot be judged on the log
// scale (p = 1). The step and adjusted request levels decide with it.
func logTFail(mu, se float64, t distuv.StudentsT) func(Gate) float64 {
	return func(g Gate) float64 {
		if !g.Relative {
			return 1
		}
		z := (mu - math.Log1p(g.Threshold/100)) / se
		if g.Op == Below {
			return t.Survival(z)
		}
		return t.CDF(z)
	}
}
