/*
 * report_md.c - findings JSON -> Markdown report; for -f html the same
 * Markdown, with SVG charts in place of their tables, goes through
 * report_html.c.  This file holds the document's frame and what comes
 * before its first section; each "##" section has a file of its own.
 *
 * Layout, in this order (the titles are ones scripts rely on):
 *
 *   # InferScope report
 *   ## Comparison, ## History   report_compare.c, when the findings have them
 *   the run line                a failed, killed, cut or windowed run
 *   ## Job                      report_job.c, a distributed job's view
 *   the headline                verdict.headline as the rules worded it, bold
 *   the verdict line            class, confidence, share explained, limits
 *   the run's size              wall time, iterations, start-up, damage
 *   ## End-to-end latency       report_latency.c (and ### Marks)
 *   ## CPU                      report_cpu.c (### Python samples: report_pysample.c,
 *                               ### Native stacks: report_native.c)
 *   ## GPU                      report_gpu.c
 *   ## Memory                   report_memory.c
 *   ## Findings                 report_findings.c
 *   ## Suggestions              report_findings.c
 *   ## Environment              report_environment.c
 *
 * Every field may be missing: it shows as "n/a" or its line is left out.
 * Charts, and the tables that stand in for them, are in report_chart.c.
 *
 * Escaping: every string that came from the workload goes through
 * isc_md_escape() (tables, prose: isc_rep_md) or isc_rep_code() (prose
 * only, and only for strings with nothing a renderer could misread),
 * never raw.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "report.h"

/*
 * Was the verdict's finding judged on the time inside iterations
 * (findings[].judged_on)?  Then the numbers that back it are
 * cpu.in_iterations' and cpu.top_functions_in_scopes (a CPU class), or
 * gpu.in_iterations' (a GPU class): section is "cpu" or "gpu".
 */
static bool judged_iterations(const cJSON *root, const char *section)
{
	const char *id = isc_doc_str(root, "verdict.finding", NULL);
	const cJSON *f;
	char path[32];
	snprintf(path, sizeof(path), "%s.in_iterations", section);
	cJSON_ArrayForEach(f, isc_doc_arr(root, "findings"))
		if (id && !strcmp(isc_doc_str(f, "id", ""), id))
			return !strcmp(isc_doc_str(f, "judged_on", ""), "iterations") && cJSON_IsObject(isc_doc_get(root, path));
	return false;
}

/*
 * The verdict line: "Verdict: **class** (confidence, share explained,
 * evidence quality, the finding behind it)".  Its share names its whole: the CPU classes' shares are
 * of the traced threads' time, the GPU classes' of the GPU's span.  Then
 * what bounds it (verdict.limits) and the classes not chosen for want of
 * their evidence (verdict.missing), with how to get it.
 */
static void verdict_line(struct isc_rep *m, const cJSON *root, const char *cls)
{
	static const struct {
		const char *path, *fmt;
	} part[] = {
		{ "verdict.confidence", "confidence %.2f" },
		{ "verdict.explained_pct", NULL },
		{ "verdict.evidence_quality", "evidence quality %.2f" },
	};
	const char *sep = " (";
	double v;
	isc_rep_put(m, "Verdict: **");
	isc_rep_md(m, cls);
	isc_rep_put(m, "**");
	for (size_t i = 0; i < sizeof(part) / sizeof(part[0]); i++) {
		if (!isc_doc_have(root, part[i].path, &v) || !isfinite(v) || fabs(v) >= ISC_REP_FIXED_MAX)
			continue;
		isc_rep_put(m, sep);
		if (part[i].fmt)
			isc_rep_putf(m, part[i].fmt, v);
		else
			isc_rep_putf(m, "explains %.0f %% of %s", v,
				     isc_verdict_class_is_job(cls) ? "the job's time"
				     : isc_verdict_class_is_gpu(cls)
					     ? (judged_iterations(root, "gpu") ? "the GPU's time inside the steady iterations"
									       : "the GPU span")
				     : judged_iterations(root, "cpu") ? "traced time inside iterations" : "traced time");
		sep = ", ";
	}
	const char *fid = isc_doc_str(root, "verdict.finding", NULL);
	if (fid) {
		isc_rep_put(m, sep);
		isc_rep_put(m, "finding ");
		isc_rep_code(m, fid);
		sep = ", ";
	}
	isc_rep_put(m, *sep == ',' ? ")\n\n" : "\n\n");
	const cJSON *x;
	cJSON_ArrayForEach(x, isc_doc_arr(root, "verdict.limits")) {
		isc_rep_put(m, "Confidence bound: ");
		isc_rep_md(m, isc_doc_str(x, "reason", "?"));
		isc_rep_putf(m, " (x %.2f).\n\n", isc_doc_num(x, "factor", 1));
	}
	cJSON_ArrayForEach(x, isc_doc_arr(root, "verdict.missing")) {
		isc_rep_put(m, "Not chosen for want of evidence: ");
		isc_rep_code(m, isc_doc_str(x, "class", "?"));
		isc_rep_put(m, " needs ");
		isc_rep_md(m, isc_doc_str(x, "what", "?"));
		isc_rep_put(m, "; to get it, ");
		isc_rep_md(m, isc_doc_str(x, "how", "?"));
		isc_rep_put(m, ".\n\n");
	}
}

/*
 * The run's shape, before any bottleneck (issue 18): one bold line when the
 * run failed, was killed, was cut, or is a flight-recorder window; nothing
 * for a run that completed.  Returns true when it wrote the line.
 */
static bool run_line(struct isc_rep *m, const cJSON *root)
{
	const char *outcome = isc_doc_str(root, "run.outcome", NULL);
	const cJSON *x = isc_doc_get(root, "run.exception");
	char b1[64], b2[64], b3[64];
	static const char *const shapes[] = { "failed", "killed", "truncated", "window" };
	size_t i = 0;
	while (outcome && i < sizeof(shapes) / sizeof(shapes[0]) && strcmp(outcome, shapes[i]))
		i++;
	if (!outcome || i == sizeof(shapes) / sizeof(shapes[0])) /* completed, or not ours to state */
		return false;
	isc_rep_put(m, "**");
	if (!strcmp(outcome, "failed")) {
		isc_rep_put(m, "The run failed");
		if (cJSON_IsObject(x)) {
			isc_rep_put(m, ": ");
			isc_rep_code(m, isc_doc_str(x, "type", "?"));
			if (*isc_doc_str(x, "message", "")) {
				isc_rep_put(m, " (");
				isc_rep_md(m, isc_doc_str(x, "message", ""));
				isc_rep_put(m, ")");
			}
			isc_rep_put(m, " raised in ");
			isc_rep_code(m, isc_doc_str(x, "function", "?"));
			isc_rep_put(m, " (");
			isc_rep_md(m, isc_doc_str(x, "file", "?"));
			isc_rep_putf(m, ":%.0f)", isc_doc_num(x, "line", 0));
		}
		isc_rep_putf(m, ", exit status %s, after %s.", isc_rep_field(b1, sizeof(b1), root, "run.exit_status", 'i'),
			     isc_rep_field(b2, sizeof(b2), root, "summary.wall_ns", 'n'));
	} else if (!strcmp(outcome, "killed")) {
		isc_rep_putf(m, "The workload was killed by signal %s (exit status %s) after %s.",
			     isc_rep_field(b1, sizeof(b1), root, "run.signal", 'i'), isc_rep_field(b2, sizeof(b2), root, "run.exit_status", 'i'),
			     isc_rep_field(b3, sizeof(b3), root, "summary.wall_ns", 'n'));
	} else if (!strcmp(outcome, "truncated")) {
		isc_rep_put(m, "The recording was cut short (no end record: the recorder was killed, or the trace was "
			       "truncated): this report covers what was written.");
	} else if (!strcmp(outcome, "window")) {
		isc_rep_putf(m, "A flight recording: this report covers the last %s of the run.",
			     isc_rep_field(b1, sizeof(b1), root, "run.window_ns", 'n'));
	}
	isc_rep_put(m, "**\n\n");
	return true;
}

/*
 * The first line: verdict.headline's parts as the rules worded them (our
 * text escaped, names as code spans, locations in parentheses), else
 * verdict.sentence (a document from before the headline), in bold.
 */
static void headline(struct isc_rep *m, const cJSON *root)
{
	const char *cls = isc_doc_str(root, "verdict.class", "unknown");
	const char *sentence = isc_doc_str(root, "verdict.sentence", NULL);
	const cJSON *parts = isc_doc_arr(root, "verdict.headline"), *p;
	isc_rep_put(m, "**");
	if (cJSON_GetArraySize(parts) > 0) {
		cJSON_ArrayForEach(p, parts) {
			const char *file;
			double line;
			if (isc_doc_str(p, "code", NULL))
				isc_rep_code(m, isc_doc_str(p, "code", NULL));
			else if (isc_doc_loc(p, &file, &line))
				isc_rep_location(m, p, true);
			else
				isc_rep_md(m, isc_doc_str(p, "text", ""));
		}
	} else if (sentence) {
		isc_rep_md(m, sentence);
	} else {
		isc_rep_put(m, "No traced function time was recorded: is the workload a Python program run under iscope-record?");
	}
	isc_rep_put(m, "**\n\n");
	verdict_line(m, root, cls);
	char b1[64], b2[64];
	const char *sc = isc_doc_str(root, "iterations.name", NULL);
	isc_rep_putf(m, "Wall time %s", isc_rep_field(b1, sizeof(b1), root, "summary.wall_ns", 'n'));
	if (sc && isc_doc_num(root, "iterations.count", 0) > 0) {
		isc_rep_putf(m, ", %.0f iterations of ", isc_doc_num(root, "iterations.count", 0));
		isc_rep_code(m, sc);
		isc_rep_putf(m, ", median %s", isc_rep_field(b2, sizeof(b2), root, "iterations.latency_ns.p50", 'n'));
	}
	isc_rep_put(m, ".\n");
	double startup = 0, wall = isc_doc_num(root, "summary.wall_ns", 0);
	if (isc_doc_have(root, "run.startup_ns", &startup) && startup > 0 && wall > 0) {
		isc_rep_putf(m, "\nStart-up (imports and initialization) took %s %s, %.0f %% of the wall time.\n",
			     isc_rep_field(b1, sizeof(b1), root, "run.startup_ns", 'n'),
			     isc_doc_num(root, "iterations.count", 0) > 0 ? "before the first iteration" : "in the import machinery",
			     100 * startup / wall);
	}
	const cJSON *xc = isc_doc_get(root, "run.exception");
	if (cJSON_IsObject(xc) && !cJSON_IsTrue(isc_doc_get(xc, "main_thread"))) {
		isc_rep_put(m, "\n> An unhandled ");
		isc_rep_code(m, isc_doc_str(xc, "type", "?"));
		isc_rep_put(m, " ended thread ");
		isc_rep_code(m, isc_doc_str(xc, "thread", "?"));
		isc_rep_put(m, " (raised in ");
		isc_rep_code(m, isc_doc_str(xc, "function", "?"));
		isc_rep_put(m, ", ");
		isc_rep_md(m, isc_doc_str(xc, "file", "?"));
		isc_rep_putf(m, ":%.0f).\n", isc_doc_num(xc, "line", 0));
	}
	if (cJSON_IsTrue(isc_doc_get(root, "summary.damaged")))
		isc_rep_put(m, "\n> The input was damaged: this report covers the part that could be read.\n");
	const char *end = isc_doc_get(root, "run") ? "" : isc_doc_str(root, "summary.end_reason", "");
	if (!strcmp(end, "signaled"))
		isc_rep_putf(m, "\n> The workload was killed by signal %s (exit status %s): the trace holds what it "
			"recorded until then.\n",
		     isc_rep_field(b1, sizeof(b1), root, "summary.exit_signal", 'i'),
		     isc_rep_field(b2, sizeof(b2), root, "summary.exit_status", 'i'));
	else if (!strcmp(end, "cut"))
		isc_rep_put(m, "\n> The recording was cut short (no end record: the recorder was killed, or the trace "
		       "was truncated): this report covers what was written.\n");
}

static int render_md(const cJSON *root, struct isc_rep *m)
{
	isc_rep_put(m, "# InferScope report\n\n");
	isc_rep_comparison(m, root); /* first when there is one: did it get slower, and why */
	run_line(m, root);           /* a failure or a window before any bottleneck */
	isc_rep_sec_job(m, root);    /* a distributed job: the job before its detail rank */
	headline(m, root);
	isc_rep_sec_latency(m, root);
	isc_rep_sec_marks(m, root);
	isc_rep_sec_cpu(m, root);
	isc_rep_sec_gpu(m, root);
	isc_rep_sec_memory(m, root);
	isc_rep_sec_findings(m, root);
	isc_rep_sec_suggestions(m, root);
	isc_rep_sec_environment(m, root);
	if (!m->err)
		m->err = isc_buf_put_u8(&m->b, '\0');
	return m->err;
}

int isc_report_render(const cJSON *root, enum isc_report_format f, char **out)
{
	struct isc_rep m = { .html = f == ISC_REPORT_HTML };
	*out = NULL;
	if (!cJSON_IsObject(root)) {
		isc_err_push("not a findings document (not a JSON object)");
		return -EINVAL;
	}
	if (f == ISC_REPORT_FOLDED || f == ISC_REPORT_SPEEDSCOPE)
		return isc_rep_stacks(root, f == ISC_REPORT_SPEEDSCOPE, out);
	if (render_md(root, &m))
		goto oom;
	if (f == ISC_REPORT_MD) {
		*out = (char *)m.b.data;
		return 0;
	}
	struct isc_rep h = { .charts = 0 };
	isc_rep_html_page(&h, (const char *)m.b.data);
	isc_buf_free(&m.b);
	if (h.err || isc_buf_put_u8(&h.b, '\0')) {
		isc_buf_free(&h.b);
		goto oom;
	}
	*out = (char *)h.b.data;
	return 0;
oom:
	isc_buf_free(&m.b);
	isc_err_push("out of memory");
	return -ENOMEM;
}
