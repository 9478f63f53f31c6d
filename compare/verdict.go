package compare

import (
	"cmp"
	"fmt"
	"github.com/llmprof/llmprof/internal/stat"
	"math"
	"slices"
	"strconv"
	"strings"
)

// applyGates decides every rule of the policy and the gate as a whole.
//
// Each rule is a one-sided test at level α/2 in the failing direction
// (H0: the change does not breach the threshold), the dual of the 1−α
// interval: "fail" needs the interval entirely beyond the threshold, "pass"
// needs it entirely on the good side (a TOST-style equivalence decision,
// Schuirmann 1987, J. Pharmacokin. Biopharm. 15:657). Across the m rules the
// fail tests are corrected with Holm's step-down procedure (Holm 1979,
// Scand. J. Statist. 6:65): sorted by p-value, the i-th (0-based) is
// rejected only if it and all before it satisfy p ≤ (α/2)/(m−i). That keeps
// the chance of any false "fail" across the gate at most α/2 whatever the
// dependence between metrics. "pass" needs no correction: the gate passes
// only when every rule passes, an intersection-union test (Berger 1982,
// Technometrics 24:295) that is valid at each rule's own level.
func (c *comparison) applyGates() {
	res := c.res
	pol := c.opts.Policy
	sum := GateSummary{Verdict: NoGate, FailOnInconclusive: pol.FailOnInconclusive}
	if len(pol.Gates) == 0 {
		res.Gate = sum
		return
	}
	type gated struct {
		idx int // into res.Metrics
		w   *work
		g   Gate
	}
	var rules []gated
	for _, g := range pol.Gates {
		i := slices.IndexFunc(res.Metrics, func(m Metric) bool { return m.Name == g.Metric })
		if i < 0 {
			// Not comparable: keep a row for it so the report shows why.
			m := Metric{Name: g.Metric, Unit: metricUnit(g.Metric), Better: MetricBetter(g.Metric), Method: MethodNone,
				Baseline: math.NaN(), Candidate: math.NaN(), Delta: math.NaN(), DeltaPct: math.NaN(),
				CILow: math.Inf(-1), CIHigh: math.Inf(1), CILowPct: math.Inf(-1), CIHighPct: math.Inf(1),
				P: math.NaN(), MDE: math.NaN(), MDEPct: math.NaN()}
			res.Metrics = append(res.Metrics, m)
			i = len(res.Metrics) - 1
			w := &work{short: "no data: " + c.whyAbsent(g.Metric), missing: true}
			rules = append(rules, gated{i, w, g})
			continue
		}
		w := c.workFor(g.Metric)
		rules = append(rules, gated{i, w, g})
	}
	alpha := c.opts.Alpha / 2
	m := len(rules)
	pf := make([]float64, m)
	for i, r := range rules {
		pf[i] = 1
		if r.w.short == "" && r.w.pFail != nil {
			pf[i] = r.w.pFail(r.g)
		}
	}
	order := make([]int, m)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(pf[a], pf[b]) })
	rejected := make([]bool, m)
	level := make([]float64, m)
	// blocker[i] is the rule whose p missed its level and so stopped Holm's
	// step-down before rule i (−1 where i itself decided).
	blocker := make([]int, m)
	stopped := false
	stop := -1
	for rank, i := range order {
		level[i] = alpha / float64(m-rank)
		blocker[i] = -1
		if !stopped && pf[i] <= level[i] {
			rejected[i] = true
		} else {
			if !stopped {
				stop = i
			}
			stopped = true
			if i != stop {
				blocker[i] = stop
			}
		}
	}
	var likely []string
	for i, r := range rules {
		met := &res.Metrics[r.idx]
		out := &GateOutcome{Rule: r.g, PFail: pf[i], HolmLevel: level[i]}
		c.decide(out, met, r.w, rejected[i], m)
		if out.Verdict == Inconclusive && blocker[i] >= 0 && pf[i] <= level[i] && strings.Contains(out.Reason, "Holm") {
			// Its own p meets its level, but the step-down stopped at a
			// rule with a smaller p that missed its stricter level.
			b := blocker[i]
			out.Reason = strings.Replace(out.Reason, fmt.Sprintf("(p = %.3g > %.3g)", out.PFail, out.HolmLevel),
				fmt.Sprintf("(p = %.3g ≤ %.3g, but Holm's step-down stopped at %s, p = %.3g > %.3g)", out.PFail, out.HolmLevel, rules[b].g.Metric, pf[b], level[b]), 1)
		}
		met.Gate = out
		if out.Likely {
			likely = append(likely, out.Rule.String()+": "+strings.TrimPrefix(out.Reason, "likely regression, not gated: "))
		}
		switch out.Verdict {
		case Pass:
			sum.Pass++
		case Fail:
			sum.Fail++
		default:
			sum.Inconclusive++
		}
	}
	switch {
	case sum.Fail > 0:
		sum.Verdict = Fail
	case sum.Inconclusive > 0:
		sum.Verdict = Inconclusive
	default:
		sum.Verdict = Pass
	}
	sum.Failed = sum.Fail > 0 || (pol.FailOnInconclusive && sum.Inconclusive > 0)
	if sum.Fail == 0 && len(likely) > 0 {
		// First and loud: the warnings lead every report.
		var lead []string
		for _, l := range likely {
			lead = append(lead, "LIKELY REGRESSION, NOT GATED: "+l)
		}
		res.Warnings = append(lead, res.Warnings...)
	}
	res.Gate = sum
}

func (c *comparison) workFor(name string) *work {
	for _, w := range c.works {
		if w.spec.name == name {
			return w
		}
	}
	return nil
}

// whyAbsent explains a metric that could not be compared.
func (c *comparison) whyAbsent(name string) string {
	keys := []string{name}
	if l, _, ok := strings.Cut(name, "."); ok {
		keys = append(keys, l)
	}
	for _, p := range []string{prefixStage, prefixToken, prefixTenant} {
		if strings.HasPrefix(name, p) {
			keys = append(keys, p)
		}
	}
	for _, k := range keys {
		if why, ok := c.absent[k]; ok {
			return why
		}
	}
	return "neither input has this bucket or tenant"
}

// decide sets one rule's verdict and reason.
func (c *comparison) decide(out *GateOutcome, m *Metric, w *work, holmRejected bool, rules int) {
	g := out.Rule
	if w.missing {
		out.Reason = w.short
		if c.opts.Policy.AllowMissing {
			out.Verdict = Inconclusive
			out.Reason += " (--allow-missing)"
			return
		}
		out.Verdict = Fail
		out.Reason += "; a gated metric without data fails the gate (--allow-missing makes it inconclusive)"
		return
	}
	if w.short != "" {
		out.Verdict = Inconclusive
		out.Reason = w.short
		out.NeededN = w.shortN
		return
	}
	if c.identical {
		out.Verdict = Inconclusive
		out.Reason = "baseline and candidate hold identical samples: a run compared with itself cannot pass"
		if bad := c.breaches(m, g); bad {
			out.Verdict = Fail
		}
		return
	}
	lo, hi, est := m.CILow, m.CIHigh, m.Delta
	if g.Relative {
		lo, hi, est = m.CILowPct, m.CIHighPct, m.DeltaPct
	}
	var bad, good bool
	if g.Op == Below {
		bad, good = lo > g.Threshold, hi < g.Threshold
	} else {
		bad, good = hi < g.Threshold, lo > g.Threshold
	}
	ci := fmt.Sprintf("%s CI [%s, %s]", c.level(), fmtChange(lo, g), fmtChange(hi, g))
	thr := fmtChange(g.Threshold, g)
	if w.boundWhy != "" {
		ci += " with the between-run bound"
	}
	switch {
	case bad && holmRejected:
		out.Verdict = Fail
		out.Reason = fmt.Sprintf("%s is entirely %s %s", ci, side(g.Op, false), thr)
	case good:
		out.Verdict = Pass
		out.Reason = fmt.Sprintf("%s is entirely %s %s", ci, side(g.Op, true), thr)
	case w.withinKnown && !bad:
		out.Verdict = Inconclusive
		wlo, whi := w.withinLo, w.withinHi
		if !g.Relative {
			wlo, whi = m.Baseline*wlo/100, m.Baseline*whi/100
		}
		within := (g.Op == Below && wlo > g.Threshold) || (g.Op == Above && whi < g.Threshold)
		out.Reason = fmt.Sprintf("%s contains %s (%s)", ci, thr, w.boundWhy)
		if within {
			out.Likely = true
			out.Reason = fmt.Sprintf("likely regression, not gated: within the runs the %s CI [%s, %s] is entirely %s %s, but one run per side cannot exclude run-to-run variance: with the between-run bound it is [%s, %s] (%s)",
				c.level(), fmtChange(wlo, g), fmtChange(whi, g), side(g.Op, false), thr, fmtChange(lo, g), fmtChange(hi, g), w.boundWhy)
		}
		out.Reason += fmt.Sprintf("; ≥ %d runs per side or ≥ 2 earlier baselines (--baseline-history) would measure the between-run variance instead of bounding it", stat.MinSamplesForU(c.opts.Alpha))
		out.NeededN = stat.MinSamplesForU(c.opts.Alpha)
	case bad:
		out.Verdict = Inconclusive
		out.Reason = fmt.Sprintf("%s is %s %s, but not after Holm's correction across %d gated metrics (p = %.3g > %.3g)",
			ci, side(g.Op, false), thr, rules, out.PFail, out.HolmLevel)
	default:
		out.Verdict = Inconclusive
		out.Reason = fmt.Sprintf("%s contains %s", ci, thr)
		if w.runSD > 0 {
			if n := c.neededRuns(g, m, w.runSD); n > 0 {
				out.NeededN = n
				out.Reason += fmt.Sprintf("; one candidate run cannot separate this from the run-to-run spread: about %d runs per side would settle it", n)
			} else {
				out.Reason += "; the estimate is too close to the threshold for more runs to settle it soon"
			}
			return
		}
		n := c.neededN(m, g, lo, hi, est)
		switch {
		case n > 100*max(m.NBaseline, m.NCandidate):
			out.Reason += fmt.Sprintf("; the estimate (%s) is too close to the threshold for more %s to settle it soon", fmtChange(est, g), w.unitsOf)
		case n > 0:
			out.NeededN = n
			out.Reason += fmt.Sprintf("; about %d %s per side would settle it", n, w.unitsOf)
		}
	}
}

func (c *comparison) level() string {
	return strconv.FormatFloat(100*(1-c.opts.Alpha), 'f', -1, 64) + "%"
}

func side(op Op, good bool) string {
	if (op == Below) == good {
		return "below"
	}
	return "above"
}

func fmtChange(v float64, g Gate) string {
	if math.IsInf(v, 0) {
		if v > 0 {
			return "+inf"
		}
		return "-inf"
	}
	sign := ""
	if v >= 0 {
		sign = "+"
	}
	if g.Relative {
		return sign + strconv.FormatFloat(v, 'f', 1, 64) + "%"
	}
	return sign + strconv.FormatFloat(v, 'g', 3, 64) + metricUnit(g.Metric)
}

// neededN estimates the units per side at which an interval around the
// current estimate would clear the threshold with the configured power: the
// interval's half-width shrinks as 1/√n, so n·((z_{1−α/2}+z_{power})·SE/|est−δ|)²,
// with SE read off the current interval. 0 when it cannot be estimated or the
// current n should already suffice (an unlucky draw, not a lack of data).
func (c *comparison) neededN(m *Metric, g Gate, lo, hi, est float64) int {
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsNaN(est) {
		return 0
	}
	thr := g.Threshold
	if g.Relative { // work on the log scale, where the interval is symmetric
		if lo <= -100 || est <= -100 || thr <= -100 {
			return 0
		}
		lo, hi, est, thr = math.Log1p(lo/100), math.Log1p(hi/100), math.Log1p(est/100), math.Log1p(thr/100)
	}
	se := (hi - lo) / (2 * c.za)
	gap := math.Abs(est - thr)
	if se <= 0 || gap == 0 {
		return 0
	}
	f := math.Pow((c.za+c.zb)*se/gap, 2)
	n := float64(max(m.NBaseline, m.NCandidate))
	need := math.Ceil(f * n)
	if f <= 1 || need > 1e9 {
		return 0
	}
	return int(need)
}

// breaches reports whether a metric's interval lies entirely on the bad
// side of a rule's threshold.
func (c *comparison) breaches(m *Metric, g Gate) bool {
	lo, hi := m.CILow, m.CIHigh
	if g.Relative {
		lo, hi = m.CILowPct, m.CIHighPct
	}
	if g.Op == Below {
		return lo > g.Threshold
	}
	return hi < g.Threshold
}

// neededRuns estimates the runs per side at which the run-level comparison
// of a metric whose per-run values spread by sd (log scale when relative)
// would decide the rule with the configured power:
// 2·((z_{1−α/2}+z_{power})·sd/|est−δ|)², at least the U test's minimum; 0
// when beyond 1000 runs.
func (c *comparison) neededRuns(g Gate, m *Metric, sd float64) int {
	est, thr := m.DeltaPct, g.Threshold
	if !g.Relative {
		est, thr = m.Delta, g.Threshold
		if m.Baseline > 0 {
			est, thr = 100*m.Delta/m.Baseline, 100*g.Threshold/m.Baseline
		}
	}
	if est <= -100 || thr <= -100 || math.IsNaN(est) {
		return 0
	}
	gap := math.Abs(math.Log1p(est/100) - math.Log1p(thr/100))
	if gap == 0 {
		return 0
	}
	n := math.Ceil(2 * math.Pow((c.za+c.zb)*sd/gap, 2))
	if n > 1000 {
		return 0
	}
	return max(int(n), stat.MinSamplesForU(c.opts.Alpha))
}
