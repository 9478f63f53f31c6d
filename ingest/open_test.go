package ingest_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// spansJSONL is n OTLP/JSON lines of one span each, with IDs from base on
// and a padding attribute, so that n = 400 is well over HeadSize: a reader
// that sniffs the head and then reopens a stream loses spans.
func spansJSONL(n, base int) []byte {
	var b bytes.Buffer
	pad := strings.Repeat("p", 300)
	for i := range n {
		id := base + i
		start := 1_700_000_000_000_000_000 + int64(id)*1_000_000
		fmt.Fprintf(&b, `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[{"traceId":"%032x","spanId":"%016x","name":"span-%d","startTimeUnixNano":"%d","endTimeUnixNano":"%d","attributes":[{"key":"pad","value":{"stringValue":"%s"}}]}]}]}]}`+"\n",
			id+1, id+1, id, start, start+500_000, pad)
	}
	return b.Bytes()
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func write(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

var otlpOnly = []ingest.Decoder{&otlp.Decoder{}}

func open(t *testing.T, opts ingest.OpenOptions, paths ...string) (*ingest.Trace, error) {
	t.Helper()
	return ingest.Open(context.Background(), paths, otlpOnly, opts)
}

func mustOpen(t *testing.T, opts ingest.OpenOptions, paths ...string) *ingest.Trace {
	t.Helper()
	tr, err := open(t, opts, paths...)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func hasWarning(tr *ingest.Trace, code, path string, parts ...string) bool {
	for _, w := range tr.Warnings.List {
		if w.Code != code || (path != "" && w.Path != path) {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(w.Msg, p)
		}
		if ok {
			return true
		}
	}
	return false
}

func warnings(tr *ingest.Trace) string {
	var b strings.Builder
	for _, w := range tr.Warnings.List {
		fmt.Fprintf(&b, "  %s [%s]\n", w, w.Code)
	}
	return b.String()
}

// "-" reads standard input once: every span arrives, plain or compressed,
// from a pipe or from any reader.
func TestStdin(t *testing.T) {
	data := spansJSONL(400, 0)
	if len(data) < 2*ingest.HeadSize {
		t.Fatalf("fixture of %d bytes is not larger than the head", len(data))
	}
	for _, c := range []struct {
		name string
		data []byte
	}{{"plain", data}, {"gzip", gz(data)}} {
		t.Run("pipe/"+c.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			go func() {
				w.Write(c.data)
				w.Close()
			}()
			tr := mustOpen(t, ingest.OpenOptions{Stdin: r}, "-")
			if len(tr.Spans) != 400 {
				t.Errorf("%d spans from the pipe, want 400\n%s", len(tr.Spans), warnings(tr))
			}
			if tr.Sources[0].Path != "<stdin>" {
				t.Errorf("source path %q, want <stdin>", tr.Sources[0].Path)
			}
		})
		t.Run("reader/"+c.name, func(t *testing.T) {
			tr := mustOpen(t, ingest.OpenOptions{Stdin: bytes.NewReader(c.data)}, "-")
			if len(tr.Spans) != 400 {
				t.Errorf("%d spans, want 400", len(tr.Spans))
			}
		})
	}
	if _, err := open(t, ingest.OpenOptions{Stdin: bytes.NewReader(data)}, "-", "-"); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("- twice: %v", err)
	}
}

// /dev/fd/N (what the shell's <(zcat …) passes) is a pipe: streamed, not
// reopened.
func TestProcessSubstitution(t *testing.T) {
	if _, err := os.Stat("/dev/fd/0"); err != nil {
		t.Skip("no /dev/fd on this system")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.Write(spansJSONL(400, 0))
		w.Close()
	}()
	path := fmt.Sprintf("/dev/fd/%d", r.Fd())
	tr := mustOpen(t, ingest.OpenOptions{}, path)
	if len(tr.Spans) != 400 {
		t.Errorf("%d spans from %s, want 400\n%s", len(tr.Spans), path, warnings(tr))
	}
}

// An input that can be read once refuses a second Open instead of handing
// out a stream that has lost its start.
func TestStreamOpensOnce(t *testing.T) {
	data := spansJSONL(3, 0)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	go func() { w.Write(data); w.Close() }()
	path := fmt.Sprintf("/dev/fd/%d", r.Fd())
	if _, err := os.Stat(path); err != nil {
		t.Skip("no /dev/fd on this system")
	}
	in, err := ingest.NewInput(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if !in.Stream || !bytes.Equal(in.Head, data) {
		t.Fatalf("Stream=%v, head %d bytes, want the stream's %d", in.Stream, len(in.Head), len(data))
	}
	rc, err := in.Open()
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	got.ReadFrom(rc)
	rc.Close()
	if !bytes.Equal(got.Bytes(), data) {
		t.Errorf("Open read %d bytes, want all %d", got.Len(), len(data))
	}
	if _, err := in.Open(); err == nil {
		t.Error("a second Open of a stream succeeded")
	}
}

// A spooled copy (for decoders that need a file) holds the whole stream and
// is bounded.
func TestLocalFileOfStream(t *testing.T) {
	data := spansJSONL(300, 0)
	for _, c := range []struct {
		name  string
		limit int64
		ok    bool
	}{{"fits", 0, true}, {"over the bound", int64(len(data) - 1), false}} {
		t.Run(c.name, func(t *testing.T) {
			var in *ingest.Input
			tr, err := ingest.Open(context.Background(), []string{"-"}, []ingest.Decoder{localFileDecoder{&in}},
				ingest.OpenOptions{Stdin: bytes.NewReader(gz(data)), MaxSpoolBytes: c.limit})
			if !c.ok {
				if err == nil || !strings.Contains(err.Error(), "more than") || !strings.Contains(err.Error(), "<stdin>") {
					t.Errorf("error %v, want one about the bound naming <stdin>", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := tr.Sources[0].Meta["copied"]; got != fmt.Sprint(len(data)) {
				t.Errorf("the copy held %s bytes, want %d", got, len(data))
			}
		})
	}
}

// localFileDecoder reads its input through LocalFile and records the size.
type localFileDecoder struct{ in **ingest.Input }

func (localFileDecoder) Name() string                { return "local" }
func (localFileDecoder) Sniff(in *ingest.Input) bool { return !in.Dir }
func (d localFileDecoder) Decode(ctx context.Context, in *ingest.Input, t *ingest.Trace) error {
	*d.in = in
	path, done, err := in.LocalFile()
	if err != nil {
		return err
	}
	defer done()
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return errors.New("LocalFile is not a regular file")
	}
	t.Sources[0].Meta = map[string]string{"copied": fmt.Sprint(st.Size())}
	return nil
}

// Zero fill given on the command line fails at once, naming the file and
// what it holds.
func TestDevZero(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	_, err := open(t, ingest.OpenOptions{}, "/dev/zero")
	if err == nil || !strings.Contains(err.Error(), "/dev/zero: ") || !strings.Contains(err.Error(), "NUL bytes") {
		t.Errorf("error = %v", err)
	}
}

// Spans followed by zero fill (a crashed writer's preallocated tail, or
// `cat x.jsonl /dev/zero`): the spans are kept and the decoder stops at the
// zeros instead of reading them forever.
func TestSpansThenZeros(t *testing.T) {
	data := append(spansJSONL(5, 0), make([]byte, 3<<20)...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	go func() {
		w.Write(data)
		// Then zeros for ever, until the reader goes away.
		zeros := make([]byte, 1<<20)
		for {
			if _, err := w.Write(zeros); err != nil {
				w.Close()
				return
			}
		}
	}()
	tr := mustOpen(t, ingest.OpenOptions{Stdin: r}, "-")
	if len(tr.Spans) != 5 || !hasWarning(tr, "malformed-record", "<stdin>", "NUL bytes") {
		t.Errorf("%d spans, want 5, and a NUL warning:\n%s", len(tr.Spans), warnings(tr))
	}
}

// Every input empty (or only white space): an error naming each file.
func TestAllEmpty(t *testing.T) {
	dir := t.TempDir()
	a := write(t, filepath.Join(dir, "a.jsonl"), nil)
	b := write(t, filepath.Join(dir, "b.json"), []byte("\n  \n"))
	_, err := open(t, ingest.OpenOptions{}, a, b)
	if !errors.Is(err, ingest.ErrNothingToAnalyze) || !strings.Contains(err.Error(), a+": empty file") || !strings.Contains(err.Error(), b+": only white space") {
		t.Errorf("error = %v", err)
	}
	// An empty file beside a real one is a warning.
	c := write(t, filepath.Join(dir, "c.jsonl"), spansJSONL(2, 0))
	tr := mustOpen(t, ingest.OpenOptions{}, a, c)
	if len(tr.Spans) != 2 || !hasWarning(tr, "empty-file", a) {
		t.Errorf("%d spans, warnings:\n%s", len(tr.Spans), warnings(tr))
	}
	// A directory holding only unreadable files names each.
	d := filepath.Join(dir, "d")
	x := write(t, filepath.Join(d, "notes.txt"), []byte("hello\n"))
	y := write(t, filepath.Join(d, "e.jsonl"), nil)
	_, err = open(t, ingest.OpenOptions{}, d)
	if !errors.Is(err, ingest.ErrNothingToAnalyze) || !strings.Contains(err.Error(), x+`: skipped: not a recognized input format: text starting "hello"`) ||
		!strings.Contains(err.Error(), y+": skipped: empty file") {
		t.Errorf("error = %v", err)
	}
}

// The same spans from two files of one run count once, with one warning
// naming both files.
func TestDuplicateSpans(t *testing.T) {
	dir := t.TempDir()
	data := spansJSONL(10, 0)
	a := write(t, filepath.Join(dir, "x.jsonl"), data)
	b := write(t, filepath.Join(dir, "x.jsonl.gz"), gz(data))
	tr := mustOpen(t, ingest.OpenOptions{}, dir)
	if len(tr.Spans) != 10 {
		t.Errorf("%d spans, want 10", len(tr.Spans))
	}
	n := 0
	for _, w := range tr.Warnings.List {
		if w.Code == "duplicate-spans" {
			n++
			if w.Path != b || !strings.Contains(w.Msg, "10 span(s) also in "+a) {
				t.Errorf("warning %s", w)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d duplicate-spans warnings, want 1:\n%s", n, warnings(tr))
	}
	if tr.Sources[0].Spans != 10 || tr.Sources[1].Spans != 0 {
		t.Errorf("source span counts %d, %d; want 10, 0", tr.Sources[0].Spans, tr.Sources[1].Spans)
	}
	// Overlapping dumps: only the shared spans are dropped.
	c := write(t, filepath.Join(t.TempDir(), "later.jsonl"), spansJSONL(10, 5))
	tr = mustOpen(t, ingest.OpenOptions{}, a, c)
	if len(tr.Spans) != 15 || !hasWarning(tr, "duplicate-spans", c, "5 span(s) also in "+a) {
		t.Errorf("%d spans, want 15:\n%s", len(tr.Spans), warnings(tr))
	}
}

// A directory walk follows symbolic links, walks a loop once, reads a file
// reached twice once, and says what it skipped.
func TestSymlinkedDirectories(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(root, "a", "x.jsonl"), spansJSONL(3, 0))
	write(t, filepath.Join(outside, "runs", "y.jsonl"), spansJSONL(4, 100))
	write(t, filepath.Join(outside, "z.jsonl"), spansJSONL(2, 200))
	for _, l := range []struct{ target, link string }{
		{filepath.Join(outside, "runs"), filepath.Join(root, "runs")},       // a symlinked directory
		{filepath.Join(outside, "z.jsonl"), filepath.Join(root, "z.jsonl")}, // a symlinked file
		{root, filepath.Join(root, "a", "loop")},                            // a loop back to the top
		{filepath.Join("..", "a", "x.jsonl"), filepath.Join(root, "b", "x-again.jsonl")},
		{filepath.Join(root, "missing.jsonl"), filepath.Join(root, "broken.jsonl")},
	} {
		os.MkdirAll(filepath.Dir(l.link), 0o755)
		if err := os.Symlink(l.target, l.link); err != nil {
			t.Skipf("symlinks: %v", err)
		}
	}
	tr := mustOpen(t, ingest.OpenOptions{}, root)
	if len(tr.Spans) != 3+4+2 {
		t.Errorf("%d spans, want 9\n%s", len(tr.Spans), warnings(tr))
	}
	if len(tr.Sources) != 3 {
		t.Errorf("%d sources, want 3 (x, y through the link, z through the link)", len(tr.Sources))
	}
	for _, w := range []struct{ code, path, msg string }{
		{"symlink-loop", filepath.Join(root, "a", "loop"), "the same directory as " + root},
		{"duplicate-input", filepath.Join(root, "b", "x-again.jsonl"), "the same file as " + filepath.Join(root, "a", "x.jsonl")},
		{"skipped-file", filepath.Join(root, "broken.jsonl"), "a symbolic link to " + filepath.Join(root, "missing.jsonl")},
	} {
		if !hasWarning(tr, w.code, w.path, w.msg) {
			t.Errorf("no %s warning for %s containing %q:\n%s", w.code, w.path, w.msg, warnings(tr))
		}
	}
	// The same file named twice on the command line is read once.
	x := filepath.Join(root, "a", "x.jsonl")
	tr = mustOpen(t, ingest.OpenOptions{}, x, filepath.Join(root, "b", "x-again.jsonl"))
	if len(tr.Spans) != 3 || !hasWarning(tr, "duplicate-input", "", "the same file as "+x) {
		t.Errorf("%d spans:\n%s", len(tr.Spans), warnings(tr))
	}
}

// OTLP/JSON saved as UTF-16 (PowerShell) or with a UTF-8 byte-order mark
// decodes, from a file and from a stream.
func TestTextEncodings(t *testing.T) {
	data := spansJSONL(300, 0)
	utf16 := func(b []byte, big bool) []byte {
		out := []byte{0xff, 0xfe}
		if big {
			out = []byte{0xfe, 0xff}
		}
		for _, c := range string(b) {
			if big {
				out = append(out, byte(c>>8), byte(c))
			} else {
				out = append(out, byte(c), byte(c>>8))
			}
		}
		return out
	}
	for _, c := range []struct {
		name string
		data []byte
		enc  ingest.Encoding
	}{
		{"utf16le.json", utf16(data, false), ingest.EncodingUTF16LE},
		{"utf16be.json", utf16(data, true), ingest.EncodingUTF16BE},
		{"bom.json", append([]byte{0xef, 0xbb, 0xbf}, data...), ingest.EncodingUTF8BOM},
		{"utf16le.json.gz", gz(utf16(data, false)), ingest.EncodingUTF16LE},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := write(t, filepath.Join(t.TempDir(), c.name), c.data)
			in, err := ingest.NewInput(path)
			if err != nil {
				t.Fatal(err)
			}
			if in.Encoding != c.enc || !bytes.HasPrefix(in.Head, []byte(`{"resourceSpans"`)) {
				t.Errorf("encoding %v, head %q", in.Encoding, in.Head[:min(20, len(in.Head))])
			}
			tr := mustOpen(t, ingest.OpenOptions{}, path)
			if len(tr.Spans) != 300 || len(tr.Warnings.List) != 0 {
				t.Errorf("file: %d spans, want 300\n%s", len(tr.Spans), warnings(tr))
			}
			tr = mustOpen(t, ingest.OpenOptions{Stdin: bytes.NewReader(c.data)}, "-")
			if len(tr.Spans) != 300 || len(tr.Warnings.List) != 0 {
				t.Errorf("stream: %d spans, want 300\n%s", len(tr.Spans), warnings(tr))
			}
		})
	}
}

// A saved analysis is not a trace: the error says to use diff.
func TestSavedAnalysis(t *testing.T) {
	path := write(t, filepath.Join(t.TempDir(), "report.json"), []byte("{\n  \"schema\": \"llmprof.report/v1\",\n  \"version\": \"dev\",\n  \"requests\": {}\n}\n"))
	_, err := open(t, ingest.OpenOptions{}, path)
	if !errors.Is(err, ingest.ErrSavedOutput) || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), "llmprof diff") ||
		!strings.Contains(err.Error(), `"llmprof.report/v1"`) {
		t.Errorf("error = %v", err)
	}
}

// An unknown file says what it looks like and what llmprof reads.
func TestUnknownFormatMessage(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"notes.txt", []byte("GET /v1/completions 200\n"), `text starting "GET /v1/completions 200"`},
		{"blob.bin", []byte{0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a, 0}, "binary data starting with bytes 89 50 4e 47"},
		{"array.json", []byte(`[{"a":1}]`), "a JSON array"},
		{"metrics.json", []byte(`{"resourceMetrics":[]}`), `a JSON object with keys "resourceMetrics"`},
	} {
		path := write(t, filepath.Join(dir, c.name), c.data)
		_, err := open(t, ingest.OpenOptions{}, path)
		if !errors.Is(err, ingest.ErrUnknownFormat) || !strings.Contains(err.Error(), path+": ") || !strings.Contains(err.Error(), c.want) ||
			!strings.Contains(err.Error(), "llmprof reads OTLP traces") {
			t.Errorf("%s: error = %v", c.name, err)
		}
	}
}

// dirDecoder takes directories holding a "manifest" file, as a capture
// decoder does, and decodes nothing.
type dirDecoder struct{}

func (dirDecoder) Name() string { return "dir" }
func (dirDecoder) Sniff(in *ingest.Input) bool {
	_, err := os.Stat(filepath.Join(in.Path, "manifest"))
	return in.Dir && err == nil
}
func (dirDecoder) Decode(context.Context, *ingest.Input, *ingest.Trace) error { return nil }

// Expanded sees what Open will decode, with sizes on disk: a file's, and a
// directory input's regular files below it; Progress then reports each.
func TestOpenReportsInputsAndSizes(t *testing.T) {
	root := t.TempDir()
	capture := filepath.Join(root, "run.llmprof")
	os.MkdirAll(filepath.Join(capture, "tables"), 0o755)
	os.WriteFile(filepath.Join(capture, "manifest"), make([]byte, 10), 0o644)
	os.WriteFile(filepath.Join(capture, "tables", "spans"), make([]byte, 5), 0o644)
	file := filepath.Join(root, "trace.jsonl")
	os.WriteFile(file, spansJSONL(3, 1), 0o644)
	st, _ := os.Stat(file)

	var sizes map[string]int64
	var done []string
	_, err := ingest.Open(context.Background(), []string{root}, []ingest.Decoder{dirDecoder{}, &otlp.Decoder{}}, ingest.OpenOptions{
		Parallelism: 1,
		Expanded: func(ins []*ingest.Input) {
			sizes = map[string]int64{}
			for _, in := range ins {
				sizes[filepath.Base(in.Path)] = in.Size
			}
		},
		Progress: func(_, total int, in *ingest.Input) {
			if total != len(sizes) {
				t.Errorf("progress total %d, %d inputs expanded", total, len(sizes))
			}
			done = append(done, filepath.Base(in.Path))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 2 || sizes["run.llmprof"] != 15 || sizes["trace.jsonl"] != st.Size() {
		t.Errorf("expanded sizes %v, want run.llmprof 15 and trace.jsonl %d", sizes, st.Size())
	}
	if len(done) != 2 {
		t.Errorf("progress for %v", done)
	}
}

// The shared vLLM bench results given to analyze: the error says what they
// are and points to diff.
func TestBenchResultPointsToDiff(t *testing.T) {
	for _, path := range shareddata.Glob(t, "testdata/vllm-bench/*.json") {
		_, err := open(t, ingest.OpenOptions{}, path)
		if !errors.Is(err, ingest.ErrUnknownFormat) || !strings.Contains(err.Error(), "benchmark") || !strings.Contains(err.Error(), "llmprof diff BASE.json CANDIDATE.json") {
			t.Errorf("%s: error = %v", filepath.Base(path), err)
		}
	}
}

// A directory tree of many files in no format llmprof reads (analyze /etc):
// one line per directory with its count, and the list of formats once.
func TestManySkippedOneLinePerDirectory(t *testing.T) {
	dir := t.TempDir()
	for _, sub := range []string{"conf", "xml"} {
		for i := range 30 {
			write(t, filepath.Join(dir, sub, fmt.Sprintf("f%02d.txt", i)), []byte("# a comment\n"))
		}
	}
	lone := write(t, filepath.Join(dir, "lone", "x.txt"), []byte("hello\n"))
	_, err := open(t, ingest.OpenOptions{}, dir)
	if !errors.Is(err, ingest.ErrNothingToAnalyze) {
		t.Fatalf("error = %v", err)
	}
	msg := err.Error()
	lines := strings.Split(msg, "\n")
	if len(lines) != 5 {
		t.Errorf("%d lines, want the error, two directories, one lone file and the formats:\n%s", len(lines), msg)
	}
	for _, want := range []string{
		filepath.Join(dir, "conf") + `: 30 files skipped (first, f00.txt: not a recognized input format: text starting "# a comment")`,
		filepath.Join(dir, "xml") + ": 30 files skipped",
		lone + `: skipped: not a recognized input format: text starting "hello"`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("no %q in:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "llmprof reads"); n != 1 {
		t.Errorf("the list of formats appears %d times, want once:\n%s", n, msg)
	}
}
