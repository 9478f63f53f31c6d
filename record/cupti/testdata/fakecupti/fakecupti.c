/*
 * A fake libcupti for record/cupti's end-to-end test (TestInjectionAgainstFakeCUPTI):
 * the entry points llmprof_cupti.c calls, built against the real cupti.h so
 * that the records it hands over have CUPTI's own struct layouts. Every
 * cuptiActivityFlushAll delivers, once, one buffer holding one record of each
 * kind the library enables (values in fake_cupti_test.go); cuptiGetTimestamp
 * is CLOCK_MONOTONIC plus 5 s.
 */
#define _GNU_SOURCE
#include <cupti.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if CUPTI_API_VERSION >= 130000
#error "the fake builds CUDA 12 record versions"
#endif

static CUpti_BuffersCallbackRequestFunc requested;
static CUpti_BuffersCallbackCompleteFunc completed;
static int enabled, delivered;

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r, CUpti_BuffersCallbackCompleteFunc c)
{
	requested = r, completed = c;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind)
{
	(void)kind;
	enabled++;
	return CUPTI_SUCCESS;
}

static size_t size_of(CUpti_ActivityKind k)
{
	switch (k) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		return sizeof(CUpti_ActivityKernel9);
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		return sizeof(CUpti_ActivityMemcpy5);
	case CUPTI_ACTIVITY_KIND_MEMSET:
		return sizeof(CUpti_ActivityMemset4);
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		return sizeof(CUpti_ActivitySynchronization);
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		return sizeof(CUpti_ActivityAPI);
	default:
		return sizeof(CUpti_Activity);
	}
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
	uint8_t *next = *record ? (uint8_t *)*record + size_of((*record)->kind) : buffer;
	if (next >= buffer + valid)
		return CUPTI_ERROR_MAX_LIMIT_REACHED;
	*record = (CUpti_Activity *)next;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped)
{
	(void)ctx, (void)stream;
	*dropped = 3;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	if (delivered || !requested || enabled < 6)
		return CUPTI_SUCCESS;
	delivered = 1;
	uint8_t *buf = NULL;
	size_t size = 0, max = 0;
	requested(&buf, &size, &max);
	if (!buf || size < 4096)
		return CUPTI_ERROR_UNKNOWN;
	memset(buf, 0, size);
	size_t n = 0;

	CUpti_ActivityAPI *rt = (CUpti_ActivityAPI *)(buf + n);
	rt->kind = CUPTI_ACTIVITY_KIND_RUNTIME;
	rt->cbid = 211;
	rt->start = 5000000100, rt->end = 5000000900;
	rt->processId = (uint32_t)getpid(), rt->threadId = 1235, rt->correlationId = 41;
	n += sizeof *rt;

	CUpti_ActivityAPI *dr = (CUpti_ActivityAPI *)(buf + n);
	dr->kind = CUPTI_ACTIVITY_KIND_DRIVER;
	dr->cbid = 307;
	dr->start = 5000000200, dr->end = 5000000800;
	dr->processId = (uint32_t)getpid(), dr->threadId = 1235, dr->correlationId = 41;
	n += sizeof *dr;

	CUpti_ActivityKernel9 *k = (CUpti_ActivityKernel9 *)(buf + n);
	k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
	k->start = 5000001000, k->end = 5000021000;
	k->deviceId = 2, k->contextId = 1, k->streamId = 14, k->correlationId = 41;
	k->gridX = 264, k->gridY = 1, k->gridZ = 1, k->blockX = 256, k->blockY = 1, k->blockZ = 1;
	k->staticSharedMemory = 512, k->dynamicSharedMemory = 49152, k->registersPerThread = 128;
	k->name = "fake_gemm_kernel(float const*, float*)";
	k->graphId = 6, k->graphNodeId = 99;
	n += sizeof *k;

	CUpti_ActivityMemcpy5 *m = (CUpti_ActivityMemcpy5 *)(buf + n);
	m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
	m->copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
	m->bytes = 8192, m->start = 5000030000, m->end = 5000031000;
	m->deviceId = 2, m->contextId = 1, m->streamId = 14, m->correlationId = 42;
	n += sizeof *m;

	CUpti_ActivityMemset4 *s = (CUpti_ActivityMemset4 *)(buf + n);
	s->kind = CUPTI_ACTIVITY_KIND_MEMSET;
	s->value = 0, s->bytes = 1024, s->start = 5000040000, s->end = 5000040500;
	s->deviceId = 2, s->contextId = 1, s->streamId = 15, s->correlationId = 43;
	n += sizeof *s;

	CUpti_ActivitySynchronization *y = (CUpti_ActivitySynchronization *)(buf + n);
	y->kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
	y->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
	y->start = 5000050000, y->end = 5000060000;
	y->correlationId = 44, y->contextId = 1, y->streamId = 0xFFFFFFFFu;
	n += sizeof *y;

	completed(NULL, 0, buf, size, n);
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *t)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	*t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + 5000000000u;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *v)
{
	*v = CUPTI_API_VERSION;
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **s)
{
	(void)r;
	*s = "fake";
	return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t cbid, const char **name)
{
	if (d == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == 211)
		*name = "cudaLaunchKernel_v7000";
	else if (d == CUPTI_CB_DOMAIN_DRIVER_API && cbid == 307)
		*name = "cuLaunchKernel";
	else
		return CUPTI_ERROR_UNKNOWN;
	return CUPTI_SUCCESS;
}
