package driver

import (
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/kineto"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/ingest/prom"
	"github.com/llmprof/llmprof/nsys"
	"github.com/llmprof/llmprof/record"
	"github.com/llmprof/llmprof/record/cupti"
)

// Decoders returns the input decoders, in sniffing order: directory formats
// first, then the formats with unambiguous magic, then the content-shape ones.
func Decoders() []ingest.Decoder {
	return []ingest.Decoder{
		// A capture's nsys export (record --nsys) and scrapes (record
		// --scrape) are decoded with it.
		&record.CaptureDecoder{Embedded: []ingest.Decoder{nsys.Decoder{}, &prom.Decoder{}}},
		nsys.Decoder{},
		kineto.Decoder{},
		cupti.Decoder{},
		// Before the trace decoder, whose protobuf sniffing is looser.
		&otlp.MetricsDecoder{},
		&otlp.Decoder{},
		&prom.Decoder{},
	}
}
