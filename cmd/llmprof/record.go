package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmprof/llmprof/record"
)

// RecordOptions are the parsed flags of `llmprof record`.
type RecordOptions struct {
	IO *IOStreams

	Command  []string
	Output   string
	Listen   string
	GRPCAddr string
	HTTPAddr string
	Protocol string
	KeepEnv  bool

	Duration      time.Duration
	StopTimeout   time.Duration
	OTLPQuiet     time.Duration
	OTLPDrainMax  time.Duration
	Tail          time.Duration
	ClockInterval time.Duration
	FlushInterval time.Duration

	NoNVML        bool
	RequireGPU    bool
	NVMLLib       string
	NVMLInterval  time.Duration
	DrainInterval time.Duration
	GPMInterval   time.Duration
	Nsys          bool
	NsysArgs      []string
	// Scrape are --scrape URL[@interval] targets.
	Scrape []string

	// TorchProfiler is --torch-profiler[=DIR]: "" off, torchProfilerDefault
	// for the capture's torch/ folder, else the folder.
	TorchProfiler       string
	Server              string
	ProfileURL          string
	ProfileAt           time.Duration
	ProfileDuration     time.Duration
	ProfileFlushTimeout time.Duration
	ProfileShapes       bool
	ProfileStack        bool
	ProfileMemory       bool

	// CUPTI is --cupti: llmprof's own CUPTI injection library.
	CUPTI              bool
	CUPTIFlushInterval time.Duration
}

// torchProfilerDefault is --torch-profiler given without a folder.
const torchProfilerDefault = "<capture>/torch"

// NewCmdRecord captures a live workload.
func NewCmdRecord(f *Factory) *cobra.Command { return newCmdRecord(f, runRecord) }

func newCmdRecord(f *Factory, runF func(context.Context, *RecordOptions) error) *cobra.Command {
	opts := &RecordOptions{IO: f.IO}
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
			opts.Command = args
			if opts.Output == "" {
				opts.Output = "run-" + time.Now().UTC().Format("20060102T150405Z") + ".llmprof"
			}
			switch opts.Protocol {
			case record.ProtocolGRPC, record.ProtocolHTTPProtobuf, record.ProtocolHTTPJSON:
			default:
				return usageErrorf("--otlp-protocol %q: want grpc, http/protobuf or http/json", opts.Protocol)
			}
			if opts.TorchProfiler == "" {
				for _, name := range []string{"server", "profile-url", "profile-at", "profile-duration", "profile-flush-timeout", "profile-record-shapes", "profile-with-stack", "profile-memory"} {
					if cmd.Flags().Changed(name) {
						return usageErrorf("--%s needs --torch-profiler", name)
					}
				}
			}
			switch opts.Server {
			case "", record.ServerVLLM, record.ServerSGLang:
			default:
				return usageErrorf("--server %q: want vllm or sglang", opts.Server)
			}
			if opts.TorchProfiler != "" && opts.Server == "" && record.DetectServer(args) == "" {
				return usageErrorf("--torch-profiler: %q is neither vLLM nor SGLang as far as its command line says; name the server with --server vllm|sglang", args[0])
			}
			if opts.CUPTI {
				if err := record.CUPTIConflict(opts.Nsys, opts.TorchProfiler != ""); err != nil {
					return &UsageError{err}
				}
			}
			if !opts.CUPTI && cmd.Flags().Changed("cupti-flush-interval") {
				return usageErrorf("--cupti-flush-interval needs --cupti")
			}
			if opts.NoNVML && opts.RequireGPU {
				return usageErrorf("--no-nvml and --require-gpu contradict each other")
			}
			host, port, err := record.ParseListen(opts.Listen)
			if err != nil {
				return usageErrorf("--listen: %w", err)
			}
			if port != "" {
				// --listen HOST:PORT, as a collector's endpoint: the port
				// is the gRPC receiver's.
				if opts.GRPCAddr != "" {
					return usageErrorf("--listen %s names a port and --otlp-grpc %s another; give the port once", opts.Listen, opts.GRPCAddr)
				}
				opts.GRPCAddr = ":" + port
			}
			opts.Listen = host
			if opts.GRPCAddr, err = record.ListenAddr(opts.Listen, opts.GRPCAddr); err != nil {
				return &UsageError{fmt.Errorf("--otlp-grpc: %w", err)}
			}
			if opts.HTTPAddr, err = record.ListenAddr(opts.Listen, opts.HTTPAddr); err != nil {
				return &UsageError{fmt.Errorf("--otlp-http: %w", err)}
			}
			return runF(cmd.Context(), opts)
		},
	}
	// Flags stop at the command, so its own flags need no `--`.
	cmd.Flags().SetInterspersed(false)
	fl := cmd.Flags()
	fl.StringVarP(&opts.Output, "output", "o", "", "capture `directory` to create (default run-<UTC time>.llmprof)")
	fl.StringVar(&opts.Listen, "listen", record.DefaultListen, "`host` the receivers bind to (host:port sets the gRPC port too); a non-loopback host exposes them to the network")
	fl.StringVar(&opts.GRPCAddr, "otlp-grpc", "", "gRPC receiver `address` (host:port or :port; default a free port)")
	fl.StringVar(&opts.HTTPAddr, "otlp-http", "", "HTTP receiver `address` (host:port or :port; default a free port)")
	fl.StringVar(&opts.Protocol, "otlp-protocol", record.ProtocolGRPC, "protocol the command's SDK is told to export with: grpc, http/protobuf or http/json")
	fl.BoolVar(&opts.KeepEnv, "keep-otel-env", false, "keep OTEL_EXPORTER_OTLP_* variables already set instead of pointing them at the receiver")
	fl.DurationVar(&opts.Duration, "duration", 0, "stop the command (SIGINT) after this long; 0 waits for it to exit")
	fl.DurationVar(&opts.StopTimeout, "stop-timeout", record.DefaultStopTimeout, "how long a stopped command may take to exit before it is killed")
	fl.DurationVar(&opts.OTLPQuiet, "otlp-quiet", record.DefaultOTLPQuiet, "after the command exits, keep receiving until no export arrived for this long")
	fl.DurationVar(&opts.OTLPDrainMax, "otlp-drain-max", record.DefaultOTLPDrainMax, "longest wait for late exports after the command exits")
	fl.DurationVar(&opts.Tail, "tail", record.DefaultTail, "keep sampling the GPUs this long after the command exits")
	fl.DurationVar(&opts.ClockInterval, "clock-interval", record.DefaultClockInterval, "period of clock-pair snapshots")
	fl.DurationVar(&opts.FlushInterval, "flush-interval", time.Second, "longest time a row waits in an open batch: what a killed recorder can lose")
	fl.BoolVar(&opts.NoNVML, "no-nvml", false, "do not sample GPU telemetry")
	fl.BoolVar(&opts.RequireGPU, "require-gpu", false, "fail if NVML telemetry is unavailable")
	fl.StringVar(&opts.NVMLLib, "nvml-lib", "", "`path` of libnvidia-ml.so to load (default libnvidia-ml.so.1)")
	fl.DurationVar(&opts.NVMLInterval, "nvml-interval", record.DefaultDeviceInterval, "device telemetry period (utilization, memory, clocks, power, PCIe, NVLink)")
	fl.DurationVar(&opts.DrainInterval, "nvml-drain-interval", record.DefaultDrainInterval, "period of NVML ring-buffer drains and per-process polls")
	fl.DurationVar(&opts.GPMInterval, "gpm-interval", record.DefaultGPMInterval, "GPM metrics period on Hopper and newer (at least 100ms)")
	fl.BoolVar(&opts.Nsys, "nsys", false, "run the command under nsys profile and export its SQLite into the capture")
	fl.StringArrayVar(&opts.NsysArgs, "nsys-arg", nil, "extra `flag` for nsys profile (repeatable), e.g. --nsys-arg=--gpu-metrics-devices=0")
	fl.StringArrayVar(&opts.Scrape, "scrape", nil, "scrape a Prometheus endpoint into the capture while the command runs (repeatable): `URL[@interval]`, e.g. http://localhost:8000/metrics@1s (vLLM, dcgm-exporter :9400, node_exporter :9100); see docs/signals.md")
	fl.BoolVar(&opts.CUPTI, "cupti", false, "trace kernels, memcpy/memset, synchronization and CUDA API calls of every CUDA process of the command with llmprof's CUPTI injection library (needs the CUDA toolkit's CUPTI headers and a C compiler)")
	fl.DurationVar(&opts.CUPTIFlushInterval, "cupti-flush-interval", 2*time.Second, "how often the --cupti library writes CUPTI's completed buffers and a clock pair to its file")
	fl.StringVar(&opts.TorchProfiler, "torch-profiler", "", "drive a vLLM or SGLang server's PyTorch profiler; its traces go into the capture's torch/ folder, or `DIR` with --torch-profiler=DIR")
	fl.Lookup("torch-profiler").NoOptDefVal = torchProfilerDefault
	fl.StringVar(&opts.Server, "server", "", "the server --torch-profiler drives: vllm or sglang (default: from the command line)")
	fl.StringVar(&opts.ProfileURL, "profile-url", "", "the server's base `URL` (default from its --host/--port: vLLM 8000, SGLang 30000)")
	fl.DurationVar(&opts.ProfileAt, "profile-at", 0, "start the profile this long after the server is ready (default: at the first request)")
	fl.DurationVar(&opts.ProfileDuration, "profile-duration", 0, "stop the profile this long after it started (default: before the server is stopped)")
	fl.DurationVar(&opts.ProfileFlushTimeout, "profile-flush-timeout", 10*time.Minute, "longest wait for the server to finish writing its traces")
	fl.BoolVar(&opts.ProfileShapes, "profile-record-shapes", false, "torch.profiler record_shapes")
	fl.BoolVar(&opts.ProfileStack, "profile-with-stack", false, "torch.profiler with_stack")
	fl.BoolVar(&opts.ProfileMemory, "profile-memory", false, "torch.profiler profile_memory (SGLang: the MEM activity)")
	return cmd
}

func runRecord(ctx context.Context, opts *RecordOptions) error {
	var scrapes []record.ScrapeTarget
	for _, s := range opts.Scrape {
		st, err := record.ParseScrapeTarget(s)
		if err != nil {
			return &UsageError{err}
		}
		scrapes = append(scrapes, st)
	}
	torchDir := opts.TorchProfiler
	if torchDir == torchProfilerDefault {
		torchDir = ""
	}
	ro := record.Options{
		Scrapes: scrapes,
		Command: opts.Command, Dir: opts.Output,
		GRPCAddr: opts.GRPCAddr, HTTPAddr: opts.HTTPAddr, Protocol: opts.Protocol, KeepOTELEnv: opts.KeepEnv,
		Duration: opts.Duration, StopTimeout: opts.StopTimeout,
		OTLPQuiet: opts.OTLPQuiet, OTLPDrainMax: opts.OTLPDrainMax, Tail: opts.Tail, ClockInterval: opts.ClockInterval, FlushInterval: opts.FlushInterval,
		NVML: record.NVMLOptions{
			Disable: opts.NoNVML, Require: opts.RequireGPU, LibraryPath: opts.NVMLLib,
			DeviceInterval: opts.NVMLInterval, DrainInterval: opts.DrainInterval, GPMInterval: opts.GPMInterval,
		},
		Nsys: opts.Nsys, NsysArgs: opts.NsysArgs,
		CUPTI: record.CUPTIOptions{Enabled: opts.CUPTI, FlushInterval: opts.CUPTIFlushInterval},
		TorchProfiler: record.TorchProfilerOptions{
			Enabled: opts.TorchProfiler != "", Server: opts.Server, URL: opts.ProfileURL,
			At: opts.ProfileAt, For: opts.ProfileDuration, FlushTimeout: opts.ProfileFlushTimeout,
			Dir: torchDir, RecordShapes: opts.ProfileShapes, WithStack: opts.ProfileStack, WithMemory: opts.ProfileMemory,
		},
		Stdin: opts.IO.In, Stdout: opts.IO.Raw().Out, Stderr: opts.IO.Raw().ErrOut, Log: opts.IO.ErrOut,
		Version: versionString(),
	}
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
