package otlp

import (
	"errors"
	"math"

	"github.com/llmprof/llmprof/ingest"
)

// Field numbers of opentelemetry-proto's metrics.proto (v1).
const (
	fmResourceMetrics = 1 // ExportMetricsServiceRequest / MetricsData

	fmResource      = 1 // ResourceMetrics
	fmScopeMetrics  = 2
	fmSchemaURL     = 3
	fmScopeMetricsM = 2 // ScopeMetrics.metrics

	fmName          = 1 // Metric
	fmUnit          = 3
	fmGauge         = 5
	fmSum           = 7
	fmHistogram     = 9
	fmExpHistogram  = 10
	fmSummary       = 11
	fmDataPoints    = 1 // Gauge, Sum, Histogram, ExponentialHistogram, Summary
	fmTemporality   = 2 // Sum, Histogram, ExponentialHistogram
	fmMonotonic     = 3 // Sum
	fmQuantile      = 1 // ValueAtQuantile
	fmQuantileValue = 2
)

var errMalformedMetrics = errors.New("malformed metrics message")

// protoMetricsRequest decodes an ExportMetricsServiceRequest held whole in b.
// A malformed ResourceMetrics is a warning and the next one is read; an
// error means the request itself is malformed, and what came before is kept.
func (m *metricState) protoMetricsRequest(b []byte) error {
	p := pbuf{b: b}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok || num == 0 {
			return errMalformedMetrics
		}
		if num != fmResourceMetrics || typ != wireBytes {
			if !p.skip(typ) {
				return errMalformedMetrics
			}
			continue
		}
		rm, ok := p.bytes()
		if !ok {
			return errTruncated
		}
		if err := m.protoResourceMetrics(rm); err != nil {
			m.warnf("malformed-record", "resource_metrics: %v; the metrics before it kept", err)
		}
	}
	return nil
}

// fields calls fn for each field of a message; fn reads the value. It stops
// at the first malformed field.
func fields(b []byte, fn func(p *pbuf, num uint64, typ int) bool) error {
	p := pbuf{b: b}
	for p.more() {
		num, typ, ok := p.tag()
		if !ok || num == 0 {
			return errMalformedMetrics
		}
		if !fn(&p, num, typ) {
			return errMalformedMetrics
		}
	}
	return nil
}

// bytesOr reads a length-delimited field when typ says it is one, or skips
// the field otherwise.
func bytesOr(p *pbuf, typ int) ([]byte, bool) {
	if typ != wireBytes {
		return nil, p.skip(typ)
	}
	return p.bytes()
}

func (m *metricState) protoResourceMetrics(b []byte) error {
	var (
		resRaw []byte
		scopes [][]byte
		schema ingest.StrID
	)
	err := fields(b, func(p *pbuf, num uint64, typ int) bool {
		if typ != wireBytes {
			return p.skip(typ)
		}
		v, ok := p.bytes()
		switch num {
		case fmResource:
			resRaw = v
		case fmScopeMetrics:
			scopes = append(scopes, v)
		case fmSchemaURL:
			schema = m.intern(v)
		}
		return ok
	})
	res := int32(-1)
	if resRaw != nil || schema != 0 {
		res = m.protoResource(resRaw, schema)
	}
	for _, sc := range scopes {
		if err := fields(sc, func(p *pbuf, num uint64, typ int) bool {
			v, ok := bytesOr(p, typ)
			if ok && typ == wireBytes && num == fmScopeMetricsM {
				if err := m.protoMetric(v, res); err != nil {
					m.warnf("malformed-record", "metric: %v; dropped", err)
				}
			}
			return ok
		}); err != nil {
			m.warnf("malformed-record", "scope_metrics: %v; the metrics before it kept", err)
		}
	}
	return err
}

func (m *metricState) protoMetric(b []byte, res int32) error {
	md := metricDesc{resource: res}
	var (
		dataNum uint64
		data    []byte
	)
	if err := fields(b, func(p *pbuf, num uint64, typ int) bool {
		v, ok := bytesOr(p, typ)
		if !ok || typ != wireBytes {
			return ok
		}
		switch num {
		case fmName:
			md.name = m.intern(v)
		case fmUnit:
			md.unit = m.intern(v)
		case fmGauge, fmSum, fmHistogram, fmExpHistogram, fmSummary:
			dataNum, data = num, v
		}
		return true
	}); err != nil {
		return err
	}
	if md.name == 0 {
		m.warnf("malformed-point", "metric without a name; dropped")
		return nil
	}
	if data == nil {
		return nil
	}
	var points [][]byte
	monotonic := false
	if err := fields(data, func(p *pbuf, num uint64, typ int) bool {
		switch {
		case num == fmDataPoints && typ == wireBytes:
			v, ok := p.bytes()
			points = append(points, v)
			return ok
		case num == fmTemporality && typ == wireVarint && dataNum != fmGauge && dataNum != fmSummary:
			v, ok := p.varint()
			md.temporality = temporalityOf(int64(v))
			return ok
		case num == fmMonotonic && typ == wireVarint && dataNum == fmSum:
			v, ok := p.varint()
			monotonic = v != 0
			return ok
		}
		return p.skip(typ)
	}); err != nil {
		return err
	}
	switch dataNum {
	case fmGauge:
		md.typ = ingest.MetricGauge
	case fmSum:
		md.typ = metricType("sum", monotonic)
	case fmSummary:
		md.typ, md.temporality = ingest.MetricSummary, ingest.TemporalityCumulative
	default:
		md.typ = ingest.MetricHistogram
	}
	for _, pt := range points {
		if err := m.protoPoint(&md, dataNum, pt); err != nil {
			m.warnPoint(&md, err.Error())
		}
	}
	return nil
}

// pointLayout gives the field numbers of the data point messages, which
// differ between them (metrics.proto kept old numbers when fields moved).
type pointLayout struct {
	attrs, time, count, sum, flags, buckets, bounds, quantiles uint64
	asDouble, asInt                                            uint64
}

var (
	numberPoint  = pointLayout{attrs: 7, time: 3, asDouble: 4, asInt: 6, flags: 8}
	histPointL   = pointLayout{attrs: 9, time: 3, count: 4, sum: 5, buckets: 6, bounds: 7, flags: 10}
	expHistPoint = pointLayout{attrs: 1, time: 3, count: 4, sum: 5, flags: 10}
	summaryPoint = pointLayout{attrs: 7, time: 3, count: 4, sum: 5, quantiles: 6, flags: 8}
)

func (m *metricState) protoPoint(md *metricDesc, dataNum uint64, b []byte) error {
	var l pointLayout
	switch dataNum {
	case fmGauge, fmSum:
		l = numberPoint
	case fmHistogram:
		l = histPointL
	case fmExpHistogram:
		l = expHistPoint
	default:
		l = summaryPoint
	}
	attrs := m.ptAttrs[:0]
	var (
		h        histPoint
		value    float64
		hasValue bool
		flags    uint64
		attrErr  error
	)
	err := fields(b, func(p *pbuf, num uint64, typ int) bool {
		switch {
		case num == l.attrs && typ == wireBytes:
			v, ok := p.bytes()
			if ok {
				if err := m.protoKeyValue(v, &attrs, 0); err != nil && attrErr == nil {
					attrErr = err
				}
			}
			return ok
		case num == l.time && typ == wireFixed64:
			v, ok := p.fixed64()
			h.time = int64(v)
			return ok
		case l.asDouble != 0 && num == l.asDouble && typ == wireFixed64:
			v, ok := p.fixed64()
			value, hasValue = math.Float64frombits(v), true
			return ok
		case l.asInt != 0 && num == l.asInt && typ == wireFixed64:
			v, ok := p.fixed64()
			value, hasValue = float64(int64(v)), true
			return ok
		case l.count != 0 && num == l.count && typ == wireFixed64:
			v, ok := p.fixed64()
			h.count = float64(v)
			return ok
		case l.sum != 0 && num == l.sum && typ == wireFixed64:
			v, ok := p.fixed64()
			h.sum, h.hasSum = math.Float64frombits(v), true
			return ok
		case num == l.flags && typ == wireVarint:
			v, ok := p.varint()
			flags = v
			return ok
		case l.buckets != 0 && num == l.buckets:
			return repeatedFixed64(p, typ, func(u uint64) { h.counts = append(h.counts, float64(u)) })
		case l.bounds != 0 && num == l.bounds:
			return repeatedFixed64(p, typ, func(u uint64) { h.bounds = append(h.bounds, math.Float64frombits(u)) })
		case l.quantiles != 0 && num == l.quantiles && typ == wireBytes:
			v, ok := p.bytes()
			if !ok {
				return false
			}
			var q [2]float64
			err := fields(v, func(p *pbuf, num uint64, typ int) bool {
				if (num == fmQuantile || num == fmQuantileValue) && typ == wireFixed64 {
					u, ok := p.fixed64()
					q[num-1] = math.Float64frombits(u)
					return ok
				}
				return p.skip(typ)
			})
			h.quantiles = append(h.quantiles, q)
			return err == nil
		}
		return p.skip(typ)
	})
	m.ptAttrs = attrs[:0]
	if err != nil {
		return err
	}
	if attrErr != nil {
		m.warnf("malformed-record", "metric %s: attribute skipped: %v", m.t.Str(md.name), attrErr)
	}
	if flags&1 != 0 {
		return nil // FLAG_NO_RECORDED_VALUE
	}
	switch dataNum {
	case fmGauge, fmSum:
		if hasValue {
			m.emit(md, md.name, attrs, "", "", h.time, value)
		}
	default:
		m.emitHist(md, attrs, &h)
	}
	return nil
}

// repeatedFixed64 reads a repeated fixed64 or double field, packed (the
// proto3 default) or not.
func repeatedFixed64(p *pbuf, typ int, add func(uint64)) bool {
	switch typ {
	case wireFixed64:
		v, ok := p.fixed64()
		if ok {
			add(v)
		}
		return ok
	case wireBytes:
		b, ok := p.bytes()
		if !ok || len(b)%8 != 0 {
			return false
		}
		q := pbuf{b: b}
		for q.more() {
			v, _ := q.fixed64()
			add(v)
		}
		return true
	}
	return p.skip(typ)
}
