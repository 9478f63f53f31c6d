/* A fake libnvidia-ml for record's tests (nvml_dl_test.go): it exports the
 * NVML entry points the sampler calls, with nvml.h's signatures and struct
 * layouts, and answers known values, so that the cgo-free binding
 * (record/nvml_dl.go) is tested end to end without a GPU. Two GPUs. It
 * leaves out nvmlDeviceGetCurrentClocksEventReasons and
 * nvmlGpmMigSampleGet, as an older driver would: the sampler must notice
 * and never call them. Every call is counted (fake_calls). */
#include <string.h>
#include <stdio.h>

typedef int nvmlReturn_t;
typedef struct fake_device *nvmlDevice_t;
typedef struct fake_gpm *nvmlGpmSample_t;
typedef union { double d; unsigned int ui; unsigned long ul; unsigned long long ull; long long sll; int si; unsigned short us; } nvmlValue_t;

typedef struct { char busIdLegacy[16]; unsigned int domain, bus, device, pciDeviceId, pciSubSystemId; char busId[32]; } nvmlPciInfo_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned int fieldId, scopeId; long long timestamp, latencyUsec; int valueType; nvmlReturn_t nvmlReturn; nvmlValue_t value; } nvmlFieldValue_t;
typedef struct { unsigned long long timeStamp; nvmlValue_t sampleValue; } nvmlSample_t;
typedef struct { unsigned int pid; unsigned long long timeStamp; unsigned int smUtil, memUtil, encUtil, decUtil; } nvmlProcessUtilizationSample_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId; } nvmlProcessInfo_t;
typedef struct { unsigned int version, isSupportedDevice; } nvmlGpmSupport_t;
typedef struct { char *shortName, *longName, *unit; } nvmlGpmMetricMetricInfo_t;
typedef struct { unsigned int metricId; nvmlReturn_t nvmlReturn; double value; nvmlGpmMetricMetricInfo_t metricInfo; } nvmlGpmMetric_t;
typedef struct { unsigned int version, numMetrics; nvmlGpmSample_t sample1, sample2; nvmlGpmMetric_t metrics[477]; } nvmlGpmMetricsGet_t;

enum { OK = 0, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, NOT_FOUND = 6, INSUFFICIENT_SIZE = 7, UNINITIALIZED = 1, ARGUMENT_VERSION_MISMATCH = 25 };

struct fake_device { int index; };
static struct fake_device devs[2] = {{0}, {1}};
struct fake_gpm { int used; };
static struct fake_gpm gpm_pool[16];
static int inited;
static unsigned long long calls;

unsigned long long fake_calls(void) { return calls; }

#define DEV(d) do { calls++; if (!inited) return UNINITIALIZED; if ((d) != &devs[0] && (d) != &devs[1]) return INVALID_ARGUMENT; } while (0)

nvmlReturn_t nvmlInit_v2(void) { calls++; inited = 1; return OK; }
nvmlReturn_t nvmlShutdown(void) { calls++; inited = 0; return OK; }
nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int n) { calls++; snprintf(v, n, "999.88.77"); return OK; }
nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned int n) { calls++; snprintf(v, n, "12.999.88.77"); return OK; }
nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) { calls++; *v = 12080; return OK; }
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) { calls++; *n = 2; return OK; }
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d) {
	calls++;
	if (i >= 2) return INVALID_ARGUMENT;
	*d = &devs[i];
	return OK;
}
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *u, unsigned int n) { DEV(d); snprintf(u, n, "GPU-fake-%d", d->index); return OK; }
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *u, unsigned int n) { DEV(d); snprintf(u, n, "Fake H200"); return OK; }
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *p) {
	DEV(d);
	memset(p, 0, sizeof *p);
	snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", 0x18 + d->index);
	p->pciDeviceId = 0x233510de;
	return OK;
}
nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned int *a) { DEV(d); *a = 9; return OK; }
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor) { DEV(d); *major = 9; *minor = 0; return OK; }
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *m) { DEV(d); m->total = 141ULL << 30; m->used = 5ULL << 30; m->free = m->total - m->used; return OK; }
nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *m) {
	DEV(d);
	if (m->version != (sizeof(nvmlMemory_v2_t) | (2u << 24))) return ARGUMENT_VERSION_MISMATCH;
	m->total = 141ULL << 30; m->reserved = 1ULL << 29; m->used = (6ULL << 30) + d->index; m->free = m->total - m->used - m->reserved;
	return OK;
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *v) { DEV(d); if (type != 1) return INVALID_ARGUMENT; *v = 1980; return OK; }
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *v) {
	DEV(d);
	if (type == 1) { *v = 1755; return OK; }
	if (type == 2) { *v = 3201; return OK; }
	return INVALID_ARGUMENT;
}
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *v) { DEV(d); *v = 700000; return OK; }
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int n, nvmlFieldValue_t *fv) {
	DEV(d);
	for (int i = 0; i < n; i++) {
		fv[i].nvmlReturn = OK;
		fv[i].valueType = 3; /* unsigned long long */
		switch (fv[i].fieldId) {
		case 91: fv[i].valueType = 1; fv[i].value.ui = 3; break;           /* NVLINK_LINK_COUNT */
		case 186: fv[i].valueType = 1; fv[i].value.ui = 401234; break;     /* POWER_INSTANT mW */
		case 197: fv[i].value.ull = 1111111111ULL; break;                  /* PCIE TX bytes */
		case 198: fv[i].value.ull = 2222222222ULL; break;                  /* PCIE RX bytes */
		case 138: fv[i].value.ull = 100 + fv[i].scopeId; break;            /* NVLINK TX KiB per link */
		case 139: fv[i].value.ull = 1000 + fv[i].scopeId; break;           /* NVLINK RX KiB per link */
		default: fv[i].nvmlReturn = NOT_SUPPORTED;
		}
	}
	return OK;
}
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t *s) {
	DEV(d);
	if (s->version != 1) return ARGUMENT_VERSION_MISMATCH;
	s->isSupportedDevice = 1;
	return OK;
}
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *cur, unsigned int *pending) { DEV(d); *cur = 0; *pending = 0; return OK; }
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) { DEV(d); u->gpu = 77; u->memory = 33; return OK; }
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *v) { DEV(d); *v = 450500; return OK; }
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *v) { DEV(d); *v = 987654321ULL; return OK; }
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *v) { DEV(d); if (sensor != 0) return INVALID_ARGUMENT; *v = 58; return OK; }

/* Two samples per sampling type, once: after lastSeen reaches them,
 * NOT_FOUND (nothing new). Power in mW as unsigned int, the others as
 * double. */
static const unsigned long long TS = 1796000000000000ULL;
nvmlReturn_t nvmlDeviceGetSamples(nvmlDevice_t d, int type, unsigned long long last, int *vt, unsigned int *count, nvmlSample_t *s) {
	DEV(d);
	if (last >= TS + 2) return NOT_FOUND;
	*vt = type == 0 ? 1 : 0;
	if (!s) { *count = 2; return OK; }
	if (*count < 2) return INSUFFICIENT_SIZE;
	*count = 2;
	for (int i = 0; i < 2; i++) {
		s[i].timeStamp = TS + 1 + i;
		if (type == 0) s[i].sampleValue.ui = 300000 + 10000 * i;
		else s[i].sampleValue.d = 10.5 * (i + 1) + type;
	}
	return OK;
}
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *u, unsigned int *count, unsigned long long last) {
	DEV(d);
	if (last >= TS) return NOT_FOUND;
	if (!u || *count < 1) { *count = 1; return INSUFFICIENT_SIZE; }
	*count = 1;
	u->pid = 4242; u->timeStamp = TS; u->smUtil = 61; u->memUtil = 12; u->encUtil = 0; u->decUtil = 0;
	return OK;
}
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *p) {
	DEV(d);
	if (*count < 2) { *count = 2; return INSUFFICIENT_SIZE; }
	*count = 2;
	p[0].pid = 4242; p[0].usedGpuMemory = 3ULL << 30; p[0].gpuInstanceId = 0xFFFFFFFFu; p[0].computeInstanceId = 0xFFFFFFFFu;
	p[1].pid = 777; p[1].usedGpuMemory = 1ULL << 20; p[1].gpuInstanceId = 0xFFFFFFFFu; p[1].computeInstanceId = 0xFFFFFFFFu;
	return OK;
}
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s) {
	calls++;
	for (int i = 0; i < 16; i++)
		if (!gpm_pool[i].used) { gpm_pool[i].used = 1; *s = &gpm_pool[i]; return OK; }
	return INSUFFICIENT_SIZE;
}
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s) { calls++; s->used = 0; return OK; }
nvmlReturn_t nvmlGpmSampleGet(nvmlDevice_t d, nvmlGpmSample_t s) { DEV(d); return s && s->used ? OK : INVALID_ARGUMENT; }
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *mg) {
	calls++;
	if (mg->version != 1 || !mg->sample1 || !mg->sample2 || mg->sample1 == mg->sample2) return INVALID_ARGUMENT;
	for (unsigned int i = 0; i < mg->numMetrics; i++) {
		mg->metrics[i].nvmlReturn = OK;
		mg->metrics[i].value = mg->metrics[i].metricId * 2.25;
		mg->metrics[i].metricInfo.unit = "%";
	}
	return OK;
}
