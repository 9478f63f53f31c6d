package record

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"time"
)

// nvmlSampler polls NVML through an injected nvmlLib (the real library
// loaded at run time by nvml_dl.go, or the mocks of nvml_mock_test.go) and
// only ever calls methods on it and on nvmlDevice, so mocks stand in for
// everything.
type nvmlSampler struct {
	lib  nvmlLib
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
	ret   nvmlReturn
}

// gpuState is one GPU. Each sampling goroutine owns its own fields: the
// device loop devOff, the drain loop lastSeen/lastProc/drainOff, the GPM
// loop the gpm fields.
type gpuState struct {
	info    GPUInfo
	dev     nvmlDevice
	mig     bool
	migs    []migState
	nvlinks int
	gpm     bool

	devOff   map[string]bool
	drainOff map[string]bool
	lastSeen map[uint32]uint64
	lastProc uint64

	gpmWhole *gpmPair
	gpmMIG   map[int]*gpmPair // by GPU instance id
}

type migState struct {
	dev  nvmlDevice
	uuid string
	gi   int
	ci   int
}

type gpmPair struct {
	prev, cur gpmSample
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

func newNVMLSampler(lib nvmlLib, opts NVMLOptions) (*nvmlSampler, error) {
	if ret := lib.Init(); ret != nvmlSuccess {
		// Never touch lib again: see openNVML.
		return nil, fmt.Errorf("%w: nvml init: %v%s", ErrNVMLUnavailable, ret, initHint(ret))
	}
	s := &nvmlSampler{lib: lib, opts: opts.withDefaults(), failed: map[failKey]bool{}, symbols: map[string]bool{}}
	for _, sym := range []string{symMemoryInfoV2, symClocksEvent, symGPMQuery, symGPMMetricsGet, symGPMMigSampleGet, symMigMode, symEnergyConsumption} {
		s.symbols[sym] = lib.HasSymbol(sym)
	}
	s.info.Available = true
	if v, ret := lib.SystemGetDriverVersion(); ret == nvmlSuccess {
		s.info.DriverVersion = v
	}
	if v, ret := lib.SystemGetNVMLVersion(); ret == nvmlSuccess {
		s.info.NVMLVersion = v
	}
	if v, ret := lib.SystemGetCudaDriverVersion(); ret == nvmlSuccess {
		s.info.CUDADriverVersion = v
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvmlSuccess {
		_ = lib.Shutdown()
		return nil, fmt.Errorf("%w: nvml device count: %v", ErrNVMLUnavailable, ret)
	}
	if n == 0 {
		_ = lib.Shutdown()
		return nil, fmt.Errorf("%w: the driver reports no GPU", ErrNVMLUnavailable)
	}
	for i := range n {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvmlSuccess {
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

func initHint(ret nvmlReturn) string {
	switch ret {
	case nvmlErrLibraryNotFound:
		return " (libnvidia-ml.so.1 not found: no NVIDIA driver on this machine, or --nvml-lib points elsewhere)"
	case nvmlErrDriverNotLoaded:
		return " (the NVIDIA driver is not running)"
	case nvmlErrNoPermission:
		return " (no permission to talk to the driver)"
	}
	return ""
}

// describe reads what does not change during the run.
func (s *nvmlSampler) describe(index int, dev nvmlDevice) *gpuState {
	g := &gpuState{
		dev: dev, devOff: map[string]bool{}, drainOff: map[string]bool{},
		lastSeen: map[uint32]uint64{}, gpmMIG: map[int]*gpmPair{},
	}
	g.info.Index = index
	g.info.UUID, _ = dev.GetUUID()
	g.info.Name, _ = dev.GetName()
	if pci, ret := dev.GetPciInfo(); ret == nvmlSuccess {
		g.info.PCIBusID = cString(pci.BusId[:])
	}
	if arch, ret := dev.GetArchitecture(); ret == nvmlSuccess {
		g.info.Arch = archName(arch)
	}
	if major, minor, ret := dev.GetCudaComputeCapability(); ret == nvmlSuccess {
		g.info.ComputeCap = fmt.Sprintf("%d.%d", major, minor)
	}
	if mem, ret := dev.GetMemoryInfo(); ret == nvmlSuccess {
		g.info.MemoryTotalBytes = mem.Total
	}
	if v, ret := dev.GetMaxClockInfo(clockSM); ret == nvmlSuccess {
		g.info.MaxSMClockMHz = v
	}
	if v, ret := dev.GetEnforcedPowerLimit(); ret == nvmlSuccess {
		g.info.PowerLimitMW = v
	}
	links := []nvmlFieldValue{{FieldId: fiNVLinkLinkCount}}
	if dev.GetFieldValues(links) == nvmlSuccess {
		if v, ok := fieldUint(links[0]); ok {
			g.nvlinks = int(min(v, nvlinkMaxLinks))
			g.info.NVLinks = g.nvlinks
		}
	}
	if s.symbols[symGPMQuery] && s.symbols[symGPMMetricsGet] {
		if sup, ret := dev.GpmQueryDeviceSupport(); ret == nvmlSuccess && sup.IsSupportedDevice != 0 {
			g.gpm, g.info.GPMSupported = true, true
		}
	}
	if s.symbols[symMigMode] {
		if cur, _, ret := dev.GetMigMode(); ret == nvmlSuccess && cur == migEnable {
			g.mig = true
			g.info.MIG = &MIGInfo{Enabled: true, Instances: []MIGInstance{}}
			count, _ := dev.GetMaxMigDeviceCount()
			for j := range count {
				m, ret := dev.GetMigDeviceHandleByIndex(j)
				if ret != nvmlSuccess {
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
			g.gpmWhole.free(s.lib)
		}
		for _, p := range g.gpmMIG {
			p.free(s.lib)
		}
	}
	_ = s.lib.Shutdown()
}

// ok reports whether a query succeeded. The first failure of each (GPU,
// query, return code) becomes one event; NOT_SUPPORTED also switches the
// query off for that GPU, so an unsupported counter costs one call, not ten
// a second.
func (s *nvmlSampler) ok(g *gpuState, off map[string]bool, query string, ret nvmlReturn) bool {
	if ret == nvmlSuccess {
		return true
	}
	if ret == nvmlErrNotSupported {
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
		if m, ret := g.dev.GetMemoryInfoV2(); s.ok(g, off, "memory_v2", ret) {
			row.MemUsedBytes, row.MemReservedBytes, row.MemTotalBytes = ptr(m.Used), ptr(m.Reserved), ptr(m.Total)
		}
	}
	if row.MemUsedBytes == nil && !off["memory"] {
		if m, ret := g.dev.GetMemoryInfo(); s.ok(g, off, "memory", ret) {
			row.MemUsedBytes, row.MemTotalBytes = ptr(m.Used), ptr(m.Total)
		}
	}
	if !off["sm_clock"] {
		if v, ret := g.dev.GetClockInfo(clockSM); s.ok(g, off, "sm_clock", ret) {
			row.SMClockMHz = ptr(v)
		}
	}
	if !off["mem_clock"] {
		if v, ret := g.dev.GetClockInfo(clockMem); s.ok(g, off, "mem_clock", ret) {
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
		if v, ret := g.dev.GetTemperature(temperatureGPU); s.ok(g, off, "temperature", ret) {
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
	fv := []nvmlFieldValue{
		{FieldId: fiPowerInstant},
		{FieldId: fiPCIeCountTXBytes},
		{FieldId: fiPCIeCountRXBytes},
	}
	for link := range g.nvlinks {
		fv = append(fv,
			nvmlFieldValue{FieldId: fiNVLinkDataTX, ScopeId: uint32(link)},
			nvmlFieldValue{FieldId: fiNVLinkDataRX, ScopeId: uint32(link)})
	}
	if !s.ok(g, off, "field_values", g.dev.GetFieldValues(fv)) {
		return
	}
	field := func(i int, name string) (uint64, bool) {
		if off[name] {
			return 0, false
		}
		if !s.ok(g, off, name, nvmlReturn(fv[i].NvmlReturn)) {
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
				s.drainBuffer(g, now, uint32(bt.code))
			}
			s.drainProcessUtil(g, now, desc)
		}
		s.pollRunning(g, now, desc)
	}
}

func (s *nvmlSampler) drainBuffer(g *gpuState, now int64, st uint32) {
	query := fmt.Sprintf("samples:%d", st)
	if g.drainOff[query] {
		return
	}
	vt, samples, ret := g.dev.GetSamples(st, g.lastSeen[st])
	if ret == nvmlErrNotFound || !s.ok(g, g.drainOff, query, ret) {
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
	if ret == nvmlErrNotFound || !s.ok(g, g.drainOff, query, ret) {
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
			s.gpmStep(g, p, &gi, func(smp gpmSample) nvmlReturn { return g.dev.GpmMigSampleGet(m.gi, smp) })
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

func (p *gpmPair) free(lib nvmlLib) {
	_ = lib.GpmSampleFree(p.prev)
	_ = lib.GpmSampleFree(p.cur)
}

func (s *nvmlSampler) allocPair(g *gpuState) *gpmPair {
	a, ret := s.lib.GpmSampleAlloc()
	if !s.ok(g, g.devOff, "gpm", ret) {
		return nil
	}
	b, ret := s.lib.GpmSampleAlloc()
	if !s.ok(g, g.devOff, "gpm", ret) {
		_ = s.lib.GpmSampleFree(a)
		return nil
	}
	return &gpmPair{prev: a, cur: b}
}

func (s *nvmlSampler) gpmStep(g *gpuState, p *gpmPair, gi *int32, get func(gpmSample) nvmlReturn) {
	t := monoNow()
	if !s.ok(g, g.devOff, "gpm_sample", get(p.cur)) {
		return
	}
	if p.prevT != 0 {
		// Never a composite literal: the Metrics array grows with every
		// NVML header (210, 333, 477 entries across go-nvml tags).
		var mg nvmlGpmMetricsGet
		for i, m := range gpmMetrics {
			mg.Metrics[i].MetricId = uint32(m.code)
		}
		mg.NumMetrics = uint32(len(gpmMetrics))
		mg.Sample1, mg.Sample2 = p.prev, p.cur
		if s.ok(g, g.devOff, "gpm_metrics", s.lib.GpmMetricsGet(&mg)) {
			for i, m := range gpmMetrics {
				if mg.Metrics[i].NvmlReturn != uint32(nvmlSuccess) {
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
func fieldUint(fv nvmlFieldValue) (uint64, bool) {
	v := decodeValue(uint32(fv.ValueType), fv.Value)
	if math.IsNaN(v) || v < 0 {
		return 0, false
	}
	if uint32(fv.ValueType) == valueULongLong || uint32(fv.ValueType) == valueULong {
		return binary.LittleEndian.Uint64(fv.Value[:]), true
	}
	return uint64(v), true
}

// decodeValue decodes NVML's 8-byte value union by its type (nvml.h,
// nvmlValue_t; little-endian on every platform NVML supports).
func decodeValue(vt uint32, b [8]byte) float64 {
	switch vt {
	case valueDouble:
		return math.Float64frombits(binary.LittleEndian.Uint64(b[:]))
	case valueUInt:
		return float64(binary.LittleEndian.Uint32(b[:4]))
	case valueULong, valueULongLong:
		return float64(binary.LittleEndian.Uint64(b[:]))
	case valueSLongLong:
		return float64(int64(binary.LittleEndian.Uint64(b[:])))
	case valueSInt:
		return float64(int32(binary.LittleEndian.Uint32(b[:4])))
	case valueUShort:
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
