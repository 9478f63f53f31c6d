package compare

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Better is the direction in which a metric improves.
type Better int8

const (
	// LowerIsBetter: latencies and the time per token of a bucket.
	LowerIsBetter Better = -1
	// HigherIsBetter: throughput and goodput.
	HigherIsBetter Better = +1
)

// String is "lower" or "higher", the form the diff JSON writes.
func (b Better) String() string {
	if b == HigherIsBetter {
		return "higher"
	}
	return "lower"
}

// Kind is how a family's metrics are computed.
type Kind uint8

const (
	// KindLatency: one value per request (per token for itl) with the
	// statistics of LatencyStats.
	KindLatency Kind = iota
	// KindRate: one value per run, a count over the run's duration.
	KindRate
	// KindBucket: an attribution bucket's time per output token, one
	// metric per bucket ("token.gpu.gemm").
	KindBucket
)

// Rate metrics: one value per run (requests or tokens per second).
const (
	MetricThroughput      = "throughput"       // completed requests per second
	MetricTokenThroughput = "token_throughput" // output tokens per second
	MetricGoodput         = "goodput"          // completed requests meeting the SLO per second
)

// Family is one row of the metric table: every diff metric belongs to one,
// and the gate parser, Compare and the renderers all read their names,
// units, directions and extractors from here. Adding a metric is one entry
// in Families (plus its tests).
type Family struct {
	// Name is the metric's name ("ttft", "throughput") or, for a bucket
	// family, its prefix including the dot ("token.").
	Name   string
	Kind   Kind
	Unit   string // "ms", "req/s", "tok/s", "ms/token"
	Better Better
	// Doc says in a few words what the metric is (usage messages).
	Doc string

	// Latency families: the per-request series (nil for itl, whose values
	// are per token: Run.ITL).
	series func(r *Run) Series
	// Rate families: the run's count that, over its duration, is the rate;
	// ok is false when the run cannot tell (no token counts).
	count func(r *Run) (v float64, ok bool)
	// Bucket families: the run's per-request series by bucket, the
	// attribution family they come from, and the bucket names accepted in
	// a rule (nil: any name, such as tenants).
	fam     int
	buckets []string
}

// Families is the metric table, in display order.
var Families = []Family{
	{Name: "ttft", Kind: KindLatency, Unit: "ms", Better: LowerIsBetter, Doc: "time to first token",
		series: func(r *Run) Series { return r.TTFT }},
	{Name: "tpot", Kind: KindLatency, Unit: "ms", Better: LowerIsBetter, Doc: "time per output token after the first",
		series: func(r *Run) Series { return r.TPOT }},
	{Name: "itl", Kind: KindLatency, Unit: "ms", Better: LowerIsBetter, Doc: "inter-token latency, one value per token"},
	{Name: "e2e", Kind: KindLatency, Unit: "ms", Better: LowerIsBetter, Doc: "request latency, arrival to last byte",
		series: func(r *Run) Series { return r.E2E }},
	{Name: "queue", Kind: KindLatency, Unit: "ms", Better: LowerIsBetter, Doc: "time queued before the first step",
		series: func(r *Run) Series { return r.Queue }},
	{Name: MetricThroughput, Kind: KindRate, Unit: "req/s", Better: HigherIsBetter, Doc: "completed requests per second",
		count: func(r *Run) (float64, bool) { return float64(r.Completed), true }},
	{Name: MetricTokenThroughput, Kind: KindRate, Unit: "tok/s", Better: HigherIsBetter, Doc: "output tokens per second",
		count: func(r *Run) (float64, bool) {
			if r.Requests == 0 || len(r.OutputTokens) != r.Requests {
				return math.NaN(), false
			}
			var s float64
			for _, v := range r.OutputTokens {
				if !math.IsNaN(v) {
					s += v
				}
			}
			return s, true
		}},
	{Name: MetricGoodput, Kind: KindRate, Unit: "req/s", Better: HigherIsBetter, Doc: "completed requests meeting the SLO per second",
		count: func(r *Run) (float64, bool) { return float64(r.Good), r.SLO != "" }},
	{Name: prefixStage, Kind: KindBucket, Unit: "ms/token", Better: LowerIsBetter, Doc: "a request stage's time per output token",
		fam: famStages, buckets: StageBuckets},
	{Name: prefixToken, Kind: KindBucket, Unit: "ms/token", Better: LowerIsBetter, Doc: "a token bucket's time per output token",
		fam: famTokens, buckets: TokenBuckets},
	{Name: prefixTenant, Kind: KindBucket, Unit: "ms/token", Better: LowerIsBetter, Doc: "time per output token attributed to another tenant",
		fam: famTenants},
}

// Latency statistics, in display order. pNN is the change of that quantile
// (a bootstrap interval); StatShift is the Hodges–Lehmann shift of the whole
// distribution (Mann–Whitney U, Moses interval), its own metric so that the
// change of "p50" is always the change of the two medians shown.
const (
	StatShift = "shift"
	StatMean  = "mean"
)

// LatencyStats are the statistics every latency family has ("ttft.p99",
// "itl.mean", "tpot.shift").
var LatencyStats = []string{"p50", "p90", "p99", StatMean, StatShift}

var statQ = map[string]float64{"p50": 0.5, "p90": 0.9, "p99": 0.99}

// LatencyMetrics are the latency families' names, in display order.
var LatencyMetrics = familyNames(KindLatency)

func familyNames(k Kind) []string {
	var out []string
	for _, f := range Families {
		if f.Kind == k {
			out = append(out, f.Name)
		}
	}
	return out
}

// MetricName is a parsed metric name: its family and, by kind, the
// statistic ("p99") or the bucket ("gpu.gemm").
type MetricName struct {
	Family *Family
	Stat   string
	Bucket string
}

// LookupMetric parses a metric name against the table: a latency with a
// statistic ("ttft.p99", "tpot.shift"), a rate ("throughput"), or a bucket
// ("stage.prefill", "token.gpu.attention", "tenant.NAME").
func LookupMetric(name string) (MetricName, error) {
	if m, ok, err := lookupKernelMetric(name); ok {
		return m, err
	}
	if m, ok, err := lookupStepMetric(name); ok {
		return m, err
	}
	if m, ok, err := lookupAdjustedMetric(name); ok {
		return m, err
	}
	for i := range Families {
		f := &Families[i]
		switch f.Kind {
		case KindRate:
			if name == f.Name {
				return MetricName{Family: f}, nil
			}
		case KindLatency:
			l, s, ok := strings.Cut(name, ".")
			if !ok || l != f.Name {
				continue
			}
			if !slices.Contains(LatencyStats, s) {
				return MetricName{}, fmt.Errorf("unknown statistic %q for %s (want one of %s)", s, l, strings.Join(LatencyStats, ", "))
			}
			return MetricName{Family: f, Stat: s}, nil
		case KindBucket:
			b, ok := strings.CutPrefix(name, f.Name)
			if !ok {
				continue
			}
			if b == "" {
				return MetricName{}, fmt.Errorf("unknown metric %q: %s needs a bucket name", name, f.Name)
			}
			if f.buckets != nil && !slices.Contains(f.buckets, b) {
				return MetricName{}, fmt.Errorf("unknown %s bucket %q (want one of %s)", strings.TrimSuffix(f.Name, "."), b, strings.Join(f.buckets, ", "))
			}
			return MetricName{Family: f, Bucket: b}, nil
		}
	}
	var lat, rates, buckets []string
	for _, f := range Families {
		switch f.Kind {
		case KindLatency:
			lat = append(lat, f.Name)
		case KindRate:
			rates = append(rates, f.Name)
		case KindBucket:
			buckets = append(buckets, f.Name+"BUCKET")
		}
	}
	return MetricName{}, fmt.Errorf("unknown metric %q (want LATENCY.STAT with LATENCY in %s and STAT in %s; %s; %s)",
		name, strings.Join(lat, ", "), strings.Join(LatencyStats, ", "), strings.Join(rates, ", "), strings.Join(buckets, ", "))
}

// ValidMetric checks a metric name against the table (LookupMetric).
func ValidMetric(name string) error {
	_, err := LookupMetric(name)
	return err
}

// family returns the family of a metric name that is known to be valid.
func family(name string) *Family {
	m, err := LookupMetric(name)
	if err != nil {
		return nil
	}
	return m.Family
}

// metricUnit is the unit a metric's values are in.
func metricUnit(name string) string {
	if f := family(name); f != nil {
		return f.Unit
	}
	return "ms"
}

// MetricBetter is the direction in which a metric improves.
func MetricBetter(name string) Better {
	if f := family(name); f != nil {
		return f.Better
	}
	return LowerIsBetter
}

// latencyFamily returns the latency family named name.
func latencyFamily(name string) *Family {
	for i := range Families {
		if Families[i].Kind == KindLatency && Families[i].Name == name {
			return &Families[i]
		}
	}
	return nil
}
