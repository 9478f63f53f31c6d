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

// errNotStored is wrapped by Send's error after the table failed to write:
// the row would be lost, so it is refused.
var errNotStored = errors.New("the capture cannot store it")

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

	// weigh, when set, gives a row's weight (an OTLP payload's spans);
	// stored sums the weights of the rows in batches that reached the file.
	weigh  func(*R) int64
	stored atomic.Int64
	// onFail hears the first write error, once.
	onFail func(error)
}

type writerConfig struct {
	captureID     string
	batchRows     int
	batchBytes    int
	flushInterval time.Duration
	queueLen      int
	// onFail is told the first write error of the table (the recording
	// then ends: a capture that cannot be stored is not quietly continued).
	onFail func(table string, err error)
	// wrap, a test seam, stands between the Arrow writer and the file.
	wrap func(table string, w io.Writer) io.Writer
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
	var out io.Writer = f
	if cfg.wrap != nil {
		out = cfg.wrap(ts.name, f)
	}
	if cfg.onFail != nil {
		tw.onFail = func(err error) { cfg.onFail(ts.name, err) }
	}
	tw.count.w, tw.count.h = out, tw.hash
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
		// hears it and reports it.
		return fmt.Errorf("%w: %w", errNotStored, *err)
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
	var pendingWeight int64
	flush := func() {
		if pending == 0 {
			return
		}
		rec := tw.b.NewRecordBatch()
		if tw.err == nil {
			if err := tw.w.Write(rec); err != nil {
				tw.fail(err)
			} else {
				tw.rows.Add(int64(pending))
				tw.batches.Add(1)
				tw.stored.Add(pendingWeight)
			}
		}
		rec.Release()
		pending, pendingBytes, pendingWeight = 0, 0, 0
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
			if tw.err != nil {
				releaseRow(&r)
				continue // nothing more reaches the file; Send already refuses
			}
			pendingBytes += tw.ts.appendRow(tw.b, reflect.ValueOf(&r).Elem())
			releaseRow(&r) // its bytes are in the builder now
			pending++
			if tw.weigh != nil {
				pendingWeight += tw.weigh(&r)
			}
			if pending >= tw.batchRows || pendingBytes >= tw.batchBytes {
				flush()
			}
		case <-timer.C:
			flush()
		}
	}
}

// fail records the table's first write error: later rows are refused
// (Send) or discarded, and onFail hears of it.
func (tw *tableWriter[R]) fail(err error) {
	if tw.err != nil {
		return
	}
	tw.err = fmt.Errorf("%s: %w", tw.file, err)
	tw.failed.Store(&tw.err)
	if tw.onFail != nil {
		tw.onFail(tw.err)
	}
}

func (tw *tableWriter[R]) finish() {
	tw.b.Release()
	if tw.err == nil {
		if err := tw.w.Close(); err != nil {
			tw.fail(err)
		}
	}
	if err := tw.f.Sync(); err != nil {
		tw.fail(err)
	}
	if err := tw.f.Close(); err != nil {
		tw.fail(err)
	}
}

// Stored is the sum of the weights of the rows that reached the file.
func (tw *tableWriter[R]) Stored() int64 { return tw.stored.Load() }

// Err is the table's first write error, if any, so far.
func (tw *tableWriter[R]) Err() error {
	if p := tw.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// releaseRow returns a row's memory to whoever charged it (an OTLP payload
// to the receiver's budget): queued rows stay charged until this point.
func releaseRow[R any](r *R) {
	if rel, ok := any(r).(interface{ releaseBody() }); ok {
		rel.releaseBody()
	}
}

// countingWriter counts and hashes the bytes that reach the file — after a
// short write too, so the manifest describes the file as it is.
type countingWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}
