package otlp

import (
	"bytes"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/llmprof/llmprof/ingest"
)

// Encoding is how an OTLP payload is encoded.
type Encoding uint8

const (
	// Proto is binary protobuf (Content-Type application/x-protobuf).
	Proto Encoding = iota
	// JSON is OTLP/JSON (Content-Type application/json).
	JSON

	// encAuto: JSON when the payload starts with '{' (after spaces), protobuf
	// otherwise (a protobuf message cannot start with '{', which would be a
	// group).
	encAuto
)

func (e Encoding) String() string {
	switch e {
	case Proto:
		return "proto"
	case JSON:
		return "json"
	}
	return "auto"
}

// ParseEncoding is the inverse of Encoding.String for Proto and JSON. An
// empty name is Proto, as the capture format's first version wrote it.
func ParseEncoding(name string) (Encoding, bool) {
	switch name {
	case "proto", "":
		return Proto, true
	case "json":
		return JSON, true
	}
	return Proto, false
}

// DecodePayload decodes one ExportTraceServiceRequest body — what an OTLP
// exporter sends to /v1/traces or over gRPC — into t, appending its spans to
// those already there with Source src. A gzip- or zstd-compressed body
// (Content-Encoding) is decompressed first. pos names the payload in warnings
// ("record 12"). A resource or scope equal to one t already holds is shared.
//
// A malformed payload keeps every span decoded before the problem and
// returns an error describing it; problems confined to one span or attribute
// are warnings. t.Sources[src].Spans is advanced by the spans added. The
// trace is not validated.
func DecodePayload(t *ingest.Trace, src ingest.SourceID, payload []byte, enc Encoding, pos string) error {
	d := newState(t, src)
	d.pos = pos
	defer d.closeZstd()
	_, err := d.payload(payload, enc, DefaultMaxRecordBytes)
	if int(src) < len(t.Sources) {
		t.Sources[src].Spans += d.spans
	}
	if err != nil && pos != "" {
		return fmt.Errorf("%s: %w", pos, err)
	}
	return err
}

// payload decodes one request body; kind says how it was encoded ("proto",
// "json+zstd", …).
func (d *state) payload(b []byte, enc Encoding, limit int64) (kind string, err error) {
	b, enc, suffix, err := d.openPayload(b, enc, limit)
	if err != nil {
		return suffix, err
	}
	if enc == JSON {
		var s jsonScanner
		s.reset(bytes.TrimPrefix(b, utf8BOM))
		shape := d.jsonDocument(&s)
		s.End()
		switch {
		case s.Err() != nil:
			return "json" + suffix, fmt.Errorf("%s: %v", jsonProblem(s.Err()), s.Err())
		case !shape.otlp && !shape.tempo && len(shape.other) > 0:
			return "json" + suffix, fmt.Errorf("JSON object without resourceSpans (keys: %v)", shape.other)
		}
		return "json" + suffix, nil
	}
	if err := d.protoRequest(&sliceReader{b: b}, int64(len(b)), limit); err != nil {
		return "proto" + suffix, fmt.Errorf("protobuf: %v", err)
	}
	return "proto" + suffix, nil
}

// openPayload undoes a payload's zstd or gzip compression and, for encAuto,
// tells protobuf from JSON. suffix is "+zstd", "+gzip" or ""; on a
// decompression error it is the compression's name.
func (d *state) openPayload(b []byte, enc Encoding, limit int64) (_ []byte, _ Encoding, suffix string, err error) {
	switch {
	case bytes.HasPrefix(b, zstdMagic):
		if b, err = d.unzstd(b, limit); err != nil {
			return nil, enc, "zstd", fmt.Errorf("zstd: %v", err)
		}
		suffix = "+zstd"
	case bytes.HasPrefix(b, gzipMagic):
		if b, err = gunzip(b, limit); err != nil {
			return nil, enc, "gzip", fmt.Errorf("gzip: %v", err)
		}
		suffix = "+gzip"
	}
	if enc == encAuto {
		// Not '\n': a protobuf request starts with 0x0a, the tag of its
		// first resource_spans, which may well be followed by 0x7b ('{').
		enc = Proto
		if t := bytes.TrimLeft(b, " \t\r"); len(t) > 0 && t[0] == '{' {
			enc = JSON
		}
	}
	return b, enc, suffix, nil
}

func (d *state) unzstd(b []byte, limit int64) ([]byte, error) {
	if d.zstd == nil {
		zd, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderMaxMemory(uint64(limit)), zstd.WithDecoderMaxWindow(uint64(min(limit, 1<<30))))
		if err != nil {
			return nil, err
		}
		d.zstd = zd
	}
	out, err := d.zstd.DecodeAll(b, d.zbuf[:0])
	if err != nil {
		return nil, err
	}
	d.zbuf = out
	return out, nil
}

func (d *state) closeZstd() {
	if d.zstd != nil {
		d.zstd.Close()
		d.zstd = nil
	}
}

func gunzip(b []byte, limit int64) ([]byte, error) {
	zr, err := ingest.NewGzipReader(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("decompresses to more than %d bytes", limit)
	}
	return out, nil
}
