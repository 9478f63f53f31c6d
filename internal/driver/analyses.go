package driver

import (
	"fmt"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/report"
	"github.com/llmprof/llmprof/signals"
)

// An Analysis is one row of the registry Run goes through once the inputs
// are decoded and on one clock. Adding an analysis is a row in analyses
// plus its package: Run computes it and keeps its result on the Result, and
// a result the report has no field for reaches every renderer as a section
// (Result.AddSection; docs/architecture.md shows one).
type Analysis struct {
	// Name names the analysis.
	Name string
	// Stage is the progress meter's line while it runs (nil: the line of
	// the row before stays).
	Stage func(a *Result) string
	// Skip leaves the analysis out under opts (nil: it always runs).
	Skip func(opts Options) bool
	// Run computes the analysis of a, whose Trace and Align are set and
	// which holds the results of the rows before it, and keeps its result
	// on a.
	Run func(a *Result, opts Options) error
}

// analyses are the rows Run goes through, in order: attribution first, as
// every other analysis reads its result.
var analyses = []Analysis{
	{Name: "attribution", Stage: attributionStage, Run: runAttribution},
	{Name: "infrastructure", Skip: func(o Options) bool { return o.RequestsOnly }, Run: runSignals},
	{Name: "tenants", Stage: func(*Result) string { return "tenant regression" }, Skip: func(o Options) bool { return o.Tenants.Skip }, Run: runTenants},
}

// attributionStage is the meter's line while attribution runs.
func attributionStage(a *Result) string {
	return fmt.Sprintf("attributing %d spans, %d GPU ops", a.Trace.CPURecordCount(), len(a.Trace.GPUOps))
}

// runAttribution attributes each request's latency (package attribution):
// requests, stages, steps, tokens and, unless RequestsOnly, the GPU section.
func runAttribution(a *Result, opts Options) error {
	a.Attr = attribution.Analyze(a.Trace, attribution.Options{TenantKey: opts.TenantKey, SLO: opts.SLO, StallThreshold: opts.Stall,
		Alignment: a.Align, RequestsOnly: opts.RequestsOnly, GPU: attribution.GPUOptions{TopKernels: opts.TopKernels}})
	return nil
}

// runSignals is the infrastructure section from the metric series (package
// signals).
func runSignals(a *Result, _ Options) error {
	a.Signals = signals.Analyze(a.Trace, a.Attr, signals.Options{})
	return nil
}

// runTenants is the tenant causal regression (package causal), or the note
// saying why it did not run.
func runTenants(a *Result, opts Options) error {
	defer tenantGC(a.Trace)()
	var err error
	a.Tenants, a.TenantsNote, err = tenantRegression(a.Trace, a.Attr, opts)
	return err
}

// tenantGC paces the collector at tenantGCPercent while the tenant
// regression runs on t, and returns what ends it. Only the kernel view's
// fits churn (arrays of tens of bytes a kernel), so a trace without GPU ops
// is paced as the rest of the pipeline: held at a tenth there, a 30 MiB OTLP
// dump's 60-70 MB of spans were marked three times more for a request
// regression that allocates a few MB.
func tenantGC(t *ingest.Trace) (release func()) {
	if len(t.GPUOps) == 0 {
		return func() {}
	}
	return tightGC(tenantGCPercent).release
}

// AddSection gives an analysis's result a section of the report, after the
// built-in ones, in every renderer (report.AnalysisSection).
func (a *Result) AddSection(s report.AnalysisSection) { a.Sections = append(a.Sections, s) }
