package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/internal/outfile"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/synth"
)

// DemoOptions are the flags of `llmprof demo`.
type DemoOptions struct {
	IO       *IOStreams
	Dir      string
	Seed     int64
	Noise    int64
	Duration time.Duration
	Style    string
	Encoding string
	Gzip     bool
	// NsysWindow is how much of the run the simulated Nsight Systems capture
	// covers (0: none); it starts a third of the way into the run.
	NsysWindow time.Duration
	CUDAGraphs bool
	// Kineto writes the GPU capture as PyTorch profiler traces (one per
	// engine) instead of an Nsight Systems export.
	Kineto bool
	// Metrics adds injected infrastructure episodes and writes the vLLM,
	// dcgm-exporter and node_exporter scrapes of the run (synth/metrics.go).
	Metrics bool
	// Slow slows kernel categories in the run ("attention=1.6"), a
	// regression with known truth for diff (synth.ParseSlowdown).
	Slow string
}

// NewCmdDemo builds `llmprof demo`.
func NewCmdDemo(f *Factory) *cobra.Command {
	opts := &DemoOptions{IO: f.IO}
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
			return runDemo(opts)
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

func runDemo(opts *DemoOptions) error {
	var style synth.Style
	switch opts.Style {
	case "llmprof":
		style = synth.StyleLLM
	case "vllm":
		style = synth.StyleVLLM
	case "vllm-server":
		style = synth.StyleVLLMServer
	default:
		return usageErrorf("--style must be llmprof, vllm or vllm-server, not %q", opts.Style)
	}
	encodings := map[string]struct {
		enc synth.Encoding
		ext string
	}{
		"jsonl": {synth.JSONLines, ".jsonl"}, "json": {synth.JSONDoc, ".json"},
		"proto": {synth.Proto, ".pb"}, "proto-framed": {synth.ProtoFramed, ".pbf"},
	}
	e, ok := encodings[opts.Encoding]
	if !ok {
		return usageErrorf("--encoding must be jsonl, json, proto or proto-framed, not %q", opts.Encoding)
	}
	if opts.Duration <= 0 {
		return usageErrorf("--duration must be positive")
	}
	cfg := synth.DemoConfig(opts.Seed, opts.Duration)
	cfg.NoiseSeed = opts.Noise
	cfg.GPUClock = synth.ClockError{OffsetNs: 1_734_000_000, DriftPPM: 35, JitterNs: 20_000}
	cfg.CUDAGraphs = opts.CUDAGraphs
	if opts.Metrics {
		ep := synth.EpisodesConfig(opts.Seed, opts.Duration)
		cfg.Models, cfg.Episodes = ep.Models, ep.Episodes
	}
	var slow map[ingest.KernelCategory]float64
	if opts.Slow != "" {
		var err error
		if slow, err = synth.ParseSlowdown(opts.Slow); err != nil {
			return usageErrorf("--slow: %v", err)
		}
		cfg.Slow(slow)
	}
	run, err := synth.Generate(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return err
	}
	name := filepath.Join(opts.Dir, "trace.otlp"+e.ext)
	if opts.Gzip {
		name += ".gz"
	}
	if err := writeDemoFile(name, func(w *bufio.Writer) error {
		if !opts.Gzip {
			return run.WriteOTLP(w, style, e.enc)
		}
		zw := gzip.NewWriter(w)
		if err := run.WriteOTLP(zw, style, e.enc); err != nil {
			return err
		}
		return zw.Close()
	}); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "wrote %s: %d requests, %d engine steps, %d GPU ops simulated\n",
		name, len(run.Requests), len(run.Steps), len(run.Ops))
	if opts.NsysWindow > 0 && opts.Kineto {
		from := cfg.Start + opts.Duration.Nanoseconds()/3
		for _, kt := range run.KinetoTraces(from, from+opts.NsysWindow.Nanoseconds(), kineto.WriteOptions{}) {
			path := filepath.Join(opts.Dir, kt.Name)
			if opts.Gzip {
				path += ".gz"
			}
			if err := writeDemoFile(path, func(w *bufio.Writer) error {
				if !opts.Gzip {
					return kt.Write(w)
				}
				zw := gzip.NewWriter(w)
				if err := kt.Write(zw); err != nil {
					return err
				}
				return zw.Close()
			}); err != nil {
				return err
			}
			fmt.Fprintf(opts.IO.ErrOut, "wrote %s: %s of the PyTorch profiler's capture of engine pid %d\n", path, opts.NsysWindow, kt.Pid)
		}
	} else if opts.NsysWindow > 0 {
		from := cfg.Start + opts.Duration.Nanoseconds()/3
		gpu := run.GPUTraceWindow(from, from+opts.NsysWindow.Nanoseconds())
		path := filepath.Join(opts.Dir, "gpu.nsys.sqlite")
		if err := nsys.WriteSQLite(path, gpu, nsys.WriteOptions{}); err != nil {
			return err
		}
		if opts.Gzip {
			if path, err = gzipFile(path); err != nil {
				return err
			}
		}
		fmt.Fprintf(opts.IO.ErrOut, "wrote %s: %s of GPU activity, %d GPU ops, %d CUDA calls and NVTX ranges\n",
			path, opts.NsysWindow, len(gpu.GPUOps), len(gpu.Spans))
	}
	if slow != nil {
		if err := writeDemoSlowdown(opts, slow); err != nil {
			return err
		}
	}
	if opts.Metrics {
		return writeDemoMetrics(opts, run)
	}
	return nil
}

// writeDemoSlowdown writes the truth of --slow: each slowed category's key
// and its factor.
func writeDemoSlowdown(opts *DemoOptions, slow map[ingest.KernelCategory]float64) error {
	truth := map[string]float64{}
	for c, f := range slow {
		truth[c.Info().Key] = f
	}
	path := filepath.Join(opts.Dir, ".slowdown.json")
	if err := writeFileAtomic(path, func(w *bufio.Writer) error {
		return json.NewEncoder(w).Encode(truth)
	}); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "wrote %s: kernels slowed by category (the truth a diff against an unslowed run should find)\n", path)
	return nil
}

// writeDemoMetrics writes the run's scrapes and the episodes' truth.
func writeDemoMetrics(opts *DemoOptions, run *synth.Run) error {
	dir := filepath.Join(opts.Dir, "metrics")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// MkdirAll accepts a link to a directory; the demo writes only inside
	// its own directory.
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory of its own (a symbolic link?); the demo writes only inside %s", dir, opts.Dir)
	}
	paths, err := run.WriteMetrics(dir, time.Second)
	if err != nil {
		return err
	}
	// Hidden, so that `llmprof analyze DIR` does not try to read it.
	truth := filepath.Join(opts.Dir, ".episodes.json")
	if err := writeDemoFile(truth, func(w *bufio.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(run.EpisodeTruths())
	}); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "wrote %s: a scrape a second of vLLM, dcgm-exporter and node_exporter; the %d injected episodes in %s\n",
		strings.Join(paths, ", "), len(run.Config.Episodes), truth)
	return nil
}

// gzipFile replaces path by path.gz.
func gzipFile(path string) (string, error) {
	in, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer in.Close()
	out := path + ".gz"
	err = writeDemoFile(out, func(w *bufio.Writer) error {
		zw := gzip.NewWriter(w)
		if _, err := io.Copy(zw, in); err != nil {
			return err
		}
		return zw.Close()
	})
	if err != nil {
		return "", err
	}
	return out, os.Remove(path)
}

// writeFileAtomic writes an output file the user named (-o, --tokens,
// --out, --perfetto): atomically when it is a file, in place when it is a
// device or pipe (internal/outfile).
func writeFileAtomic(path string, write func(*bufio.Writer) error) error {
	return outfile.Write(path, outfile.Options{}, write)
}

// writeDemoFile writes a file inside the demo's directory: a symbolic link
// planted at its name is replaced, never followed out of the directory.
func writeDemoFile(path string, write func(*bufio.Writer) error) error {
	return outfile.Write(path, outfile.Options{InDir: true}, write)
}
