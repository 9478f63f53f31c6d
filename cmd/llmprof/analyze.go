package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/internal/iostreams"
	"github.com/llmprof/llmprof/report"
)

// NewCmdAnalyze builds `llmprof analyze`.
func NewCmdAnalyze(f *Factory) *cobra.Command {
	opts := &driver.AnalyzeFlags{}
	var format, output, tokens, requests string
	var strict bool
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
			fm, ok := report.AnalyzeFormats.Find(format)
			if !ok {
				return usageErrorf("--format must be %s, not %q", report.AnalyzeFormats.Names(), format)
			}
			po, err := opts.Options()
			if err != nil {
				return err
			}
			a, err := driver.Run(cmd.Context(), args, f.pipeline(po))
			if err != nil {
				return err
			}
			rep := a.Report(versionString())
			if strict && len(rep.Warnings) > 0 {
				for _, w := range rep.Warnings {
					fmt.Fprintln(f.IO.ErrOut, "llmprof: "+w.String())
				}
				return fmt.Errorf("%d warning(s) and --strict is set", len(rep.Warnings))
			}
			if tokens != "" {
				if err := driver.WriteTokens(tokens, a); err != nil {
					return fmt.Errorf("--tokens %s: %w", tokens, err)
				}
			}
			if requests != "" {
				if err := driver.WriteRequests(requests, args, a); err != nil {
					return fmt.Errorf("--requests %s: %w", requests, err)
				}
			}
			defer report.WriteWarningSummary(f.IO.ErrOut, rep.Warnings)
			out := report.Analysis{Report: rep, Views: func() *report.HTMLViews { return a.HTMLViews(rep) }}
			return f.IO.WriteOutput(output, func(w io.Writer, tty bool) error {
				return fm.Write(w, out, textOptions(f.IO, w, tty))
			})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&format, "format", "text", "output format: "+report.AnalyzeFormats.Names()+" (html: one self-contained page with charts)")
	fl.StringVarP(&output, "output", "o", "", "write the report to `FILE` instead of stdout")
	fl.BoolVar(&strict, "strict", false, "treat input warnings as errors")
	fl.StringVar(&opts.TenantKey, "tenant-key", "", "attribute naming a request's tenant (default: llm.tenant, tenant.id, enduser.id, then the calling service)")
	fl.StringVar(&opts.SLO, "slo", "", "goodput objectives, e.g. `ttft=200ms,tpot=50ms,e2e=10s`")
	fl.StringVar(&tokens, "tokens", "", "also write one row per output token to `FILE` (CSV, or JSON Lines if it ends in .jsonl)")
	fl.StringVar(&requests, "requests", "", "also write one row per request to `FILE`: CSV, JSON Lines (.jsonl) or Parquet (.parquet); docs/fleet.md lists the columns")
	fl.StringVar(&opts.Dataset, "parquet", "", "analyse the run whose run_id is the argument, from the `DIR` of llmprof export --dataset")
	fl.IntVar(&opts.Top, "top", 0, "list the `N` kernels that took the most GPU time (default 10)")
	fl.Int64Var(&opts.MetricMemory, "metric-memory", 0, "keep at most `MiB` of metric samples and series, per input and in all (default 256 per input, 512 in all); past it an input is an error")
	fl.DurationVar(&opts.Stall, "stall", 0, "a decode token slower than this is a stall (default: 3× the model's median inter-token latency)")
	return cmd
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

// textOptions is how text goes to w: coloured on a terminal, and fitted to
// the terminal's width when w is standard output (a file keeps its lines).
func textOptions(ios *IOStreams, w io.Writer, tty bool) report.TextOptions {
	return report.TextOptions{Color: report.ColorFor(tty), Width: ios.Width(w, tty)}
}

// writeOutputs writes each --out FORMAT=PATH output of r (atomically).
func writeOutputs[R, O any](outs []report.Output[R, O], r R, o O) error {
	for _, out := range outs {
		if err := iostreams.WriteFile(out.Path, func(w *bufio.Writer) error { return out.Format.Write(w, r, o) }); err != nil {
			return fmt.Errorf("--out %s: %w", out.Path, err)
		}
	}
	return nil
}
