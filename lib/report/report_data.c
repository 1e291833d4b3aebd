/*
 * report_data.c - the report modules' output buffer and escaping (XML;
 * Markdown: isc_md_escape, cut text, code spans), the formatting of
 * numbers, of a document's fields and of its file:line locations, and the
 * validated readers of the chart data and of findings (both shapes); see
 * report.h.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

void isc_rep_putn(struct isc_rep *r, const char *s, size_t n)
{
	if (!r->err)
		r->err = isc_buf_put(&r->b, s, n);
}

void isc_rep_put(struct isc_rep *r, const char *s)
{
	isc_rep_putn(r, s, strlen(s));
}

void isc_rep_putf(struct isc_rep *r, const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	isc_rep_putn(r, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

void isc_rep_md(struct isc_rep *m, const char *s)
{
	if (!m->err)
		m->err = isc_md_escape(&m->b, s ? s : "");
}

void isc_rep_xml(struct isc_rep *r, const char *s, size_t max)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	size_t i;
	for (i = 0; p[i] && !r->err; i++) {
		if (max && i >= max && (p[i] & 0xc0) != 0x80) {
			isc_rep_put(r, "…");
			return;
		}
		switch (p[i]) {
		case '&': isc_rep_put(r, "&amp;"); break;
		case '<': isc_rep_put(r, "&lt;"); break;
		case '>': isc_rep_put(r, "&gt;"); break;
		case '"': isc_rep_put(r, "&quot;"); break;
		case '\'': isc_rep_put(r, "&#39;"); break;
		default:
			if (p[i] == '\t' || p[i] == '\n' || p[i] == '\r')
				isc_rep_put(r, " ");
			else if (p[i] >= 0x20 && p[i] != 0x7f)
				isc_rep_putn(r, (const char *)p + i, 1);
		}
	}
}

void isc_rep_md_cut(struct isc_rep *m, const char *s, size_t max)
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

void isc_rep_code(struct isc_rep *m, const char *s)
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

/* ---- numbers and fields -------------------------------------------------- */
double isc_rep_value(const cJSON *item)
{
	if (!cJSON_IsNumber(item))
		return NAN;
	double v = item->valuedouble;
	return isfinite(v) && v >= 0 && v <= ISC_REP_MAX_VALUE ? v : NAN;
}

const char *isc_rep_fmt_ns(char *buf, size_t cap, double ns)
{
	double a = fabs(ns);
	if (!isfinite(ns))
		snprintf(buf, cap, "n/a");
	else if (a >= ISC_REP_FIXED_MAX * 1e9)
		snprintf(buf, cap, "%.3e s", ns / 1e9);
	else if (a < 1e3)
		snprintf(buf, cap, "%.0f ns", ns);
	else if (a < 1e6)
		snprintf(buf, cap, "%.1f µs", ns / 1e3);
	else if (a < 1e9)
		snprintf(buf, cap, "%.1f ms", ns / 1e6);
	else
		snprintf(buf, cap, "%.2f s", ns / 1e9);
	return buf;
}

const char *isc_rep_fmt_bytes(char *buf, size_t cap, double b)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;
	double a = fabs(b);
	if (!isfinite(b)) {
		snprintf(buf, cap, "n/a");
		return buf;
	}
	while (a >= 1024 && u < 4) {
		a /= 1024;
		b /= 1024;
		u++;
	}
	snprintf(buf, cap, a >= ISC_REP_FIXED_MAX ? "%.3e %s" : u ? "%.1f %s" : "%.0f %s", b, unit[u]);
	return buf;
}

const char *isc_rep_field(char *buf, size_t cap, const cJSON *o, const char *path, char kind)
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

void isc_rep_location(struct isc_rep *m, const cJSON *o, bool parens)
{
	const char *file = isc_doc_str(o, "file", "");
	double line = isc_doc_num(o, "line", 0);
	if (!*file)
		return;
	isc_rep_put(m, parens ? "(" : "");
	isc_rep_md(m, file);
	if (line > 0)
		isc_rep_putf(m, ":%.0f", line);
	isc_rep_put(m, parens ? ")" : "");
}

/* ---- timeseries and iterations ----------------------------------------- */
bool isc_rep_ts_get(const cJSON *root, struct isc_rep_ts *ts)
{
	double t0 = 0, n;
	memset(ts, 0, sizeof(*ts));
	if (!cJSON_IsObject(isc_doc_get(root, "timeseries")))
		return false;
	/* t0 is relative to summary.start_ns and may be negative in principle */
	if (isc_doc_have(root, "timeseries.t0_ns", &t0) && !(fabs(t0) <= ISC_REP_MAX_VALUE))
		return false;
	ts->t0_ns = t0;
	ts->bucket_ns = isc_rep_value(isc_doc_get(root, "timeseries.bucket_ns"));
	n = isc_rep_value(isc_doc_get(root, "timeseries.buckets"));
	if (!(ts->bucket_ns >= 1) || !(n >= 1 && n <= ISC_REP_MAX_BUCKETS) || n != floor(n))
		return false;
	ts->n = (size_t)n;
	ts->ncpu = isc_rep_value(isc_doc_get(root, "timeseries.ncpu"));
	if (!(ts->ncpu >= 1))
		ts->ncpu = isc_rep_value(isc_doc_get(root, "environment.ncpu"));
	if (!(ts->ncpu >= 1 && ts->ncpu <= 1e6))
		ts->ncpu = 0;
	return true;
}

size_t isc_rep_series(const cJSON *root, const struct isc_rep_ts *ts, const char *name, double *v)
{
	char path[96];
	size_t i, good = 0;
	snprintf(path, sizeof(path), "timeseries.%s", name);
	const cJSON *a = isc_doc_get(root, path);
	for (i = 0; i < ts->n; i++)
		v[i] = NAN;
	if (!cJSON_IsArray(a))
		return 0;
	const cJSON *x = a->child;
	for (i = 0; i < ts->n && x; i++, x = x->next)
		if (!isnan(v[i] = isc_rep_value(x)))
			good++;
	return good;
}

size_t isc_rep_spans(const cJSON *root, struct isc_rep_span *s)
{
	const cJSON *a = isc_doc_get(root, "iterations.spans"), *x;
	double warm = isc_rep_value(isc_doc_get(root, "iterations.warmup_spans"));
	size_t n = 0, i = 0;
	if (!cJSON_IsArray(a))
		return 0;
	cJSON_ArrayForEach(x, a) {
		double b = NAN, e = NAN;
		if (n == ISC_REP_MAX_SPANS)
			break;
		if (cJSON_IsArray(x) && cJSON_GetArraySize(x) == 2) {
			/* relative times; a negative start is possible when t0 is */
			b = cJSON_IsNumber(x->child) ? x->child->valuedouble : NAN;
			e = cJSON_IsNumber(x->child->next) ? x->child->next->valuedouble : NAN;
		}
		bool warmup = isfinite(warm) && (double)i < warm;
		i++;
		if (!(fabs(b) <= ISC_REP_MAX_VALUE && fabs(e) <= ISC_REP_MAX_VALUE && e >= b))
			continue;
		s[n++] = (struct isc_rep_span){ b, e, warmup };
	}
	return n;
}

bool isc_rep_hist_get(const cJSON *root, struct isc_rep_hist *h)
{
	const cJSON *e = isc_doc_get(root, "iterations.histogram.edges_ns");
	const cJSON *c = isc_doc_get(root, "iterations.histogram.counts");
	int k = cJSON_GetArraySize(c);
	if (!cJSON_IsArray(e) || !cJSON_IsArray(c) || k < 1 || k > ISC_REP_MAX_BINS ||
	    cJSON_GetArraySize(e) != k + 1)
		return false;
	h->k = (size_t)k;
	const cJSON *x = e->child;
	for (size_t i = 0; i <= h->k; i++, x = x->next)
		if (isnan(h->edges[i] = isc_rep_value(x)) || (i && h->edges[i] < h->edges[i - 1]))
			return false;
	x = c->child;
	for (size_t i = 0; i < h->k; i++, x = x->next)
		if (isnan(h->counts[i] = isc_rep_value(x)))
			return false;
	h->p50 = isc_rep_value(isc_doc_get(root, "iterations.latency_ns.p50"));
	h->p99 = isc_rep_value(isc_doc_get(root, "iterations.latency_ns.p99"));
	return true;
}

/* ---- findings ------------------------------------------------------------ */
static double num_or_nan(const cJSON *o, const char *path)
{
	double v;
	return isc_doc_have(o, path, &v) && isfinite(v) ? v : NAN;
}

void isc_rep_finding_get(const cJSON *f, struct isc_rep_finding *o)
{
	const cJSON *s = isc_doc_get(f, "suggestion"), *ev = isc_doc_get(f, "evidence");
	memset(o, 0, sizeof(*o));
	o->id = isc_doc_str(f, "id", NULL);
	o->title = isc_doc_str(f, "title", NULL);
	o->severity = isc_doc_str(f, "severity", NULL);
	o->confidence = num_or_nan(f, "confidence");
	if (cJSON_IsObject(s)) {
		o->action = isc_doc_str(s, "action", NULL);
		o->rationale = isc_doc_str(s, "rationale", NULL);
		o->estimate = isc_doc_str(s, "estimate", NULL);
		o->saving_ns = num_or_nan(s, "estimated_saving_ns");
		o->saving_pct = num_or_nan(s, "estimated_saving_pct");
		o->saving_bytes = num_or_nan(s, "estimated_saving_bytes");
	} else {
		o->saving_bytes = NAN;
		o->action = cJSON_IsString(s) ? s->valuestring : NULL;
		o->saving_ns = num_or_nan(f, "estimated_saving_ns");
		o->saving_pct = num_or_nan(f, "estimated_saving_pct");
	}
	if (!cJSON_IsObject(ev))
		return;
	const cJSON *m = isc_doc_get(ev, "metrics"), *tr = isc_doc_get(ev, "time_ranges"),
		    *top = isc_doc_get(ev, "top");
	if (cJSON_IsObject(m) || cJSON_IsArray(tr) || cJSON_IsArray(top)) {
		o->metrics = cJSON_IsObject(m) ? m : NULL;
		o->time_ranges = cJSON_IsArray(tr) ? tr : NULL;
		o->top = cJSON_IsArray(top) ? top : NULL;
	} else {
		o->metrics = ev; /* schema 1: the evidence itself holds the named numbers */
	}
}
