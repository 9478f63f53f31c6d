package report

import (
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/llmprof/llmprof/history"
)

// WriteHistoryHTML renders a history as one offline HTML page: the gate,
// one small-multiple chart per metric (the runs along x, each run's value a
// dot, the change points as dashed verticals, each segment's level as a
// line over its runs), a table of the change points, and the runs.
func WriteHistoryHTML(w io.Writer, res *history.Result) error {
	h := &htmlPage{}
	title := fmt.Sprintf("llmprof history — %d runs", len(res.Runs))
	if len(res.Gate.Rules) > 0 {
		title += " · gate pass"
		if res.Gate.Failed {
			title = fmt.Sprintf("llmprof history — %d runs · gate fail", len(res.Runs))
		}
	}
	h.f(htmlHead)
	h.f(`<title>%s</title><style>%s</style></head><body>`, esc(title), htmlCSS)
	h.f(`<header><h1>%s</h1><p class="dim">%s order · e-divisive means, permutation test at %s with %d permutations · schema %s</p></header><main>`,
		esc(title), esc(res.Options.Order), strconv.FormatFloat(res.Options.Detect.Alpha, 'g', -1, 64), res.Options.Detect.Permutations, history.Schema)
	if len(res.Gate.Rules) > 0 {
		h.section("gate", "Gate on the newest run", "a rule fails when the newest run is past a confirmed change that breaks it")
		var rows [][]string
		for _, r := range res.Gate.Rules {
			rows = append(rows, []string{r.Rule.String(), string(r.Verdict), r.Reason})
		}
		h.table("", []string{"rule", "verdict", "why"}, rows, false)
		h.end()
	}
	h.section("metrics", "Every metric over the runs", "dots: each run's value; dashed: a change point; lines: each segment's level (the median of its runs)")
	h.f(`<div class="multiples">`)
	for _, m := range res.Metrics {
		h.figure(fmt.Sprintf("%s — %s", m.Name, historyCaption(m)), historyChart(m, len(res.Runs)))
	}
	h.f(`</div>`)
	h.end()
	h.section("changes", "Change points", "each change compared as diff compares the runs before it with the runs after it")
	var rows [][]string
	for _, m := range res.Metrics {
		for _, c := range m.Changes {
			change, ci := "—", "—"
			if cm := c.Comparison; cm != nil {
				change, ci = fmtPct(cm.DeltaPct), fmtCI(*cm)
			}
			rows = append(rows, []string{m.Name, strconv.Itoa(c.Index+1) + changeWhere(c), historyValue(c.Before, m.Unit), historyValue(c.After, m.Unit),
				change, ci, fmtP(c.P), changeExplanation(c)})
		}
	}
	if len(rows) > 0 {
		h.table("", []string{"metric", "at run", "before", "after", "change", "interval", "p", "explained by"}, rows, true)
	} else {
		h.f(`<p class="dim">no change point in any metric</p>`)
	}
	h.end()
	h.section("runs", "Runs", "in the order of the series")
	rows = nil
	for i, r := range res.Runs {
		rows = append(rows, []string{strconv.Itoa(i + 1), runTime(r.Time), r.ID, r.Commit})
	}
	h.table("", []string{"#", "time", "run", "commit"}, rows, false)
	h.end()
	if len(res.Warnings)+len(res.Notes) > 0 {
		h.section("warnings", "Warnings and notes", "")
		h.f(`<ul>`)
		for _, s := range append(append([]string{}, res.Warnings...), res.Notes...) {
			h.f(`<li>%s</li>`, esc(s))
		}
		h.f(`</ul>`)
		h.end()
	}
	h.f(`</main><pre id="page-errors" hidden></pre><script>%s</script></body></html>`, htmlJS)
	_, err := io.WriteString(w, h.b.String())
	return err
}

func historyCaption(m history.Metric) string {
	switch {
	case m.Note != "":
		return "not tested: " + m.Note
	case len(m.Changes) == 0:
		return "no change point (" + pointsWord(m.Points) + ")"
	case len(m.Changes) == 1:
		return "1 change point (" + pointsWord(m.Points) + ")"
	}
	return fmt.Sprintf("%d change points (%s)", len(m.Changes), pointsWord(m.Points))
}

// historyChart is one metric's small multiple.
func historyChart(m history.Metric, runs int) string {
	const w, h, left, right, top, bottom = 360.0, 190.0, 52.0, 12.0, 10.0, 36.0
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range m.Values {
		if !math.IsNaN(v) {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 0, 1
	}
	pad := (hi - lo) * 0.08
	if pad == 0 {
		pad = math.Max(math.Abs(hi)*0.05, 1)
	}
	xs := axisScale{lo: 0.5, hi: float64(runs) + 0.5, p0: left, p1: w - right}
	ys := axisScale{lo: lo - pad, hi: hi + pad, p0: h - bottom, p1: top}
	d := newSVG(w, h, m.Name+" over the runs")
	d.frame(xs, ys, "run", m.Name+shortUnitParen(m.Unit))
	for _, s := range m.Segments {
		if math.IsNaN(s.Level) {
			continue
		}
		fmt.Fprintf(&d.b, `<line class="level" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"><title>%s</title></line>`,
			xs.at(float64(s.From)+0.5), xs.at(float64(s.To)+0.5), ys.at(s.Level), ys.at(s.Level), palette[1],
			esc(fmt.Sprintf("runs %d–%d: level %s", s.From+1, s.To, historyValue(s.Level, m.Unit))))
	}
	for _, c := range m.Changes {
		x := xs.at(float64(c.Index) + 0.5)
		fmt.Fprintf(&d.b, `<line class="change" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="4 3"><title>%s</title></line>`,
			x, x, top, h-bottom, palette[5], esc(fmt.Sprintf("change at run %d: %s → %s, p %s", c.Index+1, historyValue(c.Before, m.Unit), historyValue(c.After, m.Unit), fmtP(c.P))))
	}
	for i, v := range m.Values {
		if math.IsNaN(v) {
			continue
		}
		fmt.Fprintf(&d.b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s</title></circle>`, xs.at(float64(i+1)), ys.at(v), palette[0],
			esc(fmt.Sprintf("run %d: %s", i+1, historyValue(v, m.Unit))))
	}
	return d.String()
}
