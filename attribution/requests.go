package attribution

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
)

// Stage is a request-level latency bucket. The stages of a request are
// disjoint and, with Other, sum exactly to its E2E.
type Stage uint8

const (
	StageTokenize Stage = iota
	StageQueue
	StagePrefill
	StageDecode
	// StageInference is prefill and decode together, used only when the
	// source does not split them (TGI's inference_time, Triton's compute).
	StageInference
	StageDetokenize
	StageStream
	// StageOther is the explicit remainder: time inside the request that no
	// stage covers.
	StageOther
	NumStages
)

var stageNames = [...]string{"tokenize", "queue", "prefill", "decode", "inference", "detokenize", "stream", "other"}

// StageNames lists the stage names in Stage order.
func StageNames() []string { return append([]string(nil), stageNames[:]...) }

func (s Stage) String() string {
	if int(s) < len(stageNames) {
		return stageNames[s]
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// stagePriority decides which stage owns an instant covered by several
// (overlapping spans, e.g. a prefill span that contains the decode span under
// disaggregated serving): the earlier in this list wins.
var stagePriority = []Stage{StageQueue, StagePrefill, StageDecode, StageInference, StageTokenize, StageDetokenize, StageStream}

// stageRank is each stage's rank in stagePriority (higher wins; 0: none).
var stageRank = func() (rank [NumStages]int) {
	for i, st := range stagePriority {
		rank[st] = len(stagePriority) - i
	}
	return rank
}()

// stageOwner is the stage that owns an instant the stages of a set claim,
// by the set (bit st for stage st, StageOther's left out): the one of the
// highest rank (stageRank), StageOther for none. partitionInto reads it
// once a segment, where a search of the claiming stages' ranks was a
// third of its time.
var stageOwner = func() (owner [1 << StageOther]Stage) {
	for set := range owner {
		best, bestRank := StageOther, 0
		for st := Stage(0); st < StageOther; st++ {
			if set&(1<<st) != 0 && stageRank[st] > bestRank {
				best, bestRank = st, stageRank[st]
			}
		}
		owner[set] = best
	}
	return owner
}()

// Style names the convention a request was recognized in.
type Style string

const (
	StyleLLMProf Style = "llmprof" // llm.request and llm.* stage spans
	StyleVLLM    Style = "vllm"    // llm_request with gen_ai.latency.* (also TensorRT-LLM)
	StyleSGLang  Style = "sglang"  // "<role> Req <rid>" with stage slices
	StyleTGI     Style = "tgi"     // generate / generate_stream handler spans
	StyleTriton  Style = "triton"  // InferRequest with timestamp events
	StyleGenAI   Style = "genai"   // client-side GenAI / OpenLIT / OpenLLMetry / Langfuse
)

// styleRank ranks conventions when two request spans describe the same
// request (one nested in the other): the richer, server-side view wins.
// byRank is the convention of each rank.
type styleRank uint8

var byRank = [...]Style{1: StyleGenAI, 2: StyleTriton, 3: StyleTGI, 4: StyleSGLang, 5: StyleVLLM, 6: StyleLLMProf}

// rankOf is the rank of a convention byRank names (0 for none).
func rankOf(st Style) styleRank {
	return styleRank(max(0, slices.Index(byRank[:], st)))
}

// Request is one request's latency facts. Times are ns on the reference
// clock; metric fields are NaN when the input cannot tell.
type Request struct {
	// id, tenant, model and finish are the request's strings, read
	// through its Result (Result.ID, Tenant, Model, Finish): labels of the
	// trace's string table, so that a Request holds no pointer.
	id, tenant, model, finish label
	// rank is the convention the request was recognized in (Style).
	rank styleRank
	// estimated has bit m set when metric m (estimatedNames) is derived
	// under assumptions rather than measured (e.g. TGI's TTFT from its
	// per-token average).
	estimated uint8
	// present has bit st set when the input shows stage st for this request
	// (a span or an attribute), even with zero length. fromSpans has bit st
	// set when a stage span (not an attribute or a timestamp event) shows
	// stage st. A byte each holds every stage (TestRequestSize).
	present, fromSpans uint8
	// Source, the cache's two flags and the bytes above fill one word
	// after the labels, where two half-empty words made a Request 8 bytes
	// longer. A Request is 216 bytes (TestRequestSize): what only its
	// build and tally read (the e2e attribute, the caller's extra time,
	// the cache hit ratio) is not kept, its gaps are derived from its
	// segments (Result.Gaps), and the token sums' one use of the tokenize
	// and queue stages' bounds is one field (queueFrom). The request
	// table is a spill file past the budget (internal/spill), where each
	// of its pages is zeroed, faulted in and, after the governor drops
	// it, faulted in again at every walk: 256 bytes a request made it
	// 36.2 MiB on the 100 MiB OTLP dump, 216 make it 30.6 MiB (docs/otlp.md,
	// the seventeenth pass).
	Source ingest.SourceID
	// CacheKnown says whether the input reports the prefix cache for this
	// request, CacheHit what it reports (CachedTokens below).
	CacheKnown bool
	CacheHit   bool
	// Span indexes the request span in the trace.
	Span int

	Arrival int64
	End     int64
	// tokens are the token emission times (Result.TokenTimes), when the
	// input has per-token events.
	tokens extent
	// FirstToken and LastToken are emission times (0 when unknown).
	FirstToken int64
	LastToken  int64

	InputTokens  int // −1 when unknown
	OutputTokens int // −1 when unknown

	// Metrics in ns (NaN when unknown).
	TTFT  float64
	TPOT  float64
	E2E   float64
	Queue float64

	// Stages partition E2E: their sum equals End − Arrival exactly.
	Stages [NumStages]int64
	// segs are the stretches of the request each stage owns after
	// partition (StageOther left out), disjoint and in time order
	// (Result.segments). Its gaps, the stretches between them, are
	// derived (Result.Gaps).
	segs extent
	// QueueEnd is where the queue stage ends (0 when the input has no
	// queue stage).
	QueueEnd int64
	// queueFrom is where the token sums' queue bucket may start before a
	// request's first engine step (tokenWalker.gap): the later of the
	// tokenize stage's end and the queue stage's start, 0 when the input
	// has neither.
	queueFrom int64
	// CachedTokens is how many prompt tokens the input says were cached
	// (−1 when unknown).
	CachedTokens int
}

// ITLs returns the gaps between consecutive token emissions, in ns.
func (res *Result) ITLs(r *Request) []int64 {
	tokens := res.TokenTimes(r)
	if len(tokens) < 2 {
		return nil
	}
	out := make([]int64, len(tokens)-1)
	for i := 1; i < len(tokens); i++ {
		out[i-1] = tokens[i] - tokens[i-1]
	}
	return out
}

// Style is the convention the request was recognized in.
func (r *Request) Style() Style { return byRank[r.rank] }

// Metrics a request may have estimated (Request.Estimated), by bit.
const (
	estimatedTTFT = iota
	estimatedTPOT
	estimatedPrefill
	estimatedDecode
)

var estimatedNames = [...]string{estimatedTTFT: "ttft", estimatedTPOT: "tpot", estimatedPrefill: "prefill", estimatedDecode: "decode"}

func (r *Request) estimate(metric int) { r.estimated |= 1 << metric }

// Estimated lists the metrics derived under assumptions rather than
// measured, of ttft, tpot, prefill and decode in that order.
func (r *Request) Estimated() []string {
	var out []string
	for m, name := range estimatedNames {
		if r.estimated&(1<<m) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// Has reports whether the input shows stage st for the request (a stage
// span or attribute, possibly of zero length).
func (r *Request) Has(st Stage) bool { return r.present&(1<<st) != 0 }

// spanIndex resolves the OTLP spans' parent links once, for walking request
// trees.
type spanIndex struct {
	t *ingest.Trace
	// parents holds each span's parent (the first OTLP span of its trace
	// and parent span ID), −1 for none: a root, a parent not in the input,
	// or a link cut by cutCycles. One array lookup a step up the tree, and
	// nothing in it for the collector to scan.
	parents []int32
	// edges are the parent links between OTLP spans, by parent, each
	// parent's children in span order.
	edges []spanEdge
	// cut holds the spans whose parent link closed a loop (A's parent B,
	// B's parent A; a span its own parent): their parent is taken as
	// absent, so every walk up or down the tree ends. Nil when none.
	cut map[int32]bool
}

type spanKey struct {
	trace ingest.TraceID
	span  ingest.SpanID
}

type spanEdge struct{ parent, child int32 }

func newSpanIndex(t *ingest.Trace) *spanIndex {
	withID := 0
	for i := range t.Spans {
		if s := &t.Spans[i]; s.Origin == ingest.OriginOTLP && !s.ID.IsZero() {
			withID++
		}
	}
	// byID holds the first span of each span ID; other the first of each
	// trace and span ID whose span ID byID holds for another trace. Span
	// IDs are random 64-bit numbers, so other is almost always empty and
	// a lookup hashes 8 bytes, not 24.
	byID := ingest.NewSpanIDTable(withID)
	var other map[spanKey]int32
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin != ingest.OriginOTLP || s.ID.IsZero() {
			continue
		}
		j, seen := byID.PutFirst(s.ID, int32(i))
		switch {
		case !seen:
			// The first of its ID: put.
		case t.Spans[j].TraceID != s.TraceID:
			k := spanKey{s.TraceID, s.ID}
			if other == nil {
				other = map[spanKey]int32{}
			}
			if _, dup := other[k]; !dup {
				other[k] = int32(i)
			}
		}
	}
	ix := &spanIndex{t: t, parents: make([]int32, len(t.Spans))}
	linked := 0
	for i := range t.Spans {
		ix.parents[i] = -1
		s := &t.Spans[i]
		if s.Parent.IsZero() {
			continue
		}
		j, ok := byID.Get(s.Parent)
		if ok && t.Spans[j].TraceID != s.TraceID {
			j, ok = other[spanKey{s.TraceID, s.Parent}]
		}
		if ok {
			ix.parents[i] = j
			linked++
		}
	}
	ix.cutCycles()
	ix.edges = make([]spanEdge, 0, linked-len(ix.cut))
	for i, p := range ix.parents {
		if p >= 0 && t.Spans[i].Origin == ingest.OriginOTLP {
			ix.edges = append(ix.edges, spanEdge{p, int32(i)})
		}
	}
	slices.SortFunc(ix.edges, func(a, b spanEdge) int {
		if c := cmp.Compare(a.parent, b.parent); c != 0 {
			return c
		}
		return cmp.Compare(a.child, b.child)
	})
	return ix
}

func (ix *spanIndex) parent(i int) (int, bool) {
	p := ix.parents[i]
	return int(p), p >= 0
}

// cutCycles finds the loops among the parent links (each span has one
// parent at most, so a walk up from any span either ends or comes back to a
// span of the walk) and cuts each loop's closing link: the walk from the
// first span (in trace order) that reaches the loop cuts the link back to
// a span already on it. A shared or damaged capture can hold such loops;
// uncut, the walks up to a request's root and down its subtree never end.
// One byte a span while it runs.
func (ix *spanIndex) cutCycles() {
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(ix.t.Spans))
	var path []int
	for i := range ix.t.Spans {
		if state[i] != unseen {
			continue
		}
		path = path[:0]
		for n := i; ; {
			state[n] = onPath
			path = append(path, n)
			p, ok := ix.parent(n)
			if !ok || state[p] == done {
				break
			}
			if state[p] == onPath {
				if ix.cut == nil {
					ix.cut = map[int32]bool{}
				}
				ix.cut[int32(n)] = true
				ix.parents[n] = -1
				break
			}
			n = p
		}
		for _, n := range path {
			state[n] = done
		}
	}
}

// children returns the edges from span i to its children.
func (ix *spanIndex) children(i int) []spanEdge {
	lo, _ := slices.BinarySearchFunc(ix.edges, int32(i), func(e spanEdge, p int32) int { return cmp.Compare(e.parent, p) })
	hi := lo
	for hi < len(ix.edges) && ix.edges[hi].parent == int32(i) {
		hi++
	}
	return ix.edges[lo:hi]
}

// descendants returns the subtree below span i (not i itself), depth
// first, the last child first.
func (ix *spanIndex) descendants(i int) []int {
	var stack []int
	return ix.appendDescendants(nil, i, &stack)
}

// appendDescendants is descendants(i) in out's array (out empty), the walk
// in stack's.
func (ix *spanIndex) appendDescendants(out []int, i int, stack *[]int) []int {
	st := (*stack)[:0]
	push := func(n int) {
		for _, e := range ix.children(n) {
			st = append(st, int(e.child))
		}
	}
	push(i)
	for len(st) > 0 && len(out) < 1_000_000 {
		n := st[len(st)-1]
		st = st[:len(st)-1]
		out = append(out, n)
		push(n)
	}
	*stack = st
	return out
}

// classify says whether span i is a request span, and in which convention.
func classify(t *ingest.Trace, k *keyCache, s *ingest.Span) (Style, bool) {
	if s.Origin != ingest.OriginOTLP {
		return "", false
	}
	name := t.Str(s.Name)
	switch name {
	case ingest.SpanRequest:
		return StyleLLMProf, true
	case ingest.SpanRequestVLLM:
		return StyleVLLM, true
	case "InferRequest":
		return StyleTriton, true
	}
	// SGLang roots carry gen_ai.latency.* too: the name decides first,
	// with one of the attributes SGLang sets on them (rid and module in
	// every generation, the gen_ai ones once the request finished).
	if sglangRoot(name) {
		if _, _, ok := k.first(t.SpanAttrs(s), keySGLangRoot); ok {
			return StyleSGLang, true
		}
	}
	if _, _, ok := k.first(t.SpanAttrs(s), keyE2E); ok {
		return StyleVLLM, true
	}
	if _, _, ok := k.first(t.SpanAttrs(s), keyTTFT); ok {
		return StyleGenAI, true
	}
	if strings.Contains(name, " Req ") {
		if _, ok := k.str(t.SpanAttrs(s), keyRID); ok {
			return StyleSGLang, true
		}
	}
	if _, _, ok := k.first(t.SpanAttrs(s), keyTGITimes); ok {
		return StyleTGI, true
	}
	if op, ok := k.str(t.SpanAttrs(s), keyOperation); ok {
		switch op {
		case "chat", "text_completion", "generate_content":
			return StyleGenAI, true
		}
	}
	if kind, ok := k.str(t.SpanAttrs(s), keyOpenInferenceKind); ok && kind == "LLM" {
		return StyleGenAI, true
	}
	if _, _, ok := k.first(t.SpanAttrs(s), keyCompletionStart); ok {
		return StyleGenAI, true
	}
	return "", false
}

// keySGLangRoot are attributes of which an SGLang root carries at least one.
var keySGLangRoot = keys("rid", "module", "bootstrap_room", "gen_ai.request.id", "gen_ai.latency.e2e", "gen_ai.latency.time_to_first_token")

// keyTokenEvent names the token events (resolved like a key, once).
var keyTokenEvent = keys("llm.token")

// keyTritonEvents names Triton's timestamp events that place a request's
// queue and inference, in tritonEvent order.
var keyTritonEvents = keys("QUEUE_START", "COMPUTE_START", "COMPUTE_END")

// tritonEvent numbers keyTritonEvents' names.
type tritonEvent uint8

const (
	queueStart tritonEvent = iota
	computeStart
	computeEnd
	numTritonEvents
)

// tritonEventOf is the number of one of keyTritonEvents' names.
func tritonEventOf(name string) tritonEvent {
	return tritonEvent(slices.Index(keyTritonEvents.names, name))
}

// What else marks a request span (classify).
var (
	keyRID               = keys("rid")
	keyTGITimes          = keys("total_time", "inference_time")
	keyOperation         = keys("gen_ai.operation.name")
	keyOpenInferenceKind = keys("openinference.span.kind")
)

// sglangRoot reports whether a span name is SGLang's request root,
// "{role} Req {rid[:8]}" (python/sglang/srt/tracing/trace.py and its successor
// observability/trace.py): role is empty in unified mode, so the name may
// start with a space; prefill or decode under PD disaggregation.
func sglangRoot(name string) bool {
	f := strings.Fields(name)
	switch len(f) {
	case 2:
		return f[0] == "Req"
	case 3:
		return f[1] == "Req" && (f[0] == "prefill" || f[0] == "decode" || f[0] == "unified")
	}
	return false
}

// requestSpan is a request span: its index in the trace and the rank of its
// convention (8 bytes, no pointer: one for every request).
type requestSpan struct {
	span int32
	rank styleRank
}

func (r requestSpan) style() Style { return byRank[r.rank] }

// requestSpans are request spans in trace order (by span index).
type requestSpans []requestSpan

// find returns the convention of span i, when it is one of rs.
func (rs requestSpans) find(i int) (Style, bool) {
	j, ok := slices.BinarySearchFunc(rs, int32(i), func(r requestSpan, i int32) int { return cmp.Compare(r.span, i) })
	if !ok {
		return "", false
	}
	return rs[j].style(), true
}

// findRequests returns the request spans, dropping a request span nested in
// another that describes the same request in a richer convention, and how
// many it dropped.
func findRequests(t *ingest.Trace, ix *spanIndex, k *keyCache) (requestSpans, int) {
	var cands requestSpans
	for i := range t.Spans {
		if st, ok := classify(t, k, &t.Spans[i]); ok {
			if len(cands) == cap(cands) {
				// To the count the spans so far foretell for all of
				// them, a sixteenth more (request spans are spread
				// through a run), a quarter more at least: append's
				// growth by a quarter made five times the final array
				// in garbage on a run of requests, doubling twice.
				foretold := foretell(len(cands), i+1, len(t.Spans))
				cands = slices.Grow(cands, max(foretold, len(cands)+len(cands)/4, 64)-len(cands))
			}
			cands = append(cands, requestSpan{int32(i), rankOf(st)})
		}
	}
	var dropped []bool // by position in cands; nil while none is
	drop := func(j int) {
		if dropped == nil {
			dropped = make([]bool, len(cands))
		}
		dropped[j] = true
	}
	for j, c := range cands {
		for p, ok := ix.parent(int(c.span)); ok; p, ok = ix.parent(p) {
			pj, isReq := slices.BinarySearchFunc(cands, int32(p), func(r requestSpan, i int32) int { return cmp.Compare(r.span, i) })
			if !isReq {
				continue
			}
			if cands[pj].rank >= c.rank {
				drop(j)
			} else {
				drop(pj)
			}
		}
	}
	if dropped == nil {
		return cands, 0
	}
	kept := cands[:0]
	for j, c := range cands {
		if !dropped[j] {
			kept = append(kept, c)
		}
	}
	return kept, len(cands) - len(kept)
}

// requestArena holds what buildRequest keeps of the requests out of line,
// the tables that become the Result's (token times and stage segments,
// each request's a range of them: none holds a pointer), its scratch for
// the walk of a request's subtree, and the facts of the request just built
// that its tally reads and no Request keeps.
type requestArena struct {
	tokens []int64
	segs   []StageSegment
	// desc and stack are the current request's descendants and their walk.
	desc, stack []int
	// gaps are the current request's gaps (Result.Gaps), e2eAttr its e2e
	// attribute (vLLM's gen_ai.latency.e2e: arrival to the frontend's
	// receipt of the final batch; NaN when absent), and
	// callerExtra how much longer the calling service's span (the nearest
	// ancestor from another service) lasted than the request, time the
	// request span does not see (0 without a caller span).
	gaps        []Gap
	e2eAttr     float64
	callerExtra int64
	// labels are the requests' strings.
	labels labeler
	// done of total requests are built: the tables grow to the size
	// that foretells (roomAhead).
	done, total int
}

// extent is a request's part of one of its Result's tables:
// table[Off : Off+Len].
type extent struct{ Off, Len uint32 }

// extentOf is the extent [from, to) of a table.
func extentOf(from, to int) extent {
	if to > math.MaxUint32 {
		panic(fmt.Sprintf("attribution: a table of %d records, past the 2³² a range can reach", to))
	}
	return extent{uint32(from), uint32(to - from)}
}

// in returns the part of table that e covers, capped so that an append
// to it cannot write over the next request's part.
func in[T any](table []T, e extent) []T {
	return table[e.Off : e.Off+e.Len : e.Off+e.Len]
}

// room returns table with room for n more records: table itself when it
// has it, else its records moved to a new table of twice the capacity or
// more (spill.Grow: the old one is given back, so nothing may hold a
// slice of it). A table starts at chunkLen records and, while spilling is
// on, at spill.MinBytes or more, so that every one is in a spill file,
// where the part not yet written is never resident.
func room[T any](table []T, n int) []T { return roomFor(table, n, 0) }

// roomAhead is room for a table that requests fill one after another, at
// request done of total: grown, it is made the size its records so far
// foretell for all the requests, a sixteenth more, instead of twice its
// capacity. Doubling made up to twice the final table, and up to as much
// again in the tables it left behind, all of it cleared and first touched
// page by page (the segments' table was 2% of an OTLP analyze's CPU).
func roomAhead[T any](table []T, n, done, total int) []T {
	if cap(table)-len(table) >= n || done == 0 {
		return room(table, n)
	}
	return roomFor(table, n, foretell(len(table), done, total))
}

// foretell is the size that have records after done of total items
// foretell for all of them, a sixteenth more: what a table filled item by
// item (findRequests' candidates, roomAhead's tables) grows to rather than
// doubling.
func foretell(have, done, total int) int {
	foretold := have / done * total
	if have <= math.MaxInt/total { // exact where it cannot overflow
		foretold = have * total / done
	}
	return foretold + foretold/16
}

// roomFor is room with a capacity of at least least when it grows.
func roomFor[T any](table []T, n, least int) []T {
	if cap(table)-len(table) >= n {
		return table
	}
	var zero T
	elem := int(max(unsafe.Sizeof(zero), 1))
	c := max(least, len(table)+n, chunkLen)
	if least == 0 {
		c = max(c, 2*cap(table))
	} else {
		// A foretelling that falls short grows the table by a quarter
		// at least, so that it is moved a few times, not once a request.
		c = max(c, cap(table)+cap(table)/4)
	}
	if spill.Active() {
		c = max(c, (spill.MinBytes+elem-1)/elem)
	}
	return spill.Grow(table, c)
}

// TokenTimes are the request's token emission times, in time order, when
// the input has per-token events (nil otherwise).
func (res *Result) TokenTimes(r *Request) []int64 { return in(res.tokenTimes, r.tokens) }

// Gaps locate the time in the request's StageOther, in time order.
func (res *Result) Gaps(r *Request) []Gap { return gapsOf(nil, r.Arrival, r.End, res.segments(r)) }

// segments are the stretches of the request each stage owns.
func (res *Result) segments(r *Request) []StageSegment { return in(res.segs, r.segs) }

// chunks carves short slices out of a few large arrays: a run's steps' ops
// and requests, tens of MB held to the end of the command, would otherwise
// be that many small heap arrays, the part of the memory a budget cannot
// take back. The arrays are
// tables (spill.Slice), each twice the last, from chunkLen elements up to
// maxChunkBytes (or the slice's own length when longer); while spilling is
// on, none is under spill.MinBytes, so that every one is in a spill file,
// where the part not yet carved is never touched, so never resident. A
// slice is capped at its length: appending past it copies it to the heap,
// never over the next one. T must hold no pointers.
type chunks[T any] struct {
	buf  []T
	next int // the length of the next array (chunkLen when 0)
}

const (
	chunkLen      = 4096
	maxChunkBytes = 64 << 20
)

// take returns an empty slice with room for n elements, capped so that an
// append beyond them cannot reach the next slice. A nil c makes it apart.
func (c *chunks[T]) take(n int) []T {
	if c == nil {
		return make([]T, 0, n)
	}
	s := c.reserve(n)
	c.buf = c.buf[:len(c.buf)+n]
	return s
}

// reserve returns an empty slice with room for n elements, to append at
// most n to and hand to keep, which carves what was appended: for a slice
// whose length is only bounded beforehand.
func (c *chunks[T]) reserve(n int) []T {
	if cap(c.buf)-len(c.buf) < n {
		var zero T
		elem := int(max(unsafe.Sizeof(zero), 1))
		size := max(n, c.next, chunkLen)
		if spill.Active() {
			size = max(size, (spill.MinBytes+elem-1)/elem)
		}
		c.next = min(2*size, max(maxChunkBytes/elem, chunkLen))
		c.buf = spill.Slice[T](size)
	}
	start := len(c.buf)
	return c.buf[start : start : start+n]
}

// keep carves s, appended to what reserve returned, and returns it capped
// (nil when empty, as a slice never appended to).
func (c *chunks[T]) keep(s []T) []T {
	if len(s) == 0 {
		return nil
	}
	start := len(c.buf)
	c.buf = c.buf[:start+len(s)]
	return c.buf[start : start+len(s) : start+len(s)]
}

// interval is a stage's claim on part of a request's life.
type interval struct {
	stage    Stage
	from, to int64
}

// buildRequest derives one request's facts from its span, descendants and
// attributes, into r (in place: a Request is large to copy), and returns
// the problems it found and the latency attributes that contradict the
// request's stage spans (crossCheck), which the caller warns of and no
// Request keeps.
func buildRequest(r *Request, t *ingest.Trace, ix *spanIndex, k *keyCache, i int, rank styleRank, opts *Options, a *requestArena) (problems, disagreements []string) {
	s := &t.Spans[i]
	*r = Request{
		Span: i, Source: s.Source, rank: rank,
		Arrival: s.Start, End: s.End,
		InputTokens: -1, OutputTokens: -1,
		TTFT: math.NaN(), TPOT: math.NaN(), Queue: math.NaN(),
	}
	r.E2E = float64(r.End - r.Arrival)
	a.desc = ix.appendDescendants(a.desc[:0], i, &a.stack)
	desc := a.desc
	attrs := t.SpanAttrs(s)
	k.index(attrs) // most lookups below read the request span's attributes

	l := &a.labels
	r.id, _ = k.label(attrs, keyRequestID, l)
	if r.id == 0 {
		r.id = l.of(s.TraceID.String()[:16] + "/" + s.ID.String())
	}
	r.model, _ = k.label(attrs, keyModel, l)
	if r.model == 0 {
		r.model = l.unknown()
	}
	r.tenant = tenantOf(t, ix, k, i, opts, l)
	a.callerExtra = callerExtra(t, ix, k, i)
	if n, ok := k.count(attrs, keyInputTokens); ok {
		r.InputTokens = n
	}
	cacheHitRatio := math.NaN()
	if f, ok := k.float(attrs, keyCacheRatio); ok {
		cacheHitRatio = f
	}
	if fin, ok := k.label(attrs, keyFinish, l); ok {
		r.finish = fin
	}
	if s.Status == ingest.StatusError {
		r.finish = l.of("error")
	}

	// Token events: llm.token on the request span or any descendant,
	// tokens in a's table.
	var tokens []int64
	var tokenName ingest.StrID
	hasTokenName := false
	if p := k.present(keyTokenEvent); len(p) > 0 {
		tokenName, hasTokenName = p[0].id, true
	}
	if hasTokenName {
		// Counted first, then carved from the run's token array.
		n := 0
		count := func(sp *ingest.Span) {
			for _, e := range t.Events(sp) {
				if e.Name == tokenName {
					n++
				}
			}
		}
		collect := func(sp *ingest.Span) {
			for _, e := range t.Events(sp) {
				if e.Name == tokenName {
					a.tokens = append(a.tokens, e.Time)
				}
			}
		}
		count(s)
		for _, d := range desc {
			count(&t.Spans[d])
		}
		if n > 0 {
			a.tokens = roomAhead(a.tokens, n, a.done, a.total) // so that collect's appends stay in the table
			from := len(a.tokens)
			collect(s)
			for _, d := range desc {
				collect(&t.Spans[d])
			}
			tokens = a.tokens[from:]
			slices.Sort(tokens)
			r.tokens = extentOf(from, len(a.tokens))
		}
	}
	if n, ok := k.count(attrs, keyOutputTokens); ok {
		r.OutputTokens = n
	} else if len(tokens) > 0 {
		r.OutputTokens = len(tokens)
	}

	// Stage intervals from stage spans and Triton timestamp events (a
	// request has a few: the buffer keeps them off the heap).
	var ivBuf [8]interval
	ivs := ivBuf[:0]
	// The first time of each Triton event (tritonEvent's order), by the
	// names' IDs: no string is read for an event.
	var eventTimes [numTritonEvents]int64
	var eventSeen [numTritonEvents]bool
	tritonIDs := k.present(keyTritonEvents)
	grab := func(sp *ingest.Span) {
		for _, e := range t.Events(sp) {
			for _, pk := range tritonIDs {
				if e.Name == pk.id {
					if ev := tritonEventOf(pk.name); !eventSeen[ev] {
						eventTimes[ev], eventSeen[ev] = e.Time, true
					}
					break
				}
			}
		}
	}
	if len(tritonIDs) > 0 {
		grab(s)
	}
	for _, d := range desc {
		ds := &t.Spans[d]
		if len(tritonIDs) > 0 {
			grab(ds)
		}
		if st, ok := stageSpanNames[t.Str(ds.Name)]; ok {
			ivs = append(ivs, interval{st, ds.Start, ds.End})
			r.fromSpans |= 1 << st
		}
	}
	if eventSeen[queueStart] && eventSeen[computeStart] {
		q, c := eventTimes[queueStart], eventTimes[computeStart]
		ivs = append(ivs, interval{StageQueue, q, c})
		if eventSeen[computeEnd] {
			ivs = append(ivs, interval{StageInference, c, eventTimes[computeEnd]})
		}
	}
	ttftAttr, hasTTFT := k.duration(attrs, keyTTFT)
	e2eAttr, hasE2E := k.duration(attrs, keyE2E)
	a.e2eAttr = math.NaN()
	if hasE2E {
		a.e2eAttr = float64(e2eAttr)
	}
	spanStaged := len(ivs) > 0
	var anchorFirst, anchorLast int64
	if spanStaged {
		disagreements = r.crossCheck(k, attrs, ivs)
	} else {
		ivs, anchorFirst, anchorLast = r.attributeStages(k, attrs, ttftAttr, hasTTFT, e2eAttr, hasE2E, ivs)
	}
	prefillEnd, hasPrefillSpan := stageEnd(ivs, StagePrefill)
	decodeEnd, hasDecodeSpan := stageEnd(ivs, StageDecode)

	// Token times, then the metrics.
	switch {
	case len(tokens) > 0:
		r.FirstToken, r.LastToken = tokens[0], tokens[len(tokens)-1]
	case spanStaged && (hasPrefillSpan || hasDecodeSpan):
		// Stage spans beat latency attributes (SGLang's are measured at
		// output arrival, docs/server-spans.md): the first token leaves when
		// the prefill forward ends, the last when the decode span does.
		switch {
		case hasPrefillSpan:
			r.FirstToken = prefillEnd
			r.estimate(estimatedTTFT)
		case hasTTFT:
			r.FirstToken = r.Arrival + ttftAttr
		}
		if hasDecodeSpan {
			r.LastToken = decodeEnd
		}
	case anchorFirst != 0:
		// Placed from the latency attributes' own anchors.
		r.FirstToken, r.LastToken = anchorFirst, anchorLast
	case hasTTFT:
		r.FirstToken = r.Arrival + ttftAttr
	default:
		if ts, ok := k.timestamp(attrs, keyCompletionStart); ok && ts >= r.Arrival {
			r.FirstToken = ts
		}
	}
	if r.FirstToken != 0 {
		r.TTFT = float64(r.FirstToken - r.Arrival)
	}
	n := r.OutputTokens
	switch {
	case r.FirstToken != 0 && r.LastToken != 0 && n >= 2:
		r.TPOT = float64(r.LastToken-r.FirstToken) / float64(n-1)
	case n == 1:
		// One token: TPOT is undefined, not zero.
	default:
		if d, ok := k.duration(attrs, keyTPOT); ok {
			r.TPOT = float64(d)
		} else if d, ok := k.duration(attrs, keyTGIPerTok); ok {
			// TGI's time_per_token is inference time / generated tokens,
			// including the first: an estimate of TPOT.
			r.TPOT = float64(d)
			r.estimate(estimatedTPOT)
			if math.IsNaN(r.TTFT) {
				if end, ok := stageEnd(ivs, StageQueue); ok {
					r.TTFT = float64(end-r.Arrival) + float64(d)
					r.estimate(estimatedTTFT)
				}
			}
		}
	}

	r.CacheHit, r.CacheKnown, r.CachedTokens = cacheInfo(t, k, i, desc, r.InputTokens, cacheHitRatio)
	tokenizeEnd, _ := stageEnd(ivs, StageTokenize)
	r.QueueEnd, _ = stageEnd(ivs, StageQueue)
	r.queueFrom = max(tokenizeEnd, stageStart(ivs, StageQueue))
	// A request's claims cut it into at most 2·len(ivs)+1 stretches, the
	// owned ones and the gaps among them.
	a.segs = roomAhead(a.segs, 2*len(ivs)+1, a.done, a.total)
	segsFrom := len(a.segs)
	a.segs, problems = partitionInto(&r.Stages, r.Arrival, r.End, ivs, problems, a.segs)
	r.segs = extentOf(segsFrom, len(a.segs))
	a.gaps = gapsOf(a.gaps[:0], r.Arrival, r.End, a.segs[segsFrom:])
	for _, iv := range ivs {
		r.present |= 1 << iv.stage
	}
	if q := r.Stages[StageQueue]; hasStage(ivs, StageQueue) {
		r.Queue = float64(q)
	}
	return problems, disagreements
}

func stageEnd(ivs []interval, st Stage) (int64, bool) {
	var end int64
	found := false
	for _, iv := range ivs {
		if iv.stage == st && (!found || iv.to > end) {
			end, found = iv.to, true
		}
	}
	return end, found
}

// stageStart is where the first interval of stage st starts (0: none).
func stageStart(ivs []interval, st Stage) int64 {
	var start int64
	found := false
	for _, iv := range ivs {
		if iv.stage == st && (!found || iv.from < start) {
			start, found = iv.from, true
		}
	}
	return start
}

func hasStage(ivs []interval, st Stage) bool {
	for _, iv := range ivs {
		if iv.stage == st {
			return true
		}
	}
	return false
}

// StageSegment is a stretch of a request that one stage owns.
type StageSegment struct {
	Stage    Stage
	From, To int64
}

// DerivedSegments returns the stretches of the request owned by stages that
// no stage span shows — placed from latency attributes (attrstages.go) or
// timestamp events — disjoint and in time order: the stages a timeline of
// the spans alone would not draw.
func (res *Result) DerivedSegments(r *Request) []StageSegment {
	var out []StageSegment
	for _, sg := range res.segments(r) {
		if r.fromSpans&(1<<sg.Stage) == 0 {
			out = append(out, sg)
		}
	}
	return out
}

// Gap is a stretch of a request that no stage covers (part of StageOther),
// with the stages on either side of it (StageOther at the request's start or
// end). Blind-spot analysis names what usually lies there.
type Gap struct {
	From, To      int64
	Before, After Stage
}

// partition assigns every instant of [from, to) to at most one stage (by
// stagePriority where claims overlap) and the rest to other. The result sums
// to to − from exactly. Claims outside the request are clipped, and a claim
// that sticks out by more than a millisecond is reported. It also returns
// the stages' segments in time order (other left out).
func partition(from, to int64, ivs []interval, problems []string) ([NumStages]int64, []Gap, []StageSegment, []string) {
	var out [NumStages]int64
	owned, problems := partitionInto(&out, from, to, ivs, problems, nil)
	return out, gapsOf(nil, from, to, owned), owned, problems
}

// partitionInto is partition without the gaps, the stages' time added to
// out (zero: a request's, written in place rather than copied back), the
// segments appended to the table owned (room), which it returns.
func partitionInto(out *[NumStages]int64, from, to int64, ivs []interval, problems []string, owned []StageSegment) ([]StageSegment, []string) {
	if to <= from {
		return owned, problems
	}
	const slack = 1_000_000
	// Sweep over the claims' boundaries (a request has a few: the buffers
	// keep them off the heap).
	type edge struct {
		at    int64
		stage Stage
		delta int8
	}
	var edgeBuf [16]edge
	edges := edgeBuf[:0]
	for _, iv := range ivs {
		if iv.from < from-slack || iv.to > to+slack {
			problems = append(problems, fmt.Sprintf("%s interval lies %s outside the request span; clipped", iv.stage, fmtOutside(iv, from, to)))
		}
		a, b := max(iv.from, from), min(iv.to, to)
		if b <= a {
			continue
		}
		edges = append(edges, edge{a, iv.stage, +1}, edge{b, iv.stage, -1})
	}
	// By time, by insertion: a request has a handful of edges, for which
	// slices.SortFunc's call of the comparison per step cost more than the
	// moves. The order of edges at one instant is immaterial: the sweep
	// below applies them all before it emits the next segment.
	for i := 1; i < len(edges); i++ {
		for j := i; j > 0 && edges[j].at < edges[j-1].at; j-- {
			edges[j], edges[j-1] = edges[j-1], edges[j]
		}
	}
	// active counts each stage's claims open at the sweep, claiming the
	// set of those with one or more (StageOther's claims own nothing).
	var active [NumStages]int
	var claiming uint8
	// Segments of constant owner, adjacent equal owners merged.
	type segment struct {
		stage    Stage
		from, to int64
	}
	var segBuf [16]segment
	segs := segBuf[:0]
	emit := func(st Stage, a, b int64) {
		if b <= a {
			return
		}
		if n := len(segs); n > 0 && segs[n-1].stage == st && segs[n-1].to == a {
			segs[n-1].to = b
			return
		}
		segs = append(segs, segment{st, a, b})
	}
	cur := from
	for _, e := range edges {
		if e.at > cur {
			emit(stageOwner[claiming], cur, e.at)
			cur = e.at
		}
		if e.stage == StageOther {
			continue
		}
		active[e.stage] += int(e.delta)
		if active[e.stage] > 0 {
			claiming |= 1 << e.stage
		} else {
			claiming &^= 1 << e.stage
		}
	}
	emit(StageOther, cur, to)
	nOwned := 0
	for _, sg := range segs {
		if sg.stage != StageOther {
			nOwned++
		}
	}
	owned = room(owned, nOwned)
	for _, sg := range segs {
		out[sg.stage] += sg.to - sg.from
		if sg.stage != StageOther {
			owned = append(owned, StageSegment{sg.stage, sg.from, sg.to})
		}
	}
	return owned, problems
}

// gapsOf appends to out the gaps of [from, to) whose owned segments are
// owned (partitionInto's: disjoint, in time order, inside [from, to)),
// the stretches between them, each with the stages on either side
// (StageOther at from or to), and returns it. partitionInto's segments
// tile [from, to) with no two neighbours of one stage (adjacent stretches
// of one owner are merged), so these are exactly its StageOther
// stretches: a request keeps its segments alone, not its gaps too.
func gapsOf(out []Gap, from, to int64, owned []StageSegment) []Gap {
	if to <= from {
		return out
	}
	at, before := from, StageOther
	for _, sg := range owned {
		if sg.From > at {
			out = append(out, Gap{From: at, To: sg.From, Before: before, After: sg.Stage})
		}
		at, before = sg.To, sg.Stage
	}
	if to > at {
		out = append(out, Gap{From: at, To: to, Before: before, After: StageOther})
	}
	return out
}

func fmtOutside(iv interval, from, to int64) string {
	d := max(from-iv.from, iv.to-to)
	return fmt.Sprintf("%.3f ms", float64(d)/1e6)
}

// callerExtra finds the nearest ancestor span emitted by another service and
// returns how much longer than the request span it lasted.
func callerExtra(t *ingest.Trace, ix *spanIndex, k *keyCache, i int) int64 {
	own := serviceOf(t, k, i)
	for p, ok := ix.parent(i); ok; p, ok = ix.parent(p) {
		if svc := serviceOf(t, k, p); svc != "" && svc != own {
			return max(0, t.Spans[p].Duration()-t.Spans[i].Duration())
		}
	}
	return 0
}

func serviceOf(t *ingest.Trace, k *keyCache, i int) string {
	s := &t.Spans[i]
	if s.Resource < 0 || int(s.Resource) >= len(t.Resources) {
		return ""
	}
	return k.service(s.Resource).name
}

// tenantOf resolves the request's tenant: the configured key (or the default
// search list) on the request span and its ancestors; else the service that
// called the server (the trace root's service.name, when the root belongs to
// another service); else the request span's own service.name.
func tenantOf(t *ingest.Trace, ix *spanIndex, k *keyCache, i int, opts *Options, l *labeler) label {
	keys := keyTenant
	if k.tenantKeys != nil {
		keys = k.tenantKeys
	}
	root := i
	for n, ok := i, true; ok; n, ok = ix.parent(n) {
		root = n
		if v, ok := k.label(t.SpanAttrs(&t.Spans[n]), keys, l); ok {
			return v
		}
	}
	resourceName := func(n int) label {
		if s := &t.Spans[n]; opts.TenantKey != "" && s.Resource >= 0 && int(s.Resource) < len(t.Resources) {
			if v, ok := k.label(t.Resources[s.Resource].Attrs, keys, l); ok {
				return v
			}
		}
		if s := &t.Spans[n]; s.Resource >= 0 && int(s.Resource) < len(t.Resources) {
			return k.serviceLabel(s.Resource, l)
		}
		return 0
	}
	own := resourceName(i)
	if root != i {
		if caller := resourceName(root); caller != 0 && caller != own {
			return caller
		}
	}
	if own == 0 {
		return l.unknown()
	}
	return own
}
