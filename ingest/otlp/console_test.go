package otlp_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
)

func isoNs(t *testing.T, s string) int64 {
	t.Helper()
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return ts.UnixNano()
}

// The Python SDK's ConsoleSpanExporter output (testdata/console-exporter.txt,
// written after ReadableSpan.to_json: pretty-printed objects one after
// another, a log line between two of them) decodes span by span.
func TestConsoleExporter(t *testing.T) {
	path := filepath.Join("testdata", "console-exporter.txt")
	tr, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{&otlp.Decoder{}}, ingest.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Sources[0].Format; got != "otel-python-console" {
		t.Errorf("format %q", got)
	}
	if got := strings.Join(spanNames(tr), ","); got != "llm_request,tokenize,detokenize" {
		t.Fatalf("spans %s\n%s", got, warningList(tr))
	}
	root, tok, detok := &tr.Spans[0], &tr.Spans[1], &tr.Spans[2]
	if root.TraceID.String() != "5b8efff798038103d269b633813fc60c" || root.ID.String() != "eee19b7ec3c1b174" || !root.Parent.IsZero() {
		t.Errorf("root IDs %s %s parent %s", root.TraceID, root.ID, root.Parent)
	}
	if tok.Parent != root.ID || detok.Parent != root.ID || detok.ID.String() != "00000000000000a1" {
		t.Errorf("children: parents %s %s, id %s", tok.Parent, detok.Parent, detok.ID)
	}
	if root.Start != isoNs(t, "2025-03-04T10:15:30.123456Z") || root.End-root.Start != 1_500_000_000 {
		t.Errorf("root times %d..%d", root.Start, root.End)
	}
	if tok.Start != isoNs(t, "2025-03-04T10:15:30.124Z") || tok.End-tok.Start != 2_500_000 {
		t.Errorf("+00:00 times %d..%d", tok.Start, tok.End)
	}
	if root.Kind != ingest.SpanKindServer || tok.Kind != ingest.SpanKindInternal {
		t.Errorf("kinds %v %v", root.Kind, tok.Kind)
	}
	if tok.Status != ingest.StatusOK || detok.Status != ingest.StatusError || tr.Str(detok.StatusMsg) != "ValueError: invalid token id 128257" {
		t.Errorf("status %v %v %q", tok.Status, detok.Status, tr.Str(detok.StatusMsg))
	}
	attr := func(s *ingest.Span, key string) string {
		v, ok := tr.Attr(tr.SpanAttrs(s), key)
		if !ok {
			return "<absent>"
		}
		if v.Kind() == ingest.KindString {
			return "string:" + tr.Str(v.Str())
		}
		return v.Kind().String() + ":" + tr.FormatValue(v)
	}
	for key, want := range map[string]string{
		"gen_ai.request.model":               "string:meta-llama/Llama-3.1-8B-Instruct",
		"gen_ai.usage.completion_tokens":     "int:128",
		"gen_ai.request.temperature":         "double:0.7",
		"llm.stream":                         "bool:true",
		"gen_ai.latency.time_to_first_token": "double:0.0815",
	} {
		if got := attr(root, key); got != want {
			t.Errorf("%s = %s, want %s", key, got, want)
		}
	}
	if v, _ := tr.Attr(tr.SpanAttrs(root), "gen_ai.response.finish_reasons"); strings.Join(tr.StringList(v), ",") != "stop" {
		t.Errorf("finish_reasons = %s", tr.FormatValue(v))
	}
	if len(tr.Events(root)) != 1 || tr.Str(tr.Events(root)[0].Name) != "first_token" || tr.Events(root)[0].Time-root.Start != 81_500_000 {
		t.Errorf("events %+v", tr.Events(root))
	}
	if len(tr.Links(tok)) != 1 || tr.Links(tok)[0].SpanID.String() != "b7ad6b7169203331" {
		t.Errorf("links %+v", tr.Links(tok))
	}
	if len(tr.Resources) != 1 || root.Resource != 0 || detok.Resource != 0 {
		t.Fatalf("%d resources; span resources %d %d", len(tr.Resources), root.Resource, detok.Resource)
	}
	if v, _ := tr.Attr(tr.Resources[0].Attrs, "service.name"); tr.Str(v.Str()) != "vllm" {
		t.Errorf("service.name = %s", tr.FormatValue(v))
	}
	if got := tr.Sources[0].Clock.Name; got != "realtime@"+ingest.HostID("gpu-node-3") {
		t.Errorf("clock %q", got)
	}
	// The log line between the objects is one warning, with its line.
	found := false
	for _, w := range tr.Warnings.List {
		if w.Code == "not-a-span" && w.Pos == "line 48" {
			found = true
		}
	}
	if !found {
		t.Errorf("no not-a-span warning at line 48:\n%s", warningList(tr))
	}
}

// One object per line (to_json(indent=None)), a span with a bad ID and a
// truncated last object: the good spans are kept, the rest are warnings.
func TestConsoleExporterDamaged(t *testing.T) {
	full, err := os.ReadFile(filepath.Join("testdata", "console-exporter.txt"))
	if err != nil {
		t.Fatal(err)
	}
	one := `{"name": "a", "context": {"trace_id": "0x0000000000000000000000000000000a", "span_id": "0x000000000000000a", "trace_state": "[]"}, "kind": "SpanKind.CLIENT", "parent_id": null, "start_time": "2025-03-04T10:15:30.000001Z", "end_time": "2025-03-04T10:15:30.000002Z", "status": {"status_code": "UNSET"}, "attributes": {"n": [1, 2]}, "events": [], "links": [], "resource": {"attributes": {"service.name": "x"}, "schema_url": ""}}` + "\n"
	bad := strings.Replace(one, `"span_id": "0x000000000000000a"`, `"span_id": "0xzz"`, 1)
	data := []byte(one + bad + string(full[:len(full)-200]))
	tr, err := (&otlp.Decoder{}).DecodeReader(context.Background(), "paste.txt", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(spanNames(tr), ","); got != "a,llm_request,tokenize" {
		t.Errorf("spans %s\n%s", got, warningList(tr))
	}
	var codes []string
	for _, w := range tr.Warnings.List {
		codes = append(codes, w.Code+"@"+w.Pos)
	}
	if got := strings.Join(codes, " "); !strings.Contains(got, "bad-id@line 2") || !strings.Contains(got, "malformed-record@line 90") ||
		!strings.Contains(warningList(tr), "truncated JSON") {
		t.Errorf("warnings %s\n%s", got, warningList(tr))
	}
}

// ReadableSpan.to_json prints end_time null for a span not yet ended: the
// warning says it is not ended, not that the time is malformed.
func TestConsoleSpanNotEnded(t *testing.T) {
	one := `{"name": "a", "context": {"trace_id": "0x0000000000000000000000000000000a", "span_id": "0x000000000000000a", "trace_state": "[]"}, "kind": "SpanKind.CLIENT", "parent_id": null, "start_time": "2025-03-04T10:15:30.000001Z", "end_time": null, "status": {"status_code": "UNSET"}, "attributes": {}, "events": [], "links": [], "resource": {"attributes": {"service.name": "x"}, "schema_url": ""}}` + "\n"
	tr, err := (&otlp.Decoder{}).DecodeReader(context.Background(), "paste.txt", strings.NewReader(one+one))
	if err != nil {
		t.Fatal(err)
	}
	got := warningList(tr)
	if len(tr.Spans) != 0 || !strings.Contains(got, `span "a" is not ended (end_time null); skipped`) || strings.Contains(got, "malformed") {
		t.Errorf("%d spans, warnings:\n%s", len(tr.Spans), got)
	}
}
