package history

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"time"

	"github.com/llmprof/llmprof/compare"
	"github.com/llmprof/llmprof/internal/stat"
)

// Schema is the JSON schema of a history report.
const Schema = "llmprof.history/v1"

// DefaultMetrics are the metrics a history follows unless told otherwise.
var DefaultMetrics = []string{"ttft.p50", "ttft.p90", "tpot.p50", "itl.p50", "e2e.p50", "e2e.p90", "throughput", "token_throughput"}

// Units a metric's change points are found on.
const (
	UnitAuto    = "auto"    // request below RequestPointsBelow runs where the metric has per-request values, else run
	UnitRun     = "run"     // one point per run: its value of the metric
	UnitRequest = "request" // one point per request, changes between runs only
)

// Where auto puts the points. A permutation test of n run values has at
// most n! orders, and e-divisive's best split of a short series is matched
// by several of them: ten runs cleanly split six against four reach a
// p-value of only about 0.01 (ttft.p50 of report's TestHistoryGolden series,
// stepped from night 7 of 10, is missed on run values and found on
// requests). Below RequestPointsBelow
// runs a metric with per-request values is tested on the runs' requests
// (confirmed on the runs, confirmByRuns); one without (a rate) is tested on
// run values from MinRunsRunLevel runs on, and not at all below.
const (
	RequestPointsBelow = 15
	MinRunsRunLevel    = 8
)

// Options configure Analyze.
type Options struct {
	Metrics []string      `json:"metrics"`
	Detect  DetectOptions `json:"detect"`
	// Unit is UnitAuto, UnitRun or UnitRequest.
	Unit string `json:"unit"`
	// Order is how the runs were ordered (echoed).
	Order string `json:"order"`
	// Compare configures the explanation of each change and the gate's
	// rules (Compare.Policy.Gates).
	Compare compare.Options `json:"-"`
}

// DefaultOptions are `llmprof history`'s defaults.
func DefaultOptions() Options {
	return Options{Metrics: DefaultMetrics, Detect: DefaultDetectOptions(), Unit: UnitAuto, Order: OrderAuto, Compare: compare.DefaultOptions()}
}

// Result is a history: the runs in order, and per metric its values, its
// segments and its change points, each explained. Renderers format it.
type Result struct {
	Runs     []RunInfo
	Options  Options
	Metrics  []Metric
	Gate     Gate
	Warnings []string
	Notes    []string
}

// RunInfo is a run's place in the series.
type RunInfo struct {
	ID     string    `json:"id"`
	Time   time.Time `json:"time,omitzero"`
	Commit string    `json:"commit,omitempty"`
}

// Metric is one metric followed over the runs.
type Metric struct {
	Name   string
	Unit   string // ms, req/s, ...
	Better compare.Better
	// Values holds the metric's value for every run, NaN where a run lacks
	// it.
	Values []float64
	// Points is the detection unit used: UnitRun or UnitRequest.
	Points string
	// Segments are the stretches between change points, each with its
	// level (the median of its runs' values).
	Segments []Segment
	Changes  []Change
	// Note says why nothing could be detected, when nothing could.
	Note string
}

// Segment is the runs [From, To) between two change points.
type Segment struct {
	From, To int
	Level    float64
}

// Change is one change point of a metric.
type Change struct {
	// Index is the first run after the change.
	Index int
	Run   RunInfo
	// Before and After are the levels of the segments it separates.
	Before, After float64
	// P is the e-divisive permutation p-value; Q its statistic. RunP is
	// the run-level t-test's p-value that confirmed a change found on
	// requests (NaN when the points were runs).
	P, Q, RunP float64
	// Comparison is compare's verdict on the metric between the runs of
	// the two segments (the runs as the replication unit): the change's
	// size, interval, p-value and the buckets that explain it. Nil when
	// compare could not compare them (Note says why).
	Comparison *compare.Metric
	// Unit is compare's replication unit ("run", or "request" with one run
	// per side); BaseRuns and CandRuns the runs on each side.
	Unit               string
	BaseRuns, CandRuns int
	Note               string
}

// Gate is the outcome of the rules on the newest run.
type Gate struct {
	Rules []GateRule
	// Failed: a rule's metric had a confirmed change before the newest run
	// whose comparison breaks the rule.
	Failed bool
}

// GateRule is one rule's outcome.
type GateRule struct {
	Rule    compare.Gate
	Verdict compare.Verdict
	// Change is the index of the metric's last change point (-1: none).
	Change int
	Reason string
}

// followed is the metrics a history follows, checked: o.Metrics and every
// gated one, in that order. Analyze and FindBaseline both follow them, so
// diff's baseline history cuts where `llmprof history` reports a change.
func (o Options) followed() ([]string, error) {
	switch o.Unit {
	case UnitAuto, UnitRun, UnitRequest:
	default:
		return nil, fmt.Errorf("unknown unit %q (want auto, run or request)", o.Unit)
	}
	metrics := slices.Clone(o.Metrics)
	for _, g := range o.Compare.Policy.Gates {
		if !slices.Contains(metrics, g.Metric) {
			metrics = append(metrics, g.Metric)
		}
	}
	for _, name := range metrics {
		if err := compare.ValidMetric(name); err != nil {
			return nil, err
		}
	}
	return metrics, nil
}

// Analyze finds the change points of every metric over the runs (already
// ordered) and explains each.
func Analyze(s *Series, o Options) (*Result, error) {
	if len(s.Runs) < 2 {
		return nil, fmt.Errorf("a history needs at least two runs, got %d", len(s.Runs))
	}
	metrics, err := o.followed()
	if err != nil {
		return nil, err
	}
	res := &Result{Options: o, Warnings: slices.Clone(s.Warnings), Notes: slices.Clone(s.Notes)}
	for _, r := range s.Runs {
		res.Runs = append(res.Runs, RunInfo{ID: r.ID, Time: r.Time, Commit: r.Commit})
	}
	cache := map[[3]int]*explained{}
	for _, name := range metrics {
		m, ok := analyzeMetric(s, name, o)
		if !ok {
			if slices.Contains(o.Metrics, name) && !slices.Contains(DefaultMetrics, name) || gated(o, name) {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: no run has it", name))
			}
			continue
		}
		for i := range m.Changes {
			explain(s, &m, i, o, cache)
		}
		res.Metrics = append(res.Metrics, m)
	}
	res.gate(o)
	return res, nil
}

func gated(o Options, name string) bool {
	return slices.ContainsFunc(o.Compare.Policy.Gates, func(g compare.Gate) bool { return g.Metric == name })
}

// analyzeMetric detects the change points of one metric; ok is false when
// no run has the metric.
func analyzeMetric(s *Series, name string, o Options) (Metric, bool) {
	m := Metric{Name: name, Better: compare.MetricBetter(name)}
	if mn, err := compare.LookupMetric(name); err == nil {
		m.Unit = mn.Family.Unit
	}
	var have []int // runs with a value
	for i := range s.Runs {
		v, ok := compare.RunValue(&s.Runs[i].Data, name)
		if !ok {
			v = math.NaN()
		} else {
			have = append(have, i)
		}
		m.Values = append(m.Values, v)
	}
	if len(have) == 0 {
		return m, false
	}
	unit := o.Unit
	var units [][]float64
	if unit == UnitRequest || (unit == UnitAuto && len(have) < RequestPointsBelow) {
		for _, i := range have {
			units = append(units, compare.RequestValues(&s.Runs[i].Data, name))
		}
		unit = UnitRequest
		if slices.ContainsFunc(units, func(u []float64) bool { return len(u) == 0 }) {
			units = nil
			switch {
			case o.Unit == UnitAuto && len(have) >= MinRunsRunLevel:
				unit = UnitRun
			case o.Unit == UnitAuto:
				m.Note = fmt.Sprintf("%d runs are too few to test run values (at least %d), and %s has no per-request values", len(have), MinRunsRunLevel, name)
				unit = ""
			default:
				m.Note = name + " has no per-request values (--unit request)"
				unit = ""
			}
		}
	}
	if unit == UnitRun {
		for _, i := range have {
			units = append(units, []float64{m.Values[i]})
		}
	}
	m.Points = unit
	if len(have) < 2 && m.Note == "" {
		m.Note = "fewer than two runs have it"
	}
	var cps []ChangePoint
	if units != nil && len(have) >= 2 {
		d := o.Detect
		d.Seed = seedFor(d.Seed, name)
		cps = Detect(units, d)
		if unit == UnitRequest {
			runVals := make([]float64, len(have))
			for k, i := range have {
				runVals[k] = m.Values[i]
			}
			cps = confirmByRuns(cps, runVals, o.Detect.Alpha)
		}
	}
	// Map the change points (indices among the runs that have the metric)
	// back to the runs.
	bounds := []int{0}
	for _, c := range cps {
		idx := have[c.Index]
		bounds = append(bounds, idx)
		m.Changes = append(m.Changes, Change{Index: idx, P: c.P, Q: c.Q, RunP: c.RunP})
	}
	bounds = append(bounds, len(s.Runs))
	for i := 0; i+1 < len(bounds); i++ {
		m.Segments = append(m.Segments, Segment{From: bounds[i], To: bounds[i+1], Level: level(m.Values[bounds[i]:bounds[i+1]])})
	}
	for i := range m.Changes {
		c := &m.Changes[i]
		r := s.Runs[c.Index]
		c.Run = RunInfo{ID: r.ID, Time: r.Time, Commit: r.Commit}
		c.Before, c.After = m.Segments[i].Level, m.Segments[i+1].Level
	}
	return m, true
}

// seedFor gives every metric its own permutation stream, so adding a
// metric does not change another's p-values.
func seedFor(seed uint64, name string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return seed ^ h.Sum64()
}

// level is the median of the known values.
func level(v []float64) float64 {
	var k []float64
	for _, x := range v {
		if !math.IsNaN(x) {
			k = append(k, x)
		}
	}
	if len(k) == 0 {
		return math.NaN()
	}
	return stat.Median(k)
}

type explained struct {
	res *compare.Result
	err error
}

// explain compares the runs of the segments on either side of change i, as
// diff compares two sides of several runs (run-level replication) — one
// comparison per pair of segments, shared by the metrics whose changes
// fall at the same runs.
func explain(s *Series, m *Metric, i int, o Options, cache map[[3]int]*explained) {
	c := &m.Changes[i]
	from, to := m.Segments[i].From, m.Segments[i+1].To
	key := [3]int{from, c.Index, to}
	e, ok := cache[key]
	if !ok {
		base := runsOf(s, from, c.Index)
		cand := runsOf(s, c.Index, to)
		e = &explained{}
		e.res, e.err = compare.Compare(
			compare.Side{Label: span(s, from, c.Index), Runs: base},
			compare.Side{Label: span(s, c.Index, to), Runs: cand}, o.Compare)
		cache[key] = e
	}
	c.BaseRuns, c.CandRuns = c.Index-from, to-c.Index
	if e.err != nil {
		c.Note = e.err.Error()
		if errors.Is(e.err, compare.ErrNoOverlap) {
			c.Note = "the runs before and after share no metric"
		}
		return
	}
	c.Unit = e.res.Unit
	for j := range e.res.Metrics {
		if e.res.Metrics[j].Name == m.Name {
			mm := e.res.Metrics[j]
			c.Comparison = &mm
			return
		}
	}
	c.Note = "compare has no " + m.Name + " for these runs"
}

func runsOf(s *Series, from, to int) []compare.Run {
	out := make([]compare.Run, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, s.Runs[i].Data)
	}
	return out
}

// span names runs [from, to) by position, 1-based as printed.
func span(s *Series, from, to int) string {
	if to-from == 1 {
		return fmt.Sprintf("run %d", from+1)
	}
	return fmt.Sprintf("runs %d–%d", from+1, to)
}

// gate decides each rule on the newest run: it fails when the rule's
// metric has a confirmed change point (the newest run is after its last
// one) and compare's verdict on that change, before against after, is
// fail — or inconclusive under FailOnInconclusive. With no change point
// the newest run belongs to the one segment of the whole series: nothing
// to gate.
func (res *Result) gate(o Options) {
	for _, g := range o.Compare.Policy.Gates {
		r := GateRule{Rule: g, Verdict: compare.Pass, Change: -1}
		var m *Metric
		for i := range res.Metrics {
			if res.Metrics[i].Name == g.Metric {
				m = &res.Metrics[i]
			}
		}
		switch {
		case m == nil:
			r.Verdict, r.Reason = compare.Inconclusive, "no run has "+g.Metric
			if !o.Compare.Policy.AllowMissing {
				r.Verdict = compare.Fail
			}
		case len(m.Changes) == 0:
			r.Reason = "no change point: the newest run is level with the series"
			if m.Note != "" {
				r.Verdict, r.Reason = compare.Inconclusive, m.Note
			}
		default:
			last := m.Changes[len(m.Changes)-1]
			r.Change = last.Index
			switch {
			case last.Comparison == nil:
				r.Verdict, r.Reason = compare.Inconclusive, "the change at run "+fmt.Sprint(last.Index+1)+" could not be compared: "+last.Note
			case last.Comparison.Gate == nil:
				r.Verdict, r.Reason = compare.Inconclusive, "compare did not gate "+g.Metric
			default:
				r.Verdict = last.Comparison.Gate.Verdict
				r.Reason = fmt.Sprintf("change at run %d (p = %.3g): %s", last.Index+1, last.P, last.Comparison.Gate.Reason)
			}
		}
		if r.Verdict == compare.Fail || (r.Verdict == compare.Inconclusive && o.Compare.Policy.FailOnInconclusive && r.Change >= 0) {
			res.Gate.Failed = true
		}
		res.Gate.Rules = append(res.Gate.Rules, r)
	}
}
