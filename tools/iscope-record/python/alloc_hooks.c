/*
 * alloc_hooks.c - the Python agent's part of allocation sampling: when the
 * allocation shim (libiscope-alloc.so, LD_PRELOAD'd by iscope-record) is
 * in the process, wrap CPython's three allocator domains through it
 * (PyMem_SetAllocator, chained to the allocators already there) and give
 * it a stack function: the calling thread's Python frames, read as a
 * pointer walk over the interpreter's own structures (lib/record/pyremote.c,
 * with the layout of this CPython from the build's table), so no
 * interpreter code runs inside an allocator and no GIL is needed: a
 * thread reads only its own frames, which only it changes, and it is busy
 * allocating.
 *
 *   PyInit__agent -> isc_agent_alloc_start:
 *       dlsym(isc_alloc_api_v1) -- absent: nothing to do
 *       layout for 3.M.P (3.13+: _Py_DebugOffsets) -- none: samples without stacks
 *       verify: walk our own stack with checked reads (process_vm_readv), compare
 *               the innermost frame with the interpreter's answer
 *       set_stack_fn(walk); pymem_install(PyMem_[GS]etAllocator, PyObject_[GS]etArenaAllocator);
 *       atexit: set_stack_fn(NULL)
 *
 * The shim calls walk() holding its sampling lock, so the state here (the
 * walker, its line-table cache, the name cache) has one user at a time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "isc_alloc.h"
#include "record/pyremote.h" /* isc_pyremote_thread, isc_pyremote_str, isc_pylayout_find */
#include "alloc_hooks.h"

/* Outside the limited API, with the same ABI since CPython 3.5 (the
 * domain is an enum, PyMemAllocatorEx five pointers). */
PyAPI_FUNC(void) PyMem_GetAllocator(int domain, void *allocator);
PyAPI_FUNC(void) PyMem_SetAllocator(int domain, void *allocator);
PyAPI_FUNC(void) PyObject_GetArenaAllocator(void *allocator);
PyAPI_FUNC(void) PyObject_SetArenaAllocator(void *allocator);

#define NAME_CACHE 4096

static const struct isc_alloc_api *api;
static struct isc_pyremote walker;
static struct isc_pystack stack; /* the walk's result (one walk at a time) */
static struct {
	uint64_t code, qualname, file;
	uint32_t id;
} names[NAME_CACHE];
static uint32_t names_file; /* the shim's file the cached ids belong to */
static char name_buf[ISC_PY_NAME_MAX + 8], file_buf[ISC_PY_NAME_MAX + 8];

/* In-process reads: the layout is verified and the frames are our own. */
static int read_direct(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	memcpy(dst, (const void *)(uintptr_t)addr, len);
	return 0;
}

/* Checked reads for the verification: a wrong layout gives EFAULT, not SIGSEGV. */
static int read_checked(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	struct iovec l = { dst, len }, r = { (void *)(uintptr_t)addr, len };
	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* The shim's string id of a frame's code object (its names read once). */
static uint32_t code_id(const struct isc_pyframe *f)
{
	unsigned slot = (unsigned)((f->code >> 4) * 0x9E3779B97F4A7C15ull >> 52) % NAME_CACHE;
	if (names[slot].id && names[slot].code == f->code && names[slot].qualname == f->qualname &&
	    names[slot].file == f->file)
		return names[slot].id;
	int nl = -1, fl;
	if (f->qualname)
		nl = isc_pyremote_str(&walker, f->qualname, name_buf, sizeof(name_buf));
	if (nl < 0)
		nl = isc_pyremote_str(&walker, f->name, name_buf, sizeof(name_buf));
	fl = isc_pyremote_str(&walker, f->file, file_buf, sizeof(file_buf));
	if (nl < 0 || fl < 0)
		return 0;
	uint32_t id = api->intern(f->code, f->qualname ^ (f->file << 1), f->firstlineno, name_buf, (size_t)nl, file_buf,
				  (size_t)fl);
	if (id)
		names[slot] = (typeof(names[0])){ f->code, f->qualname, f->file, id };
	return id;
}

/* isc_alloc_stack_fn: the calling thread's Python stack, innermost first. */
static unsigned walk(uint32_t *frames, unsigned max, int *truncated, uint32_t file)
{
	PyThreadState *ts = PyGILState_GetThisThreadState();
	unsigned n = 0;
	if (file != names_file) { /* a fork child's own file: its ids start again */
		memset(names, 0, sizeof(names));
		names_file = file;
	}
	if (!ts || isc_pyremote_thread(&walker, (uint64_t)(uintptr_t)ts, &stack))
		return 0;
	for (uint32_t i = 0; i < stack.depth && n < max; i++, n++) {
		frames[2 * n] = code_id(&stack.frames[i]);
		frames[2 * n + 1] = stack.frames[i].line;
	}
	*truncated = stack.truncated || stack.depth > max;
	return n;
}

/* atexit: the interpreter is being finalized; samples carry no stack from now. */
static PyObject *alloc_atexit(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	api->set_stack_fn(NULL);
	Py_RETURN_NONE;
}

static PyMethodDef atexit_def = { "_inferscope_alloc_atexit", alloc_atexit, METH_NOARGS, NULL };

/*
 * Whether the walker reads this interpreter right: our own stack, read
 * with checked reads, must start at the frame the interpreter says is
 * current (same code object, same line).  Caller holds the GIL and runs
 * inside Python code (the import of _agent).
 */
static int verify(void)
{
	int ok = 0;
	PyThreadState *ts = PyGILState_GetThisThreadState();
	PyObject *frame = (PyObject *)PyEval_GetFrame(); /* borrowed */
	if (!ts || !frame)
		return 0;
	PyObject *code = PyObject_GetAttrString(frame, "f_code");
	walker.read = read_checked;
	if (code && !isc_pyremote_thread(&walker, (uint64_t)(uintptr_t)ts, &stack) && stack.depth > 0 &&
	    !stack.truncated && stack.frames[0].code == (uint64_t)(uintptr_t)code &&
	    stack.frames[0].line == (uint32_t)PyFrame_GetLineNumber((PyFrameObject *)frame))
		ok = 1;
	walker.read = read_direct;
	Py_XDECREF(code);
	PyErr_Clear();
	return ok;
}

void isc_agent_alloc_start(void)
{
	static int started;
	unsigned major = 0, minor = 0, patch = 0;
	if (started++)
		return;
	api = (const struct isc_alloc_api *)dlsym(RTLD_DEFAULT, ISC_ALLOC_API_SYMBOL);
	if (!api || api->version != 1 || api->size < sizeof(*api))
		return; /* no shim in this process (memory sampling off) */
	sscanf(Py_GetVersion(), "%u.%u.%u", &major, &minor, &patch);
	const struct isc_pylayout *L = isc_pylayout_find(major, minor, patch);
	void *runtime = dlsym(RTLD_DEFAULT, "_PyRuntime");
	int stacks = 0;
	if (L && !isc_pyremote_init(&walker, L, read_direct, NULL, (uint64_t)(uintptr_t)runtime)) {
		uint32_t hex;
		walker.code_type = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "PyCode_Type");
		walker.str_type = (uint64_t)(uintptr_t)&PyUnicode_Type;
		walker.bytes_type = (uint64_t)(uintptr_t)&PyBytes_Type;
		walker.read = read_checked;
		int offsets = minor < 13 || (runtime && isc_pyremote_debug_offsets(&walker, &hex) == 0);
		walker.read = read_direct;
		stacks = offsets && walker.code_type && verify();
	}
	if (stacks)
		api->set_stack_fn(walk);
	else
		fprintf(stderr, "inferscope: CPython %u.%u.%u: the allocation sampler cannot read its stacks (%s): "
				"allocations are sampled without their Python stack\n",
			major, minor, patch, L ? "the layout did not check out" : "no layout for it in this build");
	api->pymem_install(PyMem_GetAllocator, PyMem_SetAllocator, PyObject_GetArenaAllocator, PyObject_SetArenaAllocator);
	PyObject *atexit = PyImport_ImportModule("atexit");
	PyObject *fn = PyCFunction_New(&atexit_def, NULL);
	PyObject *r = atexit && fn ? PyObject_CallMethod(atexit, "register", "O", fn) : NULL;
	Py_XDECREF(r);
	Py_XDECREF(fn);
	Py_XDECREF(atexit);
	PyErr_Clear();
}
