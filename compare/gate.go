package compare

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Prefixes of the per-token attribution metrics: "stage.prefill",
// "token.gpu.attention", "tenant.B", each the bucket's milliseconds per output
// token.
const (
	prefixStage  = "stage."
	prefixToken  = "token."
	prefixTenant = "tenant."
)

// Op is a gate's comparison: the change must stay below (<) or above (>)
// the threshold.
type Op byte

const (
	Below Op = '<' // higher is worse (latency): fail when the change is confidently above
	Above Op = '>' // lower is worse (throughput): fail when the change is confidently below
)

// Gate is one rule of the policy, such as "ttft.p99 < +10%": the change of
// the metric from baseline to candidate must stay below (or above) the
// threshold.
type Gate struct {
	Metric string `json:"metric"`
	Op     Op     `json:"-"`
	// Threshold is a percentage (10 means +10%) when Relative, else an
	// absolute change in the metric's unit (ms, ms/token, req/s, tok/s).
	Threshold float64 `json:"threshold"`
	Relative  bool    `json:"relative"`
}

// String writes the gate in the syntax ParseGate reads: "ttft.p99 < +10%",
// "tpot.p50 < +2ms".
func (g Gate) String() string {
	unit := "%"
	if !g.Relative {
		unit = metricUnit(g.Metric)
		if unit == "ms/token" {
			unit = "ms"
		}
	}
	num := strconv.FormatFloat(g.Threshold, 'f', -1, 64)
	if g.Threshold >= 0 {
		num = "+" + num
	}
	return fmt.Sprintf("%s %c %s%s", g.Metric, g.Op, num, unit)
}

// gateRE is metric, operator, signed number, unit.
var gateRE = regexp.MustCompile(`^\s*([^\s<>]+)\s*([<>])\s*([+-]?(?:\d+\.?\d*|\.\d+))\s*([^\s\d.+-][^\s]*)?\s*$`)

// timeUnits converts a latency threshold's unit to milliseconds.
var timeUnits = map[string]float64{"ms": 1, "s": 1e3, "us": 1e-3, "µs": 1e-3, "ns": 1e-6}

// ParseGate reads one gate rule: a metric name, < or >, and a signed
// threshold with a unit. Relative thresholds end in % ("ttft.p99<+10%",
// "throughput>-5%"); absolute ones name a unit that fits the metric: a time
// (ms, s, us, ns) for latencies and per-token buckets ("tpot.p50<+2ms"),
// req/s or tok/s for rates ("throughput>-3req/s").
func ParseGate(s string) (Gate, error) {
	m := gateRE.FindStringSubmatch(s)
	if m == nil {
		return Gate{}, fmt.Errorf("gate %q: want METRIC<THRESHOLD or METRIC>THRESHOLD, such as 'ttft.p99<+10%%' or 'tpot.p50<+2ms'", s)
	}
	g := Gate{Metric: m[1], Op: Op(m[2][0])}
	if err := ValidMetric(g.Metric); err != nil {
		return Gate{}, fmt.Errorf("gate %q: %w", s, err)
	}
	v, err := strconv.ParseFloat(m[3], 64)
	if err != nil {
		return Gate{}, fmt.Errorf("gate %q: threshold %q is not a number", s, m[3])
	}
	unit := m[4]
	switch {
	case unit == "%":
		g.Relative, g.Threshold = true, v
	case unit == "":
		return Gate{}, fmt.Errorf("gate %q: the threshold needs a unit: %% for a relative change, or %s", s, absoluteUnitHint(g.Metric))
	default:
		f, ok := absoluteUnitScale(g.Metric, unit)
		if !ok {
			return Gate{}, fmt.Errorf("gate %q: unit %q does not fit %s; use %% or %s", s, unit, g.Metric, absoluteUnitHint(g.Metric))
		}
		g.Threshold = v * f
	}
	return g, nil
}

func absoluteUnitScale(metric, unit string) (float64, bool) {
	switch metricUnit(metric) {
	case "ms", "ms/token":
		f, ok := timeUnits[strings.TrimSuffix(unit, "/token")]
		return f, ok
	case "req/s":
		return 1, unit == "req/s" || unit == "/s"
	case "tok/s":
		return 1, unit == "tok/s" || unit == "/s"
	}
	return 0, false
}

func absoluteUnitHint(metric string) string {
	switch metricUnit(metric) {
	case "req/s":
		return "req/s"
	case "tok/s":
		return "tok/s"
	case "%":
		return "nothing else (a kernel rule is a relative change)"
	}
	return "a time (ms, s, us, ns)"
}

// Policy is what the gate enforces: its rules and whether an inconclusive
// rule fails the gate.
type Policy struct {
	Gates []Gate
	// FailOnInconclusive makes an inconclusive rule fail the gate (exit 3)
	// instead of passing it with a warning.
	FailOnInconclusive bool
	// AllowMissing makes a gated metric without data on a side
	// inconclusive; by default it fails the gate, which never passes what
	// it could not judge.
	AllowMissing bool
}

// PolicyFile is the YAML form of a policy (--gate-file):
//
//	# gate.yaml
//	gates:
//	  - ttft.p99 < +10%
//	  - tpot.p50 < +2ms
//	  - throughput > -5%
//	fail_on_inconclusive: true   # optional, default false
//	alpha: 0.05                  # optional
//	block: auto                  # optional: off, auto or a block length
//
// Unknown keys are an error, so a misspelt option cannot silently do nothing.
type PolicyFile struct {
	Gates              []string `yaml:"gates"`
	FailOnInconclusive *bool    `yaml:"fail_on_inconclusive"`
	Alpha              *float64 `yaml:"alpha"`
	Block              *string  `yaml:"block"`
}

// ParsePolicyFile reads a YAML policy. name is used in error messages.
func ParsePolicyFile(name string, b []byte) (PolicyFile, []Gate, error) {
	var pf PolicyFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&pf); err != nil {
		if errors.Is(err, io.EOF) {
			return pf, nil, fmt.Errorf("%s: empty gate file", name)
		}
		return pf, nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(pf.Gates) == 0 {
		return pf, nil, fmt.Errorf("%s: no gates (want a 'gates:' list such as '- ttft.p99 < +10%%')", name)
	}
	gates := make([]Gate, 0, len(pf.Gates))
	for _, s := range pf.Gates {
		g, err := ParseGate(s)
		if err != nil {
			return pf, nil, fmt.Errorf("%s: %w", name, err)
		}
		gates = append(gates, g)
	}
	if pf.Alpha != nil && !(*pf.Alpha > 0 && *pf.Alpha < 0.5) {
		return pf, nil, fmt.Errorf("%s: alpha %v is not in (0, 0.5)", name, *pf.Alpha)
	}
	if pf.Block != nil {
		if _, err := ParseBlock(*pf.Block); err != nil {
			return pf, nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return pf, gates, nil
}

// ParseBlock reads a block-bootstrap setting: "detect" (the default, or
// "") blocks only autocorrelated requests, "off" (or 0) resamples requests
// independently, "auto" uses blocks of ⌈n^⅓⌉ consecutive requests, a
// positive integer is the block length.
func ParseBlock(s string) (int, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "detect", "":
		return BlockDetect, nil
	case "off", "0", "none":
		return 0, nil
	case "auto":
		return BlockAuto, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("block %q: want detect, off, auto or a positive block length", s)
	}
	return n, nil
}
