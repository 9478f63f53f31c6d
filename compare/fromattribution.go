package compare

import (
	"maps"
	"math"
	"slices"

	"github.com/llmprof/llmprof/attribution"
)

// FromAttribution converts an attributed run into the observations diff
// compares: per-request metrics in arrival order, per-token gaps, and the
// per-request sums of every stage and token bucket, so that a regression can
// be explained by the buckets that moved.
func FromAttribution(res *attribution.Result) Run {
	n := len(res.Requests)
	run := Run{
		DurationMS: res.Overall.Duration * 1e3,
		Requests:   n,
		TTFT:       make(Series, n), TPOT: make(Series, n), E2E: make(Series, n), Queue: make(Series, n),
		OutputTokens: make(Series, n), InputTokens: make(Series, n), ArrivalMS: make(Series, n),
		Stages: map[string]Series{},
	}
	// The requests' models: a map, and the last few added, which a run's
	// requests (of a few models, interleaved) repeat, compared before the
	// map is hashed (its assignments were a tenth of this walk).
	models := map[string]bool{}
	var recent [4]string
	nRecent := 0
	addModel := func(m string) {
		if slices.Contains(recent[:min(nRecent, len(recent))], m) {
			return
		}
		models[m] = true
		recent[nRecent%len(recent)] = m
		nRecent++
	}
	var stageName [attribution.NumStages]string
	var stageHas [attribution.NumStages]bool
	var stages [attribution.NumStages]Series // run.Stages' series, once made
	for st := attribution.Stage(0); st < attribution.NumStages; st++ {
		stageName[st], stageHas[st] = st.String(), stagePresent(res, st)
	}
	// The gaps and their counts go into arrays made to size once: regrown
	// request by request, they left garbage the collector then chased.
	// Analyze's overall summary has counted the gaps (a Result built
	// otherwise may not have: the array then grows).
	if gaps := res.Overall.Metrics.ITL.N; gaps > 0 {
		run.ITL = make(Series, 0, gaps)
	}
	if n > 0 {
		run.ITLCounts = make([]int, 0, n)
	}
	// Arrivals are from the first: Analyze's requests come in arrival
	// order, so the first is the first request's, checked as the walk
	// goes; were one earlier, the arrivals are written again from it. A
	// walk of the requests (39 MB on the 100 MiB OTLP dump) to find the
	// first before writing them cost a tenth of this function.
	var first int64
	if n > 0 {
		first = res.Requests[0].Arrival
	}
	earliest := first
	for i := range res.Requests {
		r := &res.Requests[i]
		earliest = min(earliest, r.Arrival)
		run.ArrivalMS[i] = float64(r.Arrival-first) / 1e6
		addModel(res.Model(r))
		if res.Finish(r) != "error" {
			run.Completed++
		}
		run.TTFT[i] = r.TTFT / 1e6
		run.TPOT[i] = r.TPOT / 1e6
		run.E2E[i] = r.E2E / 1e6
		run.Queue[i] = r.Queue / 1e6
		run.OutputTokens[i] = math.NaN()
		if r.OutputTokens >= 0 {
			run.OutputTokens[i] = float64(r.OutputTokens)
		}
		run.InputTokens[i] = math.NaN()
		if r.InputTokens >= 0 {
			run.InputTokens[i] = float64(r.InputTokens)
		}
		tokens := res.TokenTimes(r)
		for k := 1; k < len(tokens); k++ { // res.ITLs(r), without its array
			run.ITL = append(run.ITL, float64(tokens[k]-tokens[k-1])/1e6)
		}
		run.ITLCounts = append(run.ITLCounts, max(len(tokens)-1, 0))
		for st := attribution.Stage(0); st < attribution.NumStages; st++ {
			if r.Stages[st] == 0 && !stageHas[st] {
				continue
			}
			if stages[st] == nil {
				stages[st] = make(Series, n)
				run.Stages[stageName[st]] = stages[st]
			}
			stages[st][i] = float64(r.Stages[st]) / 1e6
		}
	}
	if earliest < first {
		for i := range res.Requests {
			run.ArrivalMS[i] = float64(res.Requests[i].Arrival-earliest) / 1e6
		}
	}
	run.Models = slices.Sorted(maps.Keys(models))
	run.Steps = StepsFromAttribution(res)
	if slo := res.Options.SLO; !slo.IsZero() && res.Overall.Goodput != nil {
		run.SLO = slo.String()
		run.Good = res.Overall.Goodput.Good
	}
	if res.Tokens != nil {
		run.TokensEstimated = res.Tokens.Estimated > 0
		run.Tokens, run.FirstToken = map[string]Series{}, map[string]Series{}
		// A bucket no request has time in is left out (both series): the
		// series are made at a bucket's first request with time in it, in
		// one walk of the requests, and kept if it has any in All.
		var used [attribution.NumBuckets]bool
		var all, first [attribution.NumBuckets]Series
		for i := range res.Requests {
			// The buckets the request can have time in: the others are
			// zero in both sums.
			bs, sumAll, sumFirst := res.TokenBucketSums(i)
			for j, b := range bs {
				a, f := sumAll[j], sumFirst[j]
				if a == 0 && f == 0 {
					continue // the series' zero, when there is one
				}
				if all[b] == nil {
					all[b], first[b] = make(Series, n), make(Series, n)
				}
				used[b] = used[b] || a != 0
				all[b][i] = float64(a) / 1e6
				first[b][i] = float64(f) / 1e6
			}
		}
		for b := attribution.Bucket(0); b < attribution.NumBuckets; b++ {
			if used[b] {
				run.Tokens[b.String()], run.FirstToken[b.String()] = all[b], first[b]
			}
		}
	}
	return run
}

// stagePresent reports whether any request of the run has time in st, so
// that a stage the input does not have is absent rather than all zeros.
func stagePresent(res *attribution.Result, st attribution.Stage) bool {
	for _, s := range res.Stages {
		if s.Name == st.String() {
			return s.TotalMs > 0
		}
	}
	return false
}
