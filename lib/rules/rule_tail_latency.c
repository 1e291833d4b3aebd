/*
 * rule_tail_latency.c - tail_latency: p99 iteration latency far above the
 * median.
 *
 * Trigger: iterations.latency_ns p99 >= 2 x p50 with >= 20 steady-state
 * samples (fewer make p99 the maximum).  Severity info.  The 2x ratio is
 * the usual serving SLO rule of thumb (p99 within 2x of p50).
 * Evidence: p50, p99, the slowest iterations' time ranges when known.
 * What-if: the iterations above p90 running at the median — the time the
 * tail costs (from the mean: (mean - p50) x samples is a lower bound of the
 * excess; we quote that; with the mean at or below the median, not
 * estimated).
 */
#include "rules.h"

#define MIN_SAMPLES 20

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double p50, p99, mean, n = isc_doc_num(c->doc, "iterations.samples", 0);
	if (!isc_doc_have(c->doc, "iterations.latency_ns.p50", &p50) || !isc_doc_have(c->doc, "iterations.latency_ns.p99", &p99) ||
	    p50 <= 0 || p99 < 2 * p50 || n < MIN_SAMPLES)
		return;
	mean = isc_doc_num(c->doc, "iterations.latency_ns.mean", p50);
	cJSON *f = isc_fnd_new(o, "tail_latency", "info", c->quality, "Iteration p99 latency is %.1fx the median", p99 / p50);
	isc_fnd_metric(o, f, "p50_ns", p50);
	isc_fnd_metric(o, f, "p99_ns", p99);
	isc_fnd_metric(o, f, "mean_ns", mean);
	isc_fnd_metric(o, f, "samples", n);
	/* a mean at or below the median says nothing of the tail's cost: not estimated (never "saving 0 ns") */
	isc_fnd_suggest(c, o, f, mean > p50 ? (mean - p50) * n : -1,
		    "Check for garbage-collection pauses (gc.freeze() after loading), input-size outliers and thread "
		    "oversubscription (torch.set_num_threads).",
		    mean > p50 ? "every iteration at the median latency: (mean - p50) x iterations" : NULL,
		    "The slowest 1 %% of iterations take %.1f ms against a median of %.1f ms.", p99 / 1e6, p50 / 1e6);
}

const struct rule isc_rule_tail_latency = { "tail_latency", eval };
