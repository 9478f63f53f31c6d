package report

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/nsys"
)

// StatsFile is one file's table of an nsys stats report.
type StatsFile struct {
	Path     string
	Table    *nsys.Table
	Warnings []ingest.Warning
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
func renderStatsText(w io.Writer, r *nsys.Report, results []StatsFile) error {
	var b bytes.Buffer
	for i, res := range results {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "Processing [%s] with [%s]...\n\n ** %s (%s):\n\n", res.Path, r.Name, r.Title, r.Name)
		tab := res.Table
		if len(tab.Rows) == 0 {
			fmt.Fprintf(&b, "SKIPPED: %s does not contain data for this report.\n", res.Path)
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
func renderStatsCSV(w io.Writer, _ *nsys.Report, results []StatsFile) error {
	cw := csv.NewWriter(w)
	multi := len(results) > 1
	for i, res := range results {
		tab := res.Table
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
				rec = append(rec, res.Path)
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
func renderStatsJSON(w io.Writer, r *nsys.Report, results []StatsFile) error {
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
		put(res.Path)
		b.WriteString(`,"rows":[`)
		tab := res.Table
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
		warnings := make([]ingest.Warning, len(res.Warnings))
		copy(warnings, res.Warnings)
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
