package report

import (
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/llmprof/llmprof/compare"
)

// kernelRows is how many changed identities and kernel names the text and
// Markdown kernel sections list (the JSON lists all).
const kernelRows = 10

// diffKernelsDoc is the JSON of the kernel-level comparison ("kernels").
type diffKernelsDoc struct {
	Stratified        bool                  `json:"stratified"`
	LaunchesBaseline  int                   `json:"launches_baseline"`
	LaunchesCandidate int                   `json:"launches_candidate"`
	Groups            []diffKernelGroupDoc  `json:"groups"`
	Identities        []diffKernelChangeDoc `json:"identities"`
	Names             []diffKernelNameDoc   `json:"names"`
}

type diffKernelGroupDoc struct {
	Metric       string `json:"metric"`
	Identities   int    `json:"identities"`
	MatchedShare jnum   `json:"matched_share"`
	BaselineMS   jnum   `json:"baseline_ms"`
	CandidateMS  jnum   `json:"candidate_ms"`
	DeltaPct     jnum   `json:"delta_pct"`
	CILowPct     jnum   `json:"ci_low_pct"`
	CIHighPct    jnum   `json:"ci_high_pct"`
	P            jprob  `json:"p"`
	Tau          jnum   `json:"tau"`
	Significant  bool   `json:"significant"`
	Top          string `json:"top,omitempty"`
}

type diffKernelChangeDoc struct {
	Name              string `json:"name"`
	Short             string `json:"short,omitempty"`
	Launch            string `json:"launch"`
	Stratum           string `json:"stratum,omitempty"`
	Category          string `json:"category"`
	NBaseline         int    `json:"n_baseline"`
	NCandidate        int    `json:"n_candidate"`
	BaselineMS        jnum   `json:"baseline_ms"`
	CandidateMS       jnum   `json:"candidate_ms"`
	MedianBaselineUS  jnum   `json:"median_baseline_us"`
	MedianCandidateUS jnum   `json:"median_candidate_us"`
	DeltaPct          jnum   `json:"delta_pct"`
	CILowPct          jnum   `json:"ci_low_pct"`
	CIHighPct         jnum   `json:"ci_high_pct"`
	P                 jprob  `json:"p"`
	Significant       bool   `json:"significant"`
	Compared          bool   `json:"compared"`
}

type diffKernelNameDoc struct {
	Name           string `json:"name"`
	Category       string `json:"category"`
	CountBaseline  int    `json:"count_baseline"`
	CountCandidate int    `json:"count_candidate"`
	BaselineMS     jnum   `json:"baseline_ms"`
	CandidateMS    jnum   `json:"candidate_ms"`
	Status         string `json:"status"`
}

func kernelsDoc(k *compare.KernelComparison) *diffKernelsDoc {
	if k == nil {
		return nil
	}
	d := &diffKernelsDoc{Stratified: k.Stratified, LaunchesBaseline: k.LaunchesBaseline, LaunchesCandidate: k.LaunchesCandidate,
		Groups: []diffKernelGroupDoc{}, Identities: []diffKernelChangeDoc{}, Names: []diffKernelNameDoc{}}
	for _, g := range k.Groups {
		d.Groups = append(d.Groups, diffKernelGroupDoc{Metric: g.Metric, Identities: g.Identities, MatchedShare: jnum(g.MatchedShare),
			BaselineMS: jnum(g.BaselineMS), CandidateMS: jnum(g.CandidateMS), DeltaPct: jnum(g.DeltaPct),
			CILowPct: jnum(g.CILowPct), CIHighPct: jnum(g.CIHighPct), P: jprob(g.P), Tau: jnum(g.Tau), Significant: g.Significant, Top: g.Top})
	}
	for _, u := range k.Identities {
		d.Identities = append(d.Identities, diffKernelChangeDoc{Name: u.Name, Short: u.Short, Launch: u.Launch, Stratum: u.Stratum,
			Category: u.Category, NBaseline: u.NBaseline, NCandidate: u.NCandidate, BaselineMS: jnum(u.BaselineMS), CandidateMS: jnum(u.CandidateMS),
			MedianBaselineUS: jnum(u.MedianBaselineUS), MedianCandidateUS: jnum(u.MedianCandidateUS),
			DeltaPct: jnum(u.DeltaPct), CILowPct: jnum(u.CILowPct), CIHighPct: jnum(u.CIHighPct), P: jprob(u.P),
			Significant: u.Significant, Compared: u.Compared})
	}
	for _, n := range k.Names {
		d.Names = append(d.Names, diffKernelNameDoc{Name: n.Name, Category: n.Category, CountBaseline: n.CountBaseline,
			CountCandidate: n.CountCandidate, BaselineMS: jnum(n.BaselineMS), CandidateMS: jnum(n.CandidateMS), Status: n.Status})
	}
	return d
}

// kernelName shortens a kernel's name for a table: its base name when the
// input gives one, else the full name cut at 60 characters.
func kernelName(name, short string) string {
	if short != "" {
		name = short
	}
	if utf8.RuneCountInString(name) > 60 {
		r := []rune(name)
		return string(r[:59]) + "…"
	}
	return name
}

func fmtRange(lo, hi float64) string {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return "—"
	}
	return fmtPct(lo) + " … " + fmtPct(hi)
}

func identityLabel(u compare.KernelChange) string {
	s := kernelName(u.Name, u.Short) + " [" + u.Launch
	if u.Stratum != "" {
		s += "; " + u.Stratum
	}
	return s + "]"
}

// changedIdentities are the significant identity changes, as ordered by
// compare (largest time impact first).
func changedIdentities(k *compare.KernelComparison) []compare.KernelChange {
	var out []compare.KernelChange
	for _, u := range k.Identities {
		if u.Significant {
			out = append(out, u)
		}
	}
	return out
}

// oneSided are the kernel names that ran on one side only.
func oneSided(k *compare.KernelComparison) []compare.KernelNameChange {
	var out []compare.KernelNameChange
	for _, n := range k.Names {
		if n.Status == "added" || n.Status == "removed" {
			out = append(out, n)
		}
	}
	return out
}

func kernelsHeadline(k *compare.KernelComparison) string {
	compared := 0
	for _, u := range k.Identities {
		if u.Compared {
			compared++
		}
	}
	how := "name and launch configuration"
	if k.Stratified {
		how += ", at equal engine-step composition"
	}
	return fmt.Sprintf("kernels: %d identities (%s), %d on both sides with an interval; %d and %d launches",
		len(k.Identities), how, compared, k.LaunchesBaseline, k.LaunchesCandidate)
}

// writeKernelsText is the text renderer's kernel section.
func writeKernelsText(w io.Writer, k *compare.KernelComparison, st styles) {
	if k == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, st.title.Render(kernelsHeadline(k)))
	changed := changedIdentities(k)
	if len(changed) == 0 {
		fmt.Fprintln(w, "  no identity changed significantly")
	}
	for i, u := range changed {
		if i == kernelRows {
			fmt.Fprintf(w, "  … %d more changed identities (--format json lists all)\n", len(changed)-kernelRows)
			break
		}
		fmt.Fprintf(w, "  %-8s %s … %s  %s, %s → %s (%d → %d launches)  %s\n", fmtPct(u.DeltaPct), fmtPct(u.CILowPct), fmtPct(u.CIHighPct),
			u.Category, fmtNum(u.BaselineMS)+"ms", fmtNum(u.CandidateMS)+"ms", u.NBaseline, u.NCandidate, identityLabel(u))
	}
	one := oneSided(k)
	for i, n := range one {
		if i == kernelRows {
			fmt.Fprintf(w, "  … %d more kernels on one side only\n", len(one)-kernelRows)
			break
		}
		if n.Status == "added" {
			fmt.Fprintf(w, "  added    candidate only: %d launches, %s  %s\n", n.CountCandidate, fmtNum(n.CandidateMS)+"ms", kernelName(n.Name, ""))
		} else {
			fmt.Fprintf(w, "  removed  baseline only: %d launches, %s  %s\n", n.CountBaseline, fmtNum(n.BaselineMS)+"ms", kernelName(n.Name, ""))
		}
	}
}

// writeKernelsMarkdown is the Markdown renderer's kernel section.
func writeKernelsMarkdown(w io.Writer, k *compare.KernelComparison) {
	if k == nil {
		return
	}
	fmt.Fprintf(w, "**Kernels** — %s\n\n", mdEscape(strings.TrimPrefix(kernelsHeadline(k), "kernels: ")))
	if len(k.Groups) > 0 {
		fmt.Fprintln(w, "| metric | identities | baseline | candidate | change | 95% CI | p |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---|---:|")
		for _, g := range k.Groups {
			change := "~"
			if g.Significant {
				change = "**" + fmtPct(g.DeltaPct) + "**"
			}
			fmt.Fprintf(w, "| `%s` | %d | %sms | %sms | %s | %s | %s |\n", mdEscape(g.Metric), g.Identities, fmtNum(g.BaselineMS), fmtNum(g.CandidateMS),
				change, fmtRange(g.CILowPct, g.CIHighPct), fmtP(g.P))
		}
		fmt.Fprintln(w)
	}
	changed := changedIdentities(k)
	one := oneSided(k)
	if len(changed)+len(one) == 0 {
		return
	}
	fmt.Fprintln(w, "<details><summary>Changed kernels</summary>")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| kernel | category | launches | time | change | 95% CI |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---|")
	for i, u := range changed {
		if i == kernelRows {
			break
		}
		fmt.Fprintf(w, "| `%s` | %s | %d → %d | %sms → %sms | %s | %s |\n", mdEscape(identityLabel(u)), u.Category, u.NBaseline, u.NCandidate,
			fmtNum(u.BaselineMS), fmtNum(u.CandidateMS), fmtPct(u.DeltaPct), fmtRange(u.CILowPct, u.CIHighPct))
	}
	for i, n := range one {
		if i == kernelRows {
			break
		}
		fmt.Fprintf(w, "| `%s` | %s | %d → %d | %sms → %sms | %s | |\n", mdEscape(kernelName(n.Name, "")), n.Category, n.CountBaseline, n.CountCandidate,
			fmtNum(n.BaselineMS), fmtNum(n.CandidateMS), n.Status)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "</details>")
	fmt.Fprintln(w)
}

// kernelsHTML is the HTML renderer's kernel section: the pooled groups and
// the changed and one-sided kernels, as tables.
func (h *htmlPage) kernelsHTML(k *compare.KernelComparison) {
	if k == nil {
		return
	}
	h.section("kernels", "Kernels", kernelsHeadline(k))
	var rows [][]string
	for _, g := range k.Groups {
		rows = append(rows, []string{g.Metric, fmt.Sprint(g.Identities), fmtNum(g.BaselineMS) + " ms", fmtNum(g.CandidateMS) + " ms",
			fmtPct(g.DeltaPct), fmtRange(g.CILowPct, g.CIHighPct), fmtP(g.P)})
	}
	h.table("", []string{"metric", "identities", "baseline", "candidate", "change", "interval", "p"}, rows, false)
	rows = nil
	for i, u := range changedIdentities(k) {
		if i == 3*kernelRows {
			break
		}
		rows = append(rows, []string{identityLabel(u), u.Category, fmt.Sprintf("%d → %d", u.NBaseline, u.NCandidate),
			fmtNum(u.BaselineMS) + " → " + fmtNum(u.CandidateMS) + " ms", fmtPct(u.DeltaPct), fmtRange(u.CILowPct, u.CIHighPct)})
	}
	for i, n := range oneSided(k) {
		if i == 3*kernelRows {
			break
		}
		rows = append(rows, []string{kernelName(n.Name, ""), n.Category, fmt.Sprintf("%d → %d", n.CountBaseline, n.CountCandidate),
			fmtNum(n.BaselineMS) + " → " + fmtNum(n.CandidateMS) + " ms", n.Status, ""})
	}
	if len(rows) > 0 {
		h.table("", []string{"kernel", "category", "launches", "time", "change", "interval"}, rows, true)
	}
	h.end()
}
