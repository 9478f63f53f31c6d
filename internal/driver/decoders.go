package driver

import (
	"context"
	"slices"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/ingest/prom"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/record"
	"github.com/llmprof/llmprof/record/cupti"
)

// The inputs llmprof reads are the two tables below: the trace decoders
// (what analyze, export and stats read), and the run decoders (what diff and
// history read), which take a raw trace through the trace decoders and the
// pipeline. A new trace format is a row of Decoders; a new file of runs is a
// row of RunDecoders.

// Decoders returns the input decoders, in sniffing order: directory formats
// first, then the formats with unambiguous magic, then the content-shape ones.
func Decoders() []ingest.Decoder {
	return []ingest.Decoder{
		// A capture's nsys export (record --nsys) and scrapes (record
		// --scrape) are decoded with it.
		&record.CaptureDecoder{Embedded: []ingest.Decoder{nsys.Decoder{}, &prom.Decoder{}}},
		nsys.Decoder{},
		kineto.Decoder{},
		cupti.Decoder{},
		// Before the trace decoder, whose protobuf sniffing is looser.
		&otlp.MetricsDecoder{},
		&otlp.Decoder{},
		&prom.Decoder{},
	}
}

// RunDecoders returns what diff and history read runs from, in sniffing
// order: llmprof's run files and the vLLM bench results first (known by
// their schema or their keys), then a raw trace that one of the trace
// decoders (opts.Decoders, else Decoders) reads, analyzed with opts, then
// JSON without a schema as hand-written samples. An input none of them
// sniffs goes to the trace row, so that the pipeline says what it is not.
func RunDecoders(opts Options) []compare.RunDecoder {
	return []compare.RunDecoder{
		compare.SavedRuns(),
		compare.VLLMBench(),
		compare.VLLMSummary(),
		traceRuns{opts},
		compare.UnmarkedSamples(),
	}
}

// traceRuns reads a raw run, a trace file or directory, through the
// pipeline (CompareRun).
type traceRuns struct{ opts Options }

func (traceRuns) Name() string   { return "trace" }
func (traceRuns) RawTrace() bool { return true }

func (t traceRuns) Sniff(in *ingest.Input) bool {
	return slices.ContainsFunc(t.opts.decoders(), func(d ingest.Decoder) bool { return d.Sniff(in) })
}

func (t traceRuns) DecodeRuns(ctx context.Context, in *ingest.Input, out *compare.Input) error {
	run, warns, err := CompareRun(ctx, in.Path, t.opts)
	if err != nil {
		return err
	}
	out.Runs = append(out.Runs, run)
	out.Warnings = append(out.Warnings, warns...)
	return nil
}

// decoders are the trace decoders a run is read with: opts.Decoders, else
// Decoders. Diff's sniffing and the pipeline's decoding both ask here, so
// that they never use two tables.
func (opts Options) decoders() []ingest.Decoder {
	if opts.Decoders != nil {
		return opts.Decoders
	}
	return Decoders()
}
