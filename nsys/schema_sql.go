package nsys

// writerSchema is the part of the current nsys export schema (nsys 2026.1,
// schema 3.24.18) that WriteSQLite fills: the tables and columns the
// decoder and nsys stats read, with nsys's names, types and NOT NULL
// constraints. Like nsys, the writer creates an activity table only when it
// has rows for it.
// ddlActivityColumns are the columns every CUPTI activity table begins with.
const ddlActivityColumns = `    start INTEGER NOT NULL, -- Event start timestamp (ns).
    end INTEGER NOT NULL, -- Event end timestamp (ns).
    deviceId INTEGER NOT NULL, -- Device ID.
    contextId INTEGER NOT NULL, -- Context ID.
    greenContextId INTEGER, -- Green context ID.
    streamId INTEGER NOT NULL, -- Stream ID.
    correlationId INTEGER, -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid INTEGER, -- Serialized GlobalId.
`

const (
	ddlStringIds = `CREATE TABLE StringIds (
    id INTEGER NOT NULL PRIMARY KEY, -- ID reference value.
    value TEXT NOT NULL -- String value.
)`
	ddlMetaDataExport = `CREATE TABLE META_DATA_EXPORT (
    name TEXT NOT NULL, -- Name of meta-data record
    value TEXT -- Value of meta-data record
)`
	ddlSessionStart = `CREATE TABLE TARGET_INFO_SESSION_START_TIME (
    utcEpochNs INTEGER, -- UTC Epoch timestamp at start of the capture (ns).
    utcTime TEXT, -- Start of the capture in UTC.
    localTime TEXT, -- Start of the capture in local time of target.
    systemClockNs INTEGER -- Target system clock timestamp at start of the capture (ns).
)`
	ddlAnalysisDetails = `CREATE TABLE ANALYSIS_DETAILS (
    globalVid INTEGER NOT NULL, -- Serialized GlobalId.
    duration INTEGER NOT NULL, -- The total time span of the entire trace (ns).
    startTime INTEGER NOT NULL, -- Trace start timestamp in nanoseconds.
    stopTime INTEGER NOT NULL -- Trace stop timestamp in nanoseconds.
)`
	ddlTargetGPU = `CREATE TABLE TARGET_INFO_GPU (
    vmId INTEGER NOT NULL, -- Serialized GlobalId.
    id INTEGER NOT NULL, -- Device ID.
    name TEXT, -- Device name.
    totalMemory INTEGER, -- Total amount of memory on the device (B).
    smCount INTEGER, -- Number of multiprocessors on the device.
    uuid TEXT, -- Device UUID.
    cuDevice INTEGER -- CUDA device ID.
)`
	ddlProcesses = `CREATE TABLE PROCESSES (
    globalPid INTEGER, -- Serialized GlobalId.
    pid INTEGER, -- The process ID.
    name TEXT -- The process name.
)`
	ddlThreadNames = `CREATE TABLE ThreadNames (
    nameId INTEGER NOT NULL, -- REFERENCES StringIds(id) -- Thread name
    priority INTEGER, -- Priority of the thread.
    globalTid INTEGER -- Serialized GlobalId.
)`
	ddlEnumTemplate = `CREATE TABLE %s (
    id INTEGER NOT NULL PRIMARY KEY, -- Enum numerical value.
    name TEXT, -- Enum symbol name.
    label TEXT -- Enum human name.
)`
	ddlKernel = `CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
` + ddlActivityColumns + `    demangledName INTEGER NOT NULL, -- REFERENCES StringIds(id) -- Kernel function name w/ templates
    shortName INTEGER NOT NULL, -- REFERENCES StringIds(id) -- Base kernel function name
    mangledName INTEGER, -- REFERENCES StringIds(id) -- Raw C++ mangled kernel function name
    launchType INTEGER, -- REFERENCES ENUM_CUDA_KERNEL_LAUNCH_TYPE(id)
    cacheConfig INTEGER, -- REFERENCES ENUM_CUDA_FUNC_CACHE_CONFIG(id)
    registersPerThread INTEGER NOT NULL, -- Number of registers required for each thread executing the kernel.
    gridX INTEGER NOT NULL, -- X-dimension grid size.
    gridY INTEGER NOT NULL, -- Y-dimension grid size.
    gridZ INTEGER NOT NULL, -- Z-dimension grid size.
    blockX INTEGER NOT NULL, -- X-dimension block size.
    blockY INTEGER NOT NULL, -- Y-dimension block size.
    blockZ INTEGER NOT NULL, -- Z-dimension block size.
    staticSharedMemory INTEGER NOT NULL, -- Static shared memory allocated for the kernel (B).
    dynamicSharedMemory INTEGER NOT NULL, -- Dynamic shared memory reserved for the kernel (B).
    localMemoryPerThread INTEGER NOT NULL, -- Amount of local memory reserved for each thread (B).
    localMemoryTotal INTEGER NOT NULL, -- Total amount of local memory reserved for the kernel (B).
    gridId INTEGER NOT NULL, -- Unique grid ID of the kernel assigned at runtime.
    sharedMemoryExecuted INTEGER, -- Shared memory size set by the driver.
    graphNodeId INTEGER, -- REFERENCES CUDA_GRAPH_NODE_EVENTS(graphNodeId)
    sharedMemoryLimitConfig INTEGER, -- REFERENCES ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG(id)
    qmdBulkReleaseDone INTEGER, -- QMD bulk release done timestamp from CWD events.
    qmdPreexitDone INTEGER, -- QMD pre-exit done timestamp from CWD events.
    qmdLastCtaDone INTEGER, -- QMD last CTA done timestamp from CWD events.
    graphId INTEGER, -- Kernel graph ID.
    clusterX INTEGER, -- Cluster X dimension.
    clusterY INTEGER, -- Cluster Y dimension.
    clusterZ INTEGER, -- Cluster Z dimension.
    clusterSchedulingPolicy INTEGER, -- Cluster scheduling policy.
    maxPotentialClusterSize INTEGER, -- Maximum potential cluster size.
    maxActiveClusters INTEGER, -- Maximum active clusters.
    sharedMemoryRequestedPercentage INTEGER, -- Shared memory requested percentage.
    tensorSizeMinusOneElements TEXT NOT NULL -- TMA descriptor tensor size minus one elements array.
)`
	ddlRuntime = `CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start INTEGER NOT NULL, -- Event start timestamp (ns).
    end INTEGER NOT NULL, -- Event end timestamp (ns).
    eventClass INTEGER NOT NULL, -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid INTEGER, -- Serialized GlobalId.
    correlationId INTEGER, -- ID used to identify events that this function call has triggered.
    nameId INTEGER NOT NULL, -- REFERENCES StringIds(id) -- Function name
    returnValue INTEGER NOT NULL, -- Return value of the function call.
    callchainId INTEGER -- REFERENCES CUDA_CALLCHAINS(id)
)`
	ddlMemcpy = `CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
` + ddlActivityColumns + `    bytes INTEGER NOT NULL, -- Number of bytes transferred (B).
    copyKind INTEGER NOT NULL, -- REFERENCES ENUM_CUDA_MEMCPY_OPER(id)
    deprecatedSrcId INTEGER, -- Deprecated, use srcDeviceId instead.
    srcKind INTEGER, -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    dstKind INTEGER, -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    srcDeviceId INTEGER, -- Source device ID.
    srcContextId INTEGER, -- Source context ID.
    dstDeviceId INTEGER, -- Destination device ID.
    dstContextId INTEGER, -- Destination context ID.
    migrationCause INTEGER, -- REFERENCES ENUM_CUDA_UNIF_MEM_MIGRATION(id)
    graphNodeId INTEGER, -- REFERENCES CUDA_GRAPH_NODE_EVENTS(graphNodeId)
    virtualAddress INTEGER, -- Virtual base address of the page/s being transferred.
    copyCount INTEGER -- The total number of memcopy operations traced in this record.
)`
	ddlMemset = `CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
` + ddlActivityColumns + `    value INTEGER NOT NULL, -- Value assigned to memory.
    bytes INTEGER NOT NULL, -- Number of bytes set (B).
    graphNodeId INTEGER, -- REFERENCES CUDA_GRAPH_NODE_EVENTS(graphNodeId)
    memKind INTEGER -- REFERENCES ENUM_CUDA_MEM_KIND(id)
)`
	ddlSync = `CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start INTEGER NOT NULL, -- Event start timestamp (ns).
    end INTEGER NOT NULL, -- Event end timestamp (ns).
    deviceId INTEGER NOT NULL, -- Device ID.
    contextId INTEGER NOT NULL, -- Context ID.
    greenContextId INTEGER, -- Green context ID.
    streamId INTEGER NOT NULL, -- Stream ID.
    correlationId INTEGER, -- Correlation ID of the synchronization API to which this result is associated.
    globalPid INTEGER, -- Serialized GlobalId.
    deprecatedSyncType INTEGER, -- Deprecated, use syncType instead.
    syncType INTEGER NOT NULL, -- REFERENCES ENUM_CUPTI_SYNC_TYPE(id)
    eventId INTEGER NOT NULL, -- Event ID for which the synchronization API is called.
    eventSyncId INTEGER -- CUDA Event Sync ID to link the synchronization API to associated event record API.
)`
	ddlGraphTrace = `CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (
` + ddlActivityColumns + `    graphId INTEGER NOT NULL, -- REFERENCES CUDA_GRAPH_EVENTS(graphId)
    graphExecId INTEGER NOT NULL -- REFERENCES CUDA_GRAPH_EVENTS(graphExecId)
)`
	ddlNVTX = `CREATE TABLE NVTX_EVENTS (
    start INTEGER NOT NULL, -- Event start timestamp (ns).
    end INTEGER, -- Event end timestamp (ns).
    eventType INTEGER NOT NULL, -- REFERENCES ENUM_NSYS_EVENT_TYPE(id)
    rangeId INTEGER, -- Correlation ID returned from a nvtxRangeStart call.
    category INTEGER, -- User-controlled ID that can be used to group events.
    color INTEGER, -- Encoded ARGB color value.
    text TEXT, -- Explicit name/text (non-registered string)
    globalTid INTEGER, -- Serialized GlobalId.
    endGlobalTid INTEGER, -- Serialized GlobalId.
    textId INTEGER, -- REFERENCES StringIds(id) -- Registered NVTX domain/string
    domainId INTEGER, -- User-controlled ID that can be used to group events.
    uint64Value INTEGER, -- One of possible payload value union members.
    int64Value INTEGER, -- One of possible payload value union members.
    doubleValue REAL, -- One of possible payload value union members.
    uint32Value INTEGER, -- One of possible payload value union members.
    int32Value INTEGER, -- One of possible payload value union members.
    floatValue REAL, -- One of possible payload value union members.
    jsonTextId INTEGER, -- One of possible payload value union members.
    jsonText TEXT, -- One of possible payload value union members.
    binaryData TEXT -- Binary payload. See docs for format.
)`
	ddlTargetGPUMetrics = `CREATE TABLE TARGET_INFO_GPU_METRICS (
    typeId INTEGER NOT NULL, -- REFERENCES GENERIC_EVENT_TYPES(typeId)
    sourceId INTEGER NOT NULL, -- REFERENCES GENERIC_EVENT_SOURCES(sourceId)
    typeName TEXT NOT NULL, -- Name of event type.
    metricId INTEGER NOT NULL, -- Id of metric in event; not assumed to be stable.
    metricName TEXT NOT NULL -- Definitive name of metric.
)`
	ddlGPUMetrics = `CREATE TABLE GPU_METRICS (
    timestamp INTEGER, -- Event timestamp (ns).
    typeId INTEGER NOT NULL, -- REFERENCES TARGET_INFO_GPU_METRICS(typeId) and GENERIC_EVENT_TYPES(typeId)
    metricId INTEGER NOT NULL, -- REFERENCES TARGET_INFO_GPU_METRICS(metricId)
    value INTEGER NOT NULL -- Counter data value
)`
	ddlMemoryUsage = `CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (
    start INTEGER NOT NULL, -- Event start timestamp (ns).
    globalPid INTEGER, -- Serialized GlobalId.
    deviceId INTEGER NOT NULL, -- Device ID.
    contextId INTEGER NOT NULL, -- Context ID.
    address INTEGER NOT NULL, -- Virtual address of the allocation/deallocation.
    pc INTEGER NOT NULL, -- Program counter of the allocation/deallocation.
    bytes INTEGER NOT NULL, -- Number of bytes allocated/deallocated (B).
    memKind INTEGER NOT NULL, -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    memoryOperationType INTEGER NOT NULL, -- REFERENCES ENUM_CUDA_DEV_MEM_EVENT_OPER(id)
    name TEXT, -- Variable name, if available.
    correlationId INTEGER -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
)`
)
