package causal

import (
	"fmt"
	"math"

	"github.com/llmprof/llmprof/internal/stat"
	"gonum.org/v1/gonum/mat"
)

// maxLags bounds the automatic number of lags of the source's load.
const maxLags = 20

// binSeries is the target's per-bin aggregate for the lag model: the mean log
// latency and mean controls of the requests whose window ends in the bin.
type binSeries struct {
	n    []int
	y    []float64
	ctrl [][]float64 // ctrl[j][bin]
}

// aggregate bins the target's requests by the end of their exposure window,
// so that a bin's latency depends on the source's load in that bin and the
// ones before it, never after: the source's future load is then a true
// placebo.
func aggregate(rows targetRows, g Grid) binSeries {
	s := binSeries{n: make([]int, g.N), y: make([]float64, g.N), ctrl: make([][]float64, len(rows.controls))}
	for j := range s.ctrl {
		s.ctrl[j] = make([]float64, g.N)
	}
	for i := range rows.obs {
		o := &rows.obs[i]
		b := g.Bin(o.end - 1)
		if b < 0 || b >= g.N {
			continue
		}
		s.n[b]++
		s.y[b] += o.y
		for j, v := range rows.controlsOf(o) {
			s.ctrl[j][b] += v
		}
	}
	for b, c := range s.n {
		if c == 0 {
			continue
		}
		s.y[b] /= float64(c)
		for j := range s.ctrl {
			s.ctrl[j][b] /= float64(c)
		}
	}
	return s
}

// lagInput is what the lag model takes from the target's rows alone, the
// same for every source: the number of lags and the binned series.
type lagInput struct {
	lags int
	s    binSeries
	// fits is the scratch the fits of the lag models are made in, the
	// regressScratch's (nil: each fit makes its own).
	fits *lagScratch
}

// lagScratch is the memory of two lag fits, which one source's fit after
// another, and one target's after another, reuse: each fit made its
// design, its scaled copy and its residuals anew, 7.7 MB of the 130 MB
// allocated by an analyze of the 100 MiB OTLP dump of docs/otlp.md. Two,
// since testModel keeps the best fit so far, whose design and residuals
// its HC3 reads after the others are made. A fit in one is valid until
// the next fit in the same one.
type lagScratch [2]olsScratch

// at is scratch i, nil (a fit's own memory) for no lagScratch.
func (l *lagScratch) at(i int) *olsScratch {
	if l == nil {
		return nil
	}
	return &l[i]
}

// newLagInput is the target's lagInput; sc, when not nil, lends autoLags
// its working memory.
func newLagInput(rows targetRows, load *Load, o Options, sc *regressScratch) *lagInput {
	lags := o.Lags
	if lags <= 0 {
		var buf []float64
		if sc != nil {
			sc.durations = stat.Grow(sc.durations, len(rows.obs))
			buf = sc.durations
		}
		lags = autoLags(rows, load.Grid.Width, buf)
	}
	in := &lagInput{lags: lags, s: aggregate(rows, load.Grid)}
	if sc != nil {
		in.fits = &sc.lag
	}
	return in
}

// autoLags is the number of bins that covers 90% of the target's exposure
// windows, so the lags hold the whole distributed effect. It selects in
// buf when it holds the rows (which it overwrites), else in new memory.
func autoLags(rows targetRows, width int64, buf []float64) int {
	if len(rows.obs) == 0 {
		return 1
	}
	d := stat.Grow(buf, len(rows.obs))
	for i := range rows.obs {
		d[i] = float64(rows.obs[i].end - rows.obs[i].start)
	}
	p99 := stat.Select(d, int(0.99*float64(len(d)-1)))
	return min(maxLags, max(1, int(math.Ceil(p99/float64(width)))))
}

// lagDesign builds the rows of the lag model for an AR order p: bins t with
// target data in t and in the p bins before, and the source's load defined
// from t−L to t+M.
type lagDesign struct {
	cols              [][]float64
	times             []int
	y                 []float64
	lagCols, leadCols []int
	arCols            []int
	srcVaries         bool
}

func buildLagDesign(s binSeries, load *Load, sourceK, targetK, lags, leads, p int, rows []int) *lagDesign {
	d := &lagDesign{}
	n := len(rows)
	add := func(f func(t int) float64) int {
		c := make([]float64, n)
		for i, t := range rows {
			c[i] = f(t)
		}
		d.cols = append(d.cols, c)
		return len(d.cols) - 1
	}
	N := float64(load.Grid.N)
	add(func(int) float64 { return 1 })
	add(func(t int) float64 { return float64(t) / N }) // linear trend (B.3: nonstationarity)
	u := load.Values[sourceK]
	for l := 0; l <= lags; l++ {
		d.lagCols = append(d.lagCols, add(func(t int) float64 { return u[t-l] }))
	}
	for m := 1; m <= leads; m++ {
		d.leadCols = append(d.leadCols, add(func(t int) float64 { return u[t+m] }))
	}
	for j := 1; j <= p; j++ {
		d.arCols = append(d.arCols, add(func(t int) float64 { return s.y[t-j] }))
	}
	for c := range s.ctrl {
		add(func(t int) float64 { return s.ctrl[c][t] })
	}
	// Other tenants enter as controls through their load averaged over the
	// same L+1 bins: one column each keeps the model small while holding
	// fixed what moves with A's load.
	for k := range load.Values {
		if k == sourceK || k == targetK {
			continue
		}
		v := load.Values[k]
		add(func(t int) float64 {
			sum := 0.0
			for l := 0; l <= lags; l++ {
				sum += v[t-l]
			}
			return sum / float64(lags+1)
		})
	}
	d.times = rows
	d.y = make([]float64, n)
	for i, t := range rows {
		d.y[i] = s.y[t]
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range d.lagCols {
		for _, v := range d.cols[c] {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	d.srcVaries = hi-lo > 1e-9*math.Max(1, math.Abs(hi))
	return d
}

// usableBins lists the bins t that have target data in t and the p bins
// before, and source load from t−lags to t+leads.
func usableBins(s binSeries, lags, leads, p int) []int {
	var out []int
	for t := max(lags, p); t+leads < len(s.n); t++ {
		ok := s.n[t] > 0
		for j := 1; ok && j <= p; j++ {
			ok = s.n[t-j] > 0
		}
		if ok {
			out = append(out, t)
		}
	}
	return out
}

// lagRegression is layer 2 for one pair (statistics reference B.2):
//
//	Y_B(t) = α + δ·t + Σ_{l=0}^{L} β_l u_A(t−l) + Σ_{m=1}^{M} λ_m u_A(t+m)
//	         + Σ_{j=1}^{p} φ_j Y_B(t−j) + γ'z_B(t) + Σ_{C≠A,B} θ_C ū_C(t) + ε_t
//
// (ū_C the other tenants' load averaged over bins t−L..t, z_B the target's
// mean controls, δ·t a trend against nonstationarity), fitted twice by OLS:
//
//   - the effect model, p = 0, with Newey–West errors (bandwidth
//     floor(4(T/100)^(2/9))), gives the cumulative effect Σβ_l. Conditioning
//     on Y_B(t−1), itself moved by A's earlier load, would absorb part of it;
//   - the test model, p ∈ 1..MaxAR by BIC, gives the Granger test of
//     β_1..β_L (strict precedence) and the lead placebo λ = 0 as Wald F tests
//     with (q, T−k) degrees of freedom and HC3 errors: once the own past is
//     in, the residuals are close to white, and HAC Wald tests of ten or
//     twenty restrictions over-reject at this T (in the simulator, 8.7% at a
//     nominal 5% with Newey–West, 5.6% with HC3).
//
// When the bins are too sparse for any p ≥ 1 the tests use the effect model.
// in is newLagInput of the target's rows, shared by every source.
func lagRegression(source, target string, rows targetRows, load *Load, o Options, step float64, in *lagInput) *LagResult {
	r := &LagResult{
		Coef: nan, SE: nan, EffectPct: nan, CILowPct: nan, CIHighPct: nan,
		GrangerF: nan, GrangerP: nan, PlaceboF: nan, PlaceboP: nan,
		Leads: o.Leads,
	}
	sourceK, targetK := load.Index(source), load.Index(target)
	if sourceK < 0 {
		r.Reason = fmt.Sprintf("%s has no load series", source)
		return r
	}
	lags, s := in.lags, in.s
	r.Lags = lags
	others := len(load.Values) - 1
	if targetK >= 0 {
		others--
	}
	params := func(p int) int { return 2 + (lags + 1) + o.Leads + p + len(rows.controls) + others }
	enough := func(t, p int) bool { return t >= o.MinBins && t >= 10*params(p) }

	// The cumulative effect comes from the model without the target's own
	// past: Y_B(t−1) is itself moved by A's earlier load, so conditioning on
	// it would absorb part of the effect.
	if t := len(usableBins(s, lags, o.Leads, 0)); !enough(t, 0) {
		r.Bins = t
		r.Reason = fmt.Sprintf("only %d bins with %s requests for %d parameters (need %d and 10 per parameter)", t, target, params(0), o.MinBins)
		return r
	}
	// The effect model's fit is in in.fits' first scratch, which
	// testModel then reuses: what is read of it after (beta, v, N) is
	// not that memory.
	eff, reason := effectModel(s, load, sourceK, targetK, lags, o.Leads, in.fits.at(0))
	if reason != "" {
		r.Reason = fmt.Sprintf("%s's %s", source, reason)
		return r
	}
	// The Granger test and the placebo condition on the target's own past,
	// as Granger's definition does, with p chosen by BIC; when the target's
	// bins are too sparse for any p ≥ 1 they use the effect model.
	gr := eff
	if g, p := testModel(s, load, sourceK, targetK, lags, o, enough, in.fits); g != nil {
		gr, r.AR = g, p
	}
	r.Bins = eff.fit.N
	r.NWLags = eff.nwLags
	sum, variance := 0.0, 0.0
	for _, a := range eff.lagIdx {
		sum += eff.fit.beta[a]
		for _, b := range eff.lagIdx {
			variance += eff.v.At(a, b)
		}
	}
	seSum := math.Sqrt(math.Max(0, variance))
	crit := tCritical(o.Alpha, eff.df)
	r.Estimable = true
	r.Coef, r.SE = Float(sum), Float(seSum)
	r.EffectPct = Float(pct(sum, step))
	r.CILowPct, r.CIHighPct = Float(pct(sum-crit*seSum, step)), Float(pct(sum+crit*seSum, step))
	if f, err := stat.Wald(gr.fit.beta, gr.v, gr.lagIdx[1:]); err == nil {
		r.GrangerF, r.GrangerP = Float(f), Float(stat.FSurvival(f, len(gr.lagIdx)-1, gr.df))
	}
	if f, err := stat.Wald(gr.fit.beta, gr.v, gr.leadIdx); err == nil {
		r.PlaceboF, r.PlaceboP = Float(f), Float(stat.FSurvival(f, len(gr.leadIdx), gr.df))
	}
	return r
}

// testModel fits the Granger/placebo model: the AR order p in 1..MaxAR is
// chosen by BIC on the largest common sample that is big enough, and the
// chosen fit is returned (nil when no sample is big enough or no fit works).
// The fits are made in fits, the best so far kept in one scratch while the
// next is made in the other.
func testModel(s binSeries, load *Load, sourceK, targetK, lags int, o Options, enough func(t, p int) bool, fits *lagScratch) (*lagFit, int) {
	for pmax := o.MaxAR; pmax >= 1; pmax-- {
		common := usableBins(s, lags, o.Leads, pmax)
		if !enough(len(common), pmax) {
			continue
		}
		d := buildLagDesign(s, load, sourceK, targetK, lags, o.Leads, pmax, common)
		if !d.srcVaries {
			return nil, 0
		}
		var best *lagFit
		bestBIC, chosen, free := math.Inf(1), 0, 0
		for p := 1; p <= pmax; p++ {
			use := make([]bool, len(d.cols))
			for j := range use {
				use[j] = true
			}
			for _, c := range d.arCols[p:] {
				use[c] = false
			}
			lf, reason := fitDesign(d, use, fits.at(free))
			if reason != "" {
				continue
			}
			n := float64(lf.fit.N)
			if bic := n*math.Log(lf.fit.RSS/n) + float64(lf.fit.K)*math.Log(n); bic < bestBIC {
				best, bestBIC, chosen = lf, bic, p
				free = 1 - free
			}
		}
		if best != nil {
			best.v = best.fit.HC3()
		}
		return best, chosen
	}
	return nil, 0
}

// lagFit is one fitted lag model with its covariance.
type lagFit struct {
	fit             *olsFit
	v               *mat.SymDense
	lagIdx, leadIdx []int
	df, nwLags      int
}

// effectModel fits the lag model without AR terms on every usable bin,
// with Newey–West errors, or says why it cannot.
// Its fit is made in sc (nil: memory of its own).
func effectModel(s binSeries, load *Load, sourceK, targetK, lags, leads int, sc *olsScratch) (*lagFit, string) {
	bins := usableBins(s, lags, leads, 0)
	d := buildLagDesign(s, load, sourceK, targetK, lags, leads, 0, bins)
	if !d.srcVaries {
		return nil, "load did not vary over the bins"
	}
	use := make([]bool, len(d.cols))
	for j := range use {
		use[j] = true
	}
	lf, reason := fitDesign(d, use, sc)
	if reason != "" {
		return nil, reason
	}
	lf.nwLags = stat.NeweyWestLags(lf.fit.N)
	lf.v = lf.fit.NeweyWest(d.times, lf.nwLags)
	return lf, ""
}

// fitDesign fits the columns of d marked use; the source's lag and lead
// columns must survive the collinearity screen. The fit is made in sc
// (nil: memory of its own), valid until the next fit there.
func fitDesign(d *lagDesign, use []bool, sc *olsScratch) (*lagFit, string) {
	cols := pick(d.cols, use)
	fit, keep, err := fitColumnsReusing(cols, d.y, sc)
	if err != nil {
		return nil, fmt.Sprintf("lag regression failed: %v", err)
	}
	// index maps a column of d to its position in the fit, or -1.
	index := make([]int, len(d.cols))
	pos, next := 0, 0
	for j := range d.cols {
		index[j] = -1
		if !use[j] {
			continue
		}
		if keep[pos] {
			index[j] = next
			next++
		}
		pos++
	}
	lf := &lagFit{fit: fit, df: fit.N - fit.K}
	for _, c := range d.lagCols {
		if index[c] < 0 {
			return nil, "lagged load is collinear with the other regressors"
		}
		lf.lagIdx = append(lf.lagIdx, index[c])
	}
	for _, c := range d.leadCols {
		if index[c] < 0 {
			return nil, "lagged load is collinear with the other regressors"
		}
		lf.leadIdx = append(lf.leadIdx, index[c])
	}
	return lf, ""
}

// pick returns the columns marked keep.
func pick(cols [][]float64, keep []bool) [][]float64 {
	out := make([][]float64, 0, len(cols))
	for j, c := range cols {
		if keep[j] {
			out = append(out, c)
		}
	}
	return out
}
