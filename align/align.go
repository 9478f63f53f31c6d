package align

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
)

// Options tune Align. Start from DefaultOptions; the zero value is not
// valid.
type Options struct {
	// Reference names the clock domain everything is mapped onto. Empty
	// means the domain of the first source with OTLP spans (host realtime),
	// else that of the first source with records.
	Reference string `json:"reference,omitempty"`
	// MaxDriftPPM bounds the drift of any clock against the reference. The
	// kernel slews CLOCK_REALTIME by at most 500 ppm (NTP); a GPU crystal
	// adds a margin. Every guaranteed bound assumes it.
	MaxDriftPPM float64 `json:"max_drift_ppm"`
	// MirrorInsideSpan assumes that an NVTX range mirroring an OTLP span is
	// pushed after the span starts and popped before it ends (the natural
	// instrumentation: open the span, push the range; pop, end the span),
	// which turns each match into two hard bounds. When the data contradict
	// it, the bounds are dropped with a warning.
	MirrorInsideSpan bool `json:"mirror_inside_span"`
	// MatchToleranceNs: a matched event farther than this from the fit is a
	// mismatch and is dropped; more than a quarter of them means the anchors
	// contradict each other and the domain cannot be aligned.
	MatchToleranceNs int64 `json:"match_tolerance_ns"`
	// StepMinNs is the smallest clock step looked for (the threshold is also
	// at least 10× the residual noise).
	StepMinNs int64 `json:"step_min_ns"`
	// MinSegmentAnchors: a step must persist for this many anchors on each
	// side; fewer are outliers, not a step.
	MinSegmentAnchors int `json:"min_segment_anchors"`
	// MinDriftSpanNs: when a segment's soft anchors span less time than
	// this, drift is not identified and is fixed at zero (docs/statistics.md A.4
	// 2c); the guaranteed bound still allows any drift up to MaxDriftPPM.
	MinDriftSpanNs int64 `json:"min_drift_span_ns"`
	// MaxSteps bounds the clock steps found per domain.
	MaxSteps int `json:"max_steps"`
	// TimestampSlackNs loosens every causal hard bound (launch before
	// kernel, server span inside its client span, NVTX range inside the span
	// it mirrors) by this much: timestamps are quantized (vLLM writes float
	// seconds, about 0.24 µs at today's Unix times) and jittered by the
	// moment each process reads its clock, so a bound may be missed by that
	// much without any assumption failing. Guaranteed bounds include it, and
	// the bounds are reported as contradicting each other only beyond it.
	// Clock-pair brackets are taken as exact.
	TimestampSlackNs int64 `json:"timestamp_slack_ns"`
}

// DefaultOptions returns the documented defaults.
func DefaultOptions() Options {
	return Options{
		MaxDriftPPM:       1000,
		MirrorInsideSpan:  true,
		MatchToleranceNs:  1_000_000,
		StepMinNs:         50_000,
		MinSegmentAnchors: 5,
		MinDriftSpanNs:    10_000_000_000,
		MaxSteps:          8,
		TimestampSlackNs:  2_000,
	}
}

func (o *Options) check() error {
	var errs []error
	if !(o.MaxDriftPPM > 0) || math.IsInf(o.MaxDriftPPM, 0) {
		errs = append(errs, fmt.Errorf("align: MaxDriftPPM must be positive, got %g", o.MaxDriftPPM))
	}
	if o.MatchToleranceNs <= 0 {
		errs = append(errs, fmt.Errorf("align: MatchToleranceNs must be positive, got %d", o.MatchToleranceNs))
	}
	if o.TimestampSlackNs < 0 {
		errs = append(errs, fmt.Errorf("align: TimestampSlackNs must not be negative, got %d", o.TimestampSlackNs))
	}
	if o.StepMinNs <= 0 {
		errs = append(errs, fmt.Errorf("align: StepMinNs must be positive, got %d", o.StepMinNs))
	}
	if o.MinSegmentAnchors < 2 {
		errs = append(errs, fmt.Errorf("align: MinSegmentAnchors must be at least 2, got %d", o.MinSegmentAnchors))
	}
	if o.MaxSteps < 0 {
		errs = append(errs, fmt.Errorf("align: MaxSteps must not be negative, got %d", o.MaxSteps))
	}
	return errors.Join(errs...)
}

// Status says how far a domain could be aligned.
type Status string

const (
	// StatusReference: the domain is the reference clock.
	StatusReference Status = "reference"
	// StatusRefined: fitted from anchors (clock pairs, causal bounds,
	// matched events).
	StatusRefined Status = "refined"
	// StatusUnrefined: placed by the nsys session-start anchor or by
	// assuming an NTP-synced wall clock; the uncertainty is unknown.
	StatusUnrefined Status = "unrefined"
	// StatusCannotAlign: nothing honest relates the domain to the
	// reference; its records keep their own clock and must not be joined.
	StatusCannotAlign Status = "cannot-align"
)

// AnchorCounts counts the anchors a fit used, by kind, strongest first.
type AnchorCounts struct {
	ClockPair int `json:"clock_pair,omitempty"`
	Causal    int `json:"causal,omitempty"`
	Matched   int `json:"matched,omitempty"`
	Sequence  int `json:"sequence,omitempty"`
	Epoch     int `json:"epoch,omitempty"`
}

// String lists the non-zero counts, e.g. "200 matched, 1 epoch".
func (c AnchorCounts) String() string {
	var parts []string
	for _, p := range []struct {
		n    int
		name string
	}{{c.ClockPair, "clock-pair"}, {c.Causal, "causal"}, {c.Matched, "matched"}, {c.Sequence, "sequence"}, {c.Epoch, "epoch"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.name))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// Fit is the alignment of one clock domain (docs/design.md §11 `alignment[]`):
// t_ref = t + offset + drift·(t − center). Figures that the anchors do not
// support are nil rather than zero, so that no report shows false precision.
type Fit struct {
	Domain  string   `json:"domain"`
	Kind    string   `json:"kind"`
	Sources []string `json:"sources"`
	Status  Status   `json:"status"`
	// Refined is false when only the nsys session-start anchor (or the
	// wall-clock assumption) placed the domain: "unrefined".
	Refined bool         `json:"refined"`
	Anchors AnchorCounts `json:"anchors"`
	// CenterNs is the local instant the offset is quoted at (the median
	// anchor time of the main segment).
	CenterNs int64 `json:"center_ns"`
	// OffsetNs is t_ref − t at CenterNs.
	OffsetNs int64 `json:"offset_ns"`
	// DriftPPM is the rate of the domain's clock against the reference,
	// minus one, in parts per million.
	DriftPPM float64 `json:"drift_ppm"`
	// DriftFitted is false when the anchors give no leverage on drift and it
	// was fixed at zero.
	DriftFitted bool `json:"drift_fitted"`
	// Residuals of the soft anchors (matched events, clock-pair midpoints)
	// around the fit, absolute, in ns.
	ResidualP50Ns *int64 `json:"residual_p50_ns"`
	ResidualP99Ns *int64 `json:"residual_p99_ns"`
	// BoundNs is the guaranteed |error| of any aligned time of this domain,
	// implied by the hard bounds (clock-pair brackets, causal order) and
	// MaxDriftPPM. Nil when the hard bounds do not close the feasible region.
	BoundNs *int64 `json:"bound_ns"`
	// SlackNs is the timestamp slack the causal hard bounds were loosened by
	// (Options.TimestampSlackNs; 0 when the domain has none).
	SlackNs int64 `json:"slack_ns,omitempty"`
	// Segments are the pieces of a piecewise fit, more than one when a clock
	// step was found.
	Segments []Segment `json:"segments,omitempty"`
	Warnings []string  `json:"warnings,omitempty"`

	srcs []ingest.SourceID
	segs []segmentFit
}

// Segment is one piece of a piecewise fit.
type Segment struct {
	// FromNs is the first local instant it covers (nil: from the start).
	FromNs   *int64  `json:"from_ns"`
	CenterNs int64   `json:"center_ns"`
	OffsetNs int64   `json:"offset_ns"`
	DriftPPM float64 `json:"drift_ppm"`
	Anchors  int     `json:"anchors"`
	BoundNs  *int64  `json:"bound_ns"`
}

// Map returns the reference time of local time x of this domain.
func (f *Fit) Map(x int64) int64 {
	if s := f.segment(x); s != nil {
		return s.mapTime(x)
	}
	return x
}

// Interval returns the guaranteed range of the reference time of local time
// x; ok is false when the alignment has no guaranteed bound there.
func (f *Fit) Interval(x int64) (lo, hi int64, ok bool) {
	if f.Status == StatusReference {
		return x, x, true
	}
	if s := f.segment(x); s != nil {
		return s.interval(x)
	}
	return 0, 0, false
}

func (f *Fit) segment(x int64) *segmentFit {
	var s *segmentFit
	for i := range f.segs {
		if f.segs[i].from <= x {
			s = &f.segs[i]
		}
	}
	return s
}

// Uncertainty is the figure the fit promises: the guaranteed bound when
// there is one, else (refined fits only) the residual p99, a statistical
// figure. known is false for unrefined and unaligned domains.
func (f *Fit) Uncertainty() (ns int64, guaranteed, known bool) {
	switch {
	case f.Status == StatusReference:
		return 0, true, true
	case f.BoundNs != nil:
		return *f.BoundNs, true, true
	case f.Status == StatusRefined && f.ResidualP99Ns != nil:
		return *f.ResidualP99Ns, false, true
	}
	return 0, false, false
}

// Result is the outcome of Align.
type Result struct {
	// Reference is the name of the reference clock domain.
	Reference string `json:"reference"`
	// Fits has one entry per clock domain with records, reference first.
	Fits []Fit `json:"alignment"`
	// Causality counts GPU ops that start before their launching API call,
	// after alignment (docs/statistics.md A.6).
	Causality Causality `json:"causality"`

	bySource []int
}

// FitFor returns the fit of the domain of a source (nil for a source with
// no records).
func (r *Result) FitFor(src ingest.SourceID) *Fit {
	if int(src) < len(r.bySource) && r.bySource[src] >= 0 {
		return &r.Fits[r.bySource[src]]
	}
	return nil
}

// Joinable reports whether records of the source are on the reference clock
// at all (refined or unrefined); records of a domain that could not be
// aligned must not be joined with any other source's.
func (r *Result) Joinable(src ingest.SourceID) bool {
	f := r.FitFor(src)
	return f != nil && f.Status != StatusCannotAlign
}

// Uncertainty is how far the measured distance between two instants taken
// from the given sources may be from the true one because of alignment: zero
// when they share a clock domain (offset errors cancel), else the sum of the
// domains' uncertainties. known is false when a domain involved has no figure
// (unrefined or not aligned).
func (r *Result) Uncertainty(srcs ...ingest.SourceID) (ns int64, known bool) {
	seen := map[int]bool{}
	for _, s := range srcs {
		if int(s) < len(r.bySource) && r.bySource[s] >= 0 {
			seen[r.bySource[s]] = true
		} else {
			return 0, false
		}
	}
	if len(seen) <= 1 {
		return 0, true
	}
	for i := range seen {
		u, _, ok := r.Fits[i].Uncertainty()
		if !ok {
			return 0, false
		}
		ns += u
	}
	return ns, true
}

// FinerThanUncertainty reports whether a duration measured between instants
// of the given sources is finer than the alignment can vouch for — the
// report flags such attribution. A duration across an unrefined or unaligned
// domain is always flagged: its uncertainty is unknown.
func (r *Result) FinerThanUncertainty(d int64, srcs ...ingest.SourceID) bool {
	u, known := r.Uncertainty(srcs...)
	if !known {
		return true
	}
	if d < 0 {
		d = -d
	}
	return d < u
}

// Align maps every timestamp of t onto the reference clock in place (spans,
// span events, GPU ops, samples, clock anchors), then re-sorts the records,
// and returns one fit per clock domain. Sources whose Clock.Name is equal
// share a domain and a fit. Domains are fitted strongest-anchored first, so a
// domain may also be anchored to one aligned before it (its bound then adds
// that domain's). Problems — no anchors, contradictory anchors, no overlap in
// time — are warnings in the fit and in t.Warnings, never a wrong join: the
// domain is reported "cannot-align" and keeps its own clock. The error is
// only for invalid options.
func Align(t *ingest.Trace, opts Options) (*Result, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	al := &aligner{t: t, opts: opts, ref: -1}
	al.groupDomains()
	if err := al.pickReference(); err != nil {
		return nil, err
	}
	res := &Result{bySource: make([]int, len(t.Sources))}
	for i := range res.bySource {
		res.bySource[i] = -1
	}
	if al.ref < 0 {
		res.Causality = CheckCausality(t)
		return res, nil
	}
	res.Reference = al.domains[al.ref].name
	al.buildRelations()
	al.settleReference()
	for al.step() {
	}
	t.Sort()
	res.Causality = CheckCausality(t)

	// Reference first, then in source order.
	order := []int{al.ref}
	for i := range al.domains {
		if i != al.ref && al.domains[i].records > 0 {
			order = append(order, i)
		}
	}
	idx := make([]int, len(al.domains))
	for i, d := range order {
		idx[d] = i
		res.Fits = append(res.Fits, *al.domains[d].fit)
	}
	for src, d := range al.domOf {
		if d >= 0 && al.domains[d].records > 0 {
			res.bySource[src] = idx[d]
		}
	}
	for i := range res.Fits {
		f := &res.Fits[i]
		path := ""
		if len(f.srcs) > 0 {
			path = t.Sources[f.srcs[0]].Path
		}
		for _, w := range f.Warnings {
			t.Warnings.Add(ingest.Warning{Path: path, Code: "align", Msg: f.Domain + ": " + w})
		}
	}
	return res, nil
}

// aligner holds the state of one Align call.
type aligner struct {
	t       *ingest.Trace
	opts    Options
	domains []*domain
	domOf   []int // SourceID → domain index (-1: none)
	ref     int
	rel     relations
}

// domain is one clock domain: the sources that share a Clock.Name.
type domain struct {
	name    string
	kind    ingest.ClockKind
	sources []ingest.SourceID
	records int
	// lo and hi bound the local times of the domain's records.
	lo, hi int64
	// otlp counts OTLP spans, to find the reference.
	otlp int

	done       bool
	status     Status
	bound      int64
	boundKnown bool
	fit        *Fit
}

func (al *aligner) groupDomains() {
	t := al.t
	al.domOf = make([]int, len(t.Sources))
	byName := map[string]int{}
	for i := range t.Sources {
		s := &t.Sources[i]
		name := s.Clock.Name
		if name == "" {
			name = fmt.Sprintf("%s:%s", s.Clock.Kind, s.Path)
		}
		d, ok := byName[name]
		if !ok {
			d = len(al.domains)
			byName[name] = d
			al.domains = append(al.domains, &domain{name: name, kind: s.Clock.Kind, lo: math.MaxInt64, hi: math.MinInt64})
		}
		al.domOf[i] = d
		al.domains[d].sources = append(al.domains[d].sources, ingest.SourceID(i))
	}
	see := func(src ingest.SourceID, times ...int64) {
		d := al.dom(src)
		if d < 0 {
			return
		}
		dm := al.domains[d]
		dm.records++
		for _, x := range times {
			dm.lo, dm.hi = min(dm.lo, x), max(dm.hi, x)
		}
	}
	// Each table is read once, in order: a spilled one's pages are dropped
	// behind the pass when the process is over its memory budget
	// (spill.Behind).
	behind := spill.DropBehind(t.Spans)
	for i := range t.Spans {
		behind.Passed(i)
		s := &t.Spans[i]
		see(s.Source, s.Start, s.End)
		if s.Origin == ingest.OriginOTLP {
			if d := al.dom(s.Source); d >= 0 {
				al.domains[d].otlp++
			}
		}
	}
	behind = spill.DropBehind(t.APICalls)
	for i := range t.APICalls {
		behind.Passed(i)
		see(t.APICalls[i].Source, t.APICalls[i].Start, t.APICalls[i].End)
	}
	behind = spill.DropBehind(t.GPUOps)
	for i := range t.GPUOps {
		behind.Passed(i)
		see(t.GPUOps[i].Source, t.GPUOps[i].Start, t.GPUOps[i].End)
	}
	for i := range t.Samples {
		see(t.Samples[i].Source, t.Samples[i].Time)
	}
}

func (al *aligner) pickReference() error {
	if al.opts.Reference != "" {
		for i, d := range al.domains {
			if d.name == al.opts.Reference {
				al.ref = i
				return nil
			}
		}
		names := make([]string, len(al.domains))
		for i, d := range al.domains {
			names[i] = d.name
		}
		return fmt.Errorf("align: reference clock %q is not among the inputs' clock domains (%s)", al.opts.Reference, strings.Join(names, ", "))
	}
	for i := range al.t.Sources {
		if d := al.domOf[i]; al.domains[d].otlp > 0 {
			al.ref = d
			return nil
		}
	}
	// A clock pair (ingest.AnchorClockPair) bounds its instant on the
	// realtime clock of the host that read it (a capture's pairs, its
	// CUPTI files' pairs): without OTLP spans that realtime domain is the
	// reference when an input declares it, records or not, so the pairs
	// mean what they say.
	for i := range al.t.Sources {
		if !slices.ContainsFunc(al.t.Sources[i].Anchors, func(a ingest.ClockAnchor) bool { return a.Kind == ingest.AnchorClockPair }) {
			continue
		}
		for j := range al.t.Sources {
			if s := &al.t.Sources[j]; s.Clock.Kind == ingest.ClockRealtime && s.Host != "" && s.Host == al.t.Sources[i].Host {
				al.ref = al.domOf[j]
				return nil
			}
		}
	}
	for i := range al.t.Sources {
		if d := al.domOf[i]; al.domains[d].records > 0 {
			al.ref = d
			return nil
		}
	}
	return nil
}

func (al *aligner) newFit(d *domain) *Fit {
	f := &Fit{Domain: d.name, Kind: d.kind.String(), srcs: d.sources}
	for _, s := range d.sources {
		f.Sources = append(f.Sources, al.t.Sources[s].Path)
	}
	return f
}

func (al *aligner) settleReference() {
	d := al.domains[al.ref]
	f := al.newFit(d)
	f.Status, f.Refined, f.DriftFitted = StatusReference, true, true
	zero := int64(0)
	f.BoundNs = &zero
	d.done, d.status, d.boundKnown, d.fit = true, StatusReference, true, f
	for i, o := range al.domains {
		if i != al.ref && o.records == 0 {
			o.done = true
		}
	}
}

// step aligns one more domain and reports whether any remained. The domain
// with the strongest anchors to the aligned set goes first; when none has
// anchors beyond the weak ones, the one with the best weak anchor is settled
// so that others may anchor to it next.
func (al *aligner) step() bool {
	best, bestRank, bestCount := -1, 0, 0
	sets := map[int]*anchorSet{}
	for i, d := range al.domains {
		if d.done {
			continue
		}
		set := al.collect(i)
		sets[i] = &set
		rank, count := set.rank()
		if best < 0 || rank > bestRank || (rank == bestRank && count > bestCount) {
			best, bestRank, bestCount = i, rank, count
		}
	}
	if best < 0 {
		return false
	}
	if bestRank > 0 {
		al.settleRefined(best, sets[best])
		return true
	}
	// Nothing refinable: settle by the weak anchors, epoch first.
	weak := -1
	for i, set := range sets {
		if weak < 0 || weakRank(al.domains[i], set) > weakRank(al.domains[weak], sets[weak]) ||
			(weakRank(al.domains[i], set) == weakRank(al.domains[weak], sets[weak]) && i < weak) {
			weak = i
		}
	}
	al.settleWeak(weak, sets[weak])
	return true
}

func weakRank(d *domain, set *anchorSet) int {
	switch {
	case set.counts.Epoch > 0:
		return 2
	case d.kind == ingest.ClockRealtime:
		return 1
	}
	return 0
}

// settleWeak places a domain that has no anchors beyond its session-start
// anchor or a wall clock: unrefined when that is honest, else cannot-align.
func (al *aligner) settleWeak(i int, set *anchorSet) {
	d := al.domains[i]
	f := al.newFit(d)
	f.Anchors = set.counts
	d.done, d.fit = true, f
	switch {
	case set.counts.Epoch > 0:
		f.Status = StatusUnrefined
		f.Warnings = append(f.Warnings, "placed by its session-start anchor (utcEpochNs) only: unrefined, the uncertainty is unknown (NVTX ranges carrying span_id=<hex> of the OTLP spans they mirror would refine it)")
	case d.kind == ingest.ClockRealtime:
		f.Status = StatusUnrefined
		f.Warnings = append(f.Warnings, "a wall clock with no anchor to the reference: assumed NTP-synced with it; unrefined, the uncertainty is unknown")
	case d.kind == ingest.ClockNsysSession:
		f.Status = StatusCannotAlign
		f.Warnings = append(f.Warnings, "cannot align: the export has no session-start anchor (TARGET_INFO_SESSION_START_TIME.utcEpochNs) and no NVTX range matches an OTLP span, so its session-relative times cannot be placed on the reference clock; its records are kept on their own clock and not joined")
	default:
		f.Status = StatusCannotAlign
		f.Warnings = append(f.Warnings, fmt.Sprintf("cannot align: a %s clock with no anchor to the reference; its records are kept on their own clock and not joined", d.kind))
	}
	d.status = f.Status
	if f.Status == StatusUnrefined && !al.overlaps(d, nil) {
		al.noOverlap(d, f)
	}
}

// overlaps reports whether the domain's records, mapped by segs (identity
// when nil), overlap the reference's records in time.
func (al *aligner) overlaps(d *domain, segs []segmentFit) bool {
	ref := al.domains[al.ref]
	if ref.records == 0 || d.records == 0 {
		return true
	}
	lo, hi := d.lo, d.hi
	if segs != nil {
		lo, hi = mapWith(segs, lo), mapWith(segs, hi)
	}
	return lo <= ref.hi && hi >= ref.lo
}

func (al *aligner) noOverlap(d *domain, f *Fit) {
	ref := al.domains[al.ref]
	f.Status, d.status = StatusCannotAlign, StatusCannotAlign
	f.Refined = false
	f.Warnings = append(f.Warnings, fmt.Sprintf(
		"cannot align: its records (%s) do not overlap the reference's (%s) in time, so any join would be empty or wrong; are these inputs from the same run?",
		fmtRange(d.lo, d.hi), fmtRange(ref.lo, ref.hi)))
}

func fmtRange(lo, hi int64) string {
	return fmt.Sprintf("%d..%d ns, %s", lo, hi, fmtNs(float64(hi-lo)))
}

func mapWith(segs []segmentFit, x int64) int64 {
	s := &segs[0]
	for i := range segs {
		if segs[i].from <= x {
			s = &segs[i]
		}
	}
	return s.mapTime(x)
}

// settleRefined fits a domain from its anchors and rewrites its records.
func (al *aligner) settleRefined(i int, set *anchorSet) {
	d := al.domains[i]
	f := al.newFit(d)
	f.Anchors = set.counts
	if set.causal {
		f.SlackNs = al.opts.TimestampSlackNs
	}
	d.done, d.fit = true, f
	ft := &fitter{opts: al.opts, dmax: al.opts.MaxDriftPPM * 1000, lo: d.lo, hi: d.hi}
	segs, err := ft.fit(set)
	f.Warnings = append(f.Warnings, ft.warnings...)
	var contra *errContradiction
	if errors.As(err, &contra) {
		f.Status, d.status = StatusCannotAlign, StatusCannotAlign
		f.Warnings = append(f.Warnings, "cannot align: "+contra.msg+"; its records are kept on their own clock and not joined")
		return
	}
	f.Status, f.Refined, d.status = StatusRefined, true, StatusRefined
	f.segs = segs
	al.describe(f, segs, set)
	if f.BoundNs != nil {
		d.bound, d.boundKnown = *f.BoundNs, true
	}
	if !al.overlaps(d, segs) {
		f.Warnings = append(f.Warnings, "its aligned records do not overlap the reference's in time; nothing will join")
	}
	if set.counts.Epoch > 0 && math.Abs(float64(f.OffsetNs)) > 1e9 {
		f.Warnings = append(f.Warnings, fmt.Sprintf("the anchors place it %s from its session-start anchor (utcEpochNs): the capture host's clock was off by that much, or the inputs come from different hosts", fmtNs(float64(f.OffsetNs))))
	}
	al.rewrite(d, segs)
}

// describe fills the public figures of a fit from its segments: the main
// segment (most anchors) gives offset and drift; the bound is the worst
// segment's, and unknown if any segment's is.
func (al *aligner) describe(f *Fit, segs []segmentFit, set *anchorSet) {
	main := 0
	for i := range segs {
		if segs[i].anchors > segs[main].anchors {
			main = i
		}
	}
	m := &segs[main]
	f.CenterNs = m.center
	f.OffsetNs = m.offsetAt(m.center)
	f.DriftPPM = m.d / 1000
	f.DriftFitted = m.driftFitted
	boundKnown := !set.partnerUnknown
	var bound, p50, p99 float64
	haveRes := false
	for i := range segs {
		s := &segs[i]
		if !s.boundKnown {
			boundKnown = false
		}
		bound = math.Max(bound, s.bound)
		if s.haveResiduals {
			haveRes = true
			p50, p99 = math.Max(p50, s.p50), math.Max(p99, s.p99)
		}
	}
	if boundKnown {
		f.BoundNs = ptr(int64(bound))
	}
	if haveRes {
		f.ResidualP50Ns, f.ResidualP99Ns = ptr(int64(math.Round(p50))), ptr(int64(math.Round(p99)))
	}
	if len(segs) > 1 {
		for i := range segs {
			s := &segs[i]
			seg := Segment{CenterNs: s.center, OffsetNs: s.offsetAt(s.center), DriftPPM: s.d / 1000, Anchors: s.anchors}
			if i > 0 {
				seg.FromNs = ptr(s.from)
			}
			if s.boundKnown && !set.partnerUnknown {
				seg.BoundNs = ptr(int64(s.bound))
			}
			f.Segments = append(f.Segments, seg)
		}
		f.Warnings = append(f.Warnings, fmt.Sprintf("%d clock step(s) found; fitted piecewise", len(segs)-1))
	}
}

func ptr[T any](v T) *T { return &v }

// rewrite maps every timestamp of the domain's records onto the reference.
func (al *aligner) rewrite(d *domain, segs []segmentFit) {
	t := al.t
	in := make([]bool, len(t.Sources))
	for _, s := range d.sources {
		in[s] = true
	}
	m := func(x int64) int64 { return mapWith(segs, x) }
	clamped := 0
	// interval maps a record's start and end; one across a backward clock
	// step is kept, at zero length.
	interval := func(start, end *int64) {
		*start, *end = m(*start), m(*end)
		if *end < *start {
			*end = *start
			clamped++
		}
	}
	for i := range t.Spans {
		s := &t.Spans[i]
		if !in[s.Source] {
			continue
		}
		interval(&s.Start, &s.End)
		evs := t.Events(s)
		for j := range evs {
			evs[j].Time = m(evs[j].Time)
		}
	}
	for i := range t.APICalls {
		if c := &t.APICalls[i]; in[c.Source] {
			interval(&c.Start, &c.End)
		}
	}
	for i := range t.GPUOps {
		if o := &t.GPUOps[i]; in[o.Source] {
			interval(&o.Start, &o.End)
		}
	}
	for i := range t.Samples {
		if in[t.Samples[i].Source] {
			t.Samples[i].Time = m(t.Samples[i].Time)
		}
	}
	for _, src := range d.sources {
		for j := range t.Sources[src].Anchors {
			a := &t.Sources[src].Anchors[j]
			a.Local = m(a.Local)
		}
	}
	if clamped > 0 {
		d.fit.Warnings = append(d.fit.Warnings, fmt.Sprintf("%d record(s) straddle a backward clock step and were clamped to zero length", clamped))
	}
	d.lo, d.hi = m(d.lo), m(d.hi)
}
