package ingest

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"unsafe"
)

// Metric inputs are the easiest to inflate: a 1.9 MB gzip of "m 1" lines
// is 500 M samples, and each kept sample costs 40 bytes. The budget below
// bounds what one input, and all the inputs of one Open, may decode, so that
// such a file ends in an error naming it instead of exhausting memory.

// Defaults of MetricLimits. A day of vLLM scrapes every 5 s (some 300 series
// a scrape, histogram buckets included) is 5 M samples, 200 MB.
const (
	// DefaultMaxMetricSamples bounds the samples decoded from one input,
	// those coalesced included: the work, not only the memory.
	DefaultMaxMetricSamples = 100_000_000
	// DefaultMaxCoalescedSamples bounds the samples of one input coalesced
	// into the previous one of their series: an exporter's retry repeats a
	// batch, not ten million samples; a file of one line repeated does.
	DefaultMaxCoalescedSamples = 10_000_000
	// DefaultMaxMetricSeries bounds the series of one input.
	DefaultMaxMetricSeries = 1_000_000
	// DefaultMaxMetricBytes bounds the memory the kept samples and series
	// of one input take (as estimated by MetricSink).
	DefaultMaxMetricBytes = 256 << 20
	// DefaultMaxTotalMetricBytes bounds it over all inputs of one Open.
	DefaultMaxTotalMetricBytes = 512 << 20
)

// MetricLimits bound the metric samples and series decoded; zero fields
// mean the defaults above.
type MetricLimits struct {
	MaxSamples    int64 `json:"max_samples"`
	MaxCoalesced  int64 `json:"max_coalesced"`
	MaxSeries     int64 `json:"max_series"`
	MaxBytes      int64 `json:"max_bytes"`
	MaxTotalBytes int64 `json:"max_total_bytes"`
}

func (l MetricLimits) withDefaults() MetricLimits {
	if l.MaxSamples <= 0 {
		l.MaxSamples = DefaultMaxMetricSamples
	}
	if l.MaxCoalesced <= 0 {
		l.MaxCoalesced = DefaultMaxCoalescedSamples
	}
	if l.MaxSeries <= 0 {
		l.MaxSeries = DefaultMaxMetricSeries
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxMetricBytes
	}
	if l.MaxTotalBytes <= 0 {
		l.MaxTotalBytes = DefaultMaxTotalMetricBytes
	}
	return l
}

// ErrMetricBudget is wrapped by the error of an input past its metric
// budget.
var ErrMetricBudget = errors.New("metric budget exceeded")

// MetricBudget is the budget of one input: its limits and the total of the
// Open call it belongs to. Decoders get it from Input.MetricBudget.
type MetricBudget struct {
	Limits MetricLimits
	// total is shared by every input of one Open; nil counts this input
	// alone against MaxTotalBytes.
	total *atomic.Int64
}

// MetricBudget returns the budget the input's metric samples are decoded
// under: OpenOptions.Metrics, with a total shared by every input of the
// Open call.
func (in *Input) MetricBudget() MetricBudget {
	return MetricBudget{Limits: in.metricLimits, total: in.metricTotal}
}

// MetricSink appends the decoded samples of one input to a trace. It interns
// their series, coalesces a sample identical to the previous one of its
// series (same time and value: a batch exported twice, a line repeated) into
// it, and keeps the input within its budget: past it, Add returns an error
// wrapping ErrMetricBudget, and so does every later call.
type MetricSink struct {
	t      *Trace
	series *SeriesTable
	lim    MetricLimits
	total  *atomic.Int64
	// last is the last kept sample of each series, by SeriesID-1.
	last []lastSample

	decoded, kept, series0, bytes int64
	// Coalesced counts the samples folded into the previous one.
	Coalesced int64
	err       error
}

type lastSample struct {
	time  int64
	value float64
	set   bool
}

// Estimated costs: a sample in Trace.Samples; a series in Trace.Series, its
// labels, their copy in the table's key and the key's map entry.
const (
	sampleBytes     = int64(unsafe.Sizeof(Sample{}))
	seriesBytes     = int64(unsafe.Sizeof(Series{})) + int64(unsafe.Sizeof(lastSample{})) + 96
	seriesLabelCost = int64(unsafe.Sizeof(Attr{})) + 24
)

// NewMetricSink returns a sink that adds samples to t under budget b.
func NewMetricSink(t *Trace, b MetricBudget) *MetricSink {
	total := b.total
	if total == nil {
		total = new(atomic.Int64)
	}
	return &MetricSink{t: t, series: NewSeriesTable(t), lim: b.Limits.withDefaults(), total: total, series0: int64(len(t.Series))}
}

// Add appends the sample s of series se (s.Series is set here), unless it
// repeats the series' previous sample. It reports whether the sample was
// kept, and the budget error once the input is past it.
func (k *MetricSink) Add(se Series, s Sample) (bool, error) {
	if k.err != nil {
		return false, k.err
	}
	if k.decoded++; k.decoded > k.lim.MaxSamples {
		return false, k.fail("more than %d samples decoded (%d kept, %d coalesced)", k.lim.MaxSamples, k.kept, k.Coalesced)
	}
	n := len(k.t.Series)
	id := k.series.ID(se)
	if len(k.t.Series) > n {
		if int64(len(k.t.Series))-k.series0 > k.lim.MaxSeries {
			return false, k.fail("more than %d series", k.lim.MaxSeries)
		}
		if err := k.charge(seriesBytes + int64(len(se.Labels))*seriesLabelCost); err != nil {
			return false, err
		}
	}
	if int(id) > len(k.last) {
		k.last = append(k.last, make([]lastSample, len(k.t.Series)-len(k.last))...)
	}
	l := &k.last[id-1]
	if l.set && l.time == s.Time && l.value == s.Value {
		if k.Coalesced++; k.Coalesced > k.lim.MaxCoalesced {
			return false, k.fail("more than %d samples repeat the previous sample of their series (same time, same value; %d kept)", k.lim.MaxCoalesced, k.kept)
		}
		return false, nil
	}
	if err := k.charge(sampleBytes); err != nil {
		return false, err
	}
	*l = lastSample{s.Time, s.Value, true}
	s.Series = id
	if len(k.t.Samples) == cap(k.t.Samples) {
		k.grow()
	}
	k.t.Samples = append(k.t.Samples, s)
	k.kept++
	return true, nil
}

// grow makes room in Trace.Samples: twice as much, but never more than the
// budget lets this input keep. append's own growth (a quarter at a time for
// a large slice) leaves a dozen dead copies for the collector, and the
// process's peak memory is several times what the samples take.
func (k *MetricSink) grow() {
	n := len(k.t.Samples)
	room := min(k.lim.MaxBytes-k.bytes, k.lim.MaxTotalBytes-k.total.Load()) / sampleBytes
	size := max(min(2*n, n+int(max(room, 0))), n+1, 1024)
	grown := make([]Sample, n, size)
	copy(grown, k.t.Samples)
	k.t.Samples = grown
	if int64(n)*sampleBytes >= freeAfterGrow {
		// The copy just left behind stays resident until the runtime's
		// background scavenger returns it, so that the process would
		// peak at several times what the samples take. Samples hold no
		// pointers: collecting them costs little, and this happens a
		// few times per input at most.
		debug.FreeOSMemory()
	}
}

// freeAfterGrow is the size of a dead copy of the samples worth returning
// to the operating system at once.
const freeAfterGrow = 32 << 20

// Err is the budget error, once there is one.
func (k *MetricSink) Err() error { return k.err }

func (k *MetricSink) charge(n int64) error {
	k.bytes += n
	if k.bytes > k.lim.MaxBytes {
		return k.fail("more than %s of samples and series (%d samples, %d series)", budgetBytes(k.lim.MaxBytes), k.kept, int64(len(k.t.Series))-k.series0)
	}
	if t := k.total.Add(n); t > k.lim.MaxTotalBytes {
		return k.fail("the inputs together hold more than %s of metric samples and series (this one %d samples, %d series)", budgetBytes(k.lim.MaxTotalBytes), k.kept, int64(len(k.t.Series))-k.series0)
	}
	return nil
}

func budgetBytes(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

func (k *MetricSink) fail(format string, args ...any) error {
	k.err = fmt.Errorf("%w: %s; a decompression bomb, or more metrics than llmprof holds by default (llmprof analyze --metric-memory MiB, or ingest.OpenOptions.Metrics, raises it)", ErrMetricBudget, fmt.Sprintf(format, args...))
	return k.err
}

// WarnCoalesced records, once, how many samples were coalesced.
func (k *MetricSink) WarnCoalesced(src SourceID) {
	if k.Coalesced > 0 {
		k.t.Warnf(src, "", "duplicate-samples", "%d sample(s) repeat the previous sample of their series (same time, same value); coalesced into it", k.Coalesced)
	}
}
