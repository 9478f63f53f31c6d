package report

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// The terminal layout fits TextOptions.Width: a table too wide for it first
// elides its first column (names: kernels, tenants) in the middle, where long
// demangled names differ least, and if it is still too wide it is split into
// several tables that each repeat the first column; a prose line is wrapped
// at word boundaries with a hanging indent. Width 0 leaves the layout as it
// is (a file or a pipe has no width).

// minNameWidth is the narrowest the first column of a table is elided to.
const minNameWidth = 18

// elideMiddle shortens s to n cells, keeping its start and end around an
// ellipsis (ANSI styling is not expected in names).
func elideMiddle(s string, n int) string {
	r := []rune(s)
	if len(r) <= n || n < 3 {
		return s
	}
	head := (n - 1) / 2
	tail := n - 1 - head
	return string(r[:head]) + "…" + string(r[len(r)-tail:])
}

// fit makes the table fit width at the given indent: it elides the first
// column if that is enough and returns nil, or returns the tables to render
// in its place, each with the first column and as many of the others as fit.
func (t *table) fit(width, indent int) []*table {
	widths := t.widths()
	total := func(cols []int) int {
		n := indent
		for i, c := range cols {
			if i > 0 {
				n += 2
			}
			n += widths[c]
		}
		return n
	}
	all := make([]int, len(widths))
	for i := range all {
		all[i] = i
	}
	over := total(all) - width
	if over <= 0 {
		return nil
	}
	// The names shrink to what makes the whole table fit, but not below
	// minNameWidth, unless even one column beside them would not fit.
	widest := 0
	for _, w := range widths[1:] {
		widest = max(widest, w)
	}
	w := max(minNameWidth, widths[0]-over)
	w = max(4, min(w, width-indent-2-widest))
	if w < widths[0] {
		var names []string
		for _, r := range t.rows {
			if len(r) > 0 {
				names = append(names, r[0])
			}
		}
		names = shortenAll(names, w, elideMiddle)
		for i, r := range t.rows {
			if len(r) > 0 {
				r[0] = names[i]
			}
		}
		t.cols[0] = elideMiddle(t.cols[0], w)
		widths = t.widths()
		if total(all) <= width {
			return nil
		}
	}
	var out []*table
	cols := []int{0}
	flush := func() {
		part := &table{}
		for _, c := range cols {
			part.cols = append(part.cols, t.cols[c])
		}
		for _, r := range t.rows {
			row := make([]string, 0, len(cols))
			for _, c := range cols {
				if c < len(r) {
					row = append(row, r[c])
				} else {
					row = append(row, "")
				}
			}
			part.rows = append(part.rows, row)
		}
		out = append(out, part)
		cols = []int{0}
	}
	for c := 1; c < len(widths); c++ {
		if len(cols) > 1 && total(append(cols, c)) > width {
			flush()
		}
		cols = append(cols, c)
	}
	flush()
	return out
}

func (t *table) widths() []int {
	widths := make([]int, len(t.cols))
	for i, c := range t.cols {
		widths[i] = ansi.StringWidth(c)
	}
	for _, r := range t.rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], ansi.StringWidth(c))
			}
		}
	}
	return widths
}

// fitLines wraps every line of s wider than width at word boundaries; the
// continuation lines are indented two cells more than the line's own indent.
func fitLines(s string, width int) string {
	if width <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	var b strings.Builder
	for i, l := range lines {
		if i > 0 {
			b.WriteByte('\n')
		}
		if ansi.StringWidth(l) <= width {
			b.WriteString(l)
			continue
		}
		body := strings.TrimLeft(l, " ")
		indent := len(l) - len(body)
		if indent+2 >= width/2 {
			indent = 0
		}
		wrapped := strings.Split(ansi.Wrap(body, width-indent-2, ""), "\n")
		for j, w := range wrapped {
			if j > 0 {
				b.WriteString("\n" + strings.Repeat(" ", indent+2))
			} else {
				b.WriteString(strings.Repeat(" ", indent))
			}
			b.WriteString(strings.TrimRight(w, " "))
		}
	}
	return b.String()
}
