/*
 * report_chart.c - the charts the report's sections share, and their
 * stand-ins in plain Markdown:
 *
 *   isc_rep_over_time    series of root.timeseries: in the HTML page an
 *                        SVG step chart, in Markdown a table of at most
 *                        ten rows (a tenth of the run each; mean or max,
 *                        and the iterations started in it)
 *   isc_rep_chart_bars   bars (stacked breakdowns, savings), which the
 *                        sections write in the HTML page only: their
 *                        text or table says the same
 *
 * A chart stands in the Markdown between ISC_REP_CHART_BEGIN and
 * ISC_REP_CHART_END, which report_html.c copies verbatim.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "report.h"

void isc_rep_chart_bars(struct isc_rep *m, const char *title, const char *xlabel, double xmax,
			const struct isc_rep_bar *bars, size_t n)
{
	isc_rep_put(m, ISC_REP_CHART_BEGIN);
	isc_svg_bars(m, title, xlabel, xmax, bars, n);
	isc_rep_put(m, ISC_REP_CHART_END);
}

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
static void over_time_table(struct isc_rep *m, const struct isc_rep_ts *ts, const struct isc_rep_series_def *def,
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

/* See report.h: "### heading", then a chart (HTML) or over_time_table (Markdown). */
void isc_rep_over_time(struct isc_rep *m, const cJSON *root, const char *heading, const struct isc_rep_series_def *def,
		       size_t ndef, enum isc_rep_unit unit)
{
	enum { MAXL = 4 };
	struct isc_rep_ts ts;
	struct isc_rep_line l[MAXL];
	struct isc_rep_series_def d[MAXL];
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

struct isc_rep_seg isc_rep_pct_seg(const cJSON *o, const char *path, const char *name, const char *color)
{
	double v;
	if (!isc_doc_have(o, path, &v) || !(v >= 0))
		v = NAN;
	return (struct isc_rep_seg){ name, fmin(v, 100), color };
}

bool isc_rep_any_seg(const struct isc_rep_bar *b)
{
	for (size_t i = 0; i < b->nseg; i++)
		if (!isnan(b->seg[i].value))
			return true;
	return false;
}
