package otlp_test

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/ingest/otlp/otlptest"
)

// benchDump is a synthetic dump of realistic LLM spans (otlptest.Synthetic:
// 15 attributes a span, llm.token events on every fourth), generated on
// demand and held in two encodings of the same batches: the file exporter's
// framed protobuf and its JSON Lines. payloads and lines are the records,
// views into framed and jsonl.
type benchDump struct {
	framed, jsonl   []byte
	payloads, lines [][]byte
	spans           int
}

var (
	benchOnce sync.Once
	bench     benchDump
)

// benchMB is the size of the protobuf dump (the JSON Lines one is about 2.5×
// as large): $LLMPROF_BENCH_MB, default 100.
func benchMB() int {
	if v, err := strconv.Atoi(os.Getenv("LLMPROF_BENCH_MB")); err == nil && v > 0 {
		return v
	}
	return 100
}

func loadBench(b *testing.B) *benchDump {
	b.Helper()
	benchOnce.Do(func() {
		g := &otlptest.Synthetic{Seed: 1}
		var framed, jsonl bytes.Buffer
		var protoEnds, jsonEnds []int
		for framed.Len() < benchMB()<<20 {
			td := g.Next()
			bench.spans += td.SpanCount()
			framed.Write(otlptest.Frame(otlptest.Proto(td)))
			protoEnds = append(protoEnds, framed.Len())
			jsonl.Write(otlptest.JSON(td))
			jsonEnds = append(jsonEnds, jsonl.Len())
			jsonl.WriteByte('\n')
		}
		bench.framed, bench.jsonl = framed.Bytes(), jsonl.Bytes()
		start := 0
		for _, end := range protoEnds {
			bench.payloads = append(bench.payloads, bench.framed[start+4:end])
			start = end
		}
		start = 0
		for _, end := range jsonEnds {
			bench.lines = append(bench.lines, bench.jsonl[start:end])
			start = end + 1
		}
	})
	return &bench
}

// reportSpans adds the figures the speed budget is stated in: spans per
// second of wall time, and spans and MB per second of CPU time (user and
// system, GC included), which a busy shared machine disturbs less.
func reportSpans(b *testing.B, spans int, bytes int64, cpu0 time.Duration) {
	b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
	if cpu := (cpuTime() - cpu0).Seconds(); cpu > 0 {
		b.ReportMetric(float64(spans)*float64(b.N)/cpu, "spans/cpu-s")
		b.ReportMetric(float64(bytes)*float64(b.N)/cpu/1e6, "MB/cpu-s")
	}
}

// BenchmarkDecode measures decoding the same bytes with llmprof's decoder
// and with the OpenTelemetry Collector's pdata unmarshalers, the reference
// to beat. Run it with -cpu 1 for the per-core figures (bench/otlp.sh).
func BenchmarkDecode(b *testing.B) {
	d := loadBench(b)
	ctx := context.Background()
	b.Run("proto/llmprof", func(b *testing.B) {
		b.SetBytes(int64(len(d.framed)))
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			tr := ingest.New()
			tr.Sources = []ingest.Source{{Path: "bench"}}
			for _, p := range d.payloads {
				if err := otlp.DecodePayload(tr, 0, p, otlp.Proto, ""); err != nil {
					b.Fatal(err)
				}
			}
			if len(tr.Spans) != d.spans {
				b.Fatalf("%d spans, want %d", len(tr.Spans), d.spans)
			}
		}
		reportSpans(b, d.spans, int64(len(d.framed)), cpu0)
	})
	b.Run("proto/llmprof-framed-file", func(b *testing.B) {
		b.SetBytes(int64(len(d.framed)))
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			tr, err := (&otlp.Decoder{}).DecodeReader(ctx, "bench.pb", bytes.NewReader(d.framed))
			if err != nil || len(tr.Spans) != d.spans {
				b.Fatalf("%v, %d spans, want %d", err, len(tr.Spans), d.spans)
			}
		}
		reportSpans(b, d.spans, int64(len(d.framed)), cpu0)
	})
	b.Run("proto/pdata", func(b *testing.B) {
		b.SetBytes(int64(len(d.framed)))
		cpu0 := cpuTime()
		u := &ptrace.ProtoUnmarshaler{}
		for i := 0; i < b.N; i++ {
			n := 0
			for _, p := range d.payloads {
				td, err := u.UnmarshalTraces(p)
				if err != nil {
					b.Fatal(err)
				}
				n += td.SpanCount()
			}
			if n != d.spans {
				b.Fatalf("%d spans, want %d", n, d.spans)
			}
		}
		reportSpans(b, d.spans, int64(len(d.framed)), cpu0)
	})
	b.Run("jsonl/llmprof", func(b *testing.B) {
		b.SetBytes(int64(len(d.jsonl)))
		cpu0 := cpuTime()
		for i := 0; i < b.N; i++ {
			tr, err := (&otlp.Decoder{}).DecodeReader(ctx, "bench.jsonl", bytes.NewReader(d.jsonl))
			if err != nil || len(tr.Spans) != d.spans {
				b.Fatalf("%v, %d spans, want %d", err, len(tr.Spans), d.spans)
			}
		}
		reportSpans(b, d.spans, int64(len(d.jsonl)), cpu0)
	})
	b.Run("jsonl/pdata", func(b *testing.B) {
		b.SetBytes(int64(len(d.jsonl)))
		cpu0 := cpuTime()
		u := &ptrace.JSONUnmarshaler{}
		for i := 0; i < b.N; i++ {
			n := 0
			for _, line := range d.lines {
				td, err := u.UnmarshalTraces(line)
				if err != nil {
					b.Fatal(err)
				}
				n += td.SpanCount()
			}
			if n != d.spans {
				b.Fatalf("%d spans, want %d", n, d.spans)
			}
		}
		reportSpans(b, d.spans, int64(len(d.jsonl)), cpu0)
	})
}

// The benchmark's speed claim compares like with like: on the same
// synthetic data, llmprof's decoder (both encodings) reads exactly what the
// collector's pdata reads, span by span and attribute by attribute.
func TestSyntheticMatchesPdata(t *testing.T) {
	g := &otlptest.Synthetic{Seed: 7, Spans: 64}
	for i := 0; i < 3; i++ {
		td := g.Next()
		ref := fromPdata(td)
		ref.Validate()
		want := dump(t, ref, ingest.DumpOptions{})
		for _, enc := range []otlp.Encoding{otlp.Proto, otlp.JSON} {
			tr := ingest.New()
			tr.Sources = []ingest.Source{{Path: "x"}}
			payload := otlptest.Proto(td)
			if enc == otlp.JSON {
				payload = otlptest.JSON(td)
			}
			if err := otlp.DecodePayload(tr, 0, payload, enc, ""); err != nil {
				t.Fatal(err)
			}
			tr.Validate()
			if got := dump(t, tr, ingest.DumpOptions{}); got != want {
				t.Fatalf("%s decode differs from pdata's:\n%s", enc, lineDiff(want, got))
			}
			attrs, events := 0, 0
			for i := range tr.Spans {
				attrs += len(tr.SpanAttrs(&tr.Spans[i]))
				events += len(tr.Events(&tr.Spans[i]))
			}
			if len(tr.Spans) != td.SpanCount() || attrs != 15*len(tr.Spans) || events == 0 {
				t.Fatalf("%d spans, %d attributes, %d events", len(tr.Spans), attrs, events)
			}
		}
	}
}
