/*
 * _agent.c - InferScope's CPU collector, loaded into the traced Python
 * process by sitecustomize.py.
 *
 * Built once against the limited API (Py_LIMITED_API = 3.9) as
 * _agent.abi3.so; the same file loads in CPython 3.9 to 3.13.  It creates
 * <INFERSCOPE_SESSION>/<pid>.shm (layout in lib/isc_shm.h), hooks every
 * Python thread and writes one record per Python call/return and C
 * call/return into the calling thread's ring.
 *
 * The hook: on CPython 3.12+ sys.monitoring (PEP 669) callbacks, C
 * functions registered through the Python-level API (the limited API has
 * no C one); on 3.9-3.11, and when sys.monitoring cannot be set up (every
 * profiler tool id taken) or INFERSCOPE_PY_HOOK=setprofile, a C profile
 * function (PyEval_SetProfile).  On 3.12+ setprofile is itself emulated
 * over sys.monitoring, with a Python-level dispatch per event.  Cost of a
 * call to an empty function in a loop, in the thread's CPU time over the
 * plain run (tests/bench/overhead.sh measures whole workloads; 2026-11-25,
 * noisy 2-core machine): 3.11 setprofile +128 ns; 3.12 setprofile +168
 * ns, sys.monitoring +127 ns; 3.13 setprofile +171 ns, sys.monitoring
 * +128 ns.  Each call costs three callbacks with sys.monitoring (CALL,
 * which fires for Python callees too and is dropped at once, PY_START,
 * PY_RETURN); each recorded event two clock reads' worth of work
 * (clock_gettime, varint encoding, a ring push).  The agent measures this
 * cost per event at start (calibrate(), the CALIBRATION record) and
 * iscope-analyze removes it.  No event is ever disabled (returning
 * sys.monitoring.DISABLE): a call site disabled for a Python callee would
 * hide C calls made later from the same site, and counts would no longer
 * be exact.
 * PyEval_SetProfile, Py_tracefunc and PyTrace_* are outside the limited API
 * but have had the same ABI since 2.x, so we declare them ourselves.
 *
 * Concurrency: every caller of the profile function and of the exported
 * functions holds the GIL, and nothing here releases it between reading
 * and updating the intern table, so table lookups take no lock.  g.lock
 * serialises writers of the string area and the table (never held while
 * calling Python code, which could release the GIL).  Each ring has one
 * producer: the thread that claimed the slot.
 *
 * Nothing in here may raise into the workload or stop it: every failure
 * clears the Python error and degrades to "not recorded".
 */
#define PY_SSIZE_T_CLEAN /* s# takes Py_ssize_t lengths */
#include <Python.h>
#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "isc_format.h"
#include "isc_shm.h"
#include "alloc_hooks.h"

#ifndef PyTrace_CALL
typedef int (*Py_tracefunc)(PyObject *, PyFrameObject *, int, PyObject *);
PyAPI_FUNC(void) PyEval_SetProfile(Py_tracefunc, PyObject *);
#define PyTrace_CALL 0
#define PyTrace_EXCEPTION 1
#define PyTrace_LINE 2
#define PyTrace_RETURN 3
#define PyTrace_C_CALL 4
#define PyTrace_C_EXCEPTION 5
#define PyTrace_C_RETURN 6
#endif

/*
 * Head of builtin_function_or_method (PyCFunctionObject, and PyCMethodObject
 * which extends it).  Not in the limited API, but m_ml and m_self have sat
 * right after PyObject_HEAD unchanged from 3.0 through 3.13; we read them in
 * the hot path to key C callables without calling into the interpreter.
 */
struct agent_cfunc {
	PyObject_HEAD
	PyMethodDef *m_ml;
	PyObject *m_self;
};

#define AGENT_DEFAULT_SLOTS ISC_SHM_DEFAULT_SLOTS
#define AGENT_DEFAULT_RING_KB 1024
#define AGENT_DEFAULT_BIG ISC_SHM_BIG_RINGS /* slots with big rings when INFERSCOPE_BIG_RING_KB is set */
#define AGENT_DEFAULT_STR_KB 4096
#define AGENT_NAME_MAX 64   /* thread name bytes kept in THREAD_BEGIN */
#define AGENT_STR_MAX 1024  /* bytes kept of a name or a file in STRING_DEF */
#define AGENT_IGNORE UINT32_MAX /* intern result: our own function, not recorded */
#define AGENT_KIND_IGNORE 0xFF  /* intern_define: map the key to AGENT_IGNORE */
#define AGENT_REC_MAX 128   /* a body stays < 128 bytes: size is one byte */
_Static_assert(10 + AGENT_NAME_MAX < AGENT_REC_MAX && 7 * 10 < AGENT_REC_MAX, "record body too big");

struct agent_tls {
	struct isc_shm_slot *slot; /* NULL: this thread does not record */
	uint8_t *ring;
	uint32_t gen;      /* g.gen at claim time; a mismatch means re-claim */
	uint32_t ring_size; /* bytes of this slot's ring (power of two) */
	uint32_t idx;
	uint32_t skip_c;   /* C_RETURNs still to swallow for ignored C_CALLs */
	uint8_t lost;      /* no slot was free: count events in slot_dropped */
	uint8_t unnamed;   /* sys.monitoring: waiting for threading to name the thread */
	uint32_t unnamed_events;
	char name[AGENT_NAME_MAX + 1];
};

static __thread struct agent_tls tls;

struct agent_ient {
	uintptr_t k1, k2; /* k1 == 0: empty */
	uint32_t id;
};

static struct {
	void *base; /* mapping of our <pid>.shm; NULL when not attached */
	struct isc_shm_proc *proc;
	uint8_t *str;
	uint64_t str_size, file_size, ring_off, str_off;
	uint32_t nslots, ring_size, nbig, big_ring_size;
	_Atomic uint32_t gen; /* bumped on attach and fork: stale slots re-claim */
	int enabled;          /* recording requested and still possible */
	int need_attach;      /* fork child: create our own file at first event */
	int exited;           /* exit_hook ran in this process */
	int has_qualname;     /* code objects have co_qualname (3.11+) */
	int python_sample;    /* INFERSCOPE_PYTHON_MODE=sample: no profile hook (the recorder samples) */
	int py312;            /* sys.monitoring exists (3.12+) */
	pid_t pid;
	char session[PATH_MAX];
	pthread_key_t key; /* only for its destructor: THREAD_END at thread exit */
	pthread_mutex_t lock;
	uint32_t next_id;
	struct agent_ient *tab; /* owned; entries hold a reference (see intern_define) */
	uint32_t tab_mask, tab_count;
	PyObject *scope_ids, *mark_ids; /* str -> int, this process's ids */
	_Atomic uint64_t events[ISC_SHM_MAX_SLOTS + 1]; /* committed records per slot; the last: calibration */
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

static int own_method(const PyMethodDef *ml);

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static unsigned varint_len(uint64_t v)
{
	unsigned n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* ---- recording into the ring --------------------------------------- */

/* Encodes type, size, delta, nv varints, bytes at p; returns its length. */
static inline unsigned put_rec(uint8_t *p, uint8_t type, uint64_t delta, int nv, uint64_t a,
			       uint64_t b, const char *bytes, unsigned blen)
{
	uint8_t *body = p + 2;
	unsigned n = isc_put_varint(body, delta);
	if (nv > 0)
		n += isc_put_varint(body + n, a);
	if (nv > 1)
		n += isc_put_varint(body + n, b);
	if (blen) {
		memcpy(body + n, bytes, blen);
		n += blen;
	}
	p[0] = type;
	p[1] = (uint8_t)n;
	return n + 2;
}

/*
 * Appends one timed record to the thread's ring; a full ring drops it and
 * counts it in slot->dropped (the recorder turns that count into DROPPED
 * records).
 */
static inline void emit(struct agent_tls *t, uint8_t type, int nv, uint64_t a, uint64_t b,
			const char *bytes, unsigned blen)
{
	struct isc_shm_slot *s = t->slot;
	uint8_t rec[AGENT_REC_MAX + 2];
	uint64_t ts = now_ns();

	if (ts < s->last_ts)
		ts = s->last_ts;
	unsigned n = put_rec(rec, type, ts - s->last_ts, nv, a, b, bytes, blen);
	if (isc_ring_push(s, t->ring, t->ring_size, rec, n)) {
		s->last_ts = ts;
		atomic_store_explicit(&g.events[t->idx],
				      atomic_load_explicit(&g.events[t->idx], memory_order_relaxed) + 1,
				      memory_order_relaxed);
	}
}

/* ---- calibration: what recording one event costs ------------------- */

/*
 * Measured at start (inherited by fork children, which repeat the record
 * in their own file) and again at exit (exit_hook): the best of
 * CALIB_ROUNDS timings (after one warm-up round) of a Python loop making
 * calib_calls calls to an empty function, without the hook and with it,
 * the hooked rounds recording into a private ring.  per_event_ps =
 * (hooked - plain) / events recorded, in picoseconds; 0 when not
 * measured.  Written as the CALIBRATION record after THREAD_BEGIN of the
 * process's first thread, and the exit one before the exiting thread's
 * THREAD_END (formats/trace.md §6.1).
 */
#define AGENT_MECH_SETPROFILE 1 /* CALIBRATION mechanism: PyEval_SetProfile */
#define AGENT_MECH_MONITORING 2 /* sys.monitoring (PEP 669) */
#define CALIB_ROUNDS 11 /* short rounds: on a busy machine some run unpreempted */
#define CALIB_CALLS 5000
static struct {
	uint64_t mech, per_event_ps, calls, plain_ns, hooked_ns, events;
} calib;

static void emit_calibration(struct agent_tls *t)
{
	uint8_t body[6 * 10];
	unsigned n = 0;
	if (!calib.mech)
		return;
	const uint64_t f[6] = { calib.mech, calib.per_event_ps, calib.calls, calib.plain_ns, calib.hooked_ns,
				calib.events };
	for (int i = 0; i < 6; i++)
		n += isc_put_varint(body + n, f[i]);
	emit(t, ISC_REC_CALIBRATION, 0, 0, 0, (const char *)body, n);
}

/* ---- the shared-memory file ---------------------------------------- */

static uint32_t pow2_ceil(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

/*
 * Computes the layout from the environment (once per process tree): nslots
 * rings of INFERSCOPE_RING_KB, the first INFERSCOPE_BIG_RINGS of which
 * (default AGENT_DEFAULT_BIG, when INFERSCOPE_BIG_RING_KB is set) have
 * INFERSCOPE_BIG_RING_KB instead.  Sizes are rounded up to a power of two.
 */
static void layout_init(void)
{
	g.nslots = isc_shm_env_u32("INFERSCOPE_SLOTS", AGENT_DEFAULT_SLOTS, 1, ISC_SHM_MAX_SLOTS);
	g.ring_size = pow2_ceil(isc_shm_env_u32("INFERSCOPE_RING_KB", AGENT_DEFAULT_RING_KB, 4, 1u << 20)) * 1024u;
	uint32_t big_kb = isc_shm_env_u32("INFERSCOPE_BIG_RING_KB", 0, 0, 1u << 20);
	g.big_ring_size = big_kb ? pow2_ceil(big_kb) * 1024u : 0;
	g.nbig = 0;
	if (g.big_ring_size > g.ring_size)
		g.nbig = isc_shm_env_u32("INFERSCOPE_BIG_RINGS", AGENT_DEFAULT_BIG, 0, g.nslots);
	if (!g.nbig)
		g.big_ring_size = 0;
	g.str_size = (uint64_t)isc_shm_env_u32("INFERSCOPE_STR_KB", AGENT_DEFAULT_STR_KB, 4, 1u << 20) * 1024u;
	g.str_off = isc_shm_page_align(ISC_SHM_SLOTS_OFF + (uint64_t)g.nslots * ISC_SHM_SLOT_SIZE);
	g.ring_off = isc_shm_page_align(g.str_off + g.str_size);
	g.file_size = g.ring_off + isc_shm_ring_offset(g.nbig, g.big_ring_size, g.ring_size, g.nslots);
}

/*
 * Creates and maps <session>/<pid>.shm and publishes its header.  On
 * failure writes the reason into err and leaves nothing behind.
 */
static int shm_create(pid_t ppid, char *err, size_t errlen)
{
	g.pid = getpid();
	struct isc_shm_proc h = { .pid = (uint32_t)g.pid, .ppid = (uint32_t)ppid, .file_size = g.file_size,
				  .nslots = g.nslots, .ring_size = g.ring_size, .nbig = g.nbig,
				  .big_ring_size = g.big_ring_size, .str_off = g.str_off, .str_size = g.str_size,
				  .ring_off = g.ring_off, .start_ts = now_ns() };
	void *base = isc_shm_create(g.session, ".shm", &h, err, errlen);
	if (!base)
		return -1;
	struct isc_shm_proc *p = base;
	atomic_store_explicit(&p->state, ISC_PROC_RUNNING, memory_order_relaxed);
	__atomic_store_n(&p->magic, ISC_SHM_MAGIC, __ATOMIC_RELEASE);

	g.base = base;
	g.proc = p;
	g.str = (uint8_t *)base + g.str_off;
	return 0;
}

static void report_attach_failure(const char *why)
{
	fprintf(stderr, "inferscope: cannot attach: %s\n", why);
}

/* Forgets everything interned by the parent (fork child); leaks the
 * parent's references and table on purpose: freeing them is not needed
 * and the table may have been caught mid-update by the fork. */
static void intern_reset(void)
{
	g.tab = NULL;
	g.tab_mask = 0;
	g.tab_count = 0;
	g.next_id = 1;
	PyDict_Clear(g.scope_ids);
	PyDict_Clear(g.mark_ids);
	memset((void *)g.events, 0, sizeof(g.events));
}

/*
 * fork() child, still inside fork(): drop the parent's mapping and make
 * every thread-local slot stale.  The child creates its own file lazily at
 * its first event (with the GIL, outside fork), so fork+exec children
 * (subprocess) that never run Python code here leave no file behind.
 */
static void atfork_child(void)
{
	if (!g.enabled)
		return;
	if (g.base)
		munmap(g.base, g.file_size);
	g.base = NULL;
	g.proc = NULL;
	g.str = NULL;
	g.need_attach = 1;
	g.exited = 0;
	pthread_mutex_init(&g.lock, NULL);
	atomic_fetch_add_explicit(&g.gen, 1, memory_order_relaxed);
}

/* First event in a fork child: create <pid>.shm.  Caller holds the GIL. */
static void attach_child(void)
{
	char err[PATH_MAX + 128];
	pid_t parent = g.pid;

	g.need_attach = 0;
	if (shm_create(parent, err, sizeof(err)) < 0) {
		g.enabled = 0;
		report_attach_failure(err);
		return;
	}
	intern_reset();
}

/* ---- thread slots -------------------------------------------------- */

static void read_comm(struct agent_tls *t, pid_t tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, t->name, AGENT_NAME_MAX);
	close(fd);
	if (n < 0)
		n = 0;
	while (n > 0 && t->name[n - 1] == '\n')
		n--;
	t->name[n] = 0;
}

static void slot_set_name(struct isc_shm_slot *s, const char *name)
{
	size_t n = strnlen(name, sizeof(s->name) - 1);
	while (n > 0 && name[n] && ((uint8_t)name[n] & 0xC0) == 0x80) /* whole characters */
		n--;
	memset(s->name, 0, sizeof(s->name));
	memcpy(s->name, name, n);
}

#define AGENT_UNNAMED_EVENTS 256
static PyObject *getattr_str(PyObject *o, const char *attr);
static void set_tls_name(struct agent_tls *t, PyObject *name);
static PyObject *threading_active; /* threading._active (sys.monitoring mode), owned */

/*
 * sys.monitoring mode: the name threading gave the calling thread, from
 * threading._active[get_ident()]._name (no Python code runs), into t.
 * 1 when found.  Caller holds the GIL.
 */
static int thread_name_from_threading(struct agent_tls *t)
{
	int found = 0;
	if (!threading_active)
		return 0;
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *key = PyLong_FromUnsignedLong(PyThread_get_thread_ident());
	PyObject *th = key ? PyDict_GetItem(threading_active, key) : NULL; /* borrowed */
	PyObject *name = th ? getattr_str(th, "_name") : NULL;
	if (name) {
		set_tls_name(t, name);
		found = 1;
	}
	Py_DecRef(name);
	Py_DecRef(key);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
	return found;
}

/* Claims a fresh slot for the calling thread (attaching first in a fork
 * child); leaves t->slot NULL when recording is off or slots ran out. */
static void tls_claim(struct agent_tls *t)
{
	t->slot = NULL;
	t->lost = 0;
	t->skip_c = 0;
	if (g.enabled && g.need_attach)
		attach_child();
	t->gen = atomic_load_explicit(&g.gen, memory_order_relaxed);
	if (!g.base || g.exited)
		return;
	/* sys.monitoring sees a thread from its first event, inside threading's
	 * bootstrap before the thread is registered under its name; the
	 * profile hook (threading.setprofile) only after.  Wait for the name,
	 * not recording, for a few events; a thread threading does not know
	 * (started from C) gets its comm then. */
	t->unnamed = 0;
	if (!t->name[0] && !thread_name_from_threading(t) && ++t->unnamed_events < AGENT_UNNAMED_EVENTS) {
		t->unnamed = 1;
		return;
	}

	struct isc_shm_proc *p = g.proc;
	uint32_t idx = atomic_load_explicit(&p->nslots_used, memory_order_relaxed);
	do {
		if (idx >= g.nslots) {
			t->lost = 1;
			return;
		}
	} while (!atomic_compare_exchange_weak_explicit(&p->nslots_used, &idx, idx + 1,
							memory_order_relaxed, memory_order_relaxed));

	struct isc_shm_slot *s = isc_shm_slot_at(g.base, idx);
	pid_t tid = gettid();
	if (!t->name[0])
		read_comm(t, tid);
	atomic_store_explicit(&s->tid, (uint32_t)tid, memory_order_relaxed);
	slot_set_name(s, t->name);
	atomic_store_explicit(&s->state, ISC_SLOT_ACTIVE, memory_order_release);
	t->slot = s;
	t->ring = isc_shm_ring_at(g.base, p, idx);
	t->ring_size = isc_shm_ring_len(g.nbig, g.big_ring_size, g.ring_size, idx);
	t->idx = idx;
	pthread_setspecific(g.key, (void *)1);
	emit(t, ISC_REC_THREAD_BEGIN, 0, 0, 0, t->name, (unsigned)strlen(t->name));
	if (idx == 0)
		emit_calibration(t);
}

static struct agent_tls *tls_slow(struct agent_tls *t)
{
	if (t->gen != atomic_load_explicit(&g.gen, memory_order_relaxed) || t->unnamed)
		tls_claim(t);
	if (t->slot)
		return t;
	if (t->lost && g.proc)
		atomic_fetch_add_explicit(&g.proc->slot_dropped, 1, memory_order_relaxed);
	return NULL;
}

/* The calling thread's recording state, or NULL when it does not record. */
static inline struct agent_tls *tls_get(void)
{
	struct agent_tls *t = &tls;
	if (__builtin_expect(t->gen != atomic_load_explicit(&g.gen, memory_order_relaxed) || !t->slot, 0))
		return tls_slow(t);
	return t;
}

/* Ends the thread's slot.  Runs without the GIL from the key destructor:
 * touches only the shared file. */
static void thread_end(struct agent_tls *t)
{
	if (!t->slot || t->gen != atomic_load_explicit(&g.gen, memory_order_relaxed) || !g.base)
		return;
	emit(t, ISC_REC_THREAD_END, 0, 0, 0, NULL, 0);
	atomic_store_explicit(&t->slot->state, ISC_SLOT_EXITED, memory_order_release);
	t->slot = NULL;
}

static void key_destructor(void *unused)
{
	(void)unused;
	thread_end(&tls);
}

/* ---- interning ----------------------------------------------------- */

static inline uint32_t tab_hash(uintptr_t k1, uintptr_t k2)
{
	uint64_t h = ((uint64_t)k1 ^ ((uint64_t)k2 * 0x9E3779B97F4A7C15ull)) * 0xFF51AFD7ED558CCDull;
	return (uint32_t)(h >> 32);
}

static inline struct agent_ient *tab_find(uintptr_t k1, uintptr_t k2)
{
	if (!g.tab)
		return NULL;
	for (uint32_t i = tab_hash(k1, k2) & g.tab_mask;; i = (i + 1) & g.tab_mask) {
		struct agent_ient *e = &g.tab[i];
		if (e->k1 == k1 && e->k2 == k2)
			return e;
		if (!e->k1)
			return NULL;
	}
}

/* Inserts a key known to be absent; grows at half load.  Caller holds g.lock. */
static int tab_insert(uintptr_t k1, uintptr_t k2, uint32_t id)
{
	if (2 * (g.tab_count + 1) > g.tab_mask + 1 || !g.tab) {
		uint32_t cap = g.tab ? 2 * (g.tab_mask + 1) : 4096;
		struct agent_ient *n = calloc(cap, sizeof(*n));
		if (!n)
			return -1;
		for (uint32_t i = 0; g.tab && i <= g.tab_mask; i++) {
			struct agent_ient *e = &g.tab[i];
			if (!e->k1)
				continue;
			uint32_t j = tab_hash(e->k1, e->k2) & (cap - 1);
			while (n[j].k1)
				j = (j + 1) & (cap - 1);
			n[j] = *e;
		}
		free(g.tab);
		g.tab = n;
		g.tab_mask = cap - 1;
	}
	uint32_t i = tab_hash(k1, k2) & g.tab_mask;
	while (g.tab[i].k1)
		i = (i + 1) & g.tab_mask;
	g.tab[i] = (struct agent_ient){ k1, k2, id };
	g.tab_count++;
	return 0;
}

/* UTF-8 bytes of a str (errors escaped), NULL on failure with no error set. */
static PyObject *utf8_of(PyObject *s)
{
	PyObject *b = NULL;
	if (s && PyUnicode_Check(s))
		b = PyUnicode_AsEncodedString(s, "utf-8", "backslashreplace");
	if (!b)
		PyErr_Clear();
	return b;
}

static void bytes_view(PyObject *b, const char **p, size_t *n)
{
	char *s = NULL;
	Py_ssize_t len = 0;
	*p = "";
	*n = 0;
	if (b && PyBytes_AsStringAndSize(b, &s, &len) == 0) {
		size_t m = (size_t)len;
		if (m > AGENT_STR_MAX) {
			m = AGENT_STR_MAX;
			while (m > 0 && ((uint8_t)s[m] & 0xC0) == 0x80) /* keep whole characters */
				m--;
		}
		*p = s;
		*n = m;
	}
	PyErr_Clear();
}

/*
 * Appends one STRING_DEF to the string area and publishes it.  Caller
 * holds g.lock.  Returns -1 when the area is full (counted).
 */
static int strdef_put(uint32_t id, uint8_t kind, uint64_t line, const char *name, size_t nlen,
		      const char *file, size_t flen)
{
	uint64_t body = varint_len(id) + 1 + varint_len(line) + varint_len(nlen) + nlen +
			varint_len(flen) + flen;
	uint64_t total = 1 + varint_len(body) + body;
	uint64_t off = atomic_load_explicit(&g.proc->str_committed, memory_order_relaxed);

	if (off > g.str_size || total > g.str_size - off) {
		atomic_fetch_add_explicit(&g.proc->str_dropped, 1, memory_order_relaxed);
		return -1;
	}
	uint8_t *p = g.str + off;
	*p++ = ISC_REC_STRING_DEF;
	p += isc_put_varint(p, body);
	p += isc_put_varint(p, id);
	*p++ = kind;
	p += isc_put_varint(p, line);
	p += isc_put_varint(p, nlen);
	memcpy(p, name, nlen);
	p += nlen;
	p += isc_put_varint(p, flen);
	memcpy(p, file, flen);
	atomic_store_explicit(&g.proc->str_committed, off + total, memory_order_release);
	return 0;
}

/* A definition's name and file as UTF-8, prepared before taking g.lock
 * (encoding is a Python API call; none is made under the lock). */
struct agent_def {
	PyObject *nb, *fb; /* owned bytes, or NULL */
	const char *name, *file;
	size_t nlen, flen;
	uint64_t line;
};

static void def_prepare(struct agent_def *d, PyObject *name, PyObject *file, long line)
{
	d->nb = utf8_of(name);
	d->fb = utf8_of(file);
	bytes_view(d->nb, &d->name, &d->nlen);
	bytes_view(d->fb, &d->file, &d->flen);
	d->line = line < 0 ? 0 : (uint64_t)line;
}

static void def_release(struct agent_def *d)
{
	Py_DecRef(d->nb);
	Py_DecRef(d->fb);
}

/* Assigns the next id and defines it; 0 when the string area is full.
 * Caller holds g.lock. */
static uint32_t define_locked(uint8_t kind, const struct agent_def *d)
{
	uint32_t id = g.next_id;
	if (id >= ISC_STRING_ID_CUDA_BASE) { /* the CUDA agent's ids start there */
		atomic_fetch_add_explicit(&g.proc->str_dropped, 1, memory_order_relaxed);
		return 0;
	}
	if (strdef_put(id, kind, d->line, d->name, d->nlen, d->file, d->flen) < 0)
		return 0;
	g.next_id++;
	return id;
}

/*
 * Interns key (k1, k2) with definition d; ref gains a reference owned by
 * the table forever, so the object behind a pointer key can never be freed
 * and its address reused for another.  Re-checks the table: another thread
 * may have interned the key while the caller computed names (attribute
 * lookups can release the GIL).
 */
static uint32_t intern_define(uintptr_t k1, uintptr_t k2, PyObject *ref, uint8_t kind,
			      const struct agent_def *d)
{
	uint32_t id;
	pthread_mutex_lock(&g.lock);
	struct agent_ient *e = tab_find(k1, k2);
	if (e) {
		id = e->id;
	} else {
		id = (kind == AGENT_KIND_IGNORE) ? AGENT_IGNORE : define_locked(kind, d);
		if (tab_insert(k1, k2, id) == 0)
			Py_IncRef(ref);
	}
	pthread_mutex_unlock(&g.lock);
	return id;
}

static PyObject *getattr_str(PyObject *o, const char *attr)
{
	PyObject *v = PyObject_GetAttrString(o, attr);
	if (v && !PyUnicode_Check(v)) {
		Py_DecRef(v);
		v = NULL;
	}
	if (!v)
		PyErr_Clear();
	return v;
}

static uint32_t intern_code_slow(PyObject *code)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *name = getattr_str(code, g.has_qualname ? "co_qualname" : "co_name");
	PyObject *file = getattr_str(code, "co_filename");
	PyObject *lineo = PyObject_GetAttrString(code, "co_firstlineno");
	long line = lineo ? PyLong_AsLong(lineo) : 0;
	PyErr_Clear();
	struct agent_def d;
	def_prepare(&d, name, file, line);
	uint32_t id = intern_define((uintptr_t)code, 0, code, ISC_STR_CODE, &d);
	def_release(&d);
	Py_DecRef(name);
	Py_DecRef(file);
	Py_DecRef(lineo);
	PyErr_Restore(et, ev, tb);
	return id;
}

static inline uint32_t intern_code(PyObject *code)
{
	struct agent_ient *e = tab_find((uintptr_t)code, 0);
	return e ? e->id : intern_code_slow(code);
}

/* "<prefix>.<name>" or just name when prefix is NULL/empty; new reference. */
static PyObject *qualify(PyObject *prefix, PyObject *name)
{
	if (!name)
		return NULL;
	if (!prefix || PyUnicode_GetLength(prefix) == 0) {
		Py_IncRef(name);
		return name;
	}
	return PyUnicode_FromFormat("%U.%U", prefix, name);
}

/*
 * Name of a builtin_function_or_method: "torch.matmul" (module-level or
 * static: module + name), "Tensor.add" / "list.append" (bound: type of
 * self + name), "dict.fromkeys" (classmethod).  file = module name.
 */
static void cfunc_names(struct agent_cfunc *c, PyObject **name, PyObject **file)
{
	PyObject *self = c->m_self;
	PyObject *base = PyUnicode_FromString(c->m_ml->ml_name);
	PyObject *prefix = NULL;

	if (!self || (c->m_ml->ml_flags & METH_STATIC) || PyModule_Check(self) ||
	    PyCapsule_CheckExact(self)) { /* pybind11 functions carry a capsule as self */
		*file = getattr_str((PyObject *)c, "__module__");
		if (!*file && self && PyModule_Check(self)) {
			*file = PyModule_GetNameObject(self);
			PyErr_Clear();
		}
		prefix = *file;
		Py_IncRef(prefix);
	} else {
		PyObject *tp = PyType_Check(self) ? self : (PyObject *)Py_TYPE(self);
		prefix = getattr_str(tp, "__qualname__");
		*file = getattr_str(tp, "__module__");
	}
	*name = qualify(prefix, base);
	PyErr_Clear();
	Py_DecRef(prefix);
	Py_DecRef(base);
}

/* Any other callable: __qualname__ (or __name__, or its type's name)
 * qualified with __module__ when not already dotted. */
static void callable_names(PyObject *f, PyObject **name, PyObject **file)
{
	PyObject *base = getattr_str(f, "__qualname__");
	if (!base)
		base = getattr_str(f, "__name__");
	if (!base)
		base = getattr_str((PyObject *)Py_TYPE(f), "__name__");
	*file = getattr_str(f, "__module__");
	if (base && PyUnicode_FindChar(base, '.', 0, PyUnicode_GetLength(base), 1) < 0) {
		*name = qualify(*file, base);
		Py_DecRef(base);
	} else {
		*name = base;
	}
	PyErr_Clear();
}

static uint32_t intern_callable_slow(PyObject *f, uintptr_t k1, uintptr_t k2, PyObject *ref)
{
	PyObject *et, *ev, *tb;
	PyObject *name = NULL, *file = NULL;
	uint8_t kind = ISC_STR_CFUNC;

	PyErr_Fetch(&et, &ev, &tb);
	if (k2 & 1) {
		struct agent_cfunc *c = (struct agent_cfunc *)f;
		if (own_method(c->m_ml))
			kind = AGENT_KIND_IGNORE;
		else
			cfunc_names(c, &name, &file);
	} else {
		callable_names(f, &name, &file);
	}
	struct agent_def d;
	def_prepare(&d, name, file, 0);
	uint32_t id = intern_define(k1, k2, ref, kind, &d);
	def_release(&d);
	Py_DecRef(name);
	Py_DecRef(file);
	PyErr_Restore(et, ev, tb);
	return id;
}

/*
 * Id of the callable of a C_CALL event.  builtin_function_or_method objects
 * are created per call for bound methods (lst.append, tensor.add), so they
 * are keyed by (PyMethodDef, type of self) and the table keeps the type
 * alive; the low bit of k2 tags this key space.  We rely on a PyMethodDef
 * living as long as the process (static tables; pybind11 never frees its
 * function records).  A classmethod inherited by several classes is one key
 * (self is a class: its type is the metaclass) named after the first class
 * seen.  Other callables are keyed by (and keep) the object.
 */
static inline uint32_t intern_callable(PyObject *f)
{
	uintptr_t k1, k2;
	PyObject *ref;
	if (PyCFunction_Check(f)) {
		struct agent_cfunc *c = (struct agent_cfunc *)f;
		ref = c->m_self ? (PyObject *)Py_TYPE(c->m_self) : NULL;
		k1 = (uintptr_t)c->m_ml;
		k2 = (uintptr_t)ref | 1;
	} else {
		ref = f;
		k1 = (uintptr_t)f;
		k2 = 0;
	}
	struct agent_ient *e = tab_find(k1, k2);
	return e ? e->id : intern_callable_slow(f, k1, k2, ref);
}

/* Id of a scope or mark name, by content; 0 when it could not be defined. */
static uint32_t intern_name(PyObject *dict, uint8_t kind, PyObject *name)
{
	PyObject *et, *ev, *tb;
	uint32_t id = 0;

	PyErr_Fetch(&et, &ev, &tb);
	PyObject *s = PyUnicode_Check(name) ? (Py_IncRef(name), name) : PyObject_Str(name);
	if (!s)
		goto out;
	PyObject *v = PyDict_GetItemWithError(dict, s);
	if (v) {
		id = (uint32_t)PyLong_AsUnsignedLong(v);
	} else if (!PyErr_Occurred()) {
		struct agent_def d;
		def_prepare(&d, s, NULL, 0);
		pthread_mutex_lock(&g.lock);
		id = define_locked(kind, &d);
		pthread_mutex_unlock(&g.lock);
		def_release(&d);
		PyObject *idobj = PyLong_FromUnsignedLong(id);
		if (idobj)
			PyDict_SetItem(dict, s, idobj);
		Py_DecRef(idobj);
	}
	Py_DecRef(s);
out:
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
	return id;
}

/* ---- the profile function ------------------------------------------ */

static int profile_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
	(void)obj;
	struct agent_tls *t = tls_get();
	if (!t)
		return 0;
	switch (what) {
	case PyTrace_CALL: {
		PyCodeObject *co = PyFrame_GetCode(frame);
		uint32_t id = intern_code((PyObject *)co);
		Py_DecRef((PyObject *)co); /* not Py_DECREF: 3.12+ code may be immortal */
		emit(t, ISC_REC_PY_CALL, 1, id, 0, NULL, 0);
		break;
	}
	case PyTrace_RETURN:
		emit(t, ISC_REC_PY_RETURN, 0, 0, 0, NULL, 0);
		break;
	case PyTrace_C_CALL: {
		uint32_t id = intern_callable(arg);
		if (id == AGENT_IGNORE)
			t->skip_c++;
		else
			emit(t, ISC_REC_C_CALL, 1, id, 0, NULL, 0);
		break;
	}
	case PyTrace_C_RETURN:
	case PyTrace_C_EXCEPTION:
		if (t->skip_c)
			t->skip_c--;
		else
			emit(t, ISC_REC_C_RETURN, 0, 0, 0, NULL, 0);
		break;
	default:
		break;
	}
	return 0;
}

/* ---- sys.monitoring (PEP 669), CPython 3.12+ ---------------------- */
/*
 * The same records from sys.monitoring callbacks: C functions called
 * through METH_FASTCALL (vectorcall), registered with the Python-level
 * sys.monitoring.register_callback, as the limited API has no C interface
 * to it.  Events are global (every thread, started before us or not, by
 * threading or not).  Mapping, as CPython's own setprofile emulation does:
 *   PY_START, PY_RESUME, PY_THROW      -> PY_CALL
 *   PY_RETURN, PY_YIELD, PY_UNWIND     -> PY_RETURN
 *   CALL of a builtin function or a method descriptor -> C_CALL
 *   C_RETURN, C_RAISE of the same      -> C_RETURN
 * A method descriptor called with its self (`lst.append(x)`, `t.add(u)`)
 * is keyed like the bound method the profile hook sees: (PyMethodDef, type
 * of self), so names match ("list.append", "Tensor.add").  Other callables
 * (types, slot wrappers, Python functions) are not C calls, as with the
 * profile hook.
 */
#ifndef METH_FASTCALL /* in the limited API from 3.10; we use it on 3.12+ only */
#define METH_FASTCALL 0x0080
#endif
typedef PyObject *(*agent_fastfn)(PyObject *, PyObject *const *, Py_ssize_t);

/* Head of method_descriptor (PyMethodDescrObject): PyDescr_COMMON then
 * d_method, unchanged from 3.3 through 3.13. */
struct agent_descr {
	PyObject_HEAD
	PyTypeObject *d_type;
	PyObject *d_name;
	PyObject *d_qualname;
	PyMethodDef *d_method;
};

static struct {
	int on;                 /* recording through sys.monitoring */
	int tool;               /* our tool id */
	PyObject *mod;          /* sys.monitoring */
	PyObject *missing;      /* sys.monitoring.MISSING */
	PyTypeObject *descr;    /* type(list.append): method_descriptor */
	long mask;              /* the events we use */
} mon = { .tool = -1 };

static uint32_t intern_descr_slow(PyMethodDef *ml, PyTypeObject *tp)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	uint8_t kind = own_method(ml) ? AGENT_KIND_IGNORE : ISC_STR_CFUNC;
	PyObject *prefix = getattr_str((PyObject *)tp, "__qualname__");
	PyObject *file = getattr_str((PyObject *)tp, "__module__");
	PyObject *base = PyUnicode_FromString(ml->ml_name);
	PyObject *name = qualify(prefix, base);
	PyErr_Clear();
	struct agent_def d;
	def_prepare(&d, name, file, 0);
	uint32_t id = intern_define((uintptr_t)ml, (uintptr_t)tp | 1, (PyObject *)tp, kind, &d);
	def_release(&d);
	Py_DecRef(name);
	Py_DecRef(base);
	Py_DecRef(prefix);
	Py_DecRef(file);
	PyErr_Restore(et, ev, tb);
	return id;
}

/* Id of a CALL/C_RETURN callable, AGENT_IGNORE when it is not a C call we record. */
static inline uint32_t mon_c_id(PyObject *f, PyObject *arg0)
{
	if (PyCFunction_Check(f))
		return intern_callable(f);
	if (Py_TYPE(f) != mon.descr)
		return AGENT_IGNORE;
	struct agent_descr *d = (struct agent_descr *)f;
	PyTypeObject *tp = d->d_type;
	if (arg0 != mon.missing && PyObject_TypeCheck(arg0, d->d_type))
		tp = Py_TYPE(arg0);
	struct agent_ient *e = tab_find((uintptr_t)d->d_method, (uintptr_t)tp | 1);
	return e ? e->id : intern_descr_slow(d->d_method, tp);
}

static PyObject *mon_call_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	struct agent_tls *t = tls_get();
	if (t && nargs >= 1)
		emit(t, ISC_REC_PY_CALL, 1, intern_code(args[0]), 0, NULL, 0);
	Py_RETURN_NONE;
}

static PyObject *mon_call_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	(void)args;
	(void)nargs;
	struct agent_tls *t = tls_get();
	if (t)
		emit(t, ISC_REC_PY_RETURN, 0, 0, 0, NULL, 0);
	Py_RETURN_NONE;
}

/* CALL(code, offset, callable, arg0) */
static PyObject *mon_ccall(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs < 4)
		Py_RETURN_NONE;
	struct agent_tls *t = tls_get();
	if (!t)
		Py_RETURN_NONE;
	uint32_t id = mon_c_id(args[2], args[3]);
	if (id != AGENT_IGNORE)
		emit(t, ISC_REC_C_CALL, 1, id, 0, NULL, 0);
	Py_RETURN_NONE;
}

/* C_RETURN, C_RAISE(code, offset, callable, arg0): only after a CALL we recorded */
static PyObject *mon_creturn(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
	(void)self;
	if (nargs < 4)
		Py_RETURN_NONE;
	struct agent_tls *t = tls_get();
	if (t && mon_c_id(args[2], args[3]) != AGENT_IGNORE)
		emit(t, ISC_REC_C_RETURN, 0, 0, 0, NULL, 0);
	Py_RETURN_NONE;
}

#define MONFN(f) ((PyCFunction)(void (*)(void))(agent_fastfn)(f))
static PyMethodDef mon_defs[] = {
	{ "py_start", MONFN(mon_call_start), METH_FASTCALL, NULL },
	{ "py_return", MONFN(mon_call_return), METH_FASTCALL, NULL },
	{ "call", MONFN(mon_ccall), METH_FASTCALL, NULL },
	{ "c_return", MONFN(mon_creturn), METH_FASTCALL, NULL },
};
/* event name -> index in mon_defs */
static const struct { const char *event; int fn; } mon_events[] = {
	{ "PY_START", 0 }, { "PY_RESUME", 0 }, { "PY_THROW", 0 },
	{ "PY_RETURN", 1 }, { "PY_YIELD", 1 }, { "PY_UNWIND", 1 },
	{ "CALL", 2 }, { "C_RETURN", 3 }, { "C_RAISE", 3 },
};

static int mon_set_events(long mask)
{
	PyObject *r = PyObject_CallMethod(mon.mod, "set_events", "il", mon.tool, mask);
	Py_DecRef(r);
	return r ? 0 : -1;
}

/*
 * Claims a sys.monitoring tool id (2, the profiler's, else 4 or 3) and
 * registers our callbacks, events still off.  0, or -1 with the reason in
 * err (the caller falls back to the profile hook).  Caller holds the GIL.
 */
static int mon_setup(char *err, size_t errlen)
{
	static const int ids[] = { 2, 4, 3 };
	PyObject *et, *ev, *tb, *events = NULL, *r;
	int rc = -1;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *mod = PySys_GetObject("monitoring"); /* borrowed */
	PyObject *lst = PyList_New(0);
	PyObject *append = lst ? PyObject_GetAttrString(lst, "append") : NULL;
	PyObject *appd = append ? PyObject_GetAttrString((PyObject *)&PyList_Type, "append") : NULL;
	if (!mod || !appd) {
		snprintf(err, errlen, "no sys.monitoring");
		goto out;
	}
	Py_IncRef(mod);
	mon.mod = mod;
	mon.descr = Py_TYPE(appd);
	Py_IncRef((PyObject *)mon.descr);
	mon.missing = PyObject_GetAttrString(mod, "MISSING");
	events = PyObject_GetAttrString(mod, "events");
	PyObject *threading = PyImport_ImportModule("threading");
	threading_active = threading ? PyObject_GetAttrString(threading, "_active") : NULL;
	Py_DecRef(threading);
	if (threading_active && !PyDict_Check(threading_active)) {
		Py_DecRef(threading_active);
		threading_active = NULL;
	}
	PyErr_Clear();
	if (!mon.missing || !events)
		goto out;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && mon.tool < 0; i++) {
		r = PyObject_CallMethod(mod, "use_tool_id", "is", ids[i], "inferscope");
		if (r)
			mon.tool = ids[i];
		Py_DecRef(r);
		PyErr_Clear();
	}
	if (mon.tool < 0) {
		snprintf(err, errlen, "every sys.monitoring profiler tool id is taken");
		goto out;
	}
	mon.mask = 0;
	for (size_t i = 0; i < sizeof(mon_events) / sizeof(mon_events[0]); i++) {
		PyObject *bit = PyObject_GetAttrString(events, mon_events[i].event);
		long b = bit ? PyLong_AsLong(bit) : -1;
		Py_DecRef(bit);
		PyObject *fn = b > 0 ? PyCFunction_NewEx(&mon_defs[mon_events[i].fn], NULL, NULL) : NULL;
		r = fn ? PyObject_CallMethod(mod, "register_callback", "ilO", mon.tool, b, fn) : NULL;
		Py_DecRef(fn);
		if (!r) {
			snprintf(err, errlen, "cannot register the sys.monitoring callback of %s", mon_events[i].event);
			goto out;
		}
		Py_DecRef(r);
		mon.mask |= b;
	}
	rc = 0;
out:
	if (rc && mon.tool >= 0) {
		Py_DecRef(PyObject_CallMethod(mod, "free_tool_id", "i", mon.tool));
		mon.tool = -1;
	}
	Py_DecRef(events);
	Py_DecRef(appd);
	Py_DecRef(append);
	Py_DecRef(lst);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
	return rc;
}

/* ---- installing the hook ------------------------------------------- */

/* The hook on: sys.monitoring's events (every thread), else the calling
 * thread's profile function.  Caller holds the GIL. */
static void hook_install(void)
{
	if (mon.on) {
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		if (mon_set_events(mon.mask) < 0)
			PyErr_Clear();
		PyErr_Restore(et, ev, tb);
		return;
	}
	PyEval_SetProfile(profile_fn, NULL);
}

static void hook_remove(void)
{
	if (mon.on) {
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		if (mon_set_events(0) < 0)
			PyErr_Clear();
		PyErr_Restore(et, ev, tb);
		return;
	}
	PyEval_SetProfile(NULL, NULL);
}

/*
 * Fills calib (see above); 0, or -1 with calib unchanged.  Runs in the
 * main thread before recording starts, and again at exit after recording
 * stopped (exit_hook); the hooked rounds write into a private ring through
 * a borrowed thread state, so nothing reaches the shared file.  A failure
 * at start leaves calib.mech 0 (no CALIBRATION record: the analyzer
 * corrects nothing).
 */
static int calibrate(void)
{
	int rc = -1;
	static const char src[] = "def f():\n    pass\n"
				  "def loop(n, f=f):\n    for _ in range(n):\n        f()\n";
	PyObject *et, *ev, *tb;
	PyObject *code = NULL, *glob = NULL, *arg = NULL, *arg1 = NULL, *r;
	uint8_t *ring = NULL;
	uint64_t n = isc_shm_env_u32("INFERSCOPE_CALIB_CALLS", CALIB_CALLS, 0, 1000000);
	uint64_t best_plain = UINT64_MAX, best_hooked = UINT64_MAX, events = 0;

	PyErr_Fetch(&et, &ev, &tb);
	if (!n || !(code = Py_CompileString(src, "<inferscope calibration>", Py_file_input)) ||
	    !(glob = PyDict_New()) || PyDict_SetItemString(glob, "__builtins__", PyEval_GetBuiltins()) < 0 ||
	    !(r = PyEval_EvalCode(code, glob, glob)))
		goto out;
	Py_DecRef(r);
	PyObject *loop = PyDict_GetItemString(glob, "loop"); /* borrowed */
	/* as large as the main thread's ring (cache misses included), and
	 * touched first (the shared file's pages are, after the first lap) */
	uint32_t rsize = pow2_ceil((uint32_t)(n * 16 + 4096));
	uint32_t main_ring = g.nbig ? g.big_ring_size : g.ring_size;
	if (rsize < main_ring)
		rsize = main_ring;
	if (!loop || !(arg = Py_BuildValue("(K)", (unsigned long long)n)) || !(arg1 = Py_BuildValue("(K)", 1ull)) ||
	    !(ring = malloc(rsize)))
		goto out;
	memset(ring, 0, rsize);
	struct isc_shm_slot slot;
	memset(&slot, 0, sizeof(slot));
	for (int round = -1; round < CALIB_ROUNDS; round++) { /* round -1 warms up, not counted */
		/*
		 * Each timed loop follows one untimed call: sys.monitoring
		 * (re)instruments a code object on its first run after events
		 * change, a one-off cost that is not the per-event cost.
		 */
		if (!(r = PyObject_CallObject(loop, arg1)))
			goto out;
		Py_DecRef(r);
		uint64_t t0 = now_ns();
		r = PyObject_CallObject(loop, arg);
		uint64_t t1 = now_ns();
		if (!r)
			goto out;
		Py_DecRef(r);

		struct agent_tls saved = tls;
		/* the ring streams on as the recorder drains it */
		atomic_store(&slot.tail, atomic_load(&slot.head));
		tls.slot = &slot;
		tls.ring = ring;
		tls.ring_size = rsize;
		tls.idx = ISC_SHM_MAX_SLOTS;
		tls.gen = atomic_load_explicit(&g.gen, memory_order_relaxed);
		tls.skip_c = 0;
		atomic_store(&g.events[ISC_SHM_MAX_SLOTS], 0);
		hook_install();
		r = PyObject_CallObject(loop, arg1);
		if (r) {
			Py_DecRef(r);
			atomic_store(&slot.tail, atomic_load(&slot.head));
			atomic_store(&g.events[ISC_SHM_MAX_SLOTS], 0);
		}
		uint64_t t2 = now_ns();
		if (r)
			r = PyObject_CallObject(loop, arg);
		uint64_t t3 = now_ns();
		hook_remove();
		tls = saved;
		if (!r)
			goto out;
		Py_DecRef(r);
		events = atomic_load(&g.events[ISC_SHM_MAX_SLOTS]);
		if (atomic_load(&slot.dropped) || events < n)
			goto out; /* the private ring was too small: not a valid timing */
		if (round >= 0 && t1 - t0 < best_plain)
			best_plain = t1 - t0;
		if (round >= 0 && t3 - t2 < best_hooked)
			best_hooked = t3 - t2;
	}
	calib.mech = mon.on ? AGENT_MECH_MONITORING : AGENT_MECH_SETPROFILE;
	calib.calls = n;
	calib.plain_ns = best_plain;
	calib.hooked_ns = best_hooked;
	calib.events = events;
	calib.per_event_ps = best_hooked > best_plain ? (best_hooked - best_plain) * 1000 / events : 0;
	rc = 0;
out:
	free(ring);
	Py_DecRef(arg);
	Py_DecRef(arg1);
	Py_DecRef(glob);
	Py_DecRef(code);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
	return rc;
}

/* ---- exported functions -------------------------------------------- */

static void set_tls_name(struct agent_tls *t, PyObject *name)
{
	PyObject *b = utf8_of(name);
	const char *p;
	size_t n;
	bytes_view(b, &p, &n);
	if (n > AGENT_NAME_MAX) {
		n = AGENT_NAME_MAX;
		while (n > 0 && ((uint8_t)p[n] & 0xC0) == 0x80) /* whole characters */
			n--;
	}
	memcpy(t->name, p, n);
	t->name[n] = 0;
	Py_DecRef(b);
}

/* threading.current_thread().name into the thread's state. */
static void fetch_thread_name(struct agent_tls *t)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *mod = PyImport_ImportModule("threading");
	PyObject *fn = mod ? PyObject_GetAttrString(mod, "current_thread") : NULL;
	PyObject *cur = fn ? PyObject_CallObject(fn, NULL) : NULL;
	PyObject *name = cur ? getattr_str(cur, "name") : NULL;
	if (name)
		set_tls_name(t, name);
	Py_DecRef(name);
	Py_DecRef(cur);
	Py_DecRef(fn);
	Py_DecRef(mod);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
}

static PyObject *agent_enabled(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return PyBool_FromLong(g.enabled && !g.exited);
}

/* start([name]): record the calling thread from now on. */
/*
 * Chooses the hook once: sys.monitoring on CPython 3.12+ (unless
 * INFERSCOPE_PY_HOOK=setprofile), else, or when it cannot be set up, the
 * profile function.  Caller holds the GIL.
 */
static void choose_hook(void)
{
	static int chosen;
	char err[160];
	if (chosen++)
		return;
	const char *want = getenv("INFERSCOPE_PY_HOOK");
	if (!g.py312 || (want && !strcmp(want, "setprofile")))
		return;
	if (mon_setup(err, sizeof(err)) == 0)
		mon.on = 1;
	else
		fprintf(stderr, "inferscope: %s: using the profile hook (PyEval_SetProfile)\n", err);
}

/* mechanism(): "sys.monitoring" or "setprofile", the hook this process uses. */
static PyObject *agent_mechanism(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	choose_hook();
	return PyUnicode_FromString(mon.on ? "sys.monitoring" : "setprofile");
}

static PyObject *agent_start(PyObject *mod, PyObject *args)
{
	PyObject *name = NULL;
	(void)mod;
	if (!PyArg_UnpackTuple(args, "start", 0, 1, &name))
		return NULL;
	if (!g.enabled || g.exited)
		Py_RETURN_FALSE;
	if (name && name != Py_None)
		set_tls_name(&tls, name);
	else
		fetch_thread_name(&tls);
	if (!g.python_sample) { /* sample mode: the recorder reads stacks from outside */
		choose_hook();
		if (!calib.mech)
			(void)calibrate();
		hook_install();
	} else {
		(void)tls_get(); /* claim the thread's slot: THREAD_BEGIN carries its Python name */
	}
	Py_RETURN_TRUE;
}

static int event_code(PyObject *ev)
{
	static const char *const names[] = { "call", "c_call" };
	static const int codes[] = { PyTrace_CALL, PyTrace_C_CALL };
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (PyUnicode_Check(ev) && PyUnicode_CompareWithASCIIString(ev, names[i]) == 0)
			return codes[i];
	return -1;
}

/*
 * thread_hook(frame, event, arg): given to threading.setprofile, so it is
 * the first profile function of every thread threading starts.  Swaps
 * itself for the C profile function and passes the event on (only calls:
 * a return seen first has no matching call).
 */
static PyObject *agent_thread_hook(PyObject *mod, PyObject *args)
{
	PyObject *frame, *event, *arg;
	(void)mod;
	if (!PyArg_UnpackTuple(args, "thread_hook", 3, 3, &frame, &event, &arg)) {
		PyErr_Clear();
		Py_RETURN_NONE;
	}
	if (!g.enabled || g.exited || mon.on) {
		PyEval_SetProfile(NULL, NULL);
		Py_RETURN_NONE;
	}
	fetch_thread_name(&tls);
	PyEval_SetProfile(profile_fn, NULL);
	int what = event_code(event);
	if (what >= 0)
		profile_fn(NULL, (PyFrameObject *)frame, what, arg);
	Py_RETURN_NONE;
}

static PyObject *agent_set_thread_name(PyObject *mod, PyObject *name)
{
	(void)mod;
	struct agent_tls *t = &tls;
	set_tls_name(t, name);
	if (t->slot && t->gen == atomic_load_explicit(&g.gen, memory_order_relaxed))
		slot_set_name(t->slot, t->name);
	Py_RETURN_NONE;
}

static PyObject *agent_scope_begin(PyObject *mod, PyObject *name)
{
	(void)mod;
	struct agent_tls *t = tls_get();
	if (t) {
		uint32_t id = intern_name(g.scope_ids, ISC_STR_SCOPE, name);
		emit(t, ISC_REC_SCOPE_BEGIN, 1, id, 0, NULL, 0);
	}
	Py_RETURN_NONE;
}

static PyObject *agent_scope_end(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	struct agent_tls *t = tls_get();
	if (t)
		emit(t, ISC_REC_SCOPE_END, 0, 0, 0, NULL, 0);
	Py_RETURN_NONE;
}

/* A MARK record of (name, v) on t's ring. */
static void emit_mark(struct agent_tls *t, PyObject *name, long long v)
{
	uint32_t id = intern_name(g.mark_ids, ISC_STR_MARK, name);
	emit(t, ISC_REC_MARK, 2, id, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63), NULL, 0);
}

/* Appends a counted copy of at most max bytes of s (its last max bytes when tail) to buf. */
static unsigned put_counted(uint8_t *buf, const char *s, size_t len, size_t max, int tail)
{
	const char *from = s;
	if (len > max) {
		if (tail)
			from = s + len - max;
		len = max;
	}
	buf[0] = (uint8_t)len; /* < 128: one varint byte */
	memcpy(buf + 1, from, len);
	return 1 + (unsigned)len;
}

/* The kB value of the "key:" line of smaps_rollup text s, in bytes; 0 when absent. */
static uint64_t smaps_field(const char *s, const char *key)
{
	size_t k = strlen(key);
	for (const char *l = s; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (!strncmp(l, key, k))
			return strtoull(l + k, NULL, 10) * 1024;
	return 0;
}

/*
 * An SMAPS record of this process (formats/trace.md §6.1), read from
 * /proc/self/smaps_rollup: what it holds as an out-of-memory exception
 * ends it.  The recorder's sampler reads at most every 50 ms, often only
 * after the interpreter freed everything on its way out.  A few ms, once.
 */
static void emit_smaps(struct agent_tls *t)
{
	char buf[4096];
	uint8_t body[5 * 10];
	int fd = open("/proc/self/smaps_rollup", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	const uint64_t f[5] = { (uint64_t)getpid(), smaps_field(buf, "Rss:"), smaps_field(buf, "Pss:"),
				smaps_field(buf, "Swap:"), smaps_field(buf, "Anonymous:") };
	if (!f[1])
		return;
	unsigned m = 0;
	for (int i = 0; i < 5; i++)
		m += isc_put_varint(body + m, f[i]);
	emit(t, ISC_REC_SMAPS, 0, 0, 0, (const char *)body, m);
}

/*
 * exception(type, file, line, function, message): the unhandled exception
 * that is ending this thread (or the program), from the excepthooks that
 * sitecustomize.py chains.  One EXCEPTION record, cut to fit a ring record:
 * type 40 bytes, the last 32 of file, function 24, the message the rest;
 * for an out-of-memory one (type ending in MemoryError, or "CUDA out of
 * memory" in the message) an SMAPS record first.
 */
static PyObject *agent_exception(PyObject *mod, PyObject *args)
{
	const char *type, *file, *func, *msg;
	Py_ssize_t ltype, lfile, lfunc, lmsg;
	long line;
	uint8_t body[AGENT_REC_MAX];
	(void)mod;
	if (!PyArg_ParseTuple(args, "s#s#ls#s#:exception", &type, &ltype, &file, &lfile, &line, &func, &lfunc,
			      &msg, &lmsg))
		return NULL;
	struct agent_tls *t = tls_get();
	if (!t)
		Py_RETURN_NONE;
	/* an out-of-memory death: what the process holds now, before the exception's record */
	if ((ltype >= 11 && !memcmp(type + ltype - 11, "MemoryError", 11)) ||
	    memmem(msg, (size_t)lmsg, "CUDA out of memory", 18))
		emit_smaps(t);
	/* 10 bytes of delta, 3 of line, 3 lengths: the strings share the rest */
	unsigned n = put_counted(body, type, (size_t)ltype, 40, 0);
	n += put_counted(body + n, file, (size_t)lfile, 32, 1);
	n += put_counted(body + n, func, (size_t)lfunc, 24, 0);
	size_t room = AGENT_REC_MAX - 1 - 10 - 3 - n;
	size_t m = (size_t)lmsg < room ? (size_t)lmsg : room;
	memcpy(body + n, msg, m);
	n += (unsigned)m;
	emit(t, ISC_REC_EXCEPTION, 1, line < 0 ? 0 : line > 2000000 ? 2000000 : (uint64_t)line, 0, (const char *)body, n);
	Py_RETURN_NONE;
}

/* mark(name, n=1): a point event with an integer value. */
static PyObject *agent_mark(PyObject *mod, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", "n", NULL };
	PyObject *name, *n = NULL;
	long long v = 1;
	(void)mod;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:mark", kwlist, &name, &n))
		return NULL;
	struct agent_tls *t = tls_get();
	if (!t)
		Py_RETURN_NONE;
	if (n) {
		int overflow = 0;
		PyObject *as_int = PyNumber_Long(n);
		v = as_int ? PyLong_AsLongLongAndOverflow(as_int, &overflow) : 0;
		if (overflow)
			v = overflow > 0 ? LLONG_MAX : LLONG_MIN;
		Py_DecRef(as_int);
		PyErr_Clear();
	}
	emit_mark(t, name, v);
	Py_RETURN_NONE;
}

/*
 * When the workload imported torch (sys.modules only: never imported
 * here), marks torch.num_threads and torch.num_interop_threads with what
 * torch reports, so the analysis can set intra-op x inter-op threads
 * against the cores; when torch initialized CUDA, also
 * torch.cuda.max_memory_allocated and max_memory_reserved (the current
 * device's high-water marks: gpu_memory_fragmentation); then the versions
 * (mark_versions).  A torch that is half-imported, stubbed or raising
 * just leaves its mark out; the caller's exception state is kept.
 */
/*
 * torch.version (major * 10000 + minor * 100 + patch of torch.__version__,
 * "1.13.1+cpu" -> 11301) and python.hexversion (sys.hexversion), so that a
 * comparison can say the versions differ; both left out when torch has no
 * such version string (a stub).  Errors are cleared by the caller.
 */
static void mark_versions(struct agent_tls *t, PyObject *torch)
{
	PyObject *v = torch ? PyObject_GetAttrString(torch, "__version__") : NULL;
	PyObject *b = v && PyUnicode_Check(v) ? PyUnicode_AsUTF8String(v) : NULL; /* limited API */
	const char *s = b ? PyBytes_AsString(b) : NULL;
	long part[3] = { 0, 0, 0 };
	int n = 0;
	for (const char *p = s; p && n < 3 && *p >= '0' && *p <= '9'; n++) {
		char *end;
		part[n] = strtol(p, &end, 10);
		p = *end == '.' ? end + 1 : NULL;
	}
	PyObject *hex = n ? PySys_GetObject("hexversion") : NULL; /* borrowed */
	if (n && part[1] < 100 && part[2] < 100 && hex && PyLong_Check(hex)) {
		PyObject *tn = PyUnicode_FromString("torch.version"), *pn = PyUnicode_FromString("python.hexversion");
		if (tn && pn) {
			emit_mark(t, tn, part[0] * 10000 + part[1] * 100 + part[2]);
			emit_mark(t, pn, PyLong_AsLongLong(hex));
		}
		Py_DecRef(tn);
		Py_DecRef(pn);
	}
	Py_DecRef(b);
	Py_DecRef(v);
}

static void mark_torch_threads(struct agent_tls *t)
{
	static const char *const calls[][2] = {
		{ "get_num_threads", "torch.num_threads" },
		{ "get_num_interop_threads", "torch.num_interop_threads" },
	};
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *mods = PyImport_GetModuleDict();
	PyObject *torch = mods && PyDict_Check(mods) ? PyDict_GetItemString(mods, "torch") : NULL;
	Py_IncRef(torch); /* the calls below may change sys.modules */
	for (size_t i = 0; torch && i < sizeof(calls) / sizeof(calls[0]); i++) {
		PyObject *r = PyObject_CallMethod(torch, calls[i][0], NULL);
		long long v = r && PyLong_Check(r) ? PyLong_AsLongLong(r) : -1;
		PyObject *name = r && PyLong_Check(r) && !PyErr_Occurred() ? PyUnicode_FromString(calls[i][1]) : NULL;
		if (name)
			emit_mark(t, name, v);
		Py_DecRef(name);
		Py_DecRef(r);
		PyErr_Clear();
	}
	/* the caching allocator's high-water marks, when torch initialized CUDA
	 * (never initialized here: is_initialized() first) */
	PyObject *cuda = torch ? PyObject_GetAttrString(torch, "cuda") : NULL;
	PyObject *init = cuda ? PyObject_CallMethod(cuda, "is_initialized", NULL) : NULL;
	static const char *const mem[][2] = {
		{ "max_memory_allocated", "torch.cuda.max_memory_allocated" },
		{ "max_memory_reserved", "torch.cuda.max_memory_reserved" },
	};
	for (size_t i = 0; init == Py_True && i < sizeof(mem) / sizeof(mem[0]); i++) {
		PyObject *r = PyObject_CallMethod(cuda, mem[i][0], NULL);
		long long v = r && PyLong_Check(r) ? PyLong_AsLongLong(r) : -1;
		PyObject *name = v >= 0 && !PyErr_Occurred() ? PyUnicode_FromString(mem[i][1]) : NULL;
		if (name)
			emit_mark(t, name, v);
		Py_DecRef(name);
		Py_DecRef(r);
		PyErr_Clear();
	}
	Py_DecRef(init);
	Py_DecRef(cuda);
	PyErr_Clear();
	mark_versions(t, torch);
	Py_DecRef(torch);
	PyErr_Restore(et, ev, tb);
}

/* calibration(): the measured cost of recording, as in the CALIBRATION record. */
static PyObject *agent_calibration(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return Py_BuildValue("{s:s,s:K,s:K,s:K,s:K,s:K}", "mechanism",
			     calib.mech == AGENT_MECH_MONITORING ? "sys.monitoring" :
			     calib.mech == AGENT_MECH_SETPROFILE ? "setprofile" : "none",
			     "per_event_ps", (unsigned long long)calib.per_event_ps, "calls",
			     (unsigned long long)calib.calls, "plain_ns", (unsigned long long)calib.plain_ns,
			     "hooked_ns", (unsigned long long)calib.hooked_ns, "events",
			     (unsigned long long)calib.events);
}

static PyObject *agent_stats(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	uint64_t events = 0, dropped = 0, slots = 0, str_dropped = 0, slot_dropped = 0, strings = 0;
	if (g.base) {
		slots = atomic_load(&g.proc->nslots_used);
		for (uint32_t i = 0; i < slots && i < g.nslots; i++) {
			events += atomic_load_explicit(&g.events[i], memory_order_relaxed);
			dropped += atomic_load_explicit(&isc_shm_slot_at(g.base, i)->dropped,
							memory_order_relaxed);
		}
		str_dropped = atomic_load(&g.proc->str_dropped);
		slot_dropped = atomic_load(&g.proc->slot_dropped);
		strings = g.next_id - 1;
	}
	return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:i}", "events", (unsigned long long)events,
			     "dropped", (unsigned long long)dropped, "slot_dropped",
			     (unsigned long long)slot_dropped, "str_dropped",
			     (unsigned long long)str_dropped, "slots", (unsigned long long)slots,
			     "strings", (unsigned long long)strings, "pid", (int)getpid());
}

/* At exit: our file goes when the recorder is gone (isc_shm.h). */
static void remove_if_orphaned(void)
{
	char name[32];
	snprintf(name, sizeof(name), "%d.shm", (int)g.pid);
	isc_shm_remove_if_orphaned(g.session, name);
}

/* Marks the process finished (Python atexit, runs late in finalization):
 * ends the calling thread's slot and stops recording it. */
static void process_exit(void)
{
	if (!g.base || g.exited || g.pid != getpid())
		return;
	g.exited = 1;
	thread_end(&tls);
	atomic_store_explicit(&g.proc->state, ISC_PROC_EXITED, memory_order_release);
	remove_if_orphaned();
}

/*
 * Whether the exit calibration may turn the hook on and off: always with
 * the profile function (it hooks the calling thread only); with
 * sys.monitoring, whose events are global, only when t's thread is the
 * process's only recording one, as another thread still running Python
 * would record its calls only while they are on.  A slot whose thread is
 * gone (joined: its key destructor, which ends the slot, may not have run
 * yet) does not count.
 */
static int exit_calibration_safe(const struct agent_tls *t)
{
	if (!mon.on)
		return 1;
	uint32_t n = atomic_load_explicit(&g.proc->nslots_used, memory_order_acquire);
	for (uint32_t i = 0; i < n && i < g.nslots; i++) {
		struct isc_shm_slot *s = isc_shm_slot_at(g.base, i);
		if (s == t->slot || atomic_load_explicit(&s->state, memory_order_acquire) != ISC_SLOT_ACTIVE)
			continue;
		pid_t tid = (pid_t)atomic_load_explicit(&s->tid, memory_order_relaxed);
		if (syscall(SYS_tgkill, (long)g.pid, (long)tid, 0L) == 0 || errno != ESRCH)
			return 0;
	}
	return 1;
}

static PyObject *agent_exit_hook(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	if (g.base && !g.exited && g.pid == getpid()) {
		hook_remove(); /* torch's calls below stay out of the trace */
		struct agent_tls *t = tls_get();
		if (t)
			mark_torch_threads(t);
		/* again, now warm: the analyzer keeps the process's lowest cost */
		if (t && calib.mech && exit_calibration_safe(t) && calibrate() == 0)
			emit_calibration(t);
		process_exit();
	}
	Py_RETURN_NONE;
}

/* fork_attach(): after os.fork in the child, in sample mode: publish our
 * file now, so the recorder samples a child that may never emit an event. */
static PyObject *agent_fork_attach(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	if (g.enabled && g.need_attach)
		attach_child();
	Py_RETURN_NONE;
}

/* Fallback when Python's atexit did not run (fatal error paths). */
__attribute__((destructor)) static void agent_fini(void)
{
	process_exit();
}

#define FN(f) ((PyCFunction)(void (*)(void))(f))
static PyMethodDef agent_methods[] = {
	{ "enabled", agent_enabled, METH_NOARGS, "True when this process is being recorded." },
	{ "start", agent_start, METH_VARARGS, "start([name]): record the calling thread." },
	{ "thread_hook", agent_thread_hook, METH_VARARGS,
	  "Profile function for threading.setprofile: installs the C profiler in new threads." },
	{ "set_thread_name", agent_set_thread_name, METH_O, "Name the calling thread in the trace." },
	{ "scope_begin", agent_scope_begin, METH_O, "scope_begin(name): open a scope." },
	{ "scope_end", agent_scope_end, METH_NOARGS, "scope_end(): close the innermost scope." },
	{ "mark", FN(agent_mark), METH_VARARGS | METH_KEYWORDS, "mark(name, n=1): a point event." },
	{ "exception", agent_exception, METH_VARARGS,
	  "exception(type, file, line, function, message): record the unhandled exception ending this thread." },
	{ "stats", agent_stats, METH_NOARGS, "Counters of this process's recording." },
	{ "calibration", agent_calibration, METH_NOARGS, "The measured cost of recording one event." },
	{ "mechanism", agent_mechanism, METH_NOARGS, "The hook: 'sys.monitoring' (3.12+) or 'setprofile'." },
	{ "exit_hook", agent_exit_hook, METH_NOARGS,
	  "atexit handler: torch's thread counts as marks (when torch was imported), the exit calibration (exact "
	  "mode), then mark the process finished." },
	{ "fork_attach", agent_fork_attach, METH_NOARGS,
	  "os.register_at_fork child hook in sample mode: publish the shared-memory file at once." },
	{ NULL, NULL, 0, NULL },
};
static const size_t n_agent_methods = sizeof(agent_methods) / sizeof(agent_methods[0]) - 1;

/* ---- Scope: `with scope(name):` without a Python frame -------------- */

typedef struct {
	PyObject_HEAD
	PyObject *name; /* str */
	uint32_t id;    /* interned in generation gen of this process */
	uint32_t gen;
} ScopeObject;

static PyObject *scope_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "name", NULL };
	PyObject *name;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "O:scope", kwlist, &name))
		return NULL;
	allocfunc alloc = (allocfunc)PyType_GetSlot(tp, Py_tp_alloc);
	ScopeObject *s = (ScopeObject *)alloc(tp, 0);
	if (!s)
		return NULL;
	s->name = PyUnicode_Check(name) ? (Py_IncRef(name), name) : PyObject_Str(name);
	if (!s->name) {
		Py_DecRef((PyObject *)s);
		return NULL;
	}
	return (PyObject *)s;
}

static void scope_dealloc(PyObject *self)
{
	PyTypeObject *tp = Py_TYPE(self);
	Py_DecRef(((ScopeObject *)self)->name);
	freefunc tp_free = (freefunc)PyType_GetSlot(tp, Py_tp_free);
	tp_free(self);
	Py_DecRef((PyObject *)tp);
}

static PyObject *scope_enter(PyObject *self, PyObject *unused)
{
	ScopeObject *s = (ScopeObject *)self;
	(void)unused;
	struct agent_tls *t = tls_get();
	if (t) {
		uint32_t gen = atomic_load_explicit(&g.gen, memory_order_relaxed);
		if (s->gen != gen || !s->id) {
			s->id = intern_name(g.scope_ids, ISC_STR_SCOPE, s->name);
			s->gen = gen;
		}
		emit(t, ISC_REC_SCOPE_BEGIN, 1, s->id, 0, NULL, 0);
	}
	Py_IncRef(self);
	return self;
}

static PyObject *scope_exit(PyObject *self, PyObject *args)
{
	(void)self;
	(void)args;
	struct agent_tls *t = tls_get();
	if (t)
		emit(t, ISC_REC_SCOPE_END, 0, 0, 0, NULL, 0);
	Py_RETURN_FALSE;
}

static PyMethodDef scope_methods[] = {
	{ "__enter__", scope_enter, METH_NOARGS, NULL },
	{ "__exit__", scope_exit, METH_VARARGS, NULL },
	{ NULL, NULL, 0, NULL },
};
static const size_t n_scope_methods = sizeof(scope_methods) / sizeof(scope_methods[0]) - 1;

/* Our own functions are not recorded as C calls (mark, Scope.__exit__). */
static int own_method(const PyMethodDef *ml)
{
	return (ml >= agent_methods && ml < agent_methods + n_agent_methods) ||
	       (ml >= scope_methods && ml < scope_methods + n_scope_methods);
}

static PyMemberDef scope_members[] = {
	{ "name", T_OBJECT_EX, offsetof(ScopeObject, name), READONLY, NULL },
	{ NULL, 0, 0, 0, NULL },
};

static PyType_Slot scope_slots[] = {
	{ Py_tp_new, (void *)scope_new },
	{ Py_tp_dealloc, (void *)scope_dealloc },
	{ Py_tp_methods, scope_methods },
	{ Py_tp_members, scope_members },
	{ Py_tp_doc, (void *)"Scope(name): context manager recording a named range." },
	{ 0, NULL },
};

static PyType_Spec scope_spec = {
	.name = "_agent.Scope",
	.basicsize = sizeof(ScopeObject),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
	.slots = scope_slots,
};

/* ---- module init --------------------------------------------------- */

/* Attaches when INFERSCOPE_SESSION names a directory and INFERSCOPE_ENABLE
 * is not "0"; any failure leaves the module importable and disabled. */
static void agent_attach(void)
{
	const char *session = getenv("INFERSCOPE_SESSION");
	const char *enable = getenv("INFERSCOPE_ENABLE");
	char err[PATH_MAX + 128];
	struct stat st;

	if (!session || !*session || (enable && strcmp(enable, "0") == 0))
		return;
	if (strlen(session) >= sizeof(g.session)) {
		report_attach_failure("INFERSCOPE_SESSION is too long");
		return;
	}
	if (lstat(session, &st) < 0 || !S_ISDIR(st.st_mode)) {
		snprintf(err, sizeof(err), "%s: not a directory", session);
		report_attach_failure(err);
		return;
	}
	/* our file goes in there: only into a directory nobody else can write */
	if (st.st_uid != geteuid() || (st.st_mode & 077)) {
		snprintf(err, sizeof(err), "%s: not a private directory (owner %u, mode %04o; want ours, 0700)",
			 session, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		report_attach_failure(err);
		return;
	}
	strcpy(g.session, session);
	const char *mode = getenv("INFERSCOPE_PYTHON_MODE");
	g.python_sample = mode && !strcmp(mode, "sample");
	layout_init();
	if (pthread_key_create(&g.key, key_destructor) != 0 ||
	    pthread_atfork(NULL, NULL, atfork_child) != 0) {
		report_attach_failure("cannot register thread and fork handlers");
		return;
	}
	if (shm_create(getppid(), err, sizeof(err)) < 0) {
		report_attach_failure(err);
		return;
	}
	g.next_id = 1;
	g.enabled = 1;
	atomic_store_explicit(&g.gen, 1, memory_order_relaxed);
}

static struct PyModuleDef agent_module = {
	PyModuleDef_HEAD_INIT,
	.m_name = "_agent",
	.m_doc = "InferScope CPU collector (see tools/iscope-record/python/_agent.c).",
	.m_size = -1,
	.m_methods = agent_methods,
};

PyMODINIT_FUNC PyInit__agent(void)
{
	PyObject *m = PyModule_Create(&agent_module);
	if (!m)
		return NULL;
	PyObject *scope_type = PyType_FromSpec(&scope_spec);
	if (!scope_type || PyModule_AddObject(m, "Scope", scope_type) < 0) {
		Py_DecRef(scope_type);
		Py_DecRef(m);
		return NULL;
	}
	g.scope_ids = PyDict_New();
	g.mark_ids = PyDict_New();
	if (!g.scope_ids || !g.mark_ids) {
		Py_DecRef(m);
		return NULL;
	}
	int major = 0, minor = 0;
	sscanf(Py_GetVersion(), "%d.%d", &major, &minor);
	g.has_qualname = major > 3 || (major == 3 && minor >= 11);
	g.py312 = major > 3 || (major == 3 && minor >= 12);
	if (!g.enabled && !g.need_attach)
		agent_attach();
	isc_agent_alloc_start();
	return m;
}
