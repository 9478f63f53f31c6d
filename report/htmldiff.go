package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/llmprof/llmprof/compare"
)

// WriteDiffHTML renders a comparison as one offline HTML page (`diff --out
// html=diff.html`): a forest plot of every shown metric's change in percent
// with its confidence interval and the gate's threshold, the gate's verdicts,
// and for each changed metric the attribution buckets that explain it. It
// reads the compare result only; like the other renderers it computes
// nothing beyond coordinates.
func WriteDiffHTML(w io.Writer, res *compare.Result, o DiffOptions) error {
	h := &htmlPage{}
	title := fmt.Sprintf("llmprof diff — gate %s", res.Gate.Verdict)
	h.f(htmlHead)
	h.f(`<title>%s</title><style>%s</style></head><body>`, esc(title), htmlCSS)
	h.f(`<header><h1>%s</h1><p class="dim">baseline %s (%s, %s) · candidate %s (%s, %s) · replication unit: %s</p></header><main>`,
		esc(title), esc(res.Baseline.Label), plural(res.Baseline.Requests, "request"), plural(res.Baseline.Runs, "run"),
		esc(res.Candidate.Label), plural(res.Candidate.Requests, "request"), plural(res.Candidate.Runs, "run"), esc(res.Unit))
	var metrics []compare.Metric
	for _, m := range res.Metrics {
		if o.All || m.Gate != nil || m.Significant || !isBucketMetric(m.Name) {
			metrics = append(metrics, m)
		}
	}
	g := res.Gate
	h.section("gate", "Gate", fmt.Sprintf("%s: %d pass, %d fail, %d inconclusive", g.Verdict, g.Pass, g.Fail, g.Inconclusive))
	var gated [][]string
	for _, m := range metrics {
		if m.Gate != nil {
			gated = append(gated, []string{m.Name, m.Gate.Rule.String(), string(m.Gate.Verdict), m.Gate.Reason})
		}
	}
	if len(gated) > 0 {
		h.table("", []string{"metric", "rule", "verdict", "why"}, gated, false)
	} else {
		h.f(`<p class="dim">no gate rules: a report only</p>`)
	}
	h.end()

	h.section("forest", "Every metric's change", "candidate vs baseline in percent, with the confidence interval; dashed: the gate's threshold")
	h.figure("Change of each metric (percent) with its interval; filled dot: significant; colour: the gate's verdict", forestPlot(metrics))
	var rows [][]string
	for _, m := range metrics {
		verdict := "—"
		if m.Gate != nil {
			verdict = string(m.Gate.Verdict)
		}
		rows = append(rows, []string{m.Name, diffValue(m.Baseline, m.Unit), diffValue(m.Candidate, m.Unit), fmtPct(m.DeltaPct),
			fmtCI(m), fmtP(m.P), verdict})
	}
	h.table("", []string{"metric", "baseline", "candidate", "change", "interval", "p", "gate"}, rows, true)
	h.end()

	h.section("explanations", "What explains the changes", "change of each attribution bucket, candidate minus baseline, in ms")
	n := 0
	for _, m := range metrics {
		if len(m.Explanation) == 0 || (!m.Significant && m.Gate == nil) {
			continue
		}
		n++
		var items []barItem
		for i, e := range m.Explanation {
			if i == 8 {
				break
			}
			c := palette[5] // slower
			if e.DeltaMS < 0 {
				c = palette[0] // faster
			}
			items = append(items, barItem{Label: e.Bucket, Value: math.Abs(e.DeltaMS), Text: signedMs(e.DeltaMS) + " ms", Color: c})
		}
		h.figure(fmt.Sprintf("%s (%s): %s — vermillion slower, blue faster", m.Name, m.Breakdown, signedPct(m.DeltaPct)),
			hBars(m.Name+" explanation", items))
	}
	if n == 0 {
		h.f(`<p class="dim">no significant or gated change to explain</p>`)
	}
	h.end()
	h.kernelsHTML(res.Kernels)
	h.stepsHTML(res.Steps)
	if len(res.Warnings) > 0 {
		h.section("warnings", fmt.Sprintf("Warnings (%d)", len(res.Warnings)), "")
		h.f(`<ul class="warnings">`)
		for _, w := range res.Warnings {
			h.f(`<li>%s</li>`, esc(w))
		}
		h.f(`</ul>`)
		h.end()
	}
	h.f(`</main><pre id="page-errors" hidden></pre><script>%s</script></body></html>`, htmlJS)
	_, err := io.WriteString(w, h.b.String())
	return err
}

// isBucketMetric: stage.*, token.*, first_token.* and tenant.* metrics, shown
// (as in the text renderer) only when significant or gated unless All.
func isBucketMetric(name string) bool {
	for _, p := range []string{"stage.", "token.", "first_token.", "tenant."} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

func diffValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmtFloat(v, 3) + " " + unit
}

// thresholdPct is a gate's threshold as a percentage of the baseline (NaN
// when it cannot be: an absolute threshold on a zero baseline).
func thresholdPct(m compare.Metric) float64 {
	r := m.Gate.Rule
	if r.Relative {
		return r.Threshold
	}
	if m.Baseline == 0 || math.IsNaN(m.Baseline) {
		return math.NaN()
	}
	return 100 * r.Threshold / m.Baseline
}

// forestPlot draws one row per metric: the interval as a line (an arrow
// where it is unbounded or beyond the axis), the change as a dot, zero as a
// solid line and each gate threshold as a dashed tick.
func forestPlot(metrics []compare.Metric) string {
	const w = 760.0
	const left, right, rowH, top = 190.0, 20.0, 20.0, 10.0
	h := top + float64(len(metrics))*rowH + 40
	// The axis covers the changes, the finite interval ends and the
	// thresholds, symmetric around 0 and at least ±5%.
	lim := 5.0
	grow := func(v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			lim = math.Max(lim, math.Abs(v))
		}
	}
	for _, m := range metrics {
		grow(m.DeltaPct)
		grow(m.CILowPct)
		grow(m.CIHighPct)
		if m.Gate != nil {
			grow(thresholdPct(m))
		}
	}
	lim = math.Min(lim*1.1, 1000)
	xs := axisScale{lo: -lim, hi: lim, p0: left, p1: w - right}
	d := newSVG(w, h, "Forest plot of the metrics' changes")
	bottom := top + float64(len(metrics))*rowH
	for i := 1; i < len(metrics); i += 2 {
		d.rect(left, top+float64(i)*rowH, w-left-right, rowH, "#f4f4f4", "")
	}
	d.b.WriteString(`<g class="grid">`)
	for _, t := range xs.ticks() {
		px := xs.at(t)
		fmt.Fprintf(&d.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f"/>`, px, px, top, bottom)
		d.text(px, bottom+13, "middle", "tick", tickLabel(t)+"%")
	}
	d.b.WriteString(`</g>`)
	d.text((left+w-right)/2, bottom+28, "middle", "label", "change (%)")
	fmt.Fprintf(&d.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333" stroke-width="1.2"/>`, xs.at(0), xs.at(0), top, bottom)
	clip := func(v float64) (float64, bool) {
		if math.IsNaN(v) {
			return 0, true
		}
		if v < -lim || math.IsInf(v, -1) {
			return -lim, true
		}
		if v > lim || math.IsInf(v, 1) {
			return lim, true
		}
		return v, false
	}
	for i, m := range metrics {
		y := top + float64(i)*rowH + rowH/2
		d.text(left-6, y+4, "end", "label", m.Name)
		color := "#444444"
		verdict := "ungated"
		if m.Gate != nil {
			verdict = string(m.Gate.Verdict)
			switch m.Gate.Verdict {
			case compare.Fail:
				color = palette[5]
			case compare.Pass:
				color = palette[2]
			case compare.Inconclusive:
				color = palette[1]
			}
			if t := thresholdPct(m); !math.IsNaN(t) {
				tx, _ := clip(t)
				fmt.Fprintf(&d.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5" stroke-dasharray="3 2"><title>%s</title></line>`,
					xs.at(tx), xs.at(tx), y-rowH/2+2, y+rowH/2-2, color, esc(m.Gate.Rule.String()))
			}
		}
		lo, loCut := clip(m.CILowPct)
		hi, hiCut := clip(m.CIHighPct)
		tip := fmt.Sprintf("%s: %s (interval %s), p %s, %s", m.Name, fmtPct(m.DeltaPct), fmtCI(m), fmtP(m.P), verdict)
		if !math.IsNaN(m.CILowPct) && !math.IsNaN(m.CIHighPct) {
			fmt.Fprintf(&d.b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2"><title>%s</title></line>`, xs.at(lo), xs.at(hi), y, y, color, esc(tip))
			if loCut {
				fmt.Fprintf(&d.b, `<path d="M%.1f %.1fl6 -4v8z" fill="%s"/>`, xs.at(lo), y, color)
			}
			if hiCut {
				fmt.Fprintf(&d.b, `<path d="M%.1f %.1fl-6 -4v8z" fill="%s"/>`, xs.at(hi), y, color)
			}
		}
		if !math.IsNaN(m.DeltaPct) {
			dx, _ := clip(m.DeltaPct)
			fill := color
			if !m.Significant {
				fill = "#ffffff"
			}
			fmt.Fprintf(&d.b, `<circle cx="%.1f" cy="%.1f" r="4.5" fill="%s" stroke="%s" stroke-width="1.6"><title>%s</title></circle>`, xs.at(dx), y, fill, color, esc(tip))
		}
	}
	return d.String()
}
