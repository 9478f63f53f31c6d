package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/llmprof/llmprof/compare"
)

// diffStepsDoc is the JSON of the engine-step comparison ("steps").
type diffStepsDoc struct {
	StepsBaseline  int                 `json:"steps_baseline"`
	StepsCandidate int                 `json:"steps_candidate"`
	Engines        []string            `json:"engines"`
	Buckets        []diffStepBucketDoc `json:"buckets"`
}

// diffStepBucketDoc is one kind of step's decomposition: raw change =
// composition × cost, each with its interval.
type diffStepBucketDoc struct {
	Metric             string `json:"metric"`
	Bucket             string `json:"bucket"`
	NBaseline          int    `json:"n_baseline"`
	NCandidate         int    `json:"n_candidate"`
	MedianBaselineMS   jnum   `json:"median_baseline_ms"`
	MedianCandidateMS  jnum   `json:"median_candidate_ms"`
	RawPct             jnum   `json:"raw_pct"`
	RawLowPct          jnum   `json:"raw_ci_low_pct"`
	RawHighPct         jnum   `json:"raw_ci_high_pct"`
	CompositionPct     jnum   `json:"composition_pct"`
	CompositionLowPct  jnum   `json:"composition_ci_low_pct"`
	CompositionHighPct jnum   `json:"composition_ci_high_pct"`
	CostPct            jnum   `json:"cost_pct"`
	CostLowPct         jnum   `json:"cost_ci_low_pct"`
	CostHighPct        jnum   `json:"cost_ci_high_pct"`
	P                  jprob  `json:"p"`
	Significant        bool   `json:"significant"`
}

func stepsDoc(s *compare.StepComparison) *diffStepsDoc {
	if s == nil {
		return nil
	}
	d := &diffStepsDoc{StepsBaseline: s.StepsBaseline, StepsCandidate: s.StepsCandidate,
		Engines: append([]string{}, s.Engines...), Buckets: []diffStepBucketDoc{}}
	for _, b := range s.Buckets {
		d.Buckets = append(d.Buckets, diffStepBucketDoc{Metric: b.Metric, Bucket: b.Bucket, NBaseline: b.NBaseline, NCandidate: b.NCandidate,
			MedianBaselineMS: jnum(b.MedianBaselineMS), MedianCandidateMS: jnum(b.MedianCandidateMS),
			RawPct: jnum(b.RawPct), RawLowPct: jnum(b.RawLowPct), RawHighPct: jnum(b.RawHighPct),
			CompositionPct: jnum(b.CompositionPct), CompositionLowPct: jnum(b.CompositionLowPct), CompositionHighPct: jnum(b.CompositionHighPct),
			CostPct: jnum(b.CostPct), CostLowPct: jnum(b.CostLowPct), CostHighPct: jnum(b.CostHighPct),
			P: jprob(b.P), Significant: b.Significant})
	}
	return d
}

func stepsHeadline(s *compare.StepComparison) string {
	return fmt.Sprintf("engine steps: %d and %d steps, step time regressed on batch composition per engine (%s)",
		s.StepsBaseline, s.StepsCandidate, strings.Join(s.Engines, "; "))
}

var stepKind = map[string]string{"all": "all steps", "decode": "decode-only", "prefill": "prefilling"}

// stepSentence states a bucket's two parts: how much the batches moved
// the step time and how much the steps cost at equal batches.
func stepSentence(b compare.StepBucket) string {
	if b.CostPct != b.CostPct { // NaN: not fitted
		return fmt.Sprintf("%s: too few steps on a side to fit (%d and %d)", stepKind[b.Bucket], b.NBaseline, b.NCandidate)
	}
	return fmt.Sprintf("%s: step time %s (%sms → %sms median) = composition %s [%s] (the batches the candidate saw) × cost %s [%s] at equal batches",
		stepKind[b.Bucket], fmtPct(b.RawPct), fmtNum(b.MedianBaselineMS), fmtNum(b.MedianCandidateMS),
		fmtPct(b.CompositionPct), fmtRange(b.CompositionLowPct, b.CompositionHighPct), fmtPct(b.CostPct), fmtRange(b.CostLowPct, b.CostHighPct))
}

// writeStepsText is the text renderer's engine-step section.
func writeStepsText(w io.Writer, s *compare.StepComparison, st styles) {
	if s == nil {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, st.title.Render(stepsHeadline(s)))
	for _, b := range s.Buckets {
		fmt.Fprintln(w, "  "+stepSentence(b))
	}
}

// writeStepsMarkdown is the Markdown renderer's engine-step section.
func writeStepsMarkdown(w io.Writer, s *compare.StepComparison) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "**Engine steps** — %s\n\n", mdEscape(strings.TrimPrefix(stepsHeadline(s), "engine steps: ")))
	fmt.Fprintln(w, "| steps | median step | raw change | composition (bigger batches) | cost at equal batches | p |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for _, b := range s.Buckets {
		fmt.Fprintf(w, "| %s (`%s`) | %sms → %sms | %s | %s %s | %s %s | %s |\n", stepKind[b.Bucket], b.Metric,
			fmtNum(b.MedianBaselineMS), fmtNum(b.MedianCandidateMS), fmtPct(b.RawPct),
			fmtPct(b.CompositionPct), fmtRange(b.CompositionLowPct, b.CompositionHighPct),
			fmtPct(b.CostPct), fmtRange(b.CostLowPct, b.CostHighPct), fmtP(b.P))
	}
	fmt.Fprintln(w)
}

// stepsHTML is the HTML renderer's engine-step section.
func (h *htmlPage) stepsHTML(s *compare.StepComparison) {
	if s == nil {
		return
	}
	h.section("steps", "Engine steps", stepsHeadline(s))
	var rows [][]string
	for _, b := range s.Buckets {
		rows = append(rows, []string{stepKind[b.Bucket], b.Metric, fmtNum(b.MedianBaselineMS) + " ms → " + fmtNum(b.MedianCandidateMS) + " ms",
			fmtPct(b.RawPct), fmtPct(b.CompositionPct) + " " + fmtRange(b.CompositionLowPct, b.CompositionHighPct),
			fmtPct(b.CostPct) + " " + fmtRange(b.CostLowPct, b.CostHighPct), fmtP(b.P)})
	}
	h.table("", []string{"steps", "metric", "median step", "raw change", "composition", "cost at equal batches", "p"}, rows, false)
	h.end()
}
