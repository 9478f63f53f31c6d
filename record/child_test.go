package record

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestExpandArgs(t *testing.T) {
	ep := endpoints{grpc: "127.0.0.1:4317", http: "127.0.0.1:4318"}
	for _, tc := range []struct {
		name string
		in   []string
		want []string
	}{
		{"bare placeholders", []string{"{otlp_grpc}", "{otlp_http}"}, []string{"127.0.0.1:4317", "127.0.0.1:4318"}},
		{"urls", []string{"{otlp_grpc_url}", "{otlp_http_url}"}, []string{"http://127.0.0.1:4317", "http://127.0.0.1:4318/v1/traces"}},
		{"inside a flag", []string{"vllm", "serve", "--otlp-traces-endpoint={otlp_grpc_url}"},
			[]string{"vllm", "serve", "--otlp-traces-endpoint=http://127.0.0.1:4317"}},
		{"twice in one argument", []string{"{otlp_grpc},{otlp_http}"}, []string{"127.0.0.1:4317,127.0.0.1:4318"}},
		{"nothing to replace", []string{"echo", "{otlp}", "{OTLP_GRPC}"}, []string{"echo", "{otlp}", "{OTLP_GRPC}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := expandArgs(tc.in, ep); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// The child is told an address that reaches the receiver: for a wildcard
// bind, IPv4 loopback (a socket bound to 0.0.0.0 is IPv4 only, so [::1]
// would not reach it).
func TestDialable(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:5":  "127.0.0.1:5",
		"10.1.2.3:5":   "10.1.2.3:5",
		"not-an-addr":  "not-an-addr",
		"[::1]:4318":   "[::1]:4318",
		"localhost:80": "localhost:80",
	} {
		if got := dialable(in); got != want {
			t.Errorf("dialable(%q) = %q, want %q", in, got, want)
		}
	}
	for _, host := range []string{"0.0.0.0", "::"} {
		ln, err := net.Listen(listenNetwork(host), net.JoinHostPort(host, "0"))
		if err != nil {
			t.Logf("%s: %v (no such family here)", host, err)
			continue
		}
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		got := dialable(ln.Addr().String())
		ln.Close()
		if got != "127.0.0.1:"+port {
			t.Errorf("bound %s, the child is told %s", ln.Addr(), got)
		}
	}
	ln, _ := net.Listen(listenNetwork("0.0.0.0"), "0.0.0.0:0")
	defer ln.Close()
	if !strings.HasPrefix(ln.Addr().String(), "0.0.0.0:") {
		t.Errorf("0.0.0.0 bound as %s, not IPv4 only", ln.Addr())
	}
}

func TestOtelEnv(t *testing.T) {
	ep := endpoints{grpc: "127.0.0.1:1", http: "127.0.0.1:2"}
	g := otelEnv(ep, ProtocolGRPC)
	if g["OTEL_EXPORTER_OTLP_ENDPOINT"] != "http://127.0.0.1:1" || g["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] != "http://127.0.0.1:1" ||
		g["OTEL_EXPORTER_OTLP_PROTOCOL"] != "grpc" || g["OTEL_TRACES_EXPORTER"] != "otlp" || g["OTEL_EXPORTER_OTLP_INSECURE"] != "true" {
		t.Errorf("grpc env %v", g)
	}
	h := otelEnv(ep, ProtocolHTTPProtobuf)
	// The generic endpoint is a base URL (the SDK appends /v1/traces); the
	// per-signal one is used as is.
	if h["OTEL_EXPORTER_OTLP_ENDPOINT"] != "http://127.0.0.1:2" || h["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] != "http://127.0.0.1:2/v1/traces" ||
		h["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] != "http/protobuf" {
		t.Errorf("http env %v", h)
	}
}

func TestBuildEnv(t *testing.T) {
	spec := envSpec{
		otel:    map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://us", "OTEL_TRACES_EXPORTER": "otlp"},
		always:  map[string]string{"LLMPROF_CAPTURE_DIR": "/cap"},
		ifUnset: map[string]string{"OTEL_BSP_SCHEDULE_DELAY": "500"},
	}
	base := []string{"PATH=/bin", "OTEL_EXPORTER_OTLP_ENDPOINT=http://collector:4317", "OTEL_BSP_SCHEDULE_DELAY=100", "MALFORMED"}
	lookup := func(env []string, k string) (string, bool) {
		for _, kv := range env {
			if key, v, _ := strings.Cut(kv, "="); key == k {
				return v, true
			}
		}
		return "", false
	}
	t.Run("override", func(t *testing.T) {
		env, added, kept := buildEnv(base, spec)
		if v, _ := lookup(env, "OTEL_EXPORTER_OTLP_ENDPOINT"); v != "http://us" {
			t.Errorf("endpoint %q, want ours", v)
		}
		if v, _ := lookup(env, "OTEL_BSP_SCHEDULE_DELAY"); v != "100" {
			t.Errorf("the user's BSP delay was overridden: %q", v)
		}
		if v, _ := lookup(env, "PATH"); v != "/bin" {
			t.Errorf("PATH lost: %q", v)
		}
		if _, ok := added["OTEL_BSP_SCHEDULE_DELAY"]; ok || added["LLMPROF_CAPTURE_DIR"] != "/cap" || len(kept) != 0 {
			t.Errorf("added %v kept %v", added, kept)
		}
		n := 0
		for _, kv := range env {
			if strings.HasPrefix(kv, "OTEL_EXPORTER_OTLP_ENDPOINT=") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("endpoint set %d times", n)
		}
	})
	t.Run("keep the user's OTEL settings", func(t *testing.T) {
		spec := spec
		spec.keepOTEL = true
		env, added, kept := buildEnv(base, spec)
		if v, _ := lookup(env, "OTEL_EXPORTER_OTLP_ENDPOINT"); v != "http://collector:4317" {
			t.Errorf("endpoint %q, want the user's", v)
		}
		if !slices.Equal(kept, []string{"OTEL_EXPORTER_OTLP_ENDPOINT"}) || added["OTEL_TRACES_EXPORTER"] != "otlp" {
			t.Errorf("added %v kept %v", added, kept)
		}
	})
}

func TestListenAddr(t *testing.T) {
	for _, tc := range []struct {
		name, listen, addr, want string
		wantErr                  bool
	}{
		{"default free port", "", "", "127.0.0.1:0", false},
		{"port only", "127.0.0.1", ":4317", "127.0.0.1:4317", false},
		{"explicit loopback", "127.0.0.1", "127.0.0.1:4317", "127.0.0.1:4317", false},
		{"ipv6 loopback", "127.0.0.1", "[::1]:4317", "[::1]:4317", false},
		{"localhost", "127.0.0.1", "localhost:4317", "localhost:4317", false},
		{"wildcard refused", "127.0.0.1", "0.0.0.0:4317", "", true},
		{"remote host refused", "127.0.0.1", "10.0.0.5:4317", "", true},
		{"wildcard said with --listen", "0.0.0.0", ":4317", "0.0.0.0:4317", false},
		{"same host as --listen", "0.0.0.0", "0.0.0.0:4317", "0.0.0.0:4317", false},
		{"other host than --listen", "0.0.0.0", "10.0.0.5:4317", "", true},
		{"garbage", "127.0.0.1", "4317", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ListenAddr(tc.listen, tc.addr)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ListenAddr(%q, %q) = %q, %v; want %q, error %v", tc.listen, tc.addr, got, err, tc.want, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "4317") {
				t.Errorf("error does not name the address: %v", err)
			}
		})
	}
}

func TestStatPPID(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int
		ok   bool
	}{
		{"123 (sh) S 45 123 123 0 -1", 45, true},
		{"123 (my (odd) name) R 7 1 1", 7, true},
		{"123 (x y z) S 1", 1, true},
		{"garbage", 0, false},
		{"1 (init)", 0, false},
	} {
		got, ok := statPPID([]byte(tc.stat))
		if got != tc.want || ok != tc.ok {
			t.Errorf("statPPID(%q) = %d, %v", tc.stat, got, ok)
		}
	}
	if d := descendants(os.Getpid()); !d[uint32(os.Getpid())] {
		t.Error("descendants does not include the root")
	}
}

func TestNsysArgs(t *testing.T) {
	got := nsysProfileArgs("/opt/nsys", "/cap/nsys/report", []string{"--gpu-metrics-devices=0"}, []string{"vllm", "serve", "m"})
	want := []string{"/opt/nsys", "profile", "--output", "/cap/nsys/report", "--force-overwrite=true",
		"--trace=cuda,nvtx,osrt", "--trace-fork-before-exec=true", "--cuda-graph-trace=node",
		"--gpu-metrics-devices=0", "vllm", "serve", "m"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %q", got)
	}
}

func TestParseListen(t *testing.T) {
	for _, tc := range []struct {
		in, host, port, err string
	}{
		{"", "127.0.0.1", "", ""},
		{"0.0.0.0", "0.0.0.0", "", ""},
		{"0.0.0.0:4317", "0.0.0.0", "4317", ""},
		{"127.0.0.1:0", "127.0.0.1", "0", ""},
		{"localhost", "localhost", "", ""},
		{"[::1]", "::1", "", ""},
		{"::", "::", "", ""},
		{"0.0.0.0:", "", "", "port"},
		{"0.0.0.0:99999", "", "", "port"},
		{"0.0.0.0:http", "", "", "port"},
		{":4317", "", "", "no host"},
		{"no_such host!", "", "", "does not resolve"},
		{"192.0.2.1", "", "", "cannot listen"}, // TEST-NET-1: no machine has it
	} {
		t.Run(tc.in, func(t *testing.T) {
			if tc.in == "192.0.2.1" && nonlocalBindAllowed() {
				t.Skip("this machine binds any address (net.ipv4.ip_nonlocal_bind)")
			}
			host, port, err := ParseListen(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseListen(%q) = %q, %q, %v; want an error about %s", tc.in, host, port, err, tc.err)
				}
				return
			}
			if err != nil && strings.Contains(tc.in, ":") && strings.Contains(err.Error(), "cannot listen") {
				t.Skipf("no IPv6 here: %v", err)
			}
			if err != nil || host != tc.host || port != tc.port {
				t.Fatalf("ParseListen(%q) = %q, %q, %v", tc.in, host, port, err)
			}
		})
	}
}

// nonlocalBindAllowed reports whether an address no machine has can be
// bound here anyway.
func nonlocalBindAllowed() bool {
	ln, err := net.Listen("tcp4", "192.0.2.1:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// TestHelperRecorder is the recorder process TestRecordKilledTakesGrandchildren
// kills; it runs only when that test starts it.
func TestHelperRecorder(t *testing.T) {
	dir := os.Getenv("LLMPROF_TEST_RECORDER_DIR")
	if dir == "" {
		t.Skip("run by TestRecordKilledTakesGrandchildren")
	}
	rt := newRecordTest(t, "sh", "-c", fmt.Sprintf(`sleep 300 & echo $! > %s/grandchild.tmp; mv %s/grandchild.tmp %s/grandchild; wait`, dir, dir, dir))
	rt.opts.Dir = filepath.Join(dir, "run.llmprof")
	rt.run(t)
}

// A recorder killed by SIGKILL takes its child's children with it: a shell
// child that started a sleeping background job leaves nothing running.
func TestRecordKilledTakesGrandchildren(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the group guard")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestHelperRecorder$", "-test.count=1")
	// The recorder's own temporary directories go under dir: killed, it
	// cannot remove them, and this test's cleanup removes dir.
	cmd.Env = append(os.Environ(), "LLMPROF_TEST_RECORDER_DIR="+dir, "TMPDIR="+dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFile(t, filepath.Join(dir, "grandchild"))
	b, err := os.ReadFile(filepath.Join(dir, "grandchild"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("grandchild pid %q: %v", b, err)
	}
	if !running(pid) {
		t.Fatalf("the grandchild %d is not running before the recorder is killed", pid)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	start := time.Now()
	for running(pid) {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the grandchild %d still runs %v after the recorder's SIGKILL; recorder output:\n%s", pid, time.Since(start), out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the grandchild was gone %v after the recorder's SIGKILL", time.Since(start).Round(time.Millisecond))
}

// running says whether pid is a live process (not a zombie waiting to be
// reaped by an init that may never do it).
func running(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && len(s) > i+2 && s[i+2] != 'Z' && s[i+2] != 'X'
}

// The child is born into its guard's process group, the guard leading it:
// a guard that joined the child's group after the child started left the
// child's first processes unguarded until it did, and a SIGKILL of record
// in that window left them running.
func TestChildBornIntoTheGuardsGroup(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh for the group guard")
	}
	c, err := startChild(childConfig{argv: []string{"sleep", "30"}, env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = c.signal(syscall.SIGKILL)
		_ = syscall.Kill(c.pid, syscall.SIGKILL) // also where the group is not the guard's
		<-c.done
		c.releaseGuard()
	}()
	if c.guardProc == nil {
		t.Fatal("no guard, though /bin/sh is here")
	}
	guard := c.guardProc.Process.Pid
	pgrp := func(pid int) int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			t.Skipf("no /proc here: %v", err)
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		g, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatalf("/proc/%d/stat: %q", pid, s)
		}
		return g
	}
	if got := pgrp(guard); got != guard {
		t.Errorf("the guard %d is in group %d, want its own", guard, got)
	}
	if got := pgrp(c.pid); got != guard {
		t.Errorf("the child %d is in group %d, want its guard's (%d)", c.pid, got, guard)
	}
	if c.pgid != guard {
		t.Errorf("signals go to group %d, want the guard's %d", c.pgid, guard)
	}
}
