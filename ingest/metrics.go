package ingest

import (
	"slices"
	"strconv"
	"strings"
)

// MetricType is the type a metric's producer declared (Prometheus # TYPE, the
// OTLP data case). It is never inferred from a name: vLLM's
// vllm:iteration_tokens_total is a histogram.
type MetricType uint8

const (
	// MetricUntyped: no type was declared (Prometheus untyped or unknown;
	// node_exporter's ethtool series are all untyped).
	MetricUntyped MetricType = iota
	MetricGauge
	// MetricCounter: a monotonic total (Prometheus counter, OTLP monotonic sum).
	MetricCounter
	// MetricSum: an OTLP sum that is not monotonic (an up-down counter).
	MetricSum
	// MetricHistogram: the series is one part of a histogram, named as
	// Prometheus names them: <family>_bucket with a cumulative "le" label,
	// <family>_sum and <family>_count. OTLP histograms are stored the same way.
	MetricHistogram
	// MetricSummary: <family>{quantile="…"}, <family>_sum, <family>_count.
	MetricSummary
)

var metricTypeNames = [...]string{"untyped", "gauge", "counter", "sum", "histogram", "summary"}

func (m MetricType) String() string {
	if int(m) < len(metricTypeNames) {
		return metricTypeNames[m]
	}
	return "type(" + strconv.Itoa(int(m)) + ")"
}

// Temporality says what a counter-like sample covers (the OTLP aggregation
// temporality). Prometheus totals are cumulative.
type Temporality uint8

const (
	TemporalityUnspecified Temporality = iota
	// TemporalityDelta: each sample counts what happened since the previous one.
	TemporalityDelta
	// TemporalityCumulative: each sample counts everything since the series'
	// start; a decrease is a reset.
	TemporalityCumulative
)

var temporalityNames = [...]string{"unspecified", "delta", "cumulative"}

func (t Temporality) String() string {
	if int(t) < len(temporalityNames) {
		return temporalityNames[t]
	}
	return "temporality(" + strconv.Itoa(int(t)) + ")"
}

// SeriesID identifies a metric series: 1 + its index in Trace.Series. The
// zero SeriesID means the sample has no series (NVML and nsys samples, which
// carry their device and process in the Sample itself).
type SeriesID uint32

// Series is one labelled metric time series scraped from a Prometheus
// endpoint or received as OTLP metrics. Its samples are the Trace.Samples
// whose Series field names it.
type Series struct {
	// Name is the sample name as exposed: "vllm:num_requests_running",
	// "vllm:time_to_first_token_seconds_bucket".
	Name StrID
	// Family is the metric the sample belongs to: the histogram or summary
	// name without _bucket, _sum or _count; Name for the other types.
	Family      StrID
	Type        MetricType
	Temporality Temporality
	// Unit as the producer declared it (OTLP unit, OpenMetrics # UNIT);
	// 0 when none was.
	Unit StrID
	// Labels are the series' labels (Prometheus) or data point attributes
	// (OTLP), sorted by key; for a histogram bucket they include "le".
	Labels []Attr
	// Resource indexes Trace.Resources for OTLP metrics; -1 if none.
	Resource int32
	Source   SourceID
}

// SeriesOf returns the series a sample belongs to, or nil.
func (t *Trace) SeriesOf(s *Sample) *Series {
	if s.Series == 0 || int(s.Series) > len(t.Series) {
		return nil
	}
	return &t.Series[s.Series-1]
}

// Label returns the value of a series label as a string ("" when absent).
func (t *Trace) Label(s *Series, key string) string {
	v, ok := t.AttrString(s.Labels, key)
	if !ok {
		return ""
	}
	return v
}

// SeriesKey formats a series as Prometheus writes it, name{k="v",…}, with the
// labels in their stored (sorted) order; it identifies the series in reports.
func (t *Trace) SeriesKey(s *Series) string {
	var b strings.Builder
	b.WriteString(t.Str(s.Name))
	if len(s.Labels) == 0 {
		return b.String()
	}
	b.WriteByte('{')
	for i, a := range s.Labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t.Str(a.Key))
		b.WriteString(`="`)
		v := a.Value()
		if v.Kind() == KindString {
			b.WriteString(labelEscaper.Replace(t.Str(v.Str())))
		} else {
			b.WriteString(t.FormatValue(v))
		}
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String()
}

// labelEscaper escapes a label value as the Prometheus text format does.
var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// SeriesTable interns metric series for a decoder: the same name, labels and
// resource always map to the same SeriesID.
type SeriesTable struct {
	t     *Trace
	index map[string]SeriesID
	key   []byte
}

// NewSeriesTable returns a table that adds series to t.
func NewSeriesTable(t *Trace) *SeriesTable {
	return &SeriesTable{t: t, index: map[string]SeriesID{}}
}

// ID returns the ID of the series s, adding it to the trace if it is new. It
// sorts s.Labels in place and stores a copy, so the caller may reuse the
// slice. A series seen again with another declared type keeps its first one.
func (st *SeriesTable) ID(s Series) SeriesID {
	slices.SortFunc(s.Labels, func(a, b Attr) int { return strings.Compare(st.t.Str(a.Key), st.t.Str(b.Key)) })
	k := st.key[:0]
	k = strconv.AppendUint(k, uint64(s.Name), 36)
	k = append(k, ',')
	k = strconv.AppendInt(k, int64(s.Resource), 36)
	k = append(k, ',')
	k = strconv.AppendUint(k, uint64(s.Source), 36)
	for _, a := range s.Labels {
		v := a.Value()
		k = append(k, ',')
		k = strconv.AppendUint(k, uint64(a.Key), 36)
		k = append(k, '=')
		k = strconv.AppendUint(k, uint64(v.Kind()), 36)
		k = append(k, ':')
		k = append(k, st.t.FormatValue(v)...)
	}
	st.key = k
	if id, ok := st.index[string(k)]; ok {
		return id
	}
	s.Labels = slices.Clone(s.Labels)
	st.t.Series = append(st.t.Series, s)
	id := SeriesID(len(st.t.Series))
	st.index[string(k)] = id
	return id
}
