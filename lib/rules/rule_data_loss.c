/*
 * rule_data_loss.c - data_loss: the numbers undercount the run.
 *
 * Trigger: summary.dropped_events > 0 (full rings in the recorder), or
 * summary.lost_frames > 0 (frames the merge could not read), or
 * summary.damaged.  Severity warning.  No threshold: any loss is reported,
 * as nsys reports any dropped CUPTI buffer.  Evidence: the counts and the
 * share of events lost.  No saving: it is about the measurement.  Frames a
 * flight recorder evicted (run.window) are its design, not a loss: they
 * alone trigger nothing (the report says "the last N s of the run").
 */
#include "rules.h"

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double dr = isc_doc_num(c->doc, "summary.dropped_events", 0), lf = isc_doc_num(c->doc, "summary.lost_frames", 0);
	double ev = isc_doc_num(c->doc, "summary.events", 0);
	bool damaged = cJSON_IsTrue(isc_doc_get(c->doc, "summary.damaged"));
	if (cJSON_IsTrue(isc_doc_get(c->doc, "run.window")))
		lf = 0;
	if (dr <= 0 && lf <= 0 && !damaged)
		return;
	/* recording.threads_with_drops: largest first */
	const cJSON *top = cJSON_GetArrayItem(isc_doc_get(c->doc, "recording.threads_with_drops"), 0);
	const char *tname = top ? isc_doc_str(top, "name", NULL) : NULL;
	double tdr = 0, nthr = cJSON_GetArraySize(isc_doc_get(c->doc, "recording.threads_with_drops"));
	char most[160] = "";
	if (top && isc_doc_have(top, "dropped_events", &tdr) && tdr >= dr)
		snprintf(most, sizeof(most), " (all by thread %s)", tname ? tname : "?");
	else if (top && tdr > 0)
		snprintf(most, sizeof(most), " (%.0f of them by thread %s, the most of %.0f threads)", tdr,
			 tname ? tname : "?", nthr);
	cJSON *f = isc_fnd_new(o, "data_loss", "warning", 1, "%.0f events dropped%s, %.0f frames lost%s: the numbers below undercount them",
			   dr, most, lf, damaged ? ", input damaged" : "");
	isc_fnd_metric(o, f, "dropped_events", dr);
	isc_fnd_metric(o, f, "threads_with_drops", nthr);
	isc_fnd_metric(o, f, "lost_frames", lf);
	isc_fnd_metric(o, f, "dropped_pct", isc_rpct(dr, ev + dr));
	isc_fnd_suggest(c, o, f, -1, "Give the recorder more buffer (--trace-size, INFERSCOPE_TRACE_SIZE_MB) or record a shorter run.", NULL,
		    "Dropped events leave gaps in spans and undercount call counts; %.2f %% of events were lost.",
		    isc_rpct(dr, ev + dr));
}

const struct rule isc_rule_data_loss = { "data_loss", eval };
