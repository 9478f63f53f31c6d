package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/internal/driver"
)

// NewCmdDemo builds `llmprof demo`.
func NewCmdDemo(f *Factory) *cobra.Command {
	opts := &driver.DemoOptions{}
	cmd := &cobra.Command{
		Use:   "demo [flags] [dir]",
		Short: "Write a realistic synthetic serving run to analyze",
		Long: strings.TrimSpace(`
Simulates a multi-tenant LLM serving run and writes it to dir (default
./llmprof-demo) as OTLP, the way an instrumented server would export it: four
tenants on three models and two GPUs — search and chat share one
llama-3.1-8b engine on GPU 0, embed's mistral-7b engine shares that GPU and
stretches their kernels by 40% while they overlap, and batch-eval (bursty)
runs qwen2.5-7b alone on GPU 1, the negative control. Continuous batching
with prefill and decode steps, KV-cache hits (some of them recomputing their
prefix) and misses, preemptions under KV pressure, model loads. The
same seed always writes the same bytes.

Like a real deployment profiled for a few seconds with nsys profile --delay
--duration, it also writes gpu.nsys.sqlite: an Nsight Systems export of --nsys
seconds of the run, from a third of the way in (the rest of the run has no
GPU data, and the report says so) (kernels launched by CUDA runtime calls on each engine's thread,
NVTX ranges mirroring the engine steps), on a GPU-side clock that is 1.734 s
off the OTLP clock and drifts 35 ppm — for llmprof to align. With --kineto
it writes that capture as the PyTorch profiler would instead: one
*.pt.trace.json per engine (Kineto Chrome-trace JSON, as vLLM's
VLLM_TORCH_PROFILER_DIR holds), the steps as record_function annotations.`),
		Example: examples(`
  # the bundled testdata/demo: 10 s of requests, GPU data for 2 s of them
  llmprof demo --duration 10s --nsys 2s --gzip testdata/demo
  llmprof demo ./run && llmprof analyze ./run
  llmprof demo --duration 5m --seed 7 ./big
  llmprof demo --style vllm --encoding proto-framed ./vllm-run`),
		Args: argsNamed(0, 1, "[dir]: the directory to write the demo run to"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = "llmprof-demo"
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			opts.Log = f.IO.ErrOut
			return driver.WriteDemo(*opts)
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&opts.Seed, "seed", 1, "random seed of the workload (prompts, arrivals) and, unless --noise-seed, of the system")
	fl.Int64Var(&opts.Noise, "noise-seed", 0, "random seed of the system alone (kernel jitter, CPU stalls): the same --seed with another --noise-seed replays the workload, as a benchmark run twice")
	fl.DurationVar(&opts.Duration, "duration", 30*time.Second, "span of request arrivals")
	fl.StringVar(&opts.Style, "style", "llmprof", "span conventions: llmprof (llm.* spans, token events, steps), vllm (stock llm_request spans) or vllm-server (llm_request as a real server exports it: TTFT ≠ queue + prefill)")
	fl.StringVar(&opts.Encoding, "encoding", "jsonl", "OTLP file form: jsonl, json, proto or proto-framed")
	fl.BoolVar(&opts.Gzip, "gzip", false, "gzip the files written")
	fl.DurationVar(&opts.NsysWindow, "nsys", 3*time.Second, "length of the simulated nsys capture (0: no GPU data)")
	fl.BoolVar(&opts.CUDAGraphs, "cuda-graphs", false, "decode steps run as CUDA graph replays (one launch call per step, as vLLM does)")
	fl.BoolVar(&opts.Kineto, "kineto", false, "write the GPU capture as PyTorch profiler (Kineto) traces, one *.pt.trace.json per engine, instead of gpu.nsys.sqlite")
	fl.BoolVar(&opts.Metrics, "metrics", false, "inject a PFC pause storm, KV-cache pressure and GPU clock throttling, and write vLLM, DCGM and node_exporter scrapes (metrics/) with their truth (.episodes.json); see docs/signals.md")
	fl.StringVar(&opts.Slow, "slow", "", "slow kernel categories by factors, such as attention=1.6 or gemm=1.3,attention=1.6: a regression with known truth (written to .slowdown.json) for llmprof diff")
	return cmd
}
