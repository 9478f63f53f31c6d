package record

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options configure Record. The zero value of every duration means its
// default; docs/record.md lists them.
type Options struct {
	// Command is the child to run: argv, with placeholders.
	Command []string
	// Dir is the capture directory to create; it must not exist, or be
	// empty.
	Dir string
	// GRPCAddr and HTTPAddr are the receiver addresses (host:port; port 0
	// picks a free one). Check them with CheckListen first: Record binds
	// what it is given.
	GRPCAddr, HTTPAddr string
	// Protocol the child's OTel SDK is told to use: grpc (default),
	// http/protobuf or http/json.
	Protocol string
	// KeepOTELEnv leaves OTEL_EXPORTER_OTLP_* variables the user already
	// set alone (by default record points them at its receiver).
	KeepOTELEnv bool
	// Duration stops the child (SIGINT, as a user would) after this long;
	// 0 runs until the child exits.
	Duration time.Duration
	// StopTimeout is how long a stopped child has to exit before its
	// process group is killed (default 30 s). A second signal kills at once.
	StopTimeout time.Duration
	// OTLPQuiet and OTLPDrainMax: after the child exits, keep receiving
	// until no export has arrived for OTLPQuiet (default 1 s), at most
	// OTLPDrainMax (default 10 s) — worker processes may still be flushing.
	OTLPQuiet, OTLPDrainMax time.Duration
	// Tail keeps NVML sampling after the child exits, to see the GPU drain
	// (default 1 s; only with NVML).
	Tail time.Duration
	// ClockInterval is the period of clock-pair snapshots (default 10 s).
	ClockInterval time.Duration
	// FlushInterval bounds how long a row waits in an open batch (default
	// 1 s): what a SIGKILLed recorder can lose.
	FlushInterval time.Duration
	NVML          NVMLOptions
	// Nsys runs the child under `nsys profile` and exports SQLite into the
	// capture's nsys/ folder; NsysArgs are extra `nsys profile` flags.
	Nsys     bool
	NsysArgs []string
	// Scrapes are Prometheus endpoints scraped into the capture while the
	// command runs (record/scrape.go).
	Scrapes []ScrapeTarget
	// TorchProfiler drives a vLLM or SGLang child's PyTorch profiler
	// (record/torchprof.go).
	TorchProfiler TorchProfilerOptions
	// CUPTI loads llmprof's CUPTI injection library into the child
	// (record/cuptirec.go).
	CUPTI CUPTIOptions

	// Stdin, Stdout and Stderr are the child's (default: none, and
	// record's own stdout and stderr).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Log receives record's own notes (default os.Stderr).
	Log io.Writer
	// Signals delivers stop requests; nil subscribes to SIGINT, SIGTERM
	// and SIGHUP. The first is forwarded to the child's process group, the
	// second kills it.
	Signals <-chan os.Signal
	// Version is recorded in the manifest.
	Version string

	// newSampler replaces openNVML in tests (nvml_mock_test.go).
	newSampler func(NVMLOptions) (gpuSampler, error)
	// wrapTable, a test seam, stands between each table's Arrow writer and
	// its file (to inject write errors).
	wrapTable func(table string, w io.Writer) io.Writer
}

// Defaults.
const (
	DefaultStopTimeout   = 30 * time.Second
	DefaultOTLPQuiet     = time.Second
	DefaultOTLPDrainMax  = 10 * time.Second
	DefaultTail          = time.Second
	DefaultClockInterval = 10 * time.Second
)

// Result is how a recording ended.
type Result struct {
	Dir      string
	Status   string
	ExitCode int
	Manifest *Manifest
}

// StartError means the child could not be started; Code is what a shell
// would exit with (127 not found, 126 not executable).
type StartError struct {
	Code int
	Err  error
}

func (e *StartError) Error() string { return e.Err.Error() }
func (e *StartError) Unwrap() error { return e.Err }

func (o *Options) applyDefaults() {
	if o.Protocol == "" {
		o.Protocol = ProtocolGRPC
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.StopTimeout, DefaultStopTimeout)
	def(&o.OTLPQuiet, DefaultOTLPQuiet)
	def(&o.OTLPDrainMax, DefaultOTLPDrainMax)
	def(&o.Tail, DefaultTail)
	def(&o.ClockInterval, DefaultClockInterval)
	def(&o.FlushInterval, defaultFlushInterval)
	o.NVML = o.NVML.withDefaults()
	if o.GRPCAddr == "" {
		o.GRPCAddr = "127.0.0.1:0"
	}
	if o.HTTPAddr == "" {
		o.HTTPAddr = "127.0.0.1:0"
	}
	if o.Stdout == nil {
		o.Stdout = os.Stdout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.Log == nil {
		o.Log = os.Stderr
	}
	if o.newSampler == nil {
		o.newSampler = openNVML
	}
}

// recording is the state of one Record call.
type recording struct {
	opts Options
	// preStop, when set, runs before the first stop request is forwarded
	// to the child (supervise).
	preStop  func()
	dir      string
	manifest Manifest
	mu       sync.Mutex // guards manifest while goroutines add to it

	otlp   *tableWriter[OTLPPayload]
	clock  *tableWriter[ClockPair]
	events *tableWriter[Event]
	device *tableWriter[DeviceSample]
	buffd  *tableWriter[BufferedSample]
	proc   *tableWriter[ProcessSample]
	gpm    *tableWriter[GPMSample]

	overruns atomic.Int64

	// writeFailed carries the first write error of any table: the
	// recording then stops the child and ends as failed. writeErr keeps
	// that first error (or the first found when the tables are closed).
	writeFailed chan error
	writeErrMu  sync.Mutex
	writeErr    error
}

// ErrCaptureWrite is wrapped by Record's error when a table of the capture
// could not be written (a full disk, an I/O error): the child was stopped,
// the manifest says "failed", and counts only what reached the disk.
var ErrCaptureWrite = errors.New("writing the capture failed")

// manifestReserve is the file that keeps room for the final manifest: it is
// created at the start and removed just before the manifest is last
// written, so a recording that fills the disk can still say so.
const (
	manifestReserve      = ".manifest-reserve"
	manifestReserveBytes = 1 << 20
)

// Record runs opts.Command with an OTLP receiver, NVML sampling and clock
// snapshots, writes the capture to opts.Dir and returns how it ended. The
// child's exit code is in the result; an error means the recording itself
// failed (the capture, if created, says so in its manifest).
func Record(ctx context.Context, opts Options) (*Result, error) {
	opts.applyDefaults()
	if len(opts.Command) == 0 {
		return nil, errors.New("no command to record")
	}
	switch opts.Protocol {
	case ProtocolGRPC, ProtocolHTTPProtobuf, ProtocolHTTPJSON:
	default:
		return nil, fmt.Errorf("unknown OTLP protocol %q: want grpc, http/protobuf or http/json", opts.Protocol)
	}
	var nsysPath string
	if opts.Nsys {
		p, err := findNsys()
		if err != nil {
			return nil, err
		}
		nsysPath = p
	}
	var cuptiBuild *cuptiBuilder
	if opts.CUPTI.Enabled {
		var err error
		if cuptiBuild, err = checkCUPTI(&opts); err != nil {
			return nil, err
		}
	}
	if err := prepareDir(opts.Dir); err != nil {
		return nil, err
	}
	r := &recording{opts: opts, dir: opts.Dir, writeFailed: make(chan error, 1)}
	start := readClockPair("start")
	r.initManifest(start)
	if err := writeManifest(r.dir, &r.manifest); err != nil {
		return nil, fmt.Errorf("%s: %w", r.dir, err)
	}
	if err := reserveSpace(filepath.Join(r.dir, manifestReserve), manifestReserveBytes); err != nil {
		return nil, fmt.Errorf("%s: keeping room for the final manifest: %w", r.dir, err)
	}
	cfg := writerConfig{captureID: r.manifest.CaptureID, flushInterval: opts.FlushInterval,
		onFail: r.writeFailure, wrap: opts.wrapTable}
	var err error
	// Payloads wait in a shorter queue: each can be megabytes.
	otlpCfg := cfg
	otlpCfg.queueLen = 64
	if r.otlp, err = newTableWriter[OTLPPayload](r.dir, otlpSchema, otlpCfg); err != nil {
		return nil, err
	}
	r.otlp.weigh = func(p *OTLPPayload) int64 {
		if p.Signal == SignalTraces {
			return int64(p.Items)
		}
		return 0
	}
	if r.clock, err = newTableWriter[ClockPair](r.dir, clockSchema, cfg); err != nil {
		return nil, err
	}
	if r.events, err = newTableWriter[Event](r.dir, eventSchema, cfg); err != nil {
		return nil, err
	}
	r.addClock(start)
	r.event("record_start", "llmprof record "+opts.Version, nil)

	sampler, err := r.openSampler(cfg)
	if err != nil {
		return r.fail(err, 0)
	}

	recv, err := startReceiver(opts.GRPCAddr, opts.HTTPAddr, func(ctx context.Context, p OTLPPayload) error {
		return r.otlp.Send(ctx, p)
	})
	if err != nil {
		closeSampler(sampler)
		return r.fail(err, 0)
	}
	ep := endpoints{grpc: dialable(recv.GRPCAddr()), http: dialable(recv.HTTPAddr())}
	r.manifest.OTLP.GRPCAddr, r.manifest.OTLP.HTTPAddr = recv.GRPCAddr(), recv.HTTPAddr()
	r.event("otlp_listen", "grpc "+recv.GRPCAddr()+" http "+recv.HTTPAddr(), nil)
	fmt.Fprintf(opts.Log, "llmprof record: OTLP receiver on grpc %s and http %s; capture %s\n", ep.grpc, ep.http, r.dir)
	r.warnVLLM()
	scr, err := startScrapers(r.dir, opts.Scrapes, nil)
	if err != nil {
		return r.abort(recv, sampler, err)
	}
	defer r.stopScrapers(scr)

	argv := expandArgs(opts.Command, ep)
	var nsysReport string
	if opts.Nsys {
		if err := os.Mkdir(filepath.Join(r.dir, "nsys"), 0o755); err != nil {
			return r.abort(recv, sampler, err)
		}
		nsysReport = filepath.Join(r.dir, "nsys", "report")
		argv = nsysProfileArgs(nsysPath, nsysReport, opts.NsysArgs, argv)
	}
	spec := r.envSpec(ep)
	if opts.CUPTI.Enabled {
		env, err := r.buildCUPTI(cuptiBuild)
		if err != nil {
			return r.abort(recv, sampler, err)
		}
		for k, v := range env {
			spec.always[k] = v
		}
	}
	var tp *torchProfiler
	if opts.TorchProfiler.Enabled {
		tp, err = newTorchProfiler(opts.TorchProfiler, argv, r.dir, opts.Log, func(kind, detail string) { r.event(kind, detail, nil) })
		if err != nil {
			return r.abort(recv, sampler, err)
		}
		for k, v := range tp.env() {
			spec.always[k] = v
		}
		r.preStop = tp.beforeShutdown
	}
	env, added, kept := buildEnv(os.Environ(), spec)
	r.manifest.Command.Exec = argv
	r.manifest.Command.EnvAdded = added
	r.manifest.Command.EnvKept = kept
	if len(kept) > 0 {
		fmt.Fprintf(opts.Log, "llmprof record: keeping your %s (--keep-otel-env); spans sent elsewhere are not captured\n", strings.Join(kept, ", "))
	}

	stopSignals := r.subscribe()
	defer stopSignals()
	c, err := startChild(childConfig{argv: argv, env: env, stdin: opts.Stdin, stdout: opts.Stdout, stderr: opts.Stderr})
	if err != nil {
		code := 126
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
			code = 127
		}
		r.event("child_start_failed", err.Error(), ptr(int64(code)))
		_, _ = r.abort(recv, sampler, err)
		return &Result{Dir: r.dir, Status: StatusFailed, ExitCode: code, Manifest: &r.manifest},
			&StartError{Code: code, Err: fmt.Errorf("cannot start %s: %w", argv[0], err)}
	}
	// The group's guard kills what is left of it if record dies first;
	// ending normally, record lets it go.
	defer c.releaseGuard()
	r.manifest.Command.Pid = c.pid
	r.addClock(readClockPair("child_start"))
	r.event("child_start", strings.Join(argv, " "), ptr(int64(c.pid)))
	r.updateManifest()

	sampleCtx, stopSampling := context.WithCancel(context.Background())
	var samplerDone chan struct{}
	if sampler != nil {
		samplerDone = make(chan struct{})
		go func() {
			defer close(samplerDone)
			sampler.Run(sampleCtx, r.sinks(c.pid))
		}()
	}
	clockDone := make(chan struct{})
	go func() {
		defer close(clockDone)
		t := time.NewTicker(opts.ClockInterval)
		defer t.Stop()
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
				r.addClock(readClockPair("periodic"))
			}
		}
	}()

	if tp != nil {
		tp.run(ctx)
	}
	status, detail := r.supervise(ctx, c, r.writeFailed)
	code, sig := c.exit()
	if tp != nil {
		info := tp.finish(r.dir)
		r.manifest.External.Torch = info
		r.event("torch_profiler_traces", fmt.Sprintf("%d traces in %s", len(info.Files), info.Dir), nil)
		if info.Error != "" {
			fmt.Fprintf(opts.Log, "llmprof record: --torch-profiler: %s\n", info.Error)
		}
	}
	r.addClock(readClockPair("child_exit"))
	r.event("child_exit", exitText(code, sig), ptr(int64(code)))
	r.manifest.Command.ExitCode = &code
	r.manifest.Command.Signal = sig
	if status == "" {
		if code == 0 {
			status = StatusComplete
		} else {
			status = StatusChildFailed
		}
	}
	if detail == "" {
		detail = exitText(code, sig)
	} else {
		detail += "; " + exitText(code, sig)
	}
	if c.err != nil {
		detail += "; wait: " + c.err.Error()
	}

	if sampler != nil && status != StatusInterrupted {
		time.Sleep(opts.Tail)
	}
	r.stopScrapers(scr)
	stopSampling()
	if samplerDone != nil {
		<-samplerDone
		sampler.Close()
	}
	<-clockDone

	recv.Drain(opts.OTLPQuiet, opts.OTLPDrainMax)
	stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	recv.Stop(stopCtx)
	cancel()
	r.recordReceiver(recv)
	if r.manifest.OTLP.Requests == 0 && r.manifest.pointedAtReceiver() {
		note := noExportsNote(ep)
		r.event("otlp_none", note, nil)
		fmt.Fprintf(opts.Log, "llmprof record: warning: %s\n", note)
	}

	if opts.Nsys {
		r.exportNsys(nsysPath, nsysReport)
	}
	// Listed last: the command's other processes (vLLM's workers) may
	// still be flushing their files while the receivers drain.
	r.finishCUPTI()
	res := r.finish(status, detail, code)
	lost := ""
	if n := r.manifest.OTLP.SpansLost; n > 0 {
		lost = fmt.Sprintf(" (%d received spans were not stored)", n)
	}
	fmt.Fprintf(opts.Log, "llmprof record: wrote %s (%s): %s in %s stored%s, %s; %s\n",
		r.dir, res.Status, counted(r.manifest.OTLP.Spans, "span"), counted(r.manifest.OTLP.Requests, "OTLP request"), lost,
		counted(r.nvmlRows(), "NVML row"), r.manifest.StatusDetail)
	r.writeErrMu.Lock()
	werr := r.writeErr
	r.writeErrMu.Unlock()
	if werr != nil {
		return res, fmt.Errorf("%s: %w: %w; %s", r.dir, ErrCaptureWrite, werr, exitText(code, sig))
	}
	return res, nil
}

// noExportsNote says that a command told where to export sent nothing, and
// why that may be.
func noExportsNote(ep endpoints) string {
	return fmt.Sprintf("no OTLP export arrived, though the command was pointed at the receiver (grpc %s, http %s): "+
		"its OpenTelemetry SDK may be off or exporting elsewhere, or it could not reach that address; vLLM exports only with --otlp-traces-endpoint %s",
		ep.grpc, ep.http, PlaceholderGRPCURL)
}

// writeFailure is every table's onFail: the first error ends the recording.
func (r *recording) writeFailure(table string, err error) {
	r.writeErrMu.Lock()
	if r.writeErr == nil {
		r.writeErr = err
	}
	r.writeErrMu.Unlock()
	select {
	case r.writeFailed <- err:
	default:
	}
}

// reserveSpace creates path with n bytes allocated.
func reserveSpace(path string, n int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if err := allocate(f, n); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// prepareDir creates the capture directory; an existing empty directory is
// fine (a user may have made it), anything else is refused rather than mixed
// with an old capture.
func prepareDir(dir string) error {
	if dir == "" {
		return errors.New("no capture directory given")
	}
	entries, err := os.ReadDir(dir)
	switch {
	case err == nil && len(entries) > 0:
		return fmt.Errorf("%s already exists and is not empty; choose another -o or remove it", dir)
	case err == nil:
		return nil
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	default:
		return err
	}
}

func (r *recording) initManifest(start ClockPair) {
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	cwd, _ := os.Getwd()
	o := r.opts
	r.manifest = Manifest{
		Format: FormatName, SchemaVersion: SchemaVersion, CaptureID: hex.EncodeToString(id),
		Status: StatusRecording,
		Tool:   ToolInfo{Name: "llmprof", Version: o.Version, Go: runtime.Version(), NVMLBinding: NVMLBinding},
		Host:   hostInfo(),
		Recorder: RecorderInfo{Pid: os.Getpid(),
			StartedAt: time.Unix(0, start.RealMidNs()).UTC().Format(time.RFC3339Nano)},
		Command: CommandInfo{Argv: o.Command, Cwd: cwd},
		Clock: ClockInfo{Start: snapshotOf(start), IntervalMs: o.ClockInterval.Milliseconds(),
			NVMLTimestampClock: "realtime_us (assumed; bench/record-gpu.sh checks it)"},
		GPUs: []GPUInfo{},
		Sampling: SamplingInfo{
			DeviceIntervalMs: o.NVML.DeviceInterval.Milliseconds(), DrainIntervalMs: o.NVML.DrainInterval.Milliseconds(),
			GPMIntervalMs: o.NVML.GPMInterval.Milliseconds(), ProcessIntervalMs: o.NVML.DrainInterval.Milliseconds(),
		},
		OTLP:  OTLPInfo{Protocol: o.Protocol},
		Files: []FileInfo{},
	}
}

// openSampler opens NVML and, if it works, the GPU tables. Unavailable
// NVML is said once, on the terminal and in the manifest; the recording
// goes on without it unless --require-gpu.
func (r *recording) openSampler(cfg writerConfig) (gpuSampler, error) {
	if r.opts.NVML.Disable {
		r.manifest.NVML = NVMLInfo{Reason: "disabled (--no-nvml)"}
		return nil, nil
	}
	s, err := r.opts.newSampler(r.opts.NVML)
	if err != nil {
		r.manifest.NVML = NVMLInfo{Reason: err.Error()}
		r.event("nvml_unavailable", err.Error(), nil)
		if r.opts.NVML.Require {
			return nil, fmt.Errorf("--require-gpu: %w", err)
		}
		fmt.Fprintf(r.opts.Log, "llmprof record: no GPU telemetry: %v\n", err)
		return nil, nil
	}
	info, gpus := s.Info()
	r.manifest.NVML, r.manifest.GPUs = info, gpus
	var werr error
	open := func(f func() error) {
		if werr == nil {
			werr = f()
		}
	}
	open(func() (err error) { r.device, err = newTableWriter[DeviceSample](r.dir, deviceSchema, cfg); return })
	open(func() (err error) { r.buffd, err = newTableWriter[BufferedSample](r.dir, bufferedSchema, cfg); return })
	open(func() (err error) { r.proc, err = newTableWriter[ProcessSample](r.dir, processSchema, cfg); return })
	open(func() (err error) { r.gpm, err = newTableWriter[GPMSample](r.dir, gpmSchema, cfg); return })
	if werr != nil {
		s.Close()
		return nil, werr
	}
	r.event("nvml_open", fmt.Sprintf("%d GPU(s), driver %s", len(gpus), info.DriverVersion), nil)
	return s, nil
}

func closeSampler(s gpuSampler) {
	if s != nil {
		s.Close()
	}
}

func (r *recording) sinks(childPid int) samplerSinks {
	return samplerSinks{
		device:      func(s DeviceSample) { r.device.TrySend(s) },
		buffered:    func(s BufferedSample) { r.buffd.TrySend(s) },
		process:     func(s ProcessSample) { r.proc.TrySend(s) },
		gpm:         func(s GPMSample) { r.gpm.TrySend(s) },
		event:       r.event,
		overrun:     func(n int64) { r.overruns.Add(n) },
		descendants: func() map[uint32]bool { return descendants(childPid) },
	}
}

func (r *recording) envSpec(ep endpoints) envSpec {
	spec := envSpec{
		otel: otelEnv(ep, r.opts.Protocol),
		always: map[string]string{
			"LLMPROF_CAPTURE_DIR": absPath(r.dir),
			"LLMPROF_CAPTURE_ID":  r.manifest.CaptureID,
			"LLMPROF_OTLP_GRPC":   ep.grpc,
			"LLMPROF_OTLP_HTTP":   ep.http,
		},
		// The SDK default is 5 s between batch exports; 500 ms makes spans
		// arrive while the run is still going, and a short run lose nothing
		// to a missed final flush.
		ifUnset:  map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "500"},
		keepOTEL: r.opts.KeepOTELEnv,
	}
	if r.opts.Nsys {
		// vLLM under nsys: fork()ed CUDA workers are not traced reliably.
		spec.ifUnset["VLLM_WORKER_MULTIPROC_METHOD"] = "spawn"
	}
	return spec
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// warnVLLM: vLLM ignores the OTEL endpoint variables and traces only when
// given --otlp-traces-endpoint (vllm/tracing.py).
func (r *recording) warnVLLM() {
	argv := r.opts.Command
	isVLLM := filepath.Base(argv[0]) == "vllm"
	for _, a := range argv {
		if strings.Contains(a, "vllm.entrypoints") {
			isVLLM = true
		}
		if strings.HasPrefix(a, "--otlp-traces-endpoint") {
			return
		}
	}
	if isVLLM {
		fmt.Fprintf(r.opts.Log, "llmprof record: vLLM exports spans only with --otlp-traces-endpoint; add --otlp-traces-endpoint %s\n", PlaceholderGRPCURL)
	}
}

// subscribe starts listening for stop signals unless the caller supplies
// them.
//
// A signal record was started with ignored stays ignored: under nohup a
// hangup must not stop the run, and a background job of a script does not
// take the terminal's Ctrl-C. (Subscribing would also un-ignore it for the
// child, which inherits the disposition.)
func (r *recording) subscribe() func() {
	if r.opts.Signals != nil {
		return func() {}
	}
	ch := make(chan os.Signal, 4)
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		if !signal.Ignored(sig) {
			signal.Notify(ch, sig)
		}
	}
	r.opts.Signals = ch
	return func() { signal.Stop(ch) }
}

// stopSignal is what record sends when it decides to stop the child
// (--duration, cancellation): SIGINT, as a user at the terminal would, unless
// SIGINT is ignored here — then the child inherited that and only SIGTERM
// reaches it.
func stopSignal() syscall.Signal {
	if signal.Ignored(syscall.SIGINT) {
		return syscall.SIGTERM
	}
	return syscall.SIGINT
}

// supervise waits for the child to exit, forwarding the first stop request
// to its process group and killing the group on the second, or when it
// outlives the stop timeout. It returns the status to record when record
// (not the child) ended the run.
func (r *recording) supervise(ctx context.Context, c *child, writeFailed <-chan error) (status, detail string) {
	var (
		grace    <-chan time.Time
		deadline <-chan time.Time
		stops    int
		ctxDone  = ctx.Done()
	)
	if r.opts.Duration > 0 {
		t := time.NewTimer(r.opts.Duration)
		defer t.Stop()
		deadline = t.C
	}
	// preDone is set while r.preStop runs before the first stop is
	// forwarded (the server's profile is stopped and its traces written
	// while it still runs); a second stop request forwards at once.
	var (
		preDone <-chan struct{}
		preSig  syscall.Signal
		preWhy  string
	)
	var forward func(sig syscall.Signal, why string)
	stop := func(sig syscall.Signal, why string) {
		if stops == 0 && r.preStop != nil && preDone == nil && preSig == 0 {
			ch := make(chan struct{})
			preDone, preSig, preWhy = ch, sig, why
			r.event("stop_requested", why+": stopping the torch profile before the child", ptr(int64(sig)))
			fmt.Fprintf(r.opts.Log, "llmprof record: %s: stopping the profile, then the child (again to stop it at once)\n", why)
			go func() { defer close(ch); r.preStop() }()
			return
		}
		if preDone != nil {
			preDone = nil
		}
		forward(sig, why)
	}
	forward = func(sig syscall.Signal, why string) {
		stops++
		if stops == 1 {
			r.event("stop", why+": forwarding "+signalName(sig)+" to the child's process group", ptr(int64(sig)))
			fmt.Fprintf(r.opts.Log, "llmprof record: %s: stopping the child (again to kill it)\n", why)
			_ = c.signal(sig)
			t := time.NewTimer(r.opts.StopTimeout)
			grace = t.C
			return
		}
		r.event("kill", why+": killing the child's process group", ptr(int64(syscall.SIGKILL)))
		fmt.Fprintf(r.opts.Log, "llmprof record: %s: killing the child\n", why)
		_ = c.signal(syscall.SIGKILL)
	}
	for {
		select {
		case <-c.done:
			return status, detail
		case <-preDone:
			preDone = nil
			if stops == 0 {
				forward(preSig, preWhy)
			}
		case s := <-r.opts.Signals:
			sig, ok := s.(syscall.Signal)
			if !ok {
				sig = syscall.SIGTERM
			}
			if status == "" {
				status, detail = StatusInterrupted, "record received "+signalName(sig)
			}
			stop(sig, signalName(sig))
		case <-ctxDone:
			ctxDone = nil
			if status == "" {
				status, detail = StatusInterrupted, "recording cancelled"
			}
			stop(stopSignal(), "cancelled")
		case <-deadline:
			deadline = nil
			if status == "" {
				status, detail = StatusComplete, fmt.Sprintf("stopped after --duration %s", r.opts.Duration)
			}
			stop(stopSignal(), "--duration elapsed")
		case err := <-writeFailed:
			writeFailed = nil
			// Whatever ended the run before, a capture that lost data
			// failed.
			status, detail = StatusFailed, ErrCaptureWrite.Error()+": "+err.Error()
			fmt.Fprintf(r.opts.Log, "llmprof record: %s\n", detail)
			stop(stopSignal(), "the capture cannot be written")
		case <-grace:
			grace = nil
			stops = max(stops, 1)
			forward(syscall.SIGKILL, fmt.Sprintf("child still running %s after the stop signal", r.opts.StopTimeout))
		}
	}
}

func exitText(code int, sig string) string {
	if sig != "" {
		return fmt.Sprintf("child killed by %s (exit status %d)", sig, code)
	}
	return fmt.Sprintf("child exited with status %d", code)
}

func (r *recording) event(kind, detail string, code *int64) {
	e := Event{MonoNs: monoNow(), RealNs: realNow(), Kind: kind, Detail: detail, Code: code}
	_ = r.events.Send(context.Background(), e)
}

func (r *recording) addClock(p ClockPair) {
	_ = r.clock.Send(context.Background(), p)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.manifest.Clock.End = snapshotOf(p) // the latest; replaced by "end" at the finish
}

func (r *recording) recordReceiver(recv *Receiver) {
	st := recv.Stats()
	// Provisional: finish replaces them with what reached the disk.
	r.manifest.OTLP.Requests = st.Requests
	r.manifest.OTLP.Spans = st.Spans
	r.manifest.OTLP.Rejected = st.Rejected
	r.manifest.OTLP.Metrics = st.Metrics
	r.manifest.OTLP.Logs = st.Logs
	r.manifest.OTLP.Throttled = st.Throttled
	r.manifest.OTLP.PeakBodyBytes = st.PeakBodyBytes
	if st.Rejected > 0 {
		r.event("otlp_rejected", fmt.Sprintf("%d malformed export request(s) refused", st.Rejected), ptr(st.Rejected))
	}
}

// exportNsys converts the nsys report to SQLite inside the capture, where
// the capture reader finds it.
func (r *recording) exportNsys(nsys, report string) {
	info := &NsysInfo{}
	r.manifest.External.Nsys = info
	if out, err := exec.Command(nsys, "--version").Output(); err == nil {
		info.Version = strings.TrimSpace(string(out))
	}
	rep := report + ".nsys-rep"
	if _, err := os.Stat(rep); err != nil {
		info.Error = "nsys wrote no report: " + err.Error()
		r.event("nsys_error", info.Error, nil)
		fmt.Fprintf(r.opts.Log, "llmprof record: --nsys: %s\n", info.Error)
		return
	}
	info.Report = relTo(r.dir, rep)
	sqlite := report + ".sqlite"
	args := nsysExportArgs(nsys, rep, sqlite)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdout, cmd.Stderr = r.opts.Log, r.opts.Log
	if err := cmd.Run(); err != nil {
		info.Error = "nsys export: " + err.Error()
		r.event("nsys_error", info.Error, nil)
		fmt.Fprintf(r.opts.Log, "llmprof record: --nsys: %s\n", info.Error)
		return
	}
	info.SQLite = relTo(r.dir, sqlite)
	r.event("nsys_export", info.SQLite, nil)
}

func relTo(dir, p string) string {
	if rel, err := filepath.Rel(dir, p); err == nil {
		return filepath.ToSlash(rel)
	}
	return p
}

func (r *recording) nvmlRows() int64 {
	var n int64
	for _, f := range r.manifest.Files {
		switch f.Table {
		case TableGPUDevice, TableGPUBuffered, TableGPUProcess, TableGPUGPM:
			n += f.Rows
		}
	}
	return n
}

// updateManifest rewrites the manifest while recording (status still
// "recording"), with what is known so far.
func (r *recording) updateManifest() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.manifest.Files = r.fileStats()
	if err := writeManifest(r.dir, &r.manifest); err != nil {
		fmt.Fprintf(r.opts.Log, "llmprof record: %v\n", err)
	}
}

func (r *recording) fileStats() []FileInfo {
	var out []FileInfo
	for _, s := range r.tables() {
		out = append(out, s.stats())
	}
	return out
}

type tableHandle struct {
	stats func() FileInfo
	close func() FileInfo
}

// tables lists the open tables, the events table last so that it can take
// events until the very end.
func (r *recording) tables() []tableHandle {
	var out []tableHandle
	add := func(stats, close func() FileInfo) { out = append(out, tableHandle{stats, close}) }
	add(r.otlp.Stats, r.otlp.Close)
	if r.device != nil {
		add(r.device.Stats, r.device.Close)
		add(r.buffd.Stats, r.buffd.Close)
		add(r.proc.Stats, r.proc.Close)
		add(r.gpm.Stats, r.gpm.Close)
	}
	add(r.clock.Stats, r.clock.Close)
	add(r.events.Stats, r.events.Close)
	return out
}

// finish closes every table (flushing open batches) and replaces the
// manifest with the final one.
func (r *recording) finish(status, detail string, code int) *Result {
	r.addClock(readClockPair("end"))
	r.event("record_end", status+": "+detail, nil)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.manifest.Files = r.manifest.Files[:0]
	var errs []string
	for _, t := range r.tables() {
		fi := t.close()
		r.manifest.Files = append(r.manifest.Files, fi)
		r.manifest.Drops.ChannelFull += fi.Dropped
		if fi.Error != "" {
			errs = append(errs, fi.Error)
		}
	}
	r.manifest.Drops.SamplerOverruns = r.overruns.Load()
	// Count what is in the file, not what was acknowledged: a write
	// failure loses the rows still queued and the batch that failed.
	received := r.manifest.OTLP.Spans
	r.manifest.OTLP.Requests = r.otlp.rows.Load()
	r.manifest.OTLP.Spans = r.otlp.Stored()
	r.manifest.OTLP.SpansLost = max(received-r.manifest.OTLP.Spans, 0)
	var unsaid []string // errors the detail does not mention yet
	for _, e := range errs {
		if !strings.Contains(detail, e) {
			unsaid = append(unsaid, e)
		}
	}
	switch {
	case len(errs) > 0 && status != StatusFailed:
		status, detail = StatusFailed, ErrCaptureWrite.Error()+": "+strings.Join(unsaid, "; ")+"; "+detail
	case len(unsaid) > 0:
		detail += "; write errors: " + strings.Join(unsaid, "; ")
	}
	r.manifest.Status, r.manifest.StatusDetail = status, detail
	// The room kept since the start is what lets this write succeed on a
	// full disk.
	os.Remove(filepath.Join(r.dir, manifestReserve))
	if err := writeManifest(r.dir, &r.manifest); err != nil {
		fmt.Fprintf(r.opts.Log, "llmprof record: %v\n", err)
	}
	return &Result{Dir: r.dir, Status: status, ExitCode: code, Manifest: &r.manifest}
}

// fail ends a recording that could not start: the capture's manifest says
// failed, with the reason.
func (r *recording) fail(err error, code int) (*Result, error) {
	r.event("record_failed", err.Error(), nil)
	r.finish(StatusFailed, err.Error(), code)
	return nil, err
}

func (r *recording) abort(recv *Receiver, sampler gpuSampler, err error) (*Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	recv.Stop(ctx)
	cancel()
	closeSampler(sampler)
	return r.fail(err, 0)
}

// counted writes n with its noun, singular for one ("1 span", "2 spans").
func counted[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
