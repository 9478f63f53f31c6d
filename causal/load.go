package causal

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
)

// LoadKind says what a tenant's load series measures.
type LoadKind uint8

// The load kinds, in the order of preference of the statistics reference
// (B.1): a tenant's own kernel busy time is exact and per process; NVML's
// per-process SM utilization is sampled (1/6–1 s) and saturates; tokens are a
// proxy that needs no GPU data at all.
const (
	// LoadGPUBusy: fraction of the bin during which at least one kernel of the
	// tenant ran (union of its kernels on all streams), 0–1.
	LoadGPUBusy LoadKind = iota
	// LoadSMUtil: NVML per-process SM utilization summed over the tenant's
	// processes, as a fraction (percent / 100).
	LoadSMUtil
	// LoadTokensInFlight: time-averaged number of tokens (prompt plus
	// completion) held by the tenant's requests in flight.
	LoadTokensInFlight
	// LoadPrefillTokens: prompt tokens per second the tenant's requests put
	// through prefill, each prompt spread evenly over its TTFT.
	LoadPrefillTokens
)

var loadKindNames = [...]string{"gpu_busy", "sm_util", "tokens_in_flight", "prefill_tokens"}
var loadKindUnits = [...]string{"fraction", "fraction", "tokens", "tokens/s"}

func (k LoadKind) String() string {
	if int(k) < len(loadKindNames) {
		return loadKindNames[k]
	}
	return fmt.Sprintf("load(%d)", int(k))
}

// Unit is the unit of the load's values.
func (k LoadKind) Unit() string {
	if int(k) < len(loadKindUnits) {
		return loadKindUnits[k]
	}
	return ""
}

// ParseLoadKind reads a load kind's name as String writes it.
func ParseLoadKind(s string) (LoadKind, error) {
	for i, n := range loadKindNames {
		if n == s {
			return LoadKind(i), nil
		}
	}
	return 0, fmt.Errorf("unknown load %q (want gpu_busy, sm_util, tokens_in_flight or prefill_tokens)", s)
}

// MarshalText writes the kind's name.
func (k LoadKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name.
func (k *LoadKind) UnmarshalText(b []byte) error {
	v, err := ParseLoadKind(string(b))
	*k = v
	return err
}

// fraction reports whether the kind's values are fractions of capacity, for
// which "+10 percentage points" is the natural step.
func (k LoadKind) fraction() bool { return k == LoadGPUBusy || k == LoadSMUtil }

// DefaultBinWidth is the default load bin: 1 s, no shorter than NVML's sample
// period (1/6–1 s), so every bin holds at least one sample.
const DefaultBinWidth int64 = 1e9

// Grid partitions time into N bins of Width ns from Origin.
type Grid struct {
	Origin int64
	Width  int64
	N      int
}

// NewGrid returns the grid of bins of the given width that covers [start,
// end]. A width ≤ 0 means DefaultBinWidth.
func NewGrid(start, end, width int64) Grid {
	if width <= 0 {
		width = DefaultBinWidth
	}
	if end < start {
		end = start
	}
	origin := floorDiv(start, width) * width
	n := int(floorDiv(end-origin, width)) + 1
	return Grid{Origin: origin, Width: width, N: n}
}

// GridFor returns the grid that covers every request's life.
func GridFor(reqs []Request, width int64) Grid {
	if len(reqs) == 0 {
		return NewGrid(0, 0, width)
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range reqs {
		lo = min(lo, reqs[i].Arrival)
		hi = max(hi, reqs[i].End, reqs[i].Arrival)
	}
	return NewGrid(lo, hi, width)
}

// Bin returns the index of the bin holding t; it may be outside [0, N).
func (g Grid) Bin(t int64) int { return int(floorDiv(t-g.Origin, g.Width)) }

// Start is the start time of bin i.
func (g Grid) Start(i int) int64 { return g.Origin + int64(i)*g.Width }

// End is the end of the grid (exclusive).
func (g Grid) End() int64 { return g.Start(g.N) }

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// Load is every tenant's binned load on one grid: Values[k][i] is tenant
// Tenants[k]'s load in bin i, in Kind.Unit().
type Load struct {
	Kind    LoadKind
	Grid    Grid
	Tenants []string
	Values  [][]float64
	// Notes says what the builder had to leave out and why.
	Notes []string
	// Members[k], when set, are the tenants series k stands for (a shared
	// source's); nil or empty means Tenants[k] alone.
	Members [][]string
	// ObservedFrom and ObservedTo bound the time the load was measured in
	// (a GPU capture often covers a part of the run); zero both means the
	// whole grid. Outside it a load of 0 means "not seen", not "idle".
	ObservedFrom, ObservedTo int64

	// cum[k][i] is the integral of tenant k's load over bins [0, i), in
	// load·bins; it turns every exposure into two lookups.
	cum [][]float64
}

// newLoad returns an empty load for the given tenants, sorted by name.
func newLoad(kind LoadKind, grid Grid, tenants []string) *Load {
	names := slices.Clone(tenants)
	slices.Sort(names)
	names = slices.Compact(names)
	l := &Load{Kind: kind, Grid: grid, Tenants: names, Values: make([][]float64, len(names))}
	for k := range l.Values {
		l.Values[k] = make([]float64, grid.N)
	}
	return l
}

// Index returns the position of tenant in Tenants, or -1.
func (l *Load) Index(tenant string) int {
	i, ok := slices.BinarySearch(l.Tenants, tenant)
	if !ok {
		return -1
	}
	return i
}

// Series returns a tenant's binned load, or nil when the tenant has none.
func (l *Load) Series(tenant string) []float64 {
	if i := l.Index(tenant); i >= 0 {
		return l.Values[i]
	}
	return nil
}

// members are the tenants series k stands for.
func (l *Load) members(k int) []string {
	if k < len(l.Members) && len(l.Members[k]) > 0 {
		return l.Members[k]
	}
	return []string{l.Tenants[k]}
}

// setMembers records the shared sources' tenants from the map.
func (l *Load) setMembers(tm *TenantMap) {
	if tm == nil {
		return
	}
	l.Members = make([][]string, len(l.Tenants))
	for k, n := range l.Tenants {
		l.Members[k] = tm.Members(n)
	}
}

// finish builds the prefix integrals. Builders call it; code that fills
// Values by hand calls Prepare.
func (l *Load) finish() {
	l.cum = make([][]float64, len(l.Values))
	for k, v := range l.Values {
		c := make([]float64, len(v)+1)
		for i, x := range v {
			c[i+1] = c[i] + x
		}
		l.cum[k] = c
	}
}

// Prepare must be called after Values is filled or changed by hand, before
// Exposure. Builders return prepared loads.
func (l *Load) Prepare() { l.finish() }

// gridPlace is an instant placed on a grid, once for every tenant's load:
// the bin it falls in (-1 before the grid, N from its end on) and how far
// into that bin.
type gridPlace struct {
	bin  int
	frac float64
}

func (g Grid) place(t int64) gridPlace {
	if t <= g.Origin {
		return gridPlace{bin: -1}
	}
	if t >= g.End() {
		return gridPlace{bin: g.N}
	}
	i := g.Bin(t)
	return gridPlace{i, float64(t-g.Start(i)) / float64(g.Width)}
}

// cumAt is ∫ load dt for tenant k from the grid's origin to p, in
// load·bins. The load is taken as constant within a bin and zero outside
// the grid.
func (l *Load) cumAt(k int, p gridPlace) float64 {
	switch {
	case p.bin < 0:
		return 0
	case p.bin >= l.Grid.N:
		return l.cum[k][l.Grid.N]
	}
	return l.cum[k][p.bin] + float64(p.frac*l.Values[k][p.bin])
}

// window is an exposure window [start, end] placed on a grid, once for
// every tenant's load (Load.exposure): its ends, or, zero-length, the bin
// its instant falls in (Grid.Bin, in range or not).
type window struct {
	from, to      gridPlace
	point         bool
	bin           int
	width, length float64 // the grid's bin width and the window's length, in ns
}

func (g Grid) window(start, end int64) window {
	if end <= start {
		return window{point: true, bin: g.Bin(start)}
	}
	return window{from: g.place(start), to: g.place(end), width: float64(g.Width), length: float64(end - start)}
}

// placer is Grid.place remembering the bin it last placed a time in
// inside the grid, [lo, hi): a time there takes that bin without the
// division Grid.Bin takes.
type placer struct {
	g      Grid
	bin    int
	lo, hi int64
}

// place is p.g.place(t).
func (p *placer) place(t int64) gridPlace {
	g := p.g
	if t <= g.Origin {
		return gridPlace{bin: -1}
	}
	if t >= g.End() {
		return gridPlace{bin: g.N}
	}
	if t < p.lo || t >= p.hi {
		p.bin = g.Bin(t)
		p.lo, p.hi = g.Start(p.bin), g.Start(p.bin+1)
	}
	return gridPlace{p.bin, float64(t-p.lo) / float64(g.Width)}
}

// exposure is tenant k's load averaged over w (Exposure).
func (l *Load) exposure(k int, w window) float64 {
	if w.point {
		if w.bin < 0 || w.bin >= l.Grid.N {
			return 0
		}
		return l.Values[k][w.bin]
	}
	return (l.cumAt(k, w.to) - l.cumAt(k, w.from)) * w.width / w.length
}

// exposuresInto sets xs[j][r] to Exposure(ks[j], rows[r].start,
// rows[r].end), placing each window on the grid once for all the tenants
// rather than once per tenant (two integer and two float divisions a
// window: most of an exposure's work), and, where spreads is not nil,
// spreads[j] to xs[j]'s (spreadOf: its bounds, as it is written, where
// variationProblem read all of it again).
//
// A window with both ends inside the grid, most of them, takes cumAt's
// in-grid case for every tenant without deciding it again for each: the
// same two lookups, product and sum at each end, the same digits.
func (l *Load) exposuresInto(ks []int, rows []obs, xs [][]float64, spreads []spread) {
	if l.cum == nil {
		l.finish()
	}
	if spreads != nil {
		for j := range ks {
			spreads[j] = newSpread()
		}
	}
	// The rows come mostly in time order: each end is placed on the grid
	// by the bin the row before's was in where it falls in it too.
	from, to := placer{g: l.Grid}, placer{g: l.Grid}
	for r := range rows {
		var w window
		if start, end := rows[r].start, rows[r].end; end <= start {
			w = l.Grid.window(start, end)
		} else {
			w = window{from: from.place(start), to: to.place(end), width: float64(l.Grid.Width), length: float64(end - start)}
		}
		if w.point || w.from.bin < 0 || w.to.bin >= l.Grid.N {
			for j, k := range ks {
				xs[j][r] = l.exposure(k, w)
				if spreads != nil {
					spreads[j].add(xs[j][r])
				}
			}
			continue
		}
		from, ff, to, tf := w.from.bin, w.from.frac, w.to.bin, w.to.frac
		if spreads == nil {
			for j, k := range ks {
				cum, v := l.cum[k], l.Values[k]
				xs[j][r] = ((cum[to] + float64(tf*v[to])) - (cum[from] + float64(ff*v[from]))) * w.width / w.length
			}
			continue
		}
		for j, k := range ks {
			cum, v := l.cum[k], l.Values[k]
			x := ((cum[to] + float64(tf*v[to])) - (cum[from] + float64(ff*v[from]))) * w.width / w.length
			xs[j][r] = x
			spreads[j].add(x)
		}
	}
}

// Exposure is tenant k's load averaged over [start, end] (time-weighted), the
// x_{A,i} of the request-level regression; a zero-length window reads the bin
// it falls in.
func (l *Load) Exposure(k int, start, end int64) float64 {
	if l.cum == nil {
		l.finish()
	}
	return l.exposure(k, l.Grid.window(start, end))
}

// accumulator adds rates over time intervals into bin averages in O(1) per
// interval plus O(bins) at the end: the whole bins an interval covers go
// through a difference array, only its two partial end bins are touched.
type accumulator struct {
	grid Grid
	vals []float64 // partial-bin contributions, already bin averages
	diff []float64 // difference array of whole-bin rates
}

func newAccumulator(g Grid) *accumulator {
	return &accumulator{grid: g, vals: make([]float64, g.N), diff: make([]float64, g.N+1)}
}

// add adds a constant rate over [t0, t1), clipped to the grid.
func (a *accumulator) add(t0, t1 int64, rate float64) {
	g := a.grid
	t0 = max(t0, g.Origin)
	t1 = min(t1, g.End())
	if t1 <= t0 || rate == 0 {
		return
	}
	b0, b1 := g.Bin(t0), g.Bin(t1-1)
	w := float64(g.Width)
	if b0 == b1 {
		a.vals[b0] += rate * float64(t1-t0) / w
		return
	}
	a.vals[b0] += rate * float64(g.Start(b0+1)-t0) / w
	a.vals[b1] += rate * float64(t1-g.Start(b1)) / w
	if b0+1 < b1 {
		a.diff[b0+1] += rate
		a.diff[b1] -= rate
	}
}

// into writes the bin averages into dst.
func (a *accumulator) into(dst []float64) {
	run := 0.0
	for i := range dst {
		run += a.diff[i]
		dst[i] = a.vals[i] + run
	}
}

// BusyLoad builds LoadGPUBusy: for each tenant and bin, the fraction of the
// bin during which at least one of the tenant's kernels ran. Kernels of one
// tenant on several streams or processes are merged into their union first,
// so the fraction never exceeds 1. Kernels of processes the map does not name
// are left out, and a note says how many. Sort and sweep: O(n log n) when ops
// are unsorted, O(n) when sorted by start as Trace.Validate leaves them.
func BusyLoad(ops []ingest.GPUOp, tenants *TenantMap, grid Grid) *Load {
	l := newLoad(LoadGPUBusy, grid, tenants.Tenants())
	accs := make([]*accumulator, len(l.Tenants))
	for k := range accs {
		accs[k] = newAccumulator(grid)
	}
	byPid := map[uint32]int{}
	for pid, name := range tenants.ByPid {
		byPid[pid] = l.Index(name)
	}
	type open struct {
		start, end int64
		ok         bool
	}
	cur := make([]open, len(l.Tenants))
	unmapped, unmappedPids := 0, map[uint32]bool{}
	lastPid, lastK, lastOK, looked := uint32(0), 0, false, false
	visit := func(op *ingest.GPUOp) {
		if op.Kind != ingest.OpKernel {
			return
		}
		// Consecutive kernels mostly come from one process: skip the map.
		if !looked || op.Pid != lastPid {
			lastPid, looked = op.Pid, true
			lastK, lastOK = byPid[op.Pid]
		}
		if !lastOK {
			unmapped++
			unmappedPids[op.Pid] = true
			return
		}
		c := &cur[lastK]
		switch {
		case !c.ok:
			*c = open{op.Start, op.End, true}
		case op.Start <= c.end:
			c.end = max(c.end, op.End)
		default:
			accs[lastK].add(c.start, c.end, 1)
			*c = open{op.Start, op.End, true}
		}
	}
	// The passes over the ops in order drop the pages they have passed
	// when the process is over its memory budget (spill.Behind).
	behind := spill.DropBehind(ops)
	for i := range ops {
		behind.Passed(i)
		if ops[i].Kind != ingest.OpKernel || ops[i].End <= ops[i].Start {
			continue
		}
		if l.ObservedTo == 0 || ops[i].Start < l.ObservedFrom {
			l.ObservedFrom = ops[i].Start
		}
		l.ObservedTo = max(l.ObservedTo, ops[i].End)
	}
	if kernelsSorted(ops) {
		behind = spill.DropBehind(ops)
		for i := range ops {
			behind.Passed(i)
			visit(&ops[i])
		}
	} else {
		order := kernelsByStart(ops)
		for _, i := range order {
			visit(&ops[i])
		}
		spill.Free(order)
	}
	for k := range cur {
		if cur[k].ok {
			accs[k].add(cur[k].start, cur[k].end, 1)
		}
		accs[k].into(l.Values[k])
	}
	if unmapped > 0 {
		l.Notes = append(l.Notes, fmt.Sprintf("%d kernels of %d processes with no tenant were left out of the GPU busy load", unmapped, len(unmappedPids)))
	}
	l.setMembers(tenants)
	l.finish()
	return l
}

// kernelsSorted reports whether the kernels among ops are in start order.
func kernelsSorted(ops []ingest.GPUOp) bool {
	last := int64(math.MinInt64)
	behind := spill.DropBehind(ops)
	for i := range ops {
		behind.Passed(i)
		if ops[i].Kind != ingest.OpKernel {
			continue
		}
		if ops[i].Start < last {
			return false
		}
		last = ops[i].Start
	}
	return true
}

// kernelsByStart returns the indexes of the kernels among ops in start order
// (ties in input order). It sorts compact (start, index) keys rather than
// indexes into 48-byte ops, which keeps the sort in cache. The keys (16
// bytes a kernel) and the indexes (8: an index into ops is an int, as the
// trace does not bound their number) are tables (spill.Slice): on a long
// run they are the largest arrays the tenant analysis holds, in spill files
// while spilling is on. The keys are given back here, the indexes are the
// caller's to give back (spill.Free) once read.
func kernelsByStart(ops []ingest.GPUOp) []int {
	type key struct {
		start int64
		i     int
	}
	// Two passes over the ops in order, each dropping the pages it has
	// passed when the process is over its memory budget (spill.Behind).
	n := 0
	behind := spill.DropBehind(ops)
	for i := range ops {
		behind.Passed(i)
		if ops[i].Kind == ingest.OpKernel {
			n++
		}
	}
	keys := spill.Slice[key](n)
	behind = spill.DropBehind(ops)
	for i := range ops {
		behind.Passed(i)
		if ops[i].Kind == ingest.OpKernel {
			keys = append(keys, key{ops[i].Start, i})
		}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.start, b.start); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	})
	order := spill.Make[int](n)
	for j, k := range keys {
		order[j] = k.i
	}
	spill.Free(keys)
	return order
}

// DefaultSMUtilMetrics are the sample metric names SMUtilLoad looks for:
// the per-process NVML series as llmprof record writes it (one name, in
// ingest, for the writer and the reader).
var DefaultSMUtilMetrics = []string{ingest.MetricNVMLProcessSMUtil}

// SMUtilLoad builds LoadSMUtil from per-process NVML samples
// (nvmlDeviceGetProcessUtilization: SM percent over the last sample period).
// Each sample covers the period since the same process's previous sample,
// capped at twice that process's median period: NVML returns a process only
// when it had non-zero utilization, so a longer gap means it was idle. A
// process's samples on different GPUs are separate series. Values are summed
// over a tenant's processes and GPUs and divided by 100 (GPUs' worth of SMs). metric names the
// sample series; "" tries DefaultSMUtilMetrics.
func SMUtilLoad(t *ingest.Trace, metric string, tenants *TenantMap, grid Grid) (*Load, error) {
	var id ingest.StrID
	found := false
	names := DefaultSMUtilMetrics
	if metric != "" {
		names = []string{metric}
	}
	for _, n := range names {
		if v, ok := t.Strings.Lookup(n); ok {
			id, found = v, true
			break
		}
	}
	if !found {
		return nil, fmt.Errorf("no per-process SM utilization samples (looked for metric %q)", names)
	}
	l := newLoad(LoadSMUtil, grid, tenants.Tenants())
	accs := make([]*accumulator, len(l.Tenants))
	for k := range accs {
		accs[k] = newAccumulator(grid)
	}
	// A process's samples are a series per GPU it runs on (a tensor-parallel
	// engine reports on each): periods are per (pid, device).
	type series struct {
		pid    uint32
		device int16
	}
	bySeries := map[series][]int{}
	unmapped := map[uint32]bool{}
	for i := range t.Samples {
		s := &t.Samples[i]
		if s.Metric != id || s.Pid == 0 || math.IsNaN(s.Value) {
			continue
		}
		if _, ok := tenants.ByPid[s.Pid]; !ok {
			unmapped[s.Pid] = true
			continue
		}
		key := series{s.Pid, s.Device}
		bySeries[key] = append(bySeries[key], i)
	}
	keys := make([]series, 0, len(bySeries))
	for k := range bySeries {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b series) int {
		if c := cmp.Compare(a.pid, b.pid); c != 0 {
			return c
		}
		return cmp.Compare(a.device, b.device)
	})
	for _, key := range keys {
		idx := bySeries[key]
		sort.SliceStable(idx, func(a, b int) bool { return t.Samples[idx[a]].Time < t.Samples[idx[b]].Time })
		period := medianGap(t.Samples, idx)
		k := l.Index(tenants.ByPid[key.pid])
		prev := int64(math.MinInt64)
		for _, i := range idx {
			s := &t.Samples[i]
			from := s.Time - period
			if prev != math.MinInt64 && s.Time-prev <= 2*period {
				from = prev
			}
			prev = s.Time
			accs[k].add(from, s.Time, s.Value/100)
		}
	}
	for k := range accs {
		accs[k].into(l.Values[k])
	}
	if len(unmapped) > 0 {
		l.Notes = append(l.Notes, fmt.Sprintf("SM utilization samples of %d processes with no tenant were left out", len(unmapped)))
	}
	l.setMembers(tenants)
	l.finish()
	return l, nil
}

// medianGap is the (lower) median spacing of the samples idx (sorted by time); one
// second when there are fewer than two.
func medianGap(samples []ingest.Sample, idx []int) int64 {
	if len(idx) < 2 {
		return 1e9
	}
	gaps := make([]int64, 0, len(idx)-1)
	for j := 1; j < len(idx); j++ {
		if g := samples[idx[j]].Time - samples[idx[j-1]].Time; g > 0 {
			gaps = append(gaps, g)
		}
	}
	if len(gaps) == 0 {
		return 1e9
	}
	slices.Sort(gaps)
	return gaps[(len(gaps)-1)/2]
}

// TokensInFlightLoad builds LoadTokensInFlight from the requests: each
// request holds its prompt plus completion tokens from arrival to end (the
// KV-cache footprint it reaches; an upper bound until its last token).
func TokensInFlightLoad(reqs []Request, grid Grid) *Load {
	return requestLoad(LoadTokensInFlight, reqs, grid, func(r *Request) (int64, int64, float64) {
		return r.Arrival, r.End, float64(r.InputTokens + r.OutputTokens)
	})
}

// PrefillTokensLoad builds LoadPrefillTokens from the requests: each prompt's
// tokens are spread evenly over [arrival, first token], in tokens per second;
// without a TTFT they count in the arrival's bin.
func PrefillTokensLoad(reqs []Request, grid Grid) *Load {
	return requestLoad(LoadPrefillTokens, reqs, grid, func(r *Request) (int64, int64, float64) {
		in := float64(r.InputTokens)
		if r.TTFT > 0 {
			return r.Arrival, r.Arrival + r.TTFT, in / (float64(r.TTFT) / 1e9)
		}
		b := grid.Bin(r.Arrival)
		return grid.Start(b), grid.Start(b + 1), in / (float64(grid.Width) / 1e9)
	})
}

// requestLoad adds one rate per request over an interval per request.
func requestLoad(kind LoadKind, reqs []Request, grid Grid, span func(*Request) (int64, int64, float64)) *Load {
	// Each request's tenant is looked up once, in the walk that finds
	// the names: of holds its number there, index that name's place in
	// the load (a search of the sorted names per request was half of this
	// function's time); the numbers (tenantSlots) only where the tenant
	// changes from the request before.
	names := make([]string, 0, 8)
	var number tenantSlots
	of := make([]int32, len(reqs))
	last, g := Tenant(0), int32(-1)
	for i := range reqs {
		if tn := reqs[i].Tenant; tn != last || g < 0 {
			var ok bool
			if g, ok = number.get(tn); !ok {
				g = int32(len(names))
				number.set(tn, g)
				names = append(names, tn.String())
			}
			last = tn
		}
		of[i] = g
	}
	l := newLoad(kind, grid, names)
	index := make([]int, len(names))
	for g, name := range names {
		index[g] = l.Index(name)
	}
	accs := make([]*accumulator, len(l.Tenants))
	for k := range accs {
		accs[k] = newAccumulator(grid)
	}
	for i := range reqs {
		t0, t1, rate := span(&reqs[i])
		if math.IsNaN(rate) || math.IsInf(rate, 0) {
			continue
		}
		accs[index[of[i]]].add(t0, t1, rate)
	}
	for k := range accs {
		accs[k].into(l.Values[k])
	}
	l.finish()
	return l
}

// LoadOptions configures BuildLoad.
type LoadOptions struct {
	// Kind is the load to build; nil picks the best available (see
	// BuildLoad).
	Kind *LoadKind
	// BinWidth of the grid; 0 means DefaultBinWidth.
	BinWidth int64
	// SMUtilMetric names the NVML per-process SM series; "" tries
	// DefaultSMUtilMetrics.
	SMUtilMetric string
}

// BuildLoad builds every tenant's load on a grid covering the requests. With
// no Kind it takes the first of gpu_busy, sm_util and tokens_in_flight that
// gives at least two tenants some load (the order of preference of the
// statistics reference, B.1: kernel busy time is exact, NVML samples are
// coarse, tokens need no GPU data), and a note on the load says which was
// taken and why the better ones were not.
func BuildLoad(t *ingest.Trace, reqs []Request, tenants *TenantMap, opts LoadOptions) (*Load, error) {
	grid := GridFor(reqs, opts.BinWidth)
	if opts.Kind != nil {
		switch *opts.Kind {
		case LoadGPUBusy:
			return BusyLoad(t.GPUOps, tenants, grid), nil
		case LoadSMUtil:
			return SMUtilLoad(t, opts.SMUtilMetric, tenants, grid)
		case LoadTokensInFlight:
			return TokensInFlightLoad(reqs, grid), nil
		case LoadPrefillTokens:
			return PrefillTokensLoad(reqs, grid), nil
		}
		return nil, fmt.Errorf("unknown load kind %d", *opts.Kind)
	}
	var why []string
	busy := BusyLoad(t.GPUOps, tenants, grid)
	if n := loaded(busy); n >= 2 {
		busy.Notes = append(busy.Notes, fmt.Sprintf("load: gpu_busy, from the kernels of %d tenants", n))
		return busy, nil
	} else {
		why = append(why, fmt.Sprintf("kernels of %d tenants", n))
	}
	if sm, err := SMUtilLoad(t, opts.SMUtilMetric, tenants, grid); err != nil {
		why = append(why, "no NVML per-process samples")
	} else if n := loaded(sm); n >= 2 {
		sm.Notes = append(sm.Notes, fmt.Sprintf("load: sm_util, from NVML per-process samples of %d tenants (%s)", n, why[0]))
		return sm, nil
	} else {
		why = append(why, fmt.Sprintf("NVML samples of %d tenants", n))
	}
	tok := TokensInFlightLoad(reqs, grid)
	tok.Notes = append(tok.Notes, fmt.Sprintf("load: tokens_in_flight, from the requests (no per-tenant GPU load: %s)", strings.Join(why, ", ")))
	return tok, nil
}

// loaded counts the tenants with any load.
func loaded(l *Load) int {
	n := 0
	for _, v := range l.Values {
		for _, x := range v {
			if x > 0 {
				n++
				break
			}
		}
	}
	return n
}
