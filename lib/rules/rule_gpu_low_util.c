/*
 * rule_gpu_low_util.c - gpu_low_util: windows of the run where the GPU was
 * mostly idle.
 *
 * Over timeseries.gpu_busy_pct from the first to the last bucket with GPU
 * work, and when the GPU classes judge the steady iterations (rules.c:
 * gpu.in_iterations) only the buckets inside their window (the first
 * steady span's start to the last one's end, iterations.spans): a GEMM
 * run's start-up (imports, cuBLAS's set-up, the warm-up step) is not its
 * utilization.  A window is low when busy < 50 % (nsys analyze
 * gpu_time_util's default threshold).  Trigger: low windows >= 20 % of those buckets.
 * Severity info.  Evidence: the longest runs of low windows as time
 * ranges, the mean busy share.  What-if: the idle time inside the low
 * windows removed; null when cpu_bound, sync_bound or launch_bound fired
 * (their estimates already hold it).
 */
#include <stdio.h>

#include "rules.h"

#define LOW_PCT 50
#define TRIGGER_SHARE 0.2
#define RANGES 3

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *busy = isc_doc_arr(c->doc, "timeseries.gpu_busy_pct");
	double w = isc_doc_num(c->doc, "timeseries.bucket_ns", 0), t0 = isc_doc_num(c->doc, "timeseries.t0_ns", 0);
	int n = cJSON_GetArraySize(busy), first = -1, last = -1;
	if (!c->dev || !busy || w <= 0)
		return;
	for (int i = 0; i < n; i++)
		if (isc_doc_num(cJSON_GetArrayItem(busy, i), "", 0) > 0) {
			if (first < 0)
				first = i;
			last = i;
		}
	if (c->gpu_iterations) { /* the steady iterations' window, whole buckets inside it */
		const cJSON *sp = isc_doc_arr(c->doc, "iterations.spans");
		int k = (int)isc_doc_num(c->doc, "iterations.warmup_spans", 0), m = cJSON_GetArraySize(sp);
		double lo = -1, hi = -1;
		for (int i = k; i < m; i++) {
			double a = isc_doc_num(cJSON_GetArrayItem(cJSON_GetArrayItem(sp, i), 0), "", -1);
			double b = isc_doc_num(cJSON_GetArrayItem(cJSON_GetArrayItem(sp, i), 1), "", -1);
			if (a >= 0 && (lo < 0 || a < lo))
				lo = a;
			if (b > hi)
				hi = b;
		}
		if (lo >= 0 && hi > lo) {
			int a = (int)((lo - t0 + w - 1) / w), b = (int)((hi - t0) / w) - 1;
			first = first > a ? first : a;
			last = last < b ? last : b;
		}
	}
	if (first < 0 || last - first < 4)
		return;
	int low = 0;
	double idle = 0, sum = 0;
	struct { int a, b; } best[RANGES] = { { 0, -1 }, { 0, -1 }, { 0, -1 } };
	for (int i = first, run = -1; i <= last + 1; i++) {
		double b = i <= last ? isc_doc_num(cJSON_GetArrayItem(busy, i), "", 0) : 100;
		if (i <= last)
			sum += b;
		if (b < LOW_PCT && i <= last) {
			low++;
			idle += (100 - b) / 100 * w;
			if (run < 0)
				run = i;
			continue;
		}
		if (run >= 0) { /* keep the RANGES longest runs */
			int k = RANGES - 1;
			if (i - run > best[k].b - best[k].a + 1) {
				while (k > 0 && i - run > best[k - 1].b - best[k - 1].a + 1) {
					best[k] = best[k - 1];
					k--;
				}
				best[k].a = run;
				best[k].b = i - 1;
			}
			run = -1;
		}
	}
	int nb = last - first + 1;
	if (low < TRIGGER_SHARE * nb)
		return;
	cJSON *f = isc_fnd_new(o, "gpu_low_util", "info", c->quality,
			   "The GPU was under %d %% busy in %.0f %% of the time windows (mean %.0f %%)", LOW_PCT,
			   100.0 * low / nb, sum / nb);
	isc_fnd_metric(o, f, "low_windows", low);
	isc_fnd_metric(o, f, "windows", nb);
	isc_fnd_metric(o, f, "window_ns", w);
	isc_fnd_metric(o, f, "gpu_busy_mean_pct", sum / nb);
	for (int k = 0; k < RANGES; k++)
		if (best[k].b >= best[k].a) {
			char label[64];
			snprintf(label, sizeof(label), "GPU under %d %% busy", LOW_PCT);
			isc_fnd_range(o, f, t0 + best[k].a * w, t0 + (best[k].b + 1) * w, label);
		}
	const char *cause = isc_rgpu_idle_covered(o);
	isc_fnd_suggest(c, o, f, cause ? -1 : idle,
		    "Find what the host does in these windows; the cpu_bound and sync_bound findings name it.",
		    cause ? "contained in the estimate of the cause found (cpu_bound, sync_bound or launch_bound)"
			  : "the idle time inside the low windows removed",
		    "%d of %d windows of %.1f ms had the GPU busy less than half the time.", low, nb, w / 1e6);
}

const struct rule isc_rule_gpu_low_util = { "gpu_low_util", eval };
