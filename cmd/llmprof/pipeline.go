package main

import (
	"context"
	"fmt"
	"time"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/progress"
	"github.com/llmprof/llmprof/signals"
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
	// RequestsOnly skips the GPU section and the token summary (commands that
	// do not show them).
	RequestsOnly bool
	// Decoders replaces the Factory's decoders (tests).
	Decoders []ingest.Decoder
	// Tenants configures the tenant causal regression, which runs when the
	// requests come from at least two tenants.
	Tenants tenantOptions
	// TopKernels is how many kernels the GPU section lists (0: default).
	TopKernels int
}

// tenantOptions are the settings of the tenant causal regression.
type tenantOptions struct {
	Skip bool
	// Pids assigns processes to tenants outright (--tenant-pid PID=NAME).
	Pids map[uint32]string
	// Bin is the load bin width (0: causal's default, 1 s).
	Bin time.Duration
	// Load picks the load series ("" chooses the best available).
	Load    string
	Metrics []causal.Metric
	NoLag   bool
}

// pipelineResult is one run taken through the pipeline: decoded, aligned,
// attributed.
type pipelineResult struct {
	Trace *ingest.Trace
	Align *align.Result
	Attr  *attribution.Result
	// Tenants is nil when the tenant regression did not run; TenantsNote
	// then says why.
	Tenants     *causal.Result
	TenantsNote string
	// Signals is the infrastructure section: nil without metric series.
	Signals *signals.Result
}

// analyzeInputs runs decoders → align → attribution on the inputs.
func analyzeInputs(ctx context.Context, f *Factory, paths []string, opts pipelineOptions) (*pipelineResult, error) {
	var meter *progress.Meter
	if f != nil {
		meter = progress.New(f.IO.ErrOut, f.IO.ErrTTY)
		defer meter.Close()
	}
	t, err := openInputs(ctx, f, paths, opts.Decoders, meter)
	if err != nil {
		return nil, err
	}
	meter.Stage("aligning clocks")
	aopts := align.DefaultOptions()
	aopts.Reference = opts.Reference
	ar, err := align.Align(t, aopts)
	if err != nil {
		return nil, &UsageError{fmt.Errorf("alignment: %w", err)}
	}
	meter.Stage(fmt.Sprintf("attributing %d spans, %d GPU ops", len(t.Spans), len(t.GPUOps)))
	res := attribution.Analyze(t, attribution.Options{TenantKey: opts.TenantKey, SLO: opts.SLO, StallThreshold: opts.Stall,
		Alignment: ar, RequestsOnly: opts.RequestsOnly, GPU: attribution.GPUOptions{TopKernels: opts.TopKernels}})
	out := &pipelineResult{Trace: t, Align: ar, Attr: res}
	if !opts.RequestsOnly {
		out.Signals = signals.Analyze(t, res, signals.Options{})
	}
	if !opts.Tenants.Skip {
		meter.Stage("tenant regression")
		out.Tenants, out.TenantsNote, err = tenantRegression(t, res, opts)
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tenantRegression runs the tenant causal regression when there are at
// least two tenants; otherwise it says why not.
func tenantRegression(t *ingest.Trace, att *attribution.Result, opts pipelineOptions) (*causal.Result, string, error) {
	tenants := map[string]bool{}
	for i := range att.Requests {
		tenants[att.Requests[i].Tenant] = true
	}
	if len(tenants) < 2 {
		return nil, fmt.Sprintf("tenant regression needs requests from two tenants or more; found %d (see --tenant-key)", len(tenants)), nil
	}
	to := opts.Tenants
	lo := causal.LoadOptions{BinWidth: to.Bin.Nanoseconds()}
	if to.Load != "" && to.Load != "auto" {
		k, err := causal.ParseLoadKind(to.Load)
		if err != nil {
			return nil, "", &UsageError{fmt.Errorf("--load: %w", err)}
		}
		lo.Kind = &k
	}
	keys := causal.DefaultTenantKeys
	if opts.TenantKey != "" {
		keys = append([]string{opts.TenantKey}, keys...)
	}
	reqs := causal.FromAttribution(att, t)
	// A process is named after the tenants of the requests it serves (the
	// same --tenant-key names both sides); several make a shared source.
	tm := causal.MapTenants(t, causal.MapOptions{Override: to.Pids, Keys: keys, Served: causal.ServedTenants(t, att)})
	load, err := causal.BuildLoad(t, reqs, tm, lo)
	if err != nil {
		return nil, "tenant regression not run: " + err.Error(), nil
	}
	copts := causal.DefaultOptions()
	if len(to.Metrics) > 0 {
		copts.Metrics = to.Metrics
	}
	copts.NoLagModel = to.NoLag
	kin := causal.KernelInputFromAttribution(t, tm, att, reqs)
	res, err := causal.Analyze(causal.Input{Requests: reqs, Load: load, Mapping: tm, Kernels: &kin}, copts)
	if err != nil {
		return nil, "tenant regression not run: " + err.Error(), nil
	}
	return res, "", nil
}
