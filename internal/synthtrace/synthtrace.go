// Package synthtrace takes simulated runs through the real decoders for
// tests: the simulator writes OTLP bytes, the OTLP decoder reads them back
// (as analyze would), and the GPU side is merged as an nsys export would
// bring it. Tests of attribution, causal and report start from here.
package synthtrace

import (
	"bufio"
	"bytes"
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/synth"
)

// Decode writes the run's spans in style and encoding to a file named name
// in a temporary folder and decodes it through ingest.Open.
func Decode(tb testing.TB, run *synth.Run, style synth.Style, enc synth.Encoding, name string) *ingest.Trace {
	tb.Helper()
	// Straight to the file: a buffer of the whole encoding grows by
	// doubling, and its fresh pages cost more than the encoding on a
	// guest where page faults are dear (TestLongNamesBounded's 131 MB
	// spent 1.3 s of its 3.7 s clearing them).
	path := filepath.Join(tb.TempDir(), name)
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = run.WriteOTLP(w, style, enc)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		tb.Fatal(err)
	}
	tr, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{&otlp.Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}

// WithGPU decodes the run's llm.* spans and merges its GPU side (on the
// run's GPU clock, unaligned); without NVTX the steps must find their ops by
// time window.
func WithGPU(tb testing.TB, run *synth.Run, nvtx bool) *ingest.Trace {
	tb.Helper()
	tr := Decode(tb, run, synth.StyleLLM, synth.ProtoFramed, "trace.pbf")
	gpu := run.GPUTrace()
	if !nvtx {
		kept := gpu.Spans[:0]
		for _, s := range gpu.Spans {
			if s.Origin != ingest.OriginNVTX {
				kept = append(kept, s)
			}
		}
		gpu.Spans = kept
	}
	m := ingest.Merge(tr, gpu)
	m.Validate()
	return m
}

// WithKineto writes the run's llm.* spans as OTLP and its GPU side as one
// PyTorch profiler (Kineto) trace per engine (gzip'd, as vLLM writes them)
// into a temporary folder and decodes the folder through ingest.Open, as
// `llmprof analyze dir` would: the OTLP + Kineto path end to end.
func WithKineto(tb testing.TB, run *synth.Run, opts kineto.WriteOptions) *ingest.Trace {
	tb.Helper()
	dir := tb.TempDir()
	var buf bytes.Buffer
	if err := run.WriteOTLP(&buf, synth.StyleLLM, synth.ProtoFramed); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.pbf"), buf.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	for _, kt := range run.KinetoTraces(math.MinInt64, math.MaxInt64, opts) {
		buf.Reset()
		// The fastest level: what is read back is the same gzip stream
		// format, and the default level was a fifth of the test's CPU.
		zw, err := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
		if err != nil {
			tb.Fatal(err)
		}
		if err := kt.Write(zw); err != nil {
			tb.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, kt.Name+".gz"), buf.Bytes(), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	tr, err := ingest.Open(context.Background(), []string{dir}, []ingest.Decoder{kineto.Decoder{}, &otlp.Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	return tr
}
