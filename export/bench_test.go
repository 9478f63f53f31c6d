package export

import (
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/synth"
)

func benchGPUTrace(b *testing.B) *ingest.Trace {
	b.Helper()
	run, err := synth.Generate(synth.DefaultConfig(9, 2*time.Second))
	if err != nil {
		b.Fatal(err)
	}
	return run.GPUTrace()
}

// BenchmarkWritePerfetto exports a synth run's GPU side (≈ 120 k ops and as
// many API calls); BenchmarkJSONReference marshals the same number of
// minimal events with encoding/json, a floor for writing that much JSON.
// `go test -bench 'WritePerfetto|JSONReference' -run ^$ ./export`.
func BenchmarkWritePerfetto(b *testing.B) {
	t := benchGPUTrace(b)
	for b.Loop() {
		if _, err := WritePerfetto(io.Discard, t, PerfettoOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(t.GPUOps)+len(t.Spans)), "records")
}

func BenchmarkJSONReference(b *testing.B) {
	t := benchGPUTrace(b)
	type ev struct {
		Ph   string  `json:"ph"`
		Name string  `json:"name"`
		Pid  int64   `json:"pid"`
		Tid  int64   `json:"tid"`
		Ts   float64 `json:"ts"`
		Dur  float64 `json:"dur"`
	}
	n := len(t.GPUOps) + len(t.Spans)
	for b.Loop() {
		enc := json.NewEncoder(io.Discard)
		for i := range t.GPUOps {
			o := &t.GPUOps[i]
			_ = enc.Encode(ev{"X", t.Str(o.Name), 1, int64(o.Stream), float64(o.Start) / 1e3, float64(o.End-o.Start) / 1e3})
		}
		for i := range t.Spans {
			s := &t.Spans[i]
			_ = enc.Encode(ev{"X", t.Str(s.Name), int64(s.Pid), int64(s.Tid), float64(s.Start) / 1e3, float64(s.End-s.Start) / 1e3})
		}
	}
	b.ReportMetric(float64(n), "records")
}

// BenchmarkWriteParquet writes the same synth run's GPU side as the
// gpu_ops and spans tables (two row groups each) through internal/parquetw.
// `go test -bench WriteParquet -run ^$ ./export`.
func BenchmarkWriteParquet(b *testing.B) {
	t := benchGPUTrace(b)
	dir := b.TempDir()
	for b.Loop() {
		if _, err := WriteParquet(dir, t, nil, nil, ParquetOptions{RunID: "bench"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(t.GPUOps)+len(t.Spans)), "rows")
}
