package jsonscan

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"testing/iotest"
)

// FuzzScanner feeds arbitrary bytes to the scanner and checks that it
// never panics (so never reads outside its window) and always ends (every
// call consumes input or fails), that Skip accepts exactly what
// encoding/json's Valid accepts, and that the stream mode, one byte a read
// or whole, reads the same tokens, the same raw values and the same error
// at the same offset as the buffer mode.
func FuzzScanner(f *testing.F) {
	for _, seed := range []string{
		`{"a": [1, -2.5e3, "x\"y", {"b": null, "c": true}], "raw": {"d": false}}`,
		`[]`, `""`, `"\ud83d\ude00\u00e9\n"`, `01`, `[1,]`, `{"a":}`, "\"a\tb\"", `"\q"`,
		`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
		`{"raw": "` + string(bytes.Repeat([]byte("x"), 300)) + `"} trailing`,
		`tru`, `nul`, `-`, `1e`, `{"k" 1}`, "\xef\xbb\xbf{}",
	} {
		f.Add([]byte(seed))
	}
	for _, p := range []string{"../../ingest/kineto/testdata/edge.pt.trace.json", "../../ingest/otlp/testdata/otel-go-stdouttrace.json"} {
		if b, err := os.ReadFile(filepath.FromSlash(p)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s Scanner
		s.MaxDepth = 10000 // encoding/json's bound, for comparing with Valid
		s.Reset(data)
		s.Skip()
		s.End()
		if valid := json.Valid(data); valid != (s.Err() == nil) {
			t.Fatalf("Skip: err %v; json.Valid says %v", s.Err(), valid)
		}

		want := walkAll(func(s *Scanner) { s.Reset(data) })
		for name, reset := range map[string]func(*Scanner){
			"stream":              func(s *Scanner) { s.ResetReader(bytes.NewReader(data)) },
			"stream, byte a read": func(s *Scanner) { s.ResetReader(iotest.OneByteReader(bytes.NewReader(data))) },
		} {
			if got := walkAll(reset); got != want {
				t.Fatalf("%s read\n%s\nbuffer read\n%s", name, got, want)
			}
		}
	})
}

// walkAll reads a text with every kind of call and describes what it read.
func walkAll(reset func(*Scanner)) string {
	var s Scanner
	s.MaxDepth = 64
	reset(&s)
	var out bytes.Buffer
	walk(&s, &out)
	s.End()
	if s.Err() != nil {
		out.WriteString("\n" + s.Err().Error())
	} else {
		out.WriteString("\nend at " + strconv.FormatInt(s.Offset(), 10))
	}
	return out.String()
}

func walk(s *Scanner, out *bytes.Buffer) {
	switch c := s.Peek(); c {
	case '{':
		if !s.Open('{') {
			return
		}
		out.WriteString("{")
		for first := true; s.Member(&first); {
			out.WriteString(strconv.Quote(string(s.Key())) + ":")
			if string(s.Key()) == "raw" {
				out.WriteString("raw " + strconv.Quote(string(s.RawValue())) + " ")
				continue
			}
			walk(s, out)
		}
		out.WriteString("}")
	case '[':
		if !s.Open('[') {
			return
		}
		out.WriteString("[")
		for first := true; s.Elem(&first); {
			walk(s, out)
		}
		out.WriteString("]")
	case '"':
		out.WriteString("s" + strconv.Quote(string(s.Str())) + " ")
	case 't', 'f', 'n':
		v, null := s.Literal()
		out.WriteString(strconv.FormatBool(v) + strconv.FormatBool(null) + " ")
	default:
		out.WriteString("n" + strconv.Quote(string(s.Number())) + " ")
	}
}
