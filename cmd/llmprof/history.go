package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/history"
	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/report"
)

// NewCmdHistory builds `llmprof history`.
func NewCmdHistory(f *Factory) *cobra.Command {
	def := history.DefaultOptions()
	opts := &driver.HistoryOptions{Detect: def.Detect}
	var format, output string
	var outs []string
	var strict bool
	cmd := &cobra.Command{
		Use:   "history [flags] DIR|FILE...",
		Short: "Find the change points of a series of nightly runs, each explained",
		Long: strings.TrimSpace(`
Read a series of runs — saved analyses (llmprof analyze --format json), raw
runs, 'vllm bench serve' results; a directory counts one run per entry — put
them in order (by the date or timestamp each carries, else by name; --order),
and for each metric find the change points with e-divisive means and a
permutation test, the procedure of Apache Otava (docs/history.md).

Each change is reported with its run, time and commit, the levels before and
after, its p-value, and its size with an interval from comparing the runs
before it with the runs after it as 'llmprof diff' compares two sides of
several runs (the run is the replication unit), with the attribution buckets
that moved. With fewer than 15 runs the runs' requests are the points of the
test (a change can still only fall between runs, and must also pass a t-test
on the run values); rates need 8 runs.

A gate rule (--gate 'tpot.p50<+5%') fails when the newest run sits after a
confirmed change point of that metric whose comparison breaks the rule.

Exit status: 0 no rule failed, 1 unusable input, 2 usage error, 3 a rule
failed.`),
		Example: strings.TrimSpace(`
  # Change points of the default metrics over a folder of nightly results:
  llmprof history nightly/

  # Only ITL and TPOT, Markdown for the job summary, and a page of charts:
  llmprof history nightly/*.json --metric itl.p50 --metric tpot.p50 \
      --format markdown --out html=history.html

  # Leave the nightly job on: fail when the newest run is past a
  # confirmed TPOT regression beyond 5%:
  llmprof history nightly/ --gate 'tpot.p50<+5%'`),
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fm, ok := report.HistoryFormats.Find(format)
			if !ok {
				return usageErrorf("unknown --format %q (want %s)", format, report.HistoryFormats.Names())
			}
			extra, err := report.HistoryFormats.ParseOutputs(outs)
			if err != nil {
				return &UsageError{err}
			}
			opts.Paths, opts.Pipeline = args, f.pipeline(driver.Options{})
			res, warnings, err := driver.History(cmd.Context(), *opts)
			if err != nil {
				return err
			}
			if err := f.IO.WriteOutput(output, func(w io.Writer, _ bool) error { return fm.Write(w, res, report.TextOptions{}) }); err != nil {
				return err
			}
			if err := writeOutputs(extra, res, report.TextOptions{}); err != nil {
				return err
			}
			if strict && len(warnings) > 0 {
				return fmt.Errorf("history: %d input warning(s) and --strict is set", len(warnings))
			}
			if res.Gate.Failed {
				return &RegressionError{Summary: driver.HistoryGateSummary(res)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.Metrics, "metric", nil, "metric to follow (repeatable; default "+strings.Join(history.DefaultMetrics, ", ")+")")
	fl.StringVar(&opts.Order, "order", history.OrderAuto, "run order: auto (time when every run carries one, else name), time, name, mtime or given")
	fl.StringVar(&opts.Since, "since", "", "only runs taken on or after this date (2006-01-02 or RFC 3339)")
	fl.StringVar(&opts.Unit, "unit", history.UnitAuto, "points of the test: auto (requests below 15 runs, else runs), run or request")
	fl.Float64Var(&opts.Detect.Alpha, "alpha", def.Detect.Alpha, "significance level of a change point's permutation test")
	fl.IntVar(&opts.Detect.Permutations, "permutations", def.Detect.Permutations, "permutations per test")
	fl.IntVar(&opts.Detect.MinSize, "min-size", def.Detect.MinSize, "fewest runs on either side of a change")
	fl.IntVar(&opts.Detect.Window, "window", def.Detect.Window, "runs searched at once (Otava's sliding window, overlapping by half)")
	fl.Uint64Var(&opts.Detect.Seed, "seed", def.Detect.Seed, "permutation seed (same inputs and seed, same report)")
	fl.StringArrayVar(&opts.Gates, "gate", nil, "gate rule on the newest run such as 'tpot.p50<+5%' (repeatable)")
	fl.BoolVar(&opts.FailOnInconclusive, "fail-on-inconclusive", false, "a rule whose metric changed but whose comparison is inconclusive fails the gate")
	fl.BoolVar(&opts.AllowMissing, "allow-missing", false, "a gated metric no run has is inconclusive instead of failing")
	fl.StringVarP(&format, "format", "f", "text", "output format: "+report.HistoryFormats.Names())
	fl.StringArrayVar(&outs, "out", nil, "also write FORMAT=PATH, e.g. html=history.html (repeatable)")
	fl.StringVarP(&output, "output", "o", "", "write the report to FILE instead of stdout")
	fl.BoolVar(&strict, "strict", false, "fail (exit 1) when an input has warnings")
	return cmd
}
