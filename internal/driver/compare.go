package driver

import (
	"context"
	"fmt"

	"github.com/llmprof/llmprof/compare"
)

// Load reads one side of `diff` with the run decoders (RunDecoders): saved
// analyses, samples files and bench results as compare reads them, raw runs
// through CompareRun with opts.
func Load(ctx context.Context, paths []string, opts Options) (*compare.Input, error) {
	return compare.Load(ctx, paths, compare.LoadOptions{Inputs: RunDecoders(opts)})
}

// CompareRun takes one raw input (a trace file or directory) through the
// analyze pipeline and returns its run and the input's warnings.
func CompareRun(ctx context.Context, path string, opts Options) (compare.Run, []string, error) {
	// The tenant regression runs too: its per-request attributed impact is
	// what diff's tenant.* metrics compare (compare.TenantSeries).
	a, err := Run(ctx, []string{path}, opts)
	if err != nil {
		return compare.Run{}, nil, err
	}
	// Kernels are compared by identity whether or not the trace has
	// requests (a PyTorch profiler trace, an nsys export of a benchmark).
	kernels := compare.KernelsFromTrace(a.Trace, a.Attr)
	if len(a.Attr.Requests) == 0 && len(kernels.Units) == 0 {
		return compare.Run{}, nil, fmt.Errorf("%s: no requests found (no span in a request convention llmprof knows) and no GPU kernels", path)
	}
	run := compare.FromAttribution(a.Attr)
	run.Tenants = compare.TenantSeries(a.Tenants, len(a.Attr.Requests))
	run.Kernels = kernels
	run.RunID = path
	var warns []string
	for _, w := range a.Trace.Warnings.List {
		warns = append(warns, w.String())
	}
	for _, w := range a.Attr.Warnings {
		warns = append(warns, w.String())
	}
	return run, warns, nil
}
