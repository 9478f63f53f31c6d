package attribution

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// minTokenGap is the shortest time per output token a real engine shows:
// one decode step of the smallest model on the fastest GPU takes well over
// 0.1 ms, so a TPOT or ITL under it says the token times (or the attribute
// they come from) are not per token.
const minTokenGap = 100_000 // ns

// plausibility warns about figures the input gives that cannot be true,
// naming the field: TPOT or ITL under minTokenGap, and stage spans that no
// request can use because nothing links them to one (then the stages come
// from the request's attributes alone, and say so).
func (res *Result) plausibility(t *ingest.Trace, ix *spanIndex, reqs requestSpans, y *implausibleTally) {
	tpot, itl, tpotFrom := y.tpot, y.itl, y.tpotFrom
	if len(tpot) > 0 {
		res.warn(t, 0, "", "implausible-tpot", fmt.Sprintf("TPOT under 0.1 ms on %d of %d requests (smallest %s, from %s): no decode step is that fast, so the figures are not per token",
			len(tpot), len(res.Requests), fmtMs(int64(slices.Min(tpot))), tpotFrom))
	}
	if len(itl) > 0 {
		res.warn(t, 0, "", "implausible-itl", fmt.Sprintf("ITL under 0.1 ms between %d pairs of llm.token events (smallest %s): no decode step is that fast; the events may mark chunks or be stamped when sent, not per token",
			len(itl), fmtMs(int64(slices.Min(itl)))))
	}
	res.unlinkedStageSpans(t, ix, reqs)
}

// implausibleTally keeps the TPOTs and token gaps under minTokenGap of the
// requests added, for plausibility.
type implausibleTally struct {
	tpot, itl []float64
	// tpotFrom is where the first implausible TPOT came from (tpotSource).
	tpotFrom string
}

// add tallies request r, whose token times are tokens.
func (y *implausibleTally) add(r *Request, tokens []int64) {
	if !math.IsNaN(r.TPOT) && r.TPOT < minTokenGap && r.OutputTokens >= 2 {
		y.tpot = append(y.tpot, r.TPOT)
		if y.tpotFrom == "" {
			y.tpotFrom = tpotSource(r)
		}
	}
	for j := 1; j < len(tokens); j++ {
		if d := tokens[j] - tokens[j-1]; d < minTokenGap {
			y.itl = append(y.itl, float64(d))
		}
	}
}

// tpotSource says where a request's TPOT came from.
func tpotSource(r *Request) string {
	switch {
	case r.tokens.Len >= 2:
		return "the llm.token events"
	case r.LastToken != 0 && r.Has(StageDecode):
		return "the decode stage (" + strings.Join(keyDecode.names, ", ") + " or its span) over the output tokens"
	}
	return "the TPOT attribute"
}

// unlinkedStageSpans warns when stage spans (stageSpanNames) reach no
// request span through their parent links: an exporter that drops parent
// IDs (SGLang slices exported without their context) leaves the stages to
// the request's latency attributes, which may tell another story.
func (res *Result) unlinkedStageSpans(t *ingest.Trace, ix *spanIndex, reqs requestSpans) {
	// The stage names the trace holds, by ID (spanNameIDs): a trace with
	// none has no span to look at.
	ids := spanNameIDs(t, slices.Collect(maps.Keys(stageSpanNames))...)
	if len(ids) == 0 {
		return
	}
	names := map[string]int{}
	n := 0
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin != ingest.OriginOTLP || !slices.Contains(ids, s.Name) {
			continue
		}
		name := t.Str(s.Name)
		linked := false
		for p, ok, depth := i, true, 0; ok && !linked && depth < 10_000; depth++ { // depth: parent cycles
			if p, ok = ix.parent(p); ok {
				_, linked = reqs.find(p)
			}
		}
		if !linked {
			n++
			names[name]++
		}
	}
	if n == 0 {
		return
	}
	var list []string
	for name := range names {
		list = append(list, name)
	}
	slices.Sort(list)
	if len(list) > 4 {
		list = append(list[:4], "…")
	}
	res.warn(t, 0, "", "unparented-stage-spans", fmt.Sprintf("%d stage spans (%s) have no parent link to a request span: they are not used, and the requests' stages come from their latency attributes alone",
		n, strings.Join(list, ", ")))
}
