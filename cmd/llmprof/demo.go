package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/synth"
)

// DemoOptions are the flags of `llmprof demo`.
type DemoOptions struct {
	IO       *IOStreams
	Dir      string
	Seed     int64
	Duration time.Duration
	Style    string
	Encoding string
	Gzip     bool
	// NsysWindow is how much of the run the simulated Nsight Systems capture
	// covers (0: none); it starts a third of the way into the run.
	NsysWindow time.Duration
	CUDAGraphs bool
}

// NewCmdDemo builds `llmprof demo`.
func NewCmdDemo(f *Factory) *cobra.Command {
	opts := &DemoOptions{IO: f.IO}
	cmd := &cobra.Command{
		Use:   "demo [flags] [dir]",
		Short: "Write a realistic synthetic serving run to analyze",
		Long: strings.TrimSpace(`
Simulates a multi-tenant LLM serving run — three tenants (one bursty) on two
models, continuous batching with prefill and decode steps, KV-cache hits and
misses, preemptions under KV pressure — and writes it to dir (default
./llmprof-demo) as OTLP, the way an instrumented server would export it. The
same seed always writes the same bytes.

Like a real deployment profiled for a few seconds with nsys profile --delay
--duration, it also writes gpu.nsys.sqlite: an Nsight Systems export of part
of the run (kernels launched by CUDA runtime calls on each engine's thread,
NVTX ranges mirroring the engine steps), on a GPU-side clock that is 1.734 s
off the OTLP clock and drifts 35 ppm — for llmprof to align.`),
		Example: strings.TrimSpace(`
  llmprof demo ./run && llmprof analyze ./run
  llmprof demo --duration 5m --seed 7 ./big
  llmprof demo --style vllm --encoding proto-framed ./vllm-run`),
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Dir = "llmprof-demo"
			if len(args) == 1 {
				opts.Dir = args[0]
			}
			return runDemo(opts)
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&opts.Seed, "seed", 1, "random seed")
	fl.DurationVar(&opts.Duration, "duration", 30*time.Second, "span of request arrivals")
	fl.StringVar(&opts.Style, "style", "llmprof", "span conventions: llmprof (llm.* spans, token events, steps) or vllm (stock llm_request spans)")
	fl.StringVar(&opts.Encoding, "encoding", "jsonl", "OTLP file form: jsonl, json, proto or proto-framed")
	fl.BoolVar(&opts.Gzip, "gzip", false, "gzip the files written")
	fl.DurationVar(&opts.NsysWindow, "nsys", 3*time.Second, "length of the simulated nsys capture (0: no GPU data)")
	fl.BoolVar(&opts.CUDAGraphs, "cuda-graphs", false, "decode steps run as CUDA graph replays (one launch call per step, as vLLM does)")
	return cmd
}

func runDemo(opts *DemoOptions) error {
	var style synth.Style
	switch opts.Style {
	case "llmprof":
		style = synth.StyleLLM
	case "vllm":
		style = synth.StyleVLLM
	default:
		return usageErrorf("--style must be llmprof or vllm, not %q", opts.Style)
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
	cfg.GPUClock = synth.ClockError{OffsetNs: 1_734_000_000, DriftPPM: 35, JitterNs: 20_000}
	cfg.CUDAGraphs = opts.CUDAGraphs
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
	if err := writeFileAtomic(name, func(w *bufio.Writer) error {
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
	if opts.NsysWindow > 0 {
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
	err = writeFileAtomic(out, func(w *bufio.Writer) error {
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

// writeFileAtomic writes a file through a temporary name in the same folder.
func writeFileAtomic(path string, write func(*bufio.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".llmprof-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if err := write(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
