package record

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Placeholders record substitutes in the child's arguments.
const (
	PlaceholderGRPC    = "{otlp_grpc}"     // host:port of the gRPC receiver
	PlaceholderHTTP    = "{otlp_http}"     // host:port of the HTTP receiver
	PlaceholderGRPCURL = "{otlp_grpc_url}" // http://host:port
	PlaceholderHTTPURL = "{otlp_http_url}" // http://host:port/v1/traces
)

// endpoints are the receiver addresses as the child should dial them.
type endpoints struct {
	grpc, http string // host:port
}

func (e endpoints) grpcURL() string       { return "http://" + e.grpc }
func (e endpoints) httpBaseURL() string   { return "http://" + e.http }
func (e endpoints) httpTracesURL() string { return "http://" + e.http + "/v1/traces" }

// expandArgs substitutes the placeholders anywhere inside each argument,
// so `--endpoint={otlp_grpc}` works as well as a bare `{otlp_grpc}`.
func expandArgs(args []string, ep endpoints) []string {
	r := strings.NewReplacer(
		PlaceholderGRPCURL, ep.grpcURL(),
		PlaceholderHTTPURL, ep.httpTracesURL(),
		PlaceholderGRPC, ep.grpc,
		PlaceholderHTTP, ep.http,
	)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// Protocols a child may be told to export with.
const (
	ProtocolGRPC         = "grpc"
	ProtocolHTTPProtobuf = "http/protobuf"
	ProtocolHTTPJSON     = "http/json"
)

// envSpec is what record adds to the child's environment.
type envSpec struct {
	// otel are the OTEL_* exporter settings pointing at the receiver; they
	// replace the user's own unless keepOTEL.
	otel map[string]string
	// always are set regardless (LLMPROF_*).
	always map[string]string
	// ifUnset are defaults that never override the user.
	ifUnset  map[string]string
	keepOTEL bool
}

// otelEnv returns the OpenTelemetry SDK settings that send traces to the
// receiver with the given protocol. The per-signal TRACES variables win
// over the generic ones in every SDK, and some tools (vLLM) read only
// those, so both are set. For HTTP the generic endpoint is a base URL (the
// SDK appends /v1/traces) while the traces endpoint is used as is
// (OpenTelemetry OTLP exporter spec, "Endpoint URLs for OTLP/HTTP").
func otelEnv(ep endpoints, protocol string) map[string]string {
	env := map[string]string{
		"OTEL_TRACES_EXPORTER":               "otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL":        protocol,
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": protocol,
		"OTEL_EXPORTER_OTLP_INSECURE":        "true",
		"OTEL_EXPORTER_OTLP_TRACES_INSECURE": "true",
		"OTEL_EXPORTER_OTLP_ENDPOINT":        ep.grpcURL(),
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ep.grpcURL(),
	}
	if protocol != ProtocolGRPC {
		env["OTEL_EXPORTER_OTLP_ENDPOINT"] = ep.httpBaseURL()
		env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = ep.httpTracesURL()
	}
	return env
}

// buildEnv returns base with spec applied, what was added or replaced, and
// the OTEL variables kept because of keepOTEL.
func buildEnv(base []string, spec envSpec) (env []string, added map[string]string, kept []string) {
	vals := map[string]string{}
	var order []string
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, dup := vals[k]; !dup {
			order = append(order, k)
		}
		vals[k] = v
	}
	added = map[string]string{}
	set := func(k, v string) {
		if _, exists := vals[k]; !exists {
			order = append(order, k)
		}
		vals[k] = v
		added[k] = v
	}
	for _, k := range sortedKeys(spec.otel) {
		if old, exists := vals[k]; exists && spec.keepOTEL {
			if old != spec.otel[k] {
				kept = append(kept, k)
			}
			continue
		}
		set(k, spec.otel[k])
	}
	for _, k := range sortedKeys(spec.always) {
		set(k, spec.always[k])
	}
	for _, k := range sortedKeys(spec.ifUnset) {
		if _, exists := vals[k]; !exists {
			set(k, spec.ifUnset[k])
		}
	}
	env = make([]string, 0, len(order))
	for _, k := range order {
		env = append(env, k+"="+vals[k])
	}
	return env, added, kept
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// child is the recorded process, in a process group of its own so that a
// forwarded signal reaches every process it started (vLLM's engine and
// workers), and so that a terminal's Ctrl-C reaches record first.
type child struct {
	cmd *exec.Cmd
	pid int
	// pgid is the child's process group: the guard's pid where there is
	// a guard (startGroupGuard), else the child's own.
	pgid int
	done chan struct{}
	err  error // from Wait, other than a non-zero exit
	// guard, when set, is the child's group guard (startGroupGuard):
	// writing "release" tells it record ended on its own.
	guard     *os.File
	guardProc *exec.Cmd
}

type childConfig struct {
	argv   []string
	env    []string
	dir    string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

func startChild(cfg childConfig) (*child, error) {
	if len(cfg.argv) == 0 {
		return nil, errors.New("no command to run")
	}
	cmd := exec.Command(cfg.argv[0], cfg.argv[1:]...)
	cmd.Env = cfg.env
	cmd.Dir = cfg.dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = cfg.stdin, cfg.stdout, cfg.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	parentDeathSignal(cmd.SysProcAttr)
	c := &child{cmd: cmd, done: make(chan struct{})}
	// The guard first, leading the group the child is then born into: a
	// guard started after the child left a window in which the child could
	// start processes of its own (a shell's background job, in its first
	// millisecond) that a SIGKILL of record then left running (seen under
	// load: TestRecordKilledTakesGrandchildren).
	c.startGroupGuard()
	if c.guardProc != nil {
		cmd.SysProcAttr.Pgid = c.guardProc.Process.Pid
	}
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that forked the
		// child exits, not the process (syscall.SysProcAttr.Pdeathsig,
		// go.dev/issue/27505), and the Go runtime ends a thread whose
		// locked goroutine returns. So this goroutine locks its thread,
		// starts the child there and keeps the thread, blocked in Wait,
		// until the child is gone.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		err := cmd.Wait()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			c.err = err
		}
		close(c.done)
	}()
	if err := <-started; err != nil {
		c.stopGuard()
		return nil, err
	}
	c.pid, c.pgid = cmd.Process.Pid, cmd.Process.Pid
	if c.guardProc != nil {
		c.pgid = c.guardProc.Process.Pid
	}
	return c, nil
}

// groupGuardScript is the guard's program: ignore the signals record
// forwards to the group, wait for record to say "release" or to die (the
// pipe's end of file), and in the second case kill the whole group —
// itself, the child and every process the child left in it.
const groupGuardScript = `trap '' HUP INT QUIT TERM TSTP TTIN TTOU; read -r line; [ "$line" = release ] || kill -s KILL 0`

// startGroupGuard starts a small shell, in a process group of its own that
// the child then joins, that kills the group when record dies without
// ending the child — even by SIGKILL, which record cannot catch. The
// parent-death signal ends only the child; a shell child's background jobs
// (sh -c 'server & client') would live on. As the group's leader, the
// guard also keeps the group's id from being reused while it waits.
// Without /bin/sh there is no guard, the child leads its own group, and
// record says nothing: the child itself still dies with record.
func (c *child) startGroupGuard() {
	r, w, err := os.Pipe()
	if err != nil {
		return
	}
	defer r.Close()
	g := exec.Command("/bin/sh", "-c", groupGuardScript)
	g.Stdin = r
	g.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := g.Start(); err != nil {
		w.Close()
		return
	}
	c.guard, c.guardProc = w, g
}

// stopGuard tells the guard that record ends on its own (or that its child
// never started), and reaps it.
func (c *child) stopGuard() {
	if c.guard == nil {
		return
	}
	_, _ = io.WriteString(c.guard, "release\n")
	c.guard.Close()
	_ = c.guardProc.Wait()
	c.guard = nil
}

// releaseGuard tells the guard that record ends normally and reaps it, once
// the child is gone; processes the child left behind are the user's, as
// without record. While the child still runs, the guard stays and acts
// when record exits.
func (c *child) releaseGuard() {
	if c.guard == nil {
		return
	}
	select {
	case <-c.done:
	default:
		return
	}
	c.stopGuard()
}

// signal sends sig to the child's process group; after the group leader
// has exited, to whatever is left of the group.
func (c *child) signal(sig syscall.Signal) error {
	err := syscall.Kill(-c.pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil // nobody left
	}
	return err
}

// exit returns the exit code the way a shell reports it (128+n when killed
// by signal n) and the signal's name, once the child is done.
func (c *child) exit() (code int, signal string) {
	st := c.cmd.ProcessState
	if st == nil {
		return -1, ""
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), signalName(ws.Signal())
	}
	return st.ExitCode(), ""
}

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return "signal " + strconv.Itoa(int(s))
}

// descendants returns root and every process descended from it, read from
// /proc (the ppid field of /proc/<pid>/stat). NVML reports per-process
// figures by pid; this tells the child's processes from other tenants'.
// Off Linux, or when /proc is unreadable, it knows only root.
func descendants(root int) map[uint32]bool {
	out := map[uint32]bool{uint32(root): true}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	parent := map[int]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if ppid, ok := statPPID(b); ok {
			parent[pid] = ppid
		}
	}
	// A few passes reach any depth a real process tree has.
	for changed := true; changed; {
		changed = false
		for pid, ppid := range parent {
			if !out[uint32(pid)] && out[uint32(ppid)] {
				out[uint32(pid)] = true
				changed = true
			}
		}
	}
	return out
}

// statPPID reads the fourth field of /proc/<pid>/stat; the command name
// (field two) is parenthesized and may itself contain spaces and parens.
func statPPID(stat []byte) (int, bool) {
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

// nsysProfileArgs wraps argv in `nsys profile` with the flags the
// Nsight Systems and vLLM docs recommend for inference servers: CUDA, NVTX
// and OS runtime traces; follow the fork+exec of worker processes; trace
// CUDA graphs per node (docs/record.md §3.3, vLLM docs/contributing/
// profiling.md). extra goes before the command, so it can override them.
func nsysProfileArgs(nsys, outBase string, extra, argv []string) []string {
	args := []string{nsys, "profile",
		"--output", outBase,
		"--force-overwrite=true",
		"--trace=cuda,nvtx,osrt",
		"--trace-fork-before-exec=true",
		"--cuda-graph-trace=node",
	}
	args = append(args, extra...)
	return append(args, argv...)
}

// nsysExportArgs converts the report to SQLite.
func nsysExportArgs(nsys, report, sqlite string) []string {
	return []string{nsys, "export", "--type", "sqlite", "--force-overwrite=true", "--output", sqlite, report}
}

// findNsys locates nsys on PATH, or explains what is missing.
func findNsys() (string, error) {
	p, err := exec.LookPath("nsys")
	if err != nil {
		return "", fmt.Errorf("--nsys: nsys (Nsight Systems CLI) is not on PATH: install Nsight Systems or add its bin directory to PATH")
	}
	return p, nil
}
