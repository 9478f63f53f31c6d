package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the recorder's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// noGPU stands in for openNVML on a machine without a driver, so tests do
// not depend on the host.
func noGPU(NVMLOptions) (gpuSampler, error) {
	return nil, fmt.Errorf("%w: nvml init: ERROR_LIBRARY_NOT_FOUND (test)", ErrNVMLUnavailable)
}

type recordTest struct {
	opts    Options
	log     *syncBuffer
	signals chan os.Signal
}

func newRecordTest(t *testing.T, command ...string) *recordTest {
	t.Helper()
	rt := &recordTest{log: &syncBuffer{}, signals: make(chan os.Signal, 4)}
	rt.opts = Options{
		Command: command, Dir: filepath.Join(t.TempDir(), "run.llmprof"),
		OTLPQuiet: 10 * time.Millisecond, Tail: 10 * time.Millisecond, FlushInterval: 50 * time.Millisecond,
		Stdout: rt.log, Stderr: rt.log, Log: rt.log, Signals: rt.signals, Version: "test",
		newSampler: noGPU,
	}
	return rt
}

func (rt *recordTest) run(t *testing.T) *Result {
	t.Helper()
	res, err := Record(context.Background(), rt.opts)
	if err != nil {
		t.Fatalf("Record: %v\nlog:\n%s", err, rt.log)
	}
	return res
}

// waitFile waits for a file the child writes when it is ready: a readiness
// signal instead of a fixed sleep.
func waitFile(t *testing.T, path string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkFinal asserts what every finished capture has: a final manifest with
// the status, readable tables matching the manifest's counts and
// checksums, and the clock pairs of the lifecycle.
func checkFinal(t *testing.T, res *Result, wantStatus string) *Capture {
	t.Helper()
	c, err := OpenCapture(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	m := c.Manifest
	if m.Status != wantStatus || res.Status != wantStatus {
		t.Fatalf("status %q (result %q), want %q: %s", m.Status, res.Status, wantStatus, m.StatusDetail)
	}
	if c.Interrupted() {
		t.Fatal("a finished capture reads as interrupted")
	}
	for _, f := range m.Files {
		if f.Error != "" {
			t.Errorf("%s: %s", f.Path, f.Error)
		}
		if f.SHA256 == "" {
			t.Errorf("%s: no checksum", f.Path)
		}
		if err := verifyChecksum(res.Dir, f); err != nil {
			t.Error(err)
		}
	}
	var labels []string
	cr, err := ReadTable(c, func(p *ClockPair) error {
		labels = append(labels, p.Label)
		if p.RealHiNs < p.RealLoNs || p.Uncertainty() > int64(time.Millisecond) {
			t.Errorf("clock pair %+v: bracket inverted or wider than 1 ms", p)
		}
		return nil
	})
	if err != nil || cr.Truncated {
		t.Fatalf("clock table: %+v %v", cr, err)
	}
	if got := strings.Join(labels, ","); !strings.HasPrefix(got, "start,child_start") || !strings.HasSuffix(got, "child_exit,end") {
		t.Errorf("clock pairs %s", got)
	}
	return c
}

func events(t *testing.T, c *Capture) []Event {
	t.Helper()
	var out []Event
	if _, err := ReadTable(c, func(e *Event) error { out = append(out, *e); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func findEvent(evs []Event, kind string) *Event {
	for i := range evs {
		if evs[i].Kind == kind {
			return &evs[i]
		}
	}
	return nil
}

func TestRecordExitCode(t *testing.T) {
	rt := newRecordTest(t, "sh", "-c", "echo endpoint=$OTEL_EXPORTER_OTLP_ENDPOINT; sleep 0.2; exit 3")
	res := rt.run(t)
	if res.ExitCode != 3 {
		t.Fatalf("exit code %d, want 3", res.ExitCode)
	}
	c := checkFinal(t, res, StatusChildFailed)
	m := c.Manifest
	if m.Command.ExitCode == nil || *m.Command.ExitCode != 3 || m.Command.Pid == 0 {
		t.Errorf("command %+v", m.Command)
	}
	if !strings.Contains(rt.log.String(), "endpoint=http://"+m.OTLP.GRPCAddr) {
		t.Errorf("child did not see the receiver's endpoint; log:\n%s", rt.log)
	}
	evs := events(t, c)
	if e := findEvent(evs, "child_exit"); e == nil || e.Code == nil || *e.Code != 3 {
		t.Errorf("child_exit event %+v", e)
	}
	// Without a GPU: no NVML tables, the manifest says why, and the user is
	// told once.
	if m.NVML.Available || !strings.Contains(m.NVML.Reason, "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("nvml %+v", m.NVML)
	}
	for _, table := range []string{TableGPUDevice, TableGPUBuffered, TableGPUProcess, TableGPUGPM} {
		if _, err := os.Stat(filepath.Join(res.Dir, TableFile(table))); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists without a GPU", table)
		}
	}
	if n := strings.Count(rt.log.String(), "no GPU telemetry"); n != 1 {
		t.Errorf("said %d times that there is no GPU telemetry", n)
	}
	if findEvent(evs, "nvml_unavailable") == nil {
		t.Error("no nvml_unavailable event")
	}
}

func TestRecordStops(t *testing.T) {
	ready := func(t *testing.T) string { return filepath.Join(t.TempDir(), "ready") }
	t.Run("SIGINT is forwarded and the child exits on its own", func(t *testing.T) {
		if signal.Ignored(syscall.SIGINT) {
			// Inherited (a background job of a script): the child cannot
			// trap it either.
			t.Skip("SIGINT is ignored in this test process, so the child cannot receive it")
		}
		rdy := ready(t)
		got := filepath.Join(filepath.Dir(rdy), "got")
		rt := newRecordTest(t, "sh", "-c", fmt.Sprintf(`trap 'echo INT > %s; exit 0' INT; touch %s; while :; do sleep 0.01; done`, got, rdy))
		go func() { waitFile(t, rdy); rt.signals <- syscall.SIGINT }()
		res := rt.run(t)
		if b, err := os.ReadFile(got); err != nil || strings.TrimSpace(string(b)) != "INT" {
			t.Fatalf("the child did not get SIGINT: %q %v", b, err)
		}
		c := checkFinal(t, res, StatusInterrupted)
		if res.ExitCode != 0 {
			t.Errorf("exit code %d, want the child's 0", res.ExitCode)
		}
		if e := findEvent(events(t, c), "stop"); e == nil || *e.Code != int64(syscall.SIGINT) {
			t.Errorf("stop event %+v", e)
		}
	})
	t.Run("a second signal kills", func(t *testing.T) {
		rdy := ready(t)
		rt := newRecordTest(t, "sh", "-c", fmt.Sprintf(`trap '' INT TERM; touch %s; while :; do sleep 0.01; done`, rdy))
		go func() {
			waitFile(t, rdy)
			rt.signals <- syscall.SIGTERM
			rt.signals <- syscall.SIGINT
		}()
		res := rt.run(t)
		checkFinal(t, res, StatusInterrupted)
		if res.ExitCode != 128+int(syscall.SIGKILL) || res.Manifest.Command.Signal != "SIGKILL" {
			t.Errorf("exit %d signal %q, want 137 SIGKILL", res.ExitCode, res.Manifest.Command.Signal)
		}
	})
	t.Run("stop timeout kills", func(t *testing.T) {
		rdy := ready(t)
		rt := newRecordTest(t, "sh", "-c", fmt.Sprintf(`trap '' TERM; touch %s; while :; do sleep 0.01; done`, rdy))
		rt.opts.StopTimeout = 100 * time.Millisecond
		go func() { waitFile(t, rdy); rt.signals <- syscall.SIGTERM }()
		res := rt.run(t)
		checkFinal(t, res, StatusInterrupted)
		if res.ExitCode != 137 {
			t.Errorf("exit %d, want 137", res.ExitCode)
		}
	})
	t.Run("duration", func(t *testing.T) {
		// sleep itself, not `sh -c "sleep 30"`: dash catches SIGINT while it
		// starts up and, if the signal lands before it forks sleep, waits
		// for a sleep that never got it.
		rt := newRecordTest(t, "sleep", "30")
		rt.opts.Duration = 100 * time.Millisecond
		start := time.Now()
		res := rt.run(t)
		if el := time.Since(start); el > 10*time.Second {
			t.Fatalf("took %v", el)
		}
		checkFinal(t, res, StatusComplete)
		if !strings.Contains(res.Manifest.StatusDetail, "--duration") {
			t.Errorf("detail %q", res.Manifest.StatusDetail)
		}
	})
	t.Run("child killed from outside", func(t *testing.T) {
		rt := newRecordTest(t, "sh", "-c", "kill -9 $$")
		res := rt.run(t)
		checkFinal(t, res, StatusChildFailed)
		if res.ExitCode != 137 || res.Manifest.Command.Signal != "SIGKILL" {
			t.Errorf("exit %d signal %q", res.ExitCode, res.Manifest.Command.Signal)
		}
	})
	t.Run("context cancelled", func(t *testing.T) {
		rt := newRecordTest(t, "sleep", "30")
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		res, err := Record(ctx, rt.opts)
		if err != nil {
			t.Fatal(err)
		}
		checkFinal(t, res, StatusInterrupted)
	})
}

func TestRecordFailures(t *testing.T) {
	t.Run("command not found", func(t *testing.T) {
		rt := newRecordTest(t, "/nonexistent/llmprof-test-command")
		res, err := Record(context.Background(), rt.opts)
		var se *StartError
		if !errors.As(err, &se) || se.Code != 127 || res == nil {
			t.Fatalf("err = %v (%T), want StartError 127", err, err)
		}
		m, err := ReadManifest(rt.opts.Dir)
		if err != nil || m.Status != StatusFailed || !strings.Contains(m.StatusDetail, "nonexistent") {
			t.Fatalf("manifest %+v %v", m, err)
		}
	})
	t.Run("require GPU without one", func(t *testing.T) {
		rt := newRecordTest(t, "true")
		rt.opts.NVML.Require = true
		_, err := Record(context.Background(), rt.opts)
		if !errors.Is(err, ErrNVMLUnavailable) {
			t.Fatalf("err = %v", err)
		}
		if m, _ := ReadManifest(rt.opts.Dir); m == nil || m.Status != StatusFailed {
			t.Fatalf("manifest %+v", m)
		}
	})
	t.Run("existing capture is not overwritten", func(t *testing.T) {
		rt := newRecordTest(t, "true")
		os.MkdirAll(rt.opts.Dir, 0o755)
		os.WriteFile(filepath.Join(rt.opts.Dir, ManifestFile), []byte("{}"), 0o644)
		if _, err := Record(context.Background(), rt.opts); err == nil || !strings.Contains(err.Error(), "not empty") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("nsys missing", func(t *testing.T) {
		rt := newRecordTest(t, "true")
		rt.opts.Nsys = true
		t.Setenv("PATH", t.TempDir())
		if _, err := Record(context.Background(), rt.opts); err == nil || !strings.Contains(err.Error(), "nsys") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("port in use", func(t *testing.T) {
		first := newRecordTest(t, "true")
		r, err := startReceiver("127.0.0.1:0", "127.0.0.1:0", (&sinkRecorder{}).sink)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Stop(context.Background())
		first.opts.GRPCAddr = r.GRPCAddr()
		_, err = Record(context.Background(), first.opts)
		if err == nil || !strings.Contains(err.Error(), "OTLP gRPC receiver") {
			t.Fatalf("err = %v", err)
		}
	})
}

// --nsys with a fake nsys on PATH that logs its arguments, writes the
// report, runs the command, and "exports" an SQLite file.
func TestRecordNsys(t *testing.T) {
	bin := t.TempDir()
	logFile := filepath.Join(bin, "nsys.log")
	script := `#!/bin/sh
echo "$@" >> ` + logFile + `
case "$1" in
--version) echo "NVIDIA Nsight Systems version 2025.1.1.110-fake"; exit 0;;
profile)
  shift
  while [ $# -gt 0 ]; do
    case "$1" in
      --output) out="$2"; shift 2;;
      -*) shift;;
      *) break;;
    esac
  done
  touch "$out.nsys-rep"
  exec "$@";;
export)
  while [ $# -gt 0 ]; do
    case "$1" in
      --output) out="$2"; shift 2;;
      *) shift;;
    esac
  done
  printf 'SQLite format 3\000' > "$out"; exit 0;;
esac
exit 2
`
	if err := os.WriteFile(filepath.Join(bin, "nsys"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	rt := newRecordTest(t, "sh", "-c", "echo method=$VLLM_WORKER_MULTIPROC_METHOD; exit 0")
	rt.opts.Nsys = true
	rt.opts.NsysArgs = []string{"--gpu-metrics-devices=0"}
	res := rt.run(t)
	checkFinal(t, res, StatusComplete)
	calls, _ := os.ReadFile(logFile)
	if !strings.Contains(string(calls), "profile --output "+filepath.Join(res.Dir, "nsys", "report")) ||
		!strings.Contains(string(calls), "--trace-fork-before-exec=true --cuda-graph-trace=node --gpu-metrics-devices=0 sh -c") ||
		!strings.Contains(string(calls), "export --type sqlite") {
		t.Fatalf("nsys calls:\n%s", calls)
	}
	ns := res.Manifest.External.Nsys
	if ns == nil || ns.SQLite != "nsys/report.sqlite" || ns.Report != "nsys/report.nsys-rep" || !strings.Contains(ns.Version, "2025.1.1") || ns.Error != "" {
		t.Fatalf("manifest nsys %+v", ns)
	}
	if b, _ := os.ReadFile(filepath.Join(res.Dir, ns.SQLite)); !bytes.HasPrefix(b, []byte("SQLite format 3")) {
		t.Fatal("no SQLite export in the capture")
	}
	if !strings.Contains(rt.log.String(), "method=spawn") {
		t.Errorf("VLLM_WORKER_MULTIPROC_METHOD not set under nsys; log:\n%s", rt.log)
	}
}
