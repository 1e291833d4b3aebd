/*
 * analyze_pysample.h - the Python stack samples of --python=sample
 * (PY_SAMPLE, PY_SAMPLER records): time per function and per line
 * estimated from sample counts, on/off CPU per thread, C time by callee
 * and calling function.  Private to lib/analyze.
 */
#ifndef ISC_ANALYZE_PYSAMPLE_H
#define ISC_ANALYZE_PYSAMPLE_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>

#include "isc.h"
#include "isc_util.h"
#include "isc_jbuild.h"

struct isc_pysamp;

int isc_pysamp_new(struct isc_pysamp **ps);
void isc_pysamp_free(struct isc_pysamp *ps);
/* Counts one PY_SAMPLE or PY_SAMPLER event (others are ignored); in_scope:
 * a scope was open on the sample's thread.  0, -ENOMEM or -EBADMSG. */
int isc_pysamp_add(struct isc_pysamp *ps, const struct isc_timeline *t, const struct isc_tl_event *ev, bool in_scope);
/* Whether the last sample added was in C (a call or operator of a C
 * callee innermost), and whether that counts as a torch op. */
bool isc_pysamp_last_in_c(const struct isc_pysamp *ps);
bool isc_pysamp_last_torch(const struct isc_pysamp *ps);
/* Whether the last sample's thread was running or runnable (state R):
 * working, or wanting a CPU to work; not blocked. */
bool isc_pysamp_last_busy(const struct isc_pysamp *ps);
/*
 * How long thread (pid, tid) waited for a CPU (runnable, not running)
 * between from and to, from the schedstat its samples carry (1.9), linear
 * between the samples around each end and at most to - from; false when
 * the samples do not surround both ends.
 */
bool isc_pysamp_cpu_wait(const struct isc_pysamp *ps, uint32_t pid, uint32_t tid, uint64_t from, uint64_t to,
			 uint64_t *wait_ns);

/*
 * Exact mode (call spans measure the time; the samples only say where it
 * went): the C time the samples saw in an operator's slot on an
 * extension's object (x @ w on tensors), which no call span records and
 * the function's self time holds.  One entry per (function, slot).
 */
struct isc_pysamp_slot {
	uint32_t fn;       /* CODE string id of the function whose frame ran the operator */
	uint32_t callee;   /* CFUNC string id of the slot (Tensor.__matmul__), 0: unnamed */
	uint64_t samples;  /* samples in the slot */
	uint64_t eligible; /* the function's innermost samples not in a C function or method
			    * (what exact mode counts as its self time) */
	bool torch;
	uint32_t row;      /* for isc_pysamp_slot_thread */
};
/* The slots seen, into a malloc'ed *out (the caller frees it); the count, or -ENOMEM. */
int isc_pysamp_slots(const struct isc_pysamp *ps, struct isc_pysamp_slot **out, size_t *n);
/* Of s->samples, those taken on thread (pid, tid). */
uint64_t isc_pysamp_slot_thread(const struct isc_pysamp *ps, const struct isc_pysamp_slot *s, uint32_t pid,
				uint32_t tid);
/* Whether any PY_SAMPLE was counted. */
bool isc_pysamp_have(const struct isc_pysamp *ps);

/* The CPU split of cpu.split estimated from the samples, in ns; in_scopes:
 * of the samples taken while a scope was open (cpu.in_iterations.split). */
struct isc_pysamp_split {
	uint64_t python_on_ns;   /* on CPU, running bytecode */
	uint64_t torch_on_ns;    /* on CPU in a call or operator counted as a torch op */
	uint64_t other_c_on_ns;  /* on CPU in any other C call (or no Python frame) */
	uint64_t off_py_ns;      /* off CPU with bytecode innermost */
	uint64_t off_native_ns;  /* off CPU in a call (sleep, I/O, a lock) */
};
void isc_pysamp_split(const struct isc_pysamp *ps, bool in_scopes, struct isc_pysamp_split *s);
/* The same for one thread's samples; false (s zeroed) when it has none. */
bool isc_pysamp_thread_split(const struct isc_pysamp *ps, uint32_t pid, uint32_t tid, struct isc_pysamp_split *s);

/* Writes root.python.samples (top_n rows per table). */
void isc_pysamp_emit(const struct isc_pysamp *ps, const struct isc_timeline *t, struct isc_jb *jb, cJSON *root,
		     unsigned top_n);
/* --python=sample, no call spans: fills cpu.top_functions and
 * top_functions_in_scopes (python rows by bytecode self time, op rows by
 * C callee, named as exact mode names it), cpu.functions, scoped_ns and
 * top_op_callers (by calling function) from the samples; calls are null
 * (not counted). */
void isc_pysamp_emit_cpu(const struct isc_pysamp *ps, const struct isc_timeline *t, struct isc_jb *jb, cJSON *cpu,
			 uint64_t traced_ns, unsigned top_n);
/* Writes the sampler's rate and cost into obj (recording.sampler). */
void isc_pysamp_emit_sampler(const struct isc_pysamp *ps, struct isc_jb *jb, cJSON *obj, uint64_t wall_ns);

/* Wilson score interval of k successes in n trials at 95 % (z = 1.96). */
void isc_wilson95(uint64_t k, uint64_t n, double *lo, double *hi);

#endif
