/*
 * rule_abrupt_end.c - abrupt_end: the recording did not end cleanly.
 *
 * Trigger: summary.abrupt (the workload was killed by a signal,
 * end_reason "signaled", or the trace has no end record, "cut").
 * Severity warning.  Evidence: spans closed by the analyzer or the merge.
 * No saving: it is about the measurement.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double sig = 0;
	cJSON *f;
	if (!cJSON_IsTrue(isc_doc_get(c->doc, "summary.abrupt")))
		return;
	const char *why = isc_doc_str(c->doc, "summary.end_reason", "");
	if (!strcmp(why, "signaled") && isc_doc_have(c->doc, "summary.exit_signal", &sig))
		f = isc_fnd_new(o, "abrupt_end", "warning", 1,
			    "The workload was killed by signal %.0f%s; spans still open were closed at its exit", sig,
			    sig == 9 ? " (SIGKILL)" : sig == 15 ? " (SIGTERM)" : sig == 2 ? " (SIGINT)" : "");
	else
		f = isc_fnd_new(o, "abrupt_end", "warning", 1,
			    "The recording was cut short (no end record); spans still open were closed at the last event");
	isc_fnd_metric(o, f, "unclosed_spans", isc_doc_num(c->doc, "summary.unclosed_spans", 0));
	isc_fnd_metric(o, f, "merge_closed_spans", isc_doc_num(c->doc, "summary.merge_closed_spans", 0));
	isc_fnd_suggest(c, o, f, -1, "Let the workload exit normally to get complete spans.", NULL,
		    "Events of the last moments before the end may be missing and %.0f spans have a guessed end.",
		    isc_doc_num(c->doc, "summary.unclosed_spans", 0) + isc_doc_num(c->doc, "summary.merge_closed_spans", 0));
}

const struct rule isc_rule_abrupt_end = { "abrupt_end", eval };
