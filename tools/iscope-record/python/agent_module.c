/*
 * agent_module.c - the Python module _agent: the functions sitecustomize.py
 * and the inferscope package call (enabled, start, thread_hook,
 * set_thread_name, scope_begin/end, mark, exception, stats, calibration,
 * mechanism, exit_hook, fork_attach), the Scope context manager, and
 * PyInit__agent, which attaches to the recording session (agent_shm.c).
 */
#include "agent.h"
#include "alloc_hooks.h"

#include <structmember.h>

#include <stdio.h>

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
	/* our own functions are not recorded as C calls (agent_intern.c) */
	agent.own[0][0] = agent_methods;
	agent.own[0][1] = agent_methods + n_agent_methods;
	agent.own[1][0] = scope_methods;
	agent.own[1][1] = scope_methods + n_scope_methods;
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
	isc_agent_alloc_start();
	return m;
}
