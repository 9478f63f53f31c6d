package otlp

import (
	"bytes"
	"encoding/base64"
	"strconv"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/jsonscan"
)

// jsonShape says what one decoded JSON object turned out to be.
type jsonShape struct {
	otlp  bool // had resourceSpans
	tempo bool // had batches (Grafana Tempo's name for resourceSpans)
	// other lists up to a few top-level keys of an object that was neither,
	// for the warning that says what was found instead.
	other []string
}

// jsonDocument decodes one OTLP/JSON object (TracesData,
// ExportTraceServiceRequest, or Tempo's {"batches":[…]}) from s, appending
// its spans. On a syntax error s.Err() is set; every span completed before it
// has been appended.
//
// Rules (opentelemetry-proto docs/specification.md, "JSON Protobuf
// Encoding", and the deviations in docs/otlp-inputs.md §4b): keys
// in lowerCamelCase or snake_case; ids in hex (any case) or base64; 64-bit
// integers as strings or numbers; enums as integers or names; doubles may be
// "NaN"/"Infinity"; instrumentationLibrarySpans is an alias of scopeSpans;
// unknown fields are ignored.
func (d *state) jsonDocument(s *jsonScanner) (shape jsonShape) {
	if !s.Open('{') {
		return shape
	}
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "resourceSpans", "resource_spans":
			shape.otlp = true
			d.jsonResourceSpansList(s)
		case "batches":
			shape.tempo = true
			d.jsonResourceSpansList(s)
		default:
			if len(shape.other) < 5 {
				shape.other = append(shape.other, string(s.Key()))
			}
			s.Skip()
		}
	}
	return shape
}

func (d *state) jsonResourceSpansList(s *jsonScanner) {
	if !s.Open('[') {
		return
	}
	for first := true; s.Elem(&first); {
		d.jsonResourceSpans(s)
	}
}

// The names of the scope list in a ResourceSpans and a ResourceMetrics
// object: camelCase and snake_case, and before OTLP 0.15 the
// instrumentation library's.
var (
	spanScopeKeys   = [4]string{"scopeSpans", "scope_spans", "instrumentationLibrarySpans", "instrumentation_library_spans"}
	metricScopeKeys = [4]string{"scopeMetrics", "scope_metrics", "instrumentationLibraryMetrics", "instrumentation_library_metrics"}
)

// jsonResourceSignal walks a ResourceSpans or ResourceMetrics object: it
// returns its resource's raw text and its schema URL (interned as it is
// read), and calls scope at each element of its scope list (named by
// scopeKeys).
func jsonResourceSignal(s *jsonScanner, scopeKeys [4]string, intern func([]byte) ingest.StrID, scope func()) (resRaw []byte, schema ingest.StrID) {
	if !s.Open('{') {
		return nil, 0
	}
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "resource":
			resRaw = s.RawValue()
		case scopeKeys[0], scopeKeys[1], scopeKeys[2], scopeKeys[3]:
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					scope()
				}
			}
		case "schemaUrl", "schema_url":
			schema = intern(s.Str())
		default:
			s.Skip()
		}
	}
	return resRaw, schema
}

// jsonResourceSpans decodes one ResourceSpans object. Its resource is decoded
// last, once, and only if spans were kept: a resource repeated on every JSON
// line is recognized by its bytes and not decoded again.
func (d *state) jsonResourceSpans(s *jsonScanner) {
	mark := len(d.t.Spans)
	resRaw, schema := jsonResourceSignal(s, spanScopeKeys, d.intern, func() { d.jsonScopeSpans(s) })
	if len(d.t.Spans) > mark {
		idx := int32(-1)
		if resRaw != nil || schema != 0 {
			idx = d.jsonResource(resRaw, schema)
		}
		d.setResource(mark, idx)
	}
}

func (d *state) jsonScopeSpans(s *jsonScanner) {
	mark := len(d.t.Spans)
	var scopeRaw []byte
	if s.Open('{') {
		for first := true; s.Member(&first); {
			switch string(s.Key()) {
			case "scope", "instrumentationLibrary", "instrumentation_library":
				scopeRaw = s.RawValue()
			case "spans":
				if s.Open('[') {
					for first := true; s.Elem(&first); {
						d.jsonSpan(s)
					}
				}
			default:
				s.Skip()
			}
		}
	}
	if len(d.t.Spans) > mark {
		idx := int32(-1)
		if scopeRaw != nil {
			idx = d.jsonScope(scopeRaw)
		}
		d.setScope(mark, idx)
	}
}

// subScanner returns the state's scanner for a nested text (a deferred
// resource or scope).
func (d *state) subScanner(b []byte) *jsonScanner {
	if d.sub == nil {
		d.sub = new(jsonScanner)
	}
	d.sub.reset(b)
	return d.sub
}

func (d *state) jsonResource(raw []byte, schema ingest.StrID) int32 {
	rk := d.rawKey('J', schema, raw)
	if idx, ok := d.resByRaw[string(rk)]; ok {
		return idx
	}
	m := d.markTables()
	attrs := d.ownerAttrs[:0]
	s := d.subScanner(raw)
	if s.Open('{') {
		for first := true; s.Member(&first); {
			switch string(s.Key()) {
			case "attributes":
				attrs = d.jsonAttrs(s, attrs)
			default:
				s.Skip()
			}
		}
	}
	if s.Err() != nil {
		d.warnf("malformed-record", "resource: %v; attributes after it dropped", s.Err())
	}
	idx := d.addResource(attrs, schema, m)
	d.ownerAttrs = attrs[:0]
	d.resByRaw[string(d.rawKey('J', schema, raw))] = idx
	return idx
}

func (d *state) jsonScope(raw []byte) int32 {
	rk := d.rawKey('J', 0, raw)
	if idx, ok := d.scopeByRaw[string(rk)]; ok {
		return idx
	}
	m := d.markTables()
	attrs := d.ownerAttrs[:0]
	var name, version ingest.StrID
	s := d.subScanner(raw)
	if s.Open('{') {
		for first := true; s.Member(&first); {
			switch string(s.Key()) {
			case "name":
				name = d.intern(s.Str())
			case "version":
				version = d.intern(s.Str())
			case "attributes":
				attrs = d.jsonAttrs(s, attrs)
			default:
				s.Skip()
			}
		}
	}
	if s.Err() != nil {
		d.warnf("malformed-record", "instrumentation scope: %v", s.Err())
	}
	idx := d.addScope(name, version, attrs, m)
	d.ownerAttrs = attrs[:0]
	d.scopeByRaw[string(d.rawKey('J', 0, raw))] = idx
	return idx
}

// jsonSpan decodes one span object and appends it if it is complete.
func (d *state) jsonSpan(s *jsonScanner) {
	sp := ingest.Span{Resource: -1, Scope: -1}
	if !s.Open('{') {
		return
	}
	d.beginSpan()
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "traceId", "trace_id":
			d.jsonID(s, sp.TraceID[:], "traceId")
		case "spanId", "span_id":
			d.jsonID(s, sp.ID[:], "spanId")
		case "parentSpanId", "parent_span_id":
			d.jsonID(s, sp.Parent[:], "parentSpanId")
		case "name":
			sp.Name = d.intern(s.Str())
		case "kind":
			sp.Kind = d.spanKind(d.jsonEnum(s, "SPAN_KIND_", spanKindNames[:]))
		case "startTimeUnixNano", "start_time_unix_nano":
			sp.Start = s.int64()
		case "endTimeUnixNano", "end_time_unix_nano":
			sp.End = s.int64()
		case "attributes":
			d.spanAttrs = d.jsonAttrs(s, d.spanAttrs)
		case "events":
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					d.jsonEvent(s)
				}
			}
		case "links":
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					d.jsonLink(s)
				}
			}
		case "status":
			d.jsonStatus(s, &sp)
		default:
			s.Skip()
		}
	}
	if s.Err() != nil {
		d.resetSpan()
		return
	}
	d.appendSpan(&sp)
}

var (
	spanKindNames   = [...]string{"UNSPECIFIED", "INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER"}
	statusCodeNames = [...]string{"UNSET", "OK", "ERROR"}
)

// jsonEnum reads an enum written as an integer, a decimal string, or its
// proto name with or without the prefix, in any case ("SPAN_KIND_SERVER",
// "server"). An unknown name is a warning and reads as 0.
func (d *state) jsonEnum(s *jsonScanner, prefix string, names []string) int64 {
	if s.Peek() != '"' {
		return s.int64()
	}
	b := s.Str()
	if v, err := strconv.ParseInt(string(b), 10, 64); err == nil {
		return v
	}
	name := b
	if len(name) > len(prefix) && bytes.EqualFold(name[:len(prefix)], []byte(prefix)) {
		name = name[len(prefix):]
	}
	for i, n := range names {
		if bytes.EqualFold(name, []byte(n)) {
			return int64(i)
		}
	}
	d.warnf("bad-enum", "unknown enum value %q (want %s*); treated as 0", jsonscan.Truncate(b), prefix)
	return 0
}

func (d *state) jsonStatus(s *jsonScanner, sp *ingest.Span) {
	if !s.Open('{') {
		return
	}
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "code":
			sp.Status = d.statusCode(d.jsonEnum(s, "STATUS_CODE_", statusCodeNames[:]))
		case "message":
			sp.StatusMsg = d.intern(s.Str())
		default:
			s.Skip()
		}
	}
}

func (d *state) jsonEvent(s *jsonScanner) {
	var ev ingest.Event
	if !s.Open('{') {
		return
	}
	attrs := d.eventAttrs[:0]
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "timeUnixNano", "time_unix_nano":
			ev.Time = s.int64()
		case "name":
			ev.Name = d.intern(s.Str())
		case "attributes":
			attrs = d.jsonAttrs(s, attrs)
		default:
			s.Skip()
		}
	}
	ev.Attrs = d.pend(attrs)
	d.eventAttrs = attrs[:0]
	d.events = append(d.events, ev)
}

func (d *state) jsonLink(s *jsonScanner) {
	var l ingest.Link
	if !s.Open('{') {
		return
	}
	attrs := d.linkAttrs[:0]
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "traceId", "trace_id":
			d.jsonID(s, l.TraceID[:], "link traceId")
		case "spanId", "span_id":
			d.jsonID(s, l.SpanID[:], "link spanId")
		case "attributes":
			attrs = d.jsonAttrs(s, attrs)
		default:
			s.Skip()
		}
	}
	l.Attrs = d.pend(attrs)
	d.linkAttrs = attrs[:0]
	d.links = append(d.links, l)
}

// jsonID reads a trace or span ID in hex or base64 (Tempo) into dst.
func (d *state) jsonID(s *jsonScanner, dst []byte, field string) {
	b := s.Str()
	if s.Err() != nil {
		return
	}
	if !decodeID(dst, b) {
		clear(dst)
		d.warnf("bad-id", "%s %q is neither hex nor base64 of %d bytes; treated as absent", field, jsonscan.Truncate(b), len(dst))
	}
}

// decodeID decodes an ID written in hex (2×len(dst) digits, any case; a
// 16-digit trace ID is a 64-bit one, zero-extended as W3C prescribes) or in
// base64 (standard or URL alphabet, padded or not). An empty string is the
// absent ID.
func decodeID(dst, b []byte) bool {
	if len(b) == 0 {
		clear(dst)
		return true
	}
	if len(b) == 2*len(dst) || (len(dst) == 16 && len(b) == 16) {
		if decodeHexRight(dst, b) {
			return true
		}
	}
	var buf [32]byte
	enc := base64.StdEncoding
	if bytes.ContainsAny(b, "-_") {
		enc = base64.URLEncoding
	}
	if b[len(b)-1] != '=' {
		enc = enc.WithPadding(base64.NoPadding)
	}
	if enc.DecodedLen(len(b)) > len(buf) {
		return false
	}
	n, err := enc.Decode(buf[:], b)
	if err != nil || n != len(dst) {
		return false
	}
	copy(dst, buf[:n])
	return true
}

// decodeHexRight decodes an even number of hex digits into the low bytes of
// dst, zeroing the rest.
func decodeHexRight(dst, b []byte) bool {
	if len(b)%2 != 0 || len(b) > 2*len(dst) {
		return false
	}
	off := len(dst) - len(b)/2
	for i := 0; i < len(b); i += 2 {
		hi, lo := jsonscan.HexDigit(b[i]), jsonscan.HexDigit(b[i+1])
		if hi > 15 || lo > 15 {
			return false
		}
		dst[off+i/2] = hi<<4 | lo
	}
	clear(dst[:off])
	return true
}

// jsonAttrs reads an array of KeyValue objects, appending to dst.
func (d *state) jsonAttrs(s *jsonScanner, dst []ingest.Attr) []ingest.Attr {
	if !s.Open('[') {
		return dst
	}
	for first := true; s.Elem(&first); {
		dst = d.jsonKeyValue(s, dst)
	}
	return dst
}

// jsonKeyValue reads one {"key":…, "value":{…}} object. A value of unknown
// type is a warning naming the key, and the attribute is dropped.
func (d *state) jsonKeyValue(s *jsonScanner, dst []ingest.Attr) []ingest.Attr {
	if !s.Open('{') {
		return dst
	}
	var (
		key      ingest.StrID
		hasKey   bool
		v        = ingest.EmptyValue()
		ok       = true
		valueRaw []byte
		valueOff int64
	)
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "key":
			key, hasKey = d.intern(s.Str()), true
		case "value":
			if hasKey {
				v, ok = d.jsonAnyValue(s, key)
			} else {
				s.Peek()
				valueOff = s.Offset()   // errors in it point into the text
				valueRaw = s.RawValue() // the key comes after; decode once it is known
			}
		default:
			s.Skip()
		}
	}
	if s.Err() != nil {
		return dst
	}
	if valueRaw != nil {
		var sub jsonScanner
		sub.resetNested(valueRaw, valueOff, s.Depth())
		v, ok = d.jsonAnyValue(&sub, key)
		if sub.Err() != nil {
			s.FailWith(sub.Err())
			return dst
		}
	}
	if ok {
		dst = append(dst, ingest.NewAttr(key, v))
	}
	return dst
}

// jsonAnyValue reads an AnyValue object. ok is false for a value of unknown
// type (warned about, naming key) or of a malformed one.
func (d *state) jsonAnyValue(s *jsonScanner, key ingest.StrID) (v ingest.Value, ok bool) {
	if !s.Open('{') {
		return ingest.EmptyValue(), s.Err() == nil
	}
	known, bad := false, false
	var unknown string
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "stringValue", "string_value":
			v = ingest.StringValue(d.intern(s.Str()))
		case "boolValue", "bool_value":
			v = ingest.BoolValue(s.bool())
		case "intValue", "int_value":
			v = ingest.IntValue(s.int64())
		case "doubleValue", "double_value":
			v = ingest.DoubleValue(s.float64())
		case "bytesValue", "bytes_value":
			raw := s.Str()
			b, err := decodeBase64(&d.b64buf, raw)
			if err != nil {
				bad = true
				d.warnf("bad-value", "attribute %q: bytesValue %q is not base64; dropped", d.t.Str(key), jsonscan.Truncate(raw))
				continue
			}
			v = ingest.BytesValue(d.intern(b))
		case "arrayValue", "array_value":
			v = d.jsonArray(s, key)
		case "kvlistValue", "kvlist_value":
			v = d.jsonKvlist(s)
		default:
			if unknown == "" {
				unknown = string(s.Key())
			}
			s.Skip()
			continue
		}
		known = true
	}
	switch {
	case s.Err() != nil || bad:
		return v, false
	case !known && unknown != "":
		d.warnf("unknown-value-type", "attribute %q has a value of unknown type %q; dropped", d.t.Str(key), unknown)
		return v, false
	}
	return v, true
}

// decodeBase64 decodes standard or URL base64, padded or not, into buf.
func decodeBase64(buf *[]byte, b []byte) ([]byte, error) {
	enc := base64.StdEncoding
	if bytes.ContainsAny(b, "-_") {
		enc = base64.URLEncoding
	}
	if len(b) > 0 && b[len(b)-1] != '=' {
		enc = enc.WithPadding(base64.NoPadding)
	}
	if n := enc.DecodedLen(len(b)); cap(*buf) < n {
		*buf = make([]byte, n)
	}
	n, err := enc.Decode((*buf)[:cap(*buf)], b)
	return (*buf)[:n], err
}

func (d *state) jsonArray(s *jsonScanner, key ingest.StrID) ingest.Value {
	var vals []ingest.Value
	if s.Open('{') {
		for first := true; s.Member(&first); {
			if string(s.Key()) != "values" {
				s.Skip()
				continue
			}
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					if v, ok := d.jsonAnyValue(s, key); ok {
						vals = append(vals, v)
					}
				}
			}
		}
	}
	d.t.Arrays = append(d.t.Arrays, vals)
	return ingest.ArrayValue(len(d.t.Arrays) - 1)
}

func (d *state) jsonKvlist(s *jsonScanner) ingest.Value {
	var attrs []ingest.Attr
	if s.Open('{') {
		for first := true; s.Member(&first); {
			if string(s.Key()) != "values" {
				s.Skip()
				continue
			}
			attrs = d.jsonAttrs(s, attrs)
		}
	}
	d.t.Maps = append(d.t.Maps, attrs)
	return ingest.MapValue(len(d.t.Maps) - 1)
}
