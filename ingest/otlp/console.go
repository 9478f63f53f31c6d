package otlp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/jsonscan"
)

// The OpenTelemetry Python SDK's ConsoleSpanExporter
// (opentelemetry-sdk, opentelemetry/sdk/trace/export/__init__.py) writes each
// span as ReadableSpan.to_json() followed by a newline: pretty-printed JSON
// objects (indent 4; one per line with indent=None), one span each, one after
// another — what people paste from a terminal. Its fields
// (opentelemetry/sdk/trace/__init__.py, ReadableSpan.to_json):
//
//	{"name": …,
//	 "context": {"trace_id": "0x<32 hex>", "span_id": "0x<16 hex>", "trace_state": "[]"},
//	 "kind": "SpanKind.SERVER",
//	 "parent_id": "0x<16 hex>" or null,
//	 "start_time": "2024-05-01T12:00:00.123456Z", "end_time": …,
//	 "status": {"status_code": "UNSET"|"OK"|"ERROR", "description": …},
//	 "attributes": {key: value, …},
//	 "events": [{"name": …, "timestamp": …, "attributes": {…}}],
//	 "links": [{"context": {…}, "attributes": {…}}],
//	 "resource": {"attributes": {…}, "schema_url": ""}}
//
// Times are ISO 8601 in UTC with microseconds (util.ns_to_iso_str; older SDKs
// wrote "+00:00" for "Z"), so they are exact to the microsecond only.
// Attribute values are plain JSON: strings, booleans, numbers, and arrays of
// those. Lines between the objects (log output mixed into the paste) are
// skipped with a warning.

type consoleContext struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

type consoleSpan struct {
	Name       string          `json:"name"`
	Context    *consoleContext `json:"context"`
	Kind       string          `json:"kind"`
	ParentID   *string         `json:"parent_id"`
	StartTime  *string         `json:"start_time"`
	EndTime    *string         `json:"end_time"`
	Status     *consoleStatus  `json:"status"`
	Attributes consoleAttrs    `json:"attributes"`
	Events     []struct {
		Name       string       `json:"name"`
		Timestamp  string       `json:"timestamp"`
		Attributes consoleAttrs `json:"attributes"`
	} `json:"events"`
	Links []struct {
		Context    consoleContext `json:"context"`
		Attributes consoleAttrs   `json:"attributes"`
	} `json:"links"`
	Resource *struct {
		Attributes consoleAttrs `json:"attributes"`
		SchemaURL  string       `json:"schema_url"`
	} `json:"resource"`
}

type consoleStatus struct {
	StatusCode  string `json:"status_code"`
	Description string `json:"description"`
}

type consoleAttrs map[string]json.RawMessage

// readConsole decodes the console exporter's concatenated objects, one
// record at a time.
func (d *state) readConsole(ctx context.Context, r *bufio.Reader, limit int64) error {
	return readObjects(d, ctx, consoleReader{r: r, max: limit}, limit, "the console exporter's", "log output mixed into the paste?", d.consoleSpan)
}

// readObjects is the record loop of the exporters that print one JSON
// object a span (the Python console exporter, the Go SDK's stdouttrace):
// each object read by cr decodes into a T and goes to each; text between
// objects, an object over limit, a malformed one or binary data is a
// warning at its line and the loop goes on (binary data ends it). exporter
// names the output in the binary-data warning ("the console exporter's"),
// junkHint guesses where stray text came from.
func readObjects[T any](d *state, ctx context.Context, cr consoleReader, limit int64, exporter, junkHint string, each func(*T)) error {
	for n := 1; ; n++ {
		rec, err := cr.next()
		if cr.junk > 0 {
			d.pos = "line " + strconv.Itoa(cr.junkLine)
			d.warnf("not-a-span", "%d line(s) of text that is not a span object skipped (%s)", cr.junk, junkHint)
			cr.junk = 0
		}
		switch {
		case err == io.EOF:
			return nil
		case err == errBinary:
			d.pos = "byte " + strconv.FormatInt(cr.off, 10)
			d.warnf("malformed-record", "NUL byte in the text: binary data, not %s output; the rest of the input skipped", exporter)
			return nil
		case err != nil:
			return err
		}
		d.pos = "line " + strconv.Itoa(cr.startLine)
		if cr.tooLong > 0 {
			d.warnf("record-too-large", "object of %d bytes or more is over the %d-byte limit (otlp Options.MaxRecordBytes); skipped", cr.tooLong, limit)
			cr.tooLong = 0
			continue
		}
		if n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		var v T
		if err := json.Unmarshal(rec, &v); err != nil {
			d.warnf("malformed-record", "%s: %v; skipped", jsonProblem(err), err)
			continue
		}
		each(&v)
	}
}

func (d *state) consoleSpan(cs *consoleSpan) {
	d.beginSpan()
	sp := ingest.Span{Resource: -1, Scope: -1, Name: d.internString(cs.Name)}
	if cs.Context == nil || !consoleID(sp.TraceID[:], cs.Context.TraceID) || !consoleID(sp.ID[:], cs.Context.SpanID) {
		var tid, sid string
		if cs.Context != nil {
			tid, sid = cs.Context.TraceID, cs.Context.SpanID
		}
		d.warnf("bad-id", "span %q has a malformed trace_id %q or span_id %q; skipped", cs.Name, tid, sid)
		d.resetSpan()
		return
	}
	if cs.ParentID != nil && !consoleID(sp.Parent[:], *cs.ParentID) {
		d.warnf("bad-id", "span %q has a malformed parent_id %q; kept as a root", cs.Name, *cs.ParentID)
		sp.Parent = ingest.SpanID{}
	}
	var ok bool
	if sp.Start, ok = consoleTime(cs.StartTime); !ok {
		d.warnf("bad-time", "span %q has a malformed start_time %s; skipped", cs.Name, quoteOpt(cs.StartTime))
		d.resetSpan()
		return
	}
	if cs.EndTime == nil || *cs.EndTime == "null" {
		// ReadableSpan.to_json prints end_time null for a span not yet
		// ended (ConsoleSpanExporter given a live span, or a process that
		// exited first): not malformed, just unfinished.
		d.warnf("not-ended", "span %q is not ended (end_time null); skipped", cs.Name)
		d.resetSpan()
		return
	}
	if sp.End, ok = consoleTime(cs.EndTime); !ok {
		d.warnf("bad-time", "span %q has a malformed end_time %s; skipped", cs.Name, quoteOpt(cs.EndTime))
		d.resetSpan()
		return
	}
	sp.Kind = jaegerKind(strings.TrimPrefix(cs.Kind, "SpanKind."))
	if cs.Status != nil {
		switch strings.ToUpper(cs.Status.StatusCode) {
		case "OK":
			sp.Status = ingest.StatusOK
		case "ERROR":
			sp.Status = ingest.StatusError
		}
		sp.StatusMsg = d.internString(cs.Status.Description)
	}
	d.spanAttrs = d.consoleAttrs(cs.Attributes, d.spanAttrs[:0])
	for _, ev := range cs.Events {
		t, ok := consoleTime(&ev.Timestamp)
		if !ok {
			d.warnf("bad-time", "span %q: event %q with malformed timestamp %q dropped", cs.Name, ev.Name, ev.Timestamp)
			continue
		}
		d.addEvent(ev.Name, t, func(dst []ingest.Attr) []ingest.Attr { return d.consoleAttrs(ev.Attributes, dst) })
	}
	for _, lk := range cs.Links {
		var l ingest.Link
		if !consoleID(l.TraceID[:], lk.Context.TraceID) || !consoleID(l.SpanID[:], lk.Context.SpanID) {
			d.warnf("bad-id", "span %q: link to %q/%q has a malformed ID; dropped", cs.Name, lk.Context.TraceID, lk.Context.SpanID)
			continue
		}
		d.addLink(l, func(dst []ingest.Attr) []ingest.Attr { return d.consoleAttrs(lk.Attributes, dst) })
	}
	if cs.Resource != nil {
		m := d.markTables()
		attrs := d.consoleAttrs(cs.Resource.Attributes, d.ownerAttrs[:0])
		sp.Resource = d.addResource(attrs, d.internString(cs.Resource.SchemaURL), m)
		d.ownerAttrs = attrs[:0]
	}
	d.appendSpan(&sp)
}

// consoleAttrs converts a JSON attribute object, in key order (Python keeps
// insertion order, which a Go map loses).
func (d *state) consoleAttrs(m consoleAttrs, dst []ingest.Attr) []ingest.Attr {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		raw := bytes.TrimSpace(m[k])
		if string(raw) == "null" {
			continue
		}
		v, ok := d.consoleValue(raw, 0)
		if !ok {
			d.warnf("bad-value", "attribute %q: value %s is not a string, number, boolean or array of those; dropped", k, jsonscan.Truncate(raw))
			continue
		}
		dst = append(dst, ingest.NewAttr(d.internString(k), v))
	}
	return dst
}

func (d *state) consoleValue(raw []byte, depth int) (ingest.Value, bool) {
	if len(raw) > 0 && raw[0] == '[' && depth < maxDepth {
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil {
			return ingest.Value{}, false
		}
		vals := make([]ingest.Value, 0, len(elems))
		for _, e := range elems {
			v, ok := d.consoleValue(bytes.TrimSpace(e), depth+1)
			if !ok {
				return ingest.Value{}, false
			}
			vals = append(vals, v)
		}
		d.t.Arrays = append(d.t.Arrays, vals)
		return ingest.ArrayValue(len(d.t.Arrays) - 1), true
	}
	return d.jaegerInfer(raw)
}

// consoleID decodes "0x" and hex digits into dst.
func consoleID(dst []byte, s string) bool {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	return len(s) == 2*len(dst) && decodeHexRight(dst, []byte(s))
}

// consoleTime parses an ISO 8601 timestamp into Unix ns.
func consoleTime(s *string) (int64, bool) {
	if s == nil {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, *s)
	if err != nil {
		// Python's isoformat() may leave the zone out when it is naive.
		if t, err = time.Parse("2006-01-02T15:04:05.999999999", *s); err != nil {
			return 0, false
		}
	}
	return t.UnixNano(), true
}

func quoteOpt(s *string) string {
	if s == nil {
		return "null"
	}
	return strconv.Quote(*s)
}

// addEvent adds an event of the span being read; attrs appends its
// attributes to the slice it is given. (The exporter readers share it.)
func (d *state) addEvent(name string, t int64, attrs func([]ingest.Attr) []ingest.Attr) {
	a := attrs(d.eventAttrs[:0])
	d.events = append(d.events, ingest.Event{Name: d.internString(name), Time: t, Attrs: d.pend(a)})
	d.eventAttrs = a[:0]
}

// addLink adds a link of the span being read, as addEvent an event.
func (d *state) addLink(l ingest.Link, attrs func([]ingest.Attr) []ingest.Attr) {
	a := attrs(d.linkAttrs[:0])
	l.Attrs = d.pend(a)
	d.linkAttrs = a[:0]
	d.links = append(d.links, l)
}

// errBinary is a NUL byte where only text can be.
var errBinary = fmt.Errorf("NUL byte in text")

// consoleReader splits the console exporter's output into its top-level JSON
// objects, tracking strings and nesting, without holding more than one
// object (at most max bytes) in memory. Text outside the objects is skipped a
// line at a time and counted. A NUL byte, which no JSON text holds, ends the
// input: it is binary data (or zero fill), and reading on would not find a
// span.
type consoleReader struct {
	r   *bufio.Reader
	max int64
	buf []byte
	off int64
	// line is the current line; startLine the line the last object began on.
	line, startLine int
	// junk counts skipped lines since the last object, junkLine is the first.
	junk, junkLine int
	// tooLong is the size of an object skipped for being over max.
	tooLong int64
	// arrays, when set, reads objects that are elements of top-level arrays
	// too: '[', ',' and ']' between objects separate them like white space.
	arrays bool
}

func (cr *consoleReader) readByte() (byte, error) {
	c, err := cr.r.ReadByte()
	if err != nil {
		return 0, err
	}
	cr.off++
	switch c {
	case '\n':
		cr.line++
	case 0:
		return 0, errBinary
	}
	return c, nil
}

// next returns the next object's text, valid until the following call.
func (cr *consoleReader) next() ([]byte, error) {
	if cr.line == 0 {
		cr.line = 1
	}
	// Outside an object: white space, or lines of something else.
	atLineStart := true
	for {
		c, err := cr.readByte()
		if err != nil {
			return nil, err
		}
		switch {
		case c == '{' && atLineStart:
			cr.startLine = cr.line
			return cr.object()
		case c == ' ' || c == '\t' || c == '\r':
		case cr.arrays && (c == '[' || c == ',' || c == ']'):
		case c == '\n':
			atLineStart = true
		default:
			if cr.junk == 0 {
				cr.junkLine = cr.line
			}
			cr.junk++
			if err := cr.skipLine(); err != nil {
				return nil, err
			}
		}
	}
}

func (cr *consoleReader) skipLine() error {
	for {
		c, err := cr.readByte()
		if err != nil || c == '\n' {
			return err
		}
	}
}

// object reads the rest of an object whose '{' was just read.
func (cr *consoleReader) object() ([]byte, error) {
	cr.buf = append(cr.buf[:0], '{')
	depth, inString, escaped := 1, false, false
	size := int64(1)
	for depth > 0 {
		c, err := cr.readByte()
		if err == io.EOF {
			return cr.buf, nil // truncated: Unmarshal says so
		}
		if err != nil {
			return nil, err
		}
		size++
		if size <= cr.max {
			cr.buf = append(cr.buf, c)
		}
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	if size > cr.max {
		cr.tooLong = size
		return nil, nil
	}
	return cr.buf, nil
}
