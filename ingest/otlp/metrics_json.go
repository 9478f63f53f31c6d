package otlp

import (
	"github.com/llmprof/llmprof/ingest"
)

// temporalityNames are the AggregationTemporality enum names after the
// AGGREGATION_TEMPORALITY_ prefix (opentelemetry-proto metrics.proto).
var temporalityNames = []string{"UNSPECIFIED", "DELTA", "CUMULATIVE"}

// jsonMetricsDocument decodes one MetricsData / ExportMetricsServiceRequest
// object; it reports whether the object had resourceMetrics. Keys follow the
// trace reader's rules (json.go): lowerCamelCase or snake_case, 64-bit
// integers as strings or numbers, enums as integers or names, unknown fields
// ignored.
func (m *metricState) jsonMetricsDocument(s *jsonScanner) bool {
	if !s.Open('{') {
		return false
	}
	found := false
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "resourceMetrics", "resource_metrics":
			found = true
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					m.jsonResourceMetrics(s.RawValue())
				}
			}
		default:
			s.Skip()
		}
	}
	return found
}

// jsonResourceMetrics decodes one ResourceMetrics object. Its members may
// come in any order, so the resource is decoded first from its raw text.
func (m *metricState) jsonResourceMetrics(raw []byte) {
	if raw == nil {
		return
	}
	var s jsonScanner
	s.reset(raw)
	var scopes [][]byte
	resRaw, schema := jsonResourceSignal(&s, metricScopeKeys, m.intern, func() {
		if v := s.RawValue(); v != nil {
			scopes = append(scopes, v)
		}
	})
	if s.Err() != nil {
		m.warnf("malformed-record", "resourceMetrics: %v; metrics after it dropped", s.Err())
	}
	res := int32(-1)
	if resRaw != nil || schema != 0 {
		res = m.jsonResource(resRaw, schema)
	}
	for _, sc := range scopes {
		m.jsonScopeMetrics(sc, res)
	}
}

func (m *metricState) jsonScopeMetrics(raw []byte, res int32) {
	var s jsonScanner
	s.reset(raw)
	if !s.Open('{') {
		return
	}
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "metrics":
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					if v := s.RawValue(); v != nil {
						m.jsonMetric(v, res)
					}
				}
			}
		default:
			s.Skip()
		}
	}
	if s.Err() != nil {
		m.warnf("malformed-record", "scopeMetrics: %v; metrics after it dropped", s.Err())
	}
}

// jsonMetric decodes one Metric: its name and unit first, then its data.
func (m *metricState) jsonMetric(raw []byte, res int32) {
	var s jsonScanner
	s.reset(raw)
	md := metricDesc{resource: res}
	var dataKey string
	var dataRaw []byte
	if s.Open('{') {
		for first := true; s.Member(&first); {
			switch k := string(s.Key()); k {
			case "name":
				md.name = m.intern(s.Str())
			case "unit":
				md.unit = m.intern(s.Str())
			case "gauge", "sum", "histogram", "exponentialHistogram", "exponential_histogram", "summary":
				dataKey, dataRaw = k, s.RawValue()
			default:
				s.Skip()
			}
		}
	}
	if s.Err() != nil {
		m.warnf("malformed-record", "metric: %v; dropped", s.Err())
		return
	}
	if md.name == 0 {
		m.warnf("malformed-point", "metric without a name; dropped")
		return
	}
	if dataRaw == nil {
		return
	}
	s.reset(dataRaw)
	if !s.Open('{') {
		return
	}
	// The points' text, in a slice reused from metric to metric (jsonPoint
	// does not come back here).
	points := m.points[:0]
	monotonic := false
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "dataPoints", "data_points":
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					if v := s.RawValue(); v != nil {
						points = append(points, v)
					}
				}
			}
		case "aggregationTemporality", "aggregation_temporality":
			md.temporality = temporalityOf(m.jsonEnum(&s, "AGGREGATION_TEMPORALITY_", temporalityNames))
		case "isMonotonic", "is_monotonic":
			monotonic = s.bool()
		default:
			s.Skip()
		}
	}
	if s.Err() != nil {
		m.warnf("malformed-record", "metric %s: %v; dropped", m.t.Str(md.name), s.Err())
		return
	}
	md.typ = metricType(dataKey, monotonic)
	if md.typ == ingest.MetricSummary {
		md.temporality = ingest.TemporalityCumulative
	}
	for _, p := range points {
		m.jsonPoint(&md, dataKey, p)
	}
	clear(points)
	m.points = points[:0]
}

func temporalityOf(v int64) ingest.Temporality {
	switch v {
	case 1:
		return ingest.TemporalityDelta
	case 2:
		return ingest.TemporalityCumulative
	}
	return ingest.TemporalityUnspecified
}

func metricType(dataKey string, monotonic bool) ingest.MetricType {
	switch dataKey {
	case "gauge":
		return ingest.MetricGauge
	case "sum":
		if monotonic {
			return ingest.MetricCounter
		}
		return ingest.MetricSum
	case "summary":
		return ingest.MetricSummary
	}
	return ingest.MetricHistogram
}

// jsonPoint decodes one NumberDataPoint, HistogramDataPoint,
// ExponentialHistogramDataPoint or SummaryDataPoint.
func (m *metricState) jsonPoint(md *metricDesc, dataKey string, raw []byte) {
	var s jsonScanner
	s.reset(raw)
	attrs := m.ptAttrs[:0]
	var (
		h        histPoint
		value    float64
		hasValue bool
		flags    int64
	)
	if !s.Open('{') {
		return
	}
	for first := true; s.Member(&first); {
		switch string(s.Key()) {
		case "attributes":
			attrs = m.jsonAttrs(&s, attrs)
		case "timeUnixNano", "time_unix_nano":
			h.time = s.int64()
		case "asDouble", "as_double":
			value, hasValue = s.float64(), true
		case "asInt", "as_int":
			value, hasValue = float64(s.int64()), true
		case "flags":
			flags = s.int64()
		case "count":
			h.count = float64(uint64(s.int64()))
		case "sum":
			h.sum, h.hasSum = s.float64(), true
		case "bucketCounts", "bucket_counts":
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					h.counts = append(h.counts, float64(uint64(s.int64())))
				}
			}
		case "explicitBounds", "explicit_bounds":
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					h.bounds = append(h.bounds, s.float64())
				}
			}
		case "quantileValues", "quantile_values":
			if s.Open('[') {
				for first := true; s.Elem(&first); {
					var q [2]float64
					if s.Open('{') {
						for first := true; s.Member(&first); {
							switch string(s.Key()) {
							case "quantile":
								q[0] = s.float64()
							case "value":
								q[1] = s.float64()
							default:
								s.Skip()
							}
						}
					}
					h.quantiles = append(h.quantiles, q)
				}
			}
		default:
			s.Skip()
		}
	}
	m.ptAttrs = attrs[:0]
	if s.Err() != nil {
		m.warnPoint(md, s.Err().Error())
		return
	}
	if flags&1 != 0 {
		return // FLAG_NO_RECORDED_VALUE
	}
	switch dataKey {
	case "gauge", "sum":
		if !hasValue {
			return
		}
		m.emit(md, md.name, attrs, "", "", h.time, value)
	default:
		if dataKey != "histogram" {
			h.bounds, h.counts = nil, nil
		}
		m.emitHist(md, attrs, &h)
	}
}
