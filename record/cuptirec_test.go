package record

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/record/cupti"
	"github.com/llmprof/llmprof/record/cupti/cuptitest"
)

// fakeCUPTIEnv makes the test binary a CUDA process as the injection
// library sees it: it writes, into $LLMPROF_CUPTI_DIR, the activity file
// the library would, from real clock pairs (CUPTI's clock being
// CLOCK_MONOTONIC plus cuptiOffset), with kernels launched by runtime calls
// and one memcpy.
const (
	fakeCUPTIEnv = "LLMPROF_FAKE_CUPTI_PROCESS"
	cuptiOffset  = 3_700_000_000
	fakeKernels  = 50
)

func TestFakeCUPTIProcess(t *testing.T) {
	if os.Getenv(fakeCUPTIEnv) == "" {
		t.Skip("the fake CUDA process of TestRecordCUPTI; runs only as its child")
	}
	os.Exit(fakeCUPTIProcess())
}

func fakeCUPTIProcess() int {
	dir, lib := os.Getenv("LLMPROF_CUPTI_DIR"), os.Getenv("CUDA_INJECTION64_PATH")
	if dir == "" || lib == "" {
		return 3
	}
	if _, err := os.Stat(lib); err != nil {
		return 4
	}
	pid := uint32(os.Getpid())
	w := cuptitest.New(pid, 24, 24)
	pair := func(label uint32) {
		p := readClockPair("fake")
		w.Clock(label, uint64(p.MonoNs+cuptiOffset), p.RealLoNs, p.RealHiNs, p.MonoNs)
	}
	pair(cuptitest.ClockStart)
	w.Str(1, "cudaLaunchKernel")
	w.Str(2, "void gemm_kernel<128>(float const*, float*)")
	w.Str(3, "cudaMemcpyAsync")
	for i := range uint32(fakeKernels) {
		now := uint64(monoNow() + cuptiOffset)
		w.API(now, now+4000, 10+i, 211, pid, pid, 0, 1, cuptitest.DomainRuntime)
		w.Kernel(cuptitest.Kernel{Start: now + 10_000, End: now + 60_000, Corr: 10 + i, Device: 0, Stream: 7, Name: 2,
			GX: 64, GY: 1, GZ: 1, BX: 256, BY: 1, BZ: 1, Kind: 10})
	}
	now := uint64(monoNow() + cuptiOffset)
	w.API(now, now+3000, 500, 41, pid, pid, 0, 3, cuptitest.DomainRuntime)
	w.Memcpy(cuptitest.Memcpy{Start: now + 5000, End: now + 9000, Bytes: 4096, Corr: 500, Stream: 7, CopyKind: 2})
	pair(cuptitest.ClockEnd)
	path := filepath.Join(dir, "cupti-"+strconv.Itoa(int(pid))+cupti.FileExt)
	if err := os.WriteFile(path, w.Bytes(), 0o644); err != nil {
		return 5
	}
	return 0
}

// TestRecordCUPTI records a fake CUDA process with --cupti (the library's
// build replaced: no CUDA here) and checks the whole path after it: the
// injection variables the command got, the activity file in the manifest,
// and the capture decoded with every kernel joined to its launching call
// and the CUPTI clock placed on the host's realtime by the clock pairs
// within a stated bound.
func TestRecordCUPTI(t *testing.T) {
	t.Setenv(fakeCUPTIEnv, "1")
	rt := newRecordTest(t, os.Args[0], "-test.run=^TestFakeCUPTIProcess$")
	rt.opts.CUPTI = CUPTIOptions{Enabled: true, build: func(dir string) (string, error) {
		lib := filepath.Join(dir, cupti.LibraryName)
		return lib, os.WriteFile(lib, []byte("not a library: the fake process only checks it exists"), 0o644)
	}}
	res := rt.run(t)
	c := checkFinal(t, res, StatusComplete)
	env := c.Manifest.Command.EnvAdded
	if env["CUDA_INJECTION64_PATH"] != absPath(filepath.Join(res.Dir, CUPTIDir, cupti.LibraryName)) ||
		env["LLMPROF_CUPTI_DIR"] != absPath(filepath.Join(res.Dir, CUPTIDir)) {
		t.Fatalf("env added %v", env)
	}
	info := c.Manifest.External.CUPTI
	if info == nil || len(info.Files) != 1 || info.Error != "" || info.Files[0].Bytes == 0 || info.Files[0].Pid != c.Manifest.Command.Pid {
		t.Fatalf("external.cupti %+v (child pid %d)\n%s", info, c.Manifest.Command.Pid, rt.log)
	}

	tr, err := ingest.Open(context.Background(), []string{res.Dir}, []ingest.Decoder{&CaptureDecoder{}}, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var src ingest.SourceID
	found := false
	for i, s := range tr.Sources {
		if s.Format == cupti.SourceFormat {
			src, found = ingest.SourceID(i), true
		}
	}
	if !found {
		t.Fatalf("no CUPTI source in %+v; warnings %v", tr.Sources, tr.Warnings.List)
	}
	s := tr.Sources[src]
	if s.GPUOps != fakeKernels+1 || s.Spans != fakeKernels+1 || len(s.Anchors) != 2 || !strings.HasPrefix(s.Clock.Name, "cupti@") {
		t.Fatalf("CUPTI source %+v", s)
	}
	calls := tr.LaunchCalls()
	joined := 0
	for i, o := range tr.GPUOps {
		if o.Source != src {
			continue
		}
		if calls[i] < 0 || tr.APICalls[calls[i]].Correlation != o.Correlation || tr.APICalls[calls[i]].Source != src {
			t.Fatalf("op %d (correlation %d) joined to call %d", i, o.Correlation, calls[i])
		}
		joined++
	}
	if joined != fakeKernels+1 {
		t.Fatalf("%d ops joined to their launches", joined)
	}

	// The expected realtime of a CUPTI instant, from the first pair.
	a := s.Anchors[0]
	want := func(local int64) int64 { return local - a.Local + a.RefLow + (a.RefHigh-a.RefLow)/2 }
	var firstLocal int64
	for _, o := range tr.GPUOps {
		if o.Source == src && o.Kind == ingest.OpKernel {
			firstLocal = o.Start
			break
		}
	}
	ar, err := align.Align(tr, align.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	var bound int64 = -1
	for _, f := range ar.Fits {
		if f.Domain == s.Clock.Name {
			if f.Status == align.StatusCannotAlign || f.BoundNs == nil {
				t.Fatalf("CUPTI domain %s: status %s, bound %v: %v", f.Domain, f.Status, f.BoundNs, f.Warnings)
			}
			bound = *f.BoundNs
			t.Logf("%s: offset %.6f s, bound %d ns, %d clock pairs", f.Domain, float64(f.OffsetNs)/1e9, bound, len(s.Anchors))
		}
	}
	if bound < 0 || bound > 1_000_000 {
		t.Fatalf("CUPTI domain bound %d ns: want a fit within 1 ms from the clock pairs", bound)
	}
	for _, o := range tr.GPUOps {
		if o.Source == src && o.Kind == ingest.OpKernel {
			if d := o.Start - want(firstLocal); d < -bound-1000 || d > bound+1000 {
				t.Fatalf("first kernel at %d after alignment, the clock pair puts it at %d (bound %d ns)", o.Start, want(firstLocal), bound)
			}
			break
		}
	}
}

func TestRecordCUPTIRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(o *Options)
		want string
	}{
		{"nsys", func(o *Options) { o.Nsys = true }, "--cupti and --nsys"},
		{"torch", func(o *Options) { o.TorchProfiler.Enabled = true }, "--cupti and --torch-profiler"},
	} {
		o := Options{Command: []string{"true"}, Dir: filepath.Join(t.TempDir(), "x"), CUPTI: CUPTIOptions{Enabled: true}}
		c.set(&o)
		if _, err := checkCUPTI(&o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v", c.name, err)
		}
	}
	t.Setenv("CUDA_INJECTION64_PATH", "/opt/other.so")
	o := Options{CUPTI: CUPTIOptions{Enabled: true}}
	if _, err := checkCUPTI(&o); err == nil || !strings.Contains(err.Error(), "CUDA_INJECTION64_PATH is already set") {
		t.Errorf("err %v", err)
	}
	t.Setenv("CUDA_INJECTION64_PATH", "")
	t.Setenv("CUDA_HOME", t.TempDir())
	t.Setenv("CUDA_PATH", "")
	if _, err := os.Stat("/usr/local/cuda/extras/CUPTI/include/cupti.h"); err == nil {
		t.Skip("a CUDA toolkit is installed here: the missing-toolkit error cannot be shown")
	}
	dir := filepath.Join(t.TempDir(), "run.llmprof")
	_, err := Record(context.Background(), Options{Command: []string{"true"}, Dir: dir, CUPTI: CUPTIOptions{Enabled: true}, newSampler: noGPU})
	if err == nil || !strings.Contains(err.Error(), "no CUDA toolkit with CUPTI") || !strings.Contains(err.Error(), "cupti.h") {
		t.Fatalf("err = %v", err)
	}
	if _, serr := os.Stat(dir); serr == nil {
		t.Error("a capture was created though --cupti could not be built")
	}
}

// A capture whose recorder died before listing its CUPTI files in the
// manifest (status still "recording") keeps the files its CUDA processes
// wrote: they are found in the capture's cupti/ folder, with a warning
// saying the recording did not finish. Before, such a capture decoded no
// kernels and said nothing.
func TestInterruptedCaptureKeepsCUPTIFiles(t *testing.T) {
	b := newCaptureBuilder(t, StatusRecording)
	b.m.External.CUPTI = &CUPTIInfo{}
	w := cuptitest.New(4242, 24, 24)
	w.Clock(cuptitest.ClockStart, 1_000_000, 5_000_000_000, 5_000_000_100, 900_000)
	w.Str(1, "cudaLaunchKernel")
	w.Str(2, "gemm_kernel")
	for i := range uint32(3) {
		at := uint64(2_000_000 + 100_000*i)
		w.API(at, at+4000, 10+i, 211, 4242, 4242, 0, 1, cuptitest.DomainRuntime)
		w.Kernel(cuptitest.Kernel{Start: at + 10_000, End: at + 60_000, Corr: 10 + i, Stream: 7, Name: 2, GX: 1, GY: 1, GZ: 1, BX: 32, BY: 1, BZ: 1, Kind: 10})
	}
	w.Clock(cuptitest.ClockPeriodic, 3_000_000, 5_002_000_000, 5_002_000_100, 2_900_000)
	if err := os.MkdirAll(filepath.Join(b.dir, CUPTIDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.dir, CUPTIDir, "cupti-4242"+cupti.FileExt), w.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	tr := decodeCapture(t, b.finish(), &CaptureDecoder{})
	kernels := 0
	for _, op := range tr.GPUOps {
		if op.Kind == ingest.OpKernel {
			kernels++
		}
	}
	if kernels != 3 || !hasWarning(tr, "capture-cupti") {
		t.Fatalf("%d kernels (want 3), warnings %v", kernels, tr.Warnings.List)
	}
}
