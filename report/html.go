package report

import (
	_ "embed"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/causal"
)

// htmlHead opens every page llmprof writes. The Content-Security-Policy
// lets the page run only its own inline script and style and load nothing
// (images only as data: URIs): a report rendered from a shared capture can
// neither fetch nor send anything, whatever a name in it holds.
const htmlHead = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">` +
	`<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">` +
	`<meta name="viewport" content="width=device-width, initial-scale=1">`

// The HTML report is one self-contained file: inline CSS, inline SVG charts
// and a small inline script (sortable tables, and a data-rendered marker the
// browser test reads). It loads nothing from the network. docs/html.md
// describes what each chart shows.

//go:embed html.css
var htmlCSS string

//go:embed html.js
var htmlJS string

// WriteHTML renders the report as one HTML page. views holds the series the
// charts draw (NewHTMLViews); nil draws only what the Report itself holds.
func (r *Report) WriteHTML(w io.Writer, views *HTMLViews) error {
	if views == nil {
		views = &HTMLViews{}
	}
	h := &htmlPage{}
	title := r.title()
	h.f(htmlHead)
	h.f(`<meta name="generator" content="llmprof %s"><title>%s</title><style>%s</style></head><body>`, esc(r.Version), esc(title), htmlCSS)
	h.f(`<header><h1>%s</h1><p class="dim">llmprof %s · report schema %s</p></header><main>`, esc(title), esc(r.Version), esc(r.Schema))
	h.toc(r)
	for _, sec := range r.Sections() {
		h.htmlSection(r, views, sec)
	}
	h.b.WriteString(r.htmlLongNames(h.b.String()))
	h.f(`</main><pre id="page-errors" hidden></pre><script>%s</script></body></html>`, htmlJS)
	_, err := io.WriteString(w, h.b.String())
	return err
}

type htmlPage struct{ b strings.Builder }

func (h *htmlPage) f(format string, args ...any) { fmt.Fprintf(&h.b, format, args...) }

// section opens a <section> with an id and heading; close with h.end().
func (h *htmlPage) section(id, title, sub string) {
	h.f(`<section id="%s"><h2>%s</h2>`, id, esc(title))
	if sub != "" {
		h.f(`<p class="dim">%s</p>`, esc(sub))
	}
}

func (h *htmlPage) end() { h.f(`</section>`) }

func (h *htmlPage) figure(caption, svg string) {
	h.f(`<figure>%s<figcaption>%s</figcaption></figure>`, svg, esc(caption))
}

// table writes an HTML table; numeric columns (all but the first, unless
// left says otherwise) are right-aligned. A sortable table sorts on a click
// of its header (html.js), numerically where the cells are numbers.
func (h *htmlPage) table(class string, cols []string, rows [][]string, sortable bool) {
	if sortable {
		class += " sortable"
	}
	h.f(`<table class="%s"><thead><tr>`, strings.TrimSpace(class))
	numeric := make([]bool, len(cols))
	for i := 1; i < len(cols); i++ {
		numeric[i] = true
		for _, r := range rows {
			if i < len(r) && !looksNumeric(r[i]) {
				numeric[i] = false
				break
			}
		}
	}
	for i, c := range cols {
		align := "num"
		if !numeric[i] {
			align = "txt"
		}
		if sortable {
			h.f(`<th class="%s" scope="col" tabindex="0" aria-sort="none">%s</th>`, align, esc(c))
		} else {
			h.f(`<th class="%s" scope="col">%s</th>`, align, esc(c))
		}
	}
	h.f(`</tr></thead><tbody>`)
	for _, r := range rows {
		h.f(`<tr>`)
		for i, c := range r {
			if i == 0 {
				h.f(`<th scope="row" class="txt">%s</th>`, esc(c))
			} else if i < len(numeric) && numeric[i] {
				h.f(`<td class="num">%s</td>`, esc(c))
			} else {
				h.f(`<td class="txt">%s</td>`, esc(c))
			}
		}
		h.f(`</tr>`)
	}
	h.f(`</tbody></table>`)
}

// looksNumeric reports whether a cell prints a number (with thousands
// separators, a sign, a unit or a percent sign), or the em dash of an
// unknown value.
func looksNumeric(s string) bool {
	s = strings.TrimSpace(s)
	if s == "—" {
		return true
	}
	s = strings.NewReplacer(",", "", "%", "", "µs", "", "ms", "", "s", "", "+", "").Replace(s)
	_, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return err == nil
}

// toc lists the sections, in the order the page shows them.
func (h *htmlPage) toc(r *Report) {
	h.f(`<nav aria-label="sections"><ul>`)
	for _, sec := range r.Sections() {
		name := sec.Title
		if sec.ID == secWarnings.ID {
			name = fmt.Sprintf("%s (%d)", name, warningCount(r))
		}
		h.f(`<li><a href="#%s">%s</a></li>`, sec.ID, esc(name))
	}
	h.f(`</ul></nav>`)
}

// htmlSection writes one section; Sections gives the ids and their order.
func (h *htmlPage) htmlSection(r *Report, v *HTMLViews, sec Section) {
	switch sec.ID {
	case secFindings.ID:
		h.section(sec.ID, sec.Title, "")
		h.f(`<ol class="findings">`)
		for _, f := range r.Headline {
			h.f(`<li data-kind="%s">%s <a href="#%s">→ %s</a></li>`, esc(string(f.Kind)), esc(f.Text), esc(f.Section), esc(sectionTitle(f.Section)))
		}
		h.f(`</ol>`)
		h.end()
	case secLatency.ID:
		if r.hasRequests() {
			h.requests(r, v)
			return
		}
		h.section(sec.ID, sec.Title, "")
		h.f(`<p class="warn">No request spans in the input: no span follows a request convention llmprof reads (see the README's span conventions), so there is no latency to chart.</p>`)
		h.end()
	case secStages.ID:
		h.stages(r, v)
	case secTokens.ID:
		h.tokens(r.Tokens, r.GPUCoverage)
	case secStalls.ID:
		h.stalls(r.Tokens.Stalls)
	case secGPU.ID:
		h.gpu(r.GPU, v.GPU, r.GPUCoverage)
	case secTenants.ID:
		h.tenants(r, v.TenantLoad)
	case secBlindSpots.ID:
		h.blindSpots(r.BlindSpots)
	case secKVCache.ID:
		h.kv(r.KVCache)
	case secModelLifecycle.ID:
		h.section(sec.ID, sec.Title, "")
		var rows [][]string
		for _, e := range r.ModelEvents {
			rows = append(rows, []string{e.Kind, e.Model, fmtSeconds(e.Ms / 1e3), commas(e.InFlight), ms(float64(e.AddedTTFTMs))})
		}
		h.table("", []string{"event", "model", "duration", "requests in flight", "added TTFT p50 (ms)"}, rows, false)
		h.end()
	case secInfrastructure.ID:
		h.textBlock(sec, func(b *strings.Builder, st styles) { infrastructureText(b, st, r.Infrastructure) })
	case secSources.ID:
		h.sources(r)
	case secAlignment.ID:
		h.textBlock(sec, func(b *strings.Builder, st styles) { alignmentText(b, st, r) })
	case secWarnings.ID:
		h.warnings(r)
	default:
		if s := r.analysisSection(sec.ID); s != nil {
			h.textBlock(sec, func(b *strings.Builder, st styles) { analysisText(b, st, s) })
		}
	}
}

// textBlock shows a section as the terminal renders it, without colour, in a
// fixed-width block: its heading line becomes the section's heading.
func (h *htmlPage) textBlock(sec Section, render func(*strings.Builder, styles)) {
	var b strings.Builder
	render(&b, newStyles(io.Discard, false))
	text := strings.TrimLeft(b.String(), "\n")
	first, rest, _ := strings.Cut(text, "\n")
	sub := ""
	if head := strings.ToUpper(sec.Title); strings.HasPrefix(first, head) {
		sub, text = strings.TrimSpace(strings.TrimPrefix(first, head)), rest
	}
	h.section(sec.ID, sec.Title, sub)
	if strings.TrimSpace(text) != "" {
		h.f(`<pre>%s</pre>`, esc(strings.TrimRight(text, "\n")))
	}
	h.end()
}

func warningCount(r *Report) int {
	n := 0
	for _, w := range r.Warnings {
		n += 1 + w.More
	}
	return n
}

func (h *htmlPage) sources(r *Report) {
	h.section("sources", "Sources", "")
	var rows [][]string
	for _, s := range r.Sources {
		rows = append(rows, []string{s.Path, s.Format, commas(s.Spans), commas(s.GPUOps), commas(s.Samples), commas(s.Warnings)})
	}
	h.table("", []string{"path", "format", "spans", "GPU ops", "samples", "warnings"}, rows, false)
	h.end()
}

func (h *htmlPage) requests(r *Report, v *HTMLViews) {
	rq := r.Requests
	sub := fmt.Sprintf("%s requests, %s output tokens/s (%s)", commas(rq.Requests), fmtFloat(rq.Throughput, 0), conventions(rq.Styles))
	if g := rq.Goodput; g != nil {
		sub += fmt.Sprintf("; goodput %s of requests (%s/s) meet %s", pct(g.Share), fmtFloat(g.PerSecond, 2), sloString(rq.SLO))
	}
	h.section("latency", "Latency", sub)
	h.table("", metricTable(rq.Metrics).cols, metricTable(rq.Metrics).rows, false)
	for _, m := range v.CDFs {
		h.f(`<div class="row">`)
		for _, g := range []struct {
			by     string
			curves []Curve
		}{{"tenant", m.ByTenant}, {"model", m.ByModel}} {
			if len(g.curves) == 0 || (g.by == "model" && len(g.curves) == 1 && len(m.ByTenant) > 1) {
				continue
			}
			var series []lineSeries
			for i, c := range g.curves {
				s := lineSeries{Name: fmt.Sprintf("%s (%s)", c.Name, commas(c.N)), X: c.X, Y: c.P, Step: true}
				if i == 0 {
					s.Width = 2.4
				}
				series = append(series, s)
			}
			label := fmt.Sprintf("%s distribution by %s", m.Metric, g.by)
			h.figure(label+" (empirical CDF; log scale when the range is wide)",
				lineChart(label, m.Metric+" (ms)", "share of requests ≤ x", series, true, 1))
		}
		h.f(`</div>`)
	}
	if groups := [][]string{rq.TenantOrder, rq.ModelOrder}; len(groups[0]) > 1 || len(groups[1]) > 1 {
		for i, title := range []string{"tenant", "model"} {
			order := groups[i]
			if len(order) < 2 {
				continue
			}
			m := rq.ByTenant
			if i == 1 {
				m = rq.ByModel
			}
			var rows [][]string
			for _, name := range order {
				g := m[name]
				rows = append(rows, []string{name, commas(g.Requests), ms(g.Metrics.TTFT.P50), ms(g.Metrics.TTFT.P99),
					ms(g.Metrics.TPOT.P50), ms(g.Metrics.TPOT.P99), ms(g.Metrics.E2E.P99), fmtFloat(g.Throughput, 0)})
			}
			h.table("", []string{title, "requests", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p99", "tok/s"}, rows, true)
		}
	}
	if ts := v.OverTime; ts != nil {
		h.f(`<h3 id="over-time">Over time</h3><p class="dim">requests binned by arrival, %s per bin</p>`, fmtSeconds(ts.BinMs/1e3))
		xs := make([]float64, len(ts.Count))
		counts := make([]float64, len(ts.Count))
		for i := range xs {
			xs[i] = (float64(i) + 0.5) * ts.BinMs / 1e3
			counts[i] = float64(ts.Count[i])
		}
		h.f(`<div class="row">`)
		q := fmt.Sprintf("p%g", 100*ts.HighQ)
		needs := fmt.Sprintf("%s only in bins of at least %d requests", q, quantileNeeds(ts.HighQ))
		h.figure("TTFT per arrival bin: median and "+needs,
			lineChart("TTFT over time", "time since first arrival (s)", "TTFT (ms)",
				[]lineSeries{{Name: "TTFT p50", X: xs, Y: ts.TTFTP50}, {Name: "TTFT " + q, X: xs, Y: ts.TTFTHigh}}, false, 0))
		h.figure("Queue time per arrival bin: median and "+needs,
			lineChart("Queue time over time", "time since first arrival (s)", "queue (ms)",
				[]lineSeries{{Name: "queue p50", X: xs, Y: ts.QueueP50}, {Name: "queue " + q, X: xs, Y: ts.QueueHigh}}, false, 0))
		h.f(`</div>`)
		h.figure("Arrivals per bin", lineChart("Arrivals over time", "time since first arrival (s)", "requests per bin",
			[]lineSeries{{Name: "arrivals", X: xs, Y: counts}}, false, 0))
	}
	h.end()
}

// stages is the "where the time went" section: the stage shares of all
// requests, then per tenant and per model.
func (h *htmlPage) stages(r *Report, v *HTMLViews) {
	h.section(secStages.ID, secStages.Title, "")
	if len(v.StageShares) > 0 {
		var total float64
		for _, s := range r.Stages {
			total += s.TotalMs
		}
		h.f(`<p class="dim">%s</p>`, esc("share of the requests' E2E in each stage ("+fmtSeconds(total/1e3)+" in all)"))
		names := attribution.StageNames()
		var used []int
		for i := range names {
			for _, s := range v.StageShares {
				if s.Shares[i] > 0 {
					used = append(used, i)
					break
				}
			}
		}
		parts := make([]string, len(used))
		colors := make([]string, len(used))
		for j, i := range used {
			parts[j] = names[i]
			colors[j] = stageColor(names[i])
		}
		var rows []stackRow
		for _, s := range v.StageShares {
			label := s.Name
			if s.Group != "all" {
				label = s.Group + " " + s.Name
			}
			row := stackRow{Label: label, Note: commas(s.Requests) + " req"}
			for _, i := range used {
				row.Shares = append(row.Shares, s.Shares[i])
			}
			rows = append(rows, row)
		}
		h.figure("E2E split by stage, for all requests, then per tenant and per model",
			stackedBars("Where the time went", parts, colors, rows))
	} else {
		var rows [][]string
		for _, s := range r.Stages {
			rows = append(rows, []string{s.Name, pct(s.Share), fmtSeconds(s.TotalMs / 1e3)})
		}
		h.table("", []string{"stage", "share", "total"}, rows, false)
	}
	h.end()
}

// stageColor gives each stage a fixed colour, so that the same stage has
// the same colour in every chart.
func stageColor(name string) string {
	switch name {
	case "tokenize":
		return palette[4]
	case "queue":
		return palette[5]
	case "prefill":
		return palette[1]
	case "decode":
		return palette[0]
	case "inference":
		return palette[2]
	case "detokenize":
		return palette[3]
	case "stream":
		return palette[7]
	}
	return "#999999"
}

func (h *htmlPage) gpu(g *attribution.GPU, tl *GPUTimeline, cov *GPUCoverage) {
	h.section("gpu", "GPU", "busy and idle time per device, GPU time by kernel category, the top kernels")
	if cov != nil {
		h.f(`<p class="warn">%s</p>`, esc(gpuCoverageText(cov)))
	}
	var rows [][]string
	var idle []stackRow
	for _, d := range g.Devices {
		name := fmt.Sprintf("%d", d.Device)
		if d.Name != "" {
			name += " " + d.Name
		}
		if d.Host != "" {
			name = d.Host + " / " + name
		}
		share := func(v float64) string {
			if d.WindowMs == 0 {
				return "—"
			}
			return pct(v / d.WindowMs)
		}
		rows = append(rows, []string{name, commas(d.Ops), fmtSeconds(d.WindowMs / 1e3), pct(d.Utilization), share(d.IdleNoWorkMs), share(d.IdleWaitingCPUMs), share(d.IdleUnknownMs)})
		if d.WindowMs > 0 {
			idle = append(idle, stackRow{Label: "device " + name, Note: fmtSeconds(d.WindowMs / 1e3),
				Shares: []float64{d.BusyMs / d.WindowMs, d.IdleNoWorkMs / d.WindowMs, d.IdleWaitingCPUMs / d.WindowMs, d.IdleUnknownMs / d.WindowMs}})
		}
	}
	h.table("", []string{"device", "ops", "window", "busy", "idle: no work", "waiting on CPU", "unknown"}, rows, false)
	if len(idle) > 0 {
		h.figure("Each device's window: busy, and idle by cause", stackedBars("GPU busy and idle",
			[]string{"busy", "idle: no work", "idle: waiting on CPU", "idle: unknown"}, []string{palette[0], "#d9d9d9", palette[5], "#999999"}, idle))
	}
	if tl != nil && len(tl.Devices) > 0 {
		var labels []string
		var cells [][]heatCell
		for _, d := range tl.Devices {
			dev := fmt.Sprintf("device %d", d.Device)
			if d.Host != "" {
				dev = d.Host + " / " + dev
			}
			labels = append(labels, dev)
			row := make([]heatCell, len(d.Busy))
			for b, v := range d.Busy {
				row[b] = heatCell{Fill: sequential(v), Tip: fmt.Sprintf("%s, %s–%s: %s busy", dev,
					fmtSeconds(float64(int64(b)*tl.BinNs)/1e9), fmtSeconds(float64(int64(b+1)*tl.BinNs)/1e9), pct(v))}
			}
			cells = append(cells, row)
		}
		h.figure(fmt.Sprintf("GPU busy share over time (darker = busier), %s per cell, from the first GPU op", fmtSeconds(float64(tl.BinNs)/1e9)),
			svgHeatMap("GPU busy/idle timeline", labels, nil, cells, 2.5, 22, "time →"))
	}
	if len(g.KernelCategories) > 0 {
		var items []barItem
		for i, c := range g.KernelCategories {
			if c.TotalMs == 0 {
				continue
			}
			items = append(items, barItem{Label: c.Name, Value: c.Share, Text: pct(c.Share) + " · " + fmtSeconds(c.TotalMs/1e3), Color: areaColor(i)})
		}
		h.figure("GPU time by kernel category", hBars("Kernel categories", items))
		h.f(`<p class="dim">%s</p>`, esc(uncategorizedLine(g.Uncategorized, 0)))
	}
	if len(g.TopKernels) > 0 {
		var rows [][]string
		for _, k := range g.TopKernels {
			rows = append(rows, []string{k.Name, k.Category, commas(k.Count), ms(k.TotalMs), fmtFloat(k.AvgUs, 1), pct(k.Share)})
		}
		h.f(`<h3>Top kernels</h3><p class="dim">full names; click a column to sort</p>`)
		h.table("kernels", []string{"kernel", "category", "count", "total ms", "avg µs", "share"}, rows, true)
	}
	if len(g.IdleGaps) > 0 {
		var rows [][]string
		for _, gap := range g.IdleGaps {
			why := strings.ReplaceAll(gap.Cause.String(), "_", " ")
			if gap.API != "" {
				why += " (" + gap.API + ")"
			}
			rows = append(rows, []string{fmt.Sprintf("device %d", gap.Device), ms(gap.DurationMs), why, gap.NextOp})
		}
		h.f(`<h3>Longest idle gaps</h3>`)
		h.table("gaps", []string{"device", "ms", "cause", "before"}, rows, true)
	}
	for _, m := range g.Memory {
		if len(m.Series) < 2 {
			continue
		}
		xs := make([]float64, len(m.Series))
		ys := make([]float64, len(m.Series))
		for i, p := range m.Series {
			xs[i] = float64(p.TimeNs-m.Series[0].TimeNs) / 1e9
			ys[i] = float64(p.Bytes) / (1 << 20)
		}
		h.figure(fmt.Sprintf("Device %d memory in use: peak %s MiB, fragmentation %s at peak", m.Device, fmtFloat(float64(m.PeakBytes)/(1<<20), 1), pct(m.FragmentationAtPeak)),
			lineChart(fmt.Sprintf("Device %d memory", m.Device), "time (s)", "MiB", []lineSeries{{Name: "in use", X: xs, Y: ys, Step: true}}, false, 0))
	}
	h.end()
}

func (h *htmlPage) tokens(ts *attribution.TokenSummary, cov *GPUCoverage) {
	sub := fmt.Sprintf("%s tokens; share of each token's interval", commas(ts.Tokens))
	if ts.Estimated > 0 {
		sub += fmt.Sprintf(" (%s estimated)", commas(ts.Estimated))
	}
	h.section("tokens", "Per token", sub)
	groups := []attribution.BucketShares{ts.First, ts.Decode}
	labels := []string{"first token", "decode tokens"}
	for _, g := range ts.ByPosition[min(1, len(ts.ByPosition)):] {
		if g.Tokens > 0 {
			groups = append(groups, g)
			labels = append(labels, "token #"+g.Name)
		}
	}
	for _, g := range ts.ByTenant {
		groups = append(groups, g)
		labels = append(labels, "tenant "+g.Name)
	}
	var used []int
	for i := range ts.Decode.Buckets {
		for _, g := range groups {
			if i < len(g.Buckets) && g.Buckets[i].Share >= 0.0005 {
				used = append(used, i)
				break
			}
		}
	}
	parts := make([]string, len(used))
	colors := make([]string, len(used))
	for j, i := range used {
		parts[j] = bucketLabel(ts.Decode.Buckets[i].Name)
		colors[j] = bucketColor(ts.Decode.Buckets[i].Name)
	}
	var rows []stackRow
	for gi, g := range groups {
		row := stackRow{Label: labels[gi], Note: ms(g.MeanMs) + " ms"}
		for _, i := range used {
			s := 0.0
			if i < len(g.Buckets) {
				s = g.Buckets[i].Share
			}
			row.Shares = append(row.Shares, s)
		}
		rows = append(rows, row)
	}
	h.figure("Token intervals split by bucket: the first token, decode tokens, by position in the response and per tenant (right: mean interval)",
		stackedBars("Per-token buckets by position", parts, colors, rows))
	for _, u := range ts.Unfilled {
		h.f(`<p class="dim">not filled: %s</p>`, esc(u))
	}
	if cov != nil {
		h.f(`<p class="warn">%s</p>`, esc(gpuCoverageText(cov)))
	}
	h.end()
}

// stalls is the stalls section: the decode tokens slower than their model's
// threshold, by cause, and the worst of them.
func (h *htmlPage) stalls(s attribution.Stalls) {
	h.section(secStalls.ID, secStalls.Title, "")
	h.f(`<p>%s decode tokens (%s) slower than their model's threshold; by cause: %s</p>`,
		commas(s.Count), pct(s.Share), esc(causeList(s.ByCause)))
	var rows [][]string
	for _, w := range s.Worst {
		who := fmt.Sprintf("%s token %d (%s)", w.Request, w.Token, w.Tenant)
		if w.Tokens > 1 {
			who = fmt.Sprintf("%d tokens (%s)", w.Tokens, strings.Join(w.Requests, ", "))
		}
		step := "—"
		if w.Step >= 0 {
			step = fmt.Sprintf("%d (%s, batch %d)", w.Step, w.StepPhase, w.StepBatch)
		}
		rows = append(rows, []string{who, step, ms(w.IntervalMs), bucketLabel(w.Cause), ms(w.ExcessMs)})
	}
	h.table("", []string{"tokens", "step", "interval ms", "cause", "excess ms"}, rows, true)
	h.end()
}

func causeList(m map[string]int) string {
	var out []string
	for _, c := range sortedByCount(m) {
		out = append(out, fmt.Sprintf("%s %s", bucketLabel(c), commas(m[c])))
	}
	return strings.Join(out, ", ")
}

func (h *htmlPage) tenants(r *Report, tl *TenantLoad) {
	if tl == nil && r.Tenants == nil && r.TenantsNote == "" {
		return
	}
	h.section("tenants", "Tenants", "")
	if tl != nil && len(tl.Tenants) > 0 {
		top := 0
		for _, row := range tl.Counts {
			for _, c := range row {
				top = max(top, c)
			}
		}
		var cells [][]heatCell
		cellW := math.Max(2, math.Min(24, 560/float64(len(tl.Counts[0]))))
		for i, row := range tl.Counts {
			cr := make([]heatCell, len(row))
			for b, c := range row {
				v := 0.0
				if top > 0 {
					v = float64(c) / float64(top)
				}
				cr[b] = heatCell{Fill: sequential(v), Tip: fmt.Sprintf("%s, %s–%s: %d arrivals", tl.Tenants[i],
					fmtSeconds(float64(b)*tl.BinMs/1e3), fmtSeconds(float64(b+1)*tl.BinMs/1e3), c)}
			}
			cells = append(cells, cr)
		}
		h.figure(fmt.Sprintf("Arrivals per tenant over time (darker = more; %s per cell, at most %d)", fmtSeconds(tl.BinMs/1e3), top),
			svgHeatMap("Tenant activity heat map", tl.Tenants, nil, cells, cellW, 20, "time since first arrival →"))
	}
	if res := r.Tenants; res != nil {
		if k := res.Kernel; k != nil && len(k.Pairs) > 0 {
			// The kernel level as the terminal shows it: the same lines, so
			// the two reports carry the same findings.
			var kb strings.Builder
			kernelText(&kb, newStyles(io.Discard, false), k, false)
			h.f(`<h3>Kernel level</h3><pre class="kernel-level">%s</pre>`, esc(strings.TrimRight(kb.String(), "\n")))
		}
		h.f(`<h3>Request level</h3><p>effect of each tenant's load (%s) on the others' latency, per %s of the source's load; %s at q &lt; %g</p>`,
			esc(res.Load.String()), esc(stepString(res)), esc(res.Correction), res.Alpha)
		estimable, top := estimableIn(res, nil)
		found, _ := estimableIn(res, func(p *causal.Pair) bool {
			return p.Verdict == causal.VerdictInterference || p.Verdict == causal.VerdictAssociation || p.Verdict == causal.VerdictConfounded
		})
		if estimable > 0 {
			h.f(`<div class="row">`)
			for _, m := range res.Metrics {
				if n, why := metricEstimable(res, m); n == 0 {
					h.f(`<p class="dim">%s effect: no pair estimable (mostly: %s); no matrix</p>`, esc(strings.ToUpper(m.String())), esc(why))
					continue
				}
				h.effectMatrix(res, m)
			}
			h.f(`</div>`)
			h.f(`<p class="dim">cells: effect in %% of the target's latency; outlined cells are significant interference; grey: not estimable (hover for why)</p>`)
		}
		if found == 0 {
			h.f(`<p>%s</p>`, esc(requestLevelSummary(res, estimable, top)))
		}
	} else if r.TenantsNote != "" {
		h.f(`<p class="dim">%s</p>`, esc(r.TenantsNote))
	}
	h.end()
}

// effectMatrix draws one metric's source × target effects.
func (h *htmlPage) effectMatrix(res *causal.Result, m causal.Metric) {
	tenants, pairs := res.Matrix(m)
	if len(tenants) < 2 {
		return
	}
	cells := make([][]heatCell, len(tenants))
	for i := range tenants {
		cells[i] = make([]heatCell, len(tenants))
		for j := range tenants {
			p := pairs[i][j]
			switch {
			case i == j:
				cells[i][j] = heatCell{Fill: "#ffffff", Text: "·"}
			case p == nil || !p.Estimable:
				why := "not estimable"
				if p != nil && p.Reason != "" {
					why += ": " + p.Reason
				}
				cells[i][j] = heatCell{Fill: "#e0e0e0", Text: "n/e", Tip: fmt.Sprintf("%s → %s: %s", tenants[i], tenants[j], why)}
			default:
				e := float64(p.EffectPct)
				text := signedPct(e)
				if p.Verdict == causal.VerdictInterference {
					text += "*"
				}
				cells[i][j] = heatCell{Fill: diverging(e / 20), Text: text, Mark: p.Verdict == causal.VerdictInterference,
					Tip: fmt.Sprintf("%s → %s %s: %s, %s (95%% CI %s … %s), q %s", tenants[i], tenants[j], m, p.Verdict,
						signedPct(e), signedPct(float64(p.CILowPct)), signedPct(float64(p.CIHighPct)), qString(float64(p.Q)))}
			}
		}
	}
	label := strings.ToUpper(m.String()) + " effect, source ↓ target →"
	h.figure(label, svgHeatMap(label, tenants, tenants, cells, 72, 24, ""))
}

// inflatedShown bounds the inflated-hit table: the page stays small and the
// JSON report has them all.
const inflatedShown = 25

func (h *htmlPage) kv(kv *attribution.KVCache) {
	if kv == nil {
		return
	}
	h.section("kv-cache", "KV cache", fmt.Sprintf("%s of %s requests hit; %s of prompt tokens cached", pct(kv.HitShare), commas(kv.Requests), pct(kv.TokenHitRatio)))
	items := []barItem{
		{Label: "prefill p50, hits", Value: kv.HitPrefill.P50, Text: ms(kv.HitPrefill.P50) + " ms", Color: palette[2]},
		{Label: "prefill p50, misses", Value: kv.MissPrefill.P50, Text: ms(kv.MissPrefill.P50) + " ms", Color: palette[5]},
		{Label: "prefill p99, hits", Value: kv.HitPrefill.P99, Text: ms(kv.HitPrefill.P99) + " ms", Color: palette[2]},
		{Label: "prefill p99, misses", Value: kv.MissPrefill.P99, Text: ms(kv.MissPrefill.P99) + " ms", Color: palette[5]},
		{Label: "TTFT p50, hits", Value: kv.HitTTFT.P50, Text: ms(kv.HitTTFT.P50) + " ms", Color: palette[2]},
		{Label: "TTFT p50, misses", Value: kv.MissTTFT.P50, Text: ms(kv.MissTTFT.P50) + " ms", Color: palette[5]},
		{Label: "TTFT p99, hits", Value: kv.HitTTFT.P99, Text: ms(kv.HitTTFT.P99) + " ms", Color: palette[2]},
		{Label: "TTFT p99, misses", Value: kv.MissTTFT.P99, Text: ms(kv.MissTTFT.P99) + " ms", Color: palette[5]},
	}
	items = slices.DeleteFunc(items, func(b barItem) bool { return math.IsNaN(b.Value) })
	if len(items) > 0 {
		h.figure("Prefill and TTFT of prefix-cache hits (green) and misses (vermillion)", hBars("KV cache hits and misses", items))
	}
	if len(kv.ByTenant) > 1 {
		var rows [][]string
		for _, g := range kv.ByTenant {
			rows = append(rows, []string{g.Name, commas(g.Requests), commas(g.Hits), pct(g.HitShare), commas(g.Inflated)})
		}
		h.table("", []string{"tenant", "requests", "hits", "hit share", "inflated"}, rows, true)
	}
	if n := len(kv.Inflated); n > 0 {
		h.f(`<p class="warn">%d of %d checked hits recomputed their prefix (inflated hit ratio): effective hit share %s, not %s</p>`,
			n, kv.Checked, pct(kv.EffectiveHitShare), pct(kv.HitShare))
		var rows [][]string
		for i, x := range kv.Inflated {
			if i == inflatedShown {
				break
			}
			rows = append(rows, []string{x.ID, x.Tenant, x.Model, commas(x.CachedTokens), commas(x.InputTokens), ms(x.PrefillMs), x.Method})
		}
		h.table("", []string{"request", "tenant", "model", "cached tokens", "prompt tokens", "prefill ms", "found by"}, rows, true)
		if n > inflatedShown {
			h.f(`<p class="dim">… %s more (see --format json)</p>`, commas(n-inflatedShown))
		}
	}
	if kv.Note != "" {
		h.f(`<p class="dim">%s</p>`, esc(kv.Note))
	}
	h.end()
}

func (h *htmlPage) blindSpots(bs *attribution.BlindSpots) {
	if bs == nil {
		return
	}
	h.section("blind-spots", "Blind spots", pct(bs.UnexplainedShare)+" of E2E is in no stage")
	h.f(`<ul class="chips" aria-label="request lifecycle">`)
	for _, bp := range bs.Breakpoints {
		state := "not seen"
		if bp.Covered {
			state = "seen"
		}
		h.f(`<li class="%s">%s <span class="dim">(%s)</span></li>`, strings.ReplaceAll(state, " ", "-"), esc(bp.Name), state)
	}
	h.f(`</ul>`)
	var items []barItem
	for _, g := range bs.Gaps {
		label := g.Before + " → " + g.After
		text := pct(g.Share) + " of E2E in " + commas(g.Requests) + " requests"
		if len(g.Likely) > 0 {
			text += " (likely " + strings.Join(g.Likely, ", ") + ")"
		}
		items = append(items, barItem{Label: label, Value: g.Share, Text: text, Color: "#999999"})
	}
	if o := bs.Outside; o != nil {
		items = append(items, barItem{Label: "caller → request", Value: o.Share, Text: pct(o.Share) + " of E2E seen by callers only", Color: palette[5]})
	}
	if len(items) > 0 {
		h.figure("Unexplained time by location", hBars("Blind spots", items))
	}
	switch g := bs.Largest; {
	case g == nil:
	case g == bs.Outside:
		h.f(`<p class="warn">→ instrument the server before the engine (%s): callers see %s of E2E more than the request spans</p>`, esc(g.Span), pct(g.Share))
	default:
		h.f(`<p class="warn">→ add %s: it would explain %s of E2E (%s → %s)</p>`, esc(g.Span), pct(g.Share), esc(g.Before), esc(g.After))
	}
	h.end()
}

func (h *htmlPage) warnings(r *Report) {
	h.section("warnings", fmt.Sprintf("Warnings (%d)", warningCount(r)), "")
	if len(r.Warnings) == 0 {
		h.f(`<p class="dim">none</p>`)
	} else {
		h.f(`<ul class="warnings">`)
		for _, w := range r.Warnings {
			h.f(`<li>%s</li>`, esc(w.String()))
		}
		h.f(`</ul>`)
	}
	h.end()
}
