package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/history"
)

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
// Otherwise the baseline is read as one side (opts.load).
func loadBaseline(ctx context.Context, opts *DiffOptions, copts compare.Options, cand *compare.Input) (*diffBaseline, error) {
	hist, positional := opts.History, opts.Baseline
	if len(hist) == 0 {
		if len(positional) != 1 || len(cand.Runs) != 1 || !compare.IsSeriesDir(positional[0], opts.lopts) {
			in, err := opts.load(ctx, positional)
			if err != nil {
				return nil, err
			}
			return &diffBaseline{Input: in, label: strings.Join(positional, ",")}, nil
		}
		hist, positional = positional, nil
	}
	series, err := compare.LoadSeries(ctx, hist, opts.lopts)
	if err != nil {
		return nil, err
	}
	order, err := series.Order(opts.Order)
	if err != nil {
		return nil, &UsageError{err}
	}
	var notes, newestFiles []string
	if len(positional) > 0 {
		newest, err := opts.load(ctx, positional)
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
