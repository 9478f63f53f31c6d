package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/history"
)

// The history renderers format a history.Result (`llmprof history`): the
// runs in order, each metric's change points with their size, interval and
// p-values, and what explains each change. They compute nothing.

// historyDoc is the llmprof.history/v1 JSON document.
type historyDoc struct {
	Schema   string                `json:"schema"`
	Order    string                `json:"order"`
	Detect   history.DetectOptions `json:"detect"`
	Unit     string                `json:"unit"`
	Runs     []history.RunInfo     `json:"runs"`
	Metrics  []historyMetricDoc    `json:"metrics"`
	Gate     historyGateDoc        `json:"gate"`
	Warnings []string              `json:"warnings"`
	Notes    []string              `json:"notes"`
}

type historyMetricDoc struct {
	Name     string              `json:"name"`
	Unit     string              `json:"unit"`
	Better   string              `json:"better"`
	Points   string              `json:"points,omitempty"`
	Values   []jnum              `json:"values"`
	Segments []historySegmentDoc `json:"segments"`
	Changes  []historyChangeDoc  `json:"changes"`
	Note     string              `json:"note,omitempty"`
}

type historySegmentDoc struct {
	From  int  `json:"from"`
	To    int  `json:"to"`
	Level jnum `json:"level"`
}

type historyChangeDoc struct {
	Index       int              `json:"index"`
	Run         string           `json:"run"`
	Time        *time.Time       `json:"time,omitempty"`
	Commit      string           `json:"commit,omitempty"`
	Before      jnum             `json:"before"`
	After       jnum             `json:"after"`
	P           jprob            `json:"p"`
	Q           jnum             `json:"q"`
	RunP        *jprob           `json:"run_p,omitempty"`
	DeltaPct    *jnum            `json:"delta_pct,omitempty"`
	CILowPct    *jnum            `json:"ci_low_pct,omitempty"`
	CIHighPct   *jnum            `json:"ci_high_pct,omitempty"`
	CompareP    *jprob           `json:"compare_p,omitempty"`
	Method      string           `json:"method,omitempty"`
	Unit        string           `json:"replication_unit,omitempty"`
	BaseRuns    int              `json:"runs_before"`
	CandRuns    int              `json:"runs_after"`
	Breakdown   string           `json:"breakdown,omitempty"`
	Explanation []explanationDoc `json:"explanation"`
	Mixed       bool             `json:"mixed,omitempty"`
	Note        string           `json:"note,omitempty"`
}

type explanationDoc struct {
	Bucket  string `json:"bucket"`
	DeltaMS jnum   `json:"delta_ms"`
}

type historyGateDoc struct {
	Failed bool             `json:"failed"`
	Rules  []historyRuleDoc `json:"rules"`
}

type historyRuleDoc struct {
	Rule    string `json:"rule"`
	Verdict string `json:"verdict"`
	Change  int    `json:"change"`
	Reason  string `json:"reason"`
}

// WriteHistoryJSON writes the history as an llmprof.history/v1 document.
func WriteHistoryJSON(w io.Writer, res *history.Result) error {
	doc := historyDoc{Schema: history.Schema, Order: res.Options.Order, Detect: res.Options.Detect, Unit: res.Options.Unit,
		Runs: res.Runs, Warnings: nonNil(res.Warnings), Notes: nonNil(res.Notes), Gate: historyGateDoc{Failed: res.Gate.Failed, Rules: []historyRuleDoc{}}}
	if doc.Runs == nil {
		doc.Runs = []history.RunInfo{}
	}
	doc.Metrics = []historyMetricDoc{}
	for _, m := range res.Metrics {
		md := historyMetricDoc{Name: m.Name, Unit: m.Unit, Better: m.Better.String(), Points: m.Points, Note: m.Note,
			Segments: []historySegmentDoc{}, Changes: []historyChangeDoc{}}
		for _, v := range m.Values {
			md.Values = append(md.Values, jnum(v))
		}
		for _, s := range m.Segments {
			md.Segments = append(md.Segments, historySegmentDoc{From: s.From, To: s.To, Level: jnum(s.Level)})
		}
		for _, c := range m.Changes {
			cd := historyChangeDoc{Index: c.Index, Run: c.Run.ID, Commit: c.Run.Commit, Before: jnum(c.Before), After: jnum(c.After),
				P: jprob(c.P), Q: jnum(c.Q), Unit: c.Unit, BaseRuns: c.BaseRuns, CandRuns: c.CandRuns, Note: c.Note, Explanation: []explanationDoc{}}
			if !math.IsNaN(c.RunP) {
				rp := jprob(c.RunP)
				cd.RunP = &rp
			}
			if !c.Run.Time.IsZero() {
				t := c.Run.Time
				cd.Time = &t
			}
			if cm := c.Comparison; cm != nil {
				d, lo, hi, p := jnum(cm.DeltaPct), jnum(cm.CILowPct), jnum(cm.CIHighPct), jprob(cm.P)
				cd.DeltaPct, cd.CILowPct, cd.CIHighPct, cd.CompareP = &d, &lo, &hi, &p
				cd.Method, cd.Breakdown, cd.Mixed = string(cm.Method), cm.Breakdown, cm.Mixed
				for _, e := range cm.Explanation {
					cd.Explanation = append(cd.Explanation, explanationDoc{Bucket: e.Bucket, DeltaMS: jnum(e.DeltaMS)})
				}
			}
			md.Changes = append(md.Changes, cd)
		}
		doc.Metrics = append(doc.Metrics, md)
	}
	for _, r := range res.Gate.Rules {
		doc.Gate.Rules = append(doc.Gate.Rules, historyRuleDoc{Rule: r.Rule.String(), Verdict: string(r.Verdict), Change: r.Change, Reason: r.Reason})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// WriteHistoryText writes the history for a terminal: the runs, then per
// metric its values by segment and each change with its size, interval,
// p-values and explanation, then the gate.
func WriteHistoryText(w io.Writer, res *history.Result) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "llmprof history: %d runs (%s order); change points by e-divisive means, permutation test at %s with %d permutations\n\n",
		len(res.Runs), res.Options.Order, strconv.FormatFloat(res.Options.Detect.Alpha, 'g', -1, 64), res.Options.Detect.Permutations)
	fmt.Fprintln(bw, "runs")
	for i, r := range res.Runs {
		fmt.Fprintf(bw, "  %2d  %-16s  %s%s\n", i+1, runTime(r.Time), r.ID, commitNote(r.Commit))
	}
	for _, m := range res.Metrics {
		fmt.Fprintf(bw, "\n%s (%s)%s\n", m.Name, pointsWord(m.Points), betterNote(m.Better))
		var segs []string
		for _, s := range m.Segments {
			var vals []string
			for _, v := range m.Values[s.From:s.To] {
				vals = append(vals, fmtNum(v))
			}
			segs = append(segs, strings.Join(vals, " "))
		}
		fmt.Fprintf(bw, "  values%s: %s\n", shortUnitParen(m.Unit), strings.Join(segs, " | "))
		if m.Note != "" {
			fmt.Fprintf(bw, "  not tested: %s\n", m.Note)
			continue
		}
		if len(m.Changes) == 0 {
			fmt.Fprintln(bw, "  no change point")
		}
		for _, c := range m.Changes {
			fmt.Fprintf(bw, "  change at run %d%s: %s → %s, %s (%s)\n", c.Index+1, changeWhere(c),
				fmtValue(c.Before, m.Unit), fmtValue(c.After, m.Unit), changeSize(c), detectP(c))
			if line := changeExplanation(c); line != "" {
				fmt.Fprintf(bw, "    %s\n", line)
			}
		}
	}
	if len(res.Gate.Rules) > 0 {
		word := "PASS"
		if res.Gate.Failed {
			word = "FAIL"
		}
		fmt.Fprintf(bw, "\ngate on the newest run: %s\n", word)
		for _, r := range res.Gate.Rules {
			fmt.Fprintf(bw, "  %-8s %s — %s\n", r.Verdict, r.Rule.String(), r.Reason)
		}
	}
	writeList(bw, "warnings", res.Warnings)
	writeList(bw, "notes", res.Notes)
	return bw.Flush()
}

func writeList(bw *bufio.Writer, title string, items []string) {
	if len(items) == 0 {
		return
	}
	fmt.Fprintf(bw, "\n%s\n", title)
	for _, s := range items {
		fmt.Fprintf(bw, "  %s\n", s)
	}
}

// WriteHistoryMarkdown writes the history for a CI comment: the gate, a
// table of every change point, and the runs collapsed.
func WriteHistoryMarkdown(w io.Writer, res *history.Result) error {
	bw := bufio.NewWriter(w)
	icon, word := "📈", "history"
	if len(res.Gate.Rules) > 0 {
		icon, word = "✅", "gate pass"
		if res.Gate.Failed {
			icon, word = "❌", "gate fail"
		}
	}
	fmt.Fprintf(bw, "### %s llmprof history: %s\n\n", icon, word)
	fmt.Fprintf(bw, "%d runs (%s order) · e-divisive means, permutation test at %s (%d permutations)\n\n",
		len(res.Runs), res.Options.Order, strconv.FormatFloat(res.Options.Detect.Alpha, 'g', -1, 64), res.Options.Detect.Permutations)
	if len(res.Gate.Rules) > 0 {
		fmt.Fprintln(bw, "| rule | verdict | why |")
		fmt.Fprintln(bw, "|---|---|---|")
		for _, r := range res.Gate.Rules {
			fmt.Fprintf(bw, "| `%s` | %s | %s |\n", mdEscape(r.Rule.String()), r.Verdict, mdEscape(r.Reason))
		}
		fmt.Fprintln(bw)
	}
	n := 0
	for _, m := range res.Metrics {
		n += len(m.Changes)
	}
	if n == 0 {
		fmt.Fprintln(bw, "No change point in any metric.")
	} else {
		fmt.Fprintln(bw, "| metric | at run | before | after | change | interval | p | explained by |")
		fmt.Fprintln(bw, "|---|---|---:|---:|---:|---|---:|---|")
		for _, m := range res.Metrics {
			for _, c := range m.Changes {
				change, ci := "—", "—"
				if cm := c.Comparison; cm != nil {
					change, ci = fmtPct(cm.DeltaPct), fmtCI(*cm)
				}
				fmt.Fprintf(bw, "| %s | %d%s | %s | %s | %s | %s | %s | %s |\n", m.Name, c.Index+1, mdEscape(changeWhere(c)),
					fmtValue(c.Before, m.Unit), fmtValue(c.After, m.Unit), change, ci, fmtP(c.P), mdEscape(changeExplanation(c)))
			}
		}
	}
	var quiet []string
	for _, m := range res.Metrics {
		if m.Note != "" {
			quiet = append(quiet, fmt.Sprintf("- %s: not tested (%s)", m.Name, mdEscape(m.Note)))
		}
	}
	if len(quiet) > 0 {
		fmt.Fprintln(bw)
		fmt.Fprintln(bw, strings.Join(quiet, "\n"))
	}
	fmt.Fprintln(bw, "\n<details><summary>runs</summary>\n\n| # | time | run | commit |\n|---:|---|---|---|")
	for i, r := range res.Runs {
		fmt.Fprintf(bw, "| %d | %s | %s | %s |\n", i+1, runTime(r.Time), mdEscape(r.ID), mdEscape(r.Commit))
	}
	fmt.Fprintln(bw, "\n</details>")
	for _, s := range res.Warnings {
		fmt.Fprintf(bw, "\n> ⚠️ %s", mdEscape(s))
	}
	if len(res.Warnings) > 0 {
		fmt.Fprintln(bw)
	}
	return bw.Flush()
}

// detectP is the detection's p-values: "p 0.002" for run points, "p 0.002
// on requests, 0.0004 on runs" where runs confirmed a change found on
// requests.
func detectP(c history.Change) string {
	if math.IsNaN(c.RunP) {
		return "p " + fmtP(c.P)
	}
	return fmt.Sprintf("p %s on requests, %s on runs", fmtP(c.P), fmtP(c.RunP))
}

func runTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.Format("2006-01-02 15:04")
}

func commitNote(c string) string {
	if c == "" {
		return ""
	}
	return "  commit " + c
}

func pointsWord(p string) string {
	switch p {
	case history.UnitRequest:
		return "tested on the runs' requests"
	case history.UnitRun:
		return "tested on run values"
	}
	return "not tested"
}

func betterNote(b compare.Better) string {
	if b == compare.HigherIsBetter {
		return ", higher is better"
	}
	return ""
}

func shortUnitParen(u string) string {
	if u == "" {
		return ""
	}
	return " (" + u + ")"
}

// changeWhere is " (2025-04-14 15:21, commit abc)" or "".
func changeWhere(c history.Change) string {
	var parts []string
	if !c.Run.Time.IsZero() {
		parts = append(parts, runTime(c.Run.Time))
	}
	if c.Run.Commit != "" {
		parts = append(parts, "commit "+c.Run.Commit)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// changeSize is compare's change between the segments with its interval:
// "+106.4% (+100.1% … +110.0%, 1 run vs 3, request)".
func changeSize(c history.Change) string {
	cm := c.Comparison
	if cm == nil {
		return "not compared: " + c.Note
	}
	return fmt.Sprintf("%s [%s], %d vs %d runs, unit %s", fmtPct(cm.DeltaPct), fmtCI(*cm), c.BaseRuns, c.CandRuns, c.Unit)
}

// changeExplanation names the buckets that moved with the change.
func changeExplanation(c history.Change) string {
	if c.Comparison == nil {
		return ""
	}
	return explanationLine(*c.Comparison, 3)
}

// historyValue formats a level for charts.
func historyValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmtValue(v, unit)
}
