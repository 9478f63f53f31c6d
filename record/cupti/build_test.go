package cupti

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

func cc(t *testing.T) string {
	t.Helper()
	p, err := Compiler(os.Getenv)
	if err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	return p
}

// TestSyntaxAgainstStub compiles the injection library's source with
// `cc -fsyntax-only` against testdata/stub/cupti.h, a stand-in declaring
// only what the source uses. It catches C syntax errors and misspelled CUPTI
// names on machines without CUDA; it checks nothing of CUPTI's ABI (the
// stub's struct layouts are not CUPTI's).
func TestSyntaxAgainstStub(t *testing.T) {
	c := cc(t)
	src := filepath.Join(t.TempDir(), SourceName)
	if err := os.WriteFile(src, Source, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(c, "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "-Itestdata/stub", src).CombinedOutput()
	if err != nil {
		t.Fatalf("%s -fsyntax-only against the stub header: %v\n%s", c, err, out)
	}
}

// The embedded source is the file in inject/.
func TestSourceEmbedded(t *testing.T) {
	b, err := os.ReadFile("inject/" + SourceName)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, Source) || !bytes.Contains(Source, []byte("int InitializeInjection(void)")) {
		t.Error("Source is not inject/llmprof_cupti.c")
	}
}

func fakeToolkit(t *testing.T, withLib bool) string {
	root := t.TempDir()
	for _, p := range []string{"extras/CUPTI/include/cupti.h", "include/cuda.h"} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if withLib {
		lib := filepath.Join(root, "extras/CUPTI/lib64/libcupti.so.12")
		if err := os.MkdirAll(filepath.Dir(lib), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(lib, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestFindToolkit(t *testing.T) {
	root := fakeToolkit(t, true)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tk, err := FindToolkit(env(map[string]string{"CUDA_HOME": root}))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "extras/CUPTI/include"), filepath.Join(root, "include")}
	if tk.Root != root || !slices.Equal(tk.Include, want) || tk.Lib != filepath.Join(root, "extras/CUPTI/lib64/libcupti.so.12") {
		t.Errorf("toolkit = %+v", tk)
	}

	noLib := fakeToolkit(t, false)
	_, err = FindToolkit(env(map[string]string{"CUDA_HOME": noLib, "CUDA_PATH": "/nonexistent/cuda"}))
	if !errors.Is(err, ErrNoToolkit) {
		t.Fatalf("err = %v, want ErrNoToolkit", err)
	}
	for _, want := range []string{noLib + ": no libcupti.so", "/nonexistent/cuda: absent", "install the CUDA toolkit", "CUDA_HOME"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	empty := t.TempDir()
	_, err = FindToolkit(env(map[string]string{"CUDA_HOME": empty}))
	if err == nil || !strings.Contains(err.Error(), empty+": no cupti.h") {
		t.Errorf("err = %v, want it to say %s has no cupti.h", err, empty)
	}
}

// realHeaders finds a CUDA toolkit's CUPTI headers ($CUDA_HOME, $CUDA_PATH,
// /usr/local/cuda) or skips saying why.
func realHeaders(t *testing.T) (string, []string) {
	t.Helper()
	var why []string
	for _, root := range roots(os.Getenv) {
		inc, err := FindHeaders(root)
		if err == nil {
			return root, inc
		}
		why = append(why, err.Error())
	}
	t.Skipf("no CUDA headers (cupti.h, cuda.h) here (%s): set CUDA_HOME to a CUDA toolkit to run this test", strings.Join(why, "; "))
	return "", nil
}

// TestBuildWithToolkit builds the library the way `record --cupti` does,
// where a full toolkit (headers and libcupti) is installed.
func TestBuildWithToolkit(t *testing.T) {
	tk, err := FindToolkit(os.Getenv)
	if err != nil {
		t.Skipf("not built: %v", err)
	}
	lib, err := Build(cc(t), tk, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	checkExports(t, lib)
}

func checkExports(t *testing.T, lib string) {
	t.Helper()
	f, err := elf.Open(lib)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.DynamicSymbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == "InitializeInjection" && s.Section != elf.SHN_UNDEF {
			return
		}
	}
	t.Errorf("%s does not export InitializeInjection", lib)
}

// TestInjectionAgainstFakeCUPTI runs the real library, built against the
// toolkit's headers, in a process that loads it as the CUDA driver does,
// over a fake libcupti (testdata/fakecupti) that hands it one record of
// each kind in CUPTI's own struct layouts; the file it writes must decode
// to exactly those records, whether the process exits, is killed by
// SIGTERM (the library's handler flushes first), or forks a child (which
// writes nothing). Needs CUDA's headers; no GPU, no real libcupti.
func TestInjectionAgainstFakeCUPTI(t *testing.T) {
	root, inc := realHeaders(t)
	c := cc(t)
	dir := t.TempDir()
	var incFlags []string
	for _, i := range inc {
		incFlags = append(incFlags, "-I"+i)
	}
	fake := filepath.Join(dir, "libcupti.so")
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run(append(append([]string{c, "-std=gnu11", "-shared", "-fPIC"}, incFlags...), "-o", fake, "testdata/fakecupti/fakecupti.c")...)
	harness := filepath.Join(dir, "harness")
	run(c, "-o", harness, "testdata/fakecupti/harness.c", "-ldl")
	lib, err := Build(c, &Toolkit{Root: root, Include: inc, Lib: fake}, filepath.Join(dir, "lib"))
	if err != nil {
		t.Fatal(err)
	}
	checkExports(t, lib)

	for _, mode := range []string{"exit", "term", "fork"} {
		t.Run(mode, func(t *testing.T) {
			out := t.TempDir()
			cmd := exec.Command(harness, lib, mode)
			cmd.Env = append(os.Environ(), "LLMPROF_CUPTI_DIR="+out, "LLMPROF_CUPTI_FLUSH_MS=60000")
			msg, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			switch {
			case mode == "term" && errors.As(err, &ee) && ee.ExitCode() == -1:
				// killed by SIGTERM, as intended
			case err != nil:
				t.Fatalf("harness %s: %v\n%s", mode, err, msg)
			}
			files, _ := filepath.Glob(filepath.Join(out, FilePattern))
			if len(files) != 1 {
				t.Fatalf("%d files written, want 1 (the forked child writes none): %v", len(files), files)
			}
			b, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			tr, res, err := decodeBytes(t, files[0], b)
			if err != nil {
				t.Fatal(err)
			}
			checkFakeRecords(t, tr, res, mode)
		})
	}
}

func checkFakeRecords(t *testing.T, tr *ingest.Trace, res Result, mode string) {
	t.Helper()
	s := tr.Strings.Intern
	pid := res.Pid
	wantOps := []ingest.GPUOp{
		{Start: 5000001000, End: 5000021000, Name: s("fake_gemm_kernel(float const*, float*)"), Stream: 14, Correlation: 41, Pid: pid,
			Shape: tr.InternShape(ingest.OpShape{Grid: [3]uint32{264, 1, 1}, Block: [3]uint16{256, 1, 1}, GraphID: 6}), Device: 2, Kind: ingest.OpKernel},
		{Start: 5000030000, End: 5000031000, Shape: tr.InternShape(ingest.OpShape{Bytes: 8192}), Name: s("[CUDA memcpy Device-to-Host]"), Stream: 14, Correlation: 42, Pid: pid,
			Device: 2, Kind: ingest.OpMemcpy, Copy: ingest.CopyDtoH},
		{Start: 5000040000, End: 5000040500, Shape: tr.InternShape(ingest.OpShape{Bytes: 1024}), Name: s("[CUDA memset]"), Stream: 15, Correlation: 43, Pid: pid, Device: 2, Kind: ingest.OpMemset},
		{Start: 5000050000, End: 5000060000, Name: s("[CUDA Context sync]"), Stream: 0xFFFFFFFF, Correlation: 44, Pid: pid, Device: -1, Kind: ingest.OpSync},
	}
	if d := diff(wantOps, tr.GPUOps); d != "" {
		t.Errorf("GPU ops (want, got):\n%s", d)
	}
	wantCalls := []ingest.APICall{{Name: s("cudaLaunchKernel_v7000"), Start: 5000000100, End: 5000000900,
		Pid: pid, Tid: 1235, Correlation: 41, Origin: ingest.OriginCUDARuntime}}
	if d := diff(wantCalls, tr.APICalls); d != "" {
		t.Errorf("API calls (want, got):\n%s", d)
	}
	if res.DriverFolded != 1 || res.Dropped != 3 || res.Truncated {
		t.Errorf("result %+v: want the driver call folded, 3 dropped, not truncated", res)
	}
	// A final flush: atexit's, or the SIGTERM handler's. Two anchors at
	// least (start and the flush), each a tight bracket, in order.
	if !res.Clean {
		t.Errorf("%s: no final flush", mode)
	}
	if calls := tr.LaunchCalls(); calls[0] != 0 {
		t.Errorf("the kernel is not joined to its launch: %v", calls)
	}
	a := tr.Sources[0].Anchors
	if len(a) < 2 {
		t.Fatalf("%d clock anchors, want the start and the final flush", len(a))
	}
	for i, x := range a {
		if x.RefHigh < x.RefLow || x.RefHigh-x.RefLow > 50_000_000 || (i > 0 && x.Local < a[i-1].Local) {
			t.Errorf("anchor %d = %+v", i, x)
		}
	}
}
