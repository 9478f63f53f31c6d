package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// The mocked telemetry: mockServer sets identity (a DGX H100's, the values
// go-nvml's dgxh100 mock carried) and every telemetry function the sampler
// calls; one the sampler must not call is left nil, so calling it panics.
const (
	mockUtilGPU    = 42
	mockUtilMem    = 7
	mockMemUsed    = 30 << 30
	mockMemResv    = 1 << 30
	mockMemTotal   = 80 << 30
	mockSMClock    = 1755
	mockMemClock   = 2619
	mockPowerMW    = 350_000
	mockInstantMW  = 412_000
	mockEnergyMJ   = 123_456_789
	mockReasons    = 0x4
	mockTempC      = 61
	mockPCIeTX     = 1_000_000
	mockPCIeRX     = 2_000_000
	mockNVLinks    = 2
	mockLinkTXKiB  = 300 // per link
	mockLinkRXKiB  = 500
	mockTS         = 1_796_000_000_000_000 // µs, realtime-like
	mockChildPid   = 4242
	mockOtherPid   = 777
	mockSMUtilProc = 55
)

// mockCalls counts calls by method name.
type mockCalls struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *mockCalls) called(name string) {
	c.mu.Lock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[name]++
	c.mu.Unlock()
}

// calls says how often a method was called.
func (c *mockCalls) calls(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// mockLib is an nvmlLib whose every method calls its Func field: a nil
// one panics, like calling NVML before a successful Init aborts.
type mockLib struct {
	mockCalls
	devices                        []*mockDevice
	InitFunc                       func() nvmlReturn
	ShutdownFunc                   func() nvmlReturn
	HasSymbolFunc                  func(string) bool
	SystemGetDriverVersionFunc     func() (string, nvmlReturn)
	SystemGetNVMLVersionFunc       func() (string, nvmlReturn)
	SystemGetCudaDriverVersionFunc func() (int, nvmlReturn)
	DeviceGetCountFunc             func() (int, nvmlReturn)
	DeviceGetHandleByIndexFunc     func(int) (nvmlDevice, nvmlReturn)
	GpmSampleAllocFunc             func() (gpmSample, nvmlReturn)
	GpmSampleFreeFunc              func(gpmSample) nvmlReturn
	GpmMetricsGetFunc              func(*nvmlGpmMetricsGet) nvmlReturn
}

func (m *mockLib) Init() nvmlReturn {
	m.called("Init")
	return m.InitFunc()
}

func (m *mockLib) Shutdown() nvmlReturn {
	m.called("Shutdown")
	return m.ShutdownFunc()
}

func (m *mockLib) HasSymbol(a0 string) bool {
	m.called("HasSymbol")
	return m.HasSymbolFunc(a0)
}

func (m *mockLib) SystemGetDriverVersion() (string, nvmlReturn) {
	m.called("SystemGetDriverVersion")
	return m.SystemGetDriverVersionFunc()
}

func (m *mockLib) SystemGetNVMLVersion() (string, nvmlReturn) {
	m.called("SystemGetNVMLVersion")
	return m.SystemGetNVMLVersionFunc()
}

func (m *mockLib) SystemGetCudaDriverVersion() (int, nvmlReturn) {
	m.called("SystemGetCudaDriverVersion")
	return m.SystemGetCudaDriverVersionFunc()
}

func (m *mockLib) DeviceGetCount() (int, nvmlReturn) {
	m.called("DeviceGetCount")
	return m.DeviceGetCountFunc()
}

func (m *mockLib) DeviceGetHandleByIndex(a0 int) (nvmlDevice, nvmlReturn) {
	m.called("DeviceGetHandleByIndex")
	return m.DeviceGetHandleByIndexFunc(a0)
}

func (m *mockLib) GpmSampleAlloc() (gpmSample, nvmlReturn) {
	m.called("GpmSampleAlloc")
	return m.GpmSampleAllocFunc()
}

func (m *mockLib) GpmSampleFree(a0 gpmSample) nvmlReturn {
	m.called("GpmSampleFree")
	return m.GpmSampleFreeFunc(a0)
}

func (m *mockLib) GpmMetricsGet(a0 *nvmlGpmMetricsGet) nvmlReturn {
	m.called("GpmMetricsGet")
	return m.GpmMetricsGetFunc(a0)
}

// mockDevice is an nvmlDevice of Func fields, like mockLib.
type mockDevice struct {
	mockCalls
	GetUUIDFunc                      func() (string, nvmlReturn)
	GetNameFunc                      func() (string, nvmlReturn)
	GetPciInfoFunc                   func() (nvmlPciInfo, nvmlReturn)
	GetArchitectureFunc              func() (uint32, nvmlReturn)
	GetCudaComputeCapabilityFunc     func() (int, int, nvmlReturn)
	GetMemoryInfoFunc                func() (nvmlMemory, nvmlReturn)
	GetMemoryInfoV2Func              func() (nvmlMemoryV2, nvmlReturn)
	GetMaxClockInfoFunc              func(uint32) (uint32, nvmlReturn)
	GetClockInfoFunc                 func(uint32) (uint32, nvmlReturn)
	GetEnforcedPowerLimitFunc        func() (uint32, nvmlReturn)
	GetFieldValuesFunc               func([]nvmlFieldValue) nvmlReturn
	GpmQueryDeviceSupportFunc        func() (nvmlGpmSupport, nvmlReturn)
	GetMigModeFunc                   func() (current, pending int, ret nvmlReturn)
	GetMaxMigDeviceCountFunc         func() (int, nvmlReturn)
	GetMigDeviceHandleByIndexFunc    func(int) (nvmlDevice, nvmlReturn)
	GetGpuInstanceIdFunc             func() (int, nvmlReturn)
	GetComputeInstanceIdFunc         func() (int, nvmlReturn)
	GetUtilizationRatesFunc          func() (nvmlUtilization, nvmlReturn)
	GetPowerUsageFunc                func() (uint32, nvmlReturn)
	GetTotalEnergyConsumptionFunc    func() (uint64, nvmlReturn)
	GetCurrentClocksEventReasonsFunc func() (uint64, nvmlReturn)
	GetTemperatureFunc               func(uint32) (uint32, nvmlReturn)
	GetSamplesFunc                   func(uint32, uint64) (valueType uint32, samples []nvmlSample, ret nvmlReturn)
	GetProcessUtilizationFunc        func(uint64) ([]nvmlProcessUtilization, nvmlReturn)
	GetComputeRunningProcessesFunc   func() ([]nvmlProcessInfo, nvmlReturn)
	GpmSampleGetFunc                 func(gpmSample) nvmlReturn
	GpmMigSampleGetFunc              func(int, gpmSample) nvmlReturn
}

func (m *mockDevice) GetUUID() (string, nvmlReturn) {
	m.called("GetUUID")
	return m.GetUUIDFunc()
}

func (m *mockDevice) GetName() (string, nvmlReturn) {
	m.called("GetName")
	return m.GetNameFunc()
}

func (m *mockDevice) GetPciInfo() (nvmlPciInfo, nvmlReturn) {
	m.called("GetPciInfo")
	return m.GetPciInfoFunc()
}

func (m *mockDevice) GetArchitecture() (uint32, nvmlReturn) {
	m.called("GetArchitecture")
	return m.GetArchitectureFunc()
}

func (m *mockDevice) GetCudaComputeCapability() (int, int, nvmlReturn) {
	m.called("GetCudaComputeCapability")
	return m.GetCudaComputeCapabilityFunc()
}

func (m *mockDevice) GetMemoryInfo() (nvmlMemory, nvmlReturn) {
	m.called("GetMemoryInfo")
	return m.GetMemoryInfoFunc()
}

func (m *mockDevice) GetMemoryInfoV2() (nvmlMemoryV2, nvmlReturn) {
	m.called("GetMemoryInfoV2")
	return m.GetMemoryInfoV2Func()
}

func (m *mockDevice) GetMaxClockInfo(a0 uint32) (uint32, nvmlReturn) {
	m.called("GetMaxClockInfo")
	return m.GetMaxClockInfoFunc(a0)
}

func (m *mockDevice) GetClockInfo(a0 uint32) (uint32, nvmlReturn) {
	m.called("GetClockInfo")
	return m.GetClockInfoFunc(a0)
}

func (m *mockDevice) GetEnforcedPowerLimit() (uint32, nvmlReturn) {
	m.called("GetEnforcedPowerLimit")
	return m.GetEnforcedPowerLimitFunc()
}

func (m *mockDevice) GetFieldValues(a0 []nvmlFieldValue) nvmlReturn {
	m.called("GetFieldValues")
	return m.GetFieldValuesFunc(a0)
}

func (m *mockDevice) GpmQueryDeviceSupport() (nvmlGpmSupport, nvmlReturn) {
	m.called("GpmQueryDeviceSupport")
	return m.GpmQueryDeviceSupportFunc()
}

func (m *mockDevice) GetMigMode() (current, pending int, ret nvmlReturn) {
	m.called("GetMigMode")
	return m.GetMigModeFunc()
}

func (m *mockDevice) GetMaxMigDeviceCount() (int, nvmlReturn) {
	m.called("GetMaxMigDeviceCount")
	return m.GetMaxMigDeviceCountFunc()
}

func (m *mockDevice) GetMigDeviceHandleByIndex(a0 int) (nvmlDevice, nvmlReturn) {
	m.called("GetMigDeviceHandleByIndex")
	return m.GetMigDeviceHandleByIndexFunc(a0)
}

func (m *mockDevice) GetGpuInstanceId() (int, nvmlReturn) {
	m.called("GetGpuInstanceId")
	return m.GetGpuInstanceIdFunc()
}

func (m *mockDevice) GetComputeInstanceId() (int, nvmlReturn) {
	m.called("GetComputeInstanceId")
	return m.GetComputeInstanceIdFunc()
}

func (m *mockDevice) GetUtilizationRates() (nvmlUtilization, nvmlReturn) {
	m.called("GetUtilizationRates")
	return m.GetUtilizationRatesFunc()
}

func (m *mockDevice) GetPowerUsage() (uint32, nvmlReturn) {
	m.called("GetPowerUsage")
	return m.GetPowerUsageFunc()
}

func (m *mockDevice) GetTotalEnergyConsumption() (uint64, nvmlReturn) {
	m.called("GetTotalEnergyConsumption")
	return m.GetTotalEnergyConsumptionFunc()
}

func (m *mockDevice) GetCurrentClocksEventReasons() (uint64, nvmlReturn) {
	m.called("GetCurrentClocksEventReasons")
	return m.GetCurrentClocksEventReasonsFunc()
}

func (m *mockDevice) GetTemperature(a0 uint32) (uint32, nvmlReturn) {
	m.called("GetTemperature")
	return m.GetTemperatureFunc(a0)
}

func (m *mockDevice) GetSamples(a0 uint32, a1 uint64) (valueType uint32, samples []nvmlSample, ret nvmlReturn) {
	m.called("GetSamples")
	return m.GetSamplesFunc(a0, a1)
}

func (m *mockDevice) GetProcessUtilization(a0 uint64) ([]nvmlProcessUtilization, nvmlReturn) {
	m.called("GetProcessUtilization")
	return m.GetProcessUtilizationFunc(a0)
}

func (m *mockDevice) GetComputeRunningProcesses() ([]nvmlProcessInfo, nvmlReturn) {
	m.called("GetComputeRunningProcesses")
	return m.GetComputeRunningProcessesFunc()
}

func (m *mockDevice) GpmSampleGet(a0 gpmSample) nvmlReturn {
	m.called("GpmSampleGet")
	return m.GpmSampleGetFunc(a0)
}

func (m *mockDevice) GpmMigSampleGet(a0 int, a1 gpmSample) nvmlReturn {
	m.called("GpmMigSampleGet")
	return m.GpmMigSampleGetFunc(a0, a1)
}

func u32(b *[8]byte, v uint32)  { binary.LittleEndian.PutUint32(b[:4], v) }
func u64(b *[8]byte, v uint64)  { binary.LittleEndian.PutUint64(b[:], v) }
func f64(b *[8]byte, v float64) { binary.LittleEndian.PutUint64(b[:], math.Float64bits(v)) }

// setTelemetry fills in every telemetry function of a whole (non-MIG) GPU.
func setTelemetry(d *mockDevice) {
	d.GetMaxClockInfoFunc = func(uint32) (uint32, nvmlReturn) { return 1980, nvmlSuccess }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvmlReturn) { return 700_000, nvmlSuccess }
	d.GpmQueryDeviceSupportFunc = func() (nvmlGpmSupport, nvmlReturn) {
		return nvmlGpmSupport{Version: gpmSupportVersion, IsSupportedDevice: 1}, nvmlSuccess
	}
	d.GetUtilizationRatesFunc = func() (nvmlUtilization, nvmlReturn) {
		return nvmlUtilization{Gpu: mockUtilGPU, Memory: mockUtilMem}, nvmlSuccess
	}
	d.GetMemoryInfoV2Func = func() (nvmlMemoryV2, nvmlReturn) {
		return nvmlMemoryV2{Total: mockMemTotal, Reserved: mockMemResv, Used: mockMemUsed, Free: mockMemTotal - mockMemUsed}, nvmlSuccess
	}
	d.GetClockInfoFunc = func(ct uint32) (uint32, nvmlReturn) {
		switch ct {
		case clockSM:
			return mockSMClock, nvmlSuccess
		case clockMem:
			return mockMemClock, nvmlSuccess
		}
		return 0, nvmlErrInvalidArgument
	}
	d.GetPowerUsageFunc = func() (uint32, nvmlReturn) { return mockPowerMW, nvmlSuccess }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvmlReturn) { return mockEnergyMJ, nvmlSuccess }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvmlReturn) { return mockReasons, nvmlSuccess }
	d.GetTemperatureFunc = func(uint32) (uint32, nvmlReturn) { return mockTempC, nvmlSuccess }
	d.GetFieldValuesFunc = func(fv []nvmlFieldValue) nvmlReturn {
		for i := range fv {
			f := &fv[i]
			f.NvmlReturn = uint32(nvmlSuccess)
			f.ValueType = valueULongLong
			switch f.FieldId {
			case fiNVLinkLinkCount:
				f.ValueType = valueUInt
				u32(&f.Value, mockNVLinks)
			case fiPowerInstant:
				f.ValueType = valueUInt
				u32(&f.Value, mockInstantMW)
			case fiPCIeCountTXBytes:
				u64(&f.Value, mockPCIeTX)
			case fiPCIeCountRXBytes:
				u64(&f.Value, mockPCIeRX)
			case fiNVLinkDataTX:
				u64(&f.Value, mockLinkTXKiB)
			case fiNVLinkDataRX:
				u64(&f.Value, mockLinkRXKiB)
			default:
				f.NvmlReturn = uint32(nvmlErrNotSupported)
			}
		}
		return nvmlSuccess
	}
	d.GetSamplesFunc = func(st uint32, last uint64) (uint32, []nvmlSample, nvmlReturn) {
		if last >= mockTS+2 {
			return 0, nil, nvmlErrNotFound // nothing new
		}
		s := []nvmlSample{{TimeStamp: mockTS + 1}, {TimeStamp: mockTS + 2}, {}} // a zeroed trailing entry, as older tags return
		if st == samplesTotalPower {
			u32(&s[0].SampleValue, 300_000)
			u32(&s[1].SampleValue, 310_000)
			return valueUInt, s, nvmlSuccess
		}
		f64(&s[0].SampleValue, 10)
		f64(&s[1].SampleValue, 20)
		return valueDouble, s, nvmlSuccess
	}
	d.GetProcessUtilizationFunc = func(last uint64) ([]nvmlProcessUtilization, nvmlReturn) {
		if last >= mockTS {
			return nil, nvmlErrNotFound
		}
		return []nvmlProcessUtilization{
			{Pid: mockChildPid, TimeStamp: mockTS, SmUtil: mockSMUtilProc, MemUtil: 9},
			{Pid: mockOtherPid, TimeStamp: mockTS, SmUtil: 3, MemUtil: 1},
		}, nvmlSuccess
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvmlProcessInfo, nvmlReturn) {
		return []nvmlProcessInfo{{Pid: mockChildPid, UsedGpuMemory: 20 << 30, GpuInstanceId: math.MaxUint32, ComputeInstanceId: math.MaxUint32}}, nvmlSuccess
	}
	d.GpmSampleGetFunc = func(gpmSample) nvmlReturn { return nvmlSuccess }
}

// mockServer is a DGX H100 with n GPUs, identity and telemetry set on
// each, and GPM.
func mockServer(n int) *mockLib {
	l := &mockLib{}
	for i := range n {
		d := &mockDevice{}
		uuid := fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", 0x1000+i, i)
		d.GetUUIDFunc = func() (string, nvmlReturn) { return uuid, nvmlSuccess }
		d.GetNameFunc = func() (string, nvmlReturn) { return "NVIDIA H100 80GB HBM3", nvmlSuccess }
		d.GetPciInfoFunc = func() (nvmlPciInfo, nvmlReturn) {
			var p nvmlPciInfo
			for j, c := range fmt.Sprintf("00000000:%02X:00.0", 0x1b+i) {
				p.BusId[j] = int8(c)
			}
			return p, nvmlSuccess
		}
		d.GetArchitectureFunc = func() (uint32, nvmlReturn) { return 9, nvmlSuccess } // hopper
		d.GetCudaComputeCapabilityFunc = func() (int, int, nvmlReturn) { return 9, 0, nvmlSuccess }
		d.GetMemoryInfoFunc = func() (nvmlMemory, nvmlReturn) {
			return nvmlMemory{Total: mockMemTotal, Used: mockMemUsed, Free: mockMemTotal - mockMemUsed}, nvmlSuccess
		}
		d.GetMigModeFunc = func() (int, int, nvmlReturn) { return 0, 0, nvmlSuccess }
		setTelemetry(d)
		l.devices = append(l.devices, d)
	}
	l.InitFunc = func() nvmlReturn { return nvmlSuccess }
	l.ShutdownFunc = func() nvmlReturn { return nvmlSuccess }
	l.HasSymbolFunc = func(string) bool { return true }
	l.SystemGetDriverVersionFunc = func() (string, nvmlReturn) { return "550.54.15", nvmlSuccess }
	l.SystemGetNVMLVersionFunc = func() (string, nvmlReturn) { return "12.550.54.15", nvmlSuccess }
	l.SystemGetCudaDriverVersionFunc = func() (int, nvmlReturn) { return 12040, nvmlSuccess }
	l.DeviceGetCountFunc = func() (int, nvmlReturn) { return len(l.devices), nvmlSuccess }
	l.DeviceGetHandleByIndexFunc = func(i int) (nvmlDevice, nvmlReturn) {
		if i < 0 || i >= len(l.devices) {
			return nil, nvmlErrInvalidArgument
		}
		return l.devices[i], nvmlSuccess
	}
	var next gpmSample
	l.GpmSampleAllocFunc = func() (gpmSample, nvmlReturn) { next++; return next, nvmlSuccess }
	l.GpmSampleFreeFunc = func(gpmSample) nvmlReturn { return nvmlSuccess }
	l.GpmMetricsGetFunc = func(mg *nvmlGpmMetricsGet) nvmlReturn {
		for i := range mg.NumMetrics {
			mg.Metrics[i].NvmlReturn = uint32(nvmlSuccess)
			mg.Metrics[i].Value = float64(mg.Metrics[i].MetricId) * 1.5
		}
		return nvmlSuccess
	}
	return l
}

// rowSink collects what a sampler emits.
type rowSink struct {
	mu       sync.Mutex
	device   []DeviceSample
	buffered []BufferedSample
	process  []ProcessSample
	gpm      []GPMSample
	events   []string
}

func (r *rowSink) sinks() samplerSinks {
	return samplerSinks{
		device:   func(s DeviceSample) { r.mu.Lock(); r.device = append(r.device, s); r.mu.Unlock() },
		buffered: func(s BufferedSample) { r.mu.Lock(); r.buffered = append(r.buffered, s); r.mu.Unlock() },
		process:  func(s ProcessSample) { r.mu.Lock(); r.process = append(r.process, s); r.mu.Unlock() },
		gpm:      func(s GPMSample) { r.mu.Lock(); r.gpm = append(r.gpm, s); r.mu.Unlock() },
		event: func(kind, detail string, _ *int64) {
			r.mu.Lock()
			r.events = append(r.events, kind+": "+detail)
			r.mu.Unlock()
		},
		descendants: func() map[uint32]bool { return map[uint32]bool{mockChildPid: true} },
	}
}

// openMocked opens a sampler on mocks with its rows collected.
func openMocked(t *testing.T, srv *mockLib) (*nvmlSampler, *rowSink) {
	t.Helper()
	s, err := newNVMLSampler(srv, NVMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	rs := &rowSink{}
	s.sinks = rs.sinks()
	return s, rs
}

func TestNVMLInitFailureTouchesNothingElse(t *testing.T) {
	// Every function but Init is nil: any call after the failed Init
	// panics, like the real library aborts the process (E4).
	lib := &mockLib{InitFunc: func() nvmlReturn { return nvmlErrLibraryNotFound }}
	s, err := newNVMLSampler(lib, NVMLOptions{})
	if s != nil || !errors.Is(err, ErrNVMLUnavailable) || !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") {
		t.Fatalf("got %v, %v", s, err)
	}
	if n := lib.calls("Init"); n != 1 {
		t.Fatalf("Init called %d times", n)
	}
}

// The real library on this machine: without a driver Init fails cleanly
// (ERROR_LIBRARY_NOT_FOUND) and the process lives on; with one, it opens.
func TestNVMLRealLibrary(t *testing.T) {
	s, err := openNVML(NVMLOptions{})
	if err != nil {
		if !errors.Is(err, ErrNVMLUnavailable) {
			t.Fatalf("err = %v, want ErrNVMLUnavailable", err)
		}
		t.Logf("no NVML here, as expected on a machine without a GPU: %v", err)
		return
	}
	info, gpus := s.Info()
	t.Logf("NVML %s driver %s: %d GPU(s)", info.NVMLVersion, info.DriverVersion, len(gpus))
	s.Close()
}

func TestNVMLSamplerMockedValues(t *testing.T) {
	srv := mockServer(2)
	s, err := newNVMLSampler(srv, NVMLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	info, gpuInfo := s.Info()
	if !info.Available || info.DriverVersion != "550.54.15" || info.CUDADriverVersion != 12040 || len(gpuInfo) != 2 {
		t.Fatalf("info %+v, %d GPUs", info, len(gpuInfo))
	}
	g0 := gpuInfo[0]
	if g0.Arch != "hopper" || g0.ComputeCap != "9.0" || !g0.GPMSupported || g0.NVLinks != mockNVLinks ||
		g0.MaxSMClockMHz != 1980 || g0.PowerLimitMW != 700_000 || !strings.HasPrefix(g0.UUID, "GPU-") || g0.MIG != nil {
		t.Fatalf("GPU 0 %+v", g0)
	}
	rs := &rowSink{}
	s.sinks = rs.sinks()
	for _, g := range s.gpus {
		s.pollDevice(g)
		s.pollGPM(g) // first GPM sample: no interval yet
		s.pollGPM(g) // second: metrics for the interval
	}
	s.drain()
	s.drain() // nothing new: NOT_FOUND and lastSeen filter everything

	if len(rs.device) != 2 {
		t.Fatalf("%d device rows, want 2", len(rs.device))
	}
	d := rs.device[1]
	want := DeviceSample{GPU: 1, GPUUUID: gpuInfo[1].UUID,
		UtilGPUPct: ptr(uint32(mockUtilGPU)), UtilMemPct: ptr(uint32(mockUtilMem)),
		MemUsedBytes: ptr(uint64(mockMemUsed)), MemReservedBytes: ptr(uint64(mockMemResv)), MemTotalBytes: ptr(uint64(mockMemTotal)),
		SMClockMHz: ptr(uint32(mockSMClock)), MemClockMHz: ptr(uint32(mockMemClock)),
		PowerAvgMW: ptr(uint32(mockPowerMW)), PowerInstantMW: ptr(uint32(mockInstantMW)), EnergyMJ: ptr(uint64(mockEnergyMJ)),
		ClocksEventReasons: ptr(uint64(mockReasons)), TempC: ptr(uint32(mockTempC)),
		PCIeTXBytes: ptr(uint64(mockPCIeTX)), PCIeRXBytes: ptr(uint64(mockPCIeRX)),
		NVLinkTXKiB: ptr(uint64(mockNVLinks * mockLinkTXKiB)), NVLinkRXKiB: ptr(uint64(mockNVLinks * mockLinkRXKiB)),
	}
	d.MonoNs, d.RealNs, d.PollLatencyNs = 0, 0, 0
	if got, exp := describeRow(d), describeRow(want); got != exp {
		t.Fatalf("device row\n got %s\nwant %s", got, exp)
	}
	// 5 sampling types × 2 samples × 2 GPUs; the zeroed entry and the
	// second drain add nothing.
	if len(rs.buffered) != 20 {
		t.Fatalf("%d buffered rows, want 20", len(rs.buffered))
	}
	for _, b := range rs.buffered {
		switch {
		case b.SamplingType == uint8(samplesTotalPower) && b.NVMLTimestampUs == mockTS+1 && b.Value != 300_000,
			b.SamplingType == uint8(samplesGPUUtil) && b.NVMLTimestampUs == mockTS+2 && b.Value != 20:
			t.Errorf("buffered %+v", b)
		}
	}
	// Per GPU: two utilization rows (child and a stranger) from the first
	// drain only, and a running-process row from each drain (a poll, not a
	// buffer).
	if len(rs.process) != 8 {
		t.Fatalf("%d process rows, want 8", len(rs.process))
	}
	for _, p := range rs.process {
		if p.Descendant != (p.Pid == mockChildPid) {
			t.Errorf("pid %d descendant %v", p.Pid, p.Descendant)
		}
		if p.Source == "utilization" && p.Pid == mockChildPid && (*p.SMUtilPct != mockSMUtilProc || *p.NVMLTimestampUs != mockTS) {
			t.Errorf("process row %+v", p)
		}
		if p.Source == "running" && (*p.UsedMemoryBytes != 20<<30 || p.GI != nil) {
			t.Errorf("running row %+v", p)
		}
	}
	if len(rs.gpm) != 2*len(gpmMetrics) {
		t.Fatalf("%d GPM rows, want %d", len(rs.gpm), 2*len(gpmMetrics))
	}
	for _, m := range rs.gpm {
		if m.Value != float64(m.MetricID)*1.5 || m.T1MonoNs <= m.T0MonoNs || m.GI != nil {
			t.Errorf("gpm row %+v", m)
		}
	}
	if len(rs.events) != 0 {
		t.Errorf("events with every query succeeding: %q", rs.events)
	}
}

// describeRow prints a row with its pointers dereferenced, so that a
// mismatch shows values, not addresses.
func describeRow(row any) string {
	v := reflect.ValueOf(row)
	var b strings.Builder
	for i := range v.NumField() {
		f := v.Field(i)
		fmt.Fprintf(&b, "%s=", v.Type().Field(i).Name)
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				b.WriteString("NULL ")
				continue
			}
			f = f.Elem()
		}
		fmt.Fprintf(&b, "%v ", f.Interface())
	}
	return b.String()
}

func TestNVMLSamplerFailures(t *testing.T) {
	srv := mockServer(1)
	dev := srv.devices[0]
	dev.GetPowerUsageFunc = func() (uint32, nvmlReturn) { return 0, nvmlErrNotSupported }
	dev.GetTemperatureFunc = func(uint32) (uint32, nvmlReturn) { return 0, nvmlErrUnknown }
	s, rs := openMocked(t, srv)
	for range 3 {
		s.pollDevice(s.gpus[0])
	}
	for _, r := range rs.device {
		if r.PowerAvgMW != nil || r.TempC != nil || r.UtilGPUPct == nil {
			t.Fatalf("row %+v: failed queries must be NULL, the rest kept", r)
		}
	}
	// NOT_SUPPORTED switches the query off; other errors keep trying.
	if n := dev.calls("GetPowerUsage"); n != 1 {
		t.Errorf("unsupported power queried %d times, want 1", n)
	}
	if n := dev.calls("GetTemperature"); n != 3 {
		t.Errorf("failing temperature queried %d times, want 3", n)
	}
	// One event per (GPU, query, return code), not one per poll.
	if len(rs.events) != 2 || !strings.Contains(strings.Join(rs.events, "\n"), "power: ERROR_NOT_SUPPORTED") {
		t.Errorf("events %q", rs.events)
	}
}

func TestNVMLSamplerMIG(t *testing.T) {
	srv := mockServer(1)
	dev := srv.devices[0]
	dev.GetMigModeFunc = func() (int, int, nvmlReturn) { return migEnable, migEnable, nvmlSuccess }
	// Under MIG, device utilization, sample buffers and process utilization
	// are unsupported: the sampler must not call them.
	dev.GetUtilizationRatesFunc, dev.GetSamplesFunc, dev.GetProcessUtilizationFunc = nil, nil, nil
	migDev := &mockDevice{
		GetUUIDFunc:              func() (string, nvmlReturn) { return "MIG-abc", nvmlSuccess },
		GetGpuInstanceIdFunc:     func() (int, nvmlReturn) { return 3, nvmlSuccess },
		GetComputeInstanceIdFunc: func() (int, nvmlReturn) { return 0, nvmlSuccess },
		GetMemoryInfoFunc: func() (nvmlMemory, nvmlReturn) {
			return nvmlMemory{Total: 10 << 30, Used: 4 << 30}, nvmlSuccess
		},
	}
	dev.GetMaxMigDeviceCountFunc = func() (int, nvmlReturn) { return 2, nvmlSuccess }
	dev.GetMigDeviceHandleByIndexFunc = func(i int) (nvmlDevice, nvmlReturn) {
		if i == 0 {
			return migDev, nvmlSuccess
		}
		return nil, nvmlErrNotFound
	}
	var migGPM []int
	dev.GpmMigSampleGetFunc = func(gi int, _ gpmSample) nvmlReturn {
		migGPM = append(migGPM, gi)
		return nvmlSuccess
	}
	s, rs := openMocked(t, srv)
	_, gpus := s.Info()
	if gpus[0].MIG == nil || len(gpus[0].MIG.Instances) != 1 || gpus[0].MIG.Instances[0] != (MIGInstance{UUID: "MIG-abc", GI: 3, CI: 0}) {
		t.Fatalf("MIG info %+v", gpus[0].MIG)
	}
	g := s.gpus[0]
	s.pollDevice(g)
	s.pollGPM(g)
	s.pollGPM(g)
	s.drain()
	if len(rs.device) != 2 || rs.device[0].UtilGPUPct != nil || rs.device[0].PowerAvgMW == nil {
		t.Fatalf("device rows %+v", rs.device)
	}
	m := rs.device[1]
	if m.MIGUUID == nil || *m.MIGUUID != "MIG-abc" || *m.GI != 3 || *m.MemUsedBytes != 4<<30 {
		t.Fatalf("MIG row %+v", m)
	}
	if len(migGPM) != 2 || migGPM[0] != 3 || len(rs.gpm) != len(gpmMetrics) || *rs.gpm[0].GI != 3 {
		t.Fatalf("MIG GPM samples %v, rows %d", migGPM, len(rs.gpm))
	}
	if len(rs.buffered) != 0 || len(rs.process) != 1 {
		t.Fatalf("buffered %d process %d under MIG", len(rs.buffered), len(rs.process))
	}
}

// An older driver without the GPM entry points: GPM is never touched
// (calling a missing symbol would abort the process).
func TestNVMLSamplerOldDriver(t *testing.T) {
	srv := mockServer(1)
	srv.HasSymbolFunc = func(sym string) bool {
		return !strings.HasPrefix(sym, "nvmlGpm") && sym != symClocksEvent
	}
	dev := srv.devices[0]
	dev.GpmQueryDeviceSupportFunc, dev.GpmSampleGetFunc, dev.GetCurrentClocksEventReasonsFunc = nil, nil, nil
	srv.GpmSampleAllocFunc = nil
	s, rs := openMocked(t, srv)
	s.pollDevice(s.gpus[0])
	s.pollGPM(s.gpus[0])
	if _, g := s.Info(); g[0].GPMSupported || rs.device[0].ClocksEventReasons != nil || rs.device[0].PowerAvgMW == nil {
		t.Fatalf("GPM %v, row %+v", g[0].GPMSupported, rs.device[0])
	}
}

// Through Record: the capture's NVML tables hold the mocked values.
func TestRecordWithMockedGPUs(t *testing.T) {
	srv := mockServer(2)
	rt := newRecordTest(t, "sh", "-c", "exit 0")
	rt.opts.newSampler = func(o NVMLOptions) (gpuSampler, error) { return newNVMLSampler(srv, o) }
	rt.opts.NVML.DeviceInterval = 10 * time.Millisecond
	rt.opts.NVML.DrainInterval = 20 * time.Millisecond
	res := rt.run(t)
	c := checkFinal(t, res, StatusComplete)
	if !c.Manifest.NVML.Available || len(c.Manifest.GPUs) != 2 || c.Manifest.GPUs[1].Name != "NVIDIA H100 80GB HBM3" {
		t.Fatalf("manifest nvml %+v gpus %+v", c.Manifest.NVML, c.Manifest.GPUs)
	}
	var devRows int
	if _, err := ReadTable(c, func(d *DeviceSample) error {
		devRows++
		if *d.PowerAvgMW != mockPowerMW || *d.UtilGPUPct != mockUtilGPU || *d.NVLinkRXKiB != mockNVLinks*mockLinkRXKiB {
			t.Errorf("device row %+v", d)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var bufRows, procRows int
	ReadTable(c, func(*BufferedSample) error { bufRows++; return nil })
	ReadTable(c, func(p *ProcessSample) error { procRows++; return nil })
	// The first device tick runs at once and the final drain always runs.
	if devRows < 2 || bufRows != 20 || procRows < 6 {
		t.Fatalf("rows: device %d buffered %d process %d", devRows, bufRows, procRows)
	}
	for _, f := range c.Manifest.Files {
		if f.Table == TableGPUDevice && f.Rows != int64(devRows) {
			t.Errorf("manifest says %d device rows, file has %d", f.Rows, devRows)
		}
	}
}

// The Go declarations of nvml_api.go have C's sizes on LP64 (nvml.h): a
// field out of place would shift every value after it.
func TestNVMLStructLayouts(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uintptr
	}{
		{"nvmlPciInfo_t", unsafe.Sizeof(nvmlPciInfo{}), 68},
		{"nvmlMemory_t", unsafe.Sizeof(nvmlMemory{}), 24},
		{"nvmlMemory_v2_t", unsafe.Sizeof(nvmlMemoryV2{}), memoryV2StructBytes},
		{"nvmlUtilization_t", unsafe.Sizeof(nvmlUtilization{}), 8},
		{"nvmlFieldValue_t", unsafe.Sizeof(nvmlFieldValue{}), 40},
		{"nvmlSample_t", unsafe.Sizeof(nvmlSample{}), 16},
		{"nvmlProcessUtilizationSample_t", unsafe.Sizeof(nvmlProcessUtilization{}), 32},
		{"nvmlProcessInfo_t", unsafe.Sizeof(nvmlProcessInfo{}), 24},
		{"nvmlGpmMetric_t", unsafe.Sizeof(nvmlGpmMetric{}), 40},
		{"nvmlGpmMetricsGet_t", unsafe.Sizeof(nvmlGpmMetricsGet{}), 24 + gpmMetricMax*40},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d bytes, want %d", c.name, c.got, c.want)
		}
	}
}
