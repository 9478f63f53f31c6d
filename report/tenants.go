package report

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/charmbracelet/lipgloss"

	"github.com/llmprof/llmprof/causal"
)

// tenantsText renders the tenant causal regression. Full adds every pair
// (not only the significant ones), the process mapping and the assumptions;
// analyze shows the compact form, the tenants command the full one.
func tenantsText(b *strings.Builder, st styles, res *causal.Result, note string, full bool) {
	if res == nil {
		if note != "" && full {
			fmt.Fprintf(b, "\n%s  %s\n", st.section.Render("TENANTS"), st.dim.Render(note))
		}
		return
	}
	estimable, top := estimableIn(res, nil)
	if estimable == 0 && !full && !kernelFindings(res.Kernel) {
		fmt.Fprintf(b, "\n%s  %s\n", st.section.Render("TENANTS"), st.dim.Render(fmt.Sprintf(
			"no pair of tenants is estimable (%d pairs; mostly: %s)", len(res.Pairs), top)))
		return
	}
	fmt.Fprintf(b, "\n%s  %s\n", st.section.Render("TENANTS"), st.dim.Render(fmt.Sprintf(
		"effect of each tenant's load (%s) on the others' latency, per %s of the source's load; %s at q < %g",
		res.Load, stepString(res), res.Correction, res.Alpha)))
	kernelText(b, st, res.Kernel, full)
	// With nothing estimable the summary line below says why, once.
	for _, m := range res.Metrics {
		if estimable > 0 {
			heatMap(b, st, res, m)
		}
	}
	if o := res.Others; o != nil {
		// The pairs are bounded by Options.MaxTenants; say what was merged.
		fmt.Fprintf(b, "  %s\n", st.dim.Render(fmt.Sprintf("%d more tenants (%d requests, %s of the load) are one source here, %q: only the tenants with the most load are analyzed pair by pair",
			o.Tenants, o.Requests, pct(float64(o.LoadShare)), o.Name)))
	}
	var found []causal.Pair
	for _, p := range res.Pairs {
		if p.Verdict == causal.VerdictInterference || p.Verdict == causal.VerdictAssociation || p.Verdict == causal.VerdictConfounded || p.Verdict == causal.VerdictControlFired || full {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		fmt.Fprintf(b, "  %s\n", requestLevelSummary(res, estimable, top))
	}
	// Pairs that cannot be estimated are grouped by reason: the reason is
	// usually the target's, shared by every source.
	var order []string
	byReason := map[string][]string{}
	for _, p := range found {
		if !p.Estimable {
			if _, seen := byReason[p.Reason]; !seen {
				order = append(order, p.Reason)
			}
			byReason[p.Reason] = append(byReason[p.Reason], fmt.Sprintf("%s→%s %s", p.Source, p.Target, p.Metric))
		}
	}
	for _, r := range order {
		pairs := byReason[r]
		list := strings.Join(pairs, ", ")
		if len(pairs) > 6 {
			list = strings.Join(pairs[:6], ", ") + fmt.Sprintf(", … (%d pairs)", len(pairs))
		}
		fmt.Fprintf(b, "  %s\n", st.dim.Render("not estimable: "+r+": "+list))
	}
	for _, p := range found {
		if !p.Estimable {
			continue
		}
		line := fmt.Sprintf("%s → %s %s: %s", p.Source, p.Target, p.Metric, p.Verdict)
		switch {
		case p.Isolated:
			// A control's q is its Bonferroni-adjusted p among its metric's
			// controls, and it has no share of anyone's latency.
			line += fmt.Sprintf(", %s ms (%s, 95%% CI %s … %s), q %s among the controls; negative control (other GPU or MIG instance): a significant effect here points to confounding",
				signedMs(float64(p.EffectMs)), signedPct(float64(p.EffectPct)), signedPct(float64(p.CILowPct)), signedPct(float64(p.CIHighPct)),
				qString(float64(p.Q)))
		default:
			line += fmt.Sprintf(", %s ms (%s, 95%% CI %s … %s), q %s, %s of %s's latency",
				signedMs(float64(p.EffectMs)), signedPct(float64(p.EffectPct)), signedPct(float64(p.CILowPct)), signedPct(float64(p.CIHighPct)),
				qString(float64(p.Q)), pct(float64(p.Share)), p.Target)
		}
		style := verdictStyle(st, p.Verdict)
		fmt.Fprintf(b, "  %s\n", style.Render(line))
	}
	if full {
		if res.Mapping != nil {
			for _, n := range res.Mapping.Notes {
				fmt.Fprintf(b, "  %s\n", st.dim.Render("mapping: "+n))
			}
		}
		for _, n := range res.Notes {
			fmt.Fprintf(b, "  %s\n", st.dim.Render("note: "+n))
		}
		fmt.Fprintf(b, "  %s\n", st.dim.Render("causal only under these assumptions:"))
		for _, a := range res.Assumptions {
			fmt.Fprintf(b, "  %s\n", st.dim.Render("- "+a))
		}
	} else {
		fmt.Fprintf(b, "  %s\n", st.dim.Render("`llmprof tenants` shows every pair, the process mapping and the assumptions behind a causal reading"))
	}
}

// requestLevelSummary is the request-level regression's line when it found
// nothing: it says whether anything could be estimated, and points to the
// kernel-level finding when there is one, so the section tells one story.
func requestLevelSummary(res *causal.Result, estimable int, topReason string) string {
	var s string
	if estimable == 0 {
		s = fmt.Sprintf("request level: no pair is estimable (%d pairs; mostly: %s), so the load regression says nothing either way", len(res.Pairs), topReason)
	} else {
		s = "request level: no tenant's load significantly moves another's latency"
	}
	if k := topKernelPair(res.Kernel); k != nil {
		s += fmt.Sprintf("; the tenant finding is the kernel-level interference above (%s → %s)", k.Source, k.Target)
	}
	return s
}

// heatMap draws the source × target matrix of one metric's effects in
// percent; significant interference is marked (and shaded on a colour
// terminal), isolated pairs and those without an estimate say so.
func heatMap(b *strings.Builder, st styles, res *causal.Result, m causal.Metric) {
	tenants, cells := res.Matrix(m)
	if len(tenants) < 2 {
		return
	}
	// Rows are the tenants with load (sources), columns those with
	// requests (targets); a tenant of a shared source is never its target.
	var rows, targets []int
	for i := range tenants {
		src, dst := false, false
		for j := range tenants {
			src = src || cells[i][j] != nil
			dst = dst || cells[j][i] != nil
		}
		if src {
			rows = append(rows, i)
		}
		if dst {
			targets = append(targets, i)
		}
	}
	if len(rows) == 0 || len(targets) == 0 {
		return
	}
	// A matrix of "n/e" cells shows nothing: one line says why instead.
	if n, reason := metricEstimable(res, m); n == 0 {
		fmt.Fprintf(b, "  %s\n", st.dim.Render(fmt.Sprintf("%s effect: no pair estimable (mostly: %s); no matrix", strings.ToUpper(m.String()), reason)))
		return
	}
	fmt.Fprintf(b, "  %s effect (%% of target latency), source ↓ target →\n", strings.ToUpper(m.String()))
	cols := []string{""}
	for _, j := range targets {
		cols = append(cols, tenants[j])
	}
	t := newTable(cols...)
	for _, i := range rows {
		src := tenants[i]
		row := []string{src}
		for _, j := range targets {
			p := cells[i][j]
			switch {
			case i == j || p == nil && res.Mapping != nil && sharesTenant(res.Mapping, src, tenants[j]):
				row = append(row, "·")
			case p == nil || !p.Estimable:
				row = append(row, "n/e")
			case p.Verdict == causal.VerdictInterference:
				row = append(row, shade(st, signedPct(float64(p.EffectPct))+"*", float64(p.EffectPct)))
			case p.Verdict == causal.VerdictAssociation || p.Verdict == causal.VerdictConfounded:
				row = append(row, st.warn.Render(signedPct(float64(p.EffectPct))+"?"))
			case p.Verdict == causal.VerdictControlFired:
				row = append(row, st.warn.Render(signedPct(float64(p.EffectPct))+"!"))
			case p.Verdict == causal.VerdictControl:
				row = append(row, "c")
			default:
				row = append(row, "~")
			}
		}
		t.row(row...)
	}
	t.render(b, st, 4)
	fmt.Fprintf(b, "    %s\n", st.dim.Render("* interference  ? association or confounded (placebo, sign or a negative control fails)  ! a negative control fired  c negative control  ~ no evidence or negligible  n/e not estimable  · same tenant"))
}

// estimableIn counts the estimable pairs among those keep accepts (all
// when nil) and names the most common reason of the others (the first to
// reach the largest count).
func estimableIn(res *causal.Result, keep func(*causal.Pair) bool) (int, string) {
	n := 0
	reasons := map[string]int{}
	top := ""
	for i := range res.Pairs {
		p := &res.Pairs[i]
		switch {
		case keep != nil && !keep(p):
		case p.Estimable:
			n++
		default:
			if reasons[p.Reason]++; reasons[p.Reason] > reasons[top] {
				top = p.Reason
			}
		}
	}
	return n, top
}

// metricEstimable is estimableIn for one metric's pairs.
func metricEstimable(res *causal.Result, m causal.Metric) (int, string) {
	return estimableIn(res, func(p *causal.Pair) bool { return p.Metric == m })
}

// sharesTenant reports whether two names stand for a common tenant (a
// shared source and one of its tenants).
func sharesTenant(m *causal.TenantMap, a, b string) bool {
	mb := m.Members(b)
	for _, x := range m.Members(a) {
		for _, y := range mb {
			if x == y {
				return true
			}
		}
	}
	return false
}

func verdictStyle(st styles, v causal.Verdict) lipgloss.Style {
	switch v {
	case causal.VerdictInterference:
		return st.bad
	case causal.VerdictAssociation, causal.VerdictConfounded, causal.VerdictControlFired:
		return st.warn
	}
	return st.dim
}

// kernelFindings reports whether the kernel view found anything to show.
func kernelFindings(k *causal.KernelResult) bool {
	if k == nil {
		return false
	}
	for _, p := range k.Pairs {
		if p.Significant(k.Alpha) {
			return true
		}
	}
	return false
}

// kernelText renders the kernel-level view: how much each source's
// concurrent work stretches the target's kernels, by category, and what it
// costs the target's requests.
func kernelText(b *strings.Builder, st styles, k *causal.KernelResult, full bool) {
	if k == nil || len(k.Pairs) == 0 {
		return
	}
	fmt.Fprintf(b, "  %s\n", st.dim.Render("kernel level: stretch of the target's kernels while the source's work overlaps them, against the same kernels alone"))
	shown := 0
	for _, p := range k.Pairs {
		if !full && !p.Significant(k.Alpha) {
			continue
		}
		shown++
		var line string
		if !p.Estimable {
			line = fmt.Sprintf("%s → %s (GPU %d) kernels: not estimable: %s", p.Source, p.Target, p.Device, p.Reason)
			fmt.Fprintf(b, "  %s\n", st.dim.Render(line))
			continue
		}
		// The interval spans the specification band (causal.SpecStretch);
		// the model's own interval is shown beside it when narrower.
		ci := fmt.Sprintf("95%% CI %s … %s", signedPct(float64(p.CILowPct)), signedPct(float64(p.CIHighPct)))
		if len(p.Sensitivity) > 0 {
			ci = fmt.Sprintf("95%% CI %s … %s over %d specifications, the model's alone %s … %s", signedPct(float64(p.CILowPct)), signedPct(float64(p.CIHighPct)),
				1+len(p.Sensitivity), signedPct(float64(p.ModelCILowPct)), signedPct(float64(p.ModelCIHighPct)))
		}
		line = fmt.Sprintf("%s → %s (GPU %d) kernels: %s, %s (%s), q %s, %d kernels, %s of them overlapped on average",
			p.Source, p.Target, p.Device, p.Verdict, signedPct(float64(p.StretchPct)), ci,
			qString(float64(p.Q)), p.Kernels, pct(float64(p.MeanOverlap)))
		if p.Isolated {
			line += "; negative control (other GPU or MIG instance)"
		}
		fmt.Fprintf(b, "  %s\n", verdictStyle(st, p.Verdict).Render(line))
		if !p.Significant(k.Alpha) {
			continue
		}
		var cats []string
		for _, c := range p.ByCategory {
			cats = append(cats, fmt.Sprintf("%s %s (%s … %s)", c.Category, signedPct(float64(c.StretchPct)), signedPct(float64(c.CILowPct)), signedPct(float64(c.CIHighPct))))
		}
		if len(cats) > 0 {
			fmt.Fprintf(b, "    %s\n", st.dim.Render("by category: "+strings.Join(cats, ", ")))
		}
		var imp []string
		for _, im := range p.Impact {
			imp = append(imp, fmt.Sprintf("%s %s ms (%s … %s, %s of %s ms)", im.Metric, signedMs(float64(im.EffectMs)), signedMs(float64(im.CILowMs)), signedMs(float64(im.CIHighMs)),
				pct(float64(im.Share)), ms(float64(im.BaselineMs))))
		}
		if len(imp) > 0 {
			fmt.Fprintf(b, "    %s\n", st.dim.Render(fmt.Sprintf("costs %s's requests on average: %s", p.Target, strings.Join(imp, ", "))))
		}
	}
	if shown == 0 {
		fmt.Fprintf(b, "  %s\n", st.dim.Render(fmt.Sprintf("no tenant's concurrent work significantly stretches another's kernels (%d pairs)", len(k.Pairs))))
	}
	if full {
		for _, n := range k.Notes {
			fmt.Fprintf(b, "  %s\n", st.dim.Render("kernel note: "+n))
		}
	}
}

// shade colours a cell by effect size (colour terminals only).
func shade(st styles, s string, pctEffect float64) string {
	switch {
	case math.IsNaN(pctEffect):
		return s
	case pctEffect >= 10:
		return st.bad.Bold(true).Render(s)
	case pctEffect >= 3:
		return st.bad.Render(s)
	}
	return st.warn.Render(s)
}

func stepString(res *causal.Result) string {
	switch res.LoadUnit {
	case "fraction":
		return fmt.Sprintf("+%g%%", 100*res.Step)
	case "":
		return fmt.Sprintf("+%g", res.Step)
	}
	return fmt.Sprintf("+%g %s", res.Step, res.LoadUnit)
}

func signedMs(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	if v >= 0 {
		return "+" + ms(v)
	}
	return "-" + ms(-v)
}

func signedPct(v float64) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", v)
}

func qString(q float64) string {
	switch {
	case math.IsNaN(q):
		return "—"
	case q < 0.001:
		return "< 0.001"
	}
	return fmt.Sprintf("%.3f", q)
}

// WriteTenantsText renders the tenants command's output: the full tenant
// section.
func WriteTenantsText(w io.Writer, res *causal.Result, note string, opts TextOptions) error {
	st := newStyles(w, opts.Color)
	st.width = max(0, opts.Width)
	var b strings.Builder
	tenantsText(&b, st, res, note, true)
	_, err := io.WriteString(w, fitLines(strings.TrimPrefix(b.String(), "\n"), st.width))
	return err
}
