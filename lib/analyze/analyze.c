/*
 * analyze.c - one streaming pass over a timeline that builds the findings
 * document (formats/findings.schema.json); analyze_sections.c writes the
 * document's sections from the state the pass leaves (analyze_pass.h).
 *
 * State kept during the pass, all bounded by distinct things, never by the
 * trace length (except one 40-byte sample per iteration, for percentiles):
 *
 *   functions  (kind, name_id) -> calls, self, total,    imap + array
 *                                 RSS growth
 *   threads    (pid, tid)      -> span stack, CPU window imap + array
 *   processes  pid             -> samples, exit, command imap + array
 *   scopes     name_id         -> per-iteration samples  imap + array
 *   off-CPU    (reason, span, python fn) -> blocked ns   imap + array
 *   RSS total  -> bucketed least squares (lsq.c)
 *   timeseries -> 256 buckets per channel (analyze_series.c)
 *   sample round, DataLoader time: a few counters
 *
 * Self and total time on one thread's stack:
 *
 *   P [python] |-------------------------------|   self(P) = dur(P) - dur(C)
 *   S [scope]       |--------------------|         transparent: its own
 *   C [op]              |---------|                uncovered time stays in P
 *
 * A span's duration is added to its parent's child time; a scope frame
 * passes only its children's time up, so scopes never take self time from
 * the function that opened them.  total_ns counts a function only in its
 * outermost activation on a thread's stack (a per-thread active counter), so
 * recursion is counted once.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_stats.h" /* isc_quantile_sorted, isc_lsq_*, isc_histogram_linear */
#include "analyze_gpu.h"
#include "isc_util.h"
#include "isc_jbuild.h"
#include "analyze_numa.h"
#include "analyze_wait.h"
#include "analyze_oom.h"
#include "analyze_pass.h"
#include "alloc_sites.h"
#include "isc_trace_int.h" /* EXCEPTION strings */
#include "isc_dist.h"      /* isc_coll_scope */

/* Orders isc_analyze_calib entries by pid. */
static int calib_cmp(const void *x, const void *y)
{
	uint32_t a = ((const struct isc_analyze_calib *)x)->pid, b = ((const struct isc_analyze_calib *)y)->pid;
	return a < b ? -1 : a > b;
}

static struct ana_thread *thread_get(struct ana *a, uint32_t pid, uint32_t tid)
{
	uint32_t *slot;
	if (isc_umap_slot(&a->th_map, (uint64_t)pid << 32 | tid, &slot))
		return NULL;
	if (*slot != ISC_UMAP_NONE)
		return a->ths[*slot];
	struct ana_thread *th = calloc(1, sizeof(*th));
	if (!th || isc_grow(&a->ths, &a->ths_cap, a->nths, sizeof(*a->ths))) {
		free(th);
		return NULL;
	}
	th->pid = pid;
	th->tid = tid;
	*slot = (uint32_t)a->nths;
	a->ths[a->nths++] = th;
	return th;
}

/* The process pid, NULL when no record named it yet. */
static struct ana_proc *proc_find(struct ana *a, uint32_t pid)
{
	uint32_t i = isc_umap_get(&a->pr_map, pid);
	return i != ISC_UMAP_NONE ? a->prs[i] : NULL;
}

static struct ana_proc *proc_get(struct ana *a, uint32_t pid)
{
	uint32_t *slot;
	if (isc_umap_slot(&a->pr_map, pid, &slot))
		return NULL;
	if (*slot != ISC_UMAP_NONE)
		return a->prs[*slot];
	struct ana_proc *p = calloc(1, sizeof(*p));
	if (!p || isc_grow(&a->prs, &a->prs_cap, a->nprs, sizeof(*a->prs))) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	const struct isc_analyze_calib key = { .pid = pid }, *c = NULL;
	if (a->ncalibs) /* chosen in a first pass: applies from the start */
		c = bsearch(&key, a->calibs, a->ncalibs, sizeof(key), calib_cmp);
	if (c) {
		p->have_calib = true;
		memcpy(p->calib, c->f, sizeof(p->calib));
	}
	*slot = (uint32_t)a->nprs;
	a->prs[a->nprs++] = p;
	return p;
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);
	return n >= m && !strcmp(s + n - m, tail);
}

/*
 * DataLoader iteration: the Python function __next__ (qualified or not) of
 * torch/utils/data/dataloader.py, or a Kineto user annotation beginning
 * "enumerate(DataLoader)".
 */
static bool is_dataloader(struct ana *a, uint32_t name_id, uint8_t kind)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, name_id);
	if (!s)
		return false;
	if (kind == ISC_SPAN_SCOPE)
		return !strncmp(s->name, "enumerate(DataLoader)", 21);
	return kind == ISC_SPAN_PYTHON && (!strcmp(s->name, "__next__") || ends_with(s->name, ".__next__")) &&
	       ends_with(s->file, "torch/utils/data/dataloader.py");
}

/* DataLoader time (outermost spans, all threads) from the start up to t, t >= every open begin. */
static uint64_t dl_time(const struct ana *a, uint64_t t)
{
	uint64_t open = a->dl_open * t;
	return a->dl_closed_ns + (open > a->dl_open_begin_sum ? open - a->dl_open_begin_sum : 0);
}

static uint32_t fn_get(struct ana *a, uint32_t name_id, uint8_t kind)
{
	uint32_t *slot;
	if (isc_umap_slot(&a->fn_map, (uint64_t)kind << 32 | name_id, &slot))
		return ISC_UMAP_NONE;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&a->fns, &a->fns_cap, a->nfns, sizeof(*a->fns)))
			return ISC_UMAP_NONE;
		memset(&a->fns[a->nfns], 0, sizeof(*a->fns));
		a->fns[a->nfns].name_id = name_id;
		a->fns[a->nfns].kind = kind;
		a->fns[a->nfns].dataloader = is_dataloader(a, name_id, kind);
		if (kind == ISC_SPAN_OP) {
			const struct isc_tl_string *st = isc_timeline_string_borrow(a->t, name_id);
			a->fns[a->nfns].torch = st && isc_is_torch_op(st->name, st->file);
		}
		*slot = (uint32_t)a->nfns++;
	}
	return *slot;
}

/* The PyTorch profiler's step annotation: "ProfilerStep#" and digits. */
static bool is_profiler_step(struct ana *a, uint32_t name_id)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, name_id);
	const char *p = s ? s->name : "";
	if (strncmp(p, "ProfilerStep#", 13) || !p[13])
		return false;
	for (p += 13; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

static uint32_t scope_get(struct ana *a, uint32_t name_id)
{
	uint32_t *slot;
	if (isc_umap_slot(&a->sc_map, name_id, &slot))
		return ISC_UMAP_NONE;
	if (*slot == ISC_UMAP_NONE) {
		bool step = is_profiler_step(a, name_id);
		if (step && a->step_scope) /* ProfilerStep#5, #6...: one scope, the iterations */
			return *slot = a->step_scope - 1;
		if (isc_grow(&a->scs, &a->scs_cap, a->nscs, sizeof(*a->scs)))
			return ISC_UMAP_NONE;
		memset(&a->scs[a->nscs], 0, sizeof(*a->scs));
		a->scs[a->nscs].name_id = name_id;
		a->scs[a->nscs].dataloader = is_dataloader(a, name_id, ISC_SPAN_SCOPE);
		a->scs[a->nscs].profiler_step = step;
		const struct isc_tl_string *cs = isc_timeline_string_borrow(a->t, name_id);
		a->scs[a->nscs].collective = cs && isc_coll_scope(cs->name) != ISC_COLL_NONE;
		if (step)
			a->step_scope = (uint32_t)a->nscs + 1;
		*slot = (uint32_t)a->nscs++;
	}
	return *slot;
}

static char *dup_text(const uint8_t *p, size_t n, char nul)
{
	return isc_text_dup(p, n, nul, false);
}

/* ---- spans -------------------------------------------------------------- */
static int span_begin(struct ana *a, struct ana_thread *th, const struct isc_tl_event *ev)
{
	if (isc_grow(&th->stack, &th->cap, th->depth, sizeof(*th->stack)))
		return -ENOMEM;
	struct ana_frame *f = &th->stack[th->depth];
	memset(f, 0, sizeof(*f));
	f->span_id = ev->span_id;
	f->begin_ts = ev->ts;
	f->kind = ev->kind;
	f->idx = ISC_UMAP_NONE;
	f->py_fn = th->depth ? th->stack[th->depth - 1].py_fn : ISC_UMAP_NONE;
	bool dl = false;
	if (ev->kind == ISC_SPAN_SCOPE) {
		if ((f->idx = scope_get(a, ev->name_id)) == ISC_UMAP_NONE)
			return -ENOMEM;
		if (!a->scs[f->idx].collective) { /* a collective call is not an iteration's scope */
			if (th->open_scopes++ == 0)
				a->scoped_threads++;
			if (!a->scope_seen || ev->ts < a->scope_ts)
				a->scope_ts = ev->ts;
			a->scope_seen = true;
		}
		f->dl_at_begin = dl_time(a, ev->ts);
		dl = a->scs[f->idx].dataloader;
	} else if (ev->kind == ISC_SPAN_PYTHON || ev->kind == ISC_SPAN_OP) {
		uint32_t *cnt;
		if ((f->idx = fn_get(a, ev->name_id, ev->kind)) == ISC_UMAP_NONE ||
		    isc_umap_slot(&th->active, f->idx, &cnt))
			return -ENOMEM;
		th->spans_begun++;
		/* its call and return hooks run partly in the self time of the
		 * nearest frame that is not transparent (a scope passes time up) */
		for (size_t i = th->depth; i > 0; i--) {
			struct ana_frame *up = &th->stack[i - 1];
			bool transparent = up->kind == ISC_SPAN_SCOPE || up->idx == ISC_UMAP_NONE;
			if (!transparent || i == 1) {
				up->nchild++;
				break;
			}
		}
		if (*cnt == ISC_UMAP_NONE)
			*cnt = 0;
		f->outermost = (*cnt)++ == 0;
		a->fns[f->idx].calls++;
		if (th->open_scopes)
			a->fns[f->idx].scoped_calls++;
		if (ev->kind == ISC_SPAN_PYTHON)
			f->py_fn = f->idx;
		dl = a->fns[f->idx].dataloader;
	}
	f->spans0 = th->spans_begun;
	if (dl) {
		f->dl = th->dl_depth++ ? DL_INNER : DL_OUTER;
		if (f->dl == DL_OUTER) {
			a->dl_open++;
			a->dl_open_begin_sum += f->begin_ts;
		}
	}
	th->depth++;
	return 0;
}

/* Pops the top frame of th, ending at end_ts; complete = a real return was seen. */
static int span_pop(struct ana *a, struct ana_thread *th, uint64_t end_ts, bool complete)
{
	struct ana_frame *f = &th->stack[th->depth - 1];
	struct ana_frame *parent = th->depth > 1 ? f - 1 : NULL;
	uint64_t dur = end_ts > f->begin_ts ? end_ts - f->begin_ts : 0;
	uint64_t self = dur > f->child_ns ? dur - f->child_ns : 0;
	/*
	 * Overhead compensation (iscope-analyze(1)): each recorded event cost
	 * cost_ps, half before its timestamp and half after.  A span's own
	 * call and return put one event's worth inside it, and each span it
	 * encloses two (its call and return), one of them in our self time
	 * for each direct child.  So dur loses (1 + 2 x descendants) events,
	 * self (1 + children) events; parents still see the raw dur, which
	 * makes every self time come out corrected once.
	 */
	uint64_t cps = th->cost_ps;
	uint64_t inner = th->spans_begun - f->spans0, cut;
	bool call = f->kind != ISC_SPAN_SCOPE && f->idx != ISC_UMAP_NONE;
	uint64_t lat = dur; /* dur without the cost of the events inside it */
	if (cps) { /* --no-compensation: only counted */
		cut = isc_ana_cost_ns(cps, (call ? 1 : 0) + 2 * inner);
		if (!a->raw_times)
			lat = dur > cut ? dur - cut : 0;
		cut = isc_ana_cost_ns(cps, (call ? 1 : 0) + f->nchild);
		cut = cut < self ? cut : self;
		if (!a->raw_times)
			self -= cut;
		th->overhead_ns += cut;
	}
	if (f->dl) {
		th->dl_depth--;
		if (f->dl == DL_OUTER) {
			a->dl_open--;
			a->dl_open_begin_sum -= f->begin_ts;
			a->dl_closed_ns += dur;
			a->dl_calls++;
		}
	}
	if (f->kind == ISC_SPAN_SCOPE) {
		struct ana_scope *s = &a->scs[f->idx];
		/* every scope's end is a boundary of the site model: which scope is the iteration is known at the end */
		if (isc_grow(&s->s, &s->cap, s->n, sizeof(*s->s)) || isc_asite_boundary(a->asites, end_ts))
			return -ENOMEM;
		s->s[s->n++] = (struct ana_iter){ f->begin_ts, dur, lat, f->dl_at_begin, dl_time(a, end_ts), th->pid,
						     complete, isc_asite_nmarks(a->asites), th->tid };
		s->total_ns += dur; /* measured: compensation only estimates (sections_run.c) */
		if (!s->collective && th->open_scopes && --th->open_scopes == 0 && a->scoped_threads)
			a->scoped_threads--;
		/* the with-block's own code (a wait in `with lock:`, whose
		 * __enter__ no profile event brackets) ran inside the iteration:
		 * counted once, at the outermost scope, whose self time holds
		 * that of the scopes inside it */
		if (!parent || parent->kind != ISC_SPAN_SCOPE) {
			th->it_python_ns += self;
			a->after_scope_ns += self;
		}
		a->after_at_scope_end = a->after_scope_ns;
		a->cpu_after_at_scope_end = a->cpu_after_scope_ns;
		a->ps_at_scope_end = a->ps_after;
		a->ps_busy_at_scope_end = a->ps_busy_after;
		if (parent)
			parent->child_ns += dur - self;
		else
			th->python_ns += self; /* the with-block's own code */
	} else if (f->idx != ISC_UMAP_NONE) {
		struct ana_fn *fs = &a->fns[f->idx];
		fs->self_ns += self;
		if (th->open_scopes)
			fs->scoped_self_ns += self;
		if (f->outermost)
			fs->total_ns += lat;
		uint32_t *cnt = NULL;
		if (!isc_umap_slot(&th->active, f->idx, &cnt) && *cnt != ISC_UMAP_NONE && *cnt > 0)
			(*cnt)--;
		if (a->scope_seen && f->begin_ts >= a->scope_ts) /* not <module>, main(): their self time is mostly before */
			a->after_scope_ns += self;
		if (f->kind == ISC_SPAN_PYTHON) {
			th->python_ns += self;
			if (th->open_scopes)
				th->it_python_ns += self;
		} else {
			th->ops_ns += self;
			if (th->open_scopes)
				th->it_ops_ns += self;
			if (fs->torch) {
				th->torch_ns += self;
				if (th->open_scopes)
					th->it_torch_ns += self;
			}
			if (f->py_fn != ISC_UMAP_NONE) {
				a->fns[f->py_fn].ops_self_ns += self;
				if (th->open_scopes)
					a->fns[f->py_fn].scoped_ops_self_ns += self;
			}
		}
		if (parent)
			parent->child_ns += dur;
	} else if (parent) { /* unknown span kind: transparent like a scope */
		parent->child_ns += dur - self;
	}
	th->depth--;
	return 0;
}

static int span_end(struct ana *a, struct ana_thread *th, const struct isc_tl_event *ev)
{
	size_t i = th->depth;
	while (i > 0 && th->stack[i - 1].span_id != ev->span_id)
		i--;
	if (i == 0) {
		a->unmatched_ends++;
		return 0;
	}
	int rc;
	while (th->depth > i) { /* inner spans whose end was lost */
		a->unclosed_spans++;
		if ((rc = span_pop(a, th, ev->ts, false)))
			return rc;
	}
	if (ev->flags & 1)
		a->merge_closed_spans++;
	return span_pop(a, th, ev->ts, !(ev->flags & 1));
}

/* ---- sampler records ------------------------------------------------------ */
/*
 * Sample rounds.  The recorder's sampler stamps every record of one tick
 * with the same time, so a round is the THREAD_SAMPLEs that follow its
 * first one within ROUND_WINDOW_NS (for samplers that stamp each thread)
 * and name no thread twice.  At the end of a round its count of threads in
 * state R goes to timeseries.runnable_threads and cpu.runnable_threads_*.
 */
#define ROUND_WINDOW_NS 1000000u

static int round_close(struct ana *a)
{
	if (!a->round_open)
		return 0;
	a->round_open = false;
	a->rounds++;
	a->runnable_sum += a->round_runnable;
	if (a->round_runnable > a->runnable_max)
		a->runnable_max = a->round_runnable;
	if (a->round_in_it) {
		a->it_rounds++;
		a->it_runnable_sum += a->round_runnable;
		if (a->round_runnable > a->it_runnable_max)
			a->it_runnable_max = a->round_runnable;
	}
	return isc_series_point(a->series, ISC_SER_RUNNABLE, a->round_t0, (double)a->round_runnable);
}

static int round_sample(struct ana *a, struct ana_thread *th, const struct isc_tl_event *ev)
{
	int rc;
	bool later = ev->ts < a->round_t0 || ev->ts - a->round_t0 > ROUND_WINDOW_NS || th->round == a->round_id;
	if (a->round_open && later && (rc = round_close(a)))
		return rc;
	if (!a->round_open) {
		a->round_open = true;
		a->round_t0 = ev->ts;
		a->round_id++;
		a->round_runnable = 0;
		a->round_in_it = a->scoped_threads > 0;
	}
	th->round = a->round_id;
	a->round_runnable += ev->f[4] == 'R';
	return 0;
}

/* The innermost frame of th with a known kind, or NULL. */
/* A stack sample of th this recent stands in for its call spans (sample mode). */
#define PY_SAMPLE_FRESH_NS 1000000000u

static const struct ana_frame *known_top(const struct ana_thread *th)
{
	size_t i = th->depth;
	while (i > 0 && th->stack[i - 1].idx == ISC_UMAP_NONE)
		i--;
	/* --python=sample: no call spans, at most scopes: the innermost Python
	 * function of the thread's last stack sample is the better place */
	if ((!i || th->stack[i - 1].kind == ISC_SPAN_SCOPE) && th->py_ts && !th->spans_begun &&
	    th->py_frame.idx != ISC_UMAP_NONE)
		return &th->py_frame;
	return i ? &th->stack[i - 1] : NULL;
}

#define STICKY_NS 1000000000u /* how long a thread's last known reason stands in for a short D wait */

/*
 * A timed futex wait seen in a C call is the GIL's too when it waits on
 * the word the process's GIL waits in Python code use: a thread forced to
 * drop the GIL right after a call returned still shows that call as its
 * innermost (sampled) frame (issue 14's known limit).  GIL_VOTES such
 * waits must agree before the word is trusted.
 */
#define GIL_VOTES 3
static unsigned gil_word(struct ana_proc *p, const struct ana_thread *th, unsigned r)
{
	if (!p || th->wait_call != ISC_WAIT_FUTEX || !th->wait_timed)
		return r;
	if (r == ISC_OFF_GIL) {
		if (!p->gil_votes)
			p->gil_word = th->wait_addr;
		p->gil_votes += p->gil_word == th->wait_addr ? 1 : (uint64_t)-1;
	} else if (r == ISC_OFF_THREAD_WAIT && p->gil_votes >= GIL_VOTES && th->wait_addr == p->gil_word) {
		r = ISC_OFF_GIL;
	}
	return r;
}

/*
 * Reason th is blocked at the sample of time ts (state): from its
 * THREAD_WAIT of the same tick (written just before the THREAD_SAMPLE),
 * else other.  A timed futex wait while the innermost frame that is not a
 * scope is Python code (no C call open) is the GIL, as is one on the
 * process's GIL word (gil_word).  A thread in state D
 * whose system call had ended by the time the sampler read it ("running":
 * a page fault or disk read served within microseconds) takes the reason
 * of its last wait that had one, when that was in the last STICKY_NS.
 */
static unsigned off_reason(struct ana_proc *p, struct ana_thread *th, uint64_t ts, char state)
{
	if (th->wait_ts != ts)
		return ISC_OFF_OTHER;
	if (state == 'D' && (th->wait_call == ISC_WAIT_RUNNING || th->wait_call == ISC_WAIT_UNKNOWN))
		return th->known_ts && ts - th->known_ts <= STICKY_NS ? th->known_reason : ISC_OFF_OTHER;
	const struct ana_frame *f = NULL;
	for (size_t i = th->depth; i > 0 && !f; i--)
		if (th->stack[i - 1].idx != ISC_UMAP_NONE && th->stack[i - 1].kind != ISC_SPAN_SCOPE)
			f = &th->stack[i - 1];
	bool in_py = f ? f->kind == ISC_SPAN_PYTHON : th->py_ts && !th->spans_begun && !th->py_in_c; /* sample mode: bytecode innermost */
	unsigned r = isc_off_reason_of(th->wait_call, th->wait_kind, state, th->wait_fault ? "fault" : "",
				       th->wait_fault ? 5 : 0, th->wait_timed, in_py);
	r = gil_word(p, th, r);
	if (r != ISC_OFF_OTHER) {
		th->known_reason = (uint8_t)r;
		th->known_ts = ts;
	}
	return r;
}

/* The part of off_cpu_add() inside iterations (a scope open on th): cpu.in_iterations. */
static int off_it_add(struct ana *a, struct ana_thread *th, const struct ana_frame *f, uint64_t ns, unsigned reason)
{
	struct ana_off_acc *o = &a->it_off;
	bool scope = f->kind == ISC_SPAN_SCOPE;
	uint32_t *slot;
	if (isc_umap_slot(&o->map,
			  (uint64_t)reason << 60 | (uint64_t)scope << 59 | (uint64_t)(f->idx & 0x7ffffff) << 32 | f->py_fn,
			  &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&o->rows, &o->cap, o->n, sizeof(*o->rows)))
			return -ENOMEM;
		o->rows[o->n] = (struct ana_off_row){ f->idx, f->py_fn, scope, (uint8_t)reason, 0 };
		*slot = (uint32_t)o->n++;
	}
	o->rows[*slot].ns += ns;
	o->blocked_ns += ns;
	o->reason_ns[reason] += ns;
	th->it_blk_ns += ns;
	if (f->kind == ISC_SPAN_OP) {
		th->it_blk_ops_ns += ns;
		if (a->fns[f->idx].torch) {
			th->it_blk_torch_ns += ns;
			o->reason_torch_ns[reason] += ns;
		}
	}
	if (th->dl_depth)
		o->reason_dl_ns[reason] += ns;
	return 0;
}

/*
 * cpu.off_cpu_top and cpu.off_cpu_reasons: ns blocked for a reason,
 * charged to the innermost span of th with a known kind and to that span's
 * nearest Python function.
 */
static int off_cpu_add(struct ana *a, struct ana_thread *th, uint64_t ns, unsigned reason)
{
	const struct ana_frame *f = known_top(th);
	if (!f)
		return 0;
	bool scope = f->kind == ISC_SPAN_SCOPE;
	uint32_t *slot;
	/* function indexes stay below 2^27 (memory runs out long before) */
	if (isc_umap_slot(&a->off_map,
			  (uint64_t)reason << 60 | (uint64_t)scope << 59 | (uint64_t)(f->idx & 0x7ffffff) << 32 | f->py_fn,
			  &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&a->offs, &a->offs_cap, a->noffs, sizeof(*a->offs)))
			return -ENOMEM;
		a->offs[a->noffs] = (struct ana_off_row){ f->idx, f->py_fn, scope, (uint8_t)reason, 0 };
		*slot = (uint32_t)a->noffs++;
	}
	a->offs[*slot].ns += ns;
	a->blocked_ns += ns;
	a->reason_ns[reason] += ns;
	th->blk_ns += ns;
	if (reason == ISC_OFF_GIL)
		th->gil_ns += ns;
	/* sample mode: the stand-in frame's C call, a torch op by the sampler's rule */
	bool sampled_c = f == &th->py_frame && th->py_in_c;
	if (f->kind == ISC_SPAN_OP || sampled_c) {
		th->blk_ops_ns += ns;
		if (sampled_c ? th->py_torch : a->fns[f->idx].torch) {
			th->blk_torch_ns += ns;
			a->reason_torch_ns[reason] += ns;
		}
	}
	if (th->dl_depth)
		a->reason_dl_ns[reason] += ns;
	return th->open_scopes ? off_it_add(a, th, f, ns, reason) : 0;
}

/* THREAD_WAIT: kept for the THREAD_SAMPLE of the same tick; votes for the thread's futex word. */
static void on_thread_wait(struct ana *a, struct ana_thread *th, const struct isc_tl_event *ev)
{
	a->have_wait = true;
	th->wait_ts = ev->ts;
	th->wait_call = ev->f[2];
	th->wait_kind = ev->f[9];
	th->wait_fault = false;
	th->wait_timed = ev->f[7] != 0; /* arg3: a futex's timeout */
	th->wait_addr = ev->f[4];      /* arg0: a futex's word */
	if (ev->nbytes) {
		char w[64];
		size_t n = ev->nbytes < sizeof(w) - 1 ? ev->nbytes : sizeof(w) - 1;
		memcpy(w, ev->bytes, n);
		w[n] = '\0';
		th->wait_fault = isc_off_reason_of(ISC_WAIT_NO_SYSCALL, 0, 'S', w, n, false, false) == ISC_OFF_PAGE_IN;
	}
	if (ev->f[2] == ISC_WAIT_FUTEX) {
		if (!th->futex_votes)
			th->futex = ev->f[4];
		th->futex_votes += th->futex == ev->f[4] ? 1 : (uint64_t)-1;
	}
}

static int on_thread_sample(struct ana *a, struct ana_thread *th, const struct isc_tl_event *ev)
{
	uint64_t cpu = ev->f[2] + ev->f[3];
	int rc;
	if ((rc = round_sample(a, th, ev)))
		return rc;
	/* blocked (S, D) inside a span: the time since its previous sample */
	th->r_samples += ev->f[4] == 'R';
	if (th->py_ts && ev->ts - th->py_ts > PY_SAMPLE_FRESH_NS)
		th->py_ts = 0; /* its stack samples stopped: no stand-in frame */
	bool in_scope = th->open_scopes > 0;
	/* the work of traced threads since the first scope began: CPU time
	 * (cpu.in_iterations.share_pct) */
	if (th->traced && th->have_cpu && ev->ts > th->sample_ts && a->scope_seen)
		a->cpu_after_scope_ns += cpu > th->cpu_ns ? cpu - th->cpu_ns : 0;
	if (th->have_cpu && ev->ts > th->sample_ts && th->prev_in_scope && in_scope) {
		/* an interval inside iterations: its CPU, system and wall time, its switches */
		th->it_pairs++;
		th->it_wall_ns += ev->ts - th->sample_ts;
		th->it_cpu_ns += cpu > th->cpu_ns ? cpu - th->cpu_ns : 0;
		th->it_sys_ns += ev->f[3] > th->sys_ns ? ev->f[3] - th->sys_ns : 0;
		th->it_vcsw += ev->f[6] > th->prev_vcsw ? ev->f[6] - th->prev_vcsw : 0;
		th->it_ivcsw += ev->f[7] > th->prev_ivcsw ? ev->f[7] - th->prev_ivcsw : 0;
	}
	th->prev_in_scope = in_scope;
	th->prev_vcsw = ev->f[6];
	th->prev_ivcsw = ev->f[7];
	if (th->have_cpu && ev->ts > th->sample_ts && (th->depth || th->py_ts)) {
		a->state_samples++;
		if (in_scope)
			a->it_off.state_samples++;
		if ((ev->f[4] == 'S' || ev->f[4] == 'D') &&
		    (rc = off_cpu_add(a, th, ev->ts - th->sample_ts, off_reason(proc_find(a, th->pid), th, ev->ts, (char)ev->f[4]))))
			return rc;
	}
	th->sample_ts = ev->ts;
	th->have_cpu = true;
	th->cpu_ns = cpu;
	th->sys_ns = ev->f[3];
	th->state = ev->f[4] >= 0x20 && ev->f[4] < 0x7f ? (char)ev->f[4] : '?';
	th->last_cpu = ev->f[5];
	th->have_numa = ev->f[8] > 0;
	th->numa_node = ev->f[8] ? ev->f[8] - 1 : 0;
	/* the window of traced activity: inside a span, or (--python=sample)
	 * with a fresh stack sample; its switches tell blocked from preempted */
	if (th->depth == 0 && !th->py_ts)
		return 0;
	if (th->win_n++ == 0) {
		th->w_ts0 = ev->ts;
		th->w_cpu0 = cpu;
		th->w_vcsw0 = ev->f[6];
		th->w_ivcsw0 = ev->f[7];
	}
	th->w_ts1 = ev->ts;
	th->w_cpu1 = cpu;
	th->w_vcsw1 = ev->f[6];
	th->w_ivcsw1 = ev->f[7];
	return 0;
}

/*
 * The thread whose Python stack stands for process pid: its main thread
 * (tid == pid) when traced, else its traced thread with the most events
 * (a scan of all threads: processes are sampled at 10-20 Hz).  NULL if none.
 */
static struct ana_thread *main_thread(struct ana *a, uint32_t pid)
{
	uint32_t i = isc_umap_get(&a->th_map, (uint64_t)pid << 32 | pid);
	if (i != ISC_UMAP_NONE && a->ths[i]->traced)
		return a->ths[i];
	struct ana_thread *best = NULL;
	for (size_t k = 0; k < a->nths; k++) {
		struct ana_thread *th = a->ths[k];
		if (th->pid == pid && th->traced && (!best || th->events > best->events))
			best = th;
	}
	return best;
}

/*
 * memory.growth_sites: an RSS increase of bytes charged to the Python
 * function fn (ISC_UMAP_NONE: none) and the innermost scope open on thread th; not
 * charged when neither is.
 */
static int growth_site(struct ana *a, const struct ana_thread *th, uint32_t fn, uint64_t bytes)
{
	uint32_t fid = fn != ISC_UMAP_NONE ? a->fns[fn].name_id : 0, sid = 0, *slot;
	for (size_t i = th->depth; i > 0 && !sid; i--)
		if (th->stack[i - 1].kind == ISC_SPAN_SCOPE && th->stack[i - 1].idx != ISC_UMAP_NONE)
			sid = a->scs[th->stack[i - 1].idx].name_id;
	if (!fid && !sid)
		return 0;
	if (isc_umap_slot(&a->gs_map, (uint64_t)fid << 32 | sid, &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&a->gs, &a->gs_cap, a->ngs, sizeof(*a->gs)))
			return -ENOMEM;
		a->gs[a->ngs] = (struct gsite){ fid, sid, 0 };
		*slot = (uint32_t)a->ngs++;
	}
	a->gs[*slot].bytes += bytes;
	return 0;
}

static int on_proc_sample(struct ana *a, struct ana_proc *p, const struct isc_tl_event *ev)
{
	uint64_t cpu = ev->f[1] + ev->f[2];
	int rc;
	/* CPU used since the previous sample, spread evenly over the interval */
	if (p->nsamples && ev->ts > p->s_ts1 && cpu >= p->cpu_ns &&
	    (rc = isc_series_interval(a->series, ISC_SER_CPU_CORES, p->s_ts1, ev->ts,
				      (double)(cpu - p->cpu_ns) / (double)(ev->ts - p->s_ts1))))
		return rc;
	/* RSS growth since the previous sample, charged to the Python function running now */
	struct ana_thread *th = main_thread(a, p->pid);
	uint32_t fn = th && th->depth ? th->stack[th->depth - 1].py_fn : ISC_UMAP_NONE;
	if (p->have_rss && ev->f[3] > p->rss && fn != ISC_UMAP_NONE)
		a->fns[fn].growth_bytes += ev->f[3] - p->rss;
	if (p->have_rss && ev->f[3] > p->rss && th && (rc = growth_site(a, th, fn, ev->f[3] - p->rss)))
		return rc;
	if ((rc = isc_oom_rss(a->oom, ev->ts, p->pid, ev->f[3], fn != ISC_UMAP_NONE ? a->fns[fn].name_id : 0)))
		return rc;
	if (!a->have_threads || ev->f[6] > a->threads_max)
		a->threads_max = ev->f[6];
	a->have_threads = true;
	if (p->nsamples++ == 0) {
		p->s_ts0 = ev->ts;
		p->vcsw0 = ev->f[7];
		p->ivcsw0 = ev->f[8];
	}
	p->s_ts1 = ev->ts;
	p->vcsw1 = ev->f[7];
	p->ivcsw1 = ev->f[8];
	p->cpu_ns = cpu;
	p->sys_ns = ev->f[2];
	p->minflt = ev->f[4];
	p->majflt = ev->f[5];
	uint64_t rss = ev->f[3];
	if (p->alive)
		a->rss_total -= p->rss;
	p->alive = p->have_rss = true;
	p->rss = rss;
	if (rss > p->rss_peak)
		p->rss_peak = rss;
	a->rss_total += rss;
	if (!a->have_rss || a->rss_total > a->rss_total_peak) {
		a->rss_total_peak = a->rss_total;
		a->rss_peak_ts = ev->ts;
		isc_asite_snapshot(a->asites, ev->ts); /* what the sampled sites hold at the RSS peak */
	}
	a->have_rss = true;
	(void)isc_lsq_add(a->rss_lsq, ev->ts, (double)a->rss_total); /* ts are ordered */
	return isc_series_point(a->series, ISC_SER_RSS, ev->ts, (double)a->rss_total);
}

/* Keeps the first ANA_MAX_WARNINGS distinct (code, message) warnings, counting repeats. */
static int on_warning(struct ana *a, const struct isc_tl_event *ev)
{
	a->warns_total++;
	for (size_t i = 0; i < a->nwarns; i++) {
		struct ana_warn *w = &a->warns[i];
		if (w->code == ev->f[1] && strlen(w->msg) == ev->nbytes &&
		    !memcmp(w->msg, ev->bytes, ev->nbytes)) {
			w->count++;
			return 0;
		}
	}
	if (a->nwarns == ANA_MAX_WARNINGS)
		return 0;
	char *msg = dup_text(ev->bytes, ev->nbytes, '?');
	if (!msg)
		return -ENOMEM;
	a->warns[a->nwarns++] = (struct ana_warn){ (uint32_t)ev->f[0], ev->f[1], 1, msg };
	return 0;
}

/*
 * META "env.NAME" / "host.NAME" / "record.NAME" (written by iscope-record:
 * the settings a run's speed depends on, and how it recorded) into
 * a->meta, the future environment.meta; other keys (Kineto metadata,
 * distributedInfo) are the GPU pass's.
 */
static void on_meta(struct ana *a, const struct isc_tl_event *ev)
{
	size_t klen = (size_t)ev->f[0];
	if (klen > ev->nbytes || klen > 200 ||
	    (klen < 5 || (memcmp(ev->bytes, "env.", 4) && memcmp(ev->bytes, "host.", 5) &&
			  (klen < 7 || memcmp(ev->bytes, "record.", 7)))))
		return;
	char key[201];
	memcpy(key, ev->bytes, klen);
	key[klen] = '\0';
	char *val = isc_text_dup(ev->bytes + klen, ev->nbytes - klen, '?', true);
	if (val && !strcmp(key, "record.memory_limit")) /* bytes, decimal */
		a->memory_limit = strtoull(val, NULL, 10);
	if (!val || (!a->meta && !(a->meta = cJSON_CreateObject()))) {
		free(val);
		a->jb.oom = true;
		return;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(a->meta, key);
	isc_jb_str(&a->jb, a->meta, key, val);
	free(val);
}

static int on_event(struct ana *a, const struct isc_tl_event *ev)
{
	struct ana_thread *th;
	struct ana_proc *p;
	if (!a->have_ts || ev->ts < a->first_ts)
		a->first_ts = ev->ts;
	isc_series_origin(a->series, ev->ts);
	if (!a->have_ts || ev->ts > a->last_ts)
		a->last_ts = ev->ts;
	a->have_ts = true;
	switch (ev->type) {
	case ISC_REC_TL_SPAN_BEGIN:
	case ISC_REC_TL_SPAN_END:
	case ISC_REC_THREAD_BEGIN:
	case ISC_REC_THREAD_END:
	case ISC_REC_MARK:
		if (!(th = thread_get(a, ev->pid, ev->tid)) || !(p = proc_get(a, ev->pid)))
			return -ENOMEM;
		/* not THREAD_BEGIN: a flight recorder keeps it from the thread's start (run.window_ns) */
		if (ev->type != ISC_REC_THREAD_BEGIN && (!a->first_agent_ts || ev->ts < a->first_agent_ts))
			a->first_agent_ts = ev->ts;
		th->events++;
		th->traced = true;
		th->cost_ps = p->have_calib ? p->calib[1] : 0;
		if (ev->type == ISC_REC_TL_SPAN_BEGIN)
			return span_begin(a, th, ev);
		if (ev->type == ISC_REC_TL_SPAN_END)
			return span_end(a, th, ev);
		if (ev->type == ISC_REC_THREAD_BEGIN && ev->nbytes) {
			free(th->name);
			if (!(th->name = dup_text(ev->bytes, ev->nbytes, '?')))
				return -ENOMEM;
		}
		if (ev->type == ISC_REC_MARK) {
			uint32_t *slot;
			if (isc_umap_slot(&a->mk_map, ev->name_id, &slot))
				return -ENOMEM;
			if (*slot == ISC_UMAP_NONE) {
				if (isc_grow(&a->mks, &a->mks_cap, a->nmks, sizeof(*a->mks)))
					return -ENOMEM;
				a->mks[a->nmks] = (struct ana_mark){ ev->name_id, 0, 0, ev->ts, ev->ts, 1000000, { 0 } };
				*slot = (uint32_t)a->nmks++;
			}
			struct ana_mark *mk = &a->mks[*slot];
			mk->count++;
			mk->sum += ev->value;
			uint64_t at = ev->ts > mk->first_ts ? ev->ts - mk->first_ts : 0;
			while (at / mk->width >= ANA_MARK_BUCKETS) { /* double the width, merging neighbours */
				for (unsigned b = 0; b < ANA_MARK_BUCKETS / 2; b++)
					mk->buckets[b] = mk->buckets[2 * b] + mk->buckets[2 * b + 1];
				memset(mk->buckets + ANA_MARK_BUCKETS / 2, 0, sizeof(mk->buckets) / 2);
				mk->width *= 2;
			}
			mk->buckets[at / mk->width] += (double)ev->value;
			if (ev->ts > mk->last_ts)
				mk->last_ts = ev->ts;
		}
		return 0;
	case ISC_REC_THREAD_SAMPLE:
		if (!(th = thread_get(a, ev->pid, ev->tid)) || !proc_get(a, ev->pid))
			return -ENOMEM;
		return on_thread_sample(a, th, ev);
	case ISC_REC_THREAD_WAIT:
		if (!(th = thread_get(a, ev->pid, ev->tid)) || !proc_get(a, ev->pid))
			return -ENOMEM;
		on_thread_wait(a, th, ev);
		return 0;
	case ISC_REC_THREAD_NAME:
		if (!(th = thread_get(a, ev->pid, ev->tid)) || !proc_get(a, ev->pid))
			return -ENOMEM;
		free(th->comm);
		return (th->comm = dup_text(ev->bytes, ev->nbytes, '?')) ? 0 : -ENOMEM;
	case ISC_REC_PROC_SAMPLE:
		if (!(p = proc_get(a, ev->pid)))
			return -ENOMEM;
		return on_proc_sample(a, p, ev);
	case ISC_REC_PROC_INFO:
		if (!(p = proc_get(a, ev->pid)))
			return -ENOMEM;
		p->have_info = true;
		p->info_ts = ev->ts;
		p->ppid = (uint32_t)ev->f[1];
		free(p->command);
		return (p->command = dup_text(ev->bytes, ev->nbytes, ' ')) ? 0 : -ENOMEM;
	case ISC_REC_PROC_EXIT:
		if (!(p = proc_get(a, ev->pid)))
			return -ENOMEM;
		p->have_exit = true;
		p->exit_status = ev->value;
		p->exit_how = ev->f[2];
		if (p->alive)
			a->rss_total -= p->rss;
		p->alive = false;
		return 0;
	case ISC_REC_SMAPS:
		if (!(p = proc_get(a, ev->pid)))
			return -ENOMEM;
		p->have_smaps = true;
		if (ev->f[3] > p->swap_max)
			p->swap_max = ev->f[3];
		return isc_oom_smaps(a->oom, ev->ts, ev->pid, ev->f[1], ev->f[2], ev->f[3], ev->f[4]);
	case ISC_REC_MEMINFO: {
		uint64_t used = ev->f[2] > ev->f[3] ? ev->f[2] - ev->f[3] : 0;
		if (!a->have_meminfo || used > a->swap_used_max)
			a->swap_used_max = used;
		if (!a->have_meminfo || ev->f[1] < a->mem_avail_min)
			a->mem_avail_min = ev->f[1];
		a->have_meminfo = true;
		return 0;
	}
	case ISC_REC_META:
		on_meta(a, ev);
		return 0;
	case ISC_REC_PRESSURE:
		if (ev->f[0] < 3) {
			struct ana_pressure *ps = &a->psi[ev->f[0]];
			if (ps->n++ == 0) {
				ps->ts0 = ev->ts;
				ps->tot0 = ev->f[1];
			}
			ps->have = true;
			ps->ts1 = ev->ts;
			ps->tot1 = ev->f[1];
			if (ev->f[3] > ps->avg10_max_x100)
				ps->avg10_max_x100 = ev->f[3];
		}
		return 0;
	case ISC_REC_DROPPED:
		a->dropped_sum += ev->f[0];
		if (ev->tid && (th = thread_get(a, ev->pid, ev->tid)))
			th->dropped += ev->f[0];
		return 0;
	case ISC_REC_CALIBRATION:
		if (!(p = proc_get(a, ev->pid)))
			return -ENOMEM;
		if (ev->nf != 6)
			return 0;
		if (!p->have_calib) { /* without a first pass, a process's first one counts */
			p->have_calib = true;
			memcpy(p->calib, ev->f, sizeof(p->calib));
		}
		if (a->ncals < ISC_ANA_CALS) {
			if (isc_grow(&a->cals, &a->cals_cap, a->ncals, sizeof(*a->cals)))
				return -ENOMEM;
			a->cals[a->ncals].pid = ev->pid;
			memcpy(a->cals[a->ncals++].f, ev->f, sizeof(a->cals->f));
		}
		return 0;
	case ISC_REC_WARNING:
		if (ev->nf >= 2 && isc_oom_warning(a->oom, ev->ts, (uint32_t)ev->f[0], ev->f[1], ev->bytes, ev->nbytes))
			return -ENOMEM;
		return on_warning(a, ev);
	case ISC_REC_PY_SAMPLE:
		/* in a scope: the thread's scope spans, which sample mode keeps */
	{
		uint32_t ti = isc_umap_get(&a->th_map, (uint64_t)ev->pid << 32 | ev->tid);
		th = ti != ISC_UMAP_NONE ? a->ths[ti] : NULL;
		int rc = isc_pysamp_add(a->pys, a->t, ev, th && th->open_scopes);
		if (a->scope_seen && ev->nf == 5) {
			bool busy = isc_pysamp_last_busy(a->pys);
			a->ps_after++;
			a->ps_in += th && th->open_scopes;
			a->ps_busy_after += busy;
			a->ps_busy_in += busy && th && th->open_scopes;
		}
		/* the innermost function stands in for call spans in off-CPU
		 * accounting, on a thread that has none (sample mode: exact mode
		 * samples too, and its spans are the better account) */
		const uint8_t *q = ev->bytes, *qe = ev->bytes + ev->nbytes;
		uint64_t id;
		if (th && th->spans_begun)
			th->py_ts = 0; /* a sample from before its first span (the agent starting up) is no stand-in */
		if (!rc && th && !th->spans_begun && ev->nf == 5 && ev->f[4] && !isc_get_varint(&q, qe, &id) &&
		    id <= UINT32_MAX) {
			uint32_t fi = fn_get(a, (uint32_t)id, ISC_SPAN_PYTHON);
			if (fi == ISC_UMAP_NONE)
				return -ENOMEM;
			memset(&th->py_frame, 0, sizeof(th->py_frame));
			th->py_frame.idx = th->py_frame.py_fn = fi;
			th->py_frame.kind = ISC_SPAN_PYTHON;
			th->py_ts = ev->ts;
			th->py_in_c = isc_pysamp_last_in_c(a->pys);
			th->py_torch = th->py_in_c && isc_pysamp_last_torch(a->pys);
		}
		return rc;
	}
	case ISC_REC_PY_SAMPLER:
		return isc_pysamp_add(a->pys, a->t, ev, false);
	case ISC_REC_TL_ALLOC:
	case ISC_REC_TL_FREE:
	case ISC_REC_TL_ALLOC_SITE:
	case ISC_REC_TL_ALLOC_INFO: {
		a->alloc_records = true;
		int rc = isc_asite_event(a->asites, ev);
		return rc == -ENOMEM ? rc : 0; /* a record that does not parse is counted (memory.sampling.bad_records) */
	}
	case ISC_REC_EXCEPTION:
	case ISC_REC_EXCEPTION_REF: {
		struct isc_exception x;
		a->excs_total++;
		if (ev->type == ISC_REC_EXCEPTION_REF) { /* the strings whole, from the string table */
			const struct isc_tl_string *w = ev->nf == 4 ? isc_timeline_string_borrow(a->t, (uint32_t)ev->f[1]) : NULL;
			const struct isc_tl_string *ty = w ? isc_timeline_string_borrow(a->t, (uint32_t)ev->f[2]) : NULL;
			const struct isc_tl_string *mg = ty ? isc_timeline_string_borrow(a->t, (uint32_t)ev->f[3]) : NULL;
			if (!mg)
				return 0;
			x = (struct isc_exception){ (const uint8_t *)ty->name, (const uint8_t *)w->file, (const uint8_t *)w->name,
						    (const uint8_t *)mg->name, strlen(ty->name), strlen(w->file),
						    strlen(w->name), strlen(mg->name) };
		} else if (ev->nf < 1 || isc_exception_parse(ev->bytes, ev->nbytes, &x)) {
			return 0;
		}
		if (isc_oom_exception(a->oom, ev->ts, ev->pid, &x, ev->f[0]))
			return -ENOMEM;
		int64_t gpu = isc_oom_exception_gpu(&x);
		if (gpu >= -1) /* a CUDA out of memory: what the device held now, unless its failed allocation was recorded */
			isc_asite_exception(a->asites, ev->ts, ev->pid, gpu);
		if (a->nexcs >= ANA_MAX_EXCEPTIONS)
			return 0;
		struct ana_exc *e = &a->excs[a->nexcs];
		*e = (struct ana_exc){ ev->pid, ev->tid, ev->ts, ev->f[0], isc_text_dup(x.type, x.ntype, '?', false),
				       isc_text_dup(x.file, x.nfile, '?', false), isc_text_dup(x.func, x.nfunc, '?', false),
				       isc_text_dup(x.msg, x.nmsg, '?', false) };
		a->nexcs++;
		if (!e->type || !e->file || !e->func || !e->msg)
			return -ENOMEM;
		return 0;
	}
	default:
		return 0;
	}
}

/*
 * Exact mode: an operator on an extension's object (x @ w on tensors)
 * runs its C code with no call event, inside its Python function's self
 * time.  The stack samples saw which share of that function's self time
 * sat in each such slot (isc_pysamp_slots): that share moves from the
 * function to an op row named after the slot (Tensor.__matmul__; calls
 * not counted), and from each thread's Python time to its op (and torch
 * op) time in proportion to the thread's samples of it.  Sample mode has
 * no call spans: nothing to move, the samples make every row there.
 */
static int slots_to_ops(struct ana *a)
{
	struct isc_pysamp_slot *v;
	size_t n;
	uint64_t spans = 0;
	for (size_t i = 0; i < a->nths; i++)
		spans += a->ths[i]->spans_begun;
	if (!spans || isc_pysamp_slots(a->pys, &v, &n))
		return spans ? -ENOMEM : 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t fi = isc_umap_get(&a->fn_map, (uint64_t)ISC_SPAN_PYTHON << 32 | v[i].fn);
		if (fi == ISC_UMAP_NONE || !v[i].eligible || !v[i].callee)
			continue;
		double share = (double)v[i].samples / (double)v[i].eligible;
		share = share > 1 ? 1 : share;
		uint64_t moved = (uint64_t)llround((double)a->fns[fi].self_ns * share);
		uint64_t moved_in = (uint64_t)llround((double)a->fns[fi].scoped_self_ns * share);
		uint32_t oi = fn_get(a, v[i].callee, ISC_SPAN_OP);
		if (oi == ISC_UMAP_NONE) {
			free(v);
			return -ENOMEM;
		}
		struct ana_fn *f = &a->fns[fi], *op = &a->fns[oi];
		op->sampled = true;
		op->torch = op->torch || v[i].torch;
		op->self_ns += moved;
		op->total_ns += moved;
		op->scoped_self_ns += moved_in;
		f->self_ns -= moved;
		f->scoped_self_ns -= moved_in;
		f->ops_self_ns += moved;
		f->scoped_ops_self_ns += moved_in;
		for (size_t k = 0; k < a->nths; k++) {
			struct ana_thread *th = a->ths[k];
			uint64_t ts = isc_pysamp_slot_thread(a->pys, &v[i], th->pid, th->tid);
			if (!ts)
				continue;
			double part = (double)ts / (double)v[i].samples;
			uint64_t m = (uint64_t)llround((double)moved * part), mi = (uint64_t)llround((double)moved_in * part);
			m = m < th->python_ns ? m : th->python_ns;
			mi = mi < th->it_python_ns ? mi : th->it_python_ns;
			th->python_ns -= m;
			th->ops_ns += m;
			th->it_python_ns -= mi;
			th->it_ops_ns += mi;
			if (op->torch) {
				th->torch_ns += m;
				th->it_torch_ns += mi;
			}
		}
	}
	free(v);
	return 0;
}

void isc_ana_release(struct ana *a)
{
	cJSON_Delete(a->meta);
	for (size_t i = 0; i < a->nexcs; i++) {
		free(a->excs[i].type);
		free(a->excs[i].file);
		free(a->excs[i].func);
		free(a->excs[i].msg);
	}
	for (size_t i = 0; i < a->nths; i++) {
		struct ana_thread *th = a->ths[i];
		free(th->name);
		free(th->comm);
		free(th->stack);
		isc_umap_free(&th->active);
		free(th);
	}
	for (size_t i = 0; i < a->nprs; i++) {
		free(a->prs[i]->command);
		free(a->prs[i]);
	}
	for (size_t i = 0; i < a->nscs; i++)
		free(a->scs[i].s);
	isc_umap_free(&a->fn_map);
	isc_umap_free(&a->th_map);
	isc_umap_free(&a->pr_map);
	free(a->cals);
	isc_umap_free(&a->sc_map);
	isc_umap_free(&a->mk_map);
	isc_umap_free(&a->off_map);
	free(a->offs);
	isc_umap_free(&a->it_off.map);
	free(a->it_off.rows);
	free(a->fns);
	free(a->ths);
	free(a->prs);
	free(a->scs);
	free(a->mks);
	for (size_t i = 0; i < a->nwarns; i++)
		free(a->warns[i].msg);
	isc_lsq_free(a->rss_lsq);
	isc_gpu_ana_free(a->gpu);
	isc_oom_free(a->oom);
	isc_umap_free(&a->gs_map);
	free(a->gs);
	isc_series_free(a->series);
	isc_pysamp_free(a->pys);
	isc_nat_free(a->nat);
	isc_numa_free(a->numa);
	isc_asite_free(a->asites);
	free(a->asteady);
	free(a->amarks);
}

/*
 * The next event of t for an analysis pass: 1, or 0 at the end or when it
 * stops at damage, or -ENOMEM.  Damaged chunks are skipped (the container
 * resynchronises at the next frame), up to 100000 of them; any other read
 * error ends the pass.  *ndamage counts them; the first one's message goes
 * to first_err[errlen] when first_err is not NULL.  Both passes (the first,
 * isc_analyze_calibrations, and the measuring one) read through it, so they
 * see the same events.
 */
int isc_ana_next(struct isc_timeline *t, struct isc_tl_event *ev, uint64_t *ndamage, char *first_err, size_t errlen)
{
	int rc;
	while ((rc = isc_timeline_next(t, ev)) < 0) {
		if (rc == -ENOMEM)
			return rc;
		if (!(*ndamage)++ && first_err)
			snprintf(first_err, errlen, "%s", isc_err_msg());
		isc_err_clear();
		if (rc != -EBADMSG || *ndamage >= 100000)
			return 0;
		/* the container resynchronises at the next frame */
	}
	return rc;
}

/* The first pass (isc_analyze.h): each process's lowest nonzero calibration. */
int isc_analyze_calibrations(struct isc_timeline *t, struct isc_analyze_calib **out, size_t *n)
{
	return isc_ana_first_pass(t, out, n, NULL, NULL, false);
}

int isc_ana_first_pass(struct isc_timeline *t, struct isc_analyze_calib **out, size_t *n,
		       int (*hook)(void *ctx, const struct isc_tl_event *ev), void *ctx, bool untimed_only)
{
	struct isc_umap map = { 0 };
	struct isc_analyze_calib *v = NULL;
	size_t nv = 0, cap = 0;
	struct isc_tl_event ev;
	uint64_t ndamage = 0;
	int rc;
	*out = NULL;
	*n = 0;
	while ((rc = isc_ana_next(t, &ev, &ndamage, NULL, 0)) != 0) { /* past damage, which the analysis reports */
		int hr = rc < 0 || !hook ? 0 : hook(ctx, &ev);
		if (rc < 0 || (hr && hr != ISC_ANA_STOP)) {
			rc = rc < 0 ? rc : hr;
			goto fail;
		}
		if (hr == ISC_ANA_STOP)
			break;
		if (untimed_only && ev.type < 0x80)
			break;
		if (ev.type != ISC_REC_CALIBRATION || ev.nf != 6)
			continue;
		uint32_t *slot;
		if ((rc = isc_umap_slot(&map, ev.pid, &slot)))
			goto fail;
		if (*slot == ISC_UMAP_NONE) { /* the process's first */
			if ((rc = isc_grow(&v, &cap, nv, sizeof(*v))))
				goto fail;
			*slot = (uint32_t)nv;
			v[nv].pid = ev.pid;
			memcpy(v[nv++].f, ev.f, sizeof(v->f));
		} else if (ev.f[1] && (!v[*slot].f[1] || ev.f[1] < v[*slot].f[1])) { /* a lower nonzero cost */
			memcpy(v[*slot].f, ev.f, sizeof(v->f));
		}
	}
	isc_umap_free(&map);
	isc_sort(v, nv, sizeof(*v), calib_cmp);
	*out = v;
	*n = nv;
	return 0;
fail:
	isc_umap_free(&map);
	free(v);
	isc_err_push("out of memory");
	return rc < 0 ? rc : -ENOMEM;
}

int isc_ana_init(struct ana *a, struct isc_timeline *t, const struct isc_analyze_opts *o)
{
	*a = (struct ana){ .t = t, .top_n = o && o->top_n ? o->top_n : ISC_ANALYZE_TOP_DEFAULT,
			   .raw_times = o && o->raw_times, .calibs = o ? o->calibs : NULL,
			   .ncalibs = o && o->calibs ? o->ncalibs : 0 };
	int rc;
	if ((rc = isc_lsq_new(&a->rss_lsq)) || (rc = isc_series_new(&a->series)) || (rc = isc_pysamp_new(&a->pys)) ||
	    (rc = isc_nat_new(&a->nat, o && o->native_nodes ? o->native_nodes : ISC_ANALYZE_NATIVE_NODES_DEFAULT)) ||
	    (rc = isc_numa_new(&a->numa)) || (rc = isc_oom_new(&a->oom)) || (rc = isc_asite_new(&a->asites)) ||
	    (rc = isc_gpu_ana_new(&a->gpu, t, o && o->hta_compat, a->series, a->asites)))
		return rc;
	return 0;
}

int isc_ana_event(struct ana *a, const struct isc_tl_event *ev)
{
	int rc;
	if ((rc = on_event(a, ev)) || (rc = isc_gpu_ana_event(a->gpu, ev)) || (rc = isc_numa_event(a->numa, ev)) ||
	    (rc = isc_nat_event(a->nat, a, ev)))
		return rc;
	return 0;
}

cJSON *isc_ana_finish(struct ana *a, bool damaged, int *rc)
{
	cJSON *doc;
	isc_nat_finish(a->nat, a);
	if ((*rc = round_close(a)))
		return NULL;
	/* spans still open: their end was never recorded; close them at the last time seen */
	for (size_t i = 0; i < a->nths; i++) {
		struct ana_thread *th = a->ths[i];
		while (th->depth) {
			a->unclosed_spans++;
			if ((*rc = span_pop(a, th, a->last_ts, false)))
				return NULL;
		}
	}
	if ((*rc = slots_to_ops(a)))
		return NULL;
	if (!(doc = isc_ana_build(a, damaged)))
		*rc = -ENOMEM;
	return doc;
}

int isc_analyze_measure(struct isc_timeline *t, const struct isc_analyze_opts *o, cJSON **out)
{
	struct ana a;
	struct isc_tl_event ev;
	char first_err[512] = "";
	uint64_t ndamage = 0;
	int rc;
	*out = NULL;
	if ((rc = isc_ana_init(&a, t, o)))
		goto done;
	while ((rc = isc_ana_next(t, &ev, &ndamage, first_err, sizeof(first_err))) != 0) {
		if (rc < 0)
			goto done;
		if ((rc = isc_ana_event(&a, &ev)))
			goto done;
		if (o && o->progress && !(isc_timeline_stats_borrow(t)->events & 0xffff))
			o->progress(o->progress_ctx, isc_timeline_stats_borrow(t)->events, ev.ts);
	}
	if (o && o->progress)
		o->progress(o->progress_ctx, isc_timeline_stats_borrow(t)->events, a.last_ts);
	if (!(*out = isc_ana_finish(&a, ndamage > 0, &rc)))
		goto done;
	rc = isc_ana_damage(t, ndamage, first_err);
done:
	if (rc == -ENOMEM)
		isc_err_push("out of memory");
	isc_ana_release(&a);
	return rc;
}

int isc_ana_damage(struct isc_timeline *t, uint64_t ndamage, const char *first_err)
{
	if (!ndamage)
		return 0;
	unsigned long long kept = (unsigned long long)isc_timeline_stats_borrow(t)->events;
	if (ndamage > 1)
		isc_err_push("%s (and %llu more damaged chunks; analyzed %llu events)", first_err,
			     (unsigned long long)ndamage - 1, kept);
	else
		isc_err_push("%s (analyzed %llu events)", first_err, kept);
	return -EBADMSG;
}
