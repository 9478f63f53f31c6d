package compare

import (
	"cmp"
	"maps"
	"math"
	"slices"

	"github.com/llmprof/llmprof/attribution"
)

// Columns are FromAttribution(res) before its divisions: the run's other
// fields, and each series as the raw values it is made from (nanoseconds,
// counts), which the analysis report's JSON writes as the series
// (report.Input.Columns) without dividing: the shortest digits of
// float64(ns)/1e6 are those of the integer ns (report/jsonwrite.go,
// appendNanosAsMs), with no round trip to check them by.
type Columns struct {
	// Run holds every field of FromAttribution's run but the series
	// (TTFT to ITL, ITLCounts, and the maps' series, here in the columns;
	// Run's maps are empty, nil where FromAttribution's are) and Steps.
	Run Run
	// Series are the series of Run's own fields, in Run's order (ttft_ms,
	// tpot_ms, e2e_ms, queue_ms, output_tokens, input_tokens, arrival_ms,
	// itl_ms, itl_counts), each left out where FromAttribution's is empty.
	// Stages, Tokens and FirstToken are the series of Run's maps, in the
	// order of their keys.
	Series, Stages, Tokens, FirstToken []Column
}

// A Column is one series of Columns: its values are Raw's divided by Scale.
type Column struct {
	// Name is the series' JSON field (ttft_ms, …) or, in a map, its key.
	Name string
	// Scale is 1e6 for milliseconds, whose raw values are nanoseconds
	// (a request's TTFT, TPOT, E2E and queue time as attribution has
	// them, float64 of a difference of int64 nanoseconds otherwise), and
	// 1 for counts (NaN for an unknown one).
	Scale float64
	Raw   []float64
}

// ColumnsOf is FromAttribution(res) before its divisions, in one walk of
// the requests and their token sums.
func ColumnsOf(res *attribution.Result) *Columns {
	n := len(res.Requests)
	var ttft, tpot, e2e, queue, outTokens, inTokens, arrival, itl, itlCounts []float64
	if n > 0 {
		ttft, tpot, e2e, queue = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
		outTokens, inTokens, arrival, itlCounts = make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	}
	// Analyze's overall summary has counted the gaps (a Result built
	// otherwise may not have: the array then grows).
	if gaps := res.Overall.Metrics.ITL.N; gaps > 0 {
		itl = make([]float64, 0, gaps)
	}
	c := &Columns{Run: Run{DurationMS: res.Overall.Duration * 1e3, Requests: n, Stages: map[string]Series{}}}
	// The requests' models: a map, and the last few added, which a run's
	// requests (of a few models, interleaved) repeat, compared before the
	// map is hashed (its assignments were a tenth of this walk).
	models := map[string]bool{}
	var recent [4]string
	nRecent := 0
	var stageHas [attribution.NumStages]bool
	var stages [attribution.NumStages][]float64 // made at a stage's first time, or from the start
	for st := range stageHas {
		stageHas[st] = stagePresent(res, attribution.Stage(st))
	}
	// Arrivals are from the first: Analyze's requests come in arrival
	// order, so the first is the first request's, checked as the walk
	// goes; were one earlier, the arrivals are taken again from it.
	var first int64
	if n > 0 {
		first = res.Requests[0].Arrival
	}
	earliest := first
	for i := range res.Requests {
		r := &res.Requests[i]
		earliest = min(earliest, r.Arrival)
		arrival[i] = float64(r.Arrival - first)
		if m := res.Model(r); !slices.Contains(recent[:min(nRecent, len(recent))], m) {
			models[m] = true
			recent[nRecent%len(recent)] = m
			nRecent++
		}
		if res.Finish(r) != "error" {
			c.Run.Completed++
		}
		ttft[i], tpot[i], e2e[i], queue[i] = r.TTFT, r.TPOT, r.E2E, r.Queue
		outTokens[i], inTokens[i] = count(r.OutputTokens), count(r.InputTokens)
		tokens := res.TokenTimes(r)
		for k := 1; k < len(tokens); k++ { // res.ITLs(r), without its array
			itl = append(itl, float64(tokens[k]-tokens[k-1]))
		}
		itlCounts[i] = float64(max(len(tokens)-1, 0))
		for st, d := range r.Stages {
			if d == 0 && !stageHas[st] {
				continue
			}
			if stages[st] == nil {
				stages[st] = make([]float64, n)
			}
			stages[st][i] = float64(d)
		}
	}
	if earliest < first {
		for i := range res.Requests {
			arrival[i] = float64(res.Requests[i].Arrival - earliest)
		}
	}
	c.Run.Models = slices.Sorted(maps.Keys(models))
	if slo := res.Options.SLO; !slo.IsZero() && res.Overall.Goodput != nil {
		c.Run.SLO = slo.String()
		c.Run.Good = res.Overall.Goodput.Good
	}
	if n > 0 {
		c.Series = []Column{{"ttft_ms", 1e6, ttft}, {"tpot_ms", 1e6, tpot}, {"e2e_ms", 1e6, e2e}, {"queue_ms", 1e6, queue},
			{"output_tokens", 1, outTokens}, {"input_tokens", 1, inTokens}, {"arrival_ms", 1e6, arrival}}
	}
	if len(itl) > 0 {
		c.Series = append(c.Series, Column{"itl_ms", 1e6, itl})
	}
	if n > 0 {
		c.Series = append(c.Series, Column{"itl_counts", 1, itlCounts})
	}
	for st, s := range stages {
		if s != nil {
			c.Stages = append(c.Stages, Column{attribution.Stage(st).String(), 1e6, s})
		}
	}
	slices.SortFunc(c.Stages, byName)
	if res.Tokens != nil {
		c.Run.TokensEstimated = res.Tokens.Estimated > 0
		c.Run.Tokens, c.Run.FirstToken = map[string]Series{}, map[string]Series{}
		// A bucket no request has time in is left out (both series): the
		// series are made at a bucket's first request with time in it, in
		// one walk of the requests, and kept if it has any in All.
		var used [attribution.NumBuckets]bool
		var all, first [attribution.NumBuckets][]float64
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
					all[b], first[b] = make([]float64, n), make([]float64, n)
				}
				used[b] = used[b] || a != 0
				all[b][i] = float64(a)
				first[b][i] = float64(f)
			}
		}
		for b, u := range used {
			if u {
				name := attribution.Bucket(b).String()
				c.Tokens = append(c.Tokens, Column{name, 1e6, all[b]})
				c.FirstToken = append(c.FirstToken, Column{name, 1e6, first[b]})
			}
		}
		slices.SortFunc(c.Tokens, byName)
		slices.SortFunc(c.FirstToken, byName)
	}
	return c
}

func byName(a, b Column) int { return cmp.Compare(a.Name, b.Name) }

// count is a token count as a raw value: NaN when unknown (−1).
func count(n int) float64 {
	if n < 0 {
		return math.NaN()
	}
	return float64(n)
}

// run is the Run the columns stand for, made of their arrays, each value
// divided by its column's scale in place: c is spent.
func (c *Columns) run() Run {
	run := c.Run
	if run.Requests == 0 { // FromAttribution's series are empty, not nil
		run.TTFT, run.TPOT, run.E2E, run.Queue, run.OutputTokens, run.InputTokens, run.ArrivalMS = Series{}, Series{}, Series{}, Series{}, Series{}, Series{}, Series{}
	}
	fields := map[string]*Series{"ttft_ms": &run.TTFT, "tpot_ms": &run.TPOT, "e2e_ms": &run.E2E, "queue_ms": &run.Queue,
		"output_tokens": &run.OutputTokens, "input_tokens": &run.InputTokens, "arrival_ms": &run.ArrivalMS, "itl_ms": &run.ITL}
	for _, col := range c.Series {
		if col.Name == "itl_counts" {
			run.ITLCounts = make([]int, len(col.Raw))
			for i, x := range col.Raw {
				run.ITLCounts[i] = int(x)
			}
			continue
		}
		*fields[col.Name] = col.series()
	}
	for _, m := range []struct {
		m    map[string]Series
		cols []Column
	}{{run.Stages, c.Stages}, {run.Tokens, c.Tokens}, {run.FirstToken, c.FirstToken}} {
		for _, col := range m.cols {
			m.m[col.Name] = col.series()
		}
	}
	return run
}

// series divides the column's raw values by its scale, in place.
func (col Column) series() Series {
	if col.Scale != 1 {
		for i, x := range col.Raw {
			col.Raw[i] = x / col.Scale
		}
	}
	return col.Raw
}
