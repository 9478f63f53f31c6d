package otlp

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/llmprof/llmprof/ingest"
)

const t0 = 1764583200000000000

// referenceMetrics builds metrics of every data type with pdata, as a
// collector's prometheus receiver would hold a vLLM and a DCGM scrape.
func referenceMetrics() pmetric.Metrics {
	md := pmetric.NewMetrics()
	rm := md.ResourceMetrics().AppendEmpty()
	rm.Resource().Attributes().PutStr("service.name", "vllm")
	rm.Resource().Attributes().PutStr("host.name", "gpu-node-7")
	sm := rm.ScopeMetrics().AppendEmpty()
	sm.Scope().SetName("github.com/open-telemetry/opentelemetry-collector-contrib/receiver/prometheusreceiver")

	g := sm.Metrics().AppendEmpty()
	g.SetName("vllm:kv_cache_usage_perc")
	g.SetUnit("1")
	gg := g.SetEmptyGauge()
	for i, v := range []float64{0.5, 0.97, 1.0} {
		p := gg.DataPoints().AppendEmpty()
		p.SetTimestamp(pcommon.Timestamp(t0 + int64(i)*1e9))
		p.SetDoubleValue(v)
		p.Attributes().PutStr("engine", "0")
		p.Attributes().PutStr("model_name", "meta-llama/Llama-3.1-8B-Instruct")
	}
	c := sm.Metrics().AppendEmpty()
	c.SetName("vllm:num_preemptions_total")
	s := c.SetEmptySum()
	s.SetIsMonotonic(true)
	s.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	for i, v := range []int64{4, 4, 19} {
		p := s.DataPoints().AppendEmpty()
		p.SetStartTimestamp(pcommon.Timestamp(t0 - 60e9))
		p.SetTimestamp(pcommon.Timestamp(t0 + int64(i)*1e9))
		p.SetIntValue(v)
		p.Attributes().PutStr("engine", "0")
	}
	// A point with no recorded value (a Prometheus staleness marker).
	stale := s.DataPoints().AppendEmpty()
	stale.SetTimestamp(pcommon.Timestamp(t0 + 3e9))
	stale.SetFlags(pmetric.DefaultDataPointFlags.WithNoRecordedValue(true))
	stale.Attributes().PutStr("engine", "0")

	ud := sm.Metrics().AppendEmpty()
	ud.SetName("queue.depth")
	uds := ud.SetEmptySum()
	uds.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	p := uds.DataPoints().AppendEmpty()
	p.SetTimestamp(pcommon.Timestamp(t0))
	p.SetIntValue(-3)

	h := sm.Metrics().AppendEmpty()
	h.SetName("vllm:time_to_first_token_seconds")
	h.SetUnit("s")
	hh := h.SetEmptyHistogram()
	hh.SetAggregationTemporality(pmetric.AggregationTemporalityDelta)
	hp := hh.DataPoints().AppendEmpty()
	hp.SetTimestamp(pcommon.Timestamp(t0))
	hp.SetCount(10)
	hp.SetSum(2.5)
	hp.ExplicitBounds().FromRaw([]float64{0.1, 0.5, 1})
	hp.BucketCounts().FromRaw([]uint64{3, 5, 1, 1})
	hp.Attributes().PutStr("engine", "0")

	e := sm.Metrics().AppendEmpty()
	e.SetName("rpc.duration")
	eh := e.SetEmptyExponentialHistogram()
	eh.SetAggregationTemporality(pmetric.AggregationTemporalityCumulative)
	ep := eh.DataPoints().AppendEmpty()
	ep.SetTimestamp(pcommon.Timestamp(t0))
	ep.SetCount(7)
	ep.SetSum(3.5)
	ep.SetScale(2)
	ep.Positive().BucketCounts().FromRaw([]uint64{3, 4})

	su := sm.Metrics().AppendEmpty()
	su.SetName("gc.pause")
	sp := su.SetEmptySummary().DataPoints().AppendEmpty()
	sp.SetTimestamp(pcommon.Timestamp(t0))
	sp.SetCount(4)
	sp.SetSum(0.02)
	q := sp.QuantileValues().AppendEmpty()
	q.SetQuantile(0.99)
	q.SetValue(0.009)

	rm2 := md.ResourceMetrics().AppendEmpty()
	rm2.Resource().Attributes().PutStr("service.name", "dcgm-exporter")
	m2 := rm2.ScopeMetrics().AppendEmpty().Metrics().AppendEmpty()
	m2.SetName("DCGM_FI_DEV_SM_CLOCK")
	gp := m2.SetEmptyGauge().DataPoints().AppendEmpty()
	gp.SetTimestamp(pcommon.Timestamp(t0))
	gp.SetDoubleValue(1980)
	gp.Attributes().PutStr("gpu", "0")
	gp.Attributes().PutStr("UUID", "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52")
	gp.Attributes().PutInt("pcie_gen", 5)
	return md
}

// referenceSamples reads pdata's decoding of md into the model's sample
// shape (histograms as cumulative le buckets, _count, _sum), one line per
// sample: "resource service.name | series key | type/temporality | time value".
func referenceSamples(md pmetric.Metrics) []string {
	var out []string
	for i := 0; i < md.ResourceMetrics().Len(); i++ {
		rm := md.ResourceMetrics().At(i)
		svc, _ := rm.Resource().Attributes().Get("service.name")
		for j := 0; j < rm.ScopeMetrics().Len(); j++ {
			ms := rm.ScopeMetrics().At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				add := func(name string, attrs pcommon.Map, extraK, extraV string, typ ingest.MetricType, temp ingest.Temporality, ts pcommon.Timestamp, v float64) {
					var ls []string
					attrs.Range(func(k string, v pcommon.Value) bool {
						ls = append(ls, k+`="`+v.AsString()+`"`)
						return true
					})
					if extraK != "" {
						ls = append(ls, extraK+`="`+extraV+`"`)
					}
					sort.Strings(ls)
					key := name
					if len(ls) > 0 {
						key += "{" + strings.Join(ls, ",") + "}"
					}
					out = append(out, fmt.Sprintf("%s | %s | %v/%v | %d %g", svc.Str(), key, typ, temp, ts, v))
				}
				switch m.Type() {
				case pmetric.MetricTypeGauge, pmetric.MetricTypeSum:
					var dps pmetric.NumberDataPointSlice
					typ, temp := ingest.MetricGauge, ingest.TemporalityUnspecified
					if m.Type() == pmetric.MetricTypeGauge {
						dps = m.Gauge().DataPoints()
					} else {
						dps = m.Sum().DataPoints()
						typ, temp = ingest.MetricSum, ingest.Temporality(m.Sum().AggregationTemporality())
						if m.Sum().IsMonotonic() {
							typ = ingest.MetricCounter
						}
					}
					for x := 0; x < dps.Len(); x++ {
						dp := dps.At(x)
						if dp.Flags().NoRecordedValue() {
							continue
						}
						v := dp.DoubleValue()
						if dp.ValueType() == pmetric.NumberDataPointValueTypeInt {
							v = float64(dp.IntValue())
						}
						add(m.Name(), dp.Attributes(), "", "", typ, temp, dp.Timestamp(), v)
					}
				case pmetric.MetricTypeHistogram:
					temp := ingest.Temporality(m.Histogram().AggregationTemporality())
					for x := 0; x < m.Histogram().DataPoints().Len(); x++ {
						dp := m.Histogram().DataPoints().At(x)
						cum := 0.0
						for b := 0; b < dp.BucketCounts().Len(); b++ {
							cum += float64(dp.BucketCounts().At(b))
							le := "+Inf"
							if b < dp.ExplicitBounds().Len() {
								le = strconv.FormatFloat(dp.ExplicitBounds().At(b), 'g', -1, 64)
							}
							add(m.Name()+"_bucket", dp.Attributes(), "le", le, ingest.MetricHistogram, temp, dp.Timestamp(), cum)
						}
						add(m.Name()+"_count", dp.Attributes(), "", "", ingest.MetricHistogram, temp, dp.Timestamp(), float64(dp.Count()))
						add(m.Name()+"_sum", dp.Attributes(), "", "", ingest.MetricHistogram, temp, dp.Timestamp(), dp.Sum())
					}
				case pmetric.MetricTypeExponentialHistogram:
					temp := ingest.Temporality(m.ExponentialHistogram().AggregationTemporality())
					for x := 0; x < m.ExponentialHistogram().DataPoints().Len(); x++ {
						dp := m.ExponentialHistogram().DataPoints().At(x)
						add(m.Name()+"_count", dp.Attributes(), "", "", ingest.MetricHistogram, temp, dp.Timestamp(), float64(dp.Count()))
						add(m.Name()+"_sum", dp.Attributes(), "", "", ingest.MetricHistogram, temp, dp.Timestamp(), dp.Sum())
					}
				case pmetric.MetricTypeSummary:
					for x := 0; x < m.Summary().DataPoints().Len(); x++ {
						dp := m.Summary().DataPoints().At(x)
						for q := 0; q < dp.QuantileValues().Len(); q++ {
							qv := dp.QuantileValues().At(q)
							add(m.Name(), dp.Attributes(), "quantile", strconv.FormatFloat(qv.Quantile(), 'g', -1, 64), ingest.MetricSummary, ingest.TemporalityCumulative, dp.Timestamp(), qv.Value())
						}
						add(m.Name()+"_count", dp.Attributes(), "", "", ingest.MetricSummary, ingest.TemporalityCumulative, dp.Timestamp(), float64(dp.Count()))
						add(m.Name()+"_sum", dp.Attributes(), "", "", ingest.MetricSummary, ingest.TemporalityCumulative, dp.Timestamp(), dp.Sum())
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// decodedSamples renders what the decoder produced in referenceSamples' shape.
func decodedSamples(tr *ingest.Trace) []string {
	var out []string
	for i := range tr.Samples {
		s := &tr.Samples[i]
		se := tr.SeriesOf(s)
		svc := ""
		if se.Resource >= 0 {
			svc, _ = tr.AttrString(tr.Resources[se.Resource].Attrs, "service.name")
		}
		key := tr.Str(se.Name)
		if len(se.Labels) > 0 {
			var ls []string
			for _, a := range se.Labels {
				v := a.Value()
				val := tr.FormatValue(v)
				if v.Kind() == ingest.KindString {
					val = tr.Str(v.Str())
				}
				ls = append(ls, tr.Str(a.Key)+`="`+val+`"`)
			}
			sort.Strings(ls)
			key += "{" + strings.Join(ls, ",") + "}"
		}
		out = append(out, fmt.Sprintf("%s | %s | %v/%v | %d %g", svc, key, se.Type, se.Temporality, s.Time, s.Value))
	}
	slices.Sort(out)
	return out
}

func decodeMetricsFile(t *testing.T, path string) *ingest.Trace {
	t.Helper()
	in, err := ingest.NewInput(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := &MetricsDecoder{}
	if !dec.Sniff(in) {
		t.Fatalf("%s: not sniffed as OTLP metrics", path)
	}
	if (&Decoder{}).Sniff(in) && !strings.Contains(path, "proto") {
		t.Errorf("%s: the trace decoder claims metrics", path)
	}
	tr := ingest.New()
	tr.Sources = []ingest.Source{{Path: path}}
	if err := dec.Decode(context.Background(), in, tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestMetricsAgainstPdata(t *testing.T) {
	md := referenceMetrics()
	want := referenceSamples(md)
	if len(want) < 15 {
		t.Fatalf("reference has only %d samples", len(want))
	}
	js, err := (&pmetric.JSONMarshaler{}).MarshalMetrics(md)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := (&pmetric.ProtoMarshaler{}).MarshalMetrics(md)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(pb)
	zw.Close()
	zenc, _ := zstd.NewWriter(nil)
	zpb := zenc.EncodeAll(pb, nil)
	framed := func(payloads ...[]byte) []byte {
		var b []byte
		for _, p := range payloads {
			b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
			b = append(b, p...)
		}
		return b
	}
	indented := bytes.ReplaceAll(js, []byte(`,"`), []byte(",\n  \""))
	cases := []struct {
		name, format string
		data         []byte
		repeat       int
	}{
		{"metrics.json", "otlp-metrics-json", indented, 1},
		{"metrics.jsonl", "otlp-metrics-json-lines", append(append(append([]byte{}, js...), '\n'), append(js, '\n')...), 2},
		{"metrics.proto.bin", "otlp-metrics-proto", pb, 1},
		{"metrics.proto.gz", "otlp-metrics-proto", gz.Bytes(), 1},
		{"metrics-framed.proto", "otlp-metrics-proto-framed", framed(pb, zpb, js), 3},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			if err := os.WriteFile(path, c.data, 0o644); err != nil {
				t.Fatal(err)
			}
			tr := decodeMetricsFile(t, path)
			// A request repeated (an exporter's retry) repeats every
			// sample: one identical to the previous sample of its series
			// (a series with one point a request) is coalesced into it,
			// with one warning that counts them; the others are kept.
			got := decodedSamples(tr)
			coalesced := 0
			for _, w := range tr.Warnings.List {
				if n, err := fmt.Sscanf(w.Msg, "%d sample(s) repeat the previous sample", &coalesced); w.Code != "duplicate-samples" || n != 1 || err != nil {
					t.Errorf("warning %v", w)
				}
			}
			if c.repeat > 1 && coalesced == 0 {
				t.Errorf("repeated requests, but nothing coalesced")
			}
			if len(got)+coalesced != c.repeat*len(want) || tr.Sources[0].Samples != len(got) {
				t.Errorf("%d samples kept (source says %d) + %d coalesced, want %d in all", len(got), tr.Sources[0].Samples, coalesced, c.repeat*len(want))
			}
			if got := tr.Sources[0].Format; got != c.format {
				t.Errorf("format %q, want %q", got, c.format)
			}
			if !slices.Equal(slices.Compact(got), want) {
				t.Errorf("decoded samples differ from pdata's\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
			}
			if n := len(tr.Resources); n != 2 {
				t.Errorf("%d resources, want 2 (shared across records)", n)
			}
		})
	}
}

func TestMetricsFixture(t *testing.T) {
	tr := decodeMetricsFile(t, "testdata/metrics/prometheusreceiver-vllm-dcgm.jsonl")
	if len(tr.Warnings.List) != 0 {
		t.Fatalf("warnings: %v", tr.Warnings.List)
	}
	got := decodedSamples(tr)
	want := []string{
		`dcgm-exporter | DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{Hostname="gpu-node-7",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",device="nvidia0",gpu="0",modelName="NVIDIA H100 80GB HBM3"} | gauge/unspecified | 1764583201000000000 4`,
		`dcgm-exporter | DCGM_FI_DEV_SM_CLOCK{Hostname="gpu-node-7",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",device="nvidia0",gpu="0",modelName="NVIDIA H100 80GB HBM3"} | gauge/unspecified | 1764583200000000000 1980`,
		`dcgm-exporter | DCGM_FI_DEV_SM_CLOCK{Hostname="gpu-node-7",UUID="GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52",device="nvidia0",gpu="0",modelName="NVIDIA H100 80GB HBM3"} | gauge/unspecified | 1764583201000000000 1410`,
		`vllm | vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} | histogram/cumulative | 1764583200000000000 338`,
		`vllm | vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="meta-llama/Llama-3.1-8B-Instruct"} | histogram/cumulative | 1764583200000000000 5`,
		`vllm | vllm:e2e_request_latency_seconds_bucket{engine="0",le="1",model_name="meta-llama/Llama-3.1-8B-Instruct"} | histogram/cumulative | 1764583200000000000 125`,
		`vllm | vllm:e2e_request_latency_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} | histogram/cumulative | 1764583200000000000 338`,
		`vllm | vllm:e2e_request_latency_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} | histogram/cumulative | 1764583200000000000 512.5`,
		`vllm | vllm:num_preemptions_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} | counter/cumulative | 1764583200000000000 4`,
		`vllm | vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} | gauge/unspecified | 1764583200000000000 12`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("got\n%s", strings.Join(got, "\n"))
	}
}

func TestMetricsSniffLeavesTracesAlone(t *testing.T) {
	for _, path := range []string{"testdata/fixture.golden"} {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Skip(err)
		}
		if sniffMetrics(b) != formNone {
			t.Errorf("%s: sniffed as metrics", path)
		}
	}
	if sniffMetrics([]byte(`{"resourceSpans":[]}`)) != formNone {
		t.Error("trace JSON sniffed as metrics")
	}
	if sniffMetrics([]byte("# TYPE x gauge\nx 1\n")) != formNone {
		t.Error("Prometheus text sniffed as OTLP metrics")
	}
}
