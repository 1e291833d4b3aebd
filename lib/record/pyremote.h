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

struct isc_pystack {
	uint64_t thread_id;  /* PyThreadState.thread_id (pthread_t) */
	uint32_t tid;        /* kernel thread id, 0 when unknown */
	uint32_t depth;      /* frames[0] innermost */
	bool truncated;      /* deeper than ISC_PY_MAX_DEPTH, or a frame failed to read */
	struct isc_pyframe frames[ISC_PY_MAX_DEPTH];
};

struct isc_pycache;

struct isc_pyremote {
	struct isc_pylayout L;     /* a copy: 3.13+ offsets come from the process */
	isc_pymem_fn *read;
	void *ctx;
	uint64_t runtime;          /* &_PyRuntime */
	uint64_t code_type, str_type, bytes_type; /* type objects; 0: not checked */
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
