//go:build unix

package ingest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

func mkfifo(t *testing.T, path string) string {
	t.Helper()
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return path
}

// A FIFO whose writer comes is read in full, once.
func TestFIFOWithWriter(t *testing.T) {
	path := mkfifo(t, filepath.Join(t.TempDir(), "spans.fifo"))
	data := spansJSONL(400, 0)
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write(data)
		w.Close()
	}()
	tr := mustOpen(t, ingest.OpenOptions{FIFOWait: 10 * time.Second}, path)
	if len(tr.Spans) != 400 {
		t.Errorf("%d spans from the FIFO, want 400\n%s", len(tr.Spans), warnings(tr))
	}
}

// A FIFO that nobody writes fails after the wait, naming the file, instead
// of blocking for ever.
func TestFIFOWithoutWriter(t *testing.T) {
	path := mkfifo(t, filepath.Join(t.TempDir(), "nobody.fifo"))
	done := make(chan error, 1)
	go func() {
		_, err := open(t, ingest.OpenOptions{FIFOWait: 200 * time.Millisecond}, path)
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), path+": named pipe (FIFO): no program opened it for writing within 200ms") {
			t.Errorf("error = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("opening a FIFO without a writer still blocks after 20 s")
	}
	// A cancelled context ends the wait too.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := ingest.Open(ctx, []string{path}, otlpOnly, ingest.OpenOptions{FIFOWait: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "interrupted") || time.Since(start) > 20*time.Second {
		t.Errorf("cancelled: %v after %s", err, time.Since(start))
	}
}

// Inside a directory a FIFO is not opened (it could block): it is skipped
// with a warning.
func TestFIFOInDirectory(t *testing.T) {
	dir := t.TempDir()
	fifo := mkfifo(t, filepath.Join(dir, "live.fifo"))
	write(t, filepath.Join(dir, "x.jsonl"), spansJSONL(2, 0))
	tr := mustOpen(t, ingest.OpenOptions{}, dir)
	if len(tr.Spans) != 2 || !hasWarning(tr, "skipped-file", fifo, "named pipe (FIFO)", "named on the command line") {
		t.Errorf("%d spans:\n%s", len(tr.Spans), warnings(tr))
	}
}

// A writer that opens the FIFO and then sends nothing holds the read, but
// cancelling the context (^C) ends it.
func TestFIFOSilentWriterCancelled(t *testing.T) {
	path := mkfifo(t, filepath.Join(t.TempDir(), "silent.fifo"))
	held := make(chan *os.File, 1)
	go func() {
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err == nil {
			held <- w
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(200 * time.Millisecond); cancel() }()
	done := make(chan error, 1)
	go func() {
		_, err := ingest.Open(ctx, []string{path}, otlpOnly, ingest.OpenOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), path) {
			t.Errorf("error = %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a cancelled read of a silent FIFO still blocks after 20 s")
	}
	select {
	case w := <-held:
		w.Close()
	default:
	}
}
