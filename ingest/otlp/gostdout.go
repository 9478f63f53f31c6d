package otlp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/jsonscan"
)

// The OpenTelemetry Go SDK's stdout exporter
// (go.opentelemetry.io/otel/exporters/stdout/stdouttrace) encodes each span
// as a tracetest.SpanStub with encoding/json: one object per span followed by
// a newline, tab-indented under WithPrettyPrint; SDKs of 2021 (v1.0) wrote each
// batch as one JSON array of them. What Go services print to stdout, often
// between log lines. The fields, as the SDK's types marshal them:
//
//	{"Name": …,
//	 "SpanContext": {"TraceID": "<32 hex>", "SpanID": "<16 hex>", "TraceFlags": "01",
//	                 "TraceState": "k=v", "Remote": false},
//	 "Parent": {… the same; all-zero IDs for a root},
//	 "SpanKind": 1,                                   (trace.SpanKind: OTLP's numbering)
//	 "StartTime": "2025-03-04T11:15:30.123456789+01:00", "EndTime": …,   (time.Time: RFC 3339, ns, local offset)
//	 "Attributes": [{"Key": …, "Value": {"Type": "STRING", "Value": …}}, …] or null,
//	 "Events": [{"Name", "Attributes", "DroppedAttributeCount", "Time"}] or null,
//	 "Links": [{"SpanContext", "Attributes", "DroppedAttributeCount"}] or null,
//	 "Status": {"Code": "Unset"|"Error"|"Ok", "Description": …},
//	 "DroppedAttributes", "DroppedEvents", "DroppedLinks", "ChildSpanCount": 0,
//	 "Resource": [attributes, sorted by key] or null,
//	 "InstrumentationScope": {"Name", "Version", "SchemaURL", "Attributes"},
//	 "InstrumentationLibrary": {… the same, deprecated; the only one before v1.11}}
//
// An attribute's Type is attribute.Type's name: BOOL, INT64, FLOAT64 and
// STRING hold a JSON scalar; BOOLSLICE, INT64SLICE, FLOAT64SLICE and
// STRINGSLICE an array of them; BYTESLICE a base64 string ([]byte); SLICE an
// array of {"Type","Value"}; MAP an array of {"Key","Value"}; EMPTY (INVALID
// in old SDKs) null. WithoutTimestamps writes the zero time
// "0001-01-01T00:00:00Z" for every time: such spans cannot be placed and are
// skipped, with one warning for them all.

type goSpanContext struct {
	TraceID string
	SpanID  string
}

type goKeyValue struct {
	Key   string
	Value goValue
}

type goValue struct {
	Type  string
	Value json.RawMessage
}

type goScope struct {
	Name       string
	Version    string
	Attributes []goKeyValue
}

type goSpan struct {
	Name        string
	SpanContext *goSpanContext
	Parent      *goSpanContext
	SpanKind    int
	StartTime   string
	EndTime     string
	Attributes  []goKeyValue
	Events      []struct {
		Name       string
		Attributes []goKeyValue
		Time       string
	}
	Links []struct {
		SpanContext goSpanContext
		Attributes  []goKeyValue
	}
	Status *struct {
		Code        json.RawMessage
		Description string
	}
	Resource               []goKeyValue
	InstrumentationScope   *goScope
	InstrumentationLibrary *goScope
}

// goZeroTime is how encoding/json writes time.Time{}.
const goZeroTime = "0001-01-01T00:00:00Z"

// readGoStdout decodes the Go exporter's concatenated objects (or arrays of
// them), one object at a time.
func (d *state) readGoStdout(ctx context.Context, r *bufio.Reader, limit int64) error {
	untimed, untimedPos := 0, ""
	err := readObjects(d, ctx, consoleReader{r: r, max: limit, arrays: true}, limit, "the stdouttrace exporter's", "log output mixed into the exporter's?", func(gs *goSpan) {
		switch {
		case gs.SpanContext == nil:
			// stdoutmetric or stdoutlog output on the same stdout.
			d.warnf("not-a-span", "JSON object without a SpanContext (another exporter's output?); skipped")
		case gs.StartTime == goZeroTime && gs.EndTime == goZeroTime:
			if untimed == 0 {
				untimedPos = d.pos
			}
			untimed++
		default:
			d.goSpan(gs)
		}
	})
	if err != nil {
		return err
	}
	if untimed > 0 {
		d.pos = untimedPos
		d.warnf("no-timestamps", "%d span(s) have the zero time for start and end (the exporter was made with stdouttrace.WithoutTimestamps()); skipped, nothing can be timed without them", untimed)
	}
	return nil
}

func (d *state) goSpan(gs *goSpan) {
	d.beginSpan()
	sp := ingest.Span{Resource: -1, Scope: -1, Name: d.internString(gs.Name)}
	if !goID(sp.TraceID[:], gs.SpanContext.TraceID) || !goID(sp.ID[:], gs.SpanContext.SpanID) || sp.ID.IsZero() {
		d.warnf("bad-id", "span %q has a malformed TraceID %q or SpanID %q; skipped", gs.Name, gs.SpanContext.TraceID, gs.SpanContext.SpanID)
		d.resetSpan()
		return
	}
	if gs.Parent != nil && !goID(sp.Parent[:], gs.Parent.SpanID) {
		d.warnf("bad-id", "span %q has a malformed Parent.SpanID %q; kept as a root", gs.Name, gs.Parent.SpanID)
		sp.Parent = ingest.SpanID{}
	}
	var ok bool
	if sp.Start, ok = goTime(gs.StartTime); !ok {
		d.warnf("bad-time", "span %q has a malformed StartTime %q; skipped", gs.Name, gs.StartTime)
		d.resetSpan()
		return
	}
	if sp.End, ok = goTime(gs.EndTime); !ok {
		d.warnf("bad-time", "span %q has a malformed EndTime %q; skipped", gs.Name, gs.EndTime)
		d.resetSpan()
		return
	}
	if gs.SpanKind >= int(ingest.SpanKindInternal) && gs.SpanKind <= int(ingest.SpanKindConsumer) {
		sp.Kind = ingest.SpanKind(gs.SpanKind)
	} else if gs.SpanKind != 0 {
		d.warnf("bad-enum", "span %q has an unknown SpanKind %d; unspecified", gs.Name, gs.SpanKind)
	}
	if gs.Status != nil {
		sp.Status = d.goStatus(gs.Name, gs.Status.Code)
		sp.StatusMsg = d.internString(gs.Status.Description)
	}
	d.spanAttrs = d.goAttrs(gs.Attributes, d.spanAttrs[:0], 0)
	for _, ev := range gs.Events {
		t, ok := goTime(ev.Time)
		if !ok {
			d.warnf("bad-time", "span %q: event %q with malformed Time %q dropped", gs.Name, ev.Name, ev.Time)
			continue
		}
		d.addEvent(ev.Name, t, func(dst []ingest.Attr) []ingest.Attr { return d.goAttrs(ev.Attributes, dst, 0) })
	}
	for _, lk := range gs.Links {
		var l ingest.Link
		if !goID(l.TraceID[:], lk.SpanContext.TraceID) || !goID(l.SpanID[:], lk.SpanContext.SpanID) {
			d.warnf("bad-id", "span %q: link to %q/%q has a malformed ID; dropped", gs.Name, lk.SpanContext.TraceID, lk.SpanContext.SpanID)
			continue
		}
		d.addLink(l, func(dst []ingest.Attr) []ingest.Attr { return d.goAttrs(lk.Attributes, dst, 0) })
	}
	if len(gs.Resource) > 0 {
		m := d.markTables()
		attrs := d.goAttrs(gs.Resource, d.ownerAttrs[:0], 0)
		sp.Resource = d.addResource(attrs, 0, m)
		d.ownerAttrs = attrs[:0]
	}
	scope := gs.InstrumentationScope
	if scope == nil || (scope.Name == "" && scope.Version == "" && len(scope.Attributes) == 0) {
		scope = gs.InstrumentationLibrary
	}
	if scope != nil {
		m := d.markTables()
		attrs := d.goAttrs(scope.Attributes, d.ownerAttrs[:0], 0)
		sp.Scope = d.addScope(d.internString(scope.Name), d.internString(scope.Version), attrs, m)
		d.ownerAttrs = attrs[:0]
	}
	d.appendSpan(&sp)
}

// goStatus reads codes.Code as its MarshalJSON writes it ("Unset", "Error",
// "Ok"), or as the number its UnmarshalJSON also accepts (Go's numbering:
// 0 unset, 1 error, 2 ok — not OTLP's).
func (d *state) goStatus(span string, raw json.RawMessage) ingest.StatusCode {
	raw = bytes.TrimSpace(raw)
	var s string
	if len(raw) > 0 && raw[0] == '"' {
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
	} else {
		s = string(raw)
	}
	switch strings.ToLower(s) {
	case "", "null", "unset", "0":
		return ingest.StatusUnset
	case "error", "1":
		return ingest.StatusError
	case "ok", "2":
		return ingest.StatusOK
	}
	d.warnf("bad-enum", "span %q has an unknown Status.Code %s; unset", span, jsonscan.Truncate(raw))
	return ingest.StatusUnset
}

// goAttrs converts attribute.KeyValue pairs, in the order written.
func (d *state) goAttrs(kvs []goKeyValue, dst []ingest.Attr, depth int) []ingest.Attr {
	for _, kv := range kvs {
		if !goKnownType(kv.Value.Type) {
			d.warnf("unknown-value-type", "attribute %q has a value of unknown Type %q; dropped", kv.Key, kv.Value.Type)
			continue
		}
		v, ok := d.goValue(kv.Value, depth)
		if !ok {
			d.warnf("bad-value", "attribute %q: value %s does not match its Type %q; dropped", kv.Key, jsonscan.Truncate(kv.Value.Value), kv.Value.Type)
			continue
		}
		dst = append(dst, ingest.NewAttr(d.internString(kv.Key), v))
	}
	return dst
}

// goValue converts one attribute.Value by its Type; ok is false when the
// value does not have the JSON shape its type marshals to.
func (d *state) goValue(gv goValue, depth int) (ingest.Value, bool) {
	raw := bytes.TrimSpace(gv.Value)
	null := len(raw) == 0 || string(raw) == "null"
	switch gv.Type {
	case "EMPTY", "INVALID":
		return ingest.EmptyValue(), null
	case "BOOL":
		var b bool
		err := json.Unmarshal(raw, &b)
		return ingest.BoolValue(b), err == nil && !null
	case "INT64":
		n, err := strconv.ParseInt(string(raw), 10, 64)
		return ingest.IntValue(n), err == nil
	case "FLOAT64":
		f, err := strconv.ParseFloat(string(raw), 64)
		return ingest.DoubleValue(f), err == nil && len(raw) > 0 && raw[0] != '"'
	case "STRING":
		s, ok := jaegerString(raw)
		return ingest.StringValue(d.internString(s)), ok
	case "BYTESLICE":
		s, ok := jaegerString(raw)
		if !ok {
			return ingest.Value{}, null
		}
		b, err := base64.StdEncoding.DecodeString(s)
		return ingest.BytesValue(d.intern(b)), err == nil
	case "BOOLSLICE", "INT64SLICE", "FLOAT64SLICE", "STRINGSLICE", "SLICE":
		if depth >= maxDepth {
			return ingest.Value{}, false
		}
		var elems []json.RawMessage
		if !null && json.Unmarshal(raw, &elems) != nil {
			return ingest.Value{}, false
		}
		elemType := strings.TrimSuffix(gv.Type, "SLICE")
		vals := make([]ingest.Value, 0, len(elems))
		for _, e := range elems {
			ev := goValue{Type: elemType, Value: e}
			if gv.Type == "SLICE" && json.Unmarshal(e, &ev) != nil {
				return ingest.Value{}, false
			}
			v, ok := d.goValue(ev, depth+1)
			if !ok {
				return ingest.Value{}, false
			}
			vals = append(vals, v)
		}
		d.t.Arrays = append(d.t.Arrays, vals)
		return ingest.ArrayValue(len(d.t.Arrays) - 1), true
	case "MAP":
		if depth >= maxDepth {
			return ingest.Value{}, false
		}
		var kvs []goKeyValue
		if !null && json.Unmarshal(raw, &kvs) != nil {
			return ingest.Value{}, false
		}
		attrs := d.goAttrs(kvs, make([]ingest.Attr, 0, len(kvs)), depth+1)
		d.t.Maps = append(d.t.Maps, attrs)
		return ingest.MapValue(len(d.t.Maps) - 1), true
	}
	return ingest.Value{}, false
}

// goKnownType reports whether t is one of attribute.Type's names.
func goKnownType(t string) bool {
	switch t {
	case "EMPTY", "INVALID", "BOOL", "INT64", "FLOAT64", "STRING", "BYTESLICE",
		"BOOLSLICE", "INT64SLICE", "FLOAT64SLICE", "STRINGSLICE", "SLICE", "MAP":
		return true
	}
	return false
}

// goID decodes the lower-case hex that TraceID and SpanID marshal to.
func goID(dst []byte, s string) bool {
	return len(s) == 2*len(dst) && decodeHexRight(dst, []byte(s))
}

// goTime parses time.Time's JSON form (RFC 3339 with ns and the local
// offset) into Unix ns; a time outside what int64 ns can hold is malformed.
func goTime(s string) (int64, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() < 1678 || t.Year() > 2261 {
		return 0, false
	}
	return t.UnixNano(), true
}
