package progress

import (
	"bytes"
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
