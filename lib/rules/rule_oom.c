/*
 * rule_oom.c - oom: the workload died of out-of-memory (root.oom, set by
 * analyze_oom.c: the kernel's OOM killer, an unhandled CUDA out-of-memory
 * error or MemoryError, or a failed device allocation before an error
 * exit).  Severity critical.  It is the verdict whatever else the run
 * shows (rules.c: an oom candidate wins over every class, CPU or GPU),
 * with explained_pct 100: the run ended there.
 * Evidence: the site that ended it, the memory at the end, the growth
 * just before.  No time saving.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *m = isc_doc_get(c->doc, "oom"), *x;
	if (!cJSON_IsObject(m))
		return;
	const char *kind = isc_doc_str(m, "kind", "");
	const cJSON *site = isc_doc_get(m, "site");
	char w[600] = "an unknown site";
	if (cJSON_IsObject(site))
		isc_doc_where(w, sizeof(w), site);
	const char *what = !strcmp(kind, "host_oom_killer") ? "the kernel's OOM killer killed it"
			 : !strcmp(kind, "cuda_oom")	    ? "the GPU ran out of memory"
							    : "a host allocation failed (MemoryError)";
	const char *near = !strcmp(isc_doc_str(m, "site_source", ""), "rss_growth") ? "while memory grew in" : "at";
	cJSON *f = isc_fnd_new(o, "oom", "critical", c->quality, "The workload died of out-of-memory: %s, %s %s", what,
			       near, w);
	double v;
	if (isc_doc_have(m, "pid", &v))
		isc_fnd_metric(o, f, "pid", v);
	isc_fnd_metric(o, f, "at_ns", isc_doc_num(m, "at_ns", 0));
	if (isc_doc_have(m, "memory_at_end.rss_bytes", &v))
		isc_fnd_metric(o, f, "rss_end_bytes", v);
	if (isc_doc_have(m, "memory_at_end.anon_bytes", &v))
		isc_fnd_metric(o, f, "anon_bytes", v);
	if (isc_doc_have(m, "memory_at_end.gpu_live_bytes", &v))
		isc_fnd_metric(o, f, "gpu_live_end_bytes", v);
	if (isc_doc_have(m, "growth_before.rss_increase_bytes", &v))
		isc_fnd_metric(o, f, "rss_increase_before_bytes", v);
	if (cJSON_IsObject(site))
		isc_fnd_top(o, f, site, NULL, "python", -1, -1);
	cJSON_ArrayForEach(x, isc_doc_arr(m, "growth_before.top"))
		isc_fnd_top(o, f, x, NULL, "python", -1, -1);
	isc_fnd_range(o, f, isc_doc_num(m, "at_ns", 0), isc_doc_num(m, "at_ns", 0), "the out-of-memory death");
	const char *act =
		!strcmp(kind, "cuda_oom")
			? "Lower the peak on the device: a smaller batch or sequence length, torch.inference_mode(), "
			  "bfloat16/float16, freeing references before large allocations; if reserved memory far "
			  "exceeds allocated, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. gpu.devices[].memory "
			  "shows what was live at the peak."
			: "Bound the memory the process holds at the site shown: process inputs in chunks or "
			  "smaller batches, drop references to tensors and lists kept across iterations, run under "
			  "torch.inference_mode(); or give the process more memory (a higher cgroup limit).";
	isc_fnd_suggest(c, o, f, -1, act, NULL, "%s: %s.", what, isc_doc_str(m, "evidence", ""));
	isc_fnd_candidate(o, f, "oom", 100, c->quality);
}

const struct rule isc_rule_oom = { "oom", eval };
