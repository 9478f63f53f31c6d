package align

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/synth"
)

// benchTrace is a 5 s synth serving run (≈ 300 k GPU ops, 330 k spans) with
// its GPU side on a second clock, merged as analyze would.
func benchTrace(b *testing.B) *ingest.Trace { return benchTraceGraphs(b, false) }

// benchTraceGraphs is benchTrace, with decode steps replayed as CUDA graphs
// when graphs is set (one launch call for all of a step's kernels: many
// more ops than calls, as in vLLM's decode).
func benchTraceGraphs(b *testing.B, graphs bool) *ingest.Trace {
	b.Helper()
	cfg := synth.DefaultConfig(9, 5*time.Second)
	cfg.CUDAGraphs = graphs
	cfg.GPUClock = synth.ClockError{OffsetNs: 3e9, DriftPPM: 50, JitterNs: 10_000}
	run, err := synth.Generate(cfg)
	if err != nil {
		b.Fatal(err)
	}
	otlp := ingest.New()
	otlp.Sources = []ingest.Source{{Path: "synth.jsonl", Clock: ingest.ClockDomain{Name: "realtime@synth", Kind: ingest.ClockRealtime}}}
	name := otlp.Strings.Intern("llm.step")
	for _, st := range run.Steps {
		otlp.Spans = append(otlp.Spans, ingest.Span{TraceID: st.TraceID, ID: st.SpanID, Name: name, Start: st.Start, End: st.End, Origin: ingest.OriginOTLP, Resource: -1, Scope: -1})
	}
	t := ingest.Merge(otlp, run.GPUTrace())
	t.Validate()
	return t
}

// BenchmarkAlign aligns the run; BenchmarkAlignReference clones its records,
// shifts the GPU side by a constant and re-sorts, the floor for any
// alignment that moves a domain. Compare the two:
// `go test -bench Align -run ^$ -benchtime 5x ./align`.
func BenchmarkAlign(b *testing.B) {
	t := benchTrace(b)
	spans, ops := slices.Clone(t.Spans), slices.Clone(t.GPUOps)
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		copy(t.Spans, spans)
		copy(t.GPUOps, ops)
		b.StartTimer()
		if _, err := Align(t, DefaultOptions()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(t.GPUOps)), "ops")
}

func BenchmarkAlignReference(b *testing.B) {
	t := benchTrace(b)
	b.ResetTimer()
	for b.Loop() {
		// Shift the GPU side by a constant and re-sort: the least any
		// alignment that moves a domain has to do.
		c := &ingest.Trace{Spans: slices.Clone(t.Spans), GPUOps: slices.Clone(t.GPUOps), Samples: slices.Clone(t.Samples)}
		for i := range c.Spans {
			if c.Spans[i].Source == 1 {
				c.Spans[i].Start -= 3e9
				c.Spans[i].End -= 3e9
			}
		}
		for i := range c.GPUOps {
			c.GPUOps[i].Start -= 3e9
			c.GPUOps[i].End -= 3e9
		}
		c.Sort()
	}
	b.ReportMetric(float64(len(t.GPUOps)), "ops")
}

// BenchmarkCheckCausality against BenchmarkLaunchCalls, the launch ↔ kernel
// join of launch attribution on the same trace:
// `go test -bench 'CheckCausality|LaunchCalls' -run ^$ ./align`.
func BenchmarkCheckCausality(b *testing.B) {
	for _, graphs := range []bool{false, true} {
		b.Run(fmt.Sprintf("graphs=%v", graphs), func(b *testing.B) {
			t := benchTraceGraphs(b, graphs)
			b.ResetTimer()
			for b.Loop() {
				CheckCausality(t)
			}
		})
	}
}

func BenchmarkLaunchCalls(b *testing.B) {
	t := benchTrace(b)
	b.ResetTimer()
	for b.Loop() {
		t.LaunchCalls()
	}
}
