//go:build linux

package record

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// NVMLBinding names how the recorder reaches NVML: libnvidia-ml is loaded
// at run time with purego's dlopen, so the default build needs no C
// compiler and CGO_ENABLED=0 binaries record NVML too.
const NVMLBinding = "dlopen libnvidia-ml.so.1 (github.com/ebitengine/purego v0.11.3)"

// defaultNVMLLibrary is the soname the driver installs.
const defaultNVMLLibrary = "libnvidia-ml.so.1"

// openNVML loads libnvidia-ml and enumerates the GPUs. On a machine
// without a driver the dlopen fails, Init returns ERROR_LIBRARY_NOT_FOUND and
// nothing else is called (docs/record.md E4).
func openNVML(opts NVMLOptions) (gpuSampler, error) {
	path := opts.LibraryPath
	if path == "" {
		path = defaultNVMLLibrary
	}
	l := &dlNVML{path: path}
	s, err := newNVMLSampler(l, opts)
	if err != nil && l.loadErr != "" {
		return nil, fmt.Errorf("%w: %s", err, l.loadErr)
	}
	return s, err
}

// dlNVML is nvmlLib over the C library. Symbols are resolved on first use
// and cached; a missing one makes that call return ERROR_FUNCTION_NOT_FOUND
// instead of crashing.
type dlNVML struct {
	path   string
	mu     sync.Mutex
	handle uintptr
	syms   map[string]uintptr
	// loadErr is dlopen's message when Init could not load the library.
	loadErr string
}

func (l *dlNVML) sym(name string) uintptr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handle == 0 {
		return 0
	}
	if fn, ok := l.syms[name]; ok {
		return fn
	}
	fn, err := purego.Dlsym(l.handle, name)
	if err != nil {
		fn = 0
	}
	l.syms[name] = fn
	return fn
}

// call calls an NVML entry point; pointer arguments are converted to
// uintptr in the argument list, which uintptrescapes keeps on the heap and
// alive for the call.
//
//go:uintptrescapes
func (l *dlNVML) call(name string, args ...uintptr) nvmlReturn {
	fn := l.sym(name)
	if fn == 0 {
		return nvmlErrFunctionNotFound
	}
	r1, _, _ := purego.SyscallN(fn, args...)
	return nvmlReturn(int32(r1))
}

func (l *dlNVML) Init() nvmlReturn {
	l.mu.Lock()
	if l.handle == 0 {
		h, err := purego.Dlopen(l.path, purego.RTLD_LAZY|purego.RTLD_GLOBAL)
		if err != nil {
			l.loadErr = err.Error()
			l.mu.Unlock()
			return nvmlErrLibraryNotFound
		}
		l.handle, l.syms = h, map[string]uintptr{}
	}
	l.mu.Unlock()
	return l.call("nvmlInit_v2")
}

func (l *dlNVML) Shutdown() nvmlReturn {
	ret := l.call("nvmlShutdown")
	l.mu.Lock()
	if l.handle != 0 {
		_ = purego.Dlclose(l.handle)
		l.handle, l.syms = 0, nil
	}
	l.mu.Unlock()
	return ret
}

func (l *dlNVML) HasSymbol(name string) bool { return l.sym(name) != 0 }

func (l *dlNVML) str(name string, size int, lead ...uintptr) (string, nvmlReturn) {
	buf := make([]byte, size)
	var ret nvmlReturn
	switch len(lead) {
	case 0:
		ret = l.call(name, uintptr(unsafe.Pointer(&buf[0])), uintptr(size))
	default:
		ret = l.call(name, lead[0], uintptr(unsafe.Pointer(&buf[0])), uintptr(size))
	}
	runtime.KeepAlive(buf)
	for i, c := range buf {
		if c == 0 {
			return string(buf[:i]), ret
		}
	}
	return string(buf), ret
}

func (l *dlNVML) SystemGetDriverVersion() (string, nvmlReturn) {
	return l.str("nvmlSystemGetDriverVersion", versionBufferSize)
}

func (l *dlNVML) SystemGetNVMLVersion() (string, nvmlReturn) {
	return l.str("nvmlSystemGetNVMLVersion", versionBufferSize)
}

func (l *dlNVML) SystemGetCudaDriverVersion() (int, nvmlReturn) {
	v := new(int32)
	ret := l.call("nvmlSystemGetCudaDriverVersion", uintptr(unsafe.Pointer(v)))
	return int(*v), ret
}

func (l *dlNVML) DeviceGetCount() (int, nvmlReturn) {
	n := new(uint32)
	ret := l.call("nvmlDeviceGetCount_v2", uintptr(unsafe.Pointer(n)))
	return int(*n), ret
}

func (l *dlNVML) DeviceGetHandleByIndex(i int) (nvmlDevice, nvmlReturn) {
	h := new(uintptr)
	ret := l.call("nvmlDeviceGetHandleByIndex_v2", uintptr(i), uintptr(unsafe.Pointer(h)))
	if ret != nvmlSuccess {
		return nil, ret
	}
	return dlDevice{l, *h}, ret
}

func (l *dlNVML) GpmSampleAlloc() (gpmSample, nvmlReturn) {
	h := new(uintptr)
	ret := l.call("nvmlGpmSampleAlloc", uintptr(unsafe.Pointer(h)))
	return gpmSample(*h), ret
}

func (l *dlNVML) GpmSampleFree(s gpmSample) nvmlReturn {
	return l.call("nvmlGpmSampleFree", uintptr(s))
}

func (l *dlNVML) GpmMetricsGet(mg *nvmlGpmMetricsGet) nvmlReturn {
	mg.Version = gpmMetricsVersion
	return l.call("nvmlGpmMetricsGet", uintptr(unsafe.Pointer(mg)))
}

// dlDevice is an nvmlDevice_t of the loaded library.
type dlDevice struct {
	l *dlNVML
	h uintptr
}

func (d dlDevice) u32(name string, lead ...uintptr) (uint32, nvmlReturn) {
	v := new(uint32)
	args := append([]uintptr{d.h}, lead...)
	ret := d.l.call(name, append(args, uintptr(unsafe.Pointer(v)))...)
	runtime.KeepAlive(v)
	return *v, ret
}

func (d dlDevice) u64(name string) (uint64, nvmlReturn) {
	v := new(uint64)
	ret := d.l.call(name, d.h, uintptr(unsafe.Pointer(v)))
	return *v, ret
}

func (d dlDevice) GetUUID() (string, nvmlReturn) {
	return d.l.str("nvmlDeviceGetUUID", uuidBufferSize, d.h)
}

func (d dlDevice) GetName() (string, nvmlReturn) {
	return d.l.str("nvmlDeviceGetName", nameBufferSize, d.h)
}

func (d dlDevice) GetPciInfo() (nvmlPciInfo, nvmlReturn) {
	p := new(nvmlPciInfo)
	ret := d.l.call("nvmlDeviceGetPciInfo_v3", d.h, uintptr(unsafe.Pointer(p)))
	return *p, ret
}

func (d dlDevice) GetArchitecture() (uint32, nvmlReturn) {
	return d.u32("nvmlDeviceGetArchitecture")
}

func (d dlDevice) GetCudaComputeCapability() (int, int, nvmlReturn) {
	major, minor := new(int32), new(int32)
	ret := d.l.call("nvmlDeviceGetCudaComputeCapability", d.h, uintptr(unsafe.Pointer(major)), uintptr(unsafe.Pointer(minor)))
	return int(*major), int(*minor), ret
}

func (d dlDevice) GetMemoryInfo() (nvmlMemory, nvmlReturn) {
	m := new(nvmlMemory)
	ret := d.l.call("nvmlDeviceGetMemoryInfo", d.h, uintptr(unsafe.Pointer(m)))
	return *m, ret
}

func (d dlDevice) GetMemoryInfoV2() (nvmlMemoryV2, nvmlReturn) {
	m := &nvmlMemoryV2{Version: memoryV2Version}
	ret := d.l.call("nvmlDeviceGetMemoryInfo_v2", d.h, uintptr(unsafe.Pointer(m)))
	return *m, ret
}

func (d dlDevice) GetMaxClockInfo(clock uint32) (uint32, nvmlReturn) {
	return d.u32("nvmlDeviceGetMaxClockInfo", uintptr(clock))
}

func (d dlDevice) GetClockInfo(clock uint32) (uint32, nvmlReturn) {
	return d.u32("nvmlDeviceGetClockInfo", uintptr(clock))
}

func (d dlDevice) GetEnforcedPowerLimit() (uint32, nvmlReturn) {
	return d.u32("nvmlDeviceGetEnforcedPowerLimit")
}

func (d dlDevice) GetFieldValues(fv []nvmlFieldValue) nvmlReturn {
	if len(fv) == 0 {
		return nvmlErrInvalidArgument
	}
	ret := d.l.call("nvmlDeviceGetFieldValues", d.h, uintptr(len(fv)), uintptr(unsafe.Pointer(&fv[0])))
	runtime.KeepAlive(fv)
	return ret
}

func (d dlDevice) GpmQueryDeviceSupport() (nvmlGpmSupport, nvmlReturn) {
	s := &nvmlGpmSupport{Version: gpmSupportVersion}
	ret := d.l.call("nvmlGpmQueryDeviceSupport", d.h, uintptr(unsafe.Pointer(s)))
	return *s, ret
}

func (d dlDevice) GetMigMode() (int, int, nvmlReturn) {
	cur, pending := new(uint32), new(uint32)
	ret := d.l.call("nvmlDeviceGetMigMode", d.h, uintptr(unsafe.Pointer(cur)), uintptr(unsafe.Pointer(pending)))
	return int(*cur), int(*pending), ret
}

func (d dlDevice) GetMaxMigDeviceCount() (int, nvmlReturn) {
	v, ret := d.u32("nvmlDeviceGetMaxMigDeviceCount")
	return int(v), ret
}

func (d dlDevice) GetMigDeviceHandleByIndex(i int) (nvmlDevice, nvmlReturn) {
	h := new(uintptr)
	ret := d.l.call("nvmlDeviceGetMigDeviceHandleByIndex", d.h, uintptr(i), uintptr(unsafe.Pointer(h)))
	if ret != nvmlSuccess {
		return nil, ret
	}
	return dlDevice{d.l, *h}, ret
}

func (d dlDevice) GetGpuInstanceId() (int, nvmlReturn) {
	v, ret := d.u32("nvmlDeviceGetGpuInstanceId")
	return int(v), ret
}

func (d dlDevice) GetComputeInstanceId() (int, nvmlReturn) {
	v, ret := d.u32("nvmlDeviceGetComputeInstanceId")
	return int(v), ret
}

func (d dlDevice) GetUtilizationRates() (nvmlUtilization, nvmlReturn) {
	u := new(nvmlUtilization)
	ret := d.l.call("nvmlDeviceGetUtilizationRates", d.h, uintptr(unsafe.Pointer(u)))
	return *u, ret
}

func (d dlDevice) GetPowerUsage() (uint32, nvmlReturn) { return d.u32("nvmlDeviceGetPowerUsage") }

func (d dlDevice) GetTotalEnergyConsumption() (uint64, nvmlReturn) {
	return d.u64("nvmlDeviceGetTotalEnergyConsumption")
}

func (d dlDevice) GetCurrentClocksEventReasons() (uint64, nvmlReturn) {
	return d.u64("nvmlDeviceGetCurrentClocksEventReasons")
}

func (d dlDevice) GetTemperature(sensor uint32) (uint32, nvmlReturn) {
	return d.u32("nvmlDeviceGetTemperature", uintptr(sensor))
}

// GetSamples asks for the count first, then for the samples, as nvml.h
// describes for nvmlDeviceGetSamples.
func (d dlDevice) GetSamples(st uint32, lastSeen uint64) (uint32, []nvmlSample, nvmlReturn) {
	vt, n := new(uint32), new(uint32)
	ret := d.l.call("nvmlDeviceGetSamples", d.h, uintptr(st), uintptr(lastSeen), uintptr(unsafe.Pointer(vt)), uintptr(unsafe.Pointer(n)), 0)
	if ret != nvmlSuccess {
		return *vt, nil, ret
	}
	if *n == 0 {
		return *vt, []nvmlSample{}, ret
	}
	samples := make([]nvmlSample, *n)
	ret = d.l.call("nvmlDeviceGetSamples", d.h, uintptr(st), uintptr(lastSeen), uintptr(unsafe.Pointer(vt)), uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(&samples[0])))
	runtime.KeepAlive(samples)
	if ret == nvmlSuccess {
		samples = samples[:min(int(*n), len(samples))]
	}
	return *vt, samples, ret
}

// GetProcessUtilization: the first call, without a buffer, answers
// INSUFFICIENT_SIZE with the count.
func (d dlDevice) GetProcessUtilization(lastSeen uint64) ([]nvmlProcessUtilization, nvmlReturn) {
	n := new(uint32)
	ret := d.l.call("nvmlDeviceGetProcessUtilization", d.h, 0, uintptr(unsafe.Pointer(n)), uintptr(lastSeen))
	if ret != nvmlErrInsufficientSize {
		return nil, ret
	}
	if *n == 0 {
		return []nvmlProcessUtilization{}, ret
	}
	out := make([]nvmlProcessUtilization, *n)
	ret = d.l.call("nvmlDeviceGetProcessUtilization", d.h, uintptr(unsafe.Pointer(&out[0])), uintptr(unsafe.Pointer(n)), uintptr(lastSeen))
	runtime.KeepAlive(out)
	return out[:min(int(*n), len(out))], ret
}

// GetComputeRunningProcesses grows the buffer until it fits (the process
// list can change between calls).
func (d dlDevice) GetComputeRunningProcesses() ([]nvmlProcessInfo, nvmlReturn) {
	for size := uint32(8); ; size *= 2 {
		infos := make([]nvmlProcessInfo, size)
		n := new(uint32)
		*n = size
		ret := d.l.call("nvmlDeviceGetComputeRunningProcesses_v3", d.h, uintptr(unsafe.Pointer(n)), uintptr(unsafe.Pointer(&infos[0])))
		runtime.KeepAlive(infos)
		if ret == nvmlSuccess {
			return infos[:min(*n, size)], ret
		}
		if ret != nvmlErrInsufficientSize || size >= 1<<16 {
			return nil, ret
		}
	}
}

func (d dlDevice) GpmSampleGet(s gpmSample) nvmlReturn {
	return d.l.call("nvmlGpmSampleGet", d.h, uintptr(s))
}

func (d dlDevice) GpmMigSampleGet(gi int, s gpmSample) nvmlReturn {
	return d.l.call("nvmlGpmMigSampleGet", d.h, uintptr(gi), uintptr(s))
}
