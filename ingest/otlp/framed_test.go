package otlp

import (
	"bytes"
	"context"
	"encoding/binary"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp/otlptest"
)

// framedFile is a framed dump of several records of every payload kind
// (protobuf, JSON, protobuf in a zstd frame), over 2 MiB: more than the
// read buffer holds (readBufSize).
func framedFile() []byte {
	g := &otlptest.Synthetic{Seed: 3, Spans: 256}
	var payloads [][]byte
	for size := 0; size < 5<<19; {
		td := g.Next()
		var p []byte
		switch len(payloads) % 4 {
		case 0, 1:
			p = otlptest.Proto(td)
		case 2:
			p = otlptest.Zstd(otlptest.Proto(td))
		default:
			p = otlptest.JSON(td)
		}
		payloads = append(payloads, p)
		size += 4 + len(p)
	}
	return otlptest.Frame(payloads...)
}

// dumpFile writes data to a file of its own and returns its path and input.
func dumpFile(t *testing.T, data []byte) (string, *ingest.Input) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dump.pb")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := ingest.NewInput(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, in
}

// decodeFileAndStream decodes data as a file (Decode) and as a stream
// (DecodeReader, which sniffs it from its own buffer) and fails unless both give the same trace: the same dump,
// sources and warnings included, and the same source metadata (records,
// payload kinds). It returns the file's.
func decodeFileAndStream(t *testing.T, dec *Decoder, data []byte) *ingest.Trace {
	t.Helper()
	path, in := dumpFile(t, data)
	fromFile := ingest.New()
	fromFile.Sources = []ingest.Source{{Path: path, Format: "otlp"}}
	if err := dec.Decode(context.Background(), in, fromFile); err != nil {
		t.Fatal(err)
	}
	fromStream, err := dec.DecodeReader(context.Background(), path, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	opts := ingest.DumpOptions{Sources: true, Warnings: true}
	file, stream := dumpTrace(t, fromFile, opts), dumpTrace(t, fromStream, opts)
	if file != stream {
		t.Fatalf("the file decodes otherwise than the stream:\nfile:\n%.2000s\nstream:\n%.2000s", file, stream)
	}
	if a, b := fromFile.Sources[0].Meta, fromStream.Sources[0].Meta; !maps.Equal(a, b) {
		t.Fatalf("the file's source metadata %v, the stream's %v", a, b)
	}
	return fromFile
}

func dumpTrace(t *testing.T, tr *ingest.Trace, opts ingest.DumpOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := tr.Dump(&buf, opts); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// A framed file decodes exactly as the same bytes streamed, whole and cut
// short anywhere: in a record's header, in its payload, at its end.
func TestFramedFileMatchesStream(t *testing.T) {
	data := framedFile()
	second := 4 + int(binary.BigEndian.Uint32(data))
	for _, n := range []int{len(data), len(data) - 1, second + 2, second + 4, second + 100, 7} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			tr := decodeFileAndStream(t, &Decoder{}, data[:n])
			if n == len(data) && tr.Sources[0].Meta["payloads"] != "proto,proto+zstd,json" {
				t.Fatalf("payload kinds %q, want every kind", tr.Sources[0].Meta["payloads"])
			}
			if n < len(data) && !strings.Contains(dumpTrace(t, tr, ingest.DumpOptions{Warnings: true}), "the file ends inside") {
				t.Fatal("no warning about the record cut short")
			}
		})
	}
}

// A record too large for the limit is skipped in a file as in a stream, and so is the rest of one cut short by the end of the file.
func TestFramedFileTooLargeRecord(t *testing.T) {
	small := otlptest.Proto((&otlptest.Synthetic{Seed: 5, Spans: 8}).Next())
	big := bytes.Repeat([]byte{0x0a}, len(small)+1000)
	dec := &Decoder{Options: Options{MaxRecordBytes: int64(len(small) + 100)}}
	for _, data := range [][]byte{
		otlptest.Frame(small, big, small),
		otlptest.Frame(small, big)[:4+len(small)+4+100],
	} {
		tr := decodeFileAndStream(t, dec, data)
		if !strings.Contains(dumpTrace(t, tr, ingest.DumpOptions{Warnings: true}), "over the") {
			t.Fatal("no warning about the record over the limit")
		}
	}
}
