package otlp

import (
	"bytes"
	"encoding/binary"
	"errors"

	"github.com/llmprof/llmprof/internal/jsonscan"
)

// form is the layout of an input, decided from its first bytes.
type form uint8

const (
	formNone      form = iota
	formJSONLines      // OTLP/JSON or Tempo JSON, one object per line (the collector's file exporter)
	formJSONDoc        // OTLP/JSON or Tempo JSON document spread over several lines
	formJaeger         // Jaeger v1 JSON
	formProto          // a raw ExportTraceServiceRequest
	formFramed         // 4-byte big-endian length + payload records
	formConsole        // the OpenTelemetry Python SDK's ConsoleSpanExporter output
	formGoStdout       // the OpenTelemetry Go SDK's stdouttrace exporter output
)

var (
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
	gzipMagic = []byte{0x1f, 0x8b}
	utf8BOM   = []byte{0xef, 0xbb, 0xbf}
)

// maxSniffRecord bounds the record length the sniffer believes in.
const maxSniffRecord = 1 << 30

// sniff decides the form of an input from its head (the first
// ingest.HeadSize bytes of its decompressed content). JSON is recognized by
// the keys it has, not by its first byte alone: {"resourceSpans"} or
// {"batches"} (Tempo), {"data":[{"spans"…}]} or {"traceID","spans"} (Jaeger),
// {"name","context":{"trace_id"…}} (the Python SDK's console exporter),
// {"Name","SpanContext":{"TraceID"…}} or an array of those (the Go SDK's
// stdouttrace exporter).
// A framed file starts with a plausible length followed by a zstd frame, OTLP
// JSON or a plausible protobuf request; a raw request must parse as
// ExportTraceServiceRequest → ResourceSpans → ScopeSpans → Span as far as the
// head reaches.
func sniff(head []byte) form {
	text := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	if len(text) > 0 && text[0] == '{' {
		switch sniffJSON(text) {
		case jsonOTLP:
			if firstLineIsValue(text) {
				return formJSONLines
			}
			return formJSONDoc
		case jsonJaeger:
			return formJaeger
		case jsonConsole:
			return formConsole
		case jsonGoStdout:
			return formGoStdout
		}
		return formNone
	}
	if len(text) > 0 && text[0] == '[' && sniffGoStdoutArray(text) {
		return formGoStdout
	}
	if sniffFramed(head) {
		return formFramed
	}
	// A head shorter than HeadSize is the whole input, but a truncated
	// request is still a request (its complete spans are worth reading).
	if len(head) > 0 && head[0] == 0x0a && plausibleRequest(head, false) {
		return formProto
	}
	return formNone
}

type jsonKind uint8

const (
	jsonOther jsonKind = iota
	jsonOTLP
	jsonJaeger
	jsonConsole
	jsonGoStdout
)

// sniffJSON classifies a JSON text by its top-level keys, reading no further
// than it must. The text may be cut anywhere.
func sniffJSON(text []byte) jsonKind {
	var s jsonScanner
	s.reset(text)
	if !s.Open('{') {
		return jsonOther
	}
	sawTraceID := false
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "resourceSpans", "resource_spans", "batches":
			if s.Peek() == '[' {
				return jsonOTLP
			}
			s.Skip()
		case "data":
			// Jaeger's query API: {"data":[{"traceID":…,"spans":[…]}]}.
			if !s.Open('[') {
				return jsonOther
			}
			firstElem := true
			if !s.Elem(&firstElem) || !s.Open('{') {
				return jsonOther
			}
			for first := true; s.Member(&first); {
				switch string(s.Key()) {
				case "traceID", "spans", "processes":
					return jsonJaeger
				}
				s.Skip()
			}
			return jsonOther
		case "traceID":
			sawTraceID = true
			s.Skip()
		case "context":
			// The console exporter: {"name":…,"context":{"trace_id":"0x…",…}}.
			if s.Open('{') {
				for first := true; s.Member(&first); {
					switch string(s.Key()) {
					case "trace_id", "span_id":
						return jsonConsole
					}
					s.Skip()
				}
			}
			return jsonOther
		case "SpanContext":
			// The Go stdouttrace exporter: {"Name":…,"SpanContext":{"TraceID":…}}.
			if isGoSpanContext(&s) {
				return jsonGoStdout
			}
			return jsonOther
		case "spans":
			// A bare Jaeger trace object: its spans have spanID and operationName.
			if looksLikeJaegerSpans(&s) || (sawTraceID && s.Err() != nil && len(s.Rest()) == 0) {
				return jsonJaeger
			}
			return jsonOther
		default:
			s.Skip()
		}
	}
	// A head cut before the spans of a trace that began with its traceID.
	if sawTraceID && s.Err() != nil && len(s.Rest()) == 0 {
		return jsonJaeger
	}
	return jsonOther
}

// isGoSpanContext reports whether the value at s is a Go SDK SpanContext
// (trace.SpanContextConfig's fields).
func isGoSpanContext(s *jsonScanner) bool {
	if !s.Open('{') {
		return false
	}
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "TraceID", "SpanID":
			return true
		}
		s.Skip()
	}
	return false
}

// sniffGoStdoutArray reports whether text is a JSON array whose first
// element is a Go stdouttrace span (the SDK's output of 2021, one array per
// batch).
func sniffGoStdoutArray(text []byte) bool {
	var s jsonScanner
	s.reset(text)
	firstElem := true
	return s.Open('[') && s.Elem(&firstElem) && s.Peek() == '{' && sniffJSON(s.Rest()) == jsonGoStdout
}

func looksLikeJaegerSpans(s *jsonScanner) bool {
	if !s.Open('[') {
		return false
	}
	firstElem := true
	if !s.Elem(&firstElem) || !s.Open('{') {
		return false
	}
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "spanID", "operationName":
			return true
		}
		s.Skip()
	}
	return false
}

// firstLineIsValue reports whether the text's first line holds a complete
// JSON value (JSON Lines), as opposed to the start of a document that spans
// lines. A head without a newline is one long line. A first line that is
// malformed before its end is a bad record of JSON Lines, not the start of a
// document: only running out of text at the newline says the value goes on,
// so that one bad line costs that line and not the file.
func firstLineIsValue(text []byte) bool {
	nl := bytes.IndexByte(text, '\n')
	if nl < 0 {
		return true
	}
	var s jsonScanner
	s.reset(text[:nl])
	s.Skip()
	var se *jsonscan.SyntaxError
	return s.Err() == nil || errors.As(s.Err(), &se) && se.Offset < int64(nl)
}

// sniffFramed reports whether head starts with a length-prefixed record.
func sniffFramed(head []byte) bool {
	if len(head) < 5 {
		return false
	}
	n := int(binary.BigEndian.Uint32(head))
	if n == 0 || n > maxSniffRecord {
		return false
	}
	p := head[4:]
	complete := len(p) >= n
	if complete {
		p = p[:n]
	}
	switch {
	case bytes.HasPrefix(p, zstdMagic):
		return len(p) >= len(zstdMagic)
	case p[0] == '{':
		return sniffJSON(p) == jsonOTLP
	}
	return p[0] == 0x0a && plausibleRequest(p, complete)
}

// plausibleRequest reports whether b reads as the start of an
// ExportTraceServiceRequest (all of it when complete).
func plausibleRequest(b []byte, complete bool) bool {
	return plausible(b, complete, levelRequest, 0)
}

type protoLevel uint8

const (
	levelRequest protoLevel = iota
	levelResourceSpans
	levelScopeSpans
	levelSpan
	levelOpaque
)

// plausible walks the fields of a message at the given level; a length that
// runs past b is followed into as far as b goes unless complete is set.
func plausible(b []byte, complete bool, level protoLevel, depth int) bool {
	p := pbuf{b: b}
	fields := 0
	for p.more() {
		num, typ, ok := p.tag()
		if !ok {
			return !complete && fields > 0 && len(b)-p.i < 10
		}
		if num == 0 {
			return false
		}
		child, wantTyp, known := fieldShape(level, num)
		switch {
		case level == levelRequest && (num != fieldResourceSpans || typ != wireBytes):
			return false
		case known && typ != wantTyp:
			return false
		}
		fields++
		if typ != wireBytes {
			if !p.skip(typ) {
				return !complete && fields > 0
			}
			continue
		}
		n, ok := p.varint()
		if !ok {
			return !complete
		}
		rest := uint64(len(b) - p.i)
		if n > rest {
			if complete {
				return false
			}
			// The message runs past the head: check what is there and stop.
			return child == levelOpaque || depth > 3 || plausible(b[p.i:], false, child, depth+1)
		}
		if child != levelOpaque && depth < 3 && !plausible(b[p.i:p.i+int(n)], true, child, depth+1) {
			return false
		}
		p.i += int(n)
	}
	return fields > 0 || level != levelRequest
}

// fieldShape gives the expected wire type of a known field and the level of
// its content.
func fieldShape(level protoLevel, num uint64) (child protoLevel, typ int, known bool) {
	switch level {
	case levelRequest:
		return levelResourceSpans, wireBytes, num == fieldResourceSpans
	case levelResourceSpans:
		switch num {
		case fieldRSScopeSpans, fieldRSLegacyILS:
			return levelScopeSpans, wireBytes, true
		case fieldRSResource, fieldRSSchemaURL:
			return levelOpaque, wireBytes, true
		}
	case levelScopeSpans:
		switch num {
		case fieldSSSpans:
			return levelSpan, wireBytes, true
		case fieldSSScope, 3:
			return levelOpaque, wireBytes, true
		}
	case levelSpan:
		switch num {
		case 1, 2, 3, 4, 5, 9, 11, 13, 15:
			return levelOpaque, wireBytes, true
		case 6, 10, 12, 14:
			return levelOpaque, wireVarint, true
		case 7, 8:
			return levelOpaque, wireFixed64, true
		case 16:
			return levelOpaque, wireFixed32, true
		}
	}
	return levelOpaque, 0, false
}
