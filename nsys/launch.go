package nsys

import (
	"cmp"
	"slices"

	"github.com/llmprof/llmprof/ingest"
)

// launchJoin maps each GPU op that want accepts to the CUDA API call that
// launched it (ingest.LaunchCalls); opCall[i] is an index in t.APICalls or -1.
func launchJoin(t *ingest.Trace, want func(*ingest.GPUOp) bool) (opCall []int32) {
	opCall = t.LaunchCalls()
	for i := range opCall {
		if opCall[i] >= 0 && !want(&t.GPUOps[i]) {
			opCall[i] = -1
		}
	}
	return opCall
}

// threadKey identifies a CPU thread.
type threadKey struct{ pid, tid uint32 }

// callsByThread lists, per thread, the API calls that launched at least one op
// (per opCall), in start order.
func callsByThread(t *ingest.Trace, opCall []int32) map[threadKey][]int32 {
	launched := make([]bool, len(t.APICalls))
	for _, c := range opCall {
		if c >= 0 {
			launched[c] = true
		}
	}
	out := map[threadKey][]int32{}
	for i := range t.APICalls {
		if launched[i] {
			s := &t.APICalls[i]
			k := threadKey{s.Pid, s.Tid}
			out[k] = append(out[k], int32(i))
		}
	}
	return out
}

// enclosed calls fn for each call (an index in t.APICalls from calls, which are in
// start order on one thread) that lies entirely inside [start, end].
func enclosed(t *ingest.Trace, calls []int32, start, end int64, fn func(call int32)) {
	i, _ := slices.BinarySearchFunc(calls, start, func(c int32, s int64) int { return cmp.Compare(t.APICalls[c].Start, s) })
	for ; i < len(calls); i++ {
		c := &t.APICalls[calls[i]]
		if c.Start > end {
			return
		}
		if c.End <= end {
			fn(calls[i])
		}
	}
}
