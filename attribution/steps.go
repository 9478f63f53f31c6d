package attribution

import (
	"slices"
	"strconv"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
)

// OpsVia says how a step's GPU operations were found.
type OpsVia uint8

const (
	// OpsNone: no GPU data for this step.
	OpsNone OpsVia = iota
	// OpsNVTX: the ops launched from CUDA API calls inside the NVTX range
	// that mirrors the step (its text carries span_id=<hex> or step=<n>), on
	// the range's thread — the NVTX→GPU projection of nsys stats. Exact
	// whatever the clock alignment's error.
	OpsNVTX
	// OpsWindow: the engine process's ops that started inside the step's
	// aligned time window. Only as good as the alignment.
	OpsWindow
)

func (v OpsVia) String() string {
	switch v {
	case OpsNVTX:
		return "nvtx"
	case OpsWindow:
		return "window"
	}
	return "none"
}

// Step is one engine iteration (an llm.step span) with its batch and GPU work.
type Step struct {
	Span   int
	ID     int64
	Engine int
	Start  int64
	End    int64
	Phase  string
	// Size is llm.batch.size (the batch's request count when absent);
	// Tokens is llm.batch.tokens (−1 when absent).
	Size, Tokens int
	// Requests are indices into Result.Requests, in batch order.
	Requests []int32
	// Ops are indices into the trace's GPUOps, by start time.
	Ops    []int32
	OpsVia OpsVia
}

// Engine is one serving process that emits steps.
type Engine struct {
	Name string
	Pid  uint32
	// Steps are indices into Result.Steps, by start time.
	Steps []int
}

var (
	keyStepID   = keys(ingest.StepIDKeys...)
	keyPhase    = keys("llm.step.phase")
	keyBatchIDs = keys("llm.batch.request_ids")
	keyBatchSz  = keys("llm.batch.size")
	keyBatchTok = keys("llm.batch.tokens")
	// keyService and keyPID name a resource's process.
	keyService = keys("service.name")
	keyPID     = keys("process.pid")
)

// findSteps collects llm.step spans, resolves their batches to requests and
// finds each step's GPU operations.
func findSteps(t *ingest.Trace, k *keyCache, res *Result, launchCalls func() []int32) ([]Step, []Engine) {
	reqs := res.Requests
	stepName, ok := t.Key(ingest.SpanStep)
	if !ok {
		return nil, nil
	}
	byID := make(map[string]int32, len(reqs))
	for i := range reqs {
		id := res.ID(&reqs[i])
		if _, dup := byID[id]; !dup {
			byID[id] = int32(i)
		}
	}
	engineOf := map[string]int{}
	// The steps counted first: appending would leave up to a fifth of a
	// long run's array (128 bytes a step) unused, held to the end.
	n := 0
	for i := range t.Spans {
		if s := &t.Spans[i]; s.Name == stepName && s.Origin == ingest.OriginOTLP {
			n++
		}
	}
	var steps []Step
	if n > 0 {
		steps = make([]Step, 0, n)
	}
	var engines []Engine
	lists := chunks[int32]{next: len(reqs)}
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Name != stepName || s.Origin != ingest.OriginOTLP {
			continue
		}
		name, pid := engineIdentity(t, k, s)
		e, ok := engineOf[name]
		if !ok {
			e = len(engines)
			engineOf[name] = e
			engines = append(engines, Engine{Name: name, Pid: pid})
		}
		st := Step{Span: i, Engine: e, Start: s.Start, End: s.End, Tokens: -1, ID: int64(len(engines[e].Steps))}
		if _, v, ok := k.first(t.SpanAttrs(s), keyStepID); ok && v.Kind() == ingest.KindInt {
			st.ID = v.Int()
		}
		st.Phase, _ = k.str(t.SpanAttrs(s), keyPhase)
		if _, v, ok := k.first(t.SpanAttrs(s), keyBatchIDs); ok {
			ids := t.StringList(v)
			in := lists.reserve(len(ids))
			for _, id := range ids {
				if r, ok := byID[id]; ok {
					in = append(in, r)
				}
			}
			st.Requests = lists.keep(in)
		}
		st.Size = len(st.Requests)
		if n, ok := k.count(t.SpanAttrs(s), keyBatchSz); ok {
			st.Size = n
		}
		if n, ok := k.count(t.SpanAttrs(s), keyBatchTok); ok {
			st.Tokens = n
		}
		engines[e].Steps = append(engines[e].Steps, len(steps))
		steps = append(steps, st)
	}
	stepOps(t, steps, engines, launchCalls)
	return steps, engines
}

// engineIdentity names the process a step span came from: its resource's
// service.name and process.pid.
func engineIdentity(t *ingest.Trace, k *keyCache, s *ingest.Span) (string, uint32) {
	if s.Resource < 0 || int(s.Resource) >= len(t.Resources) {
		return "engine", 0
	}
	attrs := t.Resources[s.Resource].Attrs
	name, _ := k.str(attrs, keyService)
	var pid uint32
	if n, ok := k.count(attrs, keyPID); ok {
		pid = uint32(n)
		name += " (pid " + strconv.Itoa(n) + ")"
	}
	if name == "" {
		name = "engine"
	}
	return name, pid
}

// stepOps attaches GPU ops to steps: by NVTX projection where a mirrored
// range exists, else by the engine's ops inside the step's window.
func stepOps(t *ingest.Trace, steps []Step, engines []Engine, launchCalls func() []int32) {
	if len(t.GPUOps) == 0 || len(steps) == 0 {
		return
	}
	// NVTX ranges that mirror a span, by the span's ID, and by step number.
	bySpanID := map[ingest.SpanID]int{}
	byStepNo := map[int64][]int{}
	// The spans and the calls are read once each, in order, dropping the
	// pages passed when the process is over its memory budget
	// (spill.Behind).
	behind := spill.DropBehind(t.Spans)
	for i := range t.Spans {
		behind.Passed(i)
		s := &t.Spans[i]
		if s.Origin != ingest.OriginNVTX {
			continue
		}
		text := t.Str(s.Name)
		switch m := ingest.ParseMirror(text); m.Kind {
		case ingest.MirrorSpanID:
			bySpanID[m.Span] = i
		case ingest.MirrorStep:
			if n, ok := m.Step(); ok {
				byStepNo[n] = append(byStepNo[n], i)
			}
		}
	}
	// CUDA API calls per thread, by start; ops by (pid, correlation).
	type thread struct{ pid, tid uint32 }
	apis := map[thread][]int{}
	behind = spill.DropBehind(t.APICalls)
	for i := range t.APICalls {
		behind.Passed(i)
		if s := &t.APICalls[i]; s.Correlation != 0 {
			k := thread{s.Pid, s.Tid}
			apis[k] = append(apis[k], i)
		}
	}
	// The ops each API call launched (a CUDA graph launch has many), by
	// call: 4 bytes a call and an op, given back when the steps have their
	// ops.
	var launched rowLists
	if len(bySpanID)+len(byStepNo) > 0 {
		calls := launchCalls()
		launched = newRowLists(len(t.APICalls), func(emit func(row, value int32)) {
			for oi, c := range calls {
				if c >= 0 {
					emit(c, int32(oi))
				}
			}
		})
		defer launched.free()
	}
	lists := chunks[int32]{next: len(t.GPUOps)}
	// The steps come by start, and so, nearly, do the calls and ops they
	// read: the pages before a step's first op and call are dropped when
	// the process is over its memory budget (spill.Behind; one read again
	// by a step that overlaps is faulted in again).
	opsBehind, callsBehind := spill.DropBehind(t.GPUOps), spill.DropBehind(t.APICalls)
	for si := range steps {
		st := &steps[si]
		span := &t.Spans[st.Span]
		nv, ok := bySpanID[span.ID]
		if !ok {
			for _, cand := range byStepNo[st.ID] {
				if p := engines[st.Engine].Pid; p == 0 || t.Spans[cand].Pid == p {
					nv, ok = cand, true
					break
				}
			}
		}
		if ok {
			r := &t.Spans[nv]
			list := apis[thread{r.Pid, r.Tid}]
			lo, _ := slices.BinarySearchFunc(list, r.Start, func(i int, at int64) int {
				if t.APICalls[i].Start < at {
					return -1
				}
				return 1
			})
			calls := list[lo:]
			if len(calls) > 0 {
				callsBehind.Passed(calls[0])
			}
			for i, ai := range calls {
				if t.APICalls[ai].Start > r.End {
					calls = calls[:i]
					break
				}
			}
			n := 0
			for _, ai := range calls {
				n += len(launched.of(int(ai)))
			}
			ops := lists.reserve(n)
			for _, ai := range calls {
				ops = append(ops, launched.of(int(ai))...)
			}
			slices.SortFunc(ops, func(a, b int32) int {
				return compareInt64(t.GPUOps[a].Start, t.GPUOps[b].Start)
			})
			if len(ops) > 0 {
				opsBehind.Passed(int(ops[0]))
			}
			st.Ops = lists.keep(ops)
			st.OpsVia = OpsNVTX
			continue
		}
		pid := engines[st.Engine].Pid
		lo, _ := slices.BinarySearchFunc(t.GPUOps, st.Start, func(o ingest.GPUOp, at int64) int {
			if o.Start < at {
				return -1
			}
			return 1
		})
		opsBehind.Passed(lo)
		hi := lo
		for hi < len(t.GPUOps) && t.GPUOps[hi].Start < st.End {
			hi++
		}
		ops := lists.reserve(hi - lo)
		for oi := lo; oi < hi; oi++ {
			if o := &t.GPUOps[oi]; pid == 0 || o.Pid == pid || o.Pid == 0 {
				ops = append(ops, int32(oi))
			}
		}
		st.Ops = lists.keep(ops)
		if len(st.Ops) > 0 {
			st.OpsVia = OpsWindow
		}
	}
}

func compareInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
