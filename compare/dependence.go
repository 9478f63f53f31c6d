package compare

import (
	"fmt"
	"math"

	"github.com/llmprof/llmprof/internal/stat"
)

// Requests of one run are not independent: batching, KV-cache pressure,
// preemption storms and bursts of arrivals come and go over seconds, so
// neighbours in time share their fate. What matters for a statistic is the
// dependence of the quantity it is made of, so each metric gets its own
// effective sample size, n_eff = n / (1 + 2 Σ ρ_k) (EffectiveN), of:
//
//   - a quantile q: the indicator x_i > Q_q, whose autocorrelation sets
//     the variance of a sample quantile (a storm that lifts the tail need
//     not move the median);
//   - a mean: the values (log scale where positive);
//   - the shift: the indicator of the median;
//   - ITL: the same per request (the share of its gaps above the quantile,
//     its mean gap), so n_eff counts requests, not tokens;
//   - a per-token bucket: the request's bucket time per output token.
//
// With the default BlockDetect a side whose metrics have n_eff < n/2 is
// resampled in blocks of max(⌈n^⅓⌉, ⌈2n/n_eff⌉) consecutive requests (the
// longest any decidable metric needs; Künsch 1989), the shift's interval is
// widened by √(n/n_eff), and a metric whose n_eff is below its sample-size
// floor (the binomial rule for a quantile, 50 for a mean) is inconclusive:
// one run per side cannot separate its change from run-to-run variance.

// metricNeff is one metric's effective sample size on one side.
type metricNeff struct {
	neff float64
	n    int
}

// neffOf is the effective sample size of a unit series (unitSeries).
func neffOf(units []float64) metricNeff {
	x := known(units)
	return metricNeff{neff: stat.EffectiveN(x), n: len(x)}
}

// unitSeries is what metric s is made of on side p, one value per unit in
// arrival order, NaN where a unit has none: per request, except ITL
// without request bounds (per token). A quantile's is the indicator of
// exceeding the side's own quantile (the share of a request's gaps above
// it, for ITL), a mean's the values (log scale where positive), a bucket's
// the request's bucket time per output token.
func unitSeries(p *pooled, s spec) []float64 {
	q := s.q
	if s.stat == StatShift {
		q = 0.5
	}
	quantile := s.stat != StatMean
	var x []float64
	switch {
	case s.kind() == KindBucket:
		num := p.fam[s.fam.fam][s.bucket]
		x = make([]float64, len(num))
		for i := range num {
			x[i] = math.NaN()
			if d := p.out[i]; d > 0 && !math.IsNaN(num[i]) {
				x[i] = num[i] / d
			}
		}
		return x
	case s.isITL() && p.itlReq != nil:
		thr := quantileOf(p.itl, q)
		sum := make([]float64, p.n)
		cnt := make([]float64, p.n)
		for j, r := range p.itlReq {
			v := p.itl[j]
			if quantile {
				v = 0
				if p.itl[j] > thr {
					v = 1
				}
			}
			sum[r] += v
			cnt[r]++
		}
		for i := range sum {
			sum[i] /= cnt[i] // NaN for a request without gaps
		}
		return sum
	case s.isITL():
		x = p.itl
	default:
		x = p.series[s.series()]
	}
	k := known(x)
	if len(k) < 3 {
		return x
	}
	out := make([]float64, len(x))
	switch {
	case quantile:
		thr := quantileOf(k, q)
		for i, v := range x {
			switch {
			case math.IsNaN(v):
				out[i] = v
			case v > thr:
				out[i] = 1
			}
		}
	case allPositive(k):
		for i, v := range x {
			out[i] = math.Log(v) // NaN stays NaN
		}
	default:
		copy(out, x)
	}
	return out
}

// pairedN is the effective sample size of metric s's paired differences
// (the candidate's unit series minus the baseline's, request by request):
// with one workload replayed, what the runs share cancels and what is left
// — a stall in one run, a storm the other escaped — decides how far apart
// the resampled blocks must be. ok is false when the units are not
// requests on both sides (ITL without request bounds) or too few.
func pairedN(s spec, xb, xc []float64, b, k *pooled) (metricNeff, bool) {
	if (s.isITL() && (b.itlReq == nil || k.itlReq == nil)) || len(xb) != len(xc) {
		return metricNeff{}, false
	}
	var d []float64
	for i := range xb {
		if v := xc[i] - xb[i]; !math.IsNaN(v) {
			d = append(d, v)
		}
	}
	e := metricNeff{neff: stat.EffectiveN(d), n: len(d)}
	return e, e.n >= 3
}

// effectiveFloor is the fewest effective units a metric needs per side.
func (c *comparison) effectiveFloor(s spec) int {
	switch {
	case s.stat == StatShift:
		return minQuantileBootstrapN
	case s.kind() == KindLatency && s.stat != StatMean:
		return max(stat.MinSamplesForQuantile(s.q, c.opts.Alpha), minQuantileBootstrapN)
	}
	return minBootstrapN
}

// dependence is what decideDependence found for one side.
type dependence struct {
	neff map[string]metricNeff // by metric name
}

// decideDependence measures every metric's effective sample size on both
// sides and sets each side's block length (BlockDetect), or applies the
// block setting given.
func (c *comparison) decideDependence(specs []spec) (base, cand dependence) {
	// Each side's unit series, once per metric: the side's effective n and
	// the paired differences' come from the same values.
	units := [2]map[string][]float64{{}, {}}
	for _, s := range specs {
		if s.kind() != KindRate {
			units[0][s.name], units[1][s.name] = unitSeries(c.base, s), unitSeries(c.cand, s)
		}
	}
	paired := map[string]metricNeff{}
	if c.paired && c.opts.Block != 0 {
		for _, s := range specs {
			if s.kind() == KindRate {
				continue
			}
			if e, ok := pairedN(s, units[0][s.name], units[1][s.name], c.base, c.cand); ok {
				paired[s.name] = e
			}
		}
	}
	c.pairedNeff = paired
	for side, sd := range []struct {
		p *pooled
		d *dependence
	}{{c.base, &base}, {c.cand, &cand}} {
		p, d := sd.p, sd.d
		d.neff = map[string]metricNeff{}
		need := 1
		worst, wname := 1.0, ""
		for _, s := range specs {
			if s.kind() == KindRate {
				continue
			}
			e := neffOf(units[side][s.name])
			if pe, ok := paired[s.name]; ok && e.n > 0 && pe.neff/float64(pe.n) < e.neff/float64(e.n) {
				// The paired differences are what the change is made of.
				e.neff = float64(e.n) * pe.neff / float64(pe.n)
			}
			d.neff[s.name] = e
			if e.n < 3 {
				continue
			}
			r := e.neff / float64(e.n)
			if r < worst {
				worst, wname = r, s.name
			}
			if r < autocorrelated && e.neff >= float64(c.effectiveFloor(s)) {
				blk := int(math.Ceil(2 / r))
				if s.isITL() && p.itlReq == nil {
					blk = int(math.Ceil(float64(blk) / max(1, p.itlPerRequest)))
				}
				need = max(need, blk)
			}
		}
		detected := worst < autocorrelated
		switch b := c.opts.Block; {
		case b == BlockDetect:
			if !detected {
				continue
			}
			p.block = max(blockLen(BlockAuto, p.n), need)
			e := d.neff[wname]
			c.warnf("%s: %s are autocorrelated (least effective n: %s ≈ %.0f of %d): requests are resampled in blocks of %d; a metric with too few effective samples is inconclusive",
				p.label, sideWord(p == c.base), wname, e.neff, e.n, p.block)
		case b == 0:
			if detected {
				e := d.neff[wname]
				c.warnf("%s: %s look autocorrelated (%s: effective n ≈ %.0f of %d): intervals assume independent requests (--block off); the default, --block detect, would widen them",
					p.label, sideWord(p == c.base), wname, e.neff, e.n)
			}
			// Off means off: no floors, no widening.
			d.neff = nil
		default:
			p.block = blockLen(b, p.n)
		}
	}
	return base, cand
}

// inflation is √ of the design effect of the shift of metric name, pooled
// over both sides as the variance of a difference is: √((n_b/n_eff,b)/n_b +
// (n_c/n_eff,c)/n_c) / √(1/n_b + 1/n_c); 1 without dependence.
func inflation(b, k dependence, name string) float64 {
	eb, ek := b.neff[name], k.neff[name]
	if eb.n == 0 || ek.n == 0 || eb.neff <= 0 || ek.neff <= 0 {
		return 1
	}
	num := 1/eb.neff + 1/ek.neff
	den := 1/float64(eb.n) + 1/float64(ek.n)
	return math.Max(1, math.Sqrt(num/den))
}

// tailQuantile is the quantile from which a statistic counts as a tail: a
// run's tail is made of a few episodes (a preemption storm, a burst of long
// prompts), so with autocorrelated requests and one run per side its change
// cannot be told from run-to-run variance.
const tailQuantile = 0.9

// requireEffective marks a metric inconclusive when a side has fewer
// effective units than the metric needs because its requests are
// autocorrelated: with one run per side, the change cannot be told from
// run-to-run variance.
func (c *comparison) requireEffective(w *work, b, k dependence) {
	if w.short != "" {
		return
	}
	floor := c.effectiveFloor(w.spec)
	need := stat.MinSamplesForU(c.opts.Alpha)
	if w.spec.kind() == KindLatency && w.spec.stat != StatMean && w.spec.stat != StatShift && w.spec.q >= tailQuantile &&
		(c.base.block > 1 || c.cand.block > 1) && len(c.base.runs) == 1 && len(c.cand.runs) == 1 {
		if c.bounded(w) {
			w.boundWhy = "autocorrelated requests: a run's tail is made of a few episodes"
			return
		}
		w.short = fmt.Sprintf("%s: the requests are autocorrelated and a run's tail is made of a few episodes (preemption storms, bursts): one run per side cannot separate its change from run-to-run variance; ≥ %d runs per side, or ≥ 2 earlier baselines (--baseline-history), would",
			w.m.Name, need)
		w.shortN = need
		w.unitsOf = "runs"
		return
	}
	for _, side := range []struct {
		d     dependence
		label string
	}{{b, "baseline"}, {k, "candidate"}} {
		e, ok := side.d.neff[w.spec.name]
		if !ok || e.n == 0 || e.neff >= float64(floor) || e.n < floor {
			continue
		}
		// Floor, not round: "≈ 20 … under the 20" would contradict itself.
		shown := math.Floor(e.neff)
		if c.bounded(w) {
			w.boundWhy = fmt.Sprintf("the %s's requests are autocorrelated, effective n ≈ %.0f of %d, under the %d its own interval needs", side.label, shown, e.n, floor)
			return
		}
		w.short = fmt.Sprintf("%s: the %s's requests are autocorrelated (effective n ≈ %.0f of %d, under the %d this statistic needs): one run per side cannot separate a change from run-to-run variance; ≥ %d runs per side, or ≥ 2 earlier baselines (--baseline-history), would",
			w.m.Name, side.label, shown, e.n, floor, need)
		w.shortN = need
		w.unitsOf = "runs"
		w.m.Note = fmt.Sprintf("effective n ≈ %.0f of %d on the %s", shown, e.n, side.label)
		return
	}
}
