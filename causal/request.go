package causal

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// Request is one request of one tenant, as the regression needs it. The
// attribution stage fills these from spans; tests and synth build them
// directly. Times are ns on the reference clock. A zero count or duration
// means "unknown".
//
// A Request holds no pointer (TestRequestHoldsNoPointers), so that
// FromAttribution's table of them, one per request, can live in a spill
// file (internal/spill) and the collector need not scan it. Its tenant is
// a Tenant, a number; the request's ID, which nothing here reads, is
// attribution's (attribution.Result.ID of the request at the same index).
//
// Its fields are ordered so that it is 64 bytes with no padding
// (TestRequestIsOneCacheLine): with the 4-byte tenant first and the two
// 2-byte placements after it, where they came last, it was 72, and each
// request took two cache lines of the table the regression reads target
// by target (collectRows) in passes that miss the cache.
type Request struct {
	Tenant Tenant
	// Device is the CUDA device ordinal and Instance the MIG GPU instance the
	// request was served on; -1 when unknown (or, for Instance, no MIG).
	Device, Instance int16
	// Arrival and End bound the request's life: arrival to last byte.
	Arrival, End int64
	// TTFT is first token − arrival; TPOT is (last token − first token) /
	// (output tokens − 1), both in ns as vllm bench serve defines them.
	TTFT, TPOT int64
	// BatchSize is the mean size of the engine batches the request ran in.
	BatchSize float64
	// InputTokens and OutputTokens are the prompt and completion lengths.
	InputTokens, OutputTokens int
}

// Tenant is a tenant's name as a number: its index in the names TenantOf
// has been asked for in this process, which String gives back. The zero
// Tenant is "", a request without a tenant. The names are few (one per
// tenant, not per request) and kept for the life of the process.
type Tenant uint32

// tenantNames is TenantOf's table: names holds the names by Tenant, and is
// only ever appended to, under mu, so that String reads it without a lock.
var tenantNames struct {
	mu    sync.Mutex
	index map[string]Tenant
	names atomic.Pointer[[]string]
}

// TenantOf returns the Tenant of the name; "" is the zero Tenant.
func TenantOf(name string) Tenant {
	if name == "" {
		return 0
	}
	tn := &tenantNames
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if t, ok := tn.index[name]; ok {
		return t
	}
	var names []string
	if p := tn.names.Load(); p != nil {
		names = *p
	} else {
		names = []string{""}
		tn.index = map[string]Tenant{}
	}
	if uint64(len(names)) > math.MaxUint32 {
		panic("causal: 2³² tenant names")
	}
	t := Tenant(len(names))
	// An append within the capacity writes past every reader's length;
	// the elements a reader sees never change.
	names = append(names, name)
	tn.names.Store(&names)
	tn.index[name] = t
	return t
}

// String returns the tenant's name.
func (t Tenant) String() string {
	if t == 0 {
		return ""
	}
	return (*tenantNames.names.Load())[t]
}

// Metric is the latency the regression explains.
type Metric uint8

// The metrics. Each has its own exposure window (Window): what a tenant
// experiences during prefill differs from what it experiences while decoding.
const (
	// MetricTTFT: time to first token, exposed over [arrival, first token].
	MetricTTFT Metric = iota
	// MetricTPOT: time per output token, exposed over the decode phase
	// [first token, end].
	MetricTPOT
	// MetricE2E: arrival to last byte, exposed over the whole life.
	MetricE2E
)

var metricNames = [...]string{"ttft", "tpot", "e2e"}

func (m Metric) String() string {
	if int(m) < len(metricNames) {
		return metricNames[m]
	}
	return fmt.Sprintf("metric(%d)", int(m))
}

// ParseMetric reads a metric name as String writes it.
func ParseMetric(s string) (Metric, error) {
	for i, n := range metricNames {
		if n == s {
			return Metric(i), nil
		}
	}
	return 0, fmt.Errorf("unknown metric %q (want ttft, tpot or e2e)", s)
}

// MarshalText writes the metric's name, so JSON shows "tpot", not 1.
func (m Metric) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// UnmarshalText reads a metric's name.
func (m *Metric) UnmarshalText(b []byte) error {
	v, err := ParseMetric(string(b))
	*m = v
	return err
}

// Latency returns the request's value of metric m in ns; ok is false when it
// is unknown or not defined (TPOT needs at least two output tokens).
func (r *Request) Latency(m Metric) (ns int64, ok bool) {
	switch m {
	case MetricTTFT:
		return r.TTFT, r.TTFT > 0
	case MetricTPOT:
		return r.TPOT, r.TPOT > 0 && r.OutputTokens >= 2
	case MetricE2E:
		d := r.End - r.Arrival
		return d, d > 0
	}
	return 0, false
}

// Window returns the interval over which the request is exposed to other
// tenants' load for metric m: the phase whose duration the metric measures.
// ok is false when the phase cannot be placed in time.
func (r *Request) Window(m Metric) (start, end int64, ok bool) {
	switch m {
	case MetricTTFT:
		if r.TTFT <= 0 {
			return 0, 0, false
		}
		return r.Arrival, r.Arrival + r.TTFT, true
	case MetricTPOT:
		if r.TTFT <= 0 || r.End <= r.Arrival+r.TTFT {
			return 0, 0, false
		}
		return r.Arrival + r.TTFT, r.End, true
	case MetricE2E:
		if r.End <= r.Arrival {
			return 0, 0, false
		}
		return r.Arrival, r.End, true
	}
	return 0, 0, false
}

// Control is a covariate of the target tenant's own that every regression
// holds fixed, so that B's own traffic is not mistaken for A's interference.
type Control uint8

// The controls. B.2 of the statistics reference lists them; own load is
// deliberately absent: B's busy time responds to B's slowdown (a
// post-treatment variable), whereas batch size and lengths are set by B's
// arrivals.
const (
	// ControlBatchSize: the request's mean batch size.
	ControlBatchSize Control = iota
	// ControlInputLength: log of the prompt length.
	ControlInputLength
	// ControlOutputLength: log of the completion length.
	ControlOutputLength
)

var controlNames = [...]string{"batch_size", "log_input_tokens", "log_output_tokens"}

func (c Control) String() string {
	if int(c) < len(controlNames) {
		return controlNames[c]
	}
	return fmt.Sprintf("control(%d)", int(c))
}

// MarshalText writes the control's name.
func (c Control) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads a control's name.
func (c *Control) UnmarshalText(b []byte) error {
	for i, n := range controlNames {
		if n == string(b) {
			*c = Control(i)
			return nil
		}
	}
	return fmt.Errorf("unknown control %q", b)
}

// AllControls is the default set of controls.
var AllControls = []Control{ControlBatchSize, ControlInputLength, ControlOutputLength}

// value returns the request's value of control c, the lengths' through
// logOf (logCount, or collectRows' memo of it); ok is false when unknown.
func (c Control) value(r *Request, logOf func(int) float64) (float64, bool) {
	switch c {
	case ControlBatchSize:
		return r.BatchSize, r.BatchSize > 0 && !math.IsInf(r.BatchSize, 0)
	case ControlInputLength:
		return logOf(r.InputTokens), r.InputTokens > 0
	case ControlOutputLength:
		return logOf(r.OutputTokens), r.OutputTokens > 0
	}
	return 0, false
}

// logCount is a token count's logarithm, as the length controls take it.
func logCount(n int) float64 { return math.Log(float64(n)) }

// known is value's ok, without computing the value (a logarithm for the
// lengths).
func (c Control) known(r *Request) bool {
	_, ok := c.value(r, func(int) float64 { return 0 })
	return ok
}

// tenantSlots numbers the tenants of a walk of requests (0, 1, … as they
// are first met): the numbers of the first Tenants in an array, TenantOf
// numbering names densely from 1, the rest in a map. Consecutive requests
// change tenant often (their arrivals interleave), and the array is read
// where a map was hashed each time.
type tenantSlots struct {
	small [256]int32 // the slot + 1; 0 for none yet
	big   map[Tenant]int32
}

// get returns t's slot, or ok false when it has none.
func (s *tenantSlots) get(t Tenant) (slot int32, ok bool) {
	if int(t) < len(s.small) {
		v := s.small[t]
		return v - 1, v != 0
	}
	slot, ok = s.big[t]
	return slot, ok
}

// set gives t the slot.
func (s *tenantSlots) set(t Tenant, slot int32) {
	if int(t) < len(s.small) {
		s.small[t] = slot + 1
		return
	}
	if s.big == nil {
		s.big = map[Tenant]int32{}
	}
	s.big[t] = slot
}
