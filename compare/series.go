package compare

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/jsonscan"
)

// SeriesRun is one run of a series: what diff would compare, and where and
// when it was taken.
type SeriesRun struct {
	// ID names the run (its file, with the bench result's label and date).
	ID   string
	Path string
	// Time is when the run was taken, from a field the file carries (a
	// bench result's date); zero when unknown.
	Time time.Time
	// Commit is the revision the run tested, from a field the file carries
	// (`vllm bench serve --metadata commit=…`); empty when unknown.
	Commit string
	// ModTime is the file's modification time (OrderMtime).
	ModTime time.Time
	Data    Run
}

// RunSeries is a series of runs — a history for `llmprof history`, a baseline
// history for `diff --baseline-history`, a directory named as a side of
// diff — in the order read until Order sorts them. LoadSeries is the one
// reader of every one of them.
type RunSeries struct {
	Runs []SeriesRun
	// Warnings are the inputs' own problems and the entries of a directory
	// that are not runs (skipped), "path: message".
	Warnings []string
	// Notes say what an input cannot do (a bench result has no
	// attribution) and which order the runs were put in when auto could
	// not use their times.
	Notes []string
	// seen are the files and directories read, so that one named twice
	// (a baseline that is also in its history) is read once.
	seen []os.FileInfo
}

// LoadSeries reads a series of runs: each path is a run file (a saved
// analysis, a samples file, a `vllm bench serve` result, a raw trace), or a
// directory whose entries are runs, one per file or subdirectory (a raw run
// that is a directory, such as a capture). Load reads each entry, so a run
// here is what diff reads. A named file that is not a run is an error; a
// directory's entry that is not one is skipped with a warning, so a nightly
// folder may hold other files (a README, vLLM's benchmark_results.json
// summary). A file named twice, or found both named and in a directory, is
// read once. Symbolic links inside a directory are not followed.
func LoadSeries(ctx context.Context, paths []string, lopts LoadOptions) (*RunSeries, error) {
	s := &RunSeries{}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, &ingest.InputError{Path: p, Err: unwrapPath(err)}
		}
		if !st.IsDir() || isRunDir(p, lopts) {
			if err := s.load(ctx, p, lopts); err != nil {
				return nil, err
			}
			continue
		}
		if err := s.loadDir(ctx, p, lopts); err != nil {
			return nil, err
		}
	}
	if len(s.Runs) == 0 {
		return nil, fmt.Errorf("%s: no runs found", strings.Join(paths, ", "))
	}
	return s, nil
}

// loadDir reads every entry of a directory of runs (in name order; Order
// sorts them), skipping with a warning those that are not runs.
func (s *RunSeries) loadDir(ctx context.Context, dir string, lopts LoadOptions) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return &ingest.InputError{Path: dir, Err: unwrapPath(err)}
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") || !(e.Type().IsRegular() || e.IsDir()) {
			continue
		}
		entry := filepath.Join(dir, e.Name())
		if err := s.load(ctx, entry, lopts); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s: skipped, not a run: %v", entry, trimPath(err, entry)))
		}
	}
	return nil
}

// isRunDir reports whether a directory is itself one raw run (an llmprof
// capture, or a directory a decoder claims) rather than a folder of runs.
func isRunDir(p string, lopts LoadOptions) bool {
	if _, err := os.Stat(filepath.Join(p, "manifest.json")); err == nil {
		return true
	}
	return lopts.sniffedRaw(&ingest.Input{Path: p, Dir: true})
}

func trimPath(err error, p string) string {
	return strings.TrimPrefix(err.Error(), p+": ")
}

func (s *RunSeries) load(ctx context.Context, p string, lopts LoadOptions) error {
	st, err := os.Stat(p)
	if err != nil {
		return &ingest.InputError{Path: p, Err: unwrapPath(err)}
	}
	if slices.ContainsFunc(s.seen, func(prev os.FileInfo) bool { return os.SameFile(prev, st) }) {
		return nil
	}
	s.seen = append(s.seen, st)
	in, err := Load(ctx, []string{p}, lopts)
	if err != nil {
		return err
	}
	stamps := readStamps(p)
	if len(stamps) != len(in.Runs) {
		stamps = make([]stamp, len(in.Runs))
	}
	for i, r := range in.Runs {
		if err := r.Validate(); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		s.Runs = append(s.Runs, SeriesRun{ID: r.RunID, Path: p, Time: stamps[i].time, Commit: stamps[i].commit, ModTime: st.ModTime(), Data: r})
	}
	s.Warnings = append(s.Warnings, in.Warnings...)
	s.Notes = append(s.Notes, in.Notes...)
	return nil
}

// Files are the paths the series' runs were read from, once each, in the
// runs' order.
func (s *RunSeries) Files() []string { return s.FilesFrom(0) }

// FilesFrom is the files of the runs from the i-th on, in order, once
// each (a run given as data, with no path, adds none).
func (s *RunSeries) FilesFrom(i int) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range s.Runs[i:] {
		if r.Path != "" && !seen[r.Path] {
			seen[r.Path] = true
			out = append(out, r.Path)
		}
	}
	return out
}

// CompareRuns are the runs' data, for a side of Compare.
func (s *RunSeries) CompareRuns() []Run {
	out := make([]Run, len(s.Runs))
	for i := range s.Runs {
		out[i] = s.Runs[i].Data
	}
	return out
}

type stamp struct {
	time   time.Time
	commit string
}

// Fields a run file may carry for its time and its revision, in order of
// preference. vLLM's bench writer puts "date" (%Y%m%d-%H%M%S, local time)
// first in every result (vllm/benchmarks/serve.py) and copies each
// --metadata KEY=VALUE to the top level, which is where a commit lands.
var (
	timeKeys   = []string{"date", "timestamp", "time", "started_at", "start_time", "created_at"}
	commitKeys = []string{"commit", "git_commit", "git_sha", "commit_sha", "vllm_commit", "revision"}
)

// readStamps reads the time and commit of each JSON document in a file (a
// bench result file may hold several, one per line); nil when the file is
// not JSON.
func readStamps(p string) []stamp {
	f, err := os.Open(p)
	if err != nil {
		return nil
	}
	defer f.Close()
	return readStampsFrom(f)
}

// stampKeys are timeKeys and then commitKeys, by name.
var stampKeys = func() map[string]int {
	m := map[string]int{}
	for i, k := range slices.Concat(timeKeys, commitKeys) {
		m[k] = i
	}
	return m
}()

// readStampsFrom is readStamps of the text r reads. It reads what a
// json.Decoder decoding each document into a map[string]json.RawMessage
// would, and fails where that fails, but only keeps the values of
// stampKeys (the last of a name, as in the map): a run file is mostly
// per-request arrays, passed over here with jsonscan (series_test.go
// checks the two against each other).
func readStampsFrom(r io.Reader) []stamp {
	s := &jsonscan.Scanner{MaxDepth: maxJSONDepth}
	s.ResetReader(r)
	var out []stamp
	vals := make([][]byte, len(stampKeys))
	// A trace in JSON Lines is one run of many documents: its stamps would
	// not match its one run, so stop early.
	for len(out) < 1000 {
		if !s.More() {
			if s.Err() != nil {
				return nil
			}
			return out
		}
		var st stamp
		switch s.Peek() {
		case 'n':
			s.Literal() // a nil map: a document without stamps
		case '{':
			for i := range vals {
				vals[i] = nil
			}
			s.Open('{')
			for first := true; s.Member(&first); {
				if i, ok := stampKeys[string(s.Key())]; ok {
					vals[i] = append(vals[i][:0:0], s.RawValue()...)
				} else {
					s.Skip()
				}
			}
			for i := range timeKeys {
				if t, ok := parseTime(vals[i]); ok {
					st.time = t
					break
				}
			}
			for _, raw := range vals[len(timeKeys):] {
				var c string
				if json.Unmarshal(raw, &c) == nil && c != "" {
					st.commit = c
					break
				}
			}
		default:
			return nil // not an object
		}
		if s.Err() != nil {
			return nil
		}
		out = append(out, st)
	}
	return nil
}

// parseTime reads vLLM's %Y%m%d-%H%M%S, RFC 3339, or Unix seconds.
func parseTime(raw json.RawMessage) (time.Time, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return time.Time{}, false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil || f <= 0 {
			return time.Time{}, false
		}
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC(), true
	}
	for _, layout := range []string{"20060102-150405", time.RFC3339Nano, "2006-01-02 15:04:05", "2006-01-02T15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// Orders the runs of a series may be put in.
const (
	OrderAuto  = "auto"  // by time when every run has one, else by name
	OrderTime  = "time"  // by the time each run carries
	OrderName  = "name"  // by file name (path), then position in the file
	OrderMtime = "mtime" // by the file's modification time
	OrderGiven = "given" // as named on the command line
)

// Order sorts the runs (stably) and returns the order used; a run without
// a time under OrderTime is an error naming it. Auto falling back to names
// says so in a note naming the first run without a time.
func (s *RunSeries) Order(order string) (string, error) {
	if order == OrderAuto {
		order = OrderTime
		for _, r := range s.Runs {
			if r.Time.IsZero() {
				order = OrderName
				s.Notes = append(s.Notes, fmt.Sprintf("%s: carries no time (date, timestamp), so the runs are in name order (--order to choose)", r.ID))
				break
			}
		}
	}
	switch order {
	case OrderTime:
		for _, r := range s.Runs {
			if r.Time.IsZero() {
				return order, fmt.Errorf("%s: carries no time (date, timestamp): use --order name or mtime", r.ID)
			}
		}
		slices.SortStableFunc(s.Runs, func(a, b SeriesRun) int { return a.Time.Compare(b.Time) })
	case OrderName:
		slices.SortStableFunc(s.Runs, func(a, b SeriesRun) int { return cmp.Compare(a.Path, b.Path) })
	case OrderMtime:
		slices.SortStableFunc(s.Runs, func(a, b SeriesRun) int { return a.ModTime.Compare(b.ModTime) })
	case OrderGiven:
	default:
		return order, fmt.Errorf("unknown order %q (want auto, time, name, mtime or given)", order)
	}
	return order, nil
}

// Since keeps the runs taken at or after t; runs without a time are dropped
// with a warning.
func (s *RunSeries) Since(t time.Time) {
	kept := s.Runs[:0]
	for _, r := range s.Runs {
		switch {
		case r.Time.IsZero():
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s: carries no time, left out by --since", r.ID))
		case !r.Time.Before(t):
			kept = append(kept, r)
		}
	}
	s.Runs = kept
}
