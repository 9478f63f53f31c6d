package attribution

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/internal/sqlite3shell"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/synth"
)

// gpuTrace is a hand-built run with known answers (times in ns):
//
//	engine thread 1/10:  launch k1 [0,10]  launch k2 [20,30]  cudaMemcpy [200,400]  launch k4 [600,610]
//	device 0 stream 7:   k1 gemm [40,100]                m3 HtoD [380,420]         k4 rms_norm [650,700]
//	device 0 stream 8:        k2 flash [90,150]
//	device 0:            a synchronization [420,430] (a CPU-side wait: not GPU work)
//	device 1 stream 3:   u1 [1000,1100]  u2 [1300,1400]  (unified-memory migrations: no launch)
//
// Device 0: window [40,700] = 660, busy [40,150]+[380,420]+[650,700] = 200,
// gaps [150,380) — the thread is inside cudaMemcpy for 180 of its 230 ns:
// waiting on the CPU — and [420,650) — inside a launch for 10 ns: no work.
// Device 1: window 400, busy 200, one gap of 200 with no known thread.
func gpuTrace() *ingest.Trace {
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: "hand"}}
	s := t.Strings.Intern
	api := func(name string, start, end int64, corr uint32) {
		t.APICalls = append(t.APICalls, ingest.APICall{Name: s(name), Start: start, End: end, Pid: 1, Tid: 10, Correlation: corr,
			Origin: ingest.OriginCUDARuntime})
	}
	api("cudaLaunchKernel", 0, 10, 1)
	api("cudaLaunchKernel", 20, 30, 2)
	api("cudaMemcpy", 200, 400, 3)
	api("cudaLaunchKernel", 600, 610, 4)
	op := func(kind ingest.GPUOpKind, name, short string, dev int16, stream uint32, start, end int64, corr uint32) {
		t.GPUOps = append(t.GPUOps, ingest.GPUOp{Kind: kind, Name: s(name), ShortName: s(short), Device: dev, Stream: stream,
			Start: start, End: end, Correlation: corr, Pid: 1})
	}
	op(ingest.OpKernel, "sm90_xmma_gemm_bf16bf16_bf16f32", "sm90_xmma_gemm_bf16bf16_bf16f32", 0, 7, 40, 100, 1)
	op(ingest.OpKernel, "void flash::flash_fwd_kernel<Traits>(Params)", "flash_fwd_kernel", 0, 8, 90, 150, 2)
	op(ingest.OpMemcpy, "[CUDA memcpy Host-to-Device]", "", 0, 7, 380, 420, 3)
	op(ingest.OpSync, "[CUDA Stream sync]", "", 0, 7, 420, 430, 3)
	op(ingest.OpKernel, "void vllm::rms_norm_kernel<c10::BFloat16>(c10::BFloat16*)", "rms_norm_kernel", 0, 7, 650, 700, 4)
	op(ingest.OpMemcpy, "[CUDA memcpy Unified Host-to-Device]", "", 1, 3, 1000, 1100, 0)
	op(ingest.OpMemcpy, "[CUDA memcpy Unified Host-to-Device]", "", 1, 3, 1300, 1400, 0)
	t.Devices = []ingest.Device{{ID: 0, Name: "NVIDIA H200"}, {ID: 1, Name: "NVIDIA H200"}}
	t.Validate()
	return t
}

const nsPerMs = 1e6

func TestAnalyzeGPUDevices(t *testing.T) {
	g := AnalyzeGPU(gpuTrace(), GPUOptions{})
	want := []GPUDevice{
		{Device: 0, Name: "NVIDIA H200", Ops: 4, StartNs: 40, EndNs: 700, WindowMs: 660 / nsPerMs, BusyMs: 200 / nsPerMs,
			IdleMs: 460 / nsPerMs, Utilization: 200.0 / 660, Gaps: 2, IdleNoWorkMs: 270 / nsPerMs, IdleWaitingCPUMs: 190 / nsPerMs},
		{Device: 1, Name: "NVIDIA H200", Ops: 2, StartNs: 1000, EndNs: 1400, WindowMs: 400 / nsPerMs, BusyMs: 200 / nsPerMs,
			IdleMs: 200 / nsPerMs, Utilization: 0.5, Gaps: 1, IdleUnknownMs: 200 / nsPerMs},
	}
	if !slices.Equal(g.Devices, want) {
		t.Errorf("devices:\n got  %+v\n want %+v", g.Devices, want)
	}
	wantStreams := []GPUStream{
		{Device: 0, Pid: 1, Stream: 7, Ops: 3, BusyMs: 150 / nsPerMs, Utilization: 150.0 / 660},
		{Device: 0, Pid: 1, Stream: 8, Ops: 1, BusyMs: 60 / nsPerMs, Utilization: 60.0 / 660},
		{Device: 1, Pid: 1, Stream: 3, Ops: 2, BusyMs: 200 / nsPerMs, Utilization: 0.5},
	}
	if !slices.Equal(g.Streams, wantStreams) {
		t.Errorf("streams:\n got  %+v\n want %+v", g.Streams, wantStreams)
	}
}

func TestAnalyzeGPUIdleGaps(t *testing.T) {
	g := AnalyzeGPU(gpuTrace(), GPUOptions{})
	want := []IdleGap{
		{Device: 0, StartNs: 150, DurationMs: 230 / nsPerMs, Cause: IdleWaitingCPU, WaitingCPUMs: 180 / nsPerMs, Pid: 1, Tid: 10,
			API: "cudaMemcpy", NextOp: "[CUDA memcpy Host-to-Device]"},
		{Device: 0, StartNs: 420, DurationMs: 230 / nsPerMs, Cause: IdleNoWork, WaitingCPUMs: 10 / nsPerMs, Pid: 1, Tid: 10,
			API: "cudaLaunchKernel", NextOp: "rms_norm_kernel"},
		{Device: 1, StartNs: 1100, DurationMs: 200 / nsPerMs, Cause: IdleUnknown, NextOp: "[CUDA memcpy Unified Host-to-Device]"},
	}
	if !slices.Equal(g.IdleGaps, want) {
		t.Errorf("gaps:\n got  %+v\n want %+v", g.IdleGaps, want)
	}
	// Only the longest are kept.
	if g := AnalyzeGPU(gpuTrace(), GPUOptions{TopGaps: 1}); len(g.IdleGaps) != 1 || g.IdleGaps[0].StartNs != 150 {
		t.Errorf("top 1 gap: %+v", g.IdleGaps)
	}
}

func TestAnalyzeGPUKernels(t *testing.T) {
	g := AnalyzeGPU(gpuTrace(), GPUOptions{})
	const total = 60 + 60 + 50 + 40 + 100 + 100
	wantCats := []CategoryTime{
		{"gemm", 60 / nsPerMs, 60.0 / total}, {"attention", 60 / nsPerMs, 60.0 / total}, {"communication", 0, 0},
		{"norm/activation", 50 / nsPerMs, 50.0 / total}, {"sampling", 0, 0}, {"elementwise", 0, 0}, {"memcpy", 240 / nsPerMs, 240.0 / total}, {"memset", 0, 0}, {"other", 0, 0},
	}
	if !slices.Equal(g.KernelCategories, wantCats) {
		t.Errorf("categories:\n got  %+v\n want %+v", g.KernelCategories, wantCats)
	}
	wantTop := []KernelTime{
		{Name: "flash_fwd_kernel", Category: "attention", Count: 1, TotalMs: 60 / nsPerMs, AvgUs: 0.06, Share: 60.0 / 170},
		{Name: "sm90_xmma_gemm_bf16bf16_bf16f32", Category: "gemm", Count: 1, TotalMs: 60 / nsPerMs, AvgUs: 0.06, Share: 60.0 / 170},
		{Name: "rms_norm_kernel", Category: "norm/activation", Count: 1, TotalMs: 50 / nsPerMs, AvgUs: 0.05, Share: 50.0 / 170},
	}
	if !slices.Equal(g.TopKernels, wantTop) {
		t.Errorf("top kernels:\n got  %+v\n want %+v", g.TopKernels, wantTop)
	}
	if g := AnalyzeGPU(gpuTrace(), GPUOptions{TopKernels: 2}); len(g.TopKernels) != 2 {
		t.Errorf("top 2 kernels: %+v", g.TopKernels)
	}
}

func TestAnalyzeGPUMemory(t *testing.T) {
	tr := ingest.New()
	ev := func(time int64, op ingest.MemoryOp, addr, bytes uint64, kind ingest.MemoryKind) {
		tr.MemoryEvents = append(tr.MemoryEvents, ingest.MemoryEvent{Time: time, Op: op, Address: addr, Bytes: bytes, Pid: 1, Device: 0, Kind: kind})
	}
	ev(1, ingest.MemAlloc, 0x1000, 256, ingest.MemDevice)  // A
	ev(2, ingest.MemAlloc, 0x2000, 256, ingest.MemDevice)  // B: live 512 in [0x1000, 0x2100)
	ev(2, ingest.MemAlloc, 0x9000, 4096, ingest.MemPinned) // host memory: not counted
	ev(3, ingest.MemFree, 0x1000, 256, ingest.MemDevice)   // A freed: B alone, contiguous
	ev(4, ingest.MemAlloc, 0x1000, 128, ingest.MemDevice)  // C: live 384 in [0x1000, 0x2100)
	ev(5, ingest.MemFree, 0x7000, 64, ingest.MemDevice)    // allocated before the capture
	ev(6, ingest.MemFree, 0x2000, 256, ingest.MemDevice)   // B freed: C alone
	g := AnalyzeGPU(tr, GPUOptions{})
	want := GPUMemory{Device: 0, Allocs: 3, Frees: 2, UnmatchedFrees: 1, PeakBytes: 512, PeakNs: 2, EndBytes: 128,
		FragmentationAtPeak: 1 - 512.0/0x1100, MaxFragmentation: 1 - 384.0/0x1100,
		Series: []MemoryPoint{{1, 256}, {2, 512}, {3, 256}, {4, 384}, {6, 128}}}
	if len(g.Memory) != 1 || fmt.Sprint(g.Memory[0]) != fmt.Sprint(want) {
		t.Errorf("memory:\n got  %+v\n want %+v", g.Memory, want)
	}
}

func TestDownsampleKeepsPeaks(t *testing.T) {
	var pts []MemoryPoint
	for i := range 100 {
		pts = append(pts, MemoryPoint{int64(i), int64(i % 10)})
	}
	pts[57].Bytes = 1000
	out := downsample(pts, 10)
	if len(out) > 10 {
		t.Fatalf("%d points", len(out))
	}
	if !slices.ContainsFunc(out, func(p MemoryPoint) bool { return p == MemoryPoint{57, 1000} }) {
		t.Errorf("peak lost: %v", out)
	}
}

// checkGPUInvariants: busy + idle = window, the idle causes partition the
// idle time, shares sum to 1, utilizations lie in [0, 1].
func checkGPUInvariants(t *testing.T, label string, g *GPU) {
	t.Helper()
	const eps = 1e-9
	for _, d := range g.Devices {
		if math.Abs(d.BusyMs+d.IdleMs-d.WindowMs) > eps || math.Abs(d.IdleNoWorkMs+d.IdleWaitingCPUMs+d.IdleUnknownMs-d.IdleMs) > eps {
			t.Errorf("%s device %d does not add up: %+v", label, d.Device, d)
		}
		if d.Utilization < 0 || d.Utilization > 1 || d.IdleMs < 0 {
			t.Errorf("%s device %d: %+v", label, d.Device, d)
		}
	}
	for _, s := range g.Streams {
		if s.Utilization < 0 || s.Utilization > 1 {
			t.Errorf("%s stream %+v", label, s)
		}
	}
	sum := 0.0
	for _, c := range g.KernelCategories {
		sum += c.Share
	}
	if len(g.KernelCategories) != NumKernelCategories || (sum != 0 && math.Abs(sum-1) > 1e-9) {
		t.Errorf("%s categories %+v", label, g.KernelCategories)
	}
}

// On the real exports, each device's busy time is the union of its ops'
// intervals as SQL computes it (gaps-and-islands over kernel, memcpy and
// memset rows), and the invariants hold.
func TestAnalyzeGPURealFiles(t *testing.T) {
	for _, path := range shareddata.Glob(t, "testdata/nsys/*.sqlite") {
		t.Run(filepath.Base(path), func(t *testing.T) {
			tr, err := nsys.Decoder{}.DecodeFile(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			g := AnalyzeGPU(tr, GPUOptions{})
			checkGPUInvariants(t, path, g)
			// Exports hold only the activity tables of what was captured (one
			// has kernels but no memcpy): the reference query unions those present.
			var parts []string
			for _, table := range []string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"} {
				if len(sqlite3shell.Rows(t, path, "SELECT name FROM sqlite_master WHERE name = '"+table+"'")) > 0 {
					parts = append(parts, `SELECT deviceId AS dev, start, "end" FROM `+table)
				}
			}
			if len(parts) == 0 {
				if len(g.Devices) != 0 {
					t.Fatalf("no GPU activity table, yet %d devices", len(g.Devices))
				}
				return
			}
			rows := sqlite3shell.Rows(t, path, `WITH ops AS (`+strings.Join(parts, " UNION ALL ")+`),
			o AS (SELECT dev, start, "end", max("end") OVER (PARTITION BY dev ORDER BY start, "end" ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach FROM ops)
			SELECT dev, sum(CASE WHEN reach IS NULL THEN "end" - start WHEN "end" > reach THEN "end" - max(start, reach) ELSE 0 END),
			       max("end") - min(start), count(*) FROM o GROUP BY dev ORDER BY dev`)
			if len(rows) != len(g.Devices) {
				t.Fatalf("%d devices, SQL has %d", len(g.Devices), len(rows))
			}
			for i, r := range rows {
				d := g.Devices[i]
				busy, _ := strconv.ParseInt(r[1], 10, 64)
				window, _ := strconv.ParseInt(r[2], 10, 64)
				ops, _ := strconv.Atoi(r[3])
				if r[0] != strconv.Itoa(int(d.Device)) || d.BusyMs != nsMs(busy) || d.WindowMs != nsMs(window) || d.Ops != ops {
					t.Errorf("device %s: busy %d window %d ops %d (SQL); got %+v", r[0], busy, window, ops, d)
				}
			}
		})
	}
}

// The synthetic run's kernels carry their category as ground truth: the
// name table must agree with it for every op, and the category totals must
// be the truth's.
func TestAnalyzeGPUSynthTruth(t *testing.T) {
	run, err := synth.Generate(synth.DefaultConfig(7, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	tr := run.GPUTrace()
	truth := map[string]string{}
	var totals [NumKernelCategories]int64
	for _, op := range run.Ops {
		truth[run.OpName(&op)] = op.Category.String()
	}
	cache := NewCategoryCache(tr)
	for i := range tr.GPUOps {
		o := &tr.GPUOps[i]
		got := cache.Of(o).String()
		if want := truth[tr.Str(o.Name)]; got != want {
			t.Fatalf("%q: category %s, synth truth %s", tr.Str(o.Name), got, want)
		}
		totals[cache.Of(o)] += o.End - o.Start
	}
	g := AnalyzeGPU(tr, GPUOptions{})
	checkGPUInvariants(t, "synth", g)
	for c, ct := range g.KernelCategories {
		if ct.TotalMs != nsMs(totals[c]) {
			t.Errorf("%s: %v ms, truth %v ms", ct.Name, ct.TotalMs, nsMs(totals[c]))
		}
	}
	if len(g.Devices) == 0 || g.Devices[0].IdleUnknownMs != 0 {
		t.Errorf("every synthetic op has its launch, yet: %+v", g.Devices)
	}
}
