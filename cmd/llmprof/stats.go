package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/nsys"
)

// StatsOptions are the parsed arguments of llmprof stats.
type StatsOptions struct {
	IO *IOStreams
	// Report is the nsys stats report name, optionally with ":base" or
	// ":mangled" (e.g. "cuda_gpu_kern_sum:base").
	Report string
	// Files are the Nsight Systems SQLite exports (or PyTorch profiler
	// traces, for the *_sum reports).
	Files []string
	// Format is text (default), csv or json.
	Format string
	// Output is the file to write instead of stdout (written atomically).
	Output string
}

// NewCmdStats builds the stats command.
func NewCmdStats(f *Factory) *cobra.Command {
	opts := &StatsOptions{IO: f.IO}
	var list strings.Builder
	for _, r := range nsys.Reports() {
		fmt.Fprintf(&list, "  %-22s %s\n", r.Name, r.Summary)
	}
	cmd := &cobra.Command{
		Use:   "stats REPORT FILE...",
		Short: "Print an nsys stats report of Nsight Systems SQLite exports, without nsys",
		Long: strings.TrimSpace(`
Print one of the reports 'nsys stats' prints, computed by llmprof from an
Nsight Systems SQLite export (nsys export --type sqlite, nsys 2023.1 to
2026.1), with the same definitions: kernel, API, memory and NVTX summaries
and the NVTX→GPU projection. No nsys installation is needed. The summary
reports (*_sum) also read PyTorch profiler (Kineto) traces, whose
record_function annotations stand for NVTX ranges.

Reports (names as nsys spells them; kernel reports take ":base" for short
kernel names and ":mangled" for mangled ones):

` + list.String() + `
Times are in nanoseconds; trace reports print them relative to the session
start, as nsys does. Averages, medians and standard deviations (the sample
standard deviation) are rounded to 0.1, percentages of the report's total
to 0.1.`),
		Example: strings.Trim(`
  llmprof stats cuda_gpu_kern_sum report1.sqlite
  llmprof stats cuda_gpu_kern_sum:base report1.sqlite report2.sqlite
  llmprof stats nvtx_sum --format csv -o nvtx.csv report1.sqlite
  llmprof stats nvtx_gpu_proj_trace --format json report1.sqlite | jq '.files[0].rows[0]'`, "\n"),
		Args: argsNamed(2, -1, "REPORT and FILE: a report name and at least one nsys SQLite export"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Report, opts.Files = args[0], args[1:]
			return runStats(cmd, opts)
		},
	}
	cmd.Flags().StringVar(&opts.Format, "format", "text", "output format: text, csv or json")
	cmd.Flags().StringVarP(&opts.Output, "output", "o", "", "write the report to `FILE` instead of stdout")
	return cmd
}

// statsResult is one file's report.
type statsResult struct {
	path     string
	table    *nsys.Table
	warnings []ingest.Warning
}

func runStats(cmd *cobra.Command, opts *StatsOptions) error {
	report, ropts, err := nsys.FindReport(opts.Report)
	if err != nil {
		return usageErrorf("%v", err)
	}
	render, ok := statsRenderers[opts.Format]
	if !ok {
		return usageErrorf("unknown --format %q (want text, csv or json)", opts.Format)
	}
	dec := report.Decoder(ropts)
	var results []statsResult
	for _, path := range opts.Files {
		t, err := decodeStatsInput(cmd, report, dec, path)
		if err != nil {
			return err
		}
		for _, w := range t.Warnings.List {
			fmt.Fprintln(opts.IO.ErrOut, "warning: "+w.String())
		}
		results = append(results, statsResult{path: path, table: report.Run(t, ropts), warnings: t.Warnings.List})
	}
	return writeOutput(opts.IO, opts.Output, func(w io.Writer, _ bool) error { return render(w, report, results) })
}

// decodeStatsInput decodes one input of stats: an Nsight Systems export, or
// a PyTorch profiler (Kineto) trace for the summary reports, which need
// only kernels, copies, API calls and annotations (the trace reports print
// times relative to an nsys session start that a Kineto trace does not
// have).
func decodeStatsInput(cmd *cobra.Command, report *nsys.Report, dec nsys.Decoder, path string) (*ingest.Trace, error) {
	in, err := ingest.NewInput(path)
	if err != nil || !(kineto.Decoder{}).Sniff(in) {
		return dec.DecodeFile(cmd.Context(), path)
	}
	if !strings.HasSuffix(report.Name, "_sum") {
		return nil, usageErrorf("%s: report %s needs an Nsight Systems export; a PyTorch profiler trace gives the *_sum reports", path, report.Name)
	}
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: path}}
	if err := (kineto.Decoder{SkipPython: true}).Decode(cmd.Context(), in, t); err != nil {
		return nil, &ingest.InputError{Path: path, Err: err}
	}
	t.Validate()
	return t, nil
}

var statsRenderers = map[string]func(io.Writer, *nsys.Report, []statsResult) error{
	"text": renderStatsText,
	"csv":  renderStatsCSV,
	"json": renderStatsJSON,
}

// formatCell renders a value for text (with thousands separators, as nsys
// prints) or for CSV (plain).
func formatCell(c nsys.Cell, kind nsys.ColumnKind, grouped bool) string {
	if c.Null {
		return ""
	}
	switch kind {
	case nsys.ColID:
		return strconv.FormatInt(c.Int, 10)
	case nsys.ColInt:
		s := strconv.FormatInt(c.Int, 10)
		if grouped {
			s = groupDigits(s)
		}
		return s
	case nsys.ColFloat1, nsys.ColFloat3:
		prec := 1
		if kind == nsys.ColFloat3 {
			prec = 3
		}
		s := strconv.FormatFloat(c.Float, 'f', prec, 64)
		if grouped {
			whole, frac, _ := strings.Cut(s, ".")
			s = groupDigits(whole) + "." + frac
		}
		return s
	}
	return c.Text
}

// groupDigits inserts thousands separators into a decimal integer.
func groupDigits(s string) string {
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// renderStatsText prints each file's table the way nsys stats does: a
// title line, a header, a rule, and aligned columns (numbers to the right,
// names to the left).
func renderStatsText(w io.Writer, r *nsys.Report, results []statsResult) error {
	var b bytes.Buffer
	for i, res := range results {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Processing [%s] with [%s]...\n\n ** %s (%s):\n\n", res.path, r.Name, r.Title, r.Name)
		tab := res.table
		if len(tab.Rows) == 0 {
			fmt.Fprintf(&b, "SKIPPED: %s does not contain data for this report.\n", res.path)
			continue
		}
		cells := make([][]string, len(tab.Rows))
		width := make([]int, len(tab.Columns))
		for j, c := range tab.Columns {
			width[j] = len(c.Name)
		}
		for k, row := range tab.Rows {
			cells[k] = make([]string, len(row))
			for j, c := range row {
				cells[k][j] = formatCell(c, tab.Columns[j].Kind, true)
				width[j] = max(width[j], len([]rune(cells[k][j])))
			}
		}
		line := func(vals []string, left func(j int) bool) {
			var l strings.Builder
			for j, v := range vals {
				l.WriteString("  ")
				pad := strings.Repeat(" ", width[j]-len([]rune(v)))
				if left(j) {
					l.WriteString(v + pad)
				} else {
					l.WriteString(pad + v)
				}
			}
			b.WriteString(strings.TrimRight(l.String()[1:], " ") + "\n")
		}
		isText := func(j int) bool { return tab.Columns[j].Kind == nsys.ColText }
		names := make([]string, len(tab.Columns))
		rules := make([]string, len(tab.Columns))
		for j, c := range tab.Columns {
			names[j], rules[j] = c.Name, strings.Repeat("-", width[j])
		}
		line(names, isText)
		line(rules, isText)
		for _, row := range cells {
			line(row, isText)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// renderStatsCSV prints one CSV table: the report's columns, values without
// separators; with several files a first column names the file.
func renderStatsCSV(w io.Writer, _ *nsys.Report, results []statsResult) error {
	cw := csv.NewWriter(w)
	multi := len(results) > 1
	for i, res := range results {
		tab := res.table
		if i == 0 {
			var head []string
			if multi {
				head = append(head, "File")
			}
			for _, c := range tab.Columns {
				head = append(head, c.Name)
			}
			if err := cw.Write(head); err != nil {
				return err
			}
		}
		for _, row := range tab.Rows {
			var rec []string
			if multi {
				rec = append(rec, res.path)
			}
			for j, c := range row {
				rec = append(rec, formatCell(c, tab.Columns[j].Kind, false))
			}
			if err := cw.Write(rec); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// renderStatsJSON prints {"schema", "report", "title", "files": [{"path",
// "rows": [{column: value, …}], "warnings"}]}; rows keep the report's
// column order.
func renderStatsJSON(w io.Writer, r *nsys.Report, results []statsResult) error {
	var b bytes.Buffer
	put := func(v any) {
		enc, _ := json.Marshal(v)
		b.Write(enc)
	}
	b.WriteString(`{"schema":"llmprof.stats/v1","report":`)
	put(r.Name)
	b.WriteString(`,"title":`)
	put(r.Title)
	b.WriteString(`,"files":[`)
	for i, res := range results {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"path":`)
		put(res.path)
		b.WriteString(`,"rows":[`)
		tab := res.table
		for k, row := range tab.Rows {
			if k > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			for j, c := range row {
				if j > 0 {
					b.WriteByte(',')
				}
				put(tab.Columns[j].Name)
				b.WriteByte(':')
				switch {
				case c.Null:
					b.WriteString("null")
				case tab.Columns[j].Kind == nsys.ColInt || tab.Columns[j].Kind == nsys.ColID:
					put(c.Int)
				case tab.Columns[j].Kind == nsys.ColText:
					put(c.Text)
				default:
					put(c.Float)
				}
			}
			b.WriteByte('}')
		}
		b.WriteString(`],"warnings":`)
		warnings := make([]ingest.Warning, len(res.warnings))
		copy(warnings, res.warnings)
		put(warnings)
		b.WriteByte('}')
	}
	b.WriteString("]}\n")
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, b.Bytes(), "", "  "); err != nil {
		return err
	}
	_, err := w.Write(pretty.Bytes())
	return err
}
