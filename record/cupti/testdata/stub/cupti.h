/*
 * A minimal stand-in for CUDA's cupti.h: only the declarations
 * record/cupti/inject/llmprof_cupti.c uses, so that `cc -fsyntax-only`
 * catches C errors in it on machines without CUDA (TestSyntaxAgainstStub).
 * It checks syntax and names, NOT the ABI: the field order and types here
 * are not CUPTI's, and a library compiled against this header would read
 * CUPTI's records wrongly. Never build the library with it.
 */
#ifndef LLMPROF_STUB_CUPTI_H
#define LLMPROF_STUB_CUPTI_H
#include <stddef.h>
#include <stdint.h>

#define CUPTIAPI
#define CUPTI_API_VERSION 24

typedef struct CUctx_st *CUcontext;
typedef enum { CUPTI_SUCCESS = 0, CUPTI_ERROR_UNKNOWN = 999 } CUptiResult;
typedef enum {
	CUPTI_ACTIVITY_KIND_MEMCPY = 1,
	CUPTI_ACTIVITY_KIND_MEMSET = 2,
	CUPTI_ACTIVITY_KIND_KERNEL = 3,
	CUPTI_ACTIVITY_KIND_DRIVER = 4,
	CUPTI_ACTIVITY_KIND_RUNTIME = 5,
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL = 10,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION = 38,
} CUpti_ActivityKind;
typedef enum { CUPTI_CB_DOMAIN_DRIVER_API = 1, CUPTI_CB_DOMAIN_RUNTIME_API = 2 } CUpti_CallbackDomain;
typedef uint32_t CUpti_CallbackId;
typedef enum { CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN = 0 } CUpti_ActivitySynchronizationType;
enum { CUPTI_ACTIVITY_FLAG_FLUSH_FORCED = 1 };

typedef struct { CUpti_ActivityKind kind; } CUpti_Activity;
typedef struct {
	CUpti_ActivityKind kind;
	uint16_t registersPerThread;
	uint64_t start, end;
	uint32_t deviceId, contextId, streamId;
	int32_t gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory;
	uint32_t correlationId;
	const char *name;
	uint64_t graphNodeId;
	uint32_t graphId;
} CUpti_ActivityKernel9;
typedef struct {
	CUpti_ActivityKind kind;
	uint8_t copyKind, srcKind, dstKind, flags;
	uint64_t bytes, start, end;
	uint32_t deviceId, contextId, streamId, correlationId, runtimeCorrelationId;
	uint64_t graphNodeId;
	uint32_t graphId;
} CUpti_ActivityMemcpy5;
typedef struct {
	CUpti_ActivityKind kind;
	uint32_t value;
	uint64_t bytes, start, end;
	uint32_t deviceId, contextId, streamId, correlationId;
	uint16_t flags, memoryKind;
	uint64_t graphNodeId;
	uint32_t graphId;
} CUpti_ActivityMemset4;
typedef struct {
	CUpti_ActivityKind kind;
	CUpti_ActivitySynchronizationType type;
	uint64_t start, end;
	uint32_t correlationId, contextId, streamId, cudaEventId;
} CUpti_ActivitySynchronization;
typedef struct {
	CUpti_ActivityKind kind;
	CUpti_CallbackId cbid;
	uint64_t start, end;
	uint32_t processId, threadId, correlationId, returnValue;
} CUpti_ActivityAPI;

typedef void (CUPTIAPI *CUpti_BuffersCallbackRequestFunc)(uint8_t **buffer, size_t *size, size_t *maxNumRecords);
typedef void (CUPTIAPI *CUpti_BuffersCallbackCompleteFunc)(CUcontext context, uint32_t streamId, uint8_t *buffer,
                                                           size_t size, size_t validSize);
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc);
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind kind);
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag);
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes, CUpti_Activity **record);
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId, size_t *dropped);
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *timestamp);
CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version);
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str);
CUptiResult CUPTIAPI cuptiGetCallbackName(CUpti_CallbackDomain domain, uint32_t cbid, const char **name);
#endif
