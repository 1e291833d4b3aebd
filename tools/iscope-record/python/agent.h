/*
 * agent.h - what the files of the Python agent (_agent.abi3.so) share;
 * nothing here is seen outside the module, which exports PyInit__agent
 * alone.
 *
 *   _agent.c            the hot path: the profile function and the
 *                       sys.monitoring callbacks, one record per call
 *   agent_shm.c         the process's <pid>.shm file, thread slots, fork
 *   agent_intern.c      ids for code objects, callables, scope and mark
 *                       names: the table and the STRING_DEF area
 *   agent_hook_setup.c  which hook, turning it on and off, calibration
 *   agent_exit.c        what a dying thread or process records
 *   agent_module.c      the Python module: functions, Scope, PyInit__agent
 *
 * What runs per event is here as static inline (tls_get, emit, tab_find),
 * so that _agent.c's callbacks compile as one unit with all they run per
 * event; only a miss (a thread's first event, a key not interned yet)
 * calls into another file.
 *
 * Concurrency: every caller of the profile function and of the exported
 * functions holds the GIL, and nothing here releases it between reading
 * and updating the intern table, so table lookups take no lock.
 * agent.lock serialises writers of the string area and the table (never
 * held while calling Python code, which could release the GIL).  Each ring
 * has one producer: the thread that claimed the slot.
 */
#ifndef ISC_AGENT_H
#define ISC_AGENT_H

#define PY_SSIZE_T_CLEAN /* s# takes Py_ssize_t lengths */
#include <Python.h>

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "isc_format.h" /* isc_put_varint, ISC_REC_* */
#include "isc_shm.h"    /* struct isc_shm_proc, struct isc_shm_slot, isc_ring_push */

/*
 * Every name below stays inside the module, and the compiler knows it where
 * the name is used, not only where it is defined (-fvisibility=hidden): the
 * hot path reaches agent and agent_thread directly, as statics, not through
 * the GOT and a general-dynamic TLS call.
 */
#pragma GCC visibility push(hidden)

/*
 * PyEval_SetProfile, Py_tracefunc and PyTrace_* are outside the limited API
 * but have had the same ABI since 2.x, so we declare them ourselves.
 */
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

#define AGENT_NAME_MAX 64   /* thread name bytes kept in THREAD_BEGIN */
#define AGENT_IGNORE UINT32_MAX /* intern result: our own function, not recorded */
#define AGENT_REC_MAX 128   /* a body stays < 128 bytes: size is one byte */
_Static_assert(10 + AGENT_NAME_MAX < AGENT_REC_MAX && 7 * 10 < AGENT_REC_MAX, "record body too big");

/* ---- the process's state (agent_shm.c) ------------------------------------ */
/* A thread's recording state. */
struct agent_tls {
	struct isc_shm_slot *slot; /* NULL: this thread does not record */
	uint8_t *ring;
	uint32_t gen;      /* agent.gen at claim time; a mismatch means re-claim */
	uint32_t ring_size; /* bytes of this slot's ring (power of two) */
	uint32_t idx;
	uint32_t skip_c;   /* C_RETURNs still to swallow for ignored C_CALLs */
	uint8_t lost;      /* no slot was free: count events in slot_dropped */
	uint8_t unnamed;   /* sys.monitoring: waiting for threading to name the thread */
	uint32_t unnamed_events;
	char name[AGENT_NAME_MAX + 1];
};

/* The calling thread's recording state. */
extern __thread struct agent_tls agent_thread;

/* An entry of the intern table (agent_intern.c). */
struct agent_ient {
	uintptr_t k1, k2; /* k1 == 0: empty */
	uint32_t id;
};

/* The process's recording state. */
struct agent_state {
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
	struct agent_ient *tab; /* owned; entries hold a reference (agent_intern.c: intern_define) */
	uint32_t tab_mask, tab_count;
	PyObject *scope_ids, *mark_ids; /* str -> int, this process's ids */
	/* the module's own method tables [begin, end), set at init: not
	 * recorded as C calls (mark, Scope.__exit__) */
	const PyMethodDef *own[2][2];
	_Atomic uint64_t events[ISC_SHM_MAX_SLOTS + 1]; /* committed records per slot; the last: calibration */
};
extern struct agent_state agent;

/*
 * At import: attaches when INFERSCOPE_SESSION names a directory and
 * INFERSCOPE_ENABLE is not "0"; any failure leaves the module importable
 * and disabled.
 */
void agent_shm_attach(void);
/* First event in a fork child (or fork_attach()): create <pid>.shm.  Caller holds the GIL. */
void agent_shm_attach_child(void);
/* Marks the process finished: ends the calling thread's slot and stops recording it. */
void agent_shm_exit(void);
/* tls_get's slow path: (re)claims a slot; NULL when the thread does not record. */
struct agent_tls *agent_tls_slow(struct agent_tls *t);
/* name (a str) as the thread's name in t, cut at a character boundary. */
void agent_tls_set_name(struct agent_tls *t, PyObject *name);
/* Names slot s (whole UTF-8 characters that fit). */
void agent_slot_set_name(struct isc_shm_slot *s, const char *name);

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint32_t pow2_ceil(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

/* The calling thread's recording state, or NULL when it does not record. */
static inline struct agent_tls *tls_get(void)
{
	struct agent_tls *t = &agent_thread;
	if (__builtin_expect(t->gen != atomic_load_explicit(&agent.gen, memory_order_relaxed) || !t->slot, 0))
		return agent_tls_slow(t);
	return t;
}

/* ---- recording into the ring ------------------------------------------------ */

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
		atomic_store_explicit(&agent.events[t->idx],
				      atomic_load_explicit(&agent.events[t->idx], memory_order_relaxed) + 1,
				      memory_order_relaxed);
	}
}

/* ---- interning (agent_intern.c) --------------------------------------------- */
static inline uint32_t tab_hash(uintptr_t k1, uintptr_t k2)
{
	uint64_t h = ((uint64_t)k1 ^ ((uint64_t)k2 * 0x9E3779B97F4A7C15ull)) * 0xFF51AFD7ED558CCDull;
	return (uint32_t)(h >> 32);
}

/* The entry of key (k1, k2), or NULL.  Caller holds the GIL (no lock: see above). */
static inline struct agent_ient *tab_find(uintptr_t k1, uintptr_t k2)
{
	if (!agent.tab)
		return NULL;
	for (uint32_t i = tab_hash(k1, k2) & agent.tab_mask;; i = (i + 1) & agent.tab_mask) {
		struct agent_ient *e = &agent.tab[i];
		if (e->k1 == k1 && e->k2 == k2)
			return e;
		if (!e->k1)
			return NULL;
	}
}

/*
 * The slow paths of _agent.c's lookups, for a key not in the table yet:
 * name the object, define its string, insert it.  The id, or AGENT_IGNORE
 * for our own functions (agent.own), 0 when the string area is full.
 */
uint32_t agent_intern_code_slow(PyObject *code);
uint32_t agent_intern_callable_slow(PyObject *f, uintptr_t k1, uintptr_t k2, PyObject *ref);
uint32_t agent_intern_descr_slow(PyMethodDef *ml, PyTypeObject *tp);
/* Id of a scope or mark name (dict: agent.scope_ids or mark_ids), by content; 0 when it could not be defined. */
uint32_t agent_intern_name(PyObject *dict, uint8_t kind, PyObject *name);
/*
 * Defines a string (not interned: each call a new id) of kind with name,
 * file and line, in the string area; 0 when the area or the ids are full.
 * For records whose text is rare and may be long (an exception's).
 */
uint32_t agent_define_text(uint8_t kind, const char *name, size_t nlen, const char *file, size_t flen, uint64_t line);
/* Forgets everything interned by the parent (fork child). */
void agent_intern_reset(void);
/* o.attr when it is a str (new reference), else NULL with no error set. */
PyObject *agent_getattr_str(PyObject *o, const char *attr);
/* UTF-8 bytes of a str (errors escaped), NULL on failure with no error set. */
PyObject *agent_utf8_of(PyObject *s);
/* The bytes of b (may be NULL: ""), cut to AGENT_STR_MAX at a character boundary. */
void agent_bytes_view(PyObject *b, const char **p, size_t *n);

/* ---- the hook and its cost (agent_hook_setup.c) ------------------------------ */
/* sys.monitoring, when it is the hook. */
struct agent_monitoring {
	int on;                 /* recording through sys.monitoring */
	int tool;               /* our tool id */
	PyObject *mod;          /* sys.monitoring */
	PyObject *missing;      /* sys.monitoring.MISSING */
	PyTypeObject *descr;    /* type(list.append): method_descriptor */
	long mask;              /* the events we use */
};
extern struct agent_monitoring agent_mon;
/* threading._active (sys.monitoring mode), owned; NULL when unknown. */
extern PyObject *agent_threading_active;

#define AGENT_MECH_SETPROFILE 1 /* CALIBRATION mechanism: PyEval_SetProfile */
#define AGENT_MECH_MONITORING 2 /* sys.monitoring (PEP 669) */
/* The measured cost of recording (the CALIBRATION record); mech 0: not measured. */
struct agent_calibration {
	uint64_t mech, per_event_ps, calls, plain_ns, hooked_ns, events;
};
extern struct agent_calibration agent_calib;

/*
 * Chooses the hook once: sys.monitoring on CPython 3.12+ (unless
 * INFERSCOPE_PY_HOOK=setprofile), else, or when it cannot be set up, the
 * profile function.  Caller holds the GIL.
 */
void agent_hook_choose(void);
/* The hook on: sys.monitoring's events (every thread), else the calling
 * thread's profile function.  Caller holds the GIL. */
void agent_hook_install(void);
void agent_hook_remove(void);
/* Measures agent_calib; 0, or -1 with it unchanged.  See agent_hook_setup.c. */
int agent_calibrate(void);
/* The CALIBRATION record of agent_calib on t's ring; nothing when not measured. */
void agent_calib_emit(struct agent_tls *t);

/* ---- the hot path (_agent.c) ------------------------------------------------- */
/* The C profile function (PyEval_SetProfile). */
int agent_profile_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);
/* The sys.monitoring callbacks, and the event each is registered for (an index into agent_mon_defs). */
extern PyMethodDef agent_mon_defs[];
struct agent_mon_event {
	const char *event;
	int fn;
};
extern const struct agent_mon_event agent_mon_events[];
extern const size_t agent_n_mon_events;

/* ---- the module (agent_module.c, agent_exit.c) ------------------------------- */
/* A MARK record of (name, v) on t's ring. */
void agent_emit_mark(struct agent_tls *t, PyObject *name, long long v);
/* exception(type, file, line, function, message) and exit_hook(): see agent_exit.c. */
PyObject *agent_exception(PyObject *mod, PyObject *args);
PyObject *agent_exit_hook(PyObject *mod, PyObject *unused);

#pragma GCC visibility pop

#endif
