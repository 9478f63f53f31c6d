package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/internal/golden"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/synth"
)

const alexnetTrace = "testdata/kineto/hta-critical_path-alexnet-benchmark_result_2869224_1695835535_trace.json.gz"

// The summary reports of stats on a real PyTorch profiler trace (HTA's
// alexnet test trace, MIT); the decoded counts behind them are checked
// against an independent count in ingest/kineto.
func TestStatsKinetoGolden(t *testing.T) {
	file := shareddata.Path(t, alexnetTrace)
	for _, report := range []string{"cuda_gpu_kern_sum", "cuda_api_sum", "cuda_gpu_mem_time_sum", "cuda_gpu_mem_size_sum", "cuda_kern_exec_sum", "nvtx_sum"} {
		t.Run(report, func(t *testing.T) {
			code, out, errOut := runLLMProf(t, "stats", report, file)
			if code != 0 || errOut != "" {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			golden.Check(t, filepath.Join("testdata", "stats-kineto", report+".txt"), []byte(strings.ReplaceAll(out, file, "alexnet.json.gz")))
		})
	}
	code, _, errOut := runLLMProf(t, "stats", "nvtx_gpu_proj_trace", file)
	if code != ExitUsage || !strings.Contains(errOut, "needs an Nsight Systems export") {
		t.Errorf("a trace report on a Kineto trace: exit %d, %s", code, errOut)
	}
}

// demo --kineto writes one PyTorch profiler trace per engine that analyze
// aligns by the step annotations and joins to the steps.
func TestDemoKinetoAnalyzes(t *testing.T) {
	dir := t.TempDir()
	if code, _, errOut := runLLMProf(t, "demo", "--kineto", "--gzip", "--duration", "6s", "--nsys", "2s", dir); code != ExitOK {
		t.Fatalf("demo exited %d: %s", code, errOut)
	}
	traces, _ := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	if engines := len(synth.DemoConfig(1, 6*time.Second).Models); len(traces) != engines {
		t.Fatalf("traces %v, want one per engine", traces)
	}
	if _, err := os.Stat(filepath.Join(dir, "gpu.nsys.sqlite.gz")); err == nil {
		t.Error("--kineto also wrote an nsys export: the GPU side would count twice")
	}
	code, out, errOut := runLLMProf(t, "analyze", dir)
	if code != ExitOK {
		t.Fatalf("analyze exited %d: %s", code, errOut)
	}
	for _, want := range []string{"kineto-json", "refined", "GPU\n", "PER TOKEN"} {
		if !strings.Contains(out, want) {
			t.Errorf("analyze output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "WARNINGS") || strings.Contains(out, "cannot align") {
		t.Errorf("analyze warns:\n%s", out)
	}
	// The export draws the Kineto side too.
	pf := filepath.Join(dir, "run.json")
	if code, _, errOut := runLLMProf(t, "export", "--perfetto", pf, dir); code != ExitOK {
		t.Fatalf("export exited %d: %s", code, errOut)
	}
	b, err := os.ReadFile(pf)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []map[string]any `json:"traceEvents"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	cats := map[string]int{}
	for _, e := range doc.TraceEvents {
		if c, ok := e["cat"].(string); ok {
			cats[c]++
		}
	}
	if cats["nvtx"] == 0 || cats["cuda_runtime"] == 0 {
		t.Errorf("export categories %v: want the annotations and launches", cats)
	}
}

// The GPU section says how much GPU time the kernel taxonomy left in other
// and which kernels hold it, in every format: HTA's MI250 trace has its
// hipBLASLt GEMMs in gemm and its device named from deviceProperties; the
// trace-diff control trace leaves 1.2% in other, most of it FBGEMM's
// bounds_check_indices_kernel.
func TestAnalyzeReportsUncategorizedShare(t *testing.T) {
	mi250 := shareddata.Path(t, "testdata/kineto/hta-amd_trace-mi250_minitoy_train_ROCm6_2_kineto.json.gz")
	control := shareddata.Path(t, "testdata/kineto/hta-trace_diff-control-control.json.gz")
	for _, c := range []struct {
		file string
		want []string
	}{
		{mi250, []string{"2 AMD Radeon Graphics", "gemm 20.3%", "uncategorized (other): 0.0% of GPU time"}},
		{control, []string{"uncategorized (other): 1.2% of GPU time; most in void bounds_check_indices_kernel"}},
	} {
		code, out, errOut := runLLMProf(t, "analyze", c.file)
		if code != ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		flat := strings.Join(strings.Fields(out), " ")
		for _, w := range c.want {
			if !strings.Contains(flat, w) {
				t.Errorf("%s: text lacks %q:\n%s", filepath.Base(c.file), w, out)
			}
		}
	}
	code, out, errOut := runLLMProf(t, "analyze", "--format", "json", control)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		GPU struct {
			Uncategorized struct {
				Share float64
				Top   []struct{ Name string }
			} `json:"uncategorized"`
		} `json:"gpu"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	u := doc.GPU.Uncategorized
	if u.Share < 0.01 || u.Share > 0.05 || len(u.Top) == 0 || !strings.HasPrefix(u.Top[0].Name, "void bounds_check_indices_kernel") {
		t.Errorf("JSON gpu.uncategorized = %+v", u)
	}
	page := filepath.Join(t.TempDir(), "r.html")
	if code, _, errOut := runLLMProf(t, "analyze", "--format", "html", "-o", page, control); code != ExitOK {
		t.Fatalf("html exit %d: %s", code, errOut)
	}
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "uncategorized (other): 1.2% of GPU time; most in void bounds_check_indices_kernel") {
		t.Error("the HTML page does not report the uncategorized share")
	}
}
