package main

import (
	"context"
	"fmt"
	"time"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
)

// pipelineOptions are the analysis settings shared by the commands that run
// the pipeline on raw inputs (analyze, diff, export).
type pipelineOptions struct {
	TenantKey string
	SLO       attribution.SLO
	Stall     time.Duration
	// Reference names the clock domain to align onto ("" = the first
	// source with OTLP spans).
	Reference string
}

// pipelineResult is one run taken through the pipeline: decoded, aligned,
// attributed.
type pipelineResult struct {
	Trace *ingest.Trace
	Align *align.Result
	Attr  *attribution.Result
}

// analyzeInputs runs decoders → align → attribution on the inputs.
func analyzeInputs(ctx context.Context, f *Factory, paths []string, opts pipelineOptions) (*pipelineResult, error) {
	t, err := openInputs(ctx, f, paths)
	if err != nil {
		return nil, err
	}
	aopts := align.DefaultOptions()
	aopts.Reference = opts.Reference
	ar, err := align.Align(t, aopts)
	if err != nil {
		return nil, &UsageError{fmt.Errorf("alignment: %w", err)}
	}
	res := attribution.Analyze(t, attribution.Options{TenantKey: opts.TenantKey, SLO: opts.SLO, StallThreshold: opts.Stall, Alignment: ar})
	return &pipelineResult{Trace: t, Align: ar, Attr: res}, nil
}
