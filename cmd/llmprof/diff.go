package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/report"
)

// NewCmdDiff builds `llmprof diff`.
func NewCmdDiff(f *Factory) *cobra.Command {
	def := compare.DefaultOptions()
	opts := &driver.DiffOptions{}
	var format, output string
	var outs []string
	var all, strict bool
	cmd := &cobra.Command{
		Use:   "diff [flags] [<baseline>] <candidate>",
		Short: "Compare two runs statistically; with --gate it is the CI regression gate",
		Long: strings.TrimSpace(`
Compare a candidate run against a baseline, metric by metric (TTFT, TPOT, ITL,
E2E and queue at p50/p90/p99/mean, throughput, goodput, and each attribution
bucket's time per output token), and say whether the candidate is confidently
worse, confidently fine, or whether the data cannot tell.

Each side is a raw run (a trace file or a directory of them: OTLP, nsys,
captures — analyzed as 'llmprof analyze' would), a saved analysis (llmprof
analyze --format json), a samples file (JSON of one run or an array of runs),
or a comma-separated list of those. Several runs per side make the run the
replication unit.

One run per side decides only when both ran one workload: the same prompts in
the same order (a benchmark replayed with its seed), found from the prompt
lengths. Its requests are then paired, and both sides are resampled together.
Runs of different workloads cannot tell a change from the difference of
workloads, so their metrics are inconclusive and say what would decide
(--workload independent decides from within-run variation alone).

pNN and mean are that statistic's change, with a seeded bootstrap interval (ITL
resamples whole requests): the change is always that of the two values shown.
*.shift is the Hodges–Lehmann shift (Mann–Whitney U, Moses interval; for paired
requests the signed-rank version). Where
requests are autocorrelated (--block detect, the default) they are resampled in
blocks, intervals also cover the spread between stretches of each run, and a
metric with too few effective samples is inconclusive: one run per side cannot
separate its change from run-to-run variance. Earlier baselines
(--baseline-history DIR, or a directory as the baseline of one candidate run)
put that variance in the verdict: they are read as 'llmprof history' reads a
series (any run kind, in the order of --order), the runs are the replication
unit, and when the series has a change point only the runs after the last one
are the baseline (the report says so). A change that is not significant
prints as ~. Every metric shows its minimum detectable effect (MDE).

A gate rule is METRIC<THRESHOLD or METRIC>THRESHOLD with a relative (%) or
absolute (ms, s, us; req/s, tok/s) threshold. It fails when the confidence
interval of the change lies entirely beyond the threshold (Holm-corrected across
rules), passes when it lies entirely on the good side, and is inconclusive
otherwise or when there are too few samples (p99 needs 368 per side). A rule on
a metric a side lacks fails unless --allow-missing; the same input on both sides
is an error; --strict fails on input warnings.

Exit status: 0 no rule failed, 1 unusable input, 2 usage error, 3 a rule failed
(or was inconclusive under --fail-on-inconclusive).`),
		Example: examples(`
  # Is the candidate slower? A report, no gate:
  llmprof diff baseline.json candidate.json

  # The CI gate: fail on a confident p99 TTFT regression beyond 10%,
  # a median TPOT regression beyond 2 ms, or a throughput drop beyond 5%:
  llmprof diff baseline.json candidate.json \
      --gate 'ttft.p99<+10%' --gate 'tpot.p50<+2ms' --gate 'throughput>-5%'

  # Five runs per side (run-level replication), rules from a file,
  # Markdown for the job summary and JUnit for the test reporter:
  llmprof diff base1.json,base2.json,base3.json,base4.json,base5.json \
      cand1.json,cand2.json,cand3.json,cand4.json,cand5.json \
      --gate-file gate.yaml --out markdown=summary.md --out junit=diff.xml

  # Tonight's vllm bench result against the nightly results before it
  # (their run-to-run spread; only the runs since the last step):
  llmprof diff --baseline-history nightly/ tonight.json --gate 'itl.p50<+10%'

  # One long run with autocorrelated requests:
  llmprof diff --block auto --gate 'e2e.p90<+5%' baseline.json candidate.json`),
		Args: argsNamed(1, 2, "<baseline> and <candidate>: two saved analyses or two runs' inputs"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if len(args) == 1 && len(opts.History) == 0 {
				return usageErrorf("%s: missing <baseline> and <candidate>: two saved analyses or two runs' inputs (or --baseline-history DIR and <candidate>); see '%s --help'", cmd.Name(), cmd.CommandPath())
			}
			opts.Baseline = nil
			if len(args) == 2 {
				if opts.Baseline, err = splitSide(args[0]); err != nil {
					return err
				}
			}
			if opts.Candidate, err = splitSide(args[len(args)-1]); err != nil {
				return err
			}
			fm, ok := report.DiffFormats.Find(format)
			if !ok {
				return usageErrorf("unknown --format %q (want %s)", format, report.DiffFormats.Names())
			}
			extra, err := report.DiffFormats.ParseOutputs(outs)
			if err != nil {
				return &UsageError{err}
			}
			opts.Changed, opts.Pipeline = cmd.Flags().Changed, f.pipeline(driver.Options{})
			res, err := driver.Diff(cmd.Context(), *opts)
			if err != nil {
				return err
			}
			if err := f.IO.WriteOutput(output, func(w io.Writer, tty bool) error {
				return fm.Write(w, res, report.DiffOptions{All: all, Color: report.ColorFor(tty) && format == "text", Width: f.IO.Width(w, tty)})
			}); err != nil {
				return err
			}
			if err := writeOutputs(extra, res, report.DiffOptions{All: all}); err != nil {
				return err
			}
			if strict && len(res.InputWarnings) > 0 {
				return fmt.Errorf("diff: %d input warning(s) and --strict is set", len(res.InputWarnings))
			}
			if res.Gate.Failed {
				return &RegressionError{Summary: driver.GateSummary(res)}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.Gates, "gate", nil, "gate rule such as 'ttft.p99<+10%', 'tpot.p50<+2ms' or 'throughput>-5%' (repeatable)")
	fl.StringVar(&opts.GateFile, "gate-file", "", "YAML file with gate rules (gates: [...], fail_on_inconclusive, alpha, block)")
	fl.BoolVar(&opts.FailOnInconclusive, "fail-on-inconclusive", false, "an inconclusive rule fails the gate (exit 3); the same as --inconclusive fail")
	fl.StringVar(&opts.Inconclusive, "inconclusive", "pass", "CI policy for an inconclusive rule: pass (exit 0, reported loudly) or fail (exit 3)")
	fl.StringVarP(&format, "format", "f", "text", "output format: "+report.DiffFormats.Names())
	fl.StringArrayVar(&outs, "out", nil, "also write FORMAT=PATH, e.g. markdown=summary.md, junit=diff.xml or html=diff.html (repeatable)")
	fl.BoolVar(&all, "all", false, "list every bucket metric, not only those that changed or are gated")
	fl.Float64Var(&opts.Alpha, "alpha", def.Alpha, "significance level; intervals are 1−alpha")
	fl.Uint64Var(&opts.Seed, "seed", def.Seed, "bootstrap seed (same inputs and seed, same report)")
	fl.IntVar(&opts.Reps, "bootstrap", def.Reps, "bootstrap replicates")
	fl.StringVar(&opts.Block, "block", "detect", "block bootstrap over consecutive requests: detect (where autocorrelated), off, auto (n^1/3) or a block length")
	fl.BoolVar(&opts.PoolRuns, "pool-runs", false, "treat several runs per side as one long run instead of replicates")
	fl.StringVar(&opts.Workload, "workload", def.Workload, "one run per side: auto (pair the requests of a replayed workload, found from the prompt lengths; leave different workloads undecided), paired, or independent (decide from within-run variation alone)")
	fl.BoolVar(&opts.AllowModelChange, "allow-model-change", false, "compare runs that served different models")
	fl.BoolVar(&opts.AllowMissing, "allow-missing", false, "a gated metric without data on a side is inconclusive instead of failing the gate")
	fl.BoolVar(&strict, "strict", false, "fail (exit 1) when an input has warnings (truncation, an interrupted capture, malformed records)")
	fl.StringVarP(&output, "output", "o", "", "write the report to FILE (written whole, then renamed into place) instead of stdout")
	fl.StringArrayVar(&opts.History, "baseline-history", nil, "earlier baseline runs, read as 'llmprof history' reads them (directories or files of any run kind; repeatable): they estimate run-to-run variance, from the last change point on")
	fl.StringVar(&opts.Order, "order", compare.OrderAuto, "order of the baseline history's runs: auto (time when every run carries one, else name), time, name, mtime or given")
	return cmd
}

// splitSide splits a comma-separated list of inputs.
func splitSide(arg string) ([]string, error) {
	parts := strings.Split(arg, ",")
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			return nil, usageErrorf("empty input in %q", arg)
		}
	}
	return parts, nil
}
