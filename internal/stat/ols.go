package stat

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
	"gonum.org/v1/gonum/lapack/lapack64"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/llmprof/llmprof/internal/spill"
)

// maxCond is the largest condition number of the column-scaled design that
// the fit accepts. Beyond it the coefficients of nearly collinear columns
// are not separately identified and their standard errors mean nothing.
const maxCond = 1e10

// ErrCollinear is returned by FitOLS when the design is (nearly) rank
// deficient.
var ErrCollinear = errors.New("regressors are collinear")

// OLS is an ordinary least-squares fit of y = Xβ + e. gonum provides the
// QR factorization; the covariance sandwiches and tests are written here
// (docs/statistics.md B.5).
type OLS struct {
	// N and K are X's rows and columns; X and Y are the design and the
	// response as given (held, not copied).
	N, K int
	X    *mat.Dense
	Y    []float64
	// Beta are the coefficients, Resid y − Xβ and RSS its sum of squares.
	Beta  []float64
	Resid []float64
	RSS   float64
	// XtXInv is (X'X)⁻¹, the bread of every sandwich.
	XtXInv *mat.SymDense
	// Cond is the condition number of X with unit-norm columns.
	Cond float64
	// MinPivot is the smallest |R_jj| of the QR factor of X with unit-norm
	// columns: its square is the smallest Cholesky pivot of their Gram
	// matrix, the test of a normal-equations solver.
	MinPivot float64
	// rhs is the memory Resid takes (SetResid).
	rhs []float64
}

// Scratch is memory one fit after another reuses: the column-scaled copy of
// the design, which the QR factorization overwrites in place, and the
// right-hand side the solve overwrites, which then holds the fit's
// residuals (OLS.Resid is that memory: valid until the next fit with the
// same Scratch, whether that fit succeeds or fails).
type Scratch struct {
	scaled, rhs []float64
	// work is LAPACK's workspace, of the size its query asks (Geqrf's,
	// then Ormqr's): kept from fit to fit, where each fit made both
	// anew (Ormqr's, 33 KB for any design, was 4.4 MB of the 130 MB an
	// analyze of the 100 MiB OTLP dump of docs/otlp.md allocated, once
	// causal's lag fits keep their Scratch too, causal/lag.go's
	// lagScratch). Its contents are LAPACK's to write before it reads
	// them.
	work []float64
	// Spilled makes the buffers spill tables (GrowSpilled: off the heap
	// while spilling is on), for a caller that gives them back with Free
	// once it is done with its last fit.
	Spilled bool
	// Squares, when not nil, are the next fit's design's sums of squares
	// by column, as columnNorms sums them (each column's from its first
	// row down, each square rounded before it is added), summed by the
	// caller as it wrote the design: FitOLS takes its norms from them
	// rather than from a pass of its own over the design, and sets
	// Squares to nil.
	Squares []float64
	// DeferResid makes FitOLS leave a fit's Resid nil and its RSS 0 for
	// (*OLS).SetResid to fill, in the same memory, if the caller needs
	// them: a fit whose residuals nothing reads (a Gauss–Newton step's,
	// causal/kernel_fit.go) saves a pass over its design.
	DeferResid bool
}

// Free gives back the buffers of a Spilled scratch (spill.Free; nothing
// else is freed before the collector does): no fit made with sc may be
// used afterwards, its Resid being that memory. sc may be used again.
func (sc *Scratch) Free() {
	sc.Release(sc.scaled)
	sc.Release(sc.rhs)
	sc.scaled, sc.rhs = nil, nil
}

// FreeScaled gives back the column-scaled copy alone (spill.Free for a
// Spilled scratch; nothing else is freed before the collector does), once
// the last fit made with sc is done: its Resid, the right-hand side's
// memory, stays. sc may be used again.
func (sc *Scratch) FreeScaled() {
	sc.Release(sc.scaled)
	sc.scaled = nil
}

// Staging is the memory of the column-scaled copy the next fit makes,
// grown to n floats (in a spill table where sc is Spilled), lent to the
// caller until that fit: FitOLS of an n×k design writes all of its first
// n·k floats before it reads one, so a caller may stage that fit's design
// there on its way to the matrix (causal's kernel fit, withinPlan.fillDesign
// in causal/kernel_design.go).
func (sc *Scratch) Staging(n int) []float64 {
	sc.scaled = sc.Grow(sc.scaled, n)
	return sc.scaled
}

// Grow is the package's Grow, or GrowSpilled for a Spilled scratch: the
// scratch's own buffers grow so, and a caller's that live and go with them
// (causal's design matrix) may too, given back with Release.
func (sc *Scratch) Grow(buf []float64, n int) []float64 {
	if sc.Spilled {
		return GrowSpilled(buf, n)
	}
	return Grow(buf, n)
}

// Release gives back buf, which sc.Grow made, when sc is Spilled
// (spill.Free); the collector frees it otherwise. Nothing may read buf
// afterwards.
func (sc *Scratch) Release(buf []float64) {
	if sc.Spilled {
		spill.Free(buf)
	}
}

// workspace is sc's LAPACK workspace at n floats, grown (on the heap: it
// is small) when it holds fewer.
func (sc *Scratch) workspace(n int) []float64 {
	sc.work = Grow(sc.work, n)
	return sc.work
}

// Grow is buf[:n] where buf holds n, else a new slice: its contents are
// whatever was there.
func Grow[T any](buf []T, n int) []T {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]T, n)
}

// GrowSpilled is Grow for a buffer its caller gives back with spill.Free
// when done: a new one is spill.Slice's (a spill file while spilling is on
// and it is large, internal/spill; else make), and the one it replaces is
// given back at once, so nothing may use buf afterwards.
func GrowSpilled(buf []float64, n int) []float64 {
	if cap(buf) >= n {
		return buf[:n]
	}
	spill.Free(buf)
	return spill.Make[float64](n)
}

// FitOLS fits y on the columns of x by Householder QR. Columns are scaled to
// unit norm first, so the condition check and the accuracy do not depend on
// the units of the regressors (NIST's Longley data, whose raw columns span
// ten orders of magnitude, is the test). It keeps the scaled copy of x and
// the right-hand side, then the residuals, in sc (nil: new memory), which
// keeps the buffers for the next fit (in spill tables where sc is Spilled).
//
// The factorization, condition estimate and solve are LAPACK's (gonum's
// lapack64: Geqrf, Trcon, Ormqr, Trtrs), called as mat.QR's Factorize,
// Cond and SolveVecTo call them (the same digits) but on the scaled copy
// itself: mat.QR copies the n×k matrix again and the right-hand side twice,
// n·(k+2) floats a fit, on the kernel view's designs of a million rows.
// Up to maxFusedQR columns (and a finite y) Geqrf and Ormqr are
// householderQR (qr.go), gonum's unblocked routines with the
// same operations on a column-major scaled copy, to the bit
// (TestHouseholderQRMatchesGonum); on the tenant regression's designs of
// the 100 MiB OTLP dump of docs/otlp.md (74,000 rows by 8 columns) they
// take 0.55× gonum's time, whose Dnrm2, Dscal and Ormqr walked down the
// row-major matrix's columns a cache line an element.
func FitOLS(x *mat.Dense, y []float64, sc *Scratch) (*OLS, error) {
	return fitOLS(x, nil, y, sc)
}

// FitOLSColumns is FitOLS of x given also as its columns, cols[j] column
// j of x (the same values): where FitOLS factors a column-major scaled
// copy (householderQR) it is made from the columns, without reading x
// twice more row by row.
func FitOLSColumns(x *mat.Dense, cols [][]float64, y []float64, sc *Scratch) (*OLS, error) {
	n, k := x.Dims()
	if len(cols) != k {
		return nil, fmt.Errorf("ols: %d columns given for a design of %d", len(cols), k)
	}
	// unitColumnsOf lays the scaled copy out by the columns' length.
	for j, c := range cols {
		if len(c) != n {
			return nil, fmt.Errorf("ols: column %d has %d rows for a design of %d", j, len(c), n)
		}
	}
	return fitOLS(x, cols, y, sc)
}

func fitOLS(x *mat.Dense, cols [][]float64, y []float64, sc *Scratch) (*OLS, error) {
	if sc == nil {
		sc = &Scratch{}
	}
	squares := sc.Squares
	sc.Squares = nil
	n, k := x.Dims()
	if n != len(y) {
		return nil, fmt.Errorf("ols: %d rows but %d responses", n, len(y))
	}
	if n <= k {
		return nil, fmt.Errorf("ols: %d observations for %d parameters", n, k)
	}
	norms := make([]float64, k)
	if squares != nil && len(squares) != k {
		return nil, fmt.Errorf("ols: %d sums of squares for %d columns", len(squares), k)
	}
	sc.scaled = sc.Grow(sc.scaled, n*k)
	scaled := sc.scaled
	tau := make([]float64, k)
	var query [1]float64
	// householderQR is gonum's Geqrf and Ormqr to the bit on finite
	// values (a NaN's sign and payload may differ), which the scaled
	// design always is; it takes the scaled design column-major.
	fused := k <= fusedQRWidth && finite(y)
	// rdata is R, k×k row-major in its upper triangle.
	var rdata []float64
	if fused {
		j := -1
		var norm0 l2norm
		have0 := false
		if cols != nil {
			j = unitColumnsOf(cols, scaled, norms)
		} else {
			j, norm0 = unitColumnsT(x.RawMatrix(), squares, scaled, norms)
			have0 = true
		}
		if j >= 0 {
			return nil, fmt.Errorf("ols: column %d is zero or not finite: %w", j, ErrCollinear)
		}
		// Qᵀy in the same passes, in the right-hand side's memory (the
		// residuals of the fit before are gone then, fitted or not).
		sc.rhs = sc.Grow(sc.rhs, n)
		copy(sc.rhs, y)
		householderQRFrom(scaled, n, k, tau, sc.rhs, sc.workspace(k), norm0, have0, false)
		rdata = make([]float64, k*k)
		for i := range k {
			for j := i; j < k; j++ {
				rdata[i*k+j] = scaled[j*n+i]
			}
		}
	} else {
		if j := unitColumns(x.RawMatrix(), scaled, norms); j >= 0 {
			return nil, fmt.Errorf("ols: column %d is zero or not finite: %w", j, ErrCollinear)
		}
		qr := blas64.General{Rows: n, Cols: k, Stride: k, Data: scaled}
		lapack64.Geqrf(qr, tau, query[:], -1)
		work := sc.workspace(int(query[0]))
		lapack64.Geqrf(qr, tau, work, len(work))
		rdata = scaled[:k*k]
	}
	r := blas64.Triangular{Uplo: blas.Upper, Diag: blas.NonUnit, N: k, Stride: k, Data: rdata}
	cond := 1 / lapack64.Trcon(mat.CondNorm, r, make([]float64, 3*k), make([]int, k))
	if cond > maxCond || math.IsNaN(cond) {
		return nil, fmt.Errorf("ols: condition number %.3g: %w", cond, ErrCollinear)
	}
	// β of the scaled design: Qᵀy, then R⁻¹ of its first k entries.
	if !fused {
		sc.rhs = sc.Grow(sc.rhs, n)
		copy(sc.rhs, y)
		rhs := blas64.General{Rows: n, Cols: 1, Stride: 1, Data: sc.rhs}
		qr := blas64.General{Rows: n, Cols: k, Stride: k, Data: scaled}
		lapack64.Ormqr(blas.Left, blas.Trans, qr, tau, rhs, query[:], -1)
		work := sc.workspace(int(query[0]))
		lapack64.Ormqr(blas.Left, blas.Trans, qr, tau, rhs, work, len(work))
	}
	rhs := blas64.General{Rows: n, Cols: 1, Stride: 1, Data: sc.rhs}
	if !lapack64.Trtrs(blas.NoTrans, r, rhs) {
		return nil, fmt.Errorf("ols: %v: %w", mat.Condition(math.Inf(1)), ErrCollinear)
	}
	rk := mat.NewTriDense(k, mat.Upper, nil)
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			rk.SetTri(i, j, rdata[i*k+j])
		}
	}
	var rinv mat.TriDense
	if err := rinv.InverseTri(rk); err != nil {
		return nil, fmt.Errorf("ols: %v: %w", err, ErrCollinear)
	}
	f := &OLS{N: n, K: k, X: x, Y: y, Beta: make([]float64, k), Cond: cond, MinPivot: math.Inf(1)}
	for j := range f.Beta {
		f.Beta[j] = sc.rhs[j] / norms[j]
		f.MinPivot = math.Min(f.MinPivot, math.Abs(rdata[j*k+j]))
	}
	// (X'X)⁻¹ = D⁻¹ R⁻¹ R⁻ᵀ D⁻¹ with D the column norms.
	f.XtXInv = mat.NewSymDense(k, nil)
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			s := 0.0
			for l := max(i, j); l < k; l++ {
				s += rinv.At(i, l) * rinv.At(j, l)
			}
			f.XtXInv.SetSym(i, j, s/(norms[i]*norms[j]))
		}
	}
	f.rhs = sc.rhs[:n]
	if !sc.DeferResid {
		f.SetResid()
	}
	return f, nil
}

// SetResid sets Resid and RSS, which FitOLS leaves unset where its
// Scratch says DeferResid, from X, Y and Beta. The residuals take the
// right-hand side's memory, of which only the first k entries (read into
// Beta) were still needed: SetResid may be called until the next fit with
// the same Scratch, and once.
func (f *OLS) SetResid() {
	if f.Resid != nil {
		return
	}
	n, k, x, y := f.N, f.K, f.X, f.Y
	f.Resid = f.rhs
	f.rhs = nil
	for i := 0; i < n; i++ {
		row := x.RawRowView(i)
		fit := 0.0
		for j := 0; j < k; j++ {
			fit += row[j] * f.Beta[j]
		}
		f.Resid[i] = y[i] - fit
		f.RSS += f.Resid[i] * f.Resid[i]
	}
}

// fusedQRWidth is the widest design FitOLS factors by householderQR:
// maxFusedQR, or 0 for the tests that compare it with gonum's routines.
var fusedQRWidth = maxFusedQR

// finite reports whether every element of x is finite.
func finite(x []float64) bool {
	for _, v := range x {
		if v-v != 0 { // NaN or ±Inf
			return false
		}
	}
	return true
}

// unitColumns writes x's columns divided by their Euclidean norms into
// scaled, row-major with len(norms) columns, and the norms into norms; it
// returns the first column whose norm is zero or not finite, or -1 (scaled
// is then not all written). Each norm sums its column's squares from the
// first row down, as a pass down the column would, but all the columns in
// one pass over the rows: a pass down one column of a row-major design
// reads every cache line of it, so k passes read the design k times (on
// the tenant regression's designs, tens of thousands of rows by nine
// columns, the column passes were a third of FitOLS's own time).
func unitColumns(x blas64.General, scaled, norms []float64) int {
	n, k := x.Rows, x.Cols
	norms = norms[:k]
	if j := columnNorms(x, norms); j >= 0 {
		return j
	}
	for i := 0; i < n; i++ {
		row, out := x.Data[i*x.Stride:][:len(norms)], scaled[i*k:][:len(norms)]
		for j, v := range row {
			out[j] = v / norms[j]
		}
	}
	return -1
}

// columnNorms writes the Euclidean norm of each of x's columns to norms
// (its length is x's columns), summing each column's squares from the first
// row down in one pass over the rows, and returns the first column whose
// norm is zero or not finite, or -1.
func columnNorms(x blas64.General, norms []float64) int {
	clear(norms)
	for i := 0; i < x.Rows; i++ {
		row := x.Data[i*x.Stride:][:len(norms)]
		for j, v := range row {
			norms[j] += float64(v * v)
		}
	}
	return rootsOf(norms)
}

// rootsOf replaces each sum of squares in norms by its square root, and
// returns the first column whose norm is zero or not finite, or -1.
func rootsOf(norms []float64) int {
	for j, ss := range norms {
		norms[j] = math.Sqrt(ss)
		if norms[j] == 0 || math.IsNaN(norms[j]) || math.IsInf(norms[j], 0) {
			return j
		}
	}
	return -1
}

// unitColumnsT is unitColumns writing scaled column-major (column j at
// scaled[j·n:(j+1)·n]), as householderQR takes it: the same norms, summed
// the same way (or given as their squares, Scratch.Squares), and the same
// quotients. Here, in unitColumns and in unitColumnsOf each square is
// rounded before it is added (float64(v*v): no fused multiply-add), so
// that the three agree wherever the compiler would fuse one loop and not
// another. It also returns the 2-norm's running sum (l2norm) of column 0
// as scaled from its second row on, which householderQR's first reflector
// would otherwise take in a pass of its own.
func unitColumnsT(x blas64.General, squares, scaled, norms []float64) (int, l2norm) {
	n, k := x.Rows, x.Cols
	norms = norms[:k]
	if squares != nil {
		copy(norms, squares)
		if j := rootsOf(norms); j >= 0 {
			return j, l2norm{}
		}
	} else if j := columnNorms(x, norms); j >= 0 {
		return j, l2norm{}
	}
	scaled = scaled[:n*k]
	nrm := newL2norm()
	for i := 0; i < n; i++ {
		row := x.Data[i*x.Stride:][:len(norms)]
		for j, v := range row {
			scaled[j*n+i] = v / norms[j]
		}
		if i > 0 {
			nrm = nrm.add(scaled[i])
		}
	}
	return -1, nrm
}

// unitColumnsOf is unitColumnsT of the design whose columns are cols:
// each norm sums its column's squares from the first row down, as
// unitColumns does, and each column is scaled in one pass down it.
func unitColumnsOf(cols [][]float64, scaled, norms []float64) int {
	k := len(cols)
	n := len(cols[0])
	norms = norms[:k]
	for j, c := range cols {
		ss := 0.0
		for _, v := range c[:n] {
			ss += float64(v * v)
		}
		norms[j] = math.Sqrt(ss)
		if norms[j] == 0 || math.IsNaN(norms[j]) || math.IsInf(norms[j], 0) {
			return j
		}
	}
	for j, c := range cols {
		out, nj := scaled[j*n:(j+1)*n], norms[j]
		// A value the same to the bit as the row before's has the same
		// quotient: the constant column divides once.
		last, q := uint64(0), 0/nj
		for i, v := range c[:len(out)] {
			if b := math.Float64bits(v); b != last || i == 0 {
				last, q = b, v/nj
			}
			out[i] = q
		}
	}
	return -1
}

// Classical is the textbook covariance σ̂²(X'X)⁻¹ with σ̂² = e'e/(n−k); valid
// only for independent, homoskedastic errors. The analysis reports it
// nowhere; tests use it to show that it under-covers on clustered data.
func (f *OLS) Classical() *mat.SymDense {
	v := mat.NewSymDense(f.K, nil)
	v.ScaleSym(f.RSS/float64(f.N-f.K), f.XtXInv)
	return v
}

// sandwich returns scale·B·M·B for the bread B = (X'X)⁻¹ and a meat M.
func (f *OLS) sandwich(meat *mat.SymDense, scale float64) *mat.SymDense {
	var bm, bmb mat.Dense
	bm.Mul(f.XtXInv, meat)
	bmb.Mul(&bm, f.XtXInv)
	v := mat.NewSymDense(f.K, nil)
	for i := 0; i < f.K; i++ {
		for j := i; j < f.K; j++ {
			// Average the two triangles: bmb is symmetric up to rounding.
			v.SetSym(i, j, scale*(bmb.At(i, j)+bmb.At(j, i))/2)
		}
	}
	return v
}

// SmallSample is the finite-sample factor of a cluster-robust variance
// over G clusters; each caller states the one it reports.
type SmallSample int

const (
	// StataCR1 is G/(G−1) · (n−1)/(n−k), Stata's `vce(cluster)`.
	StataCR1 SmallSample = iota
	// ClusterCount is G/(G−1) alone: CR1 without its (n−1)/(n−k) part,
	// which is ≈ 1 when n is large against k.
	ClusterCount
)

// clusterFactor is the factor s over g clusters.
func (f *OLS) clusterFactor(s SmallSample, g int) float64 {
	if s == StataCR1 {
		return float64(g) / float64(g-1) * float64(f.N-1) / float64(f.N-f.K)
	}
	return float64(g) / float64(g-1)
}

// Cluster is the cluster-robust covariance CR1 (Liang & Zeger 1986) with
// the finite-sample factor factor (StataCR1: Stata's `vce(cluster)`):
//
//	V = G/(G−1) · (n−1)/(n−k) · (X'X)⁻¹ [Σ_g X_g'e_g e_g'X_g] (X'X)⁻¹
//
// groups[i] labels row i's cluster. It assumes errors independent across
// clusters and arbitrarily correlated within one, and needs many clusters
// (inference uses t with G−1 degrees of freedom). It returns the covariance
// and G.
func (f *OLS) Cluster(groups []int, factor SmallSample) (*mat.SymDense, int) {
	scores := map[int][]float64{}
	var order []int
	var s []float64
	for i := 0; i < f.N; i++ {
		// Rows of one cluster often come in a run (time blocks): look the
		// cluster up only when the label changes, as ClusterJackknife does.
		if i == 0 || groups[i] != groups[i-1] {
			var ok bool
			s, ok = scores[groups[i]]
			if !ok {
				s = make([]float64, f.K)
				scores[groups[i]] = s
				order = append(order, groups[i])
			}
		}
		e := f.Resid[i]
		row := f.X.RawRowView(i)[:len(s)]
		for j, x := range row {
			s[j] += float64(x * e)
		}
	}
	return f.cr1(len(order), func(c int) []float64 { return scores[order[c]] }, factor), len(order)
}

// cr1 is Cluster's covariance from the g clusters' scores (score(c), in
// the clusters' order of first appearance): the meat Σ s_c s_c', each
// added in turn, in the sandwich with the small-sample factor.
func (f *OLS) cr1(g int, score func(c int) []float64, factor SmallSample) *mat.SymDense {
	meat := mat.NewSymDense(f.K, nil)
	for c := range g {
		meat.SymRankOne(meat, 1, mat.NewVecDense(f.K, score(c)))
	}
	return f.sandwich(meat, f.clusterFactor(factor, g))
}

// ClusterJackknife is the leave-one-cluster-out covariance CV3
// (MacKinnon, Nielsen & Webb 2023, "Cluster-robust inference: a guide to
// empirical practice", J. Econometrics 232:272, who recommend it over CV1):
//
//	V = (G−1)/G · Σ_g (β̂₍₋g₎ − β̂)(β̂₍₋g₎ − β̂)',  β̂₍₋g₎ − β̂ = −(X'X − X_g'X_g)⁻¹ X_g'e_g
//
// CV1 understates the variance when the regressor of interest is itself
// correlated within clusters, as a tenant's load is over a few seconds; CV3
// does not, at the price of being slightly conservative. ok is false when
// dropping some cluster leaves a singular design (the caller falls back to
// CV1).
func (f *OLS) ClusterJackknife(groups []int) (v *mat.SymDense, g int, ok bool) {
	v, _, g, ok = f.clusterJackknife(groups, StataCR1, false)
	return v, g, ok
}

// ClusterJackknifeOrCR1 is ClusterJackknife, and where it is not ok
// (leaving some cluster out is singular) Cluster(groups, factor) instead,
// from the clusters' scores the jackknife summed (the same sums in the
// same order): ok says which it is.
func (f *OLS) ClusterJackknifeOrCR1(groups []int, factor SmallSample) (v *mat.SymDense, g int, ok bool) {
	var cr1 *mat.SymDense
	v, cr1, g, ok = f.clusterJackknife(groups, factor, true)
	if !ok {
		return cr1, g, false
	}
	return v, g, true
}

// clusterJackknife is ClusterJackknife and, where it is not ok and
// fallback, Cluster(groups, factor) from the scores it summed (cr1).
//
// A cluster's X'X and score take two of its rows at a time where they
// are next to each other, each sum the first row's product and then the
// second's: the order a row at a time takes, with each sum read and
// written once for two rows. Each product is rounded before it is added
// (float64(x*y), never a fused multiply-add), here and in Cluster, so
// that the two-row and one-row loops and Cluster's scores are the same
// sums on a compiler that fuses (GOAMD64=v3, arm64) too.
func (f *OLS) clusterJackknife(groups []int, factor SmallSample, fallback bool) (v, cr1 *mat.SymDense, g int, ok bool) {
	k := f.K
	type part struct {
		xtx   []float64
		score []float64
	}
	parts := map[int]*part{}
	var order []int
	xtx := make([]float64, k*k)
	var p *part
	for i := 0; i < f.N; {
		// Rows of one cluster often come in a run (time blocks): look the
		// cluster up only when the label changes.
		if i == 0 || groups[i] != groups[i-1] {
			var seen bool
			p, seen = parts[groups[i]]
			if !seen {
				p = &part{xtx: make([]float64, k*k), score: make([]float64, k)}
				parts[groups[i]] = p
				order = append(order, groups[i])
			}
		}
		row := f.X.RawRowView(i)[:k]
		e := f.Resid[i]
		score := p.score[:len(row)]
		if i+1 < f.N && groups[i+1] == groups[i] {
			row1 := f.X.RawRowView(i + 1)[:len(row)]
			e1 := f.Resid[i+1]
			for a, ra := range row {
				ra1 := row1[a]
				sa := score[a]
				sa += float64(ra * e)
				sa += float64(ra1 * e1)
				score[a] = sa
				// Row a of the cluster's X'X from its diagonal on, and
				// the rows' entries it is multiplied by, as slices of
				// one length: no bounds check in the loop.
				rb, rb1 := row[a:], row1[a:]
				xtx := p.xtx[a*k+a:][:len(rb)]
				rb1 = rb1[:len(rb)]
				for b, v := range rb {
					t := xtx[b]
					t += float64(ra * v)
					t += float64(ra1 * rb1[b])
					xtx[b] = t
				}
			}
			i += 2
			continue
		}
		for a, ra := range row {
			score[a] += float64(ra * e)
			rb := row[a:]
			xtx := p.xtx[a*k+a:][:len(rb)]
			for b, v := range rb {
				xtx[b] += float64(ra * v)
			}
		}
		i++
	}
	for _, label := range order { // in a fixed order: the same inputs, the same digits
		for a := range xtx {
			xtx[a] += parts[label].xtx[a]
		}
	}
	// fail is the jackknife's answer where some cluster cannot be left
	// out, with CR1 from the scores where asked for (Cluster's meat).
	fail := func() (v, cr1 *mat.SymDense, g int, ok bool) {
		if !fallback {
			return nil, nil, len(order), false
		}
		g = len(order)
		return nil, f.cr1(g, func(c int) []float64 { return parts[order[c]].score }, factor), g, false
	}
	acc := mat.NewSymDense(k, nil)
	a := mat.NewSymDense(k, nil)
	var ch mat.Cholesky
	var d mat.VecDense
	for _, label := range order {
		p := parts[label]
		for r := 0; r < k; r++ {
			for c := r; c < k; c++ {
				a.SetSym(r, c, xtx[r*k+c]-p.xtx[r*k+c])
			}
		}
		if !ch.Factorize(a) {
			return fail()
		}
		if err := ch.SolveVecTo(&d, mat.NewVecDense(k, p.score)); err != nil {
			return fail()
		}
		acc.SymRankOne(acc, 1, &d)
	}
	g = len(order)
	acc.ScaleSym(float64(g-1)/float64(g), acc)
	return acc, nil, g, true
}

// NeweyWest is the Newey–West (1987, Econometrica 55:703) HAC covariance with
// Bartlett weights, in the form of statsmodels' cov_hac_simple with its
// small-sample correction, which equals Stata's `newey`:
//
//	Ŝ = Σ_t e_t² x_t x_t' + Σ_{l=1}^{L} (1 − l/(L+1)) Σ_t e_t e_{t−l} (x_t x_{t−l}' + x_{t−l} x_t')
//	V = n/(n−k) · (X'X)⁻¹ Ŝ (X'X)⁻¹
//
// times[i] is row i's time index, increasing. Lags are counted in time, not
// rows: when bins are missing, a pair of rows l bins apart gets the lag-l
// weight and absent bins contribute nothing (Stata's `newey, force` treats
// gaps the same way). It assumes errors whose autocorrelation dies out
// within L steps.
func (f *OLS) NeweyWest(times []int, lags int) *mat.SymDense {
	// With scores h_t = x_t e_t and g_t = Σ_{0<t−s≤L} w(t−s) h_s, the meat is
	// Σ_t h_t h_t' + Σ_t (h_t g_t' + g_t h_t'): O(n(kL + k²)) instead of
	// forming every lagged outer product.
	k := f.K
	h := make([]float64, f.N*k)
	for i := 0; i < f.N; i++ {
		e, hi := f.Resid[i], h[i*k:(i+1)*k]
		for a, x := range f.X.RawRowView(i) {
			hi[a] = x * e
		}
	}
	acc := make([]float64, k*k)
	g := make([]float64, k)
	lo := 0
	for i := 0; i < f.N; i++ {
		hi := h[i*k : (i+1)*k]
		clear(g)
		for lo < i && times[i]-times[lo] > lags {
			lo++
		}
		for j := lo; j < i; j++ {
			l := times[i] - times[j]
			if l <= 0 {
				continue
			}
			w := 1 - float64(l)/float64(lags+1)
			hj := h[j*k : (j+1)*k]
			for a := range g {
				g[a] += w * hj[a]
			}
		}
		for a := 0; a < k; a++ {
			ha, ga, row := hi[a], g[a], acc[a*k:(a+1)*k]
			for b := a; b < k; b++ {
				row[b] += ha*hi[b] + ha*g[b] + ga*hi[b]
			}
		}
	}
	meat := mat.NewSymDense(k, nil)
	for a := 0; a < k; a++ {
		for b := a; b < k; b++ {
			meat.SetSym(a, b, acc[a*k+b])
		}
	}
	return f.sandwich(meat, float64(f.N)/float64(f.N-f.K))
}

// HC3 is the heteroskedasticity-robust covariance HC3 (MacKinnon & White
// 1985), Stata's `vce(HC3)`:
//
//	V = (X'X)⁻¹ [Σ_i e_i²/(1−h_ii)² x_i x_i'] (X'X)⁻¹,  h_ii = x_i'(X'X)⁻¹x_i
//
// It assumes uncorrelated errors of any variance; dividing by (1−h)² keeps
// high-leverage bins from understating it.
func (f *OLS) HC3() *mat.SymDense {
	meat := mat.NewSymDense(f.K, nil)
	row := make([]float64, f.K)
	for i := 0; i < f.N; i++ {
		mat.Row(row, i, f.X)
		xv := mat.NewVecDense(f.K, row)
		h := mat.Inner(xv, f.XtXInv, xv)
		w := f.Resid[i] / (1 - h)
		meat.SymRankOne(meat, w*w, xv)
	}
	return f.sandwich(meat, 1)
}

// NeweyWestLags is the automatic bandwidth floor(4·(T/100)^(2/9)) (Newey &
// West 1994; statsmodels' default), at least 1.
func NeweyWestLags(t int) int {
	return max(1, int(math.Floor(4*math.Pow(float64(t)/100, 2.0/9))))
}

// SE returns the standard errors, the square roots of v's diagonal.
func SE(v *mat.SymDense) []float64 {
	n := v.SymmetricDim()
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Sqrt(math.Max(0, v.At(i, i)))
	}
	return out
}

// Wald tests H0: β_j = 0 for every j in idx with covariance v:
// W = β_S'(V_SS)⁻¹β_S. It returns F = W/q, to be read against F(q, df) as
// Stata's `test` does after `regress`/`newey`.
func Wald(beta []float64, v *mat.SymDense, idx []int) (float64, error) {
	q := len(idx)
	if q == 0 {
		return math.NaN(), errors.New("wald: no restrictions")
	}
	vs := mat.NewSymDense(q, nil)
	b := mat.NewVecDense(q, nil)
	for a, i := range idx {
		b.SetVec(a, beta[i])
		for c := a; c < q; c++ {
			vs.SetSym(a, c, v.At(i, idx[c]))
		}
	}
	var ch mat.Cholesky
	if ok := ch.Factorize(vs); !ok {
		return math.NaN(), errors.New("wald: covariance of the tested coefficients is not positive definite")
	}
	var sol mat.VecDense
	if err := ch.SolveVecTo(&sol, b); err != nil {
		return math.NaN(), fmt.Errorf("wald: %w", err)
	}
	return mat.Dot(b, &sol) / float64(q), nil
}

// FTestRSS is the classic nested-model F test
// F = ((RSS_r − RSS_u)/q) / (RSS_u/df_u), as statsmodels'
// grangercausalitytests reports it ("ssr_ftest") and R's lmtest::grangertest
// computes it. It returns F and its p-value from F(q, df_u).
func FTestRSS(rssR, rssU float64, q, dfU int) (float64, float64) {
	f := ((rssR - rssU) / float64(q)) / (rssU / float64(dfU))
	return f, FSurvival(f, q, dfU)
}

// FSurvival is P(F(d1, d2) > f).
func FSurvival(f float64, d1, d2 int) float64 {
	if math.IsNaN(f) || d1 <= 0 || d2 <= 0 {
		return math.NaN()
	}
	if f <= 0 {
		return 1
	}
	return distuv.F{D1: float64(d1), D2: float64(d2)}.Survival(f)
}

// TTwoSided is the two-sided p-value of t with df degrees of freedom.
func TTwoSided(t float64, df int) float64 {
	if math.IsNaN(t) || df <= 0 {
		return math.NaN()
	}
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Survival(math.Abs(t))
}

// TCritical is the 1−α/2 quantile of t with df degrees of freedom.
func TCritical(alpha float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - alpha/2)
}

// CoefWeights returns c with c'y = β_j: the weights of coefficient j,
// row i of X (X'X)⁻¹ e_j.
func (f *OLS) CoefWeights(j int) []float64 {
	c := make([]float64, f.N)
	for i := range c {
		row := f.X.RawRowView(i)
		for a := range f.K {
			c[i] += row[a] * f.XtXInv.At(a, j)
		}
	}
	return c
}

// Estimate returns c'y, a linear estimator of the fit's response.
func (f *OLS) Estimate(c []float64) float64 {
	var s float64
	for i, ci := range c {
		s += ci * f.Y[i]
	}
	return s
}

// ClusteredVar is the cluster-robust (sandwich) variance of the linear
// estimator c'y under dependence within clusters (Liang & Zeger 1986,
// Biometrika 73:13),
//
//	V(c'y) = factor · Σ_g (Σ_{i∈g} c_i ê_i)²,
//
// ê the residuals of the fit and cluster[i] in [0, g) row i's cluster. c
// need not be a coefficient's weights (CoefWeights): a difference of group
// means, or the part of it the regressors explain, is linear in y too. With
// c = CoefWeights(j) it is Cluster's [j, j] element. NaN for fewer than two
// clusters.
func (f *OLS) ClusteredVar(c []float64, cluster []int, g int, factor SmallSample) float64 {
	if g < 2 {
		return math.NaN()
	}
	sums := make([]float64, g)
	for i, ci := range c {
		sums[cluster[i]] += ci * f.Resid[i]
	}
	var v float64
	for _, s := range sums {
		v += s * s
	}
	return v * f.clusterFactor(factor, g)
}
