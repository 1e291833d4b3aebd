/*
 * cuda_agent.c - libiscope-cuda.so, InferScope's GPU collector.
 *
 * iscope-record puts this library in CUDA_INJECTION64_PATH; the CUDA
 * driver loads it in cuInit and calls InitializeInjection.  It records
 * what CUPTI's activity API reports (kernels, copies, memsets,
 * synchronization, runtime and driver calls, NVTX ranges, device memory,
 * devices and contexts) into <INFERSCOPE_SESSION>/<pid>.cuda.shm, a file
 * with the layout of lib/isc_shm.h, which the recorder drains like the
 * Python agent's file (formats/trace.md Appendix A.7).  Its rings are not
 * per thread: records go to the current ring, and to the next one with
 * room when it is full, so a burst (the flush at exit) has all of them.
 *
 *   CUDA calls --CUPTI--> activity buffers --buf_done()--> convert, sort
 *                                                   by start, push --> ring
 *   flusher thread: cuptiActivityFlushAll(0) every flush_ms
 *   atexit: forced flush, dropped counts, the agent's cost, cuptiFinalize
 *
 * What it costs the workload (issue 29).  Activity records only: runtime
 * calls (RUNTIME) give a launch through the runtime its call; of the
 * driver calls (DRIVER), only the launch family (driver_launch_cbids:
 * cuLaunchKernel(Ex), cooperative launches, cuGraphLaunch...), which
 * cuBLAS, cuDNN and Triton call directly (on an H200 with CUDA 13 every
 * cuBLAS GEMM was a cuLaunchKernelEx with no runtime call around it; a
 * runtime launch made no driver record there); every driver call but
 * the quiet ones only with INFERSCOPE_CUDA_DRIVER_API=1 (iscope-record
 * --cuda-driver-api).  A driver call made inside a runtime call shares
 * its correlation id; the analysis counts the runtime call alone.  No
 * callback domain is enabled: the subscriber's callback does nothing
 * outside the sampled Python mode (the subscription claims CUPTI).
 * Buffers: CUPTI asks for one on the thread that fills the last one (a
 * workload thread); they come from a pool the buffers handed back refill,
 * so after the first few a request is a pop, with no allocation or page
 * faults on the workload's thread; the conversion (buf_done) runs on the
 * flusher (or CUPTI's) thread under g.mu, which no workload thread takes,
 * and a full ring drops and counts, never waits.  A record is converted
 * without string work: names come from caches kept under g.mu (a call's
 * by cbid, a kernel's by CUPTI's name pointer checked against its text, a
 * copy's, memset's, sync's or overhead's by kind), so g.smu, which the
 * sample mode's launch callbacks take for a Python line never seen, is
 * taken by the conversion only for a name never seen either; a callback
 * on a line seen before takes no lock (site cache read under its
 * sequence number), and counts on its thread's own counters
 * (tests/bench/cuda_agent_cost.sh measures both).  The agent's own CPU time
 * converting records is measured (CLOCK_THREAD_CPUTIME_ID around each
 * buffer) and written at exit with the records and callbacks counted
 * (META cuda.agent.*), beside CUPTI's OVERHEAD records: iscope-analyze
 * states them per launch (gpu.agent).
 *
 * Times: CUPTI stamps every record with our timestamp callback
 * (CLOCK_MONOTONIC ns, the trace's clock), registered before any kind is
 * enabled.  Records come in completion order, buffers late; each record
 * goes to the ring with the time it was written (so the ring's delta chain
 * never goes back) and its real start as an offset from it; iscope-merge
 * puts them in start order within the delay announced by GPU_AGENT.
 *
 * Concurrency: CUPTI calls buf_done from its own thread and from whatever
 * thread calls cuptiActivityFlushAll (our flusher, exit).  g.mu serialises
 * the conversion, the ring (one producer at a time) and the string area.
 *
 * Nothing here may crash, block or change the workload: every failure
 * becomes one WARNING record, one line on stderr and no GPU records.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "isc_config.h"
#include "isc_format.h"
#include "isc_shm.h"
#include "pyframe.h"

#define EXPORT __attribute__((visibility("default")))

#define BUF_SIZE (1u << 20)      /* one CUPTI activity buffer */
#define POOL_MAX 64              /* buffers kept for reuse (64 MiB at most) */
#define DEFAULT_RING_KB 1024     /* per ring; iscope-record sets INFERSCOPE_RING_KB */
#define DEFAULT_SLOTS 8
#define DEFAULT_STR_KB 4096
#define DEFAULT_LAG_MS 1000
#define DEFAULT_FLUSH_MS 100
#define NAME_MAX_BYTES 1024      /* bytes kept of a name, as the Python agent */
#define REC_MAX 2200             /* largest record we encode (a WARNING, META) */
#define OPEN_MARKERS 4096        /* NVTX ranges open at once that we follow */
#define NO_TIME(s, e) ((s) == 0 && (e) == 0) /* CUPTI_TIMESTAMP_UNKNOWN: incomplete at a forced flush */
#define MAX_CONTEXTS 256
#define SITES (1u << 16)         /* correlation id -> Python line of the call, direct-mapped */
#define SITE_CACHE 4096          /* (code object, offset) -> string id */
#define CB_TIMED 256             /* one launch callback in so many is timed */
#define CB_THREADS 255           /* threads with callback counters of their own */
#define API_CBIDS 1024           /* cbids whose call names are cached (CUDA 13: 523 runtime, 807 driver) */
#define KERNEL_CACHE 4096        /* kernel names, direct-mapped by CUPTI's name pointer */
#define OVERHEAD_KINDS 16

enum { OFF, RECORDING, STOPPED };

struct name_ent { /* interned name, by content */
	uint64_t hash;
	uint32_t id, line;
	uint8_t kind;
	char *text, *file;
};

struct site_ent { /* a Python line that made CUDA calls: written under g.smu, read without it (seq) */
	_Atomic uint32_t seq; /* odd while written */
	_Atomic uint32_t id;
	_Atomic uint64_t code;
	_Atomic int64_t off;
};

struct cb_thread { /* a thread's launch callbacks: its own, written without atomic operations */
	_Atomic uint64_t n, ns; /* callbacks, their estimated ns (read at exit) */
	uint64_t code;          /* the Python line of its last callback: (code, off) -> id */
	int64_t off;
	uint32_t id;
};

struct kname { /* a kernel's string id, by the name CUPTI gave (shared by its records) */
	const char *ptr; /* CUPTI's pointer */
	char *copy;      /* its text when first seen: a pointer reused for another name is a miss */
	uint32_t id;
};

struct marker { /* an NVTX range or instant not yet written */
	uint32_t id, tid, name_id, domain_id, color, category;
	uint64_t start, end;
	bool used, instant;
};

struct staged { /* a converted record waiting for the sort */
	uint64_t key; /* start time; 0 for untimed records: they go first */
	uint32_t off, len, seq;
	uint8_t type;
};

static struct {
	pthread_mutex_t mu;
	_Atomic int state;
	pid_t pid;
	char session[PATH_MAX];
	/* the shared-memory file */
	void *base;
	uint64_t file_size;
	struct isc_shm_proc *proc;
	uint8_t *str, *rings;
	uint32_t ring_size, nslots, cur; /* rings; the one written now */
	uint64_t str_size, last_commit;
	/* interning (under smu: the conversion, for names it has not cached, and the launch callbacks, for new lines) */
	pthread_mutex_t smu;
	uint32_t next_id;
	struct name_ent *names;
	uint32_t names_mask, names_count;
	/* conversion state */
	uint32_t ctx_dev[MAX_CONTEXTS][2]; /* context id, device id */
	unsigned nctx;
	struct marker markers[OPEN_MARKERS];
	struct staged *stage;
	size_t nstage, capstage;
	uint8_t *arena;
	size_t narena, caparena;
	char *(*demangle)(const char *, char *, size_t *, int *);
	bool driver_version_written;
	bool instants; /* an NVTX instant may wait for the end of the buffer */
	/* the string ids of the conversion's names, by what decides them (0: not yet) */
	uint32_t api_ids[2][API_CBIDS];        /* runtime, driver; by cbid */
	struct kname kernels[KERNEL_CACHE];    /* by CUPTI's name pointer, checked by content */
	uint32_t copy_ids[6][5][5], memset_ids[5], sync_ids[5], overhead_ids[OVERHEAD_KINDS];
	/* CUPTI */
	uint32_t cupti_version;
	unsigned lag_ms, flush_ms;
	CUpti_SubscriberHandle sub;
	bool subscribed;
	CUpti_ActivityKind enabled[20];
	int nenabled;
	bool driver_api;      /* every driver call asked for (INFERSCOPE_CUDA_DRIVER_API=1) */
	bool driver_launches; /* DRIVER activity enabled: the launch family at least */
	/* flusher thread */
	pthread_t flusher;
	bool flusher_on, stop;
	pthread_mutex_t fmu;
	pthread_cond_t fcv;
	/* buffers handed back, for the next requests (under pmu, held for a pop or a push) */
	pthread_mutex_t pmu;
	uint8_t *pool[POOL_MAX];
	unsigned npool;
	/* the agent's own cost (under mu): CPU time converting, records converted */
	uint64_t cpu_ns, records;
	struct cb_thread cbt[CB_THREADS + 1]; /* by thread, in the order of their first callback; the last shared */
	_Atomic uint32_t ncbt;
	/* sample mode: the Python line of each call (launch callbacks) */
	bool py_sites;
	bool cb_body; /* false with INFERSCOPE_CUDA_CALLBACKS=empty: they return at once (measuring CUPTI's dispatch) */
	_Atomic uint64_t sites[SITES];       /* correlation << 32 | string id */
	struct site_ent cache[SITE_CACHE];   /* written under smu */
} g = { .mu = PTHREAD_MUTEX_INITIALIZER, .fmu = PTHREAD_MUTEX_INITIALIZER, .pmu = PTHREAD_MUTEX_INITIALIZER,
	.smu = PTHREAD_MUTEX_INITIALIZER };

/* ---- small helpers --------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CUPTI's clock: ours, so GPU times need no conversion (DESIGN §3). */
static uint64_t CUPTIAPI timestamp_cb(void)
{
	return now_ns();
}

static uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* A record body under construction; overflow is impossible for our
 * records (REC_MAX) but checked anyway: a cut record is dropped. */
struct enc {
	uint8_t b[REC_MAX];
	unsigned n;
	bool overflow;
};

/* An empty body; its bytes are not cleared (a record is a few dozen of REC_MAX: clearing them all cost
 * more than the rest of a record's conversion). */
static void enc_init(struct enc *e)
{
	e->n = 0;
	e->overflow = false;
}

static void put(struct enc *e, uint64_t v)
{
	if (e->n + 10 > sizeof(e->b)) {
		e->overflow = true;
		return;
	}
	e->n += isc_put_varint(e->b + e->n, v);
}

static void put_raw(struct enc *e, const void *p, size_t n)
{
	if (e->n + n > sizeof(e->b)) {
		e->overflow = true;
		return;
	}
	memcpy(e->b + e->n, p, n);
	e->n += (unsigned)n;
}

/* Length of s cut to at most max bytes at a UTF-8 character boundary. */
static size_t cut_utf8(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);
	if (n <= max)
		return n;
	n = max;
	while (n > 0 && ((uint8_t)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* ---- the ring -------------------------------------------------------- */

static bool ring_fits(struct isc_shm_slot *s, unsigned len)
{
	uint64_t used = atomic_load_explicit(&s->head, memory_order_relaxed) -
			atomic_load_explicit(&s->tail, memory_order_acquire);
	return used <= g.ring_size && g.ring_size - used >= len;
}

/*
 * Pushes one record (type, body) with time ts into the current ring, or
 * the next with room; the delta is from the last record committed to that
 * ring, so a dropped record never breaks its chain.  When no ring has
 * room the record is dropped and counted on the current one.  Caller
 * holds g.mu.
 */
static void push(uint8_t type, uint64_t ts, const uint8_t *body, unsigned len)
{
	uint8_t rec[REC_MAX + 24];
	bool timed = type < 0x80;
	for (uint32_t k = 0; k < g.nslots; k++) {
		uint32_t i = (g.cur + k) % g.nslots;
		struct isc_shm_slot *s = isc_shm_slot_at(g.base, i);
		uint64_t t = timed && ts < s->last_ts ? s->last_ts : ts;
		unsigned n = 0, dl = timed ? isc_put_varint(rec + 12, t - s->last_ts) : 0;
		rec[n++] = type;
		n += isc_put_varint(rec + n, (uint64_t)dl + len);
		memmove(rec + n, rec + 12, dl);
		n += dl;
		memcpy(rec + n, body, len);
		n += len;
		if (!ring_fits(s, n))
			continue;
		isc_ring_push(s, g.rings + (uint64_t)i * g.ring_size, g.ring_size, rec, n);
		if (timed)
			s->last_ts = t;
		g.cur = i;
		return;
	}
	struct isc_shm_slot *s = isc_shm_slot_at(g.base, g.cur);
	atomic_fetch_add_explicit(&s->dropped, 1, memory_order_relaxed);
}

/* Writes a WARNING record and its one stderr line.  Caller holds g.mu (or
 * runs before anyone else can). */
static void warn_locked(enum isc_warning code, const char *msg)
{
	fprintf(stderr, "inferscope-cuda: %s\n", msg);
	if (!g.base)
		return;
	struct enc e;
	enc_init(&e);
	put(&e, (uint64_t)g.pid);
	put(&e, code);
	put_raw(&e, msg, cut_utf8(msg, 1024));
	push(ISC_REC_WARNING, now_ns(), e.b, e.n);
}

/* ---- strings --------------------------------------------------------- */

static uint64_t hash_name(uint8_t kind, const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL ^ kind;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
	return h;
}

/*
 * The id of name (n bytes) of the given string kind, with file and line
 * (a CODE string: the Python line of a call), defining it in the string
 * area the first time.  Ids start at ISC_STRING_ID_CUDA_BASE.  Returns 0
 * when the name cannot be kept (area full: counted in str_dropped).
 * Caller holds g.smu.
 */
static uint32_t intern_at(uint8_t kind, const char *name, size_t n, const char *file, uint32_t line)
{
	n = cut_utf8(name, n < NAME_MAX_BYTES ? n : NAME_MAX_BYTES);
	size_t fn = cut_utf8(file, NAME_MAX_BYTES);
	uint64_t h = hash_name(kind, name, n) ^ hash_name(kind, file, fn) * 31 ^ line;
	if (g.names_count * 2 >= g.names_mask) { /* grow: keep the load under 1/2 */
		uint32_t mask = g.names_mask ? g.names_mask * 2 + 1 : 1023;
		struct name_ent *t = calloc((size_t)mask + 1, sizeof(*t));
		if (!t)
			return 0;
		for (uint32_t i = 0; g.names && i <= g.names_mask; i++)
			if (g.names[i].text) {
				uint32_t j = (uint32_t)g.names[i].hash & mask;
				while (t[j].text)
					j = (j + 1) & mask;
				t[j] = g.names[i];
			}
		free(g.names);
		g.names = t;
		g.names_mask = mask;
	}
	uint32_t i = (uint32_t)h & g.names_mask;
	for (; g.names[i].text; i = (i + 1) & g.names_mask)
		if (g.names[i].hash == h && g.names[i].kind == kind && g.names[i].line == line &&
		    strlen(g.names[i].text) == n && !memcmp(g.names[i].text, name, n) &&
		    strlen(g.names[i].file) == fn && !memcmp(g.names[i].file, file, fn))
			return g.names[i].id;
	if (g.next_id >= ISC_STRING_ID_SAMPLER_BASE) /* the Python sampler's ids start there */
		return 0;
	/* STRING_DEF: id, kind, line, counted name, counted file */
	uint8_t hdr[32], fh[10];
	unsigned hl = isc_put_varint(hdr, g.next_id);
	hdr[hl++] = kind;
	hl += isc_put_varint(hdr + hl, line);
	hl += isc_put_varint(hdr + hl, n);
	unsigned fl = isc_put_varint(fh, fn);
	uint8_t rh[12];
	unsigned rl = 0;
	rh[rl++] = ISC_REC_STRING_DEF;
	rl += isc_put_varint(rh + rl, (uint64_t)hl + n + fl + fn);
	uint64_t at = atomic_load_explicit(&g.proc->str_committed, memory_order_relaxed);
	if (at + rl + hl + n + fl + fn > g.str_size) {
		atomic_fetch_add_explicit(&g.proc->str_dropped, 1, memory_order_relaxed);
		return 0;
	}
	char *copy = malloc(n + 1 + fn + 1);
	if (!copy)
		return 0;
	memcpy(copy, name, n);
	copy[n] = '\0';
	memcpy(copy + n + 1, file, fn);
	copy[n + 1 + fn] = '\0';
	uint8_t *dst = g.str + at;
	memcpy(dst, rh, rl);
	memcpy(dst + rl, hdr, hl);
	memcpy(dst + rl + hl, name, n);
	memcpy(dst + rl + hl + n, fh, fl);
	memcpy(dst + rl + hl + n + fl, file, fn);
	atomic_store_explicit(&g.proc->str_committed, at + rl + hl + n + fl + fn, memory_order_release);
	g.names[i] = (struct name_ent){ h, g.next_id, line, kind, copy, copy + n + 1 };
	g.names_count++;
	return g.next_id++;
}

/* A name without file or line; takes g.smu. */
static uint32_t intern(uint8_t kind, const char *name, size_t n)
{
	pthread_mutex_lock(&g.smu);
	uint32_t id = intern_at(kind, name, n, "", 0);
	pthread_mutex_unlock(&g.smu);
	return id;
}

static uint32_t intern_str(uint8_t kind, const char *s)
{
	return s ? intern(kind, s, strlen(s)) : 0;
}

/* A kernel's name, demangled when the process has a C++ runtime. */
static uint32_t intern_kernel_text(const char *mangled)
{
	if (!mangled)
		return intern_str(ISC_STR_CFUNC, "<unnamed kernel>");
	if (g.demangle && mangled[0] == '_' && mangled[1] == 'Z') {
		int st = -1;
		char *d = g.demangle(mangled, NULL, NULL, &st);
		if (d && st == 0) {
			uint32_t id = intern_str(ISC_STR_CFUNC, d);
			free(d);
			return id;
		}
		free(d);
	}
	return intern_str(ISC_STR_CFUNC, mangled);
}

/*
 * The id of a kernel's name (the conversion's most frequent name, and its
 * dearest: a demangling) once per kernel: by CUPTI's pointer, which the
 * records of one kernel share (cupti_activity.h: "shared across all
 * activity records representing the same kernel"), checked against the
 * text it had (a module unloaded and another loaded at its address is a
 * miss, never a wrong name).  Caller holds g.mu.
 */
static uint32_t intern_kernel(const char *mangled)
{
	if (!mangled)
		return intern_kernel_text(NULL);
	struct kname *k = &g.kernels[((uintptr_t)mangled >> 3) % KERNEL_CACHE];
	if (k->ptr == mangled && k->id && !strcmp(k->copy, mangled))
		return k->id;
	uint32_t id = intern_kernel_text(mangled);
	char *copy = id ? strdup(mangled) : NULL;
	if (copy) {
		free(k->copy);
		*k = (struct kname){ mangled, copy, id };
	}
	return id;
}

/* A name that a small key decides (a copy's kinds, a memset's memory),
 * cached in *slot.  Caller holds g.mu. */
static uint32_t intern_cached(uint32_t *slot, const char *name)
{
	if (!*slot)
		*slot = intern_str(ISC_STR_CFUNC, name);
	return *slot;
}

/* cudaLaunchKernel_v7000 -> cudaLaunchKernel: the version suffix of CUPTI's names goes. */
static uint32_t intern_api_name(CUpti_CallbackDomain domain, uint32_t cbid)
{
	const char *name = NULL;
	char buf[160];
	if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name) {
		snprintf(buf, sizeof(buf), "%s API %u", domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "runtime" : "driver",
			 cbid);
		return intern_str(ISC_STR_CFUNC, buf);
	}
	size_t n = strlen(name);
	const char *v = strrchr(name, '_');
	if (v && v[1] == 'v' && v[2] && strspn(v + 2, "0123456789") == strlen(v + 2))
		n = (size_t)(v - name);
	return intern(ISC_STR_CFUNC, name, n);
}

/* A call's name by cbid, looked up (cuptiGetCallbackName) once a cbid. Caller holds g.mu. */
static uint32_t intern_api(CUpti_CallbackDomain domain, uint32_t cbid)
{
	if (cbid >= API_CBIDS)
		return intern_api_name(domain, cbid);
	uint32_t *slot = &g.api_ids[domain == CUPTI_CB_DOMAIN_RUNTIME_API ? 0 : 1][cbid];
	if (!*slot)
		*slot = intern_api_name(domain, cbid);
	return *slot;
}

/* ---- staging: converted records, sorted by start before the push ------ */

static int stage(uint8_t type, uint64_t key, const struct enc *e)
{
	if (e->overflow)
		return -1;
	if (g.nstage == g.capstage) {
		size_t cap = g.capstage ? g.capstage * 2 : 1024;
		struct staged *s = realloc(g.stage, cap * sizeof(*s));
		if (!s)
			return -1;
		g.stage = s;
		g.capstage = cap;
	}
	if (g.narena + e->n > g.caparena) {
		size_t cap = g.caparena ? g.caparena * 2 : 65536;
		while (cap < g.narena + e->n)
			cap *= 2;
		uint8_t *a = realloc(g.arena, cap);
		if (!a)
			return -1;
		g.arena = a;
		g.caparena = cap;
	}
	memcpy(g.arena + g.narena, e->b, e->n);
	g.stage[g.nstage] = (struct staged){ key, (uint32_t)g.narena, e->n, (uint32_t)g.nstage, type };
	g.nstage++;
	g.narena += e->n;
	return 0;
}

static int staged_cmp(const void *a, const void *b)
{
	const struct staged *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Common prefix of the timed GPU records in a trace: start offset from
 * the record's time, and host thread (0 for device work). */
static void gpu_prefix(struct enc *e, uint64_t commit, uint64_t start, uint32_t tid)
{
	put(e, zigzag((int64_t)(start - commit)));
	put(e, tid);
}

static uint32_t device_of_context(uint32_t ctx)
{
	for (unsigned i = 0; i < g.nctx; i++)
		if (g.ctx_dev[i][0] == ctx)
			return g.ctx_dev[i][1];
	return ISC_GPU_NONE;
}

static uint8_t copy_kind(uint8_t cupti)
{
	switch (cupti) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
		return ISC_COPY_HTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
		return ISC_COPY_DTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
	case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
		return ISC_COPY_DTOD;
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
		return ISC_COPY_HTOH;
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
		return ISC_COPY_PTOP;
	default:
		return ISC_COPY_NONE;
	}
}

static uint8_t mem_kind(unsigned cupti)
{
	switch (cupti) {
	case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
		return ISC_MEM_PAGEABLE;
	case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
		return ISC_MEM_PINNED;
	case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
	case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
	case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
		return ISC_MEM_DEVICE;
	case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
	case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
		return ISC_MEM_MANAGED;
	default:
		return ISC_MEM_UNKNOWN;
	}
}

static const char *copy_name(uint8_t kind)
{
	static const char *n[] = { "Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP" };
	return kind < sizeof(n) / sizeof(n[0]) ? n[kind] : n[0];
}

static const char *mem_name(uint8_t kind)
{
	static const char *n[] = { "Unknown", "Pageable", "Pinned", "Device", "Managed" };
	return kind < sizeof(n) / sizeof(n[0]) ? n[kind] : n[0];
}

/* GPU_OP fields after the prefix, up to and including flags. */
static void op_fields(struct enc *e, uint32_t device, uint32_t stream, uint8_t kind, uint32_t name_id,
		      uint64_t dur, uint64_t corr, uint64_t bytes, uint8_t ck, uint8_t src, uint8_t dst,
		      uint32_t flags)
{
	uint64_t v[11] = { device, stream, kind, name_id, dur, corr, bytes, ck, src, dst, flags };
	for (int i = 0; i < 11; i++)
		put(e, v[i]);
}

static uint64_t span(uint64_t start, uint64_t end)
{
	return end > start ? end - start : 0;
}

static void meta(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static uint32_t py_site_of(uint32_t corr);

/* A META record (untimed), staged first in the sort. */
static void meta(const char *key, const char *fmt, ...)
{
	char val[1100];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(val, sizeof(val), fmt, ap);
	va_end(ap);
	struct enc e;
	enc_init(&e);
	size_t kl = strlen(key);
	put(&e, kl);
	put_raw(&e, key, kl);
	put_raw(&e, val, cut_utf8(val, 1024));
	stage(ISC_REC_META, 0, &e);
}

/* Open ranges by id, direct-mapped: a range still open after OPEN_MARKERS
 * later ones began gives its place up and is not written. */
static struct marker *marker_find(uint32_t id)
{
	struct marker *m = &g.markers[id % OPEN_MARKERS];
	return m->used && m->id == id ? m : NULL;
}

static void marker_emit(struct marker *m, uint64_t commit)
{
	struct enc e;
	enc_init(&e);
	gpu_prefix(&e, commit, m->start, m->tid);
	put(&e, m->name_id);
	put(&e, span(m->start, m->end));
	put(&e, m->domain_id);
	put(&e, m->color);
	put(&e, m->category);
	put(&e, m->instant ? 1 : 0);
	stage(ISC_REC_NVTX_RANGE, m->start, &e);
	m->used = false;
}

/* NVTX: a start opens an entry, its end writes the range; instants wait
 * for their MARKER_DATA until the end of the buffer. */
static void convert_marker(const CUpti_ActivityMarker2 *mk, uint64_t commit)
{
	struct marker *m;
	uint32_t tid = mk->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? mk->objectId.pt.threadId : 0;
	if (mk->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
		if ((m = marker_find(mk->id)) && !m->instant) {
			m->end = mk->timestamp;
			marker_emit(m, commit);
		}
		return;
	}
	if (!(mk->flags & (CUPTI_ACTIVITY_FLAG_MARKER_START | CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS)))
		return; /* sync acquire/release markers are not ranges */
	m = &g.markers[mk->id % OPEN_MARKERS];
	*m = (struct marker){ .id = mk->id, .tid = tid, .start = mk->timestamp, .end = mk->timestamp, .used = true,
			      .instant = (mk->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) != 0 };
	g.instants |= m->instant;
	m->name_id = intern_str(ISC_STR_SCOPE, mk->name ? mk->name : "<unnamed range>");
	m->domain_id = mk->domain && *mk->domain ? intern_str(ISC_STR_SCOPE, mk->domain) : 0;
}

static void convert_kernel(const CUpti_ActivityKernel10 *k, uint64_t commit)
{
	struct enc e;
	enc_init(&e);
	if (NO_TIME(k->start, k->end))
		return;
	gpu_prefix(&e, commit, k->start, 0);
	op_fields(&e, k->deviceId, k->streamId, ISC_GPU_KERNEL, intern_kernel(k->name), span(k->start, k->end),
		  k->correlationId, 0, ISC_COPY_NONE, 0, 0,
		  (k->graphId ? ISC_GPU_FLAG_GRAPH : 0) | ISC_GPU_FLAG_LAUNCH | ISC_GPU_FLAG_CONTEXT);
	uint64_t l[8] = { (uint32_t)k->gridX, (uint32_t)k->gridY, (uint32_t)k->gridZ, (uint32_t)k->blockX,
			  (uint32_t)k->blockY, (uint32_t)k->blockZ, k->registersPerThread,
			  (uint64_t)(uint32_t)k->staticSharedMemory + (uint32_t)k->dynamicSharedMemory };
	for (int i = 0; i < 8; i++)
		put(&e, l[i]);
	put(&e, k->contextId);
	stage(ISC_REC_GPU_OP, k->start, &e);
}

/* "Memcpy HtoD (Pageable -> Device)", once a combination.  Caller holds g.mu. */
static uint32_t copy_name_id(uint8_t ck, uint8_t src, uint8_t dst)
{
	char name[96];
	uint32_t *slot = ck < 6 && src < 5 && dst < 5 ? &g.copy_ids[ck][src][dst] : NULL;
	if (slot && *slot)
		return *slot;
	snprintf(name, sizeof(name), "%s (%s -> %s)", copy_name(ck), mem_name(src), mem_name(dst));
	return slot ? intern_cached(slot, name) : intern_str(ISC_STR_CFUNC, name);
}

static void convert_copy(uint64_t commit, uint64_t start, uint64_t end, uint32_t dev, uint32_t ctx, uint32_t stream,
			 uint32_t corr, uint64_t bytes, uint8_t ck, uint8_t src, uint8_t dst, bool async, bool graph)
{
	if (NO_TIME(start, end))
		return;
	uint32_t name_id = copy_name_id(ck, src, dst);
	struct enc e;
	enc_init(&e);
	gpu_prefix(&e, commit, start, 0);
	op_fields(&e, dev, stream, ISC_GPU_MEMCPY, name_id, span(start, end), corr, bytes, ck,
		  src, dst, (async ? ISC_GPU_FLAG_ASYNC : 0) | (graph ? ISC_GPU_FLAG_GRAPH : 0) | ISC_GPU_FLAG_CONTEXT);
	put(&e, ctx);
	stage(ISC_REC_GPU_OP, start, &e);
}

static void convert_api(const CUpti_ActivityAPI *a, uint64_t commit)
{
	bool rt = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
	struct enc e;
	enc_init(&e);
	gpu_prefix(&e, commit, a->start, a->threadId);
	put(&e, intern_api(rt ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid));
	put(&e, span(a->start, a->end));
	put(&e, a->correlationId);
	put(&e, rt ? 1 : 2);
	put(&e, a->cbid);
	put(&e, a->returnValue ? ISC_GPU_API_FLAG_ERROR : 0);
	uint32_t site = g.py_sites ? py_site_of(a->correlationId) : 0;
	if (site) { /* span_id 0 (the merge's to set), then the Python line of the call */
		put(&e, 0);
		put(&e, site);
	}
	stage(ISC_REC_GPU_API, a->start, &e);
}

static const char *overhead_name(CUpti_ActivityOverheadKind k)
{
	switch (k) {
	case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: return "overhead: driver compiler";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: return "overhead: CUPTI buffer flush";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: return "overhead: CUPTI instrumentation";
	case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: return "overhead: CUPTI resource";
	case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: return "overhead: module loading";
	case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: return "overhead: lazy function loading";
	case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: return "overhead: command buffer full";
	case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: return "overhead: activity buffer request";
	case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT: return "overhead: UVM activity init";
	default: return "overhead";
	}
}

/* Overhead on a thread is a call of kind 3 (other) on it; on a device,
 * an operation of kind OTHER. */
static void convert_overhead(const CUpti_ActivityOverhead3 *o, uint64_t commit)
{
	struct enc e;
	enc_init(&e);
	/* CUPTI's kinds are 0, 1 and n << 16 (n = 1..8): slot 0, 1, n + 1 */
	unsigned k = (unsigned)o->overheadKind, slot = k <= 1 ? k : (k & 0xffff) ? OVERHEAD_KINDS : (k >> 16) + 1;
	uint32_t name = slot < OVERHEAD_KINDS ? intern_cached(&g.overhead_ids[slot], overhead_name(o->overheadKind))
					      : intern_str(ISC_STR_CFUNC, overhead_name(o->overheadKind));
	if (o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || o->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS) {
		gpu_prefix(&e, commit, o->start, o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : 0);
		put(&e, name);
		put(&e, span(o->start, o->end));
		put(&e, o->correlationId);
		put(&e, 3);
		put(&e, (uint32_t)o->overheadKind);
		put(&e, 0);
		stage(ISC_REC_GPU_API, o->start, &e);
		return;
	}
	gpu_prefix(&e, commit, o->start, 0);
	op_fields(&e, o->objectId.dcs.deviceId, o->objectKind == CUPTI_ACTIVITY_OBJECT_STREAM ? o->objectId.dcs.streamId : ISC_GPU_NONE,
		  ISC_GPU_OTHER, name, span(o->start, o->end), o->correlationId, 0, 0, 0, 0, 0);
	stage(ISC_REC_GPU_OP, o->start, &e);
}

static void convert_device(const CUpti_ActivityDevice5 *d)
{
	struct enc e;
	enc_init(&e);
	put(&e, d->id);
	put(&e, d->numMultiprocessors);
	put(&e, d->globalMemorySize);
	put(&e, d->computeCapabilityMajor);
	put(&e, d->computeCapabilityMinor);
	put(&e, 0); /* link bandwidth: not in CUPTI; NVML's GPU_INFO has it */
	const char *name = d->name ? d->name : "";
	put_raw(&e, name, cut_utf8(name, 256));
	stage(ISC_REC_DEVICE, 0, &e);
	const uint8_t *u = (const uint8_t *)d->uuid.bytes;
	char key[64];
	snprintf(key, sizeof(key), "cuda.device.%u.uuid", d->id);
	meta(key, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3], u[4],
	     u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	snprintf(key, sizeof(key), "cuda.device.%u.memory_bandwidth_bytes_per_s", d->id);
	meta(key, "%llu", (unsigned long long)d->globalMemoryBandwidth * 1000u);
}

static void convert_name(const CUpti_ActivityName *n)
{
	char key[96];
	const CUpti_ActivityObjectKindId *o = &n->objectId;
	switch (n->objectKind) {
	case CUPTI_ACTIVITY_OBJECT_THREAD:
		snprintf(key, sizeof(key), "name.thread.%u", o->pt.threadId);
		break;
	case CUPTI_ACTIVITY_OBJECT_DEVICE:
		snprintf(key, sizeof(key), "name.device.%u", o->dcs.deviceId);
		break;
	case CUPTI_ACTIVITY_OBJECT_CONTEXT:
		snprintf(key, sizeof(key), "name.context.%u", o->dcs.contextId);
		break;
	case CUPTI_ACTIVITY_OBJECT_STREAM:
		snprintf(key, sizeof(key), "name.stream.%u.%u", o->dcs.deviceId, o->dcs.streamId);
		break;
	default:
		return;
	}
	meta(key, "%s", n->name ? n->name : "");
}

/* Converts one CUPTI record into staged trace records.  Caller holds g.mu. */
static void convert(const CUpti_Activity *r, uint64_t commit)
{
	struct enc e;
	enc_init(&e);
	switch (r->kind) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
	case CUPTI_ACTIVITY_KIND_KERNEL:
		convert_kernel((const CUpti_ActivityKernel10 *)r, commit);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY: {
		const CUpti_ActivityMemcpy6 *m = (const void *)r;
		convert_copy(commit, m->start, m->end, m->deviceId, m->contextId, m->streamId, m->correlationId, m->bytes,
			     copy_kind(m->copyKind), mem_kind(m->srcKind), mem_kind(m->dstKind),
			     m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC, m->graphId != 0);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMCPY2: {
		const CUpti_ActivityMemcpyPtoP4 *m = (const void *)r;
		convert_copy(commit, m->start, m->end, m->deviceId, m->contextId, m->streamId, m->correlationId, m->bytes,
			     ISC_COPY_PTOP, mem_kind(m->srcKind), mem_kind(m->dstKind),
			     m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC, m->graphId != 0);
		break;
	}
	case CUPTI_ACTIVITY_KIND_MEMSET: {
		const CUpti_ActivityMemset4 *m = (const void *)r;
		char name[64];
		uint8_t mk = mem_kind(m->memoryKind);
		if (NO_TIME(m->start, m->end))
			break;
		if (!g.memset_ids[mk % 5]) {
			snprintf(name, sizeof(name), "Memset (%s)", mem_name(mk));
			intern_cached(&g.memset_ids[mk % 5], name);
		}
		gpu_prefix(&e, commit, m->start, 0);
		op_fields(&e, m->deviceId, m->streamId, ISC_GPU_MEMSET, g.memset_ids[mk % 5],
			  span(m->start, m->end), m->correlationId, m->bytes, ISC_COPY_NONE, 0, mem_kind(m->memoryKind),
			  ((m->flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? ISC_GPU_FLAG_ASYNC : 0) |
				  (m->graphId ? ISC_GPU_FLAG_GRAPH : 0) | ISC_GPU_FLAG_CONTEXT);
		put(&e, m->contextId);
		stage(ISC_REC_GPU_OP, m->start, &e);
		break;
	}
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
		const CUpti_ActivitySynchronization2 *s = (const void *)r;
		static const char *names[] = { "Synchronize", "Event Sync", "Stream Wait Event", "Stream Sync",
					       "Context Sync" };
		unsigned t = s->type <= CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE ? s->type : 0;
		if (NO_TIME(s->start, s->end))
			break;
		gpu_prefix(&e, commit, s->start, 0);
		op_fields(&e, device_of_context(s->contextId),
			  s->streamId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? ISC_GPU_NONE : s->streamId, ISC_GPU_SYNC,
			  intern_cached(&g.sync_ids[t], names[t]), span(s->start, s->end), s->correlationId,
			  s->cudaEventId == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : s->cudaEventId, (uint8_t)t, 0, 0,
			  ISC_GPU_FLAG_CONTEXT);
		put(&e, s->contextId);
		stage(ISC_REC_GPU_OP, s->start, &e);
		break;
	}
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		convert_api((const CUpti_ActivityAPI *)r, commit);
		break;
	case CUPTI_ACTIVITY_KIND_MARKER:
		convert_marker((const CUpti_ActivityMarker2 *)r, commit);
		break;
	case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
		const CUpti_ActivityMarkerData2 *d = (const void *)r;
		struct marker *m = marker_find(d->id);
		if (m) {
			m->color = d->color;
			m->category = d->category;
		}
		break;
	}
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		convert_overhead((const CUpti_ActivityOverhead3 *)r, commit);
		break;
	case CUPTI_ACTIVITY_KIND_MEMORY2: {
		const CUpti_ActivityMemory4 *m = (const void *)r;
		gpu_prefix(&e, commit, m->timestamp, 0);
		uint64_t v[8] = { m->deviceId, m->streamId, (uint64_t)m->memoryOperationType, mem_kind(m->memoryKind),
				  m->bytes, m->address, m->correlationId, m->isAsync ? 1 : 0 };
		for (int i = 0; i < 8; i++)
			put(&e, v[i]);
		stage(ISC_REC_GPU_MEMORY, m->timestamp, &e);
		break;
	}
	case CUPTI_ACTIVITY_KIND_DEVICE:
		convert_device((const CUpti_ActivityDevice5 *)r);
		break;
	case CUPTI_ACTIVITY_KIND_CONTEXT: {
		const CUpti_ActivityContext3 *c = (const void *)r;
		if (g.nctx < MAX_CONTEXTS && device_of_context(c->contextId) == ISC_GPU_NONE) {
			g.ctx_dev[g.nctx][0] = c->contextId;
			g.ctx_dev[g.nctx++][1] = c->deviceId;
		}
		char key[64];
		snprintf(key, sizeof(key), "cuda.context.%u", c->contextId);
		meta(key, "device=%u null_stream=%u", c->deviceId, c->nullStreamId);
		break;
	}
	case CUPTI_ACTIVITY_KIND_NAME:
		convert_name((const CUpti_ActivityName *)r);
		break;
	default:
		break; /* kinds we did not enable */
	}
}

/* Dropped records of a CUPTI queue, as one GPU_DROPPED record.  Caller holds g.mu. */
static void note_dropped(CUcontext ctx, uint32_t stream)
{
	size_t dropped = 0;
	if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped) {
		struct enc e;
		enc_init(&e);
		put(&e, dropped);
		stage(ISC_REC_GPU_DROPPED, UINT64_MAX, &e);
	}
}

/* Sorts the staged records by start and pushes them, all with time commit. */
static void push_staged(uint64_t commit)
{
	/* Nearly sorted: a device queue's buffer is in start order, an API
	 * buffer in end order (a nested call before its caller); insertion
	 * moves while they are few, else the whole sort. */
	size_t moves = 0, budget = 8 * g.nstage + 64, k;
	for (k = 1; k < g.nstage && moves <= budget; k++) {
		struct staged x = g.stage[k];
		size_t j = k;
		for (; j > 0 && staged_cmp(&g.stage[j - 1], &x) > 0; j--)
			g.stage[j] = g.stage[j - 1];
		g.stage[j] = x;
		moves += k - j;
	}
	if (k < g.nstage)
		qsort(g.stage, g.nstage, sizeof(*g.stage), staged_cmp);
	for (size_t i = 0; i < g.nstage; i++)
		push(g.stage[i].type, commit, g.arena + g.stage[i].off, g.stage[i].len);
	g.nstage = 0;
	g.narena = 0;
}

/* The driver's version, once, outside cuInit (where calling back into the
 * driver is best avoided). */
static void note_driver_version(void)
{
	int (*get)(int *) = (int (*)(int *))dlsym(RTLD_DEFAULT, "cuDriverGetVersion");
	int v = 0;
	g.driver_version_written = true;
	if (get && get(&v) == 0)
		meta("cuda.driver_version", "%d", v);
}

/* ---- CUPTI callbacks ------------------------------------------------- */

/* A buffer for CUPTI, from the pool when it has one; called on a workload thread. */
static void CUPTIAPI buf_request(uint8_t **buffer, size_t *size, size_t *max_records)
{
	uint8_t *b = NULL;
	pthread_mutex_lock(&g.pmu);
	if (g.npool)
		b = g.pool[--g.npool];
	pthread_mutex_unlock(&g.pmu);
	*buffer = b ? b : aligned_alloc(8, BUF_SIZE);
	*size = *buffer ? BUF_SIZE : 0; /* none: CUPTI drops and counts */
	*max_records = 0;
}

/* A buffer CUPTI handed back: kept for the next request, or freed when the pool is full. */
static void buf_release(uint8_t *b)
{
	pthread_mutex_lock(&g.pmu);
	if (g.npool < POOL_MAX) {
		g.pool[g.npool++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&g.pmu);
	free(b);
}

static void CUPTIAPI buf_done(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	(void)size;
	if (atomic_load(&g.state) == RECORDING && g.pid == getpid()) {
		CUpti_Activity *r = NULL;
		pthread_mutex_lock(&g.mu);
		if (atomic_load(&g.state) != RECORDING) { /* failed meanwhile */
			pthread_mutex_unlock(&g.mu);
			free(buffer);
			return;
		}
		uint64_t cpu0 = thread_cpu_ns();
		uint64_t commit = now_ns();
		if (commit < g.last_commit)
			commit = g.last_commit;
		g.last_commit = commit;
		if (!g.driver_version_written)
			note_driver_version();
		while (valid && cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
			convert(r, commit);
			g.records++;
		}
		for (unsigned i = 0; g.instants && i < OPEN_MARKERS; i++)
			if (g.markers[i].used && g.markers[i].instant)
				marker_emit(&g.markers[i], commit);
		g.instants = false;
		note_dropped(ctx, stream);
		push_staged(commit);
		g.cpu_ns += thread_cpu_ns() - cpu0;
		pthread_mutex_unlock(&g.mu);
	}
	buf_release(buffer);
}

/* The (code, off) entry of the site cache, and its id when it holds that line (0 else): no lock, no write. */
static uint32_t site_cached(const struct site_ent *e, uint64_t code, int64_t off)
{
	uint32_t s1 = atomic_load_explicit(&e->seq, memory_order_acquire);
	uint64_t c = atomic_load_explicit(&e->code, memory_order_relaxed);
	int64_t o = atomic_load_explicit(&e->off, memory_order_relaxed);
	uint32_t id = atomic_load_explicit(&e->id, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if ((s1 & 1) || atomic_load_explicit(&e->seq, memory_order_relaxed) != s1)
		return 0; /* being written: the caller takes the lock */
	return c == code && o == off ? id : 0;
}

/*
 * The string id of the Python line the calling thread runs (a CODE string
 * whose line is the current line), 0 when none.  The frame is read
 * (pyframe.c: a pointer walk) at every call; the rest once per line: the
 * thread's last line, else the shared cache, read without a lock; a line
 * never seen is described and interned under g.smu, which the conversion
 * holds only while it interns a name it has not cached (rarely after the
 * first buffers).
 */
static uint32_t py_site_now(struct cb_thread *me)
{
	uint64_t code;
	int64_t off;
	if (!isc_cuda_py_frame(&code, &off))
		return 0;
	if (me && me->id && me->code == code && me->off == off)
		return me->id; /* the same line as this thread's last call (a loop) */
	struct site_ent *e = &g.cache[((code >> 4) ^ (uint64_t)off * 0x9e3779b1u) % SITE_CACHE];
	uint32_t id = site_cached(e, code, off);
	if (!id) {
		pthread_mutex_lock(&g.smu);
		if (!(id = site_cached(e, code, off))) {
			char name[NAME_MAX_BYTES + 1], file[NAME_MAX_BYTES + 1];
			uint32_t line;
			if (isc_cuda_py_describe(code, off, name, sizeof(name), file, sizeof(file), &line) &&
			    (id = intern_at(ISC_STR_CODE, name, strlen(name), file, line))) {
				uint32_t s0 = atomic_load_explicit(&e->seq, memory_order_relaxed);
				atomic_store_explicit(&e->seq, s0 + 1, memory_order_relaxed);
				atomic_thread_fence(memory_order_release);
				atomic_store_explicit(&e->code, code, memory_order_relaxed);
				atomic_store_explicit(&e->off, off, memory_order_relaxed);
				atomic_store_explicit(&e->id, id, memory_order_relaxed);
				atomic_store_explicit(&e->seq, s0 + 2, memory_order_release);
			}
		}
		pthread_mutex_unlock(&g.smu);
	}
	if (me && id) {
		me->code = code;
		me->off = off;
		me->id = id;
	}
	return id;
}

/* The calling thread's counters: claimed at its first callback; past CB_THREADS threads, one shared. */
static struct cb_thread *cb_thread(void)
{
	static __thread struct cb_thread *me;
	if (!me) {
		uint32_t i = atomic_fetch_add_explicit(&g.ncbt, 1, memory_order_relaxed);
		me = &g.cbt[i < CB_THREADS ? i : CB_THREADS];
	}
	return me;
}

/*
 * The subscription claims CUPTI for us (a second tool is told, and we are
 * told when one was first).  Only in the sampled Python mode are callbacks
 * enabled, on the runtime calls that launch, copy, set, synchronize or
 * allocate (py_site_cbids) and on the driver's launch family
 * (driver_launch_cbids, when their records are kept): at a call's entry,
 * its Python line, kept by correlation id for the call's activity record
 * (convert_api).  A driver launch inside a runtime call whose line is
 * kept already (the same correlation id) returns at once, uncounted.  No
 * lock, no atomic read-modify-write, no system call, no allocation on the
 * way of a line seen before (issue 29: the cost per launch); the counters
 * are the thread's own.  For the cost the agent reports, each thread's
 * first CB_TIMED are timed, then one in CB_TIMED.
 */
static void CUPTIAPI callback(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
	const CUpti_CallbackData *cb = data;
	(void)ud;
	(void)id;
	if ((d != CUPTI_CB_DOMAIN_RUNTIME_API && d != CUPTI_CB_DOMAIN_DRIVER_API) || !cb ||
	    cb->callbackSite != CUPTI_API_ENTER || atomic_load_explicit(&g.state, memory_order_relaxed) != RECORDING)
		return;
	if (d == CUPTI_CB_DOMAIN_DRIVER_API && py_site_of(cb->correlationId))
		return;
	struct cb_thread *me = cb_thread();
	if (!g.cb_body) { /* counted, nothing else */
		atomic_fetch_add_explicit(&me->n, 1, memory_order_relaxed);
		return;
	}
	bool own = me != &g.cbt[CB_THREADS];
	uint64_t n = own ? atomic_load_explicit(&me->n, memory_order_relaxed)
			 : atomic_fetch_add_explicit(&me->n, 1, memory_order_relaxed);
	if (own)
		atomic_store_explicit(&me->n, n + 1, memory_order_relaxed);
	/* the first CB_TIMED callbacks are timed each, then one in CB_TIMED stands for CB_TIMED */
	uint64_t w = n < CB_TIMED ? 1 : n % CB_TIMED == 0 ? CB_TIMED : 0, t0 = w ? now_ns() : 0;
	uint32_t site = py_site_now(own ? me : NULL);
	if (site)
		atomic_store_explicit(&g.sites[cb->correlationId % SITES], (uint64_t)cb->correlationId << 32 | site,
				      memory_order_release);
	if (w && own)
		atomic_store_explicit(&me->ns, atomic_load_explicit(&me->ns, memory_order_relaxed) + (now_ns() - t0) * w,
				      memory_order_relaxed);
	else if (w)
		atomic_fetch_add_explicit(&me->ns, (now_ns() - t0) * w, memory_order_relaxed);
}

/* The Python line kept for the call of correlation corr, 0 when none (or overwritten since). */
static uint32_t py_site_of(uint32_t corr)
{
	uint64_t v = atomic_load_explicit(&g.sites[corr % SITES], memory_order_acquire);
	return corr && v >> 32 == corr ? (uint32_t)v : 0;
}

/* ---- flusher thread, exit and fork ------------------------------------ */

static void *flusher_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&g.fmu);
	while (!g.stop) {
		struct timespec t;
		clock_gettime(CLOCK_MONOTONIC, &t);
		t.tv_nsec += (long)(g.flush_ms % 1000) * 1000000L;
		t.tv_sec += g.flush_ms / 1000 + t.tv_nsec / 1000000000L;
		t.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&g.fcv, &g.fmu, &t);
		if (g.stop)
			break;
		pthread_mutex_unlock(&g.fmu);
		cuptiActivityFlushAll(0); /* completed buffers, partial ones too */
		pthread_mutex_lock(&g.fmu);
	}
	pthread_mutex_unlock(&g.fmu);
	return NULL;
}

static void flusher_stop(void)
{
	if (!g.flusher_on)
		return;
	pthread_mutex_lock(&g.fmu);
	g.stop = true;
	pthread_cond_signal(&g.fcv);
	pthread_mutex_unlock(&g.fmu);
	pthread_join(g.flusher, NULL);
	g.flusher_on = false;
}

static int flusher_start(void)
{
	pthread_condattr_t ca;
	sigset_t all, old;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&g.fcv, &ca);
	pthread_condattr_destroy(&ca);
	sigfillset(&all); /* the workload's signals are not for this thread */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&g.flusher, NULL, flusher_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	pthread_setname_np(g.flusher, "iscope-cuda");
	g.flusher_on = true;
	return 0;
}


/* Our rings will get nothing more (informative for the recorder). */
static void mark_exited(void)
{
	if (!g.base)
		return;
	for (uint32_t i = 0; i < g.nslots; i++)
		atomic_store_explicit(&isc_shm_slot_at(g.base, i)->state, ISC_SLOT_EXITED, memory_order_release);
	atomic_store_explicit(&g.proc->state, ISC_PROC_EXITED, memory_order_release);
}

static void disable_kinds(void)
{
	while (g.nenabled > 0)
		cuptiActivityDisable(g.enabled[--g.nenabled]);
	if (g.subscribed) {
		cuptiUnsubscribe(g.sub);
		g.subscribed = false;
	}
}

/* atexit: deliver everything CUPTI holds, count what it dropped, finalize. */
static void at_exit(void)
{
	if (atomic_load(&g.state) != RECORDING || g.pid != getpid())
		return;
	flusher_stop();
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	pthread_mutex_lock(&g.mu);
	for (unsigned i = 0; i < OPEN_MARKERS; i++)
		g.markers[i].used = false; /* ranges never ended are not written */
	note_dropped(NULL, 0);
	/* the agent's own cost (iscope-analyze: gpu.agent) */
	meta("cuda.agent.cpu_ns", "%llu", (unsigned long long)g.cpu_ns);
	meta("cuda.agent.records", "%llu", (unsigned long long)g.records);
	uint64_t ncb = 0, cb_ns = 0;
	for (unsigned i = 0; i <= CB_THREADS; i++) {
		ncb += atomic_load_explicit(&g.cbt[i].n, memory_order_relaxed);
		cb_ns += atomic_load_explicit(&g.cbt[i].ns, memory_order_relaxed);
	}
	meta("cuda.agent.callbacks", "%llu", (unsigned long long)ncb);
	meta("cuda.agent.callback_ns", "%llu", (unsigned long long)cb_ns);
	push_staged(now_ns());
	atomic_store(&g.state, STOPPED);
	pthread_mutex_unlock(&g.mu);
	disable_kinds();
	cuptiFinalize();
	mark_exited();
	char name[40];
	snprintf(name, sizeof(name), "%d.cuda.shm", (int)g.pid);
	isc_shm_remove_if_orphaned(g.session, name); /* when the recorder is gone */
}

/* fork child: CUPTI and the driver do not survive fork; this copy of the
 * agent must not write into the parent's file. */
static void atfork_child(void)
{
	if (atomic_load(&g.state) != RECORDING)
		return;
	atomic_store(&g.state, STOPPED);
	pthread_mutex_init(&g.mu, NULL);
	g.flusher_on = false;
	if (g.base)
		munmap(g.base, g.file_size);
	g.base = NULL;
}

/* ---- start ----------------------------------------------------------- */

/*
 * Creates and maps <session>/<pid>.cuda.shm: nslots rings, all claimed now
 * by the calling thread, the first record GPU_AGENT; published (magic)
 * last.
 */
static int shm_create(char *err, size_t errlen)
{
	uint32_t ring_kb = isc_shm_env_u32("INFERSCOPE_RING_KB", DEFAULT_RING_KB, 4, 1u << 20);
	uint32_t ring = 1;
	while (ring * 2 <= ring_kb) /* a power of two, not above what the recorder accepts */
		ring <<= 1;
	g.ring_size = ring * 1024u;
	g.nslots = isc_shm_env_u32("INFERSCOPE_CUDA_SLOTS", DEFAULT_SLOTS, 1, 64);
	g.str_size = (uint64_t)isc_shm_env_u32("INFERSCOPE_CUDA_STR_KB", DEFAULT_STR_KB, 64, 1u << 20) * 1024u;
	uint64_t str_off = isc_shm_page_align(ISC_SHM_SLOTS_OFF + (uint64_t)g.nslots * ISC_SHM_SLOT_SIZE);
	uint64_t ring_off = isc_shm_page_align(str_off + g.str_size);
	g.file_size = ring_off + (uint64_t)g.nslots * g.ring_size;
	struct isc_shm_proc h = { .pid = (uint32_t)g.pid, .ppid = (uint32_t)getppid(), .file_size = g.file_size,
				  .nslots = g.nslots, .ring_size = g.ring_size, .str_off = str_off,
				  .str_size = g.str_size, .ring_off = ring_off, .start_ts = now_ns() };
	void *base = isc_shm_create(g.session, ".cuda.shm", &h, err, errlen);
	if (!base)
		return -1;
	struct isc_shm_proc *p = base;
	g.base = base;
	g.proc = p;
	g.str = (uint8_t *)base + str_off;
	g.rings = (uint8_t *)base + ring_off;
	for (uint32_t i = 0; i < g.nslots; i++) {
		struct isc_shm_slot *sl = isc_shm_slot_at(base, i);
		atomic_store_explicit(&sl->tid, (uint32_t)gettid(), memory_order_relaxed);
		memcpy(sl->name, "cuda-activity", 14);
		atomic_store_explicit(&sl->state, ISC_SLOT_ACTIVE, memory_order_release);
	}
	atomic_store_explicit(&p->nslots_used, g.nslots, memory_order_release);
	/* GPU_AGENT first: the merge learns the delay before any GPU record */
	struct enc e;
	enc_init(&e);
	put(&e, g.cupti_version);
	put(&e, CUPTI_API_VERSION);
	put(&e, g.lag_ms);
	put(&e, g.flush_ms);
	put_raw(&e, ISC_VERSION, strlen(ISC_VERSION));
	push(ISC_REC_GPU_AGENT, now_ns(), e.b, e.n);
	atomic_store_explicit(&p->state, ISC_PROC_RUNNING, memory_order_relaxed);
	__atomic_store_n(&p->magic, ISC_SHM_MAGIC, __ATOMIC_RELEASE);
	return 0;
}

/* Failure at start: one WARNING, one stderr line, CUPTI left as we found it. */
static int fail(enum isc_warning code, const char *what, CUptiResult rc)
{
	const char *s = NULL;
	char msg[512];
	if (rc != CUPTI_SUCCESS && cuptiGetResultString(rc, &s) != CUPTI_SUCCESS)
		s = NULL;
	switch (code) {
	case ISC_WARN_CUPTI_PRIVILEGES:
		snprintf(msg, sizeof(msg),
			 "%s: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES: GPU profiling is restricted to administrators "
			 "(NVreg_RestrictProfilingToAdminUsers=1); GPU activity not recorded", what);
		break;
	case ISC_WARN_CUPTI_SUBSCRIBER:
		snprintf(msg, sizeof(msg),
			 "%s: CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED: another CUPTI tool (nsys, torch.profiler, "
			 "...) is attached; GPU activity not recorded", what);
		break;
	default:
		if (rc != CUPTI_SUCCESS)
			snprintf(msg, sizeof(msg), "%s: %s (%d); GPU activity not recorded", what, s ? s : "CUPTI error",
				 (int)rc);
		else
			snprintf(msg, sizeof(msg), "%s; GPU activity not recorded", what);
		break;
	}
	pthread_mutex_lock(&g.mu);
	warn_locked(code, msg);
	atomic_store(&g.state, STOPPED);
	pthread_mutex_unlock(&g.mu);
	if (code != ISC_WARN_CUPTI_SUBSCRIBER) /* another tool owns CUPTI: leave it be */
		disable_kinds();
	mark_exited();
	return 1;
}

static const char *kind_name(CUpti_ActivityKind k)
{
	switch (k) {
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return "CONCURRENT_KERNEL";
	case CUPTI_ACTIVITY_KIND_MEMCPY: return "MEMCPY";
	case CUPTI_ACTIVITY_KIND_MEMSET: return "MEMSET";
	case CUPTI_ACTIVITY_KIND_RUNTIME: return "RUNTIME";
	case CUPTI_ACTIVITY_KIND_DRIVER: return "DRIVER";
	case CUPTI_ACTIVITY_KIND_DEVICE: return "DEVICE";
	case CUPTI_ACTIVITY_KIND_CONTEXT: return "CONTEXT";
	case CUPTI_ACTIVITY_KIND_MEMCPY2: return "MEMCPY2";
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return "SYNCHRONIZATION";
	case CUPTI_ACTIVITY_KIND_NAME: return "NAME";
	case CUPTI_ACTIVITY_KIND_MARKER: return "MARKER";
	case CUPTI_ACTIVITY_KIND_MARKER_DATA: return "MARKER_DATA";
	case CUPTI_ACTIVITY_KIND_OVERHEAD: return "OVERHEAD";
	case CUPTI_ACTIVITY_KIND_MEMORY2: return "MEMORY2";
	default: return "?";
	}
}

/* DRIVER is enabled apart (driver_launches_on): all of it when asked for (g.driver_api), else the launch family */
static const CUpti_ActivityKind required_kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER,
};
static const CUpti_ActivityKind optional_kinds[] = {
	CUPTI_ACTIVITY_KIND_DEVICE, CUPTI_ACTIVITY_KIND_CONTEXT, CUPTI_ACTIVITY_KIND_MEMCPY2,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_NAME, CUPTI_ACTIVITY_KIND_MARKER,
	CUPTI_ACTIVITY_KIND_MARKER_DATA, CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_MEMORY2,
};

/* Sample mode: the runtime calls whose Python line is kept (the launch callbacks). */
static const CUpti_CallbackId py_site_cbids[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
	CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
	CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020,
};

/* The driver calls that launch GPU work: recorded by default, for the
 * kernels of libraries that call the driver alone (cuBLAS, cuDNN, Triton);
 * in the sampled Python mode their callbacks keep the Python line too. */
static const CUpti_CallbackId driver_launch_cbids[] = {
	CUPTI_DRIVER_TRACE_CBID_cuLaunch, CUPTI_DRIVER_TRACE_CBID_cuLaunchGrid,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchGridAsync, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
	CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
	CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

static bool is_driver_launch(CUpti_CallbackId cbid)
{
	for (size_t i = 0; i < sizeof(driver_launch_cbids) / sizeof(driver_launch_cbids[0]); i++)
		if (driver_launch_cbids[i] == cbid)
			return true;
	return false;
}

/* Calls that are frequent, cheap and say nothing about GPU work. */
static const CUpti_CallbackId quiet_runtime[] = {
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceGetAttribute_v5000,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamIsCapturing_v10000, CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v10010,
	CUPTI_RUNTIME_TRACE_CBID_cudaStreamGetCaptureInfo_v12030, CUPTI_RUNTIME_TRACE_CBID_cudaFuncGetAttributes_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaPointerGetAttributes_v4000, CUPTI_RUNTIME_TRACE_CBID_cudaDriverGetVersion_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaRuntimeGetVersion_v3020,
	CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxActiveBlocksPerMultiprocessor_v6000,
	CUPTI_RUNTIME_TRACE_CBID_cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags_v7000,
};
static const CUpti_CallbackId quiet_driver[] = {
	CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent, CUPTI_DRIVER_TRACE_CBID_cuCtxSetCurrent,
	CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice, CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
	CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress, CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2,
	CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute,
	CUPTI_DRIVER_TRACE_CBID_cuDeviceGet, CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount,
	CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute, CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttributes,
	CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing, CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo,
	CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2, CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3,
	CUPTI_DRIVER_TRACE_CBID_cuGetExportTable, CUPTI_DRIVER_TRACE_CBID_cuCtxPushCurrent_v2,
	CUPTI_DRIVER_TRACE_CBID_cuCtxPopCurrent_v2,
};

/*
 * DRIVER activity: every driver call but the quiet ones with
 * g.driver_api; else the launch family alone, every other driver call
 * switched off one by one (after the kind: enabling the kind would undo
 * it).  Returns the CUPTI error of the kind with g.driver_api; else 0,
 * having left DRIVER off (and said so in *missing) when CUPTI refused the
 * kind or a call's switch.
 */
static CUptiResult driver_launches_on(char *missing, size_t cap, size_t *ml)
{
	CUptiResult rc = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER);
	if (rc == CUPTI_SUCCESS)
		g.enabled[g.nenabled++] = CUPTI_ACTIVITY_KIND_DRIVER;
	if (g.driver_api)
		return rc;
	for (CUpti_CallbackId id = 1; rc == CUPTI_SUCCESS && id < CUPTI_DRIVER_TRACE_CBID_SIZE; id++)
		if (!is_driver_launch(id))
			rc = cuptiActivityEnableDriverApi(id, 0);
	if (rc == CUPTI_SUCCESS) {
		g.driver_launches = true;
		return CUPTI_SUCCESS;
	}
	if (g.nenabled && g.enabled[g.nenabled - 1] == CUPTI_ACTIVITY_KIND_DRIVER) {
		cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
		g.nenabled--;
	}
	if (*ml + 40 < cap)
		*ml += (size_t)snprintf(missing + *ml, cap - *ml, "%sDRIVER (launch calls)", *ml ? ", " : "");
	return CUPTI_SUCCESS;
}

/* Whether the session directory is ours alone (as the Python agent checks). */
static int session_ok(const char *s, char *err, size_t errlen)
{
	struct stat st;
	if (!s || !*s) {
		snprintf(err, errlen, "INFERSCOPE_SESSION is not set (not started by iscope-record)");
		return 0;
	}
	if (strlen(s) >= sizeof(g.session)) {
		snprintf(err, errlen, "INFERSCOPE_SESSION is too long");
		return 0;
	}
	if (lstat(s, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(err, errlen, "%s: not a private directory of ours", s);
		return 0;
	}
	return 1;
}

/* Everything after the file exists; returns InitializeInjection's value. */
static int start_cupti(void)
{
	CUptiResult rc;
	unsigned major = CUPTI_API_VERSION / 10000;
	if (g.cupti_version / 10000 != major || g.cupti_version < CUPTI_API_VERSION) {
		char what[160];
		snprintf(what, sizeof(what), "CUPTI version mismatch: the loaded libcupti is %u, this agent was built for %u "
			 "(needs %u.x, at least that)", g.cupti_version, (unsigned)CUPTI_API_VERSION, major);
		return fail(ISC_WARN_CUPTI_VERSION, what, CUPTI_SUCCESS);
	}
	if ((rc = cuptiSubscribe(&g.sub, callback, NULL)) != CUPTI_SUCCESS)
		return fail(rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? ISC_WARN_CUPTI_SUBSCRIBER
		       : rc == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? ISC_WARN_CUPTI_PRIVILEGES : ISC_WARN_CUPTI_ERROR,
			    "cuptiSubscribe", rc);
	g.subscribed = true;
	if ((rc = cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)) != CUPTI_SUCCESS)
		return fail(ISC_WARN_CUPTI_ERROR, "cuptiSetThreadIdType(SYSTEM)", rc);
	/* before any kind is enabled, or early records keep CUPTI's clock */
	if ((rc = cuptiActivityRegisterTimestampCallback(timestamp_cb)) != CUPTI_SUCCESS)
		return fail(ISC_WARN_CUPTI_ERROR, "cuptiActivityRegisterTimestampCallback", rc);
	if ((rc = cuptiActivityRegisterCallbacks(buf_request, buf_done)) != CUPTI_SUCCESS)
		return fail(ISC_WARN_CUPTI_ERROR, "cuptiActivityRegisterCallbacks", rc);
	atomic_store(&g.state, RECORDING); /* buf_done keeps what comes from now on */
	char missing[256] = "";
	size_t ml = 0;
	for (size_t i = 0; i < sizeof(required_kinds) / sizeof(required_kinds[0]); i++) {
		char what[64];
		snprintf(what, sizeof(what), "cuptiActivityEnable(%s)", kind_name(required_kinds[i]));
		if (required_kinds[i] == CUPTI_ACTIVITY_KIND_DRIVER)
			rc = driver_launches_on(missing, sizeof(missing), &ml);
		else if ((rc = cuptiActivityEnable(required_kinds[i])) == CUPTI_SUCCESS)
			g.enabled[g.nenabled++] = required_kinds[i];
		if (rc != CUPTI_SUCCESS)
			return fail(rc == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? ISC_WARN_CUPTI_PRIVILEGES
			       : rc == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? ISC_WARN_CUPTI_SUBSCRIBER
										  : ISC_WARN_CUPTI_ERROR,
				    what, rc);
	}
	pthread_mutex_lock(&g.mu);
	/* pushed with the first buffer */
	meta("cuda.agent.driver_api", "%s", g.driver_api ? "on" : g.driver_launches ? "launches" : "off");
	pthread_mutex_unlock(&g.mu);
	for (size_t i = 0; i < sizeof(optional_kinds) / sizeof(optional_kinds[0]); i++) {
		if ((rc = cuptiActivityEnable(optional_kinds[i])) == CUPTI_SUCCESS)
			g.enabled[g.nenabled++] = optional_kinds[i];
		else if (ml + 24 < sizeof(missing))
			ml += (size_t)snprintf(missing + ml, sizeof(missing) - ml, "%s%s", ml ? ", " : "",
					       kind_name(optional_kinds[i]));
	}
	for (size_t i = 0; i < sizeof(quiet_runtime) / sizeof(quiet_runtime[0]); i++)
		cuptiActivityEnableRuntimeApi(quiet_runtime[i], 0);
	for (size_t i = 0; i < sizeof(quiet_driver) / sizeof(quiet_driver[0]); i++)
		cuptiActivityEnableDriverApi(quiet_driver[i], 0);
	/* sample mode: no call spans say which Python line made a call; the launch callbacks do */
	const char *pm = getenv("INFERSCOPE_PYTHON_MODE");
	char why[128] = "CUPTI enabled none of the callbacks";
	/* for measuring on a GPU (tests/device/session.sh): "off", no callback; "empty", they return at once */
	const char *cbs = getenv("INFERSCOPE_CUDA_CALLBACKS");
	bool cb_off = cbs && !strcmp(cbs, "off");
	g.cb_body = !(cbs && !strcmp(cbs, "empty"));
	if (cb_off)
		snprintf(why, sizeof(why), "off: no callbacks (INFERSCOPE_CUDA_CALLBACKS=off)");
	if (pm && !strcmp(pm, "sample")) {
		if (!cb_off && isc_cuda_py_init(why, sizeof(why)) == 0) {
			for (size_t i = 0; i < sizeof(py_site_cbids) / sizeof(py_site_cbids[0]); i++)
				if (cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API, py_site_cbids[i]) == CUPTI_SUCCESS)
					g.py_sites = true;
			for (size_t i = 0; (g.driver_api || g.driver_launches) &&
					   i < sizeof(driver_launch_cbids) / sizeof(driver_launch_cbids[0]); i++)
				if (cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, driver_launch_cbids[i]) ==
				    CUPTI_SUCCESS)
					g.py_sites = true;
		}
		pthread_mutex_lock(&g.mu);
		meta("cuda.agent.python_lines", "%s",
		     !g.py_sites ? why : g.cb_body ? "on" : "off: callbacks without their body (INFERSCOPE_CUDA_CALLBACKS=empty)");
		pthread_mutex_unlock(&g.mu);
	}
	if (flusher_start() < 0)
		return fail(ISC_WARN_OTHER, "cannot start the flush thread", CUPTI_SUCCESS);
	if (ml) { /* recording, without some records */
		char msg[400];
		snprintf(msg, sizeof(msg), "CUPTI activity kinds unavailable: %s; the rest is recorded", missing);
		pthread_mutex_lock(&g.mu);
		warn_locked(ISC_WARN_CUPTI_KINDS, msg);
		pthread_mutex_unlock(&g.mu);
	}
	atexit(at_exit);
	pthread_atfork(NULL, NULL, atfork_child);
	return 1;
}

/*
 * Called by the CUDA driver inside cuInit (CUDA_INJECTION64_PATH).
 * Returns 1 in every case: a failure leaves the workload running without
 * GPU records, never stops it.
 */
EXPORT int InitializeInjection(void)
{
	static _Atomic pid_t done;
	char err[PATH_MAX + 128];
	const char *env = getenv("INFERSCOPE_ENABLE");
	pid_t me = getpid();
	if (atomic_exchange(&done, me) == me || atomic_load(&g.state) != OFF)
		return 1; /* once per process; never in a fork child of a recording parent */
	if (env && !strcmp(env, "0"))
		return 1;
	g.pid = me;
	if (!session_ok(getenv("INFERSCOPE_SESSION"), err, sizeof(err))) {
		fprintf(stderr, "inferscope-cuda: %s; GPU activity not recorded\n", err);
		return 1;
	}
	strcpy(g.session, getenv("INFERSCOPE_SESSION"));
	g.lag_ms = isc_shm_env_u32("INFERSCOPE_CUDA_LAG_MS", DEFAULT_LAG_MS, 10, 600000);
	g.flush_ms = isc_shm_env_u32("INFERSCOPE_CUDA_FLUSH_MS", DEFAULT_FLUSH_MS, 1, 60000);
	g.driver_api = isc_shm_env_u32("INFERSCOPE_CUDA_DRIVER_API", 0, 0, 1) == 1;
	if (cuptiGetVersion(&g.cupti_version) != CUPTI_SUCCESS)
		g.cupti_version = 0;
	g.next_id = ISC_STRING_ID_CUDA_BASE;
	if (shm_create(err, sizeof(err)) < 0) {
		fprintf(stderr, "inferscope-cuda: %s; GPU activity not recorded\n", err);
		return 1;
	}
	void *cxx = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
	if (cxx)
		g.demangle = (char *(*)(const char *, char *, size_t *, int *))dlsym(cxx, "__cxa_demangle");
	return start_cupti();
}

/*
 * NVTX_INJECTION64_PATH names this library too: NVTX ranges reach CUPTI
 * (MARKER records) through CUPTI's own NVTX injection entry point, which
 * we hand the call to.
 */
EXPORT int InitializeInjectionNvtx2(const void *get_export_table)
{
	Dl_info cupti;
	void *h;
	int (*fn)(const void *) = NULL;
	/* the libcupti we are linked with, wherever the loader found it */
	if (dladdr((void *)cuptiGetVersion, &cupti) && cupti.dli_fname &&
	    (h = dlopen(cupti.dli_fname, RTLD_LAZY | RTLD_NOLOAD)))
		fn = (int (*)(const void *))dlsym(h, "InitializeInjectionNvtx2");
	return fn ? fn(get_export_table) : 0;
}
