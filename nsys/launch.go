package nsys

import (
	"cmp"
	"slices"

	"github.com/llmprof/llmprof/ingest"
)

// isAPI reports whether a span is a CUDA runtime or driver call.
func isAPI(s *ingest.Span) bool {
	return s.Origin == ingest.OriginCUDARuntime || s.Origin == ingest.OriginCUDADriver
}

// launchJoin maps each GPU op to the CUDA API call that launched it: same
// process, same correlation ID (nsys's join on correlationId and the
// globalPid bits of globalTid). It is a sort-merge join, linear in memory.
// opCall[i] is the index in t.Spans of op i's call, or -1.
func launchJoin(t *ingest.Trace, want func(*ingest.GPUOp) bool) (opCall []int32) {
	type keyed struct {
		key uint64
		idx int32
	}
	var calls, ops []keyed
	for i := range t.Spans {
		s := &t.Spans[i]
		if isAPI(s) && s.Correlation != 0 {
			calls = append(calls, keyed{launchKey(s.Pid, s.Correlation), int32(i)})
		}
	}
	opCall = make([]int32, len(t.GPUOps))
	for i := range t.GPUOps {
		opCall[i] = -1
		o := &t.GPUOps[i]
		if o.Correlation != 0 && want(o) {
			ops = append(ops, keyed{launchKey(o.Pid, o.Correlation), int32(i)})
		}
	}
	byKey := func(a, b keyed) int { return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.idx, b.idx)) }
	slices.SortFunc(calls, byKey)
	slices.SortFunc(ops, byKey)
	j := 0
	for _, o := range ops {
		for j < len(calls) && calls[j].key < o.key {
			j++
		}
		if j < len(calls) && calls[j].key == o.key {
			opCall[o.idx] = calls[j].idx
		}
	}
	return opCall
}

// threadKey identifies a CPU thread.
type threadKey struct{ pid, tid uint32 }

// callsByThread lists, per thread, the spans that launched at least one op
// (per opCall), in start order.
func callsByThread(t *ingest.Trace, opCall []int32) map[threadKey][]int32 {
	launched := make([]bool, len(t.Spans))
	for _, c := range opCall {
		if c >= 0 {
			launched[c] = true
		}
	}
	out := map[threadKey][]int32{}
	for i := range t.Spans {
		if launched[i] {
			s := &t.Spans[i]
			k := threadKey{s.Pid, s.Tid}
			out[k] = append(out[k], int32(i))
		}
	}
	return out
}

// enclosed calls fn for each call (a span index from calls, which are in
// start order on one thread) that lies entirely inside [start, end].
func enclosed(t *ingest.Trace, calls []int32, start, end int64, fn func(call int32)) {
	i, _ := slices.BinarySearchFunc(calls, start, func(c int32, s int64) int { return cmp.Compare(t.Spans[c].Start, s) })
	for ; i < len(calls); i++ {
		c := &t.Spans[calls[i]]
		if c.Start > end {
			return
		}
		if c.End <= end {
			fn(calls[i])
		}
	}
}
