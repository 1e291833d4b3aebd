/*
 * pyremote.h - walks a CPython's threads and frames in another address space.
 *
 * Every byte comes through a read function (process_vm_readv in the
 * recorder, a buffer in the tests and the fuzzer) and is untrusted: the
 * workload runs on while we read, may exit in the middle, and may hold
 * anything at any address.  Every read is bounded, every object's type is
 * checked against the interpreter's type objects when they are known, and
 * lists are cut at fixed limits, so a lying memory image costs at most a
 * bounded number of reads and yields no stack, never a crash or a hang.
 */
#ifndef ISC_PYREMOTE_H
#define ISC_PYREMOTE_H

#include <stdbool.h>
#include <stdint.h>

#include "pylayout.h"

#define ISC_PY_MAX_DEPTH 128    /* frames kept per stack (innermost first) */
#define ISC_PY_MAX_THREADS 256  /* thread states per interpreter */
#define ISC_PY_MAX_INTERPS 16
#define ISC_PY_NAME_MAX 1024    /* bytes of UTF-8 per name or file */
#define ISC_PY_LINETABLE_MAX (256u << 10)

/* Reads len bytes at addr of the other address space into dst: 0, or a
 * negative errno (-ESRCH: the process is gone; -EFAULT: not mapped). */
typedef int isc_pymem_fn(void *ctx, uint64_t addr, void *dst, size_t len);

struct isc_pyframe {
	uint64_t code;                  /* address of the code object */
	uint64_t name, qualname, file;  /* addresses of its str objects (identity) */
	uint32_t firstlineno;
	uint32_t line;                  /* current line, 0 when unknown */
	uint8_t opclass;                /* enum isc_py_opclass of the current instruction */
};

/*
 * What the innermost frame's instruction runs in C, as found on its value
 * stack (before naming: isc_pyremote_callee_name names it once per key).
 */
enum isc_py_callee_src {
	ISC_PY_SRC_NONE = 0,    /* the interpreter's own work: bytecode, a call of a Python function
				 * (about to push its frame), an operator on the interpreter's own types */
	ISC_PY_SRC_CFUNC = 1,   /* a builtin_function_or_method: ml, type (0: a module function), module */
	ISC_PY_SRC_DESCR = 2,   /* a method_descriptor called with its self: ml, type */
	ISC_PY_SRC_SLOT = 3,    /* an operator on an extension's object: type, slot (reflected: the right operand's) */
	ISC_PY_SRC_OBJECT = 4,  /* an extension's class or callable object called: type */
	ISC_PY_SRC_UNKNOWN = 5, /* a call or operator whose callee could not be read */
};

struct isc_pycallee {
	uint8_t src;       /* enum isc_py_callee_src */
	uint8_t slot;      /* SLOT: enum isc_py_slot */
	bool reflected;    /* SLOT: the right operand's reflected slot (__radd__) */
	bool torch;        /* the type (or a base of it) is torch's */
	uint64_t ml;       /* CFUNC, DESCR: the PyMethodDef (static in its extension) */
	uint64_t type;     /* the class it belongs to; CFUNC: 0 for a module function */
	uint64_t module;   /* CFUNC: m_module (a str) */
};

struct isc_pystack {
	uint64_t thread_id;  /* PyThreadState.thread_id (pthread_t) */
	uint32_t tid;        /* kernel thread id, 0 when unknown */
	uint32_t depth;      /* frames[0] innermost */
	bool truncated;      /* deeper than ISC_PY_MAX_DEPTH, or a frame failed to read */
	struct isc_pycallee callee; /* of frames[0], when its instruction is a call or an operator */
	struct isc_pyframe frames[ISC_PY_MAX_DEPTH];
};

/* The interpreter's own type objects, from its ELF symbols (0: unknown). */
struct isc_pytypes {
	uint64_t cfunction, method_descr, module, capsule, type, function, method;
};

struct isc_pycache;

struct isc_pyremote {
	struct isc_pylayout L;     /* a copy: 3.13+ offsets come from the process */
	isc_pymem_fn *read;
	void *ctx;
	uint64_t runtime;          /* &_PyRuntime */
	uint64_t code_type, str_type, bytes_type; /* type objects; 0: not checked */
	struct isc_pytypes types;  /* for naming callees; all 0: callees are not read */
	uint64_t img_lo, img_hi;   /* the interpreter's mapped image: code and static types
				    * outside it are an extension's (0, 0: unknown) */
	uint64_t module_key;       /* the interned str "__module__" once found in a type's dict */
	uint32_t pthread_tid_off;  /* kernel tid inside glibc's struct pthread, ISC_PY_NONE if unknown */
	uint64_t reads;            /* read calls so far (cost accounting, tests) */
	struct isc_pycache *cache; /* line tables, by code object */
};

/* Sets up r (no reads); the caller fills the type addresses it knows.  0 or -ENOMEM. */
int isc_pyremote_init(struct isc_pyremote *r, const struct isc_pylayout *L, isc_pymem_fn *fn, void *ctx,
		      uint64_t runtime);
void isc_pyremote_fini(struct isc_pyremote *r);

/*
 * 3.13+: reads _Py_DebugOffsets at the start of _PyRuntime, checks the
 * cookie "xdebugpy" and that its version is 3.13 (hexversion out), and
 * takes the offsets from it into r->L (the rest of r->L, string state bits
 * and opcode classes, stays as given).  -EPROTO when the cookie or version
 * is wrong, a negative errno when unreadable.
 */
int isc_pyremote_debug_offsets(struct isc_pyremote *r, uint32_t *hexversion);

/*
 * Walks every interpreter's thread states into out[0..*n) (at most cap).
 * A thread whose frames cannot be read gets depth 0 and truncated.
 * Returns 0, or a negative errno when the runtime itself cannot be read
 * (-ESRCH: the process is gone).
 */
int isc_pyremote_sample(struct isc_pyremote *r, struct isc_pystack *out, unsigned cap, unsigned *n);

/*
 * Names a callee read by isc_pyremote_sample: *kind (enum
 * isc_py_callee_kind of isc_format.h: function, method, slot, object),
 * name as Python's profile hook names it (`module.name` for a module
 * function: `torch._C._nn.linear`, `builtins.len`; `Type.name` for a
 * method: `Tensor.matmul`; `Type.__slot__` for an operator:
 * `Tensor.__matmul__`; `module.Type` for an object), its module (may be
 * empty), and *torch: the module is torch's or the type derives from one
 * of torch's.  0, or a negative errno when the names cannot be read.
 */
int isc_pyremote_callee_name(struct isc_pyremote *r, const struct isc_pycallee *c, uint8_t *kind, bool *torch,
			     char *name, size_t ncap, char *module, size_t mcap);

/*
 * The stack of one thread state at ts (its current frame, then the
 * callers) into s; 0, or -EFAULT when the thread state cannot be read.
 * The allocation sampler calls it in the process itself, on the calling
 * thread's own state (tools/iscope-record/python/alloc_hooks.c).
 */
int isc_pyremote_thread(struct isc_pyremote *r, uint64_t ts, struct isc_pystack *s);

/* Reads a str object as UTF-8 into buf (cap >= 4), NUL-terminated, cut at
 * ISC_PY_NAME_MAX bytes on a character boundary.  Returns the length or a
 * negative errno (-EBADMSG: not a compact str). */
int isc_pyremote_str(struct isc_pyremote *r, uint64_t addr, char *buf, size_t cap);

/* The line of instruction offset off (units of the table's format) in a
 * line table; firstlineno when off < 0; 0 when the table does not say. */
uint32_t isc_py_addr2line(int format, const uint8_t *tab, size_t len, uint32_t firstlineno, int64_t off);

#endif
