package attribution

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
)

// Bucket is a token-level latency bucket (docs/design.md §7). The buckets of a token
// are disjoint and sum exactly to its interval. The GPU buckets are one per
// kernel category, in the category table's order (ingest/category.go), so a
// new category is a new bucket with no change here; the other buckets are
// the rows of bucketTable.
type Bucket uint8

const (
	// BucketQueue: the request was not yet scheduled.
	BucketQueue Bucket = iota
	// BucketPreempted: scheduled before, but the engine ran steps without it.
	BucketPreempted
	// BucketStepUnsplit: inside one of the request's steps, but the input
	// has no GPU data to split the step into the buckets below.
	BucketStepUnsplit
	// BucketCPUSchedule: step start to its first GPU op.
	BucketCPUSchedule
	// BucketGPUFirst is the first GPU bucket: GPU busy time by kernel
	// category, BucketGPUFirst + category.
	BucketGPUFirst
)

const (
	// BucketGPUIdle: gaps between a step's GPU ops (launch-bound time).
	BucketGPUIdle = BucketGPUFirst + Bucket(NumKernelCategories) + iota
	// BucketCPUPostprocess: a step's last GPU op to its end.
	BucketCPUPostprocess
	// BucketOther: the explicit remainder — pre-queue CPU work such as
	// tokenization, the engine loop between steps, output processing after
	// a step.
	BucketOther
	// BucketStagePrefill, BucketStageDecode and BucketStageInference: a
	// request with no engine step in the input, inside its prefill, decode
	// or inference stage (placed from latency attributes or stage spans):
	// engine time the stages locate but nothing splits.
	BucketStagePrefill
	BucketStageDecode
	BucketStageInference
	// BucketUnattributed: time of a request with no engine step that no
	// stage covers, before its first token when the input shows no queue,
	// prefill or inference stage, after it when it shows no decode or
	// inference stage: the input cannot say whether the request waited or
	// ran (stageWalk).
	BucketUnattributed
	NumBuckets
)

// The GPU buckets by name, for code that means one category.
const (
	BucketGPUGEMM           = BucketGPUFirst + Bucket(CategoryGEMM)
	BucketGPUAttention      = BucketGPUFirst + Bucket(CategoryAttention)
	BucketGPUCommunication  = BucketGPUFirst + Bucket(CategoryCommunication)
	BucketGPUNormActivation = BucketGPUFirst + Bucket(CategoryNormActivation)
	BucketGPUSampling       = BucketGPUFirst + Bucket(CategorySampling)
	BucketGPUMemcpy         = BucketGPUFirst + Bucket(CategoryMemcpy)
	BucketGPUMemset         = BucketGPUFirst + Bucket(CategoryMemset)
	BucketGPUOther          = BucketGPUFirst + Bucket(CategoryOther)
	// BucketGPULast is the last category's bucket.
	BucketGPULast = BucketGPUIdle - 1
)

// BucketInfo names a bucket in every place it appears.
type BucketInfo struct {
	// Name is the bucket as the JSON report, compare's samples and the diff
	// metrics (tokens.<Name>) spell it.
	Name string
	// Column is its --tokens column.
	Column string
	// Short is its heading in narrow terminal tables.
	Short string
	// Since is the --tokens contract version that added the column (see
	// ingest.CategoryInfo.Since).
	Since int
}

// bucketTable holds the buckets that are not GPU categories.
var bucketTable = map[Bucket]BucketInfo{
	BucketQueue:          {Name: "queue", Column: "queue_ns", Short: "queue", Since: 1},
	BucketPreempted:      {Name: "preempted", Column: "preempted_ns", Short: "preempted", Since: 1},
	BucketStepUnsplit:    {Name: "step_unsplit", Column: "step_unsplit_ns", Short: "step", Since: 2},
	BucketCPUSchedule:    {Name: "cpu.schedule", Column: "cpu_schedule_ns", Short: "sched", Since: 1},
	BucketGPUIdle:        {Name: "gpu.idle", Column: "gpu_idle_ns", Short: "idle", Since: 1},
	BucketCPUPostprocess: {Name: "cpu.postprocess", Column: "cpu_postprocess_ns", Short: "post", Since: 1},
	BucketOther:          {Name: "other", Column: "other_ns", Short: "other", Since: 1},
	BucketStagePrefill:   {Name: "stage.prefill", Column: "stage_prefill_ns", Short: "prefill", Since: 4},
	BucketStageDecode:    {Name: "stage.decode", Column: "stage_decode_ns", Short: "decode", Since: 4},
	BucketStageInference: {Name: "stage.inference", Column: "stage_inference_ns", Short: "infer", Since: 4},
	BucketUnattributed:   {Name: "unattributed", Column: "unattributed_ns", Short: "unattr", Since: 4},
}

// stageBucket is the token bucket of a stage's time in a request with no
// engine steps (stageWalk): the CPU stages around the engine are other, as
// they are between steps.
var stageBucket = [NumStages]Bucket{
	StageTokenize:   BucketOther,
	StageQueue:      BucketQueue,
	StagePrefill:    BucketStagePrefill,
	StageDecode:     BucketStageDecode,
	StageInference:  BucketStageInference,
	StageDetokenize: BucketOther,
	StageStream:     BucketOther,
	StageOther:      BucketOther,
}

// prefillStages and decodeStages are the stages that say where a request
// was before its first token and after it: without one of them (and without
// steps) the time there that no stage covers is unattributed, not other.
const (
	prefillStages = 1<<StageQueue | 1<<StagePrefill | 1<<StageInference
	decodeStages  = 1<<StageDecode | 1<<StageInference
)

// uncoveredBuckets says where the time no stage covers goes in a request
// with no steps, before its first token and after it.
func (r *Request) uncoveredBuckets() (before, after Bucket) {
	before, after = BucketUnattributed, BucketUnattributed
	if r.present&prefillStages != 0 {
		before = BucketOther
	}
	if r.present&decodeStages != 0 {
		after = BucketOther
	}
	return before, after
}

// Info returns the bucket's names.
func (b Bucket) Info() BucketInfo {
	if c, ok := b.Category(); ok {
		ci := c.Info()
		return BucketInfo{Name: "gpu." + ci.Key, Column: "gpu_" + ci.Key + "_ns", Short: ci.Short, Since: ci.Since}
	}
	if bi, ok := bucketTable[b]; ok {
		return bi
	}
	return BucketInfo{Name: "bucket" + strconv.Itoa(int(b))}
}

// Category returns the kernel category of a GPU bucket.
func (b Bucket) Category() (KernelCategory, bool) {
	if b >= BucketGPUFirst && b <= BucketGPULast {
		return KernelCategory(b - BucketGPUFirst), true
	}
	return 0, false
}

func (b Bucket) String() string { return b.Info().Name }

// Buckets returns every bucket, in Bucket order.
func Buckets() []Bucket {
	out := make([]Bucket, NumBuckets)
	for i := range out {
		out[i] = Bucket(i)
	}
	return out
}

// BucketNames lists the token bucket names in Bucket order.
func BucketNames() []string {
	out := make([]string, NumBuckets)
	for b := range NumBuckets {
		out[b] = b.String()
	}
	return out
}

// gpuBucket maps a kernel category to its token bucket.
func gpuBucket(c KernelCategory) Bucket { return BucketGPUFirst + Bucket(c) }

// gpuPriority decides which op owns an instant when ops overlap on several
// streams (ingest.CategoryInfo.Overlap); lower value wins.
var gpuPriority = func() (p [NumBuckets]int) {
	for b := BucketGPUFirst; b <= BucketGPULast; b++ {
		c, _ := b.Category()
		p[b] = c.Info().Overlap
	}
	return p
}()

// TokenBreakdown decomposes one output token's interval (previous token,
// this token] — (arrival, first token] for the first.
type TokenBreakdown struct {
	Request   int
	Index     int
	EmittedAt int64
	Interval  int64
	Buckets   [NumBuckets]int64
	// Estimated marks a token time derived from request-level figures
	// (first token, TPOT) rather than observed.
	Estimated bool
	// GPUEstimated marks GPU buckets estimated from the kernels in the
	// request's prefill and decode windows (no engine steps in the input;
	// attribution/gpuestimate.go), not joined through its steps.
	GPUEstimated bool
	// Step is the request's step that took longest in this interval, the
	// likely cause of a slow token (−1: none).
	Step int
}

// tokenWalker computes token breakdowns. It caches each step's split (a step
// is shared by its whole batch) and is reused for every request.
type tokenWalker struct {
	t     *ingest.Trace
	res   *Result
	cats  *CategoryCache
	parts []stepParts
	times []int64 // the estimated token times of the request walked
	// reqSteps are each request's steps by start.
	reqSteps rowLists
	// tb and run are stageRuns' values handed to its callbacks, kept here
	// so that they are not allocated for every request.
	tb  TokenBreakdown
	run BucketShares
	// opsBehind and partsBehind drop the pages of the ops and of the
	// steps' parts that the walk has passed (passed).
	opsBehind, partsBehind spill.Behind
}

type stepParts struct {
	done        bool
	hasOps      bool
	first, last int64 // GPU region, clipped to the step
	gpu         [NumBuckets]int64
}

// newTokenWalker makes the walker of res's tokens. Its arrays, of a value
// a step and a request (184 and 8 bytes; 35 MB of parts on an 817 MB run),
// are tables (spill.Slice) its caller gives back (free) once it has walked.
func newTokenWalker(t *ingest.Trace, res *Result) *tokenWalker {
	w := &tokenWalker{t: t, res: res, cats: NewCategoryCache(t), parts: spill.Make[stepParts](len(res.Steps))}
	w.opsBehind, w.partsBehind = spill.DropBehind(t.GPUOps), spill.DropBehind(w.parts)
	w.reqSteps = newRowLists(len(res.Requests), func(emit func(row, value int32)) {
		for si := range res.Steps {
			for _, r := range res.Steps[si].Requests {
				emit(r, int32(si))
			}
		}
	})
	return w
}

// passed says the walk, which takes the requests by arrival, has come to
// request ri. A request's steps start after it arrives, so the requests to
// come read, nearly, only the steps from ri's first on and their ops: the
// pages before them are dropped when the process is over its memory budget
// (spill.Behind; a later request scheduled before ri was reads some again,
// and they are faulted in again).
func (w *tokenWalker) passed(ri int) {
	steps := w.reqSteps.of(ri)
	if len(steps) == 0 {
		return
	}
	si := int(steps[0])
	w.partsBehind.Passed(si)
	if ops := w.res.Steps[si].Ops; len(ops) > 0 {
		w.opsBehind.Passed(int(ops[0]))
	}
}

// free gives back the walker's tables: nothing may use it afterwards.
func (w *tokenWalker) free() {
	spill.Free(w.parts)
	w.reqSteps.free()
	w.parts = nil
}

// split returns the step's cached parts.
func (w *tokenWalker) split(si int) *stepParts {
	p := &w.parts[si]
	if p.done {
		return p
	}
	p.done = true
	st := &w.res.Steps[si]
	p.first, p.last = st.Start, st.Start
	if len(st.Ops) == 0 {
		return p
	}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for _, oi := range st.Ops {
		if o := &w.t.GPUOps[oi]; o.Busy() {
			first, last = min(first, o.Start), max(last, o.End)
		}
	}
	if first > last {
		return p // only synchronizations: no GPU work seen
	}
	p.hasOps = true
	p.first = min(max(first, st.Start), st.End)
	p.last = max(min(last, st.End), p.first)
	w.gpuSweep(st, p.first, p.last, &p.gpu)
	return p
}

// gpuSweep adds to out the GPU buckets of [lo, hi) for the step's ops: busy
// time by category (overlaps resolved by gpuPriority) and idle time.
func (w *tokenWalker) gpuSweep(st *Step, lo, hi int64, out *[NumBuckets]int64) {
	if hi <= lo {
		return
	}
	type edge struct {
		at    int64
		b     Bucket
		delta int
	}
	edges := make([]edge, 0, 2*len(st.Ops))
	sequential := true
	prevEnd := int64(math.MinInt64)
	for _, oi := range st.Ops {
		o := &w.t.GPUOps[oi]
		if !o.Busy() {
			continue // a CPU-side wait recorded on the GPU timeline, not GPU work
		}
		a, b := max(o.Start, lo), min(o.End, hi)
		if b <= a {
			continue
		}
		if a < prevEnd {
			sequential = false
		}
		prevEnd = max(prevEnd, b)
		bk := gpuBucket(w.cats.Of(o))
		edges = append(edges, edge{a, bk, +1}, edge{b, bk, -1})
	}
	if sequential {
		// One stream, ops in order: busy time per op, idle in between.
		var busy int64
		for i := 0; i < len(edges); i += 2 {
			d := edges[i+1].at - edges[i].at
			out[edges[i].b] += d
			busy += d
		}
		out[BucketGPUIdle] += (hi - lo) - busy
		return
	}
	slices.SortFunc(edges, func(x, y edge) int { return cmp.Compare(x.at, y.at) })
	var active [NumBuckets]int
	cur := lo
	owner := func() Bucket {
		best, bp := BucketGPUIdle, math.MaxInt
		for b := BucketGPUFirst; b <= BucketGPULast; b++ {
			if active[b] > 0 && gpuPriority[b] < bp {
				best, bp = b, gpuPriority[b]
			}
		}
		return best
	}
	for _, e := range edges {
		if e.at > cur {
			out[owner()] += e.at - cur
			cur = e.at
		}
		active[e.b] += e.delta
	}
	out[BucketGPUIdle] += hi - cur
}

// addStep attributes [lo, hi) ∩ step si to buckets.
func (w *tokenWalker) addStep(si int, lo, hi int64, out *[NumBuckets]int64) {
	st := &w.res.Steps[si]
	lo, hi = max(lo, st.Start), min(hi, st.End)
	if hi <= lo {
		return
	}
	p := w.split(si)
	if !p.hasOps {
		out[BucketStepUnsplit] += hi - lo
		return
	}
	out[BucketCPUSchedule] += overlap(lo, hi, st.Start, p.first)
	out[BucketCPUPostprocess] += overlap(lo, hi, p.last, st.End)
	if lo <= p.first && hi >= p.last {
		for b := BucketGPUFirst; b <= BucketGPUIdle; b++ {
			out[b] += p.gpu[b]
		}
		return
	}
	w.gpuSweep(st, max(lo, p.first), min(hi, p.last), out)
}

func overlap(a, b, c, d int64) int64 { return max(0, min(b, d)-max(a, c)) }

// tokenTimes returns the request's token emission times, estimating them
// evenly between first and last token when the input has no token events
// (no variance is invented: every gap is the mean). Estimated times are
// written into buf, which the walker reuses from request to request.
func tokenTimes(res *Result, r *Request, buf []int64) ([]int64, bool) {
	if r.tokens.Len > 0 {
		return res.TokenTimes(r), false
	}
	if r.FirstToken == 0 || r.OutputTokens < 1 {
		return nil, false
	}
	n := r.OutputTokens
	if n == 1 || r.LastToken <= r.FirstToken {
		return append(buf[:0], r.FirstToken), true
	}
	out := slices.Grow(buf[:0], n)[:n]
	span := r.LastToken - r.FirstToken
	for i := range out {
		out[i] = r.FirstToken + int64(float64(span)*float64(i)/float64(n-1))
	}
	out[n-1] = r.LastToken
	return out, true
}

// request walks one request's tokens, calling fn with each breakdown (the
// value is reused between calls).
func (w *tokenWalker) request(ri int, fn func(*TokenBreakdown)) {
	r := &w.res.Requests[ri]
	times, estimated := tokenTimes(w.res, r, w.times)
	if len(times) == 0 {
		return
	}
	if estimated {
		w.times = times
	}
	steps := w.reqSteps.of(ri)
	if len(steps) == 0 {
		w.stageWalk(ri, times, estimated, fn)
		return
	}
	// First scheduling: the first step.
	firstSched := w.res.Steps[steps[0]].Start
	engineSteps := w.res.Engines[w.res.Steps[steps[0]].Engine].Steps
	var tb TokenBreakdown
	p := 0 // next of the request's steps to consider
	for i, to := range times {
		var from int64
		if tb, from = tokenInterval(r, ri, i, times, estimated); to < from { // out-of-order token events: nothing to split
			fn(&tb)
			continue
		}
		cursor := from
		var longest int64
		for p < len(steps) {
			si := int(steps[p])
			st := &w.res.Steps[si]
			if st.End <= cursor {
				p++
				continue
			}
			if st.Start >= to {
				break
			}
			w.gap(r, cursor, st.Start, firstSched, engineSteps, true, &tb.Buckets)
			lo, hi := max(st.Start, cursor), min(st.End, to)
			w.addStep(si, lo, hi, &tb.Buckets)
			if hi-lo > longest {
				longest, tb.Step = hi-lo, si
			}
			cursor = max(cursor, hi)
			if st.End > to {
				break
			}
			p++
		}
		w.gap(r, cursor, to, firstSched, engineSteps, p < len(steps), &tb.Buckets)
		fn(&tb)
	}
}

// tokenInterval starts token i's breakdown: its interval runs from the
// previous token (the request's arrival for the first) to its own time; an
// out-of-order token (to < from) has an empty one.
func tokenInterval(r *Request, ri, i int, times []int64, estimated bool) (TokenBreakdown, int64) {
	to, from := times[i], r.Arrival
	if i > 0 {
		from = times[i-1]
	}
	tb := TokenBreakdown{Request: ri, Index: i, EmittedAt: to, Interval: max(to-from, 0), Estimated: estimated, Step: -1}
	return tb, from
}

// stageWalk splits the tokens of a request that ran in no engine step the
// input shows by the request's stages (partition's segments): queue is
// queue, prefill, decode and inference their stage buckets, the CPU stages
// other. Time no stage covers is other where the input places the engine's
// part of that phase (a queue, prefill or inference stage before the first
// token, a decode or inference stage after it) and unattributed where it
// does not: such an input says neither when the request was scheduled nor
// whether it waited, so none of it is queue.
func (w *tokenWalker) stageWalk(ri int, times []int64, estimated bool, fn func(*TokenBreakdown)) {
	r := &w.res.Requests[ri]
	before, after := r.uncoveredBuckets()
	segs := w.res.segments(r)
	var tb TokenBreakdown
	for i, to := range times {
		var from int64
		if tb, from = tokenInterval(r, ri, i, times, estimated); to < from { // out-of-order token events: nothing to split
			fn(&tb)
			continue
		}
		segs = stageSplit(r, segs, before, after, from, to, &tb.Buckets)
		if est := w.res.gpuEst; est != nil {
			est.addEstimatedGPU(ri, i, len(times), &tb.Buckets)
			tb.GPUEstimated = true
		}
		fn(&tb)
	}
}

// stageSplit adds to out stageWalk's buckets of [from, to) in request r:
// each instant goes to the bucket of the stage segment that holds it, or to
// before or after (the request's uncoveredBuckets) as it lies before its
// first token or not. The split is of instants, so that of a stretch is the
// sum of those of its parts: summing the tokens of a run (stageRuns) needs
// no per-token split. segs are r's segments from one that ends after from;
// the ones the next, later stretch can skip are returned trimmed.
func stageSplit(r *Request, segs []StageSegment, before, after Bucket, from, to int64, out *[NumBuckets]int64) []StageSegment {
	uncovered := func(lo, hi int64) {
		if hi <= lo {
			return
		}
		cut := min(max(r.FirstToken, lo), hi)
		out[before] += cut - lo
		out[after] += hi - cut
	}
	cursor := from
	for len(segs) > 0 && segs[0].To <= cursor {
		segs = segs[1:]
	}
	for _, sg := range segs {
		if sg.From >= to {
			break
		}
		lo, hi := max(sg.From, cursor), min(sg.To, to)
		if hi <= lo {
			continue
		}
		uncovered(cursor, lo)
		out[stageBucket[sg.Stage]] += hi - lo
		cursor = hi
	}
	uncovered(cursor, to)
	return segs
}

// stageRuns is summarizeTokens' shortcut through a request that stageWalk
// would split token by token, when its decode tokens come in time order and
// no GPU estimate is added: the first token goes to first as stageWalk
// passes it; the decode tokens go to run once per index range of runs
// (1 ≤ lo < hi ≤ the tokens), summed as one stretch from token lo−1 to
// token hi−1 (stageSplit), which is exactly the sum of their splits; and
// each decode token whose interval exceeds limit (with hasLimit) to stall,
// split alone, in index order. Evenly estimated token times are computed
// only at the runs' ends when no interval can exceed limit. ok is false, with nothing called, for a
// request the shortcut does not cover: walk it token by token.
func (w *tokenWalker) stageRuns(ri int, runs [][2]int, hasLimit bool, limit int64,
	first func(*TokenBreakdown), run func(pos, n int, estimated bool, g *BucketShares), stall func(*TokenBreakdown)) bool {
	if len(w.reqSteps.of(ri)) > 0 || w.res.gpuEst != nil {
		return false
	}
	r := &w.res.Requests[ri]
	var (
		times     []int64
		estimated bool
		n         int
		at        func(i int) int64 // token i's time
	)
	if span, k := r.LastToken-r.FirstToken, r.OutputTokens; r.tokens.Len == 0 && r.FirstToken != 0 && k > 1 && span > 0 &&
		(!hasLimit || span/int64(k-1)+3 <= limit) {
		// Evenly estimated times (tokenTimes' formula, in time order by
		// construction) that no stall can be among, whatever the rounding:
		// only the runs' ends are needed.
		estimated, n = true, k
		at = func(i int) int64 {
			if i == k-1 {
				return r.LastToken
			}
			return r.FirstToken + int64(float64(span)*float64(i)/float64(k-1))
		}
		hasLimit = false
	} else {
		times, estimated = tokenTimes(w.res, r, w.times)
		if len(times) == 0 {
			return true
		}
		if estimated {
			w.times = times
		}
		for i := 1; i < len(times); i++ {
			if times[i] < times[i-1] {
				return false
			}
		}
		n = len(times)
		at = func(i int) int64 { return times[i] }
	}
	before, after := r.uncoveredBuckets()
	segs := w.res.segments(r)
	// w.tb and w.run have time in stageOnlyBuckets alone, the buckets
	// stageSplit adds to (TestStageOnlyBuckets), which are all that are
	// cleared here: clearing every bucket of both, for the first token and
	// each run of every request, was a fifth of this function's time.
	tb, from := &w.tb, r.Arrival
	tb.Request, tb.Index, tb.EmittedAt, tb.Interval = ri, 0, at(0), max(at(0)-r.Arrival, 0)
	tb.Estimated, tb.GPUEstimated, tb.Step = estimated, false, -1
	clearBuckets(&tb.Buckets, stageOnlyBuckets[:])
	if at(0) >= from {
		stageSplit(r, segs, before, after, from, at(0), &tb.Buckets)
	}
	first(tb)
	for pos, rg := range runs {
		lo, hi := max(rg[0], 1), min(rg[1], n)
		if lo >= hi {
			continue
		}
		g := &w.run
		g.Tokens, g.intervalNs = hi-lo, at(hi-1)-at(lo-1)
		clearBuckets(&g.sums, stageOnlyBuckets[:])
		stageSplit(r, segs, before, after, at(lo-1), at(hi-1), &g.sums)
		run(pos, hi-lo, estimated, g)
		if !hasLimit {
			continue
		}
		for i := lo; i < hi; i++ {
			if times[i]-times[i-1] > limit {
				*tb, from = tokenInterval(r, ri, i, times, estimated)
				stageSplit(r, segs, before, after, from, times[i], &tb.Buckets)
				stall(tb)
			}
		}
	}
	return true
}

// clearBuckets zeroes the buckets bs of sums.
func clearBuckets(sums *[NumBuckets]int64, bs []Bucket) {
	for _, b := range bs {
		sums[b] = 0
	}
}

// gap attributes [x, y), a stretch of the life of a request with steps
// outside them: before its first step it is queue (tokenization → other);
// after, it is preempted from the first engine step that ran without the
// request, when the request has a step still to come, and other otherwise.
func (w *tokenWalker) gap(r *Request, x, y, firstSched int64, engineSteps []int, moreSteps bool, out *[NumBuckets]int64) {
	if y <= x {
		return
	}
	if x < firstSched {
		pre := min(y, firstSched)
		// Before the queue (tokenize, or time the input does not name) is
		// other; the queue bucket starts where the queue stage does.
		tok := overlap(x, pre, r.Arrival, r.queueFrom)
		out[BucketOther] += tok
		out[BucketQueue] += pre - x - tok
		x = pre
		if y <= x {
			return
		}
	}
	if moreSteps && len(engineSteps) > 0 {
		k, _ := slices.BinarySearchFunc(engineSteps, x, func(si int, at int64) int {
			if w.res.Steps[si].End <= at {
				return -1
			}
			return 1
		})
		if k < len(engineSteps) {
			if s := w.res.Steps[engineSteps[k]].Start; s < y {
				p := max(s, x)
				out[BucketOther] += p - x
				out[BucketPreempted] += y - p
				return
			}
		}
	}
	out[BucketOther] += y - x
}
