/*
 * agent_hook_setup.c - which hook the Python agent records through, and
 * what it costs: sys.monitoring (PEP 669) set up on CPython 3.12+ (a tool
 * id, our callbacks registered, events off until agent_hook_install), else
 * the C profile function; the hook turned on and off; and the calibration
 * that measures the cost of one recorded event (the CALIBRATION record).
 */
#include "agent.h"

#include <stdio.h>
#include <stdlib.h>

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
			snprintf(err, errlen, "cannot register the sys.monitoring callback of %s",
				 agent_mon_events[i].event);
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
