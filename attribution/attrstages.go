package attribution

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/llmprof/llmprof/ingest"
)

// attributeStages places stage durations carried as attributes (vLLM V0/V1,
// TensorRT-LLM, TGI, OTel GenAI server metrics) on the request's timeline.
//
// The attributes are durations between named events, not a partition of the
// span (docs/server-spans.md): vLLM V1's TTFT and e2e run from arrival on the
// API server's clock, while queue, prefill and decode are engine-core
// intervals. So they are placed from their own anchors, not end to end from
// the span start:
//
//	first token  F = start + TTFT            (else start + e2e − decode)
//	prefill        [F − prefill, F]
//	queue          [F − prefill − queue, F − prefill]
//	decode         [F, F + decode]           (V0: [F, start + e2e])
//
// What is left lies where it lies: before the queue (ingress, tokenization,
// templating, the hand-off to the engine; vLLM V1 does not export it) and
// after the last token (detokenize, stream). Without prefill (vLLM V0,
// TensorRT-LLM) the queue starts at arrival, as V0 measures it, and the time
// from its end to the first token is prefill, marked estimated. A source with
// no anchor (TGI: validation, queue, inference) runs its steps back to back
// from the start, as TGI measures them.
//
// It also returns the first and last token times the anchors give (0 when
// unknown). The intervals are appended to ivs. ttft and e2e are the
// request's TTFT and e2e attributes (keyTTFT, keyE2E), which the caller has
// read.
func (r *Request) attributeStages(k *keyCache, attrs []ingest.Attr, ttft int64, hasTTFT bool, e2e int64, hasE2E bool, ivs []interval) (_ []interval, first, last int64) {
	add := func(st Stage, from, to int64) {
		if to >= from {
			ivs = append(ivs, interval{st, from, to})
		}
	}
	queue, hasQueue := k.duration(attrs, keyQueue)
	prefill, hasPrefill := k.duration(attrs, keyPrefil)
	decode, hasDecode := k.duration(attrs, keyDecode)

	anchored := false
	switch {
	case hasTTFT:
		first, anchored = r.Arrival+ttft, true
	case hasDecode && hasE2E && e2e >= decode:
		first, anchored = r.Arrival+e2e-decode, true
	}
	if !anchored {
		at := r.Arrival
		place := func(st Stage, d int64) {
			add(st, at, at+d)
			at += d
		}
		if d, ok := k.duration(attrs, keyTokenize); ok {
			place(StageTokenize, d)
		}
		if hasQueue {
			place(StageQueue, queue)
		}
		switch {
		case hasPrefill || hasDecode:
			if hasPrefill {
				place(StagePrefill, prefill)
			}
			if hasDecode {
				place(StageDecode, decode)
			}
		default:
			if d, ok := k.duration(attrs, keyInference); ok {
				place(StageInference, d)
			}
		}
		return ivs, 0, 0
	}

	switch {
	case hasPrefill:
		add(StagePrefill, first-prefill, first)
		if hasQueue {
			add(StageQueue, first-prefill-queue, first-prefill)
		}
	case hasQueue:
		// vLLM V0's time_in_queue runs from arrival to the first scheduling;
		// the first token marks the end of prefill.
		add(StageQueue, r.Arrival, r.Arrival+queue)
		if first >= r.Arrival+queue {
			add(StagePrefill, r.Arrival+queue, first)
			r.estimate(estimatedPrefill)
		}
	}
	switch tpot, hasTPOT := k.duration(attrs, keyTPOT); {
	case hasDecode:
		last = first + decode
		add(StageDecode, first, last)
	case hasE2E && r.Style() == StyleVLLM && e2e >= ttft:
		last = r.Arrival + e2e
		add(StageDecode, first, last)
	case hasTPOT && r.OutputTokens >= 2:
		// GenAI server metrics: TPOT is the mean after the first token.
		add(StageDecode, first, first+tpot*int64(r.OutputTokens-1))
		r.estimate(estimatedDecode)
	}
	return ivs, first, last
}

// stageLength is the time the intervals of stage st cover inside [from, to),
// overlaps counted once.
func stageLength(ivs []interval, st Stage, from, to int64) (int64, bool) {
	var own []interval
	for _, iv := range ivs {
		if iv.stage == st {
			own = append(own, interval{st, max(iv.from, from), min(iv.to, to)})
		}
	}
	if len(own) == 0 {
		return 0, false
	}
	slices.SortFunc(own, func(a, b interval) int { return cmp.Compare(a.from, b.from) })
	var total int64
	cur := own[0]
	for _, iv := range own[1:] {
		if iv.from > cur.to {
			total += max(0, cur.to-cur.from)
			cur = iv
			continue
		}
		cur.to = max(cur.to, iv.to)
	}
	return total + max(0, cur.to-cur.from), true
}

// disagreeFactor is how far a latency attribute may be from the stage spans
// of the same request before it is reported; disagreeFloor ignores both
// being shorter than a millisecond (clock quantization).
const (
	disagreeFactor = 2.0
	disagreeFloor  = int64(1_000_000)
)

// crossCheck compares the latency attributes a request carries with its
// stage spans, for every convention that has both (SGLang roots carry
// gen_ai.latency.* measured by its tokenizer process at output arrival, so
// that a non-streaming request shows decode ≈ 0 beside a long
// decode_forward slice). It returns one problem per disagreement beyond
// disagreeFactor; the stages and TPOT come from the spans.
func (r *Request) crossCheck(k *keyCache, attrs []ingest.Attr, ivs []interval) []string {
	var problems []string
	check := func(keys *keyList, what string, span int64) {
		key, attr, ok := k.durationKey(attrs, keys)
		if !ok || max(attr, span) < disagreeFloor {
			return
		}
		ratio := math.Inf(1)
		if lo := min(attr, span); lo > 0 {
			ratio = float64(max(attr, span)) / float64(lo)
		}
		if ratio > disagreeFactor {
			problems = append(problems, fmt.Sprintf("%s = %s but the %s covers %s (%s): stages and TPOT are taken from the spans",
				key, fmtMs(attr), what, fmtMs(span), fmtRatio(ratio)))
		}
	}
	for _, c := range []struct {
		keys  *keyList
		stage Stage
	}{{keyQueue, StageQueue}, {keyPrefil, StagePrefill}, {keyDecode, StageDecode}} {
		if n, ok := stageLength(ivs, c.stage, r.Arrival, r.End); ok {
			check(c.keys, c.stage.String()+" span", n)
		}
	}
	if end, ok := stageEnd(ivs, StagePrefill); ok {
		check(keyTTFT, "time to the prefill span's end", end-r.Arrival)
	}
	return problems
}

// durationKey is duration that also says which key it read.
// Unlike duration it goes on past a present key whose value is no
// duration.
func (k *keyCache) durationKey(attrs []ingest.Attr, keys *keyList) (string, int64, bool) {
	for _, pk := range k.present(keys) {
		if v, ok := ingest.Get(attrs, pk.id); ok {
			if d, ok := k.durationOf(pk.name, v); ok {
				return pk.name, d, true
			}
		}
	}
	return "", 0, false
}

func fmtMs(ns int64) string { return fmt.Sprintf("%.3f ms", float64(ns)/1e6) }

func fmtRatio(r float64) string {
	if math.IsInf(r, 1) {
		return "one side is zero"
	}
	return fmt.Sprintf("%.1f×", r)
}

// E2ENote says which E2E the request figures use and how the servers' own
// e2e attribute compares with it.
type E2ENote struct {
	// Used is always the request span's duration: the stages partition it.
	Used string `json:"used"`
	// Attribute is the e2e attribute key seen (empty: none), WithAttribute
	// how many requests carry it, Differ how many of those differ from the
	// span duration by more than a millisecond.
	Attribute     string `json:"attribute,omitempty"`
	WithAttribute int    `json:"with_attribute"`
	Differ        int    `json:"differ"`
	// SpanP50Ms and AttributeP50Ms are the medians over the requests that
	// differ (NaN when none do).
	SpanP50Ms      Float `json:"span_p50_ms"`
	AttributeP50Ms Float `json:"attribute_p50_ms"`
}

// e2eTally summarizes the e2e attributes against the span durations of
// the requests added.
type e2eTally struct {
	n          E2ENote
	span, attr []float64 // of the requests whose two differ
}

// add tallies request r, its e2e attribute attr (NaN when absent).
func (y *e2eTally) add(r *Request, attr float64) {
	if math.IsNaN(attr) {
		return
	}
	y.n.Attribute = keyE2E.names[0]
	y.n.WithAttribute++
	if math.Abs(r.E2E-attr) > float64(disagreeFloor) {
		y.n.Differ++
		y.span = append(y.span, r.E2E)
		y.attr = append(y.attr, attr)
	}
}

// note is the summary (it reorders the values kept).
func (y *e2eTally) note() E2ENote {
	n := y.n
	n.Used = "span duration"
	n.SpanP50Ms, n.AttributeP50Ms = Float(math.NaN()), Float(math.NaN())
	if len(y.span) > 0 {
		n.SpanP50Ms = Float(percentileOf(y.span, 50) / 1e6)
		n.AttributeP50Ms = Float(percentileOf(y.attr, 50) / 1e6)
	}
	return n
}
