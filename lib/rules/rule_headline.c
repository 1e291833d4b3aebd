/*
 * rule_headline.c - the verdict in one sentence (verdict.headline and
 * verdict.sentence), worded here only: the report renders the parts, the
 * terminal summary prints the sentence.
 *
 * verdict.headline is an array of parts, in order:
 *
 *   {"text": "..."}               our wording (numbers included), plain text
 *   {"code": "name"}              a name from the workload (a function, an op)
 *   {"file": "f.py", "line": 12}  where that name is, "(f.py:12)" when shown
 *
 * and verdict.sentence is the same parts as plain text; with native
 * stacks a dominant native function is named after it (native_clause).  For the CPU
 * classes (python_bound, op_compute_bound, thread_contention, io_wait) with
 * a top function the sentence is made here from the verdict's share and
 * the top functions; for a distributed job's classes (straggler,
 * communication_bound) from the job's section (job_sentence); for every
 * other verdict it is the backing finding's title (set_verdict in
 * rules.c), one text part.  The share is the
 * verdict's, not the split's: op time less its page faults, off-CPU time
 * less (or only) its blocked part.  When the verdict's finding was judged
 * on the time inside iterations, the numbers are cpu.in_iterations' and
 * the functions cpu.top_functions_in_scopes'.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "isc_util.h"
#include "rules.h"

struct headline {
	cJSON *parts;
	struct isc_buf plain; /* the sentence */
	struct isc_buf text;  /* the text part being gathered */
	bool oom;
};

/* Appends s to b, NUL-terminated (the terminator is not counted in len). */
static void put(struct headline *h, struct isc_buf *b, const char *s)
{
	size_t n = strlen(s);
	if (isc_buf_reserve(b, n + 1)) {
		h->oom = true;
		return;
	}
	memcpy(b->data + b->len, s, n + 1);
	b->len += n;
}

/* Ends the text part being gathered. */
static void flush(struct headline *h)
{
	if (!h->text.len)
		return;
	cJSON *p = cJSON_CreateObject();
	if (!p || !cJSON_AddStringToObject(p, "text", (const char *)h->text.data) || !cJSON_AddItemToArray(h->parts, p)) {
		cJSON_Delete(p);
		h->oom = true;
	}
	h->text.len = 0;
}

/* Our wording; the numbers it formats are the only variable part (names go through code()). */
static void text(struct headline *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text(struct headline *h, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	put(h, &h->text, tmp);
	put(h, &h->plain, tmp);
}

static void code(struct headline *h, const char *name)
{
	flush(h);
	cJSON *p = cJSON_CreateObject();
	if (!p || !cJSON_AddStringToObject(p, "code", name) || !cJSON_AddItemToArray(h->parts, p)) {
		cJSON_Delete(p);
		h->oom = true;
	}
	put(h, &h->plain, name);
}

/* "(file:line)" of fn, nothing when its file is unknown. */
static void loc(struct headline *h, const cJSON *fn)
{
	const char *file;
	double line;
	if (!isc_doc_loc(fn, &file, &line))
		return;
	flush(h);
	cJSON *p = cJSON_CreateObject();
	if (!p || !cJSON_AddStringToObject(p, "file", file) || !cJSON_AddNumberToObject(p, "line", line) ||
	    !cJSON_AddItemToArray(h->parts, p)) {
		cJSON_Delete(p);
		h->oom = true;
	}
	char b[64];
	put(h, &h->plain, "(");
	put(h, &h->plain, file);
	if (line > 0) {
		snprintf(b, sizeof(b), ":%.0f", line);
		put(h, &h->plain, b);
	}
	put(h, &h->plain, ")");
}

/* The finding the verdict names (verdict.finding), or NULL. */
static const cJSON *verdict_finding(const cJSON *root)
{
	const char *id = isc_doc_str(root, "verdict.finding", NULL);
	const cJSON *f;
	cJSON_ArrayForEach(f, isc_doc_arr(root, "findings"))
		if (id && !strcmp(isc_doc_str(f, "id", ""), id))
			return f;
	return NULL;
}

/*
 * Was the verdict's finding judged on the time inside iterations
 * (findings[].judged_on)?  Then the CPU numbers that back it are
 * cpu.in_iterations' and cpu.top_functions_in_scopes.
 */
static bool judged_iterations(const cJSON *root)
{
	const cJSON *f = verdict_finding(root);
	return f && !strcmp(isc_doc_str(f, "judged_on", ""), "iterations") &&
	       cJSON_IsObject(isc_doc_get(root, "cpu.in_iterations"));
}

static const cJSON *top_fn(const cJSON *root, bool it, const char *kind)
{
	const cJSON *fn;
	cJSON_ArrayForEach(fn, isc_doc_arr(root, it ? "cpu.top_functions_in_scopes" : "cpu.top_functions"))
		if (!kind || !strcmp(isc_doc_str(fn, "kind", ""), kind))
			return fn;
	return NULL;
}

/* What the CPU classes' sentences read: the view the verdict was judged on. */
struct cpu_view {
	const cJSON *root, *vf; /* the document, the verdict's finding */
	bool it;                /* judged on the iterations */
	double share;           /* the verdict's share when usable, else -1 */
	double faults;          /* page-fault share left out of the ops' share, 0 when none */
};

/* The number at cpu.K (or cpu.in_iterations.K), 0 when missing. */
static double cpu_num(const struct cpu_view *v, const char *k)
{
	char path[96];
	snprintf(path, sizeof(path), "cpu.%s%s", v->it ? "in_iterations." : "", k);
	return isc_doc_num(v->root, path, 0);
}

static const cJSON *cpu_item(const struct cpu_view *v, const char *k)
{
	char path[96];
	snprintf(path, sizeof(path), "cpu.%s%s", v->it ? "in_iterations." : "", k);
	return isc_doc_get(v->root, path);
}

/* The share to state: the verdict's, else the CPU split's member k. */
static double share_or(const struct cpu_view *v, const char *k)
{
	return v->share >= 0 ? v->share : cpu_num(v, k);
}

static void python_sentence(struct headline *h, const struct cpu_view *v, const cJSON *fn)
{
	double py = share_or(v, "split.python_pct");
	if (cpu_item(v, "split.other_c_pct")) {
		text(h, "%.0f %% of traced CPU time is Python-side work (interpreter %.0f %%, C builtins and "
			"other extensions %.0f %%", py, cpu_num(v, "split.python_pct"), cpu_num(v, "split.other_c_pct"));
		if (v->faults > 0)
			text(h, ", less %.0f %% kernel time taken as page faults", v->faults);
		text(h, "); the hottest function is ");
	} else {
		text(h, "%.0f %% of traced CPU time is Python interpreter time; the hottest function is ", py);
	}
	code(h, isc_doc_str(fn, "name", "?"));
	text(h, " ");
	loc(h, fn);
	text(h, ", %.0f %% self time.", isc_doc_num(fn, "self_pct", 0));
}

static void op_sentence(struct headline *h, const struct cpu_view *v)
{
	const cJSON *o = top_fn(v->root, v->it, "op"), *caller = cJSON_GetArrayItem(cpu_item(v, "top_op_callers"), 0), *x;
	/* the finding's first op is a torch op (op_compute_bound skips builtins) */
	cJSON_ArrayForEach(x, isc_doc_arr(v->vf, "evidence.top"))
		if (!strcmp(isc_doc_str(x, "kind", ""), "op")) {
			o = x;
			break;
		}
	text(h, "%.0f %% of traced CPU time is in torch ops", share_or(v, "split.ops_pct"));
	if (v->faults > 0)
		text(h, ", and %.0f %% more is kernel time inside them, taken as page faults", v->faults);
	if (o) {
		text(h, "; the heaviest is ");
		code(h, isc_doc_str(o, "name", "?"));
		/* self_pct is of all traced time (off-CPU included), not of ops; a
		 * finding's top[] entry has the self_pct of its source as pct */
		text(h, " (self time %.0f %% of all traced time%s%s)", isc_doc_num(o, "self_pct", isc_doc_num(o, "pct", 0)),
		     v->it ? " inside iterations" : "", v->faults > 0 ? ", faults included" : "");
	}
	if (caller) {
		text(h, ", called mostly from ");
		code(h, isc_doc_str(caller, "name", "?"));
		text(h, " ");
		loc(h, caller);
	}
	text(h, ".");
}

static void contention_sentence(struct headline *h, const struct cpu_view *v, const cJSON *fn)
{
	double run = cpu_num(v, "runnable_threads_mean"), ncpu = isc_doc_num(v->root, "environment.ncpu", 0);
	text(h, "%.0f %% of traced time the threads were %s (", share_or(v, "split.off_cpu_pct"),
	     isc_doc_num(v->vf, "evidence.metrics.pool_wait_in_torch_ops_pct", 0) > 0
		     ? "waiting for a CPU, runnable or at a thread pool's barrier inside torch ops"
		     : "runnable but not running");
	if (ncpu > 0 && run > ncpu && run < 1e6)
		text(h, "%.1f runnable threads on average for %.0f CPUs", run, ncpu);
	else
		text(h, "%.0f involuntary context switches vs %.0f voluntary", cpu_num(v, "split.involuntary_switches"),
		     cpu_num(v, "split.voluntary_switches"));
	double pool = isc_doc_num(v->vf, "evidence.metrics.pool_threads", 0);
	double npools = isc_doc_num(v->vf, "evidence.metrics.pools_of_that_name", 0);
	if (pool > 0 && pool < 1e6 && npools > 1 && npools < 1e6)
		text(h, "; %.0f thread pools the agent does not trace, of up to %.0f threads", npools, pool);
	else if (pool > 0 && pool < 1e6)
		text(h, "; a thread pool of %.0f the agent does not trace", pool);
	text(h, "): the CPUs are oversubscribed; the hottest function is ");
	code(h, isc_doc_str(fn, "name", "?"));
	text(h, " ");
	loc(h, fn);
	text(h, ".");
}

static void io_sentence(struct headline *h, const struct cpu_view *v, const cJSON *fn)
{
	text(h, "%.0f %% of traced time the threads were off-CPU, blocked %s; the hottest function is ",
	     share_or(v, "split.off_cpu_pct"),
	     cJSON_GetArraySize(cpu_item(v, "off_cpu_reasons")) ? "waiting for I/O or timers" : "inside calls");
	code(h, isc_doc_str(fn, "name", "?"));
	text(h, " ");
	loc(h, fn);
	text(h, ".");
}

/* The CPU classes' sentence into h; false when the verdict is not one of them or has no top function. */
static bool cpu_sentence(struct headline *h, const cJSON *root, const char *cls)
{
	static const char *const classes[] = { "python_bound", "op_compute_bound", "thread_contention", "io_wait" };
	size_t k = 0;
	while (k < 4 && strcmp(cls, classes[k]))
		k++;
	if (k == 4)
		return false;
	struct cpu_view v = { root, verdict_finding(root), judged_iterations(root), -1, 0 };
	double share;
	if (isc_doc_have(root, "verdict.explained_pct", &share) && share >= 0 && share <= 100)
		v.share = share;
	v.faults = isc_doc_num(v.vf, "evidence.metrics.page_fault_pct_left_out", 0);
	if (!(v.faults > 0 && v.faults <= 100))
		v.faults = 0;
	const cJSON *fn = top_fn(root, v.it, k == 0 ? "python" : NULL);
	if (!fn)
		return false;
	if (v.it)
		text(h, "Inside the iterations: ");
	switch (k) {
	case 0: python_sentence(h, &v, fn); break;
	case 1: op_sentence(h, &v); break;
	case 2: contention_sentence(h, &v, fn); break;
	default: io_sentence(h, &v, fn); break;
	}
	return true;
}

/* "rank 3" / "ranks 0-2, 5" of a JSON array of ranks (sorted, as the reduce writes them). */
static void ranks_text(char *buf, size_t cap, const cJSON *arr)
{
	uint32_t v[256];
	size_t n = 0;
	const cJSON *x;
	cJSON_ArrayForEach(x, arr)
		if (n < sizeof(v) / sizeof(v[0]) && cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < UINT32_MAX)
			v[n++] = (uint32_t)x->valuedouble;
	char list[200];
	isc_rank_ranges(list, sizeof(list), v, n);
	snprintf(buf, cap, "%s %s%s", n == 1 ? "rank" : "ranks", list,
		 (size_t)cJSON_GetArraySize(arr) > n ? " and more" : "");
}

/*
 * The job classes' sentence (the straggler named with its cause and who
 * waits for it in what; communication bound with its share and the
 * collective that takes most time) into h; false for any other class.
 */
static bool job_sentence(struct headline *h, const cJSON *root, const char *cls)
{
	if (!strcmp(cls, "straggler")) {
		const cJSON *s = cJSON_GetArrayItem(isc_doc_arr(root, "distributed.stragglers"), 0);
		const cJSON *cause = cJSON_GetArrayItem(isc_doc_arr(s, "cause"), 0);
		const char *file;
		double per, pct, line;
		if (!s)
			return false;
		text(h, "Rank %.0f is %.1f ms late to its collectives", isc_doc_num(s, "rank", 0),
		     isc_doc_num(s, "lateness_ns", 0) / 1e6);
		if (cause) {
			text(h, ", slower in ");
			code(h, isc_doc_str(cause, "name", "?"));
			if (isc_doc_loc(cause, &file, &line)) {
				text(h, " ");
				loc(h, cause);
			}
			text(h, " (+%.1f ms per iteration)", isc_doc_num(cause, "delta_ns_per_iter", 0) / 1e6);
		} else {
			text(h, " for no extra work its profile shows (compared with %.0f ranks)",
			     isc_doc_num(s, "compared_with", 0));
		}
		char who[300];
		ranks_text(who, sizeof(who), isc_doc_arr(s, "waiting_ranks"));
		text(h, "; %s %s for it in %s", who, cJSON_GetArraySize(isc_doc_arr(s, "waiting_ranks")) == 1 ? "waits" : "wait",
		     isc_doc_str(s, "waited_in", "its collectives"));
		if (isc_doc_have(s, "loss_per_iteration_ns", &per) && isc_doc_have(s, "loss_pct_of_iteration", &pct))
			text(h, ": the job loses %.1f ms per iteration (%.1f %% of an iteration) to it.", per / 1e6, pct);
		else
			text(h, ": the job loses %.1f ms to it.", isc_doc_num(s, "loss_ns", 0) / 1e6);
		return true;
	}
	if (!strcmp(cls, "communication_bound")) {
		const cJSON *op = isc_rcomm_top_op(root), *r0 = cJSON_GetArrayItem(isc_doc_arr(root, "distributed.ranks"), 0);
		text(h, "Exposed communication is %.0f %% of the median rank's %s time (at most %.0f %% on one rank) and no "
			"rank is late: the job is communication bound",
		     isc_doc_num(root, "distributed.communication.exposed_pct_median", 0),
		     !strcmp(isc_doc_str(r0, "device", ""), "gpu") ? "GPU" : "iteration",
		     isc_doc_num(root, "distributed.communication.exposed_pct_max", 0));
		if (op) {
			text(h, "; most of it is in ");
			code(h, isc_doc_str(op, "op", "?"));
			text(h, " (%.0f calls, %.1f ms each at the fastest rank)", isc_doc_num(op, "count", 0),
			     isc_doc_num(op, "transfer_ns_mean", 0) / 1e6);
		}
		text(h, ".");
		return true;
	}
	return false;
}

/*
 * With native stacks, the native function the time is in when one
 * dominates: the first of native.functions holds at least
 * NATIVE_DOMINANT_PCT of the samples by self time and at least twice the
 * second's share.  Named with its library and what its samples mostly ran
 * under (the torch op, the Python frame).
 */
#define NATIVE_DOMINANT_PCT 25
static void native_clause(struct headline *h, const cJSON *root)
{
	const cJSON *fns = isc_doc_arr(root, "native.functions"), *f = cJSON_GetArrayItem(fns, 0),
		    *g = cJSON_GetArrayItem(fns, 1), *ab = cJSON_GetArrayItem(isc_doc_arr(f, "above"), 0);
	double p = isc_doc_num(f, "self_pct", 0), q = isc_doc_num(g, "self_pct", 0);
	if (!f || !(p >= NATIVE_DOMINANT_PCT && p <= 100) || !(p >= 2 * q))
		return;
	const char *lib = isc_doc_str(f, "library", ""), *base = strrchr(lib, '/');
	text(h, h->plain.len ? " Native stacks: %.0f %% of the sampled CPU time is in " : "Native stacks: %.0f %% of the "
		"sampled CPU time is in ", p);
	code(h, isc_doc_str(f, "name", "?"));
	if (*lib) {
		text(h, " (");
		code(h, base ? base + 1 : lib);
		text(h, ")");
	}
	const char *op = isc_doc_str(ab, "op", NULL);
	const cJSON *py = isc_doc_get(ab, "python");
	if (op || cJSON_IsObject(py))
		text(h, ", mostly under ");
	if (op)
		code(h, op);
	if (op && cJSON_IsObject(py))
		text(h, " called from ");
	if (cJSON_IsObject(py)) {
		code(h, isc_doc_str(py, "name", "?"));
		text(h, " ");
		loc(h, py);
	}
	text(h, ".");
}

int isc_rules_headline(cJSON *root)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "verdict");
	struct headline h = { .parts = cJSON_CreateArray() };
	if (!h.parts || !cJSON_IsObject(v)) {
		cJSON_Delete(h.parts);
		return -ENOMEM;
	}
	const char *cls = isc_doc_str(v, "class", "unknown");
	if (!cpu_sentence(&h, root, cls) && !job_sentence(&h, root, cls)) {
		put(&h, &h.text, isc_doc_str(v, "sentence", ""));
		put(&h, &h.plain, isc_doc_str(v, "sentence", ""));
	}
	native_clause(&h, root);
	flush(&h);
	put(&h, &h.plain, ""); /* a sentence of no parts is "" */
	cJSON *s = h.oom ? NULL : cJSON_CreateString((const char *)h.plain.data);
	isc_buf_free(&h.plain);
	isc_buf_free(&h.text);
	if (!s) {
		cJSON_Delete(h.parts);
		return -ENOMEM;
	}
	cJSON_ReplaceItemInObjectCaseSensitive(v, "sentence", s);
	cJSON_AddItemToObject(v, "headline", h.parts);
	return 0;
}
