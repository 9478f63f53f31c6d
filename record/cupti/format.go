// Package cupti is llmprof's own CUPTI activity capture: the injection
// library `llmprof record --cupti` builds and loads into the command
// (inject/llmprof_cupti.c, through CUDA_INJECTION64_PATH), the build of that
// library where CUDA's headers are (build.go), and the decoder of the files
// it writes into the capture's cupti/ folder (decode.go), one per CUDA
// process, into ingest.Trace GPU ops and CUDA API spans joined by
// correlation ID. It sits beside the capture reader in the pipeline:
//
//	record --cupti ──► cupti/cupti-<pid>.lpcupti ──► Decode ──► ingest.Trace ──► align ──► …
//
// The file layout is defined here and in the C source's header comment;
// docs/record.md ("--cupti") documents it for other readers.
package cupti

// Layout of a .lpcupti file, version 1. All integers are little-endian.
//
// Header (HeaderSize bytes): "LLMPCUPT", u16 version, u16 header size, u32
// pid, u32 CUPTI_API_VERSION compiled against, u32 cuptiGetVersion() at run
// time, u32 flags, u32 reserved.
//
// Then records: u16 kind, u16 reserved, u32 size (the whole record, a
// multiple of 8, at least 8), payload. Kinds and their payloads (offsets
// from the payload's start):
//
//	KindClock   (40) 0 u32 label, 4 u32 0, 8 u64 CUPTI timestamp, 16 i64
//	                 CLOCK_REALTIME before, 24 i64 CLOCK_REALTIME after, 32
//	                 i64 CLOCK_MONOTONIC (between the two)
//	KindString  (8+n, padded) 0 u32 id (≥ 1), 4 u32 length n, 8 the bytes
//	KindKernel  (88) 0 u64 start, 8 u64 end, 16 u64 graph node id, 24 u32
//	                 correlation, 28 device, 32 context, 36 stream, 40 name
//	                 id, 44 graph id, 48 i32 grid x, y, z, 60 i32 block x, y,
//	                 z, 72 i32 static shared memory, 76 i32 dynamic shared
//	                 memory, 80 u16 registers per thread, 82 u8 CUPTI
//	                 activity kind (3 KERNEL, 10 CONCURRENT_KERNEL)
//	KindMemcpy  (64) 0 u64 start, 8 end, 16 bytes, 24 graph node id, 32 u32
//	                 correlation, 36 runtime correlation, 40 device, 44
//	                 context, 48 stream, 52 graph id, 56 u8 copy kind
//	                 (CUpti_ActivityMemcpyKind), 57 src kind, 58 dst kind, 59
//	                 flags
//	KindMemset  (64) 0 u64 start, 8 end, 16 bytes, 24 graph node id, 32 u32
//	                 correlation, 36 device, 40 context, 44 stream, 48 graph
//	                 id, 52 value, 56 u16 flags, 58 u16 memory kind
//	KindSync    (40) 0 u64 start, 8 end, 16 u32 correlation, 20 context, 24
//	                 stream, 28 CUDA event id, 32 type
//	                 (CUpti_ActivitySynchronizationType)
//	KindAPI     (48) 0 u64 start, 8 end, 16 u32 correlation, 20 cbid, 24 pid,
//	                 28 tid, 32 return value, 36 name id, 40 u8 domain (1
//	                 driver, 2 runtime)
//	KindDropped (16) 0 u64 records CUPTI dropped, 8 u32 stream
//
// A payload longer than its kind's is accepted (later fields a newer writer
// added are skipped); a shorter one is an error. Unknown kinds are skipped
// and counted. Timestamps are CUPTI's (ns); the clock records tie them to
// CLOCK_REALTIME with a bracket.
const (
	Magic         = "LLMPCUPT"
	FormatVersion = 1
	HeaderSize    = 32
	// MaxRecord bounds one record: the longest string the library writes
	// is 65,000 bytes.
	MaxRecord = 1 << 20
)

// Record kinds.
const (
	KindClock   = 1
	KindString  = 2
	KindKernel  = 3
	KindMemcpy  = 4
	KindMemset  = 5
	KindSync    = 6
	KindAPI     = 7
	KindDropped = 8
)

// payloadSize is each kind's payload in version 1.
var payloadSize = map[uint16]int{
	KindClock: 40, KindString: 8, KindKernel: 88, KindMemcpy: 64, KindMemset: 64,
	KindSync: 40, KindAPI: 48, KindDropped: 16,
}

// Clock labels.
const (
	ClockStart    = 0
	ClockPeriodic = 1
	ClockEnd      = 2
	ClockSignal   = 3
)

// API domains.
const (
	DomainDriver  = 1
	DomainRuntime = 2
)

// FileExt is the extension of the library's files; FilePattern their names.
const (
	FileExt     = ".lpcupti"
	FilePattern = "cupti-*.lpcupti"
)
