package report

import (
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
)

// TextOptions control the terminal renderer.
type TextOptions struct {
	// Color enables ANSI styling. Callers pass true only for a terminal
	// without NO_COLOR (see ColorFor).
	Color bool
	// Width is the terminal's width: the layout fits it (textwidth.go).
	// 0 leaves lines as long as they are, with bars sized as for 100
	// columns (output to a file or a pipe).
	Width int
}

// ColorFor reports whether output to a stream should be coloured: only a
// terminal, and never when NO_COLOR is present and not empty
// (https://no-color.org).
func ColorFor(isTTY bool) bool {
	return isTTY && os.Getenv("NO_COLOR") == ""
}

// styles holds every style the text renderer uses, in one place.
type styles struct {
	title, section, header, dim, warn, bar, barEmpty, good, bad lipgloss.Style
	// Gate verdicts (diff).
	fail, pass, inconclusive lipgloss.Style
	// width is the terminal width tables fit (0: no limit).
	width int
}

func newStyles(w io.Writer, color bool) styles {
	r := lipgloss.NewRenderer(w)
	if color {
		r.SetColorProfile(termenv.ANSI256)
	} else {
		r.SetColorProfile(termenv.Ascii)
	}
	return styles{
		title:    r.NewStyle().Bold(true),
		section:  r.NewStyle().Bold(true).Foreground(lipgloss.Color("39")),
		header:   r.NewStyle().Faint(true),
		dim:      r.NewStyle().Faint(true),
		warn:     r.NewStyle().Foreground(lipgloss.Color("214")),
		bar:      r.NewStyle().Foreground(lipgloss.Color("39")),
		barEmpty: r.NewStyle().Faint(true),
		good:     r.NewStyle().Foreground(lipgloss.Color("42")),
		bad:      r.NewStyle().Foreground(lipgloss.Color("203")),

		fail:         r.NewStyle().Bold(true).Foreground(lipgloss.Color("196")),
		pass:         r.NewStyle().Bold(true).Foreground(lipgloss.Color("40")),
		inconclusive: r.NewStyle().Bold(true).Foreground(lipgloss.Color("214")),
	}
}

// WriteText renders the report for a terminal.
func (r *Report) WriteText(w io.Writer, opts TextOptions) error {
	st := newStyles(w, opts.Color)
	st.width = max(0, opts.Width)
	if opts.Width <= 0 {
		opts.Width = 100
	}
	var b strings.Builder
	b.WriteString(st.title.Render(r.title()) + "\n")
	if r.Unrelated != "" {
		fmt.Fprintf(&b, "\n%s\n", st.warn.Render("NOTE  "+r.Unrelated))
	}
	for _, sec := range r.Sections() {
		r.textSection(&b, st, sec.ID, opts.Width)
	}
	_, err := io.WriteString(w, fitLines(r.textLongNames(b.String()), st.width))
	return err
}

// title is the report's first line.
func (r *Report) title() string {
	title := "llmprof analyze"
	if r.hasRequests() {
		title += fmt.Sprintf(" — %s over %s", plural(r.Requests.Requests, "request"), fmtSeconds(r.Requests.Duration))
	}
	return title
}

// textSection writes one section (Sections gives the ids and their order);
// each starts with a blank line and its heading.
func (r *Report) textSection(b *strings.Builder, st styles, id string, width int) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	switch id {
	case secFindings.ID:
		p("\n%s\n", st.section.Render("FINDINGS"))
		for i, f := range r.Headline {
			p("  %d. %s  %s\n", i+1, f.Text, st.dim.Render("→ "+strings.ToUpper(sectionTitle(f.Section))))
		}
	case secLatency.ID:
		rq := r.Requests
		p("\n%s", st.section.Render("LATENCY"))
		if rq.Requests == 0 {
			p("\n  %s\n", st.warn.Render("no request spans found: nothing in the input uses a request convention llmprof knows (llm.request, vLLM llm_request, SGLang, TGI, Triton, OTel GenAI); see the README's span conventions"))
			return
		}
		p("  %s  %s output tok/s", plural(rq.Requests, "request"), fmtFloat(rq.Throughput, 0))
		p("  %s\n", st.dim.Render("("+conventions(rq.Styles)+")"))
		if g := rq.Goodput; g != nil {
			p("  goodput %s of requests (%s/s) meet %s", pct(g.Share), fmtFloat(g.PerSecond, 2), sloString(rq.SLO))
			if g.Unknown > 0 {
				p("%s", st.warn.Render(fmt.Sprintf("; %d could not be checked (metric missing)", g.Unknown)))
			}
			p("\n")
		}
		metricTable(rq.Metrics).render(b, st, 2)
		if n := rq.E2ESource; n != nil {
			e2eSourceText(b, st, n, rq.Requests)
		}
		groupTable(b, st, "by tenant", "tenant", rq.TenantOrder, rq.ByTenant, rq.SLO)
		groupTable(b, st, "by model", "model", rq.ModelOrder, rq.ByModel, rq.SLO)
	case secStages.ID:
		var total float64
		for _, s := range r.Stages {
			total += s.TotalMs
		}
		p("\n%s  %s\n", st.section.Render("WHERE THE TIME WENT"), st.dim.Render("share of all requests' E2E ("+fmtSeconds(total/1e3)+" in all)"))
		stages := append([]attribution.StageTotal(nil), r.Stages...)
		sort.SliceStable(stages, func(i, j int) bool { return stages[i].TotalMs > stages[j].TotalMs })
		barWidth := max(10, min(40, width-40))
		for _, s := range stages {
			if s.TotalMs == 0 && s.Name != "other" {
				continue // a stage this input does not have
			}
			filled := int(math.Round(s.Share * float64(barWidth)))
			p("  %-11s %6s  %s%s  %s\n", s.Name, pct(s.Share),
				st.bar.Render(strings.Repeat("█", filled)), st.barEmpty.Render(strings.Repeat("░", barWidth-filled)),
				fmtSeconds(s.TotalMs/1e3))
		}
	case secTokens.ID:
		tokensText(b, st, r.Tokens, r.GPUCoverage)
	case secStalls.ID:
		stallsText(b, st, r.Tokens.Stalls)
	case secGPU.ID:
		gpuText(b, st, r.GPU, width)
		if c := r.GPUCoverage; c != nil {
			p("  %s\n", st.warn.Render(gpuCoverageText(c)))
		}
	case secTenants.ID:
		tenantsText(b, st, r.Tenants, r.TenantsNote, false)
	case secBlindSpots.ID:
		blindSpotsText(b, st, r.BlindSpots)
	case secKVCache.ID:
		kvText(b, st, r.KVCache)
	case secModelLifecycle.ID:
		modelEventsText(b, st, r.ModelEvents)
	case secInfrastructure.ID:
		infrastructureText(b, st, r.Infrastructure)
	case secSources.ID:
		p("\n%s\n", st.section.Render("SOURCES"))
		src := newTable("path", "format", "spans", "GPU ops", "samples", "warnings")
		for _, s := range r.Sources {
			src.row(s.Path, s.Format, commas(s.Spans), commas(s.GPUOps), commas(s.Samples), commas(s.Warnings))
		}
		src.render(b, st, 2)
	case secAlignment.ID:
		alignmentText(b, st, r)
	case secWarnings.ID:
		n := warningCount(r)
		if n == 0 {
			return
		}
		p("\n%s\n", st.section.Render(fmt.Sprintf("WARNINGS (%s)", commas(n))))
		for _, w := range r.Warnings {
			p("  %s\n", st.warn.Render(w.String()))
		}
	default:
		if s := r.analysisSection(id); s != nil {
			analysisText(b, st, s)
		}
	}
}

// gpuCoverageText says that the GPU data covers part of the run only.
func gpuCoverageText(c *GPUCoverage) string {
	return fmt.Sprintf("GPU data covers %s of the %s run (%s): GPU figures and the per-token GPU buckets describe that part; the rest of the steps' time is %s",
		fmtSeconds(c.GPUSeconds), fmtSeconds(c.RunSeconds), pct(c.Share), stepNoGPU)
}

// plural writes a count with its noun, in the plural unless the count is 1
// ("1 run", "2 runs"); nouns with an irregular plural are not passed here.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return commas(n) + " " + noun + "s"
}

// WriteAlignmentText renders the clock alignment table alone (the export
// command prints it to stderr).
func WriteAlignmentText(w io.Writer, res *align.Result, opts TextOptions) error {
	st := newStyles(w, opts.Color)
	var b strings.Builder
	c := res.Causality
	alignmentText(&b, st, &Report{Alignment: res.Fits, Causality: &c})
	_, err := io.WriteString(w, strings.TrimPrefix(b.String(), "\n"))
	return err
}

// alignmentText shows the clock alignment when there is more than one
// clock: every report that joins records across clocks says how well it can.
func alignmentText(b *strings.Builder, st styles, r *Report) {
	if len(r.Alignment) < 2 {
		return
	}
	ref := ""
	for _, f := range r.Alignment {
		if f.Status == align.StatusReference {
			ref = f.Domain
		}
	}
	fmt.Fprintf(b, "\n%s  %s\n", st.section.Render("CLOCK ALIGNMENT"), st.dim.Render("reference: "+ref))
	t := newTable("domain", "status", "anchors", "offset", "drift", "residual p99", "bound")
	for _, f := range r.Alignment {
		if f.Status == align.StatusReference {
			continue
		}
		offset, drift, res, bound := "—", "—", "—", "—"
		if f.Status != align.StatusCannotAlign {
			offset = fmtNs(f.OffsetNs, true)
			if f.DriftFitted {
				drift = fmt.Sprintf("%+.2f ppm", f.DriftPPM)
			} else {
				drift = "not fitted"
			}
		}
		if f.ResidualP99Ns != nil {
			res = fmtNs(*f.ResidualP99Ns, false)
		}
		if f.BoundNs != nil {
			bound = "±" + fmtNs(*f.BoundNs, false)
		}
		status := string(f.Status)
		if f.Status == align.StatusUnrefined || f.Status == align.StatusCannotAlign {
			status = st.warn.Render(status)
		}
		t.row(f.Domain, status, f.Anchors.String(), offset, drift, res, bound)
	}
	t.render(b, st, 2)
	if c := r.Causality; c != nil && c.Checked > 0 {
		line := fmt.Sprintf("causality: %s of %s GPU ops start before their launch call", commas(c.Violations), commas(c.Checked))
		if c.Violations > 0 {
			line += fmt.Sprintf(" (largest lead %s)", fmtNs(c.LargestNs, false))
		}
		fmt.Fprintf(b, "  %s\n", line)
	}
}

// fmtNs prints a duration in the unit that suits it.
func fmtNs(ns int64, signed bool) string {
	sign := ""
	if signed && ns >= 0 {
		sign = "+"
	}
	a := math.Abs(float64(ns))
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%s%.6f s", sign, float64(ns)/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%s%.3f ms", sign, float64(ns)/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%s%.1f µs", sign, float64(ns)/1e3)
	}
	return fmt.Sprintf("%s%d ns", sign, ns)
}

func blindSpotsText(b *strings.Builder, st styles, bs *attribution.BlindSpots) {
	fmt.Fprintf(b, "\n%s  %s\n", st.section.Render("BLIND SPOTS"), st.dim.Render(pct(bs.UnexplainedShare)+" of E2E is in no stage"))
	var covered, missing []string
	for _, bp := range bs.Breakpoints {
		if bp.Covered {
			covered = append(covered, bp.Name)
		} else {
			missing = append(missing, bp.Name)
		}
	}
	fmt.Fprintf(b, "  lifecycle seen:     %s\n", orNone(covered))
	fmt.Fprintf(b, "  lifecycle not seen: %s\n", orNone(missing))
	for i, g := range bs.Gaps {
		if i == 5 {
			fmt.Fprintf(b, "  %s\n", st.dim.Render(fmt.Sprintf("… %d more gap locations (see --format json)", len(bs.Gaps)-5)))
			break
		}
		where := g.Before + " → " + g.After
		likely := ""
		if len(g.Likely) > 0 {
			likely = " (likely " + strings.Join(g.Likely, ", ") + ")"
		}
		fmt.Fprintf(b, "  %-24s %6s of E2E in %s requests%s\n", where, pct(g.Share), commas(g.Requests), likely)
	}
	if o := bs.Outside; o != nil {
		fmt.Fprintf(b, "  %-24s %6s of E2E more seen by callers than by %s request spans\n", "caller → request", pct(o.Share), commas(o.Requests))
	}
	switch g := bs.Largest; {
	case g == nil:
	case g == bs.Outside:
		fmt.Fprintf(b, "  %s instrument the server before the engine (%s): callers see %s of E2E more than the request spans\n",
			st.warn.Render("→"), g.Span, pct(g.Share))
	default:
		fmt.Fprintf(b, "  %s add %s: it would explain %s of E2E (%s → %s)\n", st.warn.Render("→"), g.Span, pct(g.Share), g.Before, g.After)
	}
}

func kvText(b *strings.Builder, st styles, kv *attribution.KVCache) {
	fmt.Fprintf(b, "\n%s  %s\n", st.section.Render("KV CACHE"),
		st.dim.Render(fmt.Sprintf("%s of %s requests hit; %s of prompt tokens cached", pct(kv.HitShare), commas(kv.Requests), pct(kv.TokenHitRatio))))
	t := newTable("", "n", "prefill p50", "prefill p99", "TTFT p50", "TTFT p99")
	t.row("hits", commas(kv.HitPrefill.N), ms(kv.HitPrefill.P50), ms(kv.HitPrefill.P99), ms(kv.HitTTFT.P50), ms(kv.HitTTFT.P99))
	t.row("misses", commas(kv.MissPrefill.N), ms(kv.MissPrefill.P50), ms(kv.MissPrefill.P99), ms(kv.MissTTFT.P50), ms(kv.MissTTFT.P99))
	t.render(b, st, 2)
	if n := len(kv.Inflated); n > 0 {
		fmt.Fprintf(b, "  %s %d of %d checked hits recomputed their prefix (inflated hit ratio): effective hit share %s, not %s\n",
			st.warn.Render("!"), n, kv.Checked, pct(kv.EffectiveHitShare), pct(kv.HitShare))
		for i, h := range kv.Inflated {
			if i == 3 {
				fmt.Fprintf(b, "    %s\n", st.dim.Render(fmt.Sprintf("… %d more (see --format json)", n-3)))
				break
			}
			why := "its step computed the whole prompt"
			if h.Method == "timing" {
				why = fmt.Sprintf("a hit should take ~%s ms, a miss ~%s ms", ms(float64(h.ExpectedHitMs)), ms(float64(h.ExpectedMissMs)))
			}
			fmt.Fprintf(b, "    %s (%s, %s): %s of %s prompt tokens reported cached, prefill %s ms; %s\n",
				h.ID, h.Tenant, h.Model, commas(h.CachedTokens), commas(h.InputTokens), ms(h.PrefillMs), why)
		}
	} else if kv.Checked > 0 {
		fmt.Fprintf(b, "  %d hits checked: all prefill like hits\n", kv.Checked)
	}
	if kv.Note != "" {
		fmt.Fprintf(b, "  %s\n", st.dim.Render(kv.Note))
	}
}

func modelEventsText(b *strings.Builder, st styles, evs []attribution.ModelEvent) {
	fmt.Fprintf(b, "\n%s\n", st.section.Render("MODEL LIFECYCLE"))
	t := newTable("event", "model", "duration", "requests in flight", "added TTFT p50 (ms)")
	for _, e := range evs {
		t.row(e.Kind, e.Model, fmtSeconds(e.Ms/1e3), commas(e.InFlight), ms(float64(e.AddedTTFTMs)))
	}
	t.render(b, st, 2)
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

func metricTable(m attribution.Metrics) *table {
	t := newTable("metric (ms)", "n", "p50", "p90", "p95", "p99", "max", "mean")
	for _, row := range []struct {
		name string
		d    attribution.Distribution
	}{{"TTFT", m.TTFT}, {"TPOT", m.TPOT}, {"ITL", m.ITL}, {"E2E", m.E2E}, {"queue", m.Queue}} {
		d := row.d
		t.row(row.name, commas(d.N), ms(d.P50), ms(d.P90), ms(d.P95), ms(d.P99), ms(d.Max), ms(d.Mean))
	}
	return t
}

func groupTable(b *strings.Builder, st styles, title, key string, order []string, groups map[string]attribution.Summary, slo attribution.SLO) {
	if len(order) < 2 {
		return // one group repeats the totals above
	}
	fmt.Fprintf(b, "  %s\n", st.title.Render(title))
	cols := []string{key, "requests", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "E2E p99", "tok/s"}
	if !slo.IsZero() {
		cols = append(cols, "goodput")
	}
	t := newTable(cols...)
	for _, name := range order {
		g := groups[name]
		m := g.Metrics
		row := []string{name, commas(g.Requests), ms(m.TTFT.P50), ms(m.TTFT.P99), ms(m.TPOT.P50), ms(m.TPOT.P99), ms(m.E2E.P99), fmtFloat(g.Throughput, 0)}
		if g.Goodput != nil {
			row = append(row, pct(g.Goodput.Share))
		}
		t.row(row...)
	}
	t.render(b, st, 2)
}

func conventions(styles map[string]int) string {
	names := make([]string, 0, len(styles))
	for n := range styles {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s: %s", n, commas(styles[n]))
	}
	return strings.Join(parts, ", ")
}

func sloString(s attribution.SLO) string {
	return strings.ReplaceAll(strings.ReplaceAll(s.String(), "=", "≤"), ",", ", ")
}

// e2eSourceText says which E2E is used and shows the server's own e2e
// attribute beside it where the two differ by more than a millisecond.
func e2eSourceText(b *strings.Builder, st styles, n *attribution.E2ENote, requests int) {
	if n.Differ == 0 {
		fmt.Fprintf(b, "  %s\n", st.dim.Render(fmt.Sprintf("E2E is the request span's duration; %s agrees within 1 ms", n.Attribute)))
		return
	}
	fmt.Fprintf(b, "  %s\n", st.dim.Render(fmt.Sprintf(
		"E2E is the request span's duration (the stages partition it); %s differs by more than 1 ms on %s of %s requests: p50 %s ms span, %s ms attribute",
		n.Attribute, commas(n.Differ), commas(requests), ms(float64(n.SpanP50Ms)), ms(float64(n.AttributeP50Ms)))))
}

// ms formats a millisecond value with three significant decimals where it
// matters; NaN (unknown) prints as an em dash.
func ms(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case v >= 1000:
		return fmtFloat(v, 0)
	case v >= 100:
		return fmtFloat(v, 1)
	case v >= 10:
		return fmtFloat(v, 2)
	}
	return fmtFloat(v, 3)
}

func fmtFloat(v float64, prec int) string {
	if math.IsNaN(v) {
		return "—"
	}
	s := fmt.Sprintf("%.*f", prec, v)
	intPart, frac, _ := strings.Cut(s, ".")
	neg := strings.HasPrefix(intPart, "-")
	intPart = strings.TrimPrefix(intPart, "-")
	n := len(intPart)
	var out strings.Builder
	if neg {
		out.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (n-i)%3 == 0 {
			out.WriteByte(',')
		}
		out.WriteRune(c)
	}
	if frac != "" {
		out.WriteByte('.')
		out.WriteString(frac)
	}
	return out.String()
}

func commas(n int) string { return fmtFloat(float64(n), 0) }

func pct(share float64) string {
	if math.IsNaN(share) {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*share)
}

// fmtSeconds writes a duration to the millisecond, or to the microsecond
// (nanosecond) below a millisecond (microsecond), so that a short total never
// reads as "0s".
func fmtSeconds(s float64) string {
	if math.IsNaN(s) {
		return "—"
	}
	d := time.Duration(s * 1e9)
	switch a := d.Abs(); {
	case a >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	case a >= time.Microsecond:
		return d.Round(time.Microsecond).String()
	}
	return d.String()
}

// table is a minimal aligned text table: left-aligned first column, numbers
// right-aligned, header faint.
type table struct {
	cols []string
	rows [][]string
}

func newTable(cols ...string) *table { return &table{cols: cols} }

// row adds a row; long names in it are shortened (cutLongNames) before
// they can set a column's width.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		cells[i] = cutLongNames(c, nil)
	}
	t.rows = append(t.rows, cells)
}

func (t *table) render(b *strings.Builder, st styles, indent int) {
	if st.width > 0 {
		if parts := t.fit(st.width, indent); parts != nil {
			st.width = 0
			for _, p := range parts {
				p.render(b, st, indent)
			}
			return
		}
	}
	widths := make([]int, len(t.cols))
	for i, c := range t.cols {
		widths[i] = lipgloss.Width(c)
	}
	for _, r := range t.rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], lipgloss.Width(c))
			}
		}
	}
	line := func(cells []string, style *lipgloss.Style) {
		var parts []string
		for i, c := range cells {
			pad := widths[i] - lipgloss.Width(c)
			if i == 0 {
				parts = append(parts, c+strings.Repeat(" ", pad))
			} else {
				parts = append(parts, strings.Repeat(" ", pad)+c)
			}
		}
		s := strings.TrimRight(strings.Join(parts, "  "), " ")
		if style != nil {
			s = style.Render(s)
		}
		b.WriteString(strings.Repeat(" ", indent) + s + "\n")
	}
	line(t.cols, &st.header)
	for _, r := range t.rows {
		line(r, nil)
	}
}
