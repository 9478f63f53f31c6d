package causal

import (
	"fmt"
	"math"
	"slices"
)

// maxLags bounds the automatic number of lags of the source's load.
const maxLags = 10

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
		for j, v := range o.ctrl {
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

// autoLags is the number of bins that covers 90% of the target's exposure
// windows, so the lags hold the whole distributed effect.
func autoLags(rows targetRows, width int64) int {
	if len(rows.obs) == 0 {
		return 1
	}
	d := make([]float64, len(rows.obs))
	for i := range rows.obs {
		d[i] = float64(rows.obs[i].end - rows.obs[i].start)
	}
	slices.Sort(d)
	p90 := d[int(0.9*float64(len(d)-1))]
	return min(maxLags, max(1, int(math.Ceil(p90/float64(width)))))
}

// lagDesign builds the rows of the lag model for an AR order p: bins t with
// target data in t and in the p bins before, and the source's load defined
// from t−L to t+M.
type lagDesign struct {
	cols              [][]float64
	times             []int
	y                 []float64
	lagCols, leadCols []int
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
		add(func(t int) float64 { return s.y[t-j] })
	}
	for c := range s.ctrl {
		add(func(t int) float64 { return s.ctrl[c][t] })
	}
	for k := range load.Values {
		if k == sourceK || k == targetK {
			continue
		}
		v := load.Values[k]
		for l := 0; l <= lags; l++ {
			add(func(t int) float64 { return v[t-l] })
		}
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
//	         + Σ_{j=1}^{p} φ_j Y_B(t−j) + γ'z_B(t) + Σ_{C≠A,B} Σ_l θ_{C,l} u_C(t−l) + ε_t
//
// by OLS with Newey–West errors (bandwidth floor(4(T/100)^(2/9))). It reports
// the cumulative effect Σβ_l, a Granger test of β_1..β_L (strict
// precedence) and the lead placebo λ = 0, both as HAC Wald F tests with
// (q, T−k) degrees of freedom. The AR order p is chosen by BIC on a common
// sample.
func lagRegression(source, target string, rows targetRows, load *Load, o Options, step float64) *LagResult {
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
	lags := o.Lags
	if lags <= 0 {
		lags = autoLags(rows, load.Grid.Width)
	}
	r.Lags = lags
	s := aggregate(rows, load.Grid)
	others := len(load.Values) - 1
	if targetK >= 0 {
		others--
	}
	params := func(p int) int { return 2 + (lags + 1) + o.Leads + p + len(rows.controls) + others*(lags+1) }
	enough := func(t, p int) bool { return t >= o.MinBins && t >= 10*params(p) }

	// Choose p by BIC on the largest common sample that is big enough.
	chosen := -1
	for pmax := o.MaxAR; pmax >= 0 && chosen < 0; pmax-- {
		common := usableBins(s, lags, o.Leads, pmax)
		if !enough(len(common), pmax) {
			continue
		}
		best := math.Inf(1)
		for p := 0; p <= pmax; p++ {
			d := buildLagDesign(s, load, sourceK, targetK, lags, o.Leads, p, common)
			keep := independent(d.cols, 1e-8)
			fit, err := fitOLS(columns(pick(d.cols, keep)), d.y)
			if err != nil {
				continue
			}
			n := float64(fit.n)
			bic := n*math.Log(fit.rss/n) + float64(fit.k)*math.Log(n)
			if bic < best {
				best, chosen = bic, p
			}
		}
	}
	if chosen < 0 {
		t := len(usableBins(s, lags, o.Leads, 0))
		r.Bins = t
		r.Reason = fmt.Sprintf("only %d bins with %s requests for %d parameters (need %d and 10 per parameter)", t, target, params(0), o.MinBins)
		return r
	}
	r.AR = chosen
	bins := usableBins(s, lags, o.Leads, chosen)
	d := buildLagDesign(s, load, sourceK, targetK, lags, o.Leads, chosen, bins)
	r.Bins = len(bins)
	if !d.srcVaries {
		r.Reason = fmt.Sprintf("%s's load did not vary over the bins", source)
		return r
	}
	keep := independent(d.cols, 1e-8)
	for _, c := range append(slices.Clone(d.lagCols), d.leadCols...) {
		if !keep[c] {
			r.Reason = fmt.Sprintf("%s's lagged load is collinear with the other regressors", source)
			return r
		}
	}
	remap := make([]int, len(d.cols))
	next := 0
	for j := range d.cols {
		remap[j] = next
		if keep[j] {
			next++
		}
	}
	fit, err := fitOLS(columns(pick(d.cols, keep)), d.y)
	if err != nil {
		r.Reason = fmt.Sprintf("lag regression failed: %v", err)
		return r
	}
	r.NWLags = neweyWestLags(fit.n)
	v := fit.neweyWest(d.times, r.NWLags)
	df := fit.n - fit.k

	lagIdx := make([]int, len(d.lagCols))
	for i, c := range d.lagCols {
		lagIdx[i] = remap[c]
	}
	leadIdx := make([]int, len(d.leadCols))
	for i, c := range d.leadCols {
		leadIdx[i] = remap[c]
	}
	sum, variance := 0.0, 0.0
	for _, a := range lagIdx {
		sum += fit.beta[a]
		for _, b := range lagIdx {
			variance += v.At(a, b)
		}
	}
	seSum := math.Sqrt(math.Max(0, variance))
	crit := tCritical(o.Alpha, df)
	r.Estimable = true
	r.Coef, r.SE = Float(sum), Float(seSum)
	r.EffectPct = Float(pct(sum, step))
	r.CILowPct, r.CIHighPct = Float(pct(sum-crit*seSum, step)), Float(pct(sum+crit*seSum, step))
	if f, err := wald(fit.beta, v, lagIdx[1:]); err == nil {
		r.GrangerF, r.GrangerP = Float(f), Float(fSurvival(f, len(lagIdx)-1, df))
	}
	if f, err := wald(fit.beta, v, leadIdx); err == nil {
		r.PlaceboF, r.PlaceboP = Float(f), Float(fSurvival(f, len(leadIdx), df))
	}
	return r
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
