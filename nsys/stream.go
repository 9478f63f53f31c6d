package nsys

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// item is a converted record with the rowid it came from.
type item[T any] struct {
	v     T
	rowid int64
}

// cursor streams one table's records in time order: SQLite sorts the rows
// (ORDER BY start, rowid) and each row is converted as it arrives, so a
// table is never held in memory as rows. If the sorted read fails — a
// damaged table makes SQLite's sorter give up before the first row — the
// cursor reads the table in storage order as far as it can, keeps those
// records, and sorts them itself.
type cursor[T any] struct {
	d       *decoder
	q       *query
	convert func(*query, *row) (T, bool)
	time    func(*T) int64
	st      *sqlite.Stmt
	// par, when set, reads the rows instead of st (parallel.go).
	par *parRead
	r   row
	// buf and pos serve the records read in storage order after a failed
	// sorted read.
	buf []item[T]
	pos int

	cur   item[T]
	valid bool
	read  int // rows delivered so far
}

// openCursor prepares the time-ordered read of table and positions the
// cursor on the first record. timeCol is the table's time column.
//
// The order is always (time, rowid). nsys writes its tables in time order,
// and then storage (rowid) order is that order: a first pass over the time
// column alone checks it, which costs a tenth of having SQLite sort the
// rows (an external merge sort of every selected column, the largest part
// of reading a big table). Only a table out of order is sorted by SQLite.
// A big table's check and read are each split over several connections
// (parallel.go).
func openCursor[T any](d *decoder, table string, cols []column, where, timeCol string,
	convert func(*query, *row) (T, bool), time func(*T) int64) (*cursor[T], error) {
	order := quoteIdent(timeCol) + ", rowid"
	if d.inTimeOrder(table, where, timeCol) {
		order = "rowid"
	}
	q, err := d.buildQuery(table, cols, where, order)
	if err != nil {
		d.warnf("table "+table, "missing-column", "%v; table not read", err)
		return &cursor[T]{d: d}, nil
	}
	c := &cursor[T]{d: d, q: q, convert: convert, time: time}
	lo, hi, parallel := int64(0), int64(0), false
	if order == "rowid" {
		lo, hi, parallel = d.parallelOK(table)
	}
	if parallel {
		c.par = d.startParallel(q, lo, hi)
	} else if c.st, err = d.conn.Prepare(q.sql); err != nil {
		d.warnf("table "+table, "read-error", "cannot read table %s: %v", table, err)
		return c, nil
	}
	if err := c.next(); err != nil {
		c.close() // the caller keeps no cursor it got with an error: stop the workers here
		return nil, err
	}
	return c, nil
}

func (c *cursor[T]) close() {
	if c.par != nil {
		c.par.close()
		c.par = nil
	}
	if c.st != nil {
		c.st.Close()
		c.st = nil
	}
}

// inTimeOrder reports whether the rows of table (those matching where) are
// stored in time order, so that reading them by rowid reads them ordered by
// (time, rowid). Rows with a NULL time are dropped by the conversion and do
// not count. Any error means "not known to be ordered".
func (d *decoder) inTimeOrder(table, where, timeCol string) bool {
	if !d.schema.has(table) {
		return false
	}
	if cols, err := d.schema.columns(d.conn, table); err != nil || !cols[timeCol] {
		return false
	}
	if ordered, ok := d.inTimeOrderParallel(table, where, timeCol); ok {
		return ordered
	}
	sql := "SELECT " + quoteIdent(timeCol) + " FROM " + quoteIdent(table)
	if where != "" {
		sql += " WHERE " + where
	}
	st, err := d.conn.Prepare(sql + " ORDER BY rowid")
	if err != nil {
		return false
	}
	defer st.Close()
	prev := int64(math.MinInt64)
	for {
		ok, err := st.Step()
		if err != nil {
			return false
		}
		if !ok {
			return true
		}
		if d.tick() != nil {
			return false
		}
		if st.IsNull(0) {
			continue
		}
		v := st.Int64(0)
		if v < prev {
			return false
		}
		prev = v
	}
}

// next advances to the next good record; valid is false at the end. The
// only error is cancellation.
func (c *cursor[T]) next() error {
	c.valid = false
	if c.buf != nil {
		if c.pos < len(c.buf) {
			c.cur, c.valid = c.buf[c.pos], true
			c.pos++
		}
		return nil
	}
	for c.st != nil || c.par != nil {
		var ok bool
		var err error
		if c.par != nil {
			ok, err = c.par.step(&c.r)
		} else {
			ok, err = c.st.Step()
		}
		if err != nil {
			if c.read == 0 {
				return c.fallback(err)
			}
			c.d.warnf(fmt.Sprintf("table %s after row %d", c.q.table, c.r.rowid), "read-error",
				"%v; the rest of the table, in time order, was not read", err)
			c.close()
			return nil
		}
		if !ok {
			c.close()
			return nil
		}
		if err := c.d.tick(); err != nil {
			return err
		}
		if c.par == nil {
			c.r.scan(c.st, c.q.cols)
		}
		c.read++
		if v, ok := c.convert(c.q, &c.r); ok {
			c.cur, c.valid = item[T]{v, c.r.rowid}, true
			return nil
		}
	}
	return nil
}

// fallback reads the table in storage order after the sorted read failed
// with cause, keeping every record before the damage.
func (c *cursor[T]) fallback(cause error) error {
	c.close()
	return c.fallbackRead(c.q.table, cause)
}

func (c *cursor[T]) fallbackRead(table string, cause error) error {
	sql := c.q.unordered()
	st, err := c.d.conn.Prepare(sql)
	if err != nil {
		c.d.warnf("table "+table, "read-error", "cannot read table %s: %v", table, cause)
		c.buf = []item[T]{}
		return nil
	}
	defer st.Close()
	var last int64
	buf := []item[T]{}
	for {
		ok, err := st.Step()
		if err != nil {
			pos := "table " + table
			if len(buf) > 0 || last != 0 {
				pos = fmt.Sprintf("table %s after row %d", table, last)
			}
			c.d.warnf(pos, "read-error", "%v; the rows before this point were kept, the rest of the table is lost", err)
			break
		}
		if !ok {
			break
		}
		if err := c.d.tick(); err != nil {
			return err
		}
		c.r.scan(st, c.q.cols)
		last = c.r.rowid
		if v, ok := c.convert(c.q, &c.r); ok {
			buf = append(buf, item[T]{v, c.r.rowid})
		}
	}
	slices.SortStableFunc(buf, func(a, b item[T]) int {
		return cmp.Or(cmp.Compare(c.time(&a.v), c.time(&b.v)), cmp.Compare(a.rowid, b.rowid))
	})
	c.buf = buf
	return c.next()
}

// unordered is the query without its ORDER BY clause.
func (q *query) unordered() string {
	if i := strings.LastIndex(q.sql, " ORDER BY "); i >= 0 {
		return q.sql[:i]
	}
	return q.sql
}

// merge drains cursors in time order (ties: the earlier cursor, then the
// lower rowid), calling emit for each record with the index of its cursor.
func merge[T any](cursors []*cursor[T], emit func(i int, it *item[T])) error {
	for {
		best := -1
		var bestTime int64
		for i, c := range cursors {
			if c.valid {
				if t := c.time(&c.cur.v); best < 0 || t < bestTime {
					best, bestTime = i, t
				}
			}
		}
		if best < 0 {
			return nil
		}
		c := cursors[best]
		emit(best, &c.cur)
		if err := c.next(); err != nil {
			return err
		}
	}
}

// capacity estimates how many rows tables hold (max rowid is a B-tree
// descent, not a scan), bounded by what the file could hold so a damaged
// file cannot make us allocate absurdly.
func (d *decoder) capacity(tables ...string) int {
	n := int64(0)
	for _, t := range tables {
		if !d.schema.has(t) {
			continue
		}
		st, err := d.conn.Prepare("SELECT max(rowid) FROM " + quoteIdent(t))
		if err != nil {
			continue
		}
		if ok, _ := st.Step(); ok {
			n += st.Int64(0)
		}
		st.Close()
	}
	if fi, err := os.Stat(d.t.Sources[0].Path); err == nil {
		n = min(n, fi.Size()/16)
	}
	return int(max(n, 0))
}

func spanStart(s *ingest.Span) int64      { return s.Start }
func opStart(o *ingest.GPUOp) int64       { return o.Start }
func sampleTime(s *ingest.Sample) int64   { return s.Time }
func memTime(e *ingest.MemoryEvent) int64 { return e.Time }

// readSpans reads CUDA API calls and NVTX ranges, merged in start order.
func (d *decoder) readSpans() error {
	var cursors []*cursor[ingest.Span]
	defer func() {
		for _, c := range cursors {
			c.close()
		}
	}()
	wantAPI := d.tables&API != 0 && d.schema.has(tableRuntime)
	wantNVTX := d.tables&NVTX != 0 && d.schema.has(tableNVTX)
	if d.tables&API != 0 && !wantAPI {
		d.warnf("", "missing-table", "no %s table: no CUDA API calls (was CUDA traced?)", tableRuntime)
	}
	if wantAPI {
		c, err := openCursor(d, tableRuntime, runtimeCols, "", "start", d.runtime, spanStart)
		if err != nil {
			return err
		}
		cursors = append(cursors, c)
	}
	if wantNVTX {
		domains := d.nvtxPrescan()
		c, err := openCursor(d, tableNVTX, nvtxCols, fmt.Sprintf("eventType IN (%d, %d, %d, %d, %d)",
			nvtxMark, nvtxPushPop, nvtxStartEnd, nvtxtPushPop, nvtxtStartEnd), "start",
			func(q *query, r *row) (ingest.Span, bool) { return d.nvtx(q, r, domains) }, spanStart)
		if err != nil {
			return err
		}
		cursors = append(cursors, c)
	}
	if len(cursors) == 0 {
		return nil
	}
	if d.t.Spans == nil {
		d.t.Spans = make([]ingest.Span, 0, d.capacity(tableRuntime, tableNVTX))
	}
	if wantAPI {
		d.launches = make([]uint64, 0, d.capacity(tableRuntime))
	}
	err := merge(cursors, func(_ int, it *item[ingest.Span]) {
		s := &it.v
		d.t.Spans = append(d.t.Spans, *s)
		if s.Origin != ingest.OriginNVTX && s.Correlation != 0 {
			d.launches = append(d.launches, launchKey(s.Pid, s.Correlation))
		}
	})
	slices.Sort(d.launches)
	return err
}

func launchKey(pid, corr uint32) uint64 { return uint64(pid)<<32 | uint64(corr) }

// nvtxPrescan reads NVTX domain names and the last NVTX timestamp, which
// ranges need before they can be converted.
func (d *decoder) nvtxPrescan() map[nvtxRef]ingest.StrID {
	domains := map[nvtxRef]ingest.StrID{}
	cols := []column{expNull("globalTid"), expNull("domainId"), expNull("text").text(), expNull("textId")}
	err := d.eachRow(tableNVTX, cols, fmt.Sprintf("eventType = %d", nvtxDomainCreate), func(st *sqlite.Stmt) {
		name := st.Text(3)
		if !st.IsNull(4) {
			if s, ok := d.names.lookup(st.Int64(4)); ok {
				name = d.t.Str(s)
			}
		}
		domains[nvtxRef{pidOf(st.Int64(1)), st.Int64(2)}] = d.t.Strings.Intern(name)
	})
	if err != nil {
		d.warnf("table "+tableNVTX, "read-error", "reading NVTX domains: %v", err)
	}
	st, err := d.conn.Prepare(fmt.Sprintf("SELECT max(coalesce(\"end\", start)) FROM %s WHERE eventType IN (%d, %d, %d, %d)",
		tableNVTX, nvtxPushPop, nvtxStartEnd, nvtxtPushPop, nvtxtStartEnd))
	if err == nil {
		if ok, _ := st.Step(); ok && !st.IsNull(0) {
			d.nvtxEnd = d.epoch + st.Int64(0)
		}
		st.Close()
	}
	return domains
}

// readGPUOps reads kernels, memory operations, synchronizations and graph
// executions, merged in start order, and reports GPU ops whose correlation
// ID matches no CUDA API call that was read.
func (d *decoder) readGPUOps() error {
	type source struct {
		flag    Tables
		table   string
		cols    []column
		convert func(*query, *row) (ingest.GPUOp, bool)
	}
	sources := []source{
		{Kernels, tableKernel, kernelCols, d.kernel},
		{MemoryOps, tableMemcpy, memcpyCols, d.memcpy},
		{MemoryOps, tableMemset, memsetCols, d.memset},
		{Syncs, tableSync, syncCols, d.sync},
		{Graphs, tableGraph, graphCols, d.graph},
	}
	var cursors []*cursor[ingest.GPUOp]
	var tables []string
	defer func() {
		for _, c := range cursors {
			c.close()
		}
	}()
	for _, s := range sources {
		if d.tables&s.flag == 0 {
			continue
		}
		if !d.schema.has(s.table) {
			if s.table == tableKernel {
				d.warnf("", "missing-table", "no %s table: no kernels (were CUDA kernels traced?)", tableKernel)
			}
			continue
		}
		c, err := openCursor(d, s.table, s.cols, "", "start", s.convert, opStart)
		if err != nil {
			return err
		}
		cursors = append(cursors, c)
		tables = append(tables, s.table)
	}
	if len(cursors) == 0 {
		return nil
	}
	d.t.GPUOps = make([]ingest.GPUOp, 0, d.capacity(tables...))
	checkLaunch := d.tables&API != 0 && d.schema.has(tableRuntime)
	return merge(cursors, func(i int, it *item[ingest.GPUOp]) {
		op := &it.v
		if checkLaunch && op.Correlation != 0 {
			if _, found := slices.BinarySearch(d.launches, launchKey(op.Pid, op.Correlation)); !found {
				d.warnf(rowPos(tables[i], it.rowid), "no-launch",
					"%s %q: correlationId %d (pid %d) matches no CUDA API call; kept without its launch",
					op.Kind, d.t.Str(op.Name), op.Correlation, op.Pid)
			}
		}
		d.t.GPUOps = append(d.t.GPUOps, *op)
	})
}

// readMetrics reads GPU_METRICS samples, named through
// TARGET_INFO_GPU_METRICS.
func (d *decoder) readMetrics() error {
	if d.tables&Metrics == 0 || !d.schema.has(tableMetrics) {
		return nil
	}
	names := map[metricRef]ingest.StrID{}
	if d.schema.has("TARGET_INFO_GPU_METRICS") {
		cols := []column{req("typeId"), req("metricId"), req("metricName").text()}
		err := d.eachRow("TARGET_INFO_GPU_METRICS", cols, "", func(st *sqlite.Stmt) {
			names[metricRef{st.Int64(1), st.Int64(2)}] = d.t.Strings.Intern(st.Text(3))
		})
		if err != nil {
			d.warnf("table TARGET_INFO_GPU_METRICS", "read-error", "reading metric names: %v", err)
		}
	} else {
		d.warnf("", "missing-table", "GPU_METRICS without TARGET_INFO_GPU_METRICS: metrics cannot be named")
	}
	c, err := openCursor(d, tableMetrics, metricCols, "", "timestamp",
		func(q *query, r *row) (ingest.Sample, bool) { return d.metric(q, r, names) }, sampleTime)
	if err != nil {
		return err
	}
	defer c.close()
	d.t.Samples = make([]ingest.Sample, 0, d.capacity(tableMetrics))
	return merge([]*cursor[ingest.Sample]{c}, func(_ int, it *item[ingest.Sample]) {
		d.t.Samples = append(d.t.Samples, it.v)
	})
}

// readMemoryUsage reads device-memory allocation events.
func (d *decoder) readMemoryUsage() error {
	if d.tables&MemoryUsage == 0 || !d.schema.has(tableMemory) {
		return nil
	}
	c, err := openCursor(d, tableMemory, memoryCols, "", "start", d.memoryEvent, memTime)
	if err != nil {
		return err
	}
	defer c.close()
	return merge([]*cursor[ingest.MemoryEvent]{c}, func(_ int, it *item[ingest.MemoryEvent]) {
		d.t.MemoryEvents = append(d.t.MemoryEvents, it.v)
	})
}
