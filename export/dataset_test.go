package export

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/parquetw"
)

func TestEscapePartition(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"gpu-node-7", "gpu-node-7"},
		{"", HiveNull},
		{"..", ".."},
		{"a/../../b", "a%2F..%2F..%2Fb"},
		{`c:\x`, "c%3A%5Cx"},
		{"run=1%", "run%3D1%25"},
		{"tab\there\n", "tab%09here%0A"},
		{"glob*?[x]{y}^", "glob%2A%3F%5Bx%5D%7By}%5E"},
		{"é✓ ok", "é✓ ok"},
	} {
		if got := EscapePartition(tc.in); got != tc.want {
			t.Errorf("EscapePartition(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if _, err := PartitionDir("requests", ParquetOptions{RunID: strings.Repeat("r", 300)}); err == nil {
		t.Error("a 300-byte run_id made a folder name")
	}
	if _, err := PartitionDir("requests", ParquetOptions{RunID: "a\xffb"}); err == nil {
		t.Error("a run_id that is not UTF-8 made a folder name")
	}
	p, err := PartitionDir("requests", ParquetOptions{RunID: "../../x", Date: time.Date(2026, 12, 2, 23, 0, 0, 0, time.UTC)})
	if err != nil || p != "requests/date=2026-12-02/host="+HiveNull+"/run_id=..%2F..%2Fx" {
		t.Errorf("PartitionDir = %q, %v", p, err)
	}
}

// TestDatasetConfined: a run goes in once; a symbolic link planted in the
// dataset does not lead a file out of it; nothing is left half-written.
func TestDatasetConfined(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fleet")
	outside := t.TempDir()
	in := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(in, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := DatasetOptions{ParquetOptions: ParquetOptions{RunID: "../run", Host: "h/../../x"}, Inputs: []string{in}}
	if _, err := WriteDataset(dir, &ingest.Trace{Strings: ingest.NewStrings()}, nil, nil, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteDataset(dir, &ingest.Trace{Strings: ingest.NewStrings()}, nil, nil, opts); err == nil || !strings.Contains(err.Error(), "already in the dataset: "+filepath.Join(dir, "requests")) {
		t.Errorf("the same run again: %v", err)
	}
	// The tokens table's folder for a new day is a link out of the dataset.
	if err := os.MkdirAll(filepath.Join(dir, "tokens"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "tokens", "date=2027-01-01")); err != nil {
		t.Fatal(err)
	}
	opts.RunID, opts.Date = "second", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := WriteDataset(dir, &ingest.Trace{Strings: ingest.NewStrings()}, nil, nil, opts); err == nil {
		t.Error("wrote through a link out of the dataset")
	}
	// The requests table, moved in before tokens failed, is taken out.
	if p, ok, err := FindRun(dir, "second"); ok || err != nil {
		t.Errorf("the failed run is left in %s (%v)", p, err)
	}
	if es, _ := os.ReadDir(outside); len(es) != 0 {
		t.Errorf("%d entries written outside the dataset", len(es))
	}
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left %s behind", e.Name())
		}
	}
}

// TestRestoreInputs: the files of a run (a file and a directory) come back
// byte for byte, in the order given; an inputs table naming a path out of
// its folder, or chunks out of order, is an error that writes nothing. The
// dataset's own name holds glob characters, which are not patterns.
func TestRestoreInputs(t *testing.T) {
	src := t.TempDir()
	big := bytes.Repeat([]byte("0123456789abcdef"), inputChunk/16*2+7) // three chunks
	files := map[string][]byte{"run/a.jsonl": big, "run/sub/b.sqlite": []byte("b"), "run/empty": nil, "c.json": []byte("c")}
	for name, data := range files {
		p := filepath.Join(src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(t.TempDir(), "fleet[1]*") // glob characters in its name are names
	inputs := []string{filepath.Join(src, "c.json"), filepath.Join(src, "run")}
	if _, err := WriteDataset(dir, &ingest.Trace{Strings: ingest.NewStrings()}, nil, nil, DatasetOptions{ParquetOptions: ParquetOptions{RunID: "r1"}, Inputs: inputs}); err != nil {
		t.Fatal(err)
	}
	dest := t.TempDir()
	var last int64
	got, err := RestoreInputs(dir, "r1", dest, func(n int64) { last = n })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dest, "0", "c.json"), filepath.Join(dest, "1", "run")}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("paths %v, want %v", got, want)
	}
	for name, data := range files {
		arg := "1"
		if name == "c.json" {
			arg = "0"
		}
		b, err := os.ReadFile(filepath.Join(dest, arg, name))
		if err != nil || !bytes.Equal(b, data) {
			t.Errorf("%s: %d bytes (%v), want %d", name, len(b), err, len(data))
		}
	}
	if last != int64(len(big)+2) {
		t.Errorf("progress says %d bytes, want %d", last, len(big)+2)
	}

	for _, tc := range []struct {
		name string
		rows [][2]any // path, offset
	}{
		{"parent", [][2]any{{"../evil", int64(0)}}},
		{"absolute", [][2]any{{"/tmp/evil", int64(0)}}},
		{"backslash", [][2]any{{`a\..\..\evil`, int64(0)}}},
		{"gap", [][2]any{{"a", int64(0)}, {"a", int64(5)}}},
		{"twice", [][2]any{{"a", int64(0)}, {"b", int64(0)}, {"a", int64(0)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, InputsTable, "date=x", "host=y", "run_id=bad", DatasetFile)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			w, err := parquetw.NewWriter(&buf, inputFields, parquetw.Options{})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.rows {
				w.Int32(0, 0)
				w.String(1, r[0].(string))
				w.Int64(2, r[1].(int64))
				w.Bytes(3, []byte("abc"))
				if err := w.EndRow(); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			dest := filepath.Join(t.TempDir(), "dest")
			if err := os.Mkdir(dest, 0o755); err != nil {
				t.Fatal(err)
			}
			if _, err := RestoreInputs(dir, "bad", dest, nil); err == nil {
				t.Error("restored without an error")
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(dest), "evil")); err == nil {
				t.Error("wrote outside the folder")
			}
		})
	}
}
