package attribution

import (
	"math"
	"reflect"
	"testing"
	"time"
)

// A group of the same requests as an earlier one (every request, as a run's
// only model or tenant holds; or an earlier group's) takes the earlier
// summary: the figures a summary computed afresh has, under its own name,
// with a Goodput of its own.
func TestSummaryOfSameRequestsReused(t *testing.T) {
	opts := DefaultOptions
	opts.SLO = SLO{TTFT: 200 * time.Millisecond, E2E: 2 * time.Second}
	res := Analyze(stallingTrace(t), opts)
	tpot := sortedTPOT(res.Requests)
	every := make([]int32, len(res.Requests))
	everyTPOT := make([]float64, len(tpot))
	for i := range every {
		every[i] = int32(i)
	}
	for i, s := range tpot {
		everyTPOT[i] = s.v
	}
	var some []int32
	var someTPOT []float64
	for i := range res.Requests {
		if res.tenants.of[i] == 0 {
			some = append(some, int32(i))
		}
	}
	for _, s := range tpot {
		if res.tenants.of[s.req] == 0 {
			someTPOT = append(someTPOT, s.v)
		}
	}
	if len(some) == 0 || len(some) == len(every) {
		t.Fatalf("tenant 0 holds %d of %d requests: the test needs a proper subset", len(some), len(every))
	}

	sm := summarizerOf(res, tpot, opts.SLO)
	overall := sm.all("all")
	first := sm.summarize("first", some, someTPOT)
	for _, tc := range []struct {
		name    string
		idx     []int32
		tpot    []float64
		earlier Summary
	}{
		{"every request", every, everyTPOT, overall},
		{"the same subset", some, someTPOT, first},
	} {
		got := sm.summarize("again", tc.idx, tc.tpot)
		want := summarizerOf(res, tpot, opts.SLO).summarizeNew("again", tc.idx, tc.tpot)
		if want.Goodput == nil {
			t.Fatal("no goodput: the test does not cover its copy")
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %+v, computed afresh %+v", tc.name, got, want)
		}
		if got.Goodput == tc.earlier.Goodput {
			t.Errorf("%s: the summary shares the earlier group's Goodput", tc.name)
		}
	}
	if len(sm.done) != 2 {
		t.Errorf("%d summaries computed, want 2", len(sm.done))
	}
}

// sortedTPOT is the requests' known TPOTs sorted, as Analyze's tally
// gathers them while it builds the requests (requestTally) and sorts them
// (sortTPOT), for the summarizer.
func sortedTPOT(reqs []Request) tpotOrder {
	var o tpotOrder
	for i := range reqs {
		if v := reqs[i].TPOT; !math.IsNaN(v) {
			o = append(o, tpotSample{v, int32(i)})
		}
	}
	sortTPOT(o)
	return o
}

// itlCount is how many inter-token latencies the requests of res have, as
// requestTally counts them for newSummarizer.
func itlCount(res *Result) int {
	n := 0
	for i := range res.Requests {
		n += len(res.ITLs(&res.Requests[i]))
	}
	return n
}

// tallyOf tallies the built requests of res as Analyze does while it
// builds them, what no Request keeps read again (Result.Gaps,
// Result.e2eAttr, callerExtra).
func tallyOf(res *Result) *requestTally {
	y := newRequestTally(len(res.Requests))
	a := requestArena{labels: res.labels, tokens: res.tokenTimes, segs: res.segs}
	t := res.trace
	ix, k := newSpanIndex(t), newKeyCache(t)
	for i := range res.Requests {
		r := &res.Requests[i]
		a.gaps, a.e2eAttr, a.callerExtra = res.Gaps(r), res.e2eAttr(r), callerExtra(t, ix, k, r.Span)
		y.add(i, r, &a)
	}
	return y
}

// summarizerOf is the summarizer Analyze makes for res, its known TPOTs
// tpot, sorted.
func summarizerOf(res *Result, tpot tpotOrder, slo SLO) *summarizer {
	y := tallyOf(res)
	return newSummarizer(res, y.rows, tpot, y.itls, slo)
}

// TestSummarizerRows: the summarizer's rows, which the tally writes as the
// requests are built, hold each request's figures, and its inter-token
// latencies are the requests' own (Result.ITLs), request after request,
// each row's extent of them its request's.
func TestSummarizerRows(t *testing.T) {
	res := Analyze(stallingTrace(t), DefaultOptions)
	sm := summarizerOf(res, sortedTPOT(res.Requests), SLO{})
	if len(sm.rows) != len(res.Requests) {
		t.Fatalf("%d rows for %d requests", len(sm.rows), len(res.Requests))
	}
	var itls []float64
	known := 0
	for i := range res.Requests {
		r := &res.Requests[i]
		from := len(itls)
		for _, d := range res.ITLs(r) {
			itls = append(itls, float64(d))
		}
		want := summaryRow{ttft: r.TTFT, queue: r.Queue, arrival: r.Arrival, end: r.End,
			in: int64(max(r.InputTokens, 0)), out: int64(max(r.OutputTokens, 0)), tokens: r.tokens, itls: extentOf(from, len(itls))}
		got := sm.rows[i]
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }
		if !same(got.ttft, want.ttft) || float64(got.end-got.arrival) != r.E2E || !same(got.queue, want.queue) ||
			got.arrival != want.arrival || got.end != want.end || got.in != want.in || got.out != want.out ||
			got.tokens != want.tokens || got.itls != want.itls {
			t.Fatalf("request %d: row %+v, want %+v", i, got, want)
		}
		if !math.IsNaN(r.TTFT) {
			known++
		}
	}
	if len(itls) == 0 || known == 0 {
		t.Fatal("no inter-token latencies or TTFTs: the test covers nothing")
	}
	if !reflect.DeepEqual(sm.itls, itls) {
		t.Errorf("the summarizer's %d inter-token latencies differ from the requests' %d", len(sm.itls), len(itls))
	}
}

// TestTallyCountsITLs: the tally counts the inter-token latencies the
// summarizer's array is made for, as the requests are built.
func TestTallyCountsITLs(t *testing.T) {
	res := Analyze(stallingTrace(t), DefaultOptions)
	y := newRequestTally(len(res.Requests))
	a := requestArena{labels: res.labels, tokens: res.tokenTimes}
	for i := range res.Requests {
		y.add(i, &res.Requests[i], &a)
	}
	if want := itlCount(res); y.itls != want || want == 0 {
		t.Fatalf("tally counts %d inter-token latencies, the requests have %d", y.itls, want)
	}
}
