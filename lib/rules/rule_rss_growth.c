/*
 * rule_rss_growth.c - rss_growth: resident memory keeps growing (a leak or
 * an unbounded cache).  Reported whatever the verdict.
 *
 * Steady state: after the warm-up iterations when there are iterations
 * (memory.rss_growth_after_warmup_bytes_per_s; imports and model loading
 * grow RSS legitimately), else after the first 10 % of the run, and then
 * only when that leaves >= 5 s and >= 20 samples (a short run is all
 * start-up: torch's import alone adds hundreds of MiB in a second).
 * Trigger: slope >= 1 MiB/s and growth over the steady span >= 10 % of
 * the peak RSS.  Severity warning.
 * Evidence: slope, peak, the site: with allocation samples
 * (memory.growth_sites_source allocation_samples) the line that retained
 * the most bytes, in the title, and every line that retained bytes with
 * its share of them (Share); else where RSS grew most (memory.growth_sites:
 * the Python function and the scope open; else memory.growth_top), the
 * functions where it grew (memory.growth_top).  memory.growth_top is
 * run-wide (start-up's imports grow RSS legitimately): with iterations it
 * is left out, as host_memory_bound leaves it out.
 * What-if: none (growth costs time only once it causes faults or swap,
 * which host_memory_bound measures); the finding says when memory would
 * run out at this slope.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define MIN_STEADY_NS 5e9
#define MIN_STEADY_SAMPLES 20
#define MIN_SLOPE 1048576.0

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *d = c->doc, *x;
	double slope, span, peak = isc_doc_num(d, "memory.rss_peak_bytes", 0), avail;
	if (isc_doc_have(d, "memory.rss_growth_after_warmup_bytes_per_s", &slope) &&
	    isc_doc_have(d, "memory.after_warmup_span_ns", &span)) {
		/* steady state measured */
	} else if (isc_doc_num(d, "iterations.count", 0) < 2) {
		slope = isc_doc_num(d, "memory.rss_growth_bytes_per_s", 0);
		span = 0.9 * c->wall_ns;
		if (span < MIN_STEADY_NS || isc_doc_num(d, "memory.rss_growth_samples", 0) < MIN_STEADY_SAMPLES)
			return;
	} else {
		return; /* iterations but no samples after warm-up: no basis */
	}
	if (slope < MIN_SLOPE || peak <= 0 || slope * span / 1e9 < 0.1 * peak)
		return;
	/* the site: memory.growth_sites (function and scope), else growth_top, which is
	 * run-wide (start-up's imports): only for a run without iterations */
	const cJSON *top = cJSON_GetArrayItem(isc_doc_arr(d, "memory.growth_sites"), 0);
	if (!top && !c->iterations)
		top = cJSON_GetArrayItem(isc_doc_arr(d, "memory.growth_top"), 0);
	char w[600] = "";
	if (top)
		isc_doc_where(w, sizeof(w), top);
	const char *scope = isc_doc_str(top, "scope", NULL);
	bool sampled = !strcmp(isc_doc_str(d, "memory.growth_sites_source", ""), "allocation_samples");
	if (top && scope && strcmp(isc_doc_str(top, "kind", ""), "scope")) {
		size_t n = strlen(w);
		snprintf(w + n, sizeof(w) - n, " inside scope %s", scope);
	}
	cJSON *f = sampled && top ? isc_fnd_new(o, "rss_growth", "warning", c->quality,
						"Resident memory grows by %.1f MiB/s after warm-up; %s retained %.1f MiB",
						slope / 1048576, w, isc_doc_num(top, "bytes", 0) / 1048576)
				  : isc_fnd_new(o, "rss_growth", "warning", c->quality,
						"Resident memory grows by %.1f MiB/s after warm-up%s%s", slope / 1048576,
						top ? ", most of it in " : "", w);
	if (sampled && top) { /* every line that retained bytes, its share of what they retained */
		double all = 0;
		cJSON_ArrayForEach(x, isc_doc_arr(d, "memory.growth_sites"))
			all += isc_doc_num(x, "bytes", 0);
		cJSON_ArrayForEach(x, isc_doc_arr(d, "memory.growth_sites")) {
			cJSON *t = isc_fnd_top(o, f, x, NULL, !strcmp(isc_doc_str(x, "kind", ""), "python") ? "python" : "unknown",
					       -1, all > 0 ? 100 * isc_doc_num(x, "bytes", 0) / all : -1);
			isc_fnd_bytes(o, t, isc_doc_num(x, "bytes", -1));
			isc_fnd_detail(o, t, "%.1f MiB retained (± %.1f MiB)%s", isc_doc_num(x, "bytes", 0) / 1048576,
				       isc_doc_num(x, "bytes_err", 0) / 1048576, cJSON_IsTrue(isc_doc_get(x, "leak")) ? ", a leak" : "");
		}
	}
	isc_fnd_metric(o, f, "rss_growth_bytes_per_s", slope);
	isc_fnd_metric(o, f, "rss_peak_bytes", peak);
	isc_fnd_metric(o, f, "steady_span_ns", span);
	isc_fnd_range(o, f, c->wall_ns - span, c->wall_ns, "span the slope was fitted over");
	if (!c->iterations)
		cJSON_ArrayForEach(x, isc_doc_arr(d, "memory.growth_top"))
			isc_fnd_bytes(o, isc_fnd_top(o, f, x, NULL, "python", -1, -1), isc_doc_num(x, "growth_bytes", -1));
	char when[160] = "";
	if (isc_doc_have(d, "memory.mem_available_bytes_min", &avail) && avail > 0)
		snprintf(when, sizeof(when), " At this slope the %.0f MiB still available last %.0f s.", avail / 1048576,
			 avail / slope);
	isc_fnd_suggest(c, o, f, -1,
		    "Look for tensors kept across iterations (lists of outputs, caches keyed by input, autograd graphs "
		    "kept alive) and run inference under torch.inference_mode().",
		    NULL, "RSS rose %.0f MiB over %.1f s of steady state.%s", slope * span / 1e9 / 1048576, span / 1e9, when);
}

const struct rule isc_rule_rss_growth = { "rss_growth", eval };
