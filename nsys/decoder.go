package nsys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// sqliteMagic starts every SQLite 3 database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// KernelName chooses which of a kernel's names goes into GPUOp.Name.
type KernelName uint8

const (
	// KernelDemangled is the demangled name with template arguments
	// (nsys demangledName), what nsys stats shows by default.
	KernelDemangled KernelName = iota
	// KernelMangled is the raw mangled name (nsys mangledName, 2024+),
	// falling back to the demangled name where it is absent, as
	// nsys stats' ":mangled" option does.
	KernelMangled
	// KernelShort is the base name (nsys shortName), as ":base" does.
	KernelShort
)

// Tables selects what Decode reads. Devices, processes, threads and the
// export's metadata are always read.
type Tables uint16

const (
	// Kernels: CUPTI_ACTIVITY_KIND_KERNEL.
	Kernels Tables = 1 << iota
	// MemoryOps: CUPTI_ACTIVITY_KIND_MEMCPY and _MEMSET.
	MemoryOps
	// Syncs: CUPTI_ACTIVITY_KIND_SYNCHRONIZATION.
	Syncs
	// Graphs: CUPTI_ACTIVITY_KIND_GRAPH_TRACE (whole-graph executions).
	Graphs
	// API: CUPTI_ACTIVITY_KIND_RUNTIME (CUDA runtime and driver calls).
	API
	// NVTX: NVTX_EVENTS.
	NVTX
	// Metrics: GPU_METRICS.
	Metrics
	// MemoryUsage: CUDA_GPU_MEMORY_USAGE_EVENTS.
	MemoryUsage

	// AllTables is everything; the zero Tables means the same.
	AllTables = Kernels | MemoryOps | Syncs | Graphs | API | NVTX | Metrics | MemoryUsage
)

// Decoder reads Nsight Systems SQLite exports (nsys export --type sqlite,
// nsys 2023.1 to 2026.1) into the model. The zero Decoder reads everything
// and names kernels by their demangled names.
type Decoder struct {
	// KernelName chooses what goes into GPUOp.Name for kernels; the short
	// name always goes into GPUOp.ShortName.
	KernelName KernelName
	// Tables restricts what is read (zero: everything). The stats command
	// reads only what a report needs.
	Tables Tables
}

// Name implements ingest.Decoder.
func (Decoder) Name() string { return "nsys" }

// exportMarkers are table names of which at least one appears in the first
// pages of every Nsight Systems export: nsys creates StringIds and
// TARGET_INFO_SESSION_START_TIME first (all five real exports from 2023.1 to
// 2026.1 name both within their first 64 KiB), so their CREATE statements
// sit at the start of the file.
var exportMarkers = [][]byte{[]byte("StringIds"), []byte("TARGET_INFO_SESSION_START_TIME"), []byte("META_DATA_EXPORT"),
	[]byte("EXPORT_META_DATA"), []byte("CUPTI_ACTIVITY_KIND_"), []byte("NVTX_EVENTS")}

// Sniff implements ingest.Decoder: an SQLite database whose first pages name
// an nsys table. Any other SQLite file is left to Open, which calls it "an
// SQLite database, but not an Nsight Systems export" (and skips it inside a
// directory); DecodeFile, for a file known to be meant as an export, takes
// any SQLite file and says what it lacks.
func (Decoder) Sniff(in *ingest.Input) bool {
	if in.Dir || !bytes.HasPrefix(in.Head, sqliteMagic) {
		return false
	}
	for _, m := range exportMarkers {
		if bytes.Contains(in.Head, m) {
			return true
		}
	}
	return false
}

// Decode implements ingest.Decoder. SQLite needs a seekable file: a
// compressed or streamed input is copied to a temporary one.
func (dec Decoder) Decode(ctx context.Context, in *ingest.Input, t *ingest.Trace) error {
	path, done, err := in.LocalFile()
	if err != nil {
		return err
	}
	defer done()
	return dec.decodeFile(ctx, path, t)
}

// DecodeFile decodes the export at path into a new Trace (Validate is run).
// It is Open for a single file meant as an nsys export: any SQLite file is
// tried, and one that is not an export is an error saying what it lacks.
func (dec Decoder) DecodeFile(ctx context.Context, path string) (*ingest.Trace, error) {
	in, err := ingest.NewInput(path)
	if err != nil {
		return nil, err
	}
	if in.Dir || !bytes.HasPrefix(in.Head, sqliteMagic) {
		return nil, &ingest.InputError{Path: path, Err: fmt.Errorf("not an SQLite database, so not an Nsight Systems export (%w)", ingest.ErrUnknownFormat)}
	}
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: path, Format: dec.Name()}}
	if err := dec.Decode(ctx, in, t); err != nil {
		var ie *ingest.InputError
		if errors.As(err, &ie) {
			return nil, err
		}
		return nil, &ingest.InputError{Path: path, Err: err}
	}
	t.Validate()
	return t, nil
}

// decoder is the state of one Decode.
type decoder struct {
	ctx    context.Context
	opts   Decoder
	tables Tables
	conn   *sqlite.Conn
	schema *schema
	t      *ingest.Trace
	// path is the file, which parallel.go's workers open again; damaged
	// says it is read with writable_schema, and then only on conn.
	path    string
	damaged bool

	// epoch is added to every timestamp: utcEpochNs, or 0 when the export
	// was written with --ts-normalize (its times are already epoch ns).
	epoch int64
	// nvtxEnd is the end given to NVTX ranges that were never closed.
	nvtxEnd int64

	names    *nameCache
	apiNames map[int64]ingest.StrID
	keys     attrKeys
	// launches holds pid<<32|correlationId of every CUDA API call read,
	// sorted, to find GPU ops whose correlation ID matches nothing.
	launches []uint64
	// graphNodeOnly counts kernels that ran from a CUDA graph in an export
	// too old to say which graph.
	graphNodeOnly int
	rowsRead      int
}

// attrKeys are the interned attribute keys the decoder sets.
type attrKeys struct {
	nvtxType, nvtxDomain, nvtxCategory, nvtxPayload, nvtxEndTid, nvtxUnclosed ingest.StrID
	typePushPop, typeStartEnd, typeMark                                       ingest.StrID
}

func (dec Decoder) decodeFile(ctx context.Context, path string, t *ingest.Trace) error {
	conn, err := sqlite.OpenReadOnly(path)
	if err != nil {
		return fmt.Errorf("not a readable SQLite database: %w", err)
	}
	defer conn.Close()
	d := &decoder{ctx: ctx, opts: dec, tables: dec.Tables, conn: conn, t: t, path: path, apiNames: map[int64]ingest.StrID{}}
	if d.tables == 0 {
		d.tables = AllTables
	}
	if d.schema, err = readSchema(conn); err != nil {
		if !sqlite.IsCorrupt(err) {
			return fmt.Errorf("not a readable SQLite database: %w", err)
		}
		// SQLite refuses a file shorter than its header says. With
		// writable_schema it reads what is there instead, which is what a
		// user with a cut-off copy wants; the tables past the cut then fail
		// one by one, each with its own warning.
		damage := describeDamage(path, err)
		d.damaged = true
		if xerr := conn.Exec("PRAGMA writable_schema = ON"); xerr != nil {
			return fmt.Errorf("not a readable SQLite database: %s", damage)
		}
		if d.schema, err = readSchema(conn); err != nil {
			return fmt.Errorf("not a readable SQLite database: %s", damage)
		}
		d.warnf("", "damaged-file", "%s; reading what is there", damage)
	}
	if err := d.checkExport(); err != nil {
		return err
	}
	if !d.schema.has("StringIds") {
		d.warnf("", "missing-table", "no StringIds table: kernel, API and thread names are unknown")
	}
	fetch, closeFetch := stringIDFetcher(conn, d.schema.has("StringIds"))
	defer closeFetch()
	d.names = newNameCache(t.Strings, fetch)
	d.internKeys()

	if err := d.readMetadata(); err != nil {
		return err
	}
	d.readDevices()
	d.readProcesses()
	d.readThreads()
	if err := d.readSpans(); err != nil {
		return err
	}
	if err := d.readGPUOps(); err != nil {
		return err
	}
	if err := d.readMetrics(); err != nil {
		return err
	}
	if err := d.readMemoryUsage(); err != nil {
		return err
	}
	if d.names.err != nil {
		d.warnf("table StringIds", "read-error", "reading StringIds: %v; some names are missing", d.names.err)
	}
	if d.graphNodeOnly > 0 {
		d.warnf("table CUPTI_ACTIVITY_KIND_KERNEL", "graph-id-unknown",
			"%d kernels ran from CUDA graphs, but this export has no graphId column (nsys before 2025.5); their graph is unknown", d.graphNodeOnly)
	}
	src := &t.Sources[0]
	src.Spans, src.GPUOps, src.Samples = t.CPURecordCount(), len(t.GPUOps), len(t.Samples)
	return nil
}

// checkExport tells an Nsight Systems export from any other SQLite file.
func (d *decoder) checkExport() error {
	for _, name := range []string{"META_DATA_EXPORT", "EXPORT_META_DATA", "TARGET_INFO_SESSION_START_TIME", "StringIds"} {
		if d.schema.has(name) {
			return nil
		}
	}
	for name := range d.schema.tables {
		if strings.HasPrefix(name, "CUPTI_ACTIVITY_KIND_") || name == "NVTX_EVENTS" {
			return nil
		}
	}
	found := d.schema.names()
	desc := "no tables"
	if len(found) > 0 {
		if len(found) > 8 {
			found = append(found[:8], "…")
		}
		desc = "tables " + strings.Join(found, ", ")
	}
	return fmt.Errorf("an SQLite database, but not an Nsight Systems export: it has no META_DATA_EXPORT, EXPORT_META_DATA, "+
		"TARGET_INFO_SESSION_START_TIME, StringIds, CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS table (it has %s)", desc)
}

func (d *decoder) internKeys() {
	s := d.t.Strings
	d.keys = attrKeys{
		nvtxType:     s.Intern("nvtx.type"),
		nvtxDomain:   s.Intern("nvtx.domain"),
		nvtxCategory: s.Intern("nvtx.category"),
		nvtxPayload:  s.Intern("nvtx.payload"),
		nvtxEndTid:   s.Intern("nvtx.end_tid"),
		nvtxUnclosed: s.Intern("nvtx.unclosed"),
		typePushPop:  s.Intern(NVTXPushPop),
		typeStartEnd: s.Intern(NVTXStartEnd),
		typeMark:     s.Intern(NVTXMark),
	}
}

// Values of the nvtx.type attribute of NVTX spans.
const (
	NVTXPushPop  = "push_pop"
	NVTXStartEnd = "start_end"
	NVTXMark     = "mark"
)

// warnf records a warning at a position such as "table X row 5".
func (d *decoder) warnf(pos, code, format string, args ...any) {
	d.t.Warnf(0, pos, code, format, args...)
}

func rowPos(table string, rowid int64) string {
	return fmt.Sprintf("table %s row %d", table, rowid)
}

// tick is called per row; it checks for cancellation now and then.
func (d *decoder) tick() error {
	d.rowsRead++
	if d.rowsRead&0xffff == 0 {
		return d.ctx.Err()
	}
	return nil
}

// describeDamage says what is wrong with a file SQLite calls corrupt: a
// truncation is recognized from the header's page count.
func describeDamage(path string, err error) string {
	f, ferr := os.Open(path)
	if ferr != nil {
		return err.Error()
	}
	defer f.Close()
	var h [100]byte
	n, _ := io.ReadFull(f, h[:])
	st, serr := f.Stat()
	if n < len(h) || serr != nil {
		return fmt.Sprintf("the file is truncated inside the SQLite header (%d bytes)", st.Size())
	}
	pageSize := int64(h[16])<<8 | int64(h[17])
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(h[28])<<24 | int64(h[29])<<16 | int64(h[30])<<8 | int64(h[31])
	if want := pageSize * pages; pages > 0 && st.Size() < want {
		return fmt.Sprintf("the file is truncated: %d of %d bytes (SQLite: %v)", st.Size(), want, err)
	}
	return fmt.Sprintf("the file is damaged (SQLite: %v)", err)
}

// baseName is the file name used in the clock domain's name.
func baseName(path string) string { return filepath.Base(path) }
