package otlp_test

import (
	"testing"

	"github.com/llmprof/llmprof/ingest/otlp"
)

func TestParseEncodingRoundTrip(t *testing.T) {
	for _, e := range []otlp.Encoding{otlp.Proto, otlp.JSON} {
		if got, ok := otlp.ParseEncoding(e.String()); !ok || got != e {
			t.Errorf("ParseEncoding(%q) = %v, %v", e, got, ok)
		}
	}
	if _, ok := otlp.ParseEncoding("protobuf"); ok {
		t.Error(`"protobuf" accepted: the capture format spells it "proto"`)
	}
}
