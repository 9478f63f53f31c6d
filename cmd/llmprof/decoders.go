package main

import (
	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/ingest/otlp"
	"github.com/llmprof/llmprof/record"
)

// decoders returns the input decoders, in sniffing order: directory formats
// first, then the formats with unambiguous magic, then the content-shape ones.
func (f *Factory) decoders() []ingest.Decoder {
	return []ingest.Decoder{
		&record.CaptureDecoder{},
		&otlp.Decoder{},
	}
}
