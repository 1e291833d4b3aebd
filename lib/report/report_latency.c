/*
 * report_latency.c - the report's "## End-to-end latency" section and its
 * "### Marks":
 *
 *   the iterations' latency quantiles with their 95 % intervals, and the
 *   rule that chose the iterations
 *   ### Latency distribution   a histogram (a chart in the HTML page)
 *   the run's wall time and event counts; what recording cost (the Python
 *   mode, the exact mode's per-call cost and its correction, the
 *   sampler's cost: report_pysample.c), events dropped per thread, and the
 *   recorder's notes on what it could not capture (summary.warnings)
 *   ### Marks                  the workload's mark() counters
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

/* Latency histogram: a chart in the HTML page, a table with text bars in Markdown. */
static void latency_histogram(struct isc_rep *m, const cJSON *root)
{
	struct isc_rep_hist h;
	char a[64], b[64];
	double cmax = 0;
	if (!isc_rep_hist_get(root, &h))
		return;
	isc_rep_put(m, "\n### Latency distribution\n");
	if (m->html) {
		isc_rep_put(m, ISC_REP_CHART_BEGIN);
		isc_svg_histogram(m, "Iteration latency distribution (steady state)", &h);
		isc_rep_put(m, ISC_REP_CHART_END);
		return;
	}
	for (size_t i = 0; i < h.k; i++)
		cmax = fmax(cmax, h.counts[i]);
	isc_rep_put(m, "\n| From | To | Iterations | | |\n|---:|---:|---:|---|---|\n");
	for (size_t i = 0; i < h.k; i++) {
		bool last = i + 1 == h.k;
		isc_rep_putf(m, "| %s | %s | %.0f | ", isc_rep_fmt_ns(a, sizeof(a), h.edges[i]),
			     isc_rep_fmt_ns(b, sizeof(b), h.edges[i + 1]), h.counts[i]);
		for (int k = cmax > 0 ? (int)lround(h.counts[i] / cmax * 20) : 0; k > 0; k--)
			isc_rep_put(m, "█");
		isc_rep_put(m, " |");
		static const char *const qn[] = { "p50", "p99" };
		const double qv[] = { h.p50, h.p99 };
		for (int q = 0; q < 2; q++)
			if (qv[q] >= h.edges[i] && (qv[q] < h.edges[i + 1] || (last && qv[q] <= h.edges[i + 1])))
				isc_rep_putf(m, " %s", qn[q]);
		isc_rep_put(m, " |\n");
	}
}

/* summary.warnings: what the recorder or an agent could not do, one bullet each. */
static void recording_notes(struct isc_rep *m, const cJSON *root)
{
	const cJSON *ws = isc_doc_arr(root, "summary.warnings"), *w;
	if (!cJSON_GetArraySize(ws))
		return;
	isc_rep_put(m, "\nRecording notes (what the recorder could not capture):\n\n");
	double listed = 0;
	cJSON_ArrayForEach(w, ws) {
		char b[64];
		double c;
		listed += isc_doc_have(w, "count", &c) && c > 0 ? c : 1;
		isc_rep_put(m, "- ");
		if (!strcmp(isc_doc_str(w, "kind", ""), "native_not_sampled"))
			isc_rep_put(m, "Native stacks were not sampled, this report is from Python stacks only: ");
		isc_rep_md(m, isc_doc_str(w, "message", "?"));
		double pid, n;
		if (isc_doc_have(w, "pid", &pid) && pid > 0)
			isc_rep_putf(m, " (process %s)", isc_rep_field(b, 64, w, "pid", 'i'));
		if (isc_doc_have(w, "count", &n) && n > 1)
			isc_rep_putf(m, " (%s times)", isc_rep_field(b, 64, w, "count", 'i'));
		isc_rep_put(m, "\n");
	}
	double total;
	if (isc_doc_have(root, "summary.warnings_total", &total) && total > listed) {
		char b[64];
		isc_rep_putf(m, "- … %s warning records in all\n",
			     isc_rep_field(b, 64, root, "summary.warnings_total", 'i'));
	}
}
/* recording: what the exact Python mode cost, and drops per thread. */
static void recording_cost(struct isc_rep *m, const cJSON *root)
{
	char b[3][64];
	double pe;
	/* which Python mode and why (iscope-record's META record.python_mode) */
	const cJSON *mode = cJSON_GetObjectItemCaseSensitive(isc_doc_get(root, "environment.meta"), "record.python_mode");
	if (cJSON_IsString(mode)) {
		isc_rep_put(m, "\nPython recording mode: ");
		isc_rep_md(m, mode->valuestring);
		isc_rep_put(m, !strncmp(mode->valuestring, "sample", 6)
				       ? ".  `--python=exact` records every call instead, with its count and duration, at a "
					 "cost per call.\n"
				       : ".\n");
	}
	if (isc_doc_have(root, "recording.per_event_ns", &pe) && isfinite(pe)) {
		isc_rep_put(m, "\nRecording (exact Python mode, ");
		isc_rep_md(m, isc_doc_str(root, "recording.mechanism", "?"));
		isc_rep_putf(m, ") added about %s per call (%s of traced time", isc_rep_fmt_ns(b[0], 64, 2 * pe),
			     isc_rep_field(b[1], 64, root, "recording.overhead_pct", 'p'));
		double slow;
		if (isc_doc_have(root, "recording.traced_slowdown", &slow) && slow >= 1.05 && slow < 1e6)
			isc_rep_putf(m, ": the traced code ran about %.1fx as long as it would without recording, "
					"estimated; `--python=sample` costs far less", slow);
		isc_rep_put(m, "); ");
		if (cJSON_IsTrue(isc_doc_get(root, "recording.compensated")))
			isc_rep_putf(m, "figures corrected (%s taken out of self times; %s would come out of the "
					"iteration latencies, shown as an estimate beside the measured ones).\n",
				     isc_rep_field(b[1], 64, root, "recording.overhead_ns", 'n'),
				     isc_rep_field(b[2], 64, root, "recording.iteration_overhead_removed_ns", 'n'));
		else
			isc_rep_put(m, "figures not corrected (--no-compensation).\n");
	}
	isc_rep_sampler_cost(m, root);
	isc_rep_cuda_agent_cost(m, root);
	const cJSON *ts = isc_doc_arr(root, "recording.threads_with_drops"), *t;
	if (!cJSON_GetArraySize(ts))
		return;
	isc_rep_put(m, "\nEvents dropped per thread:");
	int i = 0;
	cJSON_ArrayForEach(t, ts) {
		isc_rep_put(m, i++ ? "; " : " ");
		isc_rep_md(m, isc_doc_str(t, "name", "?"));
		isc_rep_putf(m, " (process %s, thread %s): %s", isc_rep_field(b[0], 64, t, "pid", 'i'),
			     isc_rep_field(b[1], 64, t, "tid", 'i'), isc_rep_field(b[2], 64, t, "dropped_events", 'i'));
		/* of the events the thread made: kept plus dropped */
		isc_rep_putf(m, " of %.0f (%s)", isc_doc_num(t, "events", 0) + isc_doc_num(t, "dropped_events", 0),
			     isc_rep_field(b[0], 64, t, "dropped_pct", 'p'));
	}
	isc_rep_put(m, ".\n");
}

/* The latency without the recording's cost (iterations.latency_estimate), beside the measured one. */
static void estimate(struct isc_rep *m, const cJSON *root)
{
	char b[4][64];
	const cJSON *e = isc_doc_get(root, "iterations.latency_estimate");
	if (!cJSON_IsObject(e))
		return;
	if (cJSON_IsTrue(isc_doc_get(e, "withheld"))) {
		isc_rep_put(m, "\nThe latencies above are measured, recording included; the estimate without the recording "
			       "cost withheld: ");
		isc_rep_md(m, isc_doc_str(e, "reason", "?"));
		isc_rep_putf(m, " (more than %s).\n", isc_rep_field(b[0], 64, e, "max_removed_pct", 'p'));
		return;
	}
	isc_rep_putf(m, "\nThe latencies above are measured, recording included.  Without the recording cost "
		       "(an estimate: %s less), p50 %s, mean %s, min %s; assumed: ",
		     isc_rep_field(b[0], 64, e, "removed_pct", 'p'),
		     isc_rep_field(b[1], 64, root, "iterations.latency_ns_estimated.p50", 'n'),
		     isc_rep_field(b[2], 64, root, "iterations.latency_ns_estimated.mean", 'n'),
		     isc_rep_field(b[3], 64, root, "iterations.latency_ns_estimated.min", 'n'));
	isc_rep_md(m, isc_doc_str(e, "assumption", "?"));
	isc_rep_put(m, ".\n");
}

void isc_rep_sec_latency(struct isc_rep *m, const cJSON *root)
{
	char b[8][64];
	isc_rep_put(m, "\n## End-to-end latency\n\n");
	const char *name = isc_doc_str(root, "iterations.name", NULL);
	if (!name || isc_doc_num(root, "iterations.count", 0) <= 0) {
		isc_rep_put(m, "No iterations recorded. Wrap one request in `with scope(\"step\"):` "
		       "(`from inferscope import scope`) to get per-iteration latency.\n");
	} else {
		isc_rep_put(m, "| Scope | Iterations | Warm-up excluded | p50 | p90 | p99 | Mean | Min | Max |\n");
		isc_rep_put(m, "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n| ");
		isc_rep_md(m, name);
		isc_rep_putf(m, " | %s | %s | %s | %s | %s | %s | %s | %s |\n", isc_rep_field(b[0], 64, root, "iterations.count", 'i'),
		     isc_rep_field(b[1], 64, root, "iterations.warmup_excluded", 'i'),
		     isc_rep_field(b[2], 64, root, "iterations.latency_ns.p50", 'n'),
		     isc_rep_field(b[3], 64, root, "iterations.latency_ns.p90", 'n'),
		     isc_rep_field(b[4], 64, root, "iterations.latency_ns.p99", 'n'),
		     isc_rep_field(b[5], 64, root, "iterations.latency_ns.mean", 'n'),
		     isc_rep_field(b[6], 64, root, "iterations.latency_ns.min", 'n'),
		     isc_rep_field(b[7], 64, root, "iterations.latency_ns.max", 'n'));
		isc_rep_put(m, "\n95 % confidence intervals (distribution-free, from order statistics):");
		static const char *const q[] = { "p50", "p90", "p99" };
		for (int i = 0; i < 3; i++) {
			char lo[64], hi[64];
			snprintf(lo, sizeof(lo), "iterations.latency_ci95_ns.%s.low", q[i]);
			snprintf(hi, sizeof(hi), "iterations.latency_ci95_ns.%s.high", q[i]);
			double v;
			if (isc_doc_have(root, lo, &v) && isc_doc_have(root, hi, &v))
				isc_rep_putf(m, " %s %s – %s%s", q[i], isc_rep_field(b[0], 64, root, lo, 'n'),
				     isc_rep_field(b[1], 64, root, hi, 'n'), i < 2 ? ";" : ".");
			else
				isc_rep_putf(m, " %s needs more iterations%s", q[i], i < 2 ? ";" : ".");
		}
		isc_rep_put(m, "\n");
		estimate(m, root);
		const char *rule = isc_doc_str(root, "iterations.rule", NULL);
		if (rule) {
			isc_rep_put(m, "\nRule: ");
			isc_rep_md(m, rule);
			isc_rep_put(m, ".\n");
		}
	}
	latency_histogram(m, root);
	isc_rep_putf(m, "\nWall time %s; %s events recorded, %s dropped.\n",
		     isc_rep_field(b[0], 64, root, "summary.wall_ns", 'n'),
		     isc_rep_field(b[1], 64, root, "summary.events", 'i'),
		     isc_rep_field(b[2], 64, root, "summary.dropped_events", 'i'));
	recording_cost(m, root);
	recording_notes(m, root);
}

/*
 * "### Marks" (under End-to-end latency): per mark() name its count, sum,
 * sum per iteration and per second of the analyzed span (tokens/s), and
 * the sum over time as a row of block characters when it spans several
 * buckets.  The agent's own torch.* marks are left out.
 */
void isc_rep_sec_marks(struct isc_rep *m, const cJSON *root)
{
	static const char *const blocks[] = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
	const cJSON *mk;
	bool any = false;
	char b[64];
	cJSON_ArrayForEach(mk, isc_doc_arr(root, "marks")) {
		const char *name = isc_doc_str(mk, "name", "?");
		if (isc_mark_is_agent(name)) /* the environment's, not the user's counters */
			continue;
		if (!any) {
			isc_rep_put(m, "### Marks\n\nCounters from `mark(name, n)`: per iteration of the scope, per second "
				       "of the analyzed span.\n\n| Mark | Count | Sum | Per iteration | Per second | Over time |\n"
				       "|---|---:|---:|---:|---:|---|\n");
			any = true;
		}
		isc_rep_put(m, "| ");
		isc_rep_md(m, name);
		isc_rep_putf(m, " | %s", isc_rep_field(b, sizeof(b), mk, "count", 'i'));
		isc_rep_putf(m, " | %s", isc_rep_field(b, sizeof(b), mk, "sum", 'i'));
		double v;
		if (isc_doc_have(mk, "per_iteration", &v) && isfinite(v) && fabs(v) < ISC_REP_FIXED_MAX)
			isc_rep_putf(m, " | %.2f", v);
		else
			isc_rep_put(m, " | n/a");
		if (isc_doc_have(mk, "per_s", &v) && isfinite(v) && fabs(v) < ISC_REP_FIXED_MAX)
			isc_rep_putf(m, " | %.1f/s", v);
		else
			isc_rep_put(m, " | n/a");
		isc_rep_put(m, " | ");
		const cJSON *sums = isc_doc_arr(mk, "series.sums"), *x;
		double hi = 0;
		cJSON_ArrayForEach(x, sums)
			if (cJSON_IsNumber(x) && x->valuedouble > hi)
				hi = x->valuedouble;
		if (cJSON_GetArraySize(sums) >= 2 && hi > 0) {
			cJSON_ArrayForEach(x, sums) {
				double f = cJSON_IsNumber(x) && x->valuedouble > 0 ? x->valuedouble / hi : 0;
				isc_rep_put(m, blocks[f >= 1 ? 7 : (int)(f * 8)]);
			}
			isc_rep_putf(m, " (%s a column)", isc_rep_fmt_ns(b, sizeof(b), isc_doc_num(mk, "series.bucket_ns", 0)));
		} else {
			isc_rep_put(m, "one burst");
		}
		isc_rep_put(m, " |\n");
	}
	if (any)
		isc_rep_put(m, "\n");
}
