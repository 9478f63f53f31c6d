package otlp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/llmprof/llmprof/ingest"
)

// MetricsDecoder reads OTLP metrics — ExportMetricsServiceRequest or
// MetricsData — in the forms the trace Decoder reads traces: OTLP/JSON (one
// document, or JSON Lines as the collector's file exporter writes them),
// raw protobuf, and the file exporter's length-prefixed records (each
// optionally zstd), under whole-file gzip or zstd. Every data point becomes
// samples of a labelled ingest.Series (ingest/metrics.go):
//
//   - gauge and sum points: one sample; a monotonic sum is a counter, with its
//     aggregation temporality;
//   - histogram points: <name>_bucket{le} with cumulative counts (OTLP counts
//     are per bucket), <name>_count and <name>_sum, the Prometheus shape;
//   - exponential histogram points: <name>_count and <name>_sum;
//   - summary points: <name>{quantile}, <name>_count and <name>_sum.
//
// Data point attributes are the series' labels; the resource is the series'
// Resource. Points flagged "no recorded value" and non-finite values are
// dropped; a point identical to the previous one of its series is coalesced
// into it, and an input past its metric budget (ingest.MetricLimits) is an
// error naming the record. It implements ingest.Decoder; the zero value is
// ready to use.
type MetricsDecoder struct {
	Options Options
}

var _ ingest.Decoder = (*MetricsDecoder)(nil)

// Name is "otlp-metrics".
func (*MetricsDecoder) Name() string { return "otlp-metrics" }

// Sniff reports whether the input is OTLP metrics in one of the forms above.
// It must come before the trace Decoder, whose protobuf sniffing is looser.
func (*MetricsDecoder) Sniff(in *ingest.Input) bool {
	return !in.Dir && sniffMetrics(in.Head) != formNone
}

// sniffMetrics decides the form of an OTLP metrics input from its head.
func sniffMetrics(head []byte) form {
	text := bytes.TrimLeft(bytes.TrimPrefix(head, utf8BOM), " \t\r\n")
	if len(text) > 0 && text[0] == '{' {
		if !jsonHasMetrics(text) {
			return formNone
		}
		if firstLineIsValue(text) {
			return formJSONLines
		}
		return formJSONDoc
	}
	if len(head) >= 5 {
		if n := int(binary.BigEndian.Uint32(head)); n > 0 && n <= maxSniffRecord {
			p := head[4:]
			complete := len(p) >= n
			if complete {
				p = p[:n]
			}
			switch {
			case p[0] == '{':
				if jsonHasMetrics(p) {
					return formFramed
				}
			case bytes.HasPrefix(p, zstdMagic) && complete:
				d := newState(ingest.New(), 0)
				if b, err := d.unzstd(p, maxSniffRecord); err == nil && (plausibleMetrics(b) || (len(b) > 0 && b[0] == '{' && jsonHasMetrics(b))) {
					d.closeZstd()
					return formFramed
				}
				d.closeZstd()
			case plausibleMetrics(p):
				return formFramed
			}
		}
	}
	if plausibleMetrics(head) {
		return formProto
	}
	return formNone
}

// jsonHasMetrics reports whether a JSON object has a top-level
// resourceMetrics array.
func jsonHasMetrics(text []byte) bool {
	var s jsonScanner
	s.reset(text)
	if !s.Open('{') {
		return false
	}
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "resourceMetrics", "resource_metrics":
			return s.Peek() == '['
		}
		s.Skip()
	}
	return false
}

// plausibleMetrics reports whether b reads as the start of an
// ExportMetricsServiceRequest down to its first Metric: a metric's fields are
// all length-delimited, its name is printable UTF-8, and its data (gauge,
// sum, histogram, …) starts with data points. A span (trace_id, span_id,
// then varint and fixed64 fields) fails this.
func plausibleMetrics(b []byte) bool {
	return len(b) > 0 && b[0] == 0x0a && metricsLevel(b, 0)
}

// metricsLevel walks one message of the request (level 0), ResourceMetrics
// (1), ScopeMetrics (2) or Metric (3); b may be cut short.
func metricsLevel(b []byte, level int) bool {
	p := pbuf{b: b}
	found := false
	for p.more() {
		num, typ, ok := p.tag()
		if !ok || typ != wireBytes || num == 0 {
			return false
		}
		n, ok := p.varint()
		if !ok {
			return found
		}
		end := p.i + int(min(n, uint64(len(b)-p.i)))
		cut := n > uint64(len(b)-p.i)
		field := b[p.i:end]
		p.i = end
		switch level {
		case 0, 1, 2:
			wantChild := uint64(1)
			if level > 0 {
				wantChild = 2
			}
			if num == wantChild {
				if !metricsLevel(field, level+1) {
					return false
				}
				found = true
			} else if level == 0 || num > 3 {
				return false
			}
		case 3:
			// Encoders write fields in any order (pdata writes the data
			// before the name), so every field is checked and either a
			// valid name or valid data makes a metric.
			switch num {
			case 1:
				if len(field) == 0 || (!cut && !utf8.Valid(field)) || !printable(field) {
					return false
				}
				found = true
			case 2, 3, 12:
			case 5, 7, 9, 10, 11:
				if len(field) > 0 && field[0] != 0x0a && !(num != 5 && num != 11 && (field[0] == 0x10 || field[0] == 0x18)) {
					return false
				}
				found = true
			default:
				return false
			}
		}
		if cut {
			return found
		}
	}
	return found
}

func printable(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// Decode decodes the input into t, whose Sources[0] names it.
func (dec *MetricsDecoder) Decode(ctx context.Context, in *ingest.Input, t *ingest.Trace) error {
	f := sniffMetrics(in.Head)
	if f == formNone {
		return fmt.Errorf("not OTLP metrics")
	}
	rc, err := in.Open()
	if err != nil {
		return err
	}
	defer rc.Close()
	if in.Compression != ingest.CompressionNone {
		setMeta(&t.Sources[0], "compression", in.Compression.String())
	}
	m := newMetricState(t, 0, in.MetricBudget())
	m.sizeHint = in.Size
	return m.decode(ctx, bufio.NewReaderSize(rc, readBufSize), f, dec.Options.maxRecord())
}

// MetricsPayloads decodes a stream of ExportMetricsServiceRequest bodies (as
// the record receiver stores them from /v1/metrics and the gRPC
// MetricsService) into one source of a trace; a series repeated across
// requests stays one series.
type MetricsPayloads struct {
	m *metricState
}

// NewMetricsPayloads returns a decoder of metrics requests into source src
// of t, under the default metric budget (ingest.MetricLimits).
func NewMetricsPayloads(t *ingest.Trace, src ingest.SourceID) *MetricsPayloads {
	return &MetricsPayloads{m: newMetricState(t, src, ingest.MetricBudget{})}
}

// Decode decodes one request body; pos names it in warnings ("row 12").
// Once the budget is spent, every call returns its error (wrapping
// ingest.ErrMetricBudget).
func (p *MetricsPayloads) Decode(payload []byte, enc Encoding, pos string) error {
	if err := p.m.sink.Err(); err != nil {
		return err
	}
	p.m.pos = pos
	before := p.m.samples
	_, err := p.m.metricsPayload(payload, enc, DefaultMaxRecordBytes)
	p.m.t.Sources[p.m.src].Samples += p.m.samples - before
	if berr := p.m.sink.Err(); berr != nil {
		return berr
	}
	return err
}

// Close releases the decompressor and warns, once, of the samples
// coalesced.
func (p *MetricsPayloads) Close() {
	p.m.closeZstd()
	p.m.sink.WarnCoalesced(p.m.src)
	p.m.sink.Coalesced = 0
}

// metricState is the trace decoder's state (string cache, resources) plus
// the series table.
type metricState struct {
	*state
	sink    *ingest.MetricSink
	samples int
	points  [][]byte // scratch of jsonMetric
	labels  []ingest.Attr
	ptAttrs []ingest.Attr
}

func newMetricState(t *ingest.Trace, src ingest.SourceID, b ingest.MetricBudget) *metricState {
	return &metricState{state: newState(t, src), sink: ingest.NewMetricSink(t, b)}
}

func (m *metricState) decode(ctx context.Context, r *bufio.Reader, f form, limit int64) error {
	defer m.closeZstd()
	src := &m.t.Sources[m.src]
	var format string
	switch f {
	case formJSONLines, formJSONDoc:
		lr := lineReader{r: r, max: limit}
		records := 0
		if f == formJSONDoc {
			b, tooLarge, err := m.readAllLimit(r, limit, true)
			if err != nil {
				return err
			}
			if tooLarge {
				return fmt.Errorf("JSON document over the %d-byte limit (otlp Options.MaxRecordBytes)", limit)
			}
			m.jsonRecord(b)
			records = 1
		} else {
			for {
				line, tooLong, err := lr.next()
				if err == io.EOF {
					break
				}
				if err != nil {
					return err
				}
				m.pos = "line " + strconv.Itoa(lr.line)
				if tooLong > 0 {
					m.warnf("record-too-large", "line of %d bytes is over the %d-byte limit (otlp Options.MaxRecordBytes); skipped", tooLong, limit)
					continue
				}
				if lr.line == 1 {
					line = bytes.TrimPrefix(line, utf8BOM)
				}
				if line = bytes.TrimSpace(line); len(line) == 0 {
					continue
				}
				if records++; records%1024 == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				m.jsonRecord(line)
				if err := m.sink.Err(); err != nil {
					return fmt.Errorf("%s: %w", m.pos, err)
				}
			}
		}
		format = "otlp-metrics-json"
		if records > 1 {
			format = "otlp-metrics-json-lines"
		}
	case formProto:
		b, tooLarge, err := m.readAllLimit(r, limit, false)
		if err != nil {
			return err
		}
		if tooLarge {
			return fmt.Errorf("protobuf request over the %d-byte limit (otlp Options.MaxRecordBytes)", limit)
		}
		if err := m.protoMetricsRequest(b); err != nil && m.sink.Err() == nil {
			m.warnf("malformed-record", "protobuf: %v; the metrics before it kept", err)
		}
		format = "otlp-metrics-proto"
	case formFramed:
		if err := m.readFramedMetrics(ctx, r, limit); err != nil {
			return err
		}
		format = "otlp-metrics-proto-framed"
	}
	if err := m.sink.Err(); err != nil {
		return err
	}
	m.sink.WarnCoalesced(m.src)
	src.Format = format
	src.Samples += m.samples
	if src.Clock.Name == "" {
		src.Clock = ingest.ClockDomain{Name: "realtime", Kind: ingest.ClockRealtime}
	}
	setMeta(src, "series", strconv.Itoa(len(m.t.Series)))
	return nil
}

func (m *metricState) jsonRecord(b []byte) {
	var s jsonScanner
	s.reset(b)
	ok := m.jsonMetricsDocument(&s)
	if s.Err() != nil {
		m.warnf("malformed-record", "%s: %v; the metrics before it kept", jsonProblem(s.Err()), s.Err())
	} else if !ok {
		m.warnf("not-metrics", "JSON object without resourceMetrics; skipped")
	}
}

func (m *metricState) readFramedMetrics(ctx context.Context, r *bufio.Reader, limit int64) error {
	var hdr [4]byte
	for rec := 1; ; rec++ {
		m.pos = "record " + strconv.Itoa(rec)
		n, err := io.ReadFull(r, hdr[:])
		if err == io.EOF {
			return nil
		}
		if err == io.ErrUnexpectedEOF {
			m.warnf("truncated", "the file ends inside a record header (%d of 4 bytes)", n)
			return nil
		}
		if err != nil {
			return err
		}
		if rec%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		size := int64(binary.BigEndian.Uint32(hdr[:]))
		if size > limit {
			m.warnf("record-too-large", "record of %d bytes is over the %d-byte limit (otlp Options.MaxRecordBytes); skipped", size, limit)
			if _, err := r.Discard(int(size)); err != nil {
				m.warnf("truncated", "the file ends inside the record")
				return nil
			}
			continue
		}
		payload := make([]byte, size)
		if got, err := io.ReadFull(r, payload); err != nil {
			m.warnf("truncated", "the file ends inside the record (%d of %d bytes); every record before it kept", got, size)
			return nil
		}
		if _, err := m.metricsPayload(payload, encAuto, limit); err != nil {
			m.warnf("malformed-record", "%v", err)
		}
		if err := m.sink.Err(); err != nil {
			return fmt.Errorf("%s: %w", m.pos, err)
		}
	}
}

// metricsPayload decodes one request body, zstd- or gzip-compressed or not.
func (m *metricState) metricsPayload(b []byte, enc Encoding, limit int64) (kind string, err error) {
	b, enc, suffix, err := m.openPayload(b, enc, limit)
	if err != nil {
		return suffix, err
	}
	if enc == JSON {
		var s jsonScanner
		s.reset(bytes.TrimPrefix(b, utf8BOM))
		ok := m.jsonMetricsDocument(&s)
		switch {
		case s.Err() != nil:
			return "json" + suffix, fmt.Errorf("%s: %v", jsonProblem(s.Err()), s.Err())
		case !ok:
			return "json" + suffix, fmt.Errorf("JSON object without resourceMetrics")
		}
		return "json" + suffix, nil
	}
	if err := m.protoMetricsRequest(b); err != nil {
		return "proto" + suffix, fmt.Errorf("protobuf: %v", err)
	}
	return "proto" + suffix, nil
}

// metricDesc is what a Metric message says about all of its points.
type metricDesc struct {
	name, unit  ingest.StrID
	typ         ingest.MetricType
	temporality ingest.Temporality
	resource    int32
}

// histPoint is a histogram, exponential histogram or summary data point.
type histPoint struct {
	time      int64
	count     float64
	sum       float64
	hasSum    bool
	bounds    []float64
	counts    []float64
	quantiles [][2]float64
}

// emit appends one sample of the series name{labels, extra=extraVal}.
func (m *metricState) emit(md *metricDesc, name ingest.StrID, attrs []ingest.Attr, extra string, extraVal string, at int64, v float64) {
	if math.IsNaN(v) || math.IsInf(v, 0) || at == 0 {
		return
	}
	m.labels = append(m.labels[:0], attrs...)
	if extra != "" {
		m.labels = append(m.labels, ingest.NewAttr(m.internString(extra), ingest.StringValue(m.internString(extraVal))))
	}
	kept, _ := m.sink.Add(ingest.Series{Name: name, Family: md.name, Type: md.typ, Temporality: md.temporality,
		Unit: md.unit, Labels: m.labels, Resource: md.resource, Source: m.src},
		ingest.Sample{Time: at, Value: v, Metric: name, Device: -1, Instance: -1, Source: m.src})
	if kept {
		m.samples++
	}
}

func (m *metricState) suffixed(md *metricDesc, suf string) ingest.StrID {
	return m.internString(m.t.Str(md.name) + suf)
}

// emitHist appends the Prometheus-shaped samples of one histogram-like point.
func (m *metricState) emitHist(md *metricDesc, attrs []ingest.Attr, h *histPoint) {
	if len(h.bounds) > 0 || len(h.counts) > 0 {
		if len(h.counts) != len(h.bounds)+1 {
			m.warnf("malformed-point", "histogram %s: %d bucket counts for %d bounds (want bounds+1); buckets dropped", m.t.Str(md.name), len(h.counts), len(h.bounds))
		} else {
			bucket := m.suffixed(md, "_bucket")
			cum := 0.0
			for i, c := range h.counts {
				cum += c
				le := "+Inf"
				if i < len(h.bounds) {
					le = strconv.FormatFloat(h.bounds[i], 'g', -1, 64)
				}
				m.emit(md, bucket, attrs, "le", le, h.time, cum)
			}
		}
	}
	for _, q := range h.quantiles {
		m.emit(md, md.name, attrs, "quantile", strconv.FormatFloat(q[0], 'g', -1, 64), h.time, q[1])
	}
	m.emit(md, m.suffixed(md, "_count"), attrs, "", "", h.time, h.count)
	if h.hasSum {
		m.emit(md, m.suffixed(md, "_sum"), attrs, "", "", h.time, h.sum)
	}
}

func (m *metricState) warnPoint(md *metricDesc, what string) {
	m.warnf("malformed-point", "metric %s: %s; point dropped", m.t.Str(md.name), what)
}
