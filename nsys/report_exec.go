package nsys

import (
	"cmp"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// KernExecSum is one row of cuda_kern_exec_sum: the kernels of one name
// launched by one API function from one thread onto one device.
type KernExecSum struct {
	PID    uint32 `json:"pid"`
	TID    uint32 `json:"tid"`
	Device int16  `json:"device"`
	// Count is the number of launches; QCount those with a queue time.
	Count  int    `json:"count"`
	QCount int    `json:"qcount"`
	Total  Stats  `json:"total"`  // max(api end, kernel end) − api start
	API    Stats  `json:"api"`    // api end − api start
	Queue  Stats  `json:"queue"`  // kernel start − api end, where ≥ 0
	Kernel Stats  `json:"kernel"` // kernel end − kernel start
	Func   string `json:"api_name"`
	Name   string `json:"kernel_name"`
}

// KernelExecSummary is cuda_kern_exec_sum: for every kernel joined to its
// launching API call (same pid and correlation ID), the launch is split
// into API time, queue time (kernel start − API end; left out when
// negative, which clock skew between CPU and GPU timestamps can make it)
// and kernel time, grouped by thread, device, API function and kernel name.
// Rows are ordered by thread, device, then total time descending.
func KernelExecSummary(t *ingest.Trace, kn KernelName) []KernExecSum {
	opCall := launchJoin(t, func(o *ingest.GPUOp) bool { return o.Kind == ingest.OpKernel })
	type key struct {
		pid, tid   uint32
		dev        int16
		api, kname string
	}
	// Two passes, so that the four duration lists take one exact
	// allocation each, not a growing slice per group.
	index := map[key]int32{}
	var keys []key
	var counts, qcounts []int
	group := make([]int32, len(opCall))
	for i, c := range opCall {
		group[i] = -1
		if c < 0 {
			continue
		}
		o, a := &t.GPUOps[i], &t.APICalls[c]
		k := key{a.Pid, a.Tid, o.Device, t.Str(a.Name), kernelName(t, o, kn)}
		j, ok := index[k]
		if !ok {
			j = int32(len(keys))
			index[k] = j
			keys = append(keys, k)
			counts, qcounts = append(counts, 0), append(qcounts, 0)
		}
		group[i] = j
		counts[j]++
		if o.Start >= a.End {
			qcounts[j]++
		}
	}
	type vals struct{ total, api, queue, kernel []int64 }
	vs := make([]vals, len(keys))
	carve := func(sizes []int) [][]int64 {
		n := 0
		for _, c := range sizes {
			n += c
		}
		backing, out, off := make([]int64, n), make([][]int64, len(sizes)), 0
		for j, c := range sizes {
			out[j] = backing[off : off : off+c]
			off += c
		}
		return out
	}
	total, api, queue, kern := carve(counts), carve(counts), carve(qcounts), carve(counts)
	for j := range vs {
		vs[j] = vals{total[j], api[j], queue[j], kern[j]}
	}
	for i, c := range opCall {
		j := group[i]
		if j < 0 {
			continue
		}
		o, a := &t.GPUOps[i], &t.APICalls[c]
		v := &vs[j]
		v.total = append(v.total, max(a.End, o.End)-a.Start)
		v.api = append(v.api, a.End-a.Start)
		if q := o.Start - a.End; q >= 0 {
			v.queue = append(v.queue, q)
		}
		v.kernel = append(v.kernel, o.End-o.Start)
	}
	out := make([]KernExecSum, len(keys))
	var st sorter
	for i, k := range keys {
		v := &vs[i]
		out[i] = KernExecSum{PID: k.pid, TID: k.tid, Device: k.dev, Count: len(v.kernel), QCount: len(v.queue),
			Total: st.summarize(v.total), API: st.summarize(v.api), Queue: st.summarize(v.queue), Kernel: st.summarize(v.kernel),
			Func: k.api, Name: k.kname}
	}
	slices.SortFunc(out, func(a, b KernExecSum) int {
		return cmp.Or(cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID), cmp.Compare(a.Device, b.Device),
			cmp.Compare(b.Total.Total, a.Total.Total), strings.Compare(a.Func, b.Func), strings.Compare(a.Name, b.Name))
	})
	return out
}

func kernExecSumTable(t *ingest.Trace, o ReportOptions) *Table {
	cols := []Column{{"PID", ColID}, {"TID", ColID}, {"DevId", ColID}, {"Count", ColInt}, {"QCount", ColInt}}
	for _, p := range []string{"T", "A", "Q", "K"} {
		cols = append(cols, Column{p + "Avg (ns)", ColFloat1}, Column{p + "Med (ns)", ColFloat1}, Column{p + "Min (ns)", ColInt},
			Column{p + "Max (ns)", ColInt}, Column{p + "StdDev (ns)", ColFloat1})
	}
	tab := &Table{Columns: append(cols, Column{"API Name", ColText}, Column{"Kernel Name", ColText})}
	for _, r := range KernelExecSummary(t, o.KernelName) {
		cells := []Cell{intCell(int64(r.PID)), intCell(int64(r.TID)), intCell(int64(r.Device)), countCell(r.Count), countCell(r.QCount)}
		for _, s := range []Stats{r.Total, r.API, r.Queue, r.Kernel} {
			if s.Count == 0 {
				cells = append(cells, Cell{Null: true}, Cell{Null: true}, Cell{Null: true}, Cell{Null: true}, Cell{Null: true})
				continue
			}
			cells = append(cells, statsCells(s)...)
		}
		tab.Rows = append(tab.Rows, append(cells, textCell(r.Func), textCell(r.Name)))
	}
	return tab
}
