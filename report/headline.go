package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/signals"
)

// A report opens with its findings: the few lines a reader needs before any
// table, each with its number and the section that shows it. They are
// computed once here, from the assembled report, so that the text, Markdown
// and HTML renderers print the same lines in the same order.

// FindingKind names what a finding is about. The headline lists the kinds in
// the order below.
type FindingKind string

// The finding kinds, in headline order.
const (
	FindingStage          FindingKind = "stage"
	FindingToken          FindingKind = "token"
	FindingTenant         FindingKind = "tenant"
	FindingStall          FindingKind = "stall"
	FindingBlindSpot      FindingKind = "blind_spot"
	FindingInfrastructure FindingKind = "infrastructure"
)

// Finding is one line of the headline.
type Finding struct {
	Kind FindingKind `json:"kind"`
	// Text is the finding with its number, one sentence.
	Text string `json:"text"`
	// Section is the id of the section that shows it (Sections).
	Section string `json:"section"`
}

// Section is one section of the analyze report. Every renderer shows the
// sections in the order Sections returns them, under the same title.
type Section struct {
	ID    string
	Title string
}

// The report's sections, in the order every renderer shows them: the answer
// first (findings, latency and where it went), then the evidence by layer,
// then what the input was and how it was joined.
var (
	secFindings       = Section{"findings", "Findings"}
	secLatency        = Section{"latency", "Latency"}
	secStages         = Section{"stages", "Where the time went"}
	secTokens         = Section{"tokens", "Per token"}
	secStalls         = Section{"stalls", "Stalls"}
	secGPU            = Section{"gpu", "GPU"}
	secTenants        = Section{"tenants", "Tenants"}
	secBlindSpots     = Section{"blind-spots", "Blind spots"}
	secKVCache        = Section{"kv-cache", "KV cache"}
	secModelLifecycle = Section{"model-lifecycle", "Model lifecycle"}
	secInfrastructure = Section{"infrastructure", "Infrastructure"}
	secSources        = Section{"sources", "Sources"}
	secAlignment      = Section{"alignment", "Clock alignment"}
	secWarnings       = Section{"warnings", "Warnings"}
)

// hasRequests reports whether the input has request spans: the latency
// sections are about them.
func (r *Report) hasRequests() bool { return r.Requests != nil && r.Requests.Requests > 0 }

// Sections lists the sections this report has, in the order every renderer
// shows them.
func (r *Report) Sections() []Section {
	var out []Section
	if len(r.Headline) > 0 {
		out = append(out, secFindings)
	}
	if r.Requests != nil {
		out = append(out, secLatency)
	}
	req := r.hasRequests()
	if req && len(r.Stages) > 0 {
		out = append(out, secStages)
	}
	if req && r.Tokens != nil {
		out = append(out, secTokens)
		if r.Tokens.Stalls.Count > 0 {
			out = append(out, secStalls)
		}
	}
	if r.GPU != nil {
		out = append(out, secGPU)
	}
	if req && r.Tenants != nil {
		out = append(out, secTenants)
	}
	if req && r.BlindSpots != nil {
		out = append(out, secBlindSpots)
	}
	if req && r.KVCache != nil {
		out = append(out, secKVCache)
	}
	if req && len(r.ModelEvents) > 0 {
		out = append(out, secModelLifecycle)
	}
	if r.Infrastructure != nil {
		out = append(out, secInfrastructure)
	}
	for _, s := range r.sections {
		out = append(out, Section{s.ID, s.Title})
	}
	out = append(out, secSources)
	if len(r.Alignment) > 1 {
		out = append(out, secAlignment)
	}
	return append(out, secWarnings)
}

// sectionTitle is a section's title by id.
func sectionTitle(id string) string {
	for _, s := range []Section{secFindings, secLatency, secStages, secTokens, secStalls, secGPU, secTenants, secBlindSpots,
		secKVCache, secModelLifecycle, secInfrastructure, secSources, secAlignment, secWarnings} {
		if s.ID == id {
			return s.Title
		}
	}
	return id
}

// stepNoGPU is what the report calls a step's time that the input has no
// GPU data to split (attribution.BucketStepUnsplit): the name says why the
// time is not split, so it does not read as "the step is slow".
const stepNoGPU = "step (no GPU data)"

// bucketLabel is a per-token bucket's name as the report prints it.
func bucketLabel(name string) string {
	if name == attribution.BucketStepUnsplit.String() {
		return stepNoGPU
	}
	return name
}

// headline computes the findings of a report, in FindingKind order; a kind
// the input has nothing to say about is left out.
func headline(r *Report) []Finding {
	var out []Finding
	add := func(k FindingKind, sec Section, format string, args ...any) {
		out = append(out, Finding{Kind: k, Text: fmt.Sprintf(format, args...), Section: sec.ID})
	}
	if !r.hasRequests() {
		return nil
	}
	if s, ok := slowestStage(r.Stages); ok {
		add(FindingStage, secStages, "%s is the slowest stage: %s of all requests' E2E (%s)", s.Name, pct(s.Share), fmtSeconds(s.TotalMs/1e3))
	}
	if ts := r.Tokens; ts != nil {
		if f, ok := tokenFinding(ts, r.GPU != nil, r.GPUCoverage); ok {
			add(FindingToken, secTokens, "%s", f)
		}
	}
	if r.Tenants != nil {
		add(FindingTenant, secTenants, "%s", tenantFinding(r.Tenants))
	}
	if ts := r.Tokens; ts != nil && ts.Stalls.Count > 0 {
		s := ts.Stalls
		var causes []string
		for i, c := range sortedByCount(s.ByCause) {
			if i == 2 {
				break
			}
			causes = append(causes, fmt.Sprintf("%s in %s", commas(s.ByCause[c]), bucketLabel(c)))
		}
		add(FindingStall, secStalls, "%s decode tokens (%s) stall: %s", commas(s.Count), pct(s.Share), strings.Join(causes, ", "))
	}
	if bs := r.BlindSpots; bs != nil {
		add(FindingBlindSpot, secBlindSpots, "%s", blindSpotFinding(bs))
	}
	if res := r.Infrastructure; res != nil {
		add(FindingInfrastructure, secInfrastructure, "%s", infrastructureFinding(res))
	}
	return out
}

// slowestStage is the stage holding the most of the requests' E2E.
func slowestStage(stages []attribution.StageTotal) (attribution.StageTotal, bool) {
	var best attribution.StageTotal
	for _, s := range stages {
		if s.TotalMs > best.TotalMs {
			best = s
		}
	}
	return best, best.TotalMs > 0
}

// tokenFinding names the decode tokens' largest bucket. Time the input
// cannot split (a step without GPU data) is not a cause: when it is the
// largest, the line says so and why (no GPU data, or GPU data over part of
// the run only), then names the largest bucket of the rest.
func tokenFinding(ts *attribution.TokenSummary, hasGPU bool, cov *GPUCoverage) (string, bool) {
	g, what := ts.Decode, "decode token"
	if g.Tokens == 0 {
		g, what = ts.First, "first token"
	}
	var best, unsplit, other attribution.BucketShare
	for _, b := range g.Buckets {
		switch {
		case b.Name == attribution.BucketStepUnsplit.String():
			unsplit = b
		case b.Name == attribution.BucketOther.String():
			other = b // the remainder: not a cause either
		case b.Share > best.Share:
			best = b
		}
	}
	if other.Share > best.Share && other.Share > unsplit.Share {
		return fmt.Sprintf("%s of a %s's interval (mean %s ms) is in no bucket (other): the input cannot split it (see the per-token notes)",
			pct(other.Share), what, ms(g.MeanMs)), true
	}
	if unsplit.Share <= best.Share {
		if best.Share == 0 {
			return "", false
		}
		return fmt.Sprintf("%s is the biggest per-token bucket: %s of a %s's interval (mean %s ms)", best.Name, pct(best.Share), what, ms(g.MeanMs)), true
	}
	s := fmt.Sprintf("%s of a %s's interval (mean %s ms) is %s", pct(unsplit.Share), what, ms(g.MeanMs), stepNoGPU)
	switch {
	case !hasGPU:
		s += ": the input has no GPU data (add an nsys export of the engine)"
	case cov != nil:
		s += fmt.Sprintf(": GPU data covers only %s of the %s run", fmtSeconds(cov.GPUSeconds), fmtSeconds(cov.RunSeconds))
	}
	if best.Share > 0 {
		s += fmt.Sprintf("; of the rest, %s is the biggest bucket (%s)", best.Name, pct(best.Share))
	}
	return s, true
}

// tenantFinding is the strongest tenant interference: the kernel level's
// first (it measures the mechanism directly), else the request level's,
// else a sentence saying that none was found and how many pairs were tried.
func tenantFinding(res *causal.Result) string {
	if k := topKernelPair(res.Kernel); k != nil {
		s := fmt.Sprintf("%s → %s %s: the source's work stretches the target's kernels on GPU %d by %s (95%% CI %s … %s)", k.Source, k.Target, k.Verdict, k.Device,
			signedPct(float64(k.StretchPct)), signedPct(float64(k.CILowPct)), signedPct(float64(k.CIHighPct)))
		if len(k.Impact) > 0 {
			im := k.Impact[0]
			s += fmt.Sprintf(", %s ms of its %s (%s)", signedMs(float64(im.EffectMs)), strings.ToUpper(im.Metric.String()), pct(float64(im.Share)))
		}
		return s
	}
	if p := topPair(res); p != nil {
		return fmt.Sprintf("%s → %s %s: %s, %s ms (%s, 95%% CI %s … %s) per %s of the source's load", p.Source, p.Target, p.Metric, p.Verdict,
			signedMs(float64(p.EffectMs)), signedPct(float64(p.EffectPct)), signedPct(float64(p.CILowPct)), signedPct(float64(p.CIHighPct)), stepString(res))
	}
	kernelPairs := 0
	if res.Kernel != nil {
		kernelPairs = len(res.Kernel.Pairs)
	}
	return fmt.Sprintf("no tenant interference found (%d request-level and %d kernel-level pairs tested)", len(res.Pairs), kernelPairs)
}

// topKernelPair is the significant kernel-level pair with the largest
// stretch, negative controls (isolated pairs) aside; nil when there is none.
func topKernelPair(k *causal.KernelResult) *causal.KernelPair {
	if k == nil {
		return nil
	}
	var best *causal.KernelPair
	for i := range k.Pairs {
		p := &k.Pairs[i]
		if p.Isolated || !p.Significant(k.Alpha) || p.Verdict != causal.VerdictInterference {
			continue
		}
		if best == nil || math.Abs(float64(p.StretchPct)) > math.Abs(float64(best.StretchPct)) {
			best = p
		}
	}
	return best
}

// topPair is the request-level interference pair with the largest effect.
func topPair(res *causal.Result) *causal.Pair {
	var best *causal.Pair
	for i := range res.Pairs {
		p := &res.Pairs[i]
		if p.Verdict != causal.VerdictInterference || p.Isolated {
			continue
		}
		if best == nil || float64(p.EffectPct) > float64(best.EffectPct) {
			best = p
		}
	}
	return best
}

// blindSpotFinding says how much of E2E no stage explains and what to
// instrument next.
func blindSpotFinding(bs *attribution.BlindSpots) string {
	s := fmt.Sprintf("%s of E2E is in no stage", pct(bs.UnexplainedShare))
	switch g := bs.Largest; {
	case g == nil:
	case g == bs.Outside:
		return s + fmt.Sprintf("; callers see %s more than the request spans: instrument the server before the engine (%s)", pct(g.Share), g.Span)
	default:
		return s + fmt.Sprintf("; add %s to explain %s (%s → %s)", g.Span, pct(g.Share), g.Before, g.After)
	}
	var missing []string
	for _, bp := range bs.Breakpoints {
		if !bp.Covered {
			missing = append(missing, bp.Name)
		}
	}
	if len(missing) > 0 {
		s += fmt.Sprintf("; %d lifecycle points not instrumented (%s)", len(missing), strings.Join(missing, ", "))
	}
	return s
}

// infrastructureFinding is the first latency spike and the signal ranked
// first for it.
func infrastructureFinding(res *signals.Result) string {
	if len(res.Spikes) == 0 {
		return fmt.Sprintf("no latency spike in %s metric series' time", commas(res.Series))
	}
	sp := res.Spikes[0]
	d := sp.Latency[0]
	s := fmt.Sprintf("%s p99 %s ms vs %s ms baseline at %s–%s", strings.ToUpper(d.Metric), fmtFloat(d.P99, 0), fmtFloat(d.Baseline, 0), clockTime(sp.From), clockTime(sp.To))
	switch {
	case len(sp.Signals) > 0:
		s += fmt.Sprintf(" with %s [%s] (%s)", sp.Signals[0].Short, sp.Signals[0].Layer, lagText(sp.Signals[0].Lag))
	case len(sp.Load) > 0:
		s += "; it rose with load, no mechanism signal deviated"
	default:
		s += fmt.Sprintf("; no signal deviated (%d tested)", sp.Tested)
	}
	if n := len(res.Spikes); n > 1 {
		s += fmt.Sprintf("; %d spikes in all", n)
	}
	return s
}

// GPUCoverage is how much of the run the GPU data covers, set when it
// covers less than all of it: the GPU and per-token figures then describe
// that part only.
type GPUCoverage struct {
	// GPUSeconds is the span from the first GPU op to the last, within the
	// requests' span; RunSeconds the requests' span (first arrival to last
	// end).
	GPUSeconds float64 `json:"gpu_s"`
	RunSeconds float64 `json:"run_s"`
	Share      float64 `json:"share"`
}

// gpuCoverage compares the devices' window with the requests' span; nil
// when there is no GPU data, no request, or the GPU data covers ≥ 95% of
// the run.
func gpuCoverage(g *attribution.GPU, reqs []attribution.Request) *GPUCoverage {
	if g == nil || len(g.Devices) == 0 || len(reqs) == 0 {
		return nil
	}
	first, last := reqs[0].Arrival, reqs[0].End
	for _, q := range reqs {
		first, last = min(first, q.Arrival), max(last, q.End)
	}
	lo, hi := g.Devices[0].StartNs, g.Devices[0].EndNs
	for _, d := range g.Devices {
		lo, hi = min(lo, d.StartNs), max(hi, d.EndNs)
	}
	lo, hi = max(lo, first), min(hi, last)
	run := float64(last - first)
	if run <= 0 {
		return nil
	}
	gpu := max(0, float64(hi-lo))
	if gpu >= 0.95*run {
		return nil
	}
	return &GPUCoverage{GPUSeconds: gpu / 1e9, RunSeconds: run / 1e9, Share: gpu / run}
}
