package otlp

import (
	"bytes"
	"encoding/base64"
	"strconv"

	"github.com/llmprof/llmprof/ingest"
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
// its spans. On a syntax error s.err is set; every span completed before it
// has been appended.
//
// Rules (opentelemetry-proto docs/specification.md, "JSON Protobuf
// Encoding", and the deviations in docs/otlp-inputs.md §4b): keys
// in lowerCamelCase or snake_case; ids in hex (any case) or base64; 64-bit
// integers as strings or numbers; enums as integers or names; doubles may be
// "NaN"/"Infinity"; instrumentationLibrarySpans is an alias of scopeSpans;
// unknown fields are ignored.
func (d *state) jsonDocument(s *jsonScanner) (shape jsonShape) {
	if !s.open('{') {
		return shape
	}
	for first := true; s.member(&first); {
		switch string(s.key) {
		case "resourceSpans", "resource_spans":
			shape.otlp = true
			d.jsonResourceSpansList(s)
		case "batches":
			shape.tempo = true
			d.jsonResourceSpansList(s)
		default:
			if len(shape.other) < 5 {
				shape.other = append(shape.other, string(s.key))
			}
			s.skip()
		}
	}
	return shape
}

func (d *state) jsonResourceSpansList(s *jsonScanner) {
	if !s.open('[') {
		return
	}
	for first := true; s.elem(&first); {
		d.jsonResourceSpans(s)
	}
}

// jsonResourceSpans decodes one ResourceSpans object. Its resource is decoded
// last, once, and only if spans were kept: a resource repeated on every JSON
// line is recognized by its bytes and not decoded again.
func (d *state) jsonResourceSpans(s *jsonScanner) {
	mark := len(d.t.Spans)
	var (
		resRaw []byte
		schema ingest.StrID
	)
	if s.open('{') {
		for first := true; s.member(&first); {
			switch string(s.key) {
			case "resource":
				resRaw = s.rawValue()
			case "scopeSpans", "scope_spans", "instrumentationLibrarySpans", "instrumentation_library_spans":
				if s.open('[') {
					for first := true; s.elem(&first); {
						d.jsonScopeSpans(s)
					}
				}
			case "schemaUrl", "schema_url":
				schema = d.intern(s.str())
			default:
				s.skip()
			}
		}
	}
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
	if s.open('{') {
		for first := true; s.member(&first); {
			switch string(s.key) {
			case "scope", "instrumentationLibrary", "instrumentation_library":
				scopeRaw = s.rawValue()
			case "spans":
				if s.open('[') {
					for first := true; s.elem(&first); {
						d.jsonSpan(s)
					}
				}
			default:
				s.skip()
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
	if s.open('{') {
		for first := true; s.member(&first); {
			switch string(s.key) {
			case "attributes":
				attrs = d.jsonAttrs(s, attrs)
			default:
				s.skip()
			}
		}
	}
	if s.err != nil {
		d.warnf("malformed-record", "resource: %v; attributes after it dropped", s.err)
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
	if s.open('{') {
		for first := true; s.member(&first); {
			switch string(s.key) {
			case "name":
				name = d.intern(s.str())
			case "version":
				version = d.intern(s.str())
			case "attributes":
				attrs = d.jsonAttrs(s, attrs)
			default:
				s.skip()
			}
		}
	}
	if s.err != nil {
		d.warnf("malformed-record", "instrumentation scope: %v", s.err)
	}
	idx := d.addScope(name, version, attrs, m)
	d.ownerAttrs = attrs[:0]
	d.scopeByRaw[string(d.rawKey('J', 0, raw))] = idx
	return idx
}

// jsonSpan decodes one span object and appends it if it is complete.
func (d *state) jsonSpan(s *jsonScanner) {
	sp := ingest.Span{Resource: -1, Scope: -1}
	if !s.open('{') {
		return
	}
	d.beginSpan()
	for first := true; s.member(&first); {
		switch string(s.key) {
		case "traceId", "trace_id":
			d.jsonID(s, sp.TraceID[:], "traceId")
		case "spanId", "span_id":
			d.jsonID(s, sp.ID[:], "spanId")
		case "parentSpanId", "parent_span_id":
			d.jsonID(s, sp.Parent[:], "parentSpanId")
		case "name":
			sp.Name = d.intern(s.str())
		case "kind":
			sp.Kind = d.spanKind(d.jsonEnum(s, "SPAN_KIND_", spanKindNames[:]))
		case "startTimeUnixNano", "start_time_unix_nano":
			sp.Start = s.int64()
		case "endTimeUnixNano", "end_time_unix_nano":
			sp.End = s.int64()
		case "attributes":
			d.spanAttrs = d.jsonAttrs(s, d.spanAttrs)
		case "events":
			if s.open('[') {
				for first := true; s.elem(&first); {
					d.jsonEvent(s)
				}
			}
		case "links":
			if s.open('[') {
				for first := true; s.elem(&first); {
					d.jsonLink(s)
				}
			}
		case "status":
			d.jsonStatus(s, &sp)
		default:
			s.skip()
		}
	}
	if s.err != nil {
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
	if s.peek() != '"' {
		return s.int64()
	}
	b := s.str()
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
	d.warnf("bad-enum", "unknown enum value %q (want %s*); treated as 0", truncateForMsg(b), prefix)
	return 0
}

func (d *state) jsonStatus(s *jsonScanner, sp *ingest.Span) {
	if !s.open('{') {
		return
	}
	for first := true; s.member(&first); {
		switch string(s.key) {
		case "code":
			sp.Status = d.statusCode(d.jsonEnum(s, "STATUS_CODE_", statusCodeNames[:]))
		case "message":
			sp.StatusMsg = d.intern(s.str())
		default:
			s.skip()
		}
	}
}

func (d *state) jsonEvent(s *jsonScanner) {
	var ev ingest.Event
	if !s.open('{') {
		return
	}
	attrs := d.eventAttrs[:0]
	for first := true; s.member(&first); {
		switch string(s.key) {
		case "timeUnixNano", "time_unix_nano":
			ev.Time = s.int64()
		case "name":
			ev.Name = d.intern(s.str())
		case "attributes":
			attrs = d.jsonAttrs(s, attrs)
		default:
			s.skip()
		}
	}
	ev.Attrs = d.attrSlab.carve(attrs)
	d.eventAttrs = attrs[:0]
	d.events = append(d.events, ev)
}

func (d *state) jsonLink(s *jsonScanner) {
	var l ingest.Link
	if !s.open('{') {
		return
	}
	attrs := d.linkAttrs[:0]
	for first := true; s.member(&first); {
		switch string(s.key) {
		case "traceId", "trace_id":
			d.jsonID(s, l.TraceID[:], "link traceId")
		case "spanId", "span_id":
			d.jsonID(s, l.SpanID[:], "link spanId")
		case "attributes":
			attrs = d.jsonAttrs(s, attrs)
		default:
			s.skip()
		}
	}
	l.Attrs = d.attrSlab.carve(attrs)
	d.linkAttrs = attrs[:0]
	d.links = append(d.links, l)
}

// jsonID reads a trace or span ID in hex or base64 (Tempo) into dst.
func (d *state) jsonID(s *jsonScanner, dst []byte, field string) {
	b := s.str()
	if s.err != nil {
		return
	}
	if !decodeID(dst, b) {
		clear(dst)
		d.warnf("bad-id", "%s %q is neither hex nor base64 of %d bytes; treated as absent", field, truncateForMsg(b), len(dst))
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
		hi, lo := hexVal[b[i]], hexVal[b[i+1]]
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
	if !s.open('[') {
		return dst
	}
	for first := true; s.elem(&first); {
		dst = d.jsonKeyValue(s, dst)
	}
	return dst
}

// jsonKeyValue reads one {"key":…, "value":{…}} object. A value of unknown
// type is a warning naming the key, and the attribute is dropped.
func (d *state) jsonKeyValue(s *jsonScanner, dst []ingest.Attr) []ingest.Attr {
	if !s.open('{') {
		return dst
	}
	var (
		key      ingest.StrID
		hasKey   bool
		v        = ingest.EmptyValue()
		ok       = true
		valueRaw []byte
	)
	for first := true; s.member(&first); {
		switch string(s.key) {
		case "key":
			key, hasKey = d.intern(s.str()), true
		case "value":
			if hasKey {
				v, ok = d.jsonAnyValue(s, key)
			} else {
				valueRaw = s.rawValue() // the key comes after; decode once it is known
			}
		default:
			s.skip()
		}
	}
	if s.err != nil {
		return dst
	}
	if valueRaw != nil {
		var sub jsonScanner
		sub.reset(valueRaw)
		sub.depth = s.depth
		v, ok = d.jsonAnyValue(&sub, key)
		if sub.err != nil {
			s.err = sub.err
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
	if !s.open('{') {
		return ingest.EmptyValue(), s.err == nil
	}
	known, bad := false, false
	var unknown string
	for first := true; s.member(&first); {
		switch string(s.key) {
		case "stringValue", "string_value":
			v = ingest.StringValue(d.intern(s.str()))
		case "boolValue", "bool_value":
			v = ingest.BoolValue(s.bool())
		case "intValue", "int_value":
			v = ingest.IntValue(s.int64())
		case "doubleValue", "double_value":
			v = ingest.DoubleValue(s.float64())
		case "bytesValue", "bytes_value":
			raw := s.str()
			b, err := decodeBase64(&d.b64buf, raw)
			if err != nil {
				bad = true
				d.warnf("bad-value", "attribute %q: bytesValue %q is not base64; dropped", d.t.Str(key), truncateForMsg(raw))
				continue
			}
			v = ingest.BytesValue(d.intern(b))
		case "arrayValue", "array_value":
			v = d.jsonArray(s, key)
		case "kvlistValue", "kvlist_value":
			v = d.jsonKvlist(s)
		default:
			if unknown == "" {
				unknown = string(s.key)
			}
			s.skip()
			continue
		}
		known = true
	}
	switch {
	case s.err != nil || bad:
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
	if s.open('{') {
		for first := true; s.member(&first); {
			if string(s.key) != "values" {
				s.skip()
				continue
			}
			if s.open('[') {
				for first := true; s.elem(&first); {
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
	if s.open('{') {
		for first := true; s.member(&first); {
			if string(s.key) != "values" {
				s.skip()
				continue
			}
			attrs = d.jsonAttrs(s, attrs)
		}
	}
	d.t.Maps = append(d.t.Maps, attrs)
	return ingest.MapValue(len(d.t.Maps) - 1)
}
