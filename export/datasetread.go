package export

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/internal/parquetw"
)

// RestoreInputs writes the input files kept for run runID in the dataset
// dir (the inputs table, WriteDataset) under dest, and returns the paths to
// analyse, in the order the run's export was given them. The table is
// untrusted: every name is checked to stay under dest (an os.Root), a file's
// chunks must follow one another, and a file is never written twice. done,
// if set, is told the bytes written so far.
func RestoreInputs(dir, runID, dest string, done func(bytes int64)) ([]string, error) {
	file, err := inputsFile(dir, runID)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	r, err := parquetw.NewReader(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	defer r.Close()
	var cols [4]int
	for i, want := range inputFields {
		c := r.Column(want.Name)
		if c < 0 || r.Columns()[c] != want {
			return nil, fmt.Errorf("%s: no %s column of type %s", file, want.Name, want.Type)
		}
		cols[i] = c
	}
	root, err := os.OpenRoot(dest)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	var (
		out     *os.File
		cur     string // the file being written: input/path
		written int64
		total   int64
		args    = map[int32]string{}
		seen    = map[string]bool{}
	)
	closeCur := func() error {
		if out == nil {
			return nil
		}
		err := out.Close()
		out = nil
		return err
	}
	defer closeCur()
	for g := range r.RowGroups() {
		var v [4]*parquetw.Values
		for i, c := range cols {
			if v[i], err = r.Read(g, c); err != nil {
				return nil, fmt.Errorf("%s: %w", file, err)
			}
		}
		for row := range r.GroupRows(g) {
			input, name, off, data := v[0].Int32[row], string(v[1].Bytes[row]), v[2].Int64[row], v[3].Bytes[row]
			if input < 0 || input > 1<<16 || !filepath.IsLocal(filepath.FromSlash(name)) || strings.Contains(name, `\`) {
				return nil, fmt.Errorf("%s: row %d: input %d, path %q: not a file of the run", file, row, input, name)
			}
			key := strconv.Itoa(int(input)) + "/" + name
			if key != cur || off == 0 {
				if off != 0 || seen[key] {
					return nil, fmt.Errorf("%s: %s: a chunk at offset %d out of order", file, name, off)
				}
				if err := closeCur(); err != nil {
					return nil, err
				}
				if err := root.MkdirAll(path.Dir(key), 0o755); err != nil {
					return nil, err
				}
				if out, err = root.OpenFile(key, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
					return nil, err
				}
				cur, written, seen[key] = key, 0, true
				top, _, _ := strings.Cut(name, "/")
				args[input] = filepath.Join(dest, strconv.Itoa(int(input)), top)
			}
			if off != written {
				return nil, fmt.Errorf("%s: %s: a chunk at offset %d after %d bytes", file, name, off, written)
			}
			if len(data) > inputChunk || total+int64(len(data)) > maxRestoreRatio*max(fi.Size(), 1<<20) {
				return nil, fmt.Errorf("%s: %s: the input files would be over %d× the table's %d bytes (chunks of up to %d bytes are written): not a table that export --dataset wrote",
					file, name, maxRestoreRatio, fi.Size(), inputChunk)
			}
			if _, err := out.Write(data); err != nil {
				return nil, err
			}
			written += int64(len(data))
			total += int64(len(data))
			if done != nil {
				done(total)
			}
		}
	}
	if err := closeCur(); err != nil {
		return nil, err
	}
	if len(args) == 0 {
		return nil, fmt.Errorf("%s: no input files", file)
	}
	var paths []string
	for _, k := range slices.Sorted(maps.Keys(args)) {
		paths = append(paths, args[k])
	}
	return paths, nil
}

// maxRestoreRatio bounds the input bytes restored per byte of the inputs
// table: zstd compresses a trace about 8× (the demo run's 42.6 MB of inputs
// take 5.3 MB), while a crafted table of repeated pages would otherwise
// expand without end onto disk.
const maxRestoreRatio = 256

// inputsFile is the inputs table's file of run runID.
func inputsFile(dir, runID string) (string, error) {
	want := "run_id=" + EscapePartition(runID)
	// Matched inside dir, so that glob characters in dir's own name are
	// names, not patterns (EscapePartition escapes them in want).
	matches, err := fs.Glob(os.DirFS(dir), path.Join(InputsTable, "date=*", "host=*", want, DatasetFile))
	if err != nil {
		return "", err
	}
	for i, m := range matches {
		matches[i] = filepath.Join(dir, filepath.FromSlash(m))
	}
	switch {
	case len(matches) == 1:
		return matches[0], nil
	case len(matches) > 1:
		return "", fmt.Errorf("run_id %q is in %d partitions of %s: %s", runID, len(matches), dir, strings.Join(matches, ", "))
	}
	if p, ok, err := FindRun(dir, runID); err != nil {
		return "", err
	} else if ok {
		return "", fmt.Errorf("run_id %q (%s) was exported without its inputs (--no-inputs): it cannot be analysed again", runID, filepath.Join(dir, filepath.FromSlash(p)))
	}
	if _, err := os.Stat(dir); err != nil {
		return "", err
	}
	return "", errors.New("no run_id " + strconv.Quote(runID) + " in the dataset " + dir)
}
