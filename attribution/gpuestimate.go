package attribution

import (
	"cmp"
	"math"
	"slices"

	"github.com/llmprof/llmprof/ingest"
)

// requestGPU is each request's GPU time by kernel category, estimated when
// the input has GPU ops but no engine steps (stock vLLM with an nsys export
// of the same run): no span says which kernels ran for which request, so
// every kernel (and copy) is shared among the requests whose prefill or
// decode window holds its midpoint, in proportion to their share of the
// batch. A request's share is its token rate in that window: prompt tokens
// per ns of prefill, output tokens per ns of decode — what each contributes
// to a step's batch. Prefill and decode are kept apart: the first token gets
// the prefill share, the decode tokens the decode share, evenly.
type requestGPU struct {
	prefill, decode [][NumKernelCategories]int64
}

// gpuWindow is one request's prefill or decode window.
type gpuWindow struct {
	req      int32
	decode   bool
	from, to int64
	weight   float64 // tokens per ns
	key      uint32  // engine process (0: unknown, shares any op of an unclaimed process)
}

// estimateRequestGPU computes the estimate; nil when the input has engine
// steps (their ops are exact), no GPU ops, or no request windows.
// joinable says whether a source's records are on the reference clock
// (nil: all are).
func estimateRequestGPU(t *ingest.Trace, res *Result, joinable func(ingest.SourceID) bool) *requestGPU {
	if len(res.Steps) > 0 || len(t.GPUOps) == 0 || len(res.Requests) == 0 {
		return nil
	}
	k := newKeyCache(t)
	opPids := map[uint32]bool{}
	for i := range t.GPUOps {
		opPids[t.GPUOps[i].Pid] = true
	}
	claimed := map[uint32]bool{}
	var wins []gpuWindow
	for ri := range res.Requests {
		r := &res.Requests[ri]
		if r.FirstToken == 0 {
			continue
		}
		key := requestEngine(t, k, r, res.Model(r), opPids)
		if key != 0 {
			claimed[key] = true
		}
		start := r.QueueEnd
		if start == 0 || start > r.FirstToken {
			start = r.FirstToken - r.Stages[StagePrefill]
		}
		if r.FirstToken > start {
			n := float64(max(r.InputTokens, 1))
			wins = append(wins, gpuWindow{req: int32(ri), from: start, to: r.FirstToken, weight: n / float64(r.FirstToken-start), key: key})
		}
		if r.LastToken > r.FirstToken && r.OutputTokens >= 2 {
			n := float64(r.OutputTokens - 1)
			wins = append(wins, gpuWindow{req: int32(ri), decode: true, from: r.FirstToken, to: r.LastToken, weight: n / float64(r.LastToken-r.FirstToken), key: key})
		}
	}
	if len(wins) == 0 {
		return nil
	}
	// Ops by midpoint, swept against windows by start.
	ops := make([]int32, 0, len(t.GPUOps))
	for i := range t.GPUOps {
		o := &t.GPUOps[i]
		if o.Busy() && o.End > o.Start && (joinable == nil || joinable(o.Source)) {
			ops = append(ops, int32(i))
		}
	}
	mid := func(i int32) int64 { o := &t.GPUOps[i]; return o.Start + (o.End-o.Start)/2 }
	slices.SortFunc(ops, func(a, b int32) int { return cmp.Compare(mid(a), mid(b)) })
	slices.SortFunc(wins, func(a, b gpuWindow) int { return cmp.Compare(a.from, b.from) })

	out := &requestGPU{prefill: make([][NumKernelCategories]int64, len(res.Requests)), decode: make([][NumKernelCategories]int64, len(res.Requests))}
	cats := NewCategoryCache(t)
	active := map[uint32][]int{} // key → indices into wins
	next := 0
	for _, oi := range ops {
		o := &t.GPUOps[oi]
		at := mid(oi)
		for next < len(wins) && wins[next].from <= at {
			active[wins[next].key] = append(active[wins[next].key], next)
			next++
		}
		key := uint32(0)
		if claimed[o.Pid] {
			key = o.Pid
		}
		list := active[key]
		// Drop windows that have ended (lazily, for this key only).
		kept := list[:0]
		var sum float64
		for _, w := range list {
			if wins[w].to > at {
				kept = append(kept, w)
				sum += wins[w].weight
			}
		}
		active[key] = kept
		if sum <= 0 {
			continue
		}
		d := float64(o.End - o.Start)
		c := cats.Of(o)
		for _, w := range kept {
			share := int64(math.Round(d * wins[w].weight / sum))
			if wins[w].decode {
				out.decode[wins[w].req][c] += share
			} else {
				out.prefill[wins[w].req][c] += share
			}
		}
	}
	return out
}

// requestEngine finds the engine process of a request among the processes
// that ran GPU ops: the request span's process.pid when it is one of them
// (the engine traces its own requests), else a process whose name carries
// the request's model; 0 when neither (vLLM V1's API server traces the
// request, the EngineCore process runs the kernels): the request then
// shares the ops of every process no request claims.
func requestEngine(t *ingest.Trace, k *keyCache, r *Request, model string, opPids map[uint32]bool) uint32 {
	s := &t.Spans[r.Span]
	if s.Resource >= 0 && int(s.Resource) < len(t.Resources) {
		if pid, ok := k.count(t.Resources[s.Resource].Attrs, keyPID); ok && opPids[uint32(pid)] {
			return uint32(pid)
		}
	}
	if model != "" && model != "unknown" {
		for _, p := range t.Processes {
			if opPids[p.Pid] && containsWord(p.Name, model) {
				return p.Pid
			}
		}
	}
	return 0
}

// containsWord reports whether s contains w delimited by non-name
// characters (so "llama-3.1-8b" does not match "llama-3.1-8b-instruct").
func containsWord(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] != w {
			continue
		}
		before := i == 0 || !nameByte(s[i-1])
		after := i+len(w) == len(s) || !nameByte(s[i+len(w)])
		if before && after {
			return true
		}
	}
	return false
}

func nameByte(c byte) bool {
	return c == '-' || c == '_' || c == '.' || c == '/' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// addEstimatedGPU moves a token's share of the request's estimated GPU time
// into the GPU buckets: the prefill share on the first token, the decode
// share evenly over the others (token index i of n). The time comes out of
// the buckets the engine's part of the interval is in when nothing splits
// it (estimateSources), in that order, and never more than they hold: the
// buckets still sum to the interval.
func (g *requestGPU) addEstimatedGPU(ri, i, n int, buckets *[NumBuckets]int64) {
	var add [NumKernelCategories]int64
	switch {
	case i == 0:
		add = g.prefill[ri]
	case n > 1:
		for c, v := range g.decode[ri] {
			// Cumulative split, so the tokens' shares sum to the total.
			// (in float: v × i could overflow on absurd input)
			per := float64(v) / float64(n-1)
			add[c] = int64(per*float64(i)) - int64(per*float64(i-1))
		}
	}
	var sum int64
	for _, v := range add {
		sum += v
	}
	src := estimateSources[min(i, 1)]
	var avail int64
	for _, b := range src {
		avail += buckets[b]
	}
	if sum == 0 || avail <= 0 {
		return
	}
	scale := 1.0
	if sum > avail {
		scale = float64(avail) / float64(sum)
	}
	var moved int64
	for c, v := range add {
		v = int64(float64(v) * scale)
		buckets[gpuBucket(KernelCategory(c))] += v
		moved += v
	}
	for _, b := range src {
		take := min(moved, buckets[b])
		buckets[b] -= take
		moved -= take
	}
}

// estimateSources are the buckets the estimated GPU time of the first token
// ([0]) and of a decode token ([1]) is taken from: its stage, then the
// stretches no stage covers.
var estimateSources = [2][]Bucket{
	{BucketStagePrefill, BucketStageInference, BucketOther, BucketUnattributed},
	{BucketStageDecode, BucketStageInference, BucketOther, BucketUnattributed},
}
