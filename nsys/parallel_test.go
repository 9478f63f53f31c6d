package nsys

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
)

// withParallel runs fn with the parallel read's thresholds set (restored
// after): minRows 0 sends every table through it, math.MaxInt64 none. At
// least two cores are assumed, as on a machine with one there are no
// workers.
func withParallel(minRows, rangeRows int64, blockRows int, fn func()) {
	m, r, b := parMinRows, parRangeRows, parBlockRows
	procs := runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), 2))
	defer func() {
		parMinRows, parRangeRows, parBlockRows = m, r, b
		runtime.GOMAXPROCS(procs)
	}()
	parMinRows, parRangeRows, parBlockRows = minRows, rangeRows, blockRows
	fn()
}

// decodeBoth decodes path read on one connection and read in parallel in
// ranges of rangeRows rowids handed over blockRows at a time.
func decodeBoth(t *testing.T, path string, dec Decoder, rangeRows int64, blockRows int) (seq, par *ingest.Trace, seqErr, parErr error) {
	t.Helper()
	withParallel(math.MaxInt64, rangeRows, blockRows, func() { seq, seqErr = dec.DecodeFile(context.Background(), path) })
	withParallel(0, rangeRows, blockRows, func() { par, parErr = dec.DecodeFile(context.Background(), path) })
	return seq, par, seqErr, parErr
}

// sameTrace fails unless the two decodes are identical: every record, every
// interned string in the same order, every warning.
func sameTrace(t *testing.T, seq, par *ingest.Trace) {
	t.Helper()
	if reflect.DeepEqual(seq, par) {
		return
	}
	var a, b strings.Builder
	opts := ingest.DumpOptions{Sources: true, Warnings: true}
	if err := seq.Dump(&a, opts); err != nil {
		t.Fatal(err)
	}
	if err := par.Dump(&b, opts); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		al, bl := strings.Split(a.String(), "\n"), strings.Split(b.String(), "\n")
		for i := range min(len(al), len(bl)) {
			if al[i] != bl[i] {
				t.Fatalf("parallel read differs at dump line %d:\n one connection: %s\n parallel:       %s", i+1, al[i], bl[i])
			}
		}
		t.Fatalf("parallel read differs: %d dump lines, one connection %d", len(bl), len(al))
	}
	t.Fatalf("parallel read gives the same dump but a different model (interned strings or fields the dump leaves out)")
}

// The parallel read is an implementation detail: on every real export, read
// in ranges as small as 1 rowid and blocks as small as 1 row, the model is
// identical to the one read on one connection (read once for the three
// sizes: the sizes only apply to the parallel read).
func TestParallelReadRealFiles(t *testing.T) {
	for _, path := range realFiles(t) {
		for _, dec := range []Decoder{{}, {KernelName: KernelShort, Tables: Kernels | API}} {
			var seq *ingest.Trace
			var serr error
			withParallel(math.MaxInt64, 1, 1, func() { seq, serr = dec.DecodeFile(context.Background(), path) })
			if serr != nil {
				t.Fatalf("%s: %v", filepath.Base(path), serr)
			}
			for _, size := range []struct {
				rangeRows int64
				blockRows int
			}{{1, 1}, {7, 3}, {1000, 64}} {
				var par *ingest.Trace
				var perr error
				withParallel(0, size.rangeRows, size.blockRows, func() { par, perr = dec.DecodeFile(context.Background(), path) })
				if perr != nil {
					t.Fatalf("%s: %v", filepath.Base(path), perr)
				}
				sameTrace(t, seq, par)
			}
		}
	}
}

// Damaged and unusual tables read the same in parallel: NULLs, dangling
// names, out-of-range values (warnings at the same rows, in the same order),
// and a table out of time order, which is then sorted by SQLite as before.
func TestParallelReadBadInput(t *testing.T) {
	cases := map[string]string{
		"intact":          "",
		"no launch":       "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = 999 WHERE rowid = 1",
		"NULL start":      unconstrained("CUPTI_ACTIVITY_KIND_KERNEL") + "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = NULL WHERE rowid = 2",
		"NULL dims":       unconstrained("CUPTI_ACTIVITY_KIND_KERNEL") + "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = NULL, blockY = NULL WHERE rowid = 1",
		"NULL API name":   unconstrained("CUPTI_ACTIVITY_KIND_RUNTIME") + "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = NULL, \"end\" = NULL WHERE rowid = 3",
		"dangling name":   "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 99999 WHERE rowid = 1",
		"missing column":  "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN gridY",
		"text for an int": `UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 'seven', gridX = -4 WHERE rowid = 1`,
		"out of order":    `UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET start = start + 1000000000 WHERE rowid = 1`,
		"sparse rowids":   `UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET rowid = rowid * 1000003 + 9000000000000000000 WHERE rowid > 2`,
		"negative rowids": `UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET rowid = -9223372036854775807 - 1 WHERE rowid = 1`,
	}
	for name, sql := range cases {
		t.Run(name, func(t *testing.T) {
			path := damaged(t, sql)
			seq, par, serr, perr := decodeBoth(t, path, Decoder{}, 1, 1)
			if serr != nil || perr != nil {
				t.Fatalf("%v / %v", serr, perr)
			}
			sameTrace(t, seq, par)
		})
	}
}

// A 20,000-kernel export read with the default range and block sizes scaled
// down, so that several workers each read many ranges.
func TestParallelReadMany(t *testing.T) {
	path := benchFileCopy(t, 20_000)
	seq, par, serr, perr := decodeBoth(t, path, Decoder{}, 1000, 256)
	if serr != nil || perr != nil {
		t.Fatalf("%v / %v", serr, perr)
	}
	if len(par.GPUOps) != 20_000 {
		t.Fatalf("%d kernels, want 20000", len(par.GPUOps))
	}
	sameTrace(t, seq, par)
}

// A cancelled decode stops the workers and says so (the decoder looks at
// the context every 65,536 rows); no worker outlives the decode.
func TestParallelReadCancelled(t *testing.T) {
	path := benchFileCopy(t, 70_000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	withParallel(0, 100, 10, func() {
		before := runtime.NumGoroutine()
		if _, err := (Decoder{}).DecodeFile(ctx, path); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context canceled", err)
		}
		// A goroutine that has already been told to stop may still be
		// returning (seen under -race on a loaded machine): a leak is one
		// that is still there a second later.
		after := runtime.NumGoroutine()
		for deadline := time.Now().Add(time.Second); after > before && time.Now().Before(deadline); after = runtime.NumGoroutine() {
			time.Sleep(10 * time.Millisecond)
		}
		if after > before {
			t.Fatalf("%d goroutines after the decode, %d before", after, before)
		}
	})
}

func TestRanges(t *testing.T) {
	cases := []struct {
		name          string
		lo, hi, width int64
		limit         int
		want          int // number of ranges
	}{
		{"one row", 5, 5, 10, 4, 1},
		{"exact", 1, 100, 10, 100, 10},
		{"partial last", 1, 101, 10, 100, 11},
		{"capped", 1, 1_000_000, 10, 4, 4},
		{"every int64", math.MinInt64, math.MaxInt64, 1 << 14, 4096, 4096},
		{"top end", math.MaxInt64 - 10, math.MaxInt64, 3, 100, 4},
		{"bottom end", math.MinInt64, math.MinInt64 + 10, 3, 100, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ranges(c.lo, c.hi, c.width, c.limit)
			if len(got) != c.want || len(got) > c.limit {
				t.Fatalf("%d ranges, want %d (limit %d): %v", len(got), c.want, c.limit, got)
			}
			if got[0][0] != c.lo || got[len(got)-1][1] != c.hi {
				t.Fatalf("ranges %v do not span [%d, %d]", got, c.lo, c.hi)
			}
			for i, r := range got {
				if r[1] < r[0] || i > 0 && r[0] != got[i-1][1]+1 {
					t.Fatalf("range %d %v is empty or not next to %v", i, r, got[max(i-1, 0)])
				}
			}
		})
	}
}

// A worker that panics (a bug met on some input) does not crash the
// process: the decoder's goroutine panics with the same value when it
// reaches that range, where ingest.Open turns it into an error naming the
// file. (A nil statement makes the worker panic.)
func TestParallelReadPanicReachesTheDecoder(t *testing.T) {
	cols := []column{req("start")}
	p := &parRead{ncols: len(cols), order: make(chan *rowTask, 1), stop: make(chan struct{})}
	task := &rowTask{lo: 1, hi: 10, out: make(chan *rowBlock, 1)}
	p.order <- task
	close(p.order)
	p.wg.Go(func() { p.read(nil, nil, cols, task) })
	defer p.close()
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(fmt.Sprint(r), "nil pointer") {
			t.Fatalf("the decoder's goroutine recovered %v, want the worker's nil-pointer panic", r)
		}
	}()
	var r row
	p.step(&r)
	t.Fatal("step returned")
}
