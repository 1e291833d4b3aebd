/*
 * analyze_native.c - native stacks in the analysis pass (analyze_native.h).
 *
 *   NATIVE_MAP/TASK/KSYM --> lib/native unwinder (mappings, names)
 *   NATIVE_SAMPLE ---------> unwind --+-- a Python thread's: wait in the
 *                                     |   pairing queue (isc_mixq) for the
 *                                     |   nearest Python sample, mixed
 *                                     |   (exact mode: the thread's span
 *                                     |   stack stands for the sample)
 *                                     +-- any other thread's (a worker):
 *                                         under its dispatcher's Python
 *                                         frames and op, now (below)
 *   PY_SAMPLE -------------> the pairing queue; the thread's dispatch state
 *                                     |
 *                            count(): stack tree (lib/stacks), functions,
 *                            ops, threads, classes for the CPU split
 *
 * Dispatch: a sample of a thread that runs no Python (an OpenMP, torch or
 * OpenBLAS worker, a tokenizer's thread) is put under the Python frames of
 * the one Python thread of its process that is inside a C call at that
 * time (its latest Python sample within DISPATCH_GAP_NS says so, or in
 * exact mode an op span open on it), with that thread's op (the outermost
 * at::_ops frame of its latest native stack, when that stack is within
 * DISPATCH_GAP_NS or was taken on the Python line the thread is on now;
 * else the open op span's name) as a frame between: "forward (m.py:12) >
 * aten::addmm > blas_thread_server > sgemm_kernel".  None such, or more
 * than one: the sample keeps its own stack.  When the dispatcher's op is
 * not known yet (its stacks on that line so far were all cut short: torch's
 * kernels reserve more stack than perf copies, so most of a dispatcher's
 * stacks inside torch.exp end [truncated] before the at::_ops frame), the
 * worker's stack waits, up to PEND_MAX of them, for the first op the
 * dispatcher is seen in on that Python line, and is counted under it then;
 * one still waiting at the end is counted under "[worker threads]".  The worker's thread-start
 * frames (libc's clone, start_thread) are left out of a dispatched stack.
 *
 * State is bounded by distinct things (frames, stacks, threads, pairs of
 * op and line), not by the number of samples; the stacks waiting for a
 * Python sample are at most a Python period's worth, those waiting for
 * their dispatcher's op at most PEND_MAX.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_native.h"
#include "sections.h"   /* struct ana, struct ana_cpu_split */
#include "../native/unwind.h"   /* isc_unwinder_*, isc_mixq_*, isc_native_op, isc_native_class */
#include "../stacks/stacks.h"   /* isc_stree_* */

#define NAT_NONE UINT32_MAX
#define PY_MAX 256                     /* Python frames kept of a sample */
#define PAIR_GAP_NS 10000000ULL        /* the Python sampler's period at 100 Hz: isc_mixq's max_gap */
#define DISPATCH_GAP_NS 25000000ULL    /* a dispatcher's state older than this is not used */
#define PEND_MAX 4096                  /* worker stacks waiting for their dispatcher's op */
#define TOP_FUNCTIONS 50
#define TOP_OPS 30
#define TOP_THREADS 64
#define TOP_ABOVE 3
#define TOP_KERNELS 5

/* A u64 key -> count table (a umap to the index of the count). */
struct cmap {
	struct isc_umap m;
	uint64_t *key, *n;
	size_t len, cap;
};

static int cmap_add(struct cmap *c, uint64_t key, uint64_t inc)
{
	uint32_t *slot;
	if (isc_umap_slot(&c->m, key, &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (c->len == c->cap) {
			size_t cap = c->cap ? c->cap * 2 : 64;
			uint64_t *k = realloc(c->key, cap * sizeof(*k));
			if (k)
				c->key = k;
			uint64_t *v = k ? realloc(c->n, cap * sizeof(*v)) : NULL;
			if (!k || !v) {
				isc_umap_del(&c->m, key);
				return -ENOMEM;
			}
			c->n = v;
			c->cap = cap;
		}
		c->key[c->len] = key;
		c->n[c->len] = 0;
		*slot = (uint32_t)c->len++;
	}
	c->n[*slot] += inc;
	return 0;
}

static void cmap_free(struct cmap *c)
{
	isc_umap_free(&c->m);
	free(c->key);
	free(c->n);
}

struct nthread {
	uint32_t pid, tid;
	bool python;          /* a Python thread: Python samples, or traced spans */
	bool have_py;         /* it has had a PY_SAMPLE */
	char *comm;           /* NATIVE_TASK's name for it */
	/* its latest Python sample: time, in a C call, frames (strings: the timeline's) */
	uint64_t py_ts;
	bool py_in_c;
	struct isc_mix_pystate pystate; /* on or off CPU, for the pairing */
	struct isc_frame *py;
	unsigned npy;
	/* the outermost op of its latest native stack, and the Python line it was on then */
	char op[192];
	uint64_t op_ts;
	struct isc_frame op_line;
	/* counts */
	uint64_t samples, dispatched, cls[2][4]; /* cls[in_scope][enum isc_cpu_class] */
};

struct isc_nat {
	bool have;
	struct isc_native_sampler cfg;
	uint64_t lost, throttled, recorder_samples, drain_cpu_ns;
	bool have_stats;
	struct isc_unwinder *u;
	struct isc_mixq *q;
	struct isc_stree *tree;
	struct ana *a; /* during the pass, for count() */
	struct isc_umap tmap;
	struct nthread *th;
	size_t nth, capth;
	int err;
	/* per frame of the tree's table */
	uint64_t *self, *total, *stamp;
	size_t nf, capf;
	uint64_t nsamples, python_leaf, paired, python_stacks, dispatched;
	/* (op, python frame) pairs -> ctx index; and counts keyed by (x << 32 | y) */
	struct isc_umap ctx_map;
	uint32_t (*ctx)[2];
	size_t nctx, capctx;
	struct cmap above;   /* (function, ctx) */
	struct cmap op_n;    /* (op, 0) samples under the op */
	struct cmap op_leaf; /* (op, leaf function) */
	struct cmap op_inner;/* (op, innermost op) */
	struct cmap op_py;   /* (op, python frame) */
	struct cmap th_leaf; /* (thread, leaf function) */
	struct cmap th_ctx;  /* (thread, ctx) */
	/* what the user sees of unwinding, in the mixed stacks */
	uint64_t frames, unnamed, jit, kernel, truncated_stacks;
	struct unnamed_lib {
		char *lib;
		uint64_t frames;
	} *ul;
	size_t nul, capul;
	size_t max_nodes; /* native.tree: nodes written, "[other]" ones included */
	/* worker stacks waiting for their dispatcher's op on a line (header comment) */
	struct pend {
		uint32_t worker, dispatcher; /* thread indexes */
		struct isc_frame line;       /* the dispatcher's innermost Python frame */
		bool in_scope;
		unsigned opi;                /* the op frame's index in the stack */
		size_t first, n;             /* its frames in pend_fr */
	} *pend;
	size_t npend, cappend;
	struct isc_frame *pend_fr;
	size_t npend_fr, cappend_fr;
};

int isc_nat_new(struct isc_nat **out, unsigned max_nodes)
{
	struct isc_nat *n = calloc(1, sizeof(*n));
	*out = NULL;
	if (!n)
		return -ENOMEM;
	n->max_nodes = max_nodes >= 16 ? max_nodes : 16;
	*out = n;
	return 0;
}

void isc_nat_free(struct isc_nat *n)
{
	if (!n)
		return;
	if (n->q) {
		n->a = NULL; /* what is still waiting is not counted any more */
		isc_mixq_free(n->q);
	}
	isc_unwinder_free(n->u);
	isc_stree_free(n->tree);
	for (size_t i = 0; i < n->nth; i++) {
		free(n->th[i].comm);
		free(n->th[i].py);
	}
	free(n->th);
	isc_umap_free(&n->tmap);
	free(n->self);
	free(n->total);
	free(n->stamp);
	isc_umap_free(&n->ctx_map);
	free(n->ctx);
	cmap_free(&n->above);
	cmap_free(&n->op_n);
	cmap_free(&n->op_leaf);
	cmap_free(&n->op_inner);
	cmap_free(&n->op_py);
	cmap_free(&n->th_leaf);
	cmap_free(&n->th_ctx);
	for (size_t i = 0; i < n->nul; i++)
		free(n->ul[i].lib);
	free(n->ul);
	free(n->pend);
	free(n->pend_fr);
	free(n);
}

bool isc_nat_have(const struct isc_nat *n)
{
	return n && n->have;
}

static struct nthread *nthread_get(struct isc_nat *n, uint32_t pid, uint32_t tid)
{
	uint32_t *slot;
	if (isc_umap_slot(&n->tmap, (uint64_t)pid << 32 | tid, &slot))
		return NULL;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&n->th, &n->capth, n->nth, sizeof(*n->th))) {
			isc_umap_del(&n->tmap, (uint64_t)pid << 32 | tid);
			return NULL;
		}
		memset(&n->th[n->nth], 0, sizeof(*n->th));
		n->th[n->nth].pid = pid;
		n->th[n->nth].tid = tid;
		*slot = (uint32_t)n->nth++;
	}
	return &n->th[*slot];
}

static const struct nthread *nthread_find(const struct isc_nat *n, uint32_t pid, uint32_t tid)
{
	uint32_t i = isc_umap_get(&n->tmap, (uint64_t)pid << 32 | tid);
	return i == ISC_UMAP_NONE ? NULL : &n->th[i];
}

/* ---- counting one stack --------------------------------------------------- */

static bool native_kind(uint8_t k)
{
	return k == ISC_FRAME_NATIVE || k == ISC_FRAME_UNNAMED || k == ISC_FRAME_JIT || k == ISC_FRAME_KERNEL;
}

/* Room for frame index f in the per-frame arrays. */
static int frames_room(struct isc_nat *n, uint32_t f)
{
	if (f < n->nf)
		return 0;
	size_t cap = n->capf ? n->capf : 256;
	while (cap <= f)
		cap *= 2;
	if (cap != n->capf) {
		uint64_t *a = realloc(n->self, cap * sizeof(*a));
		if (a)
			n->self = a;
		uint64_t *b = a ? realloc(n->total, cap * sizeof(*b)) : NULL;
		if (b)
			n->total = b;
		uint64_t *c = b ? realloc(n->stamp, cap * sizeof(*c)) : NULL;
		if (!c)
			return -ENOMEM;
		n->stamp = c;
		n->capf = cap;
	}
	for (size_t i = n->nf; i <= f; i++)
		n->self[i] = n->total[i] = 0, n->stamp[i] = UINT64_MAX;
	n->nf = (size_t)f + 1;
	return 0;
}

/* The index of the (op, python frame) pair. */
static int ctx_index(struct isc_nat *n, uint32_t op, uint32_t py, uint32_t *idx)
{
	uint32_t *slot;
	if (isc_umap_slot(&n->ctx_map, (uint64_t)op << 32 | py, &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&n->ctx, &n->capctx, n->nctx, sizeof(*n->ctx))) {
			isc_umap_del(&n->ctx_map, (uint64_t)op << 32 | py);
			return -ENOMEM;
		}
		n->ctx[n->nctx][0] = op;
		n->ctx[n->nctx][1] = py;
		*slot = (uint32_t)n->nctx++;
	}
	*idx = *slot;
	return 0;
}

static int unnamed_lib(struct isc_nat *n, const char *lib)
{
	for (size_t i = 0; i < n->nul; i++)
		if (!strcmp(n->ul[i].lib, lib)) {
			n->ul[i].frames++;
			return 0;
		}
	if (isc_grow(&n->ul, &n->capul, n->nul, sizeof(*n->ul)))
		return -ENOMEM;
	if (!(n->ul[n->nul].lib = strdup(lib)))
		return -ENOMEM;
	n->ul[n->nul++].frames = 1;
	return 0;
}

/* An op name as a frame of kind ISC_FRAME_OP; NAT_NONE when name is NULL. */
static int op_frame(struct isc_nat *n, const char *name, uint32_t *idx)
{
	*idx = NAT_NONE;
	if (!name)
		return 0;
	struct isc_sframe f = { name, NULL, 0, ISC_FRAME_OP };
	return isc_stree_intern(n->tree, &f, idx);
}

/*
 * Counts one stack (innermost first) of thread th: the tree, the
 * functions (self: the innermost frame; total: once a stack), the ops,
 * the thread's rows, the CPU class of a Python thread's stack, and what
 * unwinding left unnamed.  dispatched: a worker's stack put under its
 * dispatcher; in_scope: a scope was open on the thread (a dispatched
 * stack: on its dispatcher).
 */
static int count(struct isc_nat *n, struct nthread *th, const struct isc_stack *st, bool dispatched, bool in_scope,
		 bool python_thread)
{
	static struct isc_sframe sf[ISC_STACK_MAX];
	static uint32_t fr[ISC_STACK_MAX];
	char opbuf[192], inbuf[192];
	uint32_t leaf, op, inner, py = NAT_NONE, ctx, ti = (uint32_t)(th - n->th), leaf_fn = NAT_NONE;
	uint64_t sn = n->nsamples++;
	unsigned nfr = 0;
	bool truncated = false;
	int rc;
	for (unsigned i = 0; i < st->n; i++) {
		const struct isc_frame *f = &st->f[i];
		sf[i] = (struct isc_sframe){ f->name, f->lib, f->kind == ISC_FRAME_PYTHON ? f->line : 0, f->kind };
		n->frames += native_kind(f->kind) && f->kind != ISC_FRAME_KERNEL;
		n->unnamed += f->kind == ISC_FRAME_UNNAMED;
		n->jit += f->kind == ISC_FRAME_JIT;
		n->kernel += f->kind == ISC_FRAME_KERNEL;
		truncated |= f->kind == ISC_FRAME_TRUNCATED;
		if (f->kind == ISC_FRAME_UNNAMED && f->lib && (rc = unnamed_lib(n, f->lib)))
			return rc;
	}
	n->truncated_stacks += truncated;
	if ((rc = isc_stree_add_at(n->tree, th->pid, th->tid, sf, st->n, 1, &leaf)))
		return rc;
	if ((rc = op_frame(n, isc_native_op(st, true, opbuf, sizeof(opbuf)) ? opbuf : NULL, &op)) ||
	    (rc = op_frame(n, isc_native_op(st, false, inbuf, sizeof(inbuf)) ? inbuf : NULL, &inner)))
		return rc;
	/* the stack's frame indexes, innermost first, from the tree */
	for (uint32_t node = leaf; node != NAT_NONE && nfr < ISC_STACK_MAX;) {
		const struct isc_snode *nd = isc_stree_node(n->tree, node);
		if (nd->frame == NAT_NONE)
			break;
		fr[nfr++] = nd->frame;
		node = nd->parent;
	}
	for (unsigned i = 0; i < nfr; i++) {
		if ((rc = frames_room(n, fr[i])))
			return rc;
		if (py == NAT_NONE && isc_stree_frame(n->tree, fr[i])->kind == ISC_FRAME_PYTHON)
			py = fr[i];
	}
	if (nfr && native_kind(isc_stree_frame(n->tree, fr[0])->kind)) {
		leaf_fn = fr[0];
		n->self[leaf_fn]++;
	} else {
		n->python_leaf++; /* bytecode: no native frame inside the Python ones */
	}
	if ((rc = ctx_index(n, op, py, &ctx)))
		return rc;
	/* total and "above" of each function once per stack (a recursive one too) */
	for (unsigned i = 0; i < nfr; i++) {
		if (!native_kind(isc_stree_frame(n->tree, fr[i])->kind) || n->stamp[fr[i]] == sn)
			continue;
		n->stamp[fr[i]] = sn;
		n->total[fr[i]]++;
		if ((rc = cmap_add(&n->above, (uint64_t)fr[i] << 32 | ctx, 1)))
			return rc;
	}
	if (op != NAT_NONE) {
		if ((rc = cmap_add(&n->op_n, (uint64_t)op << 32, 1)) ||
		    (leaf_fn != NAT_NONE && (rc = cmap_add(&n->op_leaf, (uint64_t)op << 32 | leaf_fn, 1))) ||
		    (inner != NAT_NONE && inner != op && (rc = cmap_add(&n->op_inner, (uint64_t)op << 32 | inner, 1))) ||
		    (py != NAT_NONE && (rc = cmap_add(&n->op_py, (uint64_t)op << 32 | py, 1))))
			return rc;
	}
	if ((leaf_fn != NAT_NONE && (rc = cmap_add(&n->th_leaf, (uint64_t)ti << 32 | leaf_fn, 1))) ||
	    (dispatched && (rc = cmap_add(&n->th_ctx, (uint64_t)ti << 32 | ctx, 1))))
		return rc;
	th->samples++;
	th->dispatched += dispatched;
	n->dispatched += dispatched;
	if (python_thread) {
		enum isc_cpu_class c = isc_native_class(st);
		th->cls[0][c]++;
		th->cls[1][c] += in_scope;
		n->python_stacks++;
	}
	return 0;
}

/* tag of a stack in the pairing queue: bit 0 a scope was open, bit 1 a Python thread's */
#define TAG_SCOPE 1u
#define TAG_PYTHON 2u

static void mixed_out(void *ctx, uint32_t pid, uint32_t tid, uint64_t ts, const struct isc_stack *mixed, bool paired,
		      unsigned elided, uint64_t tag)
{
	struct isc_nat *n = ctx;
	(void)ts;
	(void)elided;
	if (!n->a || n->err)
		return;
	struct nthread *th = nthread_get(n, pid, tid);
	if (!th) {
		n->err = -ENOMEM;
		return;
	}
	n->paired += paired;
	int rc = count(n, th, mixed, false, tag & TAG_SCOPE, tag & TAG_PYTHON);
	if (rc)
		n->err = rc;
}

/* ---- the pass -------------------------------------------------------------- */

static struct ana_thread *ana_thread_of(struct ana *a, uint32_t pid, uint32_t tid)
{
	uint32_t i = isc_umap_get(&a->th_map, (uint64_t)pid << 32 | tid);
	return i == ISC_UMAP_NONE ? NULL : a->ths[i];
}

/*
 * Exact mode: the Python frames of a thread's span stack (innermost
 * first; each function's first line, as the spans know no other) into
 * py, and the name of the innermost open op span into *op (NULL: none).
 */
static unsigned span_frames(struct ana *a, const struct ana_thread *at, struct isc_frame *py, unsigned cap,
			    const char **op)
{
	unsigned k = 0;
	*op = NULL;
	for (size_t i = at ? at->depth : 0; i-- > 0;) {
		const struct ana_frame *fr = &at->stack[i];
		if (fr->idx == ISC_UMAP_NONE || fr->kind == ISC_SPAN_SCOPE)
			continue;
		const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, a->fns[fr->idx].name_id);
		if (fr->kind == ISC_SPAN_OP) {
			if (!*op && s)
				*op = s->name;
			continue;
		}
		if (fr->kind != ISC_SPAN_PYTHON || k == cap)
			continue;
		py[k++] = (struct isc_frame){ s ? s->name : "?", s ? s->file : "", s ? s->line : 0, ISC_FRAME_PYTHON,
					      false, false };
	}
	return k;
}

/* The thread of process pid that dispatched a worker's work at ts (header comment); NULL when none or several. */
static struct nthread *dispatcher(struct isc_nat *n, struct ana *a, uint32_t pid, uint64_t ts)
{
	struct nthread *d = NULL;
	for (size_t i = 0; i < n->nth; i++) {
		struct nthread *c = &n->th[i];
		if (c->pid != pid || !c->python)
			continue;
		bool busy;
		if (c->have_py) {
			busy = c->py_in_c && ts >= c->py_ts && ts - c->py_ts <= DISPATCH_GAP_NS;
		} else {
			const char *op;
			(void)span_frames(a, ana_thread_of(a, c->pid, c->tid), NULL, 0, &op);
			busy = op != NULL;
		}
		if (!busy)
			continue;
		if (d)
			return NULL; /* more than one: not known */
		d = c;
	}
	return d;
}

static bool same_frame(const struct isc_frame *x, const struct isc_frame *y)
{
	return x->name == y->name && x->lib == y->lib && x->line == y->line;
}

/* Counts the waiting stacks of dispatcher di on its Python line `line` under op (NULL: all of them, "[worker threads]"). */
static int pend_resolve(struct isc_nat *n, uint32_t di, const struct isc_frame *line, const char *op)
{
	static struct isc_stack st;
	size_t keep = 0, fr = 0;
	int rc = 0;
	for (size_t i = 0; i < n->npend; i++) {
		struct pend p = n->pend[i];
		if (!rc && (!line || (p.dispatcher == di && same_frame(&p.line, line)))) {
			st.n = (unsigned)p.n;
			st.truncated = false;
			memcpy(st.f, n->pend_fr + p.first, p.n * sizeof(*st.f));
			st.f[p.opi].name = op ? op : "[worker threads]";
			rc = count(n, &n->th[p.worker], &st, true, p.in_scope, false);
			continue;
		}
		/* still waiting: its frames move down */
		memmove(n->pend_fr + fr, n->pend_fr + p.first, p.n * sizeof(*n->pend_fr));
		p.first = fr;
		fr += p.n;
		n->pend[keep++] = p;
	}
	n->npend = keep;
	n->npend_fr = fr;
	return rc;
}

/* Keeps out (the op frame at opi not known yet) until dispatcher d's op on its line is; 1 when there is no room. */
static int pend_add(struct isc_nat *n, const struct nthread *th, const struct nthread *d, const struct isc_stack *out,
		    unsigned opi, bool in_scope)
{
	if (n->npend >= PEND_MAX || isc_grow(&n->pend, &n->cappend, n->npend, sizeof(*n->pend)) ||
	    isc_grow(&n->pend_fr, &n->cappend_fr, n->npend_fr + out->n, sizeof(*n->pend_fr)))
		return 1;
	memcpy(n->pend_fr + n->npend_fr, out->f, out->n * sizeof(*out->f));
	n->pend[n->npend++] = (struct pend){ (uint32_t)(th - n->th), (uint32_t)(d - n->th), d->py[0], in_scope, opi,
					    n->npend_fr, out->n };
	n->npend_fr += out->n;
	return 0;
}

/* A worker's stack at ts under its dispatcher, counted now (or once the dispatcher's op is known). */
static int worker_stack(struct isc_nat *n, struct ana *a, struct nthread *th, const struct isc_stack *st, uint64_t ts)
{
	static struct isc_stack out;
	static struct isc_frame py[PY_MAX];
	struct nthread *d = dispatcher(n, a, th->pid, ts);
	if (!d)
		return count(n, th, st, false, false, false);
	const struct ana_thread *dat = ana_thread_of(a, d->pid, d->tid);
	const char *span_op = NULL;
	unsigned npy;
	if (d->have_py) {
		npy = d->npy < PY_MAX ? d->npy : PY_MAX;
		memcpy(py, d->py, npy * sizeof(*py));
		(void)span_frames(a, dat, NULL, 0, &span_op);
	} else {
		npy = span_frames(a, dat, py, PY_MAX, &span_op);
	}
	/* the op of its latest native stack, if recent or taken on the line it is on now; else its open op span */
	uint64_t dt = ts >= d->op_ts ? ts - d->op_ts : d->op_ts - ts;
	bool same_line = d->npy && same_frame(&d->op_line, &d->py[0]);
	const char *op = d->op[0] && (dt <= DISPATCH_GAP_NS || same_line) ? d->op : span_op;
	/* the worker's own frames, less its thread start (libc's clone, start_thread) */
	unsigned keep = st->n, opi = 0;
	while (keep > 1 && st->f[keep - 1].kind == ISC_FRAME_NATIVE && st->f[keep - 1].lib &&
	       (strstr(st->f[keep - 1].lib, "/libc.so") || strstr(st->f[keep - 1].lib, "/libc-") ||
		strstr(st->f[keep - 1].lib, "/libpthread")))
		keep--;
	out.n = 0;
	out.truncated = false;
	for (unsigned i = 0; i < keep && out.n < ISC_STACK_MAX; i++)
		out.f[out.n++] = st->f[i];
	if (out.n < ISC_STACK_MAX) {
		opi = out.n;
		out.f[out.n++] = (struct isc_frame){ op ? op : "[worker threads]", NULL, 0, ISC_FRAME_OP, false, false };
	}
	for (unsigned i = 0; i < npy && out.n < ISC_STACK_MAX; i++)
		out.f[out.n++] = py[i];
	bool in_scope = dat && dat->open_scopes;
	if (!op && d->have_py && d->npy && opi && !pend_add(n, th, d, &out, opi, in_scope))
		return 0;
	return count(n, th, &out, true, in_scope, false);
}

static int on_py_sample(struct isc_nat *n, struct ana *a, const struct isc_tl_event *ev)
{
	static struct isc_frame py[PY_MAX];
	if (ev->nf != 5)
		return 0;
	const uint8_t *p = ev->bytes, *e = ev->bytes + ev->nbytes;
	uint64_t id, line;
	unsigned k = 0;
	/* its depth (code id, line) pairs; what follows them (the callee, 1.4; the schedstat, 1.9) is no frame */
	while (k < PY_MAX && k < ev->f[4] && !isc_get_varint(&p, e, &id) && !isc_get_varint(&p, e, &line)) {
		const struct isc_tl_string *s = id <= UINT32_MAX ? isc_timeline_string_borrow(a->t, (uint32_t)id) : NULL;
		py[k++] = (struct isc_frame){ s ? s->name : "?", s ? s->file : "", (uint32_t)line, ISC_FRAME_PYTHON, false,
					      false };
	}
	struct nthread *th = nthread_get(n, ev->pid, ev->tid);
	if (!th)
		return -ENOMEM;
	th->python = th->have_py = true;
	th->py_ts = ev->ts;
	th->py_in_c = (ev->f[3] & 3) != 0;
	if (k > th->npy || !th->py) {
		struct isc_frame *c = realloc(th->py, (k ? k : 1) * sizeof(*c));
		if (!c)
			return -ENOMEM;
		th->py = c;
	}
	memcpy(th->py, py, k * sizeof(*py));
	th->npy = k;
	/* off CPU (isc_mix_py_off): its schedstat run time (1.9) follows the callee */
	uint64_t run_ns = 0, wait_ns = 0;
	bool have_run = false;
	if (ev->f[3] & ISC_PY_SAMPLE_SCHED) {
		uint64_t skip;
		bool ok = true;
		for (uint64_t i = k; i < ev->f[4] && ok; i++) /* pairs beyond PY_MAX */
			ok = !isc_get_varint(&p, e, &skip) && !isc_get_varint(&p, e, &skip);
		if (ok && (ev->f[3] & ISC_PY_SAMPLE_CALLEE))
			ok = !isc_get_varint(&p, e, &skip) && !isc_get_varint(&p, e, &skip);
		have_run = ok && !isc_get_varint(&p, e, &run_ns) && !isc_get_varint(&p, e, &wait_ns);
	}
	bool off = isc_mix_py_off(&th->pystate, (unsigned)ev->f[2], have_run, run_ns);
	return n->q ? isc_mixq_python(n->q, ev->pid, ev->tid, ev->ts, off, py, k) : 0;
}

static int on_sample(struct isc_nat *n, struct ana *a, const struct isc_tl_event *ev)
{
	static struct isc_native_sample s;
	static struct isc_stack st;
	static struct isc_frame py[PY_MAX];
	char opbuf[192];
	if (isc_native_sample_parse(ev->raw, ev->nraw, &s))
		return 0; /* the reader checked it; nothing to count */
	int rc = isc_unwinder_unwind(n->u, &s, &st);
	if (rc)
		return rc;
	struct nthread *th = nthread_get(n, s.pid, s.tid);
	if (!th)
		return -ENOMEM;
	struct ana_thread *at = ana_thread_of(a, s.pid, s.tid);
	if (at && at->traced)
		th->python = true;
	if (!th->python)
		return worker_stack(n, a, th, &st, ev->ts);
	if (isc_native_op(&st, true, opbuf, sizeof(opbuf))) {
		snprintf(th->op, sizeof(th->op), "%s", opbuf);
		th->op_ts = ev->ts;
		th->op_line = th->npy ? th->py[0] : (struct isc_frame){ 0 };
		if (n->npend && th->npy && (rc = pend_resolve(n, (uint32_t)(th - n->th), &th->op_line, th->op)))
			return rc;
	}
	if (!th->have_py) { /* exact mode: the span stack is the Python sample */
		const char *op;
		unsigned k = span_frames(a, at, py, PY_MAX, &op);
		if (k && (rc = isc_mixq_python(n->q, s.pid, s.tid, ev->ts, false, py, k)))
			return rc;
	}
	uint64_t tag = TAG_PYTHON | (at && at->open_scopes ? TAG_SCOPE : 0);
	return isc_mixq_native(n->q, s.pid, s.tid, ev->ts, &st, tag);
}

int isc_nat_event(struct isc_nat *n, struct ana *a, const struct isc_tl_event *ev)
{
	int rc = 0;
	if (n->err)
		return n->err;
	if (ev->type == ISC_REC_NATIVE_SAMPLER && !n->have) {
		if (isc_native_sampler_parse(ev->raw, ev->nraw, &n->cfg))
			return 0;
		if ((rc = isc_unwinder_new(&n->u, NULL)) || (rc = isc_stree_new(&n->tree)) ||
		    (rc = isc_mixq_new(&n->q, PAIR_GAP_NS, mixed_out, n)))
			return rc;
		n->have = true;
	}
	if (!n->have)
		return 0;
	n->a = a;
	isc_mixq_advance(n->q, ev->ts);
	switch (ev->type) {
	case ISC_REC_PY_SAMPLE:
		rc = on_py_sample(n, a, ev);
		break;
	case ISC_REC_NATIVE_SAMPLE:
		rc = on_sample(n, a, ev);
		break;
	case ISC_REC_NATIVE_LOST:
		n->lost += ev->nf >= 3 ? ev->f[2] : 0;
		break;
	case ISC_REC_NATIVE_STATS:
		if (ev->nf >= 8) {
			n->have_stats = true;
			n->recorder_samples = ev->f[2];
			n->throttled = ev->f[4];
			n->drain_cpu_ns = ev->f[7];
		}
		break;
	case ISC_REC_NATIVE_TASK: {
		struct isc_native_task t;
		if (!isc_native_task_parse(ev->raw, ev->nraw, &t) && t.what == ISC_NATIVE_TASK_COMM && t.comm_len) {
			struct nthread *th = nthread_get(n, t.pid, t.tid);
			char *c = isc_text_dup(t.comm, t.comm_len, '?', true);
			if (!th || !c) {
				free(c);
				return -ENOMEM;
			}
			free(th->comm);
			th->comm = c;
		}
		rc = isc_unwinder_record(n->u, ev->type, ev->raw, ev->nraw);
		break;
	}
	case ISC_REC_NATIVE_SAMPLER:
	case ISC_REC_NATIVE_MAP:
	case ISC_REC_NATIVE_KSYM:
		rc = isc_unwinder_record(n->u, ev->type, ev->raw, ev->nraw);
		break;
	default:
		break;
	}
	if (rc == -EBADMSG) /* the reader checked the body: a record the unwinder cannot take is skipped */
		rc = 0;
	return rc ? rc : n->err;
}

void isc_nat_finish(struct isc_nat *n, struct ana *a)
{
	if (!n->have)
		return;
	n->a = a;
	isc_mixq_free(n->q); /* hands out what still waits */
	n->q = NULL;
	if (n->npend && !n->err)
		n->err = pend_resolve(n, 0, NULL, NULL); /* never known: "[worker threads]" */
	n->a = NULL;
}

/* ---- the CPU split with native frames ---------------------------------------- */

/* Re-divides on-CPU time into python, torch, other in the proportions of cls (header). */
static bool divide(const uint64_t cls[4], uint64_t on, uint64_t *py, uint64_t *torch, uint64_t *other)
{
	uint64_t k = cls[ISC_CPU_INTERP] + cls[ISC_CPU_TORCH] + cls[ISC_CPU_OTHER];
	if (k < ISC_NAT_SPLIT_MIN)
		return false;
	*py = (uint64_t)llround((double)on * (double)cls[ISC_CPU_INTERP] / (double)k);
	*torch = (uint64_t)llround((double)on * (double)cls[ISC_CPU_TORCH] / (double)k);
	if (*py + *torch > on)
		*torch = on - *py;
	*other = on - *py - *torch;
	return true;
}

void isc_nat_resplit_thread(const struct isc_nat *n, struct ana_thread *th, struct ana_cpu_split *w)
{
	const struct nthread *t = n && n->have ? nthread_find(n, th->pid, th->tid) : NULL;
	uint64_t py, torch, other;
	uint64_t on_py = th->python_ns - th->off_py_ns, on_ops = th->ops_ns - th->off_ops_ns;
	if (!t || !divide(t->cls[0], on_py + on_ops, &py, &torch, &other))
		return;
	uint64_t python_ns = py + th->off_py_ns, ops_ns = torch + other + th->off_ops_ns,
		 torch_ns = torch + th->off_torch_ns;
	if (w) {
		w->python += python_ns - th->python_ns;
		w->ops += ops_ns - th->ops_ns;
		w->torch += torch_ns - th->torch_ns;
	}
	th->python_ns = python_ns;
	th->ops_ns = ops_ns;
	th->torch_ns = torch_ns;
}

void isc_nat_resplit_split(const struct isc_nat *n, struct ana_cpu_split *c, bool in_scope)
{
	uint64_t cls[4] = { 0 }, py, torch, other;
	if (!n || !n->have)
		return;
	for (size_t i = 0; i < n->nth; i++)
		for (int k = 0; k < 4; k++)
			cls[k] += n->th[i].cls[in_scope][k];
	if (!divide(cls, c->python - c->off_py + c->ops - c->off_ops, &py, &torch, &other))
		return;
	c->python = py + c->off_py;
	c->ops = torch + other + c->off_ops;
	c->torch = torch + c->off_torch;
}

void isc_nat_thread_counts(const struct isc_nat *n, uint32_t pid, uint32_t tid, uint64_t *samples,
			   uint64_t *dispatched)
{
	const struct nthread *t = n && n->have ? nthread_find(n, pid, tid) : NULL;
	*samples = t ? t->samples : 0;
	*dispatched = t ? t->dispatched : 0;
}

/* ---- the findings ------------------------------------------------------------ */

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? round(10000.0 * (double)part / (double)whole) / 100 : 0;
}

static const char *kind_name(uint8_t k)
{
	static const char *const names[] = { "?", "native", "unnamed", "jit", "kernel", "truncated", "python", "op",
					     "other" };
	return k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static const struct isc_sframe *frame_of(const struct isc_nat *n, uint32_t f)
{
	return isc_stree_frame(n->tree, f);
}

/* {"name", "file", "line"} of Python frame f into o.k, or null for NAT_NONE. */
static void py_loc(struct isc_jb *jb, cJSON *o, const char *k, const struct isc_nat *n, uint32_t f)
{
	if (f == NAT_NONE) {
		isc_jb_chk(jb, cJSON_AddNullToObject(o, k));
		return;
	}
	const struct isc_sframe *s = frame_of(n, f);
	cJSON *p = isc_jb_obj(jb, o, k);
	isc_jb_str(jb, p, "name", s->name);
	isc_jb_str(jb, p, "file", s->file);
	isc_jb_num(jb, p, "line", s->line);
}

static void op_name(struct isc_jb *jb, cJSON *o, const char *k, const struct isc_nat *n, uint32_t f)
{
	isc_jb_str(jb, o, k, f == NAT_NONE ? NULL : frame_of(n, f)->name);
}

/* Whether entry i of c ranks before entry j: more counts, then the lower key. */
static bool before(const struct cmap *c, size_t i, size_t j)
{
	return c->n[i] != c->n[j] ? c->n[i] > c->n[j] : c->key[i] < c->key[j];
}

/* Entries of c whose key's high half is hi, best first (before()), at most max into idx; returns how many. */
static size_t top_of(const struct cmap *c, uint32_t hi, size_t *idx, size_t max)
{
	size_t k = 0;
	for (size_t i = 0; i < c->len; i++) {
		if ((uint32_t)(c->key[i] >> 32) != hi)
			continue;
		size_t j;
		if (k < max)
			j = k++;
		else if (before(c, i, idx[max - 1]))
			j = max - 1;
		else
			continue;
		while (j > 0 && before(c, i, idx[j - 1])) {
			idx[j] = idx[j - 1];
			j--;
		}
		idx[j] = i;
	}
	return k;
}

/* functions: by self, then total, then name and library */
static const struct isc_nat *sort_nat;
static int fn_cmp(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	const struct isc_nat *n = sort_nat;
	if (n->self[a] != n->self[b])
		return n->self[a] > n->self[b] ? -1 : 1;
	if (n->total[a] != n->total[b])
		return n->total[a] > n->total[b] ? -1 : 1;
	const struct isc_sframe *f = frame_of(n, a), *g = frame_of(n, b);
	int c = strcmp(f->name, g->name);
	return c ? c : strcmp(f->file ? f->file : "", g->file ? g->file : "");
}

static void fn_row(struct isc_jb *jb, cJSON *o, const struct isc_nat *n, uint32_t f, uint64_t samples, uint64_t of)
{
	const struct isc_sframe *s = frame_of(n, f);
	isc_jb_str(jb, o, "name", s->name);
	isc_jb_str(jb, o, "library", s->file);
	isc_jb_num(jb, o, "samples", (double)samples);
	isc_jb_num(jb, o, "pct", pct(samples, of));
}

static void emit_functions(struct isc_nat *n, struct isc_jb *jb, cJSON *nat)
{
	uint64_t period = n->cfg.period_ns;
	uint32_t *fs = malloc((n->nf ? n->nf : 1) * sizeof(*fs));
	size_t m = 0, idx[TOP_ABOVE];
	cJSON *arr = isc_jb_arr(jb, nat, "functions");
	if (!fs) {
		jb->oom = true;
		return;
	}
	for (size_t i = 0; i < n->nf; i++)
		if (n->total[i] && native_kind(frame_of(n, (uint32_t)i)->kind))
			fs[m++] = (uint32_t)i;
	sort_nat = n;
	qsort(fs, m, sizeof(*fs), fn_cmp);
	for (size_t i = 0; i < m && i < TOP_FUNCTIONS; i++) {
		uint32_t f = fs[i];
		cJSON *o = isc_jb_push_obj(jb, arr);
		const struct isc_sframe *s = frame_of(n, f);
		isc_jb_str(jb, o, "name", s->name);
		isc_jb_str(jb, o, "library", s->file);
		isc_jb_str(jb, o, "kind", kind_name(s->kind));
		isc_jb_num(jb, o, "self_samples", (double)n->self[f]);
		isc_jb_num(jb, o, "total_samples", (double)n->total[f]);
		isc_jb_num(jb, o, "self_ns", (double)(n->self[f] * period));
		isc_jb_num(jb, o, "total_ns", (double)(n->total[f] * period));
		isc_jb_num(jb, o, "self_pct", pct(n->self[f], n->nsamples));
		isc_jb_num(jb, o, "total_pct", pct(n->total[f], n->nsamples));
		cJSON *ab = isc_jb_arr(jb, o, "above");
		size_t k = top_of(&n->above, f, idx, TOP_ABOVE);
		for (size_t j = 0; j < k; j++) {
			uint32_t c = (uint32_t)n->above.key[idx[j]];
			cJSON *x = isc_jb_push_obj(jb, ab);
			op_name(jb, x, "op", n, n->ctx[c][0]);
			py_loc(jb, x, "python", n, n->ctx[c][1]);
			isc_jb_num(jb, x, "samples", (double)n->above.n[idx[j]]);
			isc_jb_num(jb, x, "pct", pct(n->above.n[idx[j]], n->total[f]));
		}
	}
	free(fs);
}

static int op_cmp(const void *x, const void *y)
{
	const struct cmap *c = &sort_nat->op_n;
	size_t a = *(const size_t *)x, b = *(const size_t *)y;
	if (c->n[a] != c->n[b])
		return c->n[a] > c->n[b] ? -1 : 1;
	return strcmp(frame_of(sort_nat, (uint32_t)(c->key[a] >> 32))->name,
		      frame_of(sort_nat, (uint32_t)(c->key[b] >> 32))->name);
}

static void emit_ops(struct isc_nat *n, struct isc_jb *jb, cJSON *nat)
{
	size_t *os = malloc((n->op_n.len ? n->op_n.len : 1) * sizeof(*os)), idx[TOP_KERNELS];
	cJSON *arr = isc_jb_arr(jb, nat, "ops");
	uint64_t in_ops = 0;
	if (!os) {
		jb->oom = true;
		return;
	}
	for (size_t i = 0; i < n->op_n.len; i++) {
		os[i] = i;
		in_ops += n->op_n.n[i];
	}
	isc_jb_num(jb, nat, "op_samples", (double)in_ops);
	sort_nat = n;
	qsort(os, n->op_n.len, sizeof(*os), op_cmp);
	for (size_t i = 0; i < n->op_n.len && i < TOP_OPS; i++) {
		uint32_t op = (uint32_t)(n->op_n.key[os[i]] >> 32);
		uint64_t k = n->op_n.n[os[i]];
		cJSON *o = isc_jb_push_obj(jb, arr);
		isc_jb_str(jb, o, "name", frame_of(n, op)->name);
		isc_jb_num(jb, o, "samples", (double)k);
		isc_jb_num(jb, o, "ns", (double)(k * n->cfg.period_ns));
		isc_jb_num(jb, o, "pct", pct(k, n->nsamples));
		size_t t = top_of(&n->op_py, op, idx, 1);
		py_loc(jb, o, "python", n, t ? (uint32_t)n->op_py.key[idx[0]] : NAT_NONE);
		cJSON *ks = isc_jb_arr(jb, o, "kernels");
		t = top_of(&n->op_leaf, op, idx, TOP_KERNELS);
		for (size_t j = 0; j < t; j++)
			fn_row(jb, isc_jb_push_obj(jb, ks), n, (uint32_t)n->op_leaf.key[idx[j]], n->op_leaf.n[idx[j]], k);
		cJSON *in = isc_jb_arr(jb, o, "inner_ops");
		t = top_of(&n->op_inner, op, idx, TOP_KERNELS);
		for (size_t j = 0; j < t; j++) {
			cJSON *x = isc_jb_push_obj(jb, in);
			isc_jb_str(jb, x, "name", frame_of(n, (uint32_t)n->op_inner.key[idx[j]])->name);
			isc_jb_num(jb, x, "samples", (double)n->op_inner.n[idx[j]]);
			isc_jb_num(jb, x, "pct", pct(n->op_inner.n[idx[j]], k));
		}
	}
	free(os);
}

/* A thread's label: its /proc name, else its Python name, else the sampler's. */
static const char *thread_label(struct ana *a, const struct nthread *t)
{
	const struct ana_thread *at = ana_thread_of(a, t->pid, t->tid);
	if (at && at->comm && *at->comm)
		return at->comm;
	if (at && at->name && *at->name)
		return at->name;
	return t->comm;
}

static int th_cmp(const void *x, const void *y)
{
	const struct nthread *a = &sort_nat->th[*(const size_t *)x], *b = &sort_nat->th[*(const size_t *)y];
	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return (a->tid > b->tid) - (a->tid < b->tid);
}

/* dispatched_by[] of thread ti into o: its top (op, Python line) pairs. */
static void dispatched_by(const struct isc_nat *n, struct isc_jb *jb, cJSON *o, uint32_t ti, size_t max)
{
	size_t idx[TOP_ABOVE];
	cJSON *arr = isc_jb_arr(jb, o, "dispatched_by");
	size_t k = top_of(&n->th_ctx, ti, idx, max < TOP_ABOVE ? max : TOP_ABOVE);
	for (size_t j = 0; j < k; j++) {
		uint32_t c = (uint32_t)n->th_ctx.key[idx[j]];
		cJSON *x = isc_jb_push_obj(jb, arr);
		op_name(jb, x, "op", n, n->ctx[c][0]);
		py_loc(jb, x, "python", n, n->ctx[c][1]);
		isc_jb_num(jb, x, "samples", (double)n->th_ctx.n[idx[j]]);
		isc_jb_num(jb, x, "pct", pct(n->th_ctx.n[idx[j]], n->th[ti].samples));
	}
}

static void top_leaves(const struct isc_nat *n, struct isc_jb *jb, cJSON *o, uint32_t ti, size_t max)
{
	size_t idx[TOP_KERNELS];
	cJSON *arr = isc_jb_arr(jb, o, "top");
	size_t k = top_of(&n->th_leaf, ti, idx, max < TOP_KERNELS ? max : TOP_KERNELS);
	for (size_t j = 0; j < k; j++)
		fn_row(jb, isc_jb_push_obj(jb, arr), n, (uint32_t)n->th_leaf.key[idx[j]], n->th_leaf.n[idx[j]],
		       n->th[ti].samples);
}

static void emit_threads(struct isc_nat *n, struct ana *a, struct isc_jb *jb, cJSON *nat)
{
	size_t *ts = malloc((n->nth ? n->nth : 1) * sizeof(*ts)), m = 0;
	cJSON *arr = isc_jb_arr(jb, nat, "threads");
	if (!ts) {
		jb->oom = true;
		return;
	}
	for (size_t i = 0; i < n->nth; i++)
		if (n->th[i].samples)
			ts[m++] = i;
	sort_nat = n;
	qsort(ts, m, sizeof(*ts), th_cmp);
	for (size_t i = 0; i < m && i < TOP_THREADS; i++) {
		const struct nthread *t = &n->th[ts[i]];
		cJSON *o = isc_jb_push_obj(jb, arr);
		isc_jb_num(jb, o, "pid", t->pid);
		isc_jb_num(jb, o, "tid", t->tid);
		isc_jb_str(jb, o, "name", thread_label(a, t));
		isc_jb_bool(jb, o, "python", t->python);
		isc_jb_num(jb, o, "samples", (double)t->samples);
		isc_jb_num(jb, o, "ns", (double)(t->samples * n->cfg.period_ns));
		isc_jb_num(jb, o, "dispatched_samples", (double)t->dispatched);
		top_leaves(n, jb, o, (uint32_t)ts[i], TOP_KERNELS);
		dispatched_by(n, jb, o, (uint32_t)ts[i], TOP_ABOVE);
	}
	free(ts);
}

void isc_nat_emit_pool(const struct isc_nat *n, struct isc_jb *jb, cJSON *row, uint32_t pid, uint32_t tid,
		       uint64_t samples, uint64_t dispatched, uint64_t cpu_ns)
{
	if (!n || !n->have)
		return;
	const struct nthread *t = nthread_find(n, pid, tid);
	cJSON *o = isc_jb_obj(jb, row, "native");
	isc_jb_num(jb, o, "samples", (double)samples);
	isc_jb_num_or_null(jb, o, "cpu_covered_pct", cpu_ns > 0,
			   fmin(100, pct(samples * n->cfg.period_ns, cpu_ns)));
	isc_jb_num(jb, o, "dispatched_pct", pct(dispatched, samples));
	uint32_t ti = t ? (uint32_t)(t - n->th) : NAT_NONE;
	size_t idx[1];
	size_t k = t ? top_of(&n->th_leaf, ti, idx, 1) : 0;
	if (k) {
		cJSON *f = isc_jb_obj(jb, o, "top");
		fn_row(jb, f, n, (uint32_t)n->th_leaf.key[idx[0]], n->th_leaf.n[idx[0]], t->samples);
	} else {
		isc_jb_chk(jb, cJSON_AddNullToObject(o, "top"));
	}
	if (t)
		dispatched_by(n, jb, o, ti, 1);
	else
		isc_jb_arr(jb, o, "dispatched_by");
}

/* ---- the bounded tree ------------------------------------------------------------ */

/* Nodes kept with a cut at total >= cut (roots always): kept nodes plus "[other]" ones. */
static size_t tree_size(const struct isc_stree *t, uint64_t cut, uint8_t *mark)
{
	uint32_t nn = isc_stree_nnodes(t);
	size_t size = 0;
	memset(mark, 0, nn);
	for (uint32_t i = 0; i < nn; i++) { /* parents come before their children */
		const struct isc_snode *nd = isc_stree_node(t, i);
		if (nd->parent == NAT_NONE || nd->total >= cut) {
			mark[i] |= 1;
			size++;
		} else if (mark[nd->parent] & 1) {
			size += !(mark[nd->parent] & 2);
			mark[nd->parent] |= 2; /* has an "[other]" child */
		}
	}
	return size;
}

static int u64_cmp(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

/*
 * native.tree: the stack tree with at most max_nodes nodes (--native-nodes): the
 * nodes with the most samples through them (a cut on total samples, the
 * lowest that fits; a node's parent has at least its total, so what is
 * kept is a tree), and under each kept node one "[other]" node for the
 * children cut away, with their samples.  Thread roots are always kept.
 */
static int emit_tree(struct isc_nat *n, struct ana *a, struct isc_jb *jb, cJSON *nat)
{
	const struct isc_stree *t = n->tree;
	uint32_t nn = isc_stree_nnodes(t), nf = isc_stree_nframes(t);
	uint8_t *mark = malloc(nn ? nn : 1);
	uint64_t *tot = malloc((nn ? nn : 1) * sizeof(*tot)), cut = 0, other = 0;
	uint32_t *nidx = malloc((nn ? nn : 1) * sizeof(*nidx)), *fidx = malloc((nf + 1) * sizeof(*fidx));
	uint64_t *oth = calloc(nn ? nn : 1, sizeof(*oth));
	int rc = -ENOMEM;
	if (!mark || !tot || !nidx || !fidx || !oth)
		goto out;
	if (tree_size(t, 0, mark) > n->max_nodes) {
		size_t m = 0;
		for (uint32_t i = 0; i < nn; i++)
			tot[m++] = isc_stree_node(t, i)->total;
		qsort(tot, m, sizeof(*tot), u64_cmp);
		size_t lo = 0, hi = m; /* the smallest cut among the totals (+1 past the largest) that fits */
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (tree_size(t, tot[mid] + 1, mark) <= n->max_nodes)
				hi = mid;
			else
				lo = mid + 1;
		}
		cut = lo < m ? tot[lo] + 1 : tot[m - 1] + 1; /* none fits: the roots and their "[other]" */
	}
	tree_size(t, cut, mark);
	/* new indexes: kept nodes in order, then the "[other]" nodes */
	uint32_t k = 0, frames = 0;
	for (uint32_t i = 0; i < nf; i++)
		fidx[i] = NAT_NONE;
	for (uint32_t i = 0; i < nn; i++) {
		nidx[i] = NAT_NONE;
		const struct isc_snode *nd = isc_stree_node(t, i);
		if (mark[i] & 1) {
			nidx[i] = k++;
			if (nd->frame != NAT_NONE && fidx[nd->frame] == NAT_NONE)
				fidx[nd->frame] = frames++;
		} else if (mark[nd->parent] & 1) {
			oth[nd->parent] += nd->total;
			other += nd->total;
		}
	}
	cJSON *tr = isc_jb_obj(jb, nat, "tree");
	isc_jb_num(jb, tr, "max_nodes", n->max_nodes);
	isc_jb_num(jb, tr, "min_total_samples", (double)cut);
	isc_jb_num(jb, tr, "elided_samples", (double)other);
	cJSON *fa = isc_jb_arr(jb, tr, "frames");
	/* frames in their new order */
	uint32_t *byn = malloc((frames + 1) * sizeof(*byn));
	if (!byn)
		goto out;
	for (uint32_t i = 0; i < nf; i++)
		if (fidx[i] != NAT_NONE)
			byn[fidx[i]] = i;
	for (uint32_t i = 0; i < frames; i++) {
		const struct isc_sframe *f = frame_of(n, byn[i]);
		cJSON *o = isc_jb_push_obj(jb, fa);
		isc_jb_str(jb, o, "kind", kind_name(f->kind));
		isc_jb_str(jb, o, "name", f->name);
		isc_jb_str(jb, o, "file", f->file && *f->file ? f->file : NULL);
		isc_jb_num(jb, o, "line", f->line);
	}
	free(byn);
	if (other) {
		cJSON *o = isc_jb_push_obj(jb, fa);
		isc_jb_str(jb, o, "kind", kind_name(ISC_FRAME_OTHER));
		isc_jb_str(jb, o, "name", "[other]");
		isc_jb_str(jb, o, "file", NULL);
		isc_jb_num(jb, o, "line", 0);
	}
	cJSON *tha = isc_jb_arr(jb, tr, "threads");
	for (uint32_t i = 0; i < isc_stree_nthreads(t); i++) {
		const struct isc_sthread *th = isc_stree_thread(t, i);
		const struct nthread *nt = nthread_find(n, th->pid, th->tid);
		cJSON *o = isc_jb_push_obj(jb, tha);
		isc_jb_num(jb, o, "pid", th->pid);
		isc_jb_num(jb, o, "tid", th->tid);
		isc_jb_str(jb, o, "name", nt ? thread_label(a, nt) : NULL);
		isc_jb_num(jb, o, "root", nidx[th->root]);
	}
	cJSON *pa = isc_jb_arr(jb, tr, "parent"), *fr = isc_jb_arr(jb, tr, "frame"), *se = isc_jb_arr(jb, tr, "self"),
	      *to = isc_jb_arr(jb, tr, "total");
	for (uint32_t i = 0; i < nn; i++) {
		if (!(mark[i] & 1))
			continue;
		const struct isc_snode *nd = isc_stree_node(t, i);
		isc_jb_push_num(jb, pa, nd->parent == NAT_NONE ? -1 : (double)nidx[nd->parent]);
		isc_jb_push_num(jb, fr, nd->frame == NAT_NONE ? -1 : (double)fidx[nd->frame]);
		isc_jb_push_num(jb, se, (double)nd->self);
		isc_jb_push_num(jb, to, (double)nd->total);
	}
	for (uint32_t i = 0; i < nn; i++) {
		if (!(mark[i] & 2))
			continue;
		isc_jb_push_num(jb, pa, nidx[i]);
		isc_jb_push_num(jb, fr, frames);
		isc_jb_push_num(jb, se, (double)oth[i]);
		isc_jb_push_num(jb, to, (double)oth[i]);
	}
	rc = 0;
out:
	free(mark);
	free(tot);
	free(nidx);
	free(fidx);
	free(oth);
	return rc;
}

static int ul_cmp(const void *x, const void *y)
{
	const struct unnamed_lib *a = x, *b = y;
	if (a->frames != b->frames)
		return a->frames > b->frames ? -1 : 1;
	return strcmp(a->lib, b->lib);
}

int isc_nat_emit(struct isc_nat *n, struct ana *a, cJSON *root)
{
	struct isc_jb *jb = &a->jb;
	if (!n->have)
		return 0;
	if (n->err)
		return n->err;
	uint64_t period = n->cfg.period_ns, proc_cpu = 0, workers = 0;
	for (size_t i = 0; i < a->nprs; i++) { /* the processes the sampler saw */
		bool seen = false;
		for (size_t j = 0; j < n->nth && !seen; j++)
			seen = n->th[j].pid == a->prs[i]->pid && n->th[j].samples;
		if (seen)
			proc_cpu += a->prs[i]->cpu_ns;
	}
	for (size_t i = 0; i < n->nth; i++)
		workers += n->th[i].python ? 0 : n->th[i].samples;
	cJSON *nat = isc_jb_obj(jb, root, "native");
	cJSON *cfg = isc_jb_obj(jb, nat, "sampler");
	isc_jb_str(jb, cfg, "event", n->cfg.event == 1 ? "cpu-clock" : "other");
	isc_jb_num(jb, cfg, "period_ns", (double)period);
	isc_jb_num(jb, cfg, "hz", period ? round(1e9 / (double)period) : 0);
	isc_jb_num(jb, cfg, "stack_bytes", (double)n->cfg.stack_bytes);
	isc_jb_bool(jb, cfg, "kernel_stacks", n->cfg.flags & 1);
	isc_jb_num(jb, nat, "samples", (double)n->nsamples);
	isc_jb_num(jb, nat, "lost_records", (double)n->lost);
	isc_jb_num(jb, nat, "sampled_cpu_ns", (double)(n->nsamples * period));
	isc_jb_num_or_null(jb, nat, "process_cpu_ns", proc_cpu > 0, (double)proc_cpu);
	isc_jb_num_or_null(jb, nat, "cpu_covered_pct", proc_cpu > 0, fmin(100, pct(n->nsamples * period, proc_cpu)));
	isc_jb_num(jb, nat, "python_stacks", (double)n->python_stacks);
	isc_jb_num(jb, nat, "paired_pct", pct(n->paired, n->python_stacks));
	isc_jb_num(jb, nat, "interpreter_samples", (double)n->python_leaf);
	isc_jb_num(jb, nat, "worker_samples", (double)workers);
	isc_jb_num(jb, nat, "dispatched_samples", (double)n->dispatched);
	isc_jb_num(jb, nat, "dispatched_pct", pct(n->dispatched, workers));
	const struct isc_unwind_stats *us = isc_unwinder_stats(n->u);
	cJSON *uw = isc_jb_obj(jb, nat, "unwind");
	isc_jb_num(jb, uw, "frames", (double)n->frames);
	isc_jb_num(jb, uw, "unnamed_frames", (double)n->unnamed);
	isc_jb_num(jb, uw, "unnamed_pct", pct(n->unnamed, n->frames + n->kernel));
	isc_jb_num(jb, uw, "jit_frames", (double)n->jit);
	isc_jb_num(jb, uw, "jit_pct", pct(n->jit, n->frames));
	isc_jb_num(jb, uw, "kernel_frames", (double)n->kernel);
	isc_jb_num(jb, uw, "truncated_stacks", (double)n->truncated_stacks);
	isc_jb_num(jb, uw, "truncated_pct", pct(n->truncated_stacks, n->nsamples));
	isc_jb_num(jb, uw, "no_user_samples", (double)us->no_user);
	isc_jb_num(jb, uw, "files_missing", (double)us->files_missing);
	isc_jb_num(jb, uw, "files_changed", (double)us->files_changed);
	isc_sort(n->ul, n->nul, sizeof(*n->ul), ul_cmp); /* n->ul is NULL when no frame was unnamed */
	cJSON *ua = isc_jb_arr(jb, uw, "unnamed_by_library");
	for (size_t i = 0; i < n->nul && i < 5; i++) {
		cJSON *o = isc_jb_push_obj(jb, ua);
		isc_jb_str(jb, o, "library", n->ul[i].lib);
		isc_jb_num(jb, o, "frames", (double)n->ul[i].frames);
		isc_jb_num(jb, o, "pct", pct(n->ul[i].frames, n->unnamed));
	}
	emit_functions(n, jb, nat);
	emit_ops(n, jb, nat);
	emit_threads(n, a, jb, nat);
	return emit_tree(n, a, jb, nat);
}
