/*
 * rule_read.c - the rules' readers of the findings document (rules.h,
 * "reading"): numbers, strings and arrays by path with defaults, the top
 * function of a kind, system time, fault share, blocked share, off-CPU
 * reasons, marks, the GPU tracing failure.  They only read: the engine
 * (rules.c) and every rule, the GPU split (gpu_split.c) included, use
 * them, and they use neither.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"
#include "../analyze/analyze_wait.h" /* isc_is_torch_op */

double isc_rnum(const cJSON *o, const char *path, double def)
{
	double v;
	return isc_json_num(o, path, &v) && isfinite(v) ? v : def;
}

bool isc_rhave(const cJSON *o, const char *path, double *v)
{
	return isc_json_num(o, path, v) && isfinite(*v);
}

const char *isc_rstr(const cJSON *o, const char *path, const char *def)
{
	const char *s = isc_json_str(o, path);
	return s ? s : def;
}

const cJSON *isc_rarr(const cJSON *o, const char *path)
{
	const cJSON *a = isc_json_get(o, path);
	return cJSON_IsArray(a) ? a : NULL;
}

void isc_rwhere(char *buf, size_t cap, const cJSON *fn)
{
	const char *name = isc_rstr(fn, "name", "?"), *file = isc_rstr(fn, "file", "");
	double line = isc_rnum(fn, "line", 0);
	if (*file && line > 0)
		snprintf(buf, cap, "%s (%s:%.0f)", name, file, line);
	else if (*file)
		snprintf(buf, cap, "%s (%s)", name, file);
	else
		snprintf(buf, cap, "%s", name);
}

const cJSON *isc_rtop_fn(const cJSON *doc, const char *kind)
{
	const cJSON *fn;
	cJSON_ArrayForEach(fn, isc_rarr(doc, "cpu.top_functions"))
		if (!kind || !strcmp(isc_rstr(fn, "kind", ""), kind))
			return fn;
	return NULL;
}

#define FAULT_RATE 1000

double isc_rsystem_ns(const struct rule_ctx *c, bool *of_threads)
{
	const cJSON *p, *t;
	double proc = 0, thr = 0, v;
	bool have = false;
	if (c->iterations) { /* the traced threads' inside iterations; unmeasured (no samples there): none known */
		if (of_threads)
			*of_threads = true;
		return isc_rhave(c->doc, "cpu.system_ns", &v) ? v : 0;
	}
	cJSON_ArrayForEach(p, isc_rarr(c->doc, "processes")) {
		proc += isc_rnum(p, "system_ns", 0);
		cJSON_ArrayForEach(t, isc_rarr(p, "threads"))
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "traced")) && isc_rhave(t, "system_ns", &v)) {
				thr += v;
				have = true;
			}
	}
	if (of_threads)
		*of_threads = have;
	return have ? thr : proc;
}

double isc_rfault_pct(const struct rule_ctx *c, double *faults_per_s)
{
	const cJSON *p;
	double sys = isc_rsystem_ns(c, NULL), faults = 0, traced = isc_rnum(c->doc, "cpu.split.traced_ns", 0);
	cJSON_ArrayForEach(p, isc_rarr(c->doc, "processes"))
		faults += isc_rnum(p, "minor_faults", 0) + isc_rnum(p, "major_faults", 0);
	double rate = c->wall_ns > 0 ? faults / (c->wall_ns / 1e9) : 0;
	if (faults_per_s)
		*faults_per_s = rate;
	if (rate < FAULT_RATE)
		return 0;
	double pct = isc_rpct(sys, traced);
	return pct > 100 ? 100 : pct;
}

/*
 * Samples inside spans from which "none caught a thread blocked" means
 * "rarely blocked": with n samples and none blocked, the blocked share of
 * the sampled time is below 3 / n at 95 % (rule of three): 15 % at 20.
 * Fewer, and the switch counts decide.
 */
#define STATE_SAMPLES_MIN 20

double isc_roff_cpu_blocked(const struct rule_ctx *c)
{
	double blocked, off = isc_rnum(c->doc, "cpu.split.off_cpu_ns", 0);
	double vol = isc_rnum(c->doc, "cpu.split.voluntary_switches", 0), inv = isc_rnum(c->doc, "cpu.split.involuntary_switches", 0);
	if (isc_rhave(c->doc, "cpu.blocked_ns", &blocked) && off > 0 &&
	    (blocked > 0 || isc_rnum(c->doc, "cpu.state_samples", 0) >= STATE_SAMPLES_MIN))
		return blocked >= off ? 1 : blocked / off;
	return vol + inv > 0 ? vol / (vol + inv) : 1;
}

bool isc_rhave_reasons(const cJSON *doc)
{
	return cJSON_GetArraySize(isc_rarr(doc, "cpu.off_cpu_reasons")) > 0;
}

double isc_rreason_field(const cJSON *doc, const char *reason, const char *field)
{
	const cJSON *r;
	cJSON_ArrayForEach(r, isc_rarr(doc, "cpu.off_cpu_reasons"))
		if (!strcmp(isc_rstr(r, "reason", ""), reason))
			return isc_rnum(r, field, 0);
	return 0;
}

double isc_rreason_ns(const cJSON *doc, const char *reason, bool no_dataloader)
{
	double ns = isc_rreason_field(doc, reason, "ns");
	if (no_dataloader)
		ns -= isc_rreason_field(doc, reason, "in_dataloader_ns");
	return ns > 0 ? ns : 0;
}

bool isc_rrow_torch(const cJSON *fn)
{
	const cJSON *flag = cJSON_GetObjectItemCaseSensitive(fn, "torch");
	if (cJSON_IsBool(flag)) /* --python=sample: "C call in FUNCTION" says it itself */
		return cJSON_IsTrue(flag);
	return isc_is_torch_op(isc_rstr(fn, "name", ""), isc_rstr(fn, "file", ""));
}

const cJSON *isc_rtop_torch_op(const cJSON *doc)
{
	const cJSON *fn, *first = NULL;
	cJSON_ArrayForEach(fn, isc_rarr(doc, "cpu.top_functions")) {
		if (strcmp(isc_rstr(fn, "kind", ""), "op"))
			continue;
		if (isc_rrow_torch(fn))
			return fn;
		if (!first)
			first = fn;
	}
	return first;
}

double isc_rtorch_ops_pct(const cJSON *doc)
{
	double v;
	return isc_rhave(doc, "cpu.split.torch_ops_pct", &v) ? v : isc_rnum(doc, "cpu.split.ops_pct", 0);
}

double isc_rpct(double part, double whole)
{
	return whole > 0 ? 100 * part / whole : 0;
}

bool isc_rmark(const cJSON *doc, const char *name, double *v)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, isc_rarr(doc, "marks"))
		if (!strcmp(isc_rstr(m, "name", ""), name)) {
			double n = isc_rnum(m, "count", 0);
			if (n <= 0)
				return false;
			*v = isc_rnum(m, "sum", 0) / n;
			return true;
		}
	return false;
}

bool isc_rgpu_trace_failed(const cJSON *doc, const cJSON **which)
{
	static const char *const kinds[] = { "injection_taken", "not_built", "cupti_version", "cupti_privileges",
					     "cupti_subscriber", "cupti_error" };
	const cJSON *w;
	if (isc_rnum(doc, "gpu.ops", 0) > 0)
		return false;
	cJSON_ArrayForEach(w, isc_rarr(doc, "summary.warnings")) {
		const char *k = isc_rstr(w, "kind", "");
		for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
			if (!strcmp(k, kinds[i])) {
				if (which)
					*which = w;
				return true;
			}
	}
	return false;
}

const struct isc_gpu_split *isc_rgpu_split(const struct rule_ctx *c)
{
	return c->dev && c->g.span > 0 ? &c->split : NULL;
}
