package compare

import (
	"math"
)

// RunValue is a metric's value for one run, as run-level replication
// computes it (perRun): the statistic of the run's per-request series (per
// token for itl), a rate over the run's duration, or a bucket's time per
// output token. ok is false when the run lacks the data or the name is not a
// metric. `llmprof history` reads a series of runs through it, so a run's
// value there is the value diff would use for that run.
func RunValue(r *Run, metric string) (v float64, ok bool) {
	m, err := LookupMetric(metric)
	if err != nil {
		return math.NaN(), false
	}
	f := m.Family
	switch f.Kind {
	case KindRate:
		v = rateOf(f, []Run{*r})
	case KindLatency:
		if m.Stat == StatShift {
			return math.NaN(), false
		}
		var x []float64
		if f.series == nil {
			x = r.ITL.known()
		} else {
			x = f.series(r).known()
		}
		if len(x) == 0 {
			return math.NaN(), false
		}
		if m.Stat == StatMean {
			v = mean(x)
		} else {
			v = quantileOf(x, statQ[m.Stat])
		}
	case KindBucket:
		num := families(r)[f.fam][m.Bucket]
		if num == nil || len(r.OutputTokens) != len(num) {
			return math.NaN(), false
		}
		v = newRatioSeries(num, r.OutputTokens).value()
	}
	return v, !math.IsNaN(v)
}

// RequestValues is a latency metric's series for one run with one value
// per request, unknown requests left out, in arrival order: the family's
// per-request series, and for itl each request's own statistic of its
// inter-token gaps (its median for p50, its mean for mean, its pNN for pNN),
// so that the request, not the token, is the unit. Nil for rates, buckets
// and shifts.
func RequestValues(r *Run, metric string) []float64 {
	m, err := LookupMetric(metric)
	if err != nil || m.Family.Kind != KindLatency || m.Stat == StatShift {
		return nil
	}
	if m.Family.series != nil {
		return m.Family.series(r).known()
	}
	counts := r.itlCounts()
	var out []float64
	at := 0
	for _, c := range counts {
		gaps := Series(r.ITL[at : at+c]).known()
		at += c
		if len(gaps) == 0 {
			continue
		}
		if m.Stat == StatMean {
			out = append(out, mean(gaps))
		} else {
			out = append(out, quantileOf(gaps, statQ[m.Stat]))
		}
	}
	return out
}
