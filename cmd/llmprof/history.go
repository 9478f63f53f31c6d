package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/history"
	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/report"
)

// HistoryOptions are the parsed flags and arguments of `llmprof history`.
type HistoryOptions struct {
	IO *IOStreams
	// lopts read the runs (the Factory's decoders and the analyze pipeline
	// for raw runs, as diff reads a side).
	lopts compare.LoadOptions

	Paths              []string
	Metrics            []string
	Order              string
	Since              string
	Unit               string
	Detect             history.DetectOptions
	Gates              []string
	FailOnInconclusive bool
	AllowMissing       bool
	Format             string
	Outputs            []string
	Output             string
	Strict             bool
}

// NewCmdHistory builds `llmprof history`.
func NewCmdHistory(f *Factory) *cobra.Command {
	def := history.DefaultOptions()
	opts := &HistoryOptions{IO: f.IO, Detect: def.Detect}
	opts.lopts = compare.LoadOptions{Inputs: driver.RunDecoders(f.pipeline(driver.Options{}))}
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
			opts.Paths = args
			return runHistory(cmd.Context(), opts)
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
	fl.StringVarP(&opts.Format, "format", "f", "text", "output format: "+report.HistoryFormats.Names())
	fl.StringArrayVar(&opts.Outputs, "out", nil, "also write FORMAT=PATH, e.g. html=history.html (repeatable)")
	fl.StringVarP(&opts.Output, "output", "o", "", "write the report to FILE instead of stdout")
	fl.BoolVar(&opts.Strict, "strict", false, "fail (exit 1) when an input has warnings")
	return cmd
}

func runHistory(ctx context.Context, opts *HistoryOptions) error {
	o := history.DefaultOptions()
	o.Detect, o.Unit, o.Order = opts.Detect, opts.Unit, opts.Order
	if len(opts.Metrics) > 0 {
		o.Metrics = opts.Metrics
	}
	for _, m := range o.Metrics {
		if err := compare.ValidMetric(m); err != nil {
			return &UsageError{fmt.Errorf("--metric: %w", err)}
		}
	}
	switch {
	case !(o.Detect.Alpha > 0 && o.Detect.Alpha < 0.5):
		return usageErrorf("--alpha %v: want a level in (0, 0.5)", o.Detect.Alpha)
	case o.Detect.Permutations < 19:
		return usageErrorf("--permutations %d: want at least 19 (a p-value of 0.05 needs 19)", o.Detect.Permutations)
	case o.Detect.MinSize < 1:
		return usageErrorf("--min-size %d: want at least 1", o.Detect.MinSize)
	case o.Detect.Window < 2:
		return usageErrorf("--window %d: want at least 2", o.Detect.Window)
	case !slices.Contains([]string{history.UnitAuto, history.UnitRun, history.UnitRequest}, o.Unit):
		return usageErrorf("--unit %q: want auto, run or request", o.Unit)
	}
	o.Compare.Policy.FailOnInconclusive, o.Compare.Policy.AllowMissing = opts.FailOnInconclusive, opts.AllowMissing
	for _, s := range opts.Gates {
		g, err := compare.ParseGate(s)
		if err != nil {
			return &UsageError{err}
		}
		if slices.ContainsFunc(o.Compare.Policy.Gates, func(x compare.Gate) bool { return x.Metric == g.Metric }) {
			return usageErrorf("--gate %q: %s already has a rule (one rule per metric)", s, g.Metric)
		}
		o.Compare.Policy.Gates = append(o.Compare.Policy.Gates, g)
	}
	var since time.Time
	if opts.Since != "" {
		var err error
		if since, err = parseSince(opts.Since); err != nil {
			return &UsageError{err}
		}
	}
	format, ok := report.HistoryFormats.Find(opts.Format)
	if !ok {
		return usageErrorf("unknown --format %q (want %s)", opts.Format, report.HistoryFormats.Names())
	}
	type output struct {
		format report.Format[*history.Result, report.TextOptions]
		path   string
	}
	var outputs []output
	for _, s := range opts.Outputs {
		name, path, ok := strings.Cut(s, "=")
		f, known := report.HistoryFormats.Find(name)
		if !ok || path == "" || !known {
			return usageErrorf("--out %q: want FORMAT=PATH with FORMAT %s", s, report.HistoryFormats.Names())
		}
		outputs = append(outputs, output{f, path})
	}

	series, err := history.Load(ctx, opts.Paths, opts.lopts)
	if err != nil {
		return err
	}
	if o.Order, err = series.Order(opts.Order); err != nil {
		return &UsageError{err}
	}
	if !since.IsZero() {
		series.Since(since)
	}
	res, err := history.Analyze(series, o)
	if err != nil {
		return err
	}
	if err := writeOutput(opts.IO, opts.Output, func(w io.Writer, _ bool) error { return format.Write(w, res, report.TextOptions{}) }); err != nil {
		return err
	}
	for _, out := range outputs {
		if err := writeFileAtomic(out.path, func(w *bufio.Writer) error { return out.format.Write(w, res, report.TextOptions{}) }); err != nil {
			return fmt.Errorf("--out %s: %w", out.path, err)
		}
	}
	if opts.Strict && len(series.Warnings) > 0 {
		return fmt.Errorf("history: %d input warning(s) and --strict is set", len(series.Warnings))
	}
	if res.Gate.Failed {
		var failed []string
		for _, r := range res.Gate.Rules {
			if r.Verdict == compare.Fail || (r.Verdict == compare.Inconclusive && opts.FailOnInconclusive && r.Change >= 0) {
				where := "no run has it"
				if r.Change >= 0 {
					where = fmt.Sprintf("at run %d", r.Change+1)
				}
				failed = append(failed, fmt.Sprintf("%s %s", r.Rule, where))
			}
		}
		return &RegressionError{Summary: fmt.Sprintf("gate failed: the newest run is past a change that breaks %s", strings.Join(failed, "; "))}
	}
	return nil
}

// parseSince reads --since as a date or an RFC 3339 time.
func parseSince(s string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02", time.RFC3339, "2006-01-02T15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q: want a date (2006-01-02) or an RFC 3339 time", s)
}
