package kineto

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/golden"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// dump is the canonical text of a decoded trace (ingest's Dump plus the
// source's metadata), with the input's path replaced by its base name.
func dump(t *testing.T, tr *ingest.Trace) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tr.Dump(&b, ingest.DumpOptions{Sources: true, Warnings: true}); err != nil {
		t.Fatal(err)
	}
	src := tr.Sources[0]
	keys := make([]string, 0, len(src.Meta))
	for k := range src.Meta {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "meta %s=%q\n", k, src.Meta[k])
	}
	return bytes.ReplaceAll(b.Bytes(), []byte(src.Path), []byte(filepath.Base(src.Path)))
}

// TestGoldenEdgeCases decodes a hand-written trace holding the cases the
// real ones lack (docs/kineto.md): ROCm names and hex-string streams,
// python_function, gpu_user_annotation in its old spelling, [memory] and
// [OutOfMemory] events, a P2P memcpy, a context sync on stream -1, a kernel
// linked only by its ac2g flow, a ts of 0 under a base, a missing and a
// negative dur, an unknown category, a counter, and baseTimeNanoseconds
// after traceEvents. No top-level user or host name reaches the model.
func TestGoldenEdgeCases(t *testing.T) {
	path := filepath.Join("testdata", "edge.pt.trace.json")
	in, err := ingest.NewInput(path)
	if err != nil {
		t.Fatal(err)
	}
	if !(Decoder{}).Sniff(in) {
		t.Fatal("Sniff does not take the fixture")
	}
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: path}}
	if err := (Decoder{}).Decode(context.Background(), in, tr); err != nil {
		t.Fatal(err)
	}
	tr.Validate()
	out := dump(t, tr)
	for _, secret := range []string{"someone", "secret-host", "libkineto_activities"} {
		if bytes.Contains(out, []byte(secret)) {
			t.Errorf("the top-level %q reached the model", secret)
		}
	}
	golden.Check(t, filepath.Join("testdata", "golden", "edge.txt"), out)
}

// TestGoldenRealSmall pins the whole decoded model of the two small real
// traces (the larger ones are checked by count in TestRealFilesCounts).
func TestGoldenRealSmall(t *testing.T) {
	for _, name := range []string{"hta-triton_example-triton_example.json.gz", "hta-cpu_only-rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"} {
		t.Run(name, func(t *testing.T) {
			tr := decodeReal(t, shareddata.Path(t, "testdata/kineto/"+name))
			golden.Check(t, filepath.Join("testdata", "golden", strings.TrimSuffix(name, ".json.gz")+".txt"), dump(t, tr))
		})
	}
}

// TestChunkedReads: the scanner's window moves at every read; reading one
// byte at a time must give the same model as reading the file whole.
func TestChunkedReads(t *testing.T) {
	files := []string{filepath.Join("testdata", "edge.pt.trace.json")}
	if root, ok := shareddata.Root(); ok {
		files = append(files, filepath.Join(root, "testdata", "kineto", "hta-critical_path-alexnet-benchmark_result_2869224_1695835535_trace.json.gz"))
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			in, err := ingest.NewInput(path)
			if err != nil {
				t.Fatal(err)
			}
			decode := func(wrap func(io.Reader) io.Reader) []byte {
				rc, err := in.Open()
				if err != nil {
					t.Fatal(err)
				}
				defer rc.Close()
				tr, err := Decoder{}.DecodeReader(context.Background(), wrap(rc), path)
				if err != nil {
					t.Fatal(err)
				}
				tr.Validate()
				return dump(t, tr)
			}
			whole := decode(func(r io.Reader) io.Reader { return r })
			if got := decode(iotest.OneByteReader); !bytes.Equal(got, whole) {
				t.Errorf("one byte at a time gives another model")
			}
			// DataErrReader needs a reader that reports EOF after the data
			// (bufio's does; gzip's may report it with the last bytes).
			dataErr := func(r io.Reader) io.Reader { return iotest.DataErrReader(bufio.NewReader(r)) }
			if got := decode(dataErr); !bytes.Equal(got, whole) {
				t.Errorf("data with EOF gives another model: %s", firstDiff(whole, got))
			}
		})
	}
}

func firstDiff(a, b []byte) string {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(al), len(bl)) {
		if !bytes.Equal(al[i], bl[i]) {
			return fmt.Sprintf("line %d:\n%s\n%s", i, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines vs %d", len(al), len(bl))
}

// TestSniff: Kineto traces by content, plain or as a sorted json.dump;
// llmprof's own Perfetto export, OTLP JSON and other JSON are not.
func TestSniff(t *testing.T) {
	for _, tc := range []struct {
		head string
		want bool
	}{
		{"\n{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [", true},
		{`{"baseTimeNanoseconds": 1, "deviceProperties": [], "displayTimeUnit": "ms", "traceEvents": []}`, true},
		{"\xef\xbb\xbf{\"distributedInfo\": {\"rank\": 0}, \"traceEvents\": [", true},
		{`{"displayTimeUnit":"ns","otherData":{"tool":"llmprof"},"traceEvents":[{"ph":"X","cat":"cuda_runtime"}]}`, false},
		{`{"resourceSpans": [{"resource": {}}]}`, false},
		{`[{"ph": "X", "cat": "cpu_op"}]`, false},
		{`{"traceEvents": []}`, false},
	} {
		if got := (Decoder{}).Sniff(&ingest.Input{Head: []byte(tc.head)}); got != tc.want {
			t.Errorf("Sniff(%.50q) = %v, want %v", tc.head, got, tc.want)
		}
	}
	if (Decoder{}).Sniff(&ingest.Input{Dir: true}) {
		t.Error("Sniff takes a directory")
	}
}
