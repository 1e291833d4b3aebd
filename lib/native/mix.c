/*
 * mix.c - a native stack and the same thread's Python stack into one
 * (unwind.h states the rule and its error).
 *
 *   native (innermost first):  sgemm  at::addmm  THPVariable_matmul
 *                              cfunction_call  _PyEval_EvalFrameDefault
 *                              PyEval_EvalCode  main  __libc_start_main
 *                                            ^ E (innermost eval loop)
 *   python (innermost first):  forward (model.py:12)  <module> (run.py:3)
 *   mixed:                     sgemm  at::addmm  THPVariable_matmul
 *                              forward (model.py:12)  <module> (run.py:3)
 *
 * cfunction_call is dropped with E: it is in the interpreter's file,
 * between E and the first frame that is not.
 */
#include <string.h>

#include "unwind.h"

void isc_mix_stacks(const struct isc_stack *native, const struct isc_frame *py, unsigned npy,
		    struct isc_stack *out, unsigned *elided)
{
	unsigned e = native->n, keep;
	*elided = 0;
	out->n = 0;
	out->truncated = native->truncated;
	for (unsigned i = 0; i < native->n && e == native->n; i++)
		if (native->f[i].interp)
			e = i;
	if (!npy || (e == native->n && !native->truncated)) {
		*out = *native;
		return;
	}
	if (e < native->n) {
		/* the interpreter's call machinery inside E goes with it */
		keep = e;
		while (keep > 0 && native->f[keep - 1].interp_lib && native->f[keep - 1].kind != ISC_FRAME_KERNEL)
			keep--;
		/* C code sandwiched between two evaluation loops is lost */
		unsigned o = e;
		for (unsigned i = e + 1; i < native->n; i++)
			if (native->f[i].interp)
				o = i;
		for (unsigned i = e + 1; i < o; i++)
			*elided += !native->f[i].interp_lib;
		out->truncated = false; /* the Python frames reach the root */
	} else {
		keep = native->n; /* cut before any eval loop: [truncated] stays between */
		out->truncated = false;
	}
	for (unsigned i = 0; i < keep && out->n < ISC_STACK_MAX; i++)
		out->f[out->n++] = native->f[i];
	for (unsigned i = 0; i < npy; i++) {
		if (out->n == ISC_STACK_MAX) {
			out->truncated = true;
			break;
		}
		out->f[out->n++] = py[i];
	}
}

int isc_mix_pick(uint64_t ts, uint64_t prev_ts, uint64_t next_ts, uint64_t max_gap)
{
	uint64_t dp = prev_ts && prev_ts <= ts ? ts - prev_ts : UINT64_MAX;
	uint64_t dn = next_ts && next_ts >= ts ? next_ts - ts : UINT64_MAX;
	if (dp <= dn && dp <= max_gap)
		return -1;
	if (dn < dp && dn <= max_gap)
		return 1;
	return 0;
}
