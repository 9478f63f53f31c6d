package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/report"
)

// AnalyzeOptions are the flags of `llmprof analyze`.
type AnalyzeOptions struct {
	IO     *IOStreams
	Inputs []string

	Format    string
	Output    string
	Strict    bool
	TenantKey string
	SLO       string
	Tokens    string
	Requests  string
	Parquet   string // a dataset: the argument is the run_id (driver.Options.Dataset)
	Stall     time.Duration
	Top       int
	// MetricMemory bounds the metric samples and series kept, in MiB, of
	// each input and of all (0: ingest.MetricLimits' defaults).
	MetricMemory int64
}

// NewCmdAnalyze builds `llmprof analyze`.
func NewCmdAnalyze(f *Factory) *cobra.Command {
	opts := &AnalyzeOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "analyze [flags] <input>...",
		Short: "Attribute each request's latency to stages, GPU work and tenants",
		Long: strings.TrimSpace(`
Reads OTLP trace dumps (JSON, JSON Lines, protobuf, framed protobuf, gzip or
zstd; Jaeger and Tempo JSON too), Nsight Systems SQLite exports and llmprof
captures — files, directories or - for stdin, formats detected from
content — and reports
per-request latency (TTFT, TPOT, ITL, E2E, queue) overall, per tenant and per
model, and where the time went: tokenize, queue, prefill, decode, detokenize,
stream, and an explicit remainder.

Problems with the input (a truncated record, a span ending before it starts)
are warnings shown in every report; --strict turns them into an error.`),
		Example: examples(`
  # the bundled demo run
  llmprof analyze testdata/demo

  # a collector file-exporter dump, per-customer, with SLOs for goodput
  llmprof analyze --tenant-key customer.id --slo ttft=200ms,tpot=50ms traces.jsonl

  # machine-readable, for CI or a notebook; one row per token for pandas
  llmprof analyze --format json -o report.json --tokens tokens.csv traces.jsonl

  # one row per request (id, tenant, model, arrival, stages, TTFT, TPOT, E2E, tokens, KV hit)
  llmprof analyze --requests requests.parquet traces.jsonl

  # charts in one offline HTML page
  llmprof analyze --format html -o report.html testdata/demo`),
		Args: argsNamed(1, -1, "<input>: a trace file, a directory, or - for stdin"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Inputs = args
			return runAnalyze(cmd.Context(), f, opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Format, "format", "text", "output format: "+report.AnalyzeFormats.Names()+" (html: one self-contained page with charts)")
	fl.StringVarP(&opts.Output, "output", "o", "", "write the report to `FILE` instead of stdout")
	fl.BoolVar(&opts.Strict, "strict", false, "treat input warnings as errors")
	fl.StringVar(&opts.TenantKey, "tenant-key", "", "attribute naming a request's tenant (default: llm.tenant, tenant.id, enduser.id, then the calling service)")
	fl.StringVar(&opts.SLO, "slo", "", "goodput objectives, e.g. `ttft=200ms,tpot=50ms,e2e=10s`")
	fl.StringVar(&opts.Tokens, "tokens", "", "also write one row per output token to `FILE` (CSV, or JSON Lines if it ends in .jsonl)")
	fl.StringVar(&opts.Requests, "requests", "", "also write one row per request to `FILE`: CSV, JSON Lines (.jsonl) or Parquet (.parquet); docs/fleet.md lists the columns")
	fl.StringVar(&opts.Parquet, "parquet", "", "analyse the run whose run_id is the argument, from the `DIR` of llmprof export --dataset")
	fl.IntVar(&opts.Top, "top", 0, "list the `N` kernels that took the most GPU time (default 10)")
	fl.Int64Var(&opts.MetricMemory, "metric-memory", 0, "keep at most `MiB` of metric samples and series, per input and in all (default 256 per input, 512 in all); past it an input is an error")
	fl.DurationVar(&opts.Stall, "stall", 0, "a decode token slower than this is a stall (default: 3× the model's median inter-token latency)")
	return cmd
}

func runAnalyze(ctx context.Context, f *Factory, opts *AnalyzeOptions) error {
	if opts.MetricMemory < 0 {
		return usageErrorf("--metric-memory must be a positive number of MiB, not %d", opts.MetricMemory)
	}
	if opts.Top < 0 {
		return usageErrorf("--top must be a positive number of kernels, not %d", opts.Top)
	}
	format, ok := report.AnalyzeFormats.Find(opts.Format)
	if !ok {
		return usageErrorf("--format must be %s, not %q", report.AnalyzeFormats.Names(), opts.Format)
	}
	slo, err := parseSLO(opts.SLO)
	if err != nil {
		return err
	}
	metrics := ingest.MetricLimits{MaxBytes: opts.MetricMemory << 20, MaxTotalBytes: opts.MetricMemory << 20}
	a, err := driver.Run(ctx, opts.Inputs, f.pipeline(driver.Options{TenantKey: opts.TenantKey, SLO: slo, Stall: opts.Stall, TopKernels: opts.Top, Metrics: metrics, Dataset: opts.Parquet}))
	if err != nil {
		return err
	}
	res := a.Attr
	rep := a.Report(versionString())
	if opts.Strict && len(rep.Warnings) > 0 {
		for _, w := range rep.Warnings {
			fmt.Fprintln(opts.IO.ErrOut, "llmprof: "+w.String())
		}
		return fmt.Errorf("%d warning(s) and --strict is set", len(rep.Warnings))
	}
	if opts.Tokens != "" {
		jsonl := strings.HasSuffix(opts.Tokens, ".jsonl")
		if err := writeFileAtomic(opts.Tokens, func(w *bufio.Writer) error { return report.WriteTokens(w, res, jsonl) }); err != nil {
			return fmt.Errorf("--tokens %s: %w", opts.Tokens, err)
		}
	}
	if opts.Requests != "" {
		if err := writeRequests(opts.Requests, opts.Inputs, a); err != nil {
			return fmt.Errorf("--requests %s: %w", opts.Requests, err)
		}
	}
	defer writeWarningSummary(opts.IO.ErrOut, rep.Warnings)
	out := report.Analysis{Report: rep, Views: func() *report.HTMLViews { return a.HTMLViews(rep) }}
	return writeOutput(opts.IO, opts.Output, func(w io.Writer, tty bool) error {
		return format.Write(w, out, textOptions(opts.IO, w, tty))
	})
}

// pipeline completes the options of driver.Run with the command's streams:
// "-" reads standard input, and a progress meter draws on stderr when it is
// a terminal.
func (f *Factory) pipeline(opts driver.Options) driver.Options {
	if f == nil {
		return opts
	}
	opts.Stdin = f.IO.In
	if f.IO.ErrTTY {
		opts.Progress = f.IO.Raw().ErrOut
	}
	return opts
}

// writeOutput runs render on stdout or on the named file (written whole, then
// renamed into place, so a failed run never leaves half a report).
func writeOutput(ios *IOStreams, path string, render func(w io.Writer, tty bool) error) error {
	if path == "" || path == "-" {
		return render(ios.Out, ios.OutTTY)
	}
	return writeFileAtomic(path, func(w *bufio.Writer) error { return render(w, false) })
}

// parseSLO reads "ttft=200ms,tpot=50ms,e2e=10s".
func parseSLO(s string) (attribution.SLO, error) {
	var slo attribution.SLO
	if strings.TrimSpace(s) == "" {
		return slo, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return slo, usageErrorf("--slo: %q is not metric=duration (e.g. ttft=200ms)", part)
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return slo, usageErrorf("--slo: %q is not a positive duration such as 200ms", v)
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "ttft":
			slo.TTFT = d
		case "tpot":
			slo.TPOT = d
		case "e2e":
			slo.E2E = d
		default:
			return slo, usageErrorf("--slo: unknown metric %q (want ttft, tpot or e2e)", k)
		}
	}
	return slo, nil
}
