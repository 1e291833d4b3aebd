/*
 * analyze_sections.c - the findings document's sections (summary,
 * processes, cpu, iterations, memory, marks, ...) written from the state
 * analyze.c's pass leaves (analyze_pass.h); GPU, timeseries and NUMA
 * sections come from their own modules.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_stats.h" /* isc_quantile_sorted, isc_lsq_*, isc_histogram_linear */
#include "isc_config.h"
#include "analyze_gpu.h"
#include "analyze_numa.h"
#include "analyze_oom.h"
#include "analyze_pass.h"
#include "isc_util.h"
#include "isc_jbuild.h"

/* ---- end of the pass: CPU split ------------------------------------------- */
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

/* ---- JSON output helpers ------------------------------------------------- */
/* name, file, line of a source location into o. */
static void jloc(struct ana *a, cJSON *o, const char *name, const char *file, uint32_t line)
{
	isc_jb_str(&a->jb, o, "name", name);
	isc_jb_str(&a->jb, o, "file", file);
	isc_jb_num(&a->jb, o, "line", line);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? round(10000.0 * (double)part / (double)whole) / 100 : 0;
}

static const char *str_name(struct ana *a, uint32_t id)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, id);
	return s ? s->name : NULL;
}

/* Name of a scope as reported: ProfilerStep#N merged as "ProfilerStep#*". */
static const char *scope_name(struct ana *a, const struct ana_scope *sc)
{
	return sc->profiler_step ? "ProfilerStep#*" : str_name(a, sc->name_id);
}

/* The name of a WARNING code (enum isc_warning); unknown codes are "other". */
static const char *warning_kind(uint64_t code)
{
	static const char *const names[] = { "other", "no_driver", "stub_driver", "injection_taken", "not_built",
					     "no_nvml", "cupti_version", "cupti_privileges", "cupti_subscriber",
					     "cupti_error", "cupti_kinds", [ISC_WARN_NO_PY_AGENT] = "no_python_agent",
					     [ISC_WARN_OOM_KILL] = "oom_kill" };
	return code < sizeof(names) / sizeof(names[0]) && names[code] ? names[code] : "other";
}

/* ---- sections --------------------------------------------------------- */
struct fn_row {
	const char *name, *file;
	uint32_t line;
	uint8_t kind;
	uint64_t calls, self_ns, total_ns, ops_self_ns, scoped_calls, scoped_self_ns, growth_bytes;
	uint64_t scoped_ops_self_ns;
	bool sampled; /* its time from stack samples (an operator's slot): calls not counted */
};

/* Orders source locations by name, file, line. */
static int cmp_location(const char *name1, const char *file1, uint32_t line1, const char *name2, const char *file2,
			uint32_t line2)
{
	int c;
	if ((c = strcmp(name1, name2)) || (c = strcmp(file1, file2)))
		return c;
	return line1 < line2 ? -1 : line1 > line2;
}

static int row_by_identity(const void *x, const void *y)
{
	const struct fn_row *a = x, *b = y;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	return cmp_location(a->name, a->file, a->line, b->name, b->file, b->line);
}

static int row_by_self(const void *x, const void *y)
{
	const struct fn_row *a = x, *b = y;
	if (a->self_ns != b->self_ns)
		return a->self_ns > b->self_ns ? -1 : 1;
	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	return row_by_identity(x, y);
}

static int row_by_scoped(const void *x, const void *y)
{
	const struct fn_row *a = x, *b = y;
	if (a->scoped_self_ns != b->scoped_self_ns)
		return a->scoped_self_ns > b->scoped_self_ns ? -1 : 1;
	return row_by_identity(x, y);
}

/* Python functions by the op self time they call, non-Python rows last. */
static int row_by_ops(const void *x, const void *y)
{
	const struct fn_row *a = x, *b = y;
	uint64_t va = a->kind == ISC_SPAN_PYTHON ? a->ops_self_ns : 0;
	uint64_t vb = b->kind == ISC_SPAN_PYTHON ? b->ops_self_ns : 0;
	if (va != vb)
		return va > vb ? -1 : 1;
	return row_by_identity(x, y);
}

/* The same inside scopes. */
static int row_by_scoped_ops(const void *x, const void *y)
{
	const struct fn_row *a = x, *b = y;
	uint64_t va = a->kind == ISC_SPAN_PYTHON ? a->scoped_ops_self_ns : 0;
	uint64_t vb = b->kind == ISC_SPAN_PYTHON ? b->scoped_ops_self_ns : 0;
	if (va != vb)
		return va > vb ? -1 : 1;
	return row_by_identity(x, y);
}

static int row_by_growth(const void *x, const void *y)
{
	const struct fn_row *a = x, *b = y;
	if (a->growth_bytes != b->growth_bytes)
		return a->growth_bytes > b->growth_bytes ? -1 : 1;
	return row_by_identity(x, y);
}

/*
 * One row per function, those with the same (kind, name, file, line) under
 * different string ids (one per process) merged; *m gets the count.  The
 * strings are borrowed from the timeline; the caller frees the array.
 */
static struct fn_row *merged_rows(struct ana *a, size_t *m)
{
	struct fn_row *rows = calloc(a->nfns ? a->nfns : 1, sizeof(*rows));
	size_t n = 0;
	*m = 0;
	if (!rows)
		return NULL;
	for (size_t i = 0; i < a->nfns; i++) {
		const struct ana_fn *f = &a->fns[i];
		const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, f->name_id);
		rows[n++] = (struct fn_row){ s ? s->name : "?", s ? s->file : "", s ? s->line : 0, f->kind,
					     f->calls, f->self_ns, f->total_ns, f->ops_self_ns,
					     f->scoped_calls, f->scoped_self_ns, f->growth_bytes, f->scoped_ops_self_ns,
					     f->sampled && !f->calls };
	}
	qsort(rows, n, sizeof(*rows), row_by_identity);
	for (size_t i = 0; i < n; i++) {
		struct fn_row *r = *m ? &rows[*m - 1] : NULL;
		if (r && !row_by_identity(r, &rows[i])) {
			r->calls += rows[i].calls;
			r->self_ns += rows[i].self_ns;
			r->total_ns += rows[i].total_ns;
			r->ops_self_ns += rows[i].ops_self_ns;
			r->scoped_calls += rows[i].scoped_calls;
			r->scoped_self_ns += rows[i].scoped_self_ns;
			r->growth_bytes += rows[i].growth_bytes;
			r->scoped_ops_self_ns += rows[i].scoped_ops_self_ns;
			r->sampled = r->sampled && rows[i].sampled;
		} else {
			rows[(*m)++] = rows[i];
		}
	}
	return rows;
}

/* cpu.top_functions, top_functions_in_scopes, top_op_callers. */
static int emit_functions(struct ana *a, cJSON *cpu, uint64_t traced_ns)
{
	size_t m;
	struct fn_row *rows = merged_rows(a, &m);
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
		jloc(a, o, rows[i].name, rows[i].file, rows[i].line);
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
	struct fn_row *rows = merged_rows(a, &m);
	if (!rows)
		return -ENOMEM;
	qsort(rows, m, sizeof(*rows), row_by_scoped_ops);
	cJSON *callers = isc_jb_arr(&a->jb, in_it, "top_op_callers");
	for (size_t i = 0; i < m && i < 10 && rows[i].scoped_ops_self_ns; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, callers);
		if (!o)
			break;
		jloc(a, o, rows[i].name, rows[i].file, rows[i].line);
		isc_jb_num(&a->jb, o, "ops_self_ns", (double)rows[i].scoped_ops_self_ns);
		isc_jb_num(&a->jb, o, "ops_pct", pct(rows[i].scoped_ops_self_ns, it_traced_ns));
	}
	free(rows);
	return 0;
}

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
	if (a->reason != b->reason)
		return a->reason < b->reason ? -1 : 1;
	if ((c = strcmp(a->kind, b->kind)) || (c = cmp_location(a->name, a->file, a->line, b->name, b->file, b->line)))
		return c;
	if (!a->py_name || !b->py_name)
		return !a->py_name - !b->py_name;
	return cmp_location(a->py_name, a->py_file, a->py_line, b->py_name, b->py_file, b->py_line);
}

static int off_by_ns(const void *x, const void *y)
{
	const struct off_out *a = x, *b = y;
	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	return off_by_identity(x, y);
}

/* Python callers of one reason: by location, then by ns */
static int caller_by_identity(const void *x, const void *y)
{
	const struct off_out *a = x, *b = y;
	return cmp_location(a->py_name, a->py_file, a->py_line, b->py_name, b->py_file, b->py_line);
}

static int caller_by_ns(const void *x, const void *y)
{
	const struct off_out *a = x, *b = y;
	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	return caller_by_identity(x, y);
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
		jloc(a, isc_jb_obj(&a->jb, o, "python"), rows[i].py_name, rows[i].py_file, rows[i].py_line);
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
			jloc(a, t, rows[i].py_name, rows[i].py_file, rows[i].py_line);
			isc_jb_num(&a->jb, t, "ns", (double)rows[i].ns);
		}
		free(rows); /* merging above summed rows in place: rebuild for the next reason */
		if (!(rows = off_rows(a, acc, &m)))
			return -ENOMEM;
	}
	free(rows);
	return 0;
}

/* cpu.thread_pools: threads grouped by process, name pattern, traced, shared futex word */
struct pool {
	uint32_t pid;
	char name[32];
	bool traced;
	uint64_t futex; /* 0: none shared */
	uint64_t threads, cpu_ns, r_samples;
};

static int pool_by_identity(const void *x, const void *y)
{
	const struct pool *a = x, *b = y;
	int c;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if ((c = strcmp(a->name, b->name)))
		return c;
	if (a->traced != b->traced)
		return a->traced ? -1 : 1;
	return a->futex < b->futex ? -1 : a->futex > b->futex;
}

static int pool_by_cpu(const void *x, const void *y)
{
	const struct pool *a = x, *b = y;
	if (a->cpu_ns != b->cpu_ns)
		return a->cpu_ns > b->cpu_ns ? -1 : 1;
	if (a->threads != b->threads)
		return a->threads > b->threads ? -1 : 1;
	return pool_by_identity(x, y);
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
static int emit_pools(struct ana *a, cJSON *cpu)
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
		total += th->cpu_ns;
	}
	qsort(ps, n, sizeof(*ps), pool_by_identity);
	for (size_t i = 0; i < n; i++) {
		if (m && !pool_by_identity(&ps[m - 1], &ps[i])) {
			ps[m - 1].threads++;
			ps[m - 1].cpu_ns += ps[i].cpu_ns;
			ps[m - 1].r_samples += ps[i].r_samples;
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
	}
	free(ps);
	return 0;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static int cmp_iter(const void *x, const void *y)
{
	const struct ana_iter *a = x, *b = y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->begin_ts < b->begin_ts ? -1 : a->begin_ts > b->begin_ts;
}

/* iterations.spans rows: warm-up first, then by start */
struct span_out {
	uint64_t begin, end;
	bool warm;
};

static int cmp_span_out(const void *x, const void *y)
{
	const struct span_out *a = x, *b = y;
	if (a->warm != b->warm)
		return a->warm ? -1 : 1;
	return a->begin < b->begin ? -1 : a->begin > b->begin;
}

/*
 * iterations.dataloader: outermost DataLoader spans over the whole run, and
 * their share of the steady-state period [first steady start, last steady
 * end], from the dl_time() stamps of the iterations that bound it.
 */
static void emit_dataloader(struct ana *a, cJSON *it, bool steady, uint64_t from, uint64_t to, uint64_t dl_ns)
{
	if (!a->dl_calls) {
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(it, "dataloader"));
		return;
	}
	uint32_t name_id = 0;
	uint64_t best = 0;
	bool found = false;
	for (size_t i = 0; i < a->nfns; i++)
		if (a->fns[i].dataloader && (!found || a->fns[i].total_ns > best)) {
			found = true;
			best = a->fns[i].total_ns;
			name_id = a->fns[i].name_id;
		}
	for (size_t i = 0; i < a->nscs; i++)
		if (a->scs[i].dataloader && (!found || a->scs[i].total_ns > best)) {
			found = true;
			best = a->scs[i].total_ns;
			name_id = a->scs[i].name_id;
		}
	cJSON *o = isc_jb_obj(&a->jb, it, "dataloader");
	isc_jb_num(&a->jb, o, "total_ns", (double)a->dl_closed_ns);
	isc_jb_num(&a->jb, o, "calls", (double)a->dl_calls);
	bool have = steady && to > from;
	isc_jb_num_or_null(&a->jb, o, "pct_of_step", have, have ? round(1e4 * (double)dl_ns / (double)(to - from)) / 100 : 0);
	const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, name_id);
	jloc(a, isc_jb_obj(&a->jb, o, "function"), s ? s->name : "?", s ? s->file : "", s ? s->line : 0);
}

#define ITER_SPANS_MAX 1000
#define ITER_HIST_BINS 20

/* iterations.histogram of the sorted steady-state latencies; null without any. */
static void emit_histogram(struct ana *a, cJSON *it, const uint64_t *lat, size_t n)
{
	uint64_t edges[ITER_HIST_BINS + 1], counts[ITER_HIST_BINS];
	if (!n) {
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(it, "histogram"));
		return;
	}
	unsigned k = isc_histogram_linear(lat, n, ITER_HIST_BINS, edges, counts);
	cJSON *h = isc_jb_obj(&a->jb, it, "histogram");
	cJSON *e = isc_jb_arr(&a->jb, h, "edges_ns"), *c = isc_jb_arr(&a->jb, h, "counts");
	for (unsigned i = 0; i <= k && e && c; i++) {
		isc_jb_push_num(&a->jb, e, (double)edges[i]);
		if (i < k)
			isc_jb_push_num(&a->jb, c, (double)counts[i]);
	}
}

/*
 * The iteration scope is the PyTorch profiler's step (ProfilerStep#N, one
 * scope) when it has 2 or more spans: torch.profiler's schedule and HTA
 * call that the iteration, and an inner annotation that repeats more often
 * (nccl:all_reduce five times a step) is not one.  Otherwise the scope name
 * with the most spans (ties: the larger total time, then the first seen),
 * DataLoader annotations left out.
 * Warm-up: the earliest iteration of each process that ran at least 2 is
 * excluded from the latency stats, as are iterations whose end was never
 * recorded; the rest are the steady-state iterations.  In a flight
 * recording only processes that started inside the window have their
 * warm-up left out: the others' first iterations were evicted.
 */
static bool started_in_window(const struct ana *a, uint32_t pid);

static int emit_iterations(struct ana *a, cJSON *root)
{
	cJSON *it = isc_jb_obj(&a->jb, root, "iterations");
	struct ana_scope *best = NULL;
	for (size_t i = 0; i < a->nscs; i++) {
		struct ana_scope *s = &a->scs[i];
		if (s->dataloader)
			continue;
		if (s->profiler_step && s->n >= 2) {
			best = s;
			break;
		}
		if (!best || s->n > best->n || (s->n == best->n && s->total_ns > best->total_ns))
			best = s;
	}
	a->out.it_name = best ? scope_name(a, best) : NULL;
	a->out.it_count = best ? best->n : 0;
	isc_jb_str(&a->jb, it, "name", a->out.it_name);
	isc_jb_num(&a->jb, it, "count", (double)a->out.it_count);
	isc_jb_str(&a->jb, it, "rule", isc_timeline_stats_borrow(a->t)->window
		   ? "iterations = ProfilerStep#N when it has 2 or more spans, else spans of the most frequent scope name (DataLoader annotations left out); warm-up = "
		     "the first iteration of each process that started inside the window of this flight recording "
		     "(--ring) and ran at least 2; the others' first iterations were evicted"
		   : "iterations = ProfilerStep#N when it has 2 or more spans, else spans of the most frequent scope name (DataLoader annotations "
		     "left out); warm-up = the first iteration of each process that ran at least 2");
	uint64_t *lat = NULL;
	struct span_out *spans = NULL;
	size_t nlat = 0, warm = 0, incomplete = 0, nspans = 0;
	/* the steady-state period and the DataLoader time stamps at its ends */
	uint64_t st_from = UINT64_MAX, st_to = 0, dl_from = 0, dl_to = 0;
	/* a flight recording evicted the first iterations of the processes it did not see start */
	bool window = isc_timeline_stats_borrow(a->t)->window;
	if (best && best->n) {
		if (!(lat = malloc(best->n * sizeof(*lat))) || !(spans = malloc(best->n * sizeof(*spans)))) {
			free(lat);
			return -ENOMEM;
		}
		qsort(best->s, best->n, sizeof(*best->s), cmp_iter);
		for (size_t i = 0, j; i < best->n; i = j) {
			for (j = i; j < best->n && best->s[j].pid == best->s[i].pid; j++)
				;
			bool warm_rule = !window || started_in_window(a, best->s[i].pid);
			for (size_t k = i; k < j; k++) {
				const struct ana_iter *x = &best->s[k];
				uint64_t end = x->begin_ts + x->dur;
				if (end > a->iter_end_ts)
					a->iter_end_ts = end;
				if (!a->iter_begin_ts || x->begin_ts < a->iter_begin_ts)
					a->iter_begin_ts = x->begin_ts;
				if (k == i && j - i >= 2 && warm_rule && end > a->warm_end_ts)
					a->warm_end_ts = end;
				if (k == i && j - i >= 2 && warm_rule) {
					warm++;
					spans[nspans++] = (struct span_out){ x->begin_ts, end, true };
				} else if (!x->complete) {
					incomplete++;
				} else {
					lat[nlat++] = x->lat;
					a->removed_iter_ns += x->dur - x->lat;
					spans[nspans++] = (struct span_out){ x->begin_ts, end, false };
					if (x->begin_ts < st_from) {
						st_from = x->begin_ts;
						dl_from = x->dl_begin;
					}
					if (end >= st_to) {
						st_to = end;
						dl_to = x->dl_end;
					}
				}
			}
		}
		qsort(lat, nlat, sizeof(*lat), cmp_u64);
		qsort(spans, nspans, sizeof(*spans), cmp_span_out);
	}
	isc_jb_num(&a->jb, it, "warmup_excluded", (double)warm);
	isc_jb_num(&a->jb, it, "incomplete_excluded", (double)incomplete);
	a->out.it_samples = nlat;
	isc_jb_num(&a->jb, it, "samples", (double)nlat);
	cJSON *l = isc_jb_obj(&a->jb, it, "latency_ns");
	cJSON *ci = isc_jb_obj(&a->jb, it, "latency_ci95_ns");
	static const struct { const char *k; double p; } qs[] = { { "p50", .5 }, { "p90", .9 }, { "p99", .99 } };
	for (size_t i = 0; i < 3; i++) {
		size_t lo = 0, hi = 0;
		isc_jb_num_or_null(&a->jb, l, qs[i].k, nlat, nlat ? (double)isc_quantile_sorted(lat, nlat, qs[i].p) : 0);
		isc_quantile_ci(nlat, qs[i].p, 0.95, &lo, &hi);
		cJSON *c = isc_jb_obj(&a->jb, ci, qs[i].k);
		isc_jb_num_or_null(&a->jb, c, "low", lo, lo ? (double)lat[lo - 1] : 0);
		isc_jb_num_or_null(&a->jb, c, "high", hi, hi ? (double)lat[hi - 1] : 0);
	}
	double sum = 0;
	for (size_t i = 0; i < nlat; i++)
		sum += (double)lat[i];
	isc_jb_num_or_null(&a->jb, l, "mean", nlat, nlat ? round(sum / (double)nlat) : 0);
	isc_jb_num_or_null(&a->jb, l, "min", nlat, nlat ? (double)lat[0] : 0);
	isc_jb_num_or_null(&a->jb, l, "max", nlat, nlat ? (double)lat[nlat - 1] : 0);
	emit_histogram(a, it, lat, nlat);
	free(lat);
	cJSON *sc = isc_jb_arr(&a->jb, it, "scopes");
	for (size_t i = 0; i < a->nscs && i < 20; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, sc);
		if (!o)
			break;
		isc_jb_str(&a->jb, o, "name", scope_name(a, &a->scs[i]));
		isc_jb_num(&a->jb, o, "count", (double)a->scs[i].n);
		isc_jb_num(&a->jb, o, "total_ns", (double)a->scs[i].total_ns);
	}
	cJSON *sp = isc_jb_arr(&a->jb, it, "spans");
	for (size_t i = 0; i < nspans && i < ITER_SPANS_MAX && sp; i++) {
		cJSON *pair = cJSON_CreateArray();
		if (!isc_jb_chk(&a->jb, pair) || !cJSON_AddItemToArray(sp, pair)) {
			cJSON_Delete(pair);
			a->jb.oom = true;
			break;
		}
		isc_jb_push_num(&a->jb, pair, (double)(spans[i].begin - a->first_ts));
		isc_jb_push_num(&a->jb, pair, (double)(spans[i].end - a->first_ts));
	}
	isc_jb_bool(&a->jb, it, "spans_truncated", nspans > ITER_SPANS_MAX);
	isc_jb_num(&a->jb, it, "warmup_spans", (double)(warm < ITER_SPANS_MAX ? warm : ITER_SPANS_MAX));
	free(spans);
	emit_dataloader(a, it, nlat > 0, st_from, st_to, dl_to > dl_from ? dl_to - dl_from : 0);
	return 0;
}

/*
 * Did process pid start inside a flight recording's window (its PROC_INFO,
 * never evicted, stamped after the first agent event kept)?  Its first
 * iteration is then in the trace, and is its warm-up.
 */
static bool started_in_window(const struct ana *a, uint32_t pid)
{
	uint32_t i = isc_umap_get(&a->pr_map, pid);
	const struct ana_proc *p = i == ISC_UMAP_NONE ? NULL : a->prs[i];
	return p && p->have_info && a->first_agent_ts && p->info_ts > a->first_agent_ts;
}

static int cmp_proc(const void *x, const void *y)
{
	const struct ana_proc *a = *(struct ana_proc *const *)x, *b = *(struct ana_proc *const *)y;
	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/* Threads of a process: the main thread (tid == pid) first, then by tid. */
static int cmp_thread(const void *x, const void *y)
{
	const struct ana_thread *a = *(struct ana_thread *const *)x, *b = *(struct ana_thread *const *)y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	bool ma = a->tid == a->pid, mb = b->tid == b->pid;
	if (ma != mb)
		return ma ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static void emit_rates(struct ana *a, cJSON *o, const struct ana_proc *p, double *vsum, double *isum)
{
	cJSON *cs = isc_jb_obj(&a->jb, o, "context_switches");
	bool have = p->nsamples >= 2 && p->s_ts1 > p->s_ts0;
	double s = have ? (double)(p->s_ts1 - p->s_ts0) / 1e9 : 1;
	double v = have && p->vcsw1 >= p->vcsw0 ? round(100 * (double)(p->vcsw1 - p->vcsw0) / s) / 100 : 0;
	double iv = have && p->ivcsw1 >= p->ivcsw0 ? round(100 * (double)(p->ivcsw1 - p->ivcsw0) / s) / 100 : 0;
	isc_jb_num_or_null(&a->jb, cs, "voluntary_per_s", have, v);
	isc_jb_num_or_null(&a->jb, cs, "involuntary_per_s", have, iv);
	*vsum += v;
	*isum += iv;
}

static const char *exit_how_name(uint64_t how)
{
	return how == 0 ? "exited" : how == 1 ? "signaled" : "lost";
}

static void emit_processes(struct ana *a, cJSON *root, double *vsum, double *isum, bool *have_cs)
{
	const struct isc_tl_header *h = isc_timeline_header_borrow(a->t);
	cJSON *ps = isc_jb_arr(&a->jb, root, "processes");
	if (a->nprs) /* NULL arrays when a timeline has no process (only GPU operations) */
		qsort(a->prs, a->nprs, sizeof(*a->prs), cmp_proc);
	if (a->nths)
		qsort(a->ths, a->nths, sizeof(*a->ths), cmp_thread);
	size_t ti = 0;
	for (size_t i = 0; i < a->nprs; i++) {
		const struct ana_proc *p = a->prs[i];
		cJSON *o = isc_jb_push_obj(&a->jb, ps);
		if (!o)
			return;
		isc_jb_num(&a->jb, o, "pid", p->pid);
		isc_jb_num_or_null(&a->jb, o, "ppid", p->have_info, p->ppid);
		/* without PROC_INFO, a lone process is the recorded command */
		isc_jb_str(&a->jb, o, "command", p->command ? p->command : a->nprs == 1 ? h->cmdline : "");
		isc_jb_num_or_null(&a->jb, o, "exit_status", p->have_exit, (double)p->exit_status);
		isc_jb_str(&a->jb, o, "exit_how", p->have_exit ? exit_how_name(p->exit_how) : NULL);
		isc_jb_num_or_null(&a->jb, o, "cpu_ns", p->nsamples, (double)p->cpu_ns);
		isc_jb_num_or_null(&a->jb, o, "system_ns", p->nsamples, (double)p->sys_ns);
		isc_jb_num_or_null(&a->jb, o, "rss_peak_bytes", p->have_rss, (double)p->rss_peak);
		isc_jb_num_or_null(&a->jb, o, "minor_faults", p->nsamples, (double)p->minflt);
		isc_jb_num_or_null(&a->jb, o, "major_faults", p->nsamples, (double)p->majflt);
		emit_rates(a, o, p, vsum, isum);
		*have_cs |= p->nsamples >= 2 && p->s_ts1 > p->s_ts0;
		cJSON *ts = isc_jb_arr(&a->jb, o, "threads");
		while (ti < a->nths && a->ths[ti]->pid < p->pid)
			ti++;
		for (; ti < a->nths && a->ths[ti]->pid == p->pid; ti++) {
			const struct ana_thread *th = a->ths[ti];
			cJSON *t = isc_jb_push_obj(&a->jb, ts);
			if (!t)
				return;
			isc_jb_num(&a->jb, t, "tid", th->tid);
			isc_jb_str(&a->jb, t, "name", th->name ? th->name : th->comm ? th->comm : "");
			isc_jb_str(&a->jb, t, "comm", th->comm);
			isc_jb_num_or_null(&a->jb, t, "cpu_ns", th->have_cpu, (double)th->cpu_ns);
			isc_jb_num_or_null(&a->jb, t, "system_ns", th->have_cpu, (double)th->sys_ns);
			isc_jb_bool(&a->jb, t, "traced", th->traced);
			isc_jb_num(&a->jb, t, "events", (double)th->events);
			isc_jb_num(&a->jb, t, "python_ns", (double)(th->python_ns - th->off_py_ns));
			isc_jb_num(&a->jb, t, "ops_ns", (double)(th->ops_ns - th->off_ops_ns));
			isc_jb_num(&a->jb, t, "torch_ops_ns", (double)(th->torch_ns - th->off_torch_ns));
			isc_jb_num_or_null(&a->jb, t, "gil_wait_ns", a->have_wait, (double)th->gil_ns);
			isc_jb_num(&a->jb, t, "off_cpu_ns", (double)(th->off_ops_ns + th->off_py_ns));
			if (th->have_cpu) {
				char st[2] = { th->state, 0 };
				isc_jb_str(&a->jb, t, "state", st);
				isc_jb_num(&a->jb, t, "last_cpu", (double)th->last_cpu);
			}
			if (th->have_numa)
				isc_jb_num(&a->jb, t, "numa_node", (double)th->numa_node);
		}
	}
}

#define GROWTH_TOP 5

static int cmp_gsite(const void *x, const void *y)
{
	const struct gsite *p = x, *q = y;
	if (p->bytes != q->bytes)
		return p->bytes > q->bytes ? -1 : 1;
	return p->fn != q->fn ? (p->fn < q->fn ? -1 : 1) : (p->scope < q->scope ? -1 : p->scope > q->scope);
}

/* memory.growth_sites: the GROWTH_TOP (Python function, scope) pairs RSS grew in most. */
static void emit_growth_sites(struct ana *a, cJSON *m)
{
	if (a->ngs > 1)
		qsort(a->gs, a->ngs, sizeof(*a->gs), cmp_gsite); /* gs_map is not used after the pass */
	cJSON *arr = isc_jb_arr(&a->jb, m, "growth_sites");
	for (size_t i = 0; i < a->ngs && i < GROWTH_TOP; i++) {
		const struct gsite *g = &a->gs[i];
		const struct isc_tl_string *fn = g->fn ? isc_timeline_string_borrow(a->t, g->fn) : NULL;
		const struct isc_tl_string *sc = g->scope ? isc_timeline_string_borrow(a->t, g->scope) : NULL;
		cJSON *o = isc_jb_push_obj(&a->jb, arr);
		isc_jb_str(&a->jb, o, "name", fn ? fn->name : sc ? sc->name : "?");
		isc_jb_str(&a->jb, o, "file", fn ? fn->file : "");
		isc_jb_num(&a->jb, o, "line", fn ? fn->line : 0);
		isc_jb_str(&a->jb, o, "kind", fn ? "python" : "scope");
		isc_jb_str(&a->jb, o, "scope", sc ? sc->name : NULL);
		isc_jb_num(&a->jb, o, "bytes", (double)g->bytes);
	}
}

static int emit_memory(struct ana *a, cJSON *root)
{
	cJSON *m = a->out.memory = isc_jb_obj(&a->jb, root, "memory");
	uint64_t majflt = 0, minflt = 0, pswap = 0;
	bool have_faults = false, have_smaps = false;
	for (size_t i = 0; i < a->nprs; i++) {
		majflt += a->prs[i]->majflt;
		minflt += a->prs[i]->minflt;
		have_faults |= a->prs[i]->nsamples > 0;
		if (a->prs[i]->have_smaps) {
			have_smaps = true;
			if (a->prs[i]->swap_max > pswap)
				pswap = a->prs[i]->swap_max;
		}
	}
	double slope = 0;
	uint64_t npts = 0;
	uint64_t cut = a->first_ts + (a->last_ts - a->first_ts) / 10;
	bool have_slope = isc_lsq_slope(a->rss_lsq, cut, UINT64_MAX, &slope, &npts);
	isc_jb_num_or_null(&a->jb, m, "rss_peak_bytes", a->have_rss, (double)a->rss_total_peak);
	isc_jb_num_or_null(&a->jb, m, "rss_growth_bytes_per_s", have_slope, round(slope));
	isc_jb_num(&a->jb, m, "rss_growth_samples", (double)npts);
	/* the same between the end of the warm-up iterations and the last
	 * iteration's end: steady-state growth, without start-up and teardown */
	if (a->warm_end_ts > cut)
		cut = a->warm_end_ts;
	have_slope = a->warm_end_ts && isc_lsq_slope(a->rss_lsq, cut, a->iter_end_ts, &slope, &npts);
	isc_jb_num_or_null(&a->jb, m, "rss_growth_after_warmup_bytes_per_s", have_slope, round(slope));
	isc_jb_num_or_null(&a->jb, m, "after_warmup_span_ns", a->warm_end_ts && a->iter_end_ts > a->warm_end_ts,
		     (double)(a->iter_end_ts - a->warm_end_ts));
	isc_jb_num_or_null(&a->jb, m, "major_faults", have_faults, (double)majflt);
	isc_jb_num_or_null(&a->jb, m, "minor_faults", have_faults, (double)minflt);
	isc_jb_num_or_null(&a->jb, m, "swap_used_bytes_max", a->have_meminfo, (double)a->swap_used_max);
	isc_jb_num_or_null(&a->jb, m, "mem_available_bytes_min", a->have_meminfo, (double)a->mem_avail_min);
	isc_jb_num_or_null(&a->jb, m, "process_swap_bytes_max", have_smaps, (double)pswap);
	cJSON *pr = isc_jb_obj(&a->jb, m, "pressure");
	static const char *const res[3] = { "cpu", "memory", "io" };
	for (int i = 0; i < 3; i++) {
		const struct ana_pressure *ps = &a->psi[i];
		cJSON *o = isc_jb_obj(&a->jb, pr, res[i]);
		bool span = ps->n >= 2 && ps->ts1 > ps->ts0 && ps->tot1 >= ps->tot0;
		isc_jb_num_or_null(&a->jb, o, "some_avg10_max", ps->have, (double)ps->avg10_max_x100 / 100);
		isc_jb_num_or_null(&a->jb, o, "some_stall_pct", span,
			     span ? round(1e4 * (double)(ps->tot1 - ps->tot0) * 1e3 / (double)(ps->ts1 - ps->ts0)) / 100 : 0);
	}
	size_t n;
	struct fn_row *rows = merged_rows(a, &n);
	if (!rows)
		return -ENOMEM;
	qsort(rows, n, sizeof(*rows), row_by_growth);
	cJSON *g = isc_jb_arr(&a->jb, m, "growth_top");
	for (size_t i = 0; i < n && i < GROWTH_TOP && rows[i].growth_bytes; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, g);
		if (!o)
			break;
		jloc(a, o, rows[i].name, rows[i].file, rows[i].line);
		isc_jb_num(&a->jb, o, "growth_bytes", (double)rows[i].growth_bytes);
	}
	free(rows);
	emit_growth_sites(a, m);
	/*
	 * what the resident memory was made of at the end: per process, the
	 * smaps_rollup record of its highest RSS of the last 2 s
	 * (isc_oom_mem_at: the last record is often taken after the
	 * interpreter freed its memory on the way out)
	 */
	uint64_t c[4] = { 0 }; /* rss pss anon swap */
	for (size_t i = 0; i < a->nprs; i++) {
		struct isc_oom_mem pm;
		if (a->prs[i]->have_smaps && isc_oom_mem_at(a->oom, a->prs[i]->pid, 0, &pm) && pm.have_smaps) {
			c[0] += pm.s_rss;
			c[1] += pm.pss;
			c[2] += pm.anon;
			c[3] += pm.swap;
		}
	}
	if (have_smaps) {
		cJSON *co = isc_jb_obj(&a->jb, m, "composition");
		isc_jb_num(&a->jb, co, "rss_bytes", (double)c[0]);
		isc_jb_num(&a->jb, co, "pss_bytes", (double)c[1]);
		isc_jb_num(&a->jb, co, "anon_bytes", (double)c[2]);
		isc_jb_num(&a->jb, co, "file_bytes", (double)(c[0] > c[2] ? c[0] - c[2] : 0));
		isc_jb_num(&a->jb, co, "swap_bytes", (double)c[3]);
	} else {
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(m, "composition"));
	}
	return 0;
}

/*
 * run: what the run was, before why it was slow (issue 18).  outcome is
 * truncated (no end record), killed (by a signal), failed (a non-zero exit
 * status, or an unhandled exception in a main thread), window (a flight
 * recorder kept only the last part: frames were evicted) or completed, in
 * that order of precedence.  startup_ns: with iterations, from the first
 * traced event to the first iteration (with no call spans, call_spans 0 as
 * in --python=sample, from the start of the recording); without, the time
 * inside the import machinery (importlib's _find_and_load, outermost
 * calls).  too_short:
 * fewer than RUN_MIN_ITERATIONS steady-state iterations, or less than
 * RUN_MIN_TRACED_NS of traced time (one sampler period at the default
 * 20 Hz: below it no thread state was sampled), of the time inside
 * iterations when the CPU classes judge it (cpu.in_iterations, share_pct
 * at least ISC_ITER_SHARE_MIN_PCT).
 */
#define RUN_MIN_ITERATIONS 5
#define RUN_MIN_TRACED_NS 50000000ull
static void emit_run(struct ana *a, cJSON *root, const struct isc_tl_stats *st, uint64_t traced, uint64_t call_spans)
{
	cJSON *r = isc_jb_obj(&a->jb, root, "run");
	bool cut = !st->have_end || st->abrupt;
	const struct ana_exc *x = NULL;
	/* the exception that ended a main thread (tid == pid) wins over a worker thread's */
	for (size_t i = 0; i < a->nexcs; i++)
		if (!x || (a->excs[i].tid == a->excs[i].pid && x->tid != x->pid))
			x = &a->excs[i];
	bool main_exc = x && x->tid == x->pid;
	const char *outcome = cut ? "truncated" : st->signaled ? "killed"
			      : st->exit_status != 0 || main_exc ? "failed" : st->window ? "window" : "completed";
	isc_jb_str(&a->jb, r, "outcome", outcome);
	isc_jb_num_or_null(&a->jb, r, "exit_status", !cut, st->exit_status);
	isc_jb_num_or_null(&a->jb, r, "signal", !cut && st->signaled, st->exit_status - 128);
	if (x) {
		cJSON *e = isc_jb_obj(&a->jb, r, "exception");
		const char *tname = NULL;
		for (size_t i = 0; i < a->nths; i++)
			if (a->ths[i]->pid == x->pid && a->ths[i]->tid == x->tid)
				tname = a->ths[i]->name;
		isc_jb_str(&a->jb, e, "type", x->type);
		isc_jb_str(&a->jb, e, "message", x->msg);
		isc_jb_str(&a->jb, e, "file", x->file);
		isc_jb_num(&a->jb, e, "line", (double)x->line);
		isc_jb_str(&a->jb, e, "function", x->func);
		isc_jb_num(&a->jb, e, "pid", x->pid);
		isc_jb_num(&a->jb, e, "tid", x->tid);
		isc_jb_str(&a->jb, e, "thread", tname);
		isc_jb_bool(&a->jb, e, "main_thread", x->tid == x->pid);
		isc_jb_num(&a->jb, e, "at_ns", (double)x->ts);
	} else {
		isc_jb_str(&a->jb, r, "exception", NULL);
	}
	isc_jb_num(&a->jb, r, "exceptions_total", (double)a->excs_total);
	/* a window's span: from the first agent event it kept */
	uint64_t from = a->first_agent_ts ? a->first_agent_ts : a->first_ts;
	isc_jb_bool(&a->jb, r, "window", st->window);
	isc_jb_num_or_null(&a->jb, r, "window_ns", st->window && a->last_ts > from, (double)(a->last_ts - from));
	uint64_t startup = 0, imports = 0;
	const char *rule;
	for (size_t i = 0; i < a->nfns; i++) {
		const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, a->fns[i].name_id);
		if (s && !strcmp(s->name, "_find_and_load") && strstr(s->file, "importlib._bootstrap"))
			imports += a->fns[i].total_ns;
	}
	if (st->window) {
		rule = "not known: a flight recording lacks the run's start";
	} else if (!call_spans && a->iter_begin_ts && a->iter_begin_ts > a->first_ts) {
		/* no call spans (--python=sample): the first agent event is a scope */
		startup = a->iter_begin_ts - a->first_ts;
		rule = "from the start of the recording to the first iteration (no call spans: --python=sample)";
	} else if (a->iter_begin_ts && a->iter_begin_ts > from) {
		startup = a->iter_begin_ts - from;
		rule = "from the first traced event to the first iteration";
	} else {
		startup = imports;
		rule = "time inside the import machinery (importlib _find_and_load, outermost calls): no iterations";
	}
	isc_jb_num_or_null(&a->jb, r, "startup_ns", !st->window, (double)startup);
	isc_jb_str(&a->jb, r, "startup_rule", rule);
	isc_jb_num(&a->jb, r, "import_ns", (double)imports);
	double samples = (double)a->out.it_samples, count = (double)a->out.it_count;
	char why[160] = "";
	/* the CPU classes judge the iterations when cpu.in_iterations is there: their traced time counts */
	double it_traced = (double)a->out.in_it_traced_ns;
	bool in_it = a->out.in_it && a->out.in_it_share_pct >= ISC_ITER_SHARE_MIN_PCT;
	if (count > 0 && samples < RUN_MIN_ITERATIONS)
		snprintf(why, sizeof(why), "%.0f steady-state iterations (fewer than %d)", samples, RUN_MIN_ITERATIONS);
	else if (in_it && it_traced < (double)RUN_MIN_TRACED_NS)
		snprintf(why, sizeof(why), "%.1f ms of traced time inside iterations (less than %llu ms, one sampler "
			 "period at 20 Hz)", it_traced / 1e6, RUN_MIN_TRACED_NS / 1000000);
	else if (!in_it && traced < RUN_MIN_TRACED_NS)
		snprintf(why, sizeof(why), "%.1f ms of traced time (less than %llu ms, one sampler period at 20 Hz)",
			 (double)traced / 1e6, RUN_MIN_TRACED_NS / 1000000);
	isc_jb_bool(&a->jb, r, "too_short", *why);
	isc_jb_str(&a->jb, r, "too_short_reason", *why ? why : NULL);
}

/* A CPU split (cpu.split, cpu.in_iterations.split): on-CPU parts, off-CPU, switches. */
struct cpu_split {
	uint64_t python, ops, torch, off_py, off_ops, off_torch, vsw, ivsw;
	bool measured;
};

static void emit_split(struct ana *a, cJSON *sp, const struct cpu_split *c)
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

/*
 * cpu.in_iterations: the CPU measures of the time while a scope was open
 * on a traced thread (the iterations, without start-up, imports and the
 * code between them), which the CPU verdict classes judge when the run has
 * at least 2 steady-state iterations (rules.c).  Null without them.  In
 * --python=sample mode the split comes from the stack samples taken while
 * a scope was open (and top_op_callers is empty: no call spans).
 */
#define IT_MIN_STEADY 2
static int emit_in_iterations(struct ana *a, cJSON *cpu, bool from_samples)
{
	if (a->out.it_samples < IT_MIN_STEADY) {
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(cpu, "in_iterations"));
		return 0;
	}
	struct cpu_split c = { 0 };
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
	a->out.in_it_share_pct = from_samples ? pct(a->ps_in, a->ps_after) : pct(c.python + c.ops, after);
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

/* The command line of process pid, NULL when unknown (isc_oom_emit's callback). */
static const char *proc_command(void *ctx, uint32_t pid)
{
	const struct ana *a = ctx;
	uint32_t i = isc_umap_get(&a->pr_map, pid);
	return i == ISC_UMAP_NONE ? NULL : a->prs[i]->command;
}

cJSON *isc_ana_build(struct ana *a, bool damaged)
{
	const struct isc_tl_header *h = isc_timeline_header_borrow(a->t);
	const struct isc_tl_stats *st = isc_timeline_stats_borrow(a->t);
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	isc_jb_num(&a->jb, root, "schema_version", ISC_FINDINGS_SCHEMA_VERSION);
	cJSON *tool = isc_jb_obj(&a->jb, root, "tool");
	isc_jb_str(&a->jb, tool, "name", "iscope-analyze");
	isc_jb_str(&a->jb, tool, "version", ISC_VERSION);

	uint64_t python = 0, ops = 0, off_ops = 0, off_py = 0, ntraced = 0, vsw = 0, ivsw = 0, torch = 0, off_torch = 0;
	bool measured = false;
	for (size_t i = 0; i < a->nths; i++) {
		struct ana_thread *th = a->ths[i];
		thread_split(th);
		python += th->python_ns;
		ops += th->ops_ns;
		torch += th->torch_ns;
		off_torch += th->off_torch_ns;
		off_ops += th->off_ops_ns;
		off_py += th->off_py_ns;
		ntraced += th->traced;
		measured |= th->traced && th->win_n >= 2;
		if (th->traced && th->win_n >= 2) {
			vsw += th->w_vcsw1 > th->w_vcsw0 ? th->w_vcsw1 - th->w_vcsw0 : 0;
			ivsw += th->w_ivcsw1 > th->w_ivcsw0 ? th->w_ivcsw1 - th->w_ivcsw0 : 0;
		}
	}
	/* --python=sample: no call spans; the split comes from the stack samples */
	uint64_t call_spans = 0; /* python and op spans: none in sample mode (scopes may exist) */
	for (size_t i = 0; i < a->nths; i++)
		call_spans += a->ths[i]->spans_begun;
	bool from_samples = !call_spans && isc_pysamp_have(a->pys);
	if (from_samples) {
		struct isc_pysamp_split ss;
		isc_pysamp_split(a->pys, false, &ss);
		off_py = ss.off_py_ns;
		python = ss.python_on_ns + off_py;
		off_ops = ss.off_native_ns;
		ops = ss.torch_on_ns + ss.other_c_on_ns + off_ops;
		torch = ss.torch_on_ns;
		off_torch = 0;
		measured = true;
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
		}
	}
	uint64_t traced = python + ops;

	cJSON *s = isc_jb_obj(&a->jb, root, "summary");
	isc_jb_num(&a->jb, s, "wall_ns", a->have_ts ? (double)(a->last_ts - a->first_ts) : 0);
	isc_jb_num(&a->jb, s, "start_ns", (double)a->first_ts);
	isc_jb_num(&a->jb, s, "end_ns", (double)a->last_ts);
	isc_jb_num(&a->jb, s, "events", (double)st->events);
	isc_jb_num(&a->jb, s, "dropped_events", (double)(st->have_end ? st->dropped : a->dropped_sum));
	isc_jb_num(&a->jb, s, "lost_frames", (double)st->lost_frames);
	/* abrupt: the trace was cut short, or the workload was killed */
	bool cut = !st->have_end || st->abrupt;
	isc_jb_bool(&a->jb, s, "abrupt", cut || st->signaled);
	isc_jb_str(&a->jb, s, "end_reason", cut ? "cut" : st->signaled ? "signaled" : "exited");
	/* a cut trace never recorded how the workload ended */
	isc_jb_num_or_null(&a->jb, s, "exit_status", !cut, st->exit_status);
	isc_jb_num_or_null(&a->jb, s, "exit_signal", !cut && st->signaled, st->exit_status - 128);
	isc_jb_num(&a->jb, s, "processes", (double)a->nprs);
	isc_jb_num(&a->jb, s, "threads", (double)a->nths);
	isc_jb_num(&a->jb, s, "traced_threads", (double)ntraced);
	/* the trace, or the timeline; frames a flight recorder evicted are not damage */
	isc_jb_bool(&a->jb, s, "damaged", damaged || (st->lost_frames > 0 && !st->window));
	isc_jb_bool(&a->jb, s, "complete", st->have_end);
	isc_jb_num(&a->jb, s, "unclosed_spans", (double)a->unclosed_spans);
	isc_jb_num(&a->jb, s, "merge_closed_spans", (double)a->merge_closed_spans);
	isc_jb_num(&a->jb, s, "unmatched_span_ends", (double)a->unmatched_ends);
	isc_jb_num(&a->jb, s, "clock_uncertainty_ns", (double)h->clock_uncertainty_ns);
	isc_jb_num(&a->jb, s, "warnings_total", (double)a->warns_total);
	cJSON *ws = isc_jb_arr(&a->jb, s, "warnings");
	for (size_t i = 0; i < a->nwarns; i++) {
		cJSON *w = isc_jb_push_obj(&a->jb, ws);
		if (!w)
			break;
		isc_jb_num(&a->jb, w, "pid", a->warns[i].pid);
		isc_jb_num(&a->jb, w, "code", (double)a->warns[i].code);
		isc_jb_str(&a->jb, w, "kind", warning_kind(a->warns[i].code));
		isc_jb_str(&a->jb, w, "message", a->warns[i].msg);
		isc_jb_num(&a->jb, w, "count", (double)a->warns[i].count);
	}

	cJSON *env = isc_jb_obj(&a->jb, root, "environment");
	isc_jb_str(&a->jb, env, "host", h->host);
	isc_jb_str(&a->jb, env, "cmdline", h->cmdline);
	isc_jb_num(&a->jb, env, "ncpu", h->ncpu);
	isc_jb_num(&a->jb, env, "sample_hz", h->sample_hz);
	char when[64] = "";
	time_t secs = (time_t)(h->epoch_realtime_ns / 1000000000u);
	struct tm tm;
	if (h->epoch_realtime_ns && gmtime_r(&secs, &tm))
		snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(h->epoch_realtime_ns % 1000000000u));
	isc_jb_str(&a->jb, env, "start_time", *when ? when : NULL);
	if (a->meta && env) { /* the recorder's env.* and host.* settings */
		cJSON_AddItemToObject(env, "meta", a->meta);
		a->meta = NULL;
	}

	double vsum = 0, isum = 0;
	bool have_cs = false;
	emit_processes(a, root, &vsum, &isum, &have_cs);
	if (emit_iterations(a, root))
		goto oom;

	cJSON *cpu = isc_jb_obj(&a->jb, root, "cpu");
	if (emit_functions(a, cpu, traced))
		goto oom;
	if (from_samples) {
		isc_pysamp_emit_cpu(a->pys, a->t, &a->jb, cpu, traced, a->top_n);
		isc_pysamp_emit(a->pys, a->t, &a->jb, root, a->top_n);
	}
	struct cpu_split whole = { python, ops, torch, off_py, off_ops, off_torch, vsw, ivsw, measured };
	emit_split(a, isc_jb_obj(&a->jb, cpu, "split"), &whole);
	cJSON *cs = isc_jb_obj(&a->jb, cpu, "context_switches");
	isc_jb_num_or_null(&a->jb, cs, "voluntary_per_s", have_cs, round(100 * vsum) / 100);
	isc_jb_num_or_null(&a->jb, cs, "involuntary_per_s", have_cs, round(100 * isum) / 100);
	isc_jb_num_or_null(&a->jb, cpu, "runnable_threads_mean", a->rounds,
		     a->rounds ? round(100 * (double)a->runnable_sum / (double)a->rounds) / 100 : 0);
	isc_jb_num_or_null(&a->jb, cpu, "runnable_threads_max", a->rounds, (double)a->runnable_max);
	isc_jb_num_or_null(&a->jb, cpu, "threads_max", a->have_threads, (double)a->threads_max);
	isc_jb_num_or_null(&a->jb, cpu, "blocked_ns", a->rounds, (double)a->blocked_ns);
	isc_jb_num_or_null(&a->jb, cpu, "state_samples", a->rounds, (double)a->state_samples);
	isc_ana_emit_recording(a, root, traced);
	struct ana_off_acc all;
	whole_off(a, &all);
	if (emit_off_cpu(a, &all, cpu) || emit_off_reasons(a, &all, cpu) || emit_pools(a, cpu) ||
	    emit_in_iterations(a, cpu, from_samples) || emit_memory(a, root) ||
	    isc_numa_emit(a->numa, a->out.memory))
		goto oom;
	if (isc_gpu_ana_emit(a->gpu, root) ||
	    isc_series_emit(a->series, a->first_ts, a->last_ts, h->ncpu, root))
		goto oom;
	struct isc_oom_gpu gf;
	isc_gpu_ana_failure(a->gpu, &gf);
	if (isc_oom_emit(a->oom, &a->jb, root, a->first_ts, st->have_end ? st->exit_status : 0, &gf, a->t,
			 proc_command, a))
		goto oom;

	emit_run(a, root, st, traced, call_spans);

	cJSON *mk = isc_jb_arr(&a->jb, root, "marks");
	for (size_t i = 0; i < a->nmks; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, mk);
		if (!o)
			break;
		const struct ana_mark *mk = &a->mks[i];
		double its = (double)a->out.it_count, wall = a->have_ts ? (double)(a->last_ts - a->first_ts) : 0;
		isc_jb_str(&a->jb, o, "name", str_name(a, mk->name_id));
		isc_jb_num(&a->jb, o, "count", (double)mk->count);
		isc_jb_num(&a->jb, o, "sum", (double)mk->sum);
		/* rates: per iteration of the scope, per second of the analyzed span (summary.wall_ns) */
		isc_jb_num_or_null(&a->jb, o, "per_iteration", its > 0, round(100 * (double)mk->sum / its) / 100);
		isc_jb_num_or_null(&a->jb, o, "per_s", wall > 0, round(100 * (double)mk->sum / (wall / 1e9)) / 100);
		isc_jb_num(&a->jb, o, "first_ns", (double)(mk->first_ts - a->first_ts));
		isc_jb_num(&a->jb, o, "last_ns", (double)(mk->last_ts - a->first_ts));
		cJSON *ser = isc_jb_obj(&a->jb, o, "series");
		isc_jb_num(&a->jb, ser, "bucket_ns", (double)mk->width);
		unsigned used = (unsigned)((mk->last_ts - mk->first_ts) / mk->width) + 1;
		cJSON *sums = isc_jb_arr(&a->jb, ser, "sums");
		for (unsigned b = 0; b < used && b < ANA_MARK_BUCKETS; b++)
			isc_jb_push_num(&a->jb, sums, mk->buckets[b]);
	}
	if (a->jb.oom)
		goto oom;
	return root;
oom:
	cJSON_Delete(root);
	return NULL;
}
