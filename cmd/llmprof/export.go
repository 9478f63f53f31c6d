package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/export"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/report"
)

// ExportOptions are the flags of `llmprof export`.
type ExportOptions struct {
	IO     *IOStreams
	Inputs []string
	// Decoders are the input decoders (nil: driver.Decoders(); tests
	// substitute).
	Decoders []ingest.Decoder
	factory  *Factory

	Perfetto     string
	Reference    string
	NoSpanEvents bool
	// Tables are --parquet and --dataset (docs/fleet.md).
	Tables driver.TableExport
}

// NewCmdExport builds `llmprof export`.
func NewCmdExport(f *Factory) *cobra.Command {
	opts := &ExportOptions{IO: f.IO, factory: f}
	cmd := &cobra.Command{
		Use:   "export (--perfetto FILE | --parquet DIR | --dataset DIR) [flags] <input>...",
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
Trino: requests, tokens, steps, gpu_ops, spans and alignment, each row led by
the partition columns run_id, host and date. --dataset DIR adds the run (with
--each, every input as a run) to a Hive-partitioned dataset of many, with its
input files, for analyze --parquet DIR RUN_ID; a run_id already there is an
error. docs/fleet.md: the schema and the queries DuckDB, Spark and Trino run.`),
		Example: examples(`
  # OTLP spans and an nsys export of the same run, merged on one clock
  llmprof export --perfetto run.json traces.jsonl report1.sqlite

  # compressed, for a large run; then drag run.json.gz into ui.perfetto.dev
  llmprof export --perfetto run.json.gz ./capture.llmprof

  # align onto the nsys clock instead of the OTLP host's
  llmprof export --perfetto run.json --reference nsys:report1 traces.jsonl report1.sqlite

  # add a run to a dataset for DuckDB, Spark or Trino
  llmprof export --dataset fleet --run-id run-0042 --host gpu-node-7 traces.jsonl report1.sqlite`),
		Args: argsNamed(1, -1, "<input>: a trace file, a directory, or - for stdin"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Inputs = args
			return runExport(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&opts.Perfetto, "perfetto", "", "write Chrome trace JSON for Perfetto to `FILE` (.gz: compressed; -: stdout)")
	fl.StringVar(&opts.Reference, "reference", "", "clock `DOMAIN` to align onto (default: the OTLP spans' host clock)")
	fl.BoolVar(&opts.NoSpanEvents, "no-span-events", false, "leave out OTLP span events (token events can be numerous)")
	tf := &opts.Tables
	fl.StringVar(&tf.Parquet, "parquet", "", "write the tables as Parquet files into `DIR` (docs/fleet.md)")
	fl.StringVar(&tf.Dataset, "dataset", "", "add the run to the partitioned Parquet dataset in `DIR` (docs/fleet.md)")
	fl.StringVar(&tf.RunID, "run-id", "", "the run_id column of the Parquet tables (default: the first input's name)")
	fl.StringVar(&tf.Host, "host", "", "the host column of the Parquet tables (default: the reference clock's host)")
	fl.StringVar(&tf.Date, "date", "", "the dataset partition's `YYYY-MM-DD` (default: the run's start, UTC)")
	fl.BoolVar(&tf.Each, "each", false, "with --dataset: every input is a run of its own, named after it")
	fl.BoolVar(&tf.NoInputs, "no-inputs", false, "leave the input files out of the --dataset (analyze --parquet cannot read the run back)")
	return cmd
}

func runExport(ctx context.Context, opts *ExportOptions) error {
	if o := *opts; o.Tables.Each {
		o.Tables.Each = false
		return opts.Tables.EachRun(opts.Inputs, opts.Perfetto, func(in []string) error { o.Inputs = in; return runExport(ctx, &o) })
	}
	tables := opts.Tables.Parquet != "" || opts.Tables.Dataset != ""
	if opts.Perfetto == "" && !tables {
		return usageErrorf("nothing to export: give --perfetto FILE, --parquet DIR or --dataset DIR")
	}
	if err := opts.Tables.Check(opts.Inputs); err != nil {
		return err
	}
	// The tables need the full attribution; Perfetto alone, the requests.
	a, err := driver.Run(ctx, opts.Inputs, opts.factory.pipeline(driver.Options{Reference: opts.Reference, Decoders: opts.Decoders,
		RequestsOnly: !tables, Tenants: driver.TenantOptions{Skip: true}}))
	if err != nil {
		return err
	}
	t, res := a.Trace, a.Align
	if err := report.WriteAlignmentText(opts.IO.ErrOut, res, report.TextOptions{Color: report.ColorFor(opts.IO.ErrTTY)}); err != nil {
		return err
	}
	if tables {
		if err := opts.Tables.Write(opts.IO.ErrOut, opts.Inputs, a); err != nil {
			return err
		}
	}
	var st export.PerfettoStats
	write := func(w io.Writer) error {
		popts := driver.PerfettoOptions(opts.Inputs, a)
		popts.NoSpanEvents = opts.NoSpanEvents
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
	switch opts.Perfetto {
	case "":
	case "-":
		err = write(opts.IO.Out)
	default:
		err = writeFileAtomic(opts.Perfetto, func(w *bufio.Writer) error { return write(w) })
	}
	if err != nil {
		return fmt.Errorf("%s: %w", opts.Perfetto, err)
	}
	for _, w := range t.Warnings.List {
		fmt.Fprintln(opts.IO.ErrOut, "warning: "+w.String())
	}
	if opts.Perfetto != "" && opts.Perfetto != "-" {
		fmt.Fprintf(opts.IO.ErrOut, "wrote %d events (%d launch arrows, %d span→NVTX arrows) to %s; open it in ui.perfetto.dev or chrome://tracing\n",
			st.Events, st.LaunchFlows, st.LinkFlows, opts.Perfetto)
	}
	return nil
}
