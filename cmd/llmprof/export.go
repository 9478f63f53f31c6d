package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

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
}

// NewCmdExport builds `llmprof export`.
func NewCmdExport(f *Factory) *cobra.Command {
	opts := &ExportOptions{IO: f.IO, factory: f}
	cmd := &cobra.Command{
		Use:   "export --perfetto FILE [flags] <input>...",
		Short: "Write the merged, aligned timeline for Perfetto",
		Long: strings.TrimSpace(`
Reads the inputs like analyze, puts every record on one clock (the alignment
table goes to stderr), and writes the merged timeline as Chrome trace JSON
that ui.perfetto.dev and chrome://tracing open: requests grouped by tenant
(with their stage spans, and an arrow to the first engine step that served
each), other OTLP spans by service, each CPU thread with its NVTX ranges and CUDA API calls, each GPU
stream with its kernels and copies, counters, and arrows from every launch
call to its kernel and from every OTLP span to the NVTX range mirroring it.
A FILE ending in .gz is gzip-compressed (Perfetto opens it as is); "-" writes
to stdout. The file is written whole, then renamed into place.`),
		Example: strings.TrimSpace(`
  # OTLP spans and an nsys export of the same run, merged on one clock
  llmprof export --perfetto run.json traces.jsonl report1.sqlite

  # compressed, for a large run; then drag run.json.gz into ui.perfetto.dev
  llmprof export --perfetto run.json.gz ./capture.llmprof

  # align onto the nsys clock instead of the OTLP host's
  llmprof export --perfetto run.json --reference nsys:report1 traces.jsonl report1.sqlite`),
		Args: cobra.MinimumNArgs(1),
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
	return cmd
}

func runExport(ctx context.Context, opts *ExportOptions) error {
	if opts.Perfetto == "" {
		return usageErrorf("nothing to export: give --perfetto FILE (Parquet tables will come later)")
	}
	a, err := analyzeInputs(ctx, opts.factory, opts.Inputs, pipelineOptions{Reference: opts.Reference, Decoders: opts.Decoders, RequestsOnly: true, Tenants: tenantOptions{Skip: true}})
	if err != nil {
		return err
	}
	t, res := a.Trace, a.Align
	if err := report.WriteAlignmentText(opts.IO.ErrOut, res, report.TextOptions{Color: report.ColorFor(opts.IO.ErrTTY)}); err != nil {
		return err
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
