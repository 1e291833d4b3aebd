/*
 * alloc_shim.c - libiscope-alloc.so, InferScope's allocation sampler.
 *
 * iscope-record puts this library first in the workload's LD_PRELOAD.  It
 * defines the malloc family and mmap/munmap, calls the next definition
 * (libc's, or an allocator preloaded after it), and samples by bytes:
 * each thread counts down the bytes it allocates from a draw of an
 * exponential distribution of mean INFERSCOPE_ALLOC_INTERVAL (a Poisson
 * process over the bytes allocated, as tcmalloc's heap profiler); the
 * allocation that crosses zero is sampled, the countdown drawn again.
 *
 *   malloc(n) --> left -= n --> left > 0: real malloc              (fast path)
 *                            \-> real malloc, then sample: stack, site,
 *                                remember p, ALLOC record (under g.mu)
 *   free(p) --> filter_bits[hash(p)] == 0 --> real free            (fast path)
 *                            \-> maybe sampled: look p up, FREE record (under g.mu)
 *
 * The fast paths take no lock, make no system call and no atomic
 * read-modify-write: a thread-local decrement (initial-exec TLS: no
 * __tls_get_addr) before a tail call of the allocator below, and one load
 * of a bit of a counting filter's summary (65536 counters, one per bucket
 * of sampled live pointers, a bucket being a pointer's 16-byte granule in
 * its 1 MiB with the higher bits folded in; one bit each, 8 KiB, says
 * which are above 0).  The Python agent adds CPython's
 * three allocator domains (PyMem_SetAllocator, through the interface of
 * isc_alloc.h) and a stack function that walks the calling thread's Python
 * frames.  While an allocator is inside another (a PyObject_Malloc that
 * calls malloc), and while the shim itself runs, the thread's countdown is
 * parked (NOT_COUNTING), so nothing is counted twice and the shim never
 * samples itself; a release the shim cannot record then (a signal handler
 * freeing while its thread holds the lock) is skipped, never waited for.
 *
 * Records go to <session>/<pid>.alloc.shm (isc_alloc.h), created at the
 * process's first sample; a fork child creates its own.  Nothing here may
 * crash, block or change the workload: a failure stops the sampling of
 * that process with one line on stderr.
 */
/* we define mmap and mmap64 both, under their own names (meson's
 * _FILE_OFFSET_BITS=64 would rename mmap to mmap64) */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
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

#include "isc_alloc.h"
#include "isc_format.h"
#include "isc_shm.h"

#define EXPORT __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

#define NOT_COUNTING (INT64_MAX / 2) /* a parked countdown: never reaches 0 */
#define BOOT_SIZE (64u << 10)        /* allocations made while dlsym resolves the real functions */
#define FILTER_BITS 16
#define PTR_EMPTY 0u
#define PTR_TOMB 1u
#define REC_MAX 1024
#define NAME_MAX_BYTES 1024

/* ---- the next definitions ---------------------------------------------- */

static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	_Atomic int state; /* 0 unresolved, 1 resolving, 2 resolved */
} real;

/* dlsym itself may allocate: those allocations come from here, and are never freed */
static _Alignas(64) uint8_t boot[BOOT_SIZE];
static _Atomic size_t boot_used;

static void *boot_alloc(size_t n)
{
	size_t need = (n + 16 + 15) & ~(size_t)15;
	size_t at = atomic_fetch_add(&boot_used, need);
	if (n > BOOT_SIZE || at + need > BOOT_SIZE)
		return NULL;
	memcpy(boot + at, &n, sizeof(n));
	return boot + at + 16;
}

static inline bool is_boot(const void *p)
{
	return (const uint8_t *)p >= boot && (const uint8_t *)p < boot + BOOT_SIZE;
}

/* 1 when the real functions are known; 0 while they are being resolved
 * (by this thread, recursively, or by another). */
static int resolve(void)
{
	int s = atomic_load_explicit(&real.state, memory_order_acquire);
	if (LIKELY(s == 2))
		return 1;
	int expect = 0;
	if (!atomic_compare_exchange_strong(&real.state, &expect, 1))
		return atomic_load_explicit(&real.state, memory_order_acquire) == 2;
#define R(f) real.f = (__typeof__(real.f))dlsym(RTLD_NEXT, #f)
	R(malloc);
	R(free);
	R(calloc);
	R(realloc);
	R(posix_memalign);
	R(aligned_alloc);
	R(memalign);
	R(valloc);
	R(pvalloc);
	R(mmap);
	R(munmap);
#undef R
	atomic_store_explicit(&real.state, 2, memory_order_release);
	return 1;
}

/* ---- state -------------------------------------------------------------- */

struct shim_tls {
	int64_t left;  /* bytes to the next sample point; NOT_COUNTING while parked */
	uint64_t rng;  /* xorshift64* state; 0: the thread has not started sampling */
	int busy;      /* this thread is inside the shim's sampled path */
};
static __thread struct shim_tls tls __attribute__((tls_model("initial-exec")));

struct ptr_val { /* a sampled live pointer (private memory; its key in ptr_keys) */
	uint64_t size, weight;
	uint32_t site;
	uint32_t domain;
};

struct str_ent { /* an interned code object */
	uint64_t k1, k2;
	uint32_t id;
};

static struct {
	_Atomic int ready;   /* 0 before the constructor, 1 after */
	int sampling;        /* this process samples */
	int root;            /* this process is the workload's command (INFERSCOPE_ALLOC_ROOT) */
	uint64_t interval;
	uint32_t info_flags; /* ISC_ALLOC_I_* */
	char session[PATH_MAX];
	char why[256];       /* why a warning record is written at attach (malloc overridden) */
	pthread_mutex_t mu;  /* everything below, and the rings */
	/* the shared file */
	void *base;
	int attach_failed;
	pid_t pid;
	uint64_t file_size;
	struct isc_shm_proc *proc;
	struct isc_alloc_hdr *hdr;
	uint8_t *str, *rings;
	struct isc_alloc_site *sites;
	uint32_t nslots, ring_size, sites_cap, cur;
	uint32_t file_gen; /* attachments of this address space (a fork child's file is another) */
	uint64_t str_size;
	uint32_t next_id;
	/* private tables: the live sampled pointers (keys below) */
	struct ptr_val *ptr_vals;
	uint32_t ptr_cap, ptr_used, ptr_tombs;
	struct str_ent *strs;
	uint32_t str_cap, str_count;
	/* the Python agent */
	isc_alloc_stack_fn *stack_fn;
	int pymem;
} g = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* counters of sampled live pointers by hash: 0 means "certainly not sampled" */
static _Atomic uint8_t filter[1u << FILTER_BITS];
/*
 * One bit per counter, set while it is above 0: what the release fast path
 * reads.  8 KiB, where the counters' 64 KiB missed the L1 cache on nearly
 * every release of a loop of small objects (perf, 2026-11-28: 78 % of
 * pm_obj_free's time on the instruction after the counter's load); with
 * the counters indexed by address (filter_hash), releases of nearby
 * objects read the same line.  Written with the counters, under g.mu.
 */
static _Atomic uint8_t filter_bits[1u << (FILTER_BITS - 3)];

/*
 * The keys of the live sampled pointers: open addressing, linear probing,
 * PTR_EMPTY / PTR_TOMB / the address; ptr_cap (INFERSCOPE_ALLOC_PTRS) of
 * them, mapped once and never unmapped nor moved while the process lives,
 * so a release the filter lets through is looked up without the lock:
 * writers (under g.mu) publish a key after its value, and the rare
 * cleanup of tombstones, which moves keys, makes ptr_gen odd while it
 * runs; a reader that sees ptr_gen change takes the lock.
 */
static _Atomic(uintptr_t) *_Atomic ptr_keys;
static _Atomic uint32_t ptr_gen;

/*
 * A pointer's filter counter: its 16-byte granule within its 1 MiB of
 * address space, the bits above folded in.  Nearby pointers take nearby
 * bits (one line of filter_bits covers 8 KiB), so a loop that releases
 * the objects of one pymalloc pool reads one or two lines, not a line a
 * release: a multiplicative hash missed the L1 cache on about a third of
 * pm_obj_free's samples (perf, 2026-11-28), and evicted the workload's
 * own lines.  Page-aligned pointers (mmap) still spread: the fold fills
 * their low bits.
 */
static inline uint32_t filter_hash(uintptr_t p)
{
	return (uint32_t)((p >> 4) ^ (p >> (4 + FILTER_BITS))) & ((1u << FILTER_BITS) - 1);
}

/* A pointer's home slot in the keys (any power-of-two capacity up to 2^32). */
static inline uint32_t ptr_hash(uintptr_t p)
{
	return (uint32_t)(((uint64_t)p >> 4) * 0x9E3779B97F4A7C15ull >> 32);
}

static inline bool maybe_sampled(const void *p)
{
	uint32_t h = filter_hash((uintptr_t)p);
	return (atomic_load_explicit(&filter_bits[h >> 3], memory_order_relaxed) >> (h & 7)) & 1;
}

/* Sets bit h of filter_bits to on (under g.mu: the only writer). */
static void filter_bit(uint32_t h, bool on)
{
	uint8_t b = atomic_load_explicit(&filter_bits[h >> 3], memory_order_relaxed);
	b = on ? (uint8_t)(b | 1u << (h & 7)) : (uint8_t)(b & ~(1u << (h & 7)));
	atomic_store_explicit(&filter_bits[h >> 3], b, memory_order_relaxed);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *map_anon(size_t len)
{
	void *p = real.mmap ? real.mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
			    : MAP_FAILED;
	return p == MAP_FAILED ? NULL : p;
}

static void unmap(void *p, size_t len)
{
	if (p && real.munmap)
		real.munmap(p, len);
}

/* ---- sampling draws ------------------------------------------------------ */

static uint64_t rng_next(void)
{
	uint64_t x = tls.rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	tls.rng = x;
	return x * 0x2545F4914F6CDD1Dull;
}

/* Bytes to the next sample point: exponential of mean g.interval, >= 1. */
static int64_t draw(void)
{
	double u = (double)(rng_next() >> 11) * 0x1.0p-53;
	double d = -log(u > 0 ? u : 0x1.0p-53) * (double)g.interval;
	return d >= (double)(INT64_MAX / 8) ? INT64_MAX / 8 : (int64_t)d + 1;
}

/* ---- the ring ------------------------------------------------------------ */

/*
 * Pushes one timed record into the current ring or the next with room
 * (isc_shm.h's push, with the delta from that ring's last record); when
 * none has room it is dropped and counted.  Caller holds g.mu.
 */
static void push(uint8_t type, uint64_t ts, const uint8_t *body, unsigned len)
{
	uint8_t rec[REC_MAX + 24];
	for (uint32_t k = 0; k < g.nslots; k++) {
		uint32_t i = (g.cur + k) % g.nslots;
		struct isc_shm_slot *s = isc_shm_slot_at(g.base, i);
		uint64_t t = ts < s->last_ts ? s->last_ts : ts;
		unsigned n = 0;
		uint8_t delta[10];
		unsigned dl = isc_put_varint(delta, t - s->last_ts);
		rec[n++] = type;
		n += isc_put_varint(rec + n, (uint64_t)dl + len);
		memcpy(rec + n, delta, dl);
		n += dl;
		memcpy(rec + n, body, len);
		n += len;
		uint64_t used = atomic_load_explicit(&s->head, memory_order_relaxed) -
				atomic_load_explicit(&s->tail, memory_order_acquire);
		if (used > g.ring_size || g.ring_size - used < n)
			continue;
		isc_ring_push(s, g.rings + (uint64_t)i * g.ring_size, g.ring_size, rec, n);
		s->last_ts = t;
		g.cur = i;
		return;
	}
	atomic_fetch_add_explicit(&isc_shm_slot_at(g.base, g.cur)->dropped, 1, memory_order_relaxed);
}

struct enc {
	uint8_t b[REC_MAX];
	unsigned n;
};

static void put(struct enc *e, uint64_t v)
{
	if (e->n + 10 <= sizeof(e->b))
		e->n += isc_put_varint(e->b + e->n, v);
}

/* ALLOC_INFO (formats/trace.md §6.6).  Caller holds g.mu, attached. */
static void push_info(unsigned phase)
{
	struct enc e = { .n = 0 };
	put(&e, phase);
	put(&e, g.interval);
	put(&e, g.info_flags);
	for (int i = 0; i < 6; i++) /* samples frees sites lost_sites lost_ptrs bad_sites: the recorder's */
		put(&e, 0);
	push(ISC_REC_ALLOC_INFO, now_ns(), e.b, e.n);
}

/* ---- the shared file ----------------------------------------------------- */

static uint32_t pow2_floor(uint32_t v)
{
	uint32_t p = 1;
	while (p * 2 <= v && p < (1u << 31))
		p *= 2;
	return p;
}

/* One line on stderr; sampling of this process stops. */
static void give_up(const char *what)
{
	char line[PATH_MAX + 160];
	int n = snprintf(line, sizeof(line), "inferscope-alloc: %s: allocations of this process are not sampled\n",
			 what);
	if (n > 0 && write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1) < 0) {
		/* nothing to do */
	}
	g.attach_failed = 1;
	g.sampling = 0;
}

/* errno as text without the locale: strerror takes the locale lock, which
 * the thread may hold already (setlocale allocates). */
static const char *err_text(int e)
{
	const char *t = strerrordesc_np(e);
	return t ? t : "unknown error";
}

/* The process's own /proc/self/cmdline into the header (as isc_shm_create). */
static void put_cmdline(struct isc_shm_proc *p)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	while (fd >= 0 && n < sizeof(p->cmdline)) {
		ssize_t r = read(fd, p->cmdline + n, sizeof(p->cmdline) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (fd >= 0)
		close(fd);
	p->cmdline_len = (uint32_t)n;
}

/*
 * The file of an earlier image of this process (it exec'ed us: same pid),
 * when it has exactly the layout h describes: mapped, its sites' live
 * bytes released (that image's memory went with it).  NULL otherwise.
 */
static void *take_over(int fd, const struct isc_shm_proc *h, uint64_t sites_off)
{
	struct stat st;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (uint64_t)st.st_size != h->file_size)
		return NULL;
	void *base = real.mmap(NULL, h->file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return NULL;
	struct isc_shm_proc *p = base;
	struct isc_alloc_hdr *a = (struct isc_alloc_hdr *)((uint8_t *)base + ISC_ALLOC_HDR_OFF);
	if (p->magic != ISC_SHM_MAGIC || p->version != ISC_SHM_VERSION || p->pid != h->pid || p->nslots != h->nslots ||
	    p->ring_size != h->ring_size || p->str_off != h->str_off || p->str_size != h->str_size ||
	    p->ring_off != h->ring_off || a->magic != ISC_ALLOC_MAGIC || a->sites_off != sites_off ||
	    a->sites_cap != g.sites_cap || a->site_size != sizeof(struct isc_alloc_site) ||
	    a->next_id < ISC_STRING_ID_ALLOC_BASE) {
		real.munmap(base, h->file_size);
		return NULL;
	}
	struct isc_alloc_site *sites = (struct isc_alloc_site *)((uint8_t *)base + sites_off);
	for (uint32_t i = 0; i < g.sites_cap; i++)
		if (sites[i].key) {
			sites[i].free_count = sites[i].alloc_count;
			sites[i].free_bytes = sites[i].alloc_bytes;
			sites[i].live_var = 0;
		}
	put_cmdline(p);
	return base;
}

/*
 * Creates <session>/<pid>.alloc.shm at the process's first sample (a fork
 * child: at its own first sample), or goes on with the file of the image
 * that exec'ed us, and publishes it with ALLOC_INFO as the first record
 * of this image.  Caller holds g.mu.  0, or -1 when sampling must stop.
 */
static int attach_locked(void)
{
	char path[PATH_MAX + 32], err[PATH_MAX + 160];
	if (g.base)
		return 0;
	if (g.attach_failed)
		return -1;
	g.pid = getpid();
	g.nslots = isc_shm_env_u32("INFERSCOPE_ALLOC_RINGS", ISC_ALLOC_DEFAULT_RINGS, 1, 64);
	g.ring_size = pow2_floor(isc_shm_env_u32("INFERSCOPE_ALLOC_RING_KB", ISC_ALLOC_DEFAULT_RING_KB, 4, 1u << 20)) *
		      1024u;
	g.str_size = (uint64_t)isc_shm_env_u32("INFERSCOPE_ALLOC_STR_KB", ISC_ALLOC_DEFAULT_STR_KB, 64, 1u << 20) * 1024u;
	g.sites_cap = pow2_floor(isc_shm_env_u32("INFERSCOPE_ALLOC_SITES", ISC_ALLOC_DEFAULT_SITES, 16,
						 ISC_ALLOC_MAX_SITES));
	uint64_t str_off = isc_shm_page_align(ISC_SHM_SLOTS_OFF + (uint64_t)g.nslots * ISC_SHM_SLOT_SIZE);
	uint64_t ring_off = isc_shm_page_align(str_off + g.str_size);
	uint64_t sites_off = isc_shm_page_align(ring_off + (uint64_t)g.nslots * g.ring_size);
	g.file_size = sites_off + (uint64_t)g.sites_cap * sizeof(struct isc_alloc_site);
	struct isc_shm_proc h = { .pid = (uint32_t)g.pid, .file_size = g.file_size, .nslots = g.nslots,
				  .ring_size = g.ring_size, .str_off = str_off, .str_size = g.str_size,
				  .ring_off = ring_off };
	snprintf(path, sizeof(path), "%s/%d%s", g.session, (int)g.pid, ISC_ALLOC_SUFFIX);
	void *base = NULL;
	bool again = false;
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST && (fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)) >= 0) {
		again = (base = take_over(fd, &h, sites_off)) != NULL;
		if (!again) {
			close(fd);
			snprintf(err, sizeof(err), "%s exists and is not an earlier image's of this process", path);
			give_up(err);
			return -1;
		}
	} else if (fd < 0) {
		snprintf(err, sizeof(err), "%s: %s", path, err_text(errno));
		give_up(err);
		return -1;
	} else if (ftruncate(fd, (off_t)g.file_size) ||
		   (base = real.mmap(NULL, g.file_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		snprintf(err, sizeof(err), "%s: %s", path, err_text(errno));
		unlink(path);
		close(fd);
		give_up(err);
		return -1;
	}
	close(fd);
	g.file_gen++;
	g.base = base;
	g.proc = base;
	g.hdr = (struct isc_alloc_hdr *)((uint8_t *)base + ISC_ALLOC_HDR_OFF);
	g.str = (uint8_t *)base + str_off;
	g.rings = (uint8_t *)base + ring_off;
	g.sites = (struct isc_alloc_site *)((uint8_t *)base + sites_off);
	g.cur = 0;
	if (again) {
		g.next_id = g.hdr->next_id;
		g.hdr->images++;
		atomic_store_explicit(&g.hdr->flags, g.info_flags, memory_order_relaxed);
		push_info(ISC_ALLOC_PHASE_START);
		goto warn;
	}
	struct isc_shm_proc *p = base;
	p->version = ISC_SHM_VERSION;
	p->pid = (uint32_t)g.pid;
	p->ppid = (uint32_t)getppid();
	p->file_size = g.file_size;
	p->nslots = g.nslots;
	p->ring_size = g.ring_size;
	p->str_off = str_off;
	p->str_size = g.str_size;
	p->ring_off = ring_off;
	p->start_ts = now_ns();
	put_cmdline(p);
	g.next_id = ISC_STRING_ID_ALLOC_BASE;
	g.hdr->version = ISC_ALLOC_VERSION;
	g.hdr->interval = g.interval;
	g.hdr->sites_off = sites_off;
	g.hdr->sites_cap = g.sites_cap;
	g.hdr->site_size = (uint32_t)sizeof(struct isc_alloc_site);
	g.hdr->depth_max = ISC_ALLOC_MAX_DEPTH;
	g.hdr->next_id = g.next_id;
	g.hdr->images = 1;
	atomic_store_explicit(&g.hdr->flags, g.info_flags, memory_order_relaxed);
	g.hdr->magic = ISC_ALLOC_MAGIC;
	/* every ring claimed now, by this thread (its tid is informative) */
	pid_t tid = gettid();
	for (uint32_t i = 0; i < g.nslots; i++) {
		struct isc_shm_slot *s = isc_shm_slot_at(base, i);
		memcpy(s->name, "alloc", 6);
		atomic_store_explicit(&s->tid, (uint32_t)tid, memory_order_relaxed);
		atomic_store_explicit(&s->state, ISC_SLOT_ACTIVE, memory_order_relaxed);
	}
	atomic_store_explicit(&g.proc->nslots_used, g.nslots, memory_order_relaxed);
	push_info(ISC_ALLOC_PHASE_START);
warn:
	if (g.why[0]) { /* WARNING: pid code message */
		struct enc e = { .n = 0 };
		put(&e, (uint64_t)g.pid);
		put(&e, ISC_WARN_NO_ALLOC);
		size_t n = strnlen(g.why, sizeof(g.why));
		memcpy(e.b + e.n, g.why, n);
		e.n += (unsigned)n;
		push(ISC_REC_WARNING, now_ns(), e.b, e.n);
	}
	if (!again) {
		atomic_store_explicit(&g.proc->state, ISC_PROC_RUNNING, memory_order_relaxed);
		__atomic_store_n(&g.proc->magic, ISC_SHM_MAGIC, __ATOMIC_RELEASE);
	}
	return 0;
}

/* ---- strings --------------------------------------------------------------- */

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = (a ^ 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
	h ^= (b + 0x632BE59BD9B4E019ull) * 0x94D049BB133111EBull;
	return h ^ (h >> 31);
}

static size_t cut_utf8(const char *s, size_t n)
{
	if (n > NAME_MAX_BYTES) {
		n = NAME_MAX_BYTES;
		while (n > 0 && ((uint8_t)s[n] & 0xC0) == 0x80)
			n--;
	}
	return n;
}

/* Grows the private intern table to cap entries; 0 or -1. */
static int strs_grow(uint32_t cap)
{
	struct str_ent *t = map_anon((size_t)cap * sizeof(*t));
	if (!t)
		return -1;
	for (uint32_t i = 0; i < g.str_cap; i++)
		if (g.strs[i].id) {
			uint32_t j = (uint32_t)mix(g.strs[i].k1, g.strs[i].k2) & (cap - 1);
			while (t[j].id)
				j = (j + 1) & (cap - 1);
			t[j] = g.strs[i];
		}
	unmap(g.strs, (size_t)g.str_cap * sizeof(*g.strs));
	g.strs = t;
	g.str_cap = cap;
	return 0;
}

/* isc_alloc_api.intern: called by the stack function, g.mu held. */
static uint32_t api_intern(uint64_t k1, uint64_t k2, uint32_t firstline, const char *name, size_t nlen,
			   const char *file, size_t flen)
{
	if (!g.base)
		return 0;
	if ((g.str_count + 1) * 2 > g.str_cap && strs_grow(g.str_cap ? g.str_cap * 2 : 4096))
		return 0;
	uint32_t i = (uint32_t)mix(k1, k2) & (g.str_cap - 1);
	for (; g.strs[i].id; i = (i + 1) & (g.str_cap - 1))
		if (g.strs[i].k1 == k1 && g.strs[i].k2 == k2)
			return g.strs[i].id;
	if (g.next_id >= ISC_STRING_ID_LIMIT)
		return 0;
	nlen = cut_utf8(name, nlen);
	flen = cut_utf8(file, flen);
	/* STRING_DEF: id, kind CODE, first line, counted name, counted file */
	uint8_t hdr[40];
	unsigned hl = isc_put_varint(hdr, g.next_id);
	hdr[hl++] = ISC_STR_CODE;
	hl += isc_put_varint(hdr + hl, firstline);
	hl += isc_put_varint(hdr + hl, nlen);
	uint8_t fl[10];
	unsigned fll = isc_put_varint(fl, flen);
	uint64_t body = (uint64_t)hl + nlen + fll + flen;
	uint8_t rh[12];
	unsigned rl = 0;
	rh[rl++] = ISC_REC_STRING_DEF;
	rl += isc_put_varint(rh + rl, body);
	uint64_t at = atomic_load_explicit(&g.proc->str_committed, memory_order_relaxed);
	if (at + rl + body > g.str_size) {
		atomic_fetch_add_explicit(&g.proc->str_dropped, 1, memory_order_relaxed);
		return 0;
	}
	uint8_t *d = g.str + at;
	memcpy(d, rh, rl);
	memcpy(d + rl, hdr, hl);
	memcpy(d + rl + hl, name, nlen);
	memcpy(d + rl + hl + nlen, fl, fll);
	memcpy(d + rl + hl + nlen + fll, file, flen);
	atomic_store_explicit(&g.proc->str_committed, at + rl + body, memory_order_release);
	g.strs[i] = (struct str_ent){ k1, k2, g.next_id };
	g.str_count++;
	g.hdr->next_id = g.next_id + 1;
	return g.next_id++;
}

/* ---- sites (shared) and live pointers (private) ----------------------------- */

static uint64_t stack_key(const uint32_t *frames, uint32_t depth)
{
	uint64_t h = 1469598103934665603ull ^ depth;
	for (uint32_t i = 0; i < 2 * depth; i++)
		h = (h ^ frames[i]) * 1099511628211ull;
	return h ? h : 1;
}

/* The site of a stack: its entry, made on first use; entry 0 when the
 * table is full.  Caller holds g.mu. */
static uint32_t site_get(const uint32_t *frames, uint32_t depth, uint32_t tid)
{
	uint64_t key = stack_key(frames, depth);
	uint32_t span = g.sites_cap - 1, i = (uint32_t)(key % span);
	for (uint32_t probes = 0; probes < span; probes++, i = (i + 1) % span) {
		struct isc_alloc_site *s = &g.sites[1 + i];
		if (!s->key) {
			uint32_t used = atomic_load_explicit(&g.hdr->sites_used, memory_order_relaxed);
			if ((used + 1) * 4 > span * 3)
				break;
			s->depth = depth;
			s->tid = tid;
			memcpy(s->frames, frames, (size_t)depth * 2 * sizeof(uint32_t));
			s->key = key;
			atomic_store_explicit(&g.hdr->sites_used, used + 1, memory_order_relaxed);
			return 1 + i;
		}
		if (s->key == key && s->depth == depth && !memcmp(s->frames, frames, (size_t)depth * 2 * sizeof(uint32_t)))
			return 1 + i;
	}
	atomic_fetch_add_explicit(&g.hdr->lost_sites, 1, memory_order_relaxed);
	if (!g.sites[0].key) {
		g.sites[0].key = 1; /* the overflow site: no stack */
		g.sites[0].tid = tid;
	}
	return 0;
}

static void site_add(uint32_t site, uint64_t w, uint64_t size, uint64_t now)
{
	struct isc_alloc_site *s = &g.sites[site];
	s->alloc_count++;
	s->alloc_bytes += w;
	s->live_var += (double)w * ((double)w - (double)size);
	s->growth_ts = now;
	uint64_t live = s->alloc_bytes - s->free_bytes;
	if (live > s->peak_live) {
		s->peak_live = live;
		s->peak_ts = now;
	}
}

static void site_sub(uint32_t site, uint64_t w, uint64_t size)
{
	struct isc_alloc_site *s = &g.sites[site];
	s->free_count++;
	s->free_bytes += w;
	s->live_var -= (double)w * ((double)w - (double)size);
	if (s->live_var < 0 || s->free_count == s->alloc_count)
		s->live_var = 0;
}

/* The slot of key p under the lock, or -1. */
static long ptr_find(uintptr_t p)
{
	_Atomic(uintptr_t) *keys = atomic_load_explicit(&ptr_keys, memory_order_relaxed);
	if (!keys)
		return -1;
	uint32_t mask = g.ptr_cap - 1, i = ptr_hash(p) & mask;
	for (uint32_t probes = 0; probes < g.ptr_cap; probes++, i = (i + 1) & mask) {
		uintptr_t k = atomic_load_explicit(&keys[i], memory_order_relaxed);
		if (k == p)
			return i;
		if (k == PTR_EMPTY)
			break;
	}
	return -1;
}

/*
 * Whether p may be a live sampled pointer, without the lock: false only
 * when a probe of the keys, undisturbed by a cleanup, did not find it.
 */
static bool ptr_maybe_live(uintptr_t p)
{
	uint32_t gen = atomic_load_explicit(&ptr_gen, memory_order_acquire);
	_Atomic(uintptr_t) *keys = atomic_load_explicit(&ptr_keys, memory_order_acquire);
	bool found = false;
	if (gen & 1)
		return true;
	if (!keys)
		return false;
	uint32_t cap = atomic_load_explicit((_Atomic uint32_t *)&g.ptr_cap, memory_order_relaxed);
	uint32_t i = ptr_hash(p) & (cap - 1);
	for (uint32_t probes = 0; probes < cap; probes++, i = (i + 1) & (cap - 1)) {
		uintptr_t k = atomic_load_explicit(&keys[i], memory_order_acquire);
		if (k == p) {
			found = true;
			break;
		}
		if (k == PTR_EMPTY)
			break;
	}
	atomic_thread_fence(memory_order_acquire);
	return found || atomic_load_explicit(&ptr_gen, memory_order_relaxed) != gen;
}

/*
 * Moves the live keys back to their probe positions, dropping tombstones,
 * in place (readers that overlap it see ptr_gen odd or changed).  Under
 * the lock; 0 or -1 (no room for the copy).
 */
static int ptrs_cleanup(void)
{
	_Atomic(uintptr_t) *keys = atomic_load_explicit(&ptr_keys, memory_order_relaxed);
	size_t n = (size_t)g.ptr_cap;
	uintptr_t *k = map_anon(n * sizeof(*k));
	struct ptr_val *v = map_anon(n * sizeof(*v));
	if (!k || !v) {
		unmap(k, n * sizeof(*k));
		unmap(v, n * sizeof(*v));
		return -1;
	}
	for (size_t i = 0; i < n; i++)
		k[i] = atomic_load_explicit(&keys[i], memory_order_relaxed);
	memcpy(v, g.ptr_vals, n * sizeof(*v));
	atomic_fetch_add_explicit(&ptr_gen, 1, memory_order_acq_rel); /* odd: moving */
	atomic_thread_fence(memory_order_seq_cst);
	for (size_t i = 0; i < n; i++)
		atomic_store_explicit(&keys[i], PTR_EMPTY, memory_order_relaxed);
	for (size_t i = 0; i < n; i++)
		if (k[i] > PTR_TOMB) {
			uint32_t j = ptr_hash(k[i]) & (g.ptr_cap - 1);
			while (atomic_load_explicit(&keys[j], memory_order_relaxed) != PTR_EMPTY)
				j = (j + 1) & (g.ptr_cap - 1);
			g.ptr_vals[j] = v[i];
			atomic_store_explicit(&keys[j], k[i], memory_order_relaxed);
		}
	atomic_fetch_add_explicit(&ptr_gen, 1, memory_order_release); /* even again */
	g.ptr_tombs = 0;
	unmap(k, n * sizeof(*k));
	unmap(v, n * sizeof(*v));
	return 0;
}

static void ptr_remove(long i)
{
	_Atomic(uintptr_t) *keys = atomic_load_explicit(&ptr_keys, memory_order_relaxed);
	uint32_t h = filter_hash(atomic_load_explicit(&keys[i], memory_order_relaxed));
	atomic_store_explicit(&keys[i], PTR_TOMB, memory_order_release);
	if (atomic_load_explicit(&filter[h], memory_order_relaxed) != UINT8_MAX && /* a saturated counter stays */
	    atomic_fetch_sub_explicit(&filter[h], 1, memory_order_relaxed) == 1)
		filter_bit(h, false);
	g.ptr_used--;
	g.ptr_tombs++;
}

/* Remembers a sampled pointer; false when the table cannot hold it. */
static bool ptr_insert(uintptr_t p, uint64_t size, uint64_t w, uint32_t site, uint32_t domain)
{
	_Atomic(uintptr_t) *keys = atomic_load_explicit(&ptr_keys, memory_order_relaxed);
	if (!keys) { /* once: the keys are never unmapped (lock-free readers) */
		keys = map_anon((size_t)g.ptr_cap * sizeof(*keys));
		g.ptr_vals = map_anon((size_t)g.ptr_cap * sizeof(*g.ptr_vals));
		if (!keys || !g.ptr_vals) {
			unmap((void *)keys, (size_t)g.ptr_cap * sizeof(*keys));
			unmap(g.ptr_vals, (size_t)g.ptr_cap * sizeof(*g.ptr_vals));
			g.ptr_vals = NULL;
			return false;
		}
		atomic_store_explicit(&ptr_keys, keys, memory_order_release);
	}
	if ((g.ptr_used + 1) * 4 > g.ptr_cap * 3)
		return false; /* full: INFERSCOPE_ALLOC_PTRS */
	if ((g.ptr_used + g.ptr_tombs + 1) * 8 > g.ptr_cap * 7 && ptrs_cleanup())
		return false;
	uint32_t mask = g.ptr_cap - 1, i = ptr_hash(p) & mask;
	uintptr_t k;
	while ((k = atomic_load_explicit(&keys[i], memory_order_relaxed)) > PTR_TOMB)
		i = (i + 1) & mask;
	if (k == PTR_TOMB)
		g.ptr_tombs--;
	g.ptr_vals[i] = (struct ptr_val){ size, w, site, domain };
	uint32_t h = filter_hash(p);
	if (atomic_load_explicit(&filter[h], memory_order_relaxed) != UINT8_MAX)
		atomic_fetch_add_explicit(&filter[h], 1, memory_order_relaxed);
	filter_bit(h, true);
	atomic_store_explicit(&keys[i], p, memory_order_release);
	g.ptr_used++;
	return true;
}

/* ---- the sampled paths ------------------------------------------------------- */

/*
 * A sampled allocation of n bytes at p: its stack, its site, its pointer,
 * its ALLOC record.  The caller parked the countdown.
 */
static void record_alloc(void *p, size_t n, uint32_t domain)
{
	uint32_t frames[2 * ISC_ALLOC_MAX_DEPTH];
	pthread_mutex_lock(&g.mu);
	tls.busy = 1;
	/* a process joins the recording as the workload's command, or when its
	 * Python agent hooks CPython; others (a shell's helpers, a compiler)
	 * are not the session's processes, as for the agents and the sampler */
	if (!g.sampling || (!g.root && !g.pymem && !g.stack_fn) || attach_locked() < 0)
		goto out;
	uint32_t tid = (uint32_t)gettid();
	int truncated = 0;
	unsigned depth = g.stack_fn ? g.stack_fn(frames, ISC_ALLOC_MAX_DEPTH, &truncated, g.file_gen) : 0;
	if (depth > ISC_ALLOC_MAX_DEPTH)
		depth = ISC_ALLOC_MAX_DEPTH;
	uint64_t now = now_ns();
	uint64_t w = (uint64_t)llround(isc_alloc_weight(n, g.interval));
	uint32_t site = site_get(frames, depth, tid);
	site_add(site, w, n, now);
	uint32_t flags = truncated ? ISC_ALLOC_F_TRUNCATED : 0;
	long old = ptr_find((uintptr_t)p);
	if (old >= 0) { /* its release was not seen (a signal handler's): it is gone now */
		site_sub(g.ptr_vals[old].site, g.ptr_vals[old].weight, g.ptr_vals[old].size);
		ptr_remove(old);
	}
	if (!ptr_insert((uintptr_t)p, n, w, site, domain)) {
		flags |= ISC_ALLOC_F_UNTRACKED;
		atomic_fetch_add_explicit(&g.hdr->lost_ptrs, 1, memory_order_relaxed);
	}
	atomic_fetch_add_explicit(&g.hdr->samples, 1, memory_order_relaxed);
	struct enc e = { .n = 0 };
	put(&e, tid);
	put(&e, (uint64_t)(uintptr_t)p);
	put(&e, n);
	put(&e, w);
	put(&e, domain);
	put(&e, flags);
	put(&e, site);
	put(&e, depth);
	for (unsigned i = 0; i < 2 * depth; i++)
		put(&e, frames[i]);
	put(&e, 0); /* native frames: none yet */
	push(ISC_REC_ALLOC, now, e.b, e.n);
out:
	tls.busy = 0;
	pthread_mutex_unlock(&g.mu);
}

/* The countdown crossed 0 in an allocation of n bytes at p. */
static __attribute__((noinline)) void on_sample(void *p, size_t n, uint32_t domain)
{
	if (!atomic_load_explicit(&g.ready, memory_order_acquire)) {
		tls.left = 65536; /* before the constructor: look again later */
		return;
	}
	if (!g.sampling) {
		tls.left = NOT_COUNTING;
		return;
	}
	if (!tls.rng) { /* the thread's first allocation: start its countdown with it */
		tls.rng = mix((uint64_t)(uintptr_t)&tls, now_ns()) | 1;
		tls.left = draw() - (int64_t)n;
		if (tls.left > 0)
			return;
	}
	do
		tls.left += draw();
	while (tls.left <= 0);
	int64_t left = tls.left;
	tls.left = NOT_COUNTING;
	record_alloc(p, n, domain);
	tls.left = left;
}

/* The release of p, which the filter says may have been sampled. */
static __attribute__((noinline)) void on_free(void *p, uint32_t domain)
{
	(void)domain;
	if (tls.busy)
		return; /* a signal handler inside the shim: not recorded */
	if (!ptr_maybe_live((uintptr_t)p))
		return; /* the filter's false positive: no lock taken */
	int64_t left = tls.left;
	tls.left = NOT_COUNTING;
	pthread_mutex_lock(&g.mu);
	tls.busy = 1;
	long i = ptr_find((uintptr_t)p);
	if (i >= 0 && g.base) {
		struct enc r = { .n = 0 };
		const struct ptr_val *e = &g.ptr_vals[i];
		uint64_t now = now_ns();
		put(&r, (uint64_t)gettid());
		put(&r, (uint64_t)(uintptr_t)p);
		put(&r, e->size);
		put(&r, e->weight);
		put(&r, e->domain);
		put(&r, e->site);
		site_sub(e->site, e->weight, e->size);
		ptr_remove(i);
		atomic_fetch_add_explicit(&g.hdr->frees, 1, memory_order_relaxed);
		push(ISC_REC_FREE, now, r.b, r.n);
	}
	tls.busy = 0;
	pthread_mutex_unlock(&g.mu);
	tls.left = left;
}

static inline void count(void *p, size_t n, uint32_t domain)
{
	if (UNLIKELY((tls.left -= (int64_t)n) <= 0))
		on_sample(p, n, domain);
}

/*
 * The fast paths count first (a request the allocator then fails was
 * counted all the same: a few bytes early on the countdown, no bias worth
 * a branch), so that the allocator below is a tail call; the request that
 * crosses 0 goes to the slow path, which allocates and samples.
 */
static __attribute__((noinline)) void *slow_sample(void *p, size_t n, uint32_t domain)
{
	if (LIKELY(p != NULL))
		on_sample(p, n, domain);
	else
		tls.left += (int64_t)n; /* nothing was allocated: the countdown as it was */
	return p;
}

/* ---- the malloc family ------------------------------------------------------- */

EXPORT void *malloc(size_t n)
{
	if (UNLIKELY(!real.malloc) && !resolve())
		return boot_alloc(n);
	if (LIKELY((tls.left -= (int64_t)n) > 0))
		return real.malloc(n);
	return slow_sample(real.malloc(n), n, ISC_ALLOC_MALLOC);
}

EXPORT void free(void *p)
{
	if (!p || UNLIKELY(is_boot(p)))
		return;
	if (UNLIKELY(maybe_sampled(p)))
		on_free(p, ISC_ALLOC_MALLOC);
	if (UNLIKELY(!real.free) && !resolve())
		return; /* cannot happen for a pointer that is not ours */
	real.free(p);
}

EXPORT void *calloc(size_t k, size_t n)
{
	if (UNLIKELY(!real.calloc) && !resolve()) {
		if (n && k > SIZE_MAX / n)
			return NULL;
		return boot_alloc(k * n); /* static memory is zero */
	}
	void *p = real.calloc(k, n);
	if (LIKELY(p != NULL))
		count(p, k * n, ISC_ALLOC_MALLOC);
	return p;
}

EXPORT void *realloc(void *old, size_t n)
{
	if (UNLIKELY(!real.realloc) && !resolve())
		return boot_alloc(n);
	if (old && UNLIKELY(is_boot(old))) {
		void *p = real.malloc(n);
		size_t had;
		memcpy(&had, (uint8_t *)old - 16, sizeof(had));
		if (p) {
			memcpy(p, old, had < n ? had : n);
			count(p, n, ISC_ALLOC_MALLOC);
		}
		return p;
	}
	/* the old block is released first: once realloc returns, its address
	 * may be another thread's sample */
	if (old && UNLIKELY(maybe_sampled(old)))
		on_free(old, ISC_ALLOC_MALLOC);
	void *p = real.realloc(old, n);
	if (p && n)
		count(p, n, ISC_ALLOC_MALLOC);
	return p;
}

EXPORT void *reallocarray(void *old, size_t k, size_t n)
{
	if (n && k > SIZE_MAX / n) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(old, k * n);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	if (UNLIKELY(!real.posix_memalign) && !resolve())
		return ENOMEM;
	int rc = real.posix_memalign(out, align, n);
	if (rc == 0 && *out)
		count(*out, n, ISC_ALLOC_MALLOC);
	return rc;
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (UNLIKELY(!real.aligned_alloc) && !resolve())
		return NULL;
	void *p = real.aligned_alloc(align, n);
	if (p)
		count(p, n, ISC_ALLOC_MALLOC);
	return p;
}

EXPORT void *memalign(size_t align, size_t n)
{
	if (UNLIKELY(!real.memalign) && !resolve())
		return NULL;
	void *p = real.memalign(align, n);
	if (p)
		count(p, n, ISC_ALLOC_MALLOC);
	return p;
}

EXPORT void *valloc(size_t n)
{
	if (UNLIKELY(!real.valloc) && !resolve())
		return NULL;
	void *p = real.valloc(n);
	if (p)
		count(p, n, ISC_ALLOC_MALLOC);
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	if (UNLIKELY(!real.pvalloc) && !resolve())
		return NULL;
	void *p = real.pvalloc(n);
	if (p)
		count(p, n, ISC_ALLOC_MALLOC);
	return p;
}

/* ---- anonymous mappings -------------------------------------------------------- */

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (UNLIKELY(!real.mmap) && !resolve()) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	void *p = real.mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && (flags & MAP_ANONYMOUS))
		count(p, len, ISC_ALLOC_MMAP);
	return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	return mmap(addr, len, prot, flags, fd, off);
}

/* A sampled mapping is released when its first byte is unmapped (the rest
 * of a partly unmapped mapping counts as released too). */
EXPORT int munmap(void *addr, size_t len)
{
	if (UNLIKELY(!real.munmap) && !resolve()) {
		errno = EINVAL;
		return -1;
	}
	if (addr && UNLIKELY(maybe_sampled(addr)))
		on_free(addr, ISC_ALLOC_MMAP);
	return real.munmap(addr, len);
}

/* ---- CPython's allocator domains (through isc_alloc_api.pymem_install) --------- */

/*
 * Two ways to wrap them.  Over CPython's own small-object allocator (the
 * default: PYTHONMALLOC unset or pymalloc, and CPython says pymalloc), the
 * fast one: the mem and object domains count requests of up to 512 bytes
 * (SMALL_REQUEST_THRESHOLD since 3.8), which pymalloc serves without
 * calling anything of ours; it passes larger ones to the raw domain, which
 * is malloc, counted there.  A sampled small request is served by malloc
 * (pm_sample), so its release reaches our free() through pymalloc's own
 * and the domains' free is not wrapped.  (A side effect: pymalloc's count
 * of blocks, sys.getallocatedblocks(), is lower by one for each sampled
 * small block, live or released: it never counted it, and counts down at
 * its release as for a block it passed to malloc itself.)  The raw domain is not wrapped, and
 * pymalloc's arenas are allocated with the count parked (the arena
 * allocator's wrapper), so nothing counts twice, at the cost of one call
 * and one subtraction an allocation.  Over any other allocator
 * (PYTHONMALLOC=malloc, debug hooks, mimalloc), the generic one: every
 * domain wrapped, the count parked while the allocator below runs.
 */

/* PyMemAllocatorEx and PyObjectArenaAllocator, the same since CPython 3.5 */
struct pymem_alloc {
	void *ctx;
	void *(*malloc)(void *ctx, size_t size);
	void *(*calloc)(void *ctx, size_t nelem, size_t elsize);
	void *(*realloc)(void *ctx, void *ptr, size_t new_size);
	void (*free)(void *ctx, void *ptr);
};
struct pyarena_alloc {
	void *ctx;
	void *(*alloc)(void *ctx, size_t size);
	void (*free)(void *ctx, void *ptr, size_t size);
};
static struct pymem_alloc pm_prev[3]; /* PYMEM_DOMAIN_RAW, _MEM, _OBJ */
static struct pyarena_alloc pm_arena;
#define PY_SMALL 512u

/*
 * A sampled request of the fast wrappers (the countdown crossed 0 on it):
 * served by malloc (the allocator under the raw domain), not by pymalloc,
 * so that its release needs no wrapper: pymalloc's free passes an address
 * outside its arenas to PyMem_RawFree, which is free(), ours, where the
 * filter finds it (its realloc likewise goes to PyMem_RawRealloc).  The
 * domains' free is then pymalloc's own, unwrapped: CPython's
 * profile-guided build calls it inline when it is the one installed, and
 * a wrapper cost every release of every object (perf and callgrind,
 * 2026-11-28).  zero: calloc's.  The countdown is as the caller left it.
 */
static __attribute__((noinline)) void *pm_sample(size_t n, bool zero, uint32_t domain)
{
	void *p = zero ? real.calloc(1, n ? n : 1) : real.malloc(n ? n : 1);
	return slow_sample(p, n, domain);
}

/*
 * A sampled realloc of old to n bytes: the block pymalloc's realloc makes
 * (the contents right, whatever old was), copied into one from malloc
 * (above), then released.
 */
static __attribute__((noinline)) void *pm_realloc_sample(const struct pymem_alloc *prev, void *old, size_t n,
							  uint32_t domain)
{
	void *q = real.malloc(n ? n : 1);
	if (q && old) {
		int64_t left = tls.left;
		tls.left = NOT_COUNTING;
		void *p = prev->realloc(prev->ctx, old, n);
		if (p) {
			memcpy(q, p, n);
			prev->free(prev->ctx, p);
		} else {
			real.free(q);
			q = NULL;
		}
		tls.left = left;
	}
	return slow_sample(q, n, domain);
}

/*
 * The fast wrappers, one set per domain (D: 1 mem, 2 object) so that each
 * is a direct load of the allocator below and one subtraction: CPython
 * calls them for every small object.  No release wrapper (pm_sample).
 */
#define PM_FAST(D, NAME)                                                                                  \
	static void *pm_##NAME##_malloc(void *ctx, size_t n)                                               \
	{                                                                                                  \
		(void)ctx;                                                                                 \
		if (n > PY_SMALL || LIKELY((tls.left -= (int64_t)n) > 0))                                 \
			return pm_prev[D].malloc(pm_prev[D].ctx, n);                                       \
		return pm_sample(n, false, ISC_ALLOC_PYRAW + D);                                           \
	}                                                                                                  \
	static void *pm_##NAME##_calloc(void *ctx, size_t k, size_t n)                                     \
	{                                                                                                  \
		(void)ctx;                                                                                 \
		size_t b;                                                                                  \
		if (__builtin_mul_overflow(k, n, &b) || b > PY_SMALL || LIKELY((tls.left -= (int64_t)b) > 0)) \
			return pm_prev[D].calloc(pm_prev[D].ctx, k, n);                                    \
		return pm_sample(b, true, ISC_ALLOC_PYRAW + D);                                            \
	}                                                                                                  \
	static void *pm_##NAME##_realloc(void *ctx, void *old, size_t n)                                   \
	{                                                                                                  \
		(void)ctx;                                                                                 \
		if (n > PY_SMALL || LIKELY((tls.left -= (int64_t)n) > 0))                                 \
			return pm_prev[D].realloc(pm_prev[D].ctx, old, n);                                 \
		return pm_realloc_sample(&pm_prev[D], old, n, ISC_ALLOC_PYRAW + D);                        \
	}
PM_FAST(1, mem)
PM_FAST(2, obj)

/* (the generic wrappers' release) */
static void pm_free(void *ctx, void *p)
{
	unsigned d = (unsigned)(uintptr_t)ctx;
	if (p && UNLIKELY(maybe_sampled(p)))
		on_free(p, ISC_ALLOC_PYRAW + d);
	pm_prev[d].free(pm_prev[d].ctx, p);
}

/* pymalloc's arenas (mmap below): never counted. */
static void *pm_arena_alloc(void *ctx, size_t n)
{
	(void)ctx;
	int64_t left = tls.left;
	tls.left = NOT_COUNTING;
	void *p = pm_arena.alloc(pm_arena.ctx, n);
	tls.left = left;
	return p;
}

static void pm_arena_free(void *ctx, void *p, size_t n)
{
	(void)ctx;
	pm_arena.free(pm_arena.ctx, p, n);
}

/* The generic wrappers: every domain, the allocator below does not count. */
static void *pm_malloc(void *ctx, size_t n)
{
	unsigned d = (unsigned)(uintptr_t)ctx;
	int64_t left = tls.left;
	tls.left = NOT_COUNTING;
	void *p = pm_prev[d].malloc(pm_prev[d].ctx, n);
	tls.left = left;
	if (p)
		count(p, n, ISC_ALLOC_PYRAW + d);
	return p;
}

static void *pm_calloc(void *ctx, size_t k, size_t n)
{
	unsigned d = (unsigned)(uintptr_t)ctx;
	int64_t left = tls.left;
	tls.left = NOT_COUNTING;
	void *p = pm_prev[d].calloc(pm_prev[d].ctx, k, n);
	tls.left = left;
	if (p)
		count(p, k * n, ISC_ALLOC_PYRAW + d);
	return p;
}

static void *pm_realloc(void *ctx, void *old, size_t n)
{
	unsigned d = (unsigned)(uintptr_t)ctx;
	if (old && UNLIKELY(maybe_sampled(old)))
		on_free(old, ISC_ALLOC_PYRAW + d);
	int64_t left = tls.left;
	tls.left = NOT_COUNTING;
	void *p = pm_prev[d].realloc(pm_prev[d].ctx, old, n);
	tls.left = left;
	if (p)
		count(p, n, ISC_ALLOC_PYRAW + d);
	return p;
}

static int api_pymem_install(void (*get)(int, void *), void (*set)(int, void *), void (*arena_get)(void *),
			     void (*arena_set)(void *))
{
	if (!g.sampling || g.pymem)
		return -1;
	const char *env = getenv("PYTHONMALLOC");
	/* CPython's name for the allocators installed (3.8+), asked before ours are */
	const char *(*name)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "_PyMem_GetCurrentAllocatorName");
	const char *now = name ? name() : NULL;
	for (int d = 0; d < 3; d++)
		get(d, &pm_prev[d]);
	/* the fast wrappers hand pymalloc blocks of malloc's to release
	 * (pm_sample): pymalloc's, in the mem and object domains, over malloc */
	bool fast = (!env || !*env || !strcmp(env, "pymalloc")) && (!name || (now && !strcmp(now, "pymalloc"))) &&
		    arena_get && arena_set && pm_prev[1].malloc == pm_prev[2].malloc &&
		    pm_prev[1].free == pm_prev[2].free && pm_prev[0].malloc != pm_prev[1].malloc;
	if (fast) {
		arena_get(&pm_arena);
		struct pyarena_alloc a = { NULL, pm_arena_alloc, pm_arena_free };
		arena_set(&a);
	}
	struct pymem_alloc w[3] = {
		{ (void *)0, pm_malloc, pm_calloc, pm_realloc, pm_free },
		{ (void *)1, pm_malloc, pm_calloc, pm_realloc, pm_free },
		{ (void *)2, pm_malloc, pm_calloc, pm_realloc, pm_free },
	};
	if (fast) {
		w[1] = (struct pymem_alloc){ pm_prev[1].ctx, pm_mem_malloc, pm_mem_calloc, pm_mem_realloc, pm_prev[1].free };
		w[2] = (struct pymem_alloc){ pm_prev[2].ctx, pm_obj_malloc, pm_obj_calloc, pm_obj_realloc, pm_prev[2].free };
	}
	for (int d = fast ? 1 : 0; d < 3; d++)
		set(d, &w[d]);
	g.pymem = 1;
	int64_t left = tls.left;
	tls.left = NOT_COUNTING;
	pthread_mutex_lock(&g.mu);
	g.info_flags |= ISC_ALLOC_I_PYMEM;
	if (g.sampling && attach_locked() == 0) {
		atomic_store_explicit(&g.hdr->flags, g.info_flags, memory_order_relaxed);
		push_info(ISC_ALLOC_PHASE_PYTHON);
	}
	pthread_mutex_unlock(&g.mu);
	tls.left = left;
	return 0;
}

static void api_set_stack_fn(isc_alloc_stack_fn *fn)
{
	int64_t left = tls.left;
	tls.left = NOT_COUNTING;
	pthread_mutex_lock(&g.mu); /* no walk is in flight once we hold it */
	g.stack_fn = fn;
	if (fn)
		g.info_flags |= ISC_ALLOC_I_PYSTACK;
	if (g.hdr)
		atomic_store_explicit(&g.hdr->flags, g.info_flags, memory_order_relaxed);
	pthread_mutex_unlock(&g.mu);
	tls.left = left;
}

EXPORT const struct isc_alloc_api isc_alloc_api_v1 = {
	.version = 1,
	.size = sizeof(struct isc_alloc_api),
	.set_stack_fn = api_set_stack_fn,
	.intern = api_intern,
	.pymem_install = api_pymem_install,
};

/* ---- fork and start-up ---------------------------------------------------------- */

static void atfork_prepare(void)
{
	if (!tls.busy)
		pthread_mutex_lock(&g.mu); /* no sample is half written at the fork */
}

static void atfork_parent(void)
{
	if (!tls.busy)
		pthread_mutex_unlock(&g.mu);
}

/* The child creates its own file at its first sample; the parent's live
 * pointers are not its own. */
static void atfork_child(void)
{
	pthread_mutex_init(&g.mu, NULL);
	if (g.base)
		unmap(g.base, g.file_size);
	g.base = NULL;
	g.proc = NULL;
	g.hdr = NULL;
	g.sites = NULL;
	_Atomic(uintptr_t) *keys = atomic_load_explicit(&ptr_keys, memory_order_relaxed);
	if (keys) { /* one thread now: nobody reads them, they may go */
		unmap((void *)keys, (size_t)g.ptr_cap * sizeof(*keys));
		unmap(g.ptr_vals, (size_t)g.ptr_cap * sizeof(*g.ptr_vals));
		memset((void *)filter, 0, sizeof(filter));
	}
	atomic_store_explicit(&ptr_keys, NULL, memory_order_relaxed);
	g.ptr_vals = NULL;
	g.ptr_used = g.ptr_tombs = 0;
	unmap(g.strs, (size_t)g.str_cap * sizeof(*g.strs));
	g.strs = NULL;
	g.str_cap = g.str_count = 0;
	g.why[0] = '\0';
	g.root = 0; /* a child of the command joins through its Python agent (inherited), or not at all */
	tls.busy = 0;
}

/*
 * Whether another object's malloc comes before ours in the global scope
 * (the executable defines its own): then nobody calls ours, and the
 * process's file says so in a WARNING.  The test is a call: the malloc
 * the global scope gives is called with our countdown parked at a known
 * value, which only our malloc decrements.  (Comparing addresses would
 * not do: a non-PIE executable's PLT entry is malloc's address there.)
 */
static void check_override(void)
{
	Dl_info theirs;
	void *(*m)(size_t) = (void *(*)(size_t))dlsym(RTLD_DEFAULT, "malloc");
	void (*f)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "free");
	if (!m || !f)
		return;
	tls.left = NOT_COUNTING;
	void *x = m(1);
	bool ours = tls.left == NOT_COUNTING - 1;
	tls.left = NOT_COUNTING;
	f(x);
	if (ours)
		return;
	g.info_flags &= ~ISC_ALLOC_I_MALLOC;
	g.info_flags |= ISC_ALLOC_I_OVERRIDDEN;
	snprintf(g.why, sizeof(g.why),
		 "malloc is defined by %s, which comes before the allocation shim: malloc-family allocations of this "
		 "process are not sampled",
		 dladdr((void *)m, &theirs) && theirs.dli_fname && *theirs.dli_fname ? theirs.dli_fname : "the executable");
}

/*
 * At exit: when the recorder is gone (killed: its recorder.lock can be
 * locked), nobody will read or remove our file; remove it, and the session
 * directory once nothing else is in it (isc_shm.h).  A process that ends
 * by _exit or a signal leaves it to the recorder, as the agents do.
 */
__attribute__((destructor)) static void shim_fini(void)
{
	char name[32];
	tls.left = NOT_COUNTING;
	pthread_mutex_lock(&g.mu);
	tls.busy = 1;
	g.sampling = 0;
	if (g.base && g.pid == getpid()) {
		snprintf(name, sizeof(name), "%d%s", (int)g.pid, ISC_ALLOC_SUFFIX);
		isc_shm_remove_if_orphaned(g.session, name);
	}
	tls.busy = 0;
	pthread_mutex_unlock(&g.mu);
}

__attribute__((constructor)) static void shim_init(void)
{
	int64_t left = tls.left;
	tls.left = NOT_COUNTING;
	resolve();
	const char *session = getenv("INFERSCOPE_SESSION");
	const char *enable = getenv("INFERSCOPE_ENABLE");
	const char *iv = getenv("INFERSCOPE_ALLOC_INTERVAL");
	char *end = NULL;
	unsigned long long interval = iv && *iv ? strtoull(iv, &end, 10) : ISC_ALLOC_DEFAULT_INTERVAL;
	struct stat st;
	g.interval = end && *end ? ISC_ALLOC_DEFAULT_INTERVAL : interval;
	g.info_flags = ISC_ALLOC_I_MALLOC;
	g.ptr_cap = pow2_floor(isc_shm_env_u32("INFERSCOPE_ALLOC_PTRS", 1u << 18, 1024, 1u << 24));
	g.sampling = session && *session && !(enable && !strcmp(enable, "0")) && g.interval > 0 &&
		     strlen(session) < sizeof(g.session) && real.malloc && real.free && real.mmap;
	/* our file goes only into a directory nobody else can write (as the agents') */
	if (g.sampling && (lstat(session, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)))
		g.sampling = 0;
	const char *root = getenv("INFERSCOPE_ALLOC_ROOT");
	g.root = root && strtol(root, NULL, 10) == (long)getpid();
	if (g.sampling) {
		strcpy(g.session, session);
		check_override();
		if (pthread_atfork(atfork_prepare, atfork_parent, atfork_child))
			g.sampling = 0;
	}
	if (g.sampling && g.root && (g.info_flags & ISC_ALLOC_I_OVERRIDDEN)) { /* said at once: no sample will come */
		pthread_mutex_lock(&g.mu);
		attach_locked();
		pthread_mutex_unlock(&g.mu);
	}
	atomic_store_explicit(&g.ready, 1, memory_order_release);
	tls.left = left;
}
