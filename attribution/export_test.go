package attribution

import (
	"math"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/synth"
)

// e2eAttr is request r's e2e attribute (requestArena.e2eAttr: no Request
// keeps it), read again from its span; NaN when absent.
func (res *Result) e2eAttr(r *Request) float64 {
	t := res.trace
	if d, ok := newKeyCache(t).duration(t.SpanAttrs(&t.Spans[r.Span]), keyE2E); ok {
		return float64(d)
	}
	return math.NaN()
}

// E2EAttr is Result.e2eAttr, for the package's external tests.
func E2EAttr(res *Result, r *Request) float64 { return res.e2eAttr(r) }

// StallingRun and StallingTrace are stallingRun and stallingTrace, for the
// package's external tests.
func StallingRun(t *testing.T) *synth.Run      { return stallingRun(t) }
func StallingTrace(t *testing.T) *ingest.Trace { return stallingTrace(t) }
