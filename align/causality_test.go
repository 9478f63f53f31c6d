package align

import (
	"math/rand/v2"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

// causalityByMaps is CheckCausality as it was before it used ingest's
// launch join (two hash maps over every API call), kept as the reference
// the join must reproduce.
func causalityByMaps(t *ingest.Trace) Causality {
	var c Causality
	type key struct {
		src       ingest.SourceID
		pid, corr uint32
	}
	type anyKey struct{ pid, corr uint32 }
	calls := map[key]int64{}
	shared := map[anyKey]int64{}
	hasAPI := make([]bool, len(t.Sources))
	for i := range t.Spans {
		s := &t.Spans[i]
		for _, e := range t.Events(s) {
			c.EventsChecked++
			if e.Time < s.Start || e.Time > s.End {
				c.EventsOutside++
			}
		}
	}
	for i := range t.APICalls {
		s := &t.APICalls[i]
		if s.Correlation == 0 {
			continue
		}
		if int(s.Source) < len(hasAPI) {
			hasAPI[s.Source] = true
		}
		calls[key{s.Source, s.Pid, s.Correlation}] = s.Start
		ak := anyKey{s.Pid, s.Correlation}
		if _, dup := shared[ak]; dup {
			shared[ak] = -1 << 63
		} else {
			shared[ak] = s.Start
		}
	}
	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		if o.Correlation == 0 {
			continue
		}
		var start int64
		var ok bool
		if int(o.Source) < len(hasAPI) && hasAPI[o.Source] {
			start, ok = calls[key{o.Source, o.Pid, o.Correlation}]
		} else {
			start, ok = shared[anyKey{o.Pid, o.Correlation}]
			ok = ok && start != -1<<63
		}
		if !ok {
			continue
		}
		c.Checked++
		if lead := start - o.Start; lead > 0 {
			c.Violations++
			c.LargestNs = max(c.LargestNs, lead)
		}
	}
	return c
}

// launchCallsBrute is Trace.LaunchCalls by definition: for each op, the
// first call (by index) of its own source with its pid and correlation,
// else the first of any source.
func launchCallsBrute(t *ingest.Trace) []int32 {
	calls := make([]int32, len(t.GPUOps))
	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		calls[i] = -1
		if o.Correlation == 0 {
			continue
		}
		for j := range t.APICalls {
			s := &t.APICalls[j]
			if s.Pid != o.Pid || s.Correlation != o.Correlation {
				continue
			}
			if calls[i] < 0 {
				calls[i] = int32(j)
			}
			if s.Source == o.Source {
				calls[i] = int32(j)
				break
			}
		}
	}
	return calls
}

// CheckCausality and LaunchCalls share one join (Trace.EachLaunch) and keep
// their own semantics: on random traces with repeated keys within and
// across sources, sources without API calls, ops from a source index past
// Sources, correlation 0 and non-API spans, both equal their references.
// A trial's correlation IDs are dense (0..keys, the direct table of
// ingest's launchIndex) or spread over 2³¹ (its bisection), and ops also
// carry IDs no call has: below, between and above a process's calls.
func TestCausalityJoinMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 32))
	for trial := range 2000 {
		tr := ingest.New()
		nsrc := 1 + rng.IntN(3)
		tr.Sources = make([]ingest.Source, nsrc)
		keys := 1 + rng.IntN(12)
		pool := make([]uint32, keys)
		sparse := rng.IntN(2) == 0
		for i := range pool {
			pool[i] = uint32(i)
			if sparse {
				pool[i] = uint32(rng.IntN(1 << 31))
			}
		}
		corr := func(miss bool) uint32 {
			if miss && rng.IntN(5) == 0 {
				return uint32(rng.IntN(1 << 31)) // most likely no call's
			}
			return pool[rng.IntN(keys)]
		}
		origins := []ingest.SpanOrigin{ingest.OriginCUDARuntime, ingest.OriginCUDADriver}
		for range rng.IntN(40) {
			start := rng.Int64N(1000)
			tr.APICalls = append(tr.APICalls, ingest.APICall{Start: start, End: start + rng.Int64N(100), Pid: uint32(rng.IntN(3)),
				Correlation: corr(false), Source: ingest.SourceID(rng.IntN(nsrc + 1)), Origin: origins[rng.IntN(len(origins))]})
			if rng.IntN(4) == 0 {
				// A call without correlation is never a launch.
				tr.APICalls[len(tr.APICalls)-1].Correlation = 0
			}
		}
		for range rng.IntN(20) {
			start := rng.Int64N(1000)
			s := ingest.Span{Start: start, End: start + rng.Int64N(100), Pid: uint32(rng.IntN(3)),
				Source: ingest.SourceID(rng.IntN(nsrc + 1)), Origin: ingest.OriginNVTX, Resource: -1, Scope: -1}
			if rng.IntN(2) == 0 {
				s.Extra = tr.AddExtra([]ingest.Event{{Time: start - 5 + rng.Int64N(120)}}, nil)
			}
			tr.Spans = append(tr.Spans, s)
		}
		for range rng.IntN(40) {
			start := rng.Int64N(1000)
			tr.GPUOps = append(tr.GPUOps, ingest.GPUOp{Start: start, End: start + 10, Pid: uint32(rng.IntN(3)),
				Correlation: corr(true), Source: ingest.SourceID(rng.IntN(nsrc + 1))})
		}
		if got, want := CheckCausality(tr), causalityByMaps(tr); got != want {
			t.Fatalf("trial %d: CheckCausality %+v, reference %+v", trial, got, want)
		}
		got, want := tr.LaunchCalls(), launchCallsBrute(tr)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("trial %d: op %d launched by call %d, reference %d", trial, i, got[i], want[i])
			}
		}
	}
}
