package attribution

import (
	"math"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// ModelEvent is a model load, unload or reload (llm.model.* spans) and its
// effect on the requests in flight during it (the seed article §2.5).
type ModelEvent struct {
	Kind    string  `json:"kind"` // load, unload, reload
	Model   string  `json:"model"`
	StartNs int64   `json:"start_ns"`
	EndNs   int64   `json:"end_ns"`
	Ms      float64 `json:"duration_ms"`
	// InFlight counts requests of the same model (or of unknown model) that
	// were waiting for their first token while the event ran.
	InFlight int `json:"requests_in_flight"`
	// AddedTTFTMs is the median TTFT of those requests minus the median TTFT
	// of the model's other requests (NaN when either group is empty).
	AddedTTFTMs Float `json:"added_ttft_ms"`
}

// keyModelID names the model of a model event.
var keyModelID = keys("llm.model_id")

// modelEvents finds llm.model.load/unload/reload spans and the requests they
// delayed. Requests are sorted by arrival, so each event is a binary search
// plus a scan of the requests that arrived before it ended.
func modelEvents(t *ingest.Trace, k *keyCache, res *Result) []ModelEvent {
	reqs := res.Requests
	var out []ModelEvent
	// The events' names the trace holds, by ID (spanNameIDs): a trace
	// with none has no span to look at.
	ids := spanNameIDs(t, "llm.model.load", "llm.model.unload", "llm.model.reload")
	if len(ids) == 0 {
		return nil
	}
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin != ingest.OriginOTLP || !slices.Contains(ids, s.Name) {
			continue
		}
		kind := strings.TrimPrefix(t.Str(s.Name), "llm.model.")
		model, _ := k.str(t.SpanAttrs(s), keyModelID)
		ev := ModelEvent{Kind: kind, Model: model, StartNs: s.Start, EndNs: s.End, Ms: float64(s.End-s.Start) / 1e6, AddedTTFTMs: Float(math.NaN())}
		var hit, rest []float64
		end, _ := slices.BinarySearchFunc(reqs, s.End, func(r Request, t int64) int {
			if r.Arrival < t {
				return -1
			}
			return 1
		})
		for j := range reqs {
			r := &reqs[j]
			if m := res.Model(r); model != "" && m != model && m != "unknown" {
				continue
			}
			firstToken := r.End
			if r.FirstToken != 0 {
				firstToken = r.FirstToken
			}
			if j < end && firstToken > s.Start {
				ev.InFlight++
				hit = appendKnown(hit, r.TTFT)
			} else {
				rest = appendKnown(rest, r.TTFT)
			}
		}
		if len(hit) > 0 && len(rest) > 0 {
			ev.AddedTTFTMs = Float((percentileOf(hit, 50) - percentileOf(rest, 50)) / 1e6)
		}
		out = append(out, ev)
	}
	return out
}
