package driver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/history"
)

// DiffOptions are `llmprof diff`'s settings (cmd/llmprof/diff.go binds its
// flags here).
type DiffOptions struct {
	// Baseline and Candidate are the two sides, each one or more paths;
	// History (--baseline-history) are earlier baseline runs, in Order.
	Baseline, Candidate, History []string
	Order                        string

	Gates              []string // --gate rules, as given
	GateFile           string
	FailOnInconclusive bool
	Inconclusive       string

	Alpha            float64
	Seed             uint64
	Reps             int
	Block            string
	PoolRuns         bool
	Workload         string
	AllowModelChange bool
	AllowMissing     bool

	// Changed reports whether a flag was given explicitly, so a gate file's
	// settings apply only where the command line is silent (nil: none was).
	Changed func(flag string) bool
	// Pipeline analyzes the raw runs of either side.
	Pipeline Options
}

// Diff reads both sides and compares them (compare.Compare): the candidate,
// then the baseline, a baseline history's runs from its last change point
// on (loadBaseline). What the history is, and what a side cannot explain,
// are among the result's warnings. A mistake in the options is an
// *OptionError.
func Diff(ctx context.Context, opts DiffOptions) (*compare.Result, error) {
	copts, err := diffCompareOptions(opts)
	if err != nil {
		return nil, err
	}
	cand, err := Load(ctx, opts.Candidate, opts.Pipeline)
	if err != nil {
		return nil, err
	}
	base, err := loadBaseline(ctx, opts, copts, cand)
	if err != nil {
		return nil, err
	}
	if same, ok := compare.SameInput(base.Input, cand); ok {
		return nil, fmt.Errorf("baseline and candidate are the same input (%s): comparing a run with itself proves nothing", same)
	}
	res, err := compare.Compare(
		compare.Side{Label: base.label, Runs: base.Runs, InputWarnings: base.Warnings, History: base.history},
		compare.Side{Label: strings.Join(opts.Candidate, ","), Runs: cand.Runs, InputWarnings: cand.Warnings},
		copts)
	if err != nil {
		return nil, err
	}
	// What the baseline history is (and which of its runs were left out),
	// and what a side cannot explain (a benchmark result has no
	// attribution), belong beside the figures, where every reader sees it.
	res.Warnings = append(res.Warnings, append(base.Notes, cand.Notes...)...)
	res.History = base.summary
	return res, nil
}

// diffCompareOptions turns flags and the gate file into compare.Options.
func diffCompareOptions(opts DiffOptions) (compare.Options, error) {
	changed := opts.Changed
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
		return c, &OptionError{fmt.Errorf("--inconclusive %q: want pass or fail", opts.Inconclusive)}
	}
	if changed("inconclusive") && opts.Inconclusive == "pass" && opts.FailOnInconclusive {
		return c, &OptionError{errors.New("--inconclusive pass contradicts --fail-on-inconclusive")}
	}
	block := opts.Block
	if opts.GateFile != "" {
		b, err := os.ReadFile(opts.GateFile)
		if err != nil {
			return c, err // I/O: names the file
		}
		pf, gates, err := compare.ParsePolicyFile(opts.GateFile, b)
		if err != nil {
			return c, &OptionError{err}
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
			return c, &OptionError{err}
		}
		if slices.ContainsFunc(c.Policy.Gates, func(x compare.Gate) bool { return x.Metric == g.Metric }) {
			return c, optionErrorf("--gate %q: %s already has a rule (one rule per metric)", s, g.Metric)
		}
		c.Policy.Gates = append(c.Policy.Gates, g)
	}
	var err error
	if c.Block, err = compare.ParseBlock(block); err != nil {
		return c, &OptionError{err}
	}
	switch {
	case !(c.Alpha > 0 && c.Alpha < 0.5):
		return c, optionErrorf("--alpha %v: want a level in (0, 0.5)", c.Alpha)
	case c.Reps < 10:
		return c, optionErrorf("--bootstrap %d: want at least 10 replicates", c.Reps)
	}
	return c, nil
}

// GateSummary is the one line diff prints to stderr with exit status 3.
func GateSummary(res *compare.Result) string {
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

// diffBaseline is the baseline side of diff as read.
type diffBaseline struct {
	*compare.Input
	label string
	// history: the runs are a baseline history (Side.History), which
	// summary describes.
	history bool
	summary *compare.HistorySummary
}

// loadBaseline reads diff's baseline. With --baseline-history, or a
// directory of runs as the baseline of one candidate run, the baseline is a
// series read as `llmprof history` reads one (compare.LoadSeries, then
// Order): the history's runs in --order, then the <baseline> argument's runs,
// the newest, in the order given. A file of the candidate found in it is
// left out with a note. When the series has a confirmed change point
// (history.FindBaseline: the metrics history follows and the gated ones),
// only the runs from the last one on are the baseline, and a note says so.
// Otherwise the baseline is read as one side (Load).
func loadBaseline(ctx context.Context, o DiffOptions, copts compare.Options, cand *compare.Input) (*diffBaseline, error) {
	lopts := loadOptions(o.Pipeline)
	hist, positional := o.History, o.Baseline
	if len(hist) == 0 {
		if len(positional) != 1 || len(cand.Runs) != 1 || !compare.IsSeriesDir(positional[0], lopts) {
			in, err := Load(ctx, positional, o.Pipeline)
			if err != nil {
				return nil, err
			}
			return &diffBaseline{Input: in, label: strings.Join(positional, ",")}, nil
		}
		hist, positional = positional, nil
	}
	series, err := compare.LoadSeries(ctx, hist, lopts)
	if err != nil {
		return nil, err
	}
	order, err := series.Order(o.Order)
	if err != nil {
		return nil, &OptionError{err}
	}
	var notes, newestFiles []string
	if len(positional) > 0 {
		newest, err := Load(ctx, positional, o.Pipeline)
		if err != nil {
			return nil, err
		}
		// The <baseline> argument is the newest baseline: a copy of it in
		// the history is read once, at the end.
		dropFiles(series, newest.Files)
		newestFiles = newest.Files
		for _, r := range newest.Runs {
			series.Runs = append(series.Runs, compare.SeriesRun{ID: r.RunID, Data: r})
		}
		series.Warnings = append(series.Warnings, newest.Warnings...)
		series.Notes = append(series.Notes, newest.Notes...)
		order += " (history), then the <baseline> argument"
	}
	for _, f := range dropFiles(series, cand.Files) {
		notes = append(notes, fmt.Sprintf("%s: the candidate, left out of the baseline history", f))
	}
	series.Runs = slices.DeleteFunc(series.Runs, func(r compare.SeriesRun) bool {
		if !slices.ContainsFunc(cand.Runs, func(c compare.Run) bool { return compare.SameRun(r.Data, c) }) {
			return false
		}
		notes = append(notes, fmt.Sprintf("%s: identical to the candidate's run (a copy of it), left out of the baseline history", r.ID))
		return true
	})
	if len(series.Runs) == 0 {
		return nil, fmt.Errorf("%s: the baseline history holds no run but the candidate's", strings.Join(hist, ", "))
	}
	hopts := history.DefaultOptions()
	hopts.Compare.Policy.Gates = copts.Policy.Gates
	hb, err := history.FindBaseline(series, hopts)
	if err != nil {
		return nil, err
	}
	note := hb.Describe(order)
	notes = append(notes, note)
	sum := &compare.HistorySummary{Order: order, From: hb.From, Note: note}
	for _, r := range hb.Runs {
		sum.Runs = append(sum.Runs, r.ID)
	}
	if c := hb.Change; c != nil {
		sum.Change = &compare.HistoryChange{Index: c.Index, Run: c.Run.ID, Metrics: c.Metrics, Before: c.Before, After: c.After, P: c.P, RunP: c.RunP}
	}
	runs := series.CompareRuns()[hb.From:]
	// The files behind the baseline actually used: the runs from the last
	// change on (the <baseline> argument's runs carry no path of their own).
	files := series.FilesFrom(hb.From)
	for _, f := range newestFiles {
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	in := &compare.Input{Runs: runs, Warnings: series.Warnings, Notes: append(collapseNotes(series.Notes), notes...), Files: files}
	return &diffBaseline{Input: in, label: strings.Join(append(slices.Clone(hist), positional...), ","), history: true, summary: sum}, nil
}

// dropFiles removes the runs read from any of files (the same file under
// any name) and returns the paths removed, once each.
func dropFiles(s *compare.RunSeries, files []string) []string {
	var stats []os.FileInfo
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			stats = append(stats, st)
		}
	}
	var dropped []string
	s.Runs = slices.DeleteFunc(s.Runs, func(r compare.SeriesRun) bool {
		if r.Path == "" {
			return false
		}
		st, err := os.Stat(r.Path)
		if err != nil || !slices.ContainsFunc(stats, func(c os.FileInfo) bool { return os.SameFile(c, st) }) {
			return false
		}
		if !slices.Contains(dropped, r.Path) {
			dropped = append(dropped, r.Path)
		}
		return true
	})
	return dropped
}

// collapseNotes gives a note that several files of the history carry
// ("path: message", such as what a bench result cannot explain) once,
// naming them all, so that thirty nightly results do not print it thirty
// times.
func collapseNotes(notes []string) []string {
	var msgs []string
	paths := map[string][]string{}
	for _, n := range notes {
		p, msg, ok := strings.Cut(n, ": ")
		if !ok {
			p, msg = "", n
		}
		if _, seen := paths[msg]; !seen {
			msgs = append(msgs, msg)
		}
		if p != "" && !slices.Contains(paths[msg], p) {
			paths[msg] = append(paths[msg], p)
		}
	}
	out := make([]string, 0, len(msgs))
	for _, msg := range msgs {
		switch ps := paths[msg]; len(ps) {
		case 0:
			out = append(out, msg)
		case 1:
			out = append(out, ps[0]+": "+msg)
		default:
			out = append(out, fmt.Sprintf("%d runs (%s): %s", len(ps), strings.Join(ps, ", "), msg))
		}
	}
	return out
}

// loadOptions read a series of runs (compare.LoadSeries) with the run
// decoders of opts (RunDecoders), as Load reads one side.
func loadOptions(opts Options) compare.LoadOptions {
	return compare.LoadOptions{Inputs: RunDecoders(opts)}
}
