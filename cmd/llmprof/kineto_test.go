package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/internal/golden"
	"github.com/llmprof/llmprof/internal/shareddata"
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
