package progress

import (
	"bytes"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestLine(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	m := &Meter{now: func() time.Time { return now }}
	m.stage, m.stageStart = StageReading, t0
	m.files, m.total = 4, 400e6
	m.doneFiles, m.done = 1, 100e6
	now = t0.Add(2 * time.Second)
	if got, want := m.line(), "reading 1/4 files, 100 MB of 400 MB, 50 MB/s, ETA 6s  2s"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	m.stage, m.stageStart = "aligning clocks", now
	now = now.Add(1500 * time.Millisecond)
	if got, want := m.line(), "aligning clocks  1.5s"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}

// TestSilentOffTerminal: a meter for a stream that is not a terminal is nil
// and every method is a no-op.
func TestSilentOffTerminal(t *testing.T) {
	var buf bytes.Buffer
	m := New(&buf, false)
	m.Stage(StageReading)
	m.Inputs(3, 100)
	m.FileDone(10)
	m.Close()
	if buf.Len() != 0 {
		t.Errorf("wrote %q off a terminal", buf.String())
	}
}

func TestDrawsAndClears(t *testing.T) {
	var buf bytes.Buffer
	m := New(&buf, true)
	m.Stage(StageReading)
	m.Inputs(2, 2000)
	m.FileDone(1000)
	m.Close()
	out := buf.String()
	if !strings.Contains(out, "reading 1/2 files, 1.0 kB of 2.0 kB") || !strings.HasSuffix(out, "\r\033[K") {
		t.Errorf("output %q", out)
	}
}

// TestLineMemoryAndBytes: every line ends with the memory now and at its
// peak (the most seen when the system keeps none); a stage that counts
// bytes shows them with their rate.
func TestLineMemoryAndBytes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(2 * time.Second)
	cur, peak := uint64(300e6), uint64(0)
	m := &Meter{now: func() time.Time { return now }, memory: func() (uint64, uint64) { return cur, peak }}
	m.stage, m.stageStart, m.stageBytes = "restoring inputs", t0, 80e6
	if got, want := m.line(), "restoring inputs 80 MB, 40 MB/s  2s  mem 300 MB, peak 300 MB"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	cur = 100e6
	if got, want := m.line(), "restoring inputs 80 MB, 40 MB/s  2s  mem 100 MB, peak 300 MB"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	peak = 900e6
	if got, want := m.line(), "restoring inputs 80 MB, 40 MB/s  2s  mem 100 MB, peak 900 MB"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	m.limit = 12e9 // under a memory limit (--memory-limit), the peak is set against it
	if got, want := m.line(), "restoring inputs 80 MB, 40 MB/s  2s  mem 100 MB, peak 900 MB of 12 GB limit"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
}

// TestNewReadsTheLimit: a meter made under the runtime's memory limit shows
// it; without one, nothing.
func TestNewReadsTheLimit(t *testing.T) {
	old := debug.SetMemoryLimit(5e9)
	defer debug.SetMemoryLimit(old)
	m := New(io.Discard, true)
	m.Close()
	if m.limit != 5e9 {
		t.Errorf("limit %d under a 5 GB memory limit", m.limit)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	m = New(io.Discard, true)
	m.Close()
	if m.limit != 0 {
		t.Errorf("limit %d with none set", m.limit)
	}
}

func TestProcStatus(t *testing.T) {
	st := procStatus([]byte("Name:\tllmprof\nVmHWM:\t  2048 kB\nVmRSS:\t  1024 kB\nRssAnon:\t 512 kB\nRssFile:\t 384 kB\nRssShmem:\t 128 kB\nThreads: 9\n"))
	if st != (status{rss: 1 << 20, hwm: 2 << 20, file: 384 << 10, shmem: 128 << 10}) {
		t.Errorf("read %+v", st)
	}
	if cur, _ := Resident(); cur == 0 {
		t.Error("Resident: 0 bytes")
	}
}
