package driver

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/progress"
	"github.com/llmprof/llmprof/report"
	"github.com/llmprof/llmprof/signals"
)

// Options are the analysis settings shared by the commands that run the
// pipeline on raw inputs (analyze, diff, export, tenants).
type Options struct {
	TenantKey string
	SLO       attribution.SLO
	Stall     time.Duration
	// Reference names the clock domain to align onto ("" = the first
	// source with OTLP spans).
	Reference string
	// RequestsOnly skips the GPU section and the token summary (commands that
	// do not show them).
	RequestsOnly bool
	// Decoders replaces Decoders() (tests).
	Decoders []ingest.Decoder
	// Tenants configures the tenant causal regression, which runs when the
	// requests come from at least two tenants.
	Tenants TenantOptions
	// TopKernels is how many kernels the GPU section lists (0: default).
	TopKernels int
	// Stdin is what an input "-" reads (nil: os.Stdin).
	Stdin io.Reader
	// Progress is the terminal on which a meter shows the stages and the
	// bytes read (nil: no meter).
	Progress io.Writer
	// Metrics bounds the metric samples and series decoded (zero:
	// ingest.MetricLimits' defaults).
	Metrics ingest.MetricLimits
	// Dataset is a dataset of llmprof export --dataset: the one path is
	// then a run_id, whose kept input files are analysed (export.go).
	Dataset string
}

// TenantOptions are the settings of the tenant causal regression.
type TenantOptions struct {
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

// Result is one run taken through the pipeline: decoded, aligned,
// attributed.
type Result struct {
	Trace *ingest.Trace
	Align *align.Result
	Attr  *attribution.Result
	// Tenants is nil when the tenant regression did not run; TenantsNote
	// then says why.
	Tenants     *causal.Result
	TenantsNote string
	// Signals is the infrastructure section: nil without metric series.
	Signals *signals.Result
	// Sections are the report's sections of the analyses it has no field
	// for (Analysis, AddSection).
	Sections []report.AnalysisSection
}

// Run takes the inputs through decoders → align, then through the rows of
// the analyses registry (analyses.go): attribution, the infrastructure
// signals and the tenant regression. An error in the options
// (a reference clock no input has, an unknown load series) is an
// *OptionError; any other error is the inputs'.
func Run(ctx context.Context, paths []string, opts Options) (*Result, error) {
	meter := progress.New(opts.Progress, opts.Progress != nil)
	defer meter.Close()
	gc := tightGC(runGCPercent)
	defer gc.release()
	paths, cleanup, err := datasetInputs(paths, opts.Dataset, meter)
	defer cleanup()
	if err != nil {
		return nil, err
	}
	t, err := openInputs(ctx, paths, opts, meter, gc)
	if err != nil {
		return nil, err
	}
	meter.Stage("aligning clocks")
	aopts := align.DefaultOptions()
	aopts.Reference = opts.Reference
	ar, err := align.Align(t, aopts)
	if err != nil {
		return nil, &OptionError{fmt.Errorf("alignment: %w", err)}
	}
	out := &Result{Trace: t, Align: ar}
	for _, an := range analyses {
		if an.Skip != nil && an.Skip(opts) {
			continue
		}
		if an.Stage != nil {
			meter.Stage(an.Stage(out))
		}
		if err := an.Run(out, opts); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tenantRegression runs the tenant causal regression when there are at
// least two tenants; otherwise it says why not.
func tenantRegression(t *ingest.Trace, att *attribution.Result, opts Options) (*causal.Result, string, error) {
	// Two tenants are enough to go on: the scan stops at the second.
	found := min(len(att.Requests), 1)
	for i := 1; i < len(att.Requests) && found < 2; i++ {
		if att.Tenant(&att.Requests[i]) != att.Tenant(&att.Requests[0]) {
			found = 2
		}
	}
	if found < 2 {
		return nil, fmt.Sprintf("tenant regression needs requests from two tenants or more; found %d (see --tenant-key)", found), nil
	}
	to := opts.Tenants
	lo := causal.LoadOptions{BinWidth: to.Bin.Nanoseconds()}
	if to.Load != "" && to.Load != "auto" {
		k, err := causal.ParseLoadKind(to.Load)
		if err != nil {
			return nil, "", &OptionError{fmt.Errorf("--load: %w", err)}
		}
		lo.Kind = &k
	}
	keys := causal.DefaultTenantKeys
	if opts.TenantKey != "" {
		keys = append([]string{opts.TenantKey}, keys...)
	}
	// A process is named after the tenants of the requests it serves (the
	// same --tenant-key names both sides); several make a shared source.
	reqs, served := causal.FromAttributionServed(att, t)
	tm := causal.MapTenants(t, causal.MapOptions{Override: to.Pids, Keys: keys, Served: served})
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

// openInputs decodes and merges the inputs (with the given decoders, or
// Decoders()), counting files and bytes on the progress meter.
func openInputs(ctx context.Context, paths []string, opts Options, m *progress.Meter, gc *gcHold) (*ingest.Trace, error) {
	decoders := opts.decoders()
	var oo ingest.OpenOptions
	// Open's own walk of the inputs says what there is to read (the files
	// it will decode, symlinks followed, with their sizes).
	oo.Expanded = func(ins []*ingest.Input) {
		var total int64
		for _, in := range ins {
			total += in.Size
		}
		gc.budget(total)
		if m != nil {
			m.Inputs(len(ins), total)
			m.Stage(progress.StageReading)
		}
	}
	if m != nil {
		oo.Progress = func(_, _ int, in *ingest.Input) { m.FileDone(in.Size) }
	}
	oo.Stdin = opts.Stdin
	oo.Metrics = opts.Metrics
	return ingest.Open(ctx, paths, decoders, oo)
}

// OptionError is a mistake in the options given rather than in the inputs:
// a reference clock that no input has, an unknown load series. Commands
// report it as a usage error.
type OptionError struct{ Err error }

func (e *OptionError) Error() string { return e.Err.Error() }
func (e *OptionError) Unwrap() error { return e.Err }
