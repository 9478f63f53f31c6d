package nsys

import (
	"fmt"
	"strings"

	"github.com/llmprof/llmprof/ingest"
)

// Table is the result of a report: columns named as nsys stats names them
// and rows of values, computed from the model. Renderers format it (text,
// CSV, JSON) and do no arithmetic.
type Table struct {
	Report  string   `json:"report"`
	Title   string   `json:"title"`
	Columns []Column `json:"columns"`
	Rows    [][]Cell `json:"rows"`
}

// ColumnKind says how a column's values are to be printed.
type ColumnKind uint8

const (
	// ColInt: an integer (ns, a count, an id).
	ColInt ColumnKind = iota
	// ColFloat1: a number nsys prints with one decimal (averages,
	// medians, standard deviations, percentages); already rounded.
	ColFloat1
	// ColFloat3: a size in MB that nsys prints with three decimals.
	ColFloat3
	// ColText: a name.
	ColText
	// ColID: an integer identifier (pid, tid, device, range id), printed
	// without thousands separators.
	ColID
)

// Column is a report column.
type Column struct {
	Name string     `json:"name"`
	Kind ColumnKind `json:"kind"`
}

// Cell is one value of a row; which field holds it depends on the column's
// kind. Null marks a missing value (a queue time that was negative).
type Cell struct {
	Int   int64
	Float float64
	Text  string
	Null  bool
}

func intCell(v int64) Cell   { return Cell{Int: v} }
func f1Cell(v float64) Cell  { return Cell{Float: round1(v)} }
func textCell(s string) Cell { return Cell{Text: s} }
func countCell(n int) Cell   { return Cell{Int: int64(n)} }
func f3Cell(v float64) Cell  { return Cell{Float: v} }
func statsCells(s Stats) []Cell {
	return []Cell{f1Cell(s.Avg), f1Cell(s.Med), intCell(s.Min), intCell(s.Max), f1Cell(s.StdDev)}
}

// ReportOptions tune a report.
type ReportOptions struct {
	// KernelName chooses the kernel name reports group by: nsys's ":base"
	// (KernelShort) and ":mangled" (KernelMangled, which the decoder must
	// have been given too) suffixes.
	KernelName KernelName
}

// Report is one of the nsys stats reports llmprof reproduces.
type Report struct {
	// Name as nsys spells it, e.g. "cuda_gpu_kern_sum".
	Name string
	// Title as nsys prints it above the table.
	Title string
	// Summary says in one line what the report shows.
	Summary string
	// Tables is what the decoder must read for this report.
	Tables Tables
	// KernelNames says whether the report accepts ":base" and ":mangled".
	KernelNames bool
	build       func(t *ingest.Trace, o ReportOptions) *Table
}

// Run computes the report over a trace.
func (r *Report) Run(t *ingest.Trace, o ReportOptions) *Table {
	tab := r.build(t, o)
	tab.Report, tab.Title = r.Name, r.Title
	return tab
}

// Decoder returns the decoder configured to read what the report needs.
func (r *Report) Decoder(o ReportOptions) Decoder {
	return Decoder{KernelName: o.KernelName, Tables: r.Tables}
}

// Reports lists the reports, in the order nsys documents them.
func Reports() []*Report { return reports }

var reports = []*Report{
	{Name: "cuda_api_sum", Title: "CUDA API Summary", Tables: API,
		Summary: "time in each CUDA runtime and driver API function", build: apiSumTable},
	{Name: "cuda_gpu_kern_sum", Title: "CUDA GPU Kernel Summary", Tables: Kernels, KernelNames: true,
		Summary: "GPU time of each kernel (by demangled name; :base short name, :mangled raw name)", build: kernSumTable},
	{Name: "cuda_gpu_mem_time_sum", Title: "CUDA GPU MemOps Summary (by Time)", Tables: MemoryOps,
		Summary: "GPU time of memcpy and memset by operation", build: memTimeSumTable},
	{Name: "cuda_gpu_mem_size_sum", Title: "CUDA GPU MemOps Summary (by Size)", Tables: MemoryOps,
		Summary: "bytes moved by memcpy and memset, by operation (MB = 10^6 B)", build: memSizeSumTable},
	{Name: "cuda_kern_exec_sum", Title: "CUDA Kernel Launch & Exec Time Summary", Tables: Kernels | API, KernelNames: true,
		Summary: "per thread, API call and kernel: launch (API), queue and kernel time", build: kernExecSumTable},
	{Name: "nvtx_sum", Title: "NVTX Range Summary", Tables: NVTX,
		Summary: "CPU time inside each NVTX range (push/pop and start/end)", build: nvtxSumTable},
	{Name: "nvtx_kern_sum", Title: "NVTX Range Kernel Summary", Tables: Kernels | API | NVTX, KernelNames: true,
		Summary: "GPU time of the kernels launched inside each NVTX range (every enclosing range)", build: nvtxKernSumTable},
	{Name: "nvtx_gpu_proj_trace", Title: "NVTX GPU Projection Trace", Tables: Kernels | MemoryOps | API | NVTX,
		Summary: "each NVTX range projected onto the GPU work its API calls launched", build: nvtxProjTable},
}

// FindReport parses a report name as nsys takes it, with an optional
// ":base" or ":mangled" suffix for kernel reports.
func FindReport(spec string) (*Report, ReportOptions, error) {
	name, arg, _ := strings.Cut(spec, ":")
	var o ReportOptions
	for _, r := range reports {
		if r.Name != name {
			continue
		}
		switch arg {
		case "":
		case "base":
			o.KernelName = KernelShort
		case "mangled":
			o.KernelName = KernelMangled
		default:
			return nil, o, fmt.Errorf("report %s: unknown option %q (want base or mangled)", name, arg)
		}
		if arg != "" && !r.KernelNames {
			return nil, o, fmt.Errorf("report %s takes no option (%q)", name, arg)
		}
		return r, o, nil
	}
	names := make([]string, len(reports))
	for i, r := range reports {
		names[i] = r.Name
	}
	return nil, o, fmt.Errorf("unknown report %q (reports: %s)", name, strings.Join(names, ", "))
}

// kernelName is the name a kernel is grouped by.
func kernelName(t *ingest.Trace, o *ingest.GPUOp, kn KernelName) string {
	if kn == KernelShort && o.ShortName != 0 {
		return t.Str(o.ShortName)
	}
	return t.Str(o.Name)
}

// sessionOffset is what was added to a record's source's times (see
// SessionOffset); trace reports print times relative to the session start.
func sessionOffset(t *ingest.Trace, src ingest.SourceID) int64 {
	if int(src) < len(t.Sources) {
		return SessionOffset(&t.Sources[src])
	}
	return 0
}
