package nsys

import (
	"runtime"
	"sync"

	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// Reading a big table is almost all SQLite's own work (stepping the B-tree
// and decoding records), which one connection does on one core. A table
// stored in time order is therefore read by several connections at once,
// each scanning consecutive rowid ranges; the decoder's goroutine receives
// the rows range by range, in rowid order, and converts them exactly as it
// converts rows read on its own connection: same order, same warnings, same
// interned strings. Memory stays flat: a worker reads its whole range
// ahead, in blocks of parBlockRows rows, but ranges are handed out only as
// far as one per worker past the range the decoder is on, so at most one
// range more than there are workers is in flight.

// Tuning of the parallel read. Variables, so that tests can run small
// tables through it.
var (
	// parMinRows: tables whose rowids span fewer rows are read on the
	// decoder's connection (the workers' start-up is not worth it).
	parMinRows int64 = 1 << 17
	// parRangeRows is the rowid span of a range (at most parMaxRanges
	// ranges: a sparse table gets wider ones).
	parRangeRows int64 = 1 << 13
	// parBlockRows is how many rows a worker hands over at once.
	parBlockRows = 1 << 10
)

const parMaxRanges = 1 << 12

// parWorkers is how many connections read at once: one per core the Go
// runtime may use, at most 4; 0 (no parallel read) on a single core.
func parWorkers() int {
	n := min(runtime.GOMAXPROCS(0), 4)
	if n < 2 {
		return 0
	}
	return n
}

// rowidSpan returns the least and greatest rowid of table; ok is false for
// an empty table or on any error. Each is its own query: SQLite answers a
// lone min(rowid) or max(rowid) with one B-tree descent, but both in one
// SELECT with a scan of the table.
func (d *decoder) rowidSpan(table string) (lo, hi int64, ok bool) {
	lo, ok = d.rowidBound("min", table)
	if !ok {
		return 0, 0, false
	}
	hi, ok = d.rowidBound("max", table)
	return lo, hi, ok
}

func (d *decoder) rowidBound(fn, table string) (int64, bool) {
	st, err := d.conn.Prepare("SELECT " + fn + "(rowid) FROM " + quoteIdent(table))
	if err != nil {
		return 0, false
	}
	defer st.Close()
	if ok, err := st.Step(); !ok || err != nil {
		return 0, false
	}
	return st.Int64OK(0)
}

// ranges splits [lo, hi] into consecutive ranges of about width rowids, at
// most limit of them.
func ranges(lo, hi, width int64, limit int) [][2]int64 {
	span := uint64(hi) - uint64(lo) + 1 // hi ≥ lo; the span of every int64 wraps to 0
	w := uint64(width)
	switch {
	case span == 0:
		w = ^uint64(0)/uint64(limit) + 1
	case (span-1)/w+1 > uint64(limit):
		w = (span-1)/uint64(limit) + 1
	}
	var out [][2]int64
	for start := lo; ; {
		end := hi
		if uint64(hi)-uint64(start) >= w {
			end = int64(uint64(start) + w - 1)
		}
		out = append(out, [2]int64{start, end})
		if end == hi {
			return out
		}
		start = end + 1
	}
}

// parallelOK reports whether table is worth reading in parallel, and its
// rowid span.
func (d *decoder) parallelOK(table string) (lo, hi int64, ok bool) {
	if d.damaged || d.path == "" || parWorkers() == 0 {
		return 0, 0, false
	}
	lo, hi, ok = d.rowidSpan(table)
	if !ok || uint64(hi)-uint64(lo) < uint64(parMinRows) {
		return 0, 0, false
	}
	return lo, hi, true
}

// inTimeOrderParallel is inTimeOrder with the time column of each of
// parWorkers() parts of the table scanned on its own connection. ok is
// false when the table is not worth it; ordered is then meaningless.
func (d *decoder) inTimeOrderParallel(table, where, timeCol string) (ordered, ok bool) {
	lo, hi, ok := d.parallelOK(table)
	if !ok {
		return false, false
	}
	n := parWorkers()
	parts := ranges(lo, hi, 1, n)
	sql := "SELECT " + quoteIdent(timeCol) + " FROM " + quoteIdent(table) + " WHERE "
	if where != "" {
		sql += "(" + where + ") AND "
	}
	sql += "rowid BETWEEN ?1 AND ?2 ORDER BY rowid"
	type part struct {
		first, last    int64
		empty, ordered bool
		panicked       any // passed on as in parRead.read
	}
	res := make([]part, len(parts))
	var wg sync.WaitGroup
	for i, r := range parts {
		wg.Go(func() {
			p := &res[i]
			p.empty = true
			defer func() { p.panicked = recover() }()
			conn, err := sqlite.OpenReadOnly(d.path)
			if err != nil {
				return
			}
			defer conn.Close()
			st, err := conn.Prepare(sql)
			if err != nil {
				return
			}
			defer st.Close()
			if st.BindInt64(1, r[0]) != nil || st.BindInt64(2, r[1]) != nil {
				return
			}
			for rows := 1; ; rows++ {
				more, err := st.Step()
				if err != nil || rows&0xffff == 0 && d.ctx.Err() != nil {
					return
				}
				if !more {
					p.ordered = true
					return
				}
				v, notNull := st.Int64OK(0)
				if !notNull {
					continue
				}
				if !p.empty && v < p.last {
					return
				}
				if p.empty {
					p.first, p.empty = v, false
				}
				p.last = v
			}
		})
	}
	wg.Wait()
	var prev *part
	for i := range res {
		p := &res[i]
		if p.panicked != nil {
			panic(p.panicked)
		}
		if !p.ordered {
			return false, true
		}
		if p.empty {
			continue
		}
		if prev != nil && p.first < prev.last {
			return false, true
		}
		prev = p
	}
	return true, true
}

// rowBlock is consecutive rows of one range as a worker read them: the
// cells of row i are cells[i*ncols:(i+1)*ncols], its text
// text[textEnd[i-1]:textEnd[i]] (nil when empty, as SQLite gives it). err
// is the error that ended the range after the rows.
type rowBlock struct {
	n       int
	rowids  []int64
	cells   []cell
	text    []byte
	textEnd []int
	err     error
	// panicked is what the worker panicked with (read).
	panicked any
}

// rowTask is one rowid range; its blocks arrive on out, which is closed
// after the last.
type rowTask struct {
	lo, hi int64
	out    chan *rowBlock
}

// parRead is a table read in rowid order by several connections.
type parRead struct {
	ncols int
	order chan *rowTask // the tasks, in rowid order, for the reader
	stop  chan struct{}
	wg    sync.WaitGroup
	free  sync.Pool

	cur *rowTask
	blk *rowBlock
	pos int
}

// startParallel starts reading q's rows with rowids in [lo, hi] in rowid
// order on parWorkers() connections.
func (d *decoder) startParallel(q *query, lo, hi int64) *parRead {
	sql := q.selectFrom + " WHERE "
	if q.where != "" {
		sql += "(" + q.where + ") AND "
	}
	sql += "rowid BETWEEN ?1 AND ?2 ORDER BY rowid"
	n := parWorkers()
	p := &parRead{ncols: len(q.cols), order: make(chan *rowTask, n), stop: make(chan struct{})}
	work := make(chan *rowTask)
	// A worker must be able to read a whole range ahead of the reader, or
	// the reader waits on the one range it is taking.
	perTask := int(parRangeRows/int64(parBlockRows)) + 1
	p.wg.Go(func() {
		defer close(work)
		defer close(p.order)
		for _, r := range ranges(lo, hi, parRangeRows, parMaxRanges) {
			t := &rowTask{lo: r[0], hi: r[1], out: make(chan *rowBlock, perTask)}
			select {
			case p.order <- t:
			case <-p.stop:
				return
			}
			select {
			case work <- t:
			case <-p.stop:
				return
			}
		}
	})
	for range n {
		p.wg.Go(func() { p.work(d.path, sql, q.cols, work) })
	}
	return p
}

// work reads the tasks it is given on its own connection.
func (p *parRead) work(path, sql string, cols []column, work <-chan *rowTask) {
	conn, err := sqlite.OpenReadOnly(path)
	var st *sqlite.Stmt
	if err == nil {
		defer conn.Close()
		st, err = conn.Prepare(sql)
	}
	if st != nil {
		defer st.Close()
	}
	for t := range work {
		if !p.read(st, err, cols, t) {
			return
		}
	}
}

// read sends the rows of t (or the error that prevents reading them) and
// closes t.out; false means the reader stopped.
func (p *parRead) read(st *sqlite.Stmt, err error, cols []column, t *rowTask) (goOn bool) {
	defer close(t.out)
	send := func(b *rowBlock) bool {
		select {
		case t.out <- b:
			return true
		case <-p.stop:
			return false
		}
	}
	// A panic here is a bug (ours or SQLite's) met on some input. It goes
	// to the decoder's goroutine, which panics with it where a one-connection
	// read would have, so that ingest.Open reports it naming the file
	// instead of the process crashing.
	defer func() {
		if r := recover(); r != nil {
			send(&rowBlock{panicked: r})
			goOn = false
		}
	}()
	if err == nil {
		if err = st.Reset(); err == nil {
			if err = st.BindInt64(1, t.lo); err == nil {
				err = st.BindInt64(2, t.hi)
			}
		}
	}
	b := p.block()
	for err == nil {
		var more bool
		if more, err = st.Step(); err != nil || !more {
			break
		}
		b.add(st, cols)
		if b.n == parBlockRows {
			if !send(b) {
				return false
			}
			b = p.block()
		}
	}
	b.err = err
	if b.n == 0 && err == nil {
		p.free.Put(b)
		return true
	}
	return send(b)
}

// block returns an empty block, reusing one the reader is done with.
func (p *parRead) block() *rowBlock {
	if b, ok := p.free.Get().(*rowBlock); ok {
		return b
	}
	return &rowBlock{rowids: make([]int64, 0, parBlockRows), cells: make([]cell, 0, parBlockRows*p.ncols),
		textEnd: make([]int, 0, parBlockRows)}
}

// add appends the current row of st.
func (b *rowBlock) add(st *sqlite.Stmt, cols []column) {
	at := len(b.cells)
	b.cells = b.cells[:at+len(cols)]
	rowid, text := scanCells(st, cols, b.cells[at:])
	b.rowids = append(b.rowids, rowid)
	b.text = append(b.text, text...)
	b.textEnd = append(b.textEnd, len(b.text))
	b.n++
}

func (b *rowBlock) reset() {
	b.n, b.err = 0, nil
	b.rowids, b.cells, b.text, b.textEnd = b.rowids[:0], b.cells[:0], b.text[:0], b.textEnd[:0]
}

// step reads the next row into r, as Stmt.Step followed by row.scan would:
// false at the end of the table or with the error that ended the read.
func (p *parRead) step(r *row) (bool, error) {
	for {
		if b := p.blk; b != nil {
			if p.pos < b.n {
				i := p.pos
				p.pos++
				if cap(r.cells) < p.ncols {
					r.cells = make([]cell, p.ncols)
				}
				r.cells = r.cells[:p.ncols]
				copy(r.cells, b.cells[i*p.ncols:(i+1)*p.ncols])
				r.rowid, r.text = b.rowids[i], nil
				start := 0
				if i > 0 {
					start = b.textEnd[i-1]
				}
				if start < b.textEnd[i] {
					r.text = b.text[start:b.textEnd[i]]
				}
				return true, nil
			}
			p.blk = nil
			if b.err != nil {
				return false, b.err
			}
			b.reset()
			p.free.Put(b)
		}
		if p.cur == nil {
			t, ok := <-p.order
			if !ok {
				return false, nil
			}
			p.cur = t
		}
		b, ok := <-p.cur.out
		if !ok {
			p.cur = nil
			continue
		}
		if b.panicked != nil {
			panic(b.panicked)
		}
		p.blk, p.pos = b, 0
	}
}

// close stops the workers and waits for them.
func (p *parRead) close() {
	close(p.stop)
	p.wg.Wait()
}
