package otlp

import (
	"bytes"
	"encoding/hex"
	"math"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
)

func TestScannerNumbers(t *testing.T) {
	ints := []struct {
		in   string
		want int64
		ok   bool
	}{
		{`"1544712660000000000"`, 1544712660000000000, true},
		{`1544712660000000000`, 1544712660000000000, true},
		{`"18446744073709551615"`, -1, true}, // fixed64 max wraps, as the bits say
		{`-42`, -42, true},
		{`1.5e3`, 1500, true},
		{`"12abc"`, 0, false},
		{`null`, 0, true},
	}
	for _, c := range ints {
		var s jsonScanner
		s.reset([]byte(c.in))
		got := s.int64()
		if (s.Err() == nil) != c.ok || (c.ok && got != c.want) {
			t.Errorf("int64(%s) = %d, %v; want %d ok=%v", c.in, got, s.Err(), c.want, c.ok)
		}
	}
	floats := []struct {
		in   string
		want float64
	}{
		{`72.5`, 72.5}, {`"NaN"`, math.NaN()}, {`"Infinity"`, math.Inf(1)}, {`"-Infinity"`, math.Inf(-1)},
		{`"0.25"`, 0.25}, {`1e400`, math.Inf(1)}, {`3`, 3},
	}
	for _, c := range floats {
		var s jsonScanner
		s.reset([]byte(c.in))
		got := s.float64()
		same := got == c.want || (math.IsNaN(got) && math.IsNaN(c.want))
		if s.Err() != nil || !same {
			t.Errorf("float64(%s) = %v, %v; want %v", c.in, got, s.Err(), c.want)
		}
	}
}

func TestDecodeID(t *testing.T) {
	full := "5b8efff798038103d269b633813fc60c"
	cases := []struct {
		name string
		in   string
		size int
		want string // hex, "" for failure
	}{
		{"hex", full, 16, full},
		{"upper-case hex", strings.ToUpper(full), 16, full},
		{"base64", "W47/95gDgQPSabYzgT/GDA==", 16, full},
		{"base64 unpadded", "W47/95gDgQPSabYzgT/GDA", 16, full},
		{"base64 URL", "W47_95gDgQPSabYzgT_GDA==", 16, full},
		{"64-bit trace ID", "d269b633813fc60c", 16, "0000000000000000d269b633813fc60c"},
		{"span hex", "eee19b7ec3c1b174", 8, "eee19b7ec3c1b174"},
		{"span base64", "7uGbfsPBsXQ=", 8, "eee19b7ec3c1b174"},
		{"empty is absent", "", 16, "00000000000000000000000000000000"},
		{"wrong length", "abcd", 16, ""},
		{"not hex or base64", "zz" + full[2:], 16, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dst := bytes.Repeat([]byte{0xff}, c.size)
			ok := decodeID(dst, []byte(c.in))
			if c.want == "" {
				if ok {
					t.Fatalf("decodeID(%q) accepted: %x", c.in, dst)
				}
				return
			}
			if !ok || hex.EncodeToString(dst) != c.want {
				t.Fatalf("decodeID(%q) = %x, %v; want %s", c.in, dst, ok, c.want)
			}
		})
	}
}

// Enum names and numbers, any case, with or without the prefix.
func TestJSONEnums(t *testing.T) {
	cases := []struct {
		in   string
		want ingest.SpanKind
		warn bool
	}{
		{`2`, ingest.SpanKindServer, false},
		{`"2"`, ingest.SpanKindServer, false},
		{`"SPAN_KIND_CLIENT"`, ingest.SpanKindClient, false},
		{`"span_kind_producer"`, ingest.SpanKindProducer, false},
		{`"CONSUMER"`, ingest.SpanKindConsumer, false},
		{`"internal"`, ingest.SpanKindInternal, false},
		{`"SPAN_KIND_BOGUS"`, ingest.SpanKindUnspecified, true},
		{`9`, ingest.SpanKindUnspecified, true},
	}
	for _, c := range cases {
		tr := ingest.New()
		tr.Sources = []ingest.Source{{Path: "x"}}
		d := newState(tr, 0)
		var s jsonScanner
		s.reset([]byte(c.in))
		got := d.spanKind(d.jsonEnum(&s, "SPAN_KIND_", spanKindNames[:]))
		if got != c.want || (tr.Warnings.Len() > 0) != c.warn || s.Err() != nil {
			t.Errorf("kind %s = %v (warnings %v, err %v); want %v, warning %v", c.in, got, tr.Warnings.List, s.Err(), c.want, c.warn)
		}
	}
}

// Sniffing decides the form from content alone.
func TestSniff(t *testing.T) {
	frame := func(p string) string { return string([]byte{0, 0, 0, byte(len(p))}) + p }
	cases := []struct {
		name string
		head string
		want form
	}{
		{"json lines", `{"resourceSpans":[]}` + "\n" + `{"resourceSpans":[]}`, formJSONLines},
		{"one-line document", `{"resourceSpans":[{"resource":{}}]}`, formJSONLines},
		{"pretty document", "{\n  \"resourceSpans\": [\n", formJSONDoc},
		{"snake case", `{"resource_spans":[]}`, formJSONLines},
		{"tempo", `{"batches":[{"resource":{}}]}`, formJSONLines},
		{"bom and space", "\xef\xbb\xbf  \n{\n  \"resourceSpans\": [\n", formJSONDoc},
		{"jaeger data", `{"data":[{"traceID":"1","spans":[]}],"total":0}`, formJaeger},
		{"jaeger bare", `{"traceID":"0000000000000001","spans":[{"traceID":"1","spanID":"2"}]}`, formJaeger},
		{"jaeger bare cut", `{"traceID":"0000000000000001","spans":[{"traceID":"1","spa`, formJaeger},
		{"package.json", `{"name":"x","version":"1"}`, formNone},
		{"data of something else", `{"data":[1,2,3]}`, formNone},
		{"metrics", `{"resourceMetrics":[]}`, formNone},
		{"array", `[{"resourceSpans":[]}]`, formNone},
		{"framed proto", frame("\x0a\x02\x12\x00"), formFramed},
		{"framed json", frame(`{"resourceSpans":[]}`), formFramed},
		{"framed zstd", frame("\x28\xb5\x2f\xfd\x00\x00"), formFramed},
		{"raw proto", "\x0a\x06\x12\x04\x12\x02\x2a\x00", formProto},
		{"raw proto cut", "\x0a\x80\x01\x0a\x10\x0a\x0e\x0a\x0cservice.name", formProto},
		{"text", "hello world\n", formNone},
		{"random binary", "\x0a\x03\xff\xff\xff", formNone},
		{"sqlite", "SQLite format 3\x00", formNone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := sniff([]byte(c.head)); got != c.want {
				t.Fatalf("sniff = %d, want %d", got, c.want)
			}
		})
	}
}
