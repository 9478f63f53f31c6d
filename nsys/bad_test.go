package nsys

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/shareddata"
	"github.com/llmprof/llmprof/nsys/internal/sqlite"
)

// damaged writes the hand-built trace as an export and applies sql to it.
func damaged(t *testing.T, sql string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "damaged.sqlite")
	if err := WriteSQLite(path, handTrace(1_700_000_000_000_000_000), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if sql == "" {
		return path
	}
	c, err := sqlite.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Exec(sql); err != nil {
		t.Fatalf("damaging the file: %v", err)
	}
	return path
}

// unconstrained rebuilds a table without its NOT NULL constraints, so that
// NULLs nsys would never write can be put in.
func unconstrained(table string) string {
	return "CREATE TABLE tmp AS SELECT * FROM " + table + "; DROP TABLE " + table + "; ALTER TABLE tmp RENAME TO " + table + ";"
}

func openAll(t *testing.T, path string) (*ingest.Trace, error) {
	t.Helper()
	return ingest.Open(context.Background(), []string{path}, []ingest.Decoder{Decoder{}}, ingest.OpenOptions{})
}

func kernelCount(tr *ingest.Trace) int {
	n := 0
	for _, o := range tr.GPUOps {
		if o.Kind == ingest.OpKernel {
			n++
		}
	}
	return n
}

func TestBadInput(t *testing.T) {
	cases := []struct {
		name string
		sql  string
		// warnings that must appear (substrings of "path:pos: message")
		warn []string
		// kernels kept (of 2) and API calls kept (of 6)
		kernels, api int
	}{
		{name: "kernel whose correlation ID matches nothing",
			sql:     "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = 999 WHERE rowid = 1",
			warn:    []string{`table CUPTI_ACTIVITY_KIND_KERNEL row 1: kernel "void flash_fwd_kernel<Traits>(Params)": correlationId 999 (pid 4242) matches no CUDA API call`},
			kernels: 2, api: 6},
		{name: "NULL start in a kernel",
			sql:     unconstrained("CUPTI_ACTIVITY_KIND_KERNEL") + "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = NULL WHERE rowid = 2",
			warn:    []string{"table CUPTI_ACTIVITY_KIND_KERNEL row 2: start is NULL although nsys declares it NOT NULL; row skipped"},
			kernels: 1, api: 6},
		{name: "NULL launch dimensions",
			sql:     unconstrained("CUPTI_ACTIVITY_KIND_KERNEL") + "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET gridX = NULL, blockY = NULL WHERE rowid = 1",
			warn:    []string{"table CUPTI_ACTIVITY_KIND_KERNEL row 1: gridX, blockY is NULL although nsys declares it NOT NULL; taken as 0"},
			kernels: 2, api: 6},
		{name: "NULL name of an API call",
			sql:     unconstrained("CUPTI_ACTIVITY_KIND_RUNTIME") + "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET nameId = NULL, \"end\" = NULL WHERE rowid = 3",
			warn:    []string{"table CUPTI_ACTIVITY_KIND_RUNTIME row 3: end, nameId is NULL although nsys declares it NOT NULL; row skipped"},
			kernels: 2, api: 5},
		{name: "kernel name not in StringIds",
			sql:     "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 99999 WHERE rowid = 1",
			warn:    []string{"table CUPTI_ACTIVITY_KIND_KERNEL row 1: demangledName 99999 is not in StringIds"},
			kernels: 2, api: 6},
		{name: "kernel table missing",
			sql:     "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL",
			warn:    []string{"no CUPTI_ACTIVITY_KIND_KERNEL table"},
			kernels: 0, api: 6},
		{name: "runtime table missing",
			sql:     "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME",
			warn:    []string{"no CUPTI_ACTIVITY_KIND_RUNTIME table"},
			kernels: 2, api: 0},
		{name: "session start missing",
			sql:     "DROP TABLE TARGET_INFO_SESSION_START_TIME",
			warn:    []string{"no session start time"},
			kernels: 2, api: 6},
		{name: "StringIds missing",
			sql:     "DROP TABLE StringIds",
			warn:    []string{"no StringIds table: kernel, API and thread names are unknown", "demangledName 8 is not in StringIds"},
			kernels: 2, api: 6},
		{name: "metadata missing",
			sql:     "DROP TABLE META_DATA_EXPORT",
			warn:    []string{"no META_DATA_EXPORT or EXPORT_META_DATA table"},
			kernels: 2, api: 6},
		{name: "expected column missing",
			sql:     "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN gridY",
			warn:    []string{"table CUPTI_ACTIVITY_KIND_KERNEL: table CUPTI_ACTIVITY_KIND_KERNEL has no column gridY; read as NULL"},
			kernels: 2, api: 6},
		{name: "required column missing",
			sql:     "ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME DROP COLUMN start",
			warn:    []string{"table CUPTI_ACTIVITY_KIND_RUNTIME has no column start; table not read"},
			kernels: 2, api: 0},
		{name: "end before start",
			sql:     `UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = start - 5 WHERE rowid = 1`,
			warn:    []string{"table CUPTI_ACTIVITY_KIND_KERNEL row 1: ends 5 ns before it starts; clamped to zero length"},
			kernels: 2, api: 6},
		{name: "timestamp overflow",
			sql:     `UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET "end" = 9223372036854775807 WHERE rowid = 1`,
			warn:    []string{"table CUPTI_ACTIVITY_KIND_KERNEL row 1: end 9223372036854775807 overflows"},
			kernels: 1, api: 6},
		{name: "text where an integer belongs",
			sql:     `UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET streamId = 'seven', gridX = -4 WHERE rowid = 1`,
			warn:    []string{"table CUPTI_ACTIVITY_KIND_KERNEL row 1: launch dimensions grid -4 block 128 out of range"},
			kernels: 2, api: 6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := damaged(t, c.sql)
			tr, err := openAll(t, path)
			if err != nil {
				t.Fatalf("a damaged export is still readable; got error %v", err)
			}
			var all []string
			for _, w := range tr.Warnings.List {
				all = append(all, w.String())
			}
			joined := strings.Join(all, "\n")
			for _, w := range c.warn {
				if !strings.Contains(joined, path+":") || !strings.Contains(joined, w) {
					t.Errorf("no warning %q naming the file; warnings:\n%s", w, joined)
				}
			}
			api := len(tr.APICalls)
			if kernelCount(tr) != c.kernels || api != c.api {
				t.Errorf("kept %d kernels and %d API calls, want %d and %d", kernelCount(tr), api, c.kernels, c.api)
			}
		})
	}
}

func TestNotAnExport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inventory.db")
	c, err := sqlite.OpenReadWrite(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exec("CREATE TABLE items(id INTEGER, name TEXT); INSERT INTO items VALUES (1, 'x')"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	// Given as an export, it is an error saying what it lacks.
	_, err = Decoder{}.DecodeFile(context.Background(), path)
	var ie *ingest.InputError
	if !errors.As(err, &ie) || ie.Path != path {
		t.Fatalf("error %v does not name the file", err)
	}
	for _, want := range []string{"not an Nsight Systems export", "no META_DATA_EXPORT", "it has tables items"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	// Among other inputs, it is not taken for an export.
	_, err = openAll(t, path)
	if !errors.Is(err, ingest.ErrUnknownFormat) || !strings.Contains(err.Error(), path) ||
		!strings.Contains(err.Error(), "an SQLite database, but not an Nsight Systems export") {
		t.Errorf("Open: %v", err)
	}
	dir := filepath.Dir(path)
	if _, err := openAll(t, dir); !errors.Is(err, ingest.ErrUnknownFormat) {
		t.Errorf("a directory holding only a non-export: %v", err)
	}
}

// Truncated and overwritten copies of a real export: either a clear error
// naming the file, or the records before the damage plus a warning naming
// the table. Never a panic.
func TestDamagedRealFile(t *testing.T) {
	src := shareddata.Path(t, "testdata/nsys/nvidia-fuser-report1-nsys2025.1.1.sqlite")
	whole, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	intact := decodeReal(t, src)
	garbage := func(b []byte, at, n int) []byte {
		b = append([]byte(nil), b...)
		for i := at; i < at+n && i < len(b); i++ {
			b[i] = byte(i*7 + 3)
		}
		return b
	}
	// A vacuumed copy has its schema in the first pages, so a cut-off tail
	// loses tables but not the table list.
	vacuumed := filepath.Join(t.TempDir(), "vacuumed.sqlite")
	c, err := sqlite.OpenReadOnly(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exec("VACUUM INTO " + quoteString(vacuumed)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	compact, err := os.ReadFile(vacuumed)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		data []byte
		// salvage: the file must be read, with at least some records
		salvage bool
	}{
		{"vacuumed, truncated to a half", compact[:len(compact)/2], true},
		{"vacuumed, truncated by 64 KiB", compact[:len(compact)-64<<10], true},
		{"truncated to the header", whole[:100], false},
		{"truncated to one page", whole[:4096], false},
		{"truncated to a quarter", whole[:len(whole)/4], false},
		{"truncated to a half", whole[:len(whole)/2], false},
		{"truncated by one page", whole[:len(whole)-4096], false},
		{"garbage in the first page", garbage(whole, 100, 3000), false},
		{"garbage in the middle", garbage(whole, len(whole)/2, 64<<10), false},
		{"garbage near the end", garbage(whole, len(whole)-20000, 8192), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "report1.sqlite")
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			tr, err := openAll(t, path)
			if err != nil && c.salvage {
				t.Fatalf("the table list is intact, yet: %v", err)
			}
			if err != nil {
				if !strings.Contains(err.Error(), path) {
					t.Errorf("error does not name the file: %v", err)
				}
				t.Logf("error: %v", err)
				return
			}
			if len(tr.Spans) > len(intact.Spans) || len(tr.GPUOps) > len(intact.GPUOps) {
				t.Errorf("damaged file gave more records (%d spans, %d ops) than the intact one (%d, %d)",
					len(tr.Spans), len(tr.GPUOps), len(intact.Spans), len(intact.GPUOps))
			}
			lost := len(tr.Spans) < len(intact.Spans) || len(tr.GPUOps) < len(intact.GPUOps)
			named := false
			for _, w := range tr.Warnings.List {
				if strings.HasPrefix(w.String(), path+":table ") {
					named = true
				}
			}
			if lost && !named {
				t.Errorf("records were lost (%d/%d spans, %d/%d ops) without a warning naming the table: %v",
					len(tr.Spans), len(intact.Spans), len(tr.GPUOps), len(intact.GPUOps), tr.Warnings.List)
			}
			if c.salvage && len(tr.Spans)+len(tr.GPUOps) == 0 {
				t.Errorf("nothing salvaged")
			}
			t.Logf("kept %d/%d spans, %d/%d ops; warnings: %v", len(tr.Spans), len(intact.Spans), len(tr.GPUOps), len(intact.GPUOps), tr.Warnings.List)
		})
	}
}

func TestSniff(t *testing.T) {
	written := damaged(t, "")
	cases := []struct {
		name string
		path string
		want bool
	}{
		{"written export", written, true},
		{"SQLite header only", writeTemp(t, append([]byte("SQLite format 3\x00"), make([]byte, 100)...)), false},
		{"text", writeTemp(t, []byte("StringIds are not enough without the SQLite header")), false},
	}
	for _, p := range shareddata.Glob(t, "testdata/nsys/*.sqlite") {
		cases = append(cases, struct {
			name string
			path string
			want bool
		}{filepath.Base(p), p, true})
	}
	for _, c := range cases {
		in, err := ingest.NewInput(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := (Decoder{}).Sniff(in); got != c.want {
			t.Errorf("%s: Sniff = %v, want %v", c.name, got, c.want)
		}
	}
	if (Decoder{}).Sniff(&ingest.Input{Path: t.TempDir(), Dir: true}) {
		t.Error("a directory was taken for an export")
	}
}

func writeTemp(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Several exports decode in parallel through Open and merge.
func TestOpenSeveralExports(t *testing.T) {
	files := shareddata.Glob(t, "testdata/nsys/*.sqlite")
	tr, err := ingest.Open(context.Background(), files, []ingest.Decoder{Decoder{}}, ingest.OpenOptions{Parallelism: 3})
	if err != nil {
		t.Fatal(err)
	}
	ops, spans := 0, 0
	for _, f := range files {
		one := decodeReal(t, f)
		ops += len(one.GPUOps)
		spans += len(one.Spans)
	}
	if len(tr.Sources) != len(files) || len(tr.GPUOps) != ops || len(tr.Spans) != spans {
		t.Errorf("merged %d sources, %d ops, %d spans; want %d, %d, %d", len(tr.Sources), len(tr.GPUOps), len(tr.Spans), len(files), ops, spans)
	}
}

// A gzip-compressed export is decompressed to a temporary file and read.
func TestCompressedExport(t *testing.T) {
	plain := damaged(t, "")
	raw, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(raw)
	zw.Close()
	path := filepath.Join(t.TempDir(), "report.sqlite.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := openAll(t, path)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := openAll(t, plain)
	if dump(t, tr) != dump(t, want) {
		t.Error("the compressed export decodes differently")
	}
	if tr.Sources[0].Path != path || tr.Sources[0].Clock.Name != "nsys:report.sqlite.gz" {
		t.Errorf("source %+v", tr.Sources[0])
	}
}

// Decoding stops when the context is cancelled.
func TestDecodeCancelled(t *testing.T) {
	// 70,000 kernels, past the 65,536 rows between looks at the context:
	// the export TestParallelReadCancelled reads too, written once.
	path := benchFileCopy(t, 70_000)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := (Decoder{}).DecodeFile(ctx, path); !errors.Is(err, context.Canceled) {
		t.Errorf("error = %v, want context.Canceled", err)
	}
}
