/*
 * _agent.c - InferScope's CPU collector, loaded into the traced Python
 * process by sitecustomize.py: its hot path, the callbacks that write
 * one record per call into the calling thread's ring, then the choice of
 * the hook, its calibration and the Python API.  The shared-memory file
 * and interning are in the files agent.h lists.
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
 * cost per event at start (agent_calibrate(), the CALIBRATION record) and
 * iscope-analyze removes it.  No event is ever disabled (returning
 * sys.monitoring.DISABLE): a call site disabled for a Python callee would
 * hide C calls made later from the same site, and counts would no longer
 * be exact.
 *
 * Everything that runs per event is in this file or inline in agent.h
 * (tls_get, emit, tab_find), so that it compiles as one unit; only a miss
 * (a thread's first event, a key not interned yet) calls out.
 *
 * Nothing in the agent may raise into the workload or stop it: every
 * failure clears the Python error and degrades to "not recorded".
 */
#include "agent.h"

#include <structmember.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Id of a code object (PY_CALL). */
static inline uint32_t intern_code(PyObject *code)
{
	struct agent_ient *e = tab_find((uintptr_t)code, 0);
	return e ? e->id : agent_intern_code_slow(code);
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
	return e ? e->id : agent_intern_callable_slow(f, k1, k2, ref);
}

/* ---- the profile function ------------------------------------------ */

int agent_profile_fn(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
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

/* Id of a CALL/C_RETURN callable, AGENT_IGNORE when it is not a C call we record. */
static inline uint32_t mon_c_id(PyObject *f, PyObject *arg0)
{
	if (PyCFunction_Check(f))
		return intern_callable(f);
	if (Py_TYPE(f) != agent_mon.descr)
		return AGENT_IGNORE;
	struct agent_descr *d = (struct agent_descr *)f;
	PyTypeObject *tp = d->d_type;
	if (arg0 != agent_mon.missing && PyObject_TypeCheck(arg0, d->d_type))
		tp = Py_TYPE(arg0);
	struct agent_ient *e = tab_find((uintptr_t)d->d_method, (uintptr_t)tp | 1);
	return e ? e->id : agent_intern_descr_slow(d->d_method, tp);
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
PyMethodDef agent_mon_defs[] = {
	{ "py_start", MONFN(mon_call_start), METH_FASTCALL, NULL },
	{ "py_return", MONFN(mon_call_return), METH_FASTCALL, NULL },
	{ "call", MONFN(mon_ccall), METH_FASTCALL, NULL },
	{ "c_return", MONFN(mon_creturn), METH_FASTCALL, NULL },
};
/* event name -> index in agent_mon_defs */
const struct agent_mon_event agent_mon_events[] = {
	{ "PY_START", 0 }, { "PY_RESUME", 0 }, { "PY_THROW", 0 },
	{ "PY_RETURN", 1 }, { "PY_YIELD", 1 }, { "PY_UNWIND", 1 },
	{ "CALL", 2 }, { "C_RETURN", 3 }, { "C_RAISE", 3 },
};
const size_t agent_n_mon_events = sizeof(agent_mon_events) / sizeof(agent_mon_events[0]);

/* ---- the hook: which, on and off, its cost -------------------------- */

struct agent_monitoring agent_mon = { .tool = -1 };
PyObject *agent_threading_active;

/* ---- sys.monitoring ------------------------------------------------ */

static int mon_set_events(long mask)
{
	PyObject *r = PyObject_CallMethod(agent_mon.mod, "set_events", "il", agent_mon.tool, mask);
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
	agent_mon.mod = mod;
	agent_mon.descr = Py_TYPE(appd);
	Py_IncRef((PyObject *)agent_mon.descr);
	agent_mon.missing = PyObject_GetAttrString(mod, "MISSING");
	events = PyObject_GetAttrString(mod, "events");
	PyObject *threading = PyImport_ImportModule("threading");
	agent_threading_active = threading ? PyObject_GetAttrString(threading, "_active") : NULL;
	Py_DecRef(threading);
	if (agent_threading_active && !PyDict_Check(agent_threading_active)) {
		Py_DecRef(agent_threading_active);
		agent_threading_active = NULL;
	}
	PyErr_Clear();
	if (!agent_mon.missing || !events)
		goto out;
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) && agent_mon.tool < 0; i++) {
		r = PyObject_CallMethod(mod, "use_tool_id", "is", ids[i], "inferscope");
		if (r)
			agent_mon.tool = ids[i];
		Py_DecRef(r);
		PyErr_Clear();
	}
	if (agent_mon.tool < 0) {
		snprintf(err, errlen, "every sys.monitoring profiler tool id is taken");
		goto out;
	}
	agent_mon.mask = 0;
	for (size_t i = 0; i < agent_n_mon_events; i++) {
		PyObject *bit = PyObject_GetAttrString(events, agent_mon_events[i].event);
		long b = bit ? PyLong_AsLong(bit) : -1;
		Py_DecRef(bit);
		PyObject *fn = b > 0 ? PyCFunction_NewEx(&agent_mon_defs[agent_mon_events[i].fn], NULL, NULL) : NULL;
		r = fn ? PyObject_CallMethod(mod, "register_callback", "ilO", agent_mon.tool, b, fn) : NULL;
		Py_DecRef(fn);
		if (!r) {
			snprintf(err, errlen, "cannot register the sys.monitoring callback of %s", agent_mon_events[i].event);
			goto out;
		}
		Py_DecRef(r);
		agent_mon.mask |= b;
	}
	rc = 0;
out:
	if (rc && agent_mon.tool >= 0) {
		Py_DecRef(PyObject_CallMethod(mod, "free_tool_id", "i", agent_mon.tool));
		agent_mon.tool = -1;
	}
	Py_DecRef(events);
	Py_DecRef(appd);
	Py_DecRef(append);
	Py_DecRef(lst);
	PyErr_Clear();
	PyErr_Restore(et, ev, tb);
	return rc;
}

/* ---- choosing and installing the hook ------------------------------ */

/*
 * Chooses the hook once: sys.monitoring on CPython 3.12+ (unless
 * INFERSCOPE_PY_HOOK=setprofile), else, or when it cannot be set up, the
 * profile function.  Caller holds the GIL.
 */
void agent_hook_choose(void)
{
	static int chosen;
	char err[160];
	if (chosen++)
		return;
	const char *want = getenv("INFERSCOPE_PY_HOOK");
	if (!agent.py312 || (want && !strcmp(want, "setprofile")))
		return;
	if (mon_setup(err, sizeof(err)) == 0)
		agent_mon.on = 1;
	else
		fprintf(stderr, "inferscope: %s: using the profile hook (PyEval_SetProfile)\n", err);
}

/* The hook on: sys.monitoring's events (every thread), else the calling
 * thread's profile function.  Caller holds the GIL. */
void agent_hook_install(void)
{
	if (agent_mon.on) {
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		if (mon_set_events(agent_mon.mask) < 0)
			PyErr_Clear();
		PyErr_Restore(et, ev, tb);
		return;
	}
	PyEval_SetProfile(agent_profile_fn, NULL);
}

void agent_hook_remove(void)
{
	if (agent_mon.on) {
		PyObject *et, *ev, *tb;
		PyErr_Fetch(&et, &ev, &tb);
		if (mon_set_events(0) < 0)
			PyErr_Clear();
		PyErr_Restore(et, ev, tb);
		return;
	}
	PyEval_SetProfile(NULL, NULL);
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
#define CALIB_ROUNDS 11 /* short rounds: on a busy machine some run unpreempted */
#define CALIB_CALLS 5000
struct agent_calibration agent_calib;

void agent_calib_emit(struct agent_tls *t)
{
	uint8_t body[6 * 10];
	unsigned n = 0;
	if (!agent_calib.mech)
		return;
	const struct agent_calibration *c = &agent_calib;
	const uint64_t f[6] = { c->mech, c->per_event_ps, c->calls, c->plain_ns, c->hooked_ns, c->events };
	for (int i = 0; i < 6; i++)
		n += isc_put_varint(body + n, f[i]);
	emit(t, ISC_REC_CALIBRATION, 0, 0, 0, (const char *)body, n);
}

/*
 * Fills agent_calib (see above); 0, or -1 with it unchanged.  Runs in the
 * main thread before recording starts, and again at exit after recording
 * stopped (exit_hook); the hooked rounds write into a private ring through
 * a borrowed thread state, so nothing reaches the shared file.  A failure
 * at start leaves agent_calib.mech 0 (no CALIBRATION record: the analyzer
 * corrects nothing).
 */
int agent_calibrate(void)
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
	uint32_t main_ring = agent.nbig ? agent.big_ring_size : agent.ring_size;
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

		struct agent_tls saved = agent_thread;
		/* the ring streams on as the recorder drains it */
		atomic_store(&slot.tail, atomic_load(&slot.head));
		agent_thread.slot = &slot;
		agent_thread.ring = ring;
		agent_thread.ring_size = rsize;
		agent_thread.idx = ISC_SHM_MAX_SLOTS;
		agent_thread.gen = atomic_load_explicit(&agent.gen, memory_order_relaxed);
		agent_thread.skip_c = 0;
		atomic_store(&agent.events[ISC_SHM_MAX_SLOTS], 0);
		agent_hook_install();
		r = PyObject_CallObject(loop, arg1);
		if (r) {
			Py_DecRef(r);
			atomic_store(&slot.tail, atomic_load(&slot.head));
			atomic_store(&agent.events[ISC_SHM_MAX_SLOTS], 0);
		}
		uint64_t t2 = now_ns();
		if (r)
			r = PyObject_CallObject(loop, arg);
		uint64_t t3 = now_ns();
		agent_hook_remove();
		agent_thread = saved;
		if (!r)
			goto out;
		Py_DecRef(r);
		events = atomic_load(&agent.events[ISC_SHM_MAX_SLOTS]);
		if (atomic_load(&slot.dropped) || events < n)
			goto out; /* the private ring was too small: not a valid timing */
		if (round >= 0 && t1 - t0 < best_plain)
			best_plain = t1 - t0;
		if (round >= 0 && t3 - t2 < best_hooked)
			best_hooked = t3 - t2;
	}
	agent_calib.mech = agent_mon.on ? AGENT_MECH_MONITORING : AGENT_MECH_SETPROFILE;
	agent_calib.calls = n;
	agent_calib.plain_ns = best_plain;
	agent_calib.hooked_ns = best_hooked;
	agent_calib.events = events;
	agent_calib.per_event_ps = best_hooked > best_plain ? (best_hooked - best_plain) * 1000 / events : 0;
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

/* ---- what a dying thread or process records ------------------------- */

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
PyObject *agent_exception(PyObject *mod, PyObject *args)
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
			agent_emit_mark(t, tn, part[0] * 10000 + part[1] * 100 + part[2]);
			agent_emit_mark(t, pn, PyLong_AsLongLong(hex));
		}
		Py_DecRef(tn);
		Py_DecRef(pn);
	}
	Py_DecRef(b);
	Py_DecRef(v);
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
			agent_emit_mark(t, name, v);
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
			agent_emit_mark(t, name, v);
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
	if (!agent_mon.on)
		return 1;
	uint32_t n = atomic_load_explicit(&agent.proc->nslots_used, memory_order_acquire);
	for (uint32_t i = 0; i < n && i < agent.nslots; i++) {
		struct isc_shm_slot *s = isc_shm_slot_at(agent.base, i);
		if (s == t->slot || atomic_load_explicit(&s->state, memory_order_acquire) != ISC_SLOT_ACTIVE)
			continue;
		pid_t tid = (pid_t)atomic_load_explicit(&s->tid, memory_order_relaxed);
		if (syscall(SYS_tgkill, (long)agent.pid, (long)tid, 0L) == 0 || errno != ESRCH)
			return 0;
	}
	return 1;
}

PyObject *agent_exit_hook(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	if (agent.base && !agent.exited && agent.pid == getpid()) {
		agent_hook_remove(); /* torch's calls below stay out of the trace */
		struct agent_tls *t = tls_get();
		if (t)
			mark_torch_threads(t);
		/* again, now warm: the analyzer keeps the process's lowest cost */
		if (t && agent_calib.mech && exit_calibration_safe(t) && agent_calibrate() == 0)
			agent_calib_emit(t);
		agent_shm_exit();
	}
	Py_RETURN_NONE;
}

/* ---- the Python module ---------------------------------------------- */

/* threading.current_thread().name into the thread's state. */
static void fetch_thread_name(struct agent_tls *t)
{
	PyObject *et, *ev, *tb;
	PyErr_Fetch(&et, &ev, &tb);
	PyObject *mod = PyImport_ImportModule("threading");
	PyObject *fn = mod ? PyObject_GetAttrString(mod, "current_thread") : NULL;
	PyObject *cur = fn ? PyObject_CallObject(fn, NULL) : NULL;
	PyObject *name = cur ? agent_getattr_str(cur, "name") : NULL;
	if (name)
		agent_tls_set_name(t, name);
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
	return PyBool_FromLong(agent.enabled && !agent.exited);
}

/* mechanism(): "sys.monitoring" or "setprofile", the hook this process uses. */
static PyObject *agent_mechanism(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	agent_hook_choose();
	return PyUnicode_FromString(agent_mon.on ? "sys.monitoring" : "setprofile");
}

/* start([name]): record the calling thread from now on. */
static PyObject *agent_start(PyObject *mod, PyObject *args)
{
	PyObject *name = NULL;
	(void)mod;
	if (!PyArg_UnpackTuple(args, "start", 0, 1, &name))
		return NULL;
	if (!agent.enabled || agent.exited)
		Py_RETURN_FALSE;
	if (name && name != Py_None)
		agent_tls_set_name(&agent_thread, name);
	else
		fetch_thread_name(&agent_thread);
	if (!agent.python_sample) { /* sample mode: the recorder reads stacks from outside */
		agent_hook_choose();
		if (!agent_calib.mech)
			(void)agent_calibrate();
		agent_hook_install();
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
	if (!agent.enabled || agent.exited || agent_mon.on) {
		PyEval_SetProfile(NULL, NULL);
		Py_RETURN_NONE;
	}
	fetch_thread_name(&agent_thread);
	PyEval_SetProfile(agent_profile_fn, NULL);
	int what = event_code(event);
	if (what >= 0)
		agent_profile_fn(NULL, (PyFrameObject *)frame, what, arg);
	Py_RETURN_NONE;
}

static PyObject *agent_set_thread_name(PyObject *mod, PyObject *name)
{
	(void)mod;
	struct agent_tls *t = &agent_thread;
	agent_tls_set_name(t, name);
	if (t->slot && t->gen == atomic_load_explicit(&agent.gen, memory_order_relaxed))
		agent_slot_set_name(t->slot, t->name);
	Py_RETURN_NONE;
}

static PyObject *agent_scope_begin(PyObject *mod, PyObject *name)
{
	(void)mod;
	struct agent_tls *t = tls_get();
	if (t) {
		uint32_t id = agent_intern_name(agent.scope_ids, ISC_STR_SCOPE, name);
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
void agent_emit_mark(struct agent_tls *t, PyObject *name, long long v)
{
	uint32_t id = agent_intern_name(agent.mark_ids, ISC_STR_MARK, name);
	emit(t, ISC_REC_MARK, 2, id, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63), NULL, 0);
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
	agent_emit_mark(t, name, v);
	Py_RETURN_NONE;
}

/* calibration(): the measured cost of recording, as in the CALIBRATION record. */
static PyObject *agent_calibration(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	return Py_BuildValue("{s:s,s:K,s:K,s:K,s:K,s:K}", "mechanism",
			     agent_calib.mech == AGENT_MECH_MONITORING ? "sys.monitoring" :
			     agent_calib.mech == AGENT_MECH_SETPROFILE ? "setprofile" : "none",
			     "per_event_ps", (unsigned long long)agent_calib.per_event_ps, "calls",
			     (unsigned long long)agent_calib.calls, "plain_ns", (unsigned long long)agent_calib.plain_ns,
			     "hooked_ns", (unsigned long long)agent_calib.hooked_ns, "events",
			     (unsigned long long)agent_calib.events);
}

static PyObject *agent_stats(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	uint64_t events = 0, dropped = 0, slots = 0, str_dropped = 0, slot_dropped = 0, strings = 0;
	if (agent.base) {
		slots = atomic_load(&agent.proc->nslots_used);
		for (uint32_t i = 0; i < slots && i < agent.nslots; i++) {
			events += atomic_load_explicit(&agent.events[i], memory_order_relaxed);
			dropped += atomic_load_explicit(&isc_shm_slot_at(agent.base, i)->dropped,
							memory_order_relaxed);
		}
		str_dropped = atomic_load(&agent.proc->str_dropped);
		slot_dropped = atomic_load(&agent.proc->slot_dropped);
		strings = agent.next_id - 1;
	}
	return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K,s:i}", "events", (unsigned long long)events,
			     "dropped", (unsigned long long)dropped, "slot_dropped",
			     (unsigned long long)slot_dropped, "str_dropped",
			     (unsigned long long)str_dropped, "slots", (unsigned long long)slots,
			     "strings", (unsigned long long)strings, "pid", (int)getpid());
}

/* fork_attach(): after os.fork in the child, in sample mode: publish our
 * file now, so the recorder samples a child that may never emit an event. */
static PyObject *agent_fork_attach(PyObject *mod, PyObject *unused)
{
	(void)mod;
	(void)unused;
	if (agent.enabled && agent.need_attach)
		agent_shm_attach_child();
	Py_RETURN_NONE;
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
		uint32_t gen = atomic_load_explicit(&agent.gen, memory_order_relaxed);
		if (s->gen != gen || !s->id) {
			s->id = agent_intern_name(agent.scope_ids, ISC_STR_SCOPE, s->name);
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
int agent_own_method(const PyMethodDef *ml)
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
	agent.scope_ids = PyDict_New();
	agent.mark_ids = PyDict_New();
	if (!agent.scope_ids || !agent.mark_ids) {
		Py_DecRef(m);
		return NULL;
	}
	int major = 0, minor = 0;
	sscanf(Py_GetVersion(), "%d.%d", &major, &minor);
	agent.has_qualname = major > 3 || (major == 3 && minor >= 11);
	agent.py312 = major > 3 || (major == 3 && minor >= 12);
	if (!agent.enabled && !agent.need_attach)
		agent_shm_attach();
	return m;
}
