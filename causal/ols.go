package causal

import (
	"gonum.org/v1/gonum/mat"

	"github.com/llmprof/llmprof/internal/stat"
)

// The regressions here are stat.OLS fits (internal/stat/ols.go: the QR
// solve and the sandwich covariances, checked there against NIST, Stata and
// R). olsFit and the short names below are the words the request
// regression (regress.go), the lag fit (lag.go), the kernel fit
// (kernel_fit.go, kernel.go) and the analysis (analyze.go) read them by.

// olsFit is a stat.OLS fit whose width, design, coefficients and residuals
// the kernel fit reads as k, x, beta and resid.
type olsFit struct {
	*stat.OLS
	k     int
	x     *mat.Dense
	beta  []float64
	resid []float64
}

func newOLSFit(f *stat.OLS) *olsFit {
	return &olsFit{OLS: f, k: f.K, x: f.X, beta: f.Beta, resid: f.Resid}
}

// clusterJackknife is CV3, the request and kernel regressions' default.
func (f *olsFit) clusterJackknife(groups []int) (*mat.SymDense, int, bool) {
	return f.ClusterJackknife(groups)
}

// clusterJackknifeOrCR1 is clusterJackknife, or where it is not ok CR1
// with Stata's small-sample factor (the fallback when CV3 cannot drop a
// cluster), from the clusters' scores the jackknife summed.
func (f *olsFit) clusterJackknifeOrCR1(groups []int) (*mat.SymDense, int, bool) {
	return f.ClusterJackknifeOrCR1(groups, stat.StataCR1)
}

// olsScratch is memory one fit after another reuses: the design
// (columnsInto) and the fit's column-scaled copy.
type olsScratch struct {
	design []float64
	fit    stat.Scratch
}

// growDesign gives the design room for n floats, a spill table when the
// fit's buffers are (fit.Spilled; the caller then gives them back with
// free).
func (sc *olsScratch) growDesign(n int) { sc.design = sc.fit.Grow(sc.design, n) }

// free gives back the design and the fit's buffers when they are spill
// tables (spill.Free; the collector frees them otherwise): nothing may
// read a fit made with sc afterwards.
func (sc *olsScratch) free() {
	sc.fit.Release(sc.design)
	sc.fit.Free()
	sc.design = nil
}

func se(v *mat.SymDense) []float64                   { return stat.SE(v) }
func tCritical(alpha float64, df int) float64        { return stat.TCritical(alpha, df) }
func tTwoSided(t float64, df int) float64            { return stat.TTwoSided(t, df) }
func qValues(ps []float64, dependent bool) []float64 { return stat.QValues(ps, dependent) }
