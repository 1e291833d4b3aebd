/*
 * rule_gpu_gaps.c - gpu_gaps: long stretches with no GPU work.
 *
 * Trigger: idle gaps of >= gpu.gaps.threshold_ns (1 ms) between busy
 * intervals of a device summing to >= 5 % of the GPU span.  nsys analyze's
 * gpu_gaps rule uses 500 ms for whole applications; inference steps last
 * milliseconds, so we list gaps from 1 ms.  Severity info: the cause is
 * in cpu_bound / sync_bound when they fire; this lists where.
 * Evidence: the longest gaps as time ranges.
 * What-if: those gaps closed; null when cpu_bound, sync_bound or
 * launch_bound fired (their estimates already hold this idle time, and
 * this finding only says where it is).
 */
#include <stdio.h>

#include "rules.h"

#define TRIGGER_PCT 5

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *x;
	double total = isc_doc_num(c->doc, "gpu.gaps.total_ns", 0), count = isc_doc_num(c->doc, "gpu.gaps.count", 0);
	if (!c->dev || c->g.span <= 0 || count <= 0 || isc_rpct(total, c->g.span) < TRIGGER_PCT)
		return;
	cJSON *f = isc_fnd_new(o, "gpu_gaps", "info", c->quality,
			   "%.0f GPU gaps of %.0f ms or more add up to %.0f %% of the GPU span", count,
			   isc_doc_num(c->doc, "gpu.gaps.threshold_ns", 1e6) / 1e6, isc_rpct(total, c->g.span));
	isc_fnd_metric(o, f, "gaps", count);
	isc_fnd_metric(o, f, "gaps_total_ns", total);
	isc_fnd_metric(o, f, "gaps_pct", isc_rpct(total, c->g.span));
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "gpu.gaps.top")) {
		char label[64];
		snprintf(label, sizeof(label), "GPU %.0f idle %.2f ms", isc_doc_num(x, "device", 0), isc_doc_num(x, "dur_ns", 0) / 1e6);
		isc_fnd_range(o, f, isc_doc_num(x, "start_ns", 0), isc_doc_num(x, "end_ns", 0), label);
	}
	const char *cause = isc_rgpu_idle_covered(o);
	isc_fnd_suggest(c, o, f, cause ? -1 : total,
		    "Look at what the host does in these time ranges (the timeline: iscope-merge --format=chrome).",
		    cause ? "contained in the estimate of the cause found (cpu_bound, sync_bound or launch_bound)"
			  : "the gaps closed",
		    "The longest gaps are listed with their times from the start of the run.");
}

const struct rule isc_rule_gpu_gaps = { "gpu_gaps", eval };
