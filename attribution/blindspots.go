package attribution

import (
	"cmp"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// BlindSpots says where the input cannot see: which request-lifecycle
// breakpoints no span covers, how much of E2E no stage explains, where in the
// request that time lies, and which span would close the largest gap.
type BlindSpots struct {
	// Unexplained is the share of all requests' E2E in StageOther.
	UnexplainedShare float64 `json:"unexplained_share"`
	UnexplainedMs    float64 `json:"unexplained_ms"`
	// Gaps groups the unexplained time by where it lies, largest first.
	Gaps []GapSummary `json:"gaps"`
	// Outside is time the calling service saw that the request span does
	// not cover (the caller's span minus the request's E2E), over the
	// requests that have a caller span.
	Outside *GapSummary `json:"outside_request,omitempty"`
	// Breakpoints is the coverage of the request lifecycle (the seed
	// article's breakpoints), in lifecycle order.
	Breakpoints []Breakpoint `json:"breakpoints"`
	// Largest is the gap whose instrumentation would explain the most time:
	// the largest of Gaps, or Outside when callers see more than that (nil
	// when nothing is unexplained).
	Largest *GapSummary `json:"largest,omitempty"`
}

// GapSummary is the unexplained time found at one place in the requests.
type GapSummary struct {
	// Before and After are the stages around the gap ("start" and "end" at
	// the request's edges).
	Before string `json:"before"`
	After  string `json:"after"`
	// Likely lists the stages that normally lie there but are missing.
	Likely   []string `json:"likely,omitempty"`
	Requests int      `json:"requests"`
	TotalMs  float64  `json:"total_ms"`
	// Share is of all requests' E2E.
	Share float64 `json:"share"`
	// Span is what to instrument to close the gap.
	Span string `json:"span,omitempty"`
}

// Breakpoint is one step of a request's life and whether the input shows it.
type Breakpoint struct {
	Name    string `json:"name"`
	Covered bool   `json:"covered"`
	// Spans counts the spans that show it; Via says how they were recognized.
	Spans int    `json:"spans"`
	Via   string `json:"via,omitempty"`
}

// canonicalOrder is the order stages happen in; a gap between two stages is
// where the missing ones between them would be.
var canonicalOrder = []Stage{StageTokenize, StageQueue, StagePrefill, StageDecode, StageDetokenize, StageStream}

var stageSpan = map[Stage]string{
	StageTokenize: "llm.tokenize", StageQueue: "llm.queue", StagePrefill: "llm.prefill",
	StageDecode: "llm.decode", StageDetokenize: "llm.detokenize", StageStream: "llm.stream",
}

func edgeName(st Stage, start bool) string {
	if st == StageOther {
		if start {
			return "start"
		}
		return "end"
	}
	return st.String()
}

// canonicalPos is each stage's place in canonicalOrder, −1 for a stage not
// in it.
var canonicalPos = func() (pos [NumStages]int8) {
	for st := range pos {
		pos[st] = -1
	}
	for i, st := range canonicalOrder {
		pos[st] = int8(i)
	}
	return pos
}()

// missingBetween returns the canonical stages between before and after
// that the request does not have, as a set (bit st for stage st): where
// the request has inference, prefill and decode are not missing. A set,
// not a list, and the places read from a table: blindSpots asks for every
// gap of every request, and the list, with a search of canonicalOrder for
// each place, was half its walk.
func missingBetween(r *Request, before, after Stage) uint32 {
	pos := func(st Stage, dflt int) int {
		if st == StageInference {
			st = StagePrefill
		}
		if p := canonicalPos[st]; p >= 0 {
			return int(p)
		}
		return dflt
	}
	var between uint32
	for i, hi := pos(before, -1)+1, pos(after, len(canonicalOrder)); i < hi; i++ {
		between |= 1 << canonicalOrder[i]
	}
	have := uint32(r.present)
	if r.Has(StageInference) {
		have |= 1<<StagePrefill | 1<<StageDecode
	}
	return between &^ have
}

// stageList lists the stages of set (missingBetween's) in canonical order.
func stageList(set uint32) []Stage {
	var out []Stage
	for _, st := range canonicalOrder {
		if set&(1<<st) != 0 {
			out = append(out, st)
		}
	}
	return out
}

// Gaps are grouped by the stages missing there (what would explain them),
// or by where they lie when nothing is missing; a group reports its most
// common location.
type gapLoc struct{ before, after Stage }

// gapLocCount counts a group's gaps at one location: a group keeps a list,
// searched, for the few it has (a map's hashing per gap cost more).
type gapLocCount struct {
	at gapLoc
	n  int
}

type gapAcc struct {
	ns     int64
	reqs   int
	likely []Stage
	where  []gapLocCount
}

// blindTally gathers what blindSpots reads of each request: Analyze adds
// each as it is built (requestTally), while its fields and gaps are still
// in the cache, where a walk of its own read every request again.
type blindTally struct {
	total, other int64
	// A group's place in groups: the set of missing stages (missingBetween;
	// likely lists them in canonical order), or when none is missing, after
	// those sets, where the gap lies. An array indexed by the key, not a
	// map: hashing a struct key cost a quarter of the walk.
	groups  [1<<int(NumStages) + int(NumStages)*int(NumStages)]*gapAcc
	outside gapAcc
	seen    []*gapAcc // the groups the request's gaps have joined
	// withTime counts the requests with time in each stage, for
	// breakpoints: counted here, where the requests are read anyway.
	withTime [NumStages]int
}

// add tallies request r, its gaps gaps and its caller's extra time
// callerExtra (requestArena.callerExtra).
func (b *blindTally) add(r *Request, gaps []Gap, callerExtra int64) {
	const stages = int(NumStages)
	b.total += r.End - r.Arrival
	b.other += r.Stages[StageOther]
	for st, v := range r.Stages {
		if v > 0 {
			b.withTime[st]++
		}
	}
	b.seen = b.seen[:0]
	for _, g := range gaps {
		missing := missingBetween(r, g.Before, g.After)
		key := 1<<stages + int(g.Before)*stages + int(g.After)
		if missing != 0 {
			key = int(missing)
		}
		a := b.groups[key]
		if a == nil {
			a = &gapAcc{likely: stageList(missing)}
			b.groups[key] = a
		}
		a.ns += g.To - g.From
		at, found := gapLoc{g.Before, g.After}, false
		for j := range a.where {
			if a.where[j].at == at {
				a.where[j].n++
				found = true
				break
			}
		}
		if !found {
			a.where = append(a.where, gapLocCount{at, 1})
		}
		if !slices.Contains(b.seen, a) {
			a.reqs++
			b.seen = append(b.seen, a)
		}
	}
	if callerExtra > 0 {
		b.outside.ns += callerExtra
		b.outside.reqs++
	}
}

// spots is the section of the requests tallied and the trace's span names.
func (b *blindTally) spots(t *ingest.Trace) BlindSpots {
	var bs BlindSpots
	total, other, outside := b.total, b.other, &b.outside
	type loc = gapLoc
	if total > 0 {
		bs.UnexplainedShare = float64(other) / float64(total)
	}
	bs.UnexplainedMs = float64(other) / 1e6
	for _, a := range b.groups {
		if a == nil {
			continue
		}
		var at loc
		best := -1
		for _, w := range a.where {
			l, n := w.at, w.n
			if n > best || n == best && (l.before < at.before || l.before == at.before && l.after < at.after) {
				at, best = l, n
			}
		}
		gs := GapSummary{
			Before: edgeName(at.before, true), After: edgeName(at.after, false),
			Requests: a.reqs, TotalMs: float64(a.ns) / 1e6,
		}
		if total > 0 {
			gs.Share = float64(a.ns) / float64(total)
		}
		var spans []string
		if at.before == StageOther && at.after != StageOther {
			// From the request's start to its first stage: the server's own
			// input handling (for vLLM V1, arrival → QUEUED, which it does not
			// export; docs/server-spans.md).
			gs.Likely = append(gs.Likely, "ingress", "prompt templating")
			spans = append(spans, "an ingress span (HTTP receive)", "a chat_template span")
		}
		for _, st := range a.likely {
			gs.Likely = append(gs.Likely, st.String())
			spans = append(spans, stageSpan[st])
		}
		switch {
		case len(spans) > 0:
			gs.Span = strings.Join(spans, ", ")
		case at.before == StageOther && at.after == StageOther:
			gs.Span = "llm.* stage spans (the request has none)"
		default:
			gs.Span = "a span covering the hand-off between " + gs.Before + " and " + gs.After
		}
		bs.Gaps = append(bs.Gaps, gs)
	}
	// Largest first; the ties broken to the end (groups that differ only
	// in their missing stages have the same total and edges), so that
	// groups of the same size print in one order whatever the key order.
	slices.SortFunc(bs.Gaps, func(a, b GapSummary) int {
		return cmp.Or(cmp.Compare(b.TotalMs, a.TotalMs), cmp.Compare(a.Before, b.Before), cmp.Compare(a.After, b.After),
			cmp.Compare(a.Span, b.Span), slices.Compare(a.Likely, b.Likely), cmp.Compare(b.Requests, a.Requests))
	})
	if outside.reqs > 0 {
		bs.Outside = &GapSummary{Before: "caller", After: "request", Requests: outside.reqs,
			TotalMs: float64(outside.ns) / 1e6, Span: "server spans from ingress (HTTP receive, auth, tokenization) to the engine's arrival"}
		if total > 0 {
			bs.Outside.Share = float64(outside.ns) / float64(total)
		}
	}
	bs.Breakpoints = breakpoints(t, &b.withTime)
	if len(bs.Gaps) > 0 {
		bs.Largest = &bs.Gaps[0]
	}
	if bs.Outside != nil && (bs.Largest == nil || bs.Outside.Share > bs.Largest.Share) {
		bs.Largest = bs.Outside
	}
	return bs
}

// lifecycle breakpoints (the seed article §2.1) and how a span is recognized
// as showing one: by name fragments (lower case) or by a stage it maps to.
var lifecycle = []struct {
	name   string
	names  []string
	staged bool // stage is set
	stage  Stage
	attrs  []string
}{
	{name: "ingress", names: []string{"post /", "get /", "http receive", "http_recv", "ingress"}, attrs: []string{"http.request.method", "http.method"}},
	{name: "auth", names: []string{"auth"}},
	{name: "body decode", names: []string{"decode_body", "parse_request", "deserialize", "validate"}},
	{name: "prompt templating", names: []string{"template", "chat_template"}},
	{name: "routing", names: []string{"route", "router", "dispatch"}},
	{name: "tokenize", names: []string{"tokenize", "validation"}, staged: true, stage: StageTokenize},
	{name: "queue", names: []string{"queue", "waiting"}, staged: true, stage: StageQueue},
	{name: "prefill", names: []string{"prefill"}, staged: true, stage: StagePrefill},
	{name: "decode", names: []string{"llm.decode", "decode_forward"}, staged: true, stage: StageDecode},
	// Per-step spans only: a decode stage (span or attribute) is not steps.
	{name: "decode steps", names: []string{"llm.step", "decode_loop"}},
	{name: "streaming", names: []string{"llm.stream", "stream"}, staged: true, stage: StageStream},
	{name: "egress", names: []string{"egress", "http send", "http_send", "send_response"}},
}

// breakpoints says which lifecycle breakpoints the trace shows: by its
// spans' names or attributes, or, for a breakpoint that is a stage, by the
// requests with time in it (withTime, by stage).
func breakpoints(t *ingest.Trace, withTime *[NumStages]int) []Breakpoint {
	out := make([]Breakpoint, len(lifecycle))
	attrIDs := make([][]ingest.StrID, len(lifecycle))
	for i, bp := range lifecycle {
		out[i].Name = bp.name
		for _, a := range bp.attrs {
			if id, ok := t.Key(a); ok {
				attrIDs[i] = append(attrIDs[i], id)
			}
		}
	}
	nameHit := map[ingest.StrID]int{} // span name → breakpoint index+1 (0: none)
	// recent holds names looked up in nameHit at their hash, with their
	// hit plus one (0: empty): a run's spans have a few names, and a
	// lookup here is most of a span's work.
	var recent [64]struct {
		name ingest.StrID
		hit  int
	}
	for si := range t.Spans {
		s := &t.Spans[si]
		if s.Origin != ingest.OriginOTLP {
			continue
		}
		c := &recent[uint32(s.Name)*0x9E3779B1>>26]
		hit, ok := c.hit-1, c.hit > 0 && c.name == s.Name
		if !ok {
			hit, ok = nameHit[s.Name]
		}
		if ok {
			c.name, c.hit = s.Name, hit+1
		} else {
			lower := strings.ToLower(t.Str(s.Name))
			for i, bp := range lifecycle {
				if strings.Contains(lower, "detokeniz") {
					break // output processing, not one of the breakpoints
				}
				for _, frag := range bp.names {
					if strings.Contains(lower, frag) {
						hit = i + 1
						break
					}
				}
				if hit != 0 {
					break
				}
			}
			nameHit[s.Name] = hit
		}
		if hit != 0 {
			out[hit-1].Spans++
			out[hit-1].Via = "span names"
			continue
		}
		for i, ids := range attrIDs {
			for _, id := range ids {
				if _, ok := ingest.Get(t.SpanAttrs(s), id); ok {
					out[i].Spans++
					out[i].Via = "span attributes"
				}
			}
		}
	}
	// Stages carried as attributes (vLLM's latencies) count as coverage too:
	// each request with time in the stage.
	for i, bp := range lifecycle {
		if out[i].Spans == 0 && bp.staged && withTime[bp.stage] > 0 {
			out[i].Spans = withTime[bp.stage]
			out[i].Via = "request attributes"
		}
	}
	for i := range out {
		out[i].Covered = out[i].Spans > 0
	}
	return out
}
