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
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
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

int isc_mix_pick(uint64_t ts, uint64_t prev_ts, bool prev_off, uint64_t next_ts, bool next_off, uint64_t max_gap)
{
	uint64_t dp = prev_ts && prev_ts <= ts ? ts - prev_ts : UINT64_MAX;
	uint64_t dn = next_ts && next_ts >= ts ? next_ts - ts : UINT64_MAX;
	bool p = dp <= max_gap, n = dn <= max_gap;
	/* a native sample is taken on CPU: an off-CPU Python sample shows the
	 * call the thread waits in, and the thread left or entered that wait
	 * between the two, so the on-CPU one of the two is its stack */
	if (p && n && prev_off != next_off)
		return prev_off ? 1 : -1;
	if (p && dp <= dn)
		return -1;
	if (n && dn < dp)
		return 1;
	return 0;
}

bool isc_mix_py_off(struct isc_mix_pystate *prev, unsigned state, bool have_run, uint64_t run_ns)
{
	bool off = state != 'R' && state != '?';
	if (!off && have_run && prev->have_run && prev->off && run_ns == prev->run_ns)
		off = true;
	*prev = (struct isc_mix_pystate){ off, have_run, run_ns };
	return off;
}

/* ---- pairing over a timeline ---------------------------------------------- */

struct pending {
	uint64_t ts, tag;
	struct isc_stack *st; /* only its first n frames are used */
};

struct mthread {
	uint32_t pid, tid;
	uint64_t prev_ts; /* the latest Python sample, 0 none */
	bool prev_off;    /* it was taken off CPU */
	struct isc_frame *prev;
	unsigned nprev;
	struct pending *wait;
	size_t nwait, capwait;
};

struct isc_mixq {
	uint64_t max_gap;
	isc_mixq_out fn;
	void *ctx;
	struct mthread *th;
	size_t nth, capth;
	struct isc_stack tmp;
};

int isc_mixq_new(struct isc_mixq **out, uint64_t max_gap, isc_mixq_out fn, void *ctx)
{
	struct isc_mixq *q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->max_gap = max_gap;
	q->fn = fn;
	q->ctx = ctx;
	*out = q;
	return 0;
}

static struct mthread *thread_of(struct isc_mixq *q, uint32_t pid, uint32_t tid)
{
	for (size_t i = 0; i < q->nth; i++)
		if (q->th[i].pid == pid && q->th[i].tid == tid)
			return &q->th[i];
	if (q->nth == q->capth) {
		size_t cap = q->capth ? q->capth * 2 : 16;
		struct mthread *n = realloc(q->th, cap * sizeof(*n));
		if (!n)
			return NULL;
		q->th = n;
		q->capth = cap;
	}
	q->th[q->nth] = (struct mthread){ .pid = pid, .tid = tid };
	return &q->th[q->nth++];
}

/* Mixes and hands out waiting stack i of t with the Python frames py. */
static void emit(struct isc_mixq *q, struct mthread *t, size_t i, const struct isc_frame *py, unsigned npy)
{
	unsigned elided = 0;
	isc_mix_stacks(t->wait[i].st, py, npy, &q->tmp, &elided);
	q->fn(q->ctx, t->pid, t->tid, t->wait[i].ts, &q->tmp, npy > 0, elided, t->wait[i].tag);
	free(t->wait[i].st);
}

/* Resolves t's waiting stacks at or before limit, given a next Python
 * sample (next_ts, next_off, py) or none (next_ts 0). */
static void resolve(struct isc_mixq *q, struct mthread *t, uint64_t limit, uint64_t next_ts, bool next_off,
		    const struct isc_frame *py, unsigned npy)
{
	size_t k = 0;
	for (size_t i = 0; i < t->nwait; i++) {
		if (t->wait[i].ts > limit) {
			t->wait[k++] = t->wait[i];
			continue;
		}
		int pick = isc_mix_pick(t->wait[i].ts, t->prev_ts, t->prev_off, next_ts, next_off, q->max_gap);
		if (pick < 0)
			emit(q, t, i, t->prev, t->nprev);
		else if (pick > 0)
			emit(q, t, i, py, npy);
		else
			emit(q, t, i, NULL, 0);
	}
	t->nwait = k;
}

int isc_mixq_native(struct isc_mixq *q, uint32_t pid, uint32_t tid, uint64_t ts, const struct isc_stack *s,
		    uint64_t tag)
{
	struct mthread *t = thread_of(q, pid, tid);
	if (!t)
		return -ENOMEM;
	if (t->nwait == t->capwait) {
		size_t cap = t->capwait ? t->capwait * 2 : 8;
		struct pending *n = realloc(t->wait, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->wait = n;
		t->capwait = cap;
	}
	size_t sz = offsetof(struct isc_stack, f) + (size_t)s->n * sizeof(s->f[0]);
	struct isc_stack *c = malloc(sizeof(*c));
	if (!c)
		return -ENOMEM;
	memcpy(c, s, sz); /* the frames in use; n and truncated follow the array */
	c->n = s->n;
	c->truncated = s->truncated;
	t->wait[t->nwait++] = (struct pending){ ts, tag, c };
	return 0;
}

int isc_mixq_python(struct isc_mixq *q, uint32_t pid, uint32_t tid, uint64_t ts, bool off_cpu,
		    const struct isc_frame *py, unsigned n)
{
	struct mthread *t = thread_of(q, pid, tid);
	if (!t)
		return -ENOMEM;
	resolve(q, t, ts, ts, off_cpu, py, n);
	struct isc_frame *c = malloc((n ? n : 1) * sizeof(*c));
	if (!c)
		return -ENOMEM;
	memcpy(c, py, n * sizeof(*c));
	free(t->prev);
	t->prev = c;
	t->nprev = n;
	t->prev_ts = ts;
	t->prev_off = off_cpu;
	return 0;
}

void isc_mixq_advance(struct isc_mixq *q, uint64_t now)
{
	if (now <= q->max_gap)
		return;
	for (size_t i = 0; i < q->nth; i++)
		if (q->th[i].nwait && q->th[i].wait[0].ts < now - q->max_gap)
			resolve(q, &q->th[i], now - q->max_gap - 1, 0, false, NULL, 0);
}

void isc_mixq_free(struct isc_mixq *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->nth; i++) {
		resolve(q, &q->th[i], UINT64_MAX, 0, false, NULL, 0);
		free(q->th[i].prev);
		free(q->th[i].wait);
	}
	free(q->th);
	free(q);
}
