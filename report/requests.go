package report

import (
	"math"
	"slices"

	"github.com/llmprof/llmprof/attribution"
)

// RequestRow is one request as the per-request table (`analyze --requests`)
// and the HTML report's charts show it. Times are ms; a metric the input
// cannot tell is NaN, a count it cannot tell −1.
type RequestRow struct {
	ID     string
	Tenant string
	Model  string
	// ArrivalNs is the arrival on the reference clock (Unix ns when the
	// reference is a wall clock); OffsetMs is the arrival since the run's
	// first one.
	ArrivalNs int64
	OffsetMs  float64
	TTFT      float64
	TPOT      float64
	E2E       float64
	Queue     float64
	// StagesMs has one value per attribution.StageNames(), summing to E2E.
	StagesMs     [attribution.NumStages]float64
	InputTokens  int
	OutputTokens int
	// CachedTokens is −1 when the input does not report the prefix cache;
	// KVHit is then meaningless (KVKnown false).
	KVKnown      bool
	KVHit        bool
	CachedTokens int
	Finish       string
}

// RequestRows lists the requests in arrival order.
func RequestRows(res *attribution.Result) []RequestRow {
	if res == nil || len(res.Requests) == 0 {
		return nil
	}
	order := make([]int, len(res.Requests))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := res.Requests[a].Arrival, res.Requests[b].Arrival
		switch {
		case ra < rb:
			return -1
		case ra > rb:
			return 1
		}
		return 0
	})
	first := res.Requests[order[0]].Arrival
	rows := make([]RequestRow, len(order))
	for i, ri := range order {
		r := &res.Requests[ri]
		row := RequestRow{
			ID: r.ID, Tenant: r.Tenant, Model: r.Model,
			ArrivalNs: r.Arrival, OffsetMs: float64(r.Arrival-first) / 1e6,
			TTFT: nsToMs(r.TTFT), TPOT: nsToMs(r.TPOT), E2E: nsToMs(r.E2E), Queue: nsToMs(r.Queue),
			InputTokens: r.InputTokens, OutputTokens: r.OutputTokens,
			KVKnown: r.CacheKnown, KVHit: r.CacheHit, CachedTokens: r.CachedTokens, Finish: r.Finish,
		}
		if !r.CacheKnown {
			row.CachedTokens = -1
		}
		for s, v := range r.Stages {
			row.StagesMs[s] = float64(v) / 1e6
		}
		rows[i] = row
	}
	return rows
}

func nsToMs(v float64) float64 {
	if math.IsNaN(v) {
		return v
	}
	return v / 1e6
}
