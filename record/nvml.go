package record

import (
	"context"
	"errors"
	"time"
)

// ErrNVMLUnavailable is wrapped by every reason NVML telemetry cannot be
// captured: not Linux, no driver, no library, no permission, no GPU.
var ErrNVMLUnavailable = errors.New("NVML unavailable")

// NVMLOptions configure GPU telemetry. Zero durations take the defaults.
type NVMLOptions struct {
	// Disable skips NVML entirely (the manifest says so).
	Disable bool `json:"disable,omitempty"`
	// Require makes an unavailable NVML an error instead of a note.
	Require bool `json:"require,omitempty"`
	// LibraryPath loads libnvidia-ml from this path instead of the default
	// libnvidia-ml.so.1.
	LibraryPath string `json:"library_path,omitempty"`
	// DeviceInterval is the device-level poll (utilization, memory, clocks,
	// power, energy, temperature, PCIe and NVLink counters). Default 100 ms.
	DeviceInterval time.Duration `json:"device_interval"`
	// DrainInterval drains the driver's sample ring buffers and polls
	// per-process utilization and running processes. Default 1 s.
	DrainInterval time.Duration `json:"drain_interval"`
	// GPMInterval is the GPM sampling period on Hopper and newer; NVML asks
	// for more than 100 ms between GPM samples. Default 200 ms.
	GPMInterval time.Duration `json:"gpm_interval"`
}

// Default sampling periods (docs/record.md, "NVML sampling").
const (
	DefaultDeviceInterval = 100 * time.Millisecond
	DefaultDrainInterval  = time.Second
	DefaultGPMInterval    = 200 * time.Millisecond
	minGPMInterval        = 100 * time.Millisecond
)

func (o NVMLOptions) withDefaults() NVMLOptions {
	if o.DeviceInterval <= 0 {
		o.DeviceInterval = DefaultDeviceInterval
	}
	if o.DrainInterval <= 0 {
		o.DrainInterval = DefaultDrainInterval
	}
	if o.GPMInterval <= 0 {
		o.GPMInterval = DefaultGPMInterval
	}
	o.GPMInterval = max(o.GPMInterval, minGPMInterval)
	return o
}

// samplerSinks are where a GPU sampler puts what it reads. Row sinks never
// block (they drop and count when the writer is behind); event is called
// rarely (first failures).
type samplerSinks struct {
	device   func(DeviceSample)
	buffered func(BufferedSample)
	process  func(ProcessSample)
	gpm      func(GPMSample)
	event    func(kind, detail string, code *int64)
	// overrun counts ticks skipped because a poll took longer than its
	// interval.
	overrun func(n int64)
	// descendants returns the pids of the recorded child and its
	// descendants, read once per drain.
	descendants func() map[uint32]bool
}

// gpuSampler is an opened NVML source.
type gpuSampler interface {
	// Info describes the driver and the GPUs found.
	Info() (NVMLInfo, []GPUInfo)
	// Run samples until ctx ends, then drains the ring buffers once more
	// and returns.
	Run(ctx context.Context, sinks samplerSinks)
	// Close releases GPM samples and shuts NVML down.
	Close()
}

// metricDef names an NVML code (a GPM metric id, a sampling type) for the
// capture reader; scale converts NVML's unit to the one the name says.
type metricDef[K comparable] struct {
	code  K
	name  string
	scale float64
}

// GPM metrics sampled on Hopper and newer: nvmlGpmMetricId_t values and the
// metric names the capture reader gives them. Definitions and units are
// NVML's (nvml.h, nvmlGpmMetricId_t): utilizations in percent, PCIe and
// NVLink rates in MiB/s, converted to bytes/s by the reader.
var gpmMetrics = []metricDef[uint16]{
	{1, "gpm.graphics_util_pct", 1},
	{2, "gpm.sm_util_pct", 1},
	{3, "gpm.sm_occupancy_pct", 1},
	{4, "gpm.integer_util_pct", 1},
	{5, "gpm.any_tensor_util_pct", 1},
	{6, "gpm.dfma_tensor_util_pct", 1},
	{7, "gpm.hmma_tensor_util_pct", 1},
	{9, "gpm.imma_tensor_util_pct", 1},
	{10, "gpm.dram_bw_util_pct", 1},
	{11, "gpm.fp64_util_pct", 1},
	{12, "gpm.fp32_util_pct", 1},
	{13, "gpm.fp16_util_pct", 1},
	{20, "gpm.pcie_tx_bytes_per_s", 1 << 20},
	{21, "gpm.pcie_rx_bytes_per_s", 1 << 20},
	{60, "gpm.nvlink_rx_bytes_per_s", 1 << 20},
	{61, "gpm.nvlink_tx_bytes_per_s", 1 << 20},
}

// NVML sampling types drained from the driver's ring buffers, with the
// reader's metric names and the factor to the metric's unit. Power samples
// are mW, clocks MHz, utilizations percent (nvml.h, nvmlSamplingType_t).
var bufferedTypes = []metricDef[uint8]{
	{0, "nvml.buffered.power_w", 1e-3},
	{1, "nvml.buffered.gpu_util_pct", 1},
	{2, "nvml.buffered.mem_util_pct", 1},
	{5, "nvml.buffered.sm_clock_mhz", 1},
	{6, "nvml.buffered.mem_clock_mhz", 1},
}
