/*
 * rule_straggler.c - straggler: a rank of a distributed job that the others
 * wait for (distributed.stragglers[], named by the reduce's rule in
 * dist_reduce.c: late against the median of the other ranks' arrivals by at
 * least 5 % of the median iteration, in the median over its collectives,
 * and last in at least half of them).
 *
 * Trigger: a straggler in the job's section; one finding per straggler, the
 * latest first.  A job verdict class (rules.c): it is chosen before the
 * detail rank's own classes.  Verdict share: the time the job loses to the
 * straggler per iteration, of the median iteration (loss_pct_of_iteration;
 * without iterations: its loss of the median rank's window).  Severity
 * critical from 20 %.
 * Evidence: its lateness, the time lost, who waits and in what collective;
 * top: its cause (the contributors that grew against the other ranks).
 * What-if: the job's loss to it gone (the others no longer wait for it at
 * the collectives it reaches last).  The verdict's sentence is worded in
 * rule_headline.c.
 */
#include <stdio.h>
#include <stdlib.h>

#include "rules.h"

#define CRITICAL_PCT 20

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The median window_ns of the job's ranks, 0 without. */
static double median_window(const cJSON *doc)
{
	const cJSON *r, *ranks = isc_doc_arr(doc, "distributed.ranks");
	size_t n = 0, cap = (size_t)cJSON_GetArraySize(ranks);
	double *v = cap ? malloc(cap * sizeof(*v)) : NULL, m = 0;
	if (!v)
		return 0;
	cJSON_ArrayForEach(r, ranks)
		if (isc_doc_num(r, "window_ns", 0) > 0)
			v[n++] = isc_doc_num(r, "window_ns", 0);
	if (n) {
		qsort(v, n, sizeof(*v), cmp_dbl);
		m = (v[(n - 1) / 2] + v[n / 2]) / 2;
	}
	free(v);
	return m;
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *s, *x;
	bool first = true;
	cJSON_ArrayForEach(s, isc_doc_arr(c->doc, "distributed.stragglers")) {
		double rank = isc_doc_num(s, "rank", -1), late = isc_doc_num(s, "lateness_ns", 0);
		double loss = isc_doc_num(s, "loss_ns", 0), share, per;
		bool have_iter = isc_doc_have(s, "loss_pct_of_iteration", &share) && isc_doc_have(s, "loss_per_iteration_ns", &per);
		if (!have_iter) {
			double w = median_window(c->doc);
			share = w > 0 ? isc_rpct(loss, w) : 0;
		}
		cJSON *f = isc_fnd_new(o, "straggler", share >= CRITICAL_PCT ? "critical" : "warning", share / 100,
				       "Straggler: rank %.0f is %.1f ms late to its collectives; the job loses %.1f ms%s "
				       "(%.1f %%) to it", rank, late / 1e6, (have_iter ? per : loss) / 1e6,
				       have_iter ? " per iteration" : "", share);
		isc_fnd_metric(o, f, "rank", rank);
		isc_fnd_metric(o, f, "lateness_ns", late);
		isc_fnd_metric(o, f, "last_pct", isc_doc_num(s, "last_pct", 0));
		isc_fnd_metric(o, f, "loss_ns", loss);
		if (have_iter) {
			isc_fnd_metric(o, f, "loss_per_iteration_ns", per);
			isc_fnd_metric(o, f, "loss_pct_of_iteration", share);
		}
		isc_fnd_metric(o, f, "others_wait_ns", isc_doc_num(s, "others_wait_ns", 0));
		isc_fnd_metric(o, f, "waiting_ranks", cJSON_GetArraySize(isc_doc_arr(s, "waiting_ranks")));
		cJSON_ArrayForEach(x, isc_doc_arr(s, "cause")) {
			cJSON *t = isc_fnd_top(o, f, x, NULL, isc_doc_str(x, "kind", "?"), isc_doc_num(x, "delta_ns_per_iter", 0), -1);
			isc_fnd_detail(o, t, "%s: %.1f ms per iteration against %.1f ms on the other ranks",
				       isc_doc_str(x, "view", "?"), isc_doc_num(x, "ns_per_iter", 0) / 1e6,
				       isc_doc_num(x, "others_ns_per_iter", 0) / 1e6);
		}
		const cJSON *cause = cJSON_GetArrayItem(isc_doc_arr(s, "cause"), 0);
		char act[512];
		if (cause)
			snprintf(act, sizeof(act), "balance rank %.0f's work: remove, speed up or spread %s so that it "
				 "reaches the collectives with the other ranks", rank, isc_doc_str(cause, "name", "?"));
		else
			snprintf(act, sizeof(act), "find why rank %.0f starts its collectives late (its host, its input, "
				 "its device): its profile shows no extra work", rank);
		isc_fnd_suggest(c, o, f, loss, act, "the time the other ranks wait for it at the collectives it "
				"reaches last, gone", "every other rank waits %.1f ms in %s for rank %.0f; the job "
				"moves at the pace of its slowest rank", isc_doc_num(s, "others_wait_ns", 0) / 1e6,
				isc_doc_str(s, "waited_in", "its collectives"), rank);
		if (first)
			isc_fnd_candidate(o, f, "straggler", share, c->quality);
		first = false;
	}
}

const struct rule isc_rule_straggler = { "straggler", eval };
