package otlp_test

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/ingest/otlp/otlptest"
)

// The decoder remembers, for each attribute position of a kind of span,
// the key and string value it read there last (protoSpanAttr's slots), and
// caches strings by a hash of a few of their bytes (state.intern): a
// prediction is taken only when every byte matches. Here every key and
// value at a position differs from the one before it in one byte, at the
// start, the middle or the end, with the same length (or is the same, or
// another kind of value, or empty), and the spans' first keys, by which
// the slots are picked, differ from each other in one byte too (a wrong
// pick costs only misses): whatever the caches hold, the trace is what the
// collector's pdata reads. Taking a slot's key or value, or intern's
// cached string, on its length and first byte alone fails here.
func TestRememberedStringsNeverMisread(t *testing.T) {
	variants := func(base string) []string {
		out := []string{base}
		for _, at := range []int{0, len(base) / 2, len(base) - 1} {
			b := []byte(base)
			b[at]++
			out = append(out, string(b))
		}
		return out
	}
	firsts := variants("gen_ai.request.id")
	keys := [][]string{variants("llm.tenant"), variants("gen_ai.response.model"), variants("k12345678"), variants("ab")}
	values := variants("meta-llama/Llama-3.1-8B-Instruct")
	values = append(values, "", "x", "y")
	rng := rand.New(rand.NewPCG(7, 8))
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	for i := range 2000 {
		sp := spans.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{1, byte(i >> 8), byte(i)})
		sp.SetSpanID(pcommon.SpanID{2, byte(i >> 8), byte(i)})
		sp.SetName("span")
		sp.SetStartTimestamp(pcommon.Timestamp(otlptest.T0 + int64(i)*1000))
		sp.SetEndTimestamp(pcommon.Timestamp(otlptest.T0 + int64(i)*1000 + 500))
		a := sp.Attributes()
		a.PutStr(firsts[rng.IntN(len(firsts))], "r-"+strconv.Itoa(i))
		for _, ks := range keys {
			k := ks[rng.IntN(len(ks))]
			if _, dup := a.Get(k); dup {
				continue
			}
			switch rng.IntN(8) {
			case 0:
				a.PutInt(k, int64(rng.IntN(3)))
			case 1:
				a.PutDouble(k, 0.5)
			default:
				a.PutStr(k, values[rng.IntN(len(values))])
			}
		}
	}
	want := dump(t, fromPdata(td), ingest.DumpOptions{})
	for _, enc := range []otlp.Encoding{otlp.Proto, otlp.JSON} {
		payload := otlptest.Proto(td)
		if enc == otlp.JSON {
			payload = otlptest.JSON(td)
		}
		tr := ingest.New()
		tr.Sources = []ingest.Source{{Path: "payload"}}
		if err := otlp.DecodePayload(tr, 0, payload, enc, ""); err != nil {
			t.Fatal(err)
		}
		tr.Validate()
		if got := dump(t, tr, ingest.DumpOptions{}); got != want {
			t.Fatalf("%s decode differs from pdata's:\n%s", enc, lineDiff(want, got))
		}
	}
}
