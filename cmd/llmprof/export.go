package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/export"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/report"
)

// ExportOptions are the flags of `llmprof export`.
type ExportOptions struct {
	IO     *IOStreams
	Inputs []string
	// Decoders are the input decoders (the Factory's; tests substitute).
	Decoders []ingest.Decoder
	factory  *Factory

	Perfetto     string
	Reference    string
	NoSpanEvents bool
	// Parquet is the directory of the Parquet tables; RunID and Host fill
	// their partition columns (docs/fleet.md).
	Parquet string
	RunID   string
	Host    string
}

// NewCmdExport builds `llmprof export`.
func NewCmdExport(f *Factory) *cobra.Command {
	opts := &ExportOptions{IO: f.IO, factory: f}
	cmd := &cobra.Command{
		Use:   "export (--perfetto FILE | --parquet DIR) [flags] <input>...",
		Short: "Write the merged, aligned timeline for Perfetto, or the tables as Parquet",
		Long: strings.TrimSpace(`
Reads the inputs like analyze, puts every record on one clock (the alignment
table goes to stderr), and writes the merged timeline as Chrome trace JSON
that ui.perfetto.dev and chrome://tracing open: requests grouped by tenant
(with their stage spans, and an arrow to the first engine step that served
each), other OTLP spans by service, each CPU thread with its NVTX ranges and CUDA API calls, each GPU
stream with its kernels and copies, counters, and arrows from every launch
call to its kernel and from every OTLP span to the NVTX range mirroring it.
A FILE ending in .gz is gzip-compressed (Perfetto opens it as is); "-" writes
to stdout. The file is written whole, then renamed into place.

--parquet DIR writes the run as Parquet tables (zstd) for DuckDB, Spark or
Trino: requests, tokens, steps, gpu_ops, spans and alignment, each row led
by the partition columns run_id, host and date. docs/fleet.md describes the
schema and how to query thousands of runs.`),
		Example: examples(`
  # OTLP spans and an nsys export of the same run, merged on one clock
  llmprof export --perfetto run.json traces.jsonl report1.sqlite

  # compressed, for a large run; then drag run.json.gz into ui.perfetto.dev
  llmprof export --perfetto run.json.gz ./capture.llmprof

  # align onto the nsys clock instead of the OTLP host's
  llmprof export --perfetto run.json --reference nsys:report1 traces.jsonl report1.sqlite

  # Parquet tables for DuckDB: one folder per run, globbed together later
  llmprof export --parquet fleet/run-0042 --run-id run-0042 traces.jsonl report1.sqlite`),
		Args: argsNamed(1, -1, "<input>: a trace file, a directory, or - for stdin"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Inputs = args
			if opts.Decoders == nil {
				opts.Decoders = f.decoders()
			}
			return runExport(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Perfetto, "perfetto", "", "write Chrome trace JSON for Perfetto to `FILE` (.gz: compressed; -: stdout)")
	fl.StringVar(&opts.Reference, "reference", "", "clock `DOMAIN` to align onto (default: the OTLP spans' host clock)")
	fl.BoolVar(&opts.NoSpanEvents, "no-span-events", false, "leave out OTLP span events (token events can be numerous)")
	fl.StringVar(&opts.Parquet, "parquet", "", "write the tables as Parquet files into `DIR` (docs/fleet.md)")
	fl.StringVar(&opts.RunID, "run-id", "", "the run_id column of the Parquet tables (default: the first input's name)")
	fl.StringVar(&opts.Host, "host", "", "the host column of the Parquet tables (default: the reference clock's host)")
	return cmd
}

func runExport(ctx context.Context, opts *ExportOptions) error {
	if opts.Perfetto == "" && opts.Parquet == "" {
		return usageErrorf("nothing to export: give --perfetto FILE or --parquet DIR")
	}
	// The Parquet tables include tokens, steps and GPU ops: the full
	// attribution; Perfetto alone needs only the requests.
	a, err := analyzeInputs(ctx, opts.factory, opts.Inputs, pipelineOptions{Reference: opts.Reference, Decoders: opts.Decoders,
		RequestsOnly: opts.Parquet == "", Tenants: tenantOptions{Skip: true}})
	if err != nil {
		return err
	}
	t, res := a.Trace, a.Align
	if err := report.WriteAlignmentText(opts.IO.ErrOut, res, report.TextOptions{Color: report.ColorFor(opts.IO.ErrTTY)}); err != nil {
		return err
	}
	if opts.Parquet != "" {
		popts := parquetPartition(opts.Inputs, a, opts.RunID, opts.Host)
		st, err := export.WriteParquet(opts.Parquet, t, a.Attr, res, popts)
		if err != nil {
			return fmt.Errorf("--parquet %s: %w", opts.Parquet, err)
		}
		var parts []string
		for _, name := range export.ParquetTables {
			parts = append(parts, fmt.Sprintf("%s %d", name, st.Tables[name]))
		}
		fmt.Fprintf(opts.IO.ErrOut, "wrote Parquet tables to %s (rows: %s); run_id %q\n", opts.Parquet, strings.Join(parts, ", "), popts.RunID)
		if opts.Perfetto == "" {
			for _, w := range t.Warnings.List {
				fmt.Fprintln(opts.IO.ErrOut, "warning: "+w.String())
			}
			return nil
		}
	}
	var links []export.Link
	for _, m := range align.Mirrors(t) {
		links = append(links, export.Link{From: m.OTLP, To: m.NVTX})
	}
	// Requests are drawn per tenant, their stage spans under them, with an
	// arrow from each request to the first engine step that served it.
	place := map[ingest.SpanID]export.Placement{}
	firstStep := map[int]int{}
	for si, st := range a.Attr.Steps {
		for _, r := range st.Requests {
			if _, ok := firstStep[int(r)]; !ok {
				firstStep[int(r)] = si
			}
		}
	}
	for ri, r := range a.Attr.Requests {
		place[t.Spans[r.Span].ID] = export.Placement{Group: "tenant " + r.Tenant, Track: "requests " + r.Model}
		if si, ok := firstStep[ri]; ok {
			links = append(links, export.Link{From: r.Span, To: a.Attr.Steps[si].Span})
		}
	}
	popts := export.PerfettoOptions{
		Grouping: func(t *ingest.Trace, i int) (export.Placement, bool) {
			p, ok := place[t.Spans[i].ID]
			return p, ok
		},
		Links:        links,
		NoSpanEvents: opts.NoSpanEvents,
		Metadata: map[string]any{
			"inputs":    opts.Inputs,
			"alignment": res.Fits,
			"causality": res.Causality,
		},
	}
	var st export.PerfettoStats
	write := func(w io.Writer) error {
		if strings.HasSuffix(opts.Perfetto, ".gz") {
			zw := gzip.NewWriter(w)
			if st, err = export.WritePerfetto(zw, t, popts); err != nil {
				return err
			}
			return zw.Close()
		}
		st, err = export.WritePerfetto(w, t, popts)
		return err
	}
	if opts.Perfetto == "-" {
		err = write(opts.IO.Out)
	} else {
		err = writeFileAtomic(opts.Perfetto, func(w *bufio.Writer) error { return write(w) })
	}
	if err != nil {
		return fmt.Errorf("%s: %w", opts.Perfetto, err)
	}
	for _, w := range t.Warnings.List {
		fmt.Fprintln(opts.IO.ErrOut, "warning: "+w.String())
	}
	if opts.Perfetto != "-" {
		fmt.Fprintf(opts.IO.ErrOut, "wrote %d events (%d launch arrows, %d span→NVTX arrows) to %s; open it in ui.perfetto.dev or chrome://tracing\n",
			st.Events, st.LaunchFlows, st.LinkFlows, opts.Perfetto)
	}
	return nil
}

// parquetPartition fills the partition columns: the run id (default: the
// first input's base name without extensions), the host (default: the host
// of the reference clock) and the date (the first request's UTC day, when
// the reference clock is a wall clock).
func parquetPartition(inputs []string, a *pipelineResult, runID, host string) export.ParquetOptions {
	if runID == "" && len(inputs) > 0 {
		runID = filepath.Base(filepath.Clean(inputs[0]))
		if i := strings.IndexByte(runID, '.'); i > 0 {
			runID = runID[:i]
		}
	}
	var realtime bool
	for _, f := range a.Align.Fits {
		if f.Status != align.StatusReference {
			continue
		}
		realtime = f.Kind == ingest.ClockRealtime.String()
		for _, s := range a.Trace.Sources {
			if s.Clock.Name == f.Domain && host == "" {
				host = s.Clock.Host
			}
		}
	}
	o := export.ParquetOptions{RunID: runID, Host: host}
	if realtime && len(a.Attr.Requests) > 0 {
		first := a.Attr.Requests[0].Arrival
		for _, r := range a.Attr.Requests {
			first = min(first, r.Arrival)
		}
		o.Date = time.Unix(0, first).UTC()
	}
	return o
}
