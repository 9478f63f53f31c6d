package compare

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/internal/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Request level adjusted for covariates (docs/diff.md, "Adjusted request
// latencies"): two runs of different prompt draws differ in their prompts'
// and completions' lengths and in how loaded the server was when each
// request arrived, and every latency depends on those. The adjusted metric
// regresses the requests' log latency, both sides pooled, on the
// covariates both carry and a side indicator,
//
//	log y = γ·candidate + f(covariates) + ε,
//
// f a quadratic in the logs of the covariates with their cross terms; γ is
// the change at equal covariates ("ttft.adj +12% [+8%, +16%]"). As at the
// step level (compare/steps.go) the change of the mean log latency splits
// exactly into γ and the part the covariates explain, both linear in y, and
// their intervals use errors clustered by blocks of consecutive requests
// (compare/linfit.go). With one run per side the interval also holds the
// between-run bound of replayed runs of the same statistic
// (BetweenRunBound): once the workload is adjusted for, what remains
// between runs is what two runs of one workload show.
//
// Covariates: ttft on the prompt's length and the concurrency at arrival
// (requests in flight when it arrived); tpot, itl (each request's median
// gap) and e2e also on the completion's length. A covariate either side
// lacks is left out, and the note says so.

// adjustedDifferent is the between-run bound σ (log scale) of an adjusted
// metric for one run per side of different workloads: what the covariates
// leave of the difference between two prompt draws (bursts, queueing that
// the concurrency at arrival does not foresee). Calibrated on 29 pairs of
// unchanged 3 s simulator runs of different workload seeds
// (TestAdjustedBoundCalibration, figures in docs/diff.md): the 95% upper
// bounds were 41.2%, 42.9%, 16.2% and 39.1% — as wide as the raw
// statistics' (betweenDifferent), so on the simulator the adjustment does
// not make different workloads decidable; replayed workloads use the
// replayed bound of the same statistic (BetweenRunBound).
var adjustedDifferent = map[string]float64{
	"ttft.adj": 0.42, "tpot.adj": 0.43, "itl.adj": 0.17, "e2e.adj": 0.40,
}

// AdjustedBound is the between-run bound σ of an adjusted metric ("ttft.adj")
// for one run per side, of one replayed workload or of different ones.
func AdjustedBound(name string, replayed bool) float64 {
	for _, as := range adjustedSpecs {
		if as.name != name {
			continue
		}
		s, _ := BetweenRunBound(as.stat, true)
		if !replayed {
			s = max(s, adjustedDifferent[name])
		}
		return s
	}
	return math.NaN()
}

// suffixAdjusted ends the adjusted metrics' names: "ttft.adj".
const suffixAdjusted = ".adj"

// AdjustedMetrics are the adjusted request metrics, in display order.
var AdjustedMetrics = []string{"ttft.adj", "tpot.adj", "itl.adj", "e2e.adj"}

// KindAdjusted: a request latency's change at equal covariates.
const KindAdjusted = KindStep + 1

// MethodAdjusted: log latency regressed on per-request covariates with a
// side indicator, errors clustered by time blocks.
const MethodAdjusted Method = "covariate-adjusted"

var adjustedFamily = Family{Name: "adj", Kind: KindAdjusted, Unit: "%", Better: LowerIsBetter,
	Doc: "a request latency's change at equal input length, output length and concurrency at arrival (ttft.adj, tpot.adj, itl.adj, e2e.adj)"}

func lookupAdjustedMetric(name string) (MetricName, bool, error) {
	base, ok := strings.CutSuffix(name, suffixAdjusted)
	if !ok || strings.Contains(base, ".") {
		return MetricName{}, false, nil
	}
	if !slices.Contains(AdjustedMetrics, name) {
		return MetricName{}, true, fmt.Errorf("unknown adjusted metric %q (want one of %s)", name, strings.Join(AdjustedMetrics, ", "))
	}
	return MetricName{Family: &adjustedFamily, Bucket: base}, true, nil
}

// adjCovariate is one per-request covariate.
type adjCovariate struct {
	name string
	of   func(r *Run) Series
}

var (
	covInput  = adjCovariate{"input tokens", func(r *Run) Series { return r.InputTokens }}
	covOutput = adjCovariate{"output tokens", func(r *Run) Series { return r.OutputTokens }}
	covConc   = adjCovariate{"concurrency at arrival", concurrencyAtArrival}
)

// adjustedSpecs lists, per adjusted metric, its latency and covariates.
var adjustedSpecs = []struct {
	name, stat string // the between-run bound's statistic
	value      func(r *Run) Series
	covs       []adjCovariate
}{
	{"ttft.adj", "ttft.mean", func(r *Run) Series { return r.TTFT }, []adjCovariate{covInput, covConc}},
	{"tpot.adj", "tpot.mean", func(r *Run) Series { return r.TPOT }, []adjCovariate{covOutput, covInput, covConc}},
	{"itl.adj", "itl.p50", medianITL, []adjCovariate{covOutput, covInput, covConc}},
	{"e2e.adj", "e2e.mean", func(r *Run) Series { return r.E2E }, []adjCovariate{covInput, covOutput, covConc}},
}

// concurrencyAtArrival is, per request, how many other requests were in
// flight (arrived, not finished) when it arrived; nil without arrival
// times and end-to-end latencies.
func concurrencyAtArrival(r *Run) Series {
	if len(r.ArrivalMS) != r.Requests || len(r.E2E) != r.Requests || r.Requests == 0 {
		return nil
	}
	type ev struct {
		t     float64
		delta int
	}
	var evs []ev
	for i := range r.Requests {
		a, e := r.ArrivalMS[i], r.E2E[i]
		if math.IsNaN(a) || math.IsNaN(e) {
			continue
		}
		evs = append(evs, ev{a + e, -1})
	}
	order := make([]int, r.Requests)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(r.ArrivalMS[a], r.ArrivalMS[b]) })
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Compare(a.t, b.t) })
	out := make(Series, r.Requests)
	started, j := 0, 0
	for _, i := range order {
		a := r.ArrivalMS[i]
		if math.IsNaN(a) {
			out[i] = math.NaN()
			continue
		}
		for j < len(evs) && evs[j].t <= a {
			j++
		}
		out[i] = float64(started - j)
		if !math.IsNaN(r.E2E[i]) {
			started++
		}
	}
	return out
}

// medianITL is each request's median inter-token gap; nil when the run
// does not say which gaps are whose.
func medianITL(r *Run) Series {
	counts := r.itlCounts()
	if counts == nil {
		return nil
	}
	out := make(Series, r.Requests)
	var g []float64
	j := 0
	for i, k := range counts {
		g = g[:0]
		for _, v := range r.ITL[j : j+k] {
			if !math.IsNaN(v) {
				g = append(g, v)
			}
		}
		j += k
		out[i] = medianOfGaps(g)
	}
	return out
}

// medianOfGaps is median(sorted g), reordering g: by selection
// (stat.Median), or by the sort when g holds −0, whose place beside +0 only
// the sort decides.
func medianOfGaps(g []float64) float64 {
	if stat.SortDecides(g) {
		slices.Sort(g)
		return median(g)
	}
	return stat.Median(g)
}

// computeAdjusted adds the adjusted request metrics both sides can carry.
func (c *comparison) computeAdjusted() {
	oneRun := len(c.base.runs) == 1 && len(c.cand.runs) == 1
	for _, as := range adjustedSpecs {
		yb, yc := gatherRuns(c.base.runs, as.value), gatherRuns(c.cand.runs, as.value)
		if yb == nil || yc == nil {
			c.markAbsent(as.name, fmt.Sprintf("a side has no %s values", strings.TrimSuffix(as.name, suffixAdjusted)))
			continue
		}
		var used, missing []string
		var xb, xc [][]float64
		for _, cv := range as.covs {
			b, k := gatherRuns(c.base.runs, cv.of), gatherRuns(c.cand.runs, cv.of)
			if b == nil || k == nil {
				missing = append(missing, cv.name)
				continue
			}
			used = append(used, cv.name)
			xb, xc = append(xb, b), append(xc, k)
		}
		if len(used) == 0 {
			c.markAbsent(as.name, fmt.Sprintf("no covariate (%s) is known on both sides", strings.Join(missing, ", ")))
			continue
		}
		c.adjustedMetric(as.name, yb, yc, xb, xc, used, missing, oneRun)
	}
}

// gatherRuns concatenates a series over a side's runs; nil when a run
// lacks it.
func gatherRuns(runs []Run, of func(r *Run) Series) []float64 {
	var out []float64
	for i := range runs {
		s := of(&runs[i])
		if len(s) != runs[i].Requests {
			return nil
		}
		out = append(out, s...)
	}
	return out
}

const minAdjustedN = 50

func (c *comparison) adjustedMetric(name string, yb, yc []float64, xb, xc [][]float64, used, missing []string, oneRun bool) {
	// Requests with the latency and every covariate known, per side, in
	// arrival order (their index).
	type obs struct {
		y   float64
		x   []float64
		idx int
	}
	collect := func(y []float64, x [][]float64) []obs {
		var out []obs
		for i, v := range y {
			if !(v > 0) || math.IsInf(v, 0) {
				continue
			}
			row := make([]float64, len(x))
			ok := true
			for j := range x {
				if math.IsNaN(x[j][i]) || x[j][i] < 0 {
					ok = false
					break
				}
				row[j] = math.Log1p(x[j][i])
			}
			if ok {
				out = append(out, obs{math.Log(v), row, i})
			}
		}
		return out
	}
	ob, oc := collect(yb, xb), collect(yc, xc)
	s := spec{name: name, fam: &adjustedFamily, bucket: strings.TrimSuffix(name, suffixAdjusted)}
	w := c.newWork(s, MethodAdjusted, len(ob), len(oc))
	w.unitsOf = "requests"
	w.requireN(minAdjustedN, " with the latency and its covariates known")
	if w.short != "" {
		return
	}
	gb, gc := blocksFor(len(ob)), blocksFor(len(oc))
	n := len(ob) + len(oc)
	x := make([][]float64, 0, n)
	y := make([]float64, 0, n)
	cluster := make([]int, 0, n)
	for side, list := range [][]obs{ob, oc} {
		for rank, o := range list {
			row := []float64{1, float64(side)}
			for a := range o.x {
				row = append(row, o.x[a], o.x[a]*o.x[a])
				for b := range a {
					row = append(row, o.x[a]*o.x[b])
				}
			}
			x = append(x, row)
			y = append(y, o.y)
			if side == 0 {
				cluster = append(cluster, min(gb-1, rank*gb/len(list)))
			} else {
				cluster = append(cluster, gb+min(gc-1, rank*gc/len(list)))
			}
		}
	}
	x = dropConstant(x, 2)
	lf, err := fitLinear(x, y)
	m := w.m
	if err != nil {
		w.short = fmt.Sprintf("%s: %v", name, err)
		return
	}
	g := gb + gc
	cost := lf.CoefWeights(1)
	raw := make([]float64, n)
	for i := range raw {
		if i < len(ob) {
			raw[i] = -1 / float64(len(ob))
		} else {
			raw[i] = 1 / float64(len(oc))
		}
	}
	mu, v := lf.Estimate(cost), lf.ClusteredVar(cost, cluster, g, stat.ClusterCount)
	rawEst := lf.Estimate(raw)
	replayed := c.res.Workload != DesignDifferent
	sigma := AdjustedBound(name, replayed)
	v += c.betweenVar(sigma)
	se := math.Sqrt(v)
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(max(g-2, 1))}
	tq := t.Quantile(1 - c.opts.Alpha/2)
	m.DeltaPct, m.CILowPct, m.CIHighPct = pctOfLog(mu), pctOfLog(mu-tq*se), pctOfLog(mu+tq*se)
	m.P = 2 * t.Survival(math.Abs(mu)/se)
	m.Significant = m.P <= c.opts.Alpha
	m.MDEPct = pctOfLog((tq + t.Quantile(c.opts.Power)) * se)
	m.MinN = minAdjustedN
	note := fmt.Sprintf("at equal %s (quadratic in logs; errors clustered in %d + %d blocks of consecutive requests): raw geometric-mean change %s = covariates %s × adjusted %s",
		strings.Join(used, ", "), gb, gc, fmtPctShort(pctOfLog(rawEst)), fmtPctShort(pctOfLog(rawEst-mu)), fmtPctShort(m.DeltaPct))
	if len(missing) > 0 {
		note += "; not adjusted for " + strings.Join(missing, ", ") + " (a side lacks it)"
	}
	design := "several runs per side, pooled"
	switch {
	case oneRun && replayed:
		design = "one run per side, one replayed workload"
	case oneRun:
		design = "one run per side, different workloads"
	}
	note += fmt.Sprintf("; %s: the interval includes the between-run bound σ = %.1f%% (docs/diff.md)", design, 100*sigma)
	m.Note = note
	w.pFail = logTFail(mu, se, t)
}
