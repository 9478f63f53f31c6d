package otlptest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Jaeger writes td as Jaeger v1 UI JSON, {"data":[trace…]} (or, with bare,
// the first trace object alone), mapping OTLP onto Jaeger as the Collector's
// Jaeger exporter does (opentelemetry-collector-contrib pkg/translator/jaeger,
// traces_to_jaegerproto.go): a resource becomes a process, kind, status and
// scope become tags, events become logs with an "event" field, the parent and
// the links become references, times become µs. Spans are grouped by trace
// in order of first appearance.
func Jaeger(td ptrace.Traces, bare bool) []byte {
	type trace struct {
		TraceID   string                    `json:"traceID"`
		Spans     []map[string]any          `json:"spans"`
		Processes map[string]map[string]any `json:"processes"`
		Warnings  []string                  `json:"warnings"`
	}
	var order []string
	traces := map[string]*trace{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		pid := fmt.Sprintf("p%d", i+1)
		process := jaegerProcess(rs.Resource())
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				sp := ss.Spans().At(k)
				tid := jaegerTraceID(sp.TraceID())
				tr := traces[tid]
				if tr == nil {
					tr = &trace{TraceID: tid, Processes: map[string]map[string]any{}}
					traces[tid] = tr
					order = append(order, tid)
				}
				tr.Processes[pid] = process
				tr.Spans = append(tr.Spans, jaegerSpan(sp, ss.Scope(), pid))
			}
		}
	}
	var data []*trace
	for _, tid := range order {
		data = append(data, traces[tid])
	}
	var v any = map[string]any{"data": data, "total": 0, "limit": 0, "offset": 0, "errors": nil}
	if bare {
		v = data[0]
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

func jaegerTraceID(id pcommon.TraceID) string {
	s := fmt.Sprintf("%x", id[:])
	if strings.HasPrefix(s, "0000000000000000") {
		return s[16:] // Jaeger writes a 64-bit trace ID as 16 digits
	}
	return s
}

func jaegerProcess(r pcommon.Resource) map[string]any {
	p := map[string]any{"serviceName": "OTLPResourceNoServiceName"}
	tags := []map[string]any{}
	r.Attributes().Range(func(k string, v pcommon.Value) bool {
		if k == "service.name" {
			p["serviceName"] = v.Str()
			return true
		}
		tags = append(tags, jaegerTag(k, v))
		return true
	})
	p["tags"] = tags
	return p
}

func jaegerTag(k string, v pcommon.Value) map[string]any {
	switch v.Type() {
	case pcommon.ValueTypeBool:
		return map[string]any{"key": k, "type": "bool", "value": v.Bool()}
	case pcommon.ValueTypeInt:
		return map[string]any{"key": k, "type": "int64", "value": v.Int()}
	case pcommon.ValueTypeDouble:
		return map[string]any{"key": k, "type": "float64", "value": v.Double()}
	case pcommon.ValueTypeBytes:
		return map[string]any{"key": k, "type": "binary", "value": base64.StdEncoding.EncodeToString(v.Bytes().AsRaw())}
	}
	// Strings, and arrays and maps as their JSON text (pcommon.Value.AsString).
	return map[string]any{"key": k, "type": "string", "value": v.AsString()}
}

func jaegerSpan(sp ptrace.Span, scope pcommon.InstrumentationScope, pid string) map[string]any {
	tid := jaegerTraceID(sp.TraceID())
	refs := []map[string]any{}
	if !sp.ParentSpanID().IsEmpty() {
		refs = append(refs, map[string]any{"refType": "CHILD_OF", "traceID": tid, "spanID": sp.ParentSpanID().String()})
	}
	for i := 0; i < sp.Links().Len(); i++ {
		l := sp.Links().At(i)
		refType := "FOLLOWS_FROM"
		if v, ok := l.Attributes().Get("opentracing.ref_type"); ok && v.Str() == "child_of" {
			refType = "CHILD_OF"
		}
		refs = append(refs, map[string]any{"refType": refType, "traceID": jaegerTraceID(l.TraceID()), "spanID": l.SpanID().String()})
	}
	tags := []map[string]any{}
	if scope.Name() != "" {
		tags = append(tags, map[string]any{"key": "otel.scope.name", "type": "string", "value": scope.Name()})
		if scope.Version() != "" {
			tags = append(tags, map[string]any{"key": "otel.scope.version", "type": "string", "value": scope.Version()})
		}
	}
	sp.Attributes().Range(func(k string, v pcommon.Value) bool {
		tags = append(tags, jaegerTag(k, v))
		return true
	})
	if sp.Kind() != ptrace.SpanKindUnspecified {
		tags = append(tags, map[string]any{"key": "span.kind", "type": "string", "value": strings.ToLower(sp.Kind().String())})
	}
	switch sp.Status().Code() {
	case ptrace.StatusCodeOk:
		tags = append(tags, map[string]any{"key": "otel.status_code", "type": "string", "value": "OK"})
	case ptrace.StatusCodeError:
		tags = append(tags, map[string]any{"key": "error", "type": "bool", "value": true})
		tags = append(tags, map[string]any{"key": "otel.status_code", "type": "string", "value": "ERROR"})
	}
	if msg := sp.Status().Message(); msg != "" {
		tags = append(tags, map[string]any{"key": "otel.status_description", "type": "string", "value": msg})
	}
	logs := []map[string]any{}
	for i := 0; i < sp.Events().Len(); i++ {
		ev := sp.Events().At(i)
		fields := []map[string]any{}
		if ev.Name() != "" {
			fields = append(fields, map[string]any{"key": "event", "type": "string", "value": ev.Name()})
		}
		ev.Attributes().Range(func(k string, v pcommon.Value) bool {
			fields = append(fields, jaegerTag(k, v))
			return true
		})
		logs = append(logs, map[string]any{"timestamp": int64(ev.Timestamp()) / 1000, "fields": fields})
	}
	start := int64(sp.StartTimestamp()) / 1000
	return map[string]any{
		"traceID":       tid,
		"spanID":        sp.SpanID().String(),
		"operationName": sp.Name(),
		"references":    refs,
		"startTime":     start,
		"duration":      int64(sp.EndTimestamp())/1000 - start,
		"tags":          tags,
		"logs":          logs,
		"processID":     pid,
		"warnings":      nil,
	}
}

// JaegerView is td reduced to what Jaeger JSON can carry, in the shape the
// Jaeger mapping restores it: resources lose their schema URL and list
// service.name first; scopes lose their attributes; array and map attributes
// become their JSON text; link attributes become opentracing.ref_type.
// Decoding Jaeger(td) must give what decoding JaegerView(td) gives.
func JaegerView(td ptrace.Traces) ptrace.Traces {
	out := ptrace.NewTraces()
	td.CopyTo(out)
	for i := 0; i < out.ResourceSpans().Len(); i++ {
		rs := out.ResourceSpans().At(i)
		rs.SetSchemaUrl("")
		attrs := rs.Resource().Attributes()
		reordered := pcommon.NewMap()
		if v, ok := attrs.Get("service.name"); ok {
			v.CopyTo(reordered.PutEmpty("service.name"))
		}
		attrs.Range(func(k string, v pcommon.Value) bool {
			if k != "service.name" {
				flattenValue(v).CopyTo(reordered.PutEmpty(k))
			}
			return true
		})
		reordered.CopyTo(attrs)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			ss.Scope().Attributes().Clear()
			for k := 0; k < ss.Spans().Len(); k++ {
				sp := ss.Spans().At(k)
				flattenMap(sp.Attributes())
				sp.TraceState().FromRaw("")
				for e := 0; e < sp.Events().Len(); e++ {
					flattenMap(sp.Events().At(e).Attributes())
				}
				for l := 0; l < sp.Links().Len(); l++ {
					link := sp.Links().At(l)
					refType := "follows_from"
					if v, ok := link.Attributes().Get("opentracing.ref_type"); ok && v.Str() == "child_of" {
						refType = "child_of"
					}
					link.Attributes().Clear()
					link.Attributes().PutStr("opentracing.ref_type", refType)
				}
			}
		}
	}
	return out
}

func flattenMap(m pcommon.Map) {
	m.Range(func(k string, v pcommon.Value) bool {
		if t := v.Type(); t == pcommon.ValueTypeSlice || t == pcommon.ValueTypeMap {
			v.SetStr(v.AsString())
		}
		return true
	})
}

func flattenValue(v pcommon.Value) pcommon.Value {
	if t := v.Type(); t == pcommon.ValueTypeSlice || t == pcommon.ValueTypeMap {
		s := pcommon.NewValueStr(v.AsString())
		return s
	}
	return v
}
