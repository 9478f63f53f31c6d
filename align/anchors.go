package align

import (
	"cmp"
	"math"
	"slices"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/internal/stat"
)

// The relations between records of different clock domains are found once,
// before any domain is fitted (record indices stay valid because Align sorts
// the trace only at the end); each round then turns the relations whose one
// side is already aligned into anchors for the domain on the other side.

// mirror is an NVTX range and the OTLP span it names in its text.
type mirror struct {
	nvtx, otlp int32
}

// sequence is a run of same-name NVTX ranges and OTLP spans paired in order.
type sequence struct {
	name       string
	nvtx, otlp []int32
}

// pairRel is a hard causal relation: for rpc, a is a client span and b the
// server span it called; for launches, a is a CUDA API call (an index in
// t.APICalls) and b the GPU op it launched.
type pairRel struct{ a, b int32 }

// relations holds everything cross-domain the trace offers.
type relations struct {
	mirrors   []mirror
	sequences []sequence
	rpc       []pairRel
	launches  []pairRel
	// Problems noticed while matching, reported once per domain.
	ambiguous int
}

// minSequence is the shortest same-name run used as anchors: with fewer
// events an in-order pairing cannot be checked for consistency.
const minSequence = 3

func (al *aligner) buildRelations() {
	al.rel.mirrors = al.findMirrors()
	al.rel.sequences = al.findSequences()
	al.rel.rpc = al.findRPC()
	al.rel.launches = al.findLaunches()
}

func (al *aligner) dom(src ingest.SourceID) int {
	if int(src) < len(al.domOf) {
		return al.domOf[src]
	}
	return -1
}

// findMirrors matches NVTX ranges whose text carries span_id=, request_id=
// or step= to the one OTLP span with that ID in another clock domain.
// Several NVTX ranges may mirror the same span (one per tensor-parallel
// rank); an ID that more than one OTLP span carries is ambiguous and skipped.
func (al *aligner) findMirrors() []mirror {
	t := al.t
	type keyed struct {
		idx int32
		key ingest.Mirror
	}
	cache := map[ingest.StrID]ingest.Mirror{}
	var list []keyed
	wantReq, wantStep := map[string]bool{}, map[string]bool{}
	haveSpanIDs := false
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin != ingest.OriginNVTX {
			continue
		}
		k, ok := cache[s.Name]
		if !ok {
			k = ingest.ParseMirror(t.Str(s.Name))
			cache[s.Name] = k
		}
		switch k.Kind {
		case ingest.MirrorNone:
			continue
		case ingest.MirrorSpanID:
			haveSpanIDs = true
		case ingest.MirrorRequest:
			wantReq[k.ID] = true
		case ingest.MirrorStep:
			wantStep[k.ID] = true
		}
		list = append(list, keyed{int32(i), k})
	}
	if len(list) == 0 {
		return nil
	}
	byID := map[ingest.SpanID]int32{}
	byReq := map[string][]int32{}
	byStep := map[string][]int32{}
	reqKeys := al.keyIDs(requestIDKeys)
	stepKeys := al.keyIDs(stepIDKeys)
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin != ingest.OriginOTLP {
			continue
		}
		if haveSpanIDs && !s.ID.IsZero() {
			if _, dup := byID[s.ID]; dup {
				byID[s.ID] = -1
			} else {
				byID[s.ID] = int32(i)
			}
		}
		if len(wantReq) > 0 {
			if v, ok := spanKeyValue(t, s, reqKeys); ok && wantReq[v] {
				byReq[v] = append(byReq[v], int32(i))
			}
		}
		if len(wantStep) > 0 {
			if v, ok := spanKeyValue(t, s, stepKeys); ok && wantStep[ingest.NormalizeStep(v)] {
				byStep[ingest.NormalizeStep(v)] = append(byStep[ingest.NormalizeStep(v)], int32(i))
			}
		}
	}
	var out []mirror
	for _, k := range list {
		otlp := int32(-1)
		switch k.key.Kind {
		case ingest.MirrorSpanID:
			if j, ok := byID[k.key.Span]; ok {
				otlp = j
			}
		case ingest.MirrorRequest:
			otlp = al.pickUnique(byReq[k.key.ID], requestSpanNames)
		case ingest.MirrorStep:
			otlp = al.pickUnique(byStep[k.key.ID], stepSpanNames)
		}
		if otlp == -1 {
			continue
		}
		if otlp < -1 {
			al.rel.ambiguous++
			continue
		}
		if al.dom(t.Spans[k.idx].Source) == al.dom(t.Spans[otlp].Source) {
			continue
		}
		out = append(out, mirror{nvtx: k.idx, otlp: otlp})
	}
	return out
}

func (al *aligner) keyIDs(names []string) []ingest.StrID {
	var ids []ingest.StrID
	for _, n := range names {
		if id, ok := al.t.Key(n); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// pickUnique returns the one candidate, or the one whose name is preferred;
// -1 when there is none and -2 when the choice is ambiguous.
func (al *aligner) pickUnique(cands []int32, preferred []string) int32 {
	switch len(cands) {
	case 0:
		return -1
	case 1:
		return cands[0]
	}
	found := int32(-1)
	for _, c := range cands {
		if slices.Contains(preferred, al.t.Str(al.t.Spans[c].Name)) {
			if found >= 0 {
				return -2
			}
			found = c
		}
	}
	if found < 0 {
		return -2
	}
	return found
}

// findSequences pairs NVTX ranges and OTLP spans that share a name, in time
// order, when both domains have the same number of them (≥ minSequence) and
// the pairing is consistent: after removing a linear trend, the pairs' time
// differences spread by less than a quarter of the typical gap between
// consecutive events, so an off-by-one pairing would have shown.
func (al *aligner) findSequences() []sequence {
	t := al.t
	type groupKey struct {
		name ingest.StrID
		dom  int
	}
	nvtx := map[groupKey][]int32{}
	behind := spill.DropBehind(t.Spans)
	for i := range t.Spans {
		behind.Passed(i)
		if s := &t.Spans[i]; s.Origin == ingest.OriginNVTX {
			k := groupKey{s.Name, al.dom(s.Source)}
			nvtx[k] = append(nvtx[k], int32(i))
		}
	}
	names := make(map[ingest.StrID]bool, len(nvtx))
	for k := range nvtx {
		names[k.name] = true
	}
	// Only OTLP spans named like some NVTX range can pair: the others are
	// not grouped (an OTLP-only input, whose every span was, spent 1.2% of
	// its analyze here).
	if len(names) == 0 {
		return nil
	}
	otlp := map[groupKey][]int32{}
	behind = spill.DropBehind(t.Spans)
	for i := range t.Spans {
		behind.Passed(i)
		if s := &t.Spans[i]; s.Origin == ingest.OriginOTLP && names[s.Name] {
			k := groupKey{s.Name, al.dom(s.Source)}
			otlp[k] = append(otlp[k], int32(i))
		}
	}
	var out []sequence
	for nk, ns := range nvtx {
		for ok, os := range otlp {
			if nk.name != ok.name || nk.dom == ok.dom || len(ns) != len(os) || len(ns) < minSequence {
				continue
			}
			if !al.consistentPairing(ns, os) {
				continue
			}
			out = append(out, sequence{name: t.Str(nk.name), nvtx: ns, otlp: os})
		}
	}
	slices.SortFunc(out, func(a, b sequence) int { return cmp.Compare(a.nvtx[0], b.nvtx[0]) })
	return out
}

func (al *aligner) consistentPairing(ns, os []int32) bool {
	sp := al.t.Spans
	x0 := sp[ns[0]].Start
	u := make([]float64, len(ns))
	r := make([]float64, len(ns))
	d0 := sp[os[0]].Start - sp[ns[0]].Start
	for i := range ns {
		u[i] = toSeconds(sp[ns[i]].Start, x0)
		r[i] = float64(sp[os[i]].Start - sp[ns[i]].Start - d0)
	}
	a, d, ok := stat.TheilSen(u, r)
	if !ok {
		return false
	}
	res := make([]float64, len(u))
	for i := range u {
		res[i] = math.Abs(r[i] - a - d*u[i])
	}
	slices.Sort(res)
	gaps := make([]float64, 0, len(os)-1)
	for i := 1; i < len(os); i++ {
		gaps = append(gaps, float64(sp[os[i]].Start-sp[os[i-1]].Start))
	}
	return stat.Quantile(res, 0.9) < stat.Median(gaps)/4
}

// findRPC pairs an OTLP client span with the server span it called when the
// two are in different clock domains: the server span lies inside the client
// span (a server cannot receive before the client sends, nor the client
// receive the reply before the server sends it).
func (al *aligner) findRPC() []pairRel {
	t := al.t
	type key struct {
		trace ingest.TraceID
		span  ingest.SpanID
	}
	clients := map[key]int32{}
	behind := spill.DropBehind(t.Spans)
	for i := range t.Spans {
		behind.Passed(i)
		s := &t.Spans[i]
		if s.Origin == ingest.OriginOTLP && s.Kind == ingest.SpanKindClient && !s.ID.IsZero() {
			clients[key{s.TraceID, s.ID}] = int32(i)
		}
	}
	if len(clients) == 0 {
		return nil
	}
	var out []pairRel
	behind = spill.DropBehind(t.Spans)
	for i := range t.Spans {
		behind.Passed(i)
		s := &t.Spans[i]
		if s.Origin != ingest.OriginOTLP || s.Kind != ingest.SpanKindServer || s.Parent.IsZero() {
			continue
		}
		if c, ok := clients[key{s.TraceID, s.Parent}]; ok && al.dom(t.Spans[c].Source) != al.dom(s.Source) {
			out = append(out, pairRel{c, int32(i)})
		}
	}
	return out
}

// findLaunches pairs GPU ops with the CUDA API call that launched them when
// the two come from different clock domains (a source with GPU ops but no API
// calls, and one with the calls). Within one source they share a clock
// already (CUPTI converted them) and serve only as the consistency check
// reported in Causality.
func (al *aligner) findLaunches() []pairRel {
	t := al.t
	hasAPI := callSources(t)
	need := false
	behind := spill.DropBehind(t.GPUOps)
	for i := range t.GPUOps {
		behind.Passed(i)
		o := &t.GPUOps[i]
		if o.Correlation != 0 && int(o.Source) < len(hasAPI) && !hasAPI[o.Source] {
			need = true
			break
		}
	}
	if !need {
		return nil
	}
	// A (pid, correlation) that several calls share is ambiguous: no pair.
	var out []pairRel
	t.EachLaunch(func(op int32, group []int32) {
		o := &t.GPUOps[op]
		if len(group) != 1 || int(o.Source) < len(hasAPI) && hasAPI[o.Source] {
			return
		}
		if c := group[0]; al.dom(t.APICalls[c].Source) != al.dom(o.Source) {
			out = append(out, pairRel{c, op})
		}
	})
	return out
}

// callSources says which sources have CUDA API calls with a correlation ID,
// by SourceID.
func callSources(t *ingest.Trace) []bool {
	has := make([]bool, len(t.Sources))
	behind := spill.DropBehind(t.APICalls)
	for i := range t.APICalls {
		behind.Passed(i)
		if s := &t.APICalls[i]; s.Correlation != 0 && int(s.Source) < len(has) {
			has[s.Source] = true
		}
	}
	return has
}

// collect gathers the anchors that tie domain d to the domains aligned so
// far. Times of aligned domains are already on the reference clock; those of
// d are still local.
func (al *aligner) collect(d int) anchorSet {
	t := al.t
	var set anchorSet
	// partner returns how much a reference-side time from domain e may be
	// off: its guaranteed bound (0 for the reference itself).
	partner := func(e int) (int64, bool) {
		pd := al.domains[e]
		if !pd.done || pd.status == StatusCannotAlign {
			return 0, false
		}
		return pd.bound, pd.boundKnown
	}
	hard := func(x, y, slack int64, lower bool, known bool) {
		if !known {
			set.partnerUnknown = true
			return
		}
		set.hard = append(set.hard, hardBound{x: x, y: y, slack: slack + al.opts.TimestampSlackNs, lower: lower})
		set.causal = true
	}
	usable := func(e int) bool {
		pd := al.domains[e]
		return pd.done && pd.status != StatusCannotAlign
	}

	for _, src := range al.domains[d].sources {
		for _, a := range t.Sources[src].Anchors {
			switch a.Kind {
			case ingest.AnchorClockPair:
				if a.RefHigh < a.RefLow {
					continue
				}
				w := float64(max(a.RefHigh-a.RefLow, 1))
				set.points = append(set.points, point{x: a.Local, y: a.RefLow + (a.RefHigh-a.RefLow)/2, weight: 1 / (w * w)})
				set.hard = append(set.hard, hardBound{x: a.Local, y: a.RefLow, lower: true}, hardBound{x: a.Local, y: a.RefHigh})
				set.counts.ClockPair++
			case ingest.AnchorEpoch:
				set.counts.Epoch++
			}
		}
	}

	for _, m := range al.rel.mirrors {
		n, o := &t.Spans[m.nvtx], &t.Spans[m.otlp]
		dn, do := al.dom(n.Source), al.dom(o.Source)
		switch {
		case dn == d && usable(do):
			slack, known := partner(do)
			set.points = append(set.points, point{x: n.Start, y: o.Start})
			if n.End != n.Start {
				set.points = append(set.points, point{x: n.End, y: o.End})
			}
			if al.opts.MirrorInsideSpan {
				hard(n.Start, o.Start, slack, true, known)
				hard(n.End, o.End, slack, false, known)
			}
		case do == d && usable(dn):
			slack, known := partner(dn)
			set.points = append(set.points, point{x: o.Start, y: n.Start})
			if n.End != n.Start {
				set.points = append(set.points, point{x: o.End, y: n.End})
			}
			if al.opts.MirrorInsideSpan {
				hard(o.Start, n.Start, slack, false, known)
				hard(o.End, n.End, slack, true, known)
			}
		default:
			continue
		}
		set.counts.Matched++
	}

	if set.counts.Matched == 0 {
		for _, sq := range al.rel.sequences {
			dn, do := al.dom(t.Spans[sq.nvtx[0]].Source), al.dom(t.Spans[sq.otlp[0]].Source)
			var xs, ys []int32
			switch {
			case dn == d && usable(do):
				xs, ys = sq.nvtx, sq.otlp
			case do == d && usable(dn):
				xs, ys = sq.otlp, sq.nvtx
			default:
				continue
			}
			if _, known := partner(al.dom(t.Spans[ys[0]].Source)); !known {
				set.partnerUnknown = true
			}
			for i := range xs {
				set.points = append(set.points, point{x: t.Spans[xs[i]].Start, y: t.Spans[ys[i]].Start})
			}
			set.counts.Sequence += len(xs)
		}
	}

	for _, p := range al.rel.rpc {
		c, s := &t.Spans[p.a], &t.Spans[p.b]
		dc, ds := al.dom(c.Source), al.dom(s.Source)
		switch {
		case ds == d && usable(dc):
			slack, known := partner(dc)
			hard(s.Start, c.Start, slack, true, known)
			hard(s.End, c.End, slack, false, known)
		case dc == d && usable(ds):
			slack, known := partner(ds)
			hard(c.Start, s.Start, slack, false, known)
			hard(c.End, s.End, slack, true, known)
		default:
			continue
		}
		set.counts.Causal++
	}

	for _, p := range al.rel.launches {
		call, op := &t.APICalls[p.a], &t.GPUOps[p.b]
		dc, do := al.dom(call.Source), al.dom(op.Source)
		switch {
		case do == d && usable(dc):
			slack, known := partner(dc)
			hard(op.Start, call.Start, slack, true, known)
		case dc == d && usable(do):
			slack, known := partner(do)
			hard(call.Start, op.Start, slack, false, known)
		default:
			continue
		}
		set.counts.Causal++
	}
	return set
}

// Mirror pairs an NVTX range with the OTLP span it mirrors; both are indices
// into Trace.Spans.
type Mirror struct {
	NVTX, OTLP int
}

// Mirrors returns the NVTX ranges whose text names an OTLP span of another
// clock domain (span_id=, request_id=, step=), matched exactly as Align
// matches them. Indices refer to t as it is: call it after Align, which
// re-sorts the records.
func Mirrors(t *ingest.Trace) []Mirror {
	al := &aligner{t: t}
	al.groupDomains()
	ms := al.findMirrors()
	out := make([]Mirror, len(ms))
	for i, m := range ms {
		out[i] = Mirror{NVTX: int(m.nvtx), OTLP: int(m.otlp)}
	}
	return out
}
