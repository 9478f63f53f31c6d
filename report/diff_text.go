package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
	"github.com/llmprof/llmprof/compare"
)

// verdict is the style of a gate verdict.
func (s styles) verdict(v compare.Verdict) lipgloss.Style {
	switch v {
	case compare.Fail:
		return s.fail
	case compare.Pass:
		return s.pass
	}
	return s.inconclusive
}

// cell is one table cell: its plain text (for width) and style.
type cell struct {
	text  string
	style *lipgloss.Style
	right bool
}

// WriteDiffText writes the comparison as an aligned table for a terminal:
// one row per metric (benchstat's layout: values, change or ~, interval,
// p-value, minimum detectable effect, rule and verdict), the explanation
// under each significant or gated metric, then the gate's outcome and the
// warnings.
func WriteDiffText(w io.Writer, res *compare.Result, o DiffOptions) error {
	if o.Width > 0 {
		var b strings.Builder
		width := o.Width
		o.Width = 0
		if err := WriteDiffText(&b, res, o); err != nil {
			return err
		}
		_, err := io.WriteString(w, fitLines(b.String(), width))
		return err
	}
	bw := bufio.NewWriter(w)
	st := newStyles(io.Discard, o.Color)
	level := strconv.FormatFloat(100*(1-res.Options.Alpha), 'f', -1, 64) + "%"
	fmt.Fprintf(bw, "%s %s\n", st.title.Render("baseline: "), sideLine(res.Baseline))
	fmt.Fprintf(bw, "%s %s\n", st.title.Render("candidate:"), sideLine(res.Candidate))
	fmt.Fprintln(bw, st.dim.Render(fmt.Sprintf("%s intervals, replication unit: %s, bootstrap %d replicates (seed %d)%s",
		level, res.Unit, res.Options.Reps, res.Options.Seed, blockNote(res.Options.Block))))
	fmt.Fprintln(bw)

	header := []cell{{text: "metric"}, {text: "baseline", right: true}, {text: "candidate", right: true},
		{text: "change", right: true}, {text: level + " CI"}, {text: "p", right: true}, {text: "MDE", right: true}, {text: "gate"}, {text: "verdict"}}
	var rows [][]cell
	var notes []string // explanation line per row ("" for none)
	hidden := 0
	for _, m := range res.Metrics {
		if !shown(m, o) {
			hidden++
			continue
		}
		change := cell{text: fmtChange(m), right: true}
		if m.Significant {
			good := (m.DeltaPct < 0) != higherIsBetter(m)
			if good {
				change.style = &st.good
			} else {
				change.style = &st.bad
			}
		}
		row := []cell{{text: m.Name}, {text: fmtValue(m.Baseline, m.Unit), right: true}, {text: fmtValue(m.Candidate, m.Unit), right: true},
			change, {text: fmtCI(m)}, {text: fmtP(m.P), right: true}, {text: fmtMDE(m), right: true}}
		if g := m.Gate; g != nil {
			vs := st.verdict(g.Verdict)
			row = append(row, cell{text: strings.TrimPrefix(g.Rule.String(), m.Name+" ")}, cell{text: verdictWord(g.Verdict), style: &vs})
		} else {
			row = append(row, cell{}, cell{})
		}
		rows = append(rows, row)
		note := ""
		if m.Significant || m.Gate != nil {
			note = explanationLine(m, o.top())
		}
		notes = append(notes, note)
	}
	widths := make([]int, len(header))
	for _, r := range append([][]cell{header}, rows...) {
		for i, c := range r {
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	writeRow := func(r []cell, hdr bool) {
		var line strings.Builder
		for i, c := range r {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text))
			text := c.text
			switch {
			case hdr:
				text = st.title.Render(text)
			case c.style != nil:
				text = c.style.Render(text)
			}
			if c.right {
				line.WriteString(pad + text)
			} else {
				line.WriteString(text + pad)
			}
			if i < len(r)-1 {
				line.WriteString("  ")
			}
		}
		fmt.Fprintln(bw, strings.TrimRight(line.String(), " "))
	}
	writeRow(header, true)
	for i, r := range rows {
		writeRow(r, false)
		if notes[i] != "" {
			fmt.Fprintln(bw, st.dim.Render("  └ "+notes[i]))
		}
	}
	if hidden > 0 {
		fmt.Fprintln(bw, st.dim.Render(fmt.Sprintf("(%d bucket metrics without a significant change not shown; --all lists them)", hidden)))
	}

	writeKernelsText(bw, res.Kernels, st)
	writeStepsText(bw, res.Steps, st)
	fmt.Fprintln(bw)
	g := res.Gate
	if g.Verdict == compare.NoGate {
		fmt.Fprintln(bw, st.dim.Render("no gate rules (--gate or --gate-file): report only"))
	} else {
		vs := st.verdict(g.Verdict)
		exit := ""
		if g.Failed {
			exit = ", exit 3"
		}
		fmt.Fprintf(bw, "%s %s (%d failed, %d passed, %d inconclusive%s)\n", st.title.Render("gate:"), vs.Render(verdictWord(g.Verdict)), g.Fail, g.Pass, g.Inconclusive, exit)
		for _, m := range res.Metrics {
			if m.Gate == nil {
				continue
			}
			mark := map[compare.Verdict]string{compare.Fail: "✗", compare.Pass: "✓", compare.Inconclusive: "?"}[m.Gate.Verdict]
			ms := st.verdict(m.Gate.Verdict)
			fmt.Fprintf(bw, "  %s %s: %s\n", ms.Render(mark), m.Gate.Rule, m.Gate.Reason)
		}
		if g.Inconclusive > 0 && !g.FailOnInconclusive {
			fmt.Fprintln(bw, st.dim.Render("  inconclusive rules do not fail the gate; --fail-on-inconclusive makes them"))
		}
	}
	if len(res.Warnings) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, st.title.Render("warnings:"))
		for _, wn := range res.Warnings {
			fmt.Fprintln(bw, "  "+wn)
		}
	}
	if len(res.InputWarnings) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, st.title.Render(fmt.Sprintf("input warnings (%d; --strict fails on them):", len(res.InputWarnings))))
		for _, wn := range res.InputWarnings {
			fmt.Fprintln(bw, "  "+wn)
		}
	}
	return bw.Flush()
}

func blockNote(block int) string {
	switch {
	case block == compare.BlockDetect:
		return ", blocks where requests are autocorrelated"
	case block == compare.BlockAuto:
		return ", blocks of ⌈n^⅓⌉ requests"
	case block > 1:
		return fmt.Sprintf(", blocks of %d requests", block)
	}
	return ""
}
