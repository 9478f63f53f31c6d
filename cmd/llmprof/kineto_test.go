package main

import (
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
