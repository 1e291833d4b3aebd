/*
 * test_report_svg.c - the report's SVG charts (report_svg.c): one <svg>
 * element each with its size and viewBox, numbers where the data puts
 * them (bar widths in proportion to the values, worked out by hand), no
 * NaN printed for a bucket without data, workload text XML-escaped and
 * control characters dropped, distinct element ids per chart.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "tap.h"

static size_t count(const char *s, const char *sub)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, sub)); p += strlen(sub))
		n++;
	return n;
}

/* The width of the k-th (0-based) bar rect, the ones marked data-series; -1 if absent. */
static double bar_width(const char *s, int k)
{
	const char *p = s;
	for (int i = 0; p; i++) {
		const char *r = strstr(p, "data-series=");
		if (!r)
			return -1;
		const char *start = r;
		while (start > s && strncmp(start, "<rect", 5))
			start--;
		const char *w = strstr(start, " width=\"");
		if (i == k)
			return w && w < r ? atof(w + 8) : -1;
		p = r + 1;
	}
	return -1;
}

static char *done(struct isc_rep *r)
{
	isc_buf_put_u8(&r->b, 0);
	return (char *)r->b.data;
}

int main(void)
{
	struct isc_rep r = { 0 };
	struct isc_rep_bar bars[2] = {
		{ "<b>&\"x\x01y", { { "a", 200, "#111" } }, 1, "note" },
		{ "second", { { "a", 100, "#111" } }, 1, NULL },
	};
	isc_svg_bars(&r, "T<i>", "ms", 0, bars, 2);
	char *s = done(&r);
	ok(!r.err && !strncmp(s, "<svg width=\"", 12) && count(s, "<svg") == 1 && count(s, "</svg>") == 1,
	   "bars: one svg element");
	ok(strstr(s, "viewBox=\"0 0 ") != NULL && strstr(s, "role=\"img\"") != NULL, "bars: viewBox and role");
	ok(!strstr(s, "<b>") && !strstr(s, "<i>") && strstr(s, "&lt;b&gt;&amp;&quot;xy") && strstr(s, "T&lt;i&gt;"),
	   "bars: label and title escaped, control character dropped");
	double w0 = bar_width(s, 0), w1 = bar_width(s, 1);
	ok(w0 > 0 && w1 > 0 && fabs(w0 - 2 * w1) < 0.2, "bars: widths in proportion to 200 and 100 (%.1f, %.1f)", w0, w1);
	ok(strstr(s, "isc-c1-t") != NULL, "bars: first chart's ids");
	size_t first_len = strlen(s);

	/* a second chart on the same page gets other ids */
	r.b.len = first_len; /* drop the terminating NUL, keep appending */
	struct isc_rep_ts ts = { 0, 1e9, 4, 2 };
	double v[4] = { 1, NAN, 3, 2 };
	struct isc_rep_line line = { "cpu", v, "#123" };
	isc_svg_timeseries(&r, "CPU over time", &ts, &line, 1, ISC_REP_UNIT_CORES, NULL, 0);
	s = done(&r);
	const char *second = s + first_len;
	ok(!r.err && count(second, "<svg") == 1 && strstr(second, "isc-c2-t") && !strstr(second, "isc-c1-t"),
	   "timeseries: second chart, ids isc-c2");
	ok(!strstr(second, "nan") && !strstr(second, "NaN") && !strstr(second, "inf"), "timeseries: no NaN printed");
	ok(strstr(second, "max 3") != NULL, "timeseries: the description states the largest value, 3");
	isc_buf_free(&r.b);

	struct isc_rep h = { 0 };
	struct isc_rep_hist hist = { .k = 2, .edges = { 0, 1e6, 2e6 }, .counts = { 3, 1 }, .p50 = 5e5, .p99 = 1.9e6 };
	isc_svg_histogram(&h, "Latency", &hist);
	s = done(&h);
	ok(!h.err && count(s, "<svg") == 1 && count(s, "</svg>") == 1, "histogram: one svg element");
	ok(!strstr(s, "nan") && !strstr(s, "<script") && !strstr(s, "href"), "histogram: no NaN, no script, no link");
	isc_buf_free(&h.b);
	return tap_done();
}
