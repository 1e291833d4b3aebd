/*
 * rule_read.c - what several rules read out of the findings document
 * (rules.h, "reading"), on top of its readers (isc_findings.h): the top
 * function of a kind, system time, fault share, blocked share, off-CPU
 * reasons, marks, the GPU tracing failure.  They only read: the engine
 * (rules.c) and every rule, the GPU split (gpu_split.c) included, use
 * them, and they use neither.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

const cJSON *isc_rtop_fn(const cJSON *doc, const char *kind)
{
	const cJSON *fn;
	cJSON_ArrayForEach(fn, isc_doc_arr(doc, "cpu.top_functions"))
		if (!kind || !strcmp(isc_doc_str(fn, "kind", ""), kind))
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
		return isc_doc_have(c->doc, "cpu.system_ns", &v) ? v : 0;
	}
	cJSON_ArrayForEach(p, isc_doc_arr(c->doc, "processes")) {
		proc += isc_doc_num(p, "system_ns", 0);
		cJSON_ArrayForEach(t, isc_doc_arr(p, "threads"))
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "traced")) && isc_doc_have(t, "system_ns", &v)) {
				thr += v;
				have = true;
			}
	}
	if (of_threads)
		*of_threads = have;
	return have ? thr : proc;
}

bool isc_rhost_site(const cJSON *x)
{
	return !strcmp(isc_doc_str(x, "memory", "host"), "host");
}

double isc_rfault_pct(const struct rule_ctx *c, double *faults_per_s)
{
	const cJSON *p;
	double sys = isc_rsystem_ns(c, NULL), faults = 0, traced = isc_doc_num(c->doc, "cpu.split.traced_ns", 0);
	cJSON_ArrayForEach(p, isc_doc_arr(c->doc, "processes"))
		faults += isc_doc_num(p, "minor_faults", 0) + isc_doc_num(p, "major_faults", 0);
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
	double blocked, off = isc_doc_num(c->doc, "cpu.split.off_cpu_ns", 0);
	double vol = isc_doc_num(c->doc, "cpu.split.voluntary_switches", 0), inv = isc_doc_num(c->doc, "cpu.split.involuntary_switches", 0);
	if (isc_doc_have(c->doc, "cpu.blocked_ns", &blocked) && off > 0 &&
	    (blocked > 0 || isc_doc_num(c->doc, "cpu.state_samples", 0) >= STATE_SAMPLES_MIN))
		return blocked >= off ? 1 : blocked / off;
	return vol + inv > 0 ? vol / (vol + inv) : 1;
}

bool isc_rhave_reasons(const cJSON *doc)
{
	return cJSON_GetArraySize(isc_doc_arr(doc, "cpu.off_cpu_reasons")) > 0;
}

double isc_rreason_field(const cJSON *doc, const char *reason, const char *field)
{
	const cJSON *r;
	cJSON_ArrayForEach(r, isc_doc_arr(doc, "cpu.off_cpu_reasons"))
		if (!strcmp(isc_doc_str(r, "reason", ""), reason))
			return isc_doc_num(r, field, 0);
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
	if (cJSON_IsBool(flag)) /* --python=sample: the sampled callee's module or type said it */
		return cJSON_IsTrue(flag);
	return isc_is_torch_op(isc_doc_str(fn, "name", ""), isc_doc_str(fn, "file", ""));
}

const cJSON *isc_rtop_torch_op(const cJSON *doc)
{
	const cJSON *fn, *first = NULL;
	cJSON_ArrayForEach(fn, isc_doc_arr(doc, "cpu.top_functions")) {
		if (strcmp(isc_doc_str(fn, "kind", ""), "op"))
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
	return isc_doc_have(doc, "cpu.split.torch_ops_pct", &v) ? v : isc_doc_num(doc, "cpu.split.ops_pct", 0);
}

double isc_rpct(double part, double whole)
{
	return whole > 0 ? 100 * part / whole : 0;
}

bool isc_rmark(const cJSON *doc, const char *name, double *v)
{
	const cJSON *m;
	cJSON_ArrayForEach(m, isc_doc_arr(doc, "marks"))
		if (!strcmp(isc_doc_str(m, "name", ""), name)) {
			double n = isc_doc_num(m, "count", 0);
			if (n <= 0)
				return false;
			*v = isc_doc_num(m, "sum", 0) / n;
			return true;
		}
	return false;
}

bool isc_rgpu_trace_failed(const cJSON *doc, const cJSON **which)
{
	static const char *const kinds[] = { "injection_taken", "not_built", "cupti_version", "cupti_privileges",
					     "cupti_subscriber", "cupti_error" };
	const cJSON *w;
	if (isc_doc_num(doc, "gpu.ops", 0) > 0)
		return false;
	cJSON_ArrayForEach(w, isc_doc_arr(doc, "summary.warnings")) {
		const char *k = isc_doc_str(w, "kind", "");
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
