package record

// The capture's tables. Each struct is the one declaration of its table's
// columns (see table.go); docs/record.md lists them for users. Every row
// starts with the recorder's own clock reading(s) — CLOCK_MONOTONIC, and
// CLOCK_REALTIME where a consumer may want it without the clock pairs.

// Table names; the file of table X is X.arrows in the capture directory.
const (
	TableOTLP        = "otlp"
	TableClock       = "clock"
	TableEvents      = "events"
	TableGPUDevice   = "gpu_device"
	TableGPUBuffered = "gpu_buffered"
	TableGPUProcess  = "gpu_process"
	TableGPUGPM      = "gpu_gpm"
)

// TableFile is the file name of a table inside the capture directory.
func TableFile(table string) string { return table + ".arrows" }

// OTLPPayload is one OTLP export request as received: the body exactly as the
// client sent it (after undoing Content-Encoding), so the capture is lossless
// and any OTLP decoder can read it again.
type OTLPPayload struct {
	RecvMonoNs int64 `arrow:"recv_mono_ns" unit:"ns"`
	RecvRealNs int64 `arrow:"recv_real_ns" unit:"ns"`
	// Signal is "traces", "metrics" or "logs".
	Signal string `arrow:"signal"`
	// Transport is "grpc" or "http".
	Transport string `arrow:"transport"`
	// Encoding of Payload: "proto" (ExportXServiceRequest protobuf) or "json"
	// (OTLP/JSON).
	Encoding string `arrow:"encoding"`
	// ContentEncoding is the compression an HTTP body arrived with ("",
	// "gzip" or "zstd"); Payload is stored decompressed. gRPC undoes its
	// own message compression before the receiver sees it, so it is not
	// recorded for gRPC.
	ContentEncoding string `arrow:"content_encoding"`
	Peer            string `arrow:"peer"`
	// Items counts spans (traces), metrics (metrics) or log records (logs).
	Items   uint32 `arrow:"items"`
	Payload []byte `arrow:"payload"`

	// release returns the payload's bytes to the receiver's memory budget;
	// the capture writer calls it once the row is copied into a batch.
	release func()
}

// releaseBody hands the payload's memory back to the receiver that charged
// it, if any (once; later calls do nothing).
func (p *OTLPPayload) releaseBody() {
	if p.release != nil {
		p.release()
		p.release = nil
	}
}

// ClockPair is one bracketed snapshot of the host clocks: CLOCK_MONOTONIC,
// CLOCK_BOOTTIME and CLOCK_MONOTONIC_RAW were read, in that order, between
// two reads of CLOCK_REALTIME, so at the instant of the monotonic read the
// realtime clock was within [RealLoNs, RealHiNs]. The tightest of a few tries
// is kept.
type ClockPair struct {
	// Label says why it was taken: "start", "child_start", "periodic",
	// "child_exit", "end".
	Label     string `arrow:"label"`
	RealLoNs  int64  `arrow:"t_real_lo_ns" unit:"ns"`
	MonoNs    int64  `arrow:"t_mono_ns" unit:"ns"`
	BootNs    int64  `arrow:"t_boot_ns" unit:"ns"`
	MonoRawNs int64  `arrow:"t_mono_raw_ns" unit:"ns"`
	RealHiNs  int64  `arrow:"t_real_hi_ns" unit:"ns"`
}

// Uncertainty is half the bracket: how far the realtime instant of the
// monotonic read can be from the bracket's midpoint.
func (p ClockPair) Uncertainty() int64 { return (p.RealHiNs - p.RealLoNs + 1) / 2 }

// RealMidNs is the midpoint of the realtime bracket.
func (p ClockPair) RealMidNs() int64 { return p.RealLoNs + (p.RealHiNs-p.RealLoNs)/2 }

// Event is something the recorder did or saw: child start and exit, signals,
// receiver addresses, the first failure of each NVML query, drops.
type Event struct {
	MonoNs int64  `arrow:"t_mono_ns" unit:"ns"`
	RealNs int64  `arrow:"t_real_ns" unit:"ns"`
	Kind   string `arrow:"kind"`
	Detail string `arrow:"detail"`
	// Code is the exit code, signal number or NVML return code, if any.
	Code *int64 `arrow:"code"`
}

// DeviceSample is one device-level NVML poll of one GPU (or MIG instance).
// A NULL column means the query failed or is not supported; the first
// failure of each query is an event, not a per-row value.
type DeviceSample struct {
	MonoNs int64 `arrow:"t_mono_ns" unit:"ns"`
	RealNs int64 `arrow:"t_real_ns" unit:"ns"`
	// PollLatencyNs is how long this row's NVML calls took.
	PollLatencyNs int32  `arrow:"poll_latency_ns" unit:"ns"`
	GPU           int16  `arrow:"gpu_index"`
	GPUUUID       string `arrow:"gpu_uuid"`
	// MIGUUID and GI identify a MIG instance row (NULL for a whole GPU).
	MIGUUID            *string `arrow:"mig_uuid"`
	GI                 *int32  `arrow:"gi_id"`
	UtilGPUPct         *uint32 `arrow:"util_gpu_pct" unit:"%"`
	UtilMemPct         *uint32 `arrow:"util_mem_pct" unit:"%"`
	MemUsedBytes       *uint64 `arrow:"mem_used_bytes" unit:"bytes"`
	MemReservedBytes   *uint64 `arrow:"mem_reserved_bytes" unit:"bytes"`
	MemTotalBytes      *uint64 `arrow:"mem_total_bytes" unit:"bytes"`
	SMClockMHz         *uint32 `arrow:"sm_clock_mhz" unit:"MHz"`
	MemClockMHz        *uint32 `arrow:"mem_clock_mhz" unit:"MHz"`
	PowerAvgMW         *uint32 `arrow:"power_avg_mw" unit:"mW"`
	PowerInstantMW     *uint32 `arrow:"power_instant_mw" unit:"mW"`
	EnergyMJ           *uint64 `arrow:"energy_mj" unit:"mJ"`
	ClocksEventReasons *uint64 `arrow:"clocks_event_reasons"`
	TempC              *uint32 `arrow:"temp_c" unit:"C"`
	PCIeTXBytes        *uint64 `arrow:"pcie_tx_bytes_total" unit:"bytes"`
	PCIeRXBytes        *uint64 `arrow:"pcie_rx_bytes_total" unit:"bytes"`
	NVLinkTXKiB        *uint64 `arrow:"nvlink_tx_kib_total" unit:"KiB"`
	NVLinkRXKiB        *uint64 `arrow:"nvlink_rx_kib_total" unit:"KiB"`
}

// BufferedSample is one entry of an NVML driver ring buffer (GetSamples),
// stamped by the driver. The value is kept raw (the 8 bytes as a
// little-endian integer, with NVML's value type) and decoded.
type BufferedSample struct {
	MonoNs  int64  `arrow:"t_mono_ns" unit:"ns"`
	GPU     int16  `arrow:"gpu_index"`
	GPUUUID string `arrow:"gpu_uuid"`
	// SamplingType is NVML's nvmlSamplingType_t (0 total power, 1 GPU util,
	// 2 memory util, 5 processor clock, 6 memory clock, …).
	SamplingType uint8 `arrow:"sampling_type"`
	// NVMLTimestampUs is the driver's CPU timestamp, microseconds; assumed
	// CLOCK_REALTIME (bench/record-gpu.sh checks it on a GPU host).
	NVMLTimestampUs uint64  `arrow:"nvml_ts_us" unit:"us"`
	ValueType       uint8   `arrow:"value_type"`
	ValueRaw        uint64  `arrow:"value_raw"`
	Value           float64 `arrow:"value"`
}

// ProcessSample is one process on one GPU: per-process utilization
// (Source "utilization", GetProcessUtilization) or memory and MIG placement
// (Source "running", GetComputeRunningProcesses).
type ProcessSample struct {
	MonoNs          int64   `arrow:"t_mono_ns" unit:"ns"`
	GPU             int16   `arrow:"gpu_index"`
	GPUUUID         string  `arrow:"gpu_uuid"`
	Pid             uint32  `arrow:"pid"`
	Source          string  `arrow:"source"`
	NVMLTimestampUs *uint64 `arrow:"nvml_ts_us" unit:"us"`
	SMUtilPct       *uint32 `arrow:"sm_util_pct" unit:"%"`
	MemUtilPct      *uint32 `arrow:"mem_util_pct" unit:"%"`
	EncUtilPct      *uint32 `arrow:"enc_util_pct" unit:"%"`
	DecUtilPct      *uint32 `arrow:"dec_util_pct" unit:"%"`
	UsedMemoryBytes *uint64 `arrow:"used_gpu_memory_bytes" unit:"bytes"`
	GI              *uint32 `arrow:"gi_id"`
	CI              *uint32 `arrow:"ci_id"`
	// Descendant says whether the pid is the recorded child or one of its
	// descendants (vLLM runs engine and worker processes).
	Descendant bool `arrow:"is_descendant"`
}

// GPMSample is one GPM metric of one GPU (or MIG GPU instance) over the
// interval between two GPM samples taken at T0MonoNs and T1MonoNs.
type GPMSample struct {
	T0MonoNs int64  `arrow:"t0_mono_ns" unit:"ns"`
	T1MonoNs int64  `arrow:"t1_mono_ns" unit:"ns"`
	GPU      int16  `arrow:"gpu_index"`
	GPUUUID  string `arrow:"gpu_uuid"`
	GI       *int32 `arrow:"gi_id"`
	// MetricID is NVML's nvmlGpmMetricId_t (2 SM util, 3 SM occupancy, …).
	MetricID uint16  `arrow:"metric_id"`
	Value    float64 `arrow:"value"`
}

var (
	otlpSchema      = newTableSchema[OTLPPayload](TableOTLP)
	clockSchema     = newTableSchema[ClockPair](TableClock)
	eventSchema     = newTableSchema[Event](TableEvents)
	deviceSchema    = newTableSchema[DeviceSample](TableGPUDevice)
	bufferedSchema  = newTableSchema[BufferedSample](TableGPUBuffered)
	processSchema   = newTableSchema[ProcessSample](TableGPUProcess)
	gpmSchema       = newTableSchema[GPMSample](TableGPUGPM)
	allTableSchemas = []*tableSchema{otlpSchema, clockSchema, eventSchema, deviceSchema, bufferedSchema, processSchema, gpmSchema}
)

// ptr returns a pointer to a copy of v: a non-NULL value for a nullable
// column.
func ptr[T any](v T) *T { return &v }
