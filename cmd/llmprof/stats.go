package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/report"
)

// NewCmdStats builds the stats command.
func NewCmdStats(f *Factory) *cobra.Command {
	var format, output string
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
			fm, ok := report.StatsFormats.Find(format)
			if !ok {
				return usageErrorf("unknown --format %q (want %s)", format, report.StatsFormats.Names())
			}
			st, err := driver.Stats(cmd.Context(), args[0], args[1:], f.IO.ErrOut)
			if err != nil {
				return err
			}
			return f.IO.WriteOutput(output, func(w io.Writer, _ bool) error { return fm.Write(w, st, report.TextOptions{}) })
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: "+report.StatsFormats.Names())
	cmd.Flags().StringVarP(&output, "output", "o", "", "write the report to `FILE` instead of stdout")
	return cmd
}
