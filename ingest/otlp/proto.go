package otlp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"

	"github.com/llmprof/llmprof/ingest"
)

// Field numbers of opentelemetry/proto/trace/v1/trace.proto and
// common/v1/common.proto (see docs/otlp-inputs.md §4c).
const (
	fieldResourceSpans = 1 // ExportTraceServiceRequest, TracesData

	fieldRSResource   = 1 // ResourceSpans
	fieldRSScopeSpans = 2
	fieldRSSchemaURL  = 3
	fieldRSLegacyILS  = 1000 // instrumentation_library_spans, removed in proto v0.19

	fieldSSScope = 1 // ScopeSpans (and InstrumentationLibrarySpans)
	fieldSSSpans = 2
)

// protoErr is a problem inside one message, with the byte offset where the
// message starts.
type protoErr struct {
	off  int64
	what string
	err  error
}

func (e *protoErr) Error() string {
	return fmt.Sprintf("%s at byte %d: %v", e.what, e.off, e.err)
}

func (e *protoErr) Unwrap() error { return e.err }

// protoRequest decodes the fields of an ExportTraceServiceRequest from r up to
// end (to the end of input when end < 0). A malformed resource or scope
// message is skipped with a warning, and decoding continues after it; an
// error is returned only when the input ends early or the request itself is
// malformed, and every span decoded before it is kept.
func (d *state) protoRequest(r wireReader, end int64, maxRecord int64) error {
	for end < 0 || r.offset() < end {
		start := r.offset()
		key, err := r.varint()
		if err == io.EOF && end < 0 {
			return nil
		}
		if err != nil {
			return &protoErr{start, "ExportTraceServiceRequest field", eofIsTruncated(err)}
		}
		num, typ := key>>3, int(key&7)
		if num != fieldResourceSpans || typ != wireBytes {
			if num == 0 {
				return &protoErr{start, "ExportTraceServiceRequest field", fmt.Errorf("invalid field number 0")}
			}
			if err := skipField(r, typ, end); err != nil {
				return &protoErr{start, "ExportTraceServiceRequest field " + strconv.FormatUint(num, 10), err}
			}
			continue
		}
		n, err := readLen(r, end)
		if err != nil {
			return &protoErr{start, "resource_spans", err}
		}
		if d.ctx != nil && d.ctx.Err() != nil {
			return d.ctx.Err()
		}
		if err := d.protoResourceSpans(r, r.offset()+n, maxRecord); err != nil {
			return err
		}
	}
	return nil
}

func eofIsTruncated(err error) error {
	if err == io.EOF {
		return errTruncated
	}
	return err
}

// skipRest passes over what is left of a message ending at end after a
// malformed field; it fails only when the input ends first.
func skipRest(r wireReader, end int64) error {
	if n := end - r.offset(); n > 0 {
		return r.skip(n)
	}
	return nil
}

// protoResourceSpans decodes one ResourceSpans message ending at end. Its
// resource is decoded last (fields may come in any order) and set on the
// spans decoded here.
func (d *state) protoResourceSpans(r wireReader, end int64, maxRecord int64) error {
	mark := len(d.t.Spans)
	var (
		resRaw    []byte
		hasRes    bool
		schema    ingest.StrID
		resultErr error
	)
	for r.offset() < end {
		start := r.offset()
		key, err := r.varint()
		if err != nil {
			resultErr = &protoErr{start, "resource_spans field", eofIsTruncated(err)}
			break
		}
		num, typ := key>>3, int(key&7)
		if typ != wireBytes || (num != fieldRSResource && num != fieldRSScopeSpans && num != fieldRSSchemaURL && num != fieldRSLegacyILS) {
			if err := skipField(r, typ, end); err != nil {
				resultErr = &protoErr{start, "resource_spans field " + strconv.FormatUint(num, 10), err}
				break
			}
			continue
		}
		n, err := readLen(r, end)
		if err != nil {
			resultErr = &protoErr{start, "resource_spans field " + strconv.FormatUint(num, 10), err}
			break
		}
		fieldEnd := r.offset() + n
		switch num {
		case fieldRSResource:
			if n > maxRecord {
				d.warnAt(start, "record-too-large", "resource of %d bytes is over the %d-byte limit; skipped", n, maxRecord)
				err = r.skip(n)
				break
			}
			var b []byte
			if b, err = r.next(int(n)); err == nil {
				resRaw, hasRes = append(resRaw[:0], b...), true
			}
		case fieldRSSchemaURL:
			var b []byte
			if b, err = r.next(int(n)); err == nil {
				schema = d.intern(b)
			}
		default:
			err = d.protoScopeSpans(r, r.offset()+n, maxRecord)
		}
		if err != nil {
			if errors.Is(err, errTruncated) || !isProtoErr(err) {
				resultErr = err
				break
			}
			// A malformed scope: warn, skip what is left of it, go on.
			d.warnAt(start, "malformed-record", "%v; the rest of this scope_spans skipped", err)
			if err := skipRest(r, fieldEnd); err != nil {
				resultErr = err
				break
			}
		}
	}
	if len(d.t.Spans) > mark {
		idx := int32(-1)
		if hasRes || schema != 0 {
			idx = d.protoResource(resRaw, schema)
		}
		d.setResource(mark, idx)
	}
	if resultErr != nil && !errors.Is(resultErr, errTruncated) && isProtoErr(resultErr) {
		// The ResourceSpans itself is malformed: skip what is left of it.
		d.warnAt(r.offset(), "malformed-record", "%v; the rest of this resource_spans skipped", resultErr)
		return skipRest(r, end)
	}
	return resultErr
}

func isProtoErr(err error) bool {
	var pe *protoErr
	return errors.As(err, &pe)
}

// protoScopeSpans decodes one ScopeSpans (or legacy
// InstrumentationLibrarySpans) message ending at end.
func (d *state) protoScopeSpans(r wireReader, end int64, maxRecord int64) error {
	mark := len(d.t.Spans)
	var (
		scopeRaw  []byte
		hasScope  bool
		resultErr error
	)
	for r.offset() < end {
		start := r.offset()
		key, err := r.varint()
		if err != nil {
			resultErr = &protoErr{start, "scope_spans field", eofIsTruncated(err)}
			break
		}
		num, typ := key>>3, int(key&7)
		if typ != wireBytes || (num != fieldSSScope && num != fieldSSSpans) {
			if err := skipField(r, typ, end); err != nil {
				resultErr = &protoErr{start, "scope_spans field " + strconv.FormatUint(num, 10), err}
				break
			}
			continue
		}
		n, err := readLen(r, end)
		if err != nil {
			resultErr = &protoErr{start, "scope_spans field " + strconv.FormatUint(num, 10), err}
			break
		}
		if n > maxRecord {
			d.warnAt(start, "record-too-large", "message of %d bytes is over the %d-byte limit; skipped", n, maxRecord)
			if err := r.skip(n); err != nil {
				resultErr = err
				break
			}
			continue
		}
		b, err := r.next(int(n))
		if err != nil {
			resultErr = err
			break
		}
		if num == fieldSSScope {
			scopeRaw, hasScope = append(scopeRaw[:0], b...), true
			continue
		}
		d.off = start
		if err := d.protoSpan(b); err != nil {
			d.resetSpan()
			d.warnf("malformed-span", "span skipped: %v", err)
		}
		d.off = -1
	}
	if len(d.t.Spans) > mark {
		idx := int32(-1)
		if hasScope {
			idx = d.protoScope(scopeRaw)
		}
		d.setScope(mark, idx)
	}
	return resultErr
}

// warnAt warns about the message at byte off of the current record.
func (d *state) warnAt(off int64, code, format string, args ...any) {
	pos := "byte " + strconv.FormatInt(off, 10)
	if d.pos != "" {
		pos = d.pos + ", " + pos
	}
	d.t.Warnf(d.src, pos, code, format, args...)
}

// protoResource returns the index of the resource encoded in raw.
func (d *state) protoResource(raw []byte, schema ingest.StrID) int32 {
	rk := d.rawKey('P', schema, raw)
	if idx, ok := d.resByRaw[string(rk)]; ok {
		return idx
	}
	m := d.markTables()
	attrs := d.ownerAttrs[:0]
	p := pbuf{b: raw}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok {
			d.warnf("malformed-record", "malformed resource; attributes after byte %d dropped", p.i)
			break
		}
		if num == 1 && typ == wireBytes {
			b, ok := p.bytes()
			if !ok {
				d.warnf("malformed-record", "malformed resource attribute; attributes after byte %d dropped", p.i)
				break
			}
			if err := d.protoKeyValue(b, &attrs, 0); err != nil {
				d.warnf("malformed-record", "resource attribute skipped: %v", err)
			}
			continue
		}
		if !p.skip(typ) {
			break
		}
	}
	idx := d.addResource(attrs, schema, m)
	d.ownerAttrs = attrs[:0]
	d.resByRaw[string(d.rawKey('P', schema, raw))] = idx
	return idx
}

// protoScope returns the index of the instrumentation scope encoded in raw.
func (d *state) protoScope(raw []byte) int32 {
	rk := d.rawKey('P', 0, raw)
	if idx, ok := d.scopeByRaw[string(rk)]; ok {
		return idx
	}
	m := d.markTables()
	attrs := d.ownerAttrs[:0]
	var name, version ingest.StrID
	p := pbuf{b: raw}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok {
			d.warnf("malformed-record", "malformed instrumentation scope")
			break
		}
		if typ == wireBytes && num >= 1 && num <= 3 {
			b, ok := p.bytes()
			if !ok {
				d.warnf("malformed-record", "malformed instrumentation scope")
				break
			}
			switch num {
			case 1:
				name = d.intern(b)
			case 2:
				version = d.intern(b)
			case 3:
				if err := d.protoKeyValue(b, &attrs, 0); err != nil {
					d.warnf("malformed-record", "scope attribute skipped: %v", err)
				}
			}
			continue
		}
		if !p.skip(typ) {
			break
		}
	}
	idx := d.addScope(name, version, attrs, m)
	d.ownerAttrs = attrs[:0]
	d.scopeByRaw[string(d.rawKey('P', 0, raw))] = idx
	return idx
}

// malformed names the field of a message that could not be read.
func malformed(msg string, num uint64) error {
	return fmt.Errorf("malformed %s field %d", msg, num)
}

// protoSpan decodes one Span message and appends it.
func (d *state) protoSpan(b []byte) error {
	d.beginSpan()
	sp := ingest.Span{Resource: -1, Scope: -1}
	p := pbuf{b: b}
	for p.more() {
		// Every field of a span has a one-byte key, and most a one-byte
		// length: both are read here rather than through calls to tag
		// and bytes (neither varint nor bytes inlines).
		num, typ := uint64(p.b[p.i]>>3), int(p.b[p.i]&7)
		if p.b[p.i] < 0x80 {
			p.i++
		} else {
			var ok bool
			if num, typ, ok = p.tag(); !ok {
				return fmt.Errorf("malformed span field key at byte %d", p.i)
			}
		}
		var v []byte // the content of a length-delimited field
		if typ == wireBytes {
			var ok bool
			if v, ok = p.shortBytes(); !ok {
				if v, ok = p.bytes(); !ok {
					return malformed("span", num)
				}
			}
		}
		switch num {
		case 1, 2, 4: // trace_id, span_id, parent_span_id
			if typ != wireBytes {
				return malformed("span", num)
			}
			switch num {
			case 1:
				d.protoID(sp.TraceID[:], v, "trace_id")
			case 2:
				d.protoID(sp.ID[:], v, "span_id")
			default:
				d.protoID(sp.Parent[:], v, "parent_span_id")
			}
		case 5: // name
			if typ != wireBytes {
				return malformed("span", num)
			}
			sp.Name = d.intern(v)
		case 6: // kind
			x, ok := p.varint()
			if !ok || typ != wireVarint {
				return malformed("span", num)
			}
			sp.Kind = d.spanKind(int64(x))
		case 7, 8: // start_time_unix_nano, end_time_unix_nano
			if typ != wireFixed64 {
				return malformed("span", num)
			}
			x, ok := p.fixed64()
			if !ok {
				return malformed("span", num)
			}
			if num == 7 {
				sp.Start = int64(x)
			} else {
				sp.End = int64(x)
			}
		case 9, 11, 13, 15: // attributes, events, links, status
			if typ != wireBytes {
				return malformed("span", num)
			}
			var err error
			switch num {
			case 9:
				err = d.protoSpanAttr(v)
			case 11:
				err = d.protoEvent(v)
			case 13:
				err = d.protoLink(v)
			default:
				err = d.protoStatus(v, &sp)
			}
			if err != nil {
				return err
			}
		default:
			if typ != wireBytes && !p.skip(typ) { // a length-delimited one is read
				return malformed("span", num)
			}
		}
	}
	if d.later.on {
		d.internLater()
	}
	d.appendSpan(&sp)
	return nil
}

// protoID copies an ID of the expected length; another length is a warning
// and leaves the ID zero (absent).
func (d *state) protoID(dst, v []byte, field string) {
	if len(v) == len(dst) {
		copy(dst, v)
		return
	}
	if len(v) != 0 {
		d.warnf("bad-id", "%s of %d bytes, want %d; treated as absent", field, len(v), len(dst))
	}
}

func (d *state) spanKind(v int64) ingest.SpanKind {
	if v < 0 || v > int64(ingest.SpanKindConsumer) {
		d.warnf("bad-enum", "span kind %d is not an OTLP SpanKind; treated as unspecified", v)
		return ingest.SpanKindUnspecified
	}
	return ingest.SpanKind(v)
}

func (d *state) statusCode(v int64) ingest.StatusCode {
	if v < 0 || v > int64(ingest.StatusError) {
		d.warnf("bad-enum", "status code %d is not an OTLP StatusCode; treated as unset", v)
		return ingest.StatusUnset
	}
	return ingest.StatusCode(v)
}

func (d *state) protoEvent(b []byte) error {
	var ev ingest.Event
	attrs := d.eventAttrs[:0]
	p := pbuf{b: b}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok {
			return fmt.Errorf("malformed event")
		}
		switch {
		case num == 1 && typ == wireFixed64:
			v, ok := p.fixed64()
			if !ok {
				return malformed("event", num)
			}
			ev.Time = int64(v)
		case num == 2 && typ == wireBytes:
			v, ok := p.bytes()
			if !ok {
				return malformed("event", num)
			}
			ev.Name = d.intern(v)
		case num == 3 && typ == wireBytes:
			v, ok := p.bytes()
			if !ok {
				return malformed("event", num)
			}
			if err := d.protoKeyValue(v, &attrs, 0); err != nil {
				return err
			}
		default:
			if num <= 3 || !p.skip(typ) {
				return malformed("event", num)
			}
		}
	}
	ev.Attrs = d.pend(attrs)
	d.eventAttrs = attrs[:0]
	d.events = append(d.events, ev)
	return nil
}

func (d *state) protoLink(b []byte) error {
	var l ingest.Link
	attrs := d.linkAttrs[:0]
	p := pbuf{b: b}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok {
			return fmt.Errorf("malformed link")
		}
		switch {
		case (num == 1 || num == 2) && typ == wireBytes:
			v, ok := p.bytes()
			if !ok {
				return malformed("link", num)
			}
			if num == 1 {
				d.protoID(l.TraceID[:], v, "link trace_id")
			} else {
				d.protoID(l.SpanID[:], v, "link span_id")
			}
		case num == 4 && typ == wireBytes:
			v, ok := p.bytes()
			if !ok {
				return malformed("link", num)
			}
			if err := d.protoKeyValue(v, &attrs, 0); err != nil {
				return err
			}
		default:
			if num == 1 || num == 2 || num == 4 || !p.skip(typ) {
				return malformed("link", num)
			}
		}
	}
	l.Attrs = d.pend(attrs)
	d.linkAttrs = attrs[:0]
	d.links = append(d.links, l)
	return nil
}

func (d *state) protoStatus(b []byte, sp *ingest.Span) error {
	p := pbuf{b: b}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok {
			return fmt.Errorf("malformed status")
		}
		switch {
		case num == 2 && typ == wireBytes:
			v, ok := p.bytes()
			if !ok {
				return malformed("status", num)
			}
			sp.StatusMsg = d.intern(v)
		case num == 3 && typ == wireVarint:
			v, ok := p.varint()
			if !ok {
				return malformed("status", num)
			}
			sp.Status = d.statusCode(int64(v))
		default:
			if !p.skip(typ) {
				return malformed("status", num)
			}
		}
	}
	return nil
}

// protoKeyValue decodes a KeyValue and appends it to dst. A value of a type
// this decoder does not know is a warning naming the key, and the attribute
// is dropped.
func (d *state) protoKeyValue(b []byte, dst *[]ingest.Attr, depth int) error {
	key, val, ok := splitKeyValue(b)
	if !ok {
		var err error
		if key, val, err = splitKeyValueSlow(b); err != nil {
			return err
		}
	}
	k := d.intern(key)
	if v, ok := d.scalarValue(val, nil); ok {
		*dst = append(*dst, ingest.NewAttr(k, v))
		return nil
	}
	return d.appendAnyValue(k, val, dst, depth)
}

// protoSpanAttr is protoKeyValue for a span's own attributes, the bulk of
// every trace. Spans of one kind list the same keys in the same order, and
// often the same values, so for each kind of span (recognized by its first
// attribute key; a few kinds at a time) each position remembers the last key
// and string value seen there: a match costs one comparison and no hashing.
func (d *state) protoSpanAttr(b []byte) error {
	key, val, ok := splitValueKey(b)
	if !ok {
		key, val, ok = splitKeyValue(b)
	}
	if !ok {
		var err error
		if key, val, err = splitKeyValueSlow(b); err != nil {
			return err
		}
	}
	i := len(d.spanAttrs)
	if i == 0 {
		d.slotSet = d.findSlotSet(key)
	}
	var slot *attrSlot
	if set := &d.slotSets[d.slotSet]; i < len(set) {
		slot = &set[i]
	}
	var k ingest.StrID
	if slot != nil && slot.key.s == string(key) && len(key) > 0 {
		k = slot.key.id
	} else {
		k = d.intern(key)
		if slot != nil {
			slot.key = cachedStr{d.t.Str(k), k}
		}
	}
	var v ingest.Value
	if len(val) == 9 && val[0] == 0x21 {
		// A double, a latency or a ratio: most numeric attributes. Read
		// here, without scalarValue's call.
		v = ingest.DoubleValue(math.Float64frombits(binary.LittleEndian.Uint64(val[1:])))
	} else if v, ok = d.scalarValue(val, slot); !ok {
		return d.appendAnyValue(k, val, &d.spanAttrs, 0)
	}
	d.spanAttrs = append(d.spanAttrs, ingest.NewAttr(k, v))
	return nil
}

// attrSlot remembers the key and string value last seen at one attribute
// position of a span.
type attrSlot struct{ key, val cachedStr }

// slotSet holds the attribute slots of one kind of span.
type slotSet [24]attrSlot

const slotSetCount = 8

// findSlotSet returns the slot set whose first key is key, or recycles the
// least recently started one.
func (d *state) findSlotSet(key []byte) int {
	for i := range d.slotSets {
		if d.slotSets[i][0].key.s == string(key) {
			return i
		}
	}
	d.slotVictim = (d.slotVictim + 1) % slotSetCount
	return d.slotVictim
}

// splitValueKey is splitKeyValue's usual case, small enough to inline: the
// value first then the key, as the collector writes them, both lengths one
// byte. ok is false for anything else (splitKeyValue reads it then).
func splitValueKey(b []byte) (key, val []byte, ok bool) {
	if len(b) < 4 || b[0] != 0x12 {
		return nil, nil, false
	}
	i := 2 + int(b[1])
	if i+2 > len(b) || b[i] != 0x0a || (b[1]|b[i+1]) >= 0x80 || i+2+int(b[i+1]) != len(b) {
		return nil, nil, false
	}
	return b[i+2:], b[2:i], true
}

// splitKeyValue is the fast path of a KeyValue: exactly a key (field 1) and
// a value (field 2), in either order (the collector writes the value first,
// the SDKs the key).
func splitKeyValue(b []byte) (key, val []byte, ok bool) {
	// Both lengths under 128, one byte each, is the usual case: read
	// without a call or a loop.
	if len(b) >= 4 && b[1] < 0x80 {
		n1 := int(b[1])
		if i := 2 + n1; i+2 <= len(b) && b[i+1] < 0x80 && i+2+int(b[i+1]) == len(b) {
			f1, f2 := b[2:i], b[i+2:]
			switch {
			case b[0] == 0x0a && b[i] == 0x12:
				return f1, f2, true
			case b[0] == 0x12 && b[i] == 0x0a:
				return f2, f1, true
			}
		}
	}
	f1, t1, rest, ok := bytesField(b)
	if !ok {
		return nil, nil, false
	}
	if len(rest) == 0 {
		if t1 == 0x0a {
			return f1, nil, true
		}
		return nil, f1, t1 == 0x12
	}
	f2, t2, rest, ok := bytesField(rest)
	switch {
	case !ok || len(rest) != 0:
		return nil, nil, false
	case t1 == 0x0a && t2 == 0x12:
		return f1, f2, true
	case t1 == 0x12 && t2 == 0x0a:
		return f2, f1, true
	}
	return nil, nil, false
}

// bytesField reads one length-delimited field with a one-byte tag.
func bytesField(b []byte) (field []byte, tag byte, rest []byte, ok bool) {
	if len(b) < 2 {
		return nil, 0, nil, false
	}
	// A length under 128, one byte, is the usual case: no loop.
	n, k := uint64(b[1]), 1
	if n >= 0x80 {
		if n, k = consumeVarint(b[1:]); k <= 0 {
			return nil, 0, nil, false
		}
	}
	if n > uint64(len(b)-1-k) {
		return nil, 0, nil, false
	}
	end := 1 + k + int(n)
	return b[1+k : end], b[0], b[end:], true
}

// splitKeyValueSlow reads a KeyValue with its fields in any order and
// unknown fields skipped.
func splitKeyValueSlow(b []byte) (key, val []byte, err error) {
	p := pbuf{b: b}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok {
			return nil, nil, fmt.Errorf("malformed attribute")
		}
		if (num == 1 || num == 2) && typ == wireBytes {
			v, ok := p.bytes()
			if !ok {
				return nil, nil, fmt.Errorf("malformed attribute")
			}
			if num == 1 {
				key = v
			} else {
				val = v
			}
			continue
		}
		if !p.skip(typ) {
			return nil, nil, fmt.Errorf("malformed attribute")
		}
	}
	return key, val, nil
}

// scalarValue is the fast path of an AnyValue holding exactly one string,
// int, double or bool. slot, if not nil, remembers the last string value at
// this attribute position, that of a span's own attribute, which the caller
// appends at spanAttrs[len(spanAttrs)]: a string value new to the slot may be
// interned later (slotValue).
func (d *state) scalarValue(val []byte, slot *attrSlot) (ingest.Value, bool) {
	if len(val) < 2 {
		return ingest.Value{}, false
	}
	switch val[0] {
	case 0x0a: // string_value
		n, k := uint64(val[1]), 1 // a one-byte length, as bytesField
		if n >= 0x80 {
			n, k = consumeVarint(val[1:])
		}
		if k <= 0 || n != uint64(len(val)-1-k) {
			return ingest.Value{}, false
		}
		s := val[1+k:]
		if slot != nil {
			switch {
			case len(s) == 0:
				slot.val = cachedStr{}
				return ingest.StringValue(0), true
			case slot.val.s == string(s):
				return ingest.StringValue(slot.val.id), true
			}
			return d.slotValue(s, slot), true
		}
		return ingest.StringValue(d.intern(s)), true
	case 0x18: // int_value
		x, k := consumeVarint(val[1:])
		if k <= 0 || k != len(val)-1 {
			return ingest.Value{}, false
		}
		return ingest.IntValue(int64(x)), true
	case 0x21: // double_value
		if len(val) != 9 {
			return ingest.Value{}, false
		}
		p := pbuf{b: val, i: 1}
		x, _ := p.fixed64()
		return ingest.DoubleValue(float64frombits(x)), true
	case 0x10: // bool_value
		x, k := consumeVarint(val[1:])
		if k <= 0 || k != len(val)-1 {
			return ingest.Value{}, false
		}
		return ingest.BoolValue(x != 0), true
	}
	return ingest.Value{}, false
}

// appendAnyValue decodes any AnyValue (the general path) and appends the
// attribute unless its type is unknown.
func (d *state) appendAnyValue(k ingest.StrID, val []byte, dst *[]ingest.Attr, depth int) error {
	v, ok, err := d.protoAnyValue(val, k, depth)
	if err != nil {
		return fmt.Errorf("attribute %q: %w", d.t.Str(k), err)
	}
	if ok {
		*dst = append(*dst, ingest.NewAttr(k, v))
	}
	return nil
}

// protoAnyValue decodes an AnyValue. ok is false for a value of unknown type
// (warned about, naming key).
func (d *state) protoAnyValue(b []byte, key ingest.StrID, depth int) (v ingest.Value, ok bool, err error) {
	if depth > maxDepth {
		return v, false, fmt.Errorf("values nested more than %d deep", maxDepth)
	}
	known := len(b) == 0
	var unknown uint64
	p := pbuf{b: b}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok {
			return v, false, fmt.Errorf("malformed value")
		}
		switch {
		case (num == 1 || num == 7) && typ == wireBytes:
			s, ok := p.bytes()
			if !ok {
				return v, false, fmt.Errorf("malformed value")
			}
			if num == 1 {
				v = ingest.StringValue(d.intern(s))
			} else {
				v = ingest.BytesValue(d.intern(s))
			}
		case (num == 2 || num == 3) && typ == wireVarint:
			x, ok := p.varint()
			if !ok {
				return v, false, fmt.Errorf("malformed value")
			}
			if num == 2 {
				v = ingest.BoolValue(x != 0)
			} else {
				v = ingest.IntValue(int64(x))
			}
		case num == 4 && typ == wireFixed64:
			x, ok := p.fixed64()
			if !ok {
				return v, false, fmt.Errorf("malformed value")
			}
			v = ingest.DoubleValue(float64frombits(x))
		case (num == 5 || num == 6) && typ == wireBytes:
			s, ok := p.bytes()
			if !ok {
				return v, false, fmt.Errorf("malformed value")
			}
			if num == 5 {
				v, err = d.protoArray(s, key, depth+1)
			} else {
				v, err = d.protoKvlist(s, depth+1)
			}
			if err != nil {
				return v, false, err
			}
		default:
			if num >= 1 && num <= 7 || !p.skip(typ) {
				return v, false, fmt.Errorf("malformed value")
			}
			unknown = num
			continue
		}
		known = true
	}
	if !known {
		if unknown == 0 {
			return ingest.EmptyValue(), true, nil
		}
		d.warnf("unknown-value-type", "attribute %q has a value of unknown type (AnyValue field %d); dropped", d.t.Str(key), unknown)
		return v, false, nil
	}
	return v, true, nil
}

func (d *state) protoArray(b []byte, key ingest.StrID, depth int) (ingest.Value, error) {
	var vals []ingest.Value
	p := pbuf{b: b}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok {
			return ingest.Value{}, fmt.Errorf("malformed array")
		}
		if num != 1 || typ != wireBytes {
			if !p.skip(typ) {
				return ingest.Value{}, fmt.Errorf("malformed array")
			}
			continue
		}
		e, ok := p.bytes()
		if !ok {
			return ingest.Value{}, fmt.Errorf("malformed array")
		}
		v, ok, err := d.protoAnyValue(e, key, depth)
		if err != nil {
			return v, err
		}
		if ok {
			vals = append(vals, v)
		}
	}
	d.t.Arrays = append(d.t.Arrays, vals)
	return ingest.ArrayValue(len(d.t.Arrays) - 1), nil
}

func (d *state) protoKvlist(b []byte, depth int) (ingest.Value, error) {
	var attrs []ingest.Attr
	p := pbuf{b: b}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok {
			return ingest.Value{}, fmt.Errorf("malformed kvlist")
		}
		if num != 1 || typ != wireBytes {
			if !p.skip(typ) {
				return ingest.Value{}, fmt.Errorf("malformed kvlist")
			}
			continue
		}
		e, ok := p.bytes()
		if !ok {
			return ingest.Value{}, fmt.Errorf("malformed kvlist")
		}
		if err := d.protoKeyValue(e, &attrs, depth); err != nil {
			return ingest.Value{}, err
		}
	}
	d.t.Maps = append(d.t.Maps, attrs)
	return ingest.MapValue(len(d.t.Maps) - 1), nil
}
