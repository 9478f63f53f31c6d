package otlp_test

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
	"github.com/llmprof/llmprof/ingest/otlp"
)

// testdata/otel-go-stdouttrace.json is what the Go SDK's stdouttrace
// exporter printed (see testdata/README.md): the SDK's own test span
// pretty-printed, a child with every attribute type, a log line, and a
// grandchild from the default compact encoder.
func TestGoStdoutExporter(t *testing.T) {
	path := filepath.Join("testdata", "otel-go-stdouttrace.json")
	tr, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{&otlp.Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Sources[0].Format; got != "otel-go-stdout" {
		t.Errorf("format %q", got)
	}
	if got := strings.Join(spanNames(tr), ","); got != "/foo,llm.request,tokenize" {
		t.Fatalf("spans %s\n%s", got, warningList(tr))
	}
	foo, req, tok := &tr.Spans[0], &tr.Spans[1], &tr.Spans[2]
	if foo.TraceID.String() != "0102030405060708090a0b0c0d0e0f10" || foo.ID.String() != "0102030405060708" || !foo.Parent.IsZero() {
		t.Errorf("/foo IDs %s %s parent %s", foo.TraceID, foo.ID, foo.Parent)
	}
	if req.Parent != foo.ID || tok.Parent != req.ID || tok.ID.String() != "010203040506070a" {
		t.Errorf("parents %s %s, id %s", req.Parent, tok.Parent, tok.ID)
	}
	// Times keep their offsets: +01:00 and -07:00 are the same instant scale.
	if foo.Start != isoNs(t, "2025-03-04T10:15:30.123456789Z") || foo.End != foo.Start {
		t.Errorf("/foo times %d..%d", foo.Start, foo.End)
	}
	if req.Start != isoNs(t, "2025-03-04T10:15:30.500000001Z") || req.End-req.Start != 1_500_000_000 {
		t.Errorf("llm.request times %d..%d", req.Start, req.End)
	}
	if tok.Start-req.Start != 1_000_000 || tok.End-tok.Start != 2_500_000 {
		t.Errorf("tokenize times %d..%d", tok.Start, tok.End)
	}
	if foo.Kind != ingest.SpanKindInternal || req.Kind != ingest.SpanKindServer || tok.Kind != ingest.SpanKindClient {
		t.Errorf("kinds %v %v %v", foo.Kind, req.Kind, tok.Kind)
	}
	if foo.Status != ingest.StatusError || tr.Str(foo.StatusMsg) != "interesting" || req.Status != ingest.StatusOK || tok.Status != ingest.StatusUnset {
		t.Errorf("status %v %q, %v, %v", foo.Status, tr.Str(foo.StatusMsg), req.Status, tok.Status)
	}
	attr := func(attrs []ingest.Attr, key string) string {
		v, ok := tr.Attr(attrs, key)
		if !ok {
			return "<absent>"
		}
		if v.Kind() == ingest.KindString {
			return "string:" + tr.Str(v.Str())
		}
		return v.Kind().String() + ":" + tr.FormatValue(v)
	}
	for key, want := range map[string]string{
		"gen_ai.request.model":           "string:meta-llama/Llama-3.1-8B-Instruct",
		"gen_ai.usage.output_tokens":     "int:128",
		"llm.stream":                     "bool:true",
		"gen_ai.request.temperature":     "double:0.7",
		"gen_ai.response.finish_reasons": `array:["stop"]`,
		"token.ids":                      "array:[1, 2, 3]",
		"scores":                         "array:[0.5, 1.25]",
		"flags":                          "array:[true, false]",
		"mixed":                          `array:["a", 7]`,
		"nothing":                        "empty:<empty>",
	} {
		if got := attr(tr.SpanAttrs(req), key); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	if v, _ := tr.Attr(tr.SpanAttrs(req), "blob"); v.Kind() != ingest.KindBytes || tr.Str(v.Str()) != "hi\x00" {
		t.Errorf("blob = %s %q", v.Kind(), tr.Str(v.Str()))
	}
	if v, _ := tr.Attr(tr.SpanAttrs(req), "usage"); v.Kind() != ingest.KindMap || attr(tr.Maps[v.Index()], "input") != "int:10" || attr(tr.Maps[v.Index()], "unit") != "string:tok" {
		t.Errorf("usage = %s", tr.FormatValue(v))
	}
	if got := attr(tr.SpanAttrs(foo), "double"); got != "double:123.456" {
		t.Errorf("/foo double = %s", got)
	}
	if len(tr.Events(foo)) != 2 || tr.Str(tr.Events(foo)[1].Name) != "bar" || tr.Events(foo)[1].Time != foo.Start || attr(tr.EventAttrs(&tr.Events(foo)[0]), "key") != "string:value" {
		t.Errorf("/foo events %+v", tr.Events(foo))
	}
	if len(tr.Events(req)) != 1 || tr.Events(req)[0].Time-req.Start != 81_500_000 || attr(tr.EventAttrs(&tr.Events(req)[0]), "index") != "int:0" {
		t.Errorf("llm.request events %+v", tr.Events(req))
	}
	if len(tr.Links(req)) != 1 || tr.Links(req)[0].TraceID.String() != "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf" || tr.Links(req)[0].SpanID.String() != "b0b1b2b3b4b5b6b7" || attr(tr.LinkAttrs(&tr.Links(req)[0]), "link.kind") != "string:batch" {
		t.Errorf("links %+v", tr.Links(req))
	}
	if len(tr.Resources) != 2 || req.Resource != tok.Resource || attr(tr.Resources[foo.Resource].Attrs, "rk1") != "string:rv11" ||
		attr(tr.Resources[req.Resource].Attrs, "service.name") != "string:llm-gateway" {
		t.Fatalf("%d resources; span resources %d %d %d", len(tr.Resources), foo.Resource, req.Resource, tok.Resource)
	}
	if foo.Scope != -1 || req.Scope < 0 || req.Scope != tok.Scope {
		t.Fatalf("scopes %d %d %d", foo.Scope, req.Scope, tok.Scope)
	}
	if sc := tr.Scopes[req.Scope]; tr.Str(sc.Name) != "github.com/acme/gateway" || tr.Str(sc.Version) != "v1.2.3" || attr(sc.Attrs, "scope.k") != "string:scope.v" {
		t.Errorf("scope %q %q %s", tr.Str(sc.Name), tr.Str(sc.Version), attr(sc.Attrs, "scope.k"))
	}
	// The log line between the objects is one warning, with its line.
	var codes []string
	for _, w := range tr.Warnings.List {
		codes = append(codes, w.Code+"@"+w.Pos)
	}
	if got := strings.Join(codes, " "); !strings.Contains(got, "not-a-span@line 328") {
		t.Errorf("warnings %s\n%s", got, warningList(tr))
	}
}

// The same spans as the SDK's 2021 releases wrote them (one JSON array per
// batch, the pretty form of exporters/stdout/stdouttrace/trace_test.go at
// v1.0), gzip-compressed, and compact arrays on one line.
func TestGoStdoutArrays(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "otel-go-stdouttrace.json"))
	if err != nil {
		t.Fatal(err)
	}
	objs := goObjects(t, full)
	pretty := "[\n\t" + strings.ReplaceAll(objs[0], "\n", "\n\t") + ",\n\t" + strings.ReplaceAll(objs[1], "\n", "\n\t") + "\n]\n"
	compact := "[" + objs[2] + "]\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(pretty + compact))
	zw.Close()
	tr, err := (&otlp.Decoder{}).DecodeReader(context.Background(), "spans.json.gz", &gz)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(spanNames(tr), ","); got != "/foo,llm.request,tokenize" || tr.Sources[0].Format != "otel-go-stdout" || len(tr.Warnings.List) != 0 {
		t.Errorf("spans %s, format %s\n%s", got, tr.Sources[0].Format, warningList(tr))
	}
}

// goObjects splits the fixture into its span objects' text.
func goObjects(t *testing.T, full []byte) []string {
	t.Helper()
	var objs []string
	for _, part := range strings.SplitAfter(string(full), "\n}\n") {
		for _, line := range strings.Split(part, "\n") {
			if strings.HasPrefix(line, "{\"Name\"") {
				objs = append(objs, line)
			}
		}
		if i := strings.Index(part, "{\n"); i >= 0 {
			objs = append(objs, strings.TrimSuffix(part[i:], "\n"))
		}
	}
	if len(objs) != 3 {
		t.Fatalf("%d objects in the fixture", len(objs))
	}
	return objs
}

// Hostile and damaged input: every case ends in warnings naming the file and
// the line, or an error naming the file, never a crash; the good spans stay.
func TestGoStdoutDamaged(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "otel-go-stdouttrace.json"))
	if err != nil {
		t.Fatal(err)
	}
	objs := goObjects(t, full)
	compact := objs[2] + "\n"
	sub := func(old, new string) string {
		if !strings.Contains(compact, old) {
			t.Fatalf("%q not in the fixture", old)
		}
		return strings.Replace(compact, old, new, 1)
	}
	const zero = `"0001-01-01T00:00:00Z"`
	cases := []struct {
		name  string
		input string
		spans string
		want  []string // code@pos and message parts
	}{
		{"truncated", string(full[:len(full)-300]), "/foo,llm.request",
			[]string{"malformed-record@line 329", "truncated JSON"}},
		{"name a number", sub(`"Name":"tokenize"`, `"Name":5`) + compact, "tokenize",
			[]string{"malformed-record@line 1", "cannot unmarshal number"}},
		{"attributes an object", sub(`"Attributes":null`, `"Attributes":{"a":1}`), "",
			[]string{"malformed-record@line 1"}},
		{"bad span ID", sub(`"SpanID":"010203040506070a"`, `"SpanID":"zz"`) + compact, "tokenize",
			[]string{"bad-id@line 1", `malformed TraceID "0102030405060708090a0b0c0d0e0f10" or SpanID "zz"`}},
		{"bad parent", sub(`"SpanID":"0102030405060709"`, `"SpanID":"0102"`), "tokenize",
			[]string{"bad-id@line 1", "kept as a root"}},
		{"time out of range", sub(`"StartTime":"2025-03-04T03:15:30.501000001-07:00"`, `"StartTime":"9999-03-04T03:15:30Z"`), "",
			[]string{"bad-time@line 1", `StartTime "9999-03-04T03:15:30Z"`}},
		{"value of the wrong type", sub(`"Attributes":null`, `"Attributes":[{"Key":"n","Value":{"Type":"INT64","Value":"7"}},{"Key":"x","Value":{"Type":"WEIRD","Value":1}},{"Key":"ok","Value":{"Type":"BOOL","Value":true}}]`), "tokenize",
			[]string{"bad-value@line 1", `attribute "n": value "7" does not match its Type "INT64"`, "unknown-value-type@line 1", `"WEIRD"`}},
		{"kind and status out of range", sub(`"SpanKind":3`, `"SpanKind":99`), "tokenize",
			[]string{"bad-enum@line 1", "unknown SpanKind 99"}},
		{"without timestamps", strings.Repeat(sub(`"StartTime":"2025-03-04T03:15:30.501000001-07:00","EndTime":"2025-03-04T03:15:30.503500001-07:00"`, `"StartTime":`+zero+`,"EndTime":`+zero), 3), "",
			[]string{"no-timestamps@line 1", "3 span(s) have the zero time", "WithoutTimestamps"}},
		{"a metrics object", compact + `{"Name":"x","Resource":[],"ScopeMetrics":[]}` + "\n", "tokenize",
			[]string{"not-a-span@line 2", "without a SpanContext"}},
		{"deep nesting", sub(`"Attributes":null`, `"Attributes":[{"Key":"d","Value":`+strings.Repeat(`{"Type":"SLICE","Value":[`, 100)+strings.Repeat(`]}`, 100)+`}]`), "tokenize",
			[]string{"bad-value@line 1"}},
		{"binary", compact + "\x00\x00\x00", "tokenize", []string{"malformed-record@byte", "NUL byte"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr, err := (&otlp.Decoder{}).DecodeReader(context.Background(), "spans.json", strings.NewReader(c.input))
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(spanNames(tr), ","); got != c.spans {
				t.Errorf("spans %q, want %q", got, c.spans)
			}
			var got strings.Builder
			for _, w := range tr.Warnings.List {
				got.WriteString(w.Code + "@" + w.Pos + " " + w.String() + "\n")
			}
			for _, want := range c.want {
				if !strings.Contains(got.String(), want) {
					t.Errorf("no %q in the warnings:\n%s", want, got.String())
				}
			}
			for _, w := range tr.Warnings.List {
				if w.Path != "spans.json" {
					t.Errorf("warning without the file: %v", w)
				}
			}
		})
	}
}

// An object over the record limit is skipped without being held; the spans
// around it are kept.
func TestGoStdoutHugeObject(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "otel-go-stdouttrace.json"))
	if err != nil {
		t.Fatal(err)
	}
	compact := goObjects(t, full)[2] + "\n"
	huge := strings.Replace(compact, `"Attributes":null`, `"Attributes":[{"Key":"big","Value":{"Type":"STRING","Value":"`+strings.Repeat("x", 1<<20)+`"}}]`, 1)
	dec := &otlp.Decoder{Options: otlp.Options{MaxRecordBytes: 64 << 10}}
	tr, err := dec.DecodeReader(context.Background(), "spans.json", strings.NewReader(compact+huge+compact))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Spans) != 2 || !strings.Contains(warningList(tr), "spans.json:line 2: object of 1049") {
		t.Errorf("%d spans\n%s", len(tr.Spans), warningList(tr))
	}
}

// Text that only looks like the Go exporter's is refused with an error
// naming the file.
func TestGoStdoutNotSniffed(t *testing.T) {
	for _, in := range []string{
		`{"Name":"x","SpanContext":"abc"}`,
		`[{"Name":"x","Span":{}}]`,
		`[1,2,3]`,
	} {
		_, err := (&otlp.Decoder{}).DecodeReader(context.Background(), "x.json", strings.NewReader(in))
		var ie *ingest.InputError
		if !errors.As(err, &ie) || !errors.Is(err, ingest.ErrUnknownFormat) || !strings.Contains(err.Error(), "x.json") {
			t.Errorf("%s: %v", in, err)
		}
	}
}
