package otlp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest/otlp"
)

// A malformed first line of a JSON Lines file is one bad record: the lines
// after it are still read. (The sniffer once took a first line that failed
// anywhere for the start of a multi-line document, and the document reader
// then skipped the whole file.)
func TestMalformedFirstLineCostsOneLine(t *testing.T) {
	line := func(id, extra string) string {
		return `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"010203040506070` + id +
			`","name":"x"` + extra + `,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000000001000"}]}]}]}`
	}
	for _, bad := range []string{`,"k":"tab` + "\t" + `here"`, `,"k":"C:\Users"`, `,"k":01`} {
		in := line("1", bad) + "\n" + line("2", "") + "\n" + line("3", "") + "\n"
		for _, name := range []string{"x.jsonl", "x.json"} {
			tr, err := (&otlp.Decoder{}).DecodeReader(context.Background(), name, strings.NewReader(in))
			if err != nil {
				t.Fatalf("%s with %s on line 1: %v", name, bad, err)
			}
			if len(tr.Spans) != 2 || len(tr.Warnings.List) == 0 {
				t.Errorf("%s with %s on line 1: %d spans and warnings %v; want the 2 good lines and a warning for line 1", name, bad, len(tr.Spans), tr.Warnings.List)
			}
		}
	}
	// A document spread over lines is still one document.
	doc := "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[\n" +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060701","name":"x","startTimeUnixNano":"1","endTimeUnixNano":"2"}` +
		"\n]}]}]}\n"
	tr, err := (&otlp.Decoder{}).DecodeReader(context.Background(), "doc.json", strings.NewReader(doc))
	if err != nil || tr == nil || len(tr.Spans) != 1 {
		t.Fatalf("multi-line document: %v, %d spans; want 1", err, len(tr.Spans))
	}
}

// An error in an attribute value that comes before its key names the line
// the value is on, not the document's first.
func TestValueBeforeKeyErrorLine(t *testing.T) {
	doc := "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[\n" +
		`{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060701","name":"x","startTimeUnixNano":"1","endTimeUnixNano":"2"},` +
		"\n\n\n" + `{"attributes":[{"value":{"intValue":"zz"},"key":"k"}]}]}]}]}`
	tr, err := (&otlp.Decoder{}).DecodeReader(context.Background(), "x.json", strings.NewReader(doc))
	msg := ""
	if err != nil {
		msg = err.Error()
	} else {
		for _, w := range tr.Warnings.List {
			msg += w.String() + "\n"
		}
	}
	if !strings.Contains(msg, `"zz"`) || !strings.Contains(msg, "line 5") {
		t.Errorf("the bad intValue on line 5 was reported as %q", msg)
	}
}
