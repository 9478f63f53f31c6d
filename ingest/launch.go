package ingest

// IsCUDAAPI reports whether a span is a CUDA runtime or driver API call.
func (s *Span) IsCUDAAPI() bool {
	return s.Origin == OriginCUDARuntime || s.Origin == OriginCUDADriver
}

// LaunchCalls joins every GPU op to the CUDA API call that launched it: the
// API span of the same process with the same correlation ID (CUPTI's
// correlation; nsys joins on correlationId and the process bits of
// globalTid). calls[i] is the index in t.Spans of GPUOps[i]'s launching
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
			if t.Spans[c].Source == src {
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
// op's index in t.GPUOps and the indices in t.Spans of all those calls,
// ascending (group is reused: fn must not keep it). It is a sort-merge
// join on a radix sort (sortKeyed): linear time, and 32 bytes per call and
// op while sorting, never a map of every call.
func (t *Trace) EachLaunch(fn func(op int32, group []int32)) {
	key := func(pid, corr uint32) uint64 { return uint64(pid)<<32 | uint64(corr) }
	nAPI, nOps := 0, 0
	for i := range t.Spans {
		if s := &t.Spans[i]; s.IsCUDAAPI() && s.Correlation != 0 {
			nAPI++
		}
	}
	for i := range t.GPUOps {
		if t.GPUOps[i].Correlation != 0 {
			nOps++
		}
	}
	api, ops := make([]keyed, 0, nAPI), make([]keyed, 0, nOps)
	for i := range t.Spans {
		if s := &t.Spans[i]; s.IsCUDAAPI() && s.Correlation != 0 {
			api = append(api, keyed{key(s.Pid, s.Correlation), int32(i)})
		}
	}
	for i := range t.GPUOps {
		if o := &t.GPUOps[i]; o.Correlation != 0 {
			ops = append(ops, keyed{key(o.Pid, o.Correlation), int32(i)})
		}
	}
	sortKeyed(api)
	sortKeyed(ops)
	var group []int32
	j := 0
	for _, o := range ops {
		for j < len(api) && api[j].key < o.key {
			j++
		}
		if j == len(api) || api[j].key != o.key {
			continue
		}
		group = group[:0]
		for k := j; k < len(api) && api[k].key == o.key; k++ {
			group = append(group, api[k].idx)
		}
		fn(o.idx, group)
	}
}
