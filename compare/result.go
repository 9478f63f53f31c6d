package compare

// Verdict is a gate rule's outcome.
type Verdict string

const (
	// Pass: the confidence interval of the change lies entirely on the good
	// side of the threshold.
	Pass Verdict = "pass"
	// Fail: the interval lies entirely on the bad side, and the one-sided
	// test survives Holm's correction across the gated metrics.
	Fail Verdict = "fail"
	// Inconclusive: the interval contains the threshold, or there are too
	// few samples for a confident answer either way. Never a silent pass.
	Inconclusive Verdict = "inconclusive"
	// NoGate: no rules were given; the comparison is a report only.
	NoGate Verdict = "none"
)

// Method names how a metric's interval and p-value were computed.
type Method string

const (
	// MethodHodgesLehmann: Mann–Whitney U p-value, Hodges–Lehmann shift and
	// Moses interval on log latency (medians of independent requests).
	MethodHodgesLehmann Method = "hodges-lehmann"
	// MethodPairedHodgesLehmann: the one-sample Hodges–Lehmann estimate of
	// the requests' paired log changes (one workload replayed), with the
	// Wilcoxon signed-rank interval and p-value.
	MethodPairedHodgesLehmann Method = "paired-hodges-lehmann"
	// MethodBootstrap: percentile bootstrap over independent requests.
	MethodBootstrap Method = "bootstrap"
	// MethodBlockBootstrap: moving-block bootstrap over consecutive
	// requests (or tokens, for ITL).
	MethodBlockBootstrap Method = "block-bootstrap"
	// MethodClusterBootstrap: percentile bootstrap over requests, each
	// drawn with all its tokens (ITL), in blocks when requests are
	// autocorrelated.
	MethodClusterBootstrap Method = "cluster-bootstrap"
	// MethodHistory: one candidate run against the spread of several
	// baseline runs (a prediction interval with Student's t).
	MethodHistory Method = "baseline-history"
	// MethodRunLevel: Welch's t over per-run values, log scale (the run is
	// the replication unit; compare.go, welchMetric).
	MethodRunLevel Method = "run-level"
	// MethodNone: point values only; no interval is possible (a rate with
	// one run per side).
	MethodNone Method = "none"
)

// Result is a full comparison: every metric both sides have, with its
// change, interval, p-value, minimum detectable effect, explanation and,
// where a rule asks for it, its verdict. Renderers format it; they never
// compute.
type Result struct {
	Baseline  SideSummary
	Candidate SideSummary
	// Unit is the replication unit: "request", "request (paired)" or "run".
	Unit string
	// Workload is what one run per side was found to be (compare/workload.go):
	// DesignReplayed, DesignReordered, DesignDifferent, DesignUnknown or
	// DesignAssumed; empty
	// with several runs per side.
	Workload string
	Options  Options
	Metrics  []Metric
	Gate     GateSummary
	// Warnings are problems with the data or the comparison that every
	// renderer shows.
	Warnings []string
	// InputWarnings are the inputs' own problems (truncation, interrupted
	// captures, malformed records), "path: message".
	InputWarnings []string
	// Kernels is the kernel-level comparison (compare/kernels.go); nil
	// when a side has no GPU kernels.
	Kernels *KernelComparison
	// History is what a baseline history was made of (diff
	// --baseline-history, or a directory of runs as the baseline); nil
	// without one. The caller that read the series fills it.
	History *HistorySummary
	// Steps is the engine-step comparison (compare/steps.go); nil when a
	// side has no engine steps.
	Steps *StepComparison
}

// HistorySummary describes a baseline history: every run of the series in
// order, and where the baseline starts (after its last change point).
type HistorySummary struct {
	Order string
	// Runs are the series' run IDs in order; the baseline is Runs[From:].
	Runs []string
	From int
	// Change is the last change point (nil: none), found as `llmprof
	// history` finds it.
	Change *HistoryChange
	// Note says the same in words (it is also among the warnings).
	Note string
}

// HistoryChange is the last change point of a baseline history: the first
// run after it, the metrics that change there, the first metric's levels
// and p-values (RunP NaN when its points were runs).
type HistoryChange struct {
	Index         int
	Run           string
	Metrics       []string
	Before, After float64
	P, RunP       float64
}

// SideSummary describes one side's input.
type SideSummary struct {
	Label           string
	Runs            int
	RunIDs          []string
	Requests        int
	Tokens          int // ITL gaps observed
	Launches        int // GPU kernels observed (raw traces only)
	Models          []string
	TokensEstimated bool
}

// Metric is one compared quantity, such as ttft.p99.
type Metric struct {
	Name string // "ttft.p99", "throughput", "token.gpu.attention"
	Unit string // "ms", "ms/token", "req/s", "tok/s"
	// Better is the direction in which the metric improves (Families).
	Better Better
	Method Method
	// NBaseline and NCandidate count the replication units used (requests,
	// tokens for itl, or runs).
	NBaseline, NCandidate int
	// Baseline and Candidate are the metric's values (with run-level
	// replication: the median over runs of the per-run value).
	Baseline, Candidate float64
	// Delta is the change in the metric's unit; DeltaPct the relative
	// change in percent (+10 = 10% higher): always the change from Baseline
	// to Candidate as shown. A ".shift" metric has no values (NaN) and its
	// change is the Hodges–Lehmann shift.
	Delta, DeltaPct float64
	// CILow/CIHigh bound Delta, CILowPct/CIHighPct bound DeltaPct, at
	// confidence 1−α; ±Inf when no interval is possible.
	CILow, CIHigh       float64
	CILowPct, CIHighPct float64
	// P is the two-sided p-value for "no change"; NaN when none exists.
	P float64
	// Significant is P ≤ α. Renderers print a non-significant change as ~.
	Significant bool
	// MDE is the minimum detectable effect (in the unit, and in percent):
	// the smallest true change this comparison detects with the configured
	// power at level α.
	MDE, MDEPct float64
	// MinN is the number of units per side this method needs for a finite
	// interval (368 for p99 at α = 0.05).
	MinN int
	// Note qualifies the figures (under-coverage, scale used).
	Note string
	// CannotDecide, when set, says why no rule on this metric can pass or
	// fail with these data (too few samples, too few effective samples,
	// one value per run): a rule on it is inconclusive with this reason.
	CannotDecide string
	// Breakdown names what Explanation decomposes: "first token", "request
	// stages", "token buckets", "per output token".
	Breakdown string
	// Explanation is the change of each attribution bucket, in ms (per
	// output token for tpot and itl): the buckets that moved the way the
	// metric did first, largest first, then the others.
	Explanation []BucketDelta
	// Mixed says the buckets do not agree with the metric's change: none
	// moved its way, or those moving the other way add up to at least half
	// as much. Renderers say "mixed" rather than suggest a cause.
	Mixed bool
	// KernelEvidence, when set, is the kernel-level finding behind the
	// metric's largest GPU bucket ("kernel.attention +59.8% [+58.9%, +60.7%]
	// per launch at equal launch configuration").
	KernelEvidence string
	// Gate is the outcome of the rule on this metric, nil when ungated.
	Gate *GateOutcome
}

// BucketDelta is one attribution bucket's change: candidate minus baseline,
// mean milliseconds over the requests that make up the metric (the slowest
// 10% or 1% for p90 and p99).
type BucketDelta struct {
	Bucket  string
	DeltaMS float64
}

// GateOutcome is one rule's verdict on one metric.
type GateOutcome struct {
	Rule    Gate
	Verdict Verdict
	// Reason says why, in one sentence, including how many samples would
	// settle an inconclusive rule when that can be estimated.
	Reason string
	// PFail is the one-sided p-value against "the change does not breach
	// the threshold"; HolmLevel the level Holm's step-down compared it with.
	PFail, HolmLevel float64
	// NeededN estimates the units per side at which the rule would likely
	// be decided (0 when unknown).
	NeededN int
	// Likely: inconclusive, but the within-run interval alone lies past
	// the threshold ("likely regression, not gated").
	Likely bool `json:"likely_regression,omitempty"`
}

// GateSummary is the gate's overall outcome.
type GateSummary struct {
	Verdict                  Verdict
	Pass, Fail, Inconclusive int
	FailOnInconclusive       bool
	// Failed says the command must exit with the regression code: a rule
	// failed, or one was inconclusive under FailOnInconclusive.
	Failed bool
}
