package causal

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// maxCond is the largest condition number of the column-scaled design that
// the fit accepts. Beyond it the coefficients of nearly collinear columns
// are not separately identified and their standard errors mean nothing.
const maxCond = 1e10

// errCollinear is returned by fitOLS when the design is (nearly) rank
// deficient.
var errCollinear = errors.New("regressors are collinear")

// olsFit is an ordinary least-squares fit of y = Xβ + e. gonum provides the
// QR factorization; the covariance sandwiches and tests are written here
// (statistics reference B.5).
type olsFit struct {
	n, k  int
	x     *mat.Dense
	beta  []float64
	resid []float64
	rss   float64
	// xtxInv is (X'X)⁻¹, the bread of every sandwich.
	xtxInv *mat.SymDense
	// cond is the condition number of X with unit-norm columns.
	cond float64
}

// fitOLS fits y on the columns of x by Householder QR. Columns are scaled to
// unit norm first, so the condition check and the accuracy do not depend on
// the units of the regressors (NIST's Longley data, whose raw columns span
// ten orders of magnitude, is the test).
func fitOLS(x *mat.Dense, y []float64) (*olsFit, error) { return fitOLSReusing(x, y, nil) }

// olsScratch is memory one fit after another reuses: the design
// (columnsInto) and its column-scaled copy.
type olsScratch struct{ design, scaled, col []float64 }

// grow is buf[:n] where buf holds n, else a new slice.
func grow(buf []float64, n int) []float64 {
	if cap(buf) >= n {
		return buf[:n]
	}
	return make([]float64, n)
}

// fitOLSReusing is fitOLS with its scaled copy of x in sc (nil: new
// memory); sc keeps the buffers for the next fit.
func fitOLSReusing(x *mat.Dense, y []float64, sc *olsScratch) (*olsFit, error) {
	if sc == nil {
		sc = &olsScratch{}
	}
	n, k := x.Dims()
	if n != len(y) {
		return nil, fmt.Errorf("ols: %d rows but %d responses", n, len(y))
	}
	if n <= k {
		return nil, fmt.Errorf("ols: %d observations for %d parameters", n, k)
	}
	norms := make([]float64, k)
	sc.col, sc.scaled = grow(sc.col, n), grow(sc.scaled, n*k)
	col, scaled := sc.col, sc.scaled
	for j := 0; j < k; j++ {
		mat.Col(col, j, x)
		norms[j] = math.Sqrt(dot(col, col))
		if norms[j] == 0 || math.IsNaN(norms[j]) || math.IsInf(norms[j], 0) {
			return nil, fmt.Errorf("ols: column %d is zero or not finite: %w", j, errCollinear)
		}
		for i, v := range col {
			scaled[i*k+j] = v / norms[j]
		}
	}
	xs := mat.NewDense(n, k, scaled)
	var qr mat.QR
	qr.Factorize(xs)
	cond := qr.Cond()
	if cond > maxCond || math.IsNaN(cond) {
		return nil, fmt.Errorf("ols: condition number %.3g: %w", cond, errCollinear)
	}
	var bs mat.VecDense
	if err := qr.SolveVecTo(&bs, false, mat.NewVecDense(n, append([]float64(nil), y...))); err != nil {
		return nil, fmt.Errorf("ols: %v: %w", err, errCollinear)
	}
	var r mat.Dense
	qr.RTo(&r)
	rk := mat.NewTriDense(k, mat.Upper, nil)
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			rk.SetTri(i, j, r.At(i, j))
		}
	}
	var rinv mat.TriDense
	if err := rinv.InverseTri(rk); err != nil {
		return nil, fmt.Errorf("ols: %v: %w", err, errCollinear)
	}
	f := &olsFit{n: n, k: k, x: x, beta: make([]float64, k), cond: cond}
	for j := range f.beta {
		f.beta[j] = bs.AtVec(j) / norms[j]
	}
	// (X'X)⁻¹ = D⁻¹ R⁻¹ R⁻ᵀ D⁻¹ with D the column norms.
	f.xtxInv = mat.NewSymDense(k, nil)
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			s := 0.0
			for l := max(i, j); l < k; l++ {
				s += rinv.At(i, l) * rinv.At(j, l)
			}
			f.xtxInv.SetSym(i, j, s/(norms[i]*norms[j]))
		}
	}
	f.resid = make([]float64, n)
	for i := 0; i < n; i++ {
		row := x.RawRowView(i)
		fit := 0.0
		for j := 0; j < k; j++ {
			fit += row[j] * f.beta[j]
		}
		f.resid[i] = y[i] - fit
		f.rss += f.resid[i] * f.resid[i]
	}
	return f, nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// classical is the textbook covariance σ̂²(X'X)⁻¹ with σ̂² = e'e/(n−k); valid
// only for independent, homoskedastic errors. The analysis reports it
// nowhere; tests use it to show that it under-covers on clustered data.
func (f *olsFit) classical() *mat.SymDense {
	v := mat.NewSymDense(f.k, nil)
	v.ScaleSym(f.rss/float64(f.n-f.k), f.xtxInv)
	return v
}

// sandwich returns scale·B·M·B for the bread B = (X'X)⁻¹ and a meat M.
func (f *olsFit) sandwich(meat *mat.SymDense, scale float64) *mat.SymDense {
	var bm, bmb mat.Dense
	bm.Mul(f.xtxInv, meat)
	bmb.Mul(&bm, f.xtxInv)
	v := mat.NewSymDense(f.k, nil)
	for i := 0; i < f.k; i++ {
		for j := i; j < f.k; j++ {
			// Average the two triangles: bmb is symmetric up to rounding.
			v.SetSym(i, j, scale*(bmb.At(i, j)+bmb.At(j, i))/2)
		}
	}
	return v
}

// cluster is the cluster-robust covariance CR1 (Liang & Zeger 1986; the
// finite-sample factor is Stata's `vce(cluster)`):
//
//	V = G/(G−1) · (n−1)/(n−k) · (X'X)⁻¹ [Σ_g X_g'e_g e_g'X_g] (X'X)⁻¹
//
// groups[i] labels row i's cluster. It assumes errors independent across
// clusters and arbitrarily correlated within one, and needs many clusters
// (inference uses t with G−1 degrees of freedom). It returns the covariance
// and G.
func (f *olsFit) cluster(groups []int) (*mat.SymDense, int) {
	scores := map[int][]float64{}
	var order []int
	for i := 0; i < f.n; i++ {
		s, ok := scores[groups[i]]
		if !ok {
			s = make([]float64, f.k)
			scores[groups[i]] = s
			order = append(order, groups[i])
		}
		e := f.resid[i]
		row := f.x.RawRowView(i)
		for j := 0; j < f.k; j++ {
			s[j] += row[j] * e
		}
	}
	meat := mat.NewSymDense(f.k, nil)
	for _, g := range order {
		meat.SymRankOne(meat, 1, mat.NewVecDense(f.k, scores[g]))
	}
	g := len(order)
	scale := float64(g) / float64(g-1) * float64(f.n-1) / float64(f.n-f.k)
	return f.sandwich(meat, scale), g
}

// clusterJackknife is the leave-one-cluster-out covariance CV3
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
func (f *olsFit) clusterJackknife(groups []int) (v *mat.SymDense, g int, ok bool) {
	k := f.k
	type part struct {
		xtx   []float64
		score []float64
	}
	parts := map[int]*part{}
	var order []int
	xtx := make([]float64, k*k)
	var p *part
	for i := 0; i < f.n; i++ {
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
		row := f.x.RawRowView(i)
		e := f.resid[i]
		for a := 0; a < k; a++ {
			p.score[a] += row[a] * e
			for b := a; b < k; b++ {
				p.xtx[a*k+b] += row[a] * row[b]
			}
		}
	}
	for _, label := range order { // in a fixed order: the same inputs, the same digits
		for a := range xtx {
			xtx[a] += parts[label].xtx[a]
		}
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
			return nil, len(order), false
		}
		if err := ch.SolveVecTo(&d, mat.NewVecDense(k, p.score)); err != nil {
			return nil, len(order), false
		}
		acc.SymRankOne(acc, 1, &d)
	}
	g = len(order)
	acc.ScaleSym(float64(g-1)/float64(g), acc)
	return acc, g, true
}

// neweyWest is the Newey–West (1987, Econometrica 55:703) HAC covariance with
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
func (f *olsFit) neweyWest(times []int, lags int) *mat.SymDense {
	// With scores h_t = x_t e_t and g_t = Σ_{0<t−s≤L} w(t−s) h_s, the meat is
	// Σ_t h_t h_t' + Σ_t (h_t g_t' + g_t h_t'): O(n(kL + k²)) instead of
	// forming every lagged outer product.
	k := f.k
	h := make([]float64, f.n*k)
	for i := 0; i < f.n; i++ {
		for a := 0; a < k; a++ {
			h[i*k+a] = f.x.At(i, a) * f.resid[i]
		}
	}
	acc := make([]float64, k*k)
	g := make([]float64, k)
	lo := 0
	for i := 0; i < f.n; i++ {
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
			for b := a; b < k; b++ {
				acc[a*k+b] += hi[a]*hi[b] + hi[a]*g[b] + g[a]*hi[b]
			}
		}
	}
	meat := mat.NewSymDense(k, nil)
	for a := 0; a < k; a++ {
		for b := a; b < k; b++ {
			meat.SetSym(a, b, acc[a*k+b])
		}
	}
	return f.sandwich(meat, float64(f.n)/float64(f.n-f.k))
}

// hc3 is the heteroskedasticity-robust covariance HC3 (MacKinnon & White
// 1985), Stata's `vce(hc3)`:
//
//	V = (X'X)⁻¹ [Σ_i e_i²/(1−h_ii)² x_i x_i'] (X'X)⁻¹,  h_ii = x_i'(X'X)⁻¹x_i
//
// It assumes uncorrelated errors of any variance; dividing by (1−h)² keeps
// high-leverage bins from understating it.
func (f *olsFit) hc3() *mat.SymDense {
	meat := mat.NewSymDense(f.k, nil)
	row := make([]float64, f.k)
	for i := 0; i < f.n; i++ {
		mat.Row(row, i, f.x)
		xv := mat.NewVecDense(f.k, row)
		h := mat.Inner(xv, f.xtxInv, xv)
		w := f.resid[i] / (1 - h)
		meat.SymRankOne(meat, w*w, xv)
	}
	return f.sandwich(meat, 1)
}

// neweyWestLags is the automatic bandwidth floor(4·(T/100)^(2/9)) (Newey &
// West 1994; statsmodels' default), at least 1.
func neweyWestLags(t int) int {
	return max(1, int(math.Floor(4*math.Pow(float64(t)/100, 2.0/9))))
}

// se returns the standard errors, the square roots of v's diagonal.
func se(v *mat.SymDense) []float64 {
	n := v.SymmetricDim()
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Sqrt(math.Max(0, v.At(i, i)))
	}
	return out
}

// wald tests H0: β_j = 0 for every j in idx with covariance v:
// W = β_S'(V_SS)⁻¹β_S. It returns F = W/q, to be read against F(q, df) as
// Stata's `test` does after `regress`/`newey`.
func wald(beta []float64, v *mat.SymDense, idx []int) (float64, error) {
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

// fTestRSS is the classic nested-model F test
// F = ((RSS_r − RSS_u)/q) / (RSS_u/df_u), as statsmodels'
// grangercausalitytests reports it ("ssr_ftest") and R's lmtest::grangertest
// computes it. It returns F and its p-value from F(q, df_u).
func fTestRSS(rssR, rssU float64, q, dfU int) (float64, float64) {
	f := ((rssR - rssU) / float64(q)) / (rssU / float64(dfU))
	return f, fSurvival(f, q, dfU)
}

// fSurvival is P(F(d1, d2) > f).
func fSurvival(f float64, d1, d2 int) float64 {
	if math.IsNaN(f) || d1 <= 0 || d2 <= 0 {
		return math.NaN()
	}
	if f <= 0 {
		return 1
	}
	return distuv.F{D1: float64(d1), D2: float64(d2)}.Survival(f)
}

// tTwoSided is the two-sided p-value of t with df degrees of freedom.
func tTwoSided(t float64, df int) float64 {
	if math.IsNaN(t) || df <= 0 {
		return math.NaN()
	}
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Survival(math.Abs(t))
}

// tCritical is the 1−α/2 quantile of t with df degrees of freedom.
func tCritical(alpha float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(1 - alpha/2)
}
