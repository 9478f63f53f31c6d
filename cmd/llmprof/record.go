package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/record"
)

// NewCmdRecord captures a live workload.
func NewCmdRecord(f *Factory) *cobra.Command { return newCmdRecord(f, runRecord) }

func newCmdRecord(f *Factory, runF func(context.Context, record.Options) error) *cobra.Command {
	c := &record.CommandLine{}
	o := &c.Options
	cmd := &cobra.Command{
		Use:   "record [flags] [--] <command> [args...]",
		Short: "Capture a workload: OTLP spans, NVML GPU telemetry, clock anchors (and nsys)",
		Long: strings.TrimSpace(`
record runs a command and captures, next to it, everything analyze needs:

  - an OTLP receiver (gRPC and HTTP, on free loopback ports) that stores every
    export request byte for byte; the command's OpenTelemetry SDK is pointed at
    it through OTEL_EXPORTER_OTLP_* variables, and these placeholders in its
    arguments are replaced:
        {otlp_grpc}      host:port of the gRPC receiver
        {otlp_http}      host:port of the HTTP receiver
        {otlp_grpc_url}  http://host:port (gRPC)
        {otlp_http_url}  http://host:port/v1/traces
  - NVML telemetry of every GPU (utilization, memory, clocks, power, energy,
    PCIe and NVLink counters, per-process utilization, MIG instances, GPM
    metrics on Hopper and newer); without a GPU or driver the capture says so
  - clock pairs (realtime against monotonic, bracketed) at start, end and every
    10 s, so analyze can put every table on one clock
  - with --nsys, an Nsight Systems profile of the command, exported to SQLite
  - with --torch-profiler, a vLLM or SGLang server's own PyTorch profiler
    (Kineto traces of every rank), started at the first request and stopped
    before the server is (docs/record.md)
  - with --cupti, a kernel, memcpy, memset, synchronization and CUDA API
    timeline of any CUDA program, from llmprof's own CUPTI injection library
    (built with the C compiler against the CUDA toolkit in CUDA_HOME or
    /usr/local/cuda; docs/record.md)

The capture is a directory (default run-<time>.llmprof) holding manifest.json
and one zstd Arrow IPC stream per table; analyze reads it directly.

The first SIGINT/SIGTERM is forwarded to the command's process group; a second
one, or --stop-timeout later, kills it. record exits with the command's exit
status (128+n if signal n killed it).`),
		Example: examples(`
  # vLLM traces only with --otlp-traces-endpoint
  llmprof record -o run.llmprof -- vllm serve meta-llama/Llama-3.1-8B-Instruct \
      --otlp-traces-endpoint {otlp_grpc_url}

  # any OpenTelemetry SDK reads OTEL_EXPORTER_OTLP_ENDPOINT, which record sets
  llmprof record -o bench.llmprof --duration 5m -- python serve.py

  # HTTP/protobuf exporters, and an Nsight Systems profile alongside
  llmprof record --otlp-protocol http/protobuf --nsys -- ./server --port 8000

  # vLLM's PyTorch profiler, from the first request until Ctrl-C
  llmprof record --torch-profiler -- vllm serve Qwen/Qwen2.5-7B-Instruct \
      --otlp-traces-endpoint {otlp_grpc_url}

  # any CUDA program's kernels, without nsys or a server's profiler
  llmprof record --cupti -- python train_step.py

  # then
  llmprof analyze run.llmprof`),
		Args: argsNamed(1, -1, "<command>: the server to run and record"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c.Command = args
			if c.Dir == "" {
				c.Dir = "run-" + time.Now().UTC().Format("20060102T150405Z") + ".llmprof"
			}
			ro, err := c.Resolve(cmd.Flags().Changed)
			if err != nil {
				return &UsageError{err}
			}
			ro.Stdin, ro.Stdout, ro.Stderr, ro.Log = f.IO.In, f.IO.Raw().Out, f.IO.Raw().ErrOut, f.IO.ErrOut
			ro.Version = versionString()
			return runF(cmd.Context(), ro)
		},
	}
	// Flags stop at the command, so its own flags need no `--`.
	cmd.Flags().SetInterspersed(false)
	fl := cmd.Flags()
	fl.StringVarP(&o.Dir, "output", "o", "", "capture `directory` to create (default run-<UTC time>.llmprof)")
	fl.StringVar(&c.Listen, "listen", record.DefaultListen, "`host` the receivers bind to (host:port sets the gRPC port too); a non-loopback host exposes them to the network")
	fl.StringVar(&o.GRPCAddr, "otlp-grpc", "", "gRPC receiver `address` (host:port or :port; default a free port)")
	fl.StringVar(&o.HTTPAddr, "otlp-http", "", "HTTP receiver `address` (host:port or :port; default a free port)")
	fl.StringVar(&o.Protocol, "otlp-protocol", record.ProtocolGRPC, "protocol the command's SDK is told to export with: grpc, http/protobuf or http/json")
	fl.BoolVar(&o.KeepOTELEnv, "keep-otel-env", false, "keep OTEL_EXPORTER_OTLP_* variables already set instead of pointing them at the receiver")
	fl.DurationVar(&o.Duration, "duration", 0, "stop the command (SIGINT) after this long; 0 waits for it to exit")
	fl.DurationVar(&o.StopTimeout, "stop-timeout", record.DefaultStopTimeout, "how long a stopped command may take to exit before it is killed")
	fl.DurationVar(&o.OTLPQuiet, "otlp-quiet", record.DefaultOTLPQuiet, "after the command exits, keep receiving until no export arrived for this long")
	fl.DurationVar(&o.OTLPDrainMax, "otlp-drain-max", record.DefaultOTLPDrainMax, "longest wait for late exports after the command exits")
	fl.DurationVar(&o.Tail, "tail", record.DefaultTail, "keep sampling the GPUs this long after the command exits")
	fl.DurationVar(&o.ClockInterval, "clock-interval", record.DefaultClockInterval, "period of clock-pair snapshots")
	fl.DurationVar(&o.FlushInterval, "flush-interval", time.Second, "longest time a row waits in an open batch: what a killed recorder can lose")
	fl.BoolVar(&o.NVML.Disable, "no-nvml", false, "do not sample GPU telemetry")
	fl.BoolVar(&o.NVML.Require, "require-gpu", false, "fail if NVML telemetry is unavailable")
	fl.StringVar(&o.NVML.LibraryPath, "nvml-lib", "", "`path` of libnvidia-ml.so to load (default libnvidia-ml.so.1)")
	fl.DurationVar(&o.NVML.DeviceInterval, "nvml-interval", record.DefaultDeviceInterval, "device telemetry period (utilization, memory, clocks, power, PCIe, NVLink)")
	fl.DurationVar(&o.NVML.DrainInterval, "nvml-drain-interval", record.DefaultDrainInterval, "period of NVML ring-buffer drains and per-process polls")
	fl.DurationVar(&o.NVML.GPMInterval, "gpm-interval", record.DefaultGPMInterval, "GPM metrics period on Hopper and newer (at least 100ms)")
	fl.BoolVar(&o.Nsys, "nsys", false, "run the command under nsys profile and export its SQLite into the capture")
	fl.StringArrayVar(&o.NsysArgs, "nsys-arg", nil, "extra `flag` for nsys profile (repeatable), e.g. --nsys-arg=--gpu-metrics-devices=0")
	fl.StringArrayVar(&c.Scrape, "scrape", nil, "scrape a Prometheus endpoint into the capture while the command runs (repeatable): `URL[@interval]`, e.g. http://localhost:8000/metrics@1s (vLLM, dcgm-exporter :9400, node_exporter :9100); see docs/signals.md")
	fl.BoolVar(&o.CUPTI.Enabled, "cupti", false, "trace kernels, memcpy/memset, synchronization and CUDA API calls of every CUDA process of the command with llmprof's CUPTI injection library (needs the CUDA toolkit's CUPTI headers and a C compiler)")
	fl.DurationVar(&o.CUPTI.FlushInterval, "cupti-flush-interval", 2*time.Second, "how often the --cupti library writes CUPTI's completed buffers and a clock pair to its file")
	fl.StringVar(&c.TorchProfiler, "torch-profiler", "", "drive a vLLM or SGLang server's PyTorch profiler; its traces go into the capture's torch/ folder, or `DIR` with --torch-profiler=DIR")
	fl.Lookup("torch-profiler").NoOptDefVal = record.TorchProfilerDefault
	fl.StringVar(&o.TorchProfiler.Server, "server", "", "the server --torch-profiler drives: vllm or sglang (default: from the command line)")
	fl.StringVar(&o.TorchProfiler.URL, "profile-url", "", "the server's base `URL` (default from its --host/--port: vLLM 8000, SGLang 30000)")
	fl.DurationVar(&o.TorchProfiler.At, "profile-at", 0, "start the profile this long after the server is ready (default: at the first request)")
	fl.DurationVar(&o.TorchProfiler.For, "profile-duration", 0, "stop the profile this long after it started (default: before the server is stopped)")
	fl.DurationVar(&o.TorchProfiler.FlushTimeout, "profile-flush-timeout", 10*time.Minute, "longest wait for the server to finish writing its traces")
	fl.BoolVar(&o.TorchProfiler.RecordShapes, "profile-record-shapes", false, "torch.profiler record_shapes")
	fl.BoolVar(&o.TorchProfiler.WithStack, "profile-with-stack", false, "torch.profiler with_stack")
	fl.BoolVar(&o.TorchProfiler.WithMemory, "profile-memory", false, "torch.profiler profile_memory (SGLang: the MEM activity)")
	return cmd
}

func runRecord(ctx context.Context, ro record.Options) error {
	// record handles SIGINT/SIGTERM itself (forward the first, kill on the
	// second); main's signal context must not cut the recording short.
	res, err := record.Record(context.WithoutCancel(ctx), ro)
	var start *record.StartError
	if errors.As(err, &start) {
		return &ExitCodeError{Code: start.Code, Msg: "record: " + start.Error()}
	}
	if err != nil {
		// record itself failed (the capture could not be written, …):
		// its own status, not one the command could have exited with.
		return &ExitCodeError{Code: ExitRecordFailed, Msg: "record: " + err.Error()}
	}
	if res.ExitCode != 0 {
		return &ExitCodeError{Code: res.ExitCode}
	}
	return nil
}
