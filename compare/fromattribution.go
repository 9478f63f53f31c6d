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
	models := map[string]bool{}
	var stageName [attribution.NumStages]string
	var stageHas [attribution.NumStages]bool
	var stages [attribution.NumStages]Series // run.Stages' series, once made
	for st := attribution.Stage(0); st < attribution.NumStages; st++ {
		stageName[st], stageHas[st] = st.String(), stagePresent(res, st)
	}
	var first int64
	for i := range res.Requests {
		if a := res.Requests[i].Arrival; i == 0 || a < first {
			first = a
		}
	}
	for i := range res.Requests {
		r := &res.Requests[i]
		run.ArrivalMS[i] = float64(r.Arrival-first) / 1e6
		if i == 0 || r.Model != res.Requests[i-1].Model {
			models[r.Model] = true
		}
		if r.Finish != "error" {
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
		gaps := r.ITLs()
		for _, g := range gaps {
			run.ITL = append(run.ITL, float64(g)/1e6)
		}
		run.ITLCounts = append(run.ITLCounts, len(gaps))
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
	run.Models = slices.Sorted(maps.Keys(models))
	run.Steps = StepsFromAttribution(res)
	if slo := res.Options.SLO; !slo.IsZero() && res.Overall.Goodput != nil {
		run.SLO = slo.String()
		run.Good = res.Overall.Goodput.Good
	}
	if res.Tokens != nil {
		run.TokensEstimated = res.Tokens.Estimated > 0
		run.Tokens, run.FirstToken = map[string]Series{}, map[string]Series{}
		// A bucket no request has time in is left out (both series): find
		// them first, then fill the others' series by bucket number (naming
		// a bucket builds its name).
		var used [attribution.NumBuckets]bool
		var sums attribution.RequestBuckets
		for i := range res.Requests {
			res.TokenBuckets(i, &sums)
			for b, v := range sums.All {
				used[b] = used[b] || v != 0
			}
		}
		var all, first [attribution.NumBuckets]Series
		for b := attribution.Bucket(0); b < attribution.NumBuckets; b++ {
			if used[b] {
				all[b], first[b] = make(Series, n), make(Series, n)
				run.Tokens[b.String()], run.FirstToken[b.String()] = all[b], first[b]
			}
		}
		for i := range res.Requests {
			res.TokenBuckets(i, &sums)
			for b := range attribution.NumBuckets {
				if used[b] {
					all[b][i] = float64(sums.All[b]) / 1e6
					first[b][i] = float64(sums.First[b]) / 1e6
				}
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
