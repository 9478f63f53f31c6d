// Command otlpmem measures the OTLP decoder's peak memory against the size of
// its input, the way llmprof reads a file: it writes a synthetic dump, and
// decodes one in a fresh process through ingest.Open (decode, merge,
// Validate) and reports the peak resident set. bench/otlp.sh runs it.
//
//	otlpmem gen -dir DIR [-mb 100]   write DIR/dump.pb (framed), DIR/dump-raw.pb, DIR/dump.jsonl, DIR/dump-doc.json
//	otlpmem decode FILE              decode FILE; print spans, seconds, peak RSS and RSS/size
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/llmprof/llmprof/bench/internal/proc"
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/ingest/otlp/otlptest"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "otlpmem:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: otlpmem gen -dir DIR [-mb N] | otlpmem decode FILE")
	}
	switch args[0] {
	case "gen":
		fs := flag.NewFlagSet("gen", flag.ContinueOnError)
		dir := fs.String("dir", ".", "where to write the dumps")
		mb := fs.Int("mb", 100, "size of the framed protobuf dump in MiB (the JSON Lines one is about 2.5× larger)")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return gen(*dir, *mb, w)
	case "decode":
		if len(args) != 2 {
			return fmt.Errorf("usage: otlpmem decode FILE")
		}
		return decode(args[1], w)
	}
	return fmt.Errorf("unknown command %q", args[0])
}

// gen writes the same synthetic batches in three forms: the file exporter's
// framed protobuf, one raw ExportTraceServiceRequest (the batches
// concatenated: protobuf merges repeated fields), and JSON Lines; and the
// first of them, up to about mb MiB, as one pretty-printed OTLP/JSON document
// (read whole, unlike the others).
func gen(dir string, mb int, w io.Writer) error {
	files := map[string]*bufio.Writer{}
	var closers []*os.File
	names := []string{"dump.pb", "dump-raw.pb", "dump.jsonl", "dump-doc.json"}
	for _, name := range names {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		closers = append(closers, f)
		files[name] = bufio.NewWriterSize(f, 1<<20)
	}
	g := &otlptest.Synthetic{Seed: 1}
	var size, docSize, spans int
	doc := files["dump-doc.json"]
	doc.WriteString("{\n  \"resourceSpans\": [")
	for size < mb<<20 {
		td := g.Next()
		spans += td.SpanCount()
		p := otlptest.Proto(td)
		size += 4 + len(p)
		files["dump.pb"].Write(otlptest.Frame(p))
		files["dump-raw.pb"].Write(p)
		js := otlptest.JSON(td)
		files["dump.jsonl"].Write(js)
		files["dump.jsonl"].WriteByte('\n')
		if docSize < mb<<20 {
			// The batch's resource spans, indented, as elements of one array.
			inner := bytes.TrimSuffix(bytes.TrimPrefix(js, []byte(`{"resourceSpans":[`)), []byte("]}"))
			var buf bytes.Buffer
			if err := json.Indent(&buf, inner, "    ", "  "); err != nil {
				return err
			}
			if docSize > 0 {
				doc.WriteByte(',')
			}
			doc.WriteString("\n    ")
			n, _ := doc.Write(buf.Bytes())
			docSize += n
		}
	}
	doc.WriteString("\n  ]\n}\n")
	for i, name := range names {
		if err := files[name].Flush(); err != nil {
			return err
		}
		if err := closers[i].Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "wrote %d spans to %s\n", spans, dir)
	return nil
}

func decode(path string, w io.Writer) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	start := time.Now()
	tr, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{&otlp.Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	peak, err := proc.PeakRSS()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s: %s, %d spans, %d bytes, %.2f s, peak RSS %d MiB = %.2f × the input\n",
		filepath.Base(path), tr.Sources[0].Format, len(tr.Spans), st.Size(), elapsed.Seconds(),
		peak>>20, float64(peak)/float64(st.Size()))
	runtime.KeepAlive(tr)
	return nil
}
