package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/history"
	"github.com/llmprof/llmprof/nsys"
)

// Format is one output format of a command: the name --format and --out
// take, its aliases, and its writer of the command's result R with the
// command's options O. Each command's Formats is the one list that its
// help text, its flag validation and its rendering come from.
type Format[R, O any] struct {
	Name    string
	Aliases []string
	Write   func(w io.Writer, r R, o O) error
}

// Formats are a command's output formats, in the order help lists them.
type Formats[R, O any] []Format[R, O]

// Find returns the format a name or alias names.
func (fs Formats[R, O]) Find(name string) (Format[R, O], bool) {
	for _, f := range fs {
		if f.Name == name {
			return f, true
		}
		for _, a := range f.Aliases {
			if a == name {
				return f, true
			}
		}
	}
	return Format[R, O]{}, false
}

// Output is one extra output of a command (--out FORMAT=PATH): the format
// and the file it writes.
type Output[R, O any] struct {
	Format Format[R, O]
	Path   string
}

// ParseOutputs reads --out FORMAT=PATH values; a value that is not one, or
// names no format of fs, is an error.
func (fs Formats[R, O]) ParseOutputs(specs []string) ([]Output[R, O], error) {
	var outs []Output[R, O]
	for _, s := range specs {
		name, path, ok := strings.Cut(s, "=")
		f, known := fs.Find(name)
		if !ok || path == "" || !known {
			return nil, fmt.Errorf("--out %q: want FORMAT=PATH with FORMAT %s", s, fs.Names())
		}
		outs = append(outs, Output[R, O]{f, path})
	}
	return outs, nil
}

// Names lists the formats' names for help and errors: "text, markdown,
// json or html".
func (fs Formats[R, O]) Names() string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return orList(names)
}

// DiffFormats are `llmprof diff`'s output formats.
var DiffFormats = Formats[*compare.Result, DiffOptions]{
	{Name: "text", Write: WriteDiffText},
	{Name: "markdown", Aliases: []string{"md"}, Write: WriteDiffMarkdown},
	{Name: "json", Write: func(w io.Writer, res *compare.Result, _ DiffOptions) error { return WriteDiffJSON(w, res) }},
	{Name: "junit", Write: func(w io.Writer, res *compare.Result, _ DiffOptions) error { return WriteDiffJUnit(w, res) }},
	{Name: "html", Write: WriteDiffHTML},
}

// Analysis is what `llmprof analyze` renders: the report, and the HTML
// page's views of the analysis behind it (built only for HTML).
type Analysis struct {
	Report *Report
	Views  func() *HTMLViews
}

// AnalyzeFormats are `llmprof analyze`'s output formats.
var AnalyzeFormats = Formats[Analysis, TextOptions]{
	{Name: "text", Write: func(w io.Writer, a Analysis, o TextOptions) error { return a.Report.WriteText(w, o) }},
	{Name: "json", Write: func(w io.Writer, a Analysis, _ TextOptions) error { return a.Report.WriteJSON(w) }},
	{Name: "markdown", Aliases: []string{"md"}, Write: func(w io.Writer, a Analysis, _ TextOptions) error { return a.Report.WriteMarkdown(w) }},
	{Name: "html", Write: func(w io.Writer, a Analysis, _ TextOptions) error { return a.Report.WriteHTML(w, a.Views()) }},
}

// Tenants is what `llmprof tenants` renders: the tenant analysis, or the
// note saying why there is none.
type Tenants struct {
	Result *causal.Result
	Note   string
}

// TenantsFormats are `llmprof tenants`' output formats.
var TenantsFormats = Formats[Tenants, TextOptions]{
	{Name: "text", Write: func(w io.Writer, t Tenants, o TextOptions) error { return WriteTenantsText(w, t.Result, t.Note, o) }},
	{Name: "json", Write: func(w io.Writer, t Tenants, _ TextOptions) error { return writeTenantsJSON(w, t) }},
}

// writeTenantsJSON is the tenant analysis as indented JSON, or {"note": …}
// when there is none.
func writeTenantsJSON(w io.Writer, t Tenants) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if t.Result == nil {
		return enc.Encode(map[string]string{"note": t.Note})
	}
	return enc.Encode(t.Result)
}

// HistoryFormats are `llmprof history`'s output formats.
var HistoryFormats = Formats[*history.Result, TextOptions]{
	{Name: "text", Write: ignoreOptions(WriteHistoryText)},
	{Name: "markdown", Aliases: []string{"md"}, Write: ignoreOptions(WriteHistoryMarkdown)},
	{Name: "json", Write: ignoreOptions(WriteHistoryJSON)},
	{Name: "html", Write: ignoreOptions(WriteHistoryHTML)},
}

// Stats is what `llmprof stats` renders: one nsys stats report over one or
// more files.
type Stats struct {
	Report *nsys.Report
	Files  []StatsFile
}

// StatsFormats are `llmprof stats`' output formats.
var StatsFormats = Formats[Stats, TextOptions]{
	{Name: "text", Write: func(w io.Writer, s Stats, _ TextOptions) error { return renderStatsText(w, s.Report, s.Files) }},
	{Name: "csv", Write: func(w io.Writer, s Stats, _ TextOptions) error { return renderStatsCSV(w, s.Report, s.Files) }},
	{Name: "json", Write: func(w io.Writer, s Stats, _ TextOptions) error { return renderStatsJSON(w, s.Report, s.Files) }},
}

// ignoreOptions adapts a writer that takes no options.
func ignoreOptions[R any](write func(io.Writer, R) error) func(io.Writer, R, TextOptions) error {
	return func(w io.Writer, r R, _ TextOptions) error { return write(w, r) }
}

// orList joins names as "a, b or c".
func orList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
