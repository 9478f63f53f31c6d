package nsys

import (
	"slices"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// NameSum is one row of a by-name summary: a kernel, an API function, a
// memory operation or an NVTX range. TimePct is the group's share of the
// total over all groups of the report (not of wall time), unrounded.
type NameSum struct {
	Name    string  `json:"name"`
	TimePct float64 `json:"time_pct"`
	Stats
}

// nameSums summarizes values grouped by name and orders them by total
// descending, count, name (nsys's order). Several ids may carry the same
// name (a kernel's short name, when grouping by it, is one id; but two
// traces merged can intern one name once): groups are merged by name.
func nameSums(t *ingest.Trace, ids []ingest.StrID, vals [][]int64) []NameSum {
	byName := map[string]int{}
	var names []string
	var merged [][]int64
	for j, id := range ids {
		name := t.Str(id)
		if k, ok := byName[name]; ok {
			merged[k] = append(merged[k], vals[j]...)
			continue
		}
		byName[name] = len(names)
		names = append(names, name)
		merged = append(merged, vals[j])
	}
	out := make([]NameSum, len(names))
	var grand int64
	var st sorter
	for i, name := range names {
		out[i] = NameSum{Name: name, Stats: st.summarize(merged[i])}
		grand += out[i].Total
	}
	for i := range out {
		out[i].TimePct = percent(out[i].Total, grand)
	}
	slices.SortFunc(out, func(a, b NameSum) int { return byTotal(a.Total, b.Total, a.Count, b.Count, a.Name, b.Name) })
	return out
}

// opSums summarizes the ops that key selects, grouped by the name key
// returns.
func opSums(t *ingest.Trace, key func(o *ingest.GPUOp) (ingest.StrID, bool), val func(o *ingest.GPUOp) int64) []NameSum {
	ids, vals := byID(len(t.GPUOps), func(i int) (ingest.StrID, bool) { return key(&t.GPUOps[i]) },
		func(i int) int64 { return val(&t.GPUOps[i]) })
	return nameSums(t, ids, vals)
}

func opDuration(o *ingest.GPUOp) int64 { return o.End - o.Start }

// KernelSummary is cuda_gpu_kern_sum: the duration of every kernel grouped
// by name (demangled; kn = KernelShort groups by the short name).
func KernelSummary(t *ingest.Trace, kn KernelName) []NameSum {
	return opSums(t, func(o *ingest.GPUOp) (ingest.StrID, bool) {
		if o.Kind != ingest.OpKernel {
			return 0, false
		}
		if kn == KernelShort && o.ShortName != 0 {
			return o.ShortName, true
		}
		return o.Name, true
	}, opDuration)
}

// APISummary is cuda_api_sum: the duration of every CUDA runtime and driver
// call grouped by function name (without nsys's _vNNNN version suffix).
func APISummary(t *ingest.Trace) []NameSum {
	ids, vals := byID(len(t.APICalls), func(i int) (ingest.StrID, bool) { return t.APICalls[i].Name, true },
		func(i int) int64 { return t.APICalls[i].End - t.APICalls[i].Start })
	return nameSums(t, ids, vals)
}

func isMemOp(o *ingest.GPUOp) bool { return o.Kind == ingest.OpMemcpy || o.Kind == ingest.OpMemset }

// MemTimeSummary is cuda_gpu_mem_time_sum: the duration of every memcpy and
// memset grouped by operation ("[CUDA memcpy Host-to-Device]", "[CUDA memset]").
func MemTimeSummary(t *ingest.Trace) []NameSum {
	return opSums(t, memOpName, opDuration)
}

// MemSizeSummary is cuda_gpu_mem_size_sum: the bytes of every memcpy and
// memset grouped by operation; the Stats are in bytes and TimePct is the
// share of bytes.
func MemSizeSummary(t *ingest.Trace) []NameSum {
	return opSums(t, memOpName, func(o *ingest.GPUOp) int64 { return int64(t.ShapeOf(o).Bytes) })
}

func memOpName(o *ingest.GPUOp) (ingest.StrID, bool) { return o.Name, isMemOp(o) }

// NVTX range styles as nsys stats prints them.
const (
	StylePushPop  = "PushPop"
	StyleStartEnd = "StartEnd"
)

// nvtxRange describes an NVTX span for the reports: whether it is a range
// (not a mark), its style, and its display name "<domain>:<text>" (the
// default domain has an empty prefix, so ":text").
type nvtxRange struct {
	ok          bool
	style       string
	name        string
	crossThread bool // ended on another thread (nvtx.end_tid)
}

type nvtxKeys struct {
	typ, domain, endTid ingest.StrID
	pushPop, startEnd   ingest.StrID
	known               bool
}

func newNVTXKeys(t *ingest.Trace) nvtxKeys {
	var k nvtxKeys
	k.typ, k.known = t.Key("nvtx.type")
	k.domain, _ = t.Key("nvtx.domain")
	k.endTid, _ = t.Key("nvtx.end_tid")
	k.pushPop, _ = t.Key(NVTXPushPop)
	k.startEnd, _ = t.Key(NVTXStartEnd)
	return k
}

func (k *nvtxKeys) describe(t *ingest.Trace, s *ingest.Span) nvtxRange {
	if s.Origin != ingest.OriginNVTX || !k.known {
		return nvtxRange{}
	}
	var r nvtxRange
	domain := ""
	for _, a := range t.SpanAttrs(s) {
		switch a.Key {
		case k.typ:
			switch a.Value().Str() {
			case k.pushPop:
				r.ok, r.style = true, StylePushPop
			case k.startEnd:
				r.ok, r.style = true, StyleStartEnd
			}
		case k.domain:
			domain = t.Str(a.Value().Str())
		case k.endTid:
			r.crossThread = true
		}
	}
	r.name = domain + ":" + t.Str(s.Name)
	return r
}

// NVTXSum is one row of nvtx_sum.
type NVTXSum struct {
	NameSum
	Style string `json:"style"`
}

// NVTXSummary is nvtx_sum: the duration of every NVTX push/pop and
// start/end range grouped by style and "<domain>:<name>". Marks have no
// duration and are left out; a range never closed counts until the last
// NVTX timestamp (the decoder's rule, as nsys's).
func NVTXSummary(t *ingest.Trace) []NVTXSum {
	type key struct{ style, name string }
	g := newGroups[key]()
	keys := newNVTXKeys(t)
	for i := range t.Spans {
		s := &t.Spans[i]
		if r := keys.describe(t, s); r.ok {
			g.add(key{r.style, r.name}, s.End-s.Start)
		}
	}
	out := make([]NVTXSum, len(g.keys))
	var grand int64
	var st sorter
	for i, k := range g.keys {
		out[i] = NVTXSum{NameSum: NameSum{Name: k.name, Stats: st.summarize(g.vals[i])}, Style: k.style}
		grand += out[i].Total
	}
	for i := range out {
		out[i].TimePct = percent(out[i].Total, grand)
	}
	slices.SortFunc(out, func(a, b NVTXSum) int {
		if c := byTotal(a.Total, b.Total, a.Count, b.Count, a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Style, b.Style)
	})
	return out
}

var sumColumns = []Column{{"Time (%)", ColFloat1}, {"Total Time (ns)", ColInt}, {"Instances", ColInt},
	{"Avg (ns)", ColFloat1}, {"Med (ns)", ColFloat1}, {"Min (ns)", ColInt}, {"Max (ns)", ColInt}, {"StdDev (ns)", ColFloat1}}

func sumRows(rows []NameSum, countName, nameCol string) *Table {
	cols := append([]Column(nil), sumColumns...)
	cols[2].Name = countName
	tab := &Table{Columns: append(cols, Column{nameCol, ColText})}
	for _, r := range rows {
		cells := append([]Cell{f1Cell(r.TimePct), intCell(r.Total), countCell(r.Count)}, statsCells(r.Stats)...)
		tab.Rows = append(tab.Rows, append(cells, textCell(r.Name)))
	}
	return tab
}

func kernSumTable(t *ingest.Trace, o ReportOptions) *Table {
	return sumRows(KernelSummary(t, o.KernelName), "Instances", "Name")
}

func apiSumTable(t *ingest.Trace, _ ReportOptions) *Table {
	return sumRows(APISummary(t), "Num Calls", "Name")
}

func memTimeSumTable(t *ingest.Trace, _ ReportOptions) *Table {
	return sumRows(MemTimeSummary(t), "Count", "Operation")
}

func memSizeSumTable(t *ingest.Trace, _ ReportOptions) *Table {
	tab := &Table{Columns: []Column{{"Total (MB)", ColFloat3}, {"Count", ColInt}, {"Avg (MB)", ColFloat3}, {"Med (MB)", ColFloat3},
		{"Min (MB)", ColFloat3}, {"Max (MB)", ColFloat3}, {"StdDev (MB)", ColFloat3}, {"Operation", ColText}}}
	const mb = 1e6
	for _, r := range MemSizeSummary(t) {
		tab.Rows = append(tab.Rows, []Cell{f3Cell(float64(r.Total) / mb), countCell(r.Count), f3Cell(r.Avg / mb), f3Cell(r.Med / mb),
			f3Cell(float64(r.Min) / mb), f3Cell(float64(r.Max) / mb), f3Cell(r.StdDev / mb), textCell(r.Name)})
	}
	return tab
}

func nvtxSumTable(t *ingest.Trace, _ ReportOptions) *Table {
	tab := &Table{Columns: append(append([]Column(nil), sumColumns...), Column{"Style", ColText}, Column{"Range", ColText})}
	for _, r := range NVTXSummary(t) {
		cells := append([]Cell{f1Cell(r.TimePct), intCell(r.Total), countCell(r.Count)}, statsCells(r.Stats)...)
		tab.Rows = append(tab.Rows, append(cells, textCell(r.Style), textCell(r.Name)))
	}
	return tab
}
