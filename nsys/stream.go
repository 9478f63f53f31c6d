package nsys

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/spill"
	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// item is a converted record with the rowid it came from.
type item[T any] struct {
	v     T
	rowid int64
}

// cursor streams one table's records in time order, (start, rowid), and
// converts each row as it arrives, so a table is never held in memory as
// rows. SQLite is never asked to sort: its sorter copies every selected
// column into an external merge sort, which costs more than the read. The
// rows are read in storage (rowid) order; nsys writes its tables in time
// order, and a table that is not is almost always a few stray rows: those
// are found by a pass over the time column, skipped in the storage-order
// read, and fetched by rowid when their turn comes (strays). If the read
// fails before its first row — a damaged table — the cursor reads the
// table in storage order as far as it can, keeps those records, and sorts
// them itself.
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

	// The out-of-order rows of a table not in time order (strays):
	// strays in (time, rowid) order, skip their rowids ascending for the
	// storage-order read, which holds its next row in r while pending.
	// point fetches a stray by rowid into sr; timeIdx is the time
	// column's cell.
	strays     []stray
	spos, kpos int
	skip       []int64
	pending    bool
	point      *sqlite.Stmt
	sr         row
	timeIdx    int

	cur   item[T]
	valid bool
	read  int // rows delivered so far
}

// openCursor prepares the time-ordered read of table and positions the
// cursor on the first record. timeCol is the table's time column.
//
// The order is always (time, rowid). nsys writes its tables in time order,
// and then storage (rowid) order is that order: a first pass over the time
// column alone checks it. A table out of order gets a second such pass,
// which finds its stray rows (findStrays). A big table's check and read
// are each split over several connections (parallel.go).
func openCursor[T any](d *decoder, table string, cols []column, where, timeCol string,
	convert func(*query, *row) (T, bool), time func(*T) int64) (*cursor[T], error) {
	q, err := d.buildQuery(table, cols, where, "rowid")
	if err != nil {
		d.warnf("table "+table, "missing-column", "%v; table not read", err)
		return &cursor[T]{d: d}, nil
	}
	c := &cursor[T]{d: d, q: q, convert: convert, time: time, timeIdx: -1}
	main := true
	if !d.inTimeOrder(table, where, timeCol) {
		for i, col := range cols {
			if col.name == timeCol && q.present[i] {
				c.timeIdx = i
			}
		}
		var all bool
		var err error
		if c.timeIdx >= 0 {
			c.strays, c.skip, all, err = d.findStrays(table, where, timeCol)
		}
		if err == nil && c.timeIdx >= 0 {
			c.point, err = d.conn.Prepare(q.selectFrom + " WHERE rowid = ?1")
		}
		if c.timeIdx < 0 || err != nil {
			if c.timeIdx < 0 {
				err = fmt.Errorf("no time column %s", timeCol)
			}
			if err := c.fallbackRead(table, err); err != nil {
				return nil, err
			}
			return c, nil
		}
		main = !all
	}
	lo, hi, parallel := d.parallelOK(table)
	switch {
	case !main:
	case parallel:
		c.par = d.startParallel(q, lo, hi)
	default:
		if c.st, err = d.conn.Prepare(q.sql); err != nil {
			d.warnf("table "+table, "read-error", "cannot read table %s: %v", table, err)
			c.close()
			return c, nil
		}
	}
	if err := c.next(); err != nil {
		c.close() // the caller keeps no cursor it got with an error: stop the workers here
		return nil, err
	}
	return c, nil
}

// stray is a row out of time order: its time (null: none, first in
// SQLite's order) and rowid.
type stray struct {
	t     int64
	null  bool
	rowid int64
}

func strayCmp(a, b stray) int {
	if a.null != b.null {
		if a.null {
			return -1
		}
		return 1
	}
	return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.rowid, b.rowid))
}

// maxStrayShare bounds the strays (1/maxStrayShare of the rows): past it
// the table is not "in order but for a few rows", and every row is read
// by rowid in the order of a Go sort of all (time, rowid) pairs.
const maxStrayShare = 8

// findStrays scans the time column of table in storage order and returns
// the rows whose time is below an earlier row's (or NULL), sorted by
// (time, rowid), with their rowids ascending in skip. The other rows are
// then in (time, rowid) order by construction. all reports that strays
// holds every row (too many strays; skip is then nil).
func (d *decoder) findStrays(table, where, timeCol string) (strays []stray, skip []int64, all bool, err error) {
	sql := "SELECT rowid, " + quoteIdent(timeCol) + " FROM " + quoteIdent(table)
	if where != "" {
		sql += " WHERE " + where
	}
	st, err := d.conn.Prepare(sql + " ORDER BY rowid")
	if err != nil {
		return nil, nil, false, err
	}
	defer st.Close()
	scan := func(keep func(s stray, max int64) bool) ([]stray, int, error) {
		if err := st.Reset(); err != nil {
			return nil, 0, err
		}
		var out []stray
		n, hi := 0, int64(math.MinInt64)
		for {
			ok, err := st.Step()
			if err != nil {
				return nil, 0, err
			}
			if !ok {
				return out, n, nil
			}
			if err := d.tick(); err != nil {
				return nil, 0, err
			}
			n++
			s := stray{rowid: st.Int64(0), null: st.IsNull(1)}
			if !s.null {
				s.t = st.Int64(1)
			}
			if keep(s, hi) {
				out = append(out, s)
			} else if !s.null {
				hi = max(hi, s.t)
			}
		}
	}
	strays, n, err := scan(func(s stray, hi int64) bool { return s.null || s.t < hi })
	if err != nil {
		return nil, nil, false, err
	}
	if len(strays) > n/maxStrayShare {
		if strays, _, err = scan(func(stray, int64) bool { return true }); err != nil {
			return nil, nil, false, err
		}
		all = true
	} else {
		skip = make([]int64, len(strays))
		for i, s := range strays {
			skip[i] = s.rowid
		}
	}
	slices.SortFunc(strays, strayCmp)
	return strays, skip, all, nil
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
	if c.point != nil {
		c.point.Close()
		c.point = nil
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
	for {
		if !c.pending && (c.st != nil || c.par != nil) {
			var ok bool
			var err error
			if c.par != nil {
				ok, err = c.par.step(&c.r)
			} else {
				ok, err = c.st.Step()
			}
			switch {
			case err != nil && c.read == 0:
				return c.fallback(err)
			case err != nil:
				c.d.warnf(fmt.Sprintf("table %s after row %d", c.q.table, c.r.rowid), "read-error",
					"%v; the rest of the table, in time order, was not read", err)
				c.closeMain()
			case !ok:
				c.closeMain()
			default:
				if err := c.d.tick(); err != nil {
					return err
				}
				if c.par == nil {
					c.r.scan(c.st, c.q.cols)
				}
				for c.kpos < len(c.skip) && c.skip[c.kpos] < c.r.rowid {
					c.kpos++
				}
				if c.kpos < len(c.skip) && c.skip[c.kpos] == c.r.rowid {
					continue // a stray: read by rowid in its turn
				}
				c.pending = true
			}
		}
		var r *row
		switch {
		case c.spos < len(c.strays) && (!c.pending ||
			strayCmp(c.strays[c.spos], stray{t: c.r.cells[c.timeIdx].v, rowid: c.r.rowid}) < 0):
			s := c.strays[c.spos]
			c.spos++
			if !c.fetch(s.rowid) {
				continue
			}
			r = &c.sr
		case c.pending:
			c.pending = false
			r = &c.r
		default:
			c.close()
			return nil
		}
		c.read++
		if v, ok := c.convert(c.q, r); ok {
			c.cur, c.valid = item[T]{v, r.rowid}, true
			return nil
		}
	}
}

// closeMain ends the storage-order read; strays may remain.
func (c *cursor[T]) closeMain() {
	if c.par != nil {
		c.par.close()
		c.par = nil
	}
	if c.st != nil {
		c.st.Close()
		c.st = nil
	}
}

// fetch reads the row with rowid into c.sr; false (with a warning) when
// it cannot be read.
func (c *cursor[T]) fetch(rowid int64) bool {
	err := c.point.Reset()
	if err == nil {
		err = c.point.BindInt64(1, rowid)
	}
	var ok bool
	if err == nil {
		ok, err = c.point.Step()
	}
	if err == nil && !ok {
		err = fmt.Errorf("row vanished during the read")
	}
	if err != nil {
		c.d.warnf(rowPos(c.q.table, rowid), "read-error", "%v; row not read", err)
		return false
	}
	c.sr.scan(c.point, c.q.cols)
	return true
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
func callStart(c *ingest.APICall) int64   { return c.Start }
func opStart(o *ingest.GPUOp) int64       { return o.Start }
func sampleTime(s *ingest.Sample) int64   { return s.Time }
func memTime(e *ingest.MemoryEvent) int64 { return e.Time }

// readSpans reads CUDA API calls and NVTX ranges, each into its table,
// the two read side by side in start order (mergeTwo), so that what they
// warn about comes in time order.
func (d *decoder) readSpans() error {
	var api *cursor[ingest.APICall]
	var nvtx *cursor[ingest.Span]
	defer func() {
		if api != nil {
			api.close()
		}
		if nvtx != nil {
			nvtx.close()
		}
	}()
	wantAPI := d.tables&API != 0 && d.schema.has(tableRuntime)
	wantNVTX := d.tables&NVTX != 0 && d.schema.has(tableNVTX)
	if d.tables&API != 0 && !wantAPI {
		d.warnf("", "missing-table", "no %s table: no CUDA API calls (was CUDA traced?)", tableRuntime)
	}
	if wantAPI {
		var err error
		if api, err = openCursor(d, tableRuntime, runtimeCols, "", "start", d.runtime, callStart); err != nil {
			return err
		}
		if d.t.APICalls == nil {
			// Past the memory budget the calls live in a spill file, as
			// the GPU ops do (internal/spill).
			d.t.APICalls = spill.Slice[ingest.APICall](d.capacity(tableRuntime))
		}
		d.launches = make([]uint64, 0, d.capacity(tableRuntime))
	}
	if wantNVTX {
		domains := d.nvtxPrescan()
		var err error
		nvtx, err = openCursor(d, tableNVTX, nvtxCols, fmt.Sprintf("eventType IN (%d, %d, %d, %d, %d)",
			nvtxMark, nvtxPushPop, nvtxStartEnd, nvtxtPushPop, nvtxtStartEnd), "start",
			func(q *query, r *row) (ingest.Span, bool) { return d.nvtx(q, r, domains) }, spanStart)
		if err != nil {
			return err
		}
		if d.t.Spans == nil {
			// The ranges and their attributes (two a range, most have
			// one or two) hold no pointers: past the memory budget they
			// live in spill files, as the calls do.
			n := d.capacity(tableNVTX)
			d.t.Spans = spill.Slice[ingest.Span](n)
			d.t.AttrTail(2*n, 2*n)
		}
	}
	err := mergeTwo(api, nvtx, func(it *item[ingest.APICall]) {
		c := &it.v
		d.t.APICalls = append(d.t.APICalls, *c)
		if c.Correlation != 0 {
			d.launches = append(d.launches, launchKey(c.Pid, c.Correlation))
		}
	}, func(it *item[ingest.Span]) {
		d.t.Spans = append(d.t.Spans, it.v)
	})
	slices.Sort(d.launches)
	return err
}

// mergeTwo is merge for two cursors of different record types (either may
// be nil): records in time order, a's first at equal times.
func mergeTwo[A, B any](a *cursor[A], b *cursor[B], emitA func(*item[A]), emitB func(*item[B])) error {
	for {
		okA, okB := a != nil && a.valid, b != nil && b.valid
		switch {
		case okA && (!okB || a.time(&a.cur.v) <= b.time(&b.cur.v)):
			emitA(&a.cur)
			if err := a.next(); err != nil {
				return err
			}
		case okB:
			emitB(&b.cur)
			if err := b.next(); err != nil {
				return err
			}
		default:
			return nil
		}
	}
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
	// The GPU ops are most of what an analysis holds: past the memory
	// budget they live in a spill file (internal/spill).
	d.t.GPUOps = spill.Slice[ingest.GPUOp](d.capacity(tables...))
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
