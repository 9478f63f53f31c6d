package signals

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/stat"
)

// Options tune the analysis. The zero value means the defaults.
type Options struct {
	// Window is the window length in ns; 0 picks the median scrape interval,
	// widened until the median window holds MinRequests requests.
	Window int64 `json:"window_ns"`
	// MinRequests is the fewest latency observations a window needs to be
	// scored (default 8).
	MinRequests int `json:"min_requests"`
	// SpikeZ and SpikeRatio define a latency spike (defaults 5 and 1.5).
	SpikeZ     float64 `json:"spike_z"`
	SpikeRatio float64 `json:"spike_ratio"`
	// MaxLag is the largest lead tried, in windows (default 2): a signal
	// may move up to MaxLag windows before the latency, or one window after
	// (a scrape reports the interval before it).
	MaxLag int `json:"max_lag"`
	// Baseline is how many windows each side of a spike form its baseline
	// (default 30).
	Baseline int `json:"baseline_windows"`
	// FDR is the Benjamini–Hochberg false discovery rate (default 0.01).
	FDR float64 `json:"fdr"`
	// MinZ is the smallest |z| a signal needs besides its q-value (default
	// 5): metric noise (Poisson counts, integer gauges) has heavier tails
	// than the normal p-values assume.
	MinZ float64 `json:"min_z"`
	// Top bounds the signals listed per spike (default 5).
	Top int `json:"top"`
}

func (o *Options) defaults() {
	if o.MinRequests <= 0 {
		o.MinRequests = 8
	}
	if o.SpikeZ <= 0 {
		o.SpikeZ = 5
	}
	if o.SpikeRatio <= 0 {
		o.SpikeRatio = 1.5
	}
	if o.MaxLag <= 0 {
		o.MaxLag = 2
	}
	if o.Baseline <= 0 {
		o.Baseline = 30
	}
	if o.FDR <= 0 {
		o.FDR = 0.01
	}
	if o.Top <= 0 {
		o.Top = 5
	}
	if o.MinZ <= 0 {
		o.MinZ = 5
	}
}

// Result is the infrastructure section of a run.
type Result struct {
	// Series counts the metric series read; Catalogued those the catalog
	// knows; Scored those with enough samples to score.
	Series     int `json:"series"`
	Catalogued int `json:"catalogued"`
	Scored     int `json:"scored"`
	// Window is the window length used, in ns; Start the first window's start.
	Window int64   `json:"window_ns"`
	Start  int64   `json:"start_ns"`
	Spikes []Spike `json:"spikes"`
	// Overlapping counts the series with a sample inside the requests'
	// window [Start, End]; SamplesFrom and SamplesTo bound every sample
	// read. With none overlapping nothing is scored: the metrics and the
	// traces do not cover the same time.
	Overlapping int   `json:"overlapping_series"`
	End         int64 `json:"end_ns"`
	SamplesFrom int64 `json:"samples_from_ns"`
	SamplesTo   int64 `json:"samples_to_ns"`
	// Layers counts the series read per layer.
	Layers  map[Layer]int `json:"layers"`
	Options Options       `json:"options"`
}

// Spike is one time range where latency departed from its baseline.
type Spike struct {
	From int64 `json:"from_ns"`
	To   int64 `json:"to_ns"`
	// Latency lists the departures (metric, tenant) that make the spike.
	Latency []Departure `json:"latency"`
	// Signals are the significant deviations of mechanism and uncatalogued
	// signals, ranked: the candidates for what slowed requests.
	Signals []Deviation `json:"signals"`
	// Load are the significant deviations of load and symptom signals
	// (utilization, running and waiting requests, bytes): they move with
	// latency whatever the cause, so they are context, not ranked. A spike
	// with Load but no Signals rose with the traffic.
	Load []Deviation `json:"load,omitempty"`
	// Tested counts the signals scored against this spike.
	Tested int `json:"tested"`
}

// Departure is one latency metric's spike: its p99 in the worst window
// against the median window.
type Departure struct {
	Metric   string  `json:"metric"` // "ttft", "itl", "e2e"
	Tenant   string  `json:"tenant,omitempty"`
	P99      float64 `json:"p99_ms"`
	Baseline float64 `json:"baseline_p99_ms"`
	Z        float64 `json:"z"`
}

// Deviation is one signal that deviated with a spike.
type Deviation struct {
	Series string `json:"series"`
	Name   string `json:"name"`
	// Short is the name with only its identifying labels (GPU, device,
	// engine, model), for display.
	Short     string    `json:"short"`
	Layer     Layer     `json:"layer"`
	Area      string    `json:"area,omitempty"`
	Role      Role      `json:"role,omitempty"`
	Unit      string    `json:"unit,omitempty"`
	Transform Transform `json:"transform"`
	// Value is the signal's mean over the spike's windows (shifted by Lag),
	// Baseline its baseline median.
	Value float64 `json:"value"`
	// Peak is the largest window value in the same windows.
	Peak     float64 `json:"peak"`
	Baseline float64 `json:"baseline"`
	Z        float64 `json:"z"`
	// Lag in ns: positive when the signal moved before the latency.
	Lag int64   `json:"lag_ns"`
	P   float64 `json:"p"`
	Q   float64 `json:"q"`
	// Onset is when the signal began to deviate (|z| ≥ MinZ in every
	// window from it to the spike), in ns; ranking puts earlier onsets
	// first: a cause moves before its consequences.
	Onset int64 `json:"onset_ns"`
	// FromConstant: the baseline was flat and the signal left it.
	FromConstant bool   `json:"from_constant,omitempty"`
	Bad          string `json:"bad,omitempty"`
	Mechanism    string `json:"mechanism,omitempty"`
}

// signal is one series on the window grid.
type signal struct {
	key       string
	name      string
	short     string
	entry     *Entry
	model     string // the model_name label, if any
	transform Transform
	vals      []float64 // NaN: no data in the window
	res       float64   // resolution: the smallest non-zero step between values
}

// Analyze finds the latency spikes of res and the signals of t that moved
// with them. It returns nil when the trace has no metric series or no
// requests.
func Analyze(t *ingest.Trace, res *attribution.Result, opts Options) *Result {
	opts.defaults()
	if len(t.Series) == 0 || res == nil || len(res.Requests) == 0 {
		return nil
	}
	out := &Result{Series: len(t.Series), Layers: map[Layer]int{}, Options: opts}
	for i := range t.Series {
		e := Lookup(t.Str(t.Series[i].Name))
		if e != nil {
			out.Catalogued++
			out.Layers[e.Layer]++
		} else {
			out.Layers[LayerUnknown]++
		}
	}
	start, end := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range res.Requests {
		r := &res.Requests[i]
		start, end = min(start, r.Arrival), max(end, r.End)
	}
	out.Overlapping, out.SamplesFrom, out.SamplesTo = overlapping(t, start, end)
	out.Start, out.End = start, end
	if out.Overlapping == 0 {
		return out
	}
	w := opts.Window
	if w <= 0 {
		w = chooseWindow(t, res, opts.MinRequests, end-start)
	}
	n := int((end-start)/w) + 1
	out.Window, out.Start = w, start
	sigs := gridSignals(t, start, w, n)
	out.Scored = len(sigs)
	lat := latencyGrid(res, start, w, n)
	spikes := findSpikes(lat, opts)
	inSpike := make([]bool, n)
	for _, sp := range spikes {
		for i := sp.a; i < sp.b; i++ {
			inSpike[i] = true
		}
	}
	for _, sp := range spikes {
		s := Spike{From: start + int64(sp.a)*w, To: start + int64(sp.b)*w, Latency: sp.deps}
		devs, tested := score(scoped(t, sigs, res, sp.deps), sp.a, sp.b, inSpike, opts, start, w)
		s.Tested = tested
		for _, d := range devs {
			if d.Role == RoleLoad || d.Role == RoleSymptom {
				if len(s.Load) < opts.Top {
					s.Load = append(s.Load, d)
				}
			} else if len(s.Signals) < opts.Top {
				s.Signals = append(s.Signals, d)
			}
		}
		out.Spikes = append(out.Spikes, s)
	}
	return out
}

// scoped drops the signals that name a model (vLLM's model_name label)
// other than the models of the tenants whose latency spiked: another model's
// queue cannot be this tenant's cause. A departure of all tenants keeps all.
func scoped(t *ingest.Trace, sigs []*signal, res *attribution.Result, deps []Departure) []*signal {
	models := map[string]bool{}
	for _, d := range deps {
		if d.Tenant == "" {
			return sigs
		}
	}
	tenants := map[string]bool{}
	for _, d := range deps {
		tenants[d.Tenant] = true
	}
	for i := range res.Requests {
		if r := &res.Requests[i]; tenants[res.Tenant(r)] && res.Model(r) != "" {
			models[res.Model(r)] = true
		}
	}
	if len(models) == 0 {
		return sigs
	}
	var out []*signal
	for _, sg := range sigs {
		if sg.model == "" || models[sg.model] {
			out = append(out, sg)
		}
	}
	return out
}

// chooseWindow is the median scrape interval, doubled until the median
// window holds minReq requests.
func chooseWindow(t *ingest.Trace, res *attribution.Result, minReq int, span int64) int64 {
	last := map[ingest.SeriesID]int64{}
	var gaps []int64
	for i := range t.Samples {
		s := &t.Samples[i]
		if s.Series == 0 {
			continue
		}
		if p, ok := last[s.Series]; ok && s.Time > p {
			gaps = append(gaps, s.Time-p)
		}
		last[s.Series] = s.Time
	}
	w := int64(1e9)
	if len(gaps) > 0 {
		slices.Sort(gaps)
		w = max(gaps[len(gaps)/2], 1e6)
	}
	perSec := float64(len(res.Requests)) / math.Max(float64(span)/1e9, 1e-9)
	for w < span && perSec*float64(w)/1e9 < float64(minReq) {
		w *= 2
	}
	return w
}

// gridSignals puts every series on the window grid.
func gridSignals(t *ingest.Trace, start, w int64, n int) []*signal {
	type acc struct {
		sum   []float64
		cnt   []int
		lastV float64
		lastT int64
		has   bool
		decr  int
	}
	accs := make([]*acc, len(t.Series))
	for i := range t.Samples {
		s := &t.Samples[i]
		if s.Series == 0 || int(s.Series) > len(t.Series) {
			continue
		}
		se := &t.Series[s.Series-1]
		switch se.Type {
		case ingest.MetricHistogram, ingest.MetricSummary:
			continue // request histograms observe at request finish: they lag (docs/signals.md)
		}
		k := int((s.Time - start) / w)
		if s.Time < start || k >= n {
			// Outside the requests' span: only the last value before it
			// matters, as the base of the first rate.
			a := accs[s.Series-1]
			if a == nil {
				a = &acc{sum: make([]float64, n), cnt: make([]int, n)}
				accs[s.Series-1] = a
			}
			if s.Time < start {
				a.lastV, a.lastT, a.has = s.Value, s.Time, true
			}
			continue
		}
		a := accs[s.Series-1]
		if a == nil {
			a = &acc{sum: make([]float64, n), cnt: make([]int, n)}
			accs[s.Series-1] = a
		}
		e := Lookup(t.Str(se.Name))
		if transformOf(e, se) == TransformRate || (se.Type == ingest.MetricUntyped && e == nil) {
			if a.has && s.Time > a.lastT {
				d := s.Value - a.lastV
				if d < 0 {
					a.decr++
					d = s.Value // a reset
				}
				a.sum[k] += d
				a.cnt[k]++
			}
			a.lastV, a.lastT, a.has = s.Value, s.Time, true
			continue
		}
		a.sum[k] += s.Value
		a.cnt[k]++
	}
	var out []*signal
	for i, a := range accs {
		if a == nil {
			continue
		}
		se := &t.Series[i]
		e := Lookup(t.Str(se.Name))
		tr := transformOf(e, se)
		if se.Type == ingest.MetricUntyped && e == nil {
			tr = TransformRate
			if a.decr > 1 {
				tr = TransformLevel // not a counter after all: no rate was right
				continue
			}
		}
		sg := &signal{key: t.SeriesKey(se), name: t.Str(se.Name), short: shortName(t, se), entry: e, model: t.Label(se, "model_name"), transform: tr, vals: make([]float64, n)}
		known := 0
		for k := range n {
			switch {
			case a.cnt[k] == 0:
				sg.vals[k] = math.NaN()
			case tr == TransformRate:
				sg.vals[k] = a.sum[k] / (float64(w) / 1e9)
				known++
			default:
				sg.vals[k] = a.sum[k] / float64(a.cnt[k])
				known++
			}
		}
		if known < 4 {
			continue
		}
		sg.res = resolution(sg.vals)
		out = append(out, sg)
	}
	slices.SortFunc(out, func(a, b *signal) int { return strings.Compare(a.key, b.key) })
	return out
}

// identifying are the labels that tell series of one metric apart on a
// node; the others (UUID, driver version, host) are the same for all.
var identifying = []string{"gpu", "device", "port", "engine", "model_name", "tenant", "finished_reason", "GPU_I_ID"}

func shortName(t *ingest.Trace, se *ingest.Series) string {
	var parts []string
	for _, k := range identifying {
		if v := t.Label(se, k); v != "" {
			parts = append(parts, k+"="+strconv.Quote(v))
		}
	}
	if len(parts) == 0 {
		return t.Str(se.Name)
	}
	return t.Str(se.Name) + "{" + strings.Join(parts, ",") + "}"
}

func resolution(v []float64) float64 {
	r := math.Inf(1)
	for i := 1; i < len(v); i++ {
		if d := math.Abs(v[i] - v[i-1]); d > 0 && d < r {
			r = d
		}
	}
	if math.IsInf(r, 1) {
		return 0
	}
	return r
}

// latencySeries is one latency metric of one tenant per window.
type latencySeries struct {
	metric, tenant string
	obs            [][]float64 // ms, per window
}

func latencyGrid(res *attribution.Result, start, w int64, n int) []*latencySeries {
	series := map[[2]string]*latencySeries{}
	get := func(metric, tenant string) *latencySeries {
		k := [2]string{metric, tenant}
		s := series[k]
		if s == nil {
			s = &latencySeries{metric: metric, tenant: tenant, obs: make([][]float64, n)}
			series[k] = s
		}
		return s
	}
	add := func(metric, tenant string, at int64, v float64) {
		k := int((at - start) / w)
		if k < 0 || k >= n || math.IsNaN(v) {
			return
		}
		get(metric, "").obs[k] = append(get(metric, "").obs[k], v)
		if tenant != "" {
			s := get(metric, tenant)
			s.obs[k] = append(s.obs[k], v)
		}
	}
	for i := range res.Requests {
		r := &res.Requests[i]
		tenant := res.Tenant(r)
		add("ttft", tenant, r.Arrival, r.TTFT/1e6)
		add("e2e", tenant, r.Arrival, r.E2E/1e6)
		tokens := res.TokenTimes(r)
		for j := 1; j < len(tokens); j++ {
			add("itl", tenant, tokens[j], float64(tokens[j]-tokens[j-1])/1e6)
		}
	}
	out := make([]*latencySeries, 0, len(series))
	for _, s := range series {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *latencySeries) int {
		return cmp.Or(strings.Compare(a.metric, b.metric), strings.Compare(a.tenant, b.tenant))
	})
	return out
}

type spikeRange struct {
	a, b int // window range [a, b)
	deps []Departure
}

// findSpikes marks the windows whose p99 departs from the median window and
// merges overlapping or adjacent ones across metrics and tenants.
func findSpikes(lat []*latencySeries, opts Options) []spikeRange {
	type hit struct {
		k   int
		dep Departure
	}
	var hits []hit
	for _, s := range lat {
		// A request has many tokens: an ITL p99 needs more of them.
		minObs := opts.MinRequests
		if s.metric == "itl" {
			minObs *= 4
		}
		p99 := make([]float64, len(s.obs))
		var known []float64
		for k, o := range s.obs {
			p99[k] = math.NaN()
			if len(o) >= minObs {
				p99[k] = quantile(o, 0.99)
				known = append(known, p99[k])
			}
		}
		if len(known) < 8 {
			continue
		}
		med, mad := medianMAD(known)
		scale := 1.4826 * mad
		if scale <= 0 {
			scale = math.Max(1.2533*meanAbsDev(known, med), 1e-9)
		}
		for k, v := range p99 {
			if math.IsNaN(v) {
				continue
			}
			z := (v - med) / scale
			if z >= opts.SpikeZ && v >= opts.SpikeRatio*med {
				hits = append(hits, hit{k, Departure{Metric: s.metric, Tenant: s.tenant, P99: v, Baseline: med, Z: z}})
			}
		}
	}
	slices.SortFunc(hits, func(a, b hit) int { return cmp.Compare(a.k, b.k) })
	var out []spikeRange
	for _, h := range hits {
		if len(out) > 0 && h.k <= out[len(out)-1].b {
			last := &out[len(out)-1]
			last.b = max(last.b, h.k+1)
			merged := false
			for i := range last.deps {
				d := &last.deps[i]
				if d.Metric == h.dep.Metric && d.Tenant == h.dep.Tenant {
					if h.dep.Z > d.Z {
						*d = h.dep
					}
					merged = true
				}
			}
			if !merged {
				last.deps = append(last.deps, h.dep)
			}
			continue
		}
		out = append(out, spikeRange{a: h.k, b: h.k + 1, deps: []Departure{h.dep}})
	}
	for i := range out {
		slices.SortFunc(out[i].deps, func(a, b Departure) int { return cmp.Compare(b.Z, a.Z) })
	}
	return out
}

// score tests every signal against the spike [a, b).
func score(sigs []*signal, a, b int, inSpike []bool, opts Options, start, w int64) ([]Deviation, int) {
	n := len(inSpike)
	lags := opts.MaxLag + 2 // −1 … MaxLag
	var devs []Deviation
	tested := 0
	for _, sg := range sigs {
		var base []float64
		for k := max(0, a-opts.Baseline); k < min(n, b+opts.Baseline); k++ {
			if k >= a-opts.MaxLag && k < b+opts.MaxLag || inSpike[k] || math.IsNaN(sg.vals[k]) {
				continue
			}
			base = append(base, sg.vals[k])
		}
		if len(base) < 8 {
			continue
		}
		tested++
		med, mad := medianMAD(base)
		// The floor keeps a signal that is flat but for rare blips (a clock
		// that dips one step) from scoring a huge z on one blip: MAD, else
		// the mean absolute deviation, and never under the signal's
		// resolution or 1% of its level. A baseline without any variation
		// (a counter that never moved) has no noise to measure against: a
		// change of one resolution step scores 10.
		scale := 1.4826 * mad
		constant := false
		if scale <= 0 {
			scale = 1.2533 * meanAbsDev(base, med)
		}
		if scale <= 0 {
			constant = true
			scale = max(sg.res/10, 0.01*math.Abs(med), 1e-12)
		} else {
			scale = max(scale, sg.res, 0.01*math.Abs(med))
		}
		best := Deviation{}
		bestAbs := -1.0
		for lag := -1; lag <= opts.MaxLag; lag++ {
			sum, cnt, peak := 0.0, 0, math.Inf(-1)
			for k := a - lag; k < b-lag; k++ {
				if k >= 0 && k < n && !math.IsNaN(sg.vals[k]) {
					sum += sg.vals[k]
					cnt++
					peak = max(peak, sg.vals[k])
				}
			}
			if cnt == 0 {
				continue
			}
			x := sum / float64(cnt)
			z := (x - med) / scale
			// Prefer the coincident and leading lags on ties.
			if abs := math.Abs(z); abs > bestAbs+1e-9 || (abs > bestAbs-1e-9 && lag >= 0 && best.Lag < 0) {
				bestAbs = abs
				best = Deviation{Value: x, Peak: peak, Baseline: med, Z: z, Lag: int64(lag) * w, FromConstant: constant && x != med}
			}
		}
		if bestAbs < 0 {
			continue
		}
		best.P = math.Min(1, float64(lags)*math.Erfc(bestAbs/math.Sqrt2))
		best.Onset = start + int64(onset(sg.vals, a, b, med, scale, opts.MinZ))*w
		best.Series, best.Name, best.Short, best.Transform = sg.key, sg.name, sg.short, sg.transform
		best.Layer = LayerUnknown
		if e := sg.entry; e != nil {
			best.Layer, best.Area, best.Role, best.Unit, best.Bad, best.Mechanism = e.Layer, e.Area, e.Role, e.Unit, e.Bad, e.Mechanism
			if e.Near > 0 && best.Peak < e.Near {
				best.Role = RoleLoad // busier, not at its limit
			}
		}
		devs = append(devs, best)
	}
	devs = benjaminiHochberg(devs, opts.FDR)
	devs = slices.DeleteFunc(devs, func(d Deviation) bool { return math.Abs(d.Z) < opts.MinZ })
	slices.SortFunc(devs, func(x, y Deviation) int {
		return cmp.Or(cmp.Compare(roleRank(x.Role), roleRank(y.Role)), cmp.Compare(x.Onset, y.Onset), cmp.Compare(math.Abs(y.Z), math.Abs(x.Z)), strings.Compare(x.Series, y.Series))
	})
	return devs, tested
}

// onsetLookback bounds how far before a spike the onset search goes, in
// windows.
const onsetLookback = 10

// onset is the window where the signal's run of |z| ≥ minZ that reaches the
// spike [a, b) began: the first deviating window of the spike (or a lead
// window before it), extended back while the windows before deviate too.
func onset(vals []float64, a, b int, med, scale, minZ float64) int {
	dev := func(k int) bool {
		return k >= 0 && k < len(vals) && !math.IsNaN(vals[k]) && math.Abs(vals[k]-med)/scale >= minZ
	}
	k := -1
	for i := max(0, a-2); i < min(b+1, len(vals)); i++ {
		if dev(i) {
			k = i
			break
		}
	}
	if k < 0 {
		return a
	}
	for k > 0 && k > a-onsetLookback && dev(k-1) {
		k--
	}
	return k
}

func roleRank(r Role) int {
	switch r {
	case RoleMechanism:
		return 0
	case RoleLoad, RoleSymptom:
		return 1
	}
	return 2
}

// benjaminiHochberg keeps the deviations whose q-value (BH-adjusted p,
// stat.QValues) is at most fdr, with Q filled in, in order of p.
func benjaminiHochberg(devs []Deviation, fdr float64) []Deviation {
	if len(devs) == 0 {
		return nil
	}
	slices.SortFunc(devs, func(a, b Deviation) int { return cmp.Compare(a.P, b.P) })
	ps := make([]float64, len(devs))
	for i := range devs {
		ps[i] = devs[i].P
	}
	for i, q := range stat.QValues(ps, false) {
		devs[i].Q = q
	}
	var out []Deviation
	for _, d := range devs {
		if d.Q <= fdr {
			out = append(out, d)
		}
	}
	return out
}

// quantile is the q-quantile of v in any order (stat.Quantile, numpy's
// linear rule).
func quantile(v []float64, q float64) float64 {
	return stat.Quantile(slices.Sorted(slices.Values(v)), q)
}

func medianMAD(v []float64) (med, mad float64) {
	med = quantile(v, 0.5)
	dev := make([]float64, len(v))
	for i, x := range v {
		dev[i] = math.Abs(x - med)
	}
	return med, quantile(dev, 0.5)
}

func meanAbsDev(v []float64, med float64) float64 {
	s := 0.0
	for _, x := range v {
		s += math.Abs(x - med)
	}
	return s / float64(len(v))
}

// overlapping counts the series with a sample in [start, end] and bounds
// the samples' times.
func overlapping(t *ingest.Trace, start, end int64) (n int, from, to int64) {
	in := map[ingest.SeriesID]bool{}
	from, to = math.MaxInt64, math.MinInt64
	for i := range t.Samples {
		sm := &t.Samples[i]
		if sm.Series == 0 {
			continue
		}
		from, to = min(from, sm.Time), max(to, sm.Time)
		if sm.Time >= start && sm.Time <= end {
			in[sm.Series] = true
		}
	}
	if from > to {
		from, to = 0, 0
	}
	return len(in), from, to
}
