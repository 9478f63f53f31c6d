package nsys

import (
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// Source.Meta keys the decoder sets.
const (
	MetaVersion      = "nsys.version"        // EXPORT_PRODUCT_VERSION, e.g. 2025.1.1.110
	MetaSchema       = "nsys.schema"         // EXPORT_SCHEMA_VERSION, e.g. 3.17.1
	MetaTimeNorm     = "nsys.ts_normalize"   // EXPORT_PARAM_TIME_NORMALIZE: true when times are epoch ns
	MetaTimeShift    = "nsys.ts_shift"       // EXPORT_PARAM_TIME_SHIFT (ns), already in the stored times
	MetaUTCEpoch     = "nsys.utc_epoch_ns"   // TARGET_INFO_SESSION_START_TIME.utcEpochNs
	MetaUTCTime      = "nsys.utc_time"       // TARGET_INFO_SESSION_START_TIME.utcTime
	MetaDuration     = "nsys.duration_ns"    // ANALYSIS_DETAILS.duration
	MetaOffset       = "nsys.time_offset_ns" // what the decoder added to every stored time
	MetaGraphTrace   = "nsys.cuda_graph_trace"
	MetaMetadataName = "nsys.metadata_table" // META_DATA_EXPORT (2024+) or EXPORT_META_DATA
)

// SessionOffset returns what the decoder added to an nsys source's stored
// timestamps to make them epoch ns (0 for a normalized export), so that
// reports can print times relative to the session start as nsys does.
func SessionOffset(src *ingest.Source) int64 {
	v, err := strconv.ParseInt(src.Meta[MetaOffset], 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// exportKeys are the only export metadata rows read: version, schema and
// the time options. Paths, host and user names are left in the file.
var exportKeys = []string{"EXPORT_PRODUCT_VERSION", "EXPORT_SCHEMA_VERSION", "EXPORT_PARAM_TIME_NORMALIZE", "EXPORT_PARAM_TIME_SHIFT"}

func (d *decoder) readMetadata() error {
	src := &d.t.Sources[0]
	src.Format = "nsys-sqlite"
	src.Clock = ingest.ClockDomain{Name: "nsys:" + baseName(src.Path), Kind: ingest.ClockNsysSession}
	if src.Meta == nil {
		src.Meta = map[string]string{}
	}
	meta := map[string]string{}
	table := ""
	for _, name := range []string{"META_DATA_EXPORT", "EXPORT_META_DATA"} {
		if d.schema.has(name) {
			table = name
			break
		}
	}
	if table == "" {
		d.warnf("", "missing-table", "no META_DATA_EXPORT or EXPORT_META_DATA table: nsys version and export options unknown; times are taken as session-relative")
	} else {
		src.Meta[MetaMetadataName] = table
		keys := make([]string, len(exportKeys))
		for i, k := range exportKeys {
			keys[i] = quoteString(k)
		}
		err := d.eachRow(table, []column{exp("name").text(), expNull("value").text()},
			"name IN ("+strings.Join(keys, ", ")+")", func(st *sqlite.Stmt) {
				meta[st.Text(1)] = st.Text(2)
			})
		if err != nil {
			d.warnf("table "+table, "read-error", "reading %s: %v", table, err)
		}
	}
	if v := meta["EXPORT_PRODUCT_VERSION"]; v != "" {
		src.Producer = "nsys " + v
		src.Meta[MetaVersion] = v
	}
	if v := meta["EXPORT_SCHEMA_VERSION"]; v != "" {
		src.Meta[MetaSchema] = v
	}
	normalized := strings.EqualFold(meta["EXPORT_PARAM_TIME_NORMALIZE"], "true")
	src.Meta[MetaTimeNorm] = strconv.FormatBool(normalized)
	if v := meta["EXPORT_PARAM_TIME_SHIFT"]; v != "" {
		src.Meta[MetaTimeShift] = v
	}
	shift, _ := strconv.ParseInt(meta["EXPORT_PARAM_TIME_SHIFT"], 10, 64)

	utc, haveUTC := int64(0), false
	if d.schema.has("TARGET_INFO_SESSION_START_TIME") {
		err := d.eachRow("TARGET_INFO_SESSION_START_TIME", []column{expNull("utcEpochNs"), opt("utcTime").text()}, "", func(st *sqlite.Stmt) {
			if !haveUTC && !st.IsNull(1) {
				utc, haveUTC = st.Int64(1), true
				if t := st.Text(2); t != "" {
					src.Meta[MetaUTCTime] = t
				}
			}
		})
		if err != nil {
			d.warnf("table TARGET_INFO_SESSION_START_TIME", "read-error", "reading TARGET_INFO_SESSION_START_TIME: %v", err)
		}
	}
	if d.schema.has("ANALYSIS_DETAILS") {
		_ = d.eachRow("ANALYSIS_DETAILS", []column{exp("duration")}, "", func(st *sqlite.Stmt) {
			if !st.IsNull(1) {
				src.Meta[MetaDuration] = strconv.FormatInt(st.Int64(1), 10)
			}
		})
	}
	if d.schema.has("TARGET_INFO_SYSTEM_ENV") {
		// Only the Hostname row (the table also holds the environment), and
		// only a hash of it leaves the decoder: it tells hosts apart.
		_ = d.eachRow("TARGET_INFO_SYSTEM_ENV", []column{exp("value").text()}, "name = 'Hostname'", func(st *sqlite.Stmt) {
			if h := st.Text(1); h != "" && src.Host == "" {
				src.Host = ingest.HostID(h)
			}
		})
	}
	if d.schema.has("META_DATA_CAPTURE") {
		// Only this one named row: the table also holds the profiled
		// process's whole environment, which must never be read out.
		_ = d.eachRow("META_DATA_CAPTURE", []column{exp("value").text()}, "name = 'CUDA_GRAPH_TRACE_OPTIONS:MODE'", func(st *sqlite.Stmt) {
			src.Meta[MetaGraphTrace] = st.Text(1)
		})
	}

	switch {
	case normalized:
		// Times are already epoch ns (plus the export's shift).
		d.epoch = 0
		if haveUTC {
			src.Meta[MetaUTCEpoch] = strconv.FormatInt(utc, 10)
			src.Anchors = append(src.Anchors, ingest.ClockAnchor{Kind: ingest.AnchorEpoch, Local: utc + shift, RefLow: utc, RefHigh: utc})
		}
	case haveUTC:
		d.epoch = utc
		src.Meta[MetaUTCEpoch] = strconv.FormatInt(utc, 10)
		// The session start, ts 0, is stored as utc+shift; nsys says it
		// happened at utc.
		src.Anchors = append(src.Anchors, ingest.ClockAnchor{Kind: ingest.AnchorEpoch, Local: utc + shift, RefLow: utc, RefHigh: utc})
	default:
		d.warnf("table TARGET_INFO_SESSION_START_TIME", "no-session-start",
			"no session start time (utcEpochNs): times stay relative to the session start and cannot be placed on a wall clock")
	}
	src.Meta[MetaOffset] = strconv.FormatInt(d.epoch, 10)
	return nil
}

// eachRow runs a small query over table and calls fn for each row; column i
// of cols is column i+1 of st (column 0 is the rowid).
func (d *decoder) eachRow(table string, cols []column, where string, fn func(st *sqlite.Stmt)) error {
	q, err := d.buildQuery(table, cols, where, "")
	if err != nil {
		return err
	}
	st, err := d.conn.Prepare(q.sql)
	if err != nil {
		return err
	}
	defer st.Close()
	for {
		ok, err := st.Step()
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
		fn(st)
	}
}

func (d *decoder) readDevices() {
	seen := map[int16]bool{}
	add := func(dev ingest.Device) {
		if seen[dev.ID] {
			return
		}
		seen[dev.ID] = true
		d.t.Devices = append(d.t.Devices, dev)
	}
	switch {
	case d.schema.has("TARGET_INFO_GPU"):
		cols := []column{exp("id"), expNull("name").text(), expNull("uuid").text(), expNull("smCount"), expNull("totalMemory")}
		err := d.eachRow("TARGET_INFO_GPU", cols, "", func(st *sqlite.Stmt) {
			id, ok := int16Of(st.Int64(1))
			if st.IsNull(1) || !ok {
				d.warnf(rowPos("TARGET_INFO_GPU", st.Int64(0)), "bad-value", "device id %s is not a device ordinal; row skipped", st.Text(1))
				return
			}
			add(ingest.Device{ID: id, Name: st.Text(2), UUID: st.Text(3), SMs: int(st.Int64(4)), MemoryBytes: uint64(max(st.Int64(5), 0))})
		})
		if err != nil {
			d.warnf("table TARGET_INFO_GPU", "read-error", "reading TARGET_INFO_GPU: %v", err)
		}
	case d.schema.has("TARGET_INFO_CUDA_DEVICE"):
		cols := []column{expNull("gpuId"), exp("cudaId"), opt("uuid").text(), opt("numMultiprocessors")}
		err := d.eachRow("TARGET_INFO_CUDA_DEVICE", cols, "", func(st *sqlite.Stmt) {
			raw := st.Int64(1)
			if st.IsNull(1) {
				raw = st.Int64(2)
			}
			id, ok := int16Of(raw)
			if !ok {
				return
			}
			add(ingest.Device{ID: id, UUID: st.Text(3), SMs: int(st.Int64(4))})
		})
		if err != nil {
			d.warnf("table TARGET_INFO_CUDA_DEVICE", "read-error", "reading TARGET_INFO_CUDA_DEVICE: %v", err)
		}
	}
}

func (d *decoder) readProcesses() {
	if !d.schema.has("PROCESSES") {
		return
	}
	cols := []column{expNull("globalPid"), expNull("pid"), expNull("name").text()}
	err := d.eachRow("PROCESSES", cols, "", func(st *sqlite.Stmt) {
		pid := uint32(st.Int64(2))
		if st.IsNull(2) {
			pid = pidOf(st.Int64(1))
		}
		d.t.Processes = append(d.t.Processes, ingest.Process{Pid: pid, Name: st.Text(3)})
	})
	if err != nil {
		d.warnf("table PROCESSES", "read-error", "reading PROCESSES: %v", err)
	}
}

func (d *decoder) readThreads() {
	if !d.schema.has("ThreadNames") {
		return
	}
	cols := []column{exp("nameId"), expNull("globalTid")}
	err := d.eachRow("ThreadNames", cols, "", func(st *sqlite.Stmt) {
		name, ok := d.names.lookup(st.Int64(1))
		if !ok {
			return
		}
		g := st.Int64(2)
		d.t.Threads = append(d.t.Threads, ingest.Thread{Pid: pidOf(g), Tid: tidOf(g), Name: d.t.Str(name)})
	})
	if err != nil {
		d.warnf("table ThreadNames", "read-error", "reading ThreadNames: %v", err)
	}
}

// globalTid packs <hardware:8><VM:8><pid:24><tid:24> (nsys SQLite schema
// reference); globalPid is the same with the tid bits zero.
func pidOf(global int64) uint32 { return uint32(global>>24) & 0xFFFFFF }
func tidOf(global int64) uint32 { return uint32(global) & 0xFFFFFF }

func int16Of(v int64) (int16, bool) {
	if v < -1<<15 || v >= 1<<15 {
		return -1, false
	}
	return int16(v), true
}

func uint32Of(v int64) (uint32, bool) {
	if v < 0 || v > 1<<32-1 {
		return 0, false
	}
	return uint32(v), true
}
