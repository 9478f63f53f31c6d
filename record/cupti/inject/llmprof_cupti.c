/*
 * llmprof_cupti.c: the CUPTI activity injection library of `llmprof record --cupti`.
 *
 * The CUDA driver loads the shared library named by CUDA_INJECTION64_PATH when
 * a process initializes CUDA and calls its InitializeInjection(). This one
 * enables CUPTI activity records for kernels, memcpy, memset,
 * synchronization and the runtime and driver API, and appends them to
 * $LLMPROF_CUPTI_DIR/cupti-<pid>.lpcupti in the layout below (decoded by
 * record/cupti/decode.go; docs/record.md, "--cupti").
 *
 * `llmprof record --cupti` compiles this file with the system C compiler
 * against the CUDA toolkit's cupti.h and libcupti (record/cupti/build.go).
 *
 * File layout, version 1 (all integers little-endian):
 *
 *   header, 32 bytes:
 *     0  "LLMPCUPT"                 8-byte magic
 *     8  u16 version (1)
 *     10 u16 header size (32)
 *     12 u32 pid
 *     16 u32 CUPTI_API_VERSION compiled against
 *     20 u32 cuptiGetVersion() at run time (0 if it failed)
 *     24 u32 flags (0)
 *     28 u32 reserved (0)
 *   records, each:
 *     0  u16 kind
 *     2  u16 reserved (0)
 *     4  u32 size: the whole record, header included, a multiple of 8
 *     8  payload (size - 8 bytes; the layout of each kind is in
 *        record/cupti/format.go and docs/record.md)
 *
 * A string (kernel name, API function name) is written once as a STRING
 * record before the first record that refers to its id. Writes happen under
 * one mutex, so records never interleave. A reader takes every complete
 * record; a file cut mid-record (a killed process) loses only that record.
 * A clean end is a CLOCK record labelled "end".
 *
 * Flushing: a helper thread flushes completed CUPTI buffers every
 * LLMPROF_CUPTI_FLUSH_MS (default 2000) and writes a clock pair; atexit()
 * forces a flush of every buffer, and so does SIGTERM or SIGINT (the handler
 * wakes the helper thread, waits for it at most 3 s, then lets the signal do
 * what it did before).
 */
#define _GNU_SOURCE
#include <cupti.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "llmprof_cupti.c writes its records in host order and needs a little-endian host"
#endif

/*
 * Record structures. CUPTI's versioned records only append fields, and only
 * fields present since CUDA 11.8 are read here, so any version at least as
 * new as these works; the newest the header declares is taken. (The CUDA 13
 * names come from NVIDIA's documentation; llmprof's CI compiles this file
 * against CUDA 12.6's headers.) -DLLMP_KERNEL_T=... and friends override.
 */
#if !defined(CUPTI_API_VERSION) || CUPTI_API_VERSION < 18
#error "llmprof --cupti needs CUPTI from CUDA 11.8 or newer (CUPTI_API_VERSION >= 18)"
#endif
#ifndef LLMP_KERNEL_T
#if CUPTI_API_VERSION >= 130000
#define LLMP_KERNEL_T CUpti_ActivityKernel10
#elif CUPTI_API_VERSION >= 19
#define LLMP_KERNEL_T CUpti_ActivityKernel9
#else
#define LLMP_KERNEL_T CUpti_ActivityKernel8
#endif
#endif
#ifndef LLMP_MEMCPY_T
#if CUPTI_API_VERSION >= 130000
#define LLMP_MEMCPY_T CUpti_ActivityMemcpy6
#else
#define LLMP_MEMCPY_T CUpti_ActivityMemcpy5
#endif
#endif
#ifndef LLMP_MEMSET_T
#if CUPTI_API_VERSION >= 130000
#define LLMP_MEMSET_T CUpti_ActivityMemset5
#else
#define LLMP_MEMSET_T CUpti_ActivityMemset4
#endif
#endif
#ifndef LLMP_SYNC_T
#define LLMP_SYNC_T CUpti_ActivitySynchronization
#endif

/* Record kinds (record/cupti/format.go). */
enum {
	REC_CLOCK = 1,
	REC_STRING = 2,
	REC_KERNEL = 3,
	REC_MEMCPY = 4,
	REC_MEMSET = 5,
	REC_SYNC = 6,
	REC_API = 7,
	REC_DROPPED = 8,
};

/* Clock labels. */
enum { CLOCK_START = 0, CLOCK_PERIODIC = 1, CLOCK_END = 2, CLOCK_SIGNAL = 3 };

#define FORMAT_VERSION 1
#define HEADER_SIZE 32
#define MAX_STRING 65000      /* longer names are cut */
#define BUFFER_BYTES (8u << 20) /* one CUPTI activity buffer */

static pthread_mutex_t write_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t flush_mu = PTHREAD_MUTEX_INITIALIZER;
/* The file, written through our own buffer rather than stdio: a fork()ed
 * child drops the buffer it inherited (at_fork_child) instead of flushing a
 * copy of it at its exit. */
static int fd = -1;
static uint8_t *wbuf;
static size_t wlen;
#define WBUF_BYTES (1u << 20)
static pid_t owner;      /* the process that opened the file */
static int write_failed; /* after a failed write nothing more is written */

/* out_flush writes the buffer out; write_mu held. */
static void out_flush(void)
{
	size_t off = 0;
	while (fd >= 0 && !write_failed && off < wlen) {
		ssize_t n = write(fd, wbuf + off, wlen - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			write_failed = 1;
		else
			off += (size_t)n;
	}
	wlen = 0;
}

/* out_write appends n bytes; write_mu held. */
static void out_write(const void *p, size_t n)
{
	if (fd < 0 || write_failed)
		return;
	if (wlen + n > WBUF_BYTES)
		out_flush();
	if (n > WBUF_BYTES) {
		const uint8_t *b = p;
		while (n > 0 && !write_failed) {
			ssize_t k = write(fd, b, n);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				write_failed = 1;
			else
				b += k, n -= (size_t)k;
		}
		return;
	}
	memcpy(wbuf + wlen, p, n);
	wlen += n;
}

static void at_fork_child(void)
{
	/* The child's copy of the file and of the buffer are the parent's. */
	if (fd >= 0)
		close(fd);
	fd = -1;
	wlen = 0;
}

static sem_t wake;
static volatile sig_atomic_t signal_flush_requested;
static volatile sig_atomic_t signal_flush_done;
static volatile sig_atomic_t in_signal;
static struct sigaction old_term, old_int;
static unsigned flush_ms = 2000;

/* ---- little-endian record building ---- */

typedef struct {
	uint8_t b[128];
	size_t n;
} rec_t;

static void put16(rec_t *r, uint16_t v) { memcpy(r->b + r->n, &v, 2); r->n += 2; }
static void put32(rec_t *r, uint32_t v) { memcpy(r->b + r->n, &v, 4); r->n += 4; }
static void put64(rec_t *r, uint64_t v) { memcpy(r->b + r->n, &v, 8); r->n += 8; }

static void begin(rec_t *r, uint16_t kind)
{
	r->n = 0;
	put16(r, kind);
	put16(r, 0);
	put32(r, 0); /* size, filled by finish() */
}

/* finish pads to 8 bytes, sets the size and writes the record; write_mu held. */
static void finish(rec_t *r)
{
	while (r->n % 8)
		r->b[r->n++] = 0;
	uint32_t size = (uint32_t)r->n;
	memcpy(r->b + 4, &size, 4);
	out_write(r->b, r->n);
}

/* ---- string table: interned by content, ids from 1 ---- */

typedef struct {
	char *s;
	uint32_t len, id;
	uint64_t hash;
} slot_t;

static slot_t *slots;
static size_t nslots, nused;
static uint32_t next_id = 1;

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (uint8_t)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

static int grow(void)
{
	size_t n = nslots ? nslots * 2 : 4096;
	slot_t *s = calloc(n, sizeof *s);
	if (!s)
		return -1;
	for (size_t i = 0; i < nslots; i++) {
		if (!slots[i].s)
			continue;
		size_t j = slots[i].hash & (n - 1);
		while (s[j].s)
			j = (j + 1) & (n - 1);
		s[j] = slots[i];
	}
	free(slots);
	slots = s;
	nslots = n;
	return 0;
}

/* intern returns the id of s, writing a STRING record the first time; 0 if
 * it cannot (no memory). write_mu held. */
static uint32_t intern(const char *s)
{
	if (!s)
		return 0;
	size_t len = strnlen(s, MAX_STRING);
	uint64_t h = fnv(s, len);
	if ((nused + 1) * 2 > nslots && grow() != 0)
		return 0;
	size_t j = h & (nslots - 1);
	while (slots[j].s) {
		if (slots[j].hash == h && slots[j].len == len && memcmp(slots[j].s, s, len) == 0)
			return slots[j].id;
		j = (j + 1) & (nslots - 1);
	}
	char *copy = malloc(len + 1);
	if (!copy)
		return 0;
	memcpy(copy, s, len);
	copy[len] = 0;
	slots[j] = (slot_t){copy, (uint32_t)len, next_id++, h};
	nused++;
	/* STRING: u32 id, u32 len, bytes, zero padding to 8. */
	uint8_t head[16];
	uint32_t size = (uint32_t)((16 + len + 7) & ~(size_t)7);
	uint16_t kind = REC_STRING, zero16 = 0;
	memcpy(head, &kind, 2);
	memcpy(head + 2, &zero16, 2);
	memcpy(head + 4, &size, 4);
	memcpy(head + 8, &slots[j].id, 4);
	memcpy(head + 12, &slots[j].len, 4);
	static const uint8_t pad[8];
	out_write(head, 16);
	out_write(copy, len);
	out_write(pad, size - 16 - len);
	return slots[j].id;
}

/* API function names by (domain, cbid), cached. */
#define MAX_CBID 8192
static uint32_t api_names[3][MAX_CBID];

static uint32_t api_name(CUpti_CallbackDomain domain, uint32_t cbid)
{
	int d = domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : 2;
	if (cbid < MAX_CBID && api_names[d][cbid])
		return api_names[d][cbid];
	const char *name = NULL;
	if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name)
		return 0;
	uint32_t id = intern(name);
	if (cbid < MAX_CBID)
		api_names[d][cbid] = id;
	return id;
}

/* ---- clocks ---- */

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* write_clock reads cuptiGetTimestamp and CLOCK_MONOTONIC between two
 * CLOCK_REALTIME reads, keeps the tightest of five tries and writes it.
 * CLOCK: u32 label, u32 0, i64 cupti, i64 realtime low, i64 realtime high,
 * i64 monotonic. */
static void write_clock(uint32_t label)
{
	int64_t best_lo = 0, best_hi = 0, best_mono = 0;
	uint64_t best_cupti = 0;
	for (int i = 0; i < 5; i++) {
		uint64_t c = 0;
		int64_t lo = clock_ns(CLOCK_REALTIME);
		if (cuptiGetTimestamp(&c) != CUPTI_SUCCESS)
			return;
		int64_t mono = clock_ns(CLOCK_MONOTONIC);
		int64_t hi = clock_ns(CLOCK_REALTIME);
		if (i == 0 || hi - lo < best_hi - best_lo) {
			best_lo = lo, best_hi = hi, best_mono = mono, best_cupti = c;
		}
	}
	rec_t r;
	begin(&r, REC_CLOCK);
	put32(&r, label);
	put32(&r, 0);
	put64(&r, best_cupti);
	put64(&r, (uint64_t)best_lo);
	put64(&r, (uint64_t)best_hi);
	put64(&r, (uint64_t)best_mono);
	pthread_mutex_lock(&write_mu);
	finish(&r);
	pthread_mutex_unlock(&write_mu);
}

/* ---- activity records ---- */

/* KERNEL: u64 start, end, graph node id; u32 correlation, device, context,
 * stream, name id, graph id; i32 grid x y z, block x y z, static and
 * dynamic shared memory; u16 registers per thread, u8 CUPTI kind, u8 0,
 * u32 0. */
static void kernel(const CUpti_Activity *a)
{
	const LLMP_KERNEL_T *k = (const LLMP_KERNEL_T *)a;
	rec_t r;
	begin(&r, REC_KERNEL);
	put64(&r, k->start);
	put64(&r, k->end);
	put64(&r, k->graphNodeId);
	put32(&r, k->correlationId);
	put32(&r, k->deviceId);
	put32(&r, k->contextId);
	put32(&r, k->streamId);
	put32(&r, intern(k->name));
	put32(&r, k->graphId);
	put32(&r, (uint32_t)k->gridX);
	put32(&r, (uint32_t)k->gridY);
	put32(&r, (uint32_t)k->gridZ);
	put32(&r, (uint32_t)k->blockX);
	put32(&r, (uint32_t)k->blockY);
	put32(&r, (uint32_t)k->blockZ);
	put32(&r, (uint32_t)k->staticSharedMemory);
	put32(&r, (uint32_t)k->dynamicSharedMemory);
	put16(&r, k->registersPerThread);
	r.b[r.n++] = (uint8_t)a->kind;
	r.b[r.n++] = 0;
	put32(&r, 0);
	finish(&r);
}

/* MEMCPY: u64 start, end, bytes, graph node id; u32 correlation, runtime
 * correlation, device, context, stream, graph id; u8 copy kind, src kind,
 * dst kind, flags; u32 0. */
static void memcpy_rec(const CUpti_Activity *a)
{
	const LLMP_MEMCPY_T *m = (const LLMP_MEMCPY_T *)a;
	rec_t r;
	begin(&r, REC_MEMCPY);
	put64(&r, m->start);
	put64(&r, m->end);
	put64(&r, m->bytes);
	put64(&r, m->graphNodeId);
	put32(&r, m->correlationId);
	put32(&r, m->runtimeCorrelationId);
	put32(&r, m->deviceId);
	put32(&r, m->contextId);
	put32(&r, m->streamId);
	put32(&r, m->graphId);
	r.b[r.n++] = m->copyKind;
	r.b[r.n++] = m->srcKind;
	r.b[r.n++] = m->dstKind;
	r.b[r.n++] = m->flags;
	put32(&r, 0);
	finish(&r);
}

/* MEMSET: u64 start, end, bytes, graph node id; u32 correlation, device,
 * context, stream, graph id, value; u16 flags, memory kind; u32 0. */
static void memset_rec(const CUpti_Activity *a)
{
	const LLMP_MEMSET_T *m = (const LLMP_MEMSET_T *)a;
	rec_t r;
	begin(&r, REC_MEMSET);
	put64(&r, m->start);
	put64(&r, m->end);
	put64(&r, m->bytes);
	put64(&r, m->graphNodeId);
	put32(&r, m->correlationId);
	put32(&r, m->deviceId);
	put32(&r, m->contextId);
	put32(&r, m->streamId);
	put32(&r, m->graphId);
	put32(&r, m->value);
	put16(&r, m->flags);
	put16(&r, m->memoryKind);
	put32(&r, 0);
	finish(&r);
}

/* SYNC: u64 start, end; u32 correlation, context, stream, CUDA event id,
 * type, 0. */
static void sync_rec(const CUpti_Activity *a)
{
	const LLMP_SYNC_T *s = (const LLMP_SYNC_T *)a;
	rec_t r;
	begin(&r, REC_SYNC);
	put64(&r, s->start);
	put64(&r, s->end);
	put32(&r, s->correlationId);
	put32(&r, s->contextId);
	put32(&r, s->streamId);
	put32(&r, s->cudaEventId);
	put32(&r, (uint32_t)s->type);
	put32(&r, 0);
	finish(&r);
}

/* API: u64 start, end; u32 correlation, cbid, pid, tid, return value, name
 * id; u8 domain (1 driver, 2 runtime), 7 bytes 0. */
static void api_rec(const CUpti_Activity *a)
{
	const CUpti_ActivityAPI *p = (const CUpti_ActivityAPI *)a;
	CUpti_CallbackDomain domain = a->kind == CUPTI_ACTIVITY_KIND_DRIVER ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
	rec_t r;
	begin(&r, REC_API);
	put64(&r, p->start);
	put64(&r, p->end);
	put32(&r, p->correlationId);
	put32(&r, p->cbid);
	put32(&r, p->processId);
	put32(&r, p->threadId);
	put32(&r, p->returnValue);
	put32(&r, api_name(domain, p->cbid));
	r.b[r.n++] = domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : 2;
	finish(&r);
}

/* DROPPED: u64 records CUPTI dropped, u32 stream, u32 0. */
static void dropped_rec(uint64_t n, uint32_t stream)
{
	rec_t r;
	begin(&r, REC_DROPPED);
	put64(&r, n);
	put32(&r, stream);
	put32(&r, 0);
	finish(&r);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	void *p = NULL;
	if (posix_memalign(&p, 8, BUFFER_BYTES) != 0)
		p = NULL;
	*buffer = p;
	*size = p ? BUFFER_BYTES : 0;
	*max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	(void)size;
	pthread_mutex_lock(&write_mu);
	if (getpid() == owner && buffer) {
		CUpti_Activity *a = NULL;
		while (cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS) {
			switch (a->kind) {
			case CUPTI_ACTIVITY_KIND_KERNEL:
			case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
				kernel(a);
				break;
			case CUPTI_ACTIVITY_KIND_MEMCPY:
				memcpy_rec(a);
				break;
			case CUPTI_ACTIVITY_KIND_MEMSET:
				memset_rec(a);
				break;
			case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
				sync_rec(a);
				break;
			case CUPTI_ACTIVITY_KIND_RUNTIME:
			case CUPTI_ACTIVITY_KIND_DRIVER:
				api_rec(a);
				break;
			default:
				break;
			}
		}
		size_t dropped = 0;
		if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
			dropped_rec(dropped, stream);
	}
	pthread_mutex_unlock(&write_mu);
	free(buffer);
}

/* flush moves CUPTI's buffers (forced: also the ones still filling) into
 * the file and writes a clock pair. */
static void flush(int forced, uint32_t label)
{
	pthread_mutex_lock(&flush_mu);
	if (getpid() == owner) {
		cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
		write_clock(label);
		pthread_mutex_lock(&write_mu);
		out_flush();
		pthread_mutex_unlock(&write_mu);
	}
	pthread_mutex_unlock(&flush_mu);
}

static void *flusher(void *arg)
{
	(void)arg;
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL); /* the handlers never run here */
	for (;;) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += flush_ms / 1000;
		until.tv_nsec += (long)(flush_ms % 1000) * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		int r = sem_timedwait(&wake, &until);
		if (r == 0 && signal_flush_requested) {
			flush(1, CLOCK_SIGNAL);
			signal_flush_done = 1;
			continue;
		}
		if (r != 0 && errno == EINTR)
			continue;
		flush(0, CLOCK_PERIODIC);
	}
	return NULL;
}

static void at_exit(void)
{
	if (getpid() != owner)
		return;
	flush(1, CLOCK_END);
}

/* on_signal asks the helper thread for a forced flush (sem_post is
 * async-signal-safe), waits for it at most 3 s, then hands the signal on. */
static void on_signal(int sig, siginfo_t *info, void *uctx)
{
	if (!in_signal && getpid() == owner) {
		in_signal = 1;
		signal_flush_done = 0;
		signal_flush_requested = 1;
		sem_post(&wake);
		struct timespec ms = {0, 1000000L};
		for (int i = 0; i < 3000 && !signal_flush_done; i++)
			nanosleep(&ms, NULL);
	}
	struct sigaction *old = sig == SIGTERM ? &old_term : &old_int;
	if (old->sa_flags & SA_SIGINFO) {
		if (old->sa_sigaction) {
			old->sa_sigaction(sig, info, uctx);
			return;
		}
	} else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
		old->sa_handler(sig);
		return;
	} else if (old->sa_handler == SIG_IGN) {
		return;
	}
	/* The default action: restore it and deliver the signal again (it is
	 * blocked while this handler runs, so it arrives on return). */
	sigaction(sig, old, NULL);
	raise(sig);
}

static void install(int sig, struct sigaction *old)
{
	if (sigaction(sig, NULL, old) != 0 || (!(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_IGN))
		return; /* an ignored signal stays ignored */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void say(const char *what, CUptiResult r)
{
	const char *msg = "";
	cuptiGetResultString(r, &msg);
	fprintf(stderr, "llmprof-cupti: %s: %s; this process is not traced\n", what, msg ? msg : "");
}

static int initialized;

int InitializeInjection(void)
{
	if (__atomic_exchange_n(&initialized, 1, __ATOMIC_SEQ_CST))
		return 1;
	const char *dir = getenv("LLMPROF_CUPTI_DIR");
	if (!dir || !*dir) {
		fprintf(stderr, "llmprof-cupti: LLMPROF_CUPTI_DIR is not set; this process is not traced\n");
		return 1; /* never fail the workload */
	}
	const char *ms = getenv("LLMPROF_CUPTI_FLUSH_MS");
	if (ms && atoi(ms) >= 10)
		flush_ms = (unsigned)atoi(ms);
	char path[4096];
	owner = getpid();
	if (snprintf(path, sizeof path, "%s/cupti-%d.lpcupti", dir, (int)owner) >= (int)sizeof path) {
		fprintf(stderr, "llmprof-cupti: LLMPROF_CUPTI_DIR is too long; this process is not traced\n");
		return 1;
	}
	wbuf = malloc(WBUF_BYTES);
	fd = wbuf ? open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644) : -1;
	if (fd < 0) {
		fprintf(stderr, "llmprof-cupti: %s: %s; this process is not traced\n", path, strerror(errno));
		return 1;
	}
	pthread_atfork(NULL, NULL, at_fork_child);
	uint32_t runtime_version = 0;
	if (cuptiGetVersion(&runtime_version) != CUPTI_SUCCESS)
		runtime_version = 0;
	uint8_t h[HEADER_SIZE] = {'L', 'L', 'M', 'P', 'C', 'U', 'P', 'T'};
	uint16_t v = FORMAT_VERSION, hs = HEADER_SIZE;
	uint32_t pid = (uint32_t)owner, api = CUPTI_API_VERSION;
	memcpy(h + 8, &v, 2);
	memcpy(h + 10, &hs, 2);
	memcpy(h + 12, &pid, 4);
	memcpy(h + 16, &api, 4);
	memcpy(h + 20, &runtime_version, 4);
	pthread_mutex_lock(&write_mu);
	out_write(h, sizeof h);
	pthread_mutex_unlock(&write_mu);

	CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
	if (r != CUPTI_SUCCESS) {
		say("cuptiActivityRegisterCallbacks", r);
		return 1;
	}
	/* CONCURRENT_KERNEL keeps kernels concurrent (KERNEL would serialize them). */
	static const CUpti_ActivityKind kinds[] = {
		CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
		CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
	};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		r = cuptiActivityEnable(kinds[i]);
		if (r != CUPTI_SUCCESS) {
			say("cuptiActivityEnable", r);
			/* SYNCHRONIZATION is missing on some platforms; the others are not. */
			if (kinds[i] != CUPTI_ACTIVITY_KIND_SYNCHRONIZATION)
				return 1;
		}
	}
	write_clock(CLOCK_START);
	atexit(at_exit);
	if (sem_init(&wake, 0, 0) == 0) {
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, flusher, NULL) == 0) {
			install(SIGTERM, &old_term);
			install(SIGINT, &old_int);
		}
		pthread_attr_destroy(&attr);
	}
	return 1;
}
