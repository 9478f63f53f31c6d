package otlp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/llmprof/llmprof/ingest"
	"github.com/llmprof/llmprof/internal/jsonscan"
)

// DefaultMaxRecordBytes is the default of Options.MaxRecordBytes: far above
// any batch an OTLP exporter sends (the collector's default gRPC message limit
// is 4 MiB), far below a line that would exhaust memory.
const DefaultMaxRecordBytes = 256 << 20

// Options tune a Decoder. The zero value means the defaults.
type Options struct {
	// MaxRecordBytes bounds one JSON line, one JSON document, one framed
	// record (after decompression) and one span message of a raw protobuf
	// file. A larger one is skipped with a warning, without being loaded
	// whole, and decoding goes on after it. 0 means DefaultMaxRecordBytes.
	MaxRecordBytes int64 `json:"max_record_bytes"`
}

func (o Options) maxRecord() int64 {
	if o.MaxRecordBytes <= 0 {
		return DefaultMaxRecordBytes
	}
	return o.MaxRecordBytes
}

// Decoder reads OTLP traces in every form an exporter, collector or trace
// store writes them (see the package documentation) into an ingest.Trace. It
// implements ingest.Decoder; the zero value is ready to use, and one Decoder
// may decode many inputs at once.
type Decoder struct {
	Options Options
}

var _ ingest.Decoder = (*Decoder)(nil)

// Name is "otlp".
func (*Decoder) Name() string { return "otlp" }

// Accepts says what the decoder reads, for error messages.
func (*Decoder) Accepts() string {
	return "OTLP traces (JSON, JSON Lines, protobuf or framed protobuf; gzip or zstd), Jaeger and Tempo JSON, the OpenTelemetry Python console exporter's output and the Go SDK's stdouttrace output"
}

// Sniff reports whether the input's content is OTLP (JSON, JSON Lines,
// protobuf, framed protobuf), Tempo JSON, Jaeger JSON, the Python SDK's
// console exporter output or the Go SDK's stdouttrace output.
func (*Decoder) Sniff(in *ingest.Input) bool {
	return !in.Dir && sniff(in.Head) != formNone
}

// Decode decodes the input into t, whose Sources[0] names it. Whole-file
// gzip or zstd has already been undone by in.Open.
func (dec *Decoder) Decode(ctx context.Context, in *ingest.Input, t *ingest.Trace) error {
	f := sniff(in.Head)
	if f == formNone {
		return fmt.Errorf("not OTLP, Tempo or Jaeger trace data")
	}
	var sizeHint int64
	if in.Compression != ingest.CompressionNone {
		setMeta(&t.Sources[0], "compression", in.Compression.String())
	} else {
		sizeHint = in.Size
	}
	// A framed file is read through the read buffer, as every other
	// input is, not decoded where it lies in a mapping of it: on a virtual
	// machine that makes the hypervisor take part in each new page's first
	// touch, the mapping's 25,600 pages (the 100 MiB dump) cost more than
	// read(2)'s copy into one buffer whose pages are touched once
	// (docs/otlp.md, Seventeenth pass).
	rc, err := in.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	return dec.decode(ctx, bufio.NewReaderSize(rc, readBufSize), f, t, 0, sizeHint)
}

// readBufSize is the read buffer: large enough that nearly every JSON line and
// span message is decoded in place, without a copy.
const readBufSize = 1 << 20

// DecodeReader decodes an input read from r (a pipe, stdin, a test stream)
// into a new Trace whose one source has the given path. It detects the form
// as Decode does and undoes whole-file gzip or zstd itself. The trace is not
// validated; ingest.Open does that for files.
func (dec *Decoder) DecodeReader(ctx context.Context, path string, r io.Reader) (*ingest.Trace, error) {
	t := ingest.New()
	t.Sources = []ingest.Source{{Path: path, Format: "otlp"}}
	br := bufio.NewReaderSize(r, readBufSize)
	head, err := br.Peek(ingest.HeadSize)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, &ingest.InputError{Path: path, Err: err}
	}
	var compression string
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		zr, err := ingest.NewGzipReader(br)
		if err != nil {
			return nil, &ingest.InputError{Path: path, Err: fmt.Errorf("gzip: %w", err)}
		}
		defer zr.Close()
		br, compression = bufio.NewReaderSize(zr, readBufSize), "gzip"
	case bytes.HasPrefix(head, zstdMagic):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(1<<30))
		if err != nil {
			return nil, &ingest.InputError{Path: path, Err: fmt.Errorf("zstd: %w", err)}
		}
		defer zr.Close()
		br, compression = bufio.NewReaderSize(zr, readBufSize), "zstd"
	}
	if compression != "" {
		setMeta(&t.Sources[0], "compression", compression)
		if head, err = br.Peek(ingest.HeadSize); err != nil && err != io.EOF && err != bufio.ErrBufferFull && len(head) == 0 {
			return nil, &ingest.InputError{Path: path, Err: fmt.Errorf("%s: %w", compression, err)}
		}
	}
	if len(head) == 0 {
		t.Sources[0].Format = "empty"
		t.Warnf(0, "", "empty-file", "empty input: nothing to read")
		return t, nil
	}
	f := sniff(head)
	if f == formNone {
		return nil, &ingest.InputError{Path: path, Err: fmt.Errorf("%w (%s)", ingest.ErrUnknownFormat, describeJSON(head))}
	}
	if err := dec.decode(ctx, br, f, t, 0, 0); err != nil {
		return nil, &ingest.InputError{Path: path, Err: err}
	}
	return t, nil
}

// describeJSON says what an unrecognized input looks like.
func describeJSON(head []byte) string {
	text := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	if len(text) == 0 || text[0] != '{' {
		n := min(len(head), 8)
		return fmt.Sprintf("starts with bytes % x", head[:n])
	}
	var s jsonScanner
	s.reset(text)
	var keys []string
	if s.Open('{') {
		for first := true; s.Member(&first) && len(keys) < 5; {
			keys = append(keys, strconv.Quote(string(s.Key())))
			s.Skip()
		}
	}
	if len(keys) == 0 {
		return "JSON, but not OTLP, Tempo or Jaeger trace JSON"
	}
	return "a JSON object with keys " + strings.Join(keys, ", ") + "; OTLP has resourceSpans, Tempo batches, Jaeger data or traceID and spans, the console exporters name and context or Name and SpanContext"
}

func setMeta(s *ingest.Source, k, v string) {
	if s.Meta == nil {
		s.Meta = map[string]string{}
	}
	s.Meta[k] = v
}

// decode runs the form's reader and fills in the source.
// sizeHint, when known, is the input's size; documents read whole use it.
func (dec *Decoder) decode(ctx context.Context, r *bufio.Reader, f form, t *ingest.Trace, src ingest.SourceID, sizeHint int64) error {
	d := newState(t, src)
	d.sizeHint = sizeHint
	first := len(t.Spans)
	limit := dec.Options.maxRecord()
	var (
		format string
		err    error
	)
	switch f {
	case formJSONLines:
		format, err = d.readJSONLines(ctx, r, limit)
	case formJSONDoc:
		format, err = d.readJSONDocument(r, limit)
	case formJaeger:
		format, err = "jaeger-json", d.readJaeger(r, limit)
	case formProto:
		format, err = "otlp-proto", d.readProto(ctx, r, limit)
	case formFramed:
		format, err = "otlp-proto-framed", d.readFramed(ctx, &bufferedFrames{r: r}, limit)
	case formConsole:
		format, err = "otel-python-console", d.readConsole(ctx, r, limit)
	case formGoStdout:
		format, err = "otel-go-stdout", d.readGoStdout(ctx, r, limit)
	}
	if err != nil {
		return err
	}
	s := &t.Sources[src]
	s.Format = format
	s.Spans += d.spans
	if clock, host := clockDomain(t, src, first); host != "" {
		s.Clock, s.Host = clock, host
	} else {
		s.Clock = clock
	}
	return nil
}

// readJSONLines decodes one OTLP/JSON object per line. A line that is too
// long, truncated or malformed is a warning naming the line; the spans it
// completed before the problem and every other line are kept.
func (d *state) readJSONLines(ctx context.Context, r *bufio.Reader, limit int64) (string, error) {
	lr := lineReader{r: r, max: limit}
	var s jsonScanner
	records, tempo := 0, false
	for {
		line, tooLong, err := lr.next()
		if err == io.EOF {
			break
		}
		d.pos = "line " + strconv.Itoa(lr.line)
		if err == errBinary || bytes.IndexByte(line, 0) >= 0 {
			d.warnf("malformed-record", "NUL bytes: binary data or zero fill (a file preallocated and never written?), not JSON; the rest of the input skipped")
			break
		}
		if err != nil {
			return "", err
		}
		if tooLong > 0 {
			d.warnf("record-too-large", "line of %d bytes is over the %d-byte limit (otlp Options.MaxRecordBytes); skipped without reading it", tooLong, limit)
			continue
		}
		line = bytes.TrimSpace(line)
		if lr.line == 1 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		if len(line) == 0 {
			continue
		}
		if records++; records%1024 == 0 && ctx.Err() != nil {
			return "", ctx.Err()
		}
		s.reset(line)
		tempo = d.jsonLine(&s) || tempo
		// The bytes the spans so far took, for the span slice's and the
		// string table's growth (spanCapacity): without it they grew by
		// doubling, 2.8 times the final slice allocated on a 60 MiB file.
		d.consumed = lr.off
	}
	setMeta(&d.t.Sources[d.src], "records", strconv.Itoa(records))
	switch {
	case tempo:
		return "tempo-json", nil
	case records > 1:
		return "otlp-json-lines", nil
	}
	return "otlp-json", nil
}

// jsonLine decodes the JSON line held by s and warns about what went wrong.
// It reports whether the line was Tempo's.
func (d *state) jsonLine(s *jsonScanner) (tempo bool) {
	before := d.spans
	shape := d.jsonDocument(s)
	s.End()
	if s.Err() != nil {
		d.warnf("malformed-record", "%s: %v; %d complete span(s) before it on this line kept", jsonProblem(s.Err()), s.Err(), d.spans-before)
		return shape.tempo
	}
	if !shape.otlp && !shape.tempo {
		d.warnf("not-otlp", "JSON object without resourceSpans (keys: %s); skipped", strings.Join(shape.other, ", "))
	}
	return shape.tempo
}

// lineOf is the line of text that a syntax error points at (the last line
// for any other error).
func lineOf(text []byte, err error) string {
	off := int64(len(text))
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	return strconv.Itoa(1 + bytes.Count(text[:min(off, int64(len(text)))], []byte{'\n'}))
}

func jsonProblem(err error) string {
	if msg := err.Error(); strings.Contains(msg, "unexpected end of input") || strings.Contains(msg, "unexpected end of JSON input") {
		return "truncated JSON"
	}
	return "malformed JSON"
}

// readJSONDocument decodes an OTLP/JSON document that spans lines (pretty
// printed), or several concatenated ones. It is read whole, up to the limit.
func (d *state) readJSONDocument(r io.Reader, limit int64) (string, error) {
	b, tooLarge, err := d.readAllLimit(r, limit, true)
	if err != nil {
		return "", err
	}
	if tooLarge {
		d.warnf("record-too-large", "JSON document is over the %d-byte limit (otlp Options.MaxRecordBytes); skipped", limit)
		return "otlp-json", nil
	}
	text := bytes.TrimPrefix(b, utf8BOM)
	var s jsonScanner
	s.reset(text)
	tempo, docs := false, 0
	for s.More() {
		docs++
		d.pos = "document " + strconv.Itoa(docs)
		before := d.spans
		shape := d.jsonDocument(&s)
		tempo = tempo || shape.tempo
		if s.Err() != nil {
			d.pos = "line " + lineOf(text, s.Err())
			d.warnf("malformed-record", "%s: %v; %d complete span(s) before it kept, the rest of the document skipped", jsonProblem(s.Err()), s.Err(), d.spans-before)
			break
		}
		if !shape.otlp && !shape.tempo {
			d.warnf("not-otlp", "JSON object without resourceSpans (keys: %s); skipped", strings.Join(shape.other, ", "))
		}
	}
	if tempo {
		return "tempo-json", nil
	}
	return "otlp-json", nil
}

// readAllLimit reads r whole unless it is longer than limit, in which case it
// stops and reports tooLarge (the rest is not read: an endless input must not
// hold the decoder). For text (JSON), a NUL byte, which no JSON text holds,
// ends the text there: what follows is binary data or zero fill, and a
// warning says so; binary input (protobuf) is read as it is.
// With the size known (sizeHint > 0) it allocates once; otherwise it reads in
// chunks and copies them once into place, so that the peak is twice the text,
// not the three times of a doubling buffer.
func (d *state) readAllLimit(r io.Reader, limit int64, text bool) (b []byte, tooLarge bool, err error) {
	nr := &nulStop{r: r}
	var in io.Reader = nr
	if !text {
		in = r
	}
	lr := io.LimitReader(in, limit+1)
	if d.sizeHint > 0 && d.sizeHint <= limit {
		var buf bytes.Buffer
		buf.Grow(int(d.sizeHint) + bytes.MinRead)
		_, err = buf.ReadFrom(lr)
		b = buf.Bytes()
	} else {
		b, err = readChunks(lr)
	}
	if err != nil {
		return nil, false, err
	}
	if int64(len(b)) > limit {
		return nil, true, nil
	}
	if nr.hit {
		d.pos = "byte " + strconv.FormatInt(nr.off, 10)
		d.warnf("malformed-record", "NUL byte: binary data or zero fill (a file preallocated and never written?), not JSON; the rest of the input skipped")
	}
	return b, false, nil
}

// nulStop reads r up to its first NUL byte.
type nulStop struct {
	r   io.Reader
	off int64
	hit bool
}

func (n *nulStop) Read(p []byte) (int, error) {
	if n.hit {
		return 0, io.EOF
	}
	k, err := n.r.Read(p)
	if i := bytes.IndexByte(p[:k], 0); i >= 0 {
		n.hit, n.off = true, n.off+int64(i)
		return i, nil
	}
	n.off += int64(k)
	return k, err
}

func readChunks(r io.Reader) ([]byte, error) {
	var chunks [][]byte
	total := 0
	for size := 1 << 20; ; size = min(2*size, 64<<20) {
		chunk := make([]byte, size)
		n, err := io.ReadFull(r, chunk)
		chunks = append(chunks, chunk[:n])
		total += n
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(chunks) == 1 {
		return chunks[0], nil
	}
	b := make([]byte, 0, total)
	for _, c := range chunks {
		b = append(b, c...)
	}
	return b, nil
}

func (d *state) readJaeger(r io.Reader, limit int64) error {
	b, tooLarge, err := d.readAllLimit(r, limit, true)
	if err != nil {
		return err
	}
	if tooLarge {
		d.warnf("record-too-large", "Jaeger JSON document is over the %d-byte limit (otlp Options.MaxRecordBytes); skipped", limit)
		return nil
	}
	b = bytes.TrimPrefix(b, utf8BOM)
	before := d.spans
	if err := d.jaegerDocument(b); err != nil {
		d.pos = "line " + lineOf(b, err)
		d.warnf("malformed-record", "%s: %v; %d complete span(s) before it kept", jsonProblem(err), err, d.spans-before)
	}
	return nil
}

// readProto decodes a raw ExportTraceServiceRequest as a stream, one span
// message at a time, so that its size is not bounded by memory. When it is
// truncated or corrupt, every span before the problem is kept.
func (d *state) readProto(ctx context.Context, r *bufio.Reader, limit int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sr := &streamReader{r: r}
	d.ctx = ctx
	before := d.spans
	err := d.protoRequest(sr, -1, limit)
	if err == nil {
		return nil
	}
	var pe *protoErr
	switch {
	case errors.Is(err, errTruncated):
		d.warnAt(sr.offset(), "truncated", "the file ends inside a message (%v); %d complete span(s) before it kept", err, d.spans-before)
	case errors.As(err, &pe):
		d.warnAt(pe.off, "malformed-record", "malformed protobuf: %v; %d complete span(s) before it kept, the rest of the file skipped", err, d.spans-before)
	default:
		return err
	}
	return nil
}

// lineReader reads lines of at most max bytes from r. A longer line is
// skipped without being held in memory; next reports its length.
type lineReader struct {
	r    *bufio.Reader
	max  int64
	buf  []byte
	line int
	// off is the bytes of the lines returned or skipped so far, newlines
	// included.
	off int64
}

// next returns the next line without its newline; the slice is valid until
// the next call. tooLong > 0 means the line was skipped and had that many
// bytes. err is io.EOF after the last line.
func (lr *lineReader) next() (line []byte, tooLong int64, err error) {
	frag, err := lr.r.ReadSlice('\n')
	if err == nil || (err == io.EOF && len(frag) > 0) {
		// The common case: the whole line is in the read buffer.
		lr.line++
		lr.off += int64(len(frag))
		if int64(len(frag)) > lr.max+1 {
			return nil, int64(len(frag)), nil
		}
		return trimNewline(frag), 0, nil
	}
	if err == io.EOF {
		return nil, 0, io.EOF
	}
	if err != bufio.ErrBufferFull {
		return nil, 0, err
	}
	lr.line++
	n := int64(len(frag))
	lr.buf = append(lr.buf[:0], frag...)
	for {
		if bytes.IndexByte(frag, 0) >= 0 {
			// No JSON text holds a NUL: do not read an endless line of them.
			return nil, 0, errBinary
		}
		frag, err = lr.r.ReadSlice('\n')
		n += int64(len(frag))
		if tooLong == 0 && n > lr.max+1 {
			tooLong = n
			lr.buf = lr.buf[:0]
			if cap(lr.buf) > readBufSize*4 {
				lr.buf = nil // do not keep a huge buffer for the rest of the file
			}
		}
		if tooLong == 0 {
			lr.buf = append(lr.buf, frag...)
		} else {
			tooLong = n
		}
		switch err {
		case bufio.ErrBufferFull:
			continue
		case nil, io.EOF:
			lr.off += n
			if tooLong > 0 {
				return nil, tooLong, nil
			}
			return trimNewline(lr.buf), 0, nil
		default:
			return nil, 0, err
		}
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	return b
}

// clockDomain is the clock of the spans of source src from index first on,
// and their host (ingest.HostID of host.name, "" when unknown): OTLP
// timestamps are the emitting host's CLOCK_REALTIME, so the domain is named
// after that host when every span's resource names the same host.name.
func clockDomain(t *ingest.Trace, src ingest.SourceID, first int) (ingest.ClockDomain, string) {
	host, agree := "", true
	hostOf := map[int32]string{}
	key, hasKey := t.Key("host.name")
	for i := first; i < len(t.Spans) && agree; i++ {
		s := &t.Spans[i]
		if s.Source != src {
			continue
		}
		h, seen := hostOf[s.Resource]
		if !seen {
			if hasKey && s.Resource >= 0 && int(s.Resource) < len(t.Resources) {
				if v, ok := ingest.Get(t.Resources[s.Resource].Attrs, key); ok && v.Kind() == ingest.KindString {
					h = t.Str(v.Str())
				}
			}
			hostOf[s.Resource] = h
		}
		switch {
		case h == "":
			agree = false
		case host == "":
			host = h
		case h != host:
			agree = false
		}
	}
	if !agree || host == "" {
		return ingest.ClockDomain{Name: "realtime", Kind: ingest.ClockRealtime}, ""
	}
	id := ingest.HostID(host)
	return ingest.ClockDomain{Name: "realtime@" + id, Kind: ingest.ClockRealtime}, id
}

// ClockDomain returns the clock domain of the spans of source src, realtime,
// and their host (ingest.HostID) when all their resources carry the same
// host.name; the domain is named after the host. The record package uses it
// for the payloads it decodes with DecodePayload.
func ClockDomain(t *ingest.Trace, src ingest.SourceID) (ingest.ClockDomain, string) {
	return clockDomain(t, src, 0)
}
