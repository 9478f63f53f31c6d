package report

import (
	"cmp"
	"math"
	"slices"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/stat"
)

// HTMLViews are the series the HTML report draws beyond what the Report
// holds: distributions, time series and a GPU timeline. They are computed
// once here, from the attribution and the trace, so that the HTML renderer
// only maps values to coordinates. Sizes are bounded (a CDF has at most
// cdfPoints points, a time series timeBins bins) so that the page stays
// small whatever the run's length.
type HTMLViews struct {
	// CDFs has one entry per metric (TTFT, TPOT, E2E), each with curves per
	// tenant and per model.
	CDFs []MetricCDF
	// OverTime bins requests by arrival: TTFT and queue percentiles per bin.
	OverTime *TimeSeries
	// StageShares splits E2E into stages for all requests, then per tenant
	// and per model.
	StageShares []StageShare
	// TenantLoad counts arrivals per tenant per time bin (the tenant heat map
	// of activity); Tenants in TenantOrder order.
	TenantLoad *TenantLoad
	// GPU is the busy share per device per time bin (nil without GPU ops).
	GPU *GPUTimeline
}

// MetricCDF is one metric's distributions.
type MetricCDF struct {
	Metric   string
	ByTenant []Curve
	ByModel  []Curve
}

// Curve is an empirical CDF: X ascending (ms), P its cumulative share.
type Curve struct {
	Name string
	N    int
	X, P []float64
}

// TimeSeries is a binned time series over the run, from its first arrival.
type TimeSeries struct {
	BinMs float64
	// Per bin: requests arriving, and TTFT and queue p50 and upper
	// quantile (NaN when the bin holds too few values for it).
	Count               []int
	TTFTP50, TTFTHigh   []float64
	QueueP50, QueueHigh []float64
	// HighQ is the upper quantile drawn: 0.99 when the typical bin holds
	// the 100 values a p99 needs to differ from the maximum, else 0.9 (10
	// values); bins with fewer values than HighQ needs have none.
	HighQ float64
}

// quantileNeeds is how many values a q quantile needs before it is more
// than the largest of them: 1/(1−q), 100 for p99.
func quantileNeeds(q float64) int { return int(math.Round(1 / (1 - q))) }

// upperQuantile picks the upper quantile the over-time chart can draw: p99
// if the median bin holds enough requests for it, else p90.
func upperQuantile(counts []int) float64 {
	c := slices.Clone(counts)
	slices.Sort(c)
	if len(c) > 0 && c[len(c)/2] >= quantileNeeds(0.99) {
		return 0.99
	}
	return 0.9
}

// StageShare is one group's E2E split by stage.
type StageShare struct {
	Group    string // "all", "tenant", "model"
	Name     string
	Requests int
	TotalMs  float64
	// Shares follow attribution.StageNames().
	Shares [attribution.NumStages]float64
}

// TenantLoad is arrivals per tenant per bin.
type TenantLoad struct {
	BinMs   float64
	Tenants []string
	Counts  [][]int
}

// GPUTimeline is each device's busy share (union of its ops) per bin, on one
// time axis starting at StartNs.
type GPUTimeline struct {
	StartNs int64
	BinNs   int64
	Devices []DeviceBusy
}

// DeviceBusy is one device's row of the GPU timeline: the device is (Host,
// Device), as in the GPU section.
type DeviceBusy struct {
	Host   string
	Device int16
	Name   string
	Busy   []float64
}

const (
	cdfPoints   = 300
	timeBins    = 120
	gpuBins     = 240
	minBinCount = 10
)

// NewHTMLViews computes the series of the HTML report.
func NewHTMLViews(rep *Report, res *attribution.Result, t *ingest.Trace) *HTMLViews {
	v := &HTMLViews{}
	rows := RequestRows(res)
	if len(rows) > 0 {
		var tenants, models []string
		if rep.Requests != nil {
			tenants, models = rep.Requests.TenantOrder, rep.Requests.ModelOrder
		}
		for _, m := range []struct {
			name string
			get  func(*RequestRow) float64
		}{
			{"TTFT", func(r *RequestRow) float64 { return r.TTFT }},
			{"TPOT", func(r *RequestRow) float64 { return r.TPOT }},
			{"E2E", func(r *RequestRow) float64 { return r.E2E }},
		} {
			v.CDFs = append(v.CDFs, MetricCDF{
				Metric:   m.name,
				ByTenant: groupCurves(rows, tenants, func(r *RequestRow) string { return r.Tenant }, m.get),
				ByModel:  groupCurves(rows, models, func(r *RequestRow) string { return r.Model }, m.get),
			})
		}
		v.OverTime = overTime(rows)
		v.StageShares = stageShares(rows, tenants, models)
		v.TenantLoad = tenantLoad(rows, tenants, v.OverTime.BinMs)
	}
	if t != nil && rep.GPU != nil && len(rep.GPU.Devices) > 0 {
		v.GPU = gpuTimeline(t, rep.GPU)
	}
	return v
}

// groupCurves returns the CDF of all requests, then one per group when there
// are two groups or more.
func groupCurves(rows []RequestRow, order []string, key func(*RequestRow) string, metric func(*RequestRow) float64) []Curve {
	all := make([]float64, 0, len(rows))
	by := map[string][]float64{}
	for i := range rows {
		x := metric(&rows[i])
		if math.IsNaN(x) {
			continue
		}
		all = append(all, x)
		by[key(&rows[i])] = append(by[key(&rows[i])], x)
	}
	if len(all) == 0 {
		return nil
	}
	curves := []Curve{cdf("all", all)}
	if len(order) > 1 {
		for _, g := range order {
			if xs := by[g]; len(xs) > 0 {
				curves = append(curves, cdf(g, xs))
			}
		}
	}
	return curves
}

// cdf samples the empirical CDF of xs at no more than cdfPoints points: every
// value when there are few, evenly spaced quantiles (and the extremes)
// otherwise.
func cdf(name string, xs []float64) Curve {
	slices.Sort(xs)
	c := Curve{Name: name, N: len(xs)}
	n := len(xs)
	if n <= cdfPoints {
		for i, x := range xs {
			c.X = append(c.X, x)
			c.P = append(c.P, float64(i+1)/float64(n))
		}
		return c
	}
	for i := 0; i < cdfPoints; i++ {
		p := float64(i) / float64(cdfPoints-1)
		c.X = append(c.X, stat.Quantile(xs, p))
		c.P = append(c.P, p)
	}
	return c
}

// binsFor picks the bin count for n requests over a run: about minBinCount
// requests per bin, at most timeBins bins.
func binsFor(n int) int { return max(1, min(timeBins, n/minBinCount)) }

func overTime(rows []RequestRow) *TimeSeries {
	span := rows[len(rows)-1].OffsetMs
	bins := binsFor(len(rows))
	ts := &TimeSeries{BinMs: max(span/float64(bins), 1e-3)}
	if span == 0 {
		bins = 1
	}
	ttft := make([][]float64, bins)
	queue := make([][]float64, bins)
	ts.Count = make([]int, bins)
	for i := range rows {
		b := min(bins-1, int(rows[i].OffsetMs/ts.BinMs))
		ts.Count[b]++
		if x := rows[i].TTFT; !math.IsNaN(x) {
			ttft[b] = append(ttft[b], x)
		}
		if x := rows[i].Queue; !math.IsNaN(x) {
			queue[b] = append(queue[b], x)
		}
	}
	ts.HighQ = upperQuantile(ts.Count)
	high := func(xs []float64) float64 {
		if len(xs) < quantileNeeds(ts.HighQ) {
			return math.NaN()
		}
		return stat.Quantile(xs, ts.HighQ)
	}
	for b := range bins {
		slices.Sort(ttft[b])
		slices.Sort(queue[b])
		ts.TTFTP50 = append(ts.TTFTP50, stat.Quantile(ttft[b], 0.5))
		ts.TTFTHigh = append(ts.TTFTHigh, high(ttft[b]))
		ts.QueueP50 = append(ts.QueueP50, stat.Quantile(queue[b], 0.5))
		ts.QueueHigh = append(ts.QueueHigh, high(queue[b]))
	}
	return ts
}

func stageShares(rows []RequestRow, tenants, models []string) []StageShare {
	type acc struct {
		n   int
		sum [attribution.NumStages]float64
	}
	all := &acc{}
	byTenant, byModel := map[string]*acc{}, map[string]*acc{}
	add := func(m map[string]*acc, k string, r *RequestRow) {
		a := m[k]
		if a == nil {
			a = &acc{}
			m[k] = a
		}
		a.n++
		for s, v := range r.StagesMs {
			a.sum[s] += v
		}
	}
	for i := range rows {
		r := &rows[i]
		all.n++
		for s, v := range r.StagesMs {
			all.sum[s] += v
		}
		add(byTenant, r.Tenant, r)
		add(byModel, r.Model, r)
	}
	share := func(group, name string, a *acc) StageShare {
		s := StageShare{Group: group, Name: name, Requests: a.n}
		for _, v := range a.sum {
			s.TotalMs += v
		}
		if s.TotalMs > 0 {
			for i, v := range a.sum {
				s.Shares[i] = v / s.TotalMs
			}
		}
		return s
	}
	out := []StageShare{share("all", "all requests", all)}
	for _, g := range []struct {
		group string
		order []string
		m     map[string]*acc
	}{{"tenant", tenants, byTenant}, {"model", models, byModel}} {
		if len(g.order) < 2 {
			continue
		}
		for _, name := range g.order {
			if a := g.m[name]; a != nil {
				out = append(out, share(g.group, name, a))
			}
		}
	}
	return out
}

func tenantLoad(rows []RequestRow, tenants []string, binMs float64) *TenantLoad {
	if len(tenants) == 0 {
		return nil
	}
	bins := binsFor(len(rows))
	if rows[len(rows)-1].OffsetMs == 0 {
		bins = 1
	}
	tl := &TenantLoad{BinMs: binMs, Tenants: tenants, Counts: make([][]int, len(tenants))}
	idx := map[string]int{}
	for i, name := range tenants {
		idx[name] = i
		tl.Counts[i] = make([]int, bins)
	}
	for i := range rows {
		ti, ok := idx[rows[i].Tenant]
		if !ok {
			continue
		}
		tl.Counts[ti][min(bins-1, int(rows[i].OffsetMs/binMs))]++
	}
	return tl
}

// gpuTimeline bins each device's busy time: the union of its busy ops'
// intervals (ingest.GPUOp.Busy; overlapping ops on several streams count
// once), split across the bins they cover. Devices are the GPU section's,
// (host, device): device 0 of one host is not device 0 of another.
func gpuTimeline(t *ingest.Trace, gpu *attribution.GPU) *GPUTimeline {
	devices := gpu.Devices
	start, end := devices[0].StartNs, devices[0].EndNs
	for _, d := range devices[1:] {
		start, end = min(start, d.StartNs), max(end, d.EndNs)
	}
	if end <= start {
		return nil
	}
	g := &GPUTimeline{StartNs: start, BinNs: max(1, (end-start+gpuBins-1)/gpuBins)}
	type span struct{ s, e int64 }
	type devKey struct {
		host string
		dev  int16
	}
	byDev := map[devKey][]span{}
	for i := range t.GPUOps {
		op := &t.GPUOps[i]
		if op.Busy() && op.End > op.Start {
			k := devKey{gpu.DeviceHost(op.Source), op.Device}
			byDev[k] = append(byDev[k], span{op.Start, op.End})
		}
	}
	for _, d := range devices {
		row := DeviceBusy{Host: d.Host, Device: d.Device, Name: d.Name, Busy: make([]float64, gpuBins)}
		spans := byDev[devKey{d.Host, d.Device}]
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.s, b.s) })
		addBusy := func(s, e int64) {
			s, e = max(s, start), min(e, end)
			for s < e {
				b := (s - start) / g.BinNs
				binEnd := start + (b+1)*g.BinNs
				seg := min(e, binEnd) - s
				row.Busy[b] += float64(seg)
				s += seg
			}
		}
		var cur span
		for i, sp := range spans {
			switch {
			case i == 0:
				cur = sp
			case sp.s <= cur.e:
				cur.e = max(cur.e, sp.e)
			default:
				addBusy(cur.s, cur.e)
				cur = sp
			}
		}
		if len(spans) > 0 {
			addBusy(cur.s, cur.e)
		}
		for b := range row.Busy {
			row.Busy[b] /= float64(g.BinNs)
		}
		g.Devices = append(g.Devices, row)
	}
	return g
}
