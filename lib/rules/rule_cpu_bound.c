/*
 * rule_cpu_bound.c - cpu_bound: the GPU waits for the host.
 *
 * Trigger: the cpu part of the GPU span (gpu_split.c) >= 10 % of the span
 * (ours: a tenth of the span waiting for the host is the smallest share
 * worth restructuring the loop for).
 * Severity critical from 50 %.  Verdict share: that part.
 * Evidence: host-wait idle, the Python functions and ops running while the
 * GPU was idle (gpu.devices[].host_during_idle), ranked by the idle time
 * spent in their own code (the outermost function holds all of it
 * inclusively and names nothing), the longest gaps as time ranges
 * (gpu.gaps.top); first of all the DataLoader when it takes more than 5 %
 * of the step (the dataloader rule's threshold): its batches are fetched
 * on the thread that launches the GPU work.  A run recorded with
 * --python=sample has no call spans, so no idle time per function: then
 * the Python functions with the most samples (cpu.top_functions, of the
 * iterations when judged on them) stand for the host's work.
 * What-if: the host-wait idle removed (the GPU kept fed), i.e. the cpu
 * part — an upper bound reached when host work overlaps GPU work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_PCT 10
#define TOP 5
#define TOP_IN 64
#define DATALOADER_PCT 5 /* rule_dataloader.c's trigger */

static int self_idle_desc(const void *x, const void *y)
{
	double a = isc_doc_num(*(const cJSON *const *)x, "self_idle_ns", 0), b = isc_doc_num(*(const cJSON *const *)y, "self_idle_ns", 0);
	return a > b ? -1 : a < b;
}

/* Up to TOP_IN items of arr, by the GPU idle time spent in their own code
 * (self_idle_ns): the outermost function holds all of it inclusively. */
static size_t by_self_idle(const cJSON *arr, const cJSON **out)
{
	const cJSON *x;
	size_t n = 0;
	cJSON_ArrayForEach(x, arr)
		if (n < TOP_IN && isc_doc_num(x, "self_idle_ns", 0) > 0)
			out[n++] = x;
	qsort(out, n, sizeof(*out), self_idle_desc);
	return n;
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *x;
	const struct isc_gpu_split *s = isc_rgpu_split(c);
	if (!s)
		return;
	double share = isc_rpct(s->cpu, c->g.span);
	if (share < TRIGGER_PCT)
		return;
	const cJSON *pys[TOP_IN], *ops[TOP_IN];
	size_t npy = by_self_idle(isc_doc_arr(c->dev, "host_during_idle.python"), pys);
	size_t nop = by_self_idle(isc_doc_arr(c->dev, "host_during_idle.ops"), ops);
	/* no call spans (sample mode): the host's most sampled Python functions */
	const cJSON *sampled[TOP], *fn;
	size_t ns = 0;
	if (!npy && !nop)
		cJSON_ArrayForEach(fn, isc_doc_arr(c->doc, "cpu.top_functions"))
			if (ns < TOP && !strcmp(isc_doc_str(fn, "kind", ""), "python") && isc_doc_num(fn, "self_ns", 0) > 0)
				sampled[ns++] = fn;
	const cJSON *py = npy ? pys[0] : ns ? sampled[0] : NULL, *op = nop ? ops[0] : NULL;
	char w[600] = "";
	const cJSON *dl = isc_doc_get(c->doc, "iterations.dataloader");
	double dl_pct = isc_doc_num(dl, "pct_of_step", 0);
	if (dl_pct > DATALOADER_PCT)
		snprintf(w, sizeof(w), "the DataLoader (%.0f %% of each step)", dl_pct);
	else if (py || op)
		isc_doc_where(w, sizeof(w), py ? py : op);
	cJSON *f = isc_fnd_new(o, "cpu_bound", share >= 50 ? "critical" : "warning", share / 100 * c->quality,
			   "The GPU waited for the host %.0f %% of its span (%.1f ms idle with no work queued)%s%s", share,
			   s->cpu / 1e6, *w ? "; the host was mostly in " : "", w);
	isc_fnd_metric(o, f, "host_wait_pct", share);
	isc_fnd_metric(o, f, "gpu_idle_pct", isc_rpct(c->g.idle, c->g.span));
	isc_fnd_metric(o, f, "gpu_span_ns", c->g.span);
	isc_fnd_metric(o, f, "host_wait_ns", c->g.host_wait);
	if (dl_pct > DATALOADER_PCT) /* batches loaded on the launching thread leave the GPU idle */
		isc_fnd_detail(o, isc_fnd_top(o, f, isc_doc_get(dl, "function"), "DataLoader", "python", isc_doc_num(dl, "total_ns", 0), dl_pct),
			   "fetching batches: %.0f %% of each step", dl_pct);
	for (size_t i = 0; i < npy && i < TOP; i++)
		isc_fnd_detail(o, isc_fnd_top(o, f, pys[i], NULL, "python", isc_doc_num(pys[i], "self_idle_ns", 0), -1),
			   "%.1f ms of GPU idle inside it, its callees included", isc_doc_num(pys[i], "idle_ns", 0) / 1e6);
	for (size_t i = 0; i < nop && i < TOP; i++)
		isc_fnd_detail(o, isc_fnd_top(o, f, ops[i], NULL, "op", isc_doc_num(ops[i], "self_idle_ns", 0), -1),
			   "%.1f ms of GPU idle inside it, its callees included", isc_doc_num(ops[i], "idle_ns", 0) / 1e6);
	for (size_t i = 0; i < ns; i++)
		isc_fnd_detail(o, isc_fnd_top(o, f, sampled[i], NULL, "python", isc_doc_num(sampled[i], "self_ns", 0),
					      isc_doc_num(sampled[i], "self_pct", -1)),
			   "%.0f %% of the host's time in its own code (stack samples: no call spans tell the GPU's idle "
			   "time per function)", isc_doc_num(sampled[i], "self_pct", 0));
	int n = 0;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "gpu.gaps.top"))
		if (n++ < TOP) {
			char label[64];
			snprintf(label, sizeof(label), "GPU %.0f idle %.2f ms", isc_doc_num(x, "device", 0), isc_doc_num(x, "dur_ns", 0) / 1e6);
			isc_fnd_range(o, f, isc_doc_num(x, "start_ns", 0), isc_doc_num(x, "end_ns", 0), label);
		}
	isc_fnd_suggest(c, o, f, s->cpu,
		    "Take host work off the GPU's critical path: prepare the next batch while the GPU runs (a prefetching "
		    "thread or DataLoader workers), remove per-step Python work from the functions listed, and use "
		    "torch.compile or CUDA graphs to cut per-op host overhead.",
		    "the host-wait idle removed, the GPU kept fed (upper bound)",
		    "The GPU had no work queued for %.1f ms of its %.1f ms span, while the host ran the code listed.",
		    s->cpu / 1e6, c->g.span / 1e6);
	isc_fnd_candidate(o, f, "cpu_bound", share, c->quality);
}

const struct rule isc_rule_cpu_bound = { "cpu_bound", eval };
