package compare

import (
	"cmp"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Kernel-level comparison (docs/diff.md, "Kernels"): evidence that does not
// depend on the prompt mix. A kernel's duration is compared with the same
// kernel's — the same name and launch configuration (grid and block), and,
// where the trace has engine steps, the same step composition — on the
// other side, so that a different workload changes which kernels run how
// often but not how long one identity takes. Each identity's change is the
// Hodges–Lehmann shift of its log durations with Moses's rank interval;
// identities are pooled per kernel category (and per name pattern of a
// kernel:'RE' rule), the identity being the unit.

// prefixKernel and prefixKernelRE start the kernel metrics: "kernel.attention"
// (a category of attribution's taxonomy, by its key) and "kernel:'flash_fwd.*'"
// (a regular expression over kernel names).
const (
	prefixKernel   = "kernel."
	prefixKernelRE = "kernel:"
)

// KindKernel: a kernel metric, one pooled change of the kernels of a
// category or name pattern (compare/kernels.go). It is not a row of
// Families: its names are built from the kernel taxonomy and rules.
const KindKernel = KindBucket + 1

// MethodKernelPooled: each kernel identity's Hodges–Lehmann shift of log
// durations with Moses's interval, pooled over identities by a
// DerSimonian–Laird random-effects model with time-share weights.
const MethodKernelPooled Method = "kernel-random-effects"

// kernelFamily is the family every kernel metric belongs to. Kernel rules
// are relative only: a pooled ratio has no absolute value to compare with.
var kernelFamily = Family{Name: prefixKernel, Kind: KindKernel, Unit: "%", Better: LowerIsBetter,
	Doc: "pooled duration change of a kernel category's identities (kernel.attention) or of the kernels a name pattern matches (kernel:'flash_fwd.*')"}

// lookupKernelMetric parses a kernel metric name; ok is false when name is
// not one.
func lookupKernelMetric(name string) (m MetricName, ok bool, err error) {
	if key, is := strings.CutPrefix(name, prefixKernel); is {
		for _, c := range ingest.KernelCategories() {
			if c.Info().Key == key {
				return MetricName{Family: &kernelFamily, Bucket: key}, true, nil
			}
		}
		var keys []string
		for _, c := range ingest.KernelCategories() {
			keys = append(keys, c.Info().Key)
		}
		return MetricName{}, true, fmt.Errorf("unknown kernel category %q (want one of %s, or kernel:'REGEXP' for kernel names)", key, strings.Join(keys, ", "))
	}
	if pat, is := strings.CutPrefix(name, prefixKernelRE); is {
		re, err := kernelPattern(pat)
		if err != nil {
			return MetricName{}, true, err
		}
		return MetricName{Family: &kernelFamily, Bucket: re.String()}, true, nil
	}
	return MetricName{}, false, nil
}

// kernelPattern compiles the pattern of a kernel:'RE' metric, with or without
// its quotes. It is unanchored, as grep is: 'flash_fwd' matches
// "void flash::flash_fwd_kernel<…>".
func kernelPattern(pat string) (*regexp.Regexp, error) {
	if len(pat) >= 2 && (pat[0] == '\'' || pat[0] == '"') && pat[len(pat)-1] == pat[0] {
		pat = pat[1 : len(pat)-1]
	}
	if pat == "" {
		return nil, fmt.Errorf("kernel: needs a name pattern, such as kernel:'flash_fwd.*'")
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		return nil, fmt.Errorf("kernel name pattern %q: %w", pat, err)
	}
	return re, nil
}

// KernelRun is one run's GPU kernels grouped by identity: what the
// kernel-level comparison needs, and nothing the request level does.
type KernelRun struct {
	Units []KernelUnit
	// Stratified says the identities include the engine step's composition
	// (the run has llm.step spans whose GPU ops are known).
	Stratified bool
	// Launches counts the kernels in Units.
	Launches int
}

// KernelUnit is one kernel identity of a run and its launches' durations.
type KernelUnit struct {
	// Name is the kernel's full name; Short its base name ("" when the
	// input gives none).
	Name, Short string
	Grid        [3]uint32
	Block       [3]uint16
	// Stratum is the composition of the engine steps that launched it,
	// binned ("" when the run has no steps): kernels whose work grows with
	// the batch or the KV cache and whose grid does not say so (a
	// persistent GEMM's grid is the SM count; paged attention's grid counts
	// sequences, not their lengths) are compared at equal batches.
	Stratum string
	// Category is the attribution taxonomy's key ("attention").
	Category string
	// Durations are the launches' durations in ns, in trace order.
	Durations []float64
}

// Launch is the launch configuration, "grid 132×1×1, block 384×1×1".
func (u *KernelUnit) Launch() string {
	return fmt.Sprintf("grid %d×%d×%d, block %d×%d×%d", u.Grid[0], u.Grid[1], u.Grid[2], u.Block[0], u.Block[1], u.Block[2])
}

func (u *KernelUnit) key() string {
	return u.Name + "\x00" + u.Launch() + "\x00" + u.Stratum
}

// Total is the unit's GPU time in ns.
func (u *KernelUnit) Total() float64 {
	var s float64
	for _, d := range u.Durations {
		s += d
	}
	return s
}

// stratumBins is how many composition bins one doubling spans: 16 makes a
// bin 4.4% wide, so kernels whose time grows linearly with the batch differ
// by less than that inside one (at equal mixes of the bin, by far less).
const stratumBins = 16

// binOf bins a count: exact below 2·stratumBins (32), then stratumBins bins per
// doubling; it returns the bin's bounds.
func binOf(v int) (lo, hi int) {
	if v < 2*stratumBins {
		return v, v
	}
	b := math.Floor(stratumBins * math.Log2(float64(v)))
	lo = int(math.Ceil(math.Exp2(b / stratumBins)))
	hi = int(math.Ceil(math.Exp2((b+1)/stratumBins))) - 1
	return lo, hi
}

func binText(v int) string {
	lo, hi := binOf(v)
	if lo == hi {
		return strconv.Itoa(lo)
	}
	return strconv.Itoa(lo) + "–" + strconv.Itoa(hi)
}

// KernelsFromTrace groups a trace's kernels by identity. With res (the
// run's attribution, may be nil) and steps whose GPU ops are known, each
// kernel's identity also holds its step's composition: the tokens the step
// processed (llm.batch.tokens, else its request count) and the KV tokens
// its batch attended over (each request's prompt plus the tokens it had
// generated before the step), binned by binOf.
func KernelsFromTrace(t *ingest.Trace, res *attribution.Result) *KernelRun {
	stratum := stepStrata(t, res)
	shared := coRunning(t)
	cats := attribution.NewCategoryCache(t)
	// Units are identified by key(); an op's fields decide its unit, so
	// each distinct combination builds its key string once.
	type opKey struct {
		name, short ingest.StrID
		grid        [3]uint32
		block       [3]uint16
		stratum     string
		shared      uint8
	}
	byKey := map[string]int{}
	byOp := map[opKey]int{}
	out := &KernelRun{Stratified: stratum != nil}
	for i := range t.GPUOps {
		op := &t.GPUOps[i]
		if op.Kind != ingest.OpKernel || op.End < op.Start {
			continue
		}
		sh := t.ShapeOf(op)
		ok := opKey{name: op.Name, short: op.ShortName, grid: sh.Grid, block: sh.Block, shared: shared[i]}
		if stratum != nil {
			ok.stratum = stratum[i]
		}
		j, seen := byOp[ok]
		if !seen {
			u := KernelUnit{Name: t.Strings.Get(op.Name), Grid: sh.Grid, Block: sh.Block, Category: cats.Of(op).Info().Key}
			if op.ShortName != 0 {
				u.Short = t.Strings.Get(op.ShortName)
			}
			u.Stratum = ok.stratum
			if b := ok.shared; b > 0 {
				u.Stratum = strings.TrimPrefix(u.Stratum+fmt.Sprintf(", co-running %d–%d%%", 100*(int(b)-1)/sharedBins, 100*int(b)/sharedBins), ", ")
			}
			k := u.key()
			if j, seen = byKey[k]; !seen {
				j = len(out.Units)
				byKey[k] = j
				out.Units = append(out.Units, u)
			}
			byOp[ok] = j
		}
		out.Units[j].Durations = append(out.Units[j].Durations, float64(op.End-op.Start))
		out.Launches++
	}
	// Sorted by key (unique per unit), each key built once.
	order := make([]int, len(out.Units))
	ks := make([]string, len(out.Units))
	for j := range out.Units {
		order[j], ks[j] = j, out.Units[j].key()
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ks[a], ks[b]) })
	units := make([]KernelUnit, len(order))
	for n, j := range order {
		units[n] = out.Units[j]
	}
	out.Units = units
	return out
}

// sharedBins is how many bins the share of a kernel's time that another
// process's kernels ran on the same GPU is cut into (above 0, which is its
// own bin).
const sharedBins = 4

// coRunning returns, per GPU op, the bin of the share of its interval during
// which kernels of another process ran on the same device: 0 for none,
// else ⌈share × sharedBins⌉. Processes sharing a GPU (MPS, time slicing) slow
// each other's kernels in proportion to that overlap, and how much they
// overlap depends on both workloads, so an identity that ignored it would
// call a busier neighbour a slower kernel.
func coRunning(t *ingest.Trace) []uint8 {
	out := make([]uint8, len(t.GPUOps))
	type key struct {
		dev int16
		pid uint32
	}
	type span struct{ s, e int64 }
	busy := map[key][]span{}
	pidsOn := map[int16][]uint32{}
	for i := range t.GPUOps {
		op := &t.GPUOps[i]
		if op.Kind != ingest.OpKernel || op.End <= op.Start {
			continue
		}
		k := key{op.Device, op.Pid}
		if _, ok := busy[k]; !ok {
			pidsOn[op.Device] = append(pidsOn[op.Device], op.Pid)
		}
		busy[k] = append(busy[k], span{op.Start, op.End})
	}
	shared := false
	for _, pids := range pidsOn {
		shared = shared || len(pids) > 1
	}
	if !shared {
		return out
	}
	// Each process's busy time on a device as sorted, disjoint intervals.
	for k, sp := range busy {
		slices.SortFunc(sp, func(a, b span) int { return cmp.Compare(a.s, b.s) })
		merged := sp[:0]
		for _, x := range sp {
			if n := len(merged); n > 0 && x.s <= merged[n-1].e {
				merged[n-1].e = max(merged[n-1].e, x.e)
				continue
			}
			merged = append(merged, x)
		}
		busy[k] = merged
	}
	for i := range t.GPUOps {
		op := &t.GPUOps[i]
		if op.Kind != ingest.OpKernel || op.End <= op.Start || len(pidsOn[op.Device]) < 2 {
			continue
		}
		var over int64
		for _, pid := range pidsOn[op.Device] {
			if pid == op.Pid {
				continue
			}
			sp := busy[key{op.Device, pid}]
			j, _ := slices.BinarySearchFunc(sp, op.Start, func(x span, t int64) int { return cmp.Compare(x.e, t) })
			for ; j < len(sp) && sp[j].s < op.End; j++ {
				over += min(sp[j].e, op.End) - max(sp[j].s, op.Start)
			}
		}
		if over > 0 {
			share := min(1, float64(over)/float64(op.End-op.Start))
			out[i] = uint8(max(1, math.Ceil(share*sharedBins)))
		}
	}
	return out
}

// stepStrata returns, per GPU op, the composition stratum of the step that
// launched it ("" for ops outside any step); nil when the run has no steps
// with known ops.
func stepStrata(t *ingest.Trace, res *attribution.Result) []string {
	if res == nil || len(res.Steps) == 0 {
		return nil
	}
	order := make([]int, len(res.Steps))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(res.Steps[a].Start, res.Steps[b].Start) })
	seen := make([]int, len(res.Requests)) // tokens generated so far, per request
	out := make([]string, len(t.GPUOps))
	found := false
	for _, si := range order {
		st := &res.Steps[si]
		tokens := st.Tokens
		if tokens < 0 {
			tokens = max(st.Size, len(st.Requests))
		}
		kv := 0
		for _, r := range st.Requests {
			if in := res.Requests[r].InputTokens; in > 0 {
				kv += in
			}
			kv += seen[r]
			seen[r]++
		}
		if len(st.Ops) == 0 {
			continue
		}
		s := "step " + binText(tokens) + " tok, kv " + binText(kv)
		for _, o := range st.Ops {
			if int(o) < len(out) {
				out[o] = s
				found = true
			}
		}
	}
	if !found {
		return nil
	}
	return out
}

// KernelComparison is the kernel-level part of a Result.
type KernelComparison struct {
	// Stratified: both sides' identities include the step composition.
	Stratified bool
	// LaunchesBaseline and LaunchesCandidate count each side's kernels.
	LaunchesBaseline, LaunchesCandidate int
	// Identities holds every identity found on either side: those on both
	// with a change and interval, those on one side only with its totals.
	// Changed (significant) identities come first, largest time impact
	// first; then the others by baseline time.
	Identities []KernelChange
	// Names is the HTA-style summary by kernel name: launches and total time
	// of each side.
	Names []KernelNameChange
	// Groups are the pooled changes: one per category with a compared
	// identity, then one per kernel:'RE' rule. Each is also a metric of the
	// Result ("kernel.attention"), which the gate decides.
	Groups []KernelGroup
}

// KernelChange is one identity's change.
type KernelChange struct {
	Name, Short, Launch, Stratum, Category string
	NBaseline, NCandidate                  int
	// BaselineMS and CandidateMS are the identity's total time per side;
	// MedianBaselineUS and MedianCandidateUS the median launch.
	BaselineMS, CandidateMS             float64
	MedianBaselineUS, MedianCandidateUS float64
	// DeltaPct is the Hodges–Lehmann shift of log durations as a
	// percentage, CILowPct and CIHighPct its Moses interval; NaN when the
	// identity is on one side only or has too few launches.
	DeltaPct, CILowPct, CIHighPct float64
	P                             float64
	Significant                   bool
	// Compared: on both sides with enough launches for an interval.
	Compared bool
}

// KernelNameChange is one kernel name's launches and time per side (HTA's
// trace diff unit): "added" (candidate only), "removed" (baseline only),
// "changed" (an identity of it changed significantly) or "unchanged".
type KernelNameChange struct {
	Name                    string
	Category                string
	CountBaseline           int
	CountCandidate          int
	BaselineMS, CandidateMS float64
	Status                  string
}

// KernelGroup is a pooled change of a category's (or a pattern's)
// identities.
type KernelGroup struct {
	// Metric is the metric's name: "kernel.attention", "kernel:'flash_fwd.*'".
	Metric string
	// Identities is how many identities were pooled; MatchedShare their
	// share of the group's baseline time (the rest ran on one side only or
	// too rarely for an interval).
	Identities   int
	MatchedShare float64
	// BaselineMS and CandidateMS are the group's total kernel time per side.
	BaselineMS, CandidateMS float64
	// DeltaPct and its interval are the pooled change; Tau is the
	// between-identity standard deviation of log changes (DerSimonian–Laird).
	DeltaPct, CILowPct, CIHighPct float64
	P                             float64
	Tau                           float64
	Significant                   bool
	// Top names the identity that contributes most to the pooled change.
	Top string
}

// unitChange is the comparison of one identity present on both sides.
type unitChange struct {
	b, c  *KernelUnit
	y, v  float64 // log change and its variance
	share float64 // baseline time
	ok    bool
	out   KernelChange
}

// compareUnits compares every identity of the two sides.
func (c *comparison) compareUnits(kb, kc *KernelRun) []*unitChange {
	alpha := c.opts.Alpha
	idx := map[string]*KernelUnit{}
	for i := range kc.Units {
		idx[kc.Units[i].key()] = &kc.Units[i]
	}
	var out []*unitChange
	used := map[string]bool{}
	add := func(b, k *KernelUnit) {
		u := &unitChange{b: b, c: k}
		ref := cmp.Or(b, k)
		u.out = KernelChange{Name: ref.Name, Short: ref.Short, Launch: ref.Launch(), Stratum: ref.Stratum, Category: ref.Category,
			DeltaPct: math.NaN(), CILowPct: math.NaN(), CIHighPct: math.NaN(), P: math.NaN(),
			MedianBaselineUS: math.NaN(), MedianCandidateUS: math.NaN()}
		var sb, sc []float64
		if b != nil {
			sb = sortedCopy(b.Durations)
			u.out.NBaseline, u.out.BaselineMS = len(sb), b.Total()/1e6
			u.out.MedianBaselineUS = median(sb) / 1e3
			u.share = b.Total()
		}
		if k != nil {
			sc = sortedCopy(k.Durations)
			u.out.NCandidate, u.out.CandidateMS = len(sc), k.Total()/1e6
			u.out.MedianCandidateUS = median(sc) / 1e3
		}
		if b != nil && k != nil && allPositive(sb, sc) {
			lb, lc := logs(sb), logs(sc)
			hl := stat.HodgesLehmann(lb, lc, alpha)
			if hl.K > 0 {
				u.ok = true
				u.y = hl.Estimate
				se := (hl.High - hl.Low) / (2 * c.za)
				// Durations quantized (integer µs in Kineto traces) can make
				// the interval a point; the quantum bounds what one launch
				// can tell, so the variance is at least its rounding error.
				if q := quantumFloor(sb, sc); se < q {
					se = q
				}
				u.v = se * se
				u.out.Compared = true
				u.out.DeltaPct = pctOfLog(hl.Estimate)
				u.out.CILowPct, u.out.CIHighPct = pctOfLog(hl.Low), pctOfLog(hl.High)
				u.out.P = stat.MannWhitney(lb, lc).P
				u.out.Significant = u.out.P <= alpha && (hl.Low > 0 || hl.High < 0)
			}
		}
		out = append(out, u)
	}
	for i := range kb.Units {
		b := &kb.Units[i]
		k := idx[b.key()]
		if k != nil {
			used[b.key()] = true
		}
		add(b, k)
	}
	for i := range kc.Units {
		if k := &kc.Units[i]; !used[k.key()] {
			add(nil, k)
		}
	}
	return out
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// quantumFloor is the standard error of a log shift that the durations'
// resolution alone allows: the smallest step between distinct durations
// (1000 ns in an integer-µs trace), as a share of the median, over √12
// (a uniform rounding error) and the square root of the harmonic launches.
func quantumFloor(sb, sc []float64) float64 {
	q := math.Inf(1)
	for _, s := range [][]float64{sb, sc} {
		for i := 1; i < len(s); i++ {
			if d := s[i] - s[i-1]; d > 0 && d < q {
				q = d
			}
		}
	}
	m := median(sb)
	if math.IsInf(q, 1) || !(m > 0) {
		return 0
	}
	return math.Log1p(q/m) / math.Sqrt(12) * math.Sqrt(1/float64(len(sb))+1/float64(len(sc)))
}

// pooledChange is a random-effects pool of identities' log changes.
type pooledChange struct {
	k        int
	mu, se   float64
	tau      float64
	matched  float64 // baseline time of the pooled identities
	top      *unitChange
	topShare float64
}

// poolUnits pools identities' log changes y_i (variances v_i) by the
// DerSimonian–Laird random-effects model (DerSimonian & Laird 1986, Control.
// Clin. Trials 7:177): the between-identity variance
//
//	τ² = max(0, (Q − (k−1)) / (Σw − Σw²/Σw)),  w = 1/v,  Q = Σ w (y − ȳ_w)²,
//
// then the estimate with each identity weighted by its share s_i of the
// pooled identities' baseline GPU time, μ = Σ s_i y_i, whose variance under
// that model is Σ s_i² (v_i + τ²). Time shares make μ the change of the
// group's GPU time at the baseline's kernel mix (a kernel that runs 90% of
// the time speaks for 90%), and τ² makes the interval hold how much
// identities disagree — the identity is the unit, so thousands of launches
// of one kernel do not make its run-specific drift look like certainty.
// With one identity τ² cannot be estimated and is 0.
func poolUnits(units []*unitChange) pooledChange {
	var p pooledChange
	var sw, sw2, swy float64
	for _, u := range units {
		if !u.ok {
			continue
		}
		w := 1 / u.v
		sw += w
		sw2 += w * w
		swy += w * u.y
		p.k++
		p.matched += u.share
	}
	if p.k == 0 || !(p.matched > 0) {
		return pooledChange{}
	}
	var tau2 float64
	if p.k > 1 {
		ybar := swy / sw
		var q float64
		for _, u := range units {
			if u.ok {
				q += (u.y - ybar) * (u.y - ybar) / u.v
			}
		}
		if den := sw - sw2/sw; den > 0 {
			tau2 = max(0, (q-float64(p.k-1))/den)
		}
	}
	var mu, v float64
	for _, u := range units {
		if !u.ok {
			continue
		}
		s := u.share / p.matched
		mu += s * u.y
		v += s * s * (u.v + tau2)
		if c := math.Abs(s * u.y); p.top == nil || c > p.topShare {
			p.top, p.topShare = u, c
		}
	}
	p.mu, p.se, p.tau = mu, math.Sqrt(v), math.Sqrt(tau2)
	return p
}

// computeKernels compares the two sides' kernels, adds one metric per
// category (and per kernel:'RE' rule) and sets Result.Kernels. It needs one
// run per side with kernels (several runs' kernels are pooled into one).
func (c *comparison) computeKernels(baseline, candidate Side) {
	kb, kc := mergedKernels(baseline.Runs), mergedKernels(candidate.Runs)
	if kb == nil || kc == nil {
		why := "a side has no GPU kernels (a trace with kernels — nsys, Kineto, or spans with a GPU side — gives them; saved analyses do not keep them)"
		c.markAbsent(prefixKernel, why)
		c.markAbsent(prefixKernelRE, why)
		return
	}
	kcmp := &KernelComparison{Stratified: kb.Stratified && kc.Stratified,
		LaunchesBaseline: kb.Launches, LaunchesCandidate: kc.Launches}
	if kb.Stratified != kc.Stratified {
		c.warnf("kernels: only one side has engine steps, so identities are matched by name and launch configuration alone")
		kb, kc = mergeStrata(kb), mergeStrata(kc)
	}
	units := c.compareUnits(kb, kc)
	groups := map[string][]*unitChange{}
	for _, u := range units {
		groups[u.out.Category] = append(groups[u.out.Category], u)
	}
	for _, cat := range ingest.KernelCategories() {
		key := cat.Info().Key
		if len(groups[key]) > 0 {
			c.kernelMetric(kcmp, prefixKernel+key, groups[key])
		}
	}
	for _, g := range c.opts.Policy.Gates {
		pat, ok := strings.CutPrefix(g.Metric, prefixKernelRE)
		if !ok {
			continue
		}
		re, err := kernelPattern(pat)
		if err != nil {
			continue // validate refused it already
		}
		var sel []*unitChange
		for _, u := range units {
			if re.MatchString(u.out.Name) || (u.out.Short != "" && re.MatchString(u.out.Short)) {
				sel = append(sel, u)
			}
		}
		if len(sel) == 0 {
			c.markAbsent(g.Metric, fmt.Sprintf("no kernel name on either side matches %q", re.String()))
			continue
		}
		c.kernelMetric(kcmp, g.Metric, sel)
	}
	for _, u := range units {
		kcmp.Identities = append(kcmp.Identities, u.out)
	}
	// A changed identity's impact is the time its change of duration moved
	// (not its change of launches, which the workload sets).
	impact := func(k KernelChange) float64 { return math.Abs(k.DeltaPct) * (k.BaselineMS + k.CandidateMS) }
	slices.SortStableFunc(kcmp.Identities, func(a, b KernelChange) int {
		if a.Significant != b.Significant {
			if a.Significant {
				return -1
			}
			return 1
		}
		if a.Significant {
			return cmp.Compare(impact(b), impact(a))
		}
		return cmp.Compare(max(b.BaselineMS, b.CandidateMS), max(a.BaselineMS, a.CandidateMS))
	})
	kcmp.Names = kernelNames(units)
	c.res.Kernels = kcmp
}

func (c *comparison) markAbsent(key, why string) {
	if c.absent == nil {
		c.absent = map[string]string{}
	}
	if _, ok := c.absent[key]; !ok {
		c.absent[key] = why
	}
}

// mergedKernels pools the kernels of a side's runs; nil when none has any.
func mergedKernels(runs []Run) *KernelRun {
	var have []*KernelRun
	for i := range runs {
		if k := runs[i].Kernels; k != nil && len(k.Units) > 0 {
			have = append(have, k)
		}
	}
	switch len(have) {
	case 0:
		return nil
	case 1:
		return have[0]
	}
	out := &KernelRun{Stratified: true}
	idx := map[string]int{}
	for _, r := range have {
		out.Stratified = out.Stratified && r.Stratified
		out.Launches += r.Launches
		for _, u := range r.Units {
			k := u.key()
			if j, ok := idx[k]; ok {
				out.Units[j].Durations = append(out.Units[j].Durations, u.Durations...)
				continue
			}
			idx[k] = len(out.Units)
			u.Durations = slices.Clone(u.Durations)
			out.Units = append(out.Units, u)
		}
	}
	if !out.Stratified {
		return mergeStrata(out)
	}
	return out
}

// mergeStrata returns r with identities that differ only in their stratum
// (cleared) merged.
func mergeStrata(r *KernelRun) *KernelRun {
	out := &KernelRun{Launches: r.Launches}
	idx := map[string]int{}
	for _, u := range r.Units {
		u.Stratum = ""
		k := u.key()
		if j, ok := idx[k]; ok {
			out.Units[j].Durations = append(out.Units[j].Durations, u.Durations...)
			continue
		}
		idx[k] = len(out.Units)
		u.Durations = slices.Clone(u.Durations)
		out.Units = append(out.Units, u)
	}
	return out
}

// kernelMetric pools units into one metric named name and its group.
func (c *comparison) kernelMetric(kcmp *KernelComparison, name string, units []*unitChange) {
	p := poolUnits(units)
	g := KernelGroup{Metric: name, Identities: p.k, DeltaPct: math.NaN(), CILowPct: math.NaN(), CIHighPct: math.NaN(), P: math.NaN()}
	var baseTime float64
	for _, u := range units {
		g.BaselineMS += u.out.BaselineMS
		g.CandidateMS += u.out.CandidateMS
		baseTime += u.share
	}
	s := spec{name: name, fam: &kernelFamily}
	w := c.newWork(s, MethodKernelPooled, p.k, p.k)
	w.unitsOf = "kernel identities"
	m := w.m
	m.Note = "identities matched by name and launch configuration"
	if kcmp.Stratified {
		m.Note += " at equal step composition"
	}
	if p.k == 0 {
		w.short = name + ": no kernel identity ran on both sides often enough for an interval (≥ " + strconv.Itoa(stat.MinSamplesForU(c.opts.Alpha)) + " launches each)"
		kcmp.Groups = append(kcmp.Groups, g)
		return
	}
	g.MatchedShare = p.matched / baseTime
	lo, hi := p.mu-c.za*p.se, p.mu+c.za*p.se
	m.DeltaPct, m.CILowPct, m.CIHighPct = pctOfLog(p.mu), pctOfLog(lo), pctOfLog(hi)
	m.P = 2 * distuv.UnitNormal.Survival(math.Abs(p.mu)/p.se)
	if p.se == 0 {
		m.P = 1
		if p.mu != 0 {
			m.P = 0
		}
	}
	m.Significant = m.P <= c.opts.Alpha
	m.MDEPct = pctOfLog((c.za + c.zb) * p.se)
	m.MinN = 1
	m.Note += fmt.Sprintf("; %d identities pooled (random effects, time-share weights; τ = %.3g), %.0f%% of the baseline's time in them", p.k, p.tau, 100*g.MatchedShare)
	mu, se := p.mu, p.se
	w.pFail = func(gt Gate) float64 {
		if !gt.Relative {
			return 1
		}
		thr := math.Log1p(gt.Threshold / 100)
		if se == 0 {
			if (gt.Op == Below && mu > thr) || (gt.Op == Above && mu < thr) {
				return 0
			}
			return 1
		}
		z := (mu - thr) / se
		if gt.Op == Below {
			return distuv.UnitNormal.Survival(z)
		}
		return distuv.UnitNormal.CDF(z)
	}
	g.DeltaPct, g.CILowPct, g.CIHighPct, g.P, g.Tau, g.Significant = m.DeltaPct, m.CILowPct, m.CIHighPct, m.P, p.tau, m.Significant
	if p.top != nil {
		g.Top = cmp.Or(p.top.out.Short, p.top.out.Name)
	}
	kcmp.Groups = append(kcmp.Groups, g)
}

// kernelNames sums the identities by name, HTA's unit.
func kernelNames(units []*unitChange) []KernelNameChange {
	idx := map[string]int{}
	var out []KernelNameChange
	for _, u := range units {
		j, ok := idx[u.out.Name]
		if !ok {
			j = len(out)
			idx[u.out.Name] = j
			out = append(out, KernelNameChange{Name: u.out.Name, Category: u.out.Category, Status: "unchanged"})
		}
		n := &out[j]
		n.CountBaseline += u.out.NBaseline
		n.CountCandidate += u.out.NCandidate
		n.BaselineMS += u.out.BaselineMS
		n.CandidateMS += u.out.CandidateMS
		if u.out.Significant {
			n.Status = "changed"
		}
	}
	for i := range out {
		switch {
		case out[i].CountBaseline == 0:
			out[i].Status = "added"
		case out[i].CountCandidate == 0:
			out[i].Status = "removed"
		}
	}
	slices.SortStableFunc(out, func(a, b KernelNameChange) int {
		return cmp.Compare(math.Abs(b.CandidateMS-b.BaselineMS), math.Abs(a.CandidateMS-a.BaselineMS))
	})
	return out
}

// kernelEvidence points a request-level metric's explanation at the kernel
// finding: when its largest GPU bucket moved the way the metric did and
// that category's pooled kernel change is significant, the change at equal
// launch configuration is what tells a slower kernel from more work.
func (c *comparison) kernelEvidence() {
	k := c.res.Kernels
	if k == nil {
		return
	}
	groups := map[string]KernelGroup{}
	for _, g := range k.Groups {
		groups[g.Metric] = g
	}
	for i := range c.res.Metrics {
		m := &c.res.Metrics[i]
		if m.Mixed || len(m.Explanation) == 0 || strings.HasPrefix(m.Name, "kernel") {
			continue
		}
		// Of the GPU buckets that moved the metric's way, the category whose
		// kernels changed most per launch: more work (a bigger batch) moves
		// a bucket too, a slower kernel moves its per-launch duration.
		var best *KernelGroup
		for _, e := range m.Explanation {
			cat, ok := strings.CutPrefix(e.Bucket, "gpu.")
			if !ok || (e.DeltaMS > 0) != (m.DeltaPct > 0) {
				continue
			}
			g, ok := groups[prefixKernel+cat]
			if ok && g.Significant && (g.DeltaPct > 0) == (e.DeltaMS > 0) && (best == nil || math.Abs(g.DeltaPct) > math.Abs(best.DeltaPct)) {
				best = &g
			}
		}
		if best != nil {
			m.KernelEvidence = fmt.Sprintf("%s %s [%s, %s] per launch at equal launch configuration", best.Metric,
				fmtPctShort(best.DeltaPct), fmtPctShort(best.CILowPct), fmtPctShort(best.CIHighPct))
		}
	}
}

func fmtPctShort(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if v >= 0 {
		s = "+" + s
	}
	return s + "%"
}

// sameKernels reports whether two sides' runs hold the same kernels with
// the same durations (identicalSides does not see them: they are not part
// of the samples JSON).
func sameKernels(a, b []Run) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i].Kernels, b[i].Kernels
		if (x == nil) != (y == nil) {
			return false
		}
		if x == nil {
			continue
		}
		if !slices.EqualFunc(x.Units, y.Units, func(u, v KernelUnit) bool {
			return u.key() == v.key() && slices.Equal(u.Durations, v.Durations)
		}) {
			return false
		}
	}
	return true
}
