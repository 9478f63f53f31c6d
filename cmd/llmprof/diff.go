package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/report"
)

// DiffOptions are the parsed flags and arguments of `llmprof diff`.
type DiffOptions struct {
	IO *IOStreams
	// analyzeRaw takes a raw trace input (file or directory) through the
	// analyze pipeline.
	analyzeRaw func(ctx context.Context, path string) (compare.Run, error)

	// Baseline and Candidate are the two sides, each one or more paths.
	Baseline, Candidate []string

	Gates              []string // --gate rules, as given
	GateFile           string
	FailOnInconclusive bool
	Format             string   // text, markdown, json, junit
	Outputs            []string // extra FORMAT=PATH outputs
	All                bool

	Alpha            float64
	Seed             uint64
	Reps             int
	Block            string
	PoolRuns         bool
	AllowModelChange bool

	// changed reports whether a flag was given explicitly, so a gate file's
	// settings apply only where the command line is silent.
	changed func(name string) bool
}

// NewCmdDiff builds `llmprof diff`.
func NewCmdDiff(f *Factory) *cobra.Command {
	def := compare.DefaultOptions()
	opts := &DiffOptions{IO: f.IO}
	opts.analyzeRaw = func(ctx context.Context, path string) (compare.Run, error) {
		a, err := analyzeInputs(ctx, f, []string{path}, pipelineOptions{})
		if err != nil {
			return compare.Run{}, err
		}
		if len(a.Attr.Requests) == 0 {
			return compare.Run{}, fmt.Errorf("%s: no requests found (no span in a request convention llmprof knows)", path)
		}
		run := compare.FromAttribution(a.Attr)
		run.RunID = path
		return run, nil
	}
	cmd := &cobra.Command{
		Use:   "diff [flags] <baseline> <candidate>",
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

Medians use the Mann–Whitney U test and the Hodges–Lehmann shift with its Moses
interval on log latency; tails, means and per-token buckets a seeded bootstrap
(--block for autocorrelated requests). A change that is not significant prints
as ~. Every metric shows its minimum detectable effect (MDE).

A gate rule is METRIC<THRESHOLD or METRIC>THRESHOLD with a relative (%) or
absolute (ms, s, us; req/s, tok/s) threshold. It fails when the confidence
interval of the change lies entirely beyond the threshold (Holm-corrected across
rules), passes when it lies entirely on the good side, and is inconclusive
otherwise or when there are too few samples (p99 needs 368 per side).

Exit status: 0 no rule failed, 1 unusable input, 2 usage error, 3 a rule failed
(or was inconclusive under --fail-on-inconclusive).`),
		Example: strings.TrimSpace(`
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

  # One long run with autocorrelated requests:
  llmprof diff --block auto --gate 'e2e.p90<+5%' baseline.json candidate.json`),
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			var err error
			if opts.Baseline, err = splitSide(args[0]); err != nil {
				return err
			}
			if opts.Candidate, err = splitSide(args[1]); err != nil {
				return err
			}
			opts.changed = func(name string) bool { return cmd.Flags().Changed(name) }
			return runDiff(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&opts.Gates, "gate", nil, "gate rule such as 'ttft.p99<+10%', 'tpot.p50<+2ms' or 'throughput>-5%' (repeatable)")
	fl.StringVar(&opts.GateFile, "gate-file", "", "YAML file with gate rules (gates: [...], fail_on_inconclusive, alpha, block)")
	fl.BoolVar(&opts.FailOnInconclusive, "fail-on-inconclusive", false, "an inconclusive rule fails the gate (exit 3)")
	fl.StringVarP(&opts.Format, "format", "f", "text", "output format: text, markdown, json or junit")
	fl.StringArrayVar(&opts.Outputs, "out", nil, "also write FORMAT=PATH, e.g. markdown=summary.md, junit=diff.xml or html=diff.html (repeatable)")
	fl.BoolVar(&opts.All, "all", false, "list every bucket metric, not only those that changed or are gated")
	fl.Float64Var(&opts.Alpha, "alpha", def.Alpha, "significance level; intervals are 1−alpha")
	fl.Uint64Var(&opts.Seed, "seed", def.Seed, "bootstrap seed (same inputs and seed, same report)")
	fl.IntVar(&opts.Reps, "bootstrap", def.Reps, "bootstrap replicates")
	fl.StringVar(&opts.Block, "block", "off", "block bootstrap over consecutive requests: off, auto (n^1/3) or a block length")
	fl.BoolVar(&opts.PoolRuns, "pool-runs", false, "treat several runs per side as one long run instead of replicates")
	fl.BoolVar(&opts.AllowModelChange, "allow-model-change", false, "compare runs that served different models")
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

// diffFormats maps format names to renderers.
var diffFormats = map[string]func(w io.Writer, res *compare.Result, o report.DiffOptions) error{
	"text":     report.WriteDiffText,
	"markdown": report.WriteDiffMarkdown,
	"md":       report.WriteDiffMarkdown,
	"json": func(w io.Writer, res *compare.Result, _ report.DiffOptions) error {
		return report.WriteDiffJSON(w, res)
	},
	"junit": func(w io.Writer, res *compare.Result, _ report.DiffOptions) error {
		return report.WriteDiffJUnit(w, res)
	},
	"html": report.WriteDiffHTML,
}

func runDiff(ctx context.Context, opts *DiffOptions) error {
	copts, err := diffCompareOptions(opts)
	if err != nil {
		return err
	}
	render, ok := diffFormats[opts.Format]
	if !ok {
		return usageErrorf("unknown --format %q (want text, markdown, json or junit)", opts.Format)
	}
	type output struct {
		render func(io.Writer, *compare.Result, report.DiffOptions) error
		path   string
	}
	var outputs []output
	for _, o := range opts.Outputs {
		name, path, ok := strings.Cut(o, "=")
		r, known := diffFormats[name]
		if !ok || path == "" || !known {
			return usageErrorf("--out %q: want FORMAT=PATH with FORMAT text, markdown, json or junit", o)
		}
		outputs = append(outputs, output{r, path})
	}

	base, err := loadSide(ctx, opts.Baseline, opts.analyzeRaw)
	if err != nil {
		return err
	}
	cand, err := loadSide(ctx, opts.Candidate, opts.analyzeRaw)
	if err != nil {
		return err
	}
	res, err := compare.Compare(
		compare.Side{Label: strings.Join(opts.Baseline, ","), Runs: base},
		compare.Side{Label: strings.Join(opts.Candidate, ","), Runs: cand},
		copts)
	if err != nil {
		return err
	}

	ropts := report.DiffOptions{All: opts.All, Color: report.ColorFor(opts.IO.OutTTY) && opts.Format == "text"}
	if err := render(opts.IO.Out, res, ropts); err != nil {
		return err
	}
	for _, o := range outputs {
		var buf bytes.Buffer
		if err := o.render(&buf, res, report.DiffOptions{All: opts.All}); err != nil {
			return err
		}
		if err := os.WriteFile(o.path, buf.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
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
	c.PoolRuns, c.AllowModelChange = opts.PoolRuns, opts.AllowModelChange
	c.Policy.FailOnInconclusive = opts.FailOnInconclusive
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
		if pf.FailOnInconclusive != nil && !changed("fail-on-inconclusive") {
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

// AnalysisSchema is the schema of a saved analysis (analyze --format json),
// whose "samples" key holds the runs diff compares.
const AnalysisSchema = "llmprof.report/v1"

// errRawInput marks a trace input (OTLP, nsys, capture) rather than saved
// samples: it goes through the analyze pipeline.
var errRawInput = errors.New("is a raw trace input")

// loadSide reads one side's inputs, deciding per path what it is: a saved
// analysis, a samples file (one run or an array of runs), or a raw trace (a
// file or directory), which analyzeRaw turns into one run. Without
// analyzeRaw a raw input is an error.
func loadSide(ctx context.Context, paths []string, analyzeRaw func(context.Context, string) (compare.Run, error)) ([]compare.Run, error) {
	var runs []compare.Run
	raw := func(p string) error {
		if analyzeRaw == nil {
			return fmt.Errorf("%s %w", p, errRawInput)
		}
		run, err := analyzeRaw(ctx, p)
		if err != nil {
			return err
		}
		runs = append(runs, run)
		return nil
	}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			// A capture directory or a folder of traces.
			if err := raw(p); err != nil {
				return nil, err
			}
			continue
		}
		in, err := ingest.NewInput(p)
		if err != nil {
			return nil, err // an InputError names the path
		}
		head := bytes.TrimLeft(in.Head, " \t\r\n\xef\xbb\xbf")
		if len(head) == 0 {
			return nil, fmt.Errorf("%s: empty file", p)
		}
		if head[0] != '{' && head[0] != '[' {
			// SQLite (nsys), protobuf (OTLP), Arrow (captures).
			if err := raw(p); err != nil {
				return nil, err
			}
			continue
		}
		rs, err := readSamples(in)
		if errors.Is(err, errRawInput) {
			if err := raw(p); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		runs = append(runs, rs...)
	}
	return runs, nil
}

// readSamples decodes a JSON input that should hold runs.
func readSamples(in *ingest.Input) ([]compare.Run, error) {
	rc, err := in.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	var top json.RawMessage
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	top = bytes.TrimSpace(top)
	if top[0] == '[' {
		var runs []compare.Run
		if err := json.Unmarshal(top, &runs); err != nil {
			return nil, fmt.Errorf("not an array of runs (%s): %w", compare.SamplesSchema, err)
		}
		if len(runs) == 0 {
			return nil, errors.New("no runs in the array")
		}
		return runs, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(top, &keys); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		// JSON Lines: a collector file export has one document per line.
		return nil, errRawInput
	}
	var schema string
	if s, ok := keys["schema"]; ok {
		if err := json.Unmarshal(s, &schema); err != nil {
			return nil, fmt.Errorf("schema is not a string: %s", s)
		}
	}
	switch {
	case schema == AnalysisSchema:
		samples, ok := keys["samples"]
		if !ok || string(bytes.TrimSpace(samples)) == "null" {
			return nil, errors.New(`saved analysis has no "samples" (write it again with this llmprof's analyze --format json)`)
		}
		return decodeRuns(samples)
	case strings.HasPrefix(schema, "llmprof.report/"):
		return nil, fmt.Errorf("saved analysis schema %q is not supported (this llmprof reads %q); write it again with this llmprof", schema, AnalysisSchema)
	case strings.HasPrefix(schema, "llmprof.samples/"):
		return decodeRuns(top)
	case strings.HasPrefix(schema, "llmprof.diff/"):
		return nil, errors.New("is a diff report, not an analysis: diff compares analyses")
	case schema != "":
		return nil, fmt.Errorf("unknown schema %q (want a saved analysis %q or samples %q)", schema, AnalysisSchema, compare.SamplesSchema)
	}
	for _, k := range []string{"resourceSpans", "resource_spans", "resourceLogs", "data", "traceEvents"} {
		if _, ok := keys[k]; ok {
			return nil, errRawInput
		}
	}
	if _, ok := keys["requests"]; ok {
		return decodeRuns(top)
	}
	return nil, fmt.Errorf("not a saved analysis (%s) or samples file (%s)", AnalysisSchema, compare.SamplesSchema)
}

// decodeRuns reads one run or an array of runs.
func decodeRuns(b json.RawMessage) ([]compare.Run, error) {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var runs []compare.Run
		if err := json.Unmarshal(b, &runs); err != nil {
			return nil, err
		}
		if len(runs) == 0 {
			return nil, errors.New("no runs")
		}
		return runs, nil
	}
	var r compare.Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return []compare.Run{r}, nil
}
