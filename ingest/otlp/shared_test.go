package otlp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/internal/shareddata"
)

// The three public samples in ../shared/testdata/otlp decode with the counts
// and values their README lists.
func TestSharedSamples(t *testing.T) {
	cases := []struct {
		file      string
		format    string
		spans     int
		resources int
		scopes    int
		warnings  []string // warning codes that must be present
		check     func(t *testing.T, tr *ingest.Trace)
		dump      []string // lines (or parts of lines) the dump must contain
	}{
		{
			file: "testdata/otlp/otlp-proto-examples-trace.json", format: "otlp-json",
			spans: 1, resources: 1, scopes: 1, warnings: []string{"dangling-parent"},
			dump: []string{
				`resource 0 "service.name"="my.service"`,
				`scope 0 name="my.library" version="1.0.0" "my.scope.attribute"="some scope attribute"`,
				`span 5b8efff798038103d269b633813fc60c/eee19b7ec3c1b174 parent=eee19b7ec3c1b173 name="I'm a server span" kind=server origin=otlp start=1544712660000000000 end=1544712661000000000 status=unset resource=0 scope=0 "my.span.attr"="some value"`,
			},
		},
		{
			file: "testdata/otlp/jaeger-otel_traces_01.json", format: "otlp-json",
			spans: 4, resources: 1, scopes: 2, warnings: []string{"dangling-parent"},
			check: func(t *testing.T, tr *ingest.Trace) {
				events, links, errs, traces := 0, 0, 0, map[ingest.TraceID]bool{}
				kinds := map[ingest.SpanKind]int{}
				for _, s := range tr.Spans {
					events += len(tr.Events(&s))
					links += len(tr.Links(&s))
					kinds[s.Kind]++
					traces[s.TraceID] = true
					if s.Status == ingest.StatusError {
						errs++
					}
				}
				if events != 8 || links != 8 || errs != 4 || len(traces) != 2 {
					t.Errorf("events %d links %d error statuses %d traces %d; want 8, 8, 4, 2", events, links, errs, len(traces))
				}
				for _, k := range []ingest.SpanKind{ingest.SpanKindServer, ingest.SpanKindClient, ingest.SpanKindProducer, ingest.SpanKindConsumer} {
					if kinds[k] != 1 {
						t.Errorf("kinds = %v, want one each of server, client, producer, consumer", kinds)
					}
				}
			},
			dump: []string{
				`scope 0 name="testing-library-2" version="1.1.1" "scope.attributes.2"="attribute-y"`,
				`scope 1 name="testing-library-3" version="1.1.2"`,
				`name="test-general-conversion-2" kind=server origin=otlp start=1485467191639875000 end=1485467191639880000 status=error resource=0 scope=0 "peer.service"="service-y" "peer.ipv4"=23456 "blob"=b64:AAAwOQ== "temperature"=72.5`,
				`  event time=1485467191639875000 name="testing-event" "event-x"="event-y"`,
				`  event time=1485467191639875000 name="" "x"="y"`,
				`  link 00000000000000010000000000000000/0000000000000004 "opentracing.ref_type"="follows_from"`,
				`  link 00000000000000ff0000000000000000/00000000000000ff "opentracing.ref_type"="child_of"`,
			},
		},
		{
			file: "testdata/otlp/jaeger-ui_01.json", format: "jaeger-json",
			spans: 5, resources: 2, scopes: 0, warnings: []string{"duplicate-span-id"},
			dump: []string{
				`resource 0 "service.name"="service-x"`,
				`resource 1 "service.name"="service-y"`,
				`span 00000000000000000000000000000001/0000000000000002 parent=0000000000000000 name="test-general-conversion" kind=unspecified origin=otlp start=1485467191639875000 end=1485467191639880000 status=unset resource=0`,
				`  event time=1485467191639875000 name="some-event"`,
				`name="some-operation" kind=unspecified origin=otlp start=1485467191639875000 end=1485467191639880000 status=error resource=0 "peer.service"="service-y" "peer.ipv4"=23456 "temperature"=72.5 "javascript_limit"=9223372036854775222 "blob"=b64:AAAwOQ==`,
				`span 00000000000000000000000000000001/0000000000000004 parent=0000000000000002 name="reference-test"`,
				`  link 000000000000000000000000000000ff/00000000000000ff "opentracing.ref_type"="child_of"`,
				`  link 00000000000000000000000000000001/0000000000000002 "opentracing.ref_type"="follows_from"`,
				`span 00000000000000000000000000000001/0000000000000005 parent=0000000000000004 name="preserveParentID-test" kind=unspecified origin=otlp start=1485467191639875000 end=1485467191639879000`,
			},
		},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			path := shareddata.Path(t, c.file)
			tr, err := ingest.Open(context.Background(), []string{path}, []ingest.Decoder{&otlp.Decoder{}}, ingest.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if f := tr.Sources[0].Format; f != c.format {
				t.Errorf("Format = %q, want %q", f, c.format)
			}
			if len(tr.Spans) != c.spans || tr.Sources[0].Spans != c.spans {
				t.Errorf("%d spans (source says %d), want %d", len(tr.Spans), tr.Sources[0].Spans, c.spans)
			}
			if len(tr.Resources) != c.resources || len(tr.Scopes) != c.scopes {
				t.Errorf("%d resources, %d scopes; want %d, %d", len(tr.Resources), len(tr.Scopes), c.resources, c.scopes)
			}
			codes := map[string]bool{}
			for _, w := range tr.Warnings.List {
				codes[w.Code] = true
				if !strings.HasPrefix(w.String(), path) {
					t.Errorf("warning does not name the file: %s", w)
				}
			}
			for _, code := range c.warnings {
				if !codes[code] {
					t.Errorf("no %s warning among %v", code, tr.Warnings.List)
				}
			}
			if c.check != nil {
				c.check(t, tr)
			}
			got := dump(t, tr, ingest.DumpOptions{})
			for _, want := range c.dump {
				if !strings.Contains(got, want) {
					t.Errorf("dump lacks %q:\n%s", want, got)
				}
			}
		})
	}
}
