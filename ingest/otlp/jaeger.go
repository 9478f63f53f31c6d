package otlp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/jsonscan"
)

// Jaeger v1 JSON: what the Jaeger UI's "Download JSON" and the query API
// (/api/traces) return — {"data":[trace…]} or one bare trace object
// (docs/otlp-inputs.md §4d). The mapping onto the OTLP model is the
// one the OpenTelemetry Collector's Jaeger receiver uses
// (opentelemetry-collector-contrib pkg/translator/jaeger,
// jaegerproto_to_traces.go), so a trace that went OTLP → Jaeger → llmprof
// reads like the original:
//
//   - a process becomes a resource: serviceName is service.name, its tags are
//     resource attributes, "hostname" becomes host.name;
//   - the tags span.kind, otel.status_code, otel.status_description, error
//     (true), w3c.tracestate, otel.scope.name/version (or the older
//     otel.library.name/version) become the span's kind, status and scope;
//   - a log becomes an event, its "event" field the event's name;
//   - the parent is the first CHILD_OF reference within the same trace; every
//     other reference becomes a link with opentracing.ref_type
//     ("child_of"/"follows_from");
//   - startTime, duration and log timestamps are µs, stored as ns.
//
// Jaeger files are small (one UI download), so they are decoded with
// encoding/json, one span at a time so that one bad span costs only itself.

// jaegerTrace is one trace object, its spans still encoded.
type jaegerTrace struct {
	TraceID   string
	Spans     [][]byte
	Processes map[string]jaegerProcess
}

type jaegerProcess struct {
	ServiceName string     `json:"serviceName"`
	Tags        []jaegerKV `json:"tags"`
}

type jaegerSpan struct {
	TraceID       string         `json:"traceID"`
	SpanID        string         `json:"spanID"`
	ParentSpanID  string         `json:"parentSpanID"` // deprecated in favour of references
	OperationName string         `json:"operationName"`
	References    []jaegerRef    `json:"references"`
	StartTime     json.Number    `json:"startTime"`
	Duration      json.Number    `json:"duration"`
	Tags          []jaegerKV     `json:"tags"`
	Logs          []jaegerLog    `json:"logs"`
	ProcessID     string         `json:"processID"`
	Process       *jaegerProcess `json:"process"` // the anonymizer's format embeds it
}

type jaegerRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerKV struct {
	Key   string          `json:"key"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

type jaegerLog struct {
	Timestamp json.Number `json:"timestamp"`
	Fields    []jaegerKV  `json:"fields"`
}

// jaegerDocument decodes a Jaeger v1 JSON text. The outer levels are walked
// with the scanner so that a truncated file still yields every span that is
// complete; each span is then decoded on its own, so a bad one costs only
// itself. It returns the scanner's error, if any, after decoding what came
// before it.
func (d *state) jaegerDocument(b []byte) error {
	var s jsonScanner
	s.reset(b)
	if !s.Open('{') {
		return s.Err()
	}
	var bare jaegerTrace
	isBare, n := false, 0
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "data":
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					n++
					var tr jaegerTrace
					d.jaegerTraceObject(&s, &tr)
					d.jaegerTrace(&tr, n)
				}
			}
		case "traceID", "spans", "processes":
			isBare = true
			d.jaegerTraceMember(&s, &bare)
		default:
			s.Skip()
		}
	}
	if isBare {
		d.jaegerTrace(&bare, 1)
	}
	return s.Err()
}

// jaegerTraceObject reads one trace object of the data array.
func (d *state) jaegerTraceObject(s *jsonScanner, tr *jaegerTrace) {
	if !s.Open('{') {
		return
	}
	for first := true; s.Member(&first); {
		d.jaegerTraceMember(s, tr)
	}
}

// jaegerTraceMember reads the member of a trace object whose key s holds.
func (d *state) jaegerTraceMember(s *jsonScanner, tr *jaegerTrace) {
	switch string(s.Key()) {
	case "traceID":
		tr.TraceID = string(s.Str())
	case "spans":
		if s.Open('[') {
			for first := true; s.Elem(&first); {
				if raw := s.RawValue(); raw != nil {
					tr.Spans = append(tr.Spans, raw)
				}
			}
		}
	case "processes":
		raw := s.RawValue()
		if raw == nil {
			return
		}
		if err := json.Unmarshal(raw, &tr.Processes); err != nil {
			d.warnf("malformed-record", "Jaeger processes unreadable (%v); spans kept without resources", err)
		}
	default:
		s.Skip()
	}
}

func (d *state) jaegerTrace(tr *jaegerTrace, n int) {
	resources := map[string]int32{}
	for i, raw := range tr.Spans {
		d.pos = fmt.Sprintf("trace %d, span %d", n, i+1)
		var js jaegerSpan
		if err := json.Unmarshal(raw, &js); err != nil {
			d.warnf("malformed-span", "Jaeger span skipped: %v", err)
			continue
		}
		d.jaegerSpan(tr, &js, resources)
	}
}

func (d *state) jaegerSpan(tr *jaegerTrace, js *jaegerSpan, resources map[string]int32) {
	d.beginSpan()
	sp := ingest.Span{Resource: -1, Scope: -1}
	traceID := js.TraceID
	if traceID == "" {
		traceID = tr.TraceID
	}
	if !jaegerID(sp.TraceID[:], traceID) || !jaegerID(sp.ID[:], js.SpanID) {
		d.warnf("bad-id", "Jaeger span %q has a malformed traceID %q or spanID %q; skipped", js.OperationName, traceID, js.SpanID)
		return
	}
	sp.Name = d.internString(js.OperationName)
	start, okStart := jaegerMicros(js.StartTime)
	dur, okDur := jaegerMicros(js.Duration)
	if !okStart || !okDur {
		d.warnf("bad-time", "Jaeger span %q has a malformed startTime %q or duration %q; skipped", js.OperationName, js.StartTime, js.Duration)
		return
	}
	sp.Start, sp.End = start, start+dur

	// References: the parent, then the links (as the Collector does it).
	var parent ingest.SpanID
	hasParent := false
	for _, r := range js.References {
		var tid ingest.TraceID
		if strings.EqualFold(r.RefType, "CHILD_OF") && jaegerID(tid[:], r.TraceID) && tid == sp.TraceID && jaegerID(parent[:], r.SpanID) {
			hasParent = true
			break
		}
	}
	if !hasParent && js.ParentSpanID != "" && jaegerID(parent[:], js.ParentSpanID) {
		hasParent = true
	}
	if hasParent {
		sp.Parent = parent
	} else {
		parent = ingest.SpanID{}
	}
	for _, r := range js.References {
		var l ingest.Link
		if !jaegerID(l.TraceID[:], r.TraceID) || !jaegerID(l.SpanID[:], r.SpanID) {
			d.warnf("bad-id", "Jaeger span %q: reference to %q/%q has a malformed ID; dropped", js.OperationName, r.TraceID, r.SpanID)
			continue
		}
		childOf := strings.EqualFold(r.RefType, "CHILD_OF")
		if childOf && hasParent && l.SpanID == parent {
			continue
		}
		refType := "follows_from"
		if childOf {
			refType = "child_of"
		}
		l.Attrs = d.pend([]ingest.Attr{ingest.NewAttr(d.internString("opentracing.ref_type"), ingest.StringValue(d.internString(refType)))})
		d.links = append(d.links, l)
	}

	// Tags: the ones that carry span fields are taken out.
	attrs := d.spanAttrs[:0]
	var scopeName, scopeVersion, statusCode, statusDesc string
	var hasScope, hasStatusCode, errTag bool
	for _, kv := range js.Tags {
		switch kv.Key {
		case "span.kind":
			if s, ok := jaegerString(kv.Value); ok {
				sp.Kind = jaegerKind(s)
				continue
			}
		case "otel.status_code":
			if s, ok := jaegerString(kv.Value); ok {
				statusCode, hasStatusCode = s, true
				continue
			}
		case "otel.status_description":
			if s, ok := jaegerString(kv.Value); ok {
				statusDesc = s
				continue
			}
		case "error":
			if b, ok := jaegerBool(kv); ok && b {
				errTag = true
				continue
			}
		case "w3c.tracestate":
			continue
		case "otel.scope.name", "otel.library.name":
			if s, ok := jaegerString(kv.Value); ok {
				scopeName, hasScope = s, true
				continue
			}
		case "otel.scope.version", "otel.library.version":
			if s, ok := jaegerString(kv.Value); ok {
				scopeVersion = s
				continue
			}
		}
		attrs = d.jaegerAttr(kv, attrs)
	}
	d.spanAttrs = attrs
	switch {
	case errTag:
		sp.Status, sp.StatusMsg = ingest.StatusError, d.internString(statusDesc)
	case hasStatusCode:
		switch strings.ToUpper(statusCode) {
		case "OK":
			sp.Status = ingest.StatusOK
		case "ERROR":
			sp.Status = ingest.StatusError
		}
		sp.StatusMsg = d.internString(statusDesc)
	}

	for _, lg := range js.Logs {
		t, ok := jaegerMicros(lg.Timestamp)
		if !ok {
			d.warnf("bad-time", "Jaeger span %q: log with malformed timestamp %q dropped", js.OperationName, lg.Timestamp)
			continue
		}
		ev := ingest.Event{Time: t}
		eattrs := d.eventAttrs[:0]
		for _, kv := range lg.Fields {
			if kv.Key == "event" {
				if s, ok := jaegerString(kv.Value); ok {
					ev.Name = d.internString(s)
					continue
				}
			}
			eattrs = d.jaegerAttr(kv, eattrs)
		}
		ev.Attrs = d.pend(eattrs)
		d.eventAttrs = eattrs[:0]
		d.events = append(d.events, ev)
	}

	// Resource and scope.
	switch {
	case js.Process != nil:
		sp.Resource = d.jaegerResource(js.Process)
	case js.ProcessID != "":
		idx, ok := resources[js.ProcessID]
		if !ok {
			idx = -1
			if p, found := tr.Processes[js.ProcessID]; found {
				idx = d.jaegerResource(&p)
			} else {
				d.warnf("dangling-process", "Jaeger span %q refers to process %q, which the trace does not define", js.OperationName, js.ProcessID)
			}
			resources[js.ProcessID] = idx
		}
		sp.Resource = idx
	}
	if hasScope {
		sp.Scope = d.addScope(d.internString(scopeName), d.internString(scopeVersion), nil, d.markTables())
	}
	d.appendSpan(&sp)
}

func (d *state) jaegerResource(p *jaegerProcess) int32 {
	m := d.markTables()
	attrs := d.ownerAttrs[:0]
	if p.ServiceName != "" {
		attrs = append(attrs, ingest.NewAttr(d.internString("service.name"), ingest.StringValue(d.internString(p.ServiceName))))
	}
	hasHostName := false
	for _, kv := range p.Tags {
		hasHostName = hasHostName || kv.Key == "host.name"
	}
	for _, kv := range p.Tags {
		if kv.Key == "hostname" && !hasHostName {
			kv.Key = "host.name"
		}
		attrs = d.jaegerAttr(kv, attrs)
	}
	idx := d.addResource(attrs, 0, m)
	d.ownerAttrs = attrs[:0]
	return idx
}

// jaegerAttr converts a Jaeger tag (or log field) by its declared type; an
// undeclared type is inferred from the JSON value. A value that does not fit
// its type, or a type Jaeger does not define, is a warning naming the key.
func (d *state) jaegerAttr(kv jaegerKV, dst []ingest.Attr) []ingest.Attr {
	key := d.internString(kv.Key)
	raw := bytes.TrimSpace(kv.Value)
	var (
		v  ingest.Value
		ok bool
	)
	switch strings.ToLower(kv.Type) {
	case "string":
		var s string
		if s, ok = jaegerString(raw); ok {
			v = ingest.StringValue(d.internString(s))
		} else if len(raw) > 0 && raw[0] != '{' && raw[0] != '[' {
			v, ok = ingest.StringValue(d.internString(string(raw))), true
		}
	case "bool":
		var b bool
		if b, ok = jaegerBool(kv); ok {
			v = ingest.BoolValue(b)
		}
	case "int64":
		var n int64
		if n, ok = jaegerInt(raw); ok {
			v = ingest.IntValue(n)
		}
	case "float64":
		var f float64
		if f, ok = jaegerFloat(raw); ok {
			v = ingest.DoubleValue(f)
		}
	case "binary":
		var s string
		if s, ok = jaegerString(raw); ok {
			var b []byte
			var err error
			if b, err = decodeBase64(&d.b64buf, []byte(s)); err == nil {
				v = ingest.BytesValue(d.intern(b))
			} else {
				ok = false
			}
		}
	case "":
		v, ok = d.jaegerInfer(raw)
	default:
		d.warnf("unknown-value-type", "tag %q has unknown type %q; dropped", kv.Key, kv.Type)
		return dst
	}
	if !ok {
		d.warnf("bad-value", "tag %q: value %s does not fit type %q; dropped", kv.Key, jsonscan.Truncate(raw), kv.Type)
		return dst
	}
	return append(dst, ingest.NewAttr(key, v))
}

func (d *state) jaegerInfer(raw []byte) (ingest.Value, bool) {
	if s, ok := jaegerString(raw); ok {
		return ingest.StringValue(d.internString(s)), true
	}
	switch string(raw) {
	case "true":
		return ingest.BoolValue(true), true
	case "false":
		return ingest.BoolValue(false), true
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return ingest.IntValue(n), true
	}
	if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
		return ingest.DoubleValue(f), true
	}
	return ingest.Value{}, false
}

func jaegerString(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	err := json.Unmarshal(raw, &s)
	return s, err == nil
}

// jaegerBool accepts true/false and, as the anonymizer writes them, the
// strings "true"/"false".
func jaegerBool(kv jaegerKV) (bool, bool) {
	if kv.Type != "" && !strings.EqualFold(kv.Type, "bool") {
		return false, false
	}
	raw := bytes.TrimSpace(kv.Value)
	if s, ok := jaegerString(raw); ok {
		raw = []byte(s)
	}
	switch string(raw) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// jaegerInt accepts a number or a decimal string (int64 beyond 2^53 is
// written as a string by the UI model so JavaScript keeps it exact).
func jaegerInt(raw []byte) (int64, bool) {
	if s, ok := jaegerString(raw); ok {
		raw = []byte(s)
	}
	if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= math.MaxInt64 {
		return 0, false
	}
	return int64(f), true
}

func jaegerFloat(raw []byte) (float64, bool) {
	if s, ok := jaegerString(raw); ok {
		raw = []byte(s)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// jaegerMicros converts a µs timestamp or duration to ns.
func jaegerMicros(n json.Number) (int64, bool) {
	if n == "" {
		return 0, false
	}
	if v, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		if v > math.MaxInt64/1000 || v < math.MinInt64/1000 {
			return 0, false
		}
		return v * 1000, true
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil || math.IsNaN(f) || math.Abs(f*1000) >= math.MaxInt64 {
		return 0, false
	}
	return int64(math.Round(f * 1000)), true
}

// jaegerID decodes a hex ID into the low bytes of dst. Jaeger writes 64-bit
// trace IDs as 16 digits and may drop leading zeros.
func jaegerID(dst []byte, s string) bool {
	if s == "" || len(s) > 2*len(dst) {
		return false
	}
	if len(s)%2 == 1 {
		s = "0" + s
	}
	return decodeHexRight(dst, []byte(s))
}

func jaegerKind(s string) ingest.SpanKind {
	switch strings.ToLower(s) {
	case "client":
		return ingest.SpanKindClient
	case "server":
		return ingest.SpanKindServer
	case "producer":
		return ingest.SpanKindProducer
	case "consumer":
		return ingest.SpanKindConsumer
	case "internal":
		return ingest.SpanKindInternal
	}
	return ingest.SpanKindUnspecified
}
