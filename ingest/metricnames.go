package ingest

// Sample metric names shared between the decoders that write them and the
// analyses that read them: one spelling, so that a series a capture carries
// is the series an analysis looks for.
const (
	// MetricNVMLProcessSMUtil is NVML's per-process SM utilization
	// (nvmlDeviceGetProcessUtilization's smUtil), in percent of the device's
	// SMs over the last sample period, one sample per process (Sample.Pid).
	// llmprof record writes it; causal.SMUtilLoad turns it into a tenant's
	// load.
	MetricNVMLProcessSMUtil = "nvml.process.sm_util_pct"
)
