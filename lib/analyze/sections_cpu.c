/*
 * sections_cpu.c - cpu.* of the findings document, from the state of
 * analyze.c's pass: how the traced threads' time splits between Python,
 * torch ops and other C code, on and off the CPU (cpu.split, and
 * cpu.in_iterations for the time inside iterations, which the CPU verdict
 * classes judge), the functions that took it, where and why the threads
 * were blocked (off_cpu_top, off_cpu_reasons), and the thread pools.
 *
 *   traced_ns      self time of the Python functions and ops of every
 *   │              traced thread
 *   ├─ python_ns   Python, on CPU
 *   ├─ ops_ns      ops, on CPU: torch_ops_ns + other_c_ns
 *   └─ off_cpu_ns  off CPU (thread_split() below): where the thread's
 *                  samples saw it blocked, the rest from op time first,
 *                  then Python time (off_cpu_from_python_ns)
 *
 * In --python=sample mode (no call spans) the split comes from the stack
 * samples instead (analyze_pysample.c).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sections.h"
#include "analyze_wait.h" /* isc_off_reason_name, isc_pool_name, ISC_OFF_N */

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? round(10000.0 * (double)part / (double)whole) / 100 : 0;
}

/* ---- the off-CPU estimate, per thread and for the run ------------------- */
static uint64_t min_u64(uint64_t x, uint64_t y)
{
	return x < y ? x : y;
}

/*
 * Off-CPU estimate of one traced thread: between its first and last CPU
 * sample taken while it was inside a span, the share of wall time it was not
 * on a CPU, applied to its traced time.  The part the thread samples saw
 * blocked (up to blk_ns) goes where they saw it: into ops (torch's or other
 * C code) or Python code, in the proportions of the samples.  The rest
 * (preemption, or no samples) is taken from op time first, since Python
 * only blocks inside a C call; what exceeds op time (GIL waits, page
 * faults in the interpreter) from Python time.  Torch's part of the op
 * time off-CPU follows the blocked samples inside torch ops, else torch's
 * share of op time.  split_off() computes it from the CPU ratio;
 * thread_split() applies it to the whole run and, for cpu.in_iterations,
 * to the time inside scopes with the ratio of the intervals between two
 * samples both taken inside a scope.
 */
struct off_split {
	uint64_t python_ns, ops_ns, torch_ns;      /* traced self times */
	uint64_t blk_ns, blk_ops_ns, blk_torch_ns; /* sampled blocked time: all, inside any op, inside torch ops */
	uint64_t off_ops_ns, off_py_ns, off_torch_ns; /* out */
};

/* Fills the off_* fields of s for a thread on a CPU ratio of the time (see thread_split). */
static void split_off(struct off_split *s, double ratio)
{
	if (ratio > 1)
		ratio = 1;
	uint64_t traced = s->python_ns + s->ops_ns;
	uint64_t off = (uint64_t)llround((double)traced * (1 - ratio));
	uint64_t blk = min_u64(off, s->blk_ns), ops = 0, py = 0;
	if (blk) {
		ops = min_u64((uint64_t)llround((double)blk * (double)s->blk_ops_ns / (double)s->blk_ns), s->ops_ns);
		py = min_u64(blk - ops, s->python_ns);
	}
	uint64_t rest = off - ops - py;
	uint64_t more = min_u64(rest, s->ops_ns - ops);
	ops += more;
	py += min_u64(rest - more, s->python_ns - py);
	s->off_ops_ns = ops;
	s->off_py_ns = py;
	double torch_share = s->blk_ops_ns ? (double)s->blk_torch_ns / (double)s->blk_ops_ns
			     : s->ops_ns ? (double)s->torch_ns / (double)s->ops_ns : 0;
	uint64_t other_c = s->ops_ns - s->torch_ns;
	s->off_torch_ns = min_u64((uint64_t)llround((double)ops * torch_share), s->torch_ns);
	if (ops - s->off_torch_ns > other_c) /* other C code cannot be off-CPU longer than it ran */
		s->off_torch_ns = ops - other_c;
}

static void thread_split(struct ana_thread *th)
{
	if (th->win_n >= 2 && th->w_ts1 > th->w_ts0) {
		double cpu = th->w_cpu1 > th->w_cpu0 ? (double)(th->w_cpu1 - th->w_cpu0) : 0;
		struct off_split s = { th->python_ns, th->ops_ns, th->torch_ns, th->blk_ns, th->blk_ops_ns, th->blk_torch_ns,
				       0, 0, 0 };
		split_off(&s, cpu / (double)(th->w_ts1 - th->w_ts0));
		th->off_ops_ns = s.off_ops_ns;
		th->off_py_ns = s.off_py_ns;
		th->off_torch_ns = s.off_torch_ns;
	}
	/* inside iterations: the CPU share of the sampled intervals inside a scope */
	if (th->it_pairs && th->it_wall_ns) {
		struct off_split s = { th->it_python_ns, th->it_ops_ns, th->it_torch_ns, th->it_blk_ns, th->it_blk_ops_ns,
				       th->it_blk_torch_ns, 0, 0, 0 };
		split_off(&s, (double)th->it_cpu_ns / (double)th->it_wall_ns);
		th->it_off_ops_ns = s.off_ops_ns;
		th->it_off_py_ns = s.off_py_ns;
		th->it_off_torch_ns = s.off_torch_ns;
	}
}

void isc_ana_cpu_totals(struct ana *a, bool from_samples, struct ana_cpu_split *w)
{
	memset(w, 0, sizeof(*w));
	for (size_t i = 0; i < a->nths; i++) {
		struct ana_thread *th = a->ths[i];
		thread_split(th);
		isc_nat_resplit_thread(a->nat, th, NULL); /* native stacks' classes, where there are */
		w->python += th->python_ns;
		w->ops += th->ops_ns;
		w->torch += th->torch_ns;
		w->off_torch += th->off_torch_ns;
		w->off_ops += th->off_ops_ns;
		w->off_py += th->off_py_ns;
		w->measured |= th->traced && th->win_n >= 2;
		if (th->traced && th->win_n >= 2) {
			w->vsw += th->w_vcsw1 > th->w_vcsw0 ? th->w_vcsw1 - th->w_vcsw0 : 0;
			w->ivsw += th->w_ivcsw1 > th->w_ivcsw0 ? th->w_ivcsw1 - th->w_ivcsw0 : 0;
		}
	}
	if (!from_samples)
		return;
	struct isc_pysamp_split ss;
	isc_pysamp_split(a->pys, false, &ss);
	w->off_py = ss.off_py_ns;
	w->python = ss.python_on_ns + w->off_py;
	w->off_ops = ss.off_native_ns;
	w->ops = ss.torch_on_ns + ss.other_c_on_ns + w->off_ops;
	w->torch = ss.torch_on_ns;
	w->off_torch = 0;
	w->measured = true;
	/* each thread's row (processes[].threads) from its own samples: its
	 * spans are scopes only, whose self time is no measure of Python */
	for (size_t i = 0; i < a->nths; i++) {
		struct ana_thread *th = a->ths[i];
		isc_pysamp_thread_split(a->pys, th->pid, th->tid, &ss);
		th->off_py_ns = ss.off_py_ns;
		th->python_ns = ss.python_on_ns + ss.off_py_ns;
		th->off_ops_ns = ss.off_native_ns;
		th->ops_ns = ss.torch_on_ns + ss.other_c_on_ns + ss.off_native_ns;
		th->torch_ns = ss.torch_on_ns;
		th->off_torch_ns = 0;
		isc_nat_resplit_thread(a->nat, th, w);
	}
}

/* ---- cpu.split ---------------------------------------------------------- */
/* A split c (cpu.split, cpu.in_iterations.split) into sp. */
static void emit_split(struct ana *a, cJSON *sp, const struct ana_cpu_split *c)
{
	uint64_t traced = c->python + c->ops, off = c->off_ops + c->off_py;
	isc_jb_num(&a->jb, sp, "python_ns", (double)(c->python - c->off_py));
	isc_jb_num(&a->jb, sp, "ops_ns", (double)(c->ops - c->off_ops));
	isc_jb_num(&a->jb, sp, "off_cpu_ns", (double)off);
	isc_jb_num(&a->jb, sp, "python_pct", pct(c->python - c->off_py, traced));
	isc_jb_num(&a->jb, sp, "ops_pct", pct(c->ops - c->off_ops, traced));
	isc_jb_num(&a->jb, sp, "off_cpu_pct", pct(off, traced));
	isc_jb_num(&a->jb, sp, "torch_ops_ns", (double)(c->torch - c->off_torch));
	isc_jb_num(&a->jb, sp, "torch_ops_pct", pct(c->torch - c->off_torch, traced));
	isc_jb_num(&a->jb, sp, "other_c_ns", (double)(c->ops - c->torch - (c->off_ops - c->off_torch)));
	isc_jb_num(&a->jb, sp, "other_c_pct", pct(c->ops - c->torch - (c->off_ops - c->off_torch), traced));
	isc_jb_num(&a->jb, sp, "traced_ns", (double)traced);
	isc_jb_num(&a->jb, sp, "off_cpu_from_python_ns", (double)c->off_py);
	isc_jb_bool(&a->jb, sp, "off_cpu_measured", c->measured);
	isc_jb_num(&a->jb, sp, "voluntary_switches", (double)c->vsw);
	isc_jb_num(&a->jb, sp, "involuntary_switches", (double)c->ivsw);
}

void isc_ana_emit_cpu_split(struct ana *a, cJSON *cpu, const struct ana_cpu_split *whole,
			    const struct ana_switches *cs)
{
	emit_split(a, isc_jb_obj(&a->jb, cpu, "split"), whole);
	cJSON *sw = isc_jb_obj(&a->jb, cpu, "context_switches");
	isc_jb_num_or_null(&a->jb, sw, "voluntary_per_s", cs->have, round(100 * cs->voluntary_per_s) / 100);
	isc_jb_num_or_null(&a->jb, sw, "involuntary_per_s", cs->have, round(100 * cs->involuntary_per_s) / 100);
	isc_jb_num_or_null(&a->jb, cpu, "runnable_threads_mean", a->rounds,
		     a->rounds ? round(100 * (double)a->runnable_sum / (double)a->rounds) / 100 : 0);
	isc_jb_num_or_null(&a->jb, cpu, "runnable_threads_max", a->rounds, (double)a->runnable_max);
	isc_jb_num_or_null(&a->jb, cpu, "threads_max", a->have_threads, (double)a->threads_max);
	isc_jb_num_or_null(&a->jb, cpu, "blocked_ns", a->rounds, (double)a->blocked_ns);
	isc_jb_num_or_null(&a->jb, cpu, "state_samples", a->rounds, (double)a->state_samples);
}

/* ---- row orders --------------------------------------------------------- */
/*
 * Every ranking below is a chain of keys, most significant first, ending
 * in an identity that no two rows share, so that ties never depend on
 * qsort.  A step (desc, asc, strcmp) gives below, equal or above zero; the
 * chain goes on to the next key while a step gives 0.
 */
static int desc(uint64_t a, uint64_t b) /* the larger first */
{
	return a > b ? -1 : a < b;
}

static int asc(uint64_t a, uint64_t b) /* the smaller first */
{
	return a < b ? -1 : a > b;
}

/* Rows by key ka, kb, the larger first; a tie by identity(x, y), called only then. */
static int desc_then(uint64_t ka, uint64_t kb, int (*identity)(const void *, const void *), const void *x,
		     const void *y)
{
	int c = desc(ka, kb);
	return c ? c : identity(x, y);
}

/* ---- functions --------------------------------------------------------- */
static int row_by_self(const void *x, const void *y)
{
	const struct ana_fn_row *a = x, *b = y;
	int c = desc(a->self_ns, b->self_ns);
	return c ? c : desc_then(a->total_ns, b->total_ns, isc_ana_fn_row_identity, x, y);
}

static int row_by_scoped(const void *x, const void *y)
{
	const struct ana_fn_row *a = x, *b = y;
	return desc_then(a->scoped_self_ns, b->scoped_self_ns, isc_ana_fn_row_identity, x, y);
}

/* The op self time a row's function calls (scoped: inside scopes); 0 for a row not a Python function. */
static uint64_t py_ops_ns(const struct ana_fn_row *r, bool scoped)
{
	return r->kind != ISC_SPAN_PYTHON ? 0 : scoped ? r->scoped_ops_self_ns : r->ops_self_ns;
}

/* Python functions by the op self time they call, non-Python rows last. */
static int row_by_ops(const void *x, const void *y)
{
	return desc_then(py_ops_ns(x, false), py_ops_ns(y, false), isc_ana_fn_row_identity, x, y);
}

/* The same inside scopes. */
static int row_by_scoped_ops(const void *x, const void *y)
{
	return desc_then(py_ops_ns(x, true), py_ops_ns(y, true), isc_ana_fn_row_identity, x, y);
}

/* cpu.top_functions, top_functions_in_scopes, top_op_callers. */
int isc_ana_emit_functions(struct ana *a, cJSON *cpu, uint64_t traced_ns)
{
	size_t m;
	struct ana_fn_row *rows = isc_ana_fn_rows(a, &m);
	if (!rows)
		return -ENOMEM;
	qsort(rows, m, sizeof(*rows), row_by_self);
	isc_jb_num(&a->jb, cpu, "functions", (double)m);
	cJSON *top = isc_jb_arr(&a->jb, cpu, "top_functions");
	for (size_t i = 0; i < m && i < a->top_n; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, top);
		if (!o)
			break;
		isc_jb_str(&a->jb, o, "name", rows[i].name);
		isc_jb_str(&a->jb, o, "kind", rows[i].kind == ISC_SPAN_PYTHON ? "python" : "op");
		isc_jb_str(&a->jb, o, "file", rows[i].file);
		isc_jb_num(&a->jb, o, "line", rows[i].line);
		isc_jb_num_or_null(&a->jb, o, "calls", !rows[i].sampled, (double)rows[i].calls);
		isc_jb_num(&a->jb, o, "self_ns", (double)rows[i].self_ns);
		isc_jb_num(&a->jb, o, "total_ns", (double)rows[i].total_ns);
		isc_jb_num(&a->jb, o, "self_pct", pct(rows[i].self_ns, traced_ns));
		if (rows[i].kind == ISC_SPAN_PYTHON)
			isc_jb_num(&a->jb, o, "ops_self_ns", (double)rows[i].ops_self_ns);
	}
	/* the same restricted to time inside scopes: the iterations without start-up and imports */
	uint64_t scoped = 0;
	for (size_t i = 0; i < m; i++)
		scoped += rows[i].scoped_self_ns;
	qsort(rows, m, sizeof(*rows), row_by_scoped);
	isc_jb_num(&a->jb, cpu, "scoped_ns", (double)scoped);
	cJSON *in = isc_jb_arr(&a->jb, cpu, "top_functions_in_scopes");
	for (size_t i = 0; i < m && i < a->top_n && rows[i].scoped_self_ns; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, in);
		if (!o)
			break;
		isc_jb_str(&a->jb, o, "name", rows[i].name);
		isc_jb_str(&a->jb, o, "kind", rows[i].kind == ISC_SPAN_PYTHON ? "python" : "op");
		isc_jb_str(&a->jb, o, "file", rows[i].file);
		isc_jb_num(&a->jb, o, "line", rows[i].line);
		isc_jb_num_or_null(&a->jb, o, "calls", !rows[i].sampled, (double)rows[i].scoped_calls);
		isc_jb_num(&a->jb, o, "self_ns", (double)rows[i].scoped_self_ns);
		isc_jb_num(&a->jb, o, "self_pct", pct(rows[i].scoped_self_ns, scoped));
	}
	/* the Python functions that call the most op time directly: where to look when ops dominate */
	qsort(rows, m, sizeof(*rows), row_by_ops);
	cJSON *callers = isc_jb_arr(&a->jb, cpu, "top_op_callers");
	for (size_t i = 0; i < m && i < 10 && rows[i].ops_self_ns; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, callers);
		if (!o)
			break;
		isc_ana_jloc(a, o, rows[i].name, rows[i].file, rows[i].line);
		isc_jb_num(&a->jb, o, "ops_self_ns", (double)rows[i].ops_self_ns);
		isc_jb_num(&a->jb, o, "ops_pct", pct(rows[i].ops_self_ns, traced_ns));
	}
	free(rows);
	return 0;
}

/* in_it.top_op_callers: top_op_callers inside scopes, shares of it_traced_ns. */
static int emit_scoped_callers(struct ana *a, cJSON *in_it, uint64_t it_traced_ns)
{
	size_t m;
	struct ana_fn_row *rows = isc_ana_fn_rows(a, &m);
	if (!rows)
		return -ENOMEM;
	qsort(rows, m, sizeof(*rows), row_by_scoped_ops);
	cJSON *callers = isc_jb_arr(&a->jb, in_it, "top_op_callers");
	for (size_t i = 0; i < m && i < 10 && rows[i].scoped_ops_self_ns; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, callers);
		if (!o)
			break;
		isc_ana_jloc(a, o, rows[i].name, rows[i].file, rows[i].line);
		isc_jb_num(&a->jb, o, "ops_self_ns", (double)rows[i].scoped_ops_self_ns);
		isc_jb_num(&a->jb, o, "ops_pct", pct(rows[i].scoped_ops_self_ns, it_traced_ns));
	}
	free(rows);
	return 0;
}

/* ---- off-CPU ----------------------------------------------------------- */
/* cpu.off_cpu_top row: the span and its Python function by name */
struct off_out {
	const char *kind, *name, *file, *py_name, *py_file; /* py_name NULL: no Python function */
	uint32_t line, py_line;
	uint8_t reason;
	uint64_t ns;
};

static int off_by_identity(const void *x, const void *y)
{
	const struct off_out *a = x, *b = y;
	int c;
	if ((c = asc(a->reason, b->reason)) || (c = strcmp(a->kind, b->kind)) ||
	    (c = isc_ana_cmp_location(a->name, a->file, a->line, b->name, b->file, b->line)))
		return c;
	if (!a->py_name || !b->py_name)
		return !a->py_name - !b->py_name;
	return isc_ana_cmp_location(a->py_name, a->py_file, a->py_line, b->py_name, b->py_file, b->py_line);
}

static int off_by_ns(const void *x, const void *y)
{
	const struct off_out *a = x, *b = y;
	return desc_then(a->ns, b->ns, off_by_identity, x, y);
}

/* Python callers of one reason: by location, then by ns */
static int caller_by_identity(const void *x, const void *y)
{
	const struct off_out *a = x, *b = y;
	return isc_ana_cmp_location(a->py_name, a->py_file, a->py_line, b->py_name, b->py_file, b->py_line);
}

static int caller_by_ns(const void *x, const void *y)
{
	const struct off_out *a = x, *b = y;
	return desc_then(a->ns, b->ns, caller_by_identity, x, y);
}

#define OFF_CPU_TOP 10
#define OFF_REASON_TOP 5

/* The whole run's blocked time as an off_acc (rows borrowed from a; no map). */
static void whole_off(const struct ana *a, struct ana_off_acc *o)
{
	memset(o, 0, sizeof(*o));
	o->rows = a->offs;
	o->n = a->noffs;
	o->blocked_ns = a->blocked_ns;
	o->state_samples = a->state_samples;
	memcpy(o->reason_ns, a->reason_ns, sizeof(o->reason_ns));
	memcpy(o->reason_torch_ns, a->reason_torch_ns, sizeof(o->reason_torch_ns));
	memcpy(o->reason_dl_ns, a->reason_dl_ns, sizeof(o->reason_dl_ns));
}

/* The off-CPU rows of acc with names, rows of the same names and reason (one per process) merged; *n rows. */
static struct off_out *off_rows(struct ana *a, const struct ana_off_acc *acc, size_t *n)
{
	struct off_out *rows = calloc(acc->n ? acc->n : 1, sizeof(*rows));
	size_t m = 0;
	if (!rows)
		return NULL;
	for (size_t i = 0; i < acc->n; i++) {
		const struct ana_off_row *o = &acc->rows[i];
		const struct ana_fn *f = o->scope ? NULL : &a->fns[o->idx];
		const struct isc_tl_string *s =
			isc_timeline_string_borrow(a->t, o->scope ? a->scs[o->idx].name_id : f->name_id);
		const struct isc_tl_string *py =
			o->py_fn == ISC_UMAP_NONE ? NULL : isc_timeline_string_borrow(a->t, a->fns[o->py_fn].name_id);
		rows[i] = (struct off_out){ o->scope ? "scope" : f->kind == ISC_SPAN_PYTHON ? "python" : "op",
					    s ? s->name : "?", s ? s->file : "",
					    o->py_fn == ISC_UMAP_NONE ? NULL : py ? py->name : "?", py ? py->file : "",
					    s ? s->line : 0, py ? py->line : 0, o->reason, o->ns };
	}
	qsort(rows, acc->n, sizeof(*rows), off_by_identity);
	for (size_t i = 0; i < acc->n; i++) {
		if (m && !off_by_identity(&rows[m - 1], &rows[i]))
			rows[m - 1].ns += rows[i].ns;
		else
			rows[m++] = rows[i];
	}
	*n = m;
	return rows;
}

/* cpu.off_cpu_top (of acc): most blocked first. */
static int emit_off_cpu(struct ana *a, const struct ana_off_acc *acc, cJSON *cpu)
{
	size_t m;
	struct off_out *rows = off_rows(a, acc, &m);
	if (!rows)
		return -ENOMEM;
	qsort(rows, m, sizeof(*rows), off_by_ns);
	cJSON *top = isc_jb_arr(&a->jb, cpu, "off_cpu_top");
	for (size_t i = 0; i < m && i < OFF_CPU_TOP; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, top);
		if (!o)
			break;
		isc_jb_str(&a->jb, o, "name", rows[i].name);
		isc_jb_str(&a->jb, o, "kind", rows[i].kind);
		isc_jb_str(&a->jb, o, "file", rows[i].file);
		isc_jb_num(&a->jb, o, "line", rows[i].line);
		isc_jb_num(&a->jb, o, "blocked_ns", (double)rows[i].ns);
		isc_jb_str(&a->jb, o, "reason", a->have_wait ? isc_off_reason_name(rows[i].reason) : NULL);
		if (!rows[i].py_name) {
			isc_jb_chk(&a->jb, cJSON_AddNullToObject(o, "python"));
			continue;
		}
		isc_ana_jloc(a, isc_jb_obj(&a->jb, o, "python"), rows[i].py_name, rows[i].py_file, rows[i].py_line);
	}
	free(rows);
	return 0;
}

/*
 * cpu.off_cpu_reasons: the blocked time by reason, largest first, each with
 * its part inside torch ops and inside a DataLoader's __next__, and its top
 * Python callers (rows with no Python function left out).  Empty without
 * THREAD_WAIT records (a trace of an older recorder, or no sampler).
 */
static int emit_off_reasons(struct ana *a, const struct ana_off_acc *acc, cJSON *cpu)
{
	cJSON *arr = isc_jb_arr(&a->jb, cpu, "off_cpu_reasons");
	if (!a->have_wait)
		return 0;
	size_t m;
	struct off_out *rows = off_rows(a, acc, &m);
	if (!rows)
		return -ENOMEM;
	unsigned order[ISC_OFF_N];
	for (unsigned r = 0; r < ISC_OFF_N; r++)
		order[r] = r;
	for (unsigned i = 1; i < ISC_OFF_N; i++) /* insertion sort, largest first, stable */
		for (unsigned j = i; j > 0 && acc->reason_ns[order[j]] > acc->reason_ns[order[j - 1]]; j--) {
			unsigned t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (unsigned k = 0; k < ISC_OFF_N; k++) {
		unsigned r = order[k];
		if (!acc->reason_ns[r])
			break;
		cJSON *o = isc_jb_push_obj(&a->jb, arr);
		if (!o)
			break;
		isc_jb_str(&a->jb, o, "reason", isc_off_reason_name(r));
		isc_jb_num(&a->jb, o, "ns", (double)acc->reason_ns[r]);
		isc_jb_num(&a->jb, o, "pct", pct(acc->reason_ns[r], acc->blocked_ns));
		isc_jb_num(&a->jb, o, "in_torch_ops_ns", (double)acc->reason_torch_ns[r]);
		isc_jb_num(&a->jb, o, "in_dataloader_ns", (double)acc->reason_dl_ns[r]);
		size_t c = 0;
		for (size_t i = 0; i < m; i++) /* this reason's rows with a caller to the front, sorted */
			if (rows[i].reason == r && rows[i].py_name) {
				struct off_out t = rows[c];
				rows[c++] = rows[i];
				rows[i] = t;
			}
		qsort(rows, c, sizeof(*rows), caller_by_identity);
		size_t u = 0;
		for (size_t i = 0; i < c; i++) {
			if (u && !caller_by_identity(&rows[u - 1], &rows[i])) {
				rows[u - 1].ns += rows[i].ns;
			} else {
				struct off_out t = rows[u];
				rows[u++] = rows[i];
				rows[i] = t;
			}
		}
		qsort(rows, u, sizeof(*rows), caller_by_ns);
		cJSON *top = isc_jb_arr(&a->jb, o, "top");
		for (size_t i = 0; i < u && i < OFF_REASON_TOP; i++) {
			cJSON *t = isc_jb_push_obj(&a->jb, top);
			if (!t)
				break;
			isc_ana_jloc(a, t, rows[i].py_name, rows[i].py_file, rows[i].py_line);
			isc_jb_num(&a->jb, t, "ns", (double)rows[i].ns);
		}
		free(rows); /* merging above summed rows in place: rebuild for the next reason */
		if (!(rows = off_rows(a, acc, &m)))
			return -ENOMEM;
	}
	free(rows);
	return 0;
}

int isc_ana_emit_off_cpu(struct ana *a, cJSON *cpu)
{
	struct ana_off_acc all;
	whole_off(a, &all);
	if (emit_off_cpu(a, &all, cpu) || emit_off_reasons(a, &all, cpu))
		return -ENOMEM;
	return 0;
}

/* ---- thread pools ------------------------------------------------------ */
/* cpu.thread_pools: threads grouped by process, name pattern, traced, shared futex word */
struct pool {
	uint32_t pid;
	char name[32];
	bool traced;
	uint64_t futex; /* 0: none shared */
	uint64_t threads, cpu_ns, r_samples;
	uint64_t nat_samples, nat_dispatched, top_samples; /* native stacks; of its busiest thread top_tid */
	uint32_t top_tid;
};

static int pool_by_identity(const void *x, const void *y)
{
	const struct pool *a = x, *b = y;
	int c;
	if ((c = asc(a->pid, b->pid)) || (c = strcmp(a->name, b->name)) || (c = desc(a->traced, b->traced)))
		return c;
	return asc(a->futex, b->futex);
}

static int pool_by_cpu(const void *x, const void *y)
{
	const struct pool *a = x, *b = y;
	int c = desc(a->cpu_ns, b->cpu_ns);
	return c ? c : desc_then(a->threads, b->threads, pool_by_identity, x, y);
}

#define POOLS_TOP 20

/*
 * cpu.thread_pools: every sampled thread, traced or not, in a pool: same
 * process, same name once numbering is cut (isc_pool_name; the /proc comm,
 * else the Python name), traced or not, and for untraced threads the futex
 * word they were seen waiting on most (an OpenMP team or a BLAS pool
 * parks all its workers on one word, and its threads are named like the
 * process).  Largest CPU time first.
 */
int isc_ana_emit_pools(struct ana *a, cJSON *cpu)
{
	struct pool *ps = calloc(a->nths ? a->nths : 1, sizeof(*ps));
	size_t n = 0, m = 0;
	uint64_t total = 0;
	if (!ps)
		return -ENOMEM;
	for (size_t i = 0; i < a->nths; i++) {
		const struct ana_thread *th = a->ths[i];
		if (!th->have_cpu)
			continue; /* never sampled: no CPU time, no state */
		struct pool *p = &ps[n++];
		p->pid = th->pid;
		isc_pool_name(th->comm ? th->comm : th->name ? th->name : "", p->name, sizeof(p->name));
		p->traced = th->traced;
		p->futex = !th->traced && th->futex_votes ? th->futex : 0;
		p->threads = 1;
		p->cpu_ns = th->cpu_ns;
		p->r_samples = th->r_samples;
		isc_nat_thread_counts(a->nat, th->pid, th->tid, &p->nat_samples, &p->nat_dispatched);
		p->top_samples = p->nat_samples;
		p->top_tid = th->tid;
		total += th->cpu_ns;
	}
	qsort(ps, n, sizeof(*ps), pool_by_identity);
	for (size_t i = 0; i < n; i++) {
		if (m && !pool_by_identity(&ps[m - 1], &ps[i])) {
			ps[m - 1].threads++;
			ps[m - 1].cpu_ns += ps[i].cpu_ns;
			ps[m - 1].r_samples += ps[i].r_samples;
			ps[m - 1].nat_samples += ps[i].nat_samples;
			ps[m - 1].nat_dispatched += ps[i].nat_dispatched;
			if (ps[i].top_samples > ps[m - 1].top_samples) {
				ps[m - 1].top_samples = ps[i].top_samples;
				ps[m - 1].top_tid = ps[i].top_tid;
			}
		} else {
			ps[m++] = ps[i];
		}
	}
	qsort(ps, m, sizeof(*ps), pool_by_cpu);
	cJSON *arr = isc_jb_arr(&a->jb, cpu, "thread_pools");
	for (size_t i = 0; i < m && i < POOLS_TOP; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, arr);
		if (!o)
			break;
		char fx[24];
		snprintf(fx, sizeof(fx), "0x%llx", (unsigned long long)ps[i].futex);
		isc_jb_num(&a->jb, o, "pid", ps[i].pid);
		isc_jb_str(&a->jb, o, "name", ps[i].name);
		isc_jb_bool(&a->jb, o, "traced", ps[i].traced);
		isc_jb_num(&a->jb, o, "threads", (double)ps[i].threads);
		isc_jb_num(&a->jb, o, "cpu_ns", (double)ps[i].cpu_ns);
		isc_jb_num(&a->jb, o, "cpu_pct", pct(ps[i].cpu_ns, total));
		isc_jb_num_or_null(&a->jb, o, "runnable_mean", a->rounds,
				   a->rounds ? round(100 * (double)ps[i].r_samples / (double)a->rounds) / 100 : 0);
		isc_jb_str(&a->jb, o, "futex", ps[i].futex ? fx : NULL);
		isc_nat_emit_pool(a->nat, &a->jb, o, ps[i].pid, ps[i].top_tid, ps[i].nat_samples, ps[i].nat_dispatched,
				  ps[i].cpu_ns);
	}
	free(ps);
	return 0;
}

/* ---- inside iterations ------------------------------------------------- */
/*
 * cpu.in_iterations: the CPU measures of the time while a scope was open
 * on a traced thread (the iterations, without start-up, imports and the
 * code between them), which the CPU verdict classes judge when the run has
 * at least 2 steady-state iterations (rules.c).  Null without them.  In
 * --python=sample mode the split comes from the stack samples taken while
 * a scope was open (and top_op_callers is empty: no call spans).
 */
#define IT_MIN_STEADY 2
int isc_ana_emit_in_iterations(struct ana *a, cJSON *cpu, bool from_samples)
{
	if (a->out.it_samples < IT_MIN_STEADY) {
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(cpu, "in_iterations"));
		return 0;
	}
	struct ana_cpu_split c = { 0 };
	uint64_t sys = 0;
	for (size_t i = 0; i < a->nths; i++) {
		const struct ana_thread *th = a->ths[i];
		c.python += th->it_python_ns;
		c.ops += th->it_ops_ns;
		c.torch += th->it_torch_ns;
		c.off_py += th->it_off_py_ns;
		c.off_ops += th->it_off_ops_ns;
		c.off_torch += th->it_off_torch_ns;
		if (th->traced && th->it_pairs) {
			c.measured = true;
			c.vsw += th->it_vcsw;
			c.ivsw += th->it_ivcsw;
			sys += th->it_sys_ns;
		}
	}
	if (from_samples) { /* as cpu.split in sample mode, of the samples inside scopes */
		struct isc_pysamp_split ss;
		isc_pysamp_split(a->pys, true, &ss);
		c.off_py = ss.off_py_ns;
		c.python = ss.python_on_ns + c.off_py;
		c.off_ops = ss.off_native_ns;
		c.ops = ss.torch_on_ns + ss.other_c_on_ns + c.off_ops;
		c.torch = ss.torch_on_ns;
		c.off_torch = 0;
		c.measured = c.python + c.ops > 0;
	}
	isc_nat_resplit_split(a->nat, &c, true);
	cJSON *it = isc_jb_obj(&a->jb, cpu, "in_iterations");
	isc_jb_str(&a->jb, it, "scope", a->out.it_name);
	isc_jb_str(&a->jb, it, "rule", "while a scope was open on the thread (the iterations, warm-up included; "
		   "start-up, imports and the code between iterations left out); off-CPU, system time, switches and "
		   "runnable threads from the samples taken inside scopes");
	emit_split(a, isc_jb_obj(&a->jb, it, "split"), &c);
	/* how much of the work from the first iteration to the last the iterations hold (rules.c: judged from half) */
	uint64_t after = a->after_at_scope_end > c.python + c.ops ? a->after_at_scope_end : c.python + c.ops;
	a->out.in_it = true;
	a->out.in_it_traced_ns = c.python + c.ops;
	/* of the work: a thread blocked all along (a lock's holder asleep, an
	 * idle helper) holds none the iterations could fail to stand for.
	 * Sample mode: the samples of busy threads (all samples when no thread
	 * was ever seen busy); exact mode: the traced threads' CPU time from
	 * the thread samples (the traced time when there are none) */
	uint64_t it_cpu = 0;
	for (size_t i = 0; i < a->nths; i++)
		if (a->ths[i]->traced)
			it_cpu += a->ths[i]->it_cpu_ns;
	if (from_samples) /* up to the last scope's end, as exact mode: shutdown (and a scope never ended) left out */
		a->out.in_it_share_pct = a->ps_busy_at_scope_end
						 ? pct(a->ps_busy_in < a->ps_busy_at_scope_end ? a->ps_busy_in : a->ps_busy_at_scope_end,
						       a->ps_busy_at_scope_end)
						 : pct(a->ps_in < a->ps_at_scope_end ? a->ps_in : a->ps_at_scope_end, a->ps_at_scope_end);
	else /* exact mode: of the traced threads' CPU time, as sample mode's busy samples */
		a->out.in_it_share_pct = a->cpu_after_at_scope_end && it_cpu
						 ? pct(it_cpu < a->cpu_after_at_scope_end ? it_cpu : a->cpu_after_at_scope_end,
						       a->cpu_after_at_scope_end)
						 : pct(c.python + c.ops, after);
	isc_jb_num(&a->jb, it, "share_pct", a->out.in_it_share_pct);
	isc_jb_num_or_null(&a->jb, it, "system_ns", c.measured, (double)sys);
	isc_jb_num_or_null(&a->jb, it, "blocked_ns", a->rounds, (double)a->it_off.blocked_ns);
	isc_jb_num_or_null(&a->jb, it, "state_samples", a->rounds, (double)a->it_off.state_samples);
	isc_jb_num_or_null(&a->jb, it, "runnable_threads_mean", a->it_rounds,
			   a->it_rounds ? round(100 * (double)a->it_runnable_sum / (double)a->it_rounds) / 100 : 0);
	isc_jb_num_or_null(&a->jb, it, "runnable_threads_max", a->it_rounds, (double)a->it_runnable_max);
	if (emit_scoped_callers(a, it, c.python + c.ops) || emit_off_cpu(a, &a->it_off, it) ||
	    emit_off_reasons(a, &a->it_off, it))
		return -ENOMEM;
	return 0;
}
