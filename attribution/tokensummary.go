package attribution

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"
)

// TokenSummary aggregates the token breakdowns of a run. The breakdowns
// themselves are streamed (Result.EachToken), never all held: a run of 100 k
// requests × 200 tokens would need gigabytes.
type TokenSummary struct {
	Tokens    int `json:"tokens"`
	Estimated int `json:"estimated"`
	// First and Decode split the time of first tokens (TTFT) and of the
	// tokens after them.
	First  BucketShares `json:"first_token"`
	Decode BucketShares `json:"decode_tokens"`
	// ByPosition groups tokens by their index in the response.
	ByPosition []BucketShares `json:"by_position"`
	// ByTenant and ByModel cover decode tokens.
	ByTenant []BucketShares `json:"by_tenant"`
	ByModel  []BucketShares `json:"by_model"`
	Stalls   Stalls         `json:"stalls"`
	// Unfilled says which buckets this input cannot fill, and why.
	Unfilled []string `json:"unfilled,omitempty"`
	// StepsGPUVia counts the steps whose GPU ops were found each way.
	StepsGPUVia map[string]int `json:"steps_gpu_via,omitempty"`
	// GPUEstimated is true when the GPU buckets are estimated per request
	// from the kernels in its prefill and decode windows (no engine steps);
	// GPUEstimate says how.
	GPUEstimated bool   `json:"gpu_estimated,omitempty"`
	GPUEstimate  string `json:"gpu_estimate,omitempty"`
}

// BucketShares is the bucket split of a group of tokens.
type BucketShares struct {
	Name       string        `json:"name,omitempty"`
	Tokens     int           `json:"tokens"`
	MeanMs     float64       `json:"mean_interval_ms"`
	Buckets    []BucketShare `json:"buckets"`
	intervalNs int64
	sums       [NumBuckets]int64
}

// BucketShare is one bucket's time in a group.
type BucketShare struct {
	Name    string  `json:"name"`
	TotalMs float64 `json:"total_ms"`
	Share   float64 `json:"share"`
}

func (g *BucketShares) add(tb *TokenBreakdown) {
	g.Tokens++
	g.intervalNs += tb.Interval
	for b, v := range tb.Buckets {
		g.sums[b] += v
	}
}

func (g *BucketShares) finish() {
	if g.Tokens > 0 {
		g.MeanMs = float64(g.intervalNs) / float64(g.Tokens) / 1e6
	}
	g.Buckets = g.Buckets[:0]
	for b := Bucket(0); b < NumBuckets; b++ {
		share := 0.0
		if g.intervalNs > 0 {
			share = float64(g.sums[b]) / float64(g.intervalNs)
		}
		g.Buckets = append(g.Buckets, BucketShare{Name: b.String(), TotalMs: float64(g.sums[b]) / 1e6, Share: share})
	}
}

// Stalls are decode tokens that took much longer than usual, with the step
// that caused each (Etalon-style per-token deadlines: a token misses when its
// interval exceeds the threshold).
type Stalls struct {
	// ThresholdMs is the stall threshold per model: the one given, or 3× the
	// model's median inter-token latency.
	ThresholdMs map[string]float64 `json:"threshold_ms"`
	// Auto is true when the thresholds are derived from the medians.
	Auto    bool           `json:"auto"`
	Count   int            `json:"count"`
	Share   float64        `json:"share"`
	ByCause map[string]int `json:"by_cause"`
	// Worst are the slowest stall events: the stalled tokens of one step
	// (its whole batch waits) count as one event.
	Worst  []Stall     `json:"worst"`
	byStep map[int]int // step index → position in Worst while collecting
	// windowed are the stalls with no step, grouped by time window at the
	// end (mergeWindows).
	windowed []windowedStall
}

// windowedStall is a stalled token without a step and its interval.
type windowedStall struct {
	from, to int64
	s        Stall
}

// Stall is one slow token.
type Stall struct {
	Request    string  `json:"request_id"`
	Tenant     string  `json:"tenant"`
	Token      int     `json:"token_index"`
	IntervalMs float64 `json:"interval_ms"`
	// Cause is the bucket that exceeded its typical time (the model's mean
	// for a decode token) by the most; ExcessMs is by how much.
	Cause    string  `json:"cause"`
	ExcessMs float64 `json:"excess_ms"`
	// Tokens counts the stalled tokens of this event (the batch of the
	// step), Requests the first few of their requests.
	Tokens   int      `json:"tokens"`
	Requests []string `json:"requests,omitempty"`
	// Step is the request's longest step in the interval (−1: none).
	Step int64 `json:"step_id"`
	// WindowStartNs and WindowMs, for a stall without a step, bound the
	// overlapping stalled intervals it groups (the time the engine was slow).
	WindowStartNs int64   `json:"window_start_ns,omitempty"`
	WindowMs      float64 `json:"window_ms,omitempty"`
	StepPhase     string  `json:"step_phase,omitempty"`
	StepBatch     int     `json:"step_batch,omitempty"`
}

const worstStalls = 10

// EachToken streams every token breakdown of the run, request by request in
// arrival order. The value passed to fn is reused: copy what you keep.
func (res *Result) EachToken(fn func(*TokenBreakdown)) {
	if res.trace == nil {
		return
	}
	w := newTokenWalker(res.trace, res)
	defer w.free()
	for ri := range res.Requests {
		w.passed(ri)
		w.request(ri, fn)
	}
}

// RequestBuckets are one request's token buckets summed over all its output
// tokens (All) and for its first token alone (First), in ns.
type RequestBuckets struct {
	All, First [NumBuckets]int64
}

// TokenBuckets sets dst to request i's summed token buckets; ok is false,
// and dst all zeros, when the run has no token breakdown. They are kept from
// the summary's pass, so that consumers (diff's samples) need not walk every
// token again.
func (res *Result) TokenBuckets(i int, dst *RequestBuckets) bool {
	*dst = RequestBuckets{}
	if i < 0 || i >= len(res.tokenSums.refs) {
		return false
	}
	all, first, bs := res.tokenSums.of(i)
	for j, b := range bs {
		dst.All[b], dst.First[b] = all[j], first[j]
	}
	return true
}

// TokenBucketSums are request i's summed token buckets as TokenBuckets
// sets them, in the buckets where either is not zero: bucket bs[j] has
// All sum all[j] and First sum first[j], and every bucket outside bs zero
// in both (bs is empty when the run has no token breakdown, or the request
// no token time). For a walk of
// every request that would otherwise read and clear every bucket of each.
// The slices are the Result's: read, not written.
func (res *Result) TokenBucketSums(i int) (bs []Bucket, all, first []int64) {
	if i < 0 || i >= len(res.tokenSums.refs) {
		return nil, nil, nil
	}
	all, first, bs = res.tokenSums.of(i)
	return bs, all, first
}

// bucketSums holds every request's RequestBuckets in the buckets where
// they are not zero: a request's sums are its nonzero buckets' All sums then
// their First sums, packed one request after another in one table, and the
// request's set of those buckets, by number. Of the 148 k requests of
// docs/otlp.md's 100 MiB dump a quarter have no token sums and the rest 1 to
// 4 nonzero buckets of the six stageRuns sums (3.6 values a request, 4.3 MB
// in all); stored whole, every bucket tokenWalker.stageRuns sums, they were
// 14 MB, the part past the first request of each width made and zeroed up
// front (a spill file's pages are written before they are mapped:
// internal/spill's writeZeros) and every one of them first written here.
//
// The table grows as the requests are set, to the size the requests so far
// foretell (roomAhead): while spilling is on it is a spill table (off the
// heap the collector marks, grown in its file, not copied) from the start.
// The Result holds it to the end, when spilling's release unmaps it.
type bucketSums struct {
	// refs[i] places request i's sums at vals[at:]: n All sums then n
	// First sums, n the length of its set; set 0 (the empty set) when it
	// has none.
	refs []bucketRef
	vals []int64
	// sets are the distinct sets of buckets the requests have sums in,
	// by number (sets[0] is empty, sets[1] every bucket; 255 at most), each in bucket
	// order; number finds a set's number by its mask (bit b: bucket b).
	sets   [][]Bucket
	number map[uint32]uint8
	// recent holds a mask and its set's number at the mask's hash (the
	// number+1; 0: empty), asked before number: a run's requests have a
	// few sets, interleaved.
	recent [64]struct {
		mask uint32
		k    uint8
	}
}

type bucketRef struct {
	at  uint32
	set uint8
}

func newBucketSums(n int) bucketSums {
	return bucketSums{refs: make([]bucketRef, n), sets: [][]Bucket{nil, allBuckets[:]}, number: map[uint32]uint8{0: 0, 1<<NumBuckets - 1: 1}}
}

// set stores request i's sums over the buckets bs, every bucket outside bs
// zero in both: it keeps those of bs where either sum is not zero. The
// requests come in order (summarizeTokens).
func (s *bucketSums) set(i int, bs []Bucket, all, first *[NumBuckets]int64) {
	var mask uint32
	for _, b := range bs {
		if all[b] != 0 || first[b] != 0 {
			mask |= 1 << b
		}
	}
	c := &s.recent[mask*0x9E3779B1>>26]
	k, ok := c.k-1, c.k > 0 && c.mask == mask
	if !ok {
		k, ok = s.number[mask]
	}
	if !ok {
		if len(s.sets) < math.MaxUint8 {
			k = uint8(len(s.sets))
			var set []Bucket
			for b := range NumBuckets {
				if mask&(1<<b) != 0 {
					set = append(set, b)
				}
			}
			s.sets = append(s.sets, set)
			s.number[mask] = k
		} else {
			k = 1 // no number left for another set: every bucket
		}
	}
	c.mask, c.k = mask, k+1
	set := s.sets[k]
	n := len(set)
	if n == 0 {
		s.refs[i] = bucketRef{}
		return
	}
	at := len(s.vals)
	if at+2*n > math.MaxUint32 {
		panic(fmt.Sprintf("attribution: %d token sums, past the 2³² a request's place can reach", at+2*n))
	}
	s.vals = roomAhead(s.vals, 2*n, i, len(s.refs))
	for _, b := range set {
		s.vals = append(s.vals, all[b])
	}
	for _, b := range set {
		s.vals = append(s.vals, first[b])
	}
	s.refs[i] = bucketRef{at: uint32(at), set: k}
}

// of returns request i's All and First sums over the buckets bs.
func (s *bucketSums) of(i int) (all, first []int64, bs []Bucket) {
	r := s.refs[i]
	bs = s.sets[r.set]
	n := uint32(len(bs))
	if n == 0 {
		return nil, nil, nil
	}
	c := s.vals[r.at:]
	// Capped: an append to one must not write into the other, or into the
	// next request's.
	return c[:n:n], c[n : 2*n : 2*n], bs
}

// all returns request i's All sum of bucket b.
func (s *bucketSums) all(i int, b Bucket) int64 {
	all, _, bs := s.of(i)
	for j, x := range bs {
		if x == b {
			return all[j]
		}
	}
	return 0
}

// summarizeTokens walks every token once and aggregates.
//
// The tokens arrive request by request and, within one, by index, so a
// request's decode tokens reach each position group as one run: a run is
// summed apart and added to its position group and to the request's decode
// sum when it ends, and the request's decode sum to its tenant's and
// model's groups (by group number, Result.tenants and Result.models) when
// the next request starts (per token: one bucket addition instead of five,
// no map lookups); the decode group is the position groups past the first,
// added up at the end. A request's summed buckets are
// its first tokens' plus its decode sum. The sums are integers, so they are
// exactly the per-token ones. A request that ran in no engine step the
// input shows (OTLP alone) is not split token by token at all: its decode
// tokens of one position group are one stretch of time (stageRuns). Decode
// tokens over their model's stall threshold are kept (copies:
// stallCandidates at most) for findStalls, which then needs no second walk.
func summarizeTokens(res *Result, stall time.Duration) *TokenSummary {
	ts := &TokenSummary{First: BucketShares{Name: "first"}, Decode: BucketShares{Name: "decode"}}
	positions := []struct {
		name   string
		lo, hi int
	}{{"0", 0, 1}, {"1", 1, 2}, {"2–9", 2, 10}, {"10–99", 10, 100}, {"100+", 100, 1 << 62}}
	ts.ByPosition = make([]BucketShares, len(positions))
	for i, p := range positions {
		ts.ByPosition[i].Name = p.name
	}
	// The decode tokens of each tenant and model, by group number.
	if len(res.tenants.of) != len(res.Requests) {
		res.tenants = groupRequests(res, (*Result).Tenant)
	}
	if len(res.models.of) != len(res.Requests) {
		res.models = groupRequests(res, (*Result).Model)
	}
	tenants, models := make([]BucketShares, len(res.tenants.names)), make([]BucketShares, len(res.models.names))
	// Each model's stall threshold, by group number.
	limits := stallLimits(res, stall)
	type stallLimit struct {
		ns int64
		ok bool
	}
	modelLimits := make([]stallLimit, len(res.models.names))
	for g, name := range res.models.names {
		modelLimits[g].ns, modelLimits[g].ok = limits[name]
	}
	var (
		decodeTokens int
		stalls       stallCandidates
		cur          = -1              // the request whose tokens are arriving
		decode       BucketShares      // its decode tokens
		first        [NumBuckets]int64 // its first tokens' buckets
		firstBuckets [NumBuckets]int64 // its last first token's, all of them
		limit        int64             // its model's stall threshold
		hasLimit     bool
		run          BucketShares // its decode tokens of one position group
		runPos       = -1         // that group
		// bs are the buckets its tokens can have time in: stageOnlyBuckets
		// for a request stageRuns sums, all of them for the others; next
		// is the next request's, set before its tokens arrive.
		bs, next []Bucket
	)
	// run, decode and first gain time in the buckets bs alone (addOnly,
	// mergeOnly), so those are all they clear: clearing every bucket of
	// run at each run's end was 1% of an OTLP analyze's CPU.
	endRun := func() {
		if runPos < 0 {
			return // run is clear
		}
		ts.ByPosition[runPos].mergeOnly(&run, bs)
		decode.mergeOnly(&run, bs)
		run.clearOnly(bs)
		runPos = -1
	}
	flush := func() {
		if cur < 0 {
			return
		}
		endRun()
		var all [NumBuckets]int64
		for _, b := range bs {
			all[b] = first[b] + decode.sums[b]
		}
		// The first token's buckets outside bs are zero for a request
		// stageRuns sums (TestStageOnlyBuckets); should one not be, the
		// request's sums are kept over every bucket.
		set := bs
		if len(bs) < int(NumBuckets) && !onlyIn(&firstBuckets, bs) {
			set = allBuckets[:]
		}
		res.tokenSums.set(cur, set, &all, &firstBuckets)
		if decode.Tokens > 0 {
			tenants[res.tenants.of[cur]].mergeOnly(&decode, bs)
			models[res.models.of[cur]].mergeOnly(&decode, bs)
		}
	}
	res.tokenSums = newBucketSums(len(res.Requests))
	token := func(tb *TokenBreakdown) {
		if tb.Request != cur {
			flush()
			decode.clearOnly(bs)
			for _, b := range bs {
				first[b] = 0
			}
			cur, firstBuckets, bs = tb.Request, [NumBuckets]int64{}, next
			l := modelLimits[res.models.of[cur]]
			limit, hasLimit = l.ns, l.ok
		}
		ts.Tokens++
		if tb.Estimated {
			ts.Estimated++
		}
		if tb.Index == 0 {
			ts.ByPosition[0].addOnly(tb, bs)
			firstBuckets = tb.Buckets
			for _, b := range bs {
				first[b] += tb.Buckets[b]
			}
			ts.First.addOnly(tb, bs)
			return
		}
		pos := 1
		for tb.Index >= positions[pos].hi {
			pos++
		}
		if pos != runPos {
			endRun()
			runPos = pos
		}
		decodeTokens++
		run.addOnly(tb, bs)
		if hasLimit && tb.Interval > limit {
			stalls.keep(tb)
		}
	}
	// Requests that ran in no engine step are summed a run at a time
	// (tokenWalker.stageRuns); the others token by token.
	runs := make([][2]int, len(positions)-1)
	for i, p := range positions[1:] {
		runs[i] = [2]int{p.lo, p.hi}
	}
	run1 := func(pos, n int, estimated bool, g *BucketShares) {
		ts.Tokens += n
		if estimated {
			ts.Estimated += n
		}
		endRun()
		// stageRuns hands each run whole: added up at once, as endRun
		// would, without a copy.
		ts.ByPosition[pos+1].mergeOnly(g, bs)
		decode.mergeOnly(g, bs)
		decodeTokens += n
	}
	keep := func(tb *TokenBreakdown) { stalls.keep(tb) }
	if res.trace != nil {
		w := newTokenWalker(res.trace, res)
		for ri := range res.Requests {
			w.passed(ri)
			l := modelLimits[res.models.of[ri]]
			if next = stageOnlyBuckets[:]; !w.stageRuns(ri, runs, l.ok, l.ns, token, run1, keep) {
				next = allBuckets[:]
				w.request(ri, token)
			}
		}
		w.free()
	}
	flush()
	// Every decode token is in one position group past the first.
	for i := range ts.ByPosition[1:] {
		ts.Decode.merge(&ts.ByPosition[1+i])
	}
	byTenant, byModel := namedGroups(tenants, res.tenants.names), namedGroups(models, res.models.names)
	findStalls(res, ts, byModel, stall, decodeTokens, &stalls)
	ts.Stalls.Worst = worst(ts.Stalls.Worst)
	ts.First.finish()
	ts.Decode.finish()
	for i := range ts.ByPosition {
		ts.ByPosition[i].finish()
	}
	ts.ByTenant = sortedGroups(byTenant)
	ts.ByModel = sortedGroups(byModel)
	ts.Unfilled, ts.StepsGPUVia = unfilled(res, ts)
	return ts
}

// onlyIn reports whether every bucket of v outside bs is zero.
func onlyIn(v *[NumBuckets]int64, bs []Bucket) bool {
	var in [NumBuckets]bool
	for _, b := range bs {
		in[b] = true
	}
	for b, x := range v {
		if x != 0 && !in[b] {
			return false
		}
	}
	return true
}

// allBuckets lists every bucket; stageOnlyBuckets those that stageSplit
// adds time to (stageBucket's and uncoveredBuckets'), all that the tokens of
// a request stageRuns sums can have time in, so that its sums are added up
// over these six alone (TestStageOnlyBuckets).
var (
	allBuckets = func() (all [NumBuckets]Bucket) {
		for b := range all {
			all[b] = Bucket(b)
		}
		return all
	}()
	stageOnlyBuckets = [...]Bucket{BucketQueue, BucketOther, BucketStagePrefill, BucketStageDecode, BucketStageInference, BucketUnattributed}
)

// addOnly is add for a token with time in the buckets bs alone.
func (g *BucketShares) addOnly(tb *TokenBreakdown, bs []Bucket) {
	g.Tokens++
	g.intervalNs += tb.Interval
	for _, b := range bs {
		g.sums[b] += tb.Buckets[b]
	}
}

// clearOnly clears g, whose buckets outside bs are zero (added to by
// addOnly and mergeOnly with bs alone).
func (g *BucketShares) clearOnly(bs []Bucket) {
	g.Tokens, g.intervalNs = 0, 0
	for _, b := range bs {
		g.sums[b] = 0
	}
}

// mergeOnly is merge of tokens with time in the buckets bs alone.
func (g *BucketShares) mergeOnly(h *BucketShares, bs []Bucket) {
	g.Tokens += h.Tokens
	g.intervalNs += h.intervalNs
	for _, b := range bs {
		g.sums[b] += h.sums[b]
	}
}

// merge adds the tokens of h to g.
func (g *BucketShares) merge(h *BucketShares) {
	g.Tokens += h.Tokens
	g.intervalNs += h.intervalNs
	for b, v := range h.sums {
		g.sums[b] += v
	}
}

// stallLimits is each model's stall threshold in ns: the one given, or 3×
// its median inter-token latency (TPOT where it has no ITL); models with
// none are left out.
func stallLimits(res *Result, stall time.Duration) map[string]int64 {
	thr := map[string]int64{}
	for _, m := range res.ByModel {
		v := stall.Nanoseconds()
		if v <= 0 {
			med := m.Metrics.ITL.P50
			if m.Metrics.ITL.N == 0 {
				med = m.Metrics.TPOT.P50
			}
			v = int64(3 * med * 1e6)
		}
		if v > 0 {
			thr[m.Name] = v
		}
	}
	return thr
}

// stallCandidatesMax bounds the tokens summarizeTokens keeps for findStalls
// (about 150 bytes each); past it findStalls walks the tokens again.
var stallCandidatesMax = 1 << 16

// stallCandidates are the decode tokens over their model's threshold, in
// walk order, unless there were too many to keep.
type stallCandidates struct {
	tokens   []TokenBreakdown
	overflow bool
}

func (c *stallCandidates) keep(tb *TokenBreakdown) {
	if c.overflow {
		return
	}
	if len(c.tokens) == stallCandidatesMax {
		c.tokens, c.overflow = nil, true
		return
	}
	c.tokens = append(c.tokens, *tb)
}

// findStalls finds the decode tokens over the threshold, now that each
// model's typical decode token is known: among the candidates the walk kept,
// or, when it kept too many, by walking the tokens a second time.
func findStalls(res *Result, ts *TokenSummary, models map[string]*BucketShares, stall time.Duration, decodeTokens int, cands *stallCandidates) {
	thr := map[string]int64{}
	typical := map[string]*[NumBuckets]float64{}
	ts.Stalls.ThresholdMs = map[string]float64{}
	ts.Stalls.ByCause = map[string]int{}
	ts.Stalls.Auto = stall <= 0
	limits := stallLimits(res, stall)
	for _, m := range res.ByModel {
		g := models[m.Name]
		if g == nil || g.Tokens == 0 {
			continue
		}
		v, ok := limits[m.Name]
		if !ok {
			continue
		}
		thr[m.Name] = v
		ts.Stalls.ThresholdMs[m.Name] = float64(v) / 1e6
		var mean [NumBuckets]float64
		for b := range mean {
			mean[b] = float64(g.sums[b]) / float64(g.Tokens)
		}
		typical[m.Name] = &mean
	}
	if len(thr) == 0 {
		return
	}
	check := func(tb *TokenBreakdown) {
		if tb.Index == 0 {
			return
		}
		model := res.Model(&res.Requests[tb.Request])
		if limit, ok := thr[model]; !ok || tb.Interval <= limit {
			return
		}
		ts.Stalls.Count++
		s := stallOf(res, tb, typical[model])
		ts.Stalls.ByCause[s.Cause]++
		if tb.Step < 0 {
			ts.Stalls.windowed = append(ts.Stalls.windowed, windowedStall{tb.EmittedAt - tb.Interval, tb.EmittedAt, s})
			return
		}
		ts.Stalls.add(s, tb.Step)
	}
	if cands.overflow {
		res.EachToken(check)
	} else {
		for i := range cands.tokens {
			check(&cands.tokens[i])
		}
	}
	ts.Stalls.mergeWindows()
	if decodeTokens > 0 {
		ts.Stalls.Share = float64(ts.Stalls.Count) / float64(decodeTokens)
	}
}

// add records a stall, folding the stalled tokens of one step into one
// event.
func (st *Stalls) add(s Stall, step int) {
	s.Tokens, s.Requests = 1, []string{s.Request}
	if step < 0 {
		st.Worst = append(st.Worst, s)
		return
	}
	if st.byStep == nil {
		st.byStep = map[int]int{}
	}
	if i, ok := st.byStep[step]; ok {
		ev := &st.Worst[i]
		ev.Tokens++
		if len(ev.Requests) < 5 {
			ev.Requests = append(ev.Requests, s.Request)
		}
		if s.IntervalMs > ev.IntervalMs {
			ev.IntervalMs, ev.Request, ev.Token, ev.Cause, ev.ExcessMs = s.IntervalMs, s.Request, s.Token, s.Cause, s.ExcessMs
		}
		return
	}
	st.byStep[step] = len(st.Worst)
	st.Worst = append(st.Worst, s)
}

// mergeWindows folds the stalls without a step into one event per time
// window: stalled intervals that overlap or touch (the evenly estimated
// tokens of one slow request, or requests slowed together) are one event,
// not one line per token.
func (st *Stalls) mergeWindows() {
	ws := st.windowed
	st.windowed = nil
	slices.SortFunc(ws, func(a, b windowedStall) int { return cmp.Or(cmp.Compare(a.from, b.from), cmp.Compare(a.to, b.to)) })
	for i := 0; i < len(ws); {
		ev := ws[i].s
		from, to := ws[i].from, ws[i].to
		ev.Tokens, ev.Requests = 1, []string{ev.Request}
		j := i + 1
		for ; j < len(ws) && ws[j].from <= to; j++ {
			w := &ws[j]
			to = max(to, w.to)
			ev.Tokens++
			if len(ev.Requests) < 5 && !slices.Contains(ev.Requests, w.s.Request) {
				ev.Requests = append(ev.Requests, w.s.Request)
			}
			if w.s.IntervalMs > ev.IntervalMs {
				ev.IntervalMs, ev.Request, ev.Tenant, ev.Token, ev.Cause, ev.ExcessMs = w.s.IntervalMs, w.s.Request, w.s.Tenant, w.s.Token, w.s.Cause, w.s.ExcessMs
			}
		}
		ev.WindowStartNs, ev.WindowMs = from, float64(to-from)/1e6
		st.Worst = append(st.Worst, ev)
		i = j
	}
}

func stallOf(res *Result, tb *TokenBreakdown, typical *[NumBuckets]float64) Stall {
	r := &res.Requests[tb.Request]
	s := Stall{Request: res.ID(r), Tenant: res.Tenant(r), Token: tb.Index, IntervalMs: float64(tb.Interval) / 1e6, Step: -1}
	cause, excess := BucketOther, math.Inf(-1)
	for b := Bucket(0); b < NumBuckets; b++ {
		if d := float64(tb.Buckets[b]) - typical[b]; d > excess {
			cause, excess = b, d
		}
	}
	s.Cause, s.ExcessMs = cause.String(), excess/1e6
	if tb.Step >= 0 {
		st := &res.Steps[tb.Step]
		s.Step, s.StepPhase, s.StepBatch = st.ID, st.Phase, st.Size
	}
	return s
}

func worst(ss []Stall) []Stall {
	slices.SortFunc(ss, func(a, b Stall) int {
		if c := cmp.Compare(b.IntervalMs, a.IntervalMs); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Request, b.Request); c != 0 {
			return c
		}
		return cmp.Compare(a.Token, b.Token)
	})
	if len(ss) > worstStalls {
		ss = ss[:worstStalls]
	}
	return ss
}

// namedGroups names the groups that have decode tokens, by their key.
func namedGroups(gs []BucketShares, names []string) map[string]*BucketShares {
	m := map[string]*BucketShares{}
	for g := range gs {
		if gs[g].Tokens > 0 {
			gs[g].Name = names[g]
			m[names[g]] = &gs[g]
		}
	}
	return m
}

func sortedGroups(m map[string]*BucketShares) []BucketShares {
	out := make([]BucketShares, 0, len(m))
	for _, g := range m {
		g.finish()
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b BucketShares) int {
		if c := cmp.Compare(b.Tokens, a.Tokens); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// unfilled says which buckets the input cannot fill instead of guessing them.
func unfilled(res *Result, ts *TokenSummary) ([]string, map[string]int) {
	var out []string
	via := map[string]int{}
	for i := range res.Steps {
		via[res.Steps[i].OpsVia.String()]++
	}
	switch {
	case len(res.Steps) == 0 && res.gpuEst != nil:
		ts.GPUEstimated = true
		ts.GPUEstimate = "gpu.* are estimated: with no llm.step spans, each request's GPU time is the kernels in its prefill and decode windows, shared among concurrent requests by their share of the batch (token rate); the first token gets the prefill share, the decode tokens the decode share evenly"
		out = append(out, "cpu.schedule, gpu.idle, cpu.postprocess, preempted: no llm.step spans (engine steps with their batches); the rest of the engine time is in stage.prefill, stage.decode, stage.inference where the input places those stages, else in other")
	case len(res.Steps) == 0:
		out = append(out, "cpu.schedule, gpu.*, gpu.idle, cpu.postprocess, preempted: no llm.step spans (engine steps with their batches); engine time is in stage.prefill, stage.decode, stage.inference where the input places those stages, else in other")
	case via["none"] == len(res.Steps):
		out = append(out, "gpu.*, gpu.idle, cpu.schedule, cpu.postprocess: no GPU data for the steps (add an nsys export of the engine); step time is in step (no GPU data)")
	case via["none"] > 0:
		out = append(out, fmt.Sprintf("%d of %d steps have no GPU ops; their time is in step (no GPU data)", via["none"], len(res.Steps)))
	}
	if n := unscheduled(res); n > 0 {
		out = append(out, fmt.Sprintf("queue, prefill, decode of %d of %d requests: no scheduling data (no llm.step spans; no queue or prefill stage before the first token, or no decode stage after it); that time is in unattributed", n, len(res.Requests)))
	}
	if ts.Estimated > 0 {
		out = append(out, fmt.Sprintf("%d token times estimated evenly from TTFT and TPOT (no llm.token events): per-token variance is not observed", ts.Estimated))
	}
	if len(via) == 0 {
		via = nil
	}
	return out, via
}

// unscheduled counts the requests with token time in unattributed.
func unscheduled(res *Result) int {
	n := 0
	for i := range res.tokenSums.refs {
		if res.tokenSums.all(i, BucketUnattributed) > 0 {
			n++
		}
	}
	return n
}
