package driver

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/history"
)

// HistoryOptions are `llmprof history`'s settings (cmd/llmprof/history.go
// binds its flags here).
type HistoryOptions struct {
	Paths              []string
	Metrics            []string
	Order              string
	Since              string
	Unit               string
	Detect             history.DetectOptions
	Gates              []string
	FailOnInconclusive bool
	AllowMissing       bool
	// Pipeline analyzes the raw runs of the series.
	Pipeline Options
}

// History reads the series of runs, puts them in order and finds each
// metric's change points (history.Analyze); it returns the result and the
// inputs' warnings. A mistake in the options is an *OptionError.
func History(ctx context.Context, opts HistoryOptions) (*history.Result, []string, error) {
	o := history.DefaultOptions()
	o.Detect, o.Unit, o.Order = opts.Detect, opts.Unit, opts.Order
	if len(opts.Metrics) > 0 {
		o.Metrics = opts.Metrics
	}
	for _, m := range o.Metrics {
		if err := compare.ValidMetric(m); err != nil {
			return nil, nil, &OptionError{fmt.Errorf("--metric: %w", err)}
		}
	}
	switch {
	case !(o.Detect.Alpha > 0 && o.Detect.Alpha < 0.5):
		return nil, nil, optionErrorf("--alpha %v: want a level in (0, 0.5)", o.Detect.Alpha)
	case o.Detect.Permutations < 19:
		return nil, nil, optionErrorf("--permutations %d: want at least 19 (a p-value of 0.05 needs 19)", o.Detect.Permutations)
	case o.Detect.MinSize < 1:
		return nil, nil, optionErrorf("--min-size %d: want at least 1", o.Detect.MinSize)
	case o.Detect.Window < 2:
		return nil, nil, optionErrorf("--window %d: want at least 2", o.Detect.Window)
	case !slices.Contains([]string{history.UnitAuto, history.UnitRun, history.UnitRequest}, o.Unit):
		return nil, nil, optionErrorf("--unit %q: want auto, run or request", o.Unit)
	}
	o.Compare.Policy.FailOnInconclusive, o.Compare.Policy.AllowMissing = opts.FailOnInconclusive, opts.AllowMissing
	for _, s := range opts.Gates {
		g, err := compare.ParseGate(s)
		if err != nil {
			return nil, nil, &OptionError{err}
		}
		if slices.ContainsFunc(o.Compare.Policy.Gates, func(x compare.Gate) bool { return x.Metric == g.Metric }) {
			return nil, nil, optionErrorf("--gate %q: %s already has a rule (one rule per metric)", s, g.Metric)
		}
		o.Compare.Policy.Gates = append(o.Compare.Policy.Gates, g)
	}
	var since time.Time
	if opts.Since != "" {
		var err error
		if since, err = parseSince(opts.Since); err != nil {
			return nil, nil, &OptionError{err}
		}
	}
	series, err := history.Load(ctx, opts.Paths, loadOptions(opts.Pipeline))
	if err != nil {
		return nil, nil, err
	}
	if o.Order, err = series.Order(opts.Order); err != nil {
		return nil, nil, &OptionError{err}
	}
	if !since.IsZero() {
		series.Since(since)
	}
	res, err := history.Analyze(series, o)
	return res, series.Warnings, err
}

// HistoryGateSummary is the one line history prints to stderr with exit
// status 3: the rules that failed, and where.
func HistoryGateSummary(res *history.Result) string {
	var failed []string
	for _, r := range res.Gate.Rules {
		if r.Verdict == compare.Fail || (r.Verdict == compare.Inconclusive && res.Options.Compare.Policy.FailOnInconclusive && r.Change >= 0) {
			where := "no run has it"
			if r.Change >= 0 {
				where = fmt.Sprintf("at run %d", r.Change+1)
			}
			failed = append(failed, fmt.Sprintf("%s %s", r.Rule, where))
		}
	}
	return fmt.Sprintf("gate failed: the newest run is past a change that breaks %s", strings.Join(failed, "; "))
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
