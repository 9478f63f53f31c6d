package report

import (
	"fmt"
	"io"
	"math"
	"strings"

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
	fmt.Fprintf(b, "\n%s  %s\n", st.section.Render("TENANTS"), st.dim.Render(fmt.Sprintf(
		"effect of each tenant's load (%s) on the others' latency, per %s of the source's load; %s at q < %g",
		res.Load, stepString(res), res.Correction, res.Alpha)))
	for _, m := range res.Metrics {
		heatMap(b, st, res, m)
	}
	var found []causal.Pair
	for _, p := range res.Pairs {
		if p.Verdict == causal.VerdictInterference || p.Verdict == causal.VerdictAssociation || full {
			found = append(found, p)
		}
	}
	if len(found) == 0 {
		fmt.Fprintf(b, "  no tenant's load significantly moves another's latency\n")
	}
	// Pairs that cannot be estimated are grouped by reason: the reason is
	// usually the target's, shared by every source.
	var reasons []string
	byReason := map[string][]string{}
	for _, p := range found {
		if !p.Estimable {
			if _, seen := byReason[p.Reason]; !seen {
				reasons = append(reasons, p.Reason)
			}
			byReason[p.Reason] = append(byReason[p.Reason], fmt.Sprintf("%s→%s %s", p.Source, p.Target, p.Metric))
		}
	}
	for _, r := range reasons {
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
		default:
			line += fmt.Sprintf(", %s ms (%s, 95%% CI %s … %s), q %s, %s of %s's latency",
				signedMs(float64(p.EffectMs)), signedPct(float64(p.EffectPct)), signedPct(float64(p.CILowPct)), signedPct(float64(p.CIHighPct)),
				qString(float64(p.Q)), pct(float64(p.Share)), p.Target)
			if p.Isolated {
				line += "; isolated (other GPU or MIG instance): a significant effect here points to confounding"
			}
		}
		style := st.dim
		if p.Verdict == causal.VerdictInterference {
			style = st.bad
		} else if p.Verdict == causal.VerdictAssociation {
			style = st.warn
		}
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

// heatMap draws the source × target matrix of one metric's effects in
// percent; significant interference is marked (and shaded on a colour
// terminal), isolated pairs and those without an estimate say so.
func heatMap(b *strings.Builder, st styles, res *causal.Result, m causal.Metric) {
	tenants, cells := res.Matrix(m)
	if len(tenants) < 2 {
		return
	}
	fmt.Fprintf(b, "  %s effect (%% of target latency), source ↓ target →\n", strings.ToUpper(m.String()))
	cols := append([]string{""}, tenants...)
	t := newTable(cols...)
	for i, src := range tenants {
		row := []string{src}
		for j := range tenants {
			p := cells[i][j]
			switch {
			case i == j:
				row = append(row, "·")
			case p == nil || !p.Estimable:
				row = append(row, "n/e")
			case p.Verdict == causal.VerdictInterference:
				row = append(row, shade(st, signedPct(float64(p.EffectPct))+"*", float64(p.EffectPct)))
			case p.Verdict == causal.VerdictAssociation:
				row = append(row, st.warn.Render(signedPct(float64(p.EffectPct))+"?"))
			default:
				row = append(row, "~")
			}
		}
		t.row(row...)
	}
	t.render(b, st, 4)
	fmt.Fprintf(b, "    %s\n", st.dim.Render("* interference  ? association (placebo or sign fails)  ~ no evidence or negligible  n/e not estimable"))
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
	var b strings.Builder
	tenantsText(&b, st, res, note, true)
	_, err := io.WriteString(w, strings.TrimPrefix(b.String(), "\n"))
	return err
}
