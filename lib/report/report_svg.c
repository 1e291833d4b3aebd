/*
 * report_svg.c - the HTML report's charts as inline SVG, drawn here: step
 * charts over the run, the latency histogram, horizontal bars.
 *
 * Every chart is one <svg> with width, height and viewBox, role="img",
 * aria-labelledby naming its <title> and a <desc> that says the numbers in
 * words; colours are attributes (no stylesheet needed), text uses the
 * generic sans-serif family (no font is fetched).  No script, no link.
 *
 * Coordinates: every data value goes through px()/py(), which map the
 * plot's data range to the plot area and clamp to it, NaN included, so the
 * numbers printed are always finite and inside the viewBox.
 *
 *   (0,0) +------------------------------------------- W
 *         | title                                    |
 *         | legend                                   |
 *   y0 -  |  tick |  plot area (x0..x1, y0..y1)      |
 *   y1 -  |  tick +----------------------------------|
 *         |        [iteration strip, time charts]    |
 *         |        x ticks, x axis label             |
 *       H +------------------------------------------+
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

#define W 720.0
#define FONT "font-family=\"sans-serif\" font-size=\"11\""

struct plot {
	double x0, x1, y0, y1;         /* plot area in px, y0 at the top */
	double xmin, xmax, ymin, ymax; /* data range; max > min */
};

static double clamp01(double f)
{
	return f >= 0 ? (f <= 1 ? f : 1) : 0; /* NaN -> 0 */
}

static double px(const struct plot *p, double x)
{
	return p->x0 + clamp01((x - p->xmin) / (p->xmax - p->xmin)) * (p->x1 - p->x0);
}

static double py(const struct plot *p, double y)
{
	return p->y1 - clamp01((y - p->ymin) / (p->ymax - p->ymin)) * (p->y1 - p->y0);
}

/* 1, 2 or 5 x 10^k near range / target (1 when range is not a positive number). */
static double nice_step(double range, int target)
{
	if (!(range > 0 && range <= DBL_MAX))
		return 1;
	double raw = range / target, mag = pow(10, floor(log10(raw))), f = raw / mag;
	return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * mag;
}

/* The smallest multiple of a nice step at or above v (> 0). */
static double nice_ceil(double v)
{
	double s = nice_step(v, 4);
	return ceil(v / s - 1e-9) * s;
}

/* Divisor and unit name for a time axis reaching max_ns. */
static double time_unit(double max_ns, const char **unit)
{
	if (max_ns >= 2e9)
		return *unit = "s", 1e9;
	if (max_ns >= 2e6)
		return *unit = "ms", 1e6;
	if (max_ns >= 2e3)
		return *unit = "µs", 1e3;
	return *unit = "ns", 1;
}

static double byte_unit(double max, const char **unit)
{
	static const char *const name[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	double div = 1;
	int u = 0;
	while (max / div >= 1024 && u < 5) {
		div *= 1024;
		u++;
	}
	*unit = name[u];
	return div;
}

/*
 * <svg ...><title/> and the opening of <desc>; the caller writes the
 * description (escaped) and calls svg_body().
 */
static void svg_open(struct isc_rep *r, double h, const char *title)
{
	unsigned id = ++r->charts;
	isc_rep_putf(r,
		     "<svg width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		     "aria-labelledby=\"isc-c%u-t isc-c%u-d\" " FONT ">\n<title id=\"isc-c%u-t\">",
		     W, h, W, h, id, id, id);
	isc_rep_xml(r, title, 0);
	isc_rep_putf(r, "</title>\n<desc id=\"isc-c%u-d\">", id);
}

/* Closes <desc>, draws the background and the visible title. */
static void svg_body(struct isc_rep *r, double h, const char *title)
{
	isc_rep_putf(r, "</desc>\n<rect width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n", W, h);
	isc_rep_put(r, "<text x=\"8\" y=\"18\" font-size=\"14\" font-weight=\"bold\">");
	isc_rep_xml(r, title, 0);
	isc_rep_put(r, "</text>\n");
}

/* A legend entry at *x on the line y; moves *x past it (about 6.5 px a character). */
static void legend(struct isc_rep *r, double *x, double y, const char *color, const char *name)
{
	isc_rep_putf(r, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"10\" fill=\"%s\"/>", *x, y - 9, color);
	isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\">", *x + 16, y);
	isc_rep_xml(r, name, 60);
	isc_rep_put(r, "</text>\n");
	*x += 16 + 6.5 * (double)(strlen(name) < 60 ? strlen(name) : 60) + 18;
}

/* Grid lines and labels of the y axis: values / div, label rotated on the left. */
static void y_axis(struct isc_rep *r, const struct plot *p, double div, const char *label)
{
	double step = nice_step((p->ymax - p->ymin) / div, 4);
	for (int k = 0; k <= 40; k++) {
		double v = p->ymin / div + k * step;
		if (v > p->ymax / div * (1 + 1e-9))
			break;
		double y = py(p, v * div);
		isc_rep_putf(r, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>", p->x0, y,
			     p->x1, y);
		isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n", p->x0 - 6, y + 4, v);
	}
	double cy = (p->y0 + p->y1) / 2;
	isc_rep_putf(r, "<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 14 %.1f)\">", cy, cy);
	isc_rep_xml(r, label, 0);
	isc_rep_put(r, "</text>\n");
}

/* Ticks and labels of the x axis at y (the bottom of what is drawn above it). */
static void x_axis(struct isc_rep *r, const struct plot *p, double y, double div, const char *label)
{
	double lo = p->xmin / div, hi = p->xmax / div, step = nice_step(hi - lo, 6);
	isc_rep_putf(r, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>\n", p->x0, p->y1,
		     p->x1, p->y1);
	for (double k = ceil(lo / step - 1e-9), n = 0; n < 40; k++, n++) {
		double v = k * step;
		if (v > hi + step * 1e-9)
			break;
		double x = px(p, v * div);
		isc_rep_putf(r, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>", x, y, x, y + 4);
		isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x, y + 16,
			     v == 0 ? 0 : v);
	}
	isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (p->x0 + p->x1) / 2, y + 34);
	isc_rep_xml(r, label, 0);
	isc_rep_put(r, "</text>\n");
}

/* ---- over time ---------------------------------------------------------- */
/*
 * The runs of buckets with data as a step line (stroke) and the area under
 * it (fill); a bucket without data breaks the line.
 */
static void step_series(struct isc_rep *r, const struct plot *p, const struct isc_rep_ts *ts,
			const struct isc_rep_line *l)
{
	double base = p->y1;
	for (int pass = 0; pass < 2; pass++) {
		isc_rep_put(r, "<path d=\"");
		for (size_t i = 0; i < ts->n; i++) {
			if (isnan(l->v[i]))
				continue;
			double xa = px(p, ts->t0_ns + (double)i * ts->bucket_ns), y = py(p, l->v[i]);
			bool start = i == 0 || isnan(l->v[i - 1]), end = i + 1 == ts->n || isnan(l->v[i + 1]);
			double xb = px(p, ts->t0_ns + (double)(i + 1) * ts->bucket_ns);
			if (start)
				isc_rep_putf(r, pass ? "M%.1f %.1fV%.1f" : "M%.1f %.1f", xa, pass ? base : y, y);
			else
				isc_rep_putf(r, "V%.1f", y);
			isc_rep_putf(r, "H%.1f", xb);
			if (end && pass)
				isc_rep_putf(r, "V%.1fZ", base);
		}
		if (pass)
			isc_rep_putf(r, "\" fill=\"%s\" fill-opacity=\"0.15\" stroke=\"none\"/>\n", l->color);
		else
			isc_rep_putf(r, "\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" data-series=\"1\"/>\n",
				     l->color);
	}
}

/* Iterations as bars between y and y+8: steady ones in two alternating blues, warm-up in orange. */
static void iteration_strip(struct isc_rep *r, const struct plot *p, double y, const struct isc_rep_span *s,
			    size_t n)
{
	size_t steady = 0;
	for (size_t i = 0; i < n; i++) {
		double a = px(p, s[i].start_ns), b = px(p, s[i].end_ns);
		if (b - a < 0.8) { /* a sub-pixel iteration stays visible */
			a = a > p->x1 - 0.8 ? p->x1 - 0.8 : a;
			b = a + 0.8;
		}
		const char *c = s[i].warmup ? "#a0a0a0" : steady++ % 2 ? "#9cbbe6" : "#4f7fc4";
		isc_rep_putf(r, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"8\" fill=\"%s\"/>\n", a, y, b - a, c);
	}
}

void isc_svg_timeseries(struct isc_rep *r, const char *title, const struct isc_rep_ts *ts,
			const struct isc_rep_line *lines, size_t nlines, enum isc_rep_unit unit,
			const struct isc_rep_span *spans, size_t nspans)
{
	const double h = 256;
	struct plot p = { 64, W - 16, 46, 190, ts->t0_ns, ts->t0_ns + (double)ts->n * ts->bucket_ns, 0, 100 };
	double vmax = 0, tdiv, ydiv = 1;
	const char *tu, *yu = "";
	char label[96];
	size_t nwarm = 0;

	for (size_t i = 0; i < nspans; i++)
		nwarm += spans[i].warmup;
	svg_open(r, h, title);
	for (size_t l = 0; l < nlines; l++) {
		double sum = 0, mx = 0;
		size_t cnt = 0;
		for (size_t i = 0; i < ts->n; i++)
			if (!isnan(lines[l].v[i])) {
				sum += lines[l].v[i];
				mx = lines[l].v[i] > mx ? lines[l].v[i] : mx;
				cnt++;
			}
		vmax = mx > vmax ? mx : vmax;
		char a[32], b[32];
		if (unit == ISC_REP_UNIT_BYTES)
			isc_rep_putf(r, "%s: mean %s, max %s. ", lines[l].name,
				     isc_rep_fmt_bytes(a, sizeof(a), cnt ? sum / (double)cnt : 0),
				     isc_rep_fmt_bytes(b, sizeof(b), mx));
		else
			isc_rep_putf(r, "%s: mean %.2f%s, max %.2f%s. ", lines[l].name, cnt ? sum / (double)cnt : 0,
				     unit == ISC_REP_UNIT_PCT ? " %" : "", mx, unit == ISC_REP_UNIT_PCT ? " %" : "");
	}
	tdiv = time_unit(p.xmax - p.xmin, &tu);
	isc_rep_putf(r, "%zu buckets of %g %s", ts->n, ts->bucket_ns / tdiv, tu);
	if (nspans)
		isc_rep_putf(r, "; %zu iterations marked below the plot, %zu of them warm-up", nspans, nwarm);
	isc_rep_put(r, ".");
	svg_body(r, h, title);

	switch (unit) {
	case ISC_REP_UNIT_CORES:
		vmax = vmax > ts->ncpu ? vmax : ts->ncpu;
		p.ymax = nice_ceil(vmax > 0 ? vmax : 1);
		snprintf(label, sizeof(label), "CPU cores");
		break;
	case ISC_REP_UNIT_PCT:
		snprintf(label, sizeof(label), "Busy (%%)");
		break;
	case ISC_REP_UNIT_BYTES:
		ydiv = byte_unit(vmax, &yu);
		p.ymax = nice_ceil(vmax > 0 ? vmax / ydiv : 1) * ydiv;
		snprintf(label, sizeof(label), "Memory (%s)", yu);
		break;
	}
	y_axis(r, &p, ydiv, label);
	if (unit == ISC_REP_UNIT_CORES && ts->ncpu > 0) {
		double y = py(&p, ts->ncpu);
		isc_rep_putf(r, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c33\" "
				"stroke-dasharray=\"4 3\"/>",
			     p.x0, y, p.x1, y);
		isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" fill=\"#c33\">%g CPUs</text>\n",
			     p.x1 - 4, y - 4, ts->ncpu);
	}
	double lx = 64;
	for (size_t l = 0; l < nlines; l++) {
		step_series(r, &p, ts, &lines[l]);
		legend(r, &lx, 36, lines[l].color, lines[l].name);
	}
	if (nspans) {
		iteration_strip(r, &p, p.y1 + 4, spans, nspans);
		legend(r, &lx, 36, "#4f7fc4", "iterations");
		if (nwarm)
			legend(r, &lx, 36, "#a0a0a0", "warm-up iterations");
	}
	snprintf(label, sizeof(label), "Time since start (%s)", tu);
	x_axis(r, &p, p.y1 + 14, tdiv, label);
	isc_rep_put(r, "</svg>\n");
}

/* ---- stacked areas ------------------------------------------------------- */
static double band_v(const struct isc_rep_line *b, size_t i)
{
	double v = b->v[i];
	return v > 0 && v <= ISC_REP_MAX_VALUE ? v : 0; /* NaN -> 0 */
}

void isc_svg_stacked(struct isc_rep *r, const char *title, const struct isc_rep_ts *ts,
		     const struct isc_rep_line *bands, size_t nbands)
{
	/* legend rows: entries wrap at the right edge, the plot moves down */
	double lw = 64, rows = 1;
	for (size_t k = 0; k < nbands; k++) {
		size_t len = strlen(bands[k].name) < 60 ? strlen(bands[k].name) : 60;
		double w = 16 + 6.5 * (double)len + 18;
		if (lw + w > W - 16 && lw > 64) {
			rows++;
			lw = 64;
		}
		lw += w;
	}
	const double extra = 14 * (rows - 1), h = 244 + extra;
	struct plot p = { 64, W - 16, 46 + extra, 190 + extra, ts->t0_ns, ts->t0_ns + (double)ts->n * ts->bucket_ns, 0, 1 };
	double top = 0, tdiv, ydiv, ly = 36;
	const char *tu, *yu;
	char label[96], a[32];

	svg_open(r, h, title);
	for (size_t i = 0; i < ts->n; i++) {
		double s = 0;
		for (size_t k = 0; k < nbands; k++)
			s += band_v(&bands[k], i);
		top = s > top ? s : top;
	}
	for (size_t k = 0; k < nbands; k++) {
		double mx = 0;
		for (size_t i = 0; i < ts->n; i++)
			mx = band_v(&bands[k], i) > mx ? band_v(&bands[k], i) : mx;
		isc_rep_xml(r, bands[k].name, 60);
		isc_rep_putf(r, ": max %s. ", isc_rep_fmt_bytes(a, sizeof(a), mx));
	}
	tdiv = time_unit(p.xmax - p.xmin, &tu);
	isc_rep_putf(r, "Highest stack %s; %zu buckets of %g %s.", isc_rep_fmt_bytes(a, sizeof(a), top), ts->n,
		     ts->bucket_ns / tdiv, tu);
	svg_body(r, h, title);
	ydiv = byte_unit(top, &yu);
	p.ymax = nice_ceil(top > 0 ? top / ydiv : 1) * ydiv;
	snprintf(label, sizeof(label), "Live device memory (%s)", yu);
	y_axis(r, &p, ydiv, label);
	double lx = 64;
	for (size_t k = 0; k < nbands; k++) {
		/* the band's top edge left to right, then its bottom edge back */
		isc_rep_put(r, "<path d=\"");
		for (size_t i = 0; i < ts->n; i++) {
			double lo = 0;
			for (size_t j = 0; j < k; j++)
				lo += band_v(&bands[j], i);
			double xa = px(&p, ts->t0_ns + (double)i * ts->bucket_ns);
			double xb = px(&p, ts->t0_ns + (double)(i + 1) * ts->bucket_ns);
			double y = py(&p, lo + band_v(&bands[k], i));
			isc_rep_putf(r, i ? "L%.1f %.1fH%.1f" : "M%.1f %.1fH%.1f", xa, y, xb);
		}
		for (size_t i = ts->n; i > 0; i--) {
			double lo = 0;
			for (size_t j = 0; j < k; j++)
				lo += band_v(&bands[j], i - 1);
			double xa = px(&p, ts->t0_ns + (double)(i - 1) * ts->bucket_ns);
			double xb = px(&p, ts->t0_ns + (double)i * ts->bucket_ns);
			isc_rep_putf(r, "L%.1f %.1fH%.1f", xb, py(&p, lo), xa);
		}
		isc_rep_putf(r, "Z\" fill=\"%s\" fill-opacity=\"0.8\" stroke=\"none\" data-series=\"1\"/>\n",
			     bands[k].color);
		size_t len = strlen(bands[k].name) < 60 ? strlen(bands[k].name) : 60;
		if (lx + 16 + 6.5 * (double)len + 18 > W - 16 && lx > 64) {
			lx = 64;
			ly += 14;
		}
		legend(r, &lx, ly, bands[k].color, bands[k].name);
	}
	snprintf(label, sizeof(label), "Time since start (%s)", tu);
	x_axis(r, &p, p.y1 + 14, tdiv, label);
	isc_rep_put(r, "</svg>\n");
}

/* ---- latency histogram --------------------------------------------------- */
/*
 * A dashed vertical line at latency v, its label above the plot on line
 * row (0 or 1, so that two close lines keep readable labels), on the side
 * of the line with room for it.
 */
static void quantile_line(struct isc_rep *r, const struct plot *p, double v, const char *name, int row)
{
	char b[32];
	if (!(v >= p->xmin && v <= p->xmax))
		return;
	double x = px(p, v), y = p->y0 - 6 - 13 * row;
	bool right = x + 100 < W;
	isc_rep_putf(r, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#c33\" "
			"stroke-dasharray=\"4 3\"/>",
		     x, y, x, p->y1);
	isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\" fill=\"#c33\">%s %s</text>\n",
		     right ? x + 3 : x - 3, y, right ? "start" : "end", name, isc_rep_fmt_ns(b, sizeof(b), v));
}

void isc_svg_histogram(struct isc_rep *r, const char *title, const struct isc_rep_hist *h)
{
	const double hgt = 250;
	struct plot p = { 64, W - 16, 62, 196, h->edges[0], h->edges[h->k], 0, 1 };
	double total = 0, cmax = 0, div;
	const char *u;
	char a[32], b[32], label[64];

	if (p.xmax - p.xmin <= 0) { /* one value: a narrow range around it */
		double d = p.xmin * 0.05 > 1 ? p.xmin * 0.05 : 1;
		p.xmin = p.xmin > d ? p.xmin - d : 0;
		p.xmax += d;
	}
	for (size_t i = 0; i < h->k; i++) {
		total += h->counts[i];
		cmax = h->counts[i] > cmax ? h->counts[i] : cmax;
	}
	p.ymax = nice_ceil(cmax > 0 ? cmax : 1);
	svg_open(r, hgt, title);
	isc_rep_putf(r, "%.0f iterations in %zu bins from %s to %s", total, h->k,
		     isc_rep_fmt_ns(a, sizeof(a), h->edges[0]), isc_rep_fmt_ns(b, sizeof(b), h->edges[h->k]));
	if (!isnan(h->p50))
		isc_rep_putf(r, "; p50 %s", isc_rep_fmt_ns(a, sizeof(a), h->p50));
	if (!isnan(h->p99))
		isc_rep_putf(r, "; p99 %s", isc_rep_fmt_ns(a, sizeof(a), h->p99));
	isc_rep_put(r, ".");
	svg_body(r, hgt, title);
	y_axis(r, &p, 1, "Iterations");
	for (size_t i = 0; i < h->k; i++) {
		double xa = px(&p, h->edges[i]), xb = px(&p, h->edges[i + 1]), y = py(&p, h->counts[i]);
		if (xb - xa > 3) /* a gap between bars */
			xb -= 1;
		else if (xb - xa < 2)
			xa = (xa + xb) / 2 - 1, xb = xa + 2;
		isc_rep_putf(r, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#4f7fc4\" "
				"data-series=\"1\"><title>%s – %s: %.0f</title></rect>\n",
			     xa, y, xb - xa, p.y1 - y, isc_rep_fmt_ns(a, sizeof(a), h->edges[i]),
			     isc_rep_fmt_ns(b, sizeof(b), h->edges[i + 1]), h->counts[i]);
	}
	quantile_line(r, &p, h->p50, "p50", 0);
	quantile_line(r, &p, h->p99, "p99", 1);
	div = time_unit(p.xmax, &u);
	snprintf(label, sizeof(label), "Iteration latency (%s)", u);
	x_axis(r, &p, p.y1, div, label);
	isc_rep_put(r, "</svg>\n");
}

/* ---- bars ---------------------------------------------------------------- */
/* Black or white, whichever reads better on the colour "#rrggbb". */
static const char *ink(const char *color)
{
	unsigned rgb;
	if (sscanf(color, "#%6x", &rgb) != 1)
		return "#000";
	double l = 0.299 * (rgb >> 16) + 0.587 * ((rgb >> 8) & 0xff) + 0.114 * (rgb & 0xff);
	return l > 150 ? "#000" : "#fff";
}

#define BAR_LABEL_MAX 44

void isc_svg_bars(struct isc_rep *r, const char *title, const char *xlabel, double xmax,
		  const struct isc_rep_bar *bars, size_t n)
{
	size_t longest = 0;
	bool named = false;
	double widest = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(bars[i].label);
		double sum = 0;
		longest = l > longest ? l : longest;
		for (size_t s = 0; s < bars[i].nseg; s++) {
			named |= bars[i].seg[s].name != NULL;
			sum += isnan(bars[i].seg[s].value) ? 0 : bars[i].seg[s].value;
		}
		widest = sum > widest ? sum : widest;
	}
	if (!(xmax > 0))
		xmax = nice_ceil(widest > 0 ? widest : 1);
	double lw = 12 + 6.5 * (double)(longest < BAR_LABEL_MAX ? longest : BAR_LABEL_MAX + 1);
	lw = lw < 60 ? 60 : lw;
	double top = named ? 50 : 34, hgt = top + 24 * (double)n + 44;
	struct plot p = { lw, W - 130, top, top + 24 * (double)n, 0, xmax, 0, 1 };

	svg_open(r, hgt, title);
	for (size_t i = 0; i < n; i++) {
		isc_rep_xml(r, bars[i].label, BAR_LABEL_MAX);
		isc_rep_put(r, ":");
		for (size_t s = 0; s < bars[i].nseg; s++)
			if (!isnan(bars[i].seg[s].value))
				isc_rep_putf(r, " %s %.1f%s", bars[i].seg[s].name ? bars[i].seg[s].name : "",
					     bars[i].seg[s].value, bars[i].seg[s].name ? " %," : "");
		if (bars[i].note) {
			isc_rep_put(r, " ");
			isc_rep_xml(r, bars[i].note, 0);
		}
		isc_rep_put(r, i + 1 < n ? "; " : ".");
	}
	svg_body(r, hgt, title);
	if (named) {
		double lx = lw;
		for (size_t s = 0; s < bars[0].nseg; s++)
			if (bars[0].seg[s].name)
				legend(r, &lx, 36, bars[0].seg[s].color, bars[0].seg[s].name);
	}
	for (size_t i = 0; i < n; i++) {
		double y = top + 24 * (double)i + 4, x = p.x0;
		isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", lw - 8, y + 12);
		isc_rep_xml(r, bars[i].label, BAR_LABEL_MAX);
		isc_rep_put(r, "</text>\n");
		double sum = 0;
		for (size_t s = 0; s < bars[i].nseg; s++) {
			const struct isc_rep_seg *g = &bars[i].seg[s];
			if (isnan(g->value))
				continue;
			sum += g->value;
			double xe = px(&p, sum);
			isc_rep_putf(r, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"16\" fill=\"%s\" "
					"data-series=\"1\"/>",
				     x, y, xe - x, g->color);
			if (g->name && xe - x >= 34)
				isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\" fill=\"%s\">%.0f %%</text>",
					     (x + xe) / 2, y + 12, ink(g->color), g->value);
			isc_rep_put(r, "\n");
			x = xe;
		}
		if (bars[i].note) {
			isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\">", x + 6, y + 12);
			isc_rep_xml(r, bars[i].note, 0);
			isc_rep_put(r, "</text>\n");
		}
	}
	x_axis(r, &p, p.y1, 1, xlabel);
	isc_rep_put(r, "</svg>\n");
}

/* ---- a distributed job (report_job.c) ------------------------------------ */
void isc_svg_swimlanes(struct isc_rep *r, const char *title, const struct isc_rep_lane *lanes, size_t n, double t_end)
{
	const char *unit;
	double lh = 22, top = 46, hgt = top + lh * (double)n + 40, div = time_unit(t_end, &unit);
	struct plot p = { 80, W - 16, top, top + lh * (double)n, 0, t_end > 0 ? t_end : 1, 0, 1 };
	size_t nit = 0, nco = 0;
	for (size_t i = 0; i < n; i++) {
		nit += lanes[i].nit;
		nco += lanes[i].ncoll;
	}
	svg_open(r, hgt, title);
	isc_rep_putf(r, "%zu ranks on the job's aligned clock, %.1f %s: %zu iterations (grey) and %zu collectives "
		     "(blue; red: the rank arrived last).", n, t_end / div, unit, nit, nco);
	svg_body(r, hgt, title);
	double lx = p.x0;
	legend(r, &lx, 36, "#c9c9c9", "iteration");
	legend(r, &lx, 36, "#3b6fb6", "collective");
	legend(r, &lx, 36, "#d0453c", "collective, arrived last");
	for (size_t i = 0; i < n; i++) {
		const struct isc_rep_lane *l = &lanes[i];
		double y = top + lh * (double)i;
		isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", p.x0 - 6, y + 15);
		isc_rep_xml(r, l->label, 24);
		isc_rep_put(r, "</text>\n");
		for (size_t k = 0; k < l->nit; k++) {
			double a = px(&p, l->it[k].s), b = px(&p, l->it[k].e);
			isc_rep_putf(r, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#c9c9c9\" "
				     "stroke=\"#fff\" stroke-width=\"0.5\"/>\n", a, y + 3, b - a > 0.5 ? b - a : 0.5, lh - 6);
		}
		for (size_t k = 0; k < l->ncoll; k++) {
			double a = px(&p, l->coll[k].s), b = px(&p, l->coll[k].e);
			isc_rep_putf(r, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n", a, y + 7,
				     b - a > 0.8 ? b - a : 0.8, lh - 14, l->coll[k].last ? "#d0453c" : "#3b6fb6");
		}
	}
	double step = nice_step(p.xmax / div, 6);
	for (double t = 0; t <= p.xmax / div + 1e-9 && step > 0; t += step) {
		double x = px(&p, t * div);
		isc_rep_putf(r, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>"
			     "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n", x, p.y1, x, p.y1 + 4, x,
			     p.y1 + 16, t);
	}
	isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time (%s)</text>\n</svg>\n",
		     (p.x0 + p.x1) / 2, hgt - 6, unit);
}

void isc_svg_heatmap(struct isc_rep *r, const char *title, const char *const *rows, size_t nrows, size_t ncols,
		     const double *v)
{
	double lo = INFINITY, hi = -INFINITY;
	for (size_t i = 0; i < nrows * ncols; i++)
		if (!isnan(v[i])) {
			lo = v[i] < lo ? v[i] : lo;
			hi = v[i] > hi ? v[i] : hi;
		}
	if (!(hi >= lo))
		lo = hi = 0;
	const char *unit;
	double div = time_unit(hi, &unit);
	double cw = ncols ? (W - 96) / (double)ncols : 1, ch = nrows > 40 ? 8 : 16, top = 46;
	double hgt = top + ch * (double)nrows + 40;
	svg_open(r, hgt, title);
	isc_rep_putf(r, "The iteration time of each rank (rows) and iteration (columns), from %.2f %s (light) to %.2f %s "
		     "(dark).", lo / div, unit, hi / div, unit);
	svg_body(r, hgt, title);
	isc_rep_putf(r, "<text x=\"80\" y=\"36\">light: %.2f %s, dark: %.2f %s</text>\n", lo / div, unit, hi / div, unit);
	for (size_t i = 0; i < nrows; i++) {
		double y = top + ch * (double)i;
		if (ch >= 12 || i % 8 == 0) {
			isc_rep_putf(r, "<text x=\"74\" y=\"%.1f\" text-anchor=\"end\">", y + ch - 3);
			isc_rep_xml(r, rows[i], 24);
			isc_rep_put(r, "</text>\n");
		}
		for (size_t k = 0; k < ncols; k++) {
			double x = v[i * ncols + k];
			if (isnan(x))
				continue;
			double f = hi > lo ? (x - lo) / (hi - lo) : 0.5;
			int c = (int)(235 - 190 * clamp01(f));
			isc_rep_putf(r, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"rgb(%d,%d,255)\">"
				     "<title>%.3f %s</title></rect>\n", 80 + cw * (double)k, y, cw, ch, c, c, x / div, unit);
		}
	}
	isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">iteration (1 to %zu)</text>\n</svg>\n",
		     80 + (W - 96) / 2, hgt - 6, ncols);
}
