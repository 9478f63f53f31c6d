//go:build linux && cgo

package record

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// openNVML loads libnvidia-ml and enumerates the GPUs. On a machine
// without a driver Init fails (ERROR_LIBRARY_NOT_FOUND) and nothing else is
// ever called: go-nvml resolves NVML's symbols only when the library loads,
// and calling one before that kills the process outright (docs/record.md E4).
func openNVML(opts NVMLOptions) (gpuSampler, error) {
	var lib nvml.Interface
	if opts.LibraryPath != "" {
		lib = nvml.New(nvml.WithLibraryPath(opts.LibraryPath))
	} else {
		lib = nvml.New()
	}
	return newNVMLSampler(lib, opts)
}

// nvmlSampler polls NVML through an injected nvml.Interface (the real
// library, or go-nvml's mocks in tests) and only ever calls methods on it
// and on nvml.Device, never package-level functions, so mocks stand in for
// everything.
type nvmlSampler struct {
	lib  nvml.Interface
	opts NVMLOptions
	info NVMLInfo
	gpus []*gpuState
	// symbols reports whether the loaded driver exports an NVML entry point
	// that not every driver has; calling a missing one aborts the process.
	symbols map[string]bool

	mu     sync.Mutex
	failed map[failKey]bool
	sinks  samplerSinks
}

type failKey struct {
	gpu   int
	query string
	ret   nvml.Return
}

// gpuState is one GPU. Each sampling goroutine owns its own fields: the
// device loop devOff, the drain loop lastSeen/lastProc/drainOff, the GPM
// loop the gpm fields.
type gpuState struct {
	info    GPUInfo
	dev     nvml.Device
	mig     bool
	migs    []migState
	nvlinks int
	gpm     bool

	devOff   map[string]bool
	drainOff map[string]bool
	lastSeen map[nvml.SamplingType]uint64
	lastProc uint64

	gpmWhole *gpmPair
	gpmMIG   map[int]*gpmPair // by GPU instance id
}

type migState struct {
	dev  nvml.Device
	uuid string
	gi   int
	ci   int
}

type gpmPair struct {
	prev, cur nvml.GpmSample
	prevT     int64
}

// Entry points newer than the oldest drivers llmprof supports; each is
// looked up before its first use.
const (
	symMemoryInfoV2      = "nvmlDeviceGetMemoryInfo_v2"
	symClocksEvent       = "nvmlDeviceGetCurrentClocksEventReasons"
	symGPMQuery          = "nvmlGpmQueryDeviceSupport"
	symGPMMetricsGet     = "nvmlGpmMetricsGet"
	symGPMMigSampleGet   = "nvmlGpmMigSampleGet"
	symMigMode           = "nvmlDeviceGetMigMode"
	symEnergyConsumption = "nvmlDeviceGetTotalEnergyConsumption"
)

func newNVMLSampler(lib nvml.Interface, opts NVMLOptions) (*nvmlSampler, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		// Never touch lib again: see openNVML.
		return nil, fmt.Errorf("%w: nvml init: %v%s", ErrNVMLUnavailable, ret, initHint(ret))
	}
	s := &nvmlSampler{lib: lib, opts: opts.withDefaults(), failed: map[failKey]bool{}, symbols: map[string]bool{}}
	ext := lib.Extensions()
	for _, sym := range []string{symMemoryInfoV2, symClocksEvent, symGPMQuery, symGPMMetricsGet, symGPMMigSampleGet, symMigMode, symEnergyConsumption} {
		s.symbols[sym] = ext.LookupSymbol(sym) == nil
	}
	s.info.Available = true
	if v, ret := lib.SystemGetDriverVersion(); ret == nvml.SUCCESS {
		s.info.DriverVersion = v
	}
	if v, ret := lib.SystemGetNVMLVersion(); ret == nvml.SUCCESS {
		s.info.NVMLVersion = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvml.SUCCESS {
		s.info.CUDADriverVersion = v
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		_ = lib.Shutdown()
		return nil, fmt.Errorf("%w: nvml device count: %v", ErrNVMLUnavailable, ret)
	}
	if n == 0 {
		_ = lib.Shutdown()
		return nil, fmt.Errorf("%w: the driver reports no GPU", ErrNVMLUnavailable)
	}
	for i := range n {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			continue
		}
		s.gpus = append(s.gpus, s.describe(i, dev))
	}
	if len(s.gpus) == 0 {
		_ = lib.Shutdown()
		return nil, fmt.Errorf("%w: none of %d GPUs could be opened", ErrNVMLUnavailable, n)
	}
	return s, nil
}

func initHint(ret nvml.Return) string {
	switch ret {
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		return " (libnvidia-ml.so.1 not found: no NVIDIA driver on this machine, or --nvml-lib points elsewhere)"
	case nvml.ERROR_DRIVER_NOT_LOADED:
		return " (the NVIDIA driver is not running)"
	case nvml.ERROR_NO_PERMISSION:
		return " (no permission to talk to the driver)"
	}
	return ""
}

// describe reads what does not change during the run.
func (s *nvmlSampler) describe(index int, dev nvml.Device) *gpuState {
	g := &gpuState{
		dev: dev, devOff: map[string]bool{}, drainOff: map[string]bool{},
		lastSeen: map[nvml.SamplingType]uint64{}, gpmMIG: map[int]*gpmPair{},
	}
	g.info.Index = index
	g.info.UUID, _ = dev.GetUUID()
	g.info.Name, _ = dev.GetName()
	if pci, ret := dev.GetPciInfo(); ret == nvml.SUCCESS {
		g.info.PCIBusID = cString(pci.BusId[:])
	}
	if arch, ret := dev.GetArchitecture(); ret == nvml.SUCCESS {
		g.info.Arch = archName(arch)
	}
	if major, minor, ret := dev.GetCudaComputeCapability(); ret == nvml.SUCCESS {
		g.info.ComputeCap = fmt.Sprintf("%d.%d", major, minor)
	}
	if mem, ret := dev.GetMemoryInfo(); ret == nvml.SUCCESS {
		g.info.MemoryTotalBytes = mem.Total
	}
	if v, ret := dev.GetMaxClockInfo(nvml.CLOCK_SM); ret == nvml.SUCCESS {
		g.info.MaxSMClockMHz = v
	}
	if v, ret := dev.GetEnforcedPowerLimit(); ret == nvml.SUCCESS {
		g.info.PowerLimitMW = v
	}
	links := []nvml.FieldValue{{FieldId: nvml.FI_DEV_NVLINK_LINK_COUNT}}
	if dev.GetFieldValues(links) == nvml.SUCCESS {
		if v, ok := fieldUint(links[0]); ok {
			g.nvlinks = int(min(v, nvml.NVLINK_MAX_LINKS))
			g.info.NVLinks = g.nvlinks
		}
	}
	if s.symbols[symGPMQuery] && s.symbols[symGPMMetricsGet] {
		if sup, ret := dev.GpmQueryDeviceSupport(); ret == nvml.SUCCESS && sup.IsSupportedDevice != 0 {
			g.gpm, g.info.GPMSupported = true, true
		}
	}
	if s.symbols[symMigMode] {
		if cur, _, ret := dev.GetMigMode(); ret == nvml.SUCCESS && cur == nvml.DEVICE_MIG_ENABLE {
			g.mig = true
			g.info.MIG = &MIGInfo{Enabled: true, Instances: []MIGInstance{}}
			count, _ := dev.GetMaxMigDeviceCount()
			for j := range count {
				m, ret := dev.GetMigDeviceHandleByIndex(j)
				if ret != nvml.SUCCESS {
					continue // NOT_FOUND: an empty slot
				}
				ms := migState{dev: m}
				ms.uuid, _ = m.GetUUID()
				ms.gi, _ = m.GetGpuInstanceId()
				ms.ci, _ = m.GetComputeInstanceId()
				g.migs = append(g.migs, ms)
				g.info.MIG.Instances = append(g.info.MIG.Instances, MIGInstance{UUID: ms.uuid, GI: ms.gi, CI: ms.ci})
			}
		}
	}
	return g
}

func (s *nvmlSampler) Info() (NVMLInfo, []GPUInfo) {
	gpus := make([]GPUInfo, len(s.gpus))
	for i, g := range s.gpus {
		gpus[i] = g.info
	}
	return s.info, gpus
}

// Run starts one goroutine per cadence (not per GPU: a tick polls every GPU
// in turn), waits for ctx, and drains the ring buffers one last time.
func (s *nvmlSampler) Run(ctx context.Context, sinks samplerSinks) {
	s.sinks = sinks
	var wg sync.WaitGroup
	loop := func(interval time.Duration, tick func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			every(ctx, interval, tick, sinks.overrun)
		}()
	}
	loop(s.opts.DeviceInterval, func() {
		for _, g := range s.gpus {
			s.pollDevice(g)
		}
	})
	loop(s.opts.DrainInterval, func() { s.drain() })
	if s.anyGPM() {
		loop(s.opts.GPMInterval, func() {
			for _, g := range s.gpus {
				s.pollGPM(g)
			}
		})
	}
	wg.Wait()
	s.drain()
}

func (s *nvmlSampler) anyGPM() bool {
	for _, g := range s.gpus {
		if g.gpm {
			return true
		}
	}
	return false
}

// every calls tick now and then every interval until ctx ends. A tick that
// runs past the next one skips ticks rather than queueing them; the skipped
// ones are counted.
func every(ctx context.Context, interval time.Duration, tick func(), overrun func(int64)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		start := time.Now()
		tick()
		if late := time.Since(start); late > interval && overrun != nil {
			overrun(int64(late / interval))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *nvmlSampler) Close() {
	for _, g := range s.gpus {
		if g.gpmWhole != nil {
			g.gpmWhole.free()
		}
		for _, p := range g.gpmMIG {
			p.free()
		}
	}
	_ = s.lib.Shutdown()
}

// ok reports whether a query succeeded. The first failure of each (GPU,
// query, return code) becomes one event; NOT_SUPPORTED also switches the
// query off for that GPU, so an unsupported counter costs one call, not ten
// a second.
func (s *nvmlSampler) ok(g *gpuState, off map[string]bool, query string, ret nvml.Return) bool {
	if ret == nvml.SUCCESS {
		return true
	}
	if ret == nvml.ERROR_NOT_SUPPORTED {
		off[query] = true
	}
	k := failKey{g.info.Index, query, ret}
	s.mu.Lock()
	first := !s.failed[k]
	s.failed[k] = true
	s.mu.Unlock()
	if first && s.sinks.event != nil {
		code := int64(ret)
		s.sinks.event("nvml_error", fmt.Sprintf("GPU %d %s: %v", g.info.Index, query, ret), &code)
	}
	return false
}

// pollDevice reads the device-level counters of one GPU (and of its MIG
// instances, which support fewer of them).
func (s *nvmlSampler) pollDevice(g *gpuState) {
	off := g.devOff
	row := DeviceSample{GPU: int16(g.info.Index), GPUUUID: g.info.UUID}
	row.RealNs = realNow()
	row.MonoNs = monoNow()
	// Device utilization is not supported on MIG-enabled GPUs (nvml.h).
	if !g.mig && !off["utilization"] {
		if u, ret := g.dev.GetUtilizationRates(); s.ok(g, off, "utilization", ret) {
			row.UtilGPUPct, row.UtilMemPct = ptr(u.Gpu), ptr(u.Memory)
		}
	}
	if s.symbols[symMemoryInfoV2] && !off["memory_v2"] {
		if m, ret := g.dev.GetMemoryInfo_v2(); s.ok(g, off, "memory_v2", ret) {
			row.MemUsedBytes, row.MemReservedBytes, row.MemTotalBytes = ptr(m.Used), ptr(m.Reserved), ptr(m.Total)
		}
	}
	if row.MemUsedBytes == nil && !off["memory"] {
		if m, ret := g.dev.GetMemoryInfo(); s.ok(g, off, "memory", ret) {
			row.MemUsedBytes, row.MemTotalBytes = ptr(m.Used), ptr(m.Total)
		}
	}
	if !off["sm_clock"] {
		if v, ret := g.dev.GetClockInfo(nvml.CLOCK_SM); s.ok(g, off, "sm_clock", ret) {
			row.SMClockMHz = ptr(v)
		}
	}
	if !off["mem_clock"] {
		if v, ret := g.dev.GetClockInfo(nvml.CLOCK_MEM); s.ok(g, off, "mem_clock", ret) {
			row.MemClockMHz = ptr(v)
		}
	}
	if !off["power"] {
		if v, ret := g.dev.GetPowerUsage(); s.ok(g, off, "power", ret) {
			row.PowerAvgMW = ptr(v)
		}
	}
	if s.symbols[symEnergyConsumption] && !off["energy"] {
		if v, ret := g.dev.GetTotalEnergyConsumption(); s.ok(g, off, "energy", ret) {
			row.EnergyMJ = ptr(v)
		}
	}
	if s.symbols[symClocksEvent] && !off["clocks_event_reasons"] {
		if v, ret := g.dev.GetCurrentClocksEventReasons(); s.ok(g, off, "clocks_event_reasons", ret) {
			row.ClocksEventReasons = ptr(v)
		}
	}
	if !off["temperature"] {
		if v, ret := g.dev.GetTemperature(nvml.TEMPERATURE_GPU); s.ok(g, off, "temperature", ret) {
			row.TempC = ptr(v)
		}
	}
	if !off["field_values"] {
		s.readFields(g, off, &row)
	}
	row.PollLatencyNs = int32(min(monoNow()-row.MonoNs, math.MaxInt32))
	s.sinks.device(row)
	for _, m := range g.migs {
		s.pollMIG(g, m)
	}
}

// readFields reads the counters that only exist as NVML field values, in
// one driver call: instantaneous power, PCIe byte counters and per-link
// NVLink throughput (summed over links). Each field has its own return.
func (s *nvmlSampler) readFields(g *gpuState, off map[string]bool, row *DeviceSample) {
	fv := []nvml.FieldValue{
		{FieldId: nvml.FI_DEV_POWER_INSTANT},
		{FieldId: nvml.FI_DEV_PCIE_COUNT_TX_BYTES},
		{FieldId: nvml.FI_DEV_PCIE_COUNT_RX_BYTES},
	}
	for link := range g.nvlinks {
		fv = append(fv,
			nvml.FieldValue{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: uint32(link)},
			nvml.FieldValue{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: uint32(link)})
	}
	if !s.ok(g, off, "field_values", g.dev.GetFieldValues(fv)) {
		return
	}
	field := func(i int, name string) (uint64, bool) {
		if off[name] {
			return 0, false
		}
		if !s.ok(g, off, name, nvml.Return(fv[i].NvmlReturn)) {
			return 0, false
		}
		return fieldUint(fv[i])
	}
	if v, ok := field(0, "power_instant"); ok {
		row.PowerInstantMW = ptr(uint32(v))
	}
	if v, ok := field(1, "pcie_tx_bytes"); ok {
		row.PCIeTXBytes = ptr(v)
	}
	if v, ok := field(2, "pcie_rx_bytes"); ok {
		row.PCIeRXBytes = ptr(v)
	}
	var tx, rx uint64
	var txOK, rxOK bool
	for link := range g.nvlinks {
		if v, ok := field(3+2*link, "nvlink_tx"); ok {
			tx, txOK = tx+v, true
		}
		if v, ok := field(4+2*link, "nvlink_rx"); ok {
			rx, rxOK = rx+v, true
		}
	}
	if txOK {
		row.NVLinkTXKiB = ptr(tx)
	}
	if rxOK {
		row.NVLinkRXKiB = ptr(rx)
	}
}

// pollMIG reads a MIG instance's memory; utilization is not available per
// MIG device (GPM covers it, per GPU instance).
func (s *nvmlSampler) pollMIG(g *gpuState, m migState) {
	key := "mig_memory:" + m.uuid
	if g.devOff[key] {
		return
	}
	row := DeviceSample{GPU: int16(g.info.Index), GPUUUID: g.info.UUID, MIGUUID: ptr(m.uuid), GI: ptr(int32(m.gi))}
	row.RealNs, row.MonoNs = realNow(), monoNow()
	if mem, ret := m.dev.GetMemoryInfo(); s.ok(g, g.devOff, key, ret) {
		row.MemUsedBytes, row.MemTotalBytes = ptr(mem.Used), ptr(mem.Total)
	}
	row.PollLatencyNs = int32(min(monoNow()-row.MonoNs, math.MaxInt32))
	s.sinks.device(row)
}

// drain reads the driver's sample ring buffers and per-process figures of
// every GPU. lastSeen makes each call return only samples newer than the
// previous drain; NOT_FOUND means nothing new.
func (s *nvmlSampler) drain() {
	var desc map[uint32]bool
	if s.sinks.descendants != nil {
		desc = s.sinks.descendants()
	}
	for _, g := range s.gpus {
		now := monoNow()
		if !g.mig { // sample buffers and process utilization are unsupported under MIG
			for _, bt := range bufferedTypes {
				s.drainBuffer(g, now, nvml.SamplingType(bt.code))
			}
			s.drainProcessUtil(g, now, desc)
		}
		s.pollRunning(g, now, desc)
	}
}

func (s *nvmlSampler) drainBuffer(g *gpuState, now int64, st nvml.SamplingType) {
	query := fmt.Sprintf("samples:%d", st)
	if g.drainOff[query] {
		return
	}
	vt, samples, ret := g.dev.GetSamples(st, g.lastSeen[st])
	if ret == nvml.ERROR_NOT_FOUND || !s.ok(g, g.drainOff, query, ret) {
		return
	}
	last := g.lastSeen[st]
	for _, smp := range samples {
		// Older go-nvml tags return zeroed trailing entries; and the driver
		// may repeat the sample at lastSeen.
		if smp.TimeStamp == 0 || smp.TimeStamp <= g.lastSeen[st] {
			continue
		}
		raw := binary.LittleEndian.Uint64(smp.SampleValue[:])
		s.sinks.buffered(BufferedSample{
			MonoNs: now, GPU: int16(g.info.Index), GPUUUID: g.info.UUID,
			SamplingType: uint8(st), NVMLTimestampUs: smp.TimeStamp,
			ValueType: uint8(vt), ValueRaw: raw, Value: decodeValue(vt, smp.SampleValue),
		})
		last = max(last, smp.TimeStamp)
	}
	g.lastSeen[st] = last
}

func (s *nvmlSampler) drainProcessUtil(g *gpuState, now int64, desc map[uint32]bool) {
	const query = "process_utilization"
	if g.drainOff[query] {
		return
	}
	procs, ret := g.dev.GetProcessUtilization(g.lastProc)
	if ret == nvml.ERROR_NOT_FOUND || !s.ok(g, g.drainOff, query, ret) {
		return
	}
	last := g.lastProc
	for _, p := range procs {
		if p.TimeStamp <= g.lastProc {
			continue
		}
		s.sinks.process(ProcessSample{
			MonoNs: now, GPU: int16(g.info.Index), GPUUUID: g.info.UUID, Pid: p.Pid, Source: "utilization",
			NVMLTimestampUs: ptr(p.TimeStamp), SMUtilPct: ptr(p.SmUtil), MemUtilPct: ptr(p.MemUtil),
			EncUtilPct: ptr(p.EncUtil), DecUtilPct: ptr(p.DecUtil), Descendant: desc[p.Pid],
		})
		last = max(last, p.TimeStamp)
	}
	g.lastProc = last
}

func (s *nvmlSampler) pollRunning(g *gpuState, now int64, desc map[uint32]bool) {
	const query = "running_processes"
	if g.drainOff[query] {
		return
	}
	procs, ret := g.dev.GetComputeRunningProcesses()
	if !s.ok(g, g.drainOff, query, ret) {
		return
	}
	for _, p := range procs {
		row := ProcessSample{
			MonoNs: now, GPU: int16(g.info.Index), GPUUUID: g.info.UUID, Pid: p.Pid, Source: "running",
			UsedMemoryBytes: ptr(p.UsedGpuMemory), Descendant: desc[p.Pid],
		}
		// 0xFFFFFFFF: not reported (the v1 API, or not a MIG placement).
		if p.GpuInstanceId != math.MaxUint32 {
			row.GI = ptr(p.GpuInstanceId)
		}
		if p.ComputeInstanceId != math.MaxUint32 {
			row.CI = ptr(p.ComputeInstanceId)
		}
		s.sinks.process(row)
	}
}

// pollGPM takes a GPM sample of a GPU (or of each of its MIG GPU
// instances) and turns the difference to the previous one into metrics.
// The two samples are recycled: the current one becomes the previous.
func (s *nvmlSampler) pollGPM(g *gpuState) {
	if !g.gpm || g.devOff["gpm"] {
		return
	}
	if g.mig {
		if !s.symbols[symGPMMigSampleGet] {
			return
		}
		for _, m := range g.migs {
			p := g.gpmMIG[m.gi]
			if p == nil {
				if p = s.allocPair(g); p == nil {
					return
				}
				g.gpmMIG[m.gi] = p
			}
			gi := int32(m.gi)
			s.gpmStep(g, p, &gi, func(smp nvml.GpmSample) nvml.Return { return g.dev.GpmMigSampleGet(m.gi, smp) })
		}
		return
	}
	if g.gpmWhole == nil {
		if g.gpmWhole = s.allocPair(g); g.gpmWhole == nil {
			return
		}
	}
	s.gpmStep(g, g.gpmWhole, nil, g.dev.GpmSampleGet)
}

func (p *gpmPair) free() {
	_ = p.prev.Free()
	_ = p.cur.Free()
}

func (s *nvmlSampler) allocPair(g *gpuState) *gpmPair {
	a, ret := s.lib.GpmSampleAlloc()
	if !s.ok(g, g.devOff, "gpm", ret) {
		return nil
	}
	b, ret := s.lib.GpmSampleAlloc()
	if !s.ok(g, g.devOff, "gpm", ret) {
		_ = a.Free()
		return nil
	}
	return &gpmPair{prev: a, cur: b}
}

func (s *nvmlSampler) gpmStep(g *gpuState, p *gpmPair, gi *int32, get func(nvml.GpmSample) nvml.Return) {
	t := monoNow()
	if !s.ok(g, g.devOff, "gpm_sample", get(p.cur)) {
		return
	}
	if p.prevT != 0 {
		// Never a composite literal: the Metrics array grows with every
		// NVML header (210, 333, 477 entries across go-nvml tags).
		var mg nvml.GpmMetricsGetType
		for i, m := range gpmMetrics {
			mg.Metrics[i].MetricId = uint32(m.code)
		}
		mg.NumMetrics = uint32(len(gpmMetrics))
		mg.Sample1, mg.Sample2 = p.prev, p.cur
		if s.ok(g, g.devOff, "gpm_metrics", s.lib.GpmMetricsGet(&mg)) {
			for i, m := range gpmMetrics {
				if mg.Metrics[i].NvmlReturn != uint32(nvml.SUCCESS) {
					continue
				}
				s.sinks.gpm(GPMSample{T0MonoNs: p.prevT, T1MonoNs: t, GPU: int16(g.info.Index),
					GPUUUID: g.info.UUID, GI: gi, MetricID: m.code, Value: mg.Metrics[i].Value})
			}
		}
	}
	p.prev, p.cur, p.prevT = p.cur, p.prev, t
}

// fieldUint decodes a field value as an unsigned integer.
func fieldUint(fv nvml.FieldValue) (uint64, bool) {
	v := decodeValue(nvml.ValueType(fv.ValueType), fv.Value)
	if math.IsNaN(v) || v < 0 {
		return 0, false
	}
	if nvml.ValueType(fv.ValueType) == nvml.VALUE_TYPE_UNSIGNED_LONG_LONG || nvml.ValueType(fv.ValueType) == nvml.VALUE_TYPE_UNSIGNED_LONG {
		return binary.LittleEndian.Uint64(fv.Value[:]), true
	}
	return uint64(v), true
}

// decodeValue decodes NVML's 8-byte value union by its type (nvml.h,
// nvmlValue_t; little-endian on every platform NVML supports).
func decodeValue(vt nvml.ValueType, b [8]byte) float64 {
	switch vt {
	case nvml.VALUE_TYPE_DOUBLE:
		return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
	case nvml.VALUE_TYPE_UNSIGNED_INT:
		return float64(binary.LittleEndian.Uint32(b[:4]))
	case nvml.VALUE_TYPE_UNSIGNED_LONG, nvml.VALUE_TYPE_UNSIGNED_LONG_LONG:
		return float64(binary.LittleEndian.Uint64(b[:]))
	case nvml.VALUE_TYPE_SIGNED_LONG_LONG:
		return float64(int64(binary.LittleEndian.Uint64(b[:])))
	case nvml.VALUE_TYPE_SIGNED_INT:
		return float64(int32(binary.LittleEndian.Uint32(b[:4])))
	case nvml.VALUE_TYPE_UNSIGNED_SHORT:
		return float64(binary.LittleEndian.Uint16(b[:2]))
	}
	return math.NaN()
}

func cString(b []int8) string {
	out := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		out = append(out, byte(c))
	}
	return string(out)
}

func archName(a nvml.DeviceArchitecture) string {
	switch a {
	case nvml.DEVICE_ARCH_KEPLER:
		return "kepler"
	case nvml.DEVICE_ARCH_MAXWELL:
		return "maxwell"
	case nvml.DEVICE_ARCH_PASCAL:
		return "pascal"
	case nvml.DEVICE_ARCH_VOLTA:
		return "volta"
	case nvml.DEVICE_ARCH_TURING:
		return "turing"
	case nvml.DEVICE_ARCH_AMPERE:
		return "ampere"
	case nvml.DEVICE_ARCH_ADA:
		return "ada"
	case nvml.DEVICE_ARCH_HOPPER:
		return "hopper"
	case nvml.DEVICE_ARCH_BLACKWELL:
		return "blackwell"
	}
	return fmt.Sprintf("arch(%d)", a)
}
