package driver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/export"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/outfile"
	"github.com/llmprof/llmprof/internal/progress"
)

// WritePerfetto writes the run's timeline for Perfetto (PerfettoOptions) to
// path: "" writes nothing, "-" writes to out, a name ending in .gz is
// gzip-compressed, and any other is an output file (internal/outfile). An
// error names the path.
func WritePerfetto(out io.Writer, path string, inputs []string, a *Result, noSpanEvents bool) (export.PerfettoStats, error) {
	var st export.PerfettoStats
	if path == "" {
		return st, nil
	}
	write := func(w io.Writer) error {
		popts := PerfettoOptions(inputs, a)
		popts.NoSpanEvents = noSpanEvents
		var err error
		if strings.HasSuffix(path, ".gz") {
			zw := gzip.NewWriter(w)
			if st, err = export.WritePerfetto(zw, a.Trace, popts); err != nil {
				return err
			}
			return zw.Close()
		}
		st, err = export.WritePerfetto(w, a.Trace, popts)
		return err
	}
	var err error
	if path == "-" {
		err = write(out)
	} else {
		err = outfile.Write(path, outfile.Options{}, func(w *bufio.Writer) error { return write(w) })
	}
	if err != nil {
		return st, fmt.Errorf("%s: %w", path, err)
	}
	return st, nil
}

// PerfettoOptions places the run on Perfetto's tracks: requests per tenant,
// their stage spans under them, arrows from OTLP spans to the NVTX ranges
// mirroring them and from each request to the first engine step that served
// it; the inputs and the alignment go into the file's metadata.
func PerfettoOptions(inputs []string, a *Result) export.PerfettoOptions {
	t, res := a.Trace, a.Align
	var links []export.Link
	for _, m := range align.Mirrors(t) {
		links = append(links, export.Link{From: m.OTLP, To: m.NVTX})
	}
	// Requests are drawn per tenant, their stage spans under them, with an
	// arrow from each request to the first engine step that served it.
	place := map[ingest.SpanID]export.Placement{}
	firstStep := map[int]int{}
	for si, st := range a.Attr.Steps {
		for _, r := range st.Requests {
			if _, ok := firstStep[int(r)]; !ok {
				firstStep[int(r)] = si
			}
		}
	}
	for ri, r := range a.Attr.Requests {
		place[t.Spans[r.Span].ID] = export.Placement{Group: "tenant " + a.Attr.Tenant(&r), Track: "requests " + a.Attr.Model(&r)}
		if si, ok := firstStep[ri]; ok {
			links = append(links, export.Link{From: r.Span, To: a.Attr.Steps[si].Span})
		}
	}
	// Stages that only attributes show (vLLM's latency attributes) are
	// slices too, like the stage spans of other servers.
	var stages []export.StageSlice
	for _, r := range a.Attr.Requests {
		for _, sg := range a.Attr.DerivedSegments(&r) {
			stages = append(stages, export.StageSlice{Span: r.Span, Name: sg.Stage.String(), From: sg.From, To: sg.To})
		}
	}
	return export.PerfettoOptions{
		Stages: stages,
		Grouping: func(t *ingest.Trace, i int) (export.Placement, bool) {
			p, ok := place[t.Spans[i].ID]
			return p, ok
		},
		Links: links,
		Metadata: map[string]any{
			"inputs":    inputs,
			"alignment": res.Fits,
			"causality": res.Causality,
		},
	}
}

// ParquetPartition fills the partition columns: the run id (default: the
// first input's base name without extensions), the host (default: the host
// identity, ingest.Source.Host, of the reference clock's sources) and the date (the first request's UTC day, when
// the reference clock is a wall clock).
func ParquetPartition(inputs []string, a *Result, runID, host string) export.ParquetOptions {
	if runID == "" && len(inputs) > 0 {
		runID = filepath.Base(filepath.Clean(inputs[0]))
		if i := strings.IndexByte(runID, '.'); i > 0 {
			runID = runID[:i]
		}
	}
	var realtime bool
	for _, f := range a.Align.Fits {
		if f.Status != align.StatusReference {
			continue
		}
		realtime = f.Kind == ingest.ClockRealtime.String()
		for _, s := range a.Trace.Sources {
			if s.Clock.Name == f.Domain && host == "" {
				host = s.Host
			}
		}
	}
	o := export.ParquetOptions{RunID: runID, Host: host}
	if realtime && len(a.Attr.Requests) > 0 {
		first := a.Attr.Requests[0].Arrival
		for _, r := range a.Attr.Requests {
			first = min(first, r.Arrival)
		}
		o.Date = time.Unix(0, first).UTC()
	}
	return o
}

// TableExport is where `llmprof export` writes the run's tables: a folder
// of its own (--parquet), a dataset of many runs (--dataset), or both.
type TableExport struct {
	Parquet, Dataset string
	RunID, Host      string
	// Date is the dataset partition's day, YYYY-MM-DD ("": the run's
	// start, ParquetPartition's date or else its first span or GPU op).
	Date string
	// NoInputs leaves the run's files out of the dataset (then analyze
	// --parquet cannot read the run back).
	NoInputs bool
	// Each makes every input a run of its own (EachRun).
	Each bool
}

// EachRun exports every input as a run of its own into the dataset, its
// run_id its name (ParquetPartition's default), by calling export with the
// one input; it stops at the first run that fails, naming it.
func (e TableExport) EachRun(inputs []string, perfetto string, export func(inputs []string) error) error {
	switch {
	case e.Dataset == "" || e.Parquet != "" || perfetto != "":
		return &OptionError{errors.New("--each adds runs to a --dataset, and writes nothing else")}
	case e.RunID != "":
		return &OptionError{errors.New("--each names each run after its input: give no --run-id")}
	}
	for _, in := range inputs {
		if err := export([]string{in}); err != nil {
			return fmt.Errorf("run %s: %w", in, err)
		}
	}
	return nil
}

// Check reports a mistake in the options, before any input is read.
func (e TableExport) Check(inputs []string) error {
	if e.Date != "" {
		if _, err := time.Parse(time.DateOnly, e.Date); err != nil {
			return &OptionError{fmt.Errorf("--date %q: want YYYY-MM-DD", e.Date)}
		}
	}
	if e.Dataset != "" && !e.NoInputs && slices.Contains(inputs, "-") {
		return &OptionError{errors.New("--dataset keeps the run's input files, and standard input cannot be kept: give files, or --no-inputs")}
	}
	return nil
}

// Write writes the tables and says on w what it wrote.
func (e TableExport) Write(w io.Writer, inputs []string, a *Result) error {
	po := ParquetPartition(inputs, a, e.RunID, e.Host)
	say := func(where string, st export.ParquetStats, tables []string) {
		var parts []string
		for _, name := range tables {
			if n, ok := st.Tables[name]; ok {
				parts = append(parts, fmt.Sprintf("%s %d", name, n))
			}
		}
		fmt.Fprintf(w, "wrote Parquet tables to %s (rows: %s); run_id %q\n", where, strings.Join(parts, ", "), po.RunID)
	}
	if e.Parquet != "" {
		st, err := export.WriteParquet(e.Parquet, a.Trace, a.Attr, a.Align, po)
		if err != nil {
			return fmt.Errorf("--parquet %s: %w", e.Parquet, err)
		}
		say(e.Parquet, st, export.ParquetTables)
	}
	if e.Dataset == "" {
		return nil
	}
	do := export.DatasetOptions{ParquetOptions: po}
	if !e.NoInputs {
		do.Inputs = inputs
	}
	switch {
	case e.Date != "":
		do.Date, _ = time.Parse(time.DateOnly, e.Date) // Check has parsed it
	case do.Date.IsZero():
		do.Date = runStart(a)
	}
	st, err := export.WriteDataset(e.Dataset, a.Trace, a.Attr, a.Align, do)
	if err != nil {
		return fmt.Errorf("--dataset %s: %w", e.Dataset, err)
	}
	p, _ := export.PartitionDir("requests", do.ParquetOptions)
	say(filepath.Join(e.Dataset, "*", strings.TrimPrefix(p, "requests/")), st, export.DatasetTables)
	return nil
}

// runStart is the UTC time of the run's first span, API call or GPU op when the
// reference clock is a wall clock; zero otherwise.
func runStart(a *Result) time.Time {
	realtime := false
	for _, f := range a.Align.Fits {
		realtime = realtime || f.Status == align.StatusReference && f.Kind == ingest.ClockRealtime.String()
	}
	first, ok := int64(0), false
	for i := range a.Trace.Spans {
		if s := a.Trace.Spans[i].Start; !ok || s < first {
			first, ok = s, true
		}
	}
	for i := range a.Trace.APICalls {
		if s := a.Trace.APICalls[i].Start; !ok || s < first {
			first, ok = s, true
		}
	}
	for i := range a.Trace.GPUOps {
		if s := a.Trace.GPUOps[i].Start; !ok || s < first {
			first, ok = s, true
		}
	}
	if !realtime || !ok {
		return time.Time{}
	}
	return time.Unix(0, first).UTC()
}

// datasetInputs, for a dataset (analyze --parquet DIR RUN_ID), writes the
// run's kept input files into a temporary folder and returns their paths and
// the function that removes them; otherwise paths as they are.
func datasetInputs(paths []string, dataset string, m *progress.Meter) ([]string, func(), error) {
	if dataset == "" {
		return paths, func() {}, nil
	}
	if len(paths) != 1 {
		return nil, func() {}, &OptionError{fmt.Errorf("--parquet %s reads one run: give its run_id, not %d arguments", dataset, len(paths))}
	}
	tmp, err := os.MkdirTemp("", "llmprof-run-*")
	if err != nil {
		return nil, func() {}, err
	}
	cleanup := func() { os.RemoveAll(tmp) }
	m.Stage("restoring inputs")
	in, err := export.RestoreInputs(dataset, paths[0], tmp, m.Bytes)
	if err != nil {
		return nil, cleanup, fmt.Errorf("--parquet %s: %w", dataset, err)
	}
	return in, cleanup, nil
}
