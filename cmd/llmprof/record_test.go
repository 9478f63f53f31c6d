package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/driver"
	"github.com/llmprof/llmprof/internal/otlpclient"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/record"
)

// runRecordMain runs llmprof in process with buffers for streams. (Its own
// helper, so the record tests do not lean on another command's.)
func runRecordMain(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(context.Background(), args, &IOStreams{In: &bytes.Buffer{}, Out: &out, ErrOut: &errOut})
	return out.String(), errOut.String(), code
}

func TestRecordFlags(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		check   func(t *testing.T, o record.Options)
		wantErr string
	}{
		{"defaults", []string{"--", "vllm", "serve", "m"}, func(t *testing.T, o record.Options) {
			if !regexp.MustCompile(`^run-\d{8}T\d{6}Z\.llmprof$`).MatchString(o.Dir) || o.GRPCAddr != "127.0.0.1:0" || o.HTTPAddr != "127.0.0.1:0" ||
				o.Protocol != "grpc" || o.NVML.DeviceInterval != 100*time.Millisecond || o.NVML.GPMInterval != 200*time.Millisecond ||
				o.StopTimeout != 30*time.Second || strings.Join(o.Command, " ") != "vllm serve m" {
				t.Errorf("%+v", o)
			}
		}, ""},
		{"the command's flags are its own", []string{"-o", "x.llmprof", "python", "serve.py", "--port", "8000", "-o", "y"}, func(t *testing.T, o record.Options) {
			if o.Dir != "x.llmprof" || strings.Join(o.Command, " ") != "python serve.py --port 8000 -o y" {
				t.Errorf("output %q command %q", o.Dir, o.Command)
			}
		}, ""},
		{"ports", []string{"--otlp-grpc", ":4317", "--otlp-http", "localhost:4318", "true"}, func(t *testing.T, o record.Options) {
			if o.GRPCAddr != "127.0.0.1:4317" || o.HTTPAddr != "localhost:4318" {
				t.Errorf("grpc %q http %q", o.GRPCAddr, o.HTTPAddr)
			}
		}, ""},
		{"listen on all interfaces when told", []string{"--listen", "0.0.0.0", "--otlp-grpc", ":4317", "true"}, func(t *testing.T, o record.Options) {
			if o.GRPCAddr != "0.0.0.0:4317" || o.HTTPAddr != "0.0.0.0:0" {
				t.Errorf("grpc %q http %q", o.GRPCAddr, o.HTTPAddr)
			}
		}, ""},
		{"listen host:port is the gRPC endpoint", []string{"--listen", "0.0.0.0:4317", "true"}, func(t *testing.T, o record.Options) {
			if o.GRPCAddr != "0.0.0.0:4317" || o.HTTPAddr != "0.0.0.0:0" {
				t.Errorf("grpc %q http %q", o.GRPCAddr, o.HTTPAddr)
			}
		}, ""},
		{"listen port and --otlp-grpc", []string{"--listen", "0.0.0.0:4317", "--otlp-grpc", ":5000", "true"}, nil, "give the port once"},
		{"listen host that does not resolve", []string{"--listen", "no_such host!", "true"}, nil, "--listen"},
		{"listen bad port", []string{"--listen", "0.0.0.0:99999", "true"}, nil, "port"},
		{"receiver bad port", []string{"--otlp-http", ":http", "true"}, nil, "port"},
		{"non-loopback refused", []string{"--otlp-grpc", "0.0.0.0:4317", "true"}, nil, "--listen 0.0.0.0"},
		{"bad protocol", []string{"--otlp-protocol", "thrift", "true"}, nil, "--otlp-protocol"},
		{"contradiction", []string{"--no-nvml", "--require-gpu", "true"}, nil, "contradict"},
		{"no command", []string{"-o", "x"}, nil, "record: missing <command>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got record.Options
			f := &Factory{IO: &IOStreams{Out: &bytes.Buffer{}, ErrOut: &bytes.Buffer{}, In: &bytes.Buffer{}}}
			cmd := newCmdRecord(f, func(_ context.Context, o record.Options) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
		})
	}
}

// A bad --listen is a usage error (exit 2) found before anything starts:
// no capture directory is created.
func TestRecordListenUsage(t *testing.T) {
	for _, listen := range []string{"no_such host!", "0.0.0.0:99999", "[::1"} {
		dir := filepath.Join(t.TempDir(), "run.llmprof")
		_, stderr, code := runRecordMain(t, "record", "--listen", listen, "-o", dir, "--no-nvml", "--", "true")
		if code != ExitUsage || !strings.Contains(stderr, "--listen") {
			t.Errorf("--listen %q: exit %d, want %d\n%s", listen, code, ExitUsage, stderr)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("--listen %q: the capture directory was created", listen)
		}
	}
	// 0.0.0.0 with a port works end to end (a free port, to be safe here).
	dir := filepath.Join(t.TempDir(), "run.llmprof")
	if _, stderr, code := runRecordMain(t, "record", "--listen", "0.0.0.0:0", "-o", dir, "--no-nvml", "--otlp-quiet", "10ms", "--", "true"); code != 0 {
		t.Fatalf("--listen 0.0.0.0:0: exit %d\n%s", code, stderr)
	} else if !strings.Contains(stderr, "grpc 127.0.0.1:") {
		t.Errorf("the child was not told IPv4 loopback:\n%s", stderr)
	}
}

func TestRecordExitStatus(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		command []string
		code    int
	}{
		{"success", []string{"true"}, 0},
		{"the child's status", []string{"sh", "-c", "exit 3"}, 3},
		{"killed by a signal", []string{"sh", "-c", "kill -TERM $$"}, 128 + 15},
		{"not found", []string{"/nonexistent/program"}, 127},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"record", "-o", filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")), "--no-nvml", "--otlp-quiet", "10ms", "--"}, tc.command...)
			_, stderr, code := runRecordMain(t, args...)
			if code != tc.code {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, tc.code, stderr)
			}
		})
	}
}

// record --nsys, end to end through the command's decoders: a fake nsys
// (on PATH) runs the command and "exports" a real Nsight Systems export;
// the capture then decodes into one trace with the capture's sources and
// the export's GPU ops.
func TestRecordNsysCaptureDecodes(t *testing.T) {
	export := shareddata.Path(t, "testdata/nsys/p4arth-cuda-perf-sandbox-report1-nsys2025.5.2.sqlite")
	bin := t.TempDir()
	script := `#!/bin/sh
case "$1" in
--version) echo "NVIDIA Nsight Systems version fake"; exit 0;;
profile)
  shift
  while [ $# -gt 0 ]; do
    case "$1" in --output) out="$2"; shift 2;; -*) shift;; *) break;; esac
  done
  touch "$out.nsys-rep"
  exec "$@";;
export)
  while [ $# -gt 0 ]; do
    case "$1" in --output) out="$2"; shift 2;; *) shift;; esac
  done
  cp "` + export + `" "$out";;
esac
`
	if err := os.WriteFile(filepath.Join(bin, "nsys"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	dir := filepath.Join(t.TempDir(), "run.llmprof")
	if _, stderr, code := runRecordMain(t, "record", "-o", dir, "--nsys", "--no-nvml", "--otlp-quiet", "10ms", "--", "true"); code != 0 {
		t.Fatalf("record --nsys: exit %d\n%s", code, stderr)
	}
	tr, err := ingest.Open(context.Background(), []string{dir}, driver.Decoders(), ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var formats []string
	for _, s := range tr.Sources {
		formats = append(formats, s.Format)
	}
	kernels := 0
	for _, op := range tr.GPUOps {
		if op.Kind == ingest.OpKernel && tr.Sources[op.Source].Format == "nsys-sqlite" {
			kernels++
		}
	}
	// The export holds one kernel (shared testdata README).
	if strings.Join(formats, ",") != record.SourceFormat+",nsys-sqlite" || kernels != 1 {
		t.Fatalf("sources %q, %d kernels from the embedded export", formats, kernels)
	}
}

// buildBinaries returns the llmprof to run and the OpenTelemetry SDK test
// client (internal/otlpclient): both this test binary, which runs llmprof's
// main when llmprofCommand sets asLLMProf in its environment and the client
// when asOTLPClient is set (TestMain), so that neither is linked again (4 s
// of CPU for llmprof, 1.2 s for the client's go build).
//
// LLMPROF_TEST_BINDIR, when set, names a directory that already holds both
// as programs (built from this tree: ./cmd/llmprof and
// ./internal/otlpclient/cmd/otlpclient), and those are run.
func buildBinaries(t *testing.T) (llmprof, client string) {
	t.Helper()
	if dir := os.Getenv("LLMPROF_TEST_BINDIR"); dir != "" {
		return filepath.Join(dir, "llmprof"), filepath.Join(dir, "otlpclient")
	}
	self, err := os.Executable()
	if err != nil {
		t.Skipf("no path to this test binary to run as llmprof: %v", err)
	}
	return self, self
}

// asLLMProf in a test binary's environment makes it llmprof, asOTLPClient
// the test client (TestMain).
const (
	asLLMProf    = "LLMPROF_TEST_RUN_MAIN=1"
	asOTLPClient = "LLMPROF_TEST_RUN_OTLPCLIENT=1"
)

// llmprofCommand runs llmprof (buildBinaries) with args.
func llmprofCommand(llmprof string, args ...string) *exec.Cmd {
	cmd := exec.Command(llmprof, args...)
	cmd.Env = append(os.Environ(), asLLMProf)
	return cmd
}

// TestMain runs llmprof's main instead of the tests when the environment
// holds asLLMProf, which it removes first so that record's child does not
// inherit it, and the test client when it holds asOTLPClient (record's
// child, which inherits it from record).
func TestMain(m *testing.M) {
	name, value, _ := strings.Cut(asLLMProf, "=")
	if os.Getenv(name) == value {
		os.Unsetenv(name)
		main()
	}
	name, value, _ = strings.Cut(asOTLPClient, "=")
	if os.Getenv(name) == value {
		os.Unsetenv(name)
		otlpclient.Main(os.Args[1:])
	}
	code := m.Run()
	if smallRun.dir != "" {
		os.RemoveAll(smallRun.dir) // smallDemo's run, shared by the tests
	}
	os.Exit(code)
}

// sentSpan mirrors internal/otlpclient's SentSpan.
type sentSpan struct {
	TraceID string            `json:"trace_id"`
	SpanID  string            `json:"span_id"`
	Parent  string            `json:"parent_span_id"`
	Name    string            `json:"name"`
	StartNs int64             `json:"start_ns"`
	EndNs   int64             `json:"end_ns"`
	Attrs   map[string]string `json:"attrs"`
}

func readSent(t *testing.T, path string) []sentSpan {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []sentSpan
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s sentSpan
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// capturedSpans reads every trace payload of a capture with the collector's
// own unmarshaler (independent of llmprof's decoder) and indexes the spans
// by span ID. It fails on a payload that does not unmarshal.
func capturedSpans(t *testing.T, dir string) (map[string]sentSpan, record.TableRead) {
	t.Helper()
	c, err := record.OpenCapture(dir)
	if err != nil {
		t.Fatal(err)
	}
	spans := map[string]sentSpan{}
	res, err := record.ReadTable(c, func(p *record.OTLPPayload) error {
		if p.Signal != record.SignalTraces {
			return nil
		}
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(p.Payload); err != nil {
			return fmt.Errorf("payload does not unmarshal: %w", err)
		}
		rss := req.Traces().ResourceSpans()
		for i := range rss.Len() {
			sss := rss.At(i).ScopeSpans()
			for j := range sss.Len() {
				ss := sss.At(j).Spans()
				for k := range ss.Len() {
					sp := ss.At(k)
					attrs := map[string]string{}
					sp.Attributes().Range(func(k string, v pcommon.Value) bool { attrs[k] = v.AsString(); return true })
					s := sentSpan{TraceID: sp.TraceID().String(), SpanID: sp.SpanID().String(), Name: sp.Name(),
						StartNs: int64(sp.StartTimestamp()), EndNs: int64(sp.EndTimestamp()), Attrs: attrs}
					if !sp.ParentSpanID().IsEmpty() {
						s.Parent = sp.ParentSpanID().String()
					}
					if _, dup := spans[s.SpanID]; dup {
						return fmt.Errorf("span %s captured twice", s.SpanID)
					}
					spans[s.SpanID] = s
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return spans, res
}

// checkAllSent asserts every sent span is in the capture, unchanged.
func checkAllSent(t *testing.T, sent []sentSpan, got map[string]sentSpan) {
	t.Helper()
	if len(sent) == 0 {
		t.Fatal("the client sent nothing")
	}
	bad := 0
	for _, s := range sent {
		g, ok := got[s.SpanID]
		if !ok {
			bad++
			if bad <= 3 {
				t.Errorf("span %s (%s) not in the capture", s.SpanID, s.Name)
			}
			continue
		}
		if g.TraceID != s.TraceID || g.Parent != s.Parent || g.Name != s.Name || g.StartNs != s.StartNs || g.EndNs != s.EndNs ||
			fmt.Sprint(g.Attrs) != fmt.Sprint(s.Attrs) {
			bad++
			if bad <= 3 {
				t.Errorf("span %s differs:\n sent %+v\n  got %+v", s.SpanID, s, g)
			}
		}
	}
	if bad > 0 || len(got) != len(sent) {
		t.Fatalf("%d of %d sent spans missing or changed; capture holds %d", bad, len(sent), len(got))
	}
}

// waitGrowth waits until the capture's OTLP table has at least n bytes: the
// recorder has received and flushed data (a readiness signal, not a sleep).
func waitGrowth(t *testing.T, dir string, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, err := os.Stat(filepath.Join(dir, record.TableFile(record.TableOTLP))); err == nil && st.Size() >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the capture's OTLP table never reached %d bytes", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitBatches waits until the capture's OTLP table holds at least n
// complete batches, read as a reader would (the stream is still being
// written: a cut last batch is expected and ignored).
func waitBatches(t *testing.T, dir string, n int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := record.OpenCapture(dir); err == nil {
			if res, err := record.ReadTable(c, func(*record.OTLPPayload) error { return nil }); err == nil && res.Batches >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the capture's OTLP table never held %d complete batches", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processGone reports whether pid has exited (gone, or a zombie nobody
// has reaped yet: in a container, pid 1 may never reap it).
func processGone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// childPid waits for the manifest that names the child (rewritten once the
// child has started).
func childPid(t *testing.T, dir string) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m, err := record.ReadManifest(dir); err == nil && m.Command.Pid > 0 {
			return m.Command.Pid
		}
		if time.Now().After(deadline) {
			t.Fatal("the manifest never named the child")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func exitCodeOf(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// TestRecordEndToEnd runs the real binary around a Go program that exports
// spans with the OpenTelemetry SDK, over gRPC and HTTP, under load, and
// stopped in each of the ways a recording can end.
func TestRecordEndToEnd(t *testing.T) {
	llmprof, client := buildBinaries(t)
	common := []string{"record", "--no-nvml", "--otlp-quiet", "50ms", "--flush-interval", "100ms", "--clock-interval", "200ms"}
	start := func(t *testing.T, dir string, extra []string, child ...string) (*exec.Cmd, *bytes.Buffer) {
		args := append(append(append([]string{}, common...), "-o", dir), extra...)
		cmd := llmprofCommand(llmprof, append(append(args, "--", client), child...)...)
		cmd.Env = append(cmd.Env, asOTLPClient)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}

	for _, proto := range []string{"grpc", "http/protobuf"} {
		t.Run("every span over "+proto, func(t *testing.T) {
			tmp := t.TempDir()
			dir, sent := filepath.Join(tmp, "run.llmprof"), filepath.Join(tmp, "sent.jsonl")
			cmd, out := start(t, dir, []string{"--otlp-protocol", proto}, "-spans", "600", "-sent", sent)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("record: %v\n%s", err, out)
			}
			got, res := capturedSpans(t, dir)
			checkAllSent(t, readSent(t, sent), got)
			m, _ := record.ReadManifest(dir)
			if res.Truncated || m.Status != record.StatusComplete || m.OTLP.Spans != 600 || m.NVML.Available {
				t.Fatalf("read %+v, manifest status %s otlp %+v", res, m.Status, m.OTLP)
			}
			// What analyze reads: the capture decodes into the model with
			// every span, and the report counts the 300 requests.
			tr, err := ingest.Open(context.Background(), []string{dir}, driver.Decoders(), ingest.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(tr.Spans) != 600 || tr.Sources[0].Format != record.SourceFormat {
				t.Fatalf("decoded %d spans from %+v", len(tr.Spans), tr.Sources)
			}
			stdout, stderr, code := runRecordMain(t, "analyze", "--format", "json", dir)
			if code != 0 {
				t.Fatalf("analyze: exit %d\n%s", code, stderr)
			}
			var rep struct {
				Requests struct {
					Count int `json:"count"`
				} `json:"requests"`
			}
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Requests.Count != 300 {
				t.Fatalf("analyze: %d requests (%v), want 300", rep.Requests.Count, err)
			}
		})
	}

	// 20k spans are more than twice the client's queue (8192, blocking:
	// internal/otlpclient), so the exporter backs up and record flushes
	// under load many times over; LLMPROF_LONG=1 sends the 100k of the
	// original test (3.4 s of CPU against 0.8 s).
	flood := 20_000
	if os.Getenv("LLMPROF_LONG") != "" {
		flood = 100_000
	}
	t.Run(fmt.Sprintf("%dk spans under load lose none", flood/1000), func(t *testing.T) {
		tmp := t.TempDir()
		dir, sent := filepath.Join(tmp, "run.llmprof"), filepath.Join(tmp, "sent.jsonl")
		cmd, out := start(t, dir, nil, "-spans", strconv.Itoa(flood), "-sent", sent)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("record: %v\n%s", err, out)
		}
		got, _ := capturedSpans(t, dir)
		checkAllSent(t, readSent(t, sent), got)
	})

	t.Run("SIGINT to record", func(t *testing.T) {
		tmp := t.TempDir()
		dir, sent := filepath.Join(tmp, "run.llmprof"), filepath.Join(tmp, "sent.jsonl")
		cmd, out := start(t, dir, nil, "-until-signal", "-sent", sent)
		waitGrowth(t, dir, 1)
		if err := cmd.Process.Signal(os.Interrupt); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("record: %v (the child exits 0 after flushing)\n%s", err, out)
		}
		m, _ := record.ReadManifest(dir)
		if m.Status != record.StatusInterrupted {
			t.Fatalf("status %q", m.Status)
		}
		// The child flushed everything on the forwarded SIGINT, and record
		// kept receiving until it had.
		got, res := capturedSpans(t, dir)
		if res.Truncated {
			t.Fatalf("table truncated: %+v", res)
		}
		checkAllSent(t, readSent(t, sent), got)
	})

	t.Run("the child killed", func(t *testing.T) {
		tmp := t.TempDir()
		dir := filepath.Join(tmp, "run.llmprof")
		cmd, out := start(t, dir, nil, "-until-signal")
		pid := childPid(t, dir)
		waitGrowth(t, dir, 1)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if code := exitCodeOf(cmd.Wait()); code != 137 {
			t.Fatalf("record exited %d, want the child's 137\n%s", code, out)
		}
		m, _ := record.ReadManifest(dir)
		got, res := capturedSpans(t, dir)
		if m.Status != record.StatusChildFailed || m.Command.Signal != "SIGKILL" || res.Truncated || int64(len(got)) != m.OTLP.Spans || len(got) == 0 {
			t.Fatalf("status %q signal %q, %d spans read (%+v), manifest counted %d", m.Status, m.Command.Signal, len(got), res, m.OTLP.Spans)
		}
	})

	t.Run("SIGKILL to record mid-write", func(t *testing.T) {
		tmp := t.TempDir()
		dir := filepath.Join(tmp, "run.llmprof")
		cmd, _ := start(t, dir, nil, "-until-signal", "-burst", "400")
		pid := childPid(t, dir)
		// Several batches are on disk and more are being written. (Wait
		// for what is asserted below — two complete batches — not a size:
		// under load one batch can exceed any size chosen.)
		waitBatches(t, dir, 2)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		// The orphaned child holds record's output pipe open: kill its
		// process group before waiting.
		syscall.Kill(-pid, syscall.SIGKILL)
		cmd.Wait()
		c, err := record.OpenCapture(dir)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Interrupted() {
			t.Fatalf("manifest status %q, want %q", c.Manifest.Status, record.StatusRecording)
		}
		got, res := capturedSpans(t, dir) // fails on any payload that does not unmarshal
		if len(got) == 0 || res.Batches < 2 {
			t.Fatalf("%d spans in %d batches survived", len(got), res.Batches)
		}
		tr, err := ingest.Open(context.Background(), []string{dir}, driver.Decoders(), ingest.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		interrupted := false
		for _, w := range tr.Warnings.List {
			interrupted = interrupted || w.Code == "capture-interrupted"
		}
		if len(tr.Spans) != len(got) || !interrupted {
			t.Fatalf("decoded %d spans (want %d), warnings %v", len(tr.Spans), len(got), tr.Warnings.List)
		}
		t.Logf("after SIGKILL: %d spans in %d complete batches, table truncated: %v", len(got), res.Batches, res.Truncated)
	})

	t.Run("the child dies with a SIGKILLed record", func(t *testing.T) {
		if _, err := os.Stat("/proc/self/stat"); err != nil {
			t.Skip("no /proc to watch the child")
		}
		dir := filepath.Join(t.TempDir(), "run.llmprof")
		cmd := llmprofCommand(llmprof, "record", "--no-nvml", "-o", dir, "--", "sleep", "100")
		cmd.WaitDelay = 10 * time.Second
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pid := childPid(t, dir)
		if processGone(pid) {
			t.Fatalf("the child %d is not running", pid)
		}
		cmd.Process.Kill()
		cmd.Wait()
		deadline := time.Now().Add(10 * time.Second)
		for !processGone(pid) {
			if time.Now().After(deadline) {
				syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("the child %d outlived its SIGKILLed recorder by 10 s", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})

	t.Run("a full disk", func(t *testing.T) {
		small := t.TempDir()
		// 2 MiB: the 1 MiB record keeps for the final manifest
		// (record/recorder.go, manifestReserveBytes) and about as much
		// again for ~25k spans before the disk is full.
		if err := syscall.Mount("tmpfs", small, "tmpfs", 0, "size=2m"); err != nil {
			t.Skipf("cannot mount a 2 MiB tmpfs to fill (%v); TestRecordWriteFailure in record covers this with an injected error", err)
		}
		t.Cleanup(func() { syscall.Unmount(small, syscall.MNT_DETACH) })
		dir := filepath.Join(small, "run.llmprof")
		cmd, out := start(t, dir, nil, "-until-signal", "-burst", "400")
		err := cmd.Wait()
		if code := exitCodeOf(err); code != ExitRecordFailed {
			t.Fatalf("record exited %d on a full disk, want %d\n%s", code, ExitRecordFailed, out)
		}
		m, err := record.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := capturedSpans(t, dir)
		if m.Status != record.StatusFailed || !strings.Contains(m.StatusDetail, "no space left on device") ||
			m.OTLP.Spans != int64(len(got)) || len(got) == 0 {
			t.Fatalf("manifest %s (%s): %d spans counted, %d in the table\n%s", m.Status, m.StatusDetail, m.OTLP.Spans, len(got), out)
		}
		if !strings.Contains(out.String(), fmt.Sprintf("%d spans in", len(got))) {
			t.Errorf("the final line does not give the stored count %d:\n%s", len(got), out)
		}
		t.Logf("full disk: %d spans stored, %d lost; %s", m.OTLP.Spans, m.OTLP.SpansLost, m.StatusDetail)
	})
}

// --torch-profiler's flags: the folder is optional, the server is detected
// or named, and profile flags without --torch-profiler are usage errors.
func TestRecordTorchProfilerFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr string
		wantDir string
	}{
		{args: []string{"--torch-profiler", "--", "vllm", "serve", "m"}, wantDir: ""},
		{args: []string{"--torch-profiler=/tmp/traces", "python", "-m", "sglang.launch_server"}, wantDir: "/tmp/traces"},
		{args: []string{"--torch-profiler", "--server", "vllm", "./my-server"}, wantDir: ""},
		{args: []string{"--torch-profiler", "./my-server"}, wantErr: "name the server with --server"},
		{args: []string{"--profile-at", "5s", "vllm", "serve", "m"}, wantErr: "--profile-at needs --torch-profiler"},
		{args: []string{"--torch-profiler", "--server", "tgi", "vllm"}, wantErr: `--server "tgi"`},
	} {
		var got *record.Options
		f := &Factory{IO: &IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard}}
		cmd := newCmdRecord(f, func(_ context.Context, o record.Options) error { got = &o; return nil })
		cmd.SetArgs(tc.args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.Execute()
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got == nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if tp := got.TorchProfiler; !tp.Enabled || tp.Dir != tc.wantDir {
			t.Errorf("%q: --torch-profiler %+v, want dir %q", tc.args, tp, tc.wantDir)
		}
	}
}
