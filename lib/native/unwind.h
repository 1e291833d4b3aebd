/*
 * unwind.h - offline unwinding and naming of the native sampler's stacks
 * (lib/native: maps.c, symbols.c, unwind.c) and the mixing of a native
 * stack with the same thread's Python stack (mix.c).  Called by the merge
 * or analysis side on the records of a trace or timeline, never by the
 * recorder.
 *
 * Library: elfutils' libdw (libdwfl).  It reads the call frame
 * information of .eh_frame and of .debug_frame (also from a separate
 * debug file found by build id under /usr/lib/debug), unwinds from a
 * register set and a memory-read callback (our copy of the stack), and
 * names addresses from .symtab, else .dynsym, with the same module
 * objects; x86-64 falls back to frame pointers where a function has no
 * CFI.  libunwind's remote API would need us to locate each file's
 * .eh_frame_hdr and to read symbols ourselves; libdw does both and is
 * what perf (unwind-libdw.c), eu-stack and systemd-coredump use.
 * C++ names are demangled with __cxa_demangle (libstdc++, the
 * compiler's own demangler) and shown without their parameter list, as
 * perf report shows them (overloads of one name are one function).
 *
 * A frame that cannot be named is kept as "library+0xOFFSET" (the
 * address in the file's own ELF address space, what addr2line -e FILE
 * takes; the file offset when the file could not be read), never
 * dropped, and counted; an address in no file-backed mapping is "[jit]".
 * Unwinding stops where the stack copy ends ("[truncated]" frame) or
 * where a frame has no CFI and no usable frame pointer.
 *
 * Usage (phase 2 of issue 26 makes this the analysis pass's call):
 *
 *   isc_unwinder_new(&u);
 *   for each native record in time order (types 0x30-0x36):
 *       isc_unwinder_record(u, type, body, len);
 *       if NATIVE_SAMPLE: isc_native_sample_parse(body, len, &s);
 *                         isc_unwinder_unwind(u, &s, &stack);
 */
#ifndef ISC_NATIVE_UNWIND_H
#define ISC_NATIVE_UNWIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isc_native_codec.h" /* struct isc_native_sample */

#define ISC_STACK_MAX 256 /* frames kept per stack, innermost first */

enum isc_frame_kind {
	ISC_FRAME_NATIVE = 1,    /* a named native function: name, lib */
	ISC_FRAME_UNNAMED = 2,   /* no symbol: name is "lib+0xOFFSET" */
	ISC_FRAME_JIT = 3,       /* an address in no file-backed mapping: "[jit]" */
	ISC_FRAME_KERNEL = 4,    /* a kernel function (NATIVE_KSYM), lib "[kernel]" */
	ISC_FRAME_TRUNCATED = 5, /* the stack copy ended here: "[truncated]" */
	ISC_FRAME_PYTHON = 6,    /* a Python frame (mix.c): name, file, line */
	ISC_FRAME_OP = 7,        /* a torch op a worker thread ran for its dispatcher (the analysis): "aten::mm" */
	ISC_FRAME_OTHER = 8,     /* stacks too small to keep, merged (the findings' bounded tree): "[other]" */
};

struct isc_frame {
	const char *name; /* valid until the unwinder (or the caller's strings) is freed */
	const char *lib;  /* the library's path (native), "[kernel]", or the Python file */
	uint32_t line;    /* Python frames: the line being executed */
	uint8_t kind;     /* enum isc_frame_kind */
	bool interp;      /* a CPython evaluation-loop function (_PyEval_EvalFrameDefault ...) */
	bool interp_lib;  /* in the file that holds the evaluation loop (python3.X or libpython) */
};

struct isc_stack {
	struct isc_frame f[ISC_STACK_MAX]; /* innermost first */
	unsigned n;
	bool truncated; /* the stack copy ended before the outermost frame */
};

struct isc_unwind_stats {
	uint64_t samples;      /* stacks unwound */
	uint64_t frames;       /* frames produced, kernel frames included */
	uint64_t unnamed;      /* of which library+offset */
	uint64_t jit;          /* of which [jit] */
	uint64_t kernel;       /* of which kernel functions */
	uint64_t truncated;    /* stacks cut by the end of the stack copy */
	uint64_t no_user;      /* samples without user registers */
	uint64_t files_missing;/* mappings whose file could not be opened or read */
	uint64_t files_changed;/* mappings whose file's build id is not the recorded one */
};

struct isc_unwinder;
/* root: a directory prefixed to every recorded path ("" or NULL: none). 0 or -ENOMEM. */
int isc_unwinder_new(struct isc_unwinder **out, const char *root);
void isc_unwinder_free(struct isc_unwinder *u);
/*
 * Takes one native sampler record (NATIVE_SAMPLER, _MAP, _TASK, _KSYM; the
 * others are ignored), in time order.  0, or -EBADMSG when the body does
 * not parse, -ENOMEM.
 */
int isc_unwinder_record(struct isc_unwinder *u, uint8_t type, const uint8_t *body, size_t len);
/*
 * Unwinds and names one sample: its kernel frames (innermost first), then
 * its user frames.  Always returns a stack (possibly only "[truncated]"
 * or the leaf as library+offset); 0, or -ENOMEM.
 */
int isc_unwinder_unwind(struct isc_unwinder *u, const struct isc_native_sample *s, struct isc_stack *out);
const struct isc_unwind_stats *isc_unwinder_stats(const struct isc_unwinder *u);

/* ---- mix.c ------------------------------------------------------------- */
/*
 * Mixed stack: the native stack with its interpreter frames replaced by
 * the Python frames of the same thread at (about) the same moment.
 *
 * Rule: let E be the innermost evaluation-loop frame (interp) of the
 * native stack.  E, every frame outside it (towards the root), and the
 * frames of the interpreter's own file directly inside it (its call
 * machinery: _PyObject_Vectorcall..., cfunction_call...) are replaced by
 * the Python frames py[0..npy) (innermost first); native frames inside
 * them (a torch op and what it calls) stay.  A native stack without an
 * evaluation-loop frame that was cut by the end of the stack copy
 * (truncated) gets the Python frames above its "[truncated]" frame; one
 * that is complete and has none is not a Python thread's: it stays as it
 * is, as it does when npy is 0.
 *
 * Error: (1) native frames of C code between two evaluation loops (a C
 * extension that called back into Python: a hook, map() with a Python
 * function) are not shown (*elided counts them; the process's own start,
 * _start and libc outside the outermost loop, is replaced silently); (2) the Python stack
 * is the nearest sample in time, not the same instant (isc_mix_pick: at
 * most half the Python sampler's period away, 5 ms at 100 Hz, when its
 * ticks are regular; up to a period when one is missing), so a thread
 * that changed Python function in between gets the other function's
 * frames, and of the two samples around it the one taken on CPU is
 * preferred (isc_mix_pick), so a thread that woke from a wait or went
 * into one in between gets its running frames, not those of the call it
 * waited in; the Python sampler also reads a stack while the thread runs.
 *
 * out gets at most ISC_STACK_MAX frames (the outermost are dropped
 * first: out->truncated is then set).  Pure: no state, no allocation.
 */
void isc_mix_stacks(const struct isc_stack *native, const struct isc_frame *py, unsigned npy,
		    struct isc_stack *out, unsigned *elided);

/*
 * The pairing of a timeline's native stacks with its Python samples, in
 * time order (mix.c): each native stack waits until the same thread's
 * next Python sample arrives or max_gap has passed, is paired by
 * isc_mix_pick with that sample or the one before it, mixed, and handed
 * to out (paired: a Python sample was used) with the tag it came with.  max_gap is the Python
 * sampler's period (10 ms at 100 Hz): with a sample every period, the
 * nearest is at most half a period away.  The Python frames' strings must
 * stay valid until isc_mixq_free (a timeline's string table does).
 */
typedef void (*isc_mixq_out)(void *ctx, uint32_t pid, uint32_t tid, uint64_t ts, const struct isc_stack *mixed,
			     bool paired, unsigned elided, uint64_t tag);
struct isc_mixq;
int isc_mixq_new(struct isc_mixq **out, uint64_t max_gap, isc_mixq_out fn, void *ctx);
/* A native stack of (pid, tid) at ts (copied), handed out with tag (the
 * caller's: what it knew of the thread at ts); 0 or -ENOMEM. */
int isc_mixq_native(struct isc_mixq *q, uint32_t pid, uint32_t tid, uint64_t ts, const struct isc_stack *s,
		    uint64_t tag);
/* A Python sample of (pid, tid) at ts, frames innermost first (copied),
 * off_cpu when the thread was off CPU as it was taken (blocked: a state
 * other than R); 0 or -ENOMEM. */
int isc_mixq_python(struct isc_mixq *q, uint32_t pid, uint32_t tid, uint64_t ts, bool off_cpu,
		    const struct isc_frame *py, unsigned n);
/* The timeline has reached now: stacks that no later Python sample can be
 * nearer to are mixed and handed out. */
void isc_mixq_advance(struct isc_mixq *q, uint64_t now);
/* Hands out every stack still waiting (the end of the timeline) and frees. */
void isc_mixq_free(struct isc_mixq *q);

/*
 * Whether a thread's Python sample was taken off CPU, for isc_mixq_python:
 * its state letter (PY_SAMPLE's state) other than R ('?', unknown, counts
 * on CPU), or R without the thread having run since its previous sample,
 * which was off CPU (have_run: run_ns, its schedstat run time, 1.9, was
 * read; equal to the previous sample's: woken from a wait and not yet on
 * a CPU, its stack still the wait's).  prev holds the thread's previous
 * sample (zeroed before its first) and is updated.
 */
struct isc_mix_pystate {
	bool off, have_run;
	uint64_t run_ns;
};
bool isc_mix_py_off(struct isc_mix_pystate *prev, unsigned state, bool have_run, uint64_t run_ns);

/*
 * Which Python sample goes with a native sample at ts, of the thread's
 * latest sample at or before it (prev_ts, 0 for none) and its first
 * after it (next_ts, 0 for none), those within max_gap ns: when one of
 * the two was taken off CPU (*_off: blocked, a state other than R) and
 * the other on CPU, the one on CPU; else the nearer, ties to the earlier.
 * A native sample is taken on CPU (cpu-clock): an off-CPU Python sample
 * shows the call the thread waits in, and a thread on CPU at ts left that
 * wait before ts (the sample before) or had not entered it yet (the one
 * after), so it was running the other sample's frames, or frames between
 * the two; nearest alone gave a DataLoader worker's first samples of each
 * item the frames it had waited in for the item (tests/native).  Both off
 * CPU (a thread that woke briefly between two waits): the nearer.
 * Returns -1 for prev, 1 for next, 0 for neither.
 */
int isc_mix_pick(uint64_t ts, uint64_t prev_ts, bool prev_off, uint64_t next_ts, bool next_off, uint64_t max_gap);

/* ---- classify.c --------------------------------------------------------- */
/*
 * A mixed stack's native part: the frames inside its innermost Python
 * frame (or, unpaired, inside its innermost evaluation loop, less the
 * interpreter's call machinery there).
 *
 * The torch op it runs, into buf: a frame of kind ISC_FRAME_OP (not
 * "[worker threads]", an op not known), or a
 * "at::_ops::NAME::call" (or ::redispatch) frame, named "aten::NAME"
 * (NAME is the at::_ops struct's: an overload joins it with '_',
 * "add__Tensor").  outermost: the op the Python line called, else the
 * innermost (the op doing the work).  false when there is none.
 */
bool isc_native_op(const struct isc_stack *s, bool outermost, char *buf, size_t cap);

/*
 * Whose CPU time a sample of a Python thread is (cpu.split with native
 * stacks): TORCH when a frame of the native part is a torch library's
 * (isc_native_torch_lib) or an op; else INTERP when the native part is
 * empty (bytecode), or its outermost user-space frame is the
 * interpreter's own file or the C library it calls (malloc, memcpy, a
 * system call's wrapper), kernel frames inside it included, and no frame
 * is the dynamic loader's (loading an extension is not the interpreter's
 * work); else OTHER (builtins of other files, C extensions, ctypes).  NONE: not a Python
 * code's stack (no Python frame, no evaluation loop).
 */
enum isc_cpu_class { ISC_CPU_NONE = 0, ISC_CPU_INTERP = 1, ISC_CPU_TORCH = 2, ISC_CPU_OTHER = 3 };
enum isc_cpu_class isc_native_class(const struct isc_stack *s);
/* A torch library: libtorch*, libc10*, or a file under a "torch" directory (torch/_C.so). */
bool isc_native_torch_lib(const char *path);

#endif
