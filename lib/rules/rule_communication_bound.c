/*
 * rule_communication_bound.c - communication_bound: a distributed job whose
 * ranks spend most of their time in communication that nothing overlaps,
 * with no straggler to blame (distributed.communication.bound, set by the
 * reduce in dist_reduce.c: the median rank's exposed communication is at
 * least 50 % of its window, and no rank is a straggler).
 *
 * Trigger: communication.bound.  A job verdict class (rules.c), chosen
 * before the detail rank's own classes.  Verdict share: the median rank's
 * exposed communication, of its window (GPU: the span of its GPU
 * operations; CPU: its iterations).  Severity critical from 70 %.
 * Evidence: the median and largest exposed shares; top: the collective
 * operation that takes most time (count x the shortest duration across
 * ranks, the transfer).  No what-if: overlapping or shrinking communication
 * is not modelled.  The verdict's sentence is worded in rule_headline.c.
 */
#include <stdio.h>

#include "rules.h"

#define CRITICAL_PCT 70

/* The entry of distributed.collectives.by_op that takes most time (count x transfer), or NULL. */
const cJSON *isc_rcomm_top_op(const cJSON *doc)
{
	const cJSON *x, *best = NULL;
	double most = -1;
	cJSON_ArrayForEach(x, isc_doc_arr(doc, "distributed.collectives.by_op")) {
		double t = isc_doc_num(x, "count", 0) * isc_doc_num(x, "transfer_ns_mean", 0);
		if (t > most) {
			most = t;
			best = x;
		}
	}
	return best;
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	if (!cJSON_IsTrue(isc_doc_get(c->doc, "distributed.communication.bound")))
		return;
	double med = isc_doc_num(c->doc, "distributed.communication.exposed_pct_median", 0);
	double max = isc_doc_num(c->doc, "distributed.communication.exposed_pct_max", 0);
	cJSON *f = isc_fnd_new(o, "communication_bound", med >= CRITICAL_PCT ? "critical" : "warning", med / 100,
			       "Communication bound: exposed communication is %.0f %% of the median rank's time "
			       "(at most %.0f %%), no rank is late", med, max);
	isc_fnd_metric(o, f, "exposed_pct_median", med);
	isc_fnd_metric(o, f, "exposed_pct_max", max);
	isc_fnd_metric(o, f, "ranks", isc_doc_num(c->doc, "distributed.ranks_present", 0));
	const cJSON *op = isc_rcomm_top_op(c->doc);
	if (op) {
		double n = isc_doc_num(op, "count", 0), t = isc_doc_num(op, "transfer_ns_mean", 0);
		cJSON *top = isc_fnd_top(o, f, NULL, isc_doc_str(op, "op", "?"), "collective", n * t, -1);
		isc_fnd_detail(o, top, "%.0f calls, %.1f ms each at the fastest rank", n, t / 1e6);
	}
	isc_fnd_suggest(c, o, f, -1, "overlap communication with computation (bucketed, asynchronous collectives), "
			"or send less (fewer, larger or compressed collectives)", NULL,
			"the ranks are balanced, but they wait for the network %.0f %% of their time", med);
	isc_fnd_candidate(o, f, "communication_bound", med, c->quality);
}

const struct rule isc_rule_communication_bound = { "communication_bound", eval };
