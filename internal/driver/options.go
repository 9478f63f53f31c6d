package driver

import (
	"strconv"
	"strings"
	"time"

	"github.com/llmprof/llmprof/attribution"
	"github.com/llmprof/llmprof/causal"
	"github.com/llmprof/llmprof/ingest"
)

// AnalyzeFlags are `llmprof analyze`'s pipeline settings as its flags give
// them (cmd/llmprof/analyze.go binds them here).
type AnalyzeFlags struct {
	TenantKey string
	// SLO is "ttft=200ms,tpot=50ms,e2e=10s" (ParseSLO).
	SLO   string
	Stall time.Duration
	Top   int
	// MetricMemory bounds the metric samples and series kept, in MiB, of
	// each input and of all (0: ingest.MetricLimits' defaults).
	MetricMemory int64
	// Dataset is analyze --parquet DIR: the argument is a run_id of that
	// dataset (Options.Dataset).
	Dataset string
}

// Options checks the flags and returns the pipeline's options; a mistake is
// an *OptionError.
func (f AnalyzeFlags) Options() (Options, error) {
	if f.MetricMemory < 0 {
		return Options{}, optionErrorf("--metric-memory must be a positive number of MiB, not %d", f.MetricMemory)
	}
	if f.Top < 0 {
		return Options{}, optionErrorf("--top must be a positive number of kernels, not %d", f.Top)
	}
	slo, err := ParseSLO(f.SLO)
	if err != nil {
		return Options{}, err
	}
	metrics := ingest.MetricLimits{MaxBytes: f.MetricMemory << 20, MaxTotalBytes: f.MetricMemory << 20}
	return Options{TenantKey: f.TenantKey, SLO: slo, Stall: f.Stall, TopKernels: f.Top, Metrics: metrics, Dataset: f.Dataset}, nil
}

// ParseSLO reads --slo "ttft=200ms,tpot=50ms,e2e=10s"; a mistake is an
// *OptionError.
func ParseSLO(s string) (attribution.SLO, error) {
	var slo attribution.SLO
	if strings.TrimSpace(s) == "" {
		return slo, nil
	}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return slo, optionErrorf("--slo: %q is not metric=duration (e.g. ttft=200ms)", part)
		}
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d <= 0 {
			return slo, optionErrorf("--slo: %q is not a positive duration such as 200ms", v)
		}
		switch strings.ToLower(strings.TrimSpace(k)) {
		case "ttft":
			slo.TTFT = d
		case "tpot":
			slo.TPOT = d
		case "e2e":
			slo.E2E = d
		default:
			return slo, optionErrorf("--slo: unknown metric %q (want ttft, tpot or e2e)", k)
		}
	}
	return slo, nil
}

// TenantFlags are `llmprof tenants`' regression settings as its flags give
// them (cmd/llmprof/tenants.go binds them here).
type TenantFlags struct {
	// Pids are --tenant-pid PID=TENANT values.
	Pids []string
	Bin  time.Duration
	Load string
	// Metrics is the comma-separated --metric list.
	Metrics string
	NoLag   bool
}

// Options checks the flags and returns the regression's options; a mistake
// is an *OptionError.
func (f TenantFlags) Options() (TenantOptions, error) {
	if f.Bin <= 0 {
		return TenantOptions{}, optionErrorf("--bin must be positive")
	}
	to := TenantOptions{Bin: f.Bin, Load: f.Load, NoLag: f.NoLag, Pids: map[uint32]string{}}
	for _, m := range strings.Split(f.Metrics, ",") {
		metric, err := causal.ParseMetric(strings.TrimSpace(m))
		if err != nil {
			return to, optionErrorf("--metric: %v", err)
		}
		to.Metrics = append(to.Metrics, metric)
	}
	for _, p := range f.Pids {
		pid, tenant, ok := strings.Cut(p, "=")
		n, err := strconv.ParseUint(strings.TrimSpace(pid), 10, 32)
		if !ok || err != nil || strings.TrimSpace(tenant) == "" {
			return to, optionErrorf("--tenant-pid %q: want PID=TENANT, e.g. 4100=search", p)
		}
		to.Pids[uint32(n)] = strings.TrimSpace(tenant)
	}
	return to, nil
}
