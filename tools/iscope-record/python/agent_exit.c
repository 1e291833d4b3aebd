/*
 * agent_exit.c - what the Python agent records as a thread or the process
 * ends: the unhandled exception ending a thread (EXCEPTION, after an SMAPS
 * record for an out-of-memory death), and at exit (exit_hook, Python's
 * atexit) torch's thread counts, CUDA allocator high-water marks and the
 * versions as marks, the exit calibration; then the process is marked
 * finished (agent_shm_exit).
 */
#include "agent.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Appends a counted copy of at most max bytes of s to buf, a longer s cut
 * with a mark: "..." (three dots) where bytes were left out, at the start
 * when tail (the end of a path is what names it), else at the end.
 */
static unsigned put_counted(uint8_t *buf, const char *s, size_t len, size_t max, int tail)
{
	if (len <= max) {
		buf[0] = (uint8_t)len; /* < 128: one varint byte */
		memcpy(buf + 1, s, len);
		return 1 + (unsigned)len;
	}
	size_t keep = max - 3;
	buf[0] = (uint8_t)max;
	if (tail) {
		memcpy(buf + 1, "...", 3);
		memcpy(buf + 4, s + len - keep, keep);
	} else {
		memcpy(buf + 1, s, keep);
		memcpy(buf + 1 + keep, "...", 3);
	}
	return 1 + (unsigned)max;
}

/* An exception's string longer than this is cut, the cut said in it (text_cut). */
#define EXC_TEXT_MAX 4096

/*
 * s, or when longer than EXC_TEXT_MAX a marked cut of it in buf (at least
 * EXC_TEXT_MAX + 48 bytes): its last EXC_TEXT_MAX bytes after
 * "[N bytes left out] " when tail (the end of a path names it), else its
 * first EXC_TEXT_MAX and " [N more bytes]".  Sets *len to the result's.
 */
static const char *text_cut(const char *s, size_t *len, int tail, char *buf, size_t cap)
{
	size_t n = *len;
	if (n <= EXC_TEXT_MAX)
		return s;
	int k = tail ? snprintf(buf, cap, "[%zu bytes left out] %.*s", n - EXC_TEXT_MAX, EXC_TEXT_MAX,
				s + n - EXC_TEXT_MAX)
		     : snprintf(buf, cap, "%.*s [%zu more bytes]", EXC_TEXT_MAX, s, n - EXC_TEXT_MAX);
	*len = k > 0 && (size_t)k < cap ? (size_t)k : cap - 1;
	return buf;
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
	/* the strings whole, in the string area: EXCEPTION_REF (formats/trace.md) */
	uint64_t ln = line < 0 ? 0 : line > 2000000 ? 2000000 : (uint64_t)line;
	char cuts[4][EXC_TEXT_MAX + 48]; /* 16 kB of stack, once per dying thread */
	size_t nt = (size_t)ltype, nf = (size_t)lfile, nu = (size_t)lfunc, nm = (size_t)lmsg;
	const char *ttext = text_cut(type, &nt, 0, cuts[0], sizeof(cuts[0]));
	const char *ftext = text_cut(file, &nf, 1, cuts[1], sizeof(cuts[1]));
	const char *utext = text_cut(func, &nu, 0, cuts[2], sizeof(cuts[2]));
	const char *mtext = text_cut(msg, &nm, 0, cuts[3], sizeof(cuts[3]));
	uint32_t where = agent_define_text(ISC_STR_CODE, utext, nu, ftext, nf, ln);
	uint32_t tid = where ? agent_define_text(ISC_STR_TEXT, ttext, nt, "", 0, 0) : 0;
	uint32_t mid = tid ? agent_define_text(ISC_STR_TEXT, mtext, nm, "", 0, 0) : 0;
	if (mid) {
		unsigned bl = 0;
		bl += isc_put_varint(body + bl, ln);
		bl += isc_put_varint(body + bl, where);
		bl += isc_put_varint(body + bl, tid);
		bl += isc_put_varint(body + bl, mid);
		emit(t, ISC_REC_EXCEPTION_REF, 0, 0, 0, (const char *)body, bl);
		Py_RETURN_NONE;
	}
	/* the string area full: the cut record, each cut marked; 10 bytes of delta, 3 of line, 3 lengths */
	unsigned n = put_counted(body, type, (size_t)ltype, 40, 0);
	n += put_counted(body + n, file, (size_t)lfile, 32, 1);
	n += put_counted(body + n, func, (size_t)lfunc, 24, 0);
	size_t room = AGENT_REC_MAX - 1 - 10 - 3 - n;
	size_t m = (size_t)lmsg < room ? (size_t)lmsg : room;
	memcpy(body + n, msg, m);
	n += (unsigned)m;
	emit(t, ISC_REC_EXCEPTION, 1, ln, 0, (const char *)body, n);
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
