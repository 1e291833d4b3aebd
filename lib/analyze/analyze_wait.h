/*
 * analyze_wait.h - why a thread was off-CPU (analyze_wait.c): the reason of
 * one blocked thread sample from the sampler's THREAD_WAIT record, and the
 * pool a thread belongs to.  Called by analyze.c; the unit tests call it
 * directly.
 */
#ifndef ANALYZE_WAIT_H
#define ANALYZE_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* cpu.off_cpu_reasons[].reason, in the schema's order */
enum isc_off_reason {
	ISC_OFF_IO_FILE,
	ISC_OFF_IO_NETWORK,
	ISC_OFF_IO_PIPE,
	ISC_OFF_SLEEP,
	ISC_OFF_THREAD_WAIT,
	ISC_OFF_GIL,
	ISC_OFF_PAGE_IN,
	ISC_OFF_OTHER,
	ISC_OFF_N
};

/* The reason's name in the findings ("io_file", ...). */
const char *isc_off_reason_name(unsigned r);

/*
 * Reason of a thread sample in state S or D (state) that a THREAD_WAIT
 * described: call and fd_kind (enum isc_wait_call, enum isc_fd_kind, any
 * value), the wchan text (may be empty), timed: the call has a timeout
 * (its fourth argument, the futex timeout, is not NULL), and in_python:
 * the thread's innermost traced frame was Python code, no C call open.  A
 * timed futex wait in Python code is the GIL (CPython's take_gil waits on
 * its condition variable in switch-interval slices; a blocking
 * lock.acquire() or queue.get() waits with no timeout):
 * man/iscope-analyze.1.in, Off-CPU reasons.
 */
unsigned isc_off_reason_of(uint64_t call, uint64_t fd_kind, char state, const char *wchan, size_t nwchan,
			   bool timed, bool in_python);

/*
 * The pool name of a thread name: trailing numbering ("-3", "_12", ":0",
 * "#2", " 4", repeatedly) cut off, so "pt_thread_3" and "pt_thread_11" are
 * one pool; a name whose last characters are digits with no separator
 * before them ("python3") is kept.  Writes at most cap bytes into out.
 */
void isc_pool_name(const char *name, char *out, size_t cap);

#endif
