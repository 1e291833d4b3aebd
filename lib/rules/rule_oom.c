/*
 * rule_oom.c - oom: the workload died of out-of-memory (root.oom, set by
 * analyze_oom.c: the kernel's OOM killer, an unhandled CUDA out-of-memory
 * error or MemoryError, or a failed device allocation before an error
 * exit).  Severity critical.  It is the verdict whatever else the run
 * shows (rules.c: an oom candidate wins over every class, CPU or GPU),
 * with explained_pct 100: the run ended there.
 * Evidence: the site that ended it (for the OOM killer with allocation
 * samples: the site holding the most live bytes, growing; the title says
 * how much), the memory at the end, the growth just before (the
 * allocation sites with their live bytes, or the functions RSS grew in);
 * for cuda_oom, after its site, what held the device when it ran out: the
 * device sites of oom.device_at_failure (live at the failed allocation, on
 * its device; basis exception: no failed allocation was recorded, live
 * when the error was raised), Share of its live_bytes; without it (no
 * device memory records before the error, or a document before it) the
 * device sites of memory.sites
 * holding the most bytes live at the end, Share of
 * memory_at_end.gpu_live_bytes; DEVICE_SITES at most, Memory their live
 * bytes.
 * The suggestion points at the site only when there is one.  No time
 * saving.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define DEVICE_SITES 5

/*
 * cuda_oom: the device sites holding the most bytes when the allocation
 * failed (oom.device_at_failure, in its order), else live at the end
 * (memory.sites: highest first, ties in its order).
 */
static void device_holders(const struct rule_ctx *c, struct rule_out *o, cJSON *f, const cJSON *m)
{
	const cJSON *x, *pick[DEVICE_SITES], *af = isc_doc_get(m, "device_at_failure");
	double v[DEVICE_SITES];
	size_t n = 0;
	if (cJSON_IsObject(af)) {
		double live = isc_doc_num(af, "live_bytes", 0);
		bool exc = !strcmp(isc_doc_str(af, "basis", ""), "exception");
		isc_fnd_metric(o, f, "gpu_live_at_failure_bytes", live);
		cJSON_ArrayForEach(x, isc_doc_arr(af, "sites")) {
			double b = isc_doc_num(x, "live_bytes", 0);
			if (n >= DEVICE_SITES)
				break;
			n++;
			cJSON *t = isc_fnd_top(o, f, x, NULL, isc_doc_str(x, "kind", "site"), -1, live > 0 ? 100 * b / live : -1);
			isc_fnd_bytes(o, t, b);
			isc_fnd_detail(o, t, "%.1f MiB live on device %.0f when %s", b / 1048576, isc_doc_num(af, "device", 0),
				       exc ? "the out-of-memory error was raised" : "the allocation failed");
		}
		return;
	}
	double gpu_live = isc_doc_num(m, "memory_at_end.gpu_live_bytes", 0);
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "memory.sites")) {
		double b = isc_doc_num(x, "live_end_bytes", 0);
		if (isc_rhost_site(x) || !(b > 0))
			continue;
		size_t i = n < DEVICE_SITES ? n++ : DEVICE_SITES;
		for (; i > 0 && v[i - 1] < b; i--)
			if (i < DEVICE_SITES) {
				pick[i] = pick[i - 1];
				v[i] = v[i - 1];
			}
		if (i < DEVICE_SITES) {
			pick[i] = x;
			v[i] = b;
		}
	}
	for (size_t i = 0; i < n; i++) {
		cJSON *t = isc_fnd_top(o, f, pick[i], NULL, isc_doc_str(pick[i], "kind", "site"), -1,
				       gpu_live > 0 ? 100 * v[i] / gpu_live : -1);
		isc_fnd_bytes(o, t, v[i]);
		isc_fnd_detail(o, t, "%.1f MiB live on device %.0f at the end", v[i] / 1048576,
			       isc_doc_num(pick[i], "device", 0));
	}
}

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
	const char *src = isc_doc_str(m, "site_source", "");
	const char *near = !strcmp(src, "rss_growth") ? "while memory grew in" : "at";
	double live = -1;
	cJSON *f;
	if (!strcmp(src, "live_bytes") && isc_doc_have(site, "live_bytes", &live)) /* the allocation samples' site */
		f = isc_fnd_new(o, "oom", "critical", c->quality, "The workload died of out-of-memory: %s; %s held %.1f MiB%s",
				what, w, live / 1048576, cJSON_IsTrue(isc_doc_get(site, "growing")) ? " and was growing" : "");
	else
		f = isc_fnd_new(o, "oom", "critical", c->quality, "The workload died of out-of-memory: %s, %s %s", what, near,
				w);
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
	if (live >= 0)
		isc_fnd_metric(o, f, "site_live_bytes", live);
	bool sites = !strcmp(isc_doc_str(m, "growth_before.source", ""), "allocation_samples");
	if (cJSON_IsObject(site) && (!sites || live < 0)) /* else the first of the sites that follow */
		isc_fnd_top(o, f, site, NULL, "python", -1, -1);
	if (!strcmp(kind, "cuda_oom"))
		device_holders(c, o, f, m);
	cJSON_ArrayForEach(x, isc_doc_arr(m, "growth_before.top")) {
		cJSON *t = isc_fnd_top(o, f, x, NULL, "python", -1, -1);
		isc_fnd_bytes(o, t, sites ? isc_doc_num(x, "live_bytes", -1) : isc_doc_num(x, "bytes", -1));
		if (sites)
			isc_fnd_detail(o, t, "%.1f MiB live at the death%s", isc_doc_num(x, "live_bytes", 0) / 1048576,
				       cJSON_IsTrue(isc_doc_get(x, "growing")) ? ", growing" : "");
	}
	isc_fnd_range(o, f, isc_doc_num(m, "at_ns", 0), isc_doc_num(m, "at_ns", 0), "the out-of-memory death");
	const char *act =
		!strcmp(kind, "cuda_oom")
			? "Lower the peak on the device: a smaller batch or sequence length, torch.inference_mode(), "
			  "bfloat16/float16, freeing references before large allocations; if reserved memory far "
			  "exceeds allocated, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True. gpu.devices[].memory "
			  "shows what was live at the peak."
		: cJSON_IsObject(site)
			? "Bound the memory the process holds at the site shown: process inputs in chunks or "
			  "smaller batches, drop references to tensors and lists kept across iterations, run under "
			  "torch.inference_mode(); or give the process more memory (a higher cgroup limit)."
			: "Bound the memory the process holds: process inputs in chunks or smaller batches, drop "
			  "references to tensors and lists kept across iterations, run under torch.inference_mode(); "
			  "or give the process more memory (a higher cgroup limit). No site is known: record with the "
			  "allocation sampler on (iscope-record --memory-sampling) to see which line holds the memory.";
	isc_fnd_suggest(c, o, f, -1, act, NULL, "%s: %s.", what, isc_doc_str(m, "evidence", ""));
	isc_fnd_candidate(o, f, "oom", 100, c->quality);
}

const struct rule isc_rule_oom = { "oom", eval };
