package record

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"

	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// Capture is a capture directory opened for reading.
type Capture struct {
	Dir      string
	Manifest *Manifest
}

// OpenCapture reads dir's manifest. The tables are read on demand with
// ReadTable.
func OpenCapture(dir string) (*Capture, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &Capture{Dir: dir, Manifest: m}, nil
}

// statedSize is the size a finished capture's manifest gives for file: the
// most a reader takes from it. A capture still being recorded (or killed)
// states none; its files are read up to their size when opened.
func (c *Capture) statedSize(file string) (int64, bool) {
	if c.Manifest == nil || c.Interrupted() {
		return 0, false
	}
	for _, f := range c.Manifest.Files {
		if f.Path == file && f.SHA256 != "" {
			return f.Bytes, true
		}
	}
	return 0, false
}

// Interrupted reports whether the recorder never finished the capture: its
// manifest still says "recording". Every complete batch is still readable.
func (c *Capture) Interrupted() bool { return c.Manifest.Status == StatusRecording }

// TableRead says how much of a table file was read.
type TableRead struct {
	Path    string
	Present bool
	Rows    int
	Batches int
	// Truncated is set when the stream ended before its end-of-stream
	// marker: a recorder killed mid-write. Every complete batch was read;
	// Err says where reading stopped.
	Truncated bool
	Err       error
}

// ReadTable calls fn for every row of the capture's table of row type R
// (OTLPPayload, ClockPair, Event, DeviceSample, BufferedSample,
// ProcessSample, GPMSample), in file order. An absent table reads as
// zero rows (Present false). A stream cut short is not an error: the rows of
// every complete batch are delivered and the result says Truncated. The
// error is for a file that cannot be opened, a stream that is not a table of
// this type, or an error returned by fn.
func ReadTable[R any](c *Capture, fn func(*R) error) (TableRead, error) {
	ts := schemaForType(reflect.TypeFor[R]())
	if ts == nil {
		return TableRead{}, fmt.Errorf("record: %s is not a capture table row type", reflect.TypeFor[R]())
	}
	file := TableFile(ts.name)
	path := filepath.Join(c.Dir, file)
	f, err := openInCapture(c.Dir, file)
	if errors.Is(err, os.ErrNotExist) {
		return TableRead{Path: path}, nil
	}
	if err != nil {
		return TableRead{Path: path}, err
	}
	defer f.Close()
	size := f.size
	if n, ok := c.statedSize(file); ok {
		f.limitTo(n)
		size = min(size, max(n, 0))
	}
	res := TableRead{Path: path, Present: true}
	err = readStream(f, size, ts, func(row reflect.Value) error {
		return fn(row.Addr().Interface().(*R))
	}, &res)
	return res, err
}

func schemaForType(t reflect.Type) *tableSchema {
	for _, ts := range allTableSchemas {
		if ts.typ == t {
			return ts
		}
	}
	return nil
}

// errCallback wraps an error returned by the caller's row function, so that
// it is told apart from a broken stream.
type errCallback struct{ err error }

func (e errCallback) Error() string { return e.err.Error() }

var arrowContinuation = []byte{0xff, 0xff, 0xff, 0xff}

// readStream reads an Arrow IPC stream of table ts. A file that ends early
// (no batches, or a partial one) marks res Truncated; so does a corrupt
// batch, which the Arrow reader may even panic on — the input is untrusted,
// so that is recovered and reported, never passed on.
//
// size is the stream's length in bytes (-1 if unknown), which sets the
// table's allocation budget (tableReadLimits).
func readStream(r io.Reader, size int64, ts *tableSchema, fn func(row reflect.Value) error, res *TableRead) error {
	return readStreamAlloc(r, newBoundedAllocator(defaultTableReadLimits, size), ts, fn, res)
}

// readStreamAlloc is readStream with arrow's allocations through alloc.
func readStreamAlloc(r io.Reader, alloc *boundedAllocator, ts *tableSchema, fn func(row reflect.Value) error, res *TableRead) (err error) {
	defer func() {
		if p := recover(); p != nil {
			res.Truncated = true
			res.Err = fmt.Errorf("corrupt batch after %d rows: %v", res.Rows, p)
			err = nil
		}
		var cb errCallback
		if errors.As(err, &cb) {
			err = cb.err
		}
	}()
	br := bufio.NewReader(r)
	if head, _ := br.Peek(4); len(head) > 0 && !bytes.HasPrefix(arrowContinuation, head) {
		// Every message of a stream written since Arrow 0.15 starts with
		// the continuation marker; anything else is not a capture table.
		return fmt.Errorf("%s: not an Arrow IPC stream (starts with % x)", filepath.Base(res.Path), head)
	}
	cs := newCheckedStream(br)
	rd, err := ipc.NewReader(cs, ipc.WithAllocator(alloc))
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			// Killed before its first batch reached the disk, or the
			// schema message is damaged.
			res.Truncated = true
			res.Err = fmt.Errorf("no complete schema: %w", cmp.Or(cs.err, err))
			return nil
		}
		return fmt.Errorf("%s: not an Arrow IPC stream: %w", filepath.Base(res.Path), err)
	}
	defer rd.Release()
	if name, ok := rd.Schema().Metadata().GetValue("llmprof.table"); ok && name != ts.name {
		return fmt.Errorf("%s: holds table %q, not %q", filepath.Base(res.Path), name, ts.name)
	}
	rr, err := ts.reader(rd.Schema())
	if err != nil {
		return fmt.Errorf("%s: %w", filepath.Base(res.Path), err)
	}
	row := reflect.New(ts.typ).Elem()
	for rd.Next() {
		rec := rd.RecordBatch()
		res.Batches++
		for i := range int(rec.NumRows()) {
			rr.read(rec, i, row)
			if err := fn(row); err != nil {
				return errCallback{err}
			}
			res.Rows++
		}
	}
	switch {
	case rd.Err() != nil:
		res.Truncated, res.Err = true, rd.Err()
	case cs.err != nil:
		res.Truncated, res.Err = true, cs.err
	}
	return nil
}
