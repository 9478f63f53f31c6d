package attribution

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/stat"
)

// Options tune the request analysis. The zero value is DefaultOptions.
type Options struct {
	// TenantKey is the attribute naming a request's tenant; empty searches
	// llm.tenant, tenant.id, enduser.id, then the calling service's name.
	TenantKey string `json:"tenant_key,omitempty"`
	// SLO sets the goodput thresholds; zero fields are not checked.
	SLO SLO `json:"slo"`
	// StallThreshold marks decode tokens slower than this as stalls; zero
	// means 3× the run's median inter-token latency.
	StallThreshold time.Duration `json:"stall_threshold_ns,omitempty"`
	// GPU sets the GPU section's list lengths (zero: DefaultGPUOptions).
	GPU GPUOptions `json:"-"`
	// RequestsOnly skips the GPU section and the token breakdown summary
	// (two walks over every token) for callers that need only requests and
	// steps (export, tenants).
	RequestsOnly bool `json:"-"`
	// Alignment, when the trace was aligned, says how far apart records of
	// different clock domains may really be: GPU time joined to steps by
	// time window is flagged where it is finer than that.
	Alignment *align.Result `json:"-"`
}

// DefaultOptions are the defaults documented on Options.
var DefaultOptions = Options{}

// SLO is a per-request service-level objective.
type SLO struct {
	TTFT time.Duration `json:"ttft_ns,omitempty"`
	TPOT time.Duration `json:"tpot_ns,omitempty"`
	E2E  time.Duration `json:"e2e_ns,omitempty"`
}

// IsZero reports whether no threshold is set.
func (s SLO) IsZero() bool { return s.TTFT == 0 && s.TPOT == 0 && s.E2E == 0 }

// String writes the SLO the way --slo reads it: "ttft=200ms,tpot=50ms".
func (s SLO) String() string {
	var parts []string
	for _, p := range []struct {
		name string
		d    time.Duration
	}{{"ttft", s.TTFT}, {"tpot", s.TPOT}, {"e2e", s.E2E}} {
		if p.d > 0 {
			parts = append(parts, p.name+"="+p.d.String())
		}
	}
	return strings.Join(parts, ",")
}

// Result is the request-level attribution of one run.
type Result struct {
	Requests []Request
	// Overall, ByTenant and ByModel summarize the requests.
	Overall  Summary
	ByTenant []Summary
	ByModel  []Summary
	// Stages totals every stage over all requests.
	Stages []StageTotal
	// E2E says which E2E the figures use and how the servers' e2e
	// attributes compare with it.
	E2E E2ENote
	// GPU is the GPU section: nil without GPU ops.
	GPU *GPU
	// Steps are the engine steps (llm.step spans) with their batches and
	// GPU ops; Engines the processes that ran them.
	Steps   []Step
	Engines []Engine
	// ModelEvents are model loads, unloads and reloads.
	ModelEvents []ModelEvent
	// KVCache is nil when no request reports the prefix cache.
	KVCache *KVCache
	// BlindSpots says what the input cannot explain.
	BlindSpots BlindSpots
	// Styles counts requests per recognized convention.
	Styles map[Style]int
	// Warnings are problems found while attributing (the trace's own
	// warnings stay on the trace).
	Warnings []ingest.Warning
	Options  Options
	// Tokens summarizes the token breakdown (nil when no request has token
	// times, observed or estimated).
	Tokens *TokenSummary

	// gpuEst is the per-request GPU estimate for inputs without engine
	// steps (nil otherwise).
	gpuEst    *requestGPU
	warnings  ingest.Warnings // behind Warnings
	trace     *ingest.Trace   // for EachToken
	tokenSums bucketSums      // per request, from summarizeTokens
	// labels hold the requests' strings (ID, Tenant, Model, Finish).
	labels labeler
	// tokenTimes and segs are the tables of what the requests hold out of
	// line (Request.tokens, segs).
	tokenTimes []int64
	segs       []StageSegment
	// tenants and models number the requests' tenants and models.
	tenants, models groups
}

// Summary is the latency distribution of a group of requests.
type Summary struct {
	Name     string  `json:"-"`
	Requests int     `json:"count"`
	Metrics  Metrics `json:"metrics"`
	// Duration is first arrival to last end, in seconds.
	Duration     float64 `json:"duration_s"`
	InputTokens  int64   `json:"input_tokens"`
	OutputTokens int64   `json:"output_tokens"`
	// Throughput is output tokens per second over Duration.
	Throughput float64  `json:"output_tokens_per_s"`
	Goodput    *Goodput `json:"goodput,omitempty"`
}

// Metrics holds one distribution per latency metric.
type Metrics struct {
	TTFT  Distribution `json:"ttft"`
	TPOT  Distribution `json:"tpot"`
	ITL   Distribution `json:"itl"`
	E2E   Distribution `json:"e2e"`
	Queue Distribution `json:"queue"`
}

// Distribution summarizes values in milliseconds. N counts the values known;
// with N = 0 every field is NaN and renderers print "—".
type Distribution struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// MarshalJSON writes unknown values (NaN) as null: JSON has no NaN, and a
// missing metric must not read as zero.
func (d Distribution) MarshalJSON() ([]byte, error) {
	b := []byte(`{"n":`)
	b = strconv.AppendInt(b, int64(d.N), 10)
	for _, f := range []struct {
		name string
		v    float64
	}{{"p50", d.P50}, {"p90", d.P90}, {"p95", d.P95}, {"p99", d.P99}, {"max", d.Max}, {"mean", d.Mean}} {
		b = append(b, `,"`...)
		b = append(b, f.name...)
		b = append(b, `":`...)
		// Milliseconds to the nanosecond: more digits would be float noise.
		b = AppendJSONFloat(b, math.Round(f.v*1e6)/1e6)
	}
	return append(b, '}'), nil
}

// Float is a float64 that marshals NaN and ±Inf as JSON null, for figures
// the input may not determine.
type Float float64

// MarshalJSON writes null for NaN and infinities.
func (f Float) MarshalJSON() ([]byte, error) { return AppendJSONFloat(nil, float64(f)), nil }

// UnmarshalJSON reads null as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("not a number: %s", b)
	}
	*f = Float(v)
	return nil
}

// IsNaN reports whether the figure is missing.
func (f Float) IsNaN() bool { return math.IsNaN(float64(f)) }

// AppendJSONFloat appends v as a JSON number, or null when it is NaN or
// infinite.
func AppendJSONFloat(b []byte, v float64) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}

// Goodput is the share of requests that met every SLO threshold.
type Goodput struct {
	Good  int     `json:"good"`
	Share float64 `json:"share"`
	// PerSecond is good requests per second of the run.
	PerSecond float64 `json:"per_s"`
	// Unknown counts requests a threshold could not be checked for (a metric
	// the input lacks); they are not counted as good.
	Unknown int `json:"unknown,omitempty"`
}

// StageTotal is one stage's time over all requests.
type StageTotal struct {
	Name    string  `json:"name"`
	TotalMs float64 `json:"total_ms"`
	Share   float64 `json:"share"`
}

// Analyze finds the requests in t and attributes their latency.
func Analyze(t *ingest.Trace, opts Options) *Result {
	res := &Result{Options: opts, Styles: map[Style]int{}, trace: t}
	k := newKeyCache(t)
	if opts.TenantKey != "" {
		k.tenantKeys = k.list(opts.TenantKey)
	}
	ix := newSpanIndex(t)
	res.warnCycles(t, ix)
	// In span order: spans are sorted by start, so requests come out by
	// arrival.
	cands, nested := findRequests(t, ix, k)
	if len(cands) > 0 {
		// Each filled in place by buildRequest. A table (spill.Make, a
		// Request holds no pointer): past the budget it lives in a spill
		// file, where the collector never scans it.
		res.Requests = spill.Make[Request](len(cands))
	}
	var perRank [len(byRank)]int
	arena := requestArena{labels: labeler{t: t}, total: len(cands)}
	tally := newRequestTally(len(cands))
	for j, c := range cands {
		r := &res.Requests[j]
		arena.done = j
		problems, disagreements := buildRequest(r, t, ix, k, int(c.span), c.rank, &opts, &arena)
		for _, p := range problems {
			res.warn(t, r.Source, "request "+arena.labels.str(r.id), "stage-clipped", p)
		}
		for _, p := range disagreements {
			res.warn(t, r.Source, "request "+arena.labels.str(r.id), "latency-attributes-disagree", p)
		}
		perRank[c.rank]++
		tally.add(j, r, &arena)
	}
	res.labels = arena.labels
	res.tokenTimes, res.segs = arena.tokens, arena.segs
	for rank, n := range perRank {
		if n > 0 {
			res.Styles[byRank[rank]] = n
		}
	}
	if nested > 0 {
		res.warn(t, 0, "", "nested-request-spans",
			fmt.Sprintf("%d request span(s) nested in a richer request span of the same request were merged into it", nested))
	}
	res.plausibility(t, ix, cands, &tally.implausible)
	sortTPOT(tally.tpot)
	sm := newSummarizer(res, tally.rows, tally.tpot, tally.itls, opts.SLO)
	res.Overall = sm.all("all")
	res.tenants, res.models = tally.tenants.gs, tally.models.gs
	res.ByTenant = sm.groupBy(res.tenants)
	res.ByModel = sm.groupBy(res.models)
	res.Stages = tally.stages.totals()
	res.E2E = tally.e2e.note()
	// The launch join (op → API call) is a sort of every op; steps and the
	// GPU section share one.
	launchCalls := sync.OnceValue(t.LaunchCalls)
	res.Steps, res.Engines = findSteps(t, k, res, launchCalls)
	if len(t.GPUOps) > 0 && !opts.RequestsOnly {
		res.GPU = analyzeGPU(t, opts.GPU, launchCalls(), gpuHosts(t, opts.Alignment))
	}
	res.KVCache = kvCache(res, tally.kv, res.Steps, res.Engines, res.tenants, res.models)
	res.alignmentCaveats(t, opts.Alignment)
	res.BlindSpots = tally.blind.spots(t)
	res.ModelEvents = modelEvents(t, k, res)
	if opts.RequestsOnly {
		return res
	}
	var joinable func(ingest.SourceID) bool
	if ar := opts.Alignment; ar != nil {
		joinable = ar.Joinable
	}
	res.gpuEst = estimateRequestGPU(t, res, joinable)
	if ts := summarizeTokens(res, opts.StallThreshold); ts.Tokens > 0 {
		res.Tokens = ts
	}
	return res
}

// warnCycles says, per input, how many spans' parent links closed a loop
// and were taken as absent (spanIndex.cutCycles).
func (res *Result) warnCycles(t *ingest.Trace, ix *spanIndex) {
	if len(ix.cut) == 0 {
		return
	}
	bySource := map[ingest.SourceID]int{}
	for i := range ix.cut {
		bySource[t.Spans[i].Source]++
	}
	for _, src := range slices.Sorted(maps.Keys(bySource)) {
		res.warn(t, src, "", "parent-cycle", fmt.Sprintf(
			"%d span(s) close a loop of parent links (a span that is its own ancestor); each such link is taken as absent", bySource[src]))
	}
}

func (res *Result) warn(t *ingest.Trace, src ingest.SourceID, pos, code, msg string) {
	path := ""
	if int(src) < len(t.Sources) {
		path = t.Sources[src].Path
	}
	// Coalesced per file and code like the trace's own warnings.
	res.warnings.Add(ingest.Warning{Path: path, Pos: pos, Code: code, Msg: msg})
	res.Warnings = res.warnings.List
}

// tpotSample is a request's known TPOT.
type tpotSample struct {
	v   float64
	req int32
}

// tpotOrder is the requests' known TPOTs in ascending order.
type tpotOrder []tpotSample

// sortTPOT sorts o by value (no NaN), in the order of the values' keys
// (floatKey): a radix sort, eleven bits a pass, passes where every key has
// the same digits skipped (the high bits of a run's TPOTs mostly agree).
// Equal values may come in any order, as from any sort by value: a group's
// values in sorted order are the same either way. A short o is sorted by
// comparison.
func sortTPOT(o tpotOrder) {
	if len(o) < 512 {
		slices.SortFunc(o, func(a, b tpotSample) int { return cmp.Compare(floatKey(a.v), floatKey(b.v)) })
		return
	}
	const bits = 11
	var counts [(64 + bits - 1) / bits][1 << bits]int32
	for _, s := range o {
		k := floatKey(s.v)
		for d := range counts {
			counts[d][k>>(bits*d)&(1<<bits-1)]++
		}
	}
	buf := make(tpotOrder, len(o))
	src, dst := o, buf
	for d := range counts {
		c := &counts[d]
		if c[floatKey(src[0].v)>>(bits*d)&(1<<bits-1)] == int32(len(o)) {
			continue // one digit for all: the order stands
		}
		var sum int32
		for i, n := range c {
			c[i] = sum
			sum += n
		}
		for _, s := range src {
			b := floatKey(s.v) >> (bits * d) & (1<<bits - 1)
			dst[c[b]] = s
			c[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &o[0] {
		copy(o, src)
	}
}

// floatKey maps a float64 (not NaN) to a uint64 in the same order: the
// sign bit set for a positive value, every bit flipped for a negative one
// (so −0 comes just before +0, which compare equal).
func floatKey(v float64) uint64 {
	b := math.Float64bits(v)
	if b>>63 != 0 {
		return ^b
	}
	return b | 1<<63
}

// summarizer builds the distributions of groups of requests, one group
// after another, in scratch arrays it keeps: a distribution reads and
// reorders its values and keeps none of them. It reads each request once,
// into a row of what the summaries need (rows, itls): the groups then walk
// those, not the requests (256 bytes each).
type summarizer struct {
	reqs []Request
	rows []summaryRow
	// itls are the requests' inter-token latencies, request by request.
	itls []float64
	tpot tpotOrder
	slo  SLO
	// ttft, e2e, queue and itl are the current group's known values.
	ttft, e2e, queue, itl []float64
	// done are the groups summarized so far: a group of the same requests
	// as an earlier one (a run's only model or tenant, which is every
	// request; a tenant that one model alone serves) takes that summary,
	// the same figures from the same values in the same order.
	done []summarized
}

type summarized struct {
	idx []int32 // nil: every request
	s   Summary
}

// earlier returns the summary of an earlier group of exactly the requests
// idx (nil: all of them), renamed, if there is one.
func (sm *summarizer) earlier(name string, idx []int32) (Summary, bool) {
	all := func(ix []int32) bool { return ix == nil || len(ix) == len(sm.reqs) } // indices are distinct
	for _, d := range sm.done {
		if all(d.idx) && all(idx) || d.idx != nil && idx != nil && slices.Equal(d.idx, idx) {
			s := d.s
			s.Name = name
			if s.Goodput != nil {
				g := *s.Goodput
				s.Goodput = &g
			}
			return s, true
		}
	}
	return Summary{}, false
}

// summaryRow is what a request adds to its groups' summaries: 64 bytes,
// one cache line (its E2E is end − arrival, Request.E2E, not kept twice).
type summaryRow struct {
	ttft, queue  float64 // NaN when unknown
	arrival, end int64
	// in and out are the request's input and output tokens, 0 when unknown.
	in, out int64
	// tokens are the request's token times (Result.TokenTimes), from which
	// newSummarizer reads its inter-token latencies.
	tokens extent
	// itls are where the request's inter-token latencies lie in the
	// summarizer's itls (the ITLs are fewer than the tokens, whose
	// extents are 32-bit): a row holds both ends, so that a group's walk
	// reads no other request's row.
	itls extent
}

// newSummarizer makes the summarizer of the requests of res from their
// rows, which requestTally writes as it builds them: a walk of its own here
// read every request again (256 bytes each). itls is how many inter-token
// latencies they have; they are read from res's token table, in request
// order.
func newSummarizer(res *Result, rows []summaryRow, tpot tpotOrder, itls int, slo SLO) *summarizer {
	sm := &summarizer{reqs: res.Requests, tpot: tpot, slo: slo, rows: rows}
	sm.itls = make([]float64, 0, itls)
	for i := range rows {
		tokens := in(res.tokenTimes, rows[i].tokens)
		for k := 1; k < len(tokens); k++ {
			sm.itls = append(sm.itls, float64(tokens[k]-tokens[k-1]))
		}
	}
	return sm
}

// all summarizes every request, the largest group: the scratch arrays are
// made its size.
func (sm *summarizer) all(name string) Summary {
	n := len(sm.reqs)
	sm.ttft, sm.e2e, sm.queue, sm.itl = make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, n), make([]float64, 0, len(sm.itls))
	vs := make([]float64, len(sm.tpot))
	for i, s := range sm.tpot {
		vs[i] = s.v
	}
	return sm.summarize(name, nil, vs)
}

// groups numbers the distinct keys of the requests (a tenant, a model) in
// order of first appearance: of says each request's group, names each
// group's key. Per-request work then indexes arrays by group instead of
// looking its key up in a map.
type groups struct {
	of    []int32
	names []string
}

func groupRequests(res *Result, key func(*Result, *Request) string) groups {
	reqs := res.Requests
	g := newGrouper(len(reqs))
	for i := range reqs {
		g.add(i, key(res, &reqs[i]))
	}
	return g.gs
}

// requestTally gathers what the run's summaries read of every request as
// each is built, while buildRequest's writes are still in the cache: the
// stage totals, the known TPOTs, the E2E attributes, the implausible token
// gaps, each request's tenant and model group, the summarizer's rows, the
// blind spots' gaps and the prefix cache's rows. Each was a walk of its
// own over every request (a Request was 264 bytes; 11.7 MB of them on the
// 30 MiB OTLP dump).
type requestTally struct {
	stages      stageSums
	tpot        tpotOrder // in request order, until sortTPOT
	itls        int       // the requests' inter-token latencies, for newSummarizer
	rows        []summaryRow
	blind       blindTally
	kv          []kvRow // of the requests that report the prefix cache
	n           int     // the requests to tally
	e2e         e2eTally
	implausible implausibleTally
	// tenants and models number the requests' tenants and models in order
	// of first appearance, by their labels (labelGroups).
	tenants, models grouper
	tl, ml          labelGroups
}

func newRequestTally(n int) *requestTally {
	return &requestTally{tpot: make(tpotOrder, 0, n), rows: make([]summaryRow, n), n: n, tenants: newGrouper(n), models: newGrouper(n)}
}

// add tallies request i, r, just built from a.
func (y *requestTally) add(i int, r *Request, a *requestArena) {
	y.stages.add(r)
	itls := y.itls
	y.itls += max(0, int(r.tokens.Len)-1)
	y.rows[i] = summaryRow{
		ttft: r.TTFT, queue: r.Queue, arrival: r.Arrival, end: r.End,
		in: int64(max(r.InputTokens, 0)), out: int64(max(r.OutputTokens, 0)), tokens: r.tokens, itls: extentOf(itls, y.itls),
	}
	if v := r.TPOT; !math.IsNaN(v) {
		y.tpot = append(y.tpot, tpotSample{v, int32(i)})
	}
	y.e2e.add(r, a.e2eAttr)
	y.implausible.add(r, in(a.tokens, r.tokens))
	y.blind.add(r, a.gaps, a.callerExtra)
	if r.CacheKnown {
		if len(y.kv) == cap(y.kv) {
			// To the size the rows so far foretell, not twice it.
			y.kv = slices.Grow(y.kv, max(foretell(len(y.kv), i+1, y.n)-len(y.kv), 1))
		}
		y.kv = append(y.kv, kvRowOf(i, r))
	}
	// Labels, not their strings: a label seen before has its group, and
	// only a new one's string is read and numbered (two labels of one
	// string share its group).
	y.tenants.gs.of[i] = y.tl.group(r.tenant, &y.tenants, &a.labels)
	y.models.gs.of[i] = y.ml.group(r.model, &y.models, &a.labels)
}

// labelGroups finds the group of a label: in a small table of the labels
// seen last (a run has a few tenants and models, its requests interleaved),
// else in a map of every label seen.
type labelGroups struct {
	of map[label]int32
	// recent holds a label and its group at the label's hash (group+1; 0:
	// empty).
	recent [labelCacheSize]struct {
		id label
		g  int32
	}
}

const labelCacheSize = 64

// group returns the group of the string of id, numbering it in g when new.
func (lg *labelGroups) group(id label, g *grouper, l *labeler) int32 {
	c := &lg.recent[uint32(id)*0x9E3779B1>>26] // labelCacheSize = 1 << 6
	if c.g > 0 && c.id == id {
		return c.g - 1
	}
	n, ok := lg.of[id]
	if !ok {
		n = g.numberOf(l.str(id))
		if lg.of == nil {
			lg.of = map[label]int32{}
		}
		lg.of[id] = n
	}
	c.id, c.g = id, n+1
	return n
}

// grouper numbers the keys it is given in order of first appearance.
type grouper struct {
	gs     groups
	number map[string]int32
	// last and lastG are the previous request's key and group, often
	// the next one's.
	last  string
	lastG int32
}

func newGrouper(n int) grouper {
	return grouper{gs: groups{of: make([]int32, n)}, number: map[string]int32{}, lastG: -1}
}

// add puts request i, whose key is k, in its group.
func (g *grouper) add(i int, k string) {
	if g.lastG >= 0 && k == g.last {
		g.gs.of[i] = g.lastG
		return
	}
	id := g.numberOf(k)
	g.gs.of[i], g.last, g.lastG = id, k, id
}

// numberOf returns the group of key k, numbering it when new.
func (g *grouper) numberOf(k string) int32 {
	id, ok := g.number[k]
	if !ok {
		id = int32(len(g.gs.names))
		g.number[k] = id
		g.gs.names = append(g.gs.names, k)
	}
	return id
}

// groupBy summarizes the requests of each group, by index (a Request is too
// large to copy per group). The groups' request and TPOT lists are carved
// from one array each, in request (and TPOT) order.
func (sm *summarizer) groupBy(gs groups) []Summary {
	counts := make([]int32, len(gs.names))
	for _, g := range gs.of {
		counts[g]++
	}
	idx := carveByGroup(make([]int32, len(gs.of)), counts)
	for i, g := range gs.of {
		idx[g] = append(idx[g], int32(i))
	}
	clear(counts)
	for _, s := range sm.tpot {
		counts[gs.of[s.req]]++
	}
	tpots := carveByGroup(make([]float64, len(sm.tpot)), counts)
	for _, s := range sm.tpot {
		g := gs.of[s.req]
		tpots[g] = append(tpots[g], s.v)
	}
	out := make([]Summary, 0, len(gs.names))
	for g, name := range gs.names {
		out = append(out, sm.summarize(name, idx[g], tpots[g]))
	}
	slices.SortFunc(out, func(a, b Summary) int {
		if c := cmp.Compare(b.Requests, a.Requests); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// carveByGroup cuts all into one empty slice per group, group g's with room
// for counts[g] elements, capped so that an append cannot reach the next.
func carveByGroup[T any](all []T, counts []int32) [][]T {
	out := make([][]T, len(counts))
	at := 0
	for g, n := range counts {
		out[g] = all[at : at : at+int(n)]
		at += int(n)
	}
	return out
}

// summarize builds the distributions of reqs[idx] (all of the requests when
// idx is nil); tpot holds their known TPOTs, sorted.
func (sm *summarizer) summarize(name string, idx []int32, tpot []float64) Summary {
	if s, ok := sm.earlier(name, idx); ok {
		return s
	}
	s := sm.summarizeNew(name, idx, tpot)
	d := s
	if d.Goodput != nil {
		g := *d.Goodput
		d.Goodput = &g
	}
	sm.done = append(sm.done, summarized{idx, d})
	return s
}

// summarizeNew is summarize computing the figures.
func (sm *summarizer) summarizeNew(name string, idx []int32, tpot []float64) Summary {
	reqs := sm.reqs
	n := len(idx)
	if idx == nil {
		n = len(reqs)
	}
	s := Summary{Name: name, Requests: n}
	ttft, e2e, queue, itl := sm.ttft[:0], sm.e2e[:0], sm.queue[:0], sm.itl[:0]
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	add := func(i int) {
		r := &sm.rows[i]
		ttft = appendKnown(ttft, r.ttft)
		e2e = append(e2e, float64(r.end-r.arrival)) // Request.E2E, never NaN
		queue = appendKnown(queue, r.queue)
		if r.itls.Len > 0 {
			itl = append(itl, in(sm.itls, r.itls)...)
		}
		first, last = min(first, r.arrival), max(last, r.end)
		s.InputTokens += r.in
		s.OutputTokens += r.out
	}
	if idx == nil {
		for i := range sm.rows {
			add(i)
		}
	} else {
		for _, i := range idx {
			add(int(i))
		}
	}
	sm.ttft, sm.e2e, sm.queue, sm.itl = ttft, e2e, queue, itl
	s.Metrics = Metrics{TTFT: distribution(ttft), TPOT: sortedDistribution(tpot), ITL: distribution(itl), E2E: distribution(e2e), Queue: distribution(queue)}
	if n > 0 && last > first {
		s.Duration = float64(last-first) / 1e9
		s.Throughput = float64(s.OutputTokens) / s.Duration
	}
	if !sm.slo.IsZero() {
		s.Goodput = goodput(reqs, idx, sm.slo, s.Duration)
	}
	return s
}

func appendKnown(xs []float64, v float64) []float64 {
	if math.IsNaN(v) {
		return xs
	}
	return append(xs, v)
}

// distribution converts ns values (no NaN) to a millisecond summary,
// reordering ns.
func distribution(ns []float64) Distribution {
	if len(ns) == 0 {
		return sortedDistribution(ns)
	}
	d := Distribution{N: len(ns)}
	// The mean has always summed the sorted values. Whole nanoseconds whose
	// magnitudes add up to at most 2^53 sum exactly in any order, so then
	// the quantiles come by selection (stat.Quantiles) from the values as
	// they are; other values (TPOT's fractions) are sorted first, as before,
	// for a sum that is the same to the last bit.
	var sum, abs float64
	whole := true
	for _, v := range ns {
		sum += v
		abs += math.Abs(v)
		whole = whole && v == math.Trunc(v)
	}
	if !whole || abs > 1<<53 {
		slices.Sort(ns)
		return sortedDistribution(ns)
	}
	q := stat.Quantiles(ns, 50.0/100, 90.0/100, 95.0/100, 99.0/100, 1)
	d.P50, d.P90, d.P95, d.P99, d.Max = q[0]/1e6, q[1]/1e6, q[2]/1e6, q[3]/1e6, q[4]/1e6
	d.Mean = sum / float64(len(ns)) / 1e6
	return d
}

// sortedDistribution is distribution of values already sorted (no NaN):
// summed in that order, their order statistics read in place.
func sortedDistribution(sorted []float64) Distribution {
	d := Distribution{N: len(sorted)}
	if len(sorted) == 0 {
		nan := math.NaN()
		d.P50, d.P90, d.P95, d.P99, d.Max, d.Mean = nan, nan, nan, nan, nan, nan
		return d
	}
	var sum float64
	for _, v := range sorted {
		sum += v
	}
	d.P50, d.P90, d.P95, d.P99 = Percentile(sorted, 50)/1e6, Percentile(sorted, 90)/1e6, Percentile(sorted, 95)/1e6, Percentile(sorted, 99)/1e6
	d.Max = sorted[len(sorted)-1] / 1e6
	d.Mean = sum / float64(len(sorted)) / 1e6
	return d
}

// Percentile returns the p-th percentile (0–100) of sorted values with linear
// interpolation between order statistics — numpy.percentile's default
// ("linear", Hyndman & Fan type 7).
func Percentile(sorted []float64, p float64) float64 { return stat.Quantile(sorted, p/100) }

// percentileOf is Percentile of values in any order, found by selection
// (stat.QuantileUnsorted): it reorders xs.
func percentileOf(xs []float64, p float64) float64 { return stat.QuantileUnsorted(xs, p/100) }

// goodput checks reqs[idx] (all of reqs when idx is nil) against slo.
func goodput(reqs []Request, idx []int32, slo SLO, duration float64) *Goodput {
	g := &Goodput{}
	n := len(idx)
	if idx == nil {
		n = len(reqs)
	}
	for j := range n {
		r := &reqs[j]
		if idx != nil {
			r = &reqs[idx[j]]
		}
		ok, unknown := true, false
		check := func(limit time.Duration, v float64, undefinedOK bool) {
			if limit == 0 {
				return
			}
			if math.IsNaN(v) {
				if !undefinedOK {
					unknown = true
				}
				return
			}
			if v > float64(limit.Nanoseconds()) {
				ok = false
			}
		}
		check(slo.TTFT, r.TTFT, false)
		// A one-token response has no TPOT; it cannot miss a TPOT objective.
		check(slo.TPOT, r.TPOT, r.OutputTokens == 1)
		check(slo.E2E, r.E2E, false)
		switch {
		case unknown:
			g.Unknown++
		case ok:
			g.Good++
		}
	}
	if n > 0 {
		g.Share = float64(g.Good) / float64(n)
	}
	if duration > 0 {
		g.PerSecond = float64(g.Good) / duration
	}
	return g
}

// stageSums totals every stage over the requests added.
type stageSums struct {
	sums  [NumStages]int64
	total int64
}

func (s *stageSums) add(r *Request) {
	// The request's total is summed apart and added once: added to
	// s.total stage by stage, each addition waited for the last one's
	// store (a tenth of Analyze's walk of the requests).
	var total int64
	for st, v := range r.Stages {
		s.sums[st] += v
		total += v
	}
	s.total += total
}

// totals are the stages' totals and shares.
func (s *stageSums) totals() []StageTotal {
	out := make([]StageTotal, 0, NumStages)
	for st := Stage(0); st < NumStages; st++ {
		if s.sums[st] == 0 && st == StageInference {
			continue // only present for sources that do not split prefill/decode
		}
		share := 0.0
		if s.total > 0 {
			share = float64(s.sums[st]) / float64(s.total)
		}
		out = append(out, StageTotal{Name: st.String(), TotalMs: float64(s.sums[st]) / 1e6, Share: share})
	}
	return out
}

// alignmentCaveats warns when steps got their GPU ops by time window across
// clock domains whose alignment is coarser than a tenth of a typical step:
// the GPU buckets of those steps are then finer than the clocks can vouch for.
// (Ops found by NVTX projection are exact whatever the alignment.)
func (res *Result) alignmentCaveats(t *ingest.Trace, ar *align.Result) {
	if ar == nil {
		return
	}
	var durations []float64
	var worst int64
	unknown, window := 0, 0
	for i := range res.Steps {
		st := &res.Steps[i]
		durations = append(durations, float64(st.End-st.Start))
		if st.OpsVia != OpsWindow || len(st.Ops) == 0 {
			continue
		}
		window++
		u, known := ar.Uncertainty(t.Spans[st.Span].Source, t.GPUOps[st.Ops[0]].Source)
		if !known {
			unknown++
		}
		worst = max(worst, u)
	}
	if window == 0 {
		return
	}
	tenth := percentileOf(durations, 50) / 10
	switch {
	case unknown > 0:
		res.warn(t, 0, "", "finer-than-alignment", fmt.Sprintf(
			"%d step(s) got their GPU ops by time window across clocks whose alignment has no known bound (unrefined): their GPU buckets may belong to neighbouring steps; mirror steps in NVTX (span_id=<hex>) to join them exactly", unknown))
	case float64(worst) > tenth:
		res.warn(t, 0, "", "finer-than-alignment", fmt.Sprintf(
			"%d step(s) got their GPU ops by time window across clocks aligned to ±%.1f µs, more than a tenth of a typical step (%.1f µs): per-token GPU buckets are finer than the alignment", window, float64(worst)/1e3, tenth/1e3))
	}
}
