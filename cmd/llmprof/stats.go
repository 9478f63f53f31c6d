package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/report"
)

// StatsOptions are the parsed arguments of llmprof stats.
type StatsOptions struct {
	IO *IOStreams
	// Report is the nsys stats report name, optionally with ":base" or
	// ":mangled" (e.g. "cuda_gpu_kern_sum:base").
	Report string
	// Files are the Nsight Systems SQLite exports (or PyTorch profiler
	// traces, for the *_sum reports).
	Files []string
	// Format is text (default), csv or json.
	Format string
	// Output is the file to write instead of stdout (written atomically).
	Output string
}

// NewCmdStats builds the stats command.
func NewCmdStats(f *Factory) *cobra.Command {
	opts := &StatsOptions{IO: f.IO}
	var list strings.Builder
	for _, r := range nsys.Reports() {
		fmt.Fprintf(&list, "  %-22s %s\n", r.Name, r.Summary)
	}
	cmd := &cobra.Command{
		Use:   "stats REPORT FILE...",
		Short: "Print an nsys stats report of Nsight Systems SQLite exports, without nsys",
		Long: strings.TrimSpace(`
Print one of the reports 'nsys stats' prints, computed by llmprof from an
Nsight Systems SQLite export (nsys export --type sqlite, nsys 2023.1 to
2026.1), with the same definitions: kernel, API, memory and NVTX summaries
and the NVTX→GPU projection. No nsys installation is needed. The summary
reports (*_sum) also read PyTorch profiler (Kineto) traces, whose
record_function annotations stand for NVTX ranges.

Reports (names as nsys spells them; kernel reports take ":base" for short
kernel names and ":mangled" for mangled ones):

` + list.String() + `
Times are in nanoseconds; trace reports print them relative to the session
start, as nsys does. Averages, medians and standard deviations (the sample
standard deviation) are rounded to 0.1, percentages of the report's total
to 0.1.`),
		Example: strings.Trim(`
  llmprof stats cuda_gpu_kern_sum report1.sqlite
  llmprof stats cuda_gpu_kern_sum:base report1.sqlite report2.sqlite
  llmprof stats nvtx_sum --format csv -o nvtx.csv report1.sqlite
  llmprof stats nvtx_gpu_proj_trace --format json report1.sqlite | jq '.files[0].rows[0]'`, "\n"),
		Args: argsNamed(2, -1, "REPORT and FILE: a report name and at least one nsys SQLite export"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Report, opts.Files = args[0], args[1:]
			return runStats(cmd, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "text", "output format: "+report.StatsFormats.Names())
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write the report to `FILE` instead of stdout")
	return cmd
}

func runStats(cmd *cobra.Command, opts *StatsOptions) error {
	nsysReport, ropts, err := nsys.FindReport(opts.Report)
	if err != nil {
		return usageErrorf("%v", err)
	}
	format, ok := report.StatsFormats.Find(opts.Format)
	if !ok {
		return usageErrorf("unknown --format %q (want %s)", opts.Format, report.StatsFormats.Names())
	}
	dec := nsysReport.Decoder(ropts)
	var results []report.StatsFile
	for _, path := range opts.Files {
		t, err := decodeStatsInput(cmd, nsysReport, dec, path)
		if err != nil {
			return err
		}
		for _, w := range t.Warnings.List {
			fmt.Fprintln(opts.IO.ErrOut, "warning: "+w.String())
		}
		results = append(results, report.StatsFile{Path: path, Table: nsysReport.Run(t, ropts), Warnings: t.Warnings.List})
	}
	return writeOutput(opts.IO, opts.Output, func(w io.Writer, _ bool) error {
		return format.Write(w, report.Stats{Report: nsysReport, Files: results}, report.TextOptions{})
	})
}

// decodeStatsInput decodes one input of stats: an Nsight Systems export, or
// a PyTorch profiler (Kineto) trace for the summary reports, which need
// only kernels, copies, API calls and annotations (the trace reports print
// times relative to an nsys session start that a Kineto trace does not
// have).
func decodeStatsInput(cmd *cobra.Command, report *nsys.Report, dec nsys.Decoder, path string) (*ingest.Trace, error) {
	in, err := ingest.NewInput(path)
	if err != nil || !(kineto.Decoder{}).Sniff(in) {
		return dec.DecodeFile(cmd.Context(), path)
	}
	if !strings.HasSuffix(report.Name, "_sum") {
		return nil, usageErrorf("%s: report %s needs an Nsight Systems export; a PyTorch profiler trace gives the *_sum reports", path, report.Name)
	}
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: path}}
	if err := (kineto.Decoder{SkipPython: true}).Decode(cmd.Context(), in, t); err != nil {
		return nil, &ingest.InputError{Path: path, Err: err}
	}
	t.Validate()
	return t, nil
}
