package export

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/llmprof/llmprof/align"
	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/parquetw"
)

// A dataset (`llmprof export --dataset DIR`) holds many runs as one
// Hive-partitioned table per ParquetTables entry, plus the inputs table:
//
//	DIR/<table>/date=YYYY-MM-DD/host=NAME/run_id=ID/part-0.parquet
//
// the layout Spark's partitionBy writes and DuckDB, Spark and Trino read
// with the partition columns taken from the folder names (docs/fleet.md).
// The files hold the table's own columns only. A run is added whole or not
// at all, and never replaces a run already there.

// DatasetTables are the tables of a dataset: ParquetTables and the run's
// kept inputs.
var DatasetTables = append(append([]string(nil), ParquetTables...), InputsTable)

// InputsTable holds the bytes of the files the run was analysed from, so
// that `analyze --parquet DIR RUN_ID` can analyse the run again.
const InputsTable = "inputs"

// DatasetFile is the name of a partition's one data file.
const DatasetFile = "part-0.parquet"

// HiveNull is the folder value Hive, Spark and Trino read as null.
const HiveNull = "__HIVE_DEFAULT_PARTITION__"

// DatasetOptions say which partition the run goes to and what it keeps.
type DatasetOptions struct {
	ParquetOptions
	// Inputs are the paths the run was read from (files or directories),
	// kept in the inputs table; nil keeps none.
	Inputs []string
}

// inputChunk is the most input bytes per row of the inputs table, and
// inputRowGroup the rows per row group: what a reader holds at once.
const (
	inputChunk    = 1 << 20
	inputRowGroup = 16
)

var inputFields = []parquetw.Column{
	col("input", i32, false), col("path", str, false), col("offset", i64, false), col("data", parquetw.Binary, false),
}

// EscapePartition writes a partition value the way Hive does
// (FileUtils.escapePathName, which Spark's ExternalCatalogUtils copies): the
// characters that mean something in a path or a glob, '%' and control
// characters become %XX, which all three engines decode. The empty string is
// null (HiveNull). So no value can name a folder outside its own.
func EscapePartition(v string) string {
	if v == "" {
		return HiveNull
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// PartitionDir is the folder of one run's partition of table, relative to
// the dataset: table/date=…/host=…/run_id=….
func PartitionDir(table string, o ParquetOptions) (string, error) {
	date := ""
	if !o.Date.IsZero() {
		date = o.Date.UTC().Format(time.DateOnly)
	}
	segs := []string{table}
	for _, kv := range [][2]string{{"date", date}, {"host", o.Host}, {"run_id", o.RunID}} {
		if !utf8.ValidString(kv[1]) {
			return "", fmt.Errorf("%s %q is not UTF-8", kv[0], kv[1])
		}
		s := kv[0] + "=" + EscapePartition(kv[1])
		// 255 bytes is a file name's limit on every common file system.
		if len(s) > 255 {
			return "", fmt.Errorf("%s %.40q… makes a folder name of %d bytes (at most 255)", kv[0], kv[1], len(s))
		}
		segs = append(segs, s)
	}
	return path.Join(segs...), nil
}

// WriteDataset adds one run to the dataset in dir (created if needed). It
// refuses, naming the partition, a run whose run_id the dataset already has
// under any date and host. Every table is written into a staging folder
// first and moved into place once all are complete. The partition folders
// are made and the files moved through an os.Root on dir, so no name from
// the data, and no symbolic link planted in the dataset, places a file
// outside dir; the files themselves are written by internal/outfile.
func WriteDataset(dir string, t *ingest.Trace, res *attribution.Result, al *align.Result, opts DatasetOptions) (ParquetStats, error) {
	st := ParquetStats{Tables: map[string]int{}}
	if opts.RunID == "" {
		return st, errors.New("a dataset's run needs a run_id")
	}
	parts := map[string]string{}
	for _, table := range DatasetTables {
		p, err := PartitionDir(table, opts.ParquetOptions)
		if err != nil {
			return st, err
		}
		parts[table] = p
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return st, err
	}
	if p, ok, err := FindRun(dir, opts.RunID); err != nil {
		return st, err
	} else if ok {
		return st, fmt.Errorf("run_id %q is already in the dataset: %s", opts.RunID, filepath.Join(dir, filepath.FromSlash(p)))
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return st, err
	}
	defer root.Close()
	stage, err := os.MkdirTemp(dir, ".llmprof-stage-*")
	if err != nil {
		return st, err
	}
	defer os.RemoveAll(stage)
	part := newPartition(opts.ParquetOptions)
	writers := tableWriters(t, res, al)
	if opts.Inputs != nil {
		writers = append(writers, tableWriter{InputsTable, inputFields, func(w *pqTable) error { return inputRows(w, opts.Inputs) }})
	}
	for _, wr := range writers {
		rg := parquetBatch
		if wr.name == InputsTable {
			rg = inputRowGroup
		}
		n, err := writeTable(filepath.Join(stage, wr.name+".parquet"), true, part, wr.fields, rg, wr.rows)
		if err != nil {
			return st, fmt.Errorf("%s: %w", wr.name, err)
		}
		st.Tables[wr.name] = n
	}
	// Move the tables in; if one cannot go, take out those already moved.
	var moved []string
	for _, wr := range writers {
		p := parts[wr.name]
		err := root.MkdirAll(path.Dir(p), 0o755)
		if err == nil {
			// Mkdir, not MkdirAll: the run's folder must be new.
			if err = root.Mkdir(p, 0o755); err != nil {
				err = fmt.Errorf("partition %s: %w", filepath.Join(dir, filepath.FromSlash(p)), err)
			} else {
				moved = append(moved, p)
				err = root.Rename(path.Join(filepath.Base(stage), wr.name+".parquet"), path.Join(p, DatasetFile))
			}
		}
		if err != nil {
			for _, m := range moved {
				_ = root.RemoveAll(m)
			}
			return st, err
		}
	}
	return st, nil
}

// FindRun looks for run_id in every table of the dataset in dir and returns
// the first partition folder (relative, slash-separated) that holds it.
func FindRun(dir, runID string) (string, bool, error) {
	want := "run_id=" + EscapePartition(runID)
	for _, table := range DatasetTables {
		dates, err := subdirs(filepath.Join(dir, table), "date=")
		if err != nil {
			return "", false, err
		}
		for _, d := range dates {
			hosts, err := subdirs(filepath.Join(dir, table, d), "host=")
			if err != nil {
				return "", false, err
			}
			for _, h := range hosts {
				if _, err := os.Lstat(filepath.Join(dir, table, d, h, want)); err == nil {
					return path.Join(table, d, h, want), true, nil
				} else if !errors.Is(err, fs.ErrNotExist) {
					return "", false, err
				}
			}
		}
	}
	return "", false, nil
}

// subdirs lists the entries of dir named prefix…; none when dir is absent.
func subdirs(dir, prefix string) ([]string, error) {
	es, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// inputRows writes the files of every input: a file as its base name, a
// directory's regular files (symbolic links to files followed) under the
// directory's base name, in chunks of inputChunk bytes.
func inputRows(w *pqTable, inputs []string) error {
	buf := make([]byte, inputChunk)
	for i, in := range inputs {
		if in == "-" {
			return errors.New("standard input cannot be kept in the dataset (give the run's files, or leave its inputs out)")
		}
		base := filepath.Base(filepath.Clean(in))
		// WalkDir does not follow a link, even the root: resolve it.
		top, err := filepath.EvalSymlinks(in)
		if err != nil {
			return err
		}
		err = filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			fi, err := os.Stat(p)
			if err != nil || !fi.Mode().IsRegular() {
				return err // a link to something else is not an input
			}
			rel, err := filepath.Rel(top, p)
			if err != nil {
				return err
			}
			name := path.Join(base, filepath.ToSlash(rel))
			if rel == "." {
				name = base
			}
			return inputFile(w, int32(i), name, p, buf)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func inputFile(w *pqTable, input int32, name, p string, buf []byte) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	var off int64
	for {
		n, err := io.ReadFull(f, buf)
		if n > 0 || off == 0 {
			w.begin()
			w.i32(0, input)
			w.str(1, name)
			w.i64(2, off)
			w.w.Bytes(w.first+3, buf[:n])
			if err := w.end(); err != nil {
				return err
			}
			off += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
