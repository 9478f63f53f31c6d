package nsys

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// NVTXProj is one row of nvtx_gpu_proj_trace: an NVTX range and the GPU
// work launched from inside it. Times are ns relative to the session start.
type NVTXProj struct {
	Name       string `json:"name"`
	ProjStart  int64  `json:"projected_start"`
	ProjDur    int64  `json:"projected_duration"`
	OrigStart  int64  `json:"orig_start"`
	OrigDur    int64  `json:"orig_duration"`
	Style      string `json:"style"`
	PID        uint32 `json:"pid"`
	TID        uint32 `json:"tid"`
	NumGPUOps  int    `json:"num_gpu_ops"`
	Lvl        int    `json:"lvl"`
	NumChild   int    `json:"num_child"`
	RangeID    int    `json:"range_id"`
	ParentID   int    `json:"parent_id"` // 0: none
	RangeStack string `json:"range_stack"`
	start, end int64  // absolute, for the hierarchy
}

// projectable are the op kinds nsys stats projects: kernels, memcpy, memset.
func projectable(o *ingest.GPUOp) bool {
	return o.Kind == ingest.OpKernel || o.Kind == ingest.OpMemcpy || o.Kind == ingest.OpMemset
}

// NVTXProjection is nvtx_gpu_proj_trace as the nsys stats report defines
// it (the nsys recipe of the same name differs; see docs/nsys.md):
//
//   - ranges are NVTX push/pop and start/end ranges that end on the thread
//     that opened them;
//   - a range owns every kernel, memcpy and memset whose launching CUDA API
//     call (same pid and correlation ID) ran on the range's thread entirely
//     inside it: range.start ≤ call.start and call.end ≤ range.end — so a
//     kernel counts for every enclosing range;
//   - a range with at least one op is projected onto [min op start, max op
//     end]; NumGPUOps counts the distinct launching calls;
//   - the parent of a projected range is the tightest projected range on the
//     same thread that encloses it, minimizing (c.start−p.start)+(p.end−c.end)
//     (of two identical intervals the one earlier in model order is the
//     parent; of equally tight parents the later-opened); Lvl is the depth
//     below a root, NumChild the number of children;
//   - RangeID is the range's 1-based position among the trace's NVTX spans
//     (llmprof's numbering), RangeStack the ids from the root down;
//   - rows are ordered by projected start, then projected duration
//     descending, then original start.
func NVTXProjection(t *ingest.Trace) []NVTXProj {
	opCall := launchJoin(t, projectable)
	// Per launching call: the extent of its ops.
	type extent struct{ start, end int64 }
	ext := map[int32]extent{}
	for i, c := range opCall {
		if c < 0 {
			continue
		}
		o := &t.GPUOps[i]
		e, ok := ext[c]
		if !ok {
			e = extent{o.Start, o.End}
		}
		e.start, e.end = min(e.start, o.Start), max(e.end, o.End)
		ext[c] = e
	}
	calls := callsByThread(t, opCall)
	keys := newNVTXKeys(t)
	var rows []NVTXProj
	nvtxOrdinal := 0
	for i := range t.Spans {
		s := &t.Spans[i]
		if s.Origin != ingest.OriginNVTX {
			continue
		}
		nvtxOrdinal++
		r := keys.describe(t, s)
		if !r.ok || r.crossThread {
			continue
		}
		th := calls[threadKey{s.Pid, s.Tid}]
		if len(th) == 0 {
			continue
		}
		n := 0
		var lo, hi int64
		enclosed(t, th, s.Start, s.End, func(c int32) {
			e := ext[c]
			if n == 0 {
				lo, hi = e.start, e.end
			}
			lo, hi = min(lo, e.start), max(hi, e.end)
			n++
		})
		if n == 0 {
			continue
		}
		off := sessionOffset(t, s.Source)
		rows = append(rows, NVTXProj{Name: r.name, ProjStart: lo - off, ProjDur: hi - lo, OrigStart: s.Start - off,
			OrigDur: s.End - s.Start, Style: r.style, PID: s.Pid, TID: s.Tid, NumGPUOps: n, RangeID: nvtxOrdinal,
			start: s.Start, end: s.End})
	}
	projHierarchy(rows)
	slices.SortFunc(rows, func(a, b NVTXProj) int {
		return cmp.Or(cmp.Compare(a.ProjStart, b.ProjStart), cmp.Compare(b.ProjDur, a.ProjDur),
			cmp.Compare(a.OrigStart, b.OrigStart), cmp.Compare(a.RangeID, b.RangeID))
	})
	return rows
}

// projHierarchy sets ParentID, Lvl, NumChild and RangeStack. Per thread it
// sweeps the ranges by start (ties: longer first) keeping those still open,
// so the cost is the number of ranges times the nesting depth, not all
// pairs.
func projHierarchy(rows []NVTXProj) {
	order := make([]int, len(rows))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(cmp.Compare(rows[a].start, rows[b].start), cmp.Compare(rows[b].end, rows[a].end), cmp.Compare(a, b))
	})
	parent := make([]int, len(rows)) // index into rows, -1 for a root
	open := map[threadKey][]int{}
	for _, i := range order {
		c := &rows[i]
		k := threadKey{c.PID, c.TID}
		still := open[k][:0]
		best, bestDist := -1, int64(0)
		for _, j := range open[k] {
			p := &rows[j]
			if p.end < c.start {
				continue // closed before c opened: it encloses nothing from now on
			}
			still = append(still, j)
			if p.end >= c.end {
				// Every open range starts no later than c; of equally tight
				// ones the later-opened (the inner one) wins.
				if d := (c.start - p.start) + (p.end - c.end); best < 0 || d <= bestDist {
					best, bestDist = j, d
				}
			}
		}
		parent[i] = best
		open[k] = append(still, i)
	}
	// In sweep order a parent comes before its children.
	for _, i := range order {
		if p := parent[i]; p >= 0 {
			rows[i].ParentID = rows[p].RangeID
			rows[p].NumChild++
			rows[i].Lvl = rows[p].Lvl + 1
			rows[i].RangeStack = rows[p].RangeStack + ":" + strconv.Itoa(rows[i].RangeID)
		} else {
			rows[i].RangeStack = ":" + strconv.Itoa(rows[i].RangeID)
		}
	}
}

func nvtxProjTable(t *ingest.Trace, _ ReportOptions) *Table {
	tab := &Table{Columns: []Column{{"Name", ColText}, {"Projected Start (ns)", ColInt}, {"Projected Duration (ns)", ColInt},
		{"Orig Start (ns)", ColInt}, {"Orig Duration (ns)", ColInt}, {"Style", ColText}, {"PID", ColID}, {"TID", ColID},
		{"NumGPUOps", ColInt}, {"Lvl", ColInt}, {"NumChild", ColInt}, {"RangeId", ColID}, {"ParentId", ColID}, {"RangeStack", ColText}}}
	for _, r := range NVTXProjection(t) {
		parent := intCell(int64(r.ParentID))
		if r.ParentID == 0 {
			parent = Cell{Null: true}
		}
		tab.Rows = append(tab.Rows, []Cell{textCell(r.Name), intCell(r.ProjStart), intCell(r.ProjDur), intCell(r.OrigStart),
			intCell(r.OrigDur), textCell(r.Style), intCell(int64(r.PID)), intCell(int64(r.TID)), countCell(r.NumGPUOps),
			countCell(r.Lvl), countCell(r.NumChild), countCell(r.RangeID), parent, textCell(r.RangeStack)})
	}
	return tab
}

// NVTXKernSum is one row of nvtx_kern_sum: the kernels of one name launched
// inside the ranges of one name on one thread.
type NVTXKernSum struct {
	Range  string `json:"range"`
	Style  string `json:"style"`
	PID    uint32 `json:"pid"`
	TID    uint32 `json:"tid"`
	Ranges int    `json:"nvtx_instances"`
	Stats         // over kernel durations; Count is the kernel instances
	Kernel string `json:"kernel"`
}

// NVTXKernelSummary is nvtx_kern_sum: each kernel is attributed to every
// NVTX range (push/pop or start/end, same thread) that encloses its
// launching API call, and grouped by range name, style, thread and kernel
// name. A kernel inside two nested ranges of the same name counts twice in
// that row, once per range instance.
func NVTXKernelSummary(t *ingest.Trace, kn KernelName) []NVTXKernSum {
	opCall := launchJoin(t, func(o *ingest.GPUOp) bool { return o.Kind == ingest.OpKernel })
	kernels := map[int32][]int32{} // launching call → its kernels
	for i, c := range opCall {
		if c >= 0 {
			kernels[c] = append(kernels[c], int32(i))
		}
	}
	calls := callsByThread(t, opCall)
	keys := newNVTXKeys(t)
	type key struct {
		rng, style, kernel string
		pid, tid           uint32
	}
	g := newGroups[key]()
	instances := map[key]map[int32]bool{}
	for i := range t.Spans {
		s := &t.Spans[i]
		r := keys.describe(t, s)
		if !r.ok || r.crossThread {
			continue
		}
		th := calls[threadKey{s.Pid, s.Tid}]
		enclosed(t, th, s.Start, s.End, func(c int32) {
			for _, k := range kernels[c] {
				o := &t.GPUOps[k]
				gk := key{r.name, r.style, kernelName(t, o, kn), s.Pid, s.Tid}
				g.add(gk, o.End-o.Start)
				if instances[gk] == nil {
					instances[gk] = map[int32]bool{}
				}
				instances[gk][int32(i)] = true
			}
		})
	}
	out := make([]NVTXKernSum, len(g.keys))
	var st sorter
	for i, k := range g.keys {
		out[i] = NVTXKernSum{Range: k.rng, Style: k.style, PID: k.pid, TID: k.tid, Ranges: len(instances[k]),
			Stats: st.summarize(g.vals[i]), Kernel: k.kernel}
	}
	slices.SortFunc(out, func(a, b NVTXKernSum) int {
		return cmp.Or(strings.Compare(a.Range, b.Range), strings.Compare(a.Style, b.Style), cmp.Compare(a.PID, b.PID),
			cmp.Compare(a.TID, b.TID), cmp.Compare(b.Total, a.Total), strings.Compare(a.Kernel, b.Kernel))
	})
	return out
}

func nvtxKernSumTable(t *ingest.Trace, o ReportOptions) *Table {
	tab := &Table{Columns: []Column{{"NVTX Range", ColText}, {"Style", ColText}, {"PID", ColID}, {"TID", ColID},
		{"NVTX Inst", ColInt}, {"Kern Inst", ColInt}, {"Total Time (ns)", ColInt}, {"Avg (ns)", ColFloat1}, {"Med (ns)", ColFloat1},
		{"Min (ns)", ColInt}, {"Max (ns)", ColInt}, {"StdDev (ns)", ColFloat1}, {"Kernel Name", ColText}}}
	for _, r := range NVTXKernelSummary(t, o.KernelName) {
		cells := []Cell{textCell(r.Range), textCell(r.Style), intCell(int64(r.PID)), intCell(int64(r.TID)),
			countCell(r.Ranges), countCell(r.Count), intCell(r.Total)}
		tab.Rows = append(tab.Rows, append(append(cells, statsCells(r.Stats)...), textCell(r.Kernel)))
	}
	return tab
}
