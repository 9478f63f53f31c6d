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
// Align to judge the alignment). It is O(spans + ops) with one map entry per
// API call.
func CheckCausality(t *ingest.Trace) Causality {
	var c Causality
	type key struct {
		src       ingest.SourceID
		pid, corr uint32
	}
	type anyKey struct{ pid, corr uint32 }
	calls := map[key]int64{}
	shared := map[anyKey]int64{}
	hasAPI := make([]bool, len(t.Sources))
	for i := range t.Spans {
		s := &t.Spans[i]
		for _, e := range s.Events {
			c.EventsChecked++
			if e.Time < s.Start || e.Time > s.End {
				c.EventsOutside++
			}
		}
		if !isAPI(s) {
			continue
		}
		if int(s.Source) < len(hasAPI) {
			hasAPI[s.Source] = true
		}
		calls[key{s.Source, s.Pid, s.Correlation}] = s.Start
		ak := anyKey{s.Pid, s.Correlation}
		if _, dup := shared[ak]; dup {
			shared[ak] = -1 << 63 // ambiguous across sources: not used
		} else {
			shared[ak] = s.Start
		}
	}
	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		if o.Correlation == 0 {
			continue
		}
		var start int64
		var ok bool
		if int(o.Source) < len(hasAPI) && hasAPI[o.Source] {
			start, ok = calls[key{o.Source, o.Pid, o.Correlation}]
		} else {
			start, ok = shared[anyKey{o.Pid, o.Correlation}]
			ok = ok && start != -1<<63
		}
		if !ok {
			continue
		}
		c.Checked++
		if lead := start - o.Start; lead > 0 {
			c.Violations++
			c.LargestNs = max(c.LargestNs, lead)
		}
	}
	return c
}
