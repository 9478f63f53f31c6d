package export

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/outfile"
	"github.com/llmprof/llmprof/internal/parquetw"
	"github.com/llmprof/llmprof/report"
)

// The Parquet tables of `llmprof export --parquet DIR`: one file per table
// (requests, tokens, steps, gpu_ops, spans, alignment), zstd-compressed,
// every row led by the partition columns run_id, host and date so that the
// files of many runs can be globbed together or repartitioned (Hive style)
// without rewriting a column. docs/fleet.md is the schema document and shows
// the queries that export/duckdbtest runs on these files. The files are
// written by internal/parquetw (flat schemas, PLAIN and dictionary pages,
// zstd, statistics), not by a general Parquet library: arrow-go's pqarrow
// writer and the compute kernels it brings cost a quarter of a cold build.

// ParquetOptions say which run the rows belong to.
type ParquetOptions struct {
	// RunID names the run (every row's run_id).
	RunID string
	// Host is the machine the run was profiled on ("" when unknown: null).
	Host string
	// Date is the run's day, UTC (zero: null).
	Date time.Time
}

// ParquetStats counts the rows written per table.
type ParquetStats struct {
	Tables map[string]int
}

// ParquetTables are the tables WriteParquet writes, in order.
var ParquetTables = []string{"requests", "tokens", "steps", "gpu_ops", "spans", "alignment"}

// parquetBatch is the rows per record batch (and row group): big enough for
// good compression, small enough that memory stays flat for 10 M GPU ops.
const parquetBatch = 1 << 16

// WriteParquet writes every table into dir (created if needed). The tables
// are written whole into a staging folder inside dir and moved into place
// only when all of them are complete, so an export that fails midway leaves
// dir as it was, never a mix of two runs' tables. Files are created with
// O_EXCL under random names and a symbolic link planted at a table's name is
// replaced, never followed (internal/outfile), so nothing is written outside
// dir.
func WriteParquet(dir string, t *ingest.Trace, res *attribution.Result, al *align.Result, opts ParquetOptions) (ParquetStats, error) {
	st := ParquetStats{Tables: map[string]int{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}
	// Refuse before writing anything if a table's name is taken by
	// something a file cannot replace.
	for _, name := range ParquetTables {
		p := filepath.Join(dir, name+".parquet")
		if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
			return st, fmt.Errorf("%s is a directory, where the %s table goes", p, name)
		}
	}
	stage, err := os.MkdirTemp(dir, ".llmprof-export-*")
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(stage)
	part := newPartition(opts)
	part.inline = true
	writers := tableWriters(t, res, al)
	for _, wr := range writers {
		n, err := writeTable(filepath.Join(stage, wr.name+".parquet"), true, part, wr.fields, parquetBatch, wr.rows)
		if err != nil {
			return st, fmt.Errorf("%s.parquet: %w", wr.name, err)
		}
		st.Tables[wr.name] = n
	}
	for _, wr := range writers {
		if err := os.Rename(filepath.Join(stage, wr.name+".parquet"), filepath.Join(dir, wr.name+".parquet")); err != nil {
			return st, err
		}
	}
	return st, nil
}

// tableWriter writes one table's rows.
type tableWriter struct {
	name   string
	fields []parquetw.Column
	rows   func(*pqTable) error
}

// tableWriters are the tables of ParquetTables, in order.
func tableWriters(t *ingest.Trace, res *attribution.Result, al *align.Result) []tableWriter {
	return []tableWriter{
		{"requests", requestFields(), func(w *pqTable) error { return requestRows(w, report.RequestRows(res)) }},
		{"tokens", tokenFields(), func(w *pqTable) error { return tokenRows(w, res) }},
		{"steps", stepFields, func(w *pqTable) error { return stepRows(w, res) }},
		{"gpu_ops", gpuOpFields, func(w *pqTable) error { return gpuOpRows(w, t) }},
		{"spans", spanFields, func(w *pqTable) error { return spanRows(w, t) }},
		{"alignment", alignmentFields, func(w *pqTable) error { return alignmentRows(w, al) }},
	}
}

// WriteRequestsParquet writes the per-request table alone (`analyze
// --requests FILE.parquet`), with the same columns as requests.parquet.
func WriteRequestsParquet(path string, rows []report.RequestRow, opts ParquetOptions) error {
	part := newPartition(opts)
	part.inline = true
	_, err := writeTable(path, false, part, requestFields(), parquetBatch, func(w *pqTable) error { return requestRows(w, rows) })
	return err
}

type partition struct {
	runID, host string
	date        int32 // days since 1970-01-01
	hasDate     bool
	// inline writes the partition columns into every row; a Hive-style
	// dataset (WriteDataset) carries them in its folder names instead.
	inline bool
}

func newPartition(opts ParquetOptions) partition {
	p := partition{runID: opts.RunID, host: opts.Host}
	if !opts.Date.IsZero() {
		sec := opts.Date.Unix()
		days := sec / 86400
		if sec%86400 < 0 {
			days-- // floor, for days before 1970
		}
		p.date, p.hasDate = int32(days), true
	}
	return p
}

var partitionFields = []parquetw.Column{
	{Name: "run_id", Type: parquetw.String},
	{Name: "host", Type: parquetw.String, Optional: true},
	{Name: "date", Type: parquetw.Date, Optional: true},
}

// writeTable writes one table to path through internal/outfile (inDir: the
// path lies inside a directory the export owns), a row group every rgRows
// rows.
func writeTable(path string, inDir bool, part partition, fields []parquetw.Column, rgRows int, rows func(*pqTable) error) (int, error) {
	f, err := outfile.Create(path, outfile.Options{InDir: inDir})
	if err != nil {
		return 0, err
	}
	defer f.Abort()
	var cols []parquetw.Column
	first := 0
	if part.inline {
		cols, first = append(cols, partitionFields...), len(partitionFields)
	}
	cols = append(cols, fields...)
	pw, err := parquetw.NewWriter(f, cols, parquetw.Options{RowGroupRows: rgRows, CreatedBy: "llmprof (internal/parquetw)"})
	if err != nil {
		return 0, err
	}
	w := &pqTable{w: pw, part: part, first: first}
	err = rows(w)
	if cerr := pw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	return int(pw.Rows()), f.Commit()
}

// pqTable appends rows column by column. Column indices count from the
// first column after the partition columns (first, 0 when they are not
// inline).
type pqTable struct {
	w     *parquetw.Writer
	part  partition
	first int
}

func (w *pqTable) begin() {
	if !w.part.inline {
		return
	}
	w.w.String(0, w.part.runID)
	w.nullableString(1, w.part.host)
	if w.part.hasDate {
		w.w.Int32(2, w.part.date)
	} else {
		w.w.Null(2)
	}
}

func (w *pqTable) str(i int, s string) { w.w.String(w.first+i, s) }

// nstr appends s, or null when it is empty.
func (w *pqTable) nstr(i int, s string) { w.nullableString(w.first+i, s) }

func (w *pqTable) nullableString(c int, s string) {
	if s == "" {
		w.w.Null(c)
	} else {
		w.w.String(c, s)
	}
}

func (w *pqTable) i64(i int, v int64) { w.w.Int64(w.first+i, v) }

// ni64 appends v, or null when ok is false.
func (w *pqTable) ni64(i int, v int64, ok bool) {
	if ok {
		w.w.Int64(w.first+i, v)
	} else {
		w.w.Null(w.first + i)
	}
}

func (w *pqTable) i32(i int, v int32) { w.w.Int32(w.first+i, v) }

// f64 appends v, or null when it is NaN (unknown).
func (w *pqTable) f64(i int, v float64) {
	if math.IsNaN(v) {
		w.w.Null(w.first + i)
	} else {
		w.w.Double(w.first+i, v)
	}
}

func (w *pqTable) boolean(i int, v, ok bool) {
	if ok {
		w.w.Bool(w.first+i, v)
	} else {
		w.w.Null(w.first + i)
	}
}

// ts appends a timestamp, given in ns, at the column's µs.
func (w *pqTable) ts(i int, ns int64) { w.w.Int64(w.first+i, ns/1e3) }

func (w *pqTable) end() error { return w.w.EndRow() }

const (
	str  = parquetw.String
	i64  = parquetw.Int64
	i32  = parquetw.Int32
	f64  = parquetw.Double
	boo  = parquetw.Bool
	tsUS = parquetw.TimestampMicros
)

func col(name string, t parquetw.Type, nullable bool) parquetw.Column {
	return parquetw.Column{Name: name, Type: t, Optional: nullable}
}

func requestFields() []parquetw.Column {
	f := []parquetw.Column{
		col("request_id", str, false), col("tenant", str, false), col("model", str, false),
		col("arrival", tsUS, false), col("arrival_ns", i64, false), col("offset_ms", f64, false),
		col("ttft_ms", f64, true), col("tpot_ms", f64, true), col("e2e_ms", f64, true), col("queue_ms", f64, true),
	}
	for _, s := range attribution.StageNames() {
		f = append(f, col("stage_"+s+"_ms", f64, false))
	}
	return append(f, col("input_tokens", i64, true), col("output_tokens", i64, true), col("cached_tokens", i64, true),
		col("kv_hit", boo, true), col("finish", str, true))
}

func requestRows(w *pqTable, rows []report.RequestRow) error {
	for i := range rows {
		r := &rows[i]
		w.begin()
		w.str(0, r.ID)
		w.str(1, r.Tenant)
		w.str(2, r.Model)
		w.ts(3, r.ArrivalNs)
		w.i64(4, r.ArrivalNs)
		w.f64(5, r.OffsetMs)
		w.f64(6, r.TTFT)
		w.f64(7, r.TPOT)
		w.f64(8, r.E2E)
		w.f64(9, r.Queue)
		c := 10
		for _, v := range r.StagesMs {
			w.f64(c, v)
			c++
		}
		w.ni64(c, int64(r.InputTokens), r.InputTokens >= 0)
		w.ni64(c+1, int64(r.OutputTokens), r.OutputTokens >= 0)
		w.ni64(c+2, int64(r.CachedTokens), r.CachedTokens >= 0)
		w.boolean(c+3, r.KVHit, r.KVKnown)
		w.nstr(c+4, r.Finish)
		if err := w.end(); err != nil {
			return err
		}
	}
	return nil
}

func tokenFields() []parquetw.Column {
	f := []parquetw.Column{
		col("request_id", str, false), col("tenant", str, false), col("model", str, false),
		col("token_index", i32, false), col("emitted_at_ns", i64, false), col("interval_ns", i64, false),
	}
	// The --tokens column names, from the bucket table (attribution/tokens.go).
	for _, b := range attribution.Buckets() {
		f = append(f, col(b.Info().Column, i64, false))
	}
	return append(f, col("estimated", boo, false))
}

func tokenRows(w *pqTable, res *attribution.Result) error {
	if res == nil {
		return nil
	}
	var err error
	res.EachToken(func(tb *attribution.TokenBreakdown) {
		if err != nil {
			return
		}
		r := &res.Requests[tb.Request]
		w.begin()
		w.str(0, res.ID(r))
		w.str(1, res.Tenant(r))
		w.str(2, res.Model(r))
		w.i32(3, int32(tb.Index))
		w.i64(4, tb.EmittedAt)
		w.i64(5, tb.Interval)
		for b, v := range tb.Buckets {
			w.i64(6+b, v)
		}
		w.boolean(6+len(tb.Buckets), tb.Estimated, true)
		err = w.end()
	})
	return err
}

var stepFields = []parquetw.Column{
	col("step", i32, false), col("step_id", i64, false), col("engine", str, true), col("pid", i64, false),
	col("start_ns", i64, false), col("end_ns", i64, false), col("duration_ms", f64, false), col("phase", str, true),
	col("batch_size", i64, false), col("batch_tokens", i64, true), col("requests", i64, false),
	col("gpu_ops", i64, false), col("gpu_ops_via", str, false),
}

func stepRows(w *pqTable, res *attribution.Result) error {
	if res == nil {
		return nil
	}
	for i := range res.Steps {
		s := &res.Steps[i]
		var engine string
		var pid uint32
		if s.Engine >= 0 && s.Engine < len(res.Engines) {
			engine, pid = res.Engines[s.Engine].Name, res.Engines[s.Engine].Pid
		}
		w.begin()
		w.i32(0, int32(i))
		w.i64(1, s.ID)
		w.nstr(2, engine)
		w.i64(3, int64(pid))
		w.i64(4, s.Start)
		w.i64(5, s.End)
		w.f64(6, float64(s.End-s.Start)/1e6)
		w.nstr(7, s.Phase)
		w.i64(8, int64(s.Size))
		w.ni64(9, int64(s.Tokens), s.Tokens >= 0)
		w.i64(10, int64(len(s.Requests)))
		w.i64(11, int64(len(s.Ops)))
		w.str(12, s.OpsVia.String())
		if err := w.end(); err != nil {
			return err
		}
	}
	return nil
}

var gpuOpFields = []parquetw.Column{
	col("start_ns", i64, false), col("end_ns", i64, false), col("duration_ns", i64, false),
	col("device", i32, false), col("stream", i64, false), col("pid", i64, false), col("correlation", i64, false),
	col("kind", str, false), col("category", str, false), col("name", str, true), col("short_name", str, true),
	col("bytes", i64, false), col("graph_id", i64, false),
}

func gpuOpRows(w *pqTable, t *ingest.Trace) error {
	if t == nil {
		return nil
	}
	cats := attribution.NewCategoryCache(t)
	for i := range t.GPUOps {
		op := &t.GPUOps[i]
		sh := t.ShapeOf(op)
		w.begin()
		w.i64(0, op.Start)
		w.i64(1, op.End)
		w.i64(2, op.End-op.Start)
		w.i32(3, int32(op.Device))
		w.i64(4, int64(op.Stream))
		w.i64(5, int64(op.Pid))
		w.i64(6, int64(op.Correlation))
		w.str(7, op.Kind.String())
		w.str(8, cats.Of(op).String())
		w.nstr(9, t.Str(op.Name))
		w.nstr(10, t.Str(op.ShortName))
		w.i64(11, int64(min(sh.Bytes, math.MaxInt64)))
		w.i64(12, int64(sh.GraphID))
		if err := w.end(); err != nil {
			return err
		}
	}
	return nil
}

var spanFields = []parquetw.Column{
	col("trace_id", str, true), col("span_id", str, true), col("parent_span_id", str, true),
	col("name", str, false), col("service", str, true), col("origin", str, false), col("kind", str, false), col("status", str, false),
	col("start_ns", i64, false), col("end_ns", i64, false), col("duration_ns", i64, false),
	col("pid", i64, false), col("tid", i64, false), col("correlation", i64, false),
}

func spanRows(w *pqTable, t *ingest.Trace) error {
	if t == nil {
		return nil
	}
	serviceKey, hasService := t.Key("service.name")
	service := func(s *ingest.Span) string {
		if !hasService || s.Resource < 0 || int(s.Resource) >= len(t.Resources) {
			return ""
		}
		for _, a := range t.Resources[s.Resource].Attrs {
			if a.Key == serviceKey {
				return t.FormatValue(a.Value())
			}
		}
		return ""
	}
	hex := func(zero bool, s string) string {
		if zero {
			return ""
		}
		return s
	}
	// A CUDA API call is a row like a span with no IDs, no resource, no
	// kind or status, and its correlation ID.
	var call ingest.Span
	for r := range t.CPURecords() {
		s, corr := &call, uint32(0)
		if c, ok := r.Call(); ok {
			a := &t.APICalls[c]
			call = ingest.Span{Name: a.Name, Start: a.Start, End: a.End, Pid: a.Pid, Tid: a.Tid, Source: a.Source,
				Origin: a.Origin, Resource: -1, Scope: -1}
			corr = a.Correlation
		} else {
			i, _ := r.Span()
			s = &t.Spans[i]
		}
		w.begin()
		w.nstr(0, hex(s.TraceID.IsZero(), s.TraceID.String()))
		w.nstr(1, hex(s.ID.IsZero(), s.ID.String()))
		w.nstr(2, hex(s.Parent.IsZero(), s.Parent.String()))
		w.str(3, t.Str(s.Name))
		w.nstr(4, service(s))
		w.str(5, s.Origin.String())
		w.str(6, s.Kind.String())
		w.str(7, s.Status.String())
		w.i64(8, s.Start)
		w.i64(9, s.End)
		w.i64(10, s.End-s.Start)
		w.i64(11, int64(s.Pid))
		w.i64(12, int64(s.Tid))
		w.i64(13, int64(corr))
		if err := w.end(); err != nil {
			return err
		}
	}
	return nil
}

var alignmentFields = []parquetw.Column{
	col("domain", str, false), col("kind", str, true), col("status", str, false), col("anchors", str, false),
	col("offset_ns", i64, false), col("drift_ppm", f64, false), col("drift_fitted", boo, false),
	col("residual_p50_ns", i64, true), col("residual_p99_ns", i64, true), col("bound_ns", i64, true),
}

func alignmentRows(w *pqTable, al *align.Result) error {
	if al == nil {
		return nil
	}
	opt := func(p *int64) (int64, bool) {
		if p == nil {
			return 0, false
		}
		return *p, true
	}
	for _, f := range al.Fits {
		w.begin()
		w.str(0, f.Domain)
		w.nstr(1, f.Kind)
		w.str(2, string(f.Status))
		w.str(3, f.Anchors.String())
		w.i64(4, f.OffsetNs)
		w.f64(5, f.DriftPPM)
		w.boolean(6, f.DriftFitted, true)
		v, ok := opt(f.ResidualP50Ns)
		w.ni64(7, v, ok)
		v, ok = opt(f.ResidualP99Ns)
		w.ni64(8, v, ok)
		v, ok = opt(f.BoundNs)
		w.ni64(9, v, ok)
		if err := w.end(); err != nil {
			return err
		}
	}
	return nil
}
