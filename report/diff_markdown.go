package report

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/compare"
)

// WriteDiffMarkdown writes the comparison as GitHub-flavoured Markdown that
// fits a pull-request comment and $GITHUB_STEP_SUMMARY: the verdict in the
// heading, the gate rules first, the regressions explained, then every
// metric in a collapsed table.
func WriteDiffMarkdown(w io.Writer, res *compare.Result, o DiffOptions) error {
	bw := bufio.NewWriter(w)
	level := strconv.FormatFloat(100*(1-res.Options.Alpha), 'f', -1, 64) + "%"
	g := res.Gate
	icon := map[compare.Verdict]string{compare.Fail: "❌", compare.Pass: "✅", compare.Inconclusive: "⚠️", compare.NoGate: "📊"}
	title := verdictWord(g.Verdict)
	if g.Verdict == compare.NoGate {
		title = "report"
	}
	fmt.Fprintf(bw, "### %s llmprof diff: %s\n\n", icon[g.Verdict], title)
	fmt.Fprintf(bw, "**Baseline** %s · **Candidate** %s  \n", mdSide(res.Baseline), mdSide(res.Candidate))
	fmt.Fprintf(bw, "%s intervals · replication unit: %s · bootstrap %d replicates, seed %d%s\n\n",
		level, res.Unit, res.Options.Reps, res.Options.Seed, blockNote(res.Options.Block))

	if g.Verdict != compare.NoGate {
		fmt.Fprintf(bw, "| | rule | baseline | candidate | change | %s CI | verdict |\n", level)
		fmt.Fprintln(bw, "|---|---|---:|---:|---:|---|---|")
		for _, m := range res.Metrics {
			if m.Gate == nil {
				continue
			}
			change := fmtChange(m)
			if m.Significant {
				change = "**" + change + "**"
			}
			fmt.Fprintf(bw, "| %s | `%s` | %s | %s | %s | %s | %s |\n", icon[m.Gate.Verdict], mdEscape(m.Gate.Rule.String()),
				fmtValue(m.Baseline, m.Unit), fmtValue(m.Candidate, m.Unit), change, fmtCI(m), m.Gate.Verdict)
		}
		fmt.Fprintln(bw)
		fmt.Fprintf(bw, "**Gate: %s** — %d failed, %d passed, %d inconclusive", strings.ToLower(title), g.Fail, g.Pass, g.Inconclusive)
		if g.Inconclusive > 0 {
			if g.FailOnInconclusive {
				fmt.Fprint(bw, " (inconclusive fails the gate)")
			} else {
				fmt.Fprint(bw, " (inconclusive does not fail the gate)")
			}
		}
		fmt.Fprintln(bw)
		fmt.Fprintln(bw)
		for _, m := range res.Metrics {
			if m.Gate != nil && m.Gate.Verdict != compare.Pass {
				fmt.Fprintf(bw, "- `%s`: %s\n", mdEscape(m.Gate.Rule.String()), mdEscape(m.Gate.Reason))
			}
		}
		fmt.Fprintln(bw)
	}

	// Where the time went: the gated metrics (every significant one when
	// there are no rules), so a PR comment stays short.
	var expl []string
	for _, m := range res.Metrics {
		if len(m.Explanation) == 0 {
			continue
		}
		if g.Verdict == compare.NoGate && !m.Significant || g.Verdict != compare.NoGate && m.Gate == nil {
			continue
		}
		expl = append(expl, fmt.Sprintf("- `%s` %s: %s", m.Name, fmtChange(m), mdEscape(explanationLine(m, o.top()))))
	}
	if len(expl) > 0 {
		fmt.Fprintln(bw, "**Where the change comes from** (attribution buckets, candidate − baseline, largest first)")
		fmt.Fprintln(bw)
		for _, l := range expl {
			fmt.Fprintln(bw, l)
		}
		fmt.Fprintln(bw)
	}

	writeKernelsMarkdown(bw, res.Kernels)
	writeStepsMarkdown(bw, res.Steps)
	fmt.Fprintln(bw, "<details><summary>All metrics</summary>")
	fmt.Fprintln(bw)
	fmt.Fprintf(bw, "| metric | baseline | candidate | change | %s CI | p | MDE | n |\n", level)
	fmt.Fprintln(bw, "|---|---:|---:|---:|---|---:|---:|---:|")
	for _, m := range res.Metrics {
		if !shown(m, o) {
			continue
		}
		fmt.Fprintf(bw, "| `%s` | %s | %s | %s | %s | %s | %s | %d / %d |\n", m.Name, fmtValue(m.Baseline, m.Unit), fmtValue(m.Candidate, m.Unit),
			fmtChange(m), fmtCI(m), fmtP(m.P), fmtMDE(m), m.NBaseline, m.NCandidate)
	}
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "`~`: no significant change. MDE: the smallest change these samples detect with 80% power.")
	fmt.Fprintln(bw)
	fmt.Fprintln(bw, "</details>")
	if len(res.Warnings) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, "**Warnings**")
		fmt.Fprintln(bw)
		for _, wn := range res.Warnings {
			fmt.Fprintf(bw, "- %s\n", mdEscape(wn))
		}
	}
	if len(res.InputWarnings) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintf(bw, "**Input warnings** (%d; `--strict` fails on them)\n", len(res.InputWarnings))
		fmt.Fprintln(bw)
		for _, wn := range res.InputWarnings {
			fmt.Fprintf(bw, "- %s\n", mdEscape(wn))
		}
	}
	return bw.Flush()
}

func mdSide(s compare.SideSummary) string {
	line := sideLine(s)
	if i := strings.LastIndex(line, " ("); i > 0 {
		return "`" + mdEscape(line[:i]) + "`" + line[i:]
	}
	return line
}

// mdEscape keeps table cells intact: a pipe would end the cell.
func mdEscape(s string) string {
	return strings.ReplaceAll(s, "|", `\|`)
}
