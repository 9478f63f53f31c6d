package compare

import (
	"cmp"
	"errors"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/llmprof/llmprof/internal/stat"
)

// Least squares with errors clustered by time block, for the step level
// (compare/steps.go) and the adjusted request level (compare/adjust.go).
//
// The fit is ordinary least squares of y on the columns of X. Every
// estimate these levels report — a side coefficient, a difference of side
// means, the part of it the covariates explain — is linear in y, c'y, so
// its variance under dependence within clusters is the cluster-robust
// (sandwich) form of Liang & Zeger (1986, Biometrika 73:13) for a linear
// estimator (stat.OLS.ClusteredVar),
//
//	V(c'y) = G/(G−1) · Σ_g (Σ_{i∈g} c_i ê_i)²,
//
// ê the residuals of the full model and G the number of clusters (the
// small-sample factor is Stata's CR1 without its (n−1)/(n−K) part,
// stat.ClusterCount, which is ≈ 1 for these n). Clusters are blocks of
// consecutive observations in time, so what neighbours share (a batch, a
// burst, a stall) stays inside a cluster; the intervals use Student's t
// with G − 2 degrees of freedom (two sides' blocks, each side's mean
// estimated), as Cameron & Miller (2015, J. Human Resources 50:317) advise
// for few clusters.

var errSingular = errors.New("the covariates are collinear or constant: the fit has no unique solution")

// minPivot is the smallest |R_jj| of the column-scaled design a fit may
// have: its square, 1e-10, is the smallest Cholesky pivot of the scaled
// normal equations these levels were first solved by, so the same designs
// count as collinear.
const minPivot = 1e-5

// fitLinear fits y on the rows of x by least squares (stat.FitOLS: QR with
// columns scaled to unit norm, so counts and their squares live together).
func fitLinear(x [][]float64, y []float64) (*stat.OLS, error) {
	n := len(y)
	if n == 0 || len(x) != n || n <= len(x[0]) {
		return nil, errSingular
	}
	k := len(x[0])
	design := mat.NewDense(n, k, nil)
	for i, row := range x {
		design.SetRow(i, row)
	}
	f, err := stat.FitOLS(design, y, nil)
	if err != nil || !(f.MinPivot > minPivot) {
		return nil, errSingular
	}
	return f, nil
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
