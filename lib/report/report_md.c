/*
 * report_md.c - findings JSON -> Markdown report; for -f html the same
 * Markdown, with SVG charts in place of their tables, goes through
 * report_html.c.
 *
 * Layout, in this order: title; the headline (one bold sentence: where the
 * time goes, the number that shows it, the function to look at with
 * file:line); the verdict line; then the sections "End-to-end latency",
 * "CPU", "GPU", "Memory", "Findings", "Suggestions", "Environment" (titles
 * scripts rely on).  Every field may be missing: it shows as "n/a" or its
 * line is left out.
 *
 * Escaping: every string that came from the workload goes through
 * isc_md_escape() (tables, prose) or code_span() (prose only, and only for
 * strings with nothing a renderer could misread), never raw.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* `s` when s holds nothing a renderer could misread, else the escaped text. */
static void code_span(struct isc_rep *m, const char *s)
{
	bool plain = *s != '\0' && s[0] != ' ' && s[strlen(s) - 1] != ' ';
	for (const unsigned char *p = (const unsigned char *)s; *p && plain; p++)
		if (*p < 0x20 || *p == 0x7f || strchr("`<>|&\\$", *p))
			plain = false;
	if (!plain) {
		isc_rep_md(m, s);
		return;
	}
	isc_rep_put(m, "`");
	isc_rep_put(m, s);
	isc_rep_put(m, "`");
}

/* Field at path formatted by kind: 'n' ns, 'b' bytes, 'p' percent, 'i' integer, 'r' rate. */
static const char *field(char *buf, size_t cap, const cJSON *o, const char *path, char kind)
{
	double v;
	/* a duration or a size below 0 is no measurement (a hand-edited document) */
	if (!isc_doc_have(o, path, &v) || !isfinite(v) || ((kind == 'n' || kind == 'b') && v < 0)) {
		snprintf(buf, cap, "n/a");
		return buf;
	}
	bool big = fabs(v) >= ISC_REP_FIXED_MAX;
	switch (kind) {
	case 'n': return isc_rep_fmt_ns(buf, cap, v);
	case 'b': return isc_rep_fmt_bytes(buf, cap, v);
	case 'p': snprintf(buf, cap, big ? "%.3e %%" : "%.1f %%", v); return buf;
	case 'r': snprintf(buf, cap, big ? "%.3e/s" : "%.1f/s", v); return buf;
	case 'f': snprintf(buf, cap, big ? "%.3e" : "%.2f", v); return buf; /* a mean count */
	default: snprintf(buf, cap, big ? "%.3e" : "%.0f", v); return buf;
	}
}

/* "(file:line)" / "(file)" escaped, nothing when file is empty. */
static void location(struct isc_rep *m, const cJSON *fn, bool parens)
{
	const char *file = isc_doc_str(fn, "file", "");
	double line = isc_doc_num(fn, "line", 0);
	if (!*file)
		return;
	isc_rep_put(m, parens ? "(" : "");
	isc_rep_md(m, file);
	if (line > 0)
		isc_rep_putf(m, ":%.0f", line);
	isc_rep_put(m, parens ? ")" : "");
}

/*
 * Was the verdict's finding judged on the time inside iterations
 * (findings[].judged_on)?  Then the CPU numbers that back it are
 * cpu.in_iterations' and cpu.top_functions_in_scopes.
 */
static bool judged_iterations(const cJSON *root)
{
	const char *id = isc_doc_str(root, "verdict.finding", NULL);
	const cJSON *f;
	cJSON_ArrayForEach(f, isc_doc_arr(root, "findings"))
		if (id && !strcmp(isc_doc_str(f, "id", ""), id))
			return !strcmp(isc_doc_str(f, "judged_on", ""), "iterations") && cJSON_IsObject(isc_doc_get(root, "cpu.in_iterations"));
	return false;
}

/* ---- charts -------------------------------------------------------------- */
static void chart_bars(struct isc_rep *m, const char *title, const char *xlabel, double xmax,
		       const struct isc_rep_bar *bars, size_t n)
{
	isc_rep_put(m, ISC_REP_CHART_BEGIN);
	isc_svg_bars(m, title, xlabel, xmax, bars, n);
	isc_rep_put(m, ISC_REP_CHART_END);
}

/* A series of root.timeseries: key, legend name, colour, per-row aggregate and unit in tables. */
struct series {
	const char *key, *name, *color;
	bool max;  /* tables: the largest value of a row's buckets, else their mean */
	char kind; /* 'c' count (cores, threads), 'p' percent, 'b' bytes */
};

/* "0.00 – 1.20 s" style bounds of a table row, in the unit of the whole run. */
static void time_range(struct isc_rep *m, double a, double b, double span)
{
	double div = span >= 2e9 ? 1e9 : span >= 2e6 ? 1e6 : 1e3;
	const char *u = span >= 2e9 ? "s" : span >= 2e6 ? "ms" : "µs";
	isc_rep_putf(m, "%.2f – %.2f %s", a / div, b / div, u);
}

/*
 * The series over time as a table of (at most) ten rows, each a tenth of
 * the run: mean or max of the buckets with data, and the iterations that
 * started in it.
 */
static void over_time_table(struct isc_rep *m, const struct isc_rep_ts *ts, const struct series *def,
			    const struct isc_rep_line *l, size_t nl, const struct isc_rep_span *sp, size_t nsp)
{
	size_t rows = ts->n < 10 ? ts->n : 10;
	double span = (double)ts->n * ts->bucket_ns;
	isc_rep_put(m, "| Part of run | Time |");
	for (size_t k = 0; k < nl; k++) {
		isc_rep_put(m, " ");
		isc_rep_put(m, l[k].name);
		isc_rep_put(m, def[k].max ? " (max) |" : " (mean) |");
	}
	isc_rep_put(m, nsp ? " Iterations started |\n|---|---|" : "\n|---|---|");
	for (size_t k = 0; k < nl + (nsp > 0); k++)
		isc_rep_put(m, "---:|");
	isc_rep_put(m, "\n");
	for (size_t r = 0; r < rows; r++) {
		size_t a = r * ts->n / rows, b = (r + 1) * ts->n / rows;
		double ta = ts->t0_ns + (double)a * ts->bucket_ns, tb = ts->t0_ns + (double)b * ts->bucket_ns;
		isc_rep_putf(m, "| %.0f–%.0f %% | ", 100.0 * (double)a / (double)ts->n, 100.0 * (double)b / (double)ts->n);
		time_range(m, ta - ts->t0_ns, tb - ts->t0_ns, span);
		isc_rep_put(m, " |");
		for (size_t k = 0; k < nl; k++) {
			double acc = 0, cnt = 0;
			char buf[64];
			for (size_t i = a; i < b; i++)
				if (!isnan(l[k].v[i])) {
					acc = def[k].max ? fmax(acc, l[k].v[i]) : acc + l[k].v[i];
					cnt++;
				}
			if (!cnt) {
				isc_rep_put(m, " n/a |");
				continue;
			}
			acc = def[k].max ? acc : acc / cnt;
			if (def[k].kind == 'b')
				isc_rep_putf(m, " %s |", isc_rep_fmt_bytes(buf, sizeof(buf), acc));
			else
				isc_rep_putf(m, def[k].kind == 'p' ? " %.1f %% |" : " %.2f |", acc);
		}
		if (nsp) {
			size_t it = 0, warm = 0;
			for (size_t i = 0; i < nsp; i++)
				if (sp[i].start_ns >= ta && (sp[i].start_ns < tb || (r + 1 == rows && sp[i].start_ns <= tb))) {
					it++;
					warm += sp[i].warmup;
				}
			isc_rep_putf(m, warm ? " %zu (%zu warm-up) |" : " %zu |", it, warm);
		}
		isc_rep_put(m, "\n");
	}
}

/*
 * "### heading" and the series of root.timeseries named by def that have
 * data: a chart in the HTML page, a table in Markdown.  Nothing when none
 * has data.
 */
static void over_time(struct isc_rep *m, const cJSON *root, const char *heading, const struct series *def,
		      size_t ndef, enum isc_rep_unit unit)
{
	enum { MAXL = 4 };
	struct isc_rep_ts ts;
	struct isc_rep_line l[MAXL];
	struct series d[MAXL];
	struct isc_rep_span *sp = NULL;
	double *v = NULL;
	size_t nl = 0, nsp = 0;
	if (!isc_rep_ts_get(root, &ts))
		return;
	if (!(v = malloc(ts.n * MAXL * sizeof(*v))) || !(sp = malloc(ISC_REP_MAX_SPANS * sizeof(*sp)))) {
		m->err = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < ndef && k < MAXL; k++)
		if (isc_rep_series(root, &ts, def[k].key, v + nl * ts.n)) {
			l[nl] = (struct isc_rep_line){ def[k].name, v + nl * ts.n, def[k].color };
			d[nl++] = def[k];
		}
	if (!nl)
		goto out;
	nsp = isc_rep_spans(root, sp);
	isc_rep_putf(m, "\n### %s\n", heading);
	if (m->html) {
		isc_rep_put(m, ISC_REP_CHART_BEGIN);
		isc_svg_timeseries(m, heading, &ts, l, nl, unit, sp, nsp);
		isc_rep_put(m, ISC_REP_CHART_END);
	} else {
		isc_rep_put(m, "\n");
		over_time_table(m, &ts, d, l, nl, sp, nsp);
	}
out:
	free(v);
	free(sp);
}

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

/* A breakdown in percent as a stacked bar chart segment (NAN when missing). */
static struct isc_rep_seg pct_seg(const cJSON *o, const char *path, const char *name, const char *color)
{
	double v;
	if (!isc_doc_have(o, path, &v) || !(v >= 0))
		v = NAN;
	return (struct isc_rep_seg){ name, fmin(v, 100), color };
}

static bool any_seg(const struct isc_rep_bar *b)
{
	for (size_t i = 0; i < b->nseg; i++)
		if (!isnan(b->seg[i].value))
			return true;
	return false;
}

/* cpu.split as one stacked bar (HTML only, after its table). */
static void cpu_split_chart(struct isc_rep *m, const cJSON *root)
{
	struct isc_rep_bar bar = { "Traced time",
				   { pct_seg(root, "cpu.split.python_pct", "Python interpreter", "#3b75af"),
				     pct_seg(root, "cpu.split.ops_pct", "torch ops", "#ef8636"),
				     pct_seg(root, "cpu.split.off_cpu_pct", "off-CPU waiting", "#9a9a9a") },
				   3, NULL };
	if (isc_doc_get(root, "cpu.split.torch_ops_pct")) { /* older documents: all C calls as torch ops */
		bar.seg[1] = pct_seg(root, "cpu.split.torch_ops_pct", "torch ops", "#ef8636");
		bar.seg[2] = pct_seg(root, "cpu.split.other_c_pct", "other C code", "#8c6bb1");
		bar.seg[3] = pct_seg(root, "cpu.split.off_cpu_pct", "off-CPU waiting", "#9a9a9a");
		bar.nseg = 4;
	}
	if (m->html && any_seg(&bar))
		chart_bars(m, "Where the traced CPU time goes", "Share of traced time (%)", 100, &bar, 1);
}

/* gpu.devices[].temporal_breakdown as one stacked bar a device (HTML only). */
static void gpu_breakdown_chart(struct isc_rep *m, const cJSON *root)
{
	enum { MAXD = 16 };
	struct isc_rep_bar bar[MAXD];
	char label[MAXD][300]; /* the chart cuts it shorter, at a character boundary */
	size_t n = 0;
	const cJSON *dev;
	if (!m->html)
		return;
	cJSON_ArrayForEach(dev, isc_doc_arr(root, "gpu.devices")) {
		if (n == MAXD)
			break;
		const char *name = isc_doc_str(dev, "name", NULL);
		char id[32];
		snprintf(label[n], sizeof(label[n]), "GPU %s%s%s", field(id, sizeof(id), dev, "id", 'i'),
			 name ? ": " : "", name ? name : "");
		bar[n] = (struct isc_rep_bar){ label[n],
					       { pct_seg(dev, "temporal_breakdown.compute_pct", "compute", "#2e8b57"),
						 pct_seg(dev, "temporal_breakdown.non_compute_pct", "non-compute",
							 "#e0a030"),
						 pct_seg(dev, "temporal_breakdown.idle_pct", "idle", "#c8c8c8") },
					       3, NULL };
		n += any_seg(&bar[n]);
	}
	if (n)
		chart_bars(m, "GPU time breakdown", "Share of the device's span (%)", 100, bar, n);
}

/* ---- sections ----------------------------------------------------------- */
/* "Verdict: **class** (confidence, share explained, evidence quality, the finding behind it)". */

/*
 * The verdict line.  Its share names its whole: the CPU classes' shares are
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
			isc_rep_putf(m, "explains %.0f %% of %s", v, isc_verdict_class_is_gpu(cls) ? "the GPU span"
						 : judged_iterations(root) ? "traced time inside iterations" : "traced time");
		sep = ", ";
	}
	const char *fid = isc_doc_str(root, "verdict.finding", NULL);
	if (fid) {
		isc_rep_put(m, sep);
		isc_rep_put(m, "finding ");
		code_span(m, fid);
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
		code_span(m, isc_doc_str(x, "class", "?"));
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
			code_span(m, isc_doc_str(x, "type", "?"));
			if (*isc_doc_str(x, "message", "")) {
				isc_rep_put(m, " (");
				isc_rep_md(m, isc_doc_str(x, "message", ""));
				isc_rep_put(m, ")");
			}
			isc_rep_put(m, " raised in ");
			code_span(m, isc_doc_str(x, "function", "?"));
			isc_rep_put(m, " (");
			isc_rep_md(m, isc_doc_str(x, "file", "?"));
			isc_rep_putf(m, ":%.0f)", isc_doc_num(x, "line", 0));
		}
		isc_rep_putf(m, ", exit status %s, after %s.", field(b1, sizeof(b1), root, "run.exit_status", 'i'),
			     field(b2, sizeof(b2), root, "summary.wall_ns", 'n'));
	} else if (!strcmp(outcome, "killed")) {
		isc_rep_putf(m, "The workload was killed by signal %s (exit status %s) after %s.",
			     field(b1, sizeof(b1), root, "run.signal", 'i'), field(b2, sizeof(b2), root, "run.exit_status", 'i'),
			     field(b3, sizeof(b3), root, "summary.wall_ns", 'n'));
	} else if (!strcmp(outcome, "truncated")) {
		isc_rep_put(m, "The recording was cut short (no end record: the recorder was killed, or the trace was "
			       "truncated): this report covers what was written.");
	} else if (!strcmp(outcome, "window")) {
		isc_rep_putf(m, "A flight recording: this report covers the last %s of the run.",
			     field(b1, sizeof(b1), root, "run.window_ns", 'n'));
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
				code_span(m, isc_doc_str(p, "code", NULL));
			else if (isc_doc_loc(p, &file, &line))
				location(m, p, true);
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
	isc_rep_putf(m, "Wall time %s", field(b1, sizeof(b1), root, "summary.wall_ns", 'n'));
	if (sc && isc_doc_num(root, "iterations.count", 0) > 0) {
		isc_rep_putf(m, ", %.0f iterations of ", isc_doc_num(root, "iterations.count", 0));
		code_span(m, sc);
		isc_rep_putf(m, ", median %s", field(b2, sizeof(b2), root, "iterations.latency_ns.p50", 'n'));
	}
	isc_rep_put(m, ".\n");
	double startup = 0, wall = isc_doc_num(root, "summary.wall_ns", 0);
	if (isc_doc_have(root, "run.startup_ns", &startup) && startup > 0 && wall > 0) {
		isc_rep_putf(m, "\nStart-up (imports and initialization) took %s %s, %.0f %% of the wall time.\n",
			     field(b1, sizeof(b1), root, "run.startup_ns", 'n'),
			     isc_doc_num(root, "iterations.count", 0) > 0 ? "before the first iteration" : "in the import machinery",
			     100 * startup / wall);
	}
	const cJSON *xc = isc_doc_get(root, "run.exception");
	if (cJSON_IsObject(xc) && !cJSON_IsTrue(isc_doc_get(xc, "main_thread"))) {
		isc_rep_put(m, "\n> An unhandled ");
		code_span(m, isc_doc_str(xc, "type", "?"));
		isc_rep_put(m, " ended thread ");
		code_span(m, isc_doc_str(xc, "thread", "?"));
		isc_rep_put(m, " (raised in ");
		code_span(m, isc_doc_str(xc, "function", "?"));
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
		     field(b1, sizeof(b1), root, "summary.exit_signal", 'i'),
		     field(b2, sizeof(b2), root, "summary.exit_status", 'i'));
	else if (!strcmp(end, "cut"))
		isc_rep_put(m, "\n> The recording was cut short (no end record: the recorder was killed, or the trace "
		       "was truncated): this report covers what was written.\n");
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
		isc_rep_md(m, isc_doc_str(w, "message", "?"));
		double pid, n;
		if (isc_doc_have(w, "pid", &pid) && pid > 0)
			isc_rep_putf(m, " (process %s)", field(b, 64, w, "pid", 'i'));
		if (isc_doc_have(w, "count", &n) && n > 1)
			isc_rep_putf(m, " (%s times)", field(b, 64, w, "count", 'i'));
		isc_rep_put(m, "\n");
	}
	double total;
	if (isc_doc_have(root, "summary.warnings_total", &total) && total > listed) {
		char b[64];
		isc_rep_putf(m, "- … %s warning records in all\n", field(b, 64, root, "summary.warnings_total", 'i'));
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
			     field(b[1], 64, root, "recording.overhead_pct", 'p'));
		double slow;
		if (isc_doc_have(root, "recording.traced_slowdown", &slow) && slow >= 1.05 && slow < 1e6)
			isc_rep_putf(m, ": the traced code ran about %.1fx as long as it would without recording, "
					"estimated; `--python=sample` costs far less", slow);
		isc_rep_put(m, "); ");
		if (cJSON_IsTrue(isc_doc_get(root, "recording.compensated")))
			isc_rep_putf(m, "figures corrected (%s taken out of self times, %s out of the iteration "
					"latencies).\n",
				     field(b[1], 64, root, "recording.overhead_ns", 'n'),
				     field(b[2], 64, root, "recording.iteration_overhead_removed_ns", 'n'));
		else
			isc_rep_put(m, "figures not corrected (--no-compensation).\n");
	}
	isc_rep_sampler_cost(m, root);
	const cJSON *ts = isc_doc_arr(root, "recording.threads_with_drops"), *t;
	if (!cJSON_GetArraySize(ts))
		return;
	isc_rep_put(m, "\nEvents dropped per thread:");
	int i = 0;
	cJSON_ArrayForEach(t, ts) {
		isc_rep_put(m, i++ ? "; " : " ");
		isc_rep_md(m, isc_doc_str(t, "name", "?"));
		isc_rep_putf(m, " (process %s, thread %s): %s", field(b[0], 64, t, "pid", 'i'),
			     field(b[1], 64, t, "tid", 'i'), field(b[2], 64, t, "dropped_events", 'i'));
		/* of the events the thread made: kept plus dropped */
		isc_rep_putf(m, " of %.0f (%s)", isc_doc_num(t, "events", 0) + isc_doc_num(t, "dropped_events", 0),
			     field(b[0], 64, t, "dropped_pct", 'p'));
	}
	isc_rep_put(m, ".\n");
}

static void sec_latency(struct isc_rep *m, const cJSON *root)
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
		isc_rep_putf(m, " | %s | %s | %s | %s | %s | %s | %s | %s |\n", field(b[0], 64, root, "iterations.count", 'i'),
		     field(b[1], 64, root, "iterations.warmup_excluded", 'i'),
		     field(b[2], 64, root, "iterations.latency_ns.p50", 'n'),
		     field(b[3], 64, root, "iterations.latency_ns.p90", 'n'),
		     field(b[4], 64, root, "iterations.latency_ns.p99", 'n'),
		     field(b[5], 64, root, "iterations.latency_ns.mean", 'n'),
		     field(b[6], 64, root, "iterations.latency_ns.min", 'n'),
		     field(b[7], 64, root, "iterations.latency_ns.max", 'n'));
		isc_rep_put(m, "\n95 % confidence intervals (distribution-free, from order statistics):");
		static const char *const q[] = { "p50", "p90", "p99" };
		for (int i = 0; i < 3; i++) {
			char lo[64], hi[64];
			snprintf(lo, sizeof(lo), "iterations.latency_ci95_ns.%s.low", q[i]);
			snprintf(hi, sizeof(hi), "iterations.latency_ci95_ns.%s.high", q[i]);
			double v;
			if (isc_doc_have(root, lo, &v) && isc_doc_have(root, hi, &v))
				isc_rep_putf(m, " %s %s – %s%s", q[i], field(b[0], 64, root, lo, 'n'),
				     field(b[1], 64, root, hi, 'n'), i < 2 ? ";" : ".");
			else
				isc_rep_putf(m, " %s needs more iterations%s", q[i], i < 2 ? ";" : ".");
		}
		isc_rep_put(m, "\n");
		const char *rule = isc_doc_str(root, "iterations.rule", NULL);
		if (rule) {
			isc_rep_put(m, "\nRule: ");
			isc_rep_md(m, rule);
			isc_rep_put(m, ".\n");
		}
	}
	latency_histogram(m, root);
	isc_rep_putf(m, "\nWall time %s; %s events recorded, %s dropped.\n", field(b[0], 64, root, "summary.wall_ns", 'n'),
	     field(b[1], 64, root, "summary.events", 'i'), field(b[2], 64, root, "summary.dropped_events", 'i'));
	recording_cost(m, root);
	recording_notes(m, root);
}

/* A function table; the total column only when with_total. */
static void fn_table(struct isc_rep *m, const cJSON *fns, bool with_total)
{
	char b[4][64];
	const cJSON *fn;
	int i = 0;
	isc_rep_put(m, with_total ? "| # | Function | Kind | Location | Calls | Self | Total | Self % |\n"
			    "|---:|---|---|---|---:|---:|---:|---:|\n"
			  : "| # | Function | Kind | Location | Calls | Self | Self % |\n"
			    "|---:|---|---|---|---:|---:|---:|\n");
	cJSON_ArrayForEach(fn, fns) {
		isc_rep_putf(m, "| %d | ", ++i);
		isc_rep_md(m, isc_doc_str(fn, "name", "?"));
		isc_rep_put(m, " | ");
		isc_rep_md(m, isc_doc_str(fn, "kind", "?"));
		isc_rep_put(m, " | ");
		location(m, fn, false);
		isc_rep_putf(m, " | %s | %s |", field(b[0], 64, fn, "calls", 'i'), field(b[1], 64, fn, "self_ns", 'n'));
		if (with_total)
			isc_rep_putf(m, " %s |", field(b[2], 64, fn, "total_ns", 'n'));
		isc_rep_putf(m, " %s |\n", field(b[3], 64, fn, "self_pct", 'p'));
	}
}

/* cpu.off_cpu_reasons as a table: why the traced threads were blocked. */
static void off_cpu_reasons(struct isc_rep *m, const cJSON *root)
{
	const cJSON *r, *t;
	char b[3][64];
	if (cJSON_GetArraySize(isc_doc_arr(root, "cpu.off_cpu_reasons")) == 0)
		return;
	isc_rep_put(m, "\nWhy the traced threads were blocked (thread samples, what each waited in):\n\n");
	isc_rep_put(m, "| Reason | Blocked | Share | Inside torch ops | Python functions |\n|---|---:|---:|---:|---|\n");
	cJSON_ArrayForEach(r, isc_doc_arr(root, "cpu.off_cpu_reasons")) {
		isc_rep_put(m, "| ");
		isc_rep_md(m, isc_doc_str(r, "reason", "?"));
		isc_rep_putf(m, " | %s | %s | %s | ", field(b[0], 64, r, "ns", 'n'), field(b[1], 64, r, "pct", 'p'),
			     field(b[2], 64, r, "in_torch_ops_ns", 'n'));
		int n = 0;
		cJSON_ArrayForEach(t, isc_doc_arr(r, "top")) {
			if (n++ == 3)
				break;
			if (n > 1)
				isc_rep_put(m, ", ");
			code_span(m, isc_doc_str(t, "name", "?"));
		}
		isc_rep_put(m, " |\n");
	}
}

/* cpu.thread_pools as a table: every thread, traced or not, by pool. */
static void thread_pools(struct isc_rep *m, const cJSON *root)
{
	const cJSON *p;
	char b[4][64];
	if (cJSON_GetArraySize(isc_doc_arr(root, "cpu.thread_pools")) == 0)
		return;
	isc_rep_put(m, "\nThreads by pool (traced or not; untraced threads grouped by the futex they wait on):\n\n");
	isc_rep_put(m, "| Pool | Traced | Threads | CPU | Runnable (mean) |\n|---|---|---:|---:|---:|\n");
	cJSON_ArrayForEach(p, isc_doc_arr(root, "cpu.thread_pools")) {
		isc_rep_put(m, "| ");
		isc_rep_md(m, isc_doc_str(p, "name", "?"));
		if (isc_doc_str(p, "futex", NULL)) {
			isc_rep_put(m, " (futex ");
			isc_rep_md(m, isc_doc_str(p, "futex", ""));
			isc_rep_put(m, ")");
		}
		isc_rep_putf(m, " | %s | %s | %s (%s) | %s |\n", cJSON_IsTrue(isc_doc_get(p, "traced")) ? "yes" : "no",
			     field(b[0], 64, p, "threads", 'i'), field(b[1], 64, p, "cpu_ns", 'n'),
			     field(b[2], 64, p, "cpu_pct", 'p'), field(b[3], 64, p, "runnable_mean", 'f'));
	}
}

static void sec_cpu(struct isc_rep *m, const cJSON *root)
{
	char b[8][64];
	isc_rep_put(m, "\n## CPU\n\n");
	isc_rep_putf(m, "Traced time %s on %s traced threads, split into:\n\n", field(b[0], 64, root, "cpu.split.traced_ns", 'n'),
	     field(b[1], 64, root, "summary.traced_threads", 'i'));
	if (isc_doc_get(root, "cpu.split.torch_ops_pct")) {
		/* other C code: builtins, other extensions, imports */
		isc_rep_put(m, "| Python interpreter | torch ops | other C code | off-CPU waiting |\n|---:|---:|---:|---:|\n");
		isc_rep_putf(m, "| %s (%s) | %s (%s) | %s (%s) | %s (%s) |\n", field(b[0], 64, root, "cpu.split.python_ns", 'n'),
			     field(b[1], 64, root, "cpu.split.python_pct", 'p'), field(b[2], 64, root, "cpu.split.torch_ops_ns", 'n'),
			     field(b[3], 64, root, "cpu.split.torch_ops_pct", 'p'), field(b[4], 64, root, "cpu.split.other_c_ns", 'n'),
			     field(b[5], 64, root, "cpu.split.other_c_pct", 'p'), field(b[6], 64, root, "cpu.split.off_cpu_ns", 'n'),
			     field(b[7], 64, root, "cpu.split.off_cpu_pct", 'p'));
	} else {
		isc_rep_put(m, "| Python interpreter | torch ops | off-CPU waiting |\n|---:|---:|---:|\n");
		isc_rep_putf(m, "| %s (%s) | %s (%s) | %s (%s) |\n", field(b[0], 64, root, "cpu.split.python_ns", 'n'),
			     field(b[1], 64, root, "cpu.split.python_pct", 'p'), field(b[2], 64, root, "cpu.split.ops_ns", 'n'),
			     field(b[3], 64, root, "cpu.split.ops_pct", 'p'), field(b[4], 64, root, "cpu.split.off_cpu_ns", 'n'),
			     field(b[5], 64, root, "cpu.split.off_cpu_pct", 'p'));
	}
	cpu_split_chart(m, root);
	if (!cJSON_IsTrue(isc_doc_get(root, "cpu.split.off_cpu_measured")))
		isc_rep_put(m, "\nOff-CPU time was not measured (no CPU samples of the traced threads).\n");
	off_cpu_reasons(m, root);
	thread_pools(m, root);
	isc_rep_putf(m, "\nContext switches: %s voluntary, %s involuntary.\n",
	     field(b[0], 64, root, "cpu.context_switches.voluntary_per_s", 'r'),
	     field(b[1], 64, root, "cpu.context_switches.involuntary_per_s", 'r'));
	static const struct series cpu_series[] = {
		{ "cpu_cores", "CPU cores used", "#3b75af", false, 'c' },
		{ "runnable_threads", "runnable threads", "#ef8636", false, 'c' },
	};
	over_time(m, root, "CPU use over time", cpu_series, 2, ISC_REP_UNIT_CORES);

	isc_rep_put(m, "\n### Top functions by self time\n\n");
	if (!cJSON_GetArraySize(isc_doc_arr(root, "cpu.top_functions"))) {
		isc_rep_put(m, "No function spans recorded.\n");
	} else {
		fn_table(m, isc_doc_arr(root, "cpu.top_functions"), true);
		isc_rep_put(m, "\nSelf % is of the traced time; total time counts a recursive function once (its outermost "
		       "call).\n");
		if (isc_doc_get(root, "python.samples"))
			isc_rep_put(m, "\nFrom stack samples: calls are not counted (n/a); an op row is the time in C "
				       "code called from one Python line.\n");
	}
	isc_rep_python_samples(m, root);
	if (cJSON_GetArraySize(isc_doc_arr(root, "cpu.top_functions_in_scopes"))) {
		isc_rep_put(m, "\n### Top functions inside iterations\n\nThe same while a `scope` was open (start-up and "
		       "imports left out); self % is of the ");
		isc_rep_put(m, field(b[0], 64, root, "cpu.scoped_ns", 'n'));
		isc_rep_put(m, " spent inside scopes.\n\n");
		fn_table(m, isc_doc_arr(root, "cpu.top_functions_in_scopes"), false);
	}

	isc_rep_put(m, "\n### Threads\n");
	const cJSON *p, *t;
	cJSON_ArrayForEach(p, isc_doc_arr(root, "processes")) {
		isc_rep_putf(m, "\nProcess %s", field(b[0], 64, p, "pid", 'i'));
		if (isc_doc_have(p, "ppid", &(double){ 0 }))
			isc_rep_putf(m, " (parent %s)", field(b[0], 64, p, "ppid", 'i'));
		const char *cmd = isc_doc_str(p, "command", "");
		if (*cmd) {
			isc_rep_put(m, ": ");
			isc_rep_md(m, cmd);
		}
		isc_rep_putf(m, ". CPU %s", field(b[0], 64, p, "cpu_ns", 'n'));
		if (isc_doc_have(p, "exit_status", &(double){ 0 }))
			isc_rep_putf(m, ", exit status %s", field(b[0], 64, p, "exit_status", 'i'));
		isc_rep_putf(m, ", context switches %s voluntary, %s involuntary.\n\n",
		     field(b[0], 64, p, "context_switches.voluntary_per_s", 'r'),
		     field(b[1], 64, p, "context_switches.involuntary_per_s", 'r'));
		isc_rep_put(m, "| TID | Name | CPU | Traced | Events | Python | Ops | Off-CPU |\n");
		isc_rep_put(m, "|---:|---|---:|---|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(t, isc_doc_arr(p, "threads")) {
			isc_rep_putf(m, "| %s | ", field(b[0], 64, t, "tid", 'i'));
			isc_rep_md(m, isc_doc_str(t, "name", ""));
			isc_rep_putf(m, " | %s | %s | %s | %s | %s | %s |\n", field(b[0], 64, t, "cpu_ns", 'n'),
			     cJSON_IsTrue(isc_doc_get(t, "traced")) ? "yes" : "no", field(b[1], 64, t, "events", 'i'),
			     field(b[2], 64, t, "python_ns", 'n'), field(b[3], 64, t, "ops_ns", 'n'),
			     field(b[4], 64, t, "off_cpu_ns", 'n'));
		}
	}
}

/* s escaped, cut to about max bytes (at a UTF-8 boundary) with an ellipsis: kernel names run to kilobytes. */
static void esc_cut(struct isc_rep *m, const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n <= max) {
		isc_rep_md(m, s);
		return;
	}
	while (max > 0 && ((unsigned char)s[max] & 0xc0) == 0x80)
		max--;
	char *c = strndup(s, max);
	if (!c) {
		m->err = -ENOMEM;
		return;
	}
	isc_rep_md(m, c);
	isc_rep_put(m, "…");
	free(c);
}

/* One row of a GPU name table: "| name | count | time |". */
static void name_rows(struct isc_rep *m, const cJSON *arr, const char *kind)
{
	char b[2][64];
	const cJSON *x;
	cJSON_ArrayForEach(x, arr) {
		isc_rep_putf(m, "| %s | ", kind);
		isc_rep_md(m, isc_doc_str(x, "name", "?"));
		isc_rep_putf(m, " | %s | %s |\n", field(b[0], 64, x, "count", 'i'), field(b[1], 64, x, "total_ns", 'n'));
	}
}

/* The host's functions that overlapped a device's idle gaps. */
static void host_idle_table(struct isc_rep *m, const cJSON *dev)
{
	char b[4][64];
	const cJSON *x;
	int n = cJSON_GetArraySize(isc_doc_arr(dev, "host_during_idle.ops")) +
		cJSON_GetArraySize(isc_doc_arr(dev, "host_during_idle.python"));
	if (!n)
		return;
	isc_rep_putf(m, "\nWhile this GPU sat idle (%s), the host was in:\n\n",
	     field(b[0], 64, dev, "host_during_idle.idle_ns", 'n'));
	isc_rep_put(m, "| Function | Kind | Location | In idle gaps | Self | Of idle time |\n|---|---|---|---:|---:|---:|\n");
	for (int k = 0; k < 2; k++)
		cJSON_ArrayForEach(x, isc_doc_arr(dev, k ? "host_during_idle.python" : "host_during_idle.ops")) {
			isc_rep_put(m, "| ");
			isc_rep_md(m, isc_doc_str(x, "name", "?"));
			isc_rep_put(m, k ? " | python | " : " | op | ");
			location(m, x, false);
			isc_rep_putf(m, " | %s | %s | %s |\n", field(b[1], 64, x, "idle_ns", 'n'),
			     field(b[2], 64, x, "self_idle_ns", 'n'), field(b[3], 64, x, "idle_pct", 'p'));
		}
	isc_rep_put(m, "\nIn idle gaps: time of the span (its outermost call) inside the GPU's idle gaps; self: without "
	       "its children.\n");
}

static void sec_gpu(struct isc_rep *m, const cJSON *root)
{
	char b[8][64];
	const cJSON *dev, *s, *x;
	static const struct series gpu_series[] = {
		{ "gpu_busy_pct", "GPU busy (ops running)", "#2e8b57", false, 'p' },
		{ "gpu_util_pct", "GPU utilization (NVML)", "#8e44ad", false, 'p' },
	};
	isc_rep_put(m, "\n## GPU\n\n");
	if (!cJSON_GetArraySize(isc_doc_arr(root, "gpu.devices"))) {
		size_t before = m->b.len;
		over_time(m, root, "GPU use over time", gpu_series, 2, ISC_REP_UNIT_PCT);
		if (m->b.len == before)
			isc_rep_put(m, "No GPU activity recorded.\n");
		return;
	}
	bool hta = !strcmp(isc_doc_str(root, "gpu.mode", ""), "hta-compat");
	isc_rep_put(m, hta ? "Numbers by HTA's rules (`--hta-compat`: times rounded to whole µs, cuda\\_sync counted as GPU "
		     "time). "
		   : "Exact numbers (ns), with HTA's definitions. ");
	isc_rep_put(m, "ProfilerStep rule: ");
	isc_rep_md(m, isc_doc_str(root, "gpu.step_rule", "n/a"));
	isc_rep_put(m, ".\n");
	over_time(m, root, "GPU use over time", gpu_series, 2, ISC_REP_UNIT_PCT);
	gpu_breakdown_chart(m, root);
	cJSON_ArrayForEach(dev, isc_doc_arr(root, "gpu.devices")) {
		isc_rep_putf(m, "\n### Device %s", field(b[0], 64, dev, "id", 'i'));
		const char *name = isc_doc_str(dev, "name", "");
		if (*name) {
			isc_rep_put(m, ": ");
			isc_rep_md(m, name);
		}
		if (isc_doc_num(dev, "ops", 0) == 0) { /* device memory records only */
			isc_rep_put(m, "\n\nNo GPU ops: device memory records only (below, under Memory).\n");
			continue;
		}
		isc_rep_putf(m, "\n\n%s GPU ops.\n\n", field(b[0], 64, dev, "ops", 'i'));
		static const char *const part[] = { "idle", "compute", "non_compute" };
		isc_rep_put(m, "| Span | Idle | Compute | Non-compute |\n|---:|---:|---:|---:|\n| ");
		isc_rep_put(m, field(b[0], 64, dev, "temporal_breakdown.span_ns", 'n'));
		for (int i = 0; i < 3; i++) { /* 2 decimals, as HTA gives them */
			char path[64];
			double v;
			snprintf(path, sizeof(path), "temporal_breakdown.%s_ns", part[i]);
			isc_rep_putf(m, " | %s", field(b[1], 64, dev, path, 'n'));
			snprintf(path, sizeof(path), "temporal_breakdown.%s_pct", part[i]);
			if (isc_doc_have(dev, path, &v) && isfinite(v))
				isc_rep_putf(m, " (%.2f %%)", v);
		}
		isc_rep_put(m, " |\n");
		isc_rep_put(m, "\nIdle time by stream: host wait (the op's launch call began after the previous op ended), "
		       "kernel wait (gap < 30 µs), other; queue: ops launched and not finished.\n\n");
		isc_rep_put(m, "| Stream | Ops | Host wait | Kernel wait | Other | Queue mean | Queue max |\n"
		       "|---:|---:|---:|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(s, isc_doc_arr(dev, "streams")) {
			double q;
			char qm[32] = "n/a";
			if (isc_doc_have(s, "queue_length.mean", &q))
				snprintf(qm, sizeof(qm), "%.2f", q);
			isc_rep_putf(m, "| %s | %s | %s | %s | %s | %s | %s |\n", field(b[0], 64, s, "id", 'i'),
			     field(b[1], 64, s, "ops", 'i'), field(b[2], 64, s, "idle_breakdown.host_wait_ns", 'n'),
			     field(b[3], 64, s, "idle_breakdown.kernel_wait_ns", 'n'),
			     field(b[4], 64, s, "idle_breakdown.other_ns", 'n'), qm,
			     field(b[5], 64, s, "queue_length.max", 'i'));
		}
		host_idle_table(m, dev);
	}

	isc_rep_put(m, "\n### Top kernels\n\n");
	isc_rep_putf(m, "%s kernels of %s names, %s in all; these cover %s of the time.\n\n",
	     field(b[0], 64, root, "gpu.kernels.count", 'i'), field(b[1], 64, root, "gpu.kernels.distinct", 'i'),
	     field(b[2], 64, root, "gpu.kernels.total_ns", 'n'), field(b[3], 64, root, "gpu.kernels.top_pct", 'p'));
	if (cJSON_GetArraySize(isc_doc_arr(root, "gpu.kernels.top"))) {
		int i = 0;
		isc_rep_put(m, "| # | Kernel | Count | Total | Mean | Min | Max | Share |\n|---:|---|---:|---:|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(x, isc_doc_arr(root, "gpu.kernels.top")) {
			isc_rep_putf(m, "| %d | ", ++i);
			esc_cut(m, isc_doc_str(x, "name", "?"), 120);
			isc_rep_putf(m, " | %s | %s | %s | %s | %s | %s |\n", field(b[0], 64, x, "count", 'i'),
			     field(b[1], 64, x, "total_ns", 'n'), field(b[2], 64, x, "mean_ns", 'n'),
			     field(b[3], 64, x, "min_ns", 'n'), field(b[4], 64, x, "max_ns", 'n'),
			     field(b[5], 64, x, "pct", 'p'));
		}
		if (isc_doc_num(root, "gpu.kernels.others.count", 0) > 0)
			isc_rep_putf(m, "| | %s other names | %s | %s | | | | |\n",
			     field(b[0], 64, root, "gpu.kernels.others.distinct", 'i'),
			     field(b[1], 64, root, "gpu.kernels.others.count", 'i'),
			     field(b[2], 64, root, "gpu.kernels.others.total_ns", 'n'));
	}

	isc_rep_put(m, "\n### Launches\n\n");
	isc_rep_putf(m, "%s launch calls paired with their GPU op; launch delay (op start - call end) median %s, p90 %s, "
		"max %s.\n\n",
	     field(b[0], 64, root, "gpu.launch.launches", 'i'), field(b[1], 64, root, "gpu.launch.delay_ns.p50", 'n'),
	     field(b[2], 64, root, "gpu.launch.delay_ns.p90", 'n'), field(b[3], 64, root, "gpu.launch.delay_ns.max", 'n'));
	isc_rep_put(m, "| GPU op shorter than its launch call | Launch call > 50 µs | Delay > 100 µs | Kernels < 10 µs |\n"
	       "|---:|---:|---:|---:|\n");
	isc_rep_putf(m, "| %s | %s | %s | %s of %s |\n", field(b[0], 64, root, "gpu.launch.gpu_op_shorter_than_launch", 'i'),
	     field(b[1], 64, root, "gpu.launch.launch_call_over_50us", 'i'),
	     field(b[2], 64, root, "gpu.launch.delay_over_100us", 'i'),
	     field(b[3], 64, root, "gpu.launch.short_kernels_under_10us", 'i'),
	     field(b[4], 64, root, "gpu.launch.kernels", 'i'));

	if (cJSON_GetArraySize(isc_doc_arr(root, "gpu.memcpy"))) {
		isc_rep_put(m, "\n### Memcpy and memset\n\n| Kind | Direction | From | To | Count | Bytes | Time | Bandwidth |\n"
		       "|---|---|---|---|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(x, isc_doc_arr(root, "gpu.memcpy")) {
			double bw;
			char bws[32] = "n/a";
			if (isc_doc_have(x, "bandwidth_gb_per_s", &bw))
				snprintf(bws, sizeof(bws), "%.2f GB/s", bw);
			isc_rep_put(m, "| ");
			isc_rep_md(m, isc_doc_str(x, "kind", "?"));
			isc_rep_put(m, " | ");
			isc_rep_md(m, isc_doc_str(x, "direction", ""));
			isc_rep_put(m, " | ");
			isc_rep_md(m, isc_doc_str(x, "src_memory", ""));
			isc_rep_put(m, " | ");
			isc_rep_md(m, isc_doc_str(x, "dst_memory", ""));
			isc_rep_putf(m, " | %s | %s | %s | %s |\n", field(b[0], 64, x, "count", 'i'), field(b[1], 64, x, "bytes", 'b'),
			     field(b[2], 64, x, "total_ns", 'n'), bws);
		}
	}

	if (cJSON_GetArraySize(isc_doc_arr(root, "gpu.sync.ops")) || cJSON_GetArraySize(isc_doc_arr(root, "gpu.sync.api_calls"))) {
		isc_rep_putf(m, "\n### Synchronization\n\n%s in cuda\\_sync operations, %s in synchronising calls.\n\n",
		     field(b[0], 64, root, "gpu.sync.ops_total_ns", 'n'), field(b[1], 64, root, "gpu.sync.api_total_ns", 'n'));
		isc_rep_put(m, "| Kind | Name | Count | Time |\n|---|---|---:|---:|\n");
		name_rows(m, isc_doc_arr(root, "gpu.sync.ops"), "GPU op");
		name_rows(m, isc_doc_arr(root, "gpu.sync.api_calls"), "call");
	}
}

/* The allocator's reserved (highest in each bucket) and allocated bytes over time: a chart in the HTML page. */
static void allocator_chart(struct isc_rep *m, const cJSON *ot)
{
	const cJSON *rs = isc_doc_arr(ot, "reserved_max_bytes"), *ta = isc_doc_arr(ot, "total_allocated_bytes");
	struct isc_rep_ts ts = { isc_doc_num(ot, "start_ns", 0), isc_doc_num(ot, "bucket_ns", 0), 0, 0 };
	int n = cJSON_GetArraySize(rs);
	if (!m->html || n <= 0 || n > ISC_REP_MAX_BUCKETS || cJSON_GetArraySize(ta) != n || ts.bucket_ns <= 0)
		return;
	double *v = calloc(2 * (size_t)n, sizeof(*v));
	if (!v) {
		m->err = -ENOMEM;
		return;
	}
	ts.n = (size_t)n;
	for (int i = 0; i < n; i++) {
		v[i] = isc_rep_value(cJSON_GetArrayItem(rs, i));
		v[n + i] = isc_rep_value(cJSON_GetArrayItem(ta, i));
	}
	struct isc_rep_line l[2] = { { "reserved (highest in the bucket)", v, "#c03d3e" },
				     { "allocated (at the bucket's end)", v + n, "#3b75af" } };
	isc_rep_put(m, ISC_REP_CHART_BEGIN);
	isc_svg_timeseries(m, "Device memory reserved and allocated by PyTorch's caching allocator", &ts, l, 2,
			   ISC_REP_UNIT_BYTES, NULL, 0);
	isc_rep_put(m, ISC_REP_CHART_END);
	free(v);
}

/*
 * gpu.devices[].memory of one device: its peak with what was live at it by
 * site (a table), the peak sites stacked over time (a chart in the HTML
 * page), leak candidates and churn.
 */
static void device_memory(struct isc_rep *m, const cJSON *dev)
{
	static const char *const colors[] = { "#3b75af", "#e1812c", "#3a923a", "#c03d3e", "#9372b2", "#a0a0a0" };
	const cJSON *mem = isc_doc_get(dev, "memory"), *x;
	char b[6][64];
	if (!cJSON_IsObject(mem))
		return;
	isc_rep_putf(m, "\n### Device %s memory by allocation site\n\n", field(b[0], 64, dev, "id", 'i'));
	isc_rep_putf(m, "Peak: %s of live %s, reached at %s", field(b[0], 64, mem, "peak_bytes", 'b'),
		     !strcmp(isc_doc_str(mem, "source", ""), "driver") ? "driver allocations (CUPTI; under PyTorch, reserved segments)"
								: "tensor allocations (PyTorch's allocator)",
		     field(b[1], 64, mem, "peak_ns", 'n'));
	if (isc_doc_have(mem, "total_bytes", &(double){ 0 }))
		isc_rep_putf(m, "; the device has %s: headroom %s (%s)", field(b[2], 64, mem, "total_bytes", 'b'),
			     field(b[3], 64, mem, "headroom_bytes", 'b'), field(b[4], 64, mem, "headroom_pct", 'p'));
	isc_rep_putf(m, ". %s allocations, %s releases%s.\n", field(b[0], 64, mem, "allocations", 'i'),
		     field(b[1], 64, mem, "releases", 'i'),
		     !strcmp(isc_doc_str(mem, "pairing", ""), "size") ? " (no addresses: a release is paired with the latest live "
								 "allocation of its size)" : "");
	const cJSON *ca = isc_doc_get(mem, "allocator");
	if (cJSON_IsObject(ca)) {
		isc_rep_putf(m, "\nPyTorch's caching allocator (its own totals, memory allocated before the trace "
				"included): reserved peak %s at %s, with %s allocated; allocated peak %s; at the end %s "
				"reserved, %s allocated.\n",
			     field(b[0], 64, ca, "reserved_peak_bytes", 'b'), field(b[1], 64, ca, "reserved_peak_ns", 'n'),
			     field(b[2], 64, ca, "allocated_at_reserved_peak_bytes", 'b'),
			     field(b[3], 64, ca, "allocated_peak_bytes", 'b'), field(b[4], 64, ca, "reserved_end_bytes", 'b'),
			     field(b[5], 64, ca, "allocated_end_bytes", 'b'));
		allocator_chart(m, isc_doc_get(mem, "over_time"));
	}
	const cJSON *ps = isc_doc_arr(mem, "peak_sites");
	if (cJSON_GetArraySize(ps) > 0) {
		isc_rep_put(m, "\n| Live at the peak | Share | Site | Kind |\n|---:|---:|---|---|\n");
		cJSON_ArrayForEach(x, ps) {
			isc_rep_putf(m, "| %s | %s | ", field(b[0], 64, x, "bytes", 'b'), field(b[1], 64, x, "pct_of_peak", 'p'));
			code_span(m, isc_doc_str(x, "name", "?"));
			if (*isc_doc_str(x, "file", ""))
				isc_rep_put(m, " ");
			location(m, x, true);
			isc_rep_put(m, " | ");
			isc_rep_md(m, isc_doc_str(x, "kind", ""));
			isc_rep_put(m, " |\n");
		}
	}
	const cJSON *ot = isc_doc_get(mem, "over_time"), *al = isc_doc_arr(ot, "allocated_bytes"), *ss = isc_doc_arr(ot, "sites");
	struct isc_rep_ts ts = { isc_doc_num(ot, "start_ns", 0), isc_doc_num(ot, "bucket_ns", 0), 0, 0 };
	int n = cJSON_GetArraySize(al), ns = cJSON_GetArraySize(ss);
	if (m->html && n > 0 && n <= ISC_REP_MAX_BUCKETS && ts.bucket_ns > 0 && ns <= 5) {
		double *v = calloc((size_t)n * (size_t)(ns + 1), sizeof(*v));
		struct isc_rep_line l[6];
		if (!v) {
			m->err = -ENOMEM;
			return;
		}
		ts.n = (size_t)n;
		for (int i = 0; i < n; i++)
			v[(size_t)ns * ts.n + (size_t)i] = isc_rep_value(cJSON_GetArrayItem(al, i));
		for (int k = 0; k < ns; k++) {
			const cJSON *site = cJSON_GetArrayItem(ss, k), *sv = isc_doc_arr(site, "bytes");
			for (int i = 0; i < n; i++) {
				double y = isc_rep_value(cJSON_GetArrayItem(sv, i));
				y = isnan(y) ? 0 : y;
				v[(size_t)k * ts.n + (size_t)i] = y;
				v[(size_t)ns * ts.n + (size_t)i] -= y; /* what the other sites hold */
			}
			l[k] = (struct isc_rep_line){ isc_doc_str(site, "name", "?"), v + (size_t)k * ts.n, colors[k] };
		}
		l[ns] = (struct isc_rep_line){ "other sites", v + (size_t)ns * ts.n, colors[5] };
		isc_rep_put(m, ISC_REP_CHART_BEGIN);
		isc_svg_stacked(m, "Live device memory by allocation site", &ts, l, (size_t)ns + 1);
		isc_rep_put(m, ISC_REP_CHART_END);
		free(v);
	}
	const cJSON *lk = isc_doc_arr(mem, "leak_candidates");
	if (cJSON_GetArraySize(lk) > 0) {
		isc_rep_put(m, "\nLeak candidates (live bytes grew from the end of the first iteration to the last):\n\n"
			       "| Per iteration | Growth | Iterations | Site |\n|---:|---:|---:|---|\n");
		cJSON_ArrayForEach(x, lk) {
			isc_rep_putf(m, "| %s | %s | %s | ", field(b[0], 64, x, "bytes_per_iteration", 'b'),
				     field(b[1], 64, x, "growth_bytes", 'b'), field(b[2], 64, x, "iterations", 'i'));
			code_span(m, isc_doc_str(x, "name", "?"));
			if (*isc_doc_str(x, "file", ""))
				isc_rep_put(m, " ");
			location(m, x, true);
			isc_rep_put(m, " |\n");
		}
	}
	if (isc_doc_num(mem, "churn.iterations", 0) > 0)
		isc_rep_putf(m, "\nPer iteration: %s allocations, %s allocated, %s of them released in the same "
				"iteration.\n",
			     field(b[0], 64, mem, "churn.allocations_per_iteration", 'i'),
			     field(b[1], 64, mem, "churn.bytes_per_iteration", 'b'),
			     field(b[2], 64, mem, "churn.short_lived_pct", 'p'));
	if (isc_doc_num(mem, "failures.count", 0) > 0)
		isc_rep_putf(m, "\n**%s device allocation(s) failed** (out of memory), the last of %s at %s.\n",
			     field(b[0], 64, mem, "failures.count", 'i'), field(b[1], 64, mem, "failures.last_bytes", 'b'),
			     field(b[2], 64, mem, "failures.last_ns", 'n'));
}

static void sec_memory(struct isc_rep *m, const cJSON *root)
{
	char b[8][64], growth[80];
	isc_rep_put(m, "\n## Memory\n\n");
	isc_rep_put(m, "| RSS peak | RSS growth after warm-up | Major faults | Minor faults | Swap used (max) |\n");
	isc_rep_put(m, "|---:|---:|---:|---:|---:|\n");
	double g;
	if (isc_doc_have(root, "memory.rss_growth_bytes_per_s", &g) && isfinite(g))
		snprintf(growth, sizeof(growth), "%s/s", isc_rep_fmt_bytes(b[7], 64, g));
	else
		snprintf(growth, sizeof(growth), "n/a");
	isc_rep_putf(m, "| %s | %s | %s | %s | %s |\n", field(b[0], 64, root, "memory.rss_peak_bytes", 'b'), growth,
	     field(b[2], 64, root, "memory.major_faults", 'i'), field(b[3], 64, root, "memory.minor_faults", 'i'),
	     field(b[4], 64, root, "memory.swap_used_bytes_max", 'b'));
	isc_rep_putf(m, "\nPressure stall (highest 10 s average, some): CPU %s, memory %s, I/O %s.\n",
	     field(b[0], 64, root, "memory.pressure.cpu.some_avg10_max", 'p'),
	     field(b[1], 64, root, "memory.pressure.memory.some_avg10_max", 'p'),
	     field(b[2], 64, root, "memory.pressure.io.some_avg10_max", 'p'));
	isc_rep_put(m, "\nRSS is the sum over the recorded processes; growth is the least-squares slope after the "
	       "first 10 % of the run.\n");
	static const struct series mem_series[] = {
		{ "rss_bytes", "RSS", "#3b75af", true, 'b' },
		{ "gpu_mem_used_bytes", "GPU memory used", "#c0392b", true, 'b' },
	};
	const cJSON *gs = isc_doc_arr(root, "memory.growth_sites"), *x;
	if (cJSON_GetArraySize(gs) > 0) {
		isc_rep_put(m, "\n| RSS growth | Site | Scope |\n|---:|---|---|\n");
		cJSON_ArrayForEach(x, gs) {
			isc_rep_putf(m, "| %s | ", field(b[0], 64, x, "bytes", 'b'));
			code_span(m, isc_doc_str(x, "name", "?"));
			if (*isc_doc_str(x, "file", ""))
				isc_rep_put(m, " ");
			location(m, x, true);
			isc_rep_put(m, " | ");
			if (isc_doc_str(x, "scope", NULL))
				code_span(m, isc_doc_str(x, "scope", ""));
			isc_rep_put(m, " |\n");
		}
	}
	const cJSON *co = isc_doc_get(root, "memory.composition");
	if (cJSON_IsObject(co))
		isc_rep_putf(m, "\nResident at the end (smaps_rollup): %s anonymous, %s file-backed, %s swapped.\n",
			     field(b[0], 64, co, "anon_bytes", 'b'), field(b[1], 64, co, "file_bytes", 'b'),
			     field(b[2], 64, co, "swap_bytes", 'b'));
	const cJSON *oom = isc_doc_get(root, "oom");
	if (cJSON_IsObject(oom)) {
		isc_rep_put(m, "\n### Out of memory\n\n**The workload died of out-of-memory** (");
		isc_rep_md(m, isc_doc_str(oom, "kind", "?"));
		isc_rep_putf(m, ") at %s: ", field(b[0], 64, oom, "at_ns", 'n'));
		isc_rep_md(m, isc_doc_str(oom, "evidence", ""));
		const cJSON *site = isc_doc_get(oom, "site");
		if (cJSON_IsObject(site)) {
			isc_rep_put(m, ". Site: ");
			code_span(m, isc_doc_str(site, "name", "?"));
			if (*isc_doc_str(site, "file", ""))
				isc_rep_put(m, " ");
			location(m, site, true);
		}
		isc_rep_putf(m, ". At the end: RSS %s (anonymous %s, file-backed %s), device memory live %s",
			     field(b[0], 64, oom, "memory_at_end.rss_bytes", 'b'),
			     field(b[1], 64, oom, "memory_at_end.anon_bytes", 'b'),
			     field(b[2], 64, oom, "memory_at_end.file_bytes", 'b'),
			     field(b[3], 64, oom, "memory_at_end.gpu_live_bytes", 'b'));
		if (isc_doc_have(oom, "growth_before.rss_increase_bytes", &g))
			isc_rep_putf(m, "; RSS rose %s in the last %s before", field(b[4], 64, oom, "growth_before.rss_increase_bytes", 'b'),
				     field(b[5], 64, oom, "growth_before.window_ns", 'n'));
		isc_rep_put(m, ".\n");
	}
	over_time(m, root, "Memory over time", mem_series, 2, ISC_REP_UNIT_BYTES);
	const cJSON *dev;
	cJSON_ArrayForEach(dev, isc_doc_arr(root, "gpu.devices"))
		device_memory(m, dev);
}

/* A named number of a finding's evidence, formatted by its key's unit suffix. */
static void metric(struct isc_rep *m, const cJSON *e)
{
	char b[64];
	size_t n = strlen(e->string);
	double v = e->valuedouble;
#define SUFFIX(s) (n >= sizeof(s) - 1 && !strcmp(e->string + n - (sizeof(s) - 1), s))
	isc_rep_md(m, e->string);
	isc_rep_put(m, " = ");
	if (cJSON_IsString(e))
		isc_rep_md(m, e->valuestring);
	else if (!isfinite(v) || fabs(v) >= ISC_REP_FIXED_MAX)
		isc_rep_putf(m, "%.3e", v);
	else if (SUFFIX("_ns"))
		isc_rep_put(m, isc_rep_fmt_ns(b, sizeof(b), v));
	else if (SUFFIX("_bytes_per_s"))
		isc_rep_putf(m, "%s/s", isc_rep_fmt_bytes(b, sizeof(b), v));
	else if (SUFFIX("_bytes"))
		isc_rep_put(m, isc_rep_fmt_bytes(b, sizeof(b), v));
	else if (SUFFIX("_pct"))
		isc_rep_putf(m, "%.1f %%", v);
	else if (v == floor(v))
		isc_rep_putf(m, "%.0f", v);
	else
		isc_rep_putf(m, "%.4g", v);
#undef SUFFIX
}

/* "12.3 ms (4.5 % of the analyzed span)", either part alone, or "not estimated". */
static void saving(struct isc_rep *m, const struct isc_rep_finding *f)
{
	char b[64];
	bool ns = isfinite(f->saving_ns) && f->saving_ns >= 0, pct = isfinite(f->saving_pct) && f->saving_pct >= 0;
	if (ns)
		isc_rep_put(m, isc_rep_fmt_ns(b, sizeof(b), f->saving_ns));
	if (pct)
		isc_rep_putf(m, ns ? " (%.1f %% of the analyzed span)" : "%.1f %% of the analyzed span",
			     fmin(f->saving_pct, 1e6));
	if (isfinite(f->saving_bytes) && f->saving_bytes >= 0)
		isc_rep_putf(m, "%s%s of memory at the peak", ns || pct ? ", " : "",
			     isc_rep_fmt_bytes(b, sizeof(b), f->saving_bytes));
	else if (!ns && !pct)
		isc_rep_put(m, "not estimated");
}

#define FINDING_TOP_MAX 10
#define FINDING_RANGES_MAX 10

/* evidence.top: the contributors with file:line or kernel name. */
static void contributors(struct isc_rep *m, const cJSON *top)
{
	char b[3][64];
	const cJSON *x;
	int i = 0, n = cJSON_GetArraySize(top);
	if (!n)
		return;
	isc_rep_put(m, "| # | Top contributor | Kind | Location | Time | Share | Detail |\n"
		       "|---:|---|---|---|---:|---:|---|\n");
	cJSON_ArrayForEach(x, top) {
		if (i == FINDING_TOP_MAX)
			break;
		isc_rep_putf(m, "| %d | ", ++i);
		esc_cut(m, isc_doc_str(x, "name", "?"), 120);
		isc_rep_put(m, " | ");
		isc_rep_md(m, isc_doc_str(x, "kind", ""));
		isc_rep_put(m, " | ");
		location(m, x, false);
		isc_rep_putf(m, " | %s | %s | ", field(b[0], 64, x, "value_ns", 'n'), field(b[1], 64, x, "pct", 'p'));
		esc_cut(m, isc_doc_str(x, "detail", ""), 200);
		isc_rep_put(m, " |\n");
	}
	if (n > i)
		isc_rep_putf(m, "\nAnd %d more.\n", n - i);
	isc_rep_put(m, "\n");
}

/* evidence.time_ranges: "1.2 ms – 5.4 ms (label)", relative to the start of the run. */
static void time_ranges(struct isc_rep *m, const cJSON *tr)
{
	char b[2][64];
	const cJSON *x;
	int i = 0, n = cJSON_GetArraySize(tr);
	if (!n)
		return;
	isc_rep_put(m, "Time ranges (since the start of the run): ");
	cJSON_ArrayForEach(x, tr) {
		if (i == FINDING_RANGES_MAX)
			break;
		isc_rep_putf(m, "%s%s – %s", i++ ? "; " : "", field(b[0], 64, x, "start_ns", 'n'),
			     field(b[1], 64, x, "end_ns", 'n'));
		const char *label = isc_doc_str(x, "label", NULL);
		if (label) {
			isc_rep_put(m, " (");
			isc_rep_md(m, label);
			isc_rep_put(m, ")");
		}
	}
	if (n > i)
		isc_rep_putf(m, "; and %d more", n - i);
	isc_rep_put(m, ".\n\n");
}

/* The findings' estimated savings as bars (HTML only: the text says the same). */
static void savings_chart(struct isc_rep *m, const cJSON *arr)
{
	enum { MAXB = 12 };
	struct isc_rep_bar bar[MAXB];
	char note[MAXB][96];
	size_t n = 0;
	const cJSON *f;
	cJSON_ArrayForEach(f, arr) {
		struct isc_rep_finding x;
		char b[64];
		isc_rep_finding_get(f, &x);
		if (n == MAXB || !(x.saving_pct >= 0))
			continue;
		if (x.saving_ns >= 0)
			snprintf(note[n], sizeof(note[n]), "%.1f %% (%s)", fmin(x.saving_pct, 1e6),
				 isc_rep_fmt_ns(b, sizeof(b), x.saving_ns));
		else
			snprintf(note[n], sizeof(note[n]), "%.1f %%", fmin(x.saving_pct, 1e6));
		bar[n] = (struct isc_rep_bar){ x.title ? x.title : "?", { { NULL, fmin(x.saving_pct, 100), "#2e8b57" } },
					       1, note[n] };
		n++;
	}
	if (n)
		chart_bars(m, "Estimated saving by finding", "Estimated saving (% of the analyzed span)", 0, bar, n);
}

static void sec_findings(struct isc_rep *m, const cJSON *root)
{
	const cJSON *f, *e, *arr = isc_doc_arr(root, "findings");
	isc_rep_put(m, "\n## Findings\n\n");
	if (!cJSON_GetArraySize(arr))
		isc_rep_put(m, "No findings.\n");
	else
		isc_rep_put(m, "Ranked by estimated saving. Savings are estimates: each says what it assumes.\n");
	if (m->html)
		savings_chart(m, arr);
	int i = 0;
	cJSON_ArrayForEach(f, arr) {
		struct isc_rep_finding x;
		isc_rep_finding_get(f, &x);
		isc_rep_putf(m, "\n### %d. ", ++i);
		isc_rep_md(m, x.title ? x.title : "?");
		isc_rep_put(m, "\n\nSeverity **");
		isc_rep_md(m, x.severity ? x.severity : "info");
		isc_rep_put(m, "**");
		if (isfinite(x.confidence) && fabs(x.confidence) < ISC_REP_FIXED_MAX)
			isc_rep_putf(m, ", confidence %.2f", x.confidence);
		if (x.id) {
			isc_rep_put(m, ", rule ");
			code_span(m, x.id);
		}
		isc_rep_put(m, ". Estimated saving: ");
		saving(m, &x);
		isc_rep_put(m, ".\n\n");
		bool first = true;
		cJSON_ArrayForEach(e, x.metrics) {
			if (!cJSON_IsNumber(e) && !cJSON_IsString(e))
				continue;
			isc_rep_put(m, first ? "Evidence: " : ", ");
			first = false;
			metric(m, e);
		}
		isc_rep_put(m, first ? "" : ".\n\n");
		time_ranges(m, x.time_ranges);
		contributors(m, x.top);
		if (x.action) {
			isc_rep_put(m, "Suggestion: **");
			isc_rep_md(m, x.action);
			isc_rep_put(m, "**");
			if (x.rationale) {
				isc_rep_put(m, " ");
				isc_rep_md(m, x.rationale);
			}
			isc_rep_put(m, "\n\n");
		}
		if (x.estimate) {
			isc_rep_put(m, "Estimate: ");
			isc_rep_md(m, x.estimate);
			isc_rep_put(m, "\n");
		}
	}
}

/* The suggestions alone, in the findings' order, with their savings. */
static void sec_suggestions(struct isc_rep *m, const cJSON *root)
{
	const cJSON *f;
	int i = 0;
	isc_rep_put(m, "\n## Suggestions\n\n");
	cJSON_ArrayForEach(f, isc_doc_arr(root, "findings")) {
		struct isc_rep_finding x;
		isc_rep_finding_get(f, &x);
		if (!x.action)
			continue;
		isc_rep_putf(m, "%d. ", ++i);
		isc_rep_md(m, x.action);
		if (x.saving_ns >= 0 || x.saving_pct >= 0 || x.saving_bytes >= 0) {
			isc_rep_put(m, " (estimated saving: ");
			saving(m, &x);
			isc_rep_put(m, ")");
		}
		isc_rep_put(m, "\n");
	}
	if (!i)
		isc_rep_put(m, "None.\n");
}

static void sec_environment(struct isc_rep *m, const cJSON *root)
{
	char b[4][64];
	isc_rep_put(m, "\n## Environment\n\n| | |\n|---|---|\n| Host | ");
	isc_rep_md(m, isc_doc_str(root, "environment.host", "n/a"));
	isc_rep_put(m, " |\n| Command | ");
	isc_rep_md(m, isc_doc_str(root, "environment.cmdline", "n/a"));
	isc_rep_putf(m, " |\n| CPUs | %s |\n| Sample rate | %s Hz |\n", field(b[0], 64, root, "environment.ncpu", 'i'),
	     field(b[1], 64, root, "environment.sample_hz", 'i'));
	isc_rep_put(m, "| Analyzer | ");
	isc_rep_md(m, isc_doc_str(root, "tool.name", "n/a"));
	isc_rep_put(m, " ");
	isc_rep_md(m, isc_doc_str(root, "tool.version", ""));
	isc_rep_putf(m, " (findings schema %s) |\n", field(b[2], 64, root, "schema_version", 'i'));
}

/*
 * "### Marks" (under End-to-end latency): per mark() name its count, sum,
 * sum per iteration and per second of the analyzed span (tokens/s), and
 * the sum over time as a row of block characters when it spans several
 * buckets.  The agent's own torch.* marks are left out.
 */
static void sec_marks(struct isc_rep *m, const cJSON *root)
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
		isc_rep_putf(m, " | %s", field(b, sizeof(b), mk, "count", 'i'));
		isc_rep_putf(m, " | %s", field(b, sizeof(b), mk, "sum", 'i'));
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

static int render_md(const cJSON *root, struct isc_rep *m)
{
	isc_rep_put(m, "# InferScope report\n\n");
	isc_rep_comparison(m, root); /* first when there is one: did it get slower, and why */
	run_line(m, root);           /* a failure or a window before any bottleneck */
	headline(m, root);
	sec_latency(m, root);
	sec_marks(m, root);
	sec_cpu(m, root);
	sec_gpu(m, root);
	sec_memory(m, root);
	sec_findings(m, root);
	sec_suggestions(m, root);
	sec_environment(m, root);
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
