package otlp_test

import (
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/llmprof/llmprof/ingest"
)

// fromPdata is the reference reading of OTLP for differential tests: the
// model built from what the collector's pdata decoded, with the decoder's
// documented conventions (equal resources and scopes shared, empty ones
// absent, only those that have spans kept).
func fromPdata(td ptrace.Traces) *ingest.Trace {
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: "pdata"}}
	resources, scopes := map[string]int32{}, map[string]int32{}
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		first := len(t.Spans)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			sfirst := len(t.Spans)
			for k := 0; k < ss.Spans().Len(); k++ {
				t.Spans = append(t.Spans, spanFromPdata(t, ss.Spans().At(k)))
			}
			if len(t.Spans) == sfirst {
				continue
			}
			sc := ss.Scope()
			idx := int32(-1)
			if sc.Name() != "" || sc.Version() != "" || sc.Attributes().Len() > 0 {
				key := fmt.Sprint(sc.Name(), "\x00", sc.Version(), "\x00", sc.Attributes().AsRaw())
				var ok bool
				if idx, ok = scopes[key]; !ok {
					idx = int32(len(t.Scopes))
					scopes[key] = idx
					t.Scopes = append(t.Scopes, ingest.Scope{Name: t.Strings.Intern(sc.Name()), Version: t.Strings.Intern(sc.Version()), Attrs: attrsFromPdata(t, sc.Attributes())})
				}
			}
			for k := sfirst; k < len(t.Spans); k++ {
				t.Spans[k].Scope = idx
			}
		}
		if len(t.Spans) == first {
			continue
		}
		idx := int32(-1)
		if rs.Resource().Attributes().Len() > 0 || rs.SchemaUrl() != "" {
			key := fmt.Sprint(rs.SchemaUrl(), "\x00", rs.Resource().Attributes().AsRaw())
			var ok bool
			if idx, ok = resources[key]; !ok {
				idx = int32(len(t.Resources))
				resources[key] = idx
				t.Resources = append(t.Resources, ingest.Resource{Attrs: attrsFromPdata(t, rs.Resource().Attributes()), SchemaURL: t.Strings.Intern(rs.SchemaUrl())})
			}
		}
		for k := first; k < len(t.Spans); k++ {
			t.Spans[k].Resource = idx
		}
	}
	t.Sources[0].Spans = len(t.Spans)
	return t
}

func spanFromPdata(t *ingest.Trace, sp ptrace.Span) ingest.Span {
	s := ingest.Span{
		TraceID: ingest.TraceID(sp.TraceID()), ID: ingest.SpanID(sp.SpanID()), Parent: ingest.SpanID(sp.ParentSpanID()),
		Name: t.Strings.Intern(sp.Name()), Start: int64(sp.StartTimestamp()), End: int64(sp.EndTimestamp()),
		Attrs: t.AddAttrs(attrsFromPdata(t, sp.Attributes())...), Kind: ingest.SpanKind(sp.Kind()),
		Status: ingest.StatusCode(sp.Status().Code()), StatusMsg: t.Strings.Intern(sp.Status().Message()),
	}
	var events []ingest.Event
	var links []ingest.Link
	for i := 0; i < sp.Events().Len(); i++ {
		e := sp.Events().At(i)
		events = append(events, ingest.Event{Name: t.Strings.Intern(e.Name()), Time: int64(e.Timestamp()), Attrs: t.AddAttrs(attrsFromPdata(t, e.Attributes())...)})
	}
	for i := 0; i < sp.Links().Len(); i++ {
		l := sp.Links().At(i)
		links = append(links, ingest.Link{TraceID: ingest.TraceID(l.TraceID()), SpanID: ingest.SpanID(l.SpanID()), Attrs: t.AddAttrs(attrsFromPdata(t, l.Attributes())...)})
	}
	s.Extra = t.AddExtra(events, links)
	return s
}

func attrsFromPdata(t *ingest.Trace, m pcommon.Map) []ingest.Attr {
	var out []ingest.Attr
	m.Range(func(k string, v pcommon.Value) bool {
		out = append(out, ingest.NewAttr(t.Strings.Intern(k), valueFromPdata(t, v)))
		return true
	})
	return out
}

func valueFromPdata(t *ingest.Trace, v pcommon.Value) ingest.Value {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return ingest.StringValue(t.Strings.Intern(v.Str()))
	case pcommon.ValueTypeBool:
		return ingest.BoolValue(v.Bool())
	case pcommon.ValueTypeInt:
		return ingest.IntValue(v.Int())
	case pcommon.ValueTypeDouble:
		return ingest.DoubleValue(v.Double())
	case pcommon.ValueTypeBytes:
		return ingest.BytesValue(t.Strings.Intern(string(v.Bytes().AsRaw())))
	case pcommon.ValueTypeSlice:
		var vals []ingest.Value
		for i := 0; i < v.Slice().Len(); i++ {
			vals = append(vals, valueFromPdata(t, v.Slice().At(i)))
		}
		t.Arrays = append(t.Arrays, vals)
		return ingest.ArrayValue(len(t.Arrays) - 1)
	case pcommon.ValueTypeMap:
		attrs := attrsFromPdata(t, v.Map())
		t.Maps = append(t.Maps, attrs)
		return ingest.MapValue(len(t.Maps) - 1)
	}
	return ingest.EmptyValue()
}
