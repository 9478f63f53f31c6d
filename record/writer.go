package record

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Batching: a table's open batch is written out when it reaches batchRows
// rows or batchBytes of strings and payloads, or flushInterval after its
// first row, whichever comes first. A recorder killed mid-run loses at most
// that open batch (plus rows still queued), and every written batch is
// readable (an Arrow IPC stream needs no footer).
const (
	defaultBatchRows     = 4096
	defaultBatchBytes    = 8 << 20
	defaultFlushInterval = time.Second
	defaultQueueLen      = 256
)

// errTableClosed is returned by Send after Close.
var errTableClosed = errors.New("capture table closed")

// FileInfo describes one table file in the manifest.
type FileInfo struct {
	Path    string `json:"path"`
	Table   string `json:"table"`
	Rows    int64  `json:"rows"`
	Batches int64  `json:"batches"`
	Bytes   int64  `json:"bytes"`
	SHA256  string `json:"sha256,omitempty"`
	// Dropped counts rows a sampler could not queue because the writer was
	// behind (samplers never block; the OTLP receiver always waits).
	Dropped int64  `json:"dropped,omitempty"`
	Error   string `json:"error,omitempty"`
}

// tableWriter owns one table file: producers hand it rows over a bounded
// channel, and its goroutine batches them into the Arrow stream. One
// goroutine per file keeps the Arrow writer single-threaded and lets a slow
// disk hold back only the producers of that table.
type tableWriter[R any] struct {
	ts    *tableSchema
	file  string
	f     *os.File
	hash  hash.Hash
	count countingWriter
	w     *ipc.Writer
	b     *array.RecordBuilder

	batchRows, batchBytes int
	flushInterval         time.Duration

	mu     sync.RWMutex // guards closed against sends racing Close
	closed bool
	ch     chan R
	done   chan struct{}

	rows, batches, dropped atomic.Int64
	err                    error // the first write error; read after done
	failed                 atomic.Pointer[error]
}

type writerConfig struct {
	captureID     string
	batchRows     int
	batchBytes    int
	flushInterval time.Duration
	queueLen      int
}

func (c writerConfig) withDefaults() writerConfig {
	if c.batchRows <= 0 {
		c.batchRows = defaultBatchRows
	}
	if c.batchBytes <= 0 {
		c.batchBytes = defaultBatchBytes
	}
	if c.flushInterval <= 0 {
		c.flushInterval = defaultFlushInterval
	}
	if c.queueLen <= 0 {
		c.queueLen = defaultQueueLen
	}
	return c
}

// newTableWriter creates dir/<table>.arrows and starts its goroutine.
func newTableWriter[R any](dir string, ts *tableSchema, cfg writerConfig) (*tableWriter[R], error) {
	if ts.typ != reflect.TypeFor[R]() {
		panic(fmt.Sprintf("record: table %s holds %s, not %s", ts.name, ts.typ, reflect.TypeFor[R]()))
	}
	cfg = cfg.withDefaults()
	file := TableFile(ts.name)
	f, err := os.OpenFile(filepath.Join(dir, file), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	tw := &tableWriter[R]{
		ts: ts, file: file, f: f, hash: sha256.New(),
		batchRows: cfg.batchRows, batchBytes: cfg.batchBytes, flushInterval: cfg.flushInterval,
		ch: make(chan R, cfg.queueLen), done: make(chan struct{}),
	}
	tw.count.w = io.MultiWriter(f, tw.hash)
	schema := ts.withMetadata(cfg.captureID)
	tw.w = ipc.NewWriter(&tw.count, ipc.WithSchema(schema), ipc.WithZstd(), ipc.WithAllocator(memory.DefaultAllocator))
	tw.b = array.NewRecordBuilder(memory.DefaultAllocator, schema)
	go tw.run()
	return tw, nil
}

// Send queues a row, waiting while the queue is full: back-pressure for
// producers that must not lose data (the OTLP receiver, events).
func (tw *tableWriter[R]) Send(ctx context.Context, r R) error {
	tw.mu.RLock()
	defer tw.mu.RUnlock()
	if tw.closed {
		return errTableClosed
	}
	if err := tw.failed.Load(); err != nil {
		// Refuse rather than accept what cannot be stored: an OTLP client
		// hears it and can retry or report.
		return *err
	}
	select {
	case tw.ch <- r:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TrySend queues a row if there is room and otherwise counts it as dropped:
// a sampler must keep its cadence rather than wait for the disk.
func (tw *tableWriter[R]) TrySend(r R) bool {
	tw.mu.RLock()
	defer tw.mu.RUnlock()
	if !tw.closed {
		select {
		case tw.ch <- r:
			return true
		default:
		}
	}
	tw.dropped.Add(1)
	return false
}

// Close flushes the open batch, ends the stream, syncs the file and returns
// its manifest entry. Sends after Close fail.
func (tw *tableWriter[R]) Close() FileInfo {
	tw.mu.Lock()
	if !tw.closed {
		tw.closed = true
		close(tw.ch)
	}
	tw.mu.Unlock()
	<-tw.done
	info := FileInfo{
		Path: tw.file, Table: tw.ts.name,
		Rows: tw.rows.Load(), Batches: tw.batches.Load(), Bytes: tw.count.n,
		SHA256: hex.EncodeToString(tw.hash.Sum(nil)), Dropped: tw.dropped.Load(),
	}
	if tw.err != nil {
		info.Error = tw.err.Error()
	}
	return info
}

// Stats reports rows and batches written so far (for progress and the
// manifest written while recording).
func (tw *tableWriter[R]) Stats() FileInfo {
	return FileInfo{Path: tw.file, Table: tw.ts.name, Rows: tw.rows.Load(), Batches: tw.batches.Load(), Dropped: tw.dropped.Load()}
}

func (tw *tableWriter[R]) run() {
	defer close(tw.done)
	timer := time.NewTimer(tw.flushInterval)
	timer.Stop()
	pending, pendingBytes := 0, 0
	flush := func() {
		if pending == 0 {
			return
		}
		rec := tw.b.NewRecordBatch()
		if tw.err == nil {
			if err := tw.w.Write(rec); err != nil {
				tw.err = fmt.Errorf("%s: %w", tw.file, err)
				tw.failed.Store(&tw.err)
			} else {
				tw.rows.Add(int64(pending))
				tw.batches.Add(1)
			}
		}
		rec.Release()
		pending, pendingBytes = 0, 0
		timer.Stop()
	}
	for {
		select {
		case r, ok := <-tw.ch:
			if !ok {
				flush()
				tw.finish()
				return
			}
			if pending == 0 {
				timer.Reset(tw.flushInterval)
			}
			pendingBytes += tw.ts.appendRow(tw.b, reflect.ValueOf(&r).Elem())
			pending++
			if pending >= tw.batchRows || pendingBytes >= tw.batchBytes {
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}

func (tw *tableWriter[R]) finish() {
	tw.b.Release()
	if err := tw.w.Close(); err != nil && tw.err == nil {
		tw.err = fmt.Errorf("%s: %w", tw.file, err)
	}
	if err := tw.f.Sync(); err != nil && tw.err == nil {
		tw.err = fmt.Errorf("%s: %w", tw.file, err)
	}
	if err := tw.f.Close(); err != nil && tw.err == nil {
		tw.err = fmt.Errorf("%s: %w", tw.file, err)
	}
}

// countingWriter counts the bytes that reach the file.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
