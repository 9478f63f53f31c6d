package ingest

import (
	"cmp"
	"slices"

	"github.com/llmprof/llmprof/internal/radix"
	"github.com/llmprof/llmprof/internal/spill"
)

// LaunchCalls joins every GPU op to the CUDA API call that launched it: the
// API call of the same process with the same correlation ID (CUPTI's
// correlation; nsys joins on correlationId and the process bits of
// globalTid). calls[i] is the index in t.APICalls of GPUOps[i]'s launching
// call, or -1 when the op has no correlation ID or no call matches (e.g.
// unified-memory migrations, or a call outside the capture); when inputs
// share a (pid, correlation), the call of the op's own source is taken.
// Several ops can share one call: the kernels of a CUDA graph launch.
func (t *Trace) LaunchCalls() (calls []int32) {
	calls = make([]int32, len(t.GPUOps))
	for i := range calls {
		calls[i] = -1
	}
	t.EachLaunch(func(op int32, group []int32) {
		// Two inputs can hold the same (pid, correlation): ranks on two
		// hosts (or containers) whose processes have equal pids. The call
		// from the op's own input wins.
		calls[op] = group[0]
		src := t.GPUOps[op].Source
		for _, c := range group {
			if t.APICalls[c].Source == src {
				calls[op] = c
				break
			}
		}
	})
	return calls
}

// EachLaunch is the launch ↔ GPU op join, shared by LaunchCalls and
// align.CheckCausality: for every GPU op with a correlation ID that some
// CUDA API call (with a correlation ID) of the same pid shares, fn gets the
// op's index in t.GPUOps and the indices in t.APICalls of all those calls,
// ascending, ops in index order (group is reused: fn must neither keep nor
// change it). Only the calls are sorted (a radix sort, radix.Sort); each op
// then finds its calls through launchIndex, a direct table over each
// process's correlation IDs: linear time, 16 bytes a call while sorting and
// about 8 in the table, nothing per op, and never a map of every call.
func (t *Trace) EachLaunch(fn func(op int32, group []int32)) {
	// Each table is read in order, its pages passed dropped when the
	// process is over its memory budget (spill.Behind).
	nAPI := 0
	behind := spill.DropBehind(t.APICalls)
	for i := range t.APICalls {
		behind.Passed(i)
		if t.APICalls[i].Correlation != 0 {
			nAPI++
		}
	}
	if nAPI == 0 {
		return
	}
	api := make([]radix.Keyed, 0, nAPI)
	behind = spill.DropBehind(t.APICalls)
	for i := range t.APICalls {
		behind.Passed(i)
		if c := &t.APICalls[i]; c.Correlation != 0 {
			api = append(api, radix.Keyed{Key: launchKey(c.Pid, c.Correlation), Idx: int32(i)})
		}
	}
	radix.Sort(api)
	ix := newLaunchIndex(api)
	var group []int32
	var last uint64 // the key group holds the calls of; 0 is no key
	behind = spill.DropBehind(t.GPUOps)
	for i := range t.GPUOps {
		behind.Passed(i)
		o := &t.GPUOps[i]
		if o.Correlation == 0 {
			continue
		}
		if k := launchKey(o.Pid, o.Correlation); k != last {
			last = k
			group = group[:0]
			for _, c := range ix.calls(k) {
				group = append(group, c.Idx)
			}
		}
		if len(group) > 0 {
			fn(int32(i), group)
		}
	}
}

// launchKey is the join's key: the process in the high half, the
// correlation ID in the low one (never 0 for a correlation ID that is not).
func launchKey(pid, corr uint32) uint64 { return uint64(pid)<<32 | uint64(corr) }

// launchIndex finds the calls of a (pid, correlation) key in the calls
// sorted by key. CUPTI numbers a process's API calls one after another, so
// each process's correlation IDs fill most of their range: a table indexed
// by the ID (the position of its first call, or -1) answers in one read.
// A process whose IDs are sparse (more than twice as many holes as calls)
// is searched by bisection instead, so the table is at most about twice the
// calls.
type launchIndex struct {
	api   []radix.Keyed
	procs []launchProc
	first []int32
	last  int // the process found last: ops come in runs of one process
}

// launchProc is one process's calls, api[lo:hi]; a dense process's
// correlation IDs min.. index first[off:].
type launchProc struct {
	pid      uint32
	lo, hi   int
	dense    bool
	min, max uint32
	off      int
}

func newLaunchIndex(api []radix.Keyed) *launchIndex {
	ix := &launchIndex{api: api}
	for lo := 0; lo < len(api); {
		pid := uint32(api[lo].Key >> 32)
		hi := lo + 1
		for hi < len(api) && uint32(api[hi].Key>>32) == pid {
			hi++
		}
		p := launchProc{pid: pid, lo: lo, hi: hi, min: uint32(api[lo].Key), max: uint32(api[hi-1].Key)}
		if width := uint64(p.max-p.min) + 1; width <= 2*uint64(hi-lo)+64 {
			p.dense, p.off = true, len(ix.first)
			for range width {
				ix.first = append(ix.first, -1)
			}
			for j := hi - 1; j >= lo; j-- { // backwards: the first call of a key wins
				ix.first[p.off+int(uint32(api[j].Key)-p.min)] = int32(j)
			}
		}
		ix.procs = append(ix.procs, p)
		lo = hi
	}
	return ix
}

// calls returns the calls with key k, in index order (empty if none).
func (ix *launchIndex) calls(k uint64) []radix.Keyed {
	pid, corr := uint32(k>>32), uint32(k)
	if ix.last >= len(ix.procs) || ix.procs[ix.last].pid != pid {
		i, ok := slices.BinarySearchFunc(ix.procs, pid, func(p launchProc, pid uint32) int { return cmp.Compare(p.pid, pid) })
		if !ok {
			return nil
		}
		ix.last = i
	}
	p := &ix.procs[ix.last]
	var at int
	if p.dense {
		if corr < p.min || corr > p.max {
			return nil
		}
		f := ix.first[p.off+int(corr-p.min)]
		if f < 0 {
			return nil
		}
		at = int(f)
	} else {
		i, ok := slices.BinarySearchFunc(ix.api[p.lo:p.hi], k, func(c radix.Keyed, k uint64) int { return cmp.Compare(c.Key, k) })
		if !ok {
			return nil
		}
		at = p.lo + i
	}
	end := at + 1
	for end < p.hi && ix.api[end].Key == k {
		end++
	}
	return ix.api[at:end]
}
