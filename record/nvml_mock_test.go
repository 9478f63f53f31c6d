//go:build linux && cgo

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

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// The mocked telemetry. go-nvml's server mocks implement identity and MIG
// management only; every telemetry function the sampler calls is set here,
// and one the sampler must not call is left nil, so calling it panics.
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

func u32(b *[8]byte, v uint32)  { binary.LittleEndian.PutUint32(b[:4], v) }
func u64(b *[8]byte, v uint64)  { binary.LittleEndian.PutUint64(b[:], v) }
func f64(b *[8]byte, v float64) { binary.LittleEndian.PutUint64(b[:], math.Float64bits(v)) }

// mockGPMSample is a GPM sample buffer the mocks hand out.
func mockGPMSample() nvml.GpmSample {
	return &mock.GpmSample{FreeFunc: func() nvml.Return { return nvml.SUCCESS }}
}

// setTelemetry fills in every telemetry function of a whole (non-MIG) GPU.
func setTelemetry(d *server.Device) {
	d.GetMaxClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1980, nvml.SUCCESS }
	d.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 700_000, nvml.SUCCESS }
	d.GpmQueryDeviceSupportFunc = func() (nvml.GpmSupport, nvml.Return) {
		return nvml.GpmSupport{Version: nvml.GPM_SUPPORT_VERSION, IsSupportedDevice: 1}, nvml.SUCCESS
	}
	d.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: mockUtilGPU, Memory: mockUtilMem}, nvml.SUCCESS
	}
	d.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
		return nvml.Memory_v2{Total: mockMemTotal, Reserved: mockMemResv, Used: mockMemUsed, Free: mockMemTotal - mockMemUsed}, nvml.SUCCESS
	}
	d.GetClockInfoFunc = func(ct nvml.ClockType) (uint32, nvml.Return) {
		switch ct {
		case nvml.CLOCK_SM:
			return mockSMClock, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return mockMemClock, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
	d.GetPowerUsageFunc = func() (uint32, nvml.Return) { return mockPowerMW, nvml.SUCCESS }
	d.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return mockEnergyMJ, nvml.SUCCESS }
	d.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return mockReasons, nvml.SUCCESS }
	d.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return mockTempC, nvml.SUCCESS }
	d.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return {
		for i := range fv {
			f := &fv[i]
			f.NvmlReturn = uint32(nvml.SUCCESS)
			f.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
			switch f.FieldId {
			case nvml.FI_DEV_NVLINK_LINK_COUNT:
				f.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
				u32(&f.Value, mockNVLinks)
			case nvml.FI_DEV_POWER_INSTANT:
				f.ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
				u32(&f.Value, mockInstantMW)
			case nvml.FI_DEV_PCIE_COUNT_TX_BYTES:
				u64(&f.Value, mockPCIeTX)
			case nvml.FI_DEV_PCIE_COUNT_RX_BYTES:
				u64(&f.Value, mockPCIeRX)
			case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX:
				u64(&f.Value, mockLinkTXKiB)
			case nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX:
				u64(&f.Value, mockLinkRXKiB)
			default:
				f.NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
			}
		}
		return nvml.SUCCESS
	}
	d.GetSamplesFunc = func(st nvml.SamplingType, last uint64) (nvml.ValueType, []nvml.Sample, nvml.Return) {
		if last >= mockTS+2 {
			return 0, nil, nvml.ERROR_NOT_FOUND // nothing new
		}
		s := []nvml.Sample{{TimeStamp: mockTS + 1}, {TimeStamp: mockTS + 2}, {}} // a zeroed trailing entry, as older tags return
		if st == nvml.TOTAL_POWER_SAMPLES {
			u32(&s[0].SampleValue, 300_000)
			u32(&s[1].SampleValue, 310_000)
			return nvml.VALUE_TYPE_UNSIGNED_INT, s, nvml.SUCCESS
		}
		f64(&s[0].SampleValue, 10)
		f64(&s[1].SampleValue, 20)
		return nvml.VALUE_TYPE_DOUBLE, s, nvml.SUCCESS
	}
	d.GetProcessUtilizationFunc = func(last uint64) ([]nvml.ProcessUtilizationSample, nvml.Return) {
		if last >= mockTS {
			return nil, nvml.ERROR_NOT_FOUND
		}
		return []nvml.ProcessUtilizationSample{
			{Pid: mockChildPid, TimeStamp: mockTS, SmUtil: mockSMUtilProc, MemUtil: 9},
			{Pid: mockOtherPid, TimeStamp: mockTS, SmUtil: 3, MemUtil: 1},
		}, nvml.SUCCESS
	}
	d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) {
		return []nvml.ProcessInfo{{Pid: mockChildPid, UsedGpuMemory: 20 << 30, GpuInstanceId: math.MaxUint32, ComputeInstanceId: math.MaxUint32}}, nvml.SUCCESS
	}
	d.GpmSampleGetFunc = func(nvml.GpmSample) nvml.Return { return nvml.SUCCESS }
}

// mockServer is a DGX H100 with n GPUs, telemetry set on each, and GPM.
func mockServer(n int) *server.Server {
	s := dgxh100.NewWithGPUs(gpus.Multiple(n, gpus.H100_SXM5_80GB)...)
	for _, d := range s.Devices {
		setTelemetry(d.(*server.Device))
	}
	s.GpmSampleAllocFunc = func() (nvml.GpmSample, nvml.Return) { return mockGPMSample(), nvml.SUCCESS }
	s.GpmMetricsGetFunc = func(mg *nvml.GpmMetricsGetType) nvml.Return {
		for i := range mg.NumMetrics {
			mg.Metrics[i].NvmlReturn = uint32(nvml.SUCCESS)
			mg.Metrics[i].Value = float64(mg.Metrics[i].MetricId) * 1.5
		}
		return nvml.SUCCESS
	}
	return s
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
func openMocked(t *testing.T, srv *server.Server) (*nvmlSampler, *rowSink) {
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
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	s, err := newNVMLSampler(lib, NVMLOptions{})
	if s != nil || !errors.Is(err, ErrNVMLUnavailable) || !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") {
		t.Fatalf("got %v, %v", s, err)
	}
	if n := len(lib.InitCalls()); n != 1 {
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
		case b.SamplingType == uint8(nvml.TOTAL_POWER_SAMPLES) && b.NVMLTimestampUs == mockTS+1 && b.Value != 300_000,
			b.SamplingType == uint8(nvml.GPU_UTILIZATION_SAMPLES) && b.NVMLTimestampUs == mockTS+2 && b.Value != 20:
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
	dev := srv.Devices[0].(*server.Device)
	dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
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
	if n := len(dev.GetPowerUsageCalls()); n != 1 {
		t.Errorf("unsupported power queried %d times, want 1", n)
	}
	if n := len(dev.GetTemperatureCalls()); n != 3 {
		t.Errorf("failing temperature queried %d times, want 3", n)
	}
	// One event per (GPU, query, return code), not one per poll.
	if len(rs.events) != 2 || !strings.Contains(strings.Join(rs.events, "\n"), "power: ERROR_NOT_SUPPORTED") {
		t.Errorf("events %q", rs.events)
	}
}

func TestNVMLSamplerMIG(t *testing.T) {
	srv := mockServer(1)
	dev := srv.Devices[0].(*server.Device)
	dev.MigMode = nvml.DEVICE_MIG_ENABLE
	// Under MIG, device utilization, sample buffers and process utilization
	// are unsupported: the sampler must not call them.
	dev.GetUtilizationRatesFunc, dev.GetSamplesFunc, dev.GetProcessUtilizationFunc = nil, nil, nil
	migDev := &mock.Device{
		GetUUIDFunc:              func() (string, nvml.Return) { return "MIG-abc", nvml.SUCCESS },
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return 3, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 10 << 30, Used: 4 << 30}, nvml.SUCCESS
		},
	}
	dev.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 2, nvml.SUCCESS }
	dev.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 0 {
			return migDev, nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	var migGPM []int
	dev.GpmMigSampleGetFunc = func(gi int, _ nvml.GpmSample) nvml.Return {
		migGPM = append(migGPM, gi)
		return nvml.SUCCESS
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
	srv.LookupSymbolFunc = func(sym string) error {
		if strings.HasPrefix(sym, "nvmlGpm") || sym == symClocksEvent {
			return errors.New("not found")
		}
		return nil
	}
	dev := srv.Devices[0].(*server.Device)
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
