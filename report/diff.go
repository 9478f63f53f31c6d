package report

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/compare"
)

// DiffSchema is the version of `diff --format json` (docs/diff.md). Renaming
// or removing a field bumps it; adding one does not.
const DiffSchema = "llmprof.diff/v1"

// DiffOptions tune the human-readable diff renderers.
type DiffOptions struct {
	// Color enables ANSI colour in text output (a terminal without
	// NO_COLOR). Markdown, JSON and JUnit never colour.
	Color bool
	// All lists every metric; by default bucket metrics (stage.*, token.*,
	// tenant.*) appear only when their change is significant or gated.
	All bool
	// Top is how many attribution buckets an explanation line names
	// (default 3).
	Top int
	// Width is the terminal's width the text output fits (prose lines
	// wrap, as in analyze's report); 0 leaves lines as long as they are.
	Width int
}

func (o DiffOptions) top() int {
	if o.Top <= 0 {
		return 3
	}
	return o.Top
}

// diffDoc is the JSON document. Field names are the stable contract of
// docs/design.md §11: schema; metrics[] with name, baseline, candidate, delta_pct,
// ci_low_pct, ci_high_pct, p, mde_pct, verdict (gated metrics only) and
// explanation[] of {bucket, delta_ms}; gate.verdict. The other fields are
// additions. Numbers that do not exist (no interval, no p-value) are null.
type diffDoc struct {
	Schema    string      `json:"schema"`
	Baseline  diffSideDoc `json:"baseline"`
	Candidate diffSideDoc `json:"candidate"`
	Unit      string      `json:"unit"`
	// Workload is what one run per side was found to be: "replayed"
	// (requests paired), "reordered", "different" (undecided), "unknown",
	// "assumed";
	// absent with several runs per side.
	Workload string          `json:"workload,omitempty"`
	Options  compare.Options `json:"options"`
	Metrics  []diffMetricDoc `json:"metrics"`
	Gate     diffGateDoc     `json:"gate"`
	Warnings []string        `json:"warnings"`
	// InputWarnings are the inputs' own problems (truncation, interrupted
	// captures), which diff --strict fails on.
	InputWarnings []string `json:"input_warnings"`
	// Kernels is the kernel-level comparison, absent when a side has no
	// GPU kernels.
	Kernels *diffKernelsDoc `json:"kernels,omitempty"`
	// BaselineHistory is what a baseline history was made of, absent
	// without one: baseline.run_ids are runs[from:].
	BaselineHistory *diffHistoryDoc `json:"baseline_history,omitempty"`
	// Steps is the engine-step comparison, absent when a side has no steps.
	Steps *diffStepsDoc `json:"steps,omitempty"`
}

type diffHistoryDoc struct {
	Order  string                `json:"order"`
	Runs   []string              `json:"runs"`
	From   int                   `json:"from"`
	Change *diffHistoryChangeDoc `json:"change,omitempty"`
	Note   string                `json:"note"`
}

type diffHistoryChangeDoc struct {
	Index   int      `json:"index"`
	Run     string   `json:"run"`
	Metrics []string `json:"metrics"`
	Before  jnum     `json:"before"`
	After   jnum     `json:"after"`
	P       jprob    `json:"p"`
	RunP    jprob    `json:"run_p"`
}

func baselineHistoryDoc(h *compare.HistorySummary) *diffHistoryDoc {
	if h == nil {
		return nil
	}
	d := &diffHistoryDoc{Order: h.Order, Runs: append([]string{}, h.Runs...), From: h.From, Note: h.Note}
	if c := h.Change; c != nil {
		d.Change = &diffHistoryChangeDoc{Index: c.Index, Run: c.Run, Metrics: append([]string{}, c.Metrics...),
			Before: jnum(c.Before), After: jnum(c.After), P: jprob(c.P), RunP: jprob(c.RunP)}
	}
	return d
}

type diffSideDoc struct {
	Label           string   `json:"label"`
	Runs            int      `json:"runs"`
	RunIDs          []string `json:"run_ids"`
	Requests        int      `json:"requests"`
	Tokens          int      `json:"tokens"`
	Models          []string `json:"models"`
	TokensEstimated bool     `json:"tokens_estimated"`
}

type diffMetricDoc struct {
	Name         string          `json:"name"`
	Unit         string          `json:"unit"`
	Better       string          `json:"better"`
	Method       compare.Method  `json:"method"`
	NBaseline    int             `json:"n_baseline"`
	NCandidate   int             `json:"n_candidate"`
	Baseline     jnum            `json:"baseline"`
	Candidate    jnum            `json:"candidate"`
	Delta        jnum            `json:"delta"`
	DeltaPct     jnum            `json:"delta_pct"`
	CILow        jnum            `json:"ci_low"`
	CIHigh       jnum            `json:"ci_high"`
	CILowPct     jnum            `json:"ci_low_pct"`
	CIHighPct    jnum            `json:"ci_high_pct"`
	P            jprob           `json:"p"`
	Significant  bool            `json:"significant"`
	MDE          jnum            `json:"mde"`
	MDEPct       jnum            `json:"mde_pct"`
	MinN         int             `json:"min_n"`
	Note         string          `json:"note,omitempty"`
	CannotDecide string          `json:"cannot_decide,omitempty"`
	Verdict      compare.Verdict `json:"verdict,omitempty"`
	Gate         *diffRuleDoc    `json:"gate,omitempty"`
	Breakdown    string          `json:"breakdown,omitempty"`
	Explanation  []diffBucketDoc `json:"explanation"`
	Mixed        bool            `json:"mixed,omitempty"`
	// KernelEvidence is the kernel-level finding behind the largest GPU
	// bucket of the explanation.
	KernelEvidence string `json:"kernel_evidence,omitempty"`
}

type diffRuleDoc struct {
	Rule      string `json:"rule"`
	Reason    string `json:"reason"`
	PFail     jprob  `json:"p_fail"`
	HolmLevel jprob  `json:"holm_level"`
	NeededN   int    `json:"needed_n,omitempty"`
}

type diffBucketDoc struct {
	Bucket  string `json:"bucket"`
	DeltaMS jnum   `json:"delta_ms"`
}

type diffGateDoc struct {
	Verdict            compare.Verdict `json:"verdict"`
	Pass               int             `json:"pass"`
	Fail               int             `json:"fail"`
	Inconclusive       int             `json:"inconclusive"`
	FailOnInconclusive bool            `json:"fail_on_inconclusive"`
	Failed             bool            `json:"failed"`
	Rules              []string        `json:"rules"`
}

// jnum is a measurement written with 6 significant digits and at most 6
// decimals, so the last bits that differ between platforms (fused
// multiply-add, summation order) never reach a consumer or a golden file,
// and a rounding residue such as -8.9e-14 reads as 0. Not finite: null.
type jnum float64

func (v jnum) MarshalJSON() ([]byte, error) {
	return marshalRounded(math.Round(float64(v)*1e6) / 1e6)
}

// jprob is a probability: 6 significant digits, small values kept.
type jprob float64

func (v jprob) MarshalJSON() ([]byte, error) { return marshalRounded(float64(v)) }

func marshalRounded(f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 6, 64), 64)
	if err != nil {
		return nil, err
	}
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.AppendFloat(nil, r, 'g', -1, 64), nil
}

// WriteDiffJSON writes the comparison as an llmprof.diff/v1 document.
func WriteDiffJSON(w io.Writer, res *compare.Result) error {
	doc := diffDoc{
		Schema:    DiffSchema,
		Baseline:  sideDoc(res.Baseline),
		Candidate: sideDoc(res.Candidate),
		Unit:      res.Unit,
		Workload:  res.Workload,
		Options:   res.Options,
		Metrics:   []diffMetricDoc{},
		Gate: diffGateDoc{
			Verdict: res.Gate.Verdict, Pass: res.Gate.Pass, Fail: res.Gate.Fail, Inconclusive: res.Gate.Inconclusive,
			FailOnInconclusive: res.Gate.FailOnInconclusive, Failed: res.Gate.Failed, Rules: []string{},
		},
		Warnings:        append([]string{}, res.Warnings...),
		InputWarnings:   append([]string{}, res.InputWarnings...),
		Kernels:         kernelsDoc(res.Kernels),
		BaselineHistory: baselineHistoryDoc(res.History),
		Steps:           stepsDoc(res.Steps),
	}
	for _, m := range res.Metrics {
		md := diffMetricDoc{
			Name: m.Name, Unit: m.Unit, Better: m.Better.String(), Method: m.Method, NBaseline: m.NBaseline, NCandidate: m.NCandidate,
			Baseline: jnum(m.Baseline), Candidate: jnum(m.Candidate),
			Delta: jnum(m.Delta), DeltaPct: jnum(m.DeltaPct),
			CILow: jnum(m.CILow), CIHigh: jnum(m.CIHigh), CILowPct: jnum(m.CILowPct), CIHighPct: jnum(m.CIHighPct),
			P: jprob(m.P), Significant: m.Significant, MDE: jnum(m.MDE), MDEPct: jnum(m.MDEPct), MinN: m.MinN,
			Note: m.Note, CannotDecide: m.CannotDecide, Breakdown: m.Breakdown, Explanation: []diffBucketDoc{}, Mixed: m.Mixed,
			KernelEvidence: m.KernelEvidence,
		}
		for _, e := range m.Explanation {
			md.Explanation = append(md.Explanation, diffBucketDoc{e.Bucket, jnum(e.DeltaMS)})
		}
		if g := m.Gate; g != nil {
			md.Verdict = g.Verdict
			md.Gate = &diffRuleDoc{Rule: g.Rule.String(), Reason: g.Reason, PFail: jprob(g.PFail), HolmLevel: jprob(g.HolmLevel), NeededN: g.NeededN}
			doc.Gate.Rules = append(doc.Gate.Rules, g.Rule.String())
		}
		doc.Metrics = append(doc.Metrics, md)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(doc)
}

func sideDoc(s compare.SideSummary) diffSideDoc {
	return diffSideDoc{
		Label: s.Label, Runs: s.Runs, RunIDs: nonNil(s.RunIDs), Requests: s.Requests, Tokens: s.Tokens,
		Models: nonNil(s.Models), TokensEstimated: s.TokensEstimated,
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// The helpers below are shared by the text, Markdown and JUnit renderers:
// formatting only.

// fmtValue formats a metric's value in its unit with three to four
// significant digits.
func fmtValue(v float64, unit string) string {
	if math.IsNaN(v) {
		return "—"
	}
	return fmtNum(v) + shortUnit(unit)
}

func shortUnit(unit string) string {
	switch unit {
	case "ms/token":
		return "ms/tok"
	case "req/s", "tok/s":
		return " " + unit
	}
	return unit
}

func fmtNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a == 0:
		return "0"
	case a >= 0.01:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 2, 64)
}

// fmtPct formats a signed percentage; ±Inf as unbounded.
func fmtPct(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 1):
		return "+∞"
	case math.IsInf(v, -1):
		return "−∞"
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if s == "-0.0" {
		s = "0.0"
	}
	if v >= 0 && s[0] != '-' {
		s = "+" + s
	}
	return s + "%"
}

// fmtDeltaMS formats a bucket's change in milliseconds with its sign.
func fmtDeltaMS(v float64) string {
	s := fmtNum(v)
	if v >= 0 {
		s = "+" + s
	}
	return s + "ms"
}

// fmtChange is the change column: the relative change, or ~ when it is not
// significant (benchstat's convention), or the point change in parentheses
// when no test exists.
func fmtChange(m compare.Metric) string {
	switch {
	case m.Method == compare.MethodNone:
		return "(" + fmtPct(m.DeltaPct) + ")"
	case !m.Significant:
		return "~"
	}
	return fmtPct(m.DeltaPct)
}

// fmtCI is the relative interval, or what stands in for it.
func fmtCI(m compare.Metric) string {
	if m.Method == compare.MethodNone {
		return "needs runs"
	}
	lo, hi := math.IsInf(m.CILowPct, 0), math.IsInf(m.CIHighPct, 0)
	switch {
	case lo && hi:
		return "too few"
	case lo:
		// A one-sided interval (an exact rank interval whose other tail
		// does not exist at this n) is its one bound, never an infinity.
		return "≤ " + fmtPct(m.CIHighPct)
	case hi:
		return "≥ " + fmtPct(m.CILowPct)
	}
	return fmtPct(m.CILowPct) + " … " + fmtPct(m.CIHighPct)
}

func fmtP(p float64) string {
	switch {
	case math.IsNaN(p):
		return "—"
	case p < 0.001:
		return "<0.001"
	}
	return strconv.FormatFloat(p, 'f', 3, 64)
}

func fmtMDE(m compare.Metric) string {
	if math.IsNaN(m.MDEPct) || math.IsInf(m.MDEPct, 0) {
		return "—"
	}
	return "±" + strconv.FormatFloat(m.MDEPct, 'f', 1, 64) + "%"
}

// sideLine describes one side: "base.json (1 run, 600 requests)".
func sideLine(s compare.SideSummary) string {
	if s.Requests == 0 && s.Launches > 0 {
		launches := commas(s.Launches) + " kernel launches"
		if s.Launches == 1 {
			launches = "1 kernel launch"
		}
		return fmt.Sprintf("%s (%s, %s, no requests)", s.Label, plural(s.Runs, "run"), launches)
	}
	return fmt.Sprintf("%s (%s, %s)", s.Label, plural(s.Runs, "run"), plural(s.Requests, "request"))
}

// explanationLine names the largest bucket changes: "first token:
// gpu.attention +5.05ms, queue +0.12ms".
func explanationLine(m compare.Metric, top int) string {
	if len(m.Explanation) == 0 {
		return ""
	}
	var parts []string
	for i, e := range m.Explanation {
		if i == top {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, e.Bucket+" "+fmtDeltaMS(e.DeltaMS))
	}
	line := m.Breakdown + ": " + strings.Join(parts, ", ")
	if m.Mixed {
		line = "mixed — " + line
	}
	if m.KernelEvidence != "" {
		line += "; " + m.KernelEvidence
	}
	return line
}

// shown says whether a metric appears in the human-readable tables.
func shown(m compare.Metric, o DiffOptions) bool {
	if o.All || m.Gate != nil || m.Significant {
		return true
	}
	return !isBucket(m.Name)
}

func isBucket(name string) bool {
	m, err := compare.LookupMetric(name)
	return err == nil && m.Family.Kind == compare.KindBucket
}

// higherIsBetter says which direction of change is good, for colouring:
// the metric table's (compare.Families).
func higherIsBetter(m compare.Metric) bool {
	return m.Better == compare.HigherIsBetter
}

func verdictWord(v compare.Verdict) string {
	switch v {
	case compare.Fail:
		return "FAIL"
	case compare.Pass:
		return "PASS"
	case compare.Inconclusive:
		return "INCONCLUSIVE"
	}
	return ""
}
