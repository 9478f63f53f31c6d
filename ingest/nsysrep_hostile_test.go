//go:build linux

package ingest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

// scriptNsys puts an nsys on PATH that runs body (a shell script).
func scriptNsys(t *testing.T, body string) string {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "nsys"), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":/bin:/usr/bin")
	return bin
}

// A hung nsys (whose child holds the output pipe) is killed, children and
// all, within seconds of the cancel that SIGINT or SIGTERM causes.
func TestNsysReportHungIsKilled(t *testing.T) {
	bin := scriptNsys(t, "sleep 300 &\necho $! > \"$(dirname \"$0\")/child.pid\"\nsleep 300\n")
	t.Setenv("TMPDIR", t.TempDir())
	rep := write(t, filepath.Join(t.TempDir(), "report1.nsys-rep"), nsysRep)
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel once nsys's child runs (its pid is written): a fixed delay
	// could cancel before a loaded machine had started the script at all.
	cancelled := make(chan time.Time, 1)
	go func() {
		defer func() { cancelled <- time.Now(); cancel() }()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(bin, "child.pid")); err == nil && strings.HasSuffix(string(b), "\n") {
				return
			}
		}
	}()
	_, err := ingest.Open(ctx, []string{rep}, withNsys, ingest.OpenOptions{})
	if err == nil {
		t.Fatal("no error from a cancelled conversion")
	}
	if d := time.Since(<-cancelled); d > 6*time.Second {
		t.Errorf("returned %s after the cancel", d)
	}
	b, err := os.ReadFile(filepath.Join(bin, "child.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	deadline := time.Now().Add(3 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if syscall.Kill(pid, 0) == nil {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("nsys's child %d still runs after the cancel", pid)
	}
	if left, _ := filepath.Glob(filepath.Join(os.Getenv("TMPDIR"), "llmprof-nsys-*")); len(left) > 0 {
		t.Errorf("temporary folders left: %v", left)
	}
}

// nsys's output is kept to its tail: 20 MB of it give an error of a few
// hundred bytes that still quotes the last line.
func TestNsysReportOutputCapped(t *testing.T) {
	scriptNsys(t, "head -c 20000000 /dev/zero | tr '\\0' 'x' >&2\necho >&2\necho 'the last line' >&2\nexit 1\n")
	rep := write(t, filepath.Join(t.TempDir(), "report1.nsys-rep"), nsysRep)
	_, err := ingest.Open(context.Background(), []string{rep}, withNsys, ingest.OpenOptions{})
	if err == nil || !strings.Contains(err.Error(), "the last line") || len(err.Error()) > 2000 {
		t.Fatalf("error of %d bytes: %.300v", len(err.Error()), err)
	}
}

// A report named like an option reaches nsys as a file.
func TestNsysReportDashName(t *testing.T) {
	bin := scriptNsys(t, "for a in \"$@\"; do echo \"$a\"; done > \"$(dirname \"$0\")/args\"\nexit 1\n")
	dir := t.TempDir()
	write(t, filepath.Join(dir, "-x.nsys-rep"), nsysRep)
	t.Chdir(dir)
	ingest.Open(context.Background(), []string{"-x.nsys-rep"}, withNsys, ingest.OpenOptions{})
	b, err := os.ReadFile(filepath.Join(bin, "args"))
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Split(strings.TrimSpace(string(b)), "\n")
	if last := args[len(args)-1]; last != "./-x.nsys-rep" {
		t.Errorf("nsys got %q as the report", last)
	}
}

// A folder left by a killed llmprof (its owner pid no longer runs) is
// removed by the next conversion; one of a live process stays.
func TestNsysReportStaleFolders(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Skip(err)
	}
	stale, live := filepath.Join(tmp, "llmprof-nsys-stale"), filepath.Join(tmp, "llmprof-nsys-live")
	for dir, pid := range map[string]int{stale: dead.Process.Pid, live: os.Getppid()} {
		os.Mkdir(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "llmprof.pid"), []byte(strconv.Itoa(pid)), 0o644)
		os.WriteFile(filepath.Join(dir, "report.sqlite"), []byte("half"), 0o644)
	}
	scriptNsys(t, "exit 1\n")
	rep := write(t, filepath.Join(t.TempDir(), "report1.nsys-rep"), nsysRep)
	ingest.Open(context.Background(), []string{rep}, withNsys, ingest.OpenOptions{})
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale folder stays (%v)", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("the live process's folder was removed: %v", err)
	}
}
