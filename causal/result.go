package causal

import (
	"math"
	"slices"

	"github.com/llmprof/llmprof/attribution"
)

// Float is a figure that may be missing: NaN and ±Inf are JSON null.
type Float = attribution.Float

var nan = Float(math.NaN())

// Verdict is the reading of one pair, by the reporting rule of the
// statistics reference (B.2): an edge A → B is interference only if its
// q-value is below α, the effect exceeds a practical threshold, and A's
// future load does not predict B (lead placebo).
type Verdict string

// The verdicts.
const (
	// VerdictInterference: significant after BH, positive, large enough, and
	// the placebo is not significant (or could not be run).
	VerdictInterference Verdict = "interference"
	// VerdictAssociation: significant, but the placebo failed (a common
	// driver or reverse timing) or the effect is negative (B gets faster when
	// A is busy, which interference cannot do).
	VerdictAssociation Verdict = "association"
	// VerdictNegligible: significant but smaller than Options.MinEffectPct.
	VerdictNegligible Verdict = "negligible"
	// VerdictConfounded: would be interference, but a negative control of
	// the same metric (a pair across GPUs or MIG instances, which cannot
	// interfere) came out significant: something the controls miss moves
	// latency, and this finding may be it.
	VerdictConfounded Verdict = "confounded"
	// VerdictNoEvidence: q ≥ α.
	VerdictNoEvidence Verdict = "no evidence"
	// VerdictControl: a negative control (source and target on different
	// GPUs or MIG instances, which cannot interfere), quiet. A control is
	// never interference nor association: it calibrates the others.
	VerdictControl Verdict = "control"
	// VerdictControlFired: a negative control significant among its
	// metric's controls (Bonferroni) and above the practical threshold: a
	// driver the controls miss moves the metric, whose interference
	// findings become confounded.
	VerdictControlFired Verdict = "control fired"
	// VerdictNotEstimable: too little data or no variation; Reason says why.
	VerdictNotEstimable Verdict = "not estimable"
)

// Result is the tenant causal regression of one run: one Pair per ordered
// pair of tenants (source A → target B) and metric.
type Result struct {
	// Load is the load series the effects are measured against.
	Load     LoadKind `json:"load"`
	LoadUnit string   `json:"load_unit"`
	// Step is the change of the source's load each effect is quoted for:
	// "+Step of A's load adds EffectMs to B's latency".
	Step       float64   `json:"step"`
	BinNs      int64     `json:"bin_ns"`
	ClusterNs  int64     `json:"cluster_ns"`
	PeriodNs   int64     `json:"period_ns,omitempty"`
	Alpha      float64   `json:"alpha"`
	Correction string    `json:"correction"`
	Metrics    []Metric  `json:"metrics"`
	Controls   []Control `json:"controls"`

	Tenants []TenantSummary `json:"tenants"`
	Pairs   []Pair          `json:"pairs"`
	// Kernel is the kernel-level view (the mechanism), when the input had
	// kernels of at least two tenants.
	Kernel *KernelResult `json:"kernel,omitempty"`
	// Calibration is, per metric, what its negative controls say of the
	// request-level p-values (calibrate).
	Calibration []ControlCalibration `json:"calibration,omitempty"`
	// Others, when there were more tenants than Options.MaxTenants,
	// summarizes those merged into one source.
	Others *OtherTenants `json:"others,omitempty"`
	// Mapping says how processes were assigned to tenants, when the load
	// came from processes.
	Mapping *TenantMap `json:"mapping,omitempty"`

	// Assumptions under which the effects are causal; every report prints
	// them (B.3).
	Assumptions []string `json:"assumptions"`
	// Notes: data left out, controls dropped, negative controls that fired.
	Notes []string `json:"notes,omitempty"`
}

// TenantSummary describes one tenant of the run.
type TenantSummary struct {
	Name     string `json:"name"`
	Requests int    `json:"requests"`
	// MeanLoad is the tenant's load averaged over the run (NaN: no load
	// series).
	MeanLoad Float `json:"mean_load"`
	// Device and Instance place the tenant (-1 unknown); tenants on
	// different MIG instances or GPUs are isolated from each other.
	Device   int16 `json:"device"`
	Instance int16 `json:"instance"`
}

// Pair is the estimated effect of the source tenant's load on the target
// tenant's latency metric. Figures are NaN (JSON null) when not estimable.
type Pair struct {
	Source string `json:"source"`
	Target string `json:"target"`
	Metric Metric `json:"metric"`

	Estimable bool    `json:"estimable"`
	Reason    string  `json:"reason,omitempty"`
	Verdict   Verdict `json:"verdict"`

	// EffectMs is how much the target's mean latency grows when the source's
	// load rises by Result.Step, with its 95% (1−α) confidence interval.
	EffectMs Float `json:"effect_ms"`
	CILowMs  Float `json:"ci_low_ms"`
	CIHighMs Float `json:"ci_high_ms"`
	// EffectPct is the same effect in percent of the target's latency.
	EffectPct Float `json:"effect_pct"`
	CILowPct  Float `json:"ci_low_pct"`
	CIHighPct Float `json:"ci_high_pct"`
	// Coef is β, the change of log latency per unit of load, and SE its
	// cluster-robust standard error, of kind SEKind.
	Coef   Float  `json:"coef"`
	SE     Float  `json:"se"`
	SEKind SEKind `json:"se_kind,omitempty"`
	// P is the two-sided p-value of β = 0 (t with clusters − 1 degrees of
	// freedom), from the calibrated SE; Q the false-discovery-rate adjusted
	// p-value across all pairs and metrics of the result that are not
	// negative controls. For a negative control, P is its own (never
	// calibrated) and Q is P times the number of its metric's controls
	// (Bonferroni within them, at most 1).
	P Float `json:"p"`
	Q Float `json:"q"`
	// Calibration is the factor the SE was multiplied by: the square root
	// of the metric's Calibration.Lambda (1 when not calibrated; a
	// negative control's is 1).
	Calibration Float `json:"calibration"`
	// Share is the fraction of the target's total latency attributable to
	// the source's load above its quiet level (the source's 5th percentile
	// exposure), with the interval from the ends of β's CI.
	Share     Float `json:"share"`
	ShareLow  Float `json:"share_low"`
	ShareHigh Float `json:"share_high"`
	// BaselineMs is the target's mean latency; MeanExposure the source's
	// mean load during the target's requests.
	BaselineMs   Float `json:"baseline_ms"`
	MeanExposure Float `json:"mean_exposure"`
	Requests     int   `json:"requests"`
	Clusters     int   `json:"clusters"`
	// ClusterNs is the width of the time clusters the errors are
	// clustered by (adapted to the target's run length by default).
	ClusterNs int64 `json:"cluster_ns"`
	// Isolated marks a negative control: source and target run on different
	// MIG instances or GPUs, so no effect is expected; a significant one
	// points to confounding.
	Isolated bool `json:"isolated"`
	// Lag is the binned distributed-lag view (Granger test and placebo).
	Lag *LagResult `json:"lag,omitempty"`

	// naiveSE is the classical OLS standard error, kept only so tests can
	// show that it under-covers where the cluster-robust one does not.
	naiveSE float64
	// df, step and shareAt let calibrate widen the pair after the fit: the
	// t degrees of freedom, the load step, and the share at a β.
	df      int
	step    float64
	shareAt func(beta float64) float64
}

// ControlCalibration is how one metric's negative controls calibrated its
// other pairs (Result.Calibration).
type ControlCalibration struct {
	Metric Metric `json:"metric"`
	// Controls is the number of estimable negative controls of the metric.
	Controls int `json:"controls"`
	// Lambda is the mean over them of z², z the normal quantile of each
	// control's two-sided p-value (1 in expectation when the p-values are
	// calibrated), at least 1; 1 when fewer than MinControls controls.
	Lambda Float `json:"lambda"`
	// Calibrated is false with fewer than MinControls controls.
	Calibrated bool `json:"calibrated"`
}

// Significant reports whether the pair's q-value is below alpha.
func (p *Pair) Significant(alpha float64) bool {
	return p.Estimable && !p.Q.IsNaN() && float64(p.Q) < alpha
}

// SEKind names the cluster-robust variance a pair's SE comes from.
type SEKind string

// The variance kinds of the request-level regression.
const (
	// SEClusterJackknife: leave-one-cluster-out CV3, the default.
	SEClusterJackknife SEKind = "cluster-jackknife"
	// SEClusterCR1: CR1, used when leaving some cluster out is singular.
	SEClusterCR1 SEKind = "cluster-cr1"
)

// LagResult is the second view of a pair: per bin, the target's mean log
// latency regressed on the source's load now and in the L previous bins.
type LagResult struct {
	Estimable bool   `json:"estimable"`
	Reason    string `json:"reason,omitempty"`
	// Bins used by the effect model, lags L of the source's load, leads M
	// (placebo), AR order of the target's own series in the test model
	// (chosen by BIC; 0 when the bins are too sparse), and the Newey–West
	// bandwidth of the effect model.
	Bins   int `json:"bins"`
	Lags   int `json:"lags"`
	Leads  int `json:"leads"`
	AR     int `json:"ar"`
	NWLags int `json:"nw_lags"`
	// Coef is the cumulative effect Σ_l β_l per unit of load, from the model
	// without the target's own past, SE its Newey–West standard error,
	// EffectPct and its CI per Result.Step.
	Coef      Float `json:"coef"`
	SE        Float `json:"se"`
	EffectPct Float `json:"effect_pct"`
	CILowPct  Float `json:"ci_low_pct"`
	CIHighPct Float `json:"ci_high_pct"`
	// GrangerF and GrangerP test H0: β_1 = … = β_L = 0 (the source's past
	// load does not predict the target beyond the target's own past), a
	// Wald F test with HC3 errors in the model with AR(p) terms.
	GrangerF Float `json:"granger_f"`
	GrangerP Float `json:"granger_p"`
	// PlaceboF and PlaceboP test H0: the source's future load does not
	// predict the target. A significant placebo means a common driver or
	// reverse timing, not interference.
	PlaceboF Float `json:"placebo_f"`
	PlaceboP Float `json:"placebo_p"`
}

// Matrix arranges the pairs of one metric for a heat map: tenants in name
// order, cells[i][j] is the pair tenants[i] → tenants[j] (nil on the
// diagonal and where no pair exists).
func (r *Result) Matrix(m Metric) (tenants []string, cells [][]*Pair) {
	for _, t := range r.Tenants {
		tenants = append(tenants, t.Name)
	}
	slices.Sort(tenants)
	cells = make([][]*Pair, len(tenants))
	for i := range cells {
		cells[i] = make([]*Pair, len(tenants))
	}
	for i := range r.Pairs {
		p := &r.Pairs[i]
		if p.Metric != m {
			continue
		}
		a, okA := slices.BinarySearch(tenants, p.Source)
		b, okB := slices.BinarySearch(tenants, p.Target)
		if okA && okB {
			cells[a][b] = p
		}
	}
	return tenants, cells
}

// Pair returns the pair source → target for metric m, or nil.
func (r *Result) Pair(source, target string, m Metric) *Pair {
	for i := range r.Pairs {
		p := &r.Pairs[i]
		if p.Source == source && p.Target == target && p.Metric == m {
			return p
		}
	}
	return nil
}
