package otlp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/ingest/otlp/otlptest"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// FuzzOTLP feeds arbitrary bytes to every entry point — form detection and
// every form's reader (DecodeReader), and DecodePayload in both encodings —
// and checks that nothing panics and that what comes out is a consistent
// model; the same bytes through ingest.Open as a file and as a stream ("-")
// give the same spans (the input layer's sniffing, decompression and
// transcoding read a stream once). Seeds: the fixture in every form, Jaeger,
// the console exporter's output, UTF-16 and BOM text, the shared samples.
// Crashers found are kept in testdata/fuzz/FuzzOTLP.
func FuzzOTLP(f *testing.F) {
	td := otlptest.Fixture()
	for _, e := range fixtureForms(td) {
		f.Add(e.data)
	}
	f.Add(otlptest.Jaeger(td, false))
	f.Add(otlptest.Jaeger(td, true))
	for _, p := range otlptest.Split(td) {
		f.Add(otlptest.Proto(p))
	}
	if console, err := os.ReadFile(filepath.Join("testdata", "console-exporter.txt")); err == nil {
		f.Add(console)
		f.Add(utf16LE(console))
	}
	if goStdout, err := os.ReadFile(filepath.Join("testdata", "otel-go-stdouttrace.json")); err == nil {
		f.Add(goStdout)
	}
	f.Add(append([]byte{0xef, 0xbb, 0xbf}, otlptest.JSON(td)...))
	f.Add(utf16LE(otlptest.JSON(td)))
	if root, ok := shareddata.Root(); ok {
		files, _ := filepath.Glob(filepath.Join(root, "testdata", "otlp", "*.json"))
		for _, file := range files {
			if b, err := os.ReadFile(file); err == nil {
				f.Add(b)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := &otlp.Decoder{Options: otlp.Options{MaxRecordBytes: 1 << 20}}
		if tr, err := dec.DecodeReader(context.Background(), "fuzz", bytes.NewReader(data)); err == nil {
			checkModel(t, tr)
		}
		for _, enc := range []otlp.Encoding{otlp.Proto, otlp.JSON} {
			tr := ingest.New()
			tr.Sources = []ingest.Source{{Path: "payload"}}
			_ = otlp.DecodePayload(tr, 0, data, enc, "payload")
			checkModel(t, tr)
		}
		decs := []ingest.Decoder{dec}
		path := filepath.Join(t.TempDir(), "fuzz")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fromFile, errFile := ingest.Open(context.Background(), []string{path}, decs, ingest.OpenOptions{})
		fromStream, errStream := ingest.Open(context.Background(), []string{"-"}, decs, ingest.OpenOptions{Stdin: bytes.NewReader(data)})
		if (errFile == nil) != (errStream == nil) {
			t.Fatalf("file: %v; stream: %v", errFile, errStream)
		}
		if errFile == nil {
			checkModel(t, fromFile)
			checkModel(t, fromStream)
			if len(fromFile.Spans) != len(fromStream.Spans) {
				t.Fatalf("%d spans from the file, %d from the stream", len(fromFile.Spans), len(fromStream.Spans))
			}
			// Read from a file or from a stream, the same bytes are
			// the same trace, warnings included (less the input's
			// name).
			if a, b := dumpData(t, fromFile), dumpData(t, fromStream); a != b {
				t.Fatalf("the file decodes otherwise than the stream:\nfile:\n%.2000s\nstream:\n%.2000s", a, b)
			}
		}
	})
}

// dumpData is the trace's dump and its warnings without the input's name.
func dumpData(t *testing.T, tr *ingest.Trace) string {
	var b strings.Builder
	b.WriteString(dump(t, tr, ingest.DumpOptions{}))
	for _, w := range tr.Warnings.List {
		fmt.Fprintf(&b, "%s: %s: %s (%d more)\n", w.Pos, w.Code, w.Msg, w.More)
	}
	return b.String()
}

// utf16LE is b as UTF-16LE text after a byte-order mark.
func utf16LE(b []byte) []byte {
	out := []byte{0xff, 0xfe}
	for _, r := range string(b) {
		for _, u := range utf16.Encode([]rune{r}) {
			out = append(out, byte(u), byte(u>>8))
		}
	}
	return out
}

// checkModel checks the invariants every consumer of a Trace relies on.
func checkModel(t *testing.T, tr *ingest.Trace) {
	t.Helper()
	nstr := ingest.StrID(tr.Strings.Len())
	var checkValue func(v ingest.Value, depth int)
	checkAttrs := func(as []ingest.Attr, depth int) {
		for _, a := range as {
			if a.Key >= nstr {
				t.Fatalf("attribute key %d out of range", a.Key)
			}
			checkValue(a.Value(), depth)
		}
	}
	checkValue = func(v ingest.Value, depth int) {
		if depth > 100 {
			t.Fatal("values nested too deep")
		}
		switch v.Kind() {
		case ingest.KindString, ingest.KindBytes:
			if v.Str() >= nstr {
				t.Fatalf("string value %d out of range", v.Str())
			}
		case ingest.KindArray:
			if v.Index() >= len(tr.Arrays) {
				t.Fatalf("array %d out of range", v.Index())
			}
			for _, e := range tr.Arrays[v.Index()] {
				checkValue(e, depth+1)
			}
		case ingest.KindMap:
			if v.Index() >= len(tr.Maps) {
				t.Fatalf("map %d out of range", v.Index())
			}
			checkAttrs(tr.Maps[v.Index()], depth+1)
		}
	}
	for _, r := range tr.Resources {
		checkAttrs(r.Attrs, 0)
	}
	for _, s := range tr.Scopes {
		checkAttrs(s.Attrs, 0)
	}
	spans := 0
	for i := range tr.Spans {
		s := &tr.Spans[i]
		if s.Resource < -1 || int(s.Resource) >= len(tr.Resources) || s.Scope < -1 || int(s.Scope) >= len(tr.Scopes) {
			t.Fatalf("span %d: resource %d scope %d out of range", i, s.Resource, s.Scope)
		}
		if int(s.Source) >= len(tr.Sources) || s.Name >= nstr || s.StatusMsg >= nstr {
			t.Fatalf("span %d: source or string out of range", i)
		}
		inArena := func(r ingest.AttrRange) bool { return uint64(r.Off)+uint64(r.Len) <= uint64(len(tr.AttrArena)) }
		if !inArena(s.Attrs) || int(s.Extra) > len(tr.SpanExtras) {
			t.Fatalf("span %d: attributes %+v or extra %d out of range", i, s.Attrs, s.Extra)
		}
		if s.Extra > 0 {
			x := tr.SpanExtras[s.Extra-1]
			if uint64(x.EventOff)+uint64(x.EventLen) > uint64(len(tr.SpanEvents)) || uint64(x.LinkOff)+uint64(x.LinkLen) > uint64(len(tr.SpanLinks)) {
				t.Fatalf("span %d: events or links %+v out of range", i, x)
			}
		}
		checkAttrs(tr.SpanAttrs(s), 0)
		for _, e := range tr.Events(s) {
			if !inArena(e.Attrs) {
				t.Fatalf("span %d: event attributes %+v out of range", i, e.Attrs)
			}
			checkAttrs(tr.EventAttrs(&e), 0)
		}
		for _, l := range tr.Links(s) {
			if !inArena(l.Attrs) {
				t.Fatalf("span %d: link attributes %+v out of range", i, l.Attrs)
			}
			checkAttrs(tr.LinkAttrs(&l), 0)
		}
		spans++
	}
	if tr.Sources[0].Spans != spans {
		t.Fatalf("Source.Spans = %d, have %d spans", tr.Sources[0].Spans, spans)
	}
	tr.Validate()
	if err := tr.Dump(io.Discard, ingest.DumpOptions{Sources: true, Warnings: true}); err != nil {
		t.Fatal(err)
	}
}
