package causal

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	gonumstat "gonum.org/v1/gonum/stat"

	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/stat"
)

// obs is one request of the target in one metric's regression. It holds
// no pointer (its controls are in targetRows.ctrl), so that the garbage
// collector need not scan the rows.
type obs struct {
	lat        float64 // latency, ns
	y          float64 // log latency
	start, end int64   // exposure window
	ctrl       int     // where its controls start in targetRows.ctrl
}

// targetRows are the target's usable requests for one metric and the
// controls they all carry.
type targetRows struct {
	obs      []obs
	controls []Control
	ctrl     []float64 // the rows' control values, len(controls) a row
}

// controlsOf returns the control values of row o.
func (rows *targetRows) controlsOf(o *obs) []float64 {
	return rows.ctrl[o.ctrl : o.ctrl+len(rows.controls)]
}

// controlCoverage is the share of a target's requests that must carry a
// control for it to be used; requests without it are then left out. Below
// it the control is dropped, which the notes say.
const controlCoverage = 0.9

// rowScratch is the memory collectRows builds the rows in, which the
// targets of one analysis take in turn: what outlives a target (the rows'
// latencies a pair's share is read from) is copied out of it
// (requestRegression's lat). Its controls are a part of the regression's
// table (regressScratch.reserve), given back with it.
type rowScratch struct {
	obs  []obs
	ctrl []float64
	// oks says, beside ctrl's values, whether each is known.
	oks []bool
	// logs[n] is math.Log(n) for the token counts n seen so far (0: not
	// yet computed, or n = 1), which the length controls take: a count
	// recurs over the requests, and over the metrics of one request.
	logs []float64
}

// maxLogMemo bounds rowScratch.logs: longer lengths take math.Log each
// time (a table of 512 KiB at most).
const maxLogMemo = 1 << 16

// logOf is math.Log(float64(n)), computed once for each count below
// maxLogMemo.
func (sc *rowScratch) logOf(n int) float64 {
	if n <= 0 || n >= maxLogMemo {
		return math.Log(float64(n))
	}
	if n >= len(sc.logs) {
		grown := make([]float64, min(maxLogMemo, max(2*len(sc.logs), n+1, 1024)))
		copy(grown, sc.logs)
		sc.logs = grown
	}
	v := sc.logs[n]
	if v == 0 {
		v = math.Log(float64(n))
		sc.logs[n] = v
	}
	return v
}

// collectRows gathers the target's requests that have metric m and an
// exposure window, and decides which controls the regression can use. The
// rows are sc's memory (nil: new memory), valid until the next call with sc;
// their controls are a part of the regression's table
// (regressScratch.reserve), which also dies with regressScratch.free.
//
// The requests are read once, where the usable ones were read once for
// each control and once more for their latencies and windows, then twice:
// the pass keeps each usable request's latency and window as its row and
// every control's value and whether it is known, side by side in the
// rows' controls (a request's line of memory read once, the rest read in
// order from the table); a pass over those fills the rows' controls in
// place with the ones used and leaves out the rows without every one.
func collectRows(reqs []*Request, m Metric, controls []Control, sc *rowScratch) (targetRows, []string) {
	if sc == nil {
		sc = &rowScratch{}
	}
	var notes []string
	all := stat.Grow(sc.obs, len(reqs))[:0]
	nc := len(controls)
	vals := stat.Grow(sc.ctrl, len(reqs)*nc)
	oks := stat.Grow(sc.oks, len(reqs)*nc)
	// How many usable requests know each control, in an array on the
	// stack while the controls are few.
	var counts [8]int
	known := counts[:0]
	if nc > len(counts) {
		known = make([]int, 0, nc)
	}
	known = known[:nc]
	for _, r := range reqs {
		lat, ok := r.Latency(m)
		if !ok {
			continue
		}
		s, e, ok := r.Window(m)
		if !ok || lat <= 0 {
			continue
		}
		at := len(all) * nc
		all = append(all, obs{lat: float64(lat), start: s, end: e})
		rv, rk := vals[at:at+nc], oks[at:at+nc]
		for j, c := range controls {
			if rv[j], rk[j] = c.value(r, sc.logOf); rk[j] {
				known[j]++
			}
		}
	}
	var used []Control
	var usedAt [8]int
	at := usedAt[:0]
	for j, c := range controls {
		switch {
		case len(all) == 0:
		case float64(known[j]) >= controlCoverage*float64(len(all)):
			used = append(used, c)
			at = append(at, j)
		default:
			notes = append(notes, fmt.Sprintf("control %s known for only %d of %d requests; not used", c, known[j], len(all)))
		}
	}
	// The rows and their controls in two buffers, not one per request; a
	// row kept is moved to the end of those before it, never past its own
	// place, and its controls used likewise: the u-th of a kept row is
	// written at or before where its value was (the u-th used is the j-th
	// control, j ≥ u), never over one not yet read.
	rows := targetRows{controls: used, obs: all[:0], ctrl: vals}
	sc.obs, sc.ctrl, sc.oks = all, vals, oks
	dropped := 0
	for i := range all {
		o := all[i]
		ok := true
		for _, j := range at {
			ok = ok && oks[i*nc+j]
		}
		if !ok {
			dropped++
			continue
		}
		o.y, o.ctrl = math.Log(o.lat), len(rows.obs)*len(used)
		for u, j := range at {
			vals[o.ctrl+u] = vals[i*nc+j]
		}
		rows.obs = append(rows.obs, o)
	}
	if dropped > 0 {
		notes = append(notes, fmt.Sprintf("%d requests without every control were left out", dropped))
	}
	return rows, notes
}

// notEstimable returns a pair with every figure missing.
func notEstimable(source, target string, m Metric, reason string) *Pair {
	return &Pair{
		Source: source, Target: target, Metric: m, Reason: reason, Verdict: VerdictNotEstimable,
		EffectMs: nan, CILowMs: nan, CIHighMs: nan, EffectPct: nan, CILowPct: nan, CIHighPct: nan,
		Coef: nan, SE: nan, P: nan, Q: nan, Share: nan, ShareLow: nan, ShareHigh: nan,
		BaselineMs: nan, MeanExposure: nan, naiveSE: math.NaN(),
	}
}

// requestRegression is layer 1 for one target and metric: one OLS of the
// target's log latency on its exposure to every other tenant's load (each
// source's coefficient is that pair's effect), the controls and period
// effects, with standard errors clustered by time (CV3, else CR1). Statistics reference
// B.2; clustering by time because requests that overlap share the same GPU
// state, so their errors are correlated.
//
// sc, when not nil, lends the fit's working memory (the design, the
// response, the cluster labels, the copies order statistics are selected
// in), which the targets of one analysis take in turn, and the table what
// a pair keeps is taken from — its exposures and the latencies its share
// is read from (sc.kept) — which lives until sc.free: a pair's shareAt
// must be cleared before it (Analyze does, after judge).
func requestRegression(target string, m Metric, rows targetRows, load *Load, o Options, step float64, sc *regressScratch) []*Pair {
	if sc == nil {
		sc = &regressScratch{}
	}
	sources := sourcesOf(load, target)
	pairs := make([]*Pair, len(sources))
	n := len(rows.obs)
	fail := func(reason string) []*Pair {
		for i, k := range sources {
			pairs[i] = notEstimable(load.Tenants[k], target, m, reason)
			pairs[i].Requests = n
		}
		return pairs
	}
	if n == 0 {
		return fail(fmt.Sprintf("%s has no requests with %s and an exposure window", target, m))
	}

	// Exposure of each request to each source; sources whose exposure does
	// not vary cannot be estimated.
	xs := make([][]float64, len(sources))
	var cols [][]float64
	colOf := make([]int, len(sources))
	sc.one = stat.Grow(sc.one, n)
	for r := range sc.one {
		sc.one[r] = 1
	}
	cols = append(cols, sc.one)
	all := sc.kept.take(n * len(sources))
	for i := range sources {
		xs[i] = all[i*n : (i+1)*n : (i+1)*n]
	}
	spreads := make([]spread, len(sources))
	load.exposuresInto(sources, rows.obs, xs, spreads)
	for i, k := range sources {
		colOf[i] = -1
		x := xs[i]
		if reason := spreads[i].problem(load.Tenants[k], target, m, load.Kind); reason != "" {
			pairs[i] = notEstimable(load.Tenants[k], target, m, reason)
			pairs[i].Requests = n
			continue
		}
		colOf[i] = len(cols)
		cols = append(cols, x)
	}
	sc.ctrl = stat.Grow(sc.ctrl, n*len(rows.controls))
	for j := range rows.controls {
		col := sc.ctrl[j*n : (j+1)*n]
		for r := range rows.obs {
			col[r] = rows.ctrl[rows.obs[r].ctrl+j]
		}
		cols = append(cols, col)
	}
	if o.PeriodEffects > 0 {
		cols = append(cols, periodDummies(rows.obs, o.PeriodEffects)...)
	}

	width := o.ClusterWidth
	if width <= 0 {
		sc.lens = stat.Grow(sc.lens, n)
		width = autoClusterWidthInto(rows.obs, o.MinClusters, sc.lens)
	}
	sc.groups = stat.Grow(sc.groups, n)
	groups := sc.groups
	// The rows come mostly in time order: the set is consulted only where
	// the cluster changes from the row before.
	// A row's cluster is the row before's where its start falls in that
	// cluster's span too, without floorDiv's division.
	distinct := map[int]bool{}
	var lo, hi int64
	g := 0
	for r := range rows.obs {
		if start := rows.obs[r].start; r == 0 || start < lo || start >= hi {
			q := floorDiv(start, width)
			g, lo, hi = int(q), q*width, (q+1)*width
		}
		groups[r] = g
		if r == 0 || groups[r] != groups[r-1] {
			distinct[groups[r]] = true
		}
	}
	g = len(distinct)
	k := len(cols)
	switch {
	case n < o.MinRequests:
		return failOpen(pairs, sources, load, target, m, n, fmt.Sprintf("only %d requests of %s with %s (need %d)", n, target, m, o.MinRequests))
	case n < 10*k:
		return failOpen(pairs, sources, load, target, m, n, fmt.Sprintf("only %d requests of %s with %s for %d parameters (need 10 per parameter)", n, target, m, k))
	case g < o.MinClusters:
		return failOpen(pairs, sources, load, target, m, n, fmt.Sprintf("%s's requests fall in only %d time clusters of %s (need %d for cluster-robust errors)", target, g, fmtDuration(width), o.MinClusters))
	}

	sc.y = stat.Grow(sc.y, n)
	y := sc.y
	for r := range rows.obs {
		y[r] = rows.obs[r].y
	}
	fit, keep, err := fitColumnsReusing(cols, y, &sc.ols)
	if err != nil {
		return failOpen(pairs, sources, load, target, m, n, fmt.Sprintf("regression for %s %s failed: %v", target, m, err))
	}
	newIndex := make([]int, len(cols))
	next := 0
	for j := range cols {
		newIndex[j] = -1
		if keep[j] {
			newIndex[j] = next
			next++
		}
	}
	for i := range sources {
		if colOf[i] >= 0 && !keep[colOf[i]] {
			pairs[i] = notEstimable(load.Tenants[sources[i]], target, m,
				fmt.Sprintf("%s's exposure is collinear with the other regressors (the loads move in lockstep)", load.Tenants[sources[i]]))
			pairs[i].Requests = n
			colOf[i] = -1
		} else if colOf[i] >= 0 {
			colOf[i] = newIndex[colOf[i]]
		}
	}
	// CV3 by default; CV1 only when leaving a cluster out is singular.
	seKind := SEClusterJackknife
	cov, g, ok := fit.clusterJackknifeOrCR1(groups)
	if !ok {
		seKind = SEClusterCR1
	}
	naive := fit.Classical()
	seCl, seNaive := se(cov), se(naive)
	df := g - 1
	crit := tCritical(o.Alpha, df)
	baseline := 0.0
	for r := range rows.obs {
		baseline += rows.obs[r].lat
	}
	baselineMs := baseline / float64(n) / 1e6
	// The rows' latencies, which the pairs' shareAt read when calibrate
	// widens them: rows.obs is the next target's memory by then.
	var lat []float64

	for i, k := range sources {
		if pairs[i] != nil {
			continue
		}
		j := colOf[i]
		b, s := fit.beta[j], seCl[j]
		lo, hi := b-crit*s, b+crit*s
		x := xs[i]
		p := &Pair{
			Source: load.Tenants[k], Target: target, Metric: m, Estimable: true,
			Coef: Float(b), SE: Float(s), P: Float(tTwoSided(b/s, df)), Q: nan,
			EffectPct: Float(pct(b, step)), CILowPct: Float(pct(lo, step)), CIHighPct: Float(pct(hi, step)),
			EffectMs:   Float(baselineMs * pct(b, step) / 100),
			CILowMs:    Float(baselineMs * pct(lo, step) / 100),
			CIHighMs:   Float(baselineMs * pct(hi, step) / 100),
			BaselineMs: Float(baselineMs), MeanExposure: Float(gonumstat.Mean(x, nil)),
			Requests: n, Clusters: g, ClusterNs: width, SEKind: seKind, naiveSE: seNaive[j],
			Calibration: 1, df: df, step: step,
		}
		sc.quiet = stat.Grow(sc.quiet, n)
		base := quietLevelIn(x, sc.quiet)
		if lat == nil {
			lat = sc.kept.take(n)
			for r := range rows.obs {
				lat[r] = rows.obs[r].lat
			}
		}
		p.shareAt = func(beta float64) float64 { return share(lat, x, base, beta) }
		sh, a, c := shares3(rows.obs, x, base, b, lo, hi)
		p.Share, p.ShareLow, p.ShareHigh = Float(sh), Float(math.Min(a, c)), Float(math.Max(a, c))
		pairs[i] = p
	}
	return pairs
}

// sourcesOf lists the tenants (indexes in load.Tenants) whose load the
// target's regression estimates an effect of: never the target itself, nor
// a shared source that serves it.
func sourcesOf(load *Load, target string) []int {
	var sources []int
	for k, name := range load.Tenants {
		if name != target && !slices.Contains(load.members(k), target) {
			sources = append(sources, k)
		}
	}
	return sources
}

// regressScratch is the working memory requestRegression lends from one
// target to the next (see there), and newLagInput's durations.
//
// The columns of a float a row (floats) and what outlives a target until
// judge (kept) are spill tables (internal/spill; ordinary slices when
// spilling is off), given back by free: on the 100 MiB OTLP dump of
// docs/otlp.md, with attribution's token sums (bucketSums) spilled too,
// the peak live heap fell from 62 MB to 35 MB, which the collector had
// marked over and over while the heap stood at its ceiling under the
// memory budget (docs/design.md, "Spilling"). The design and the fit's
// scaled copy and residuals (ols) stay on the heap: the QR and the
// clustered errors read them again and again, and spilled, the governor
// took their pages out under the fit, which faulted them in again (on
// that dump 72-111 k minor faults a run against 50-59 k, perf stat), for
// no saving of CPU.
type regressScratch struct {
	ols                            olsScratch
	one, ctrl, y, quiet, durations []float64
	groups                         []int
	lens                           []int64
	// floats is the one table one, y, quiet, durations and ctrl are parts
	// of after reserve, and the rows' controls (rowScratch.ctrl): a table
	// of 4 MB or more spills (spill.MinBytes) where each column alone
	// would stay on the heap.
	floats []float64
	// kept holds what outlives a target until judge: the pairs'
	// exposures and the rows' latencies, which shareAt reads.
	kept keptTable
	// lag is the lag models' fits' memory (lagInput.fits).
	lag lagScratch
}

// reserve sizes the buffers for the largest target at once, n rows and k
// columns at most (controls of them the target's controls), rather than
// anew each time a target has more rows than those before; and rsc's, the
// rows collectRows builds for it.
func (sc *regressScratch) reserve(n, k, controls int, rsc *rowScratch) {
	sc.ols.growDesign(n * k)
	spill.Free(sc.floats)
	// Each part starts 16 bytes aligned (alignedFloats).
	stride := alignedFloats(n)
	sc.floats = spill.Make[float64](stride * (4 + 2*controls))
	part := func(i, width int) []float64 { return sc.floats[i*stride : i*stride+width*n : i*stride+width*n] }
	sc.one, sc.y, sc.quiet, sc.durations, sc.ctrl = part(0, 1), part(1, 1), part(2, 1), part(3, 1), part(4, controls)
	sc.groups, sc.lens = stat.Grow(sc.groups, n), stat.Grow(sc.lens, n)
	rsc.obs, rsc.ctrl, rsc.oks = stat.Grow(rsc.obs, n), part(4+controls, controls), stat.Grow(rsc.oks, n*controls)
}

// free gives back the spill tables (spill.Free): nothing may read what a
// fit with sc returned, nor a pair's shareAt, afterwards. The buffers a
// target outgrew were made on the heap (stat.Grow) and are left to the
// collector.
func (sc *regressScratch) free() {
	sc.ols.free()
	spill.Free(sc.floats)
	sc.kept.free()
	*sc = regressScratch{}
}

// keptTable is one table that the targets' exposures and latencies are
// taken from in turn (take), sized for all of them at once so that they
// are one spill table rather than a slice on the heap for each target
// (docs/design.md, "Spilling").
type keptTable struct {
	buf  []float64
	used int
}

// newKeptTable is a table of n floats (spill.Make).
func newKeptTable(n int) keptTable { return keptTable{buf: spill.Make[float64](n)} }

// keptFloats is what one target's regression for one metric takes from
// the kept table at most, with rows rows (some of its requests) and
// sources other tenants: an exposure a source a row and a latency a row
// (requestRegression), and a float each for the exposures and the
// latencies to start aligned (take). A table sized by less gives the rest
// from the heap.
func keptFloats(rows, sources int) int { return rows*(sources+1) + 2 }

// take returns the next n floats of the table, or new memory when it
// does not hold them (a table of none: the callers that lend no scratch).
// Their contents are zeros or what take gave before: the callers write
// them whole.
func (k *keptTable) take(n int) []float64 {
	at := alignedFloats(k.used)
	if at+n > len(k.buf) {
		return make([]float64, n)
	}
	s := k.buf[at : at+n : at+n]
	k.used = at + n
	return s
}

// alignedFloats rounds n floats up to a multiple of 16 bytes. A table's
// parts start there, 16 bytes aligned like the table (a spill file's
// mapping, or make's memory) and like a slice allocated on its own: on
// amd64 gonum's sum (internal/asm/f64 Sum, under floats.Sum and stat.Mean)
// adds the first element alone when the slice is not so aligned and the
// rest in pairs, so the same values at an odd offset sum to a different
// last digit (a pair's mean exposure, under --memory-limit 90MB on
// bench/scale.sh's run-60s-n1).
func alignedFloats(n int) int { return n + n%2 }

// free gives back the table (spill.Free): nothing taken from it may be
// read afterwards.
func (k *keptTable) free() {
	spill.Free(k.buf)
	*k = keptTable{}
}

// maxClusterWidth is the cluster width of long runs (validated in the
// simulator, docs/tenants.md).
const maxClusterWidth int64 = 20e9

// autoClusterWidth adapts the time clusters to the run: 20 s when the
// target's requests span at least 1.2·minClusters·20 s, else the span over
// 1.2·minClusters to the nearest second (about 12 clusters), but never
// under 1 s nor under the 90th percentile of the target's exposure windows
// (a cluster shorter than the requests it holds would split their shared
// shocks). Fewer, wider clusters, with t on their count − 1 degrees of
// freedom, cover better on short runs: in the simulator 60 s runs were
// covered in 91.2% of 1,000 seeds with the span over 2·minClusters (3 s),
// 93.3% with 5 s and 94.3% with 6 s, which left 2% of runs with too few
// clusters (docs/tenants.md).
func autoClusterWidth(rows []obs, minClusters int) int64 {
	return autoClusterWidthInto(rows, minClusters, make([]int64, len(rows)))
}

// autoClusterWidthInto is autoClusterWidth selecting in lens, len(rows)
// long, which it overwrites.
func autoClusterWidthInto(rows []obs, minClusters int, lens []int64) int64 {
	if len(rows) == 0 {
		return maxClusterWidth
	}
	lo, hi := rows[0].start, rows[0].start
	for i := range rows {
		lo, hi = min(lo, rows[i].start), max(hi, rows[i].start)
		lens[i] = rows[i].end - rows[i].start
	}
	p90 := stat.Select(lens, (len(lens)*9)/10) // the sorted lens' element
	w := 5 * (hi - lo) / int64(6*max(1, minClusters))
	w = (w + 5e8) / 1e9 * 1e9
	w = min(w, maxClusterWidth)
	floor := max(int64(1e9), (p90+1e9-1)/1e9*1e9)
	return max(w, min(floor, maxClusterWidth))
}

// failOpen marks every pair not yet decided as not estimable for reason.
func failOpen(pairs []*Pair, sources []int, load *Load, target string, m Metric, n int, reason string) []*Pair {
	for i, k := range sources {
		if pairs[i] == nil {
			pairs[i] = notEstimable(load.Tenants[k], target, m, reason)
			pairs[i].Requests = n
		}
	}
	return pairs
}

// variationProblem says why a source's exposure cannot carry a coefficient,
// or "" when it can.
func variationProblem(x []float64, source, target string, m Metric, kind LoadKind) string {
	return spreadOf(x).problem(source, target, m, kind)
}

// spread is what variationProblem reads of a sample: its least and
// greatest values by plain comparisons in the sample's order, and whether
// it holds a NaN. Plain comparisons rather than math.Min and math.Max,
// whose NaN and signed-zero handling made this a tenth of the regression's
// time: a NaN (which made both bounds NaN, and neither case of problem
// true) gives "", and the sign of a zero bound changes neither case.
type spread struct {
	lo, hi float64
	nan    bool
}

func newSpread() spread { return spread{lo: math.Inf(1), hi: math.Inf(-1)} }

// add takes v, the sample's next value, into s.
func (s *spread) add(v float64) {
	if v != v {
		s.nan = true
	}
	if v < s.lo {
		s.lo = v
	}
	if v > s.hi {
		s.hi = v
	}
}

// spreadOf is the spread of x.
func spreadOf(x []float64) spread {
	s := newSpread()
	for _, v := range x {
		s.add(v)
	}
	return s
}

// problem is variationProblem's answer for a sample of spread s.
func (s spread) problem(source, target string, m Metric, kind LoadKind) string {
	if s.nan {
		return ""
	}
	switch {
	case s.hi <= 0:
		return fmt.Sprintf("%s had no %s load during %s's %s windows", source, kind, target, m)
	case s.hi-s.lo <= 1e-9*math.Max(1, math.Abs(s.hi)):
		return fmt.Sprintf("%s's %s load did not vary during %s's %s windows", source, kind, target, m)
	}
	return ""
}

// pct is the percent change of latency for a change of step in load under
// the log-linear model: 100·(exp(β·step) − 1).
func pct(beta, step float64) float64 { return 100 * math.Expm1(beta*step) }

// share is the fraction of the target's total latency attributable to the
// source's load above its quiet level base, Σ y_i (1 − exp(−β(x_i − base)))
// / Σ y_i (statistics reference B.2), y_i the latencies lat.
func share(lat, x []float64, base, beta float64) float64 {
	num, den := 0.0, 0.0
	for i := range lat {
		num += float64(lat[i] * -math.Expm1(-beta*(x[i]-base)))
		den += lat[i]
	}
	return num / den
}

// shares3 is share at three coefficients in one pass over the rows: each
// sum takes the same terms in the same order as share's, so the same value
// (expm1x3 is math.Expm1's, three at a time). Here and in share each term
// is rounded before it is added (float64: no fused multiply-add), so that
// the two agree wherever the compiler would fuse one and not the other.
func shares3(rows []obs, x []float64, base, b1, b2, b3 float64) (s1, s2, s3 float64) {
	var n1, n2, n3, den float64
	x = x[:len(rows)]
	// Two rows a step (expm1x6), each sum taking the first row's term and
	// then the second's.
	i := 0
	for ; i+1 < len(rows); i += 2 {
		lat, d := rows[i].lat, x[i]-base
		latB, dB := rows[i+1].lat, x[i+1]-base
		e1, e2, e3, f1, f2, f3 := expm1x6(-b1*d, -b2*d, -b3*d, -b1*dB, -b2*dB, -b3*dB)
		n1 += float64(lat * -e1)
		n2 += float64(lat * -e2)
		n3 += float64(lat * -e3)
		den += lat
		n1 += float64(latB * -f1)
		n2 += float64(latB * -f2)
		n3 += float64(latB * -f3)
		den += latB
	}
	if i < len(rows) {
		lat, d := rows[i].lat, x[i]-base
		e1, e2, e3 := expm1x3(-b1*d, -b2*d, -b3*d)
		n1 += float64(lat * -e1)
		n2 += float64(lat * -e2)
		n3 += float64(lat * -e3)
		den += lat
	}
	return n1 / den, n2 / den, n3 / den
}

// quietLevel is the 5th percentile of the source's exposure: the baseline of
// share, rather than 0, so as not to extrapolate to a load never seen. It is
// gonum's LinInterp rule (Hyndman & Fan type 4), not stat.Quantile's numpy
// rule (type 7) that the reports print: a baseline, never shown, whose
// figures the causal goldens pin.
//
// Unweighted, that rule takes the first order statistic i (0-based) with
// i+1 ≥ 0.05·n and interpolates t·x₍ᵢ₋₁₎ + (1−t)·x₍ᵢ₎, t = i+1 − 0.05·n;
// both order statistics come by selection, the same values a sort gives,
// in the same formula. A sample with NaN (gonum's answer is NaN) or a
// negative zero (which a sort and a selection may place on either side of
// a +0) is sorted and handed to gonum, as before.
func quietLevel(x []float64) float64 {
	return quietLevelIn(x, make([]float64, len(x)))
}

// quietLevelIn is quietLevel selecting in buf, at least len(x) long, which
// it overwrites.
func quietLevelIn(x, buf []float64) float64 {
	if stat.SortDecides(x) {
		sorted := buf[:len(x)]
		copy(sorted, x)
		slices.Sort(sorted)
		return gonumstat.Quantile(0.05, gonumstat.LinInterp, sorted, nil)
	}
	fidx := 0.05 * float64(len(x))
	i := max(0, int(math.Ceil(fidx))-1)
	xi, prev := orderStats(x, buf, i)
	if i == 0 {
		return xi
	}
	t := float64(i+1) - fidx
	return t*prev + (1-t)*xi
}

// orderStats returns x₍ᵢ₎ and, for i > 0, x₍ᵢ₋₁₎ (0-based order
// statistics of x, which holds neither NaN nor a negative zero), selecting
// in buf, at least len(x) long, which it overwrites. A large sample takes
// bracketOrderStats's one pass where it can; otherwise x is copied and
// selected in whole.
func orderStats(x, buf []float64, i int) (xi, prev float64) {
	if len(x) >= 4*bracketSample {
		if xi, prev, ok := bracketOrderStats(x, buf, i); ok {
			return xi, prev
		}
	}
	sorted := buf[:len(x)]
	copy(sorted, x)
	xi = stat.Select(sorted, i)
	if i > 0 {
		// After the selection every element before i is ≤ x₍ᵢ₎: x₍ᵢ₋₁₎ is
		// their largest.
		prev = slices.Max(sorted[:i])
	}
	return xi, prev
}

// bracketSample is how many evenly spaced elements bracketOrderStats
// sorts to bracket the order statistic it is after.
const bracketSample = 1024

// bracketOrderStats is orderStats by a bracket drawn from a sample (the
// idea of Floyd and Rivest's SELECT, CACM 18:165, 1975): the sample's
// elements bracketSample·i/n ± 24 ranks apart, about 3.4 standard
// deviations of that rank for the 5th percentile (selected in the sample:
// sorting it was half of this function's time), bound x₍ᵢ₎, and one pass
// over x counts the elements below the bracket, keeps the largest of them
// and copies those inside it to buf, where x₍ᵢ₎ is selected among a few
// percent of x. Order statistics are values, the same however they are
// found, so x₍ᵢ₎ and x₍ᵢ₋₁₎ are orderStats's to the bit. ok is false when
// x₍ᵢ₎ falls outside the bracket (the caller selects in the whole copy):
// for the quiet level of the tenant regression's exposures, a copy of all
// of x, a selection in it and a pass for the maximum below i did about
// three passes' work where this does one.
func bracketOrderStats(x, buf []float64, i int) (xi, prev float64, ok bool) {
	const margin = 24
	n := len(x)
	sample := buf[:bracketSample]
	for j := range sample {
		sample[j] = x[j*n/bracketSample]
	}
	// The sample's two order statistics by selection, not a sort: the
	// second among the elements from the first's place on, which are
	// the sample's of those ranks.
	r := i * bracketSample / n
	a, b := max(0, r-margin), min(bracketSample-1, r+margin)
	lo := stat.Select(sample, a)
	hi := stat.Select(sample[a:], b-a)
	below, in := 0, 0
	maxBelow := math.Inf(-1)
	for _, v := range x {
		switch {
		case v < lo:
			below++
			maxBelow = max(maxBelow, v)
		case v <= hi:
			buf[in] = v
			in++
		}
	}
	if i < below || i >= below+in {
		return 0, 0, false
	}
	k := i - below
	xi = stat.Select(buf[:in], k)
	switch {
	case i == 0:
	case k == 0:
		prev = maxBelow // the i elements below the bracket are the i smallest
	default:
		prev = slices.Max(buf[:k])
	}
	return xi, prev, true
}

// periodDummies returns one indicator column per period after the first
// that holds requests (the first is the baseline).
func periodDummies(rows []obs, width int64) [][]float64 {
	if len(rows) == 0 {
		return nil
	}
	t0 := rows[0].start
	for i := range rows {
		t0 = min(t0, rows[i].start)
	}
	period := make([]int, len(rows))
	present := map[int]bool{}
	for i := range rows {
		period[i] = int((rows[i].start - t0) / width)
		present[period[i]] = true
	}
	ids := make([]int, 0, len(present))
	for p := range present {
		ids = append(ids, p)
	}
	slices.Sort(ids)
	var out [][]float64
	for _, p := range ids[1:] {
		d := make([]float64, len(rows))
		for i := range rows {
			if period[i] == p {
				d[i] = 1
			}
		}
		out = append(out, d)
	}
	return out
}

func constant(n int) []float64 {
	c := make([]float64, n)
	for i := range c {
		c[i] = 1
	}
	return c
}

// columnsInto assembles a design matrix from columns, in buf's memory
// where it is large enough (the matrix then shares it). It writes the
// matrix a row at a time, reading the columns side by side: a column at a
// time wrote every cache line of the matrix once a column.
func columnsInto(cols [][]float64, buf []float64) *mat.Dense {
	n, k := len(cols[0]), len(cols)
	for _, c := range cols {
		if len(c) != n {
			panic(mat.ErrColLength)
		}
	}
	data := stat.Grow(buf, n*k)
	for i := range n {
		row := data[i*k:][:len(cols)]
		for j, c := range cols {
			row[j] = c[i]
		}
	}
	return mat.NewDense(n, k, data)
}

// fitColumnsReusing fits y on the columns, leaving out those that add no
// direction to the earlier ones; keep says which were used. The full design
// is tried first, so the Gram–Schmidt screen runs only when the QR reports
// collinearity. It builds its design and scaled copy in sc's buffers (nil:
// new ones): the fit's x is then sc's memory, valid until the next fit with
// sc.
func fitColumnsReusing(cols [][]float64, y []float64, sc *olsScratch) (*olsFit, []bool, error) {
	if sc == nil {
		sc = &olsScratch{}
	}
	sc.growDesign(len(cols) * len(cols[0]))
	columnsInto(cols, sc.design)
	return fitDesignColumns(sc.design, cols, len(cols), y, sc)
}

// fitRowMajor is fitColumnsReusing of a design already laid out in
// sc.design, row-major with k columns (the kernel fit writes its
// residualized columns there directly). The columns are taken apart only
// when the QR reports collinearity.
func fitRowMajor(design []float64, k int, y []float64, sc *olsScratch) (*olsFit, []bool, error) {
	return fitDesignColumns(design, nil, k, y, sc)
}

// fitDesignColumns is fitRowMajor of a design whose columns are also cols (nil:
// taken from the design when needed), from which stat.FitOLSColumns makes
// its scaled copy.
func fitDesignColumns(design []float64, cols [][]float64, k int, y []float64, sc *olsScratch) (*olsFit, []bool, error) {
	n := len(y)
	keep := make([]bool, k)
	for j := range keep {
		keep[j] = true
	}
	x := mat.NewDense(n, k, design[:n*k])
	var fit *stat.OLS
	var err error
	if cols != nil {
		fit, err = stat.FitOLSColumns(x, cols, y, &sc.fit)
	} else {
		fit, err = stat.FitOLS(x, y, &sc.fit)
	}
	if err != nil && errors.Is(err, stat.ErrCollinear) {
		cols := make([][]float64, k)
		for j := range cols {
			cols[j] = make([]float64, n)
			for i := range cols[j] {
				cols[j][i] = design[i*k+j]
			}
		}
		keep = independent(cols, 1e-8)
		kept := pick(cols, keep)
		fit, err = stat.FitOLSColumns(columnsInto(kept, sc.design), kept, y, &sc.fit)
	}
	if err != nil {
		return nil, keep, err
	}
	return newOLSFit(fit), keep, nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += float64(a[i] * b[i])
	}
	return s
}

// independent reports for each column whether it adds a direction that the
// earlier kept columns do not span: its residual after projection on them
// (modified Gram–Schmidt, twice for stability) keeps more than tol of its
// norm. Dropping the others keeps the fit identified and names what could
// not be separated.
func independent(cols [][]float64, tol float64) []bool {
	_, keep := gramSchmidt(cols, tol)
	return keep
}

// gramSchmidt returns an orthonormal basis of the columns' span and, per
// column, whether it added a direction (see independent).
func gramSchmidt(cols [][]float64, tol float64) (basis [][]float64, keep []bool) {
	keep = make([]bool, len(cols))
	for j, c := range cols {
		n := len(basis)
		basis = gramSchmidtStep(basis, slices.Clone(c), tol)
		keep[j] = len(basis) > n
	}
	return basis, keep
}

// gramSchmidtStep orthogonalizes v in place against the orthonormal basis
// (twice, for stability) and returns the basis with v, normalized, appended
// when more than tol of its norm is left; else the basis as it was.
func gramSchmidtStep(basis [][]float64, v []float64, tol float64) [][]float64 {
	norm := math.Sqrt(dot(v, v))
	if norm == 0 || math.IsNaN(norm) || math.IsInf(norm, 0) {
		return basis
	}
	// Twice for each q in turn, v −= (v·q) q: residualize's operations
	// (kernel_design.go), in one pass over memory per q.
	residualize(v, basis)
	r := math.Sqrt(dot(v, v))
	if r <= tol*norm {
		return basis
	}
	for i := range v {
		v[i] /= r
	}
	return append(basis, v)
}

// fmtDuration writes whole seconds as "10 s" and shorter widths in ms, for
// reasons.
func fmtDuration(ns int64) string {
	if ns%1e9 == 0 {
		return fmt.Sprintf("%d s", ns/1e9)
	}
	return fmt.Sprintf("%g ms", float64(ns)/1e6)
}
