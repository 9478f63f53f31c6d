package nsys

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// WriteOptions tune WriteSQLite.
type WriteOptions struct {
	// SessionStart is the capture's start in epoch ns. It is written as
	// TARGET_INFO_SESSION_START_TIME.utcEpochNs and every stored time is
	// relative to it, as in a real export. Zero means the earliest time in
	// the trace. A synthetic run models nsys's clock error by passing times
	// already on the nsys clock and the start nsys believes in here.
	SessionStart int64
	// Normalized writes epoch-ns times and EXPORT_PARAM_TIME_NORMALIZE=true,
	// as nsys export --ts-normalize does.
	Normalized bool
	// ProductVersion is written as EXPORT_PRODUCT_VERSION (default
	// "llmprof"), so that the export does not pass for a real nsys one.
	ProductVersion string
}

// WriterSchemaVersion is the nsys export schema WriteSQLite writes.
const WriterSchemaVersion = "3.24.18"

// vmBits are the VM bits of every global id written (VM 1, as on a native
// Linux capture).
const vmBits = int64(1) << 48

func globalPid(pid uint32) int64      { return vmBits | int64(pid&0xFFFFFF)<<24 }
func globalTid(pid, tid uint32) int64 { return globalPid(pid) | int64(tid&0xFFFFFF) }

// WriteSQLite writes the trace as an Nsight Systems SQLite export in the
// current schema: GPU ops (kernels, memcpy, memset, synchronizations, graph
// executions), CUDA runtime and driver calls, NVTX ranges and marks (with
// their domains, categories, payloads), GPU metric samples, memory events,
// devices, processes and threads, the session start and META_DATA_EXPORT.
// What nsys cannot hold is left out: OTLP spans, span attributes other than
// the nvtx.* ones the decoder sets (a call's return code is APICall.Return). Memcpy and sync
// names are derived from their kinds, as nsys does. Decoding the file gives
// back the trace's records as the decoder would have produced them.
//
// The file is written in a private folder created next to path (so SQLite
// never opens a name someone else could have planted a link at, and its
// journal stays beside it) and renamed into place, so a reader never sees
// half an export.
func WriteSQLite(path string, t *ingest.Trace, opts WriteOptions) error {
	return WriteSQLiteParts(path, t, func(yield func(*ingest.Trace) error) error { return yield(t) }, opts)
}

// Parts gives a trace's CUDA API calls, spans and GPU ops in pieces: it
// calls yield with each piece in turn and returns the first error yield
// returns. Each piece is a trace of its own (its own strings and shapes);
// its tables are in time order, and each table's pieces, one after another,
// are the whole table in time order. It must give the same pieces each time
// it is called.
type Parts func(yield func(part *ingest.Trace) error) error

// WriteSQLiteParts writes what WriteSQLite writes of a trace too large to
// hold at once: head's devices, processes, threads, GPU metric samples and
// memory events, and the CUDA API calls, NVTX ranges and GPU ops of parts
// (head's own are not written). It reads parts once for the extent of the
// times and once for each of the three tables; a piece need not outlive
// its yield. WriteSQLite(path, t, opts) is WriteSQLiteParts with t its one
// piece, and the same pieces concatenated write the same bytes as the one
// trace they make.
func WriteSQLiteParts(path string, head *ingest.Trace, parts Parts, opts WriteOptions) (err error) {
	if fi, serr := os.Lstat(path); serr == nil && !fi.Mode().IsRegular() && fi.Mode()&os.ModeSymlink == 0 {
		return fmt.Errorf("%s is not a regular file; an nsys export is written only as a file", path)
	}
	stage, err := os.MkdirTemp(filepath.Dir(path), ".llmprof-sqlite-*")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer os.RemoveAll(stage)
	tmp := filepath.Join(stage, filepath.Base(path))
	conn, err := sqlite.OpenReadWrite(tmp)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer func() {
		if cerr := conn.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%s: %w", path, cerr)
		}
		if err != nil {
			return
		}
		if cerr := os.Chmod(tmp, 0o644); cerr != nil {
			err = cerr
			return
		}
		err = os.Rename(tmp, path)
	}()
	w := &writer{conn: conn, head: head, parts: parts, opts: opts, strings: map[string]int64{}}
	if err := w.write(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

type writer struct {
	conn *sqlite.Conn
	// head holds the small tables; t is the piece of parts being written.
	head  *ingest.Trace
	parts Parts
	t     *ingest.Trace
	// What the pass for the extent counted: CUDA API calls, NVTX ranges
	// and GPU ops of each kind.
	apiCalls, nvtxRanges int
	opKinds              [ingest.OpGraph + 1]int
	opts                 WriteOptions
	offset               int64 // subtracted from every time
	strings              map[string]int64
	strIns               *inserter
}

// inserter binds one row's parameters in order and inserts it.
type inserter struct {
	st  *sqlite.Stmt
	i   int
	err error
}

func (w *writer) prepare(sql string) (*inserter, error) {
	st, err := w.conn.Prepare(sql)
	if err != nil {
		return nil, err
	}
	return &inserter{st: st}, nil
}

func (b *inserter) int(v int64) *inserter {
	b.i++
	if b.err == nil {
		b.err = b.st.BindInt64(b.i, v)
	}
	return b
}

func (b *inserter) real(v float64) *inserter {
	b.i++
	if b.err == nil {
		b.err = b.st.BindFloat64(b.i, v)
	}
	return b
}

func (b *inserter) text(v string) *inserter {
	b.i++
	if b.err == nil {
		b.err = b.st.BindText(b.i, v)
	}
	return b
}

func (b *inserter) null() *inserter {
	b.i++
	if b.err == nil {
		b.err = b.st.BindNull(b.i)
	}
	return b
}

// intOrNull binds v, or NULL when ok is false.
func (b *inserter) intOrNull(v int64, ok bool) *inserter {
	if ok {
		return b.int(v)
	}
	return b.null()
}

// exec inserts the row bound so far and readies the next.
func (b *inserter) exec() error {
	b.i = 0
	if b.err != nil {
		return b.err
	}
	if _, err := b.st.Step(); err != nil {
		return err
	}
	return b.st.Reset()
}

func (b *inserter) close() { b.st.Close() }

// id returns the StringIds id of s, adding it.
func (w *writer) id(s string) (int64, error) {
	if id, ok := w.strings[s]; ok {
		return id, nil
	}
	id := int64(len(w.strings))
	w.strings[s] = id
	return id, w.strIns.int(id).text(s).exec()
}

func (w *writer) rel(t int64) int64 { return t - w.offset }

func (w *writer) write() error {
	if err := w.conn.Exec(`PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA locking_mode = EXCLUSIVE;
		PRAGMA cache_size = -65536; BEGIN`); err != nil {
		return err
	}
	start, end, err := w.extent()
	if err != nil {
		return err
	}
	session := w.opts.SessionStart
	if session == 0 {
		session = start
	}
	if !w.opts.Normalized {
		w.offset = session
	}
	if err = w.conn.Exec(ddlStringIds); err != nil {
		return err
	}
	if w.strIns, err = w.prepare("INSERT INTO StringIds (id, value) VALUES (?, ?)"); err != nil {
		return err
	}
	defer w.strIns.close()
	for _, step := range []func() error{
		func() error { return w.writeMeta(session, max(end-session, 0)) },
		w.writeEnums, w.writeDevices, w.writeProcesses, w.writeThreads,
		w.writeAPI, w.writeNVTX, w.writeGPUOps, w.writeMetrics, w.writeMemory,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return w.conn.Exec("COMMIT")
}

// extent is the earliest start and latest end of the records written; it
// counts the records of parts as it goes.
func (w *writer) extent() (lo, hi int64, err error) {
	first := true
	see := func(s, e int64) {
		if first {
			lo, hi, first = s, e, false
		}
		lo, hi = min(lo, s), max(hi, e)
	}
	err = w.parts(func(t *ingest.Trace) error {
		for i := range t.Spans {
			if s := &t.Spans[i]; s.Origin != ingest.OriginOTLP {
				see(s.Start, s.End)
				if s.Origin == ingest.OriginNVTX {
					w.nvtxRanges++
				}
			}
		}
		for i := range t.APICalls {
			see(t.APICalls[i].Start, t.APICalls[i].End)
		}
		w.apiCalls += len(t.APICalls)
		for i := range t.GPUOps {
			see(t.GPUOps[i].Start, t.GPUOps[i].End)
			if k := t.GPUOps[i].Kind; int(k) < len(w.opKinds) {
				w.opKinds[k]++
			}
		}
		return nil
	})
	for i := range w.head.Samples {
		see(w.head.Samples[i].Time, w.head.Samples[i].Time)
	}
	for i := range w.head.MemoryEvents {
		see(w.head.MemoryEvents[i].Time, w.head.MemoryEvents[i].Time)
	}
	return lo, hi, err
}

// each calls write with each piece of parts, as w.t.
func (w *writer) each(write func() error) error {
	return w.parts(func(t *ingest.Trace) error {
		w.t = t
		defer func() { w.t = nil }()
		return write()
	})
}

func (w *writer) writeMeta(session, duration int64) error {
	version := w.opts.ProductVersion
	if version == "" {
		version = "llmprof"
	}
	utc := time.Unix(0, session).UTC().Format("2006-01-02T15:04:05")
	if err := w.conn.Exec(ddlMetaDataExport + ";" + ddlSessionStart + ";" + ddlAnalysisDetails); err != nil {
		return err
	}
	meta, err := w.prepare("INSERT INTO META_DATA_EXPORT (name, value) VALUES (?, ?)")
	if err != nil {
		return err
	}
	defer meta.close()
	for _, kv := range [][2]string{
		{"EXPORT_PRODUCT_NAME", "llmprof (Nsight Systems SQLite schema)"},
		{"EXPORT_PRODUCT_VERSION", version},
		{"EXPORT_SCHEMA_VERSION", WriterSchemaVersion},
		{"EXPORT_PARAM_TIME_NORMALIZE", strconv.FormatBool(w.opts.Normalized)},
		{"EXPORT_PARAM_TIME_SHIFT", "0"},
	} {
		if err := meta.text(kv[0]).text(kv[1]).exec(); err != nil {
			return err
		}
	}
	ins, err := w.prepare("INSERT INTO TARGET_INFO_SESSION_START_TIME (utcEpochNs, utcTime, localTime) VALUES (?, ?, ?)")
	if err != nil {
		return err
	}
	defer ins.close()
	if err := ins.int(session).text(utc).text(utc).exec(); err != nil {
		return err
	}
	det, err := w.prepare("INSERT INTO ANALYSIS_DETAILS (globalVid, duration, startTime, stopTime) VALUES (?, ?, 0, ?)")
	if err != nil {
		return err
	}
	defer det.close()
	return det.int(vmBits).int(duration).int(duration).exec()
}

func (w *writer) writeEnums() error {
	enums := []struct {
		table  string
		prefix string
		labels map[int]string
	}{
		{"ENUM_CUDA_MEMCPY_OPER", "CUDA_MEMCPY_KIND_", indexed(memcpyLabels[:])},
		{"ENUM_CUPTI_SYNC_TYPE", "CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_", indexed(syncLabels[:])},
		{"ENUM_NSYS_EVENT_CLASS", "TRACE_PROCESS_EVENT_", map[int]string{0: "CUDA runtime", 1: "CUDA driver"}},
		{"ENUM_NSYS_EVENT_TYPE", "", map[int]string{nvtxCategoryDef: "NvtxCategory", nvtxMark: "NvtxMark", nvtxPushPop: "NvtxPushPopRange",
			nvtxStartEnd: "NvtxStartEndRange", nvtxtPushPop: "NvtxtPushPopRange", nvtxtStartEnd: "NvtxtStartEndRange", nvtxDomainCreate: "NvtxDomainCreate"}},
		{"ENUM_CUDA_DEV_MEM_EVENT_OPER", "CUDA_DEV_MEM_EVENT_OPR_", map[int]string{0: "Allocation", 1: "Deallocation"}},
	}
	for _, e := range enums {
		if err := w.conn.Exec(fmt.Sprintf(ddlEnumTemplate, e.table)); err != nil {
			return err
		}
		ins, err := w.prepare("INSERT INTO " + e.table + " (id, name, label) VALUES (?, ?, ?)")
		if err != nil {
			return err
		}
		// In id order (not map order), so that the same trace always writes the
		// same bytes.
		for _, id := range slices.Sorted(maps.Keys(e.labels)) {
			label := e.labels[id]
			sym := e.prefix + strings.ToUpper(strings.NewReplacer(" ", "_", "-", "_").Replace(label))
			if err := ins.int(int64(id)).text(sym).text(label).exec(); err != nil {
				ins.close()
				return err
			}
		}
		ins.close()
	}
	return nil
}

func indexed(labels []string) map[int]string {
	m := make(map[int]string, len(labels))
	for i, l := range labels {
		m[i] = l
	}
	return m
}

func (w *writer) writeDevices() error {
	if err := w.conn.Exec(ddlTargetGPU); err != nil {
		return err
	}
	ins, err := w.prepare("INSERT INTO TARGET_INFO_GPU (vmId, id, name, totalMemory, smCount, uuid, cuDevice) VALUES (?, ?, ?, ?, ?, ?, ?)")
	if err != nil {
		return err
	}
	defer ins.close()
	for _, d := range w.head.Devices {
		if err := ins.int(vmBits).int(int64(d.ID)).text(d.Name).int(int64(d.MemoryBytes)).int(int64(d.SMs)).text(d.UUID).int(int64(d.ID)).exec(); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) writeProcesses() error {
	if err := w.conn.Exec(ddlProcesses); err != nil {
		return err
	}
	ins, err := w.prepare("INSERT INTO PROCESSES (globalPid, pid, name) VALUES (?, ?, ?)")
	if err != nil {
		return err
	}
	defer ins.close()
	for _, p := range w.head.Processes {
		if err := ins.int(globalPid(p.Pid)).int(int64(p.Pid)).text(p.Name).exec(); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) writeThreads() error {
	if err := w.conn.Exec(ddlThreadNames); err != nil {
		return err
	}
	ins, err := w.prepare("INSERT INTO ThreadNames (nameId, priority, globalTid) VALUES (?, NULL, ?)")
	if err != nil {
		return err
	}
	defer ins.close()
	for _, th := range w.head.Threads {
		id, err := w.id(th.Name)
		if err != nil {
			return err
		}
		if err := ins.int(id).int(globalTid(th.Pid, th.Tid)).exec(); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) writeAPI() error {
	if w.apiCalls == 0 {
		return nil
	}
	if err := w.conn.Exec(ddlRuntime); err != nil {
		return err
	}
	ins, err := w.prepare(`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, "end", eventClass, globalTid, correlationId, nameId, returnValue)
		VALUES (?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.close()
	return w.each(func() error {
		names := map[ingest.StrID]int64{}
		for i := range w.t.APICalls {
			s := &w.t.APICalls[i]
			nameID, ok := names[s.Name]
			if !ok {
				if nameID, err = w.id(w.t.Str(s.Name)); err != nil {
					return err
				}
				names[s.Name] = nameID
			}
			class := int64(0)
			if s.Origin == ingest.OriginCUDADriver {
				class = 1
			}
			if err := ins.int(w.rel(s.Start)).int(w.rel(s.End)).int(class).int(globalTid(s.Pid, s.Tid)).
				intOrNull(int64(s.Correlation), s.Correlation != 0).int(nameID).int(int64(s.Return)).exec(); err != nil {
				return err
			}
		}
		return nil
	})
}

func (w *writer) writeNVTX() error {
	if w.nvtxRanges == 0 {
		return nil
	}
	if err := w.conn.Exec(ddlNVTX); err != nil {
		return err
	}
	ins, err := w.prepare(`INSERT INTO NVTX_EVENTS (start, "end", eventType, category, text, globalTid, endGlobalTid, domainId,
		int64Value, doubleValue) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.close()
	domains := map[domainKey]int64{}
	return w.each(func() error { return w.writeNVTXPart(ins, domains) })
}

// domainKey is an NVTX domain: its name in a process.
type domainKey struct {
	pid  uint32
	name string
}

// writeNVTXPart writes the NVTX ranges of w.t; domains numbers the domains
// of every piece.
func (w *writer) writeNVTXPart(ins *inserter, domains map[domainKey]int64) error {
	key := func(name string) ingest.StrID { k, _ := w.t.Key(name); return k }
	kType, kDomain, kCat, kPayload, kEndTid, kUnclosed :=
		key("nvtx.type"), key("nvtx.domain"), key("nvtx.category"), key("nvtx.payload"), key("nvtx.end_tid"), key("nvtx.unclosed")
	for i := range w.t.Spans {
		s := &w.t.Spans[i]
		if s.Origin != ingest.OriginNVTX {
			continue
		}
		eventType := int64(nvtxPushPop)
		var domain string
		var category, endTid, payloadInt int64
		var hasCat, hasEndTid, unclosed, hasInt, hasDouble bool
		var payloadDouble float64
		for _, a := range w.t.SpanAttrs(s) {
			v := a.Value()
			switch {
			case a.Key == 0:
			case a.Key == kType:
				switch w.t.Str(v.Str()) {
				case NVTXStartEnd:
					eventType = nvtxStartEnd
				case NVTXMark:
					eventType = nvtxMark
				}
			case a.Key == kDomain:
				domain = w.t.Str(v.Str())
			case a.Key == kCat:
				category, hasCat = v.Int(), true
			case a.Key == kEndTid:
				endTid, hasEndTid = v.Int(), true
			case a.Key == kUnclosed:
				unclosed = v.Bool()
			case a.Key == kPayload:
				if v.Kind() == ingest.KindDouble {
					payloadDouble, hasDouble = v.Double(), true
				} else {
					payloadInt, hasInt = v.Int(), true
				}
			}
		}
		domainID := int64(0)
		if domain != "" {
			dk := domainKey{s.Pid, domain}
			var ok bool
			if domainID, ok = domains[dk]; !ok {
				domainID = int64(len(domains) + 1)
				domains[dk] = domainID
				def := fmt.Sprintf(`INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES (%d, %d, %s, %d, %d)`,
					w.rel(s.Start), nvtxDomainCreate, quoteString(domain), globalTid(s.Pid, s.Tid), domainID)
				if err := w.conn.Exec(def); err != nil {
					return err
				}
			}
		}
		ins.int(w.rel(s.Start)).intOrNull(w.rel(s.End), eventType != nvtxMark && !unclosed).int(eventType).intOrNull(category, hasCat).
			text(w.t.Str(s.Name)).int(globalTid(s.Pid, s.Tid)).intOrNull(globalTid(s.Pid, uint32(endTid)), hasEndTid).
			intOrNull(domainID, domainID != 0).intOrNull(payloadInt, hasInt)
		if hasDouble {
			ins.real(payloadDouble)
		} else {
			ins.null()
		}
		if err := ins.exec(); err != nil {
			return err
		}
	}
	return nil
}

// copyKindOf is the ENUM_CUDA_MEMCPY_OPER id of a memcpy: from its name
// when it is one the decoder gives, else from its direction.
func copyKindOf(name string, k ingest.CopyKind) int64 {
	for i := range memcpyLabels {
		if name == MemcpyName(int64(i)) {
			return int64(i)
		}
	}
	switch k {
	case ingest.CopyHtoD:
		return 1
	case ingest.CopyDtoH:
		return 2
	case ingest.CopyDtoD:
		return 8
	case ingest.CopyHtoH:
		return 9
	case ingest.CopyPtoP:
		return 10
	}
	return 0
}

func syncTypeOf(name string) int64 {
	for i := range syncLabels {
		if name == SyncName(int64(i)) {
			return int64(i)
		}
	}
	return 0
}

func (w *writer) writeGPUOps() error {
	type table struct {
		ddl, insert string
		ins         *inserter
	}
	tables := [...]table{
		ingest.OpKernel: {ddlKernel, `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, "end", deviceId, contextId, streamId, correlationId, globalPid,
			demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory,
			dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, graphId, tensorSizeMinusOneElements)
			VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, 0, 0, 0, 0, ?, ?, '')`, nil},
		ingest.OpMemcpy: {ddlMemcpy, `INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, "end", deviceId, contextId, streamId, correlationId, globalPid,
			bytes, copyKind) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?)`, nil},
		ingest.OpMemset: {ddlMemset, `INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, "end", deviceId, contextId, streamId, correlationId, globalPid,
			value, bytes, memKind) VALUES (?, ?, ?, 1, ?, ?, ?, 0, ?, 2)`, nil},
		ingest.OpSync: {ddlSync, `INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, "end", deviceId, contextId, streamId, correlationId,
			globalPid, syncType, eventId) VALUES (?, ?, ?, 1, ?, ?, ?, ?, 4294967295)`, nil},
		ingest.OpGraph: {ddlGraphTrace, `INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start, "end", deviceId, contextId, streamId, correlationId,
			globalPid, graphId, graphExecId) VALUES (?, ?, ?, 1, ?, ?, ?, ?, ?)`, nil},
	}
	for k := range tables {
		if w.opKinds[k] == 0 {
			continue
		}
		if err := w.conn.Exec(tables[k].ddl); err != nil {
			return err
		}
		ins, err := w.prepare(tables[k].insert)
		if err != nil {
			return err
		}
		defer ins.close()
		tables[k].ins = ins
	}
	gridID := int64(0)
	return w.each(func() error {
		names := map[ingest.StrID]int64{}
		nameID := func(s ingest.StrID) (int64, error) {
			if id, ok := names[s]; ok {
				return id, nil
			}
			id, err := w.id(w.t.Str(s))
			names[s] = id
			return id, err
		}
		for i := range w.t.GPUOps {
			o := &w.t.GPUOps[i]
			sh := w.t.ShapeOf(o)
			if int(o.Kind) >= len(tables) {
				continue
			}
			ins := tables[o.Kind].ins
			ins.int(w.rel(o.Start)).int(w.rel(o.End)).int(int64(o.Device)).int(int64(o.Stream)).
				int(int64(o.Correlation)).int(globalPid(o.Pid))
			switch o.Kind {
			case ingest.OpKernel:
				demangled, err := nameID(o.Name)
				if err != nil {
					return err
				}
				short := demangled
				if o.ShortName != 0 {
					if short, err = nameID(o.ShortName); err != nil {
						return err
					}
				}
				gridID++
				ins.int(demangled).int(short).int(int64(sh.Grid[0])).int(int64(sh.Grid[1])).int(int64(sh.Grid[2])).
					int(int64(sh.Block[0])).int(int64(sh.Block[1])).int(int64(sh.Block[2])).int(gridID).
					intOrNull(int64(sh.GraphID), sh.GraphID != 0)
			case ingest.OpMemcpy:
				ins.int(int64(sh.Bytes)).int(copyKindOf(w.t.Str(o.Name), o.Copy))
			case ingest.OpMemset:
				ins.int(int64(sh.Bytes))
			case ingest.OpSync:
				ins.int(syncTypeOf(w.t.Str(o.Name)))
			case ingest.OpGraph:
				ins.int(int64(sh.GraphID)).int(int64(sh.GraphID))
			}
			if err := ins.exec(); err != nil {
				return fmt.Errorf("%s row: %w", o.Kind, err)
			}
		}
		return nil
	})
}

func (w *writer) writeMetrics() error {
	if len(w.head.Samples) == 0 {
		return nil
	}
	if err := w.conn.Exec(ddlTargetGPUMetrics + ";" + ddlGPUMetrics); err != nil {
		return err
	}
	info, err := w.prepare("INSERT INTO TARGET_INFO_GPU_METRICS (typeId, sourceId, typeName, metricId, metricName) VALUES (?, 0, ?, ?, ?)")
	if err != nil {
		return err
	}
	defer info.close()
	ins, err := w.prepare("INSERT INTO GPU_METRICS (timestamp, typeId, metricId, value) VALUES (?, ?, ?, ?)")
	if err != nil {
		return err
	}
	defer ins.close()
	type ref struct {
		typeID int64
		metric ingest.StrID
	}
	ids := map[ingest.StrID]int64{}
	declared := map[ref]bool{}
	for i := range w.head.Samples {
		s := &w.head.Samples[i]
		// The low byte of typeId is the GPU, as the decoder reads it.
		typeID := int64(uint8(s.Device))
		id, ok := ids[s.Metric]
		if !ok {
			id = int64(len(ids))
			ids[s.Metric] = id
		}
		if r := (ref{typeID, s.Metric}); !declared[r] {
			declared[r] = true
			if err := info.int(typeID).text(fmt.Sprintf("GPU Metrics (GPU %d)", uint8(s.Device))).int(id).text(w.head.Str(s.Metric)).exec(); err != nil {
				return err
			}
		}
		if err := ins.int(w.rel(s.Time)).int(typeID).int(id).real(s.Value).exec(); err != nil {
			return err
		}
	}
	return nil
}

func (w *writer) writeMemory() error {
	if len(w.head.MemoryEvents) == 0 {
		return nil
	}
	if err := w.conn.Exec(ddlMemoryUsage); err != nil {
		return err
	}
	ins, err := w.prepare(`INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind,
		memoryOperationType, correlationId) VALUES (?, ?, ?, 1, ?, 0, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	defer ins.close()
	for i := range w.head.MemoryEvents {
		e := &w.head.MemoryEvents[i]
		if err := ins.int(w.rel(e.Time)).int(globalPid(e.Pid)).int(int64(e.Device)).int(int64(e.Address)).int(int64(e.Bytes)).
			int(int64(e.Kind)).int(int64(e.Op)).intOrNull(int64(e.Correlation), e.Correlation != 0).exec(); err != nil {
			return err
		}
	}
	return nil
}
