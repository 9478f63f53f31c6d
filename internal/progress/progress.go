// Package progress draws a one-line progress display on a terminal's stderr
// while llmprof reads and analyses large inputs: the stage, bytes read and
// their rate, an estimate of the time left, and the process's memory, now
// and at its peak. It draws nothing when the stream is not a terminal (a
// pipe, a file, CI), so logs stay clean.
package progress

import (
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/dustin/go-humanize"
)

// Meter is one command's progress line. A nil *Meter, and one made for a
// stream that is not a terminal, do nothing.
type Meter struct {
	w     io.Writer
	now   func() time.Time
	every time.Duration

	mu         sync.Mutex
	stage      string
	stageStart time.Time
	files      int
	doneFiles  int
	total      int64 // bytes, 0 when unknown
	done       int64
	stageBytes int64 // bytes of a stage other than reading (Bytes)
	drawn      bool
	// memory reads the resident memory now and at its peak (Resident;
	// tests substitute); peak is the most seen, where the system keeps no
	// peak of its own.
	memory func() (cur, peak uint64)
	peak   uint64
	// limit is the runtime's memory limit when one is set (--memory-limit,
	// GOMEMLIMIT), shown after the peak; 0: none.
	limit uint64
	stop  chan struct{}
	wg    sync.WaitGroup
}

// New returns a meter drawing on w when enabled (stderr is a terminal),
// redrawing every 200 ms; nil otherwise.
func New(w io.Writer, enabled bool) *Meter {
	if !enabled {
		return nil
	}
	m := &Meter{w: w, now: time.Now, every: 200 * time.Millisecond, stop: make(chan struct{}), memory: Resident}
	if l := debug.SetMemoryLimit(-1); l > 0 && l < math.MaxInt64 {
		m.limit = uint64(l)
	}
	m.wg.Add(1)
	go m.loop()
	return m
}

func (m *Meter) loop() {
	defer m.wg.Done()
	t := time.NewTicker(m.every)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.mu.Lock()
			m.draw()
			m.mu.Unlock()
		}
	}
}

// Stage starts a named stage ("reading", "aligning clocks", …).
func (m *Meter) Stage(name string) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stage, m.stageStart, m.stageBytes = name, m.now(), 0
	m.draw()
}

// Bytes records the bytes the current stage has processed so far, shown
// with their rate.
func (m *Meter) Bytes(n int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.stageBytes = n
}

// Inputs sets how many files and bytes the reading stage has in all.
func (m *Meter) Inputs(files int, bytes int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files, m.total = files, bytes
}

// FileDone records one more input read, of the given size.
func (m *Meter) FileDone(bytes int64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.doneFiles++
	m.done += bytes
	m.draw()
}

// Close stops the meter and clears its line.
func (m *Meter) Close() {
	if m == nil {
		return
	}
	close(m.stop)
	m.wg.Wait()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.drawn {
		fmt.Fprint(m.w, "\r\033[K")
		m.drawn = false
	}
}

func (m *Meter) draw() {
	if m.stage == "" {
		return
	}
	fmt.Fprint(m.w, "\r\033[K"+m.line())
	m.drawn = true
}

// line formats the progress line: "reading 2/7 files, 120 MB of 367 MB,
// 40 MB/s, ETA 6s  3s  mem 310 MB, peak 420 MB of 12 GB limit" while reading, "aligning
// clocks  1.2s  mem …" after, "restoring inputs 80 MB, 95 MB/s  …" for a
// stage that counts Bytes.
func (m *Meter) line() string {
	elapsed := m.now().Sub(m.stageStart)
	var b strings.Builder
	b.WriteString(m.stage)
	if m.stage != StageReading && m.stageBytes > 0 {
		fmt.Fprintf(&b, " %s", humanize.Bytes(uint64(m.stageBytes)))
		if secs := elapsed.Seconds(); secs > 0 {
			fmt.Fprintf(&b, ", %s/s", humanize.Bytes(uint64(float64(m.stageBytes)/secs)))
		}
	}
	if m.stage == StageReading && m.files > 0 {
		fmt.Fprintf(&b, " %d/%d files", m.doneFiles, m.files)
		if m.total > 0 {
			fmt.Fprintf(&b, ", %s of %s", humanize.Bytes(uint64(m.done)), humanize.Bytes(uint64(m.total)))
			if secs := elapsed.Seconds(); m.done > 0 && secs > 0 {
				rate := float64(m.done) / secs
				fmt.Fprintf(&b, ", %s/s", humanize.Bytes(uint64(rate)))
				if left := m.total - m.done; left > 0 {
					fmt.Fprintf(&b, ", ETA %s", (time.Duration(float64(left) / rate * 1e9)).Round(time.Second))
				}
			}
		}
	}
	fmt.Fprintf(&b, "  %s", elapsed.Round(100*time.Millisecond))
	if m.memory != nil {
		cur, peak := m.memory()
		m.peak = max(m.peak, cur, peak)
		if cur > 0 {
			fmt.Fprintf(&b, "  mem %s, peak %s", humanize.Bytes(cur), humanize.Bytes(m.peak))
			if m.limit > 0 {
				fmt.Fprintf(&b, " of %s limit", humanize.Bytes(m.limit))
			}
		}
	}
	return b.String()
}

// StageReading is the stage whose line shows files, bytes, rate and ETA.
const StageReading = "reading"
