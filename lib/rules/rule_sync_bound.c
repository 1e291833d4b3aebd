/*
 * rule_sync_bound.c - sync_bound: synchronisation stalls the pipeline.
 *
 * Trigger: the sync part of gpu_split.c (host time blocked in
 * cuda*Synchronize, .item() and other blocking copies, weighted by the
 * GPU's idle share, plus GPU idle waiting on other streams) >= 10 % of the
 * GPU span.  Severity critical from 30 %.  Verdict share: the sync part.
 * nsys's cuda_api_sync rule lists every synchronising call; we rank them
 * by call site.
 * Evidence: host time in synchronising calls, blocking copies, the call
 * sites (gpu.sync.call_sites: API, enclosing op such as aten::item, Python
 * function with file:line).
 * What-if: the sync part gone, as when the host no longer waits and the
 * GPU queue stays filled (an upper bound).
 */
#include <stdio.h>

#include "rules.h"

#define TRIGGER_PCT 10
#define TOP 5

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *x;
	const struct isc_gpu_split *s = isc_rgpu_split(c);
	if (!s)
		return;
	double share = isc_rpct(s->sync, c->g.span);
	if (share < TRIGGER_PCT)
		return;
	const cJSON *site = cJSON_GetArrayItem(isc_doc_arr(c->doc, "gpu.sync.call_sites"), 0);
	char w[600] = "";
	if (site) {
		const cJSON *py = isc_doc_get(site, "python");
		if (cJSON_IsObject(py))
			isc_doc_where(w, sizeof(w), py);
		else
			snprintf(w, sizeof(w), "%s", isc_doc_str(site, "op", isc_doc_str(site, "api", "?")));
	}
	cJSON *f;
	if (c->g.other_wait > s->sync / 2)
		f = isc_fnd_new(o, "sync_bound", share >= 30 ? "critical" : "warning", share / 100 * c->quality,
			    "The GPU streams waited on each other for %.0f %% of the span (%.1f ms of queued work held "
			    "back by events on other streams, such as communication kernels)",
			    share, c->g.other_wait / 1e6);
	else
		f = isc_fnd_new(o, "sync_bound", share >= 30 ? "critical" : "warning", share / 100 * c->quality,
			    "Synchronisation stalls the GPU pipeline for %.0f %% of the span (%.1f ms blocked in "
			    "synchronising calls)%s%s", share, c->g.sync_api / 1e6, *w ? "; most from " : "", w);
	isc_fnd_metric(o, f, "sync_pct", share);
	isc_fnd_metric(o, f, "sync_api_ns", c->g.sync_api);
	isc_fnd_metric(o, f, "blocking_copies", isc_doc_num(c->doc, "gpu.sync.blocking_copies.count", 0));
	isc_fnd_metric(o, f, "cross_stream_wait_ns", c->g.other_wait);
	int n = 0;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "gpu.sync.call_sites")) {
		const cJSON *py = isc_doc_get(x, "python");
		if (n++ >= TOP)
			break;
		isc_fnd_detail(o, isc_fnd_top(o, f, cJSON_IsObject(py) ? py : NULL, isc_doc_str(x, "op", isc_doc_str(x, "api", "?")), "api",
				      isc_doc_num(x, "total_ns", 0), -1),
			   "%s x %.0f%s%s", isc_doc_str(x, "api", "?"), isc_doc_num(x, "count", 0), cJSON_IsString(isc_doc_get(x, "op")) ? " in " : "",
			   isc_doc_str(x, "op", ""));
	}
	if (!n)
		cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "gpu.sync.api_calls"))
			if (n++ < TOP)
				isc_fnd_top(o, f, NULL, isc_doc_str(x, "name", "?"), "api", isc_doc_num(x, "total_ns", 0), -1);
	isc_fnd_suggest(c, o, f, s->sync,
		    "Stop waiting on the GPU inside the step: remove .item(), .cpu(), print(tensor) and "
		    "torch.cuda.synchronize() from the loop (accumulate on the GPU, read once at the end), use "
		    "non_blocking copies, and let events order streams instead of host syncs.",
		    "the host never blocking and the GPU queue kept filled (upper bound)",
		    "Each sync drains the GPU queue, so the GPU idles while the host launches the next work.");
	isc_fnd_candidate(o, f, "sync_bound", share, c->quality);
}

const struct rule isc_rule_sync_bound = { "sync_bound", eval };
