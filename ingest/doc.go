// Package ingest holds llmprof's one data model, the Trace, and the code that
// fills it from input files: it is the first stage of the pipeline
//
//	files ──► decoders ──► ingest.Trace ──► align ──► attribution ──► report
//
// Every decoder (ingest/otlp, nsys, record's capture reader) produces a
// *Trace; every analysis consumes one and never sees a decoder's wire or row
// types. Open sniffs each input's format from its content (never from its
// name alone), hands it to the decoder the command passed in, decodes several
// inputs in parallel and merges them into one Trace whose Sources say where
// each record came from. Every input is read once: a stream (stdin, a pipe,
// a FIFO) is sniffed from a buffer in front of it and handed, head included,
// to its decoder; whole-file gzip/zstd and UTF-16 or BOM text are undone on
// the way. Directory walks follow symbolic links, telling files apart by
// device and inode, and the same spans from two inputs are kept once.
//
// # Time
//
// All times are int64 nanoseconds since the Unix epoch, in the clock domain of
// the record's Source (Source.Clock). Decoders convert to absolute time at the
// edge (an nsys export adds its session's utcEpochNs); align then maps every
// domain onto the reference clock and records how well it could.
//
// # Strings
//
// Every string in the model (span and op names, attribute keys and string
// values, metric names) is interned in the Trace's string table and stored as a
// StrID. That keeps an Attr at 16 bytes and a GPUOp at 48 (with what many ops
// share, their size, launch dimensions and graph, interned the same way as an
// OpShape), so ten million GPU ops fit in about 480 MB, and makes equality a
// comparison of integers.
//
// # Problems are data
//
// A record that cannot be used is dropped with a Warning naming the file and
// the position ("trace.jsonl:1234: span end before start"); Validate adds the
// model-level checks once after decoding. Only unreadable input is an error.
package ingest
