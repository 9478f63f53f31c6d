// Package otlp is the OpenTelemetry trace decoder of llmprof's first pipeline
// stage: it turns OTLP trace dumps into the one model, ingest.Trace, that
// every analysis reads.
//
//	files ──► ingest/otlp ──► ingest.Trace ──► align ──► attribution ──► report
//
// # Forms
//
// The form is detected from the content (Decoder.Sniff), never from the file
// name, and recorded in Source.Format:
//
//   - "otlp-json": one OTLP/JSON document (TracesData or
//     ExportTraceServiceRequest), compact or pretty-printed;
//   - "otlp-json-lines": the collector file exporter's JSON output, one
//     {"resourceSpans":[…]} object per line;
//   - "otlp-proto": one binary ExportTraceServiceRequest, decoded as a stream
//     one span message at a time;
//   - "otlp-proto-framed": the file exporter's proto (or compressed) output,
//     records of a 4-byte big-endian length and a payload that is protobuf or
//     JSON, each optionally its own zstd frame;
//   - "tempo-json": Grafana Tempo's {"batches":[…]} with base64 IDs;
//   - "jaeger-json": Jaeger v1 JSON, {"data":[trace…]} or one bare trace
//     object, mapped onto the OTLP model as the collector's Jaeger receiver
//     does it.
//   - "otel-python-console": the OpenTelemetry Python SDK's
//     ConsoleSpanExporter output, pretty-printed objects one after another
//     (console.go);
//   - "otel-go-stdout": the OpenTelemetry Go SDK's stdouttrace exporter
//     output, tracetest.SpanStub objects compact or tab-indented, or arrays
//     of them (gostdout.go).
//
// Whole-file gzip or zstd is undone before (ingest.Open, or DecodeReader).
// OTLP/JSON is read with the quirks of real emitters: IDs in hex of any case
// or base64, 64-bit integers as strings or numbers, enums as integers or
// names, lowerCamelCase or snake_case keys, the pre-2022
// instrumentationLibrarySpans, "NaN"/"Infinity" doubles, unknown fields
// ignored.
//
// # The model
//
// Spans keep their resource and instrumentation scope by index into
// Trace.Resources and Trace.Scopes (-1 when there is none); equal resources
// and scopes, which every JSON line and every batch repeats, share one entry.
// Array and map attribute values go to Trace.Arrays and Trace.Maps. Every
// string is interned. Timestamps are the emitting host's CLOCK_REALTIME, so
// the source's clock domain is "realtime@<host.name>" when all resources name
// the same host, else "realtime".
//
// # Problems are data
//
// A bad record is a warning naming the file and the line, record or byte
// offset, and everything else is kept: a truncated or malformed JSON line, a
// truncated framed record or protobuf message, a line over the size limit
// (skipped without being loaded), a value of unknown type (the warning names
// the attribute). A span that ends before it starts, a duplicate span ID and
// a parent that is not in the input are left for ingest's Validate to report.
// Only input that is not a trace format at all is an error.
//
// # Speed
//
// Both wire formats are decoded directly from bytes into the model, with no
// intermediate objects: a hand-written protobuf reader and a JSON scanner that
// switches on each key as it goes. Attributes, events and links are carved
// from slabs, strings go through a small cache before the intern table, and a
// resource repeated on every line is recognized by its bytes and decoded
// once. bench/otlp.sh measures it against the collector's pdata unmarshalers
// (see docs/otlp.md).
package otlp
