package record

import "fmt"

// The part of NVML's C API the sampler uses (nvml.h of driver 550+, the
// header go-nvml v0.13.4-1 vendored): return codes, enum values and struct
// layouts, declared here so that the binding needs no cgo (nvml_dl.go loads
// libnvidia-ml at run time) and the tests can mock every call
// (nvml_mock_test.go). Struct layouts are C's on LP64 (Linux amd64/arm64);
// TestNVMLStructLayouts pins their sizes.

// nvmlReturn is nvmlReturn_t.
type nvmlReturn int32

const (
	nvmlSuccess             nvmlReturn = 0
	nvmlErrInvalidArgument  nvmlReturn = 2
	nvmlErrNotSupported     nvmlReturn = 3
	nvmlErrNoPermission     nvmlReturn = 4
	nvmlErrNotFound         nvmlReturn = 6
	nvmlErrInsufficientSize nvmlReturn = 7
	nvmlErrDriverNotLoaded  nvmlReturn = 9
	nvmlErrLibraryNotFound  nvmlReturn = 12
	nvmlErrFunctionNotFound nvmlReturn = 13
	nvmlErrUnknown          nvmlReturn = 999
)

// nvmlReturnNames are nvml.h's names without the NVML_ prefix, the form
// go-nvml printed and the manifest's events already carry.
var nvmlReturnNames = map[nvmlReturn]string{
	0: "SUCCESS", 1: "ERROR_UNINITIALIZED", 2: "ERROR_INVALID_ARGUMENT", 3: "ERROR_NOT_SUPPORTED",
	4: "ERROR_NO_PERMISSION", 5: "ERROR_ALREADY_INITIALIZED", 6: "ERROR_NOT_FOUND", 7: "ERROR_INSUFFICIENT_SIZE",
	8: "ERROR_INSUFFICIENT_POWER", 9: "ERROR_DRIVER_NOT_LOADED", 10: "ERROR_TIMEOUT", 11: "ERROR_IRQ_ISSUE",
	12: "ERROR_LIBRARY_NOT_FOUND", 13: "ERROR_FUNCTION_NOT_FOUND", 14: "ERROR_CORRUPTED_INFOROM",
	15: "ERROR_GPU_IS_LOST", 16: "ERROR_RESET_REQUIRED", 17: "ERROR_OPERATING_SYSTEM",
	18: "ERROR_LIB_RM_VERSION_MISMATCH", 19: "ERROR_IN_USE", 20: "ERROR_MEMORY", 21: "ERROR_NO_DATA",
	22: "ERROR_VGPU_ECC_NOT_SUPPORTED", 23: "ERROR_INSUFFICIENT_RESOURCES", 24: "ERROR_FREQ_NOT_SUPPORTED",
	25: "ERROR_ARGUMENT_VERSION_MISMATCH", 26: "ERROR_DEPRECATED", 27: "ERROR_NOT_READY",
	28: "ERROR_GPU_NOT_FOUND", 29: "ERROR_INVALID_STATE", 30: "ERROR_RESET_TYPE_NOT_SUPPORTED",
	999: "ERROR_UNKNOWN",
}

func (r nvmlReturn) String() string {
	if n, ok := nvmlReturnNames[r]; ok {
		return n
	}
	return fmt.Sprintf("nvmlReturn(%d)", int32(r))
}

// Enum values (nvml.h).
const (
	clockSM  = 1 // NVML_CLOCK_SM
	clockMem = 2 // NVML_CLOCK_MEM

	temperatureGPU = 0 // NVML_TEMPERATURE_GPU

	migEnable = 1 // NVML_DEVICE_MIG_ENABLE

	// nvmlValueType_t
	valueDouble    = 0
	valueUInt      = 1
	valueULong     = 2
	valueULongLong = 3
	valueSLongLong = 4
	valueSInt      = 5
	valueUShort    = 6

	// nvmlSamplingType_t
	samplesTotalPower = 0
	samplesGPUUtil    = 1

	// NVML_FI_DEV_* field ids.
	fiNVLinkLinkCount   = 91
	fiNVLinkDataTX      = 138
	fiNVLinkDataRX      = 139
	fiPowerInstant      = 186
	fiPCIeCountTXBytes  = 197
	fiPCIeCountRXBytes  = 198
	nvlinkMaxLinks      = 36  // NVML_NVLINK_MAX_LINKS
	gpmSupportVersion   = 1   // NVML_GPM_SUPPORT_VERSION
	gpmMetricsVersion   = 1   // NVML_GPM_METRICS_GET_VERSION
	gpmMetricMax        = 477 // NVML_GPM_METRIC_MAX (the driver reads numMetrics entries)
	uuidBufferSize      = 96  // NVML_DEVICE_UUID_V2_BUFFER_SIZE
	nameBufferSize      = 96  // NVML_DEVICE_NAME_V2_BUFFER_SIZE
	versionBufferSize   = 80  // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE, ..._NVML_VERSION_...
	memoryV2StructBytes = 40
	// nvmlMemory_v2: NVML_STRUCT_VERSION(Memory, 2) = sizeof | 2<<24.
	memoryV2Version = memoryV2StructBytes | 2<<24
)

// Struct layouts (nvml.h).
type (
	nvmlPciInfo struct { // nvmlPciInfo_t
		BusIdLegacy    [16]int8
		Domain         uint32
		Bus            uint32
		Device         uint32
		PciDeviceId    uint32
		PciSubSystemId uint32
		BusId          [32]int8
	}
	nvmlMemory   struct{ Total, Free, Used uint64 } // nvmlMemory_t
	nvmlMemoryV2 struct {                           // nvmlMemory_v2_t
		Version                     uint32
		Total, Reserved, Free, Used uint64
	}
	nvmlUtilization struct{ Gpu, Memory uint32 } // nvmlUtilization_t
	nvmlFieldValue  struct {                     // nvmlFieldValue_t
		FieldId     uint32
		ScopeId     uint32
		Timestamp   int64
		LatencyUsec int64
		ValueType   uint32
		NvmlReturn  uint32
		Value       [8]byte
	}
	nvmlSample struct { // nvmlSample_t
		TimeStamp   uint64
		SampleValue [8]byte
	}
	nvmlProcessUtilization struct { // nvmlProcessUtilizationSample_t
		Pid                               uint32
		TimeStamp                         uint64
		SmUtil, MemUtil, EncUtil, DecUtil uint32
	}
	nvmlProcessInfo struct { // nvmlProcessInfo_t (the _v3 call's)
		Pid               uint32
		UsedGpuMemory     uint64
		GpuInstanceId     uint32
		ComputeInstanceId uint32
	}
	nvmlGpmSupport struct{ Version, IsSupportedDevice uint32 } // nvmlGpmSupport_t
	nvmlGpmMetric  struct {                                    // nvmlGpmMetric_t
		MetricId   uint32
		NvmlReturn uint32
		Value      float64
		// metricInfo: three char* the driver points at its own strings.
		ShortName, LongName, Unit uintptr
	}
	nvmlGpmMetricsGet struct { // nvmlGpmMetricsGet_t
		Version          uint32
		NumMetrics       uint32
		Sample1, Sample2 gpmSample
		Metrics          [gpmMetricMax]nvmlGpmMetric
	}
)

// gpmSample is an nvmlGpmSample_t, an opaque handle NVML allocates.
type gpmSample uintptr

// nvmlLib is the library-level part of NVML the sampler calls: the real
// library (nvml_dl.go) or a mock.
type nvmlLib interface {
	Init() nvmlReturn
	Shutdown() nvmlReturn
	// HasSymbol reports whether the loaded library exports an entry point;
	// only valid after a successful Init.
	HasSymbol(name string) bool
	SystemGetDriverVersion() (string, nvmlReturn)
	SystemGetNVMLVersion() (string, nvmlReturn)
	SystemGetCudaDriverVersion() (int, nvmlReturn)
	DeviceGetCount() (int, nvmlReturn)
	DeviceGetHandleByIndex(i int) (nvmlDevice, nvmlReturn)
	GpmSampleAlloc() (gpmSample, nvmlReturn)
	GpmSampleFree(gpmSample) nvmlReturn
	GpmMetricsGet(*nvmlGpmMetricsGet) nvmlReturn
}

// nvmlDevice is one GPU (or MIG instance) handle.
type nvmlDevice interface {
	GetUUID() (string, nvmlReturn)
	GetName() (string, nvmlReturn)
	GetPciInfo() (nvmlPciInfo, nvmlReturn)
	GetArchitecture() (uint32, nvmlReturn)
	GetCudaComputeCapability() (int, int, nvmlReturn)
	GetMemoryInfo() (nvmlMemory, nvmlReturn)
	GetMemoryInfoV2() (nvmlMemoryV2, nvmlReturn)
	GetMaxClockInfo(clock uint32) (uint32, nvmlReturn)
	GetClockInfo(clock uint32) (uint32, nvmlReturn)
	GetEnforcedPowerLimit() (uint32, nvmlReturn)
	GetFieldValues([]nvmlFieldValue) nvmlReturn
	GpmQueryDeviceSupport() (nvmlGpmSupport, nvmlReturn)
	GetMigMode() (current, pending int, ret nvmlReturn)
	GetMaxMigDeviceCount() (int, nvmlReturn)
	GetMigDeviceHandleByIndex(i int) (nvmlDevice, nvmlReturn)
	GetGpuInstanceId() (int, nvmlReturn)
	GetComputeInstanceId() (int, nvmlReturn)
	GetUtilizationRates() (nvmlUtilization, nvmlReturn)
	GetPowerUsage() (uint32, nvmlReturn)
	GetTotalEnergyConsumption() (uint64, nvmlReturn)
	GetCurrentClocksEventReasons() (uint64, nvmlReturn)
	GetTemperature(sensor uint32) (uint32, nvmlReturn)
	GetSamples(samplingType uint32, lastSeen uint64) (valueType uint32, samples []nvmlSample, ret nvmlReturn)
	GetProcessUtilization(lastSeen uint64) ([]nvmlProcessUtilization, nvmlReturn)
	GetComputeRunningProcesses() ([]nvmlProcessInfo, nvmlReturn)
	GpmSampleGet(gpmSample) nvmlReturn
	GpmMigSampleGet(gi int, s gpmSample) nvmlReturn
}

// Architectures (nvmlDeviceArchitecture_t).
func archName(a uint32) string {
	switch a {
	case 2:
		return "kepler"
	case 3:
		return "maxwell"
	case 4:
		return "pascal"
	case 5:
		return "volta"
	case 6:
		return "turing"
	case 7:
		return "ampere"
	case 8:
		return "ada"
	case 9:
		return "hopper"
	case 10:
		return "blackwell"
	}
	return fmt.Sprintf("arch(%d)", a)
}
