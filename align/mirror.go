package align

import (
	"github.com/llmprof/llmprof/ingest"
)

// The OTLP attributes that carry the IDs NVTX text may name.
var (
	requestIDKeys = []string{"llm.request.id", "gen_ai.request.id"}
	stepIDKeys    = []string{"llm.step.id"}
	// Preferred span names when several spans carry the same request or
	// step ID (stage spans often repeat the request's ID).
	requestSpanNames = []string{"llm.request", "llm_request"}
	stepSpanNames    = []string{"llm.step"}
)

// spanKeyValue returns the span's value for one of the attribute keys, as a
// string (an integer ID is formatted in decimal).
func spanKeyValue(t *ingest.Trace, s *ingest.Span, keys []ingest.StrID) (string, bool) {
	for _, k := range keys {
		v, ok := ingest.Get(s.Attrs, k)
		if !ok {
			continue
		}
		switch v.Kind() {
		case ingest.KindString:
			return t.Str(v.Str()), true
		case ingest.KindInt:
			return t.FormatValue(v), true
		case ingest.KindDouble:
			if f := v.Double(); f == float64(int64(f)) {
				return t.FormatValue(ingest.IntValue(int64(f))), true
			}
		}
	}
	return "", false
}
