package causal

import (
	"math"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
)

// FromAttribution converts attribution's requests into the regression's
// input. Unknown metrics (NaN there) and lengths (−1 there) become 0,
// "unknown" here. A request's batch size is the mean size of the engine steps
// it ran in, and its device the device of those steps' GPU ops when t (the
// trace attribution ran on) is given; MIG instances are not known at this
// level and stay −1.
func FromAttribution(res *attribution.Result, t *ingest.Trace) []Request {
	return fromAttribution(res, t, nil)
}

// FromAttributionServed is FromAttribution(res, t) and ServedTenants(t,
// res) from one walk of the requests, where each read every request (and
// ServedTenants its span) again: on the 100 MiB OTLP dump of docs/otlp.md
// a table of 38 MB, the walk a cache miss or more a request. t must not be
// nil.
func FromAttributionServed(res *attribution.Result, t *ingest.Trace) ([]Request, map[uint32][]string) {
	served := newServedTally(t)
	reqs := fromAttribution(res, t, served)
	return reqs, served.finish(res)
}

// fromAttribution is FromAttribution; with served, each request's tenant
// is also added to its span's process (servedTally.request), in the
// requests' order as ServedTenants adds them.
func fromAttribution(res *attribution.Result, t *ingest.Trace, served *servedTally) []Request {
	n := len(res.Requests)
	// The table is a spill file past the budget (a Request holds no
	// pointer). The steps' walk sums each request's batch sizes in its
	// BatchSize, counts them in its InputTokens and keeps its device + 1
	// in its Device (0, the table's zero, for none yet), where three
	// arrays beside the table were 2.6 MB allocated on the 100 MiB OTLP
	// dump of docs/otlp.md; the walk of the requests then writes each
	// whole.
	out := spill.Make[Request](n)
	// One op a step, in the table's order: a read a page or two apart,
	// which maps the whole table; its pages passed are dropped when the
	// process is over its memory budget (spill.Behind).
	var behind spill.Behind
	if t != nil {
		behind = spill.DropBehind(t.GPUOps)
	}
	for si := range res.Steps {
		s := &res.Steps[si]
		dev := int16(-1)
		if t != nil && len(s.Ops) > 0 && int(s.Ops[0]) < len(t.GPUOps) {
			behind.Passed(int(s.Ops[0]))
			dev = t.GPUOps[s.Ops[0]].Device
		}
		for _, ri := range s.Requests {
			if ri < 0 || int(ri) >= n {
				continue
			}
			q := &out[ri]
			q.BatchSize += float64(s.Size)
			q.InputTokens++
			if q.Device-1 < 0 {
				q.Device = dev + 1
			}
		}
	}
	// The tenants are few: tenant keeps each name's Tenant, so
	// that TenantOf's lock is taken once a tenant, not once a request.
	// The map is consulted only where the name changes from the request
	// before ("" is the zero Tenant, as TenantOf says).
	tenant := map[string]Tenant{}
	last, tn := "", Tenant(0)
	for i := range res.Requests {
		r := &res.Requests[i]
		if name := res.Tenant(r); name != last {
			var ok bool
			if tn, ok = tenant[name]; !ok {
				tn = TenantOf(name)
				tenant[name] = tn
			}
			last = name
		}
		if served != nil {
			served.request(r.Span, last)
		}
		sum, count, device := out[i].BatchSize, out[i].InputTokens, out[i].Device-1
		q := Request{
			Tenant: tn, Arrival: r.Arrival, End: r.End,
			TTFT: nsOf(r.TTFT), TPOT: nsOf(r.TPOT),
			InputTokens: max(0, r.InputTokens), OutputTokens: max(0, r.OutputTokens),
			Device: device, Instance: -1,
		}
		if count > 0 {
			q.BatchSize = sum / float64(count)
		}
		out[i] = q
	}
	return out
}

// nsOf rounds a metric in ns to int64; NaN, ±Inf and negatives are unknown.
func nsOf(v float64) int64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 || v > math.MaxInt64/2 {
		return 0
	}
	return int64(math.Round(v))
}
