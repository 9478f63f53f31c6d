package align

import "github.com/llmprof/llmprof/ingest"

// Causality is the clock condition of a GPU trace (docs/statistics.md A.6, after
// Scalasca's check of message order): a GPU op cannot start before the CUDA
// API call that launched it starts, and a span event lies inside its span.
// Within one nsys export both sides are on one clock already, so a violation
// there means CUPTI's GPU→CPU conversion drifted or the pairing is wrong;
// across sources it means the alignment is off.
type Causality struct {
	// Checked counts GPU ops joined to their launching call (same Pid and
	// correlation ID; same source when the source has API calls).
	Checked int `json:"checked"`
	// Violations counts ops that start before their call starts, and
	// LargestNs is the largest such lead.
	Violations int   `json:"violations"`
	LargestNs  int64 `json:"largest_ns"`
	// EventsChecked and EventsOutside count span events and those outside
	// their span.
	EventsChecked int `json:"events_checked"`
	EventsOutside int `json:"events_outside"`
}

// CheckCausality counts causality violations in t as it stands (call it after
// Align to judge the alignment). An op whose source has API calls is
// checked against its source's call (the last one, when the source repeats
// the key); an op of a source without API calls against the one call of any
// source that has its key, and not at all when several do. The join is
// ingest's (Trace.EachLaunch, the one launch attribution uses): a
// sort-merge, no map of every call.
func CheckCausality(t *ingest.Trace) Causality {
	var c Causality
	for i := range t.Spans {
		s := &t.Spans[i]
		for _, e := range t.Events(s) {
			c.EventsChecked++
			if e.Time < s.Start || e.Time > s.End {
				c.EventsOutside++
			}
		}
	}
	hasAPI := callSources(t)
	t.EachLaunch(func(op int32, group []int32) {
		o := &t.GPUOps[op]
		var start int64
		ok := false
		if int(o.Source) < len(hasAPI) && hasAPI[o.Source] {
			for _, k := range group {
				if s := &t.APICalls[k]; s.Source == o.Source {
					start, ok = s.Start, true
				}
			}
		} else if len(group) == 1 {
			start, ok = t.APICalls[group[0]].Start, true
		}
		if !ok {
			return
		}
		c.Checked++
		if lead := start - o.Start; lead > 0 {
			c.Violations++
			c.LargestNs = max(c.LargestNs, lead)
		}
	})
	return c
}
