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
 * and verdict.sentence is the same parts as plain text.  For the CPU
 * classes (python_bound, op_compute_bound, thread_contention, io_wait) with
 * a top function the sentence is made here from the verdict's share and
 * the top functions; for every other verdict it is the backing finding's
 * title (set_verdict in rules.c), one text part.  The share is the
 * verdict's, not the split's: op time less its page faults, off-CPU time
 * less (or only) its blocked part.  When the verdict's finding was judged
 * on the time inside iterations, the numbers are cpu.in_iterations' and
 * the functions cpu.top_functions_in_scopes'.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

/* The path of a cpu member the verdict rests on: "cpu.K", or "cpu.in_iterations.K" when judged on iterations. */
static const char *cpu_path(bool it, char *buf, size_t cap, const char *k)
{
	snprintf(buf, cap, "cpu.%s%s", it ? "in_iterations." : "", k);
	return buf;
}

static const cJSON *top_fn(const cJSON *root, bool it, const char *kind)
{
	const cJSON *fn;
	cJSON_ArrayForEach(fn, isc_doc_arr(root, it ? "cpu.top_functions_in_scopes" : "cpu.top_functions"))
		if (!kind || !strcmp(isc_doc_str(fn, "kind", ""), kind))
			return fn;
	return NULL;
}

/* The CPU classes' sentence into h; false when the verdict is not one of them or has no top function. */
static bool cpu_sentence(struct headline *h, const cJSON *root, const char *cls)
{
	bool it = judged_iterations(root);
	char p[9][64];
	const char *p_py = cpu_path(it, p[0], 64, "split.python_pct"), *p_ops = cpu_path(it, p[1], 64, "split.ops_pct");
	const char *p_off = cpu_path(it, p[2], 64, "split.off_cpu_pct"), *p_oc = cpu_path(it, p[3], 64, "split.other_c_pct");
	const char *p_callers = cpu_path(it, p[4], 64, "top_op_callers");
	const char *p_run = cpu_path(it, p[5], 64, "runnable_threads_mean");
	const char *p_inv = cpu_path(it, p[6], 64, "split.involuntary_switches");
	const char *p_vol = cpu_path(it, p[7], 64, "split.voluntary_switches");
	const char *p_reasons = cpu_path(it, p[8], 64, "off_cpu_reasons");
	const cJSON *vf = verdict_finding(root);
	double py = isc_doc_num(root, p_py, 0), ops = isc_doc_num(root, p_ops, 0), off = isc_doc_num(root, p_off, 0);
	bool python = !strcmp(cls, "python_bound"), op = !strcmp(cls, "op_compute_bound");
	bool contention = !strcmp(cls, "thread_contention"), io = !strcmp(cls, "io_wait");
	double share, faults = isc_doc_num(vf, "evidence.metrics.page_fault_pct_left_out", 0);
	if (isc_doc_have(root, "verdict.explained_pct", &share) && share >= 0 && share <= 100) {
		py = python ? share : py;
		ops = op ? share : ops;
		off = contention || io ? share : off;
	}
	const cJSON *fn = top_fn(root, it, python ? "python" : NULL);
	if (!fn || !(python || op || contention || io))
		return false;
	bool fl = faults > 0 && faults <= 100;
	if (it)
		text(h, "Inside the iterations: ");
	if (python) {
		double interp = isc_doc_num(root, p_py, 0), other_c = isc_doc_num(root, p_oc, 0);
		if (isc_doc_get(root, p_oc)) {
			text(h, "%.0f %% of traced CPU time is Python-side work (interpreter %.0f %%, C builtins and "
				"other extensions %.0f %%", py, interp, other_c);
			if (fl)
				text(h, ", less %.0f %% page faults", faults);
			text(h, "); the hottest function is ");
		} else {
			text(h, "%.0f %% of traced CPU time is Python interpreter time; the hottest function is ", py);
		}
		code(h, isc_doc_str(fn, "name", "?"));
		text(h, " ");
		loc(h, fn);
		text(h, ", %.0f %% self time.", isc_doc_num(fn, "self_pct", 0));
	} else if (op) {
		const cJSON *o = top_fn(root, it, "op"), *caller = cJSON_GetArrayItem(isc_doc_arr(root, p_callers), 0), *x;
		/* the finding's first op is a torch op (op_compute_bound skips builtins) */
		cJSON_ArrayForEach(x, isc_doc_arr(vf, "evidence.top"))
			if (!strcmp(isc_doc_str(x, "kind", ""), "op")) {
				o = x;
				break;
			}
		text(h, "%.0f %% of traced CPU time is in torch ops", ops);
		if (fl)
			text(h, ", and %.0f %% more is page faults inside them", faults);
		if (o) {
			text(h, "; the heaviest is ");
			code(h, isc_doc_str(o, "name", "?"));
			/* self_pct is of all traced time (off-CPU included), not of ops; a
			 * finding's top[] entry has the self_pct of its source as pct */
			text(h, " (self time %.0f %% of all traced time%s%s)",
			     isc_doc_num(o, "self_pct", isc_doc_num(o, "pct", 0)), it ? " inside iterations" : "",
			     fl ? ", faults included" : "");
		}
		if (caller) {
			text(h, ", called mostly from ");
			code(h, isc_doc_str(caller, "name", "?"));
			text(h, " ");
			loc(h, caller);
		}
		text(h, ".");
	} else if (contention) {
		double run = isc_doc_num(root, p_run, 0), ncpu = isc_doc_num(root, "environment.ncpu", 0);
		text(h, "%.0f %% of traced time the threads were %s (", off,
		     isc_doc_num(vf, "evidence.metrics.pool_wait_in_torch_ops_pct", 0) > 0
			     ? "waiting for a CPU, runnable or at a thread pool's barrier inside torch ops"
			     : "runnable but not running");
		if (ncpu > 0 && run > ncpu && run < 1e6)
			text(h, "%.1f runnable threads on average for %.0f CPUs", run, ncpu);
		else
			text(h, "%.0f involuntary context switches vs %.0f voluntary", isc_doc_num(root, p_inv, 0),
			     isc_doc_num(root, p_vol, 0));
		double pool = isc_doc_num(vf, "evidence.metrics.pool_threads", 0);
		double npools = isc_doc_num(vf, "evidence.metrics.pools_of_that_name", 0);
		if (pool > 0 && pool < 1e6 && npools > 1 && npools < 1e6)
			text(h, "; %.0f thread pools the agent does not trace, of up to %.0f threads", npools, pool);
		else if (pool > 0 && pool < 1e6)
			text(h, "; a thread pool of %.0f the agent does not trace", pool);
		text(h, "): the CPUs are oversubscribed; the hottest function is ");
		code(h, isc_doc_str(fn, "name", "?"));
		text(h, " ");
		loc(h, fn);
		text(h, ".");
	} else {
		text(h, "%.0f %% of traced time the threads were off-CPU, blocked %s; the hottest function is ", off,
		     cJSON_GetArraySize(isc_doc_arr(root, p_reasons)) ? "waiting for I/O or timers" : "inside calls");
		code(h, isc_doc_str(fn, "name", "?"));
		text(h, " ");
		loc(h, fn);
		text(h, ".");
	}
	return true;
}

int isc_rules_headline(cJSON *root)
{
	cJSON *v = cJSON_GetObjectItemCaseSensitive(root, "verdict");
	struct headline h = { .parts = cJSON_CreateArray() };
	if (!h.parts || !cJSON_IsObject(v)) {
		cJSON_Delete(h.parts);
		return -ENOMEM;
	}
	if (!cpu_sentence(&h, root, isc_doc_str(v, "class", "unknown"))) {
		put(&h, &h.text, isc_doc_str(v, "sentence", ""));
		put(&h, &h.plain, isc_doc_str(v, "sentence", ""));
	}
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
