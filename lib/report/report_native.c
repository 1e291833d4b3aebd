/*
 * report_native.c - native stacks in the report, from the findings'
 * native section alone: the "### Native stacks" part of ## CPU (coverage,
 * unwinding, functions, ops, threads), the flame graph of the HTML page
 * and, when the findings carry a comparison with native stacks, its
 * differential; and the flame-graph formats of iscope-report -f folded
 * and -f speedscope, written from native.tree through lib/stacks.
 *
 * The flame graph (one <svg>, no script): every thread's tree merged by
 * frame path, root at the bottom, a frame as wide as its samples,
 * children in the order of their text (as flamegraph.pl), frames under
 * half a pixel left out.  Each frame is a <g> with a <title> (the full
 * name, samples, share: the browser's tooltip) and a <text> label cut
 * to its width, so the browser's find-in-page searches the labels: the
 * report has no script (the security suite refuses one), so there is no
 * search box.
 *
 *   y ^  [sgemm_kernel]   [softmax]
 *     |  [aten::addmm           ]
 *     |  [forward (m.py:12)             ]  [tokenize (t.py:3)]
 *     |  [all: 1151 samples                                   ]
 *     +------------------------------------------------------> share
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"
#include "isc_util.h"         /* isc_umap: (parent, frame) -> merged node */
#include "../stacks/stacks.h" /* isc_stree_*: the folded and speedscope writers */

#define MAX_TREE_NODES 1000000
#define MAX_DEPTH 1024

/* ---- native.tree, checked ------------------------------------------------ */

struct ntree {
	size_t n, nf;
	int64_t *parent, *frame;
	double *self, *total;
	const cJSON **frames; /* nf frame objects of the document */
};

static void ntree_free(struct ntree *t)
{
	free(t->parent);
	free(t->frame);
	free(t->self);
	free(t->total);
	free(t->frames);
	memset(t, 0, sizeof(*t));
}

/* An array of n integers in [lo, hi] into v (malloc'd); false otherwise. */
static bool int_array(const cJSON *a, size_t n, double lo, double hi, void *out, bool as_double)
{
	if ((size_t)cJSON_GetArraySize(a) != n)
		return false;
	void *v = malloc((n ? n : 1) * 8);
	if (!v)
		return false;
	size_t i = 0;
	const cJSON *x;
	cJSON_ArrayForEach(x, a) {
		if (!cJSON_IsNumber(x) || !(x->valuedouble >= lo && x->valuedouble <= hi) ||
		    x->valuedouble != floor(x->valuedouble)) {
			free(v);
			return false;
		}
		if (as_double)
			((double *)v)[i++] = x->valuedouble;
		else
			((int64_t *)v)[i++] = (int64_t)x->valuedouble;
	}
	*(void **)out = v;
	return true;
}

/*
 * native.tree of root into t.  false (with a message pushed) when absent
 * or malformed: arrays of unequal length, a parent not before its child,
 * a frame index out of range, a root (parent -1) with a frame or a node
 * with none, counts that are not whole numbers in [0, ISC_REP_MAX_VALUE].
 */
static bool ntree_get(const cJSON *root, struct ntree *t)
{
	const cJSON *tr = isc_doc_get(root, "native.tree"), *fr = isc_doc_arr(tr, "frames"), *x;
	memset(t, 0, sizeof(*t));
	if (!cJSON_IsObject(tr)) {
		isc_err_push("no native stacks in these findings (record with iscope-record --native=on)");
		return false;
	}
	t->n = (size_t)cJSON_GetArraySize(isc_doc_arr(tr, "parent"));
	t->nf = (size_t)cJSON_GetArraySize(fr);
	if (t->n > MAX_TREE_NODES || !(t->frames = malloc((t->nf ? t->nf : 1) * sizeof(*t->frames))))
		goto bad;
	size_t i = 0;
	cJSON_ArrayForEach(x, fr) {
		if (!cJSON_IsObject(x) || !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(x, "name")))
			goto bad;
		t->frames[i++] = x;
	}
	if (!int_array(isc_doc_arr(tr, "parent"), t->n, -1, (double)t->n, &t->parent, false) ||
	    !int_array(isc_doc_arr(tr, "frame"), t->n, -1, (double)t->nf, &t->frame, false) ||
	    !int_array(isc_doc_arr(tr, "self"), t->n, 0, ISC_REP_MAX_VALUE, &t->self, true) ||
	    !int_array(isc_doc_arr(tr, "total"), t->n, 0, ISC_REP_MAX_VALUE, &t->total, true))
		goto bad;
	for (i = 0; i < t->n; i++)
		if (t->parent[i] >= (int64_t)i || t->frame[i] >= (int64_t)t->nf || (t->parent[i] < 0) != (t->frame[i] < 0))
			goto bad;
	return true;
bad:
	ntree_free(t);
	isc_err_push("native.tree is malformed");
	return false;
}

static const char *frame_str(const struct ntree *t, int64_t f, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->frames[f], k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static const char *frame_kind(const struct ntree *t, int64_t f)
{
	const char *k = frame_str(t, f, "kind");
	return k ? k : "";
}

/* lib/native's frame kinds by name (stacks.h) */
static uint8_t kind_code(const char *k)
{
	static const char *const names[] = { "?", "native", "unnamed", "jit", "kernel", "truncated", "python", "op",
					     "other" };
	for (uint8_t i = 1; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(k, names[i]))
			return i;
	return 1;
}

/* ---- -f folded, -f speedscope -------------------------------------------- */

static int stree_of(const cJSON *root, struct isc_stree **out)
{
	struct ntree t;
	struct isc_stree *s = NULL;
	static struct isc_sframe path[MAX_DEPTH];
	int rc = -ENOMEM;
	*out = NULL;
	if (!ntree_get(root, &t))
		return -EINVAL;
	uint32_t *tid = malloc((t.n ? t.n : 1) * sizeof(*tid)), *pid = malloc((t.n ? t.n : 1) * sizeof(*pid));
	if (!tid || !pid || isc_stree_new(&s))
		goto out;
	for (size_t i = 0; i < t.n; i++) /* a root not listed in threads: thread 0/its index */
		pid[i] = 0, tid[i] = (uint32_t)i;
	const cJSON *th;
	cJSON_ArrayForEach(th, isc_doc_arr(root, "native.tree.threads")) {
		double r = isc_doc_num(th, "root", -1), p = isc_doc_num(th, "pid", 0), d = isc_doc_num(th, "tid", 0);
		if (!(r >= 0 && r < (double)t.n && t.parent[(size_t)r] < 0 && p >= 0 && p <= UINT32_MAX && d >= 0 &&
		      d <= UINT32_MAX))
			continue;
		pid[(size_t)r] = (uint32_t)p;
		tid[(size_t)r] = (uint32_t)d;
		char label[300];
		const char *name = isc_doc_str(th, "name", NULL);
		if (name)
			snprintf(label, sizeof(label), "%s %u/%u", name, (unsigned)p, (unsigned)d);
		else
			snprintf(label, sizeof(label), "%u/%u", (unsigned)p, (unsigned)d);
		if (isc_stree_name_thread(s, (uint32_t)p, (uint32_t)d, label))
			goto out;
	}
	for (size_t i = 0; i < t.n; i++) {
		if (t.parent[i] < 0 || t.self[i] <= 0)
			continue;
		unsigned n = 0;
		int64_t k = (int64_t)i;
		for (; t.parent[k] >= 0 && n < MAX_DEPTH; k = t.parent[k]) {
			int64_t f = t.frame[k];
			path[n++] = (struct isc_sframe){ frame_str(&t, f, "name"), frame_str(&t, f, "file"),
							 (uint32_t)fmax(0, fmin(UINT32_MAX, isc_doc_num(t.frames[f], "line", 0))),
							 kind_code(frame_kind(&t, f)) };
		}
		while (t.parent[k] >= 0) /* deeper than MAX_DEPTH: up to the root */
			k = t.parent[k];
		if (isc_stree_add(s, pid[k], tid[k], path, n, (uint64_t)t.self[i]))
			goto out;
	}
	*out = s;
	s = NULL;
	rc = 0;
out:
	if (rc)
		isc_err_push("out of memory");
	isc_stree_free(s);
	free(tid);
	free(pid);
	ntree_free(&t);
	return rc;
}

int isc_rep_stacks(const cJSON *root, bool speedscope, char **out)
{
	struct isc_stree *s;
	char *buf = NULL;
	size_t len = 0;
	int rc = stree_of(root, &s);
	*out = NULL;
	if (rc)
		return rc;
	FILE *f = open_memstream(&buf, &len);
	if (!f) {
		isc_stree_free(s);
		isc_err_push("out of memory");
		return -ENOMEM;
	}
	if (speedscope) {
		char name[512];
		snprintf(name, sizeof(name), "InferScope: %s", isc_doc_str(root, "environment.cmdline", "native stacks"));
		double period = isc_doc_num(root, "native.sampler.period_ns", 0);
		rc = isc_stree_write_speedscope(s, f, name, period > 0 && period < 1e12 ? (uint64_t)period : 0);
	} else {
		rc = isc_stree_write_folded(s, f, true);
	}
	if (fclose(f) || rc) {
		free(buf);
		isc_stree_free(s);
		isc_err_push("out of memory");
		return -ENOMEM;
	}
	isc_stree_free(s);
	*out = buf;
	return 0;
}

/* ---- the flame graph --------------------------------------------------- */

#define FW 1100.0 /* width */
#define FH 17.0   /* a frame's height */
#define FTOP 44.0 /* title and legend */

/* The tree merged over threads: node i's frame, parent, samples through it, document node (for deltas). */
struct merged {
	size_t n;
	int64_t *frame, *parent, *first;
	double *total;
	uint32_t *kids, *kstart; /* children in drawing order: kids[kstart[i] .. kstart[i + 1]) */
	int64_t *of;             /* document node -> merged node */
};

static void merged_free(struct merged *m)
{
	free(m->frame);
	free(m->parent);
	free(m->first);
	free(m->total);
	free(m->kids);
	free(m->kstart);
	free(m->of);
	memset(m, 0, sizeof(*m));
}

static const struct ntree *sort_t;
static const struct merged *sort_m;

static int kid_cmp(const void *x, const void *y)
{
	int64_t a = sort_m->frame[*(const uint32_t *)x], b = sort_m->frame[*(const uint32_t *)y];
	int c = strcmp(frame_str(sort_t, a, "name"), frame_str(sort_t, b, "name"));
	return c ? c : (a > b) - (a < b);
}

/* Node 0 is the root of all threads. */
static int merge(const struct ntree *t, struct merged *m)
{
	struct isc_umap map = { 0 };
	size_t cap = t->n + 1;
	memset(m, 0, sizeof(*m));
	m->frame = malloc(cap * sizeof(*m->frame));
	m->parent = malloc(cap * sizeof(*m->parent));
	m->first = malloc(cap * sizeof(*m->first));
	m->total = calloc(cap, sizeof(*m->total));
	m->of = malloc(cap * sizeof(*m->of));
	m->kstart = calloc(cap + 2, sizeof(*m->kstart));
	m->kids = malloc(cap * sizeof(*m->kids));
	if (!m->frame || !m->parent || !m->first || !m->total || !m->of || !m->kstart || !m->kids)
		goto nomem;
	m->n = 1;
	m->frame[0] = m->parent[0] = -1;
	m->first[0] = -1;
	for (size_t i = 0; i < t->n; i++) {
		if (t->parent[i] < 0) {
			m->of[i] = 0;
			m->total[0] += t->total[i];
			continue;
		}
		int64_t p = m->of[t->parent[i]];
		uint32_t *slot;
		if (isc_umap_slot(&map, (uint64_t)p << 32 | (uint64_t)t->frame[i], &slot))
			goto nomem;
		if (*slot == ISC_UMAP_NONE) {
			*slot = (uint32_t)m->n;
			m->frame[m->n] = t->frame[i];
			m->parent[m->n] = p;
			m->first[m->n] = (int64_t)i;
			m->n++;
		}
		m->of[i] = *slot;
		m->total[*slot] += t->total[i];
	}
	isc_umap_free(&map);
	for (size_t i = 1; i < m->n; i++)
		m->kstart[m->parent[i] + 2]++;
	for (size_t i = 0; i < m->n; i++)
		m->kstart[i + 2] += m->kstart[i + 1];
	for (size_t i = 1; i < m->n; i++)
		m->kids[m->kstart[m->parent[i] + 1]++] = (uint32_t)i;
	sort_t = t;
	sort_m = m;
	for (size_t i = 0; i < m->n; i++)
		if (m->kstart[i + 1] - m->kstart[i] > 1)
			qsort(m->kids + m->kstart[i], m->kstart[i + 1] - m->kstart[i], sizeof(*m->kids), kid_cmp);
	return 0;
nomem:
	isc_umap_free(&map);
	merged_free(m);
	return -ENOMEM;
}

/* A colour for a frame: by kind, its shade from its name (the same name, the same colour). */
static void frame_color(const char *kind, const char *name, char *buf, size_t cap)
{
	uint32_t h = 2166136261u;
	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 16777619u;
	unsigned v = h % 55;
	if (!strcmp(kind, "python"))
		snprintf(buf, cap, "rgb(%u,%u,230)", 90 + v, 150 + v);
	else if (!strcmp(kind, "kernel"))
		snprintf(buf, cap, "rgb(230,%u,%u)", 140 + v, 60 + v / 2);
	else if (!strcmp(kind, "op"))
		snprintf(buf, cap, "rgb(%u,200,%u)", 80 + v, 90 + v);
	else if (!strcmp(kind, "unnamed") || !strcmp(kind, "jit") || !strcmp(kind, "truncated") ||
		 !strcmp(kind, "other"))
		snprintf(buf, cap, "rgb(%u,%u,%u)", 175 + v / 2, 175 + v / 2, 175 + v / 2);
	else
		snprintf(buf, cap, "rgb(240,%u,%u)", 110 + 2 * v, 40 + v / 2);
}

/* A delta (percentage points) as a colour: red grew, blue shrank, white unchanged. */
static void delta_color(double d, double maxabs, char *buf, size_t cap)
{
	double f = maxabs > 0 ? fmin(1, fabs(d) / maxabs) : 0;
	unsigned c = (unsigned)lround(235 - 175 * f);
	if (d > 0)
		snprintf(buf, cap, "rgb(250,%u,%u)", c, c);
	else if (d < 0)
		snprintf(buf, cap, "rgb(%u,%u,250)", c, c);
	else
		snprintf(buf, cap, "rgb(235,235,235)");
}

/* The text of merged node i as the folded format shows it. */
static void node_text(const struct ntree *t, const struct merged *m, size_t i, char *buf, size_t cap)
{
	if (i == 0) {
		snprintf(buf, cap, "all");
		return;
	}
	int64_t f = m->frame[i];
	const char *name = frame_str(t, f, "name"), *file = frame_str(t, f, "file");
	if (!strcmp(frame_kind(t, f), "python"))
		snprintf(buf, cap, "%s (%s:%.0f)", name, file ? file : "", isc_doc_num(t->frames[f], "line", 0));
	else if (file && !strcmp(frame_kind(t, f), "native"))
		snprintf(buf, cap, "%s [%s]", name, strrchr(file, '/') ? strrchr(file, '/') + 1 : file);
	else
		snprintf(buf, cap, "%s", name);
}

/*
 * One flame graph of the findings' tree; with delta (node_delta_pct, one
 * per document node, else NULL) the differential one, coloured by the
 * change of each frame's share.
 */
static void flame_svg(struct isc_rep *r, const struct ntree *t, const struct merged *m, const double *delta,
		      const char *title)
{
	size_t *stack = malloc((m->n + 1) * sizeof(*stack)), *iter = malloc((m->n + 1) * sizeof(*iter));
	double *x0 = malloc((m->n + 1) * sizeof(*x0));
	unsigned *depth = malloc((m->n + 1) * sizeof(*depth));
	if (!stack || !iter || !x0 || !depth) {
		r->err = -ENOMEM;
		goto out;
	}
	double scale = FW / m->total[0], maxabs = 0;
	unsigned maxd = 0;
	/* layout: depth-first, children left to right */
	size_t sp = 0;
	stack[sp] = 0;
	iter[sp] = m->kstart[0];
	x0[0] = 0;
	depth[0] = 0;
	for (;;) {
		size_t n = stack[sp];
		if (iter[sp] < m->kstart[n + 1]) {
			size_t c = m->kids[iter[sp]], prev = iter[sp] > m->kstart[n] ? m->kids[iter[sp] - 1] : (size_t)-1;
			x0[c] = prev == (size_t)-1 ? x0[n] : x0[prev] + m->total[prev] * scale;
			depth[c] = depth[n] + 1;
			iter[sp]++;
			if (m->total[c] * scale >= 0.5) {
				if (depth[c] > maxd)
					maxd = depth[c];
				stack[++sp] = c;
				iter[sp] = m->kstart[c];
			}
			continue;
		}
		if (sp == 0)
			break;
		sp--;
	}
	if (delta)
		for (size_t i = 1; i < m->n; i++)
			if (m->first[i] >= 0 && isfinite(delta[m->first[i]]))
				maxabs = fmax(maxabs, fabs(delta[m->first[i]]));
	if (maxd > 200)
		maxd = 200;
	double h = FTOP + (maxd + 1) * FH + 8;
	unsigned id = ++r->charts;
	isc_rep_putf(r,
		     "<svg width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		     "aria-labelledby=\"isc-c%u-t isc-c%u-d\" font-family=\"sans-serif\" font-size=\"11\">\n"
		     "<title id=\"isc-c%u-t\">",
		     FW + 16, h, FW + 16, h, id, id, id);
	isc_rep_xml(r, title, 0);
	isc_rep_putf(r, "</title>\n<desc id=\"isc-c%u-d\">", id);
	isc_rep_putf(r, "%.0f samples of every thread, merged by stack; a frame is as wide as the samples through it, "
			"its callers below it. ",
		     m->total[0]);
	isc_rep_put(r, delta ? "Red frames hold a larger share of the samples than in the baselines, blue a smaller "
			       "one; the deepest red is the largest change. "
			     : "Blue frames are Python, orange and red native code, brown the kernel, green torch "
			       "ops, grey unnamed code. ");
	isc_rep_put(r, "Hover a frame for its name and samples; the browser's find-in-page searches the labels.");
	isc_rep_putf(r, "</desc>\n<rect width=\"%.0f\" height=\"%.0f\" fill=\"#fff\"/>\n", FW + 16, h);
	isc_rep_put(r, "<text x=\"8\" y=\"18\" font-size=\"14\" font-weight=\"bold\">");
	isc_rep_xml(r, title, 0);
	isc_rep_put(r, "</text>\n");
	if (delta)
		isc_rep_putf(r, "<text x=\"8\" y=\"34\">red: share grew, blue: shrank (largest change %.2f "
				"percentage points)</text>\n", maxabs);
	else
		isc_rep_put(r, "<text x=\"8\" y=\"34\">Python (blue), native (orange, red), kernel (brown), torch ops "
			       "(green), unnamed (grey)</text>\n");
	/* the frames, in layout order */
	sp = 0;
	stack[0] = 0;
	iter[0] = m->kstart[0];
	for (size_t n = 0;;) {
		if (depth[n] <= maxd) {
			char text[1200], color[32];
			double w = m->total[n] * scale, y = FTOP + (maxd - depth[n]) * FH;
			double d = delta && n && m->first[n] >= 0 ? delta[m->first[n]] : 0;
			node_text(t, m, n, text, sizeof(text));
			if (delta)
				delta_color(isfinite(d) ? d : 0, maxabs, color, sizeof(color));
			else
				frame_color(n ? frame_kind(t, m->frame[n]) : "other", text, color, sizeof(color));
			isc_rep_put(r, "<g><title>");
			isc_rep_xml(r, text, 0);
			isc_rep_putf(r, " — %.0f samples, %.2f %%", m->total[n], 100 * m->total[n] / m->total[0]);
			if (delta && n)
				isc_rep_putf(r, ", %+.2f percentage points", isfinite(d) ? d : 0);
			isc_rep_putf(r, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\" "
					"stroke=\"#fff\" stroke-width=\"0.5\" data-series=\"frame\"/>",
				     8 + x0[n], y, fmax(w, 0.5), FH - 1, color);
			if (w >= 28) {
				isc_rep_putf(r, "<text x=\"%.1f\" y=\"%.1f\">", 8 + x0[n] + 3, y + FH - 5);
				isc_rep_xml(r, text, (size_t)((w - 6) / 6.5));
				isc_rep_put(r, "</text>");
			}
			isc_rep_put(r, "</g>\n");
		}
		/* next node in depth-first order among those wide enough */
		for (;;) {
			size_t p = stack[sp];
			while (iter[sp] < m->kstart[p + 1] && m->total[m->kids[iter[sp]]] * scale < 0.5)
				iter[sp]++;
			if (iter[sp] < m->kstart[p + 1]) {
				n = m->kids[iter[sp]++];
				stack[++sp] = n;
				iter[sp] = m->kstart[n];
				break;
			}
			if (sp == 0) {
				n = (size_t)-1;
				break;
			}
			sp--;
		}
		if (n == (size_t)-1)
			break;
	}
	isc_rep_put(r, "</svg>\n");
out:
	free(stack);
	free(iter);
	free(x0);
	free(depth);
}

/* The flame graphs of the HTML page (between the chart markers): the run's, and its differential. */
static void flame_graphs(struct isc_rep *m, const cJSON *root)
{
	struct ntree t;
	struct merged mg;
	if (!ntree_get(root, &t)) {
		isc_err_clear();
		return;
	}
	if (merge(&t, &mg)) {
		ntree_free(&t);
		m->err = -ENOMEM;
		return;
	}
	if (mg.total[0] > 0) {
		isc_rep_put(m, ISC_REP_CHART_BEGIN);
		flame_svg(m, &t, &mg, NULL, "Flame graph: native and Python stacks, all threads");
		isc_rep_put(m, ISC_REP_CHART_END);
	}
	const cJSON *dl = isc_doc_arr(root, "comparison.native.node_delta_pct");
	if (mg.total[0] > 0 && dl && (size_t)cJSON_GetArraySize(dl) == t.n) {
		double *d = malloc((t.n ? t.n : 1) * sizeof(*d));
		size_t i = 0;
		const cJSON *x;
		if (!d) {
			m->err = -ENOMEM;
		} else {
			cJSON_ArrayForEach(x, dl) {
				double v = cJSON_IsNumber(x) ? x->valuedouble : NAN;
				d[i++] = isfinite(v) && fabs(v) <= 100 ? v : NAN;
			}
			isc_rep_put(m, ISC_REP_CHART_BEGIN);
			flame_svg(m, &t, &mg, d, "Differential flame graph: this run against the baselines");
			isc_rep_put(m, ISC_REP_CHART_END);
			free(d);
		}
	}
	merged_free(&mg);
	ntree_free(&t);
}

/* ---- the Markdown -------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;
	return s ? s + 1 : path ? path : "";
}

/* "name (file:line)" of a Python frame object, escaped for a table cell; nothing when py is not one. */
static void py_frame(struct isc_rep *m, const cJSON *py)
{
	if (!cJSON_IsObject(py))
		return;
	isc_rep_md(m, isc_doc_str(py, "name", "?"));
	isc_rep_put(m, " ");
	isc_rep_location(m, py, true);
}

/* "op in name (file:line)" of a native_context object, escaped for a table cell. */
static void context(struct isc_rep *m, const cJSON *c)
{
	const char *op = isc_doc_str(c, "op", NULL);
	const cJSON *py = isc_doc_get(c, "python");
	if (op)
		isc_rep_md(m, op);
	if (op && cJSON_IsObject(py))
		isc_rep_put(m, " in ");
	py_frame(m, py);
	if (!op && !cJSON_IsObject(py))
		isc_rep_put(m, "no Python frame");
}

/*
 * A table cell listing at most max (0: all) entries of arr, each with its
 * share ("pct"): with cut, the entry's name cut at cut bytes, joined by
 * ", "; with cut 0, its context, joined by "; ".  The share in
 * parentheses when paren.
 */
static void share_list(struct isc_rep *m, const cJSON *arr, int max, size_t cut, bool paren)
{
	const cJSON *x;
	char b[64];
	int n = 0;
	cJSON_ArrayForEach(x, arr) {
		if (max && n == max)
			break;
		if (n++)
			isc_rep_put(m, cut ? ", " : "; ");
		if (cut)
			isc_rep_md_cut(m, isc_doc_str(x, "name", "?"), cut);
		else
			context(m, x);
		isc_rep_putf(m, paren ? " (%s)" : " %s", isc_rep_field(b, sizeof(b), x, "pct", 'p'));
	}
}

static void functions(struct isc_rep *m, const cJSON *root)
{
	const cJSON *fn;
	char b[4][64];
	int i = 0;
	isc_rep_put(m, "\n| # | Native function | Library | Self | Total | Under (share of its samples) |\n"
		       "|---:|---|---|---:|---:|---|\n");
	cJSON_ArrayForEach(fn, isc_doc_arr(root, "native.functions")) {
		if (++i > 15)
			break;
		isc_rep_putf(m, "| %d | ", i);
		isc_rep_md_cut(m, isc_doc_str(fn, "name", "?"), 160);
		isc_rep_put(m, " | ");
		isc_rep_md(m, base_name(isc_doc_str(fn, "library", "")));
		isc_rep_putf(m, " | %s (%s) | %s (%s) | ", isc_rep_field(b[0], 64, fn, "self_ns", 'n'),
			     isc_rep_field(b[1], 64, fn, "self_pct", 'p'), isc_rep_field(b[2], 64, fn, "total_ns", 'n'),
			     isc_rep_field(b[3], 64, fn, "total_pct", 'p'));
		share_list(m, isc_doc_arr(fn, "above"), 0, 0, true);
		isc_rep_put(m, " |\n");
	}
}

static void ops(struct isc_rep *m, const cJSON *root)
{
	const cJSON *op;
	char b[2][64];
	int i = 0;
	if (!cJSON_GetArraySize(isc_doc_arr(root, "native.ops")))
		return;
	isc_rep_put(m, "\nInside the torch ops (a worker thread's samples count under the op it ran for):\n\n"
		       "| Op | Time | Share | Called from | Innermost functions (share of the op) |\n"
		       "|---|---:|---:|---|---|\n");
	cJSON_ArrayForEach(op, isc_doc_arr(root, "native.ops")) {
		if (++i > 10)
			break;
		isc_rep_put(m, "| ");
		isc_rep_md(m, isc_doc_str(op, "name", "?"));
		isc_rep_putf(m, " | %s | %s | ", isc_rep_field(b[0], 64, op, "ns", 'n'),
			     isc_rep_field(b[1], 64, op, "pct", 'p'));
		py_frame(m, isc_doc_get(op, "python"));
		isc_rep_put(m, " | ");
		share_list(m, isc_doc_arr(op, "kernels"), 0, 100, false);
		isc_rep_put(m, " |\n");
	}
}

static void threads(struct isc_rep *m, const cJSON *root)
{
	const cJSON *t;
	char b[4][64];
	int i = 0;
	isc_rep_put(m, "\nThreads (a worker's samples are put under the Python line and op of the one Python thread "
		       "inside a C call at the time):\n\n"
		       "| Thread | Python | CPU sampled | Dispatched | Top functions | Dispatched by |\n"
		       "|---|---|---:|---:|---|---|\n");
	cJSON_ArrayForEach(t, isc_doc_arr(root, "native.threads")) {
		if (++i > 12)
			break;
		isc_rep_put(m, "| ");
		isc_rep_md(m, isc_doc_str(t, "name", ""));
		isc_rep_putf(m, " %s/%s | %s | %s | %s | ", isc_rep_field(b[0], 64, t, "pid", 'i'),
			     isc_rep_field(b[1], 64, t, "tid", 'i'), cJSON_IsTrue(isc_doc_get(t, "python")) ? "yes" : "no",
			     isc_rep_field(b[2], 64, t, "ns", 'n'), isc_rep_field(b[3], 64, t, "dispatched_samples", 'i'));
		share_list(m, isc_doc_arr(t, "top"), 3, 80, false);
		isc_rep_put(m, " | ");
		share_list(m, isc_doc_arr(t, "dispatched_by"), 0, 0, false);
		isc_rep_put(m, " |\n");
	}
}

void isc_rep_native(struct isc_rep *m, const cJSON *root)
{
	const cJSON *nat = isc_doc_get(root, "native");
	char b[8][64];
	if (!cJSON_IsObject(nat))
		return;
	isc_rep_put(m, "\n### Native stacks\n\n");
	isc_rep_putf(m, "Native stacks sampled every %s of a thread's CPU time (`--native`): %s stacks; %s of the "
			"processes' CPU time (%s of %s) has a stack. %s of the worker threads' samples (threads that "
			"run no Python) are put under the Python line that dispatched their work.\n",
		     isc_rep_field(b[0], 64, nat, "sampler.period_ns", 'n'), isc_rep_field(b[1], 64, nat, "samples", 'i'),
		     isc_rep_field(b[2], 64, nat, "cpu_covered_pct", 'p'), isc_rep_field(b[3], 64, nat, "sampled_cpu_ns", 'n'),
		     isc_rep_field(b[4], 64, nat, "process_cpu_ns", 'n'), isc_rep_field(b[5], 64, nat, "dispatched_pct", 'p'));
	isc_rep_putf(m, "\nUnwinding: %s of the frames have no symbol (shown as library+offset",
		     isc_rep_field(b[0], 64, nat, "unwind.unnamed_pct", 'p'));
	const cJSON *ul = cJSON_GetArrayItem(isc_doc_arr(nat, "unwind.unnamed_by_library"), 0);
	if (ul) {
		isc_rep_put(m, "; most in ");
		isc_rep_md(m, base_name(isc_doc_str(ul, "library", "")));
	}
	isc_rep_putf(m, "), %s of them in no file (`[jit]`), %s of the stacks cut by the end of the stack copy "
			"(`[truncated]`); %s of the Python threads' stacks mixed with their Python frames.\n",
		     isc_rep_field(b[1], 64, nat, "unwind.jit_pct", 'p'), isc_rep_field(b[2], 64, nat, "unwind.truncated_pct", 'p'),
		     isc_rep_field(b[3], 64, nat, "paired_pct", 'p'));
	functions(m, root);
	isc_rep_put(m, "\nSelf: the stacks a function is innermost in; total: those it is on. Shares are of all "
		       "native samples.\n");
	ops(m, root);
	threads(m, root);
	if (m->html)
		flame_graphs(m, root);
	else
		isc_rep_put(m, "\nFlame graphs: the HTML report (`-f html`) draws one; `iscope-report -f folded` writes "
			       "the stacks for flamegraph.pl and `-f speedscope` for speedscope.app.\n");
	const cJSON *cf;
	int i = 0;
	if (!cJSON_GetArraySize(isc_doc_arr(root, "comparison.native.functions")))
		return;
	isc_rep_put(m, "\nNative functions whose share of the samples changed most against the baselines:\n\n"
		       "| Function | Library | Self share | Baselines | Change |\n|---|---|---:|---:|---:|\n");
	cJSON_ArrayForEach(cf, isc_doc_arr(root, "comparison.native.functions")) {
		if (++i > 10)
			break;
		isc_rep_put(m, "| ");
		isc_rep_md_cut(m, isc_doc_str(cf, "name", "?"), 120);
		isc_rep_put(m, " | ");
		isc_rep_md(m, base_name(isc_doc_str(cf, "library", "")));
		double d = isc_doc_num(cf, "delta_pct", NAN);
		isc_rep_putf(m, " | %s | %s | ", isc_rep_field(b[0], 64, cf, "self_pct", 'p'),
			     isc_rep_field(b[1], 64, cf, "base_self_pct", 'p'));
		if (isfinite(d) && fabs(d) <= 100)
			isc_rep_putf(m, "%+.2f points |\n", d);
		else
			isc_rep_put(m, "n/a |\n");
	}
}

void isc_rep_native_pool(struct isc_rep *m, const cJSON *nat)
{
	char b[3][64];
	const cJSON *top = isc_doc_get(nat, "top"), *by = cJSON_GetArrayItem(isc_doc_arr(nat, "dispatched_by"), 0);
	if (!cJSON_IsObject(nat)) {
		isc_rep_put(m, " |");
		return;
	}
	isc_rep_putf(m, " %s of its CPU sampled", isc_rep_field(b[0], 64, nat, "cpu_covered_pct", 'p'));
	if (cJSON_IsObject(top)) {
		isc_rep_put(m, ", mostly ");
		isc_rep_md_cut(m, isc_doc_str(top, "name", "?"), 80);
	}
	if (cJSON_IsObject(by) && isc_doc_num(nat, "dispatched_pct", 0) > 0) {
		isc_rep_putf(m, "; %s dispatched by ", isc_rep_field(b[1], 64, nat, "dispatched_pct", 'p'));
		context(m, by);
	}
	isc_rep_put(m, " |");
}
