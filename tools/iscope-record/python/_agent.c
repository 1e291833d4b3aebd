/*
 * _agent.c - InferScope's CPU collector, loaded into the traced Python
 * process by sitecustomize.py: its hot path, the callbacks that write
 * one record per call into the calling thread's ring.  The rest of the
 * module (start-up, the shared-memory file, interning, the Python API) is
 * in the files agent.h lists.
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
