package prom

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
)

// FuzzMetrics feeds arbitrary bytes to both metric decoders (Prometheus text
// and OTLP metrics): neither may panic or hang, and every sample must belong
// to a series with a finite value.
func FuzzMetrics(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.*")
	more, _ := filepath.Glob("../otlp/testdata/metrics/*.jsonl")
	for _, p := range append(seeds, more...) {
		if strings.HasSuffix(p, ".md") {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("# TYPE x histogram\nx_bucket{le=\"1\"} 1 1\nx_count 1 1\n# EOF\n"))
	f.Add([]byte(`{"resourceMetrics":[{"scopeMetrics":[{"metrics":[{"name":"g","gauge":{"dataPoints":[{"timeUnixNano":"1","asInt":"3"}]}}]}]}]}`))
	f.Add([]byte{0x0a, 0x10, 0x12, 0x0e, 0x12, 0x0c, 0x0a, 0x01, 'x', 0x2a, 0x07, 0x0a, 0x05, 0x19, 1, 0, 0, 0})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Skip(err)
		}
		in, err := ingest.NewInput(path)
		if err != nil {
			return
		}
		for _, dec := range []ingest.Decoder{&Decoder{}, &otlp.MetricsDecoder{}} {
			if !dec.Sniff(in) {
				continue
			}
			tr := ingest.New()
			tr.Sources = []ingest.Source{{Path: path}}
			if err := dec.Decode(context.Background(), in, tr); err != nil {
				continue
			}
			for i := range tr.Samples {
				s := &tr.Samples[i]
				if tr.SeriesOf(s) == nil {
					t.Fatalf("%s: sample %d without a series", dec.Name(), i)
				}
				if math.IsNaN(s.Value) || math.IsInf(s.Value, 0) {
					t.Fatalf("%s: non-finite sample kept", dec.Name())
				}
			}
			tr.Validate()
		}
	})
}
