package align

import (
	"github.com/llmprof/llmprof/ingest"
)

// The OTLP attributes that carry the IDs NVTX text may name, and the span
// names preferred when several spans carry the same request or step ID
// (ingest/semconv.go).
var (
	requestIDKeys    = ingest.RequestIDKeys
	stepIDKeys       = ingest.StepIDKeys
	requestSpanNames = []string{ingest.SpanRequest, ingest.SpanRequestVLLM}
	stepSpanNames    = []string{ingest.SpanStep}
)

// spanKeyValue returns the span's value for one of the attribute keys, as a
// string (an integer ID is formatted in decimal).
func spanKeyValue(t *ingest.Trace, s *ingest.Span, keys []ingest.StrID) (string, bool) {
	for _, k := range keys {
		v, ok := ingest.Get(t.SpanAttrs(s), k)
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
