package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/report"
)

// DiffOptions are the parsed flags and arguments of `llmprof diff`.
type DiffOptions struct {
	IO *IOStreams
	// load reads the inputs of one side (driver.Load; tests replace it).
	load func(ctx context.Context, paths []string) (*compare.Input, error)
	// lopts read a baseline history (compare.LoadSeries, with the
	// decoders and the analyze pipeline load uses).
	lopts compare.LoadOptions

	// Baseline and Candidate are the two sides, each one or more paths.
	Baseline, Candidate []string

	Gates              []string // --gate rules, as given
	GateFile           string
	FailOnInconclusive bool
	Inconclusive       string
	Format             string   // text, markdown, json, junit, html
	Outputs            []string // extra FORMAT=PATH outputs
	All                bool

	Alpha            float64
	Seed             uint64
	Reps             int
	Block            string
	PoolRuns         bool
	Workload         string
	AllowModelChange bool
	AllowMissing     bool
	Strict           bool
	Output           string   // -o: the report (in --format) to this file, written atomically
	History          []string // --baseline-history: earlier baseline runs
	Order            string   // --order of the baseline history's runs

	// changed reports whether a flag was given explicitly, so a gate file's
	// settings apply only where the command line is silent.
	changed func(name string) bool
}

// NewCmdDiff builds `llmprof diff`.
func NewCmdDiff(f *Factory) *cobra.Command {
	def := compare.DefaultOptions()
	opts := &DiffOptions{IO: f.IO}
	opts.load = func(ctx context.Context, paths []string) (*compare.Input, error) {
		return driver.Load(ctx, paths, f.pipeline(driver.Options{}))
	}
	opts.lopts = compare.LoadOptions{Inputs: driver.RunDecoders(f.pipeline(driver.Options{}))}
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
			opts.changed = func(name string) bool { return cmd.Flags().Changed(name) }
			return runDiff(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.Gates, "gate", nil, "gate rule such as 'ttft.p99<+10%', 'tpot.p50<+2ms' or 'throughput>-5%' (repeatable)")
	fl.StringVar(&opts.GateFile, "gate-file", "", "YAML file with gate rules (gates: [...], fail_on_inconclusive, alpha, block)")
	fl.BoolVar(&opts.FailOnInconclusive, "fail-on-inconclusive", false, "an inconclusive rule fails the gate (exit 3); the same as --inconclusive fail")
	fl.StringVar(&opts.Inconclusive, "inconclusive", "pass", "CI policy for an inconclusive rule: pass (exit 0, reported loudly) or fail (exit 3)")
	fl.StringVarP(&opts.Format, "format", "f", "text", "output format: "+report.DiffFormats.Names())
	fl.StringArrayVar(&opts.Outputs, "out", nil, "also write FORMAT=PATH, e.g. markdown=summary.md, junit=diff.xml or html=diff.html (repeatable)")
	fl.BoolVar(&opts.All, "all", false, "list every bucket metric, not only those that changed or are gated")
	fl.Float64Var(&opts.Alpha, "alpha", def.Alpha, "significance level; intervals are 1−alpha")
	fl.Uint64Var(&opts.Seed, "seed", def.Seed, "bootstrap seed (same inputs and seed, same report)")
	fl.IntVar(&opts.Reps, "bootstrap", def.Reps, "bootstrap replicates")
	fl.StringVar(&opts.Block, "block", "detect", "block bootstrap over consecutive requests: detect (where autocorrelated), off, auto (n^1/3) or a block length")
	fl.BoolVar(&opts.PoolRuns, "pool-runs", false, "treat several runs per side as one long run instead of replicates")
	fl.StringVar(&opts.Workload, "workload", def.Workload, "one run per side: auto (pair the requests of a replayed workload, found from the prompt lengths; leave different workloads undecided), paired, or independent (decide from within-run variation alone)")
	fl.BoolVar(&opts.AllowModelChange, "allow-model-change", false, "compare runs that served different models")
	fl.BoolVar(&opts.AllowMissing, "allow-missing", false, "a gated metric without data on a side is inconclusive instead of failing the gate")
	fl.BoolVar(&opts.Strict, "strict", false, "fail (exit 1) when an input has warnings (truncation, an interrupted capture, malformed records)")
	fl.StringVarP(&opts.Output, "output", "o", "", "write the report to FILE (written whole, then renamed into place) instead of stdout")
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

func runDiff(ctx context.Context, opts *DiffOptions) error {
	copts, err := diffCompareOptions(opts)
	if err != nil {
		return err
	}
	format, ok := report.DiffFormats.Find(opts.Format)
	if !ok {
		return usageErrorf("unknown --format %q (want %s)", opts.Format, report.DiffFormats.Names())
	}
	render := format.Write
	type output struct {
		render func(io.Writer, *compare.Result, report.DiffOptions) error
		path   string
	}
	var outputs []output
	for _, o := range opts.Outputs {
		name, path, ok := strings.Cut(o, "=")
		f, known := report.DiffFormats.Find(name)
		if !ok || path == "" || !known {
			return usageErrorf("--out %q: want FORMAT=PATH with FORMAT %s", o, report.DiffFormats.Names())
		}
		outputs = append(outputs, output{f.Write, path})
	}

	cand, err := opts.load(ctx, opts.Candidate)
	if err != nil {
		return err
	}
	base, err := loadBaseline(ctx, opts, copts, cand)
	if err != nil {
		return err
	}
	if same, ok := compare.SameInput(base.Input, cand); ok {
		return fmt.Errorf("baseline and candidate are the same input (%s): comparing a run with itself proves nothing", same)
	}
	res, err := compare.Compare(
		compare.Side{Label: base.label, Runs: base.Runs, InputWarnings: base.Warnings, History: base.history},
		compare.Side{Label: strings.Join(opts.Candidate, ","), Runs: cand.Runs, InputWarnings: cand.Warnings},
		copts)
	if err != nil {
		return err
	}
	// What the baseline history is (and which of its runs were left out),
	// and what a side cannot explain (a benchmark result has no
	// attribution), belong beside the figures, where every reader sees it.
	res.Warnings = append(res.Warnings, append(base.Notes, cand.Notes...)...)
	res.History = base.summary

	if err := writeOutput(opts.IO, opts.Output, func(w io.Writer, tty bool) error {
		width := 0
		if w == opts.IO.Out {
			width = textWidth(opts.IO, tty)
		}
		return render(w, res, report.DiffOptions{All: opts.All, Color: report.ColorFor(tty) && opts.Format == "text", Width: width})
	}); err != nil {
		return err
	}
	for _, o := range outputs {
		if err := writeFileAtomic(o.path, func(w *bufio.Writer) error { return o.render(w, res, report.DiffOptions{All: opts.All}) }); err != nil {
			return fmt.Errorf("--out %s: %w", o.path, err)
		}
	}
	if opts.Strict && len(res.InputWarnings) > 0 {
		return fmt.Errorf("diff: %d input warning(s) and --strict is set", len(res.InputWarnings))
	}
	if res.Gate.Failed {
		return &RegressionError{Summary: gateSummary(res)}
	}
	return nil
}

// diffCompareOptions turns flags and the gate file into compare.Options.
func diffCompareOptions(opts *DiffOptions) (compare.Options, error) {
	changed := opts.changed
	if changed == nil {
		changed = func(string) bool { return false }
	}
	c := compare.DefaultOptions()
	c.Alpha, c.Seed, c.Reps = opts.Alpha, opts.Seed, opts.Reps
	c.PoolRuns, c.AllowModelChange, c.Workload = opts.PoolRuns, opts.AllowModelChange, opts.Workload
	c.Policy.AllowMissing = opts.AllowMissing
	c.Policy.FailOnInconclusive = opts.FailOnInconclusive
	switch opts.Inconclusive {
	case "pass", "":
	case "fail":
		c.Policy.FailOnInconclusive = true
	default:
		return c, &UsageError{fmt.Errorf("--inconclusive %q: want pass or fail", opts.Inconclusive)}
	}
	if changed("inconclusive") && opts.Inconclusive == "pass" && opts.FailOnInconclusive {
		return c, &UsageError{errors.New("--inconclusive pass contradicts --fail-on-inconclusive")}
	}
	block := opts.Block
	if opts.GateFile != "" {
		b, err := os.ReadFile(opts.GateFile)
		if err != nil {
			return c, err // I/O: names the file
		}
		pf, gates, err := compare.ParsePolicyFile(opts.GateFile, b)
		if err != nil {
			return c, &UsageError{err}
		}
		c.Policy.Gates = gates
		if pf.FailOnInconclusive != nil && !changed("fail-on-inconclusive") && !changed("inconclusive") {
			c.Policy.FailOnInconclusive = *pf.FailOnInconclusive
		}
		if pf.Alpha != nil && !changed("alpha") {
			c.Alpha = *pf.Alpha
		}
		if pf.Block != nil && !changed("block") {
			block = *pf.Block
		}
	}
	for _, s := range opts.Gates {
		g, err := compare.ParseGate(s)
		if err != nil {
			return c, &UsageError{err}
		}
		if slices.ContainsFunc(c.Policy.Gates, func(x compare.Gate) bool { return x.Metric == g.Metric }) {
			return c, usageErrorf("--gate %q: %s already has a rule (one rule per metric)", s, g.Metric)
		}
		c.Policy.Gates = append(c.Policy.Gates, g)
	}
	var err error
	if c.Block, err = compare.ParseBlock(block); err != nil {
		return c, &UsageError{err}
	}
	switch {
	case !(c.Alpha > 0 && c.Alpha < 0.5):
		return c, usageErrorf("--alpha %v: want a level in (0, 0.5)", c.Alpha)
	case c.Reps < 10:
		return c, usageErrorf("--bootstrap %d: want at least 10 replicates", c.Reps)
	}
	return c, nil
}

// gateSummary is the one line printed to stderr with exit status 3.
func gateSummary(res *compare.Result) string {
	var failed, inconclusive []string
	for _, m := range res.Metrics {
		if m.Gate == nil {
			continue
		}
		switch m.Gate.Verdict {
		case compare.Fail:
			failed = append(failed, m.Gate.Rule.String())
		case compare.Inconclusive:
			inconclusive = append(inconclusive, m.Gate.Rule.String())
		}
	}
	rules := res.Gate.Pass + res.Gate.Fail + res.Gate.Inconclusive
	msg := fmt.Sprintf("gate failed: %d of %d rules failed", len(failed), rules)
	if len(failed) > 0 {
		msg += " (" + strings.Join(failed, "; ") + ")"
	}
	if res.Gate.FailOnInconclusive && len(inconclusive) > 0 {
		msg += fmt.Sprintf(", %d inconclusive under --fail-on-inconclusive (%s)", len(inconclusive), strings.Join(inconclusive, "; "))
	}
	return msg
}
