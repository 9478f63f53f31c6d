package compare

import (
	"context"
	"slices"

	"github.com/llmprof/llmprof/ingest"
)

// TraceRunsForTest is the raw-trace row of driver.RunDecoders for tests:
// what one of Decoders sniffs is a raw run, which Analyze stands in the
// pipeline for.
type TraceRunsForTest struct {
	Decoders []ingest.Decoder
	Analyze  func(ctx context.Context, path string) (Run, []string, error)
}

func (TraceRunsForTest) Name() string   { return "trace" }
func (TraceRunsForTest) RawTrace() bool { return true }
func (t TraceRunsForTest) Sniff(in *ingest.Input) bool {
	return slices.ContainsFunc(t.Decoders, func(d ingest.Decoder) bool { return d.Sniff(in) })
}
func (t TraceRunsForTest) DecodeRuns(ctx context.Context, in *ingest.Input, out *Input) error {
	run, warns, err := t.Analyze(ctx, in.Path)
	if err != nil {
		return err
	}
	out.Runs = append(out.Runs, run)
	out.Warnings = append(out.Warnings, warns...)
	return nil
}

// WithTraces is driver.RunDecoders' table with raw as its trace row: the
// run files, then raw traces, then JSON without a schema.
func WithTraces(raw RunDecoder) LoadOptions {
	files := RunFileDecoders()
	last := len(files) - 1
	return LoadOptions{Inputs: append(append(files[:last:last], raw), files[last])}
}
