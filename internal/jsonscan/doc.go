// Package jsonscan is the one JSON tokenizer under llmprof's hand-written
// JSON readers: the OTLP/JSON, Jaeger and exporter-output readers in
// ingest/otlp and the PyTorch profiler (Kineto) reader in ingest/kineto
// read their inputs through its Scanner, so the grammar (RFC 8259), the
// limits and the error positions are written once.
//
// A Scanner is a pull scanner: objects are walked member by member and the
// caller switches on the key, so nothing is built that is not kept. It reads
// in one of two modes:
//
//   - buffer mode (Reset): one JSON text held in memory (a JSON line, a
//     document, a captured value); strings, numbers and raw values come back
//     as views of it;
//   - stream mode (ResetReader): a text read from an io.Reader through a
//     window that only grows to the longest single token (or captured
//     value), so a trace of gigabytes is never held whole, nor as a tree.
//
// The first syntax or read error sticks (Err) and turns every later call
// into a no-op that returns zero values, so a reader checks for it once per
// record. Hostile input cannot make it hang, recurse without bound or read
// outside its window: nesting is bounded by MaxDepth, a token by MaxToken,
// and a reader that returns nothing again and again ends the text
// (io.ErrNoProgress); fuzz_test.go checks it against encoding/json's Valid
// and each mode against the other.
package jsonscan
