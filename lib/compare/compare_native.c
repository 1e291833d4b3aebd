/*
 * compare_native.c - comparison.native: this run's native stacks against
 * the baselines', from the findings' native.tree alone (compare.c calls
 * it when this run has one).
 *
 * A frame path is the frames from a thread's root down to a node, every
 * thread merged (the flame graph's shape); its share is the samples
 * through it over all samples.  For each node of this run's tree,
 * node_delta_pct is its path's share here less its mean share in the
 * baselines that have native stacks (a path a baseline lacks has share 0
 * there), in percentage points: the differential flame graph's colour.
 * functions[] are the native frames whose self share (samples innermost
 * in them, over all samples) changed most, either way.
 *
 *   path hash(node) = mix(hash(parent) ^ hash(kind, name, file, line))
 *
 * Paths are compared by that 64-bit hash (the roots of all threads are
 * one path); a collision would merge two paths' shares.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare_native.h"
#include "isc_findings.h" /* isc_doc_* */
#include "isc_util.h"     /* isc_umap, isc_grow */

#define TOP_CHANGED 10
#define ROOT_PATH 0x9e3779b97f4a7c15ULL /* every thread's root */

static uint64_t str_hash(const char *s, uint64_t h)
{
	for (; s && *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return (h ^ 0xff) * 1099511628211ULL;
}

static uint64_t frame_hash(const cJSON *f)
{
	uint64_t h = str_hash(isc_doc_str(f, "kind", ""), 1469598103934665603ULL);
	h = str_hash(isc_doc_str(f, "name", ""), h);
	h = str_hash(isc_doc_str(f, "file", ""), h);
	return isc_mix64(h ^ (uint64_t)isc_doc_num(f, "line", 0));
}

/* A u64 -> double table (the shares of a run). */
struct shares {
	struct isc_umap m;
	double *v;
	size_t n, cap;
	double all; /* samples in the tree */
};

static int shares_add(struct shares *s, uint64_t key, double v)
{
	uint32_t *slot;
	if (isc_umap_slot(&s->m, key, &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&s->v, &s->cap, s->n, sizeof(*s->v))) {
			isc_umap_del(&s->m, key);
			return -ENOMEM;
		}
		s->v[s->n] = 0;
		*slot = (uint32_t)s->n++;
	}
	s->v[*slot] += v;
	return 0;
}

static double shares_get(const struct shares *s, uint64_t key)
{
	uint32_t i = isc_umap_get(&s->m, key);
	return i == ISC_UMAP_NONE ? 0 : s->v[i];
}

static void shares_free(struct shares *s)
{
	isc_umap_free(&s->m);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/*
 * The path hash of every node of doc's tree into *hash (malloc'd, *n
 * nodes), and the samples through each path (paths) and innermost in each
 * native frame (self, keyed by the frame's hash).  false when doc has no
 * well-formed tree: a parent after its child, a frame out of range.
 */
static bool tree_shares(const cJSON *doc, uint64_t **hash, size_t *n, struct shares *paths, struct shares *self,
			int *rc)
{
	const cJSON *tr = isc_doc_get(doc, "native.tree"), *fr = isc_doc_arr(tr, "frames");
	const cJSON *pa = isc_doc_arr(tr, "parent"), *fa = isc_doc_arr(tr, "frame"), *se = isc_doc_arr(tr, "self"),
		    *to = isc_doc_arr(tr, "total");
	size_t nn = (size_t)cJSON_GetArraySize(pa), nf = (size_t)cJSON_GetArraySize(fr);
	uint64_t *fh = NULL, *h = NULL;
	const cJSON **fo = NULL;
	*rc = 0;
	*hash = NULL;
	if (!cJSON_IsObject(tr) || !nn || (size_t)cJSON_GetArraySize(fa) != nn || (size_t)cJSON_GetArraySize(se) != nn ||
	    (size_t)cJSON_GetArraySize(to) != nn || nn > 1000000)
		return false;
	fh = malloc((nf ? nf : 1) * sizeof(*fh));
	fo = malloc((nf ? nf : 1) * sizeof(*fo));
	h = malloc(nn * sizeof(*h));
	if (!fh || !fo || !h) {
		*rc = -ENOMEM;
		goto bad;
	}
	size_t i = 0;
	const cJSON *x, *p = pa->child, *f = fa->child, *s = se->child, *t = to->child;
	cJSON_ArrayForEach(x, fr) {
		fo[i] = x;
		fh[i++] = frame_hash(x);
	}
	for (i = 0; i < nn; i++, p = p->next, f = f->next, s = s->next, t = t->next) {
		double pv = cJSON_IsNumber(p) ? p->valuedouble : -2, fv = cJSON_IsNumber(f) ? f->valuedouble : -2;
		double sv = cJSON_IsNumber(s) ? s->valuedouble : -1, tv = cJSON_IsNumber(t) ? t->valuedouble : -1;
		if (!(pv >= -1 && pv < (double)i && fv >= -1 && fv < (double)nf && sv >= 0 && sv <= 1e18 && tv >= 0 &&
		      tv <= 1e18) || (pv < 0) != (fv < 0))
			goto bad;
		if (pv < 0) {
			h[i] = ROOT_PATH;
			paths->all += tv;
			continue;
		}
		size_t fi = (size_t)fv;
		h[i] = isc_mix64(h[(size_t)pv] ^ fh[fi]);
		if ((*rc = shares_add(paths, h[i], tv)))
			goto bad;
		const char *k = isc_doc_str(fo[fi], "kind", "");
		if (sv > 0 && (!strcmp(k, "native") || !strcmp(k, "unnamed") || !strcmp(k, "jit") || !strcmp(k, "kernel")) &&
		    (*rc = shares_add(self, fh[fi], sv)))
			goto bad;
	}
	self->all = paths->all;
	free(fh);
	free(fo);
	*hash = h;
	*n = nn;
	return paths->all > 0;
bad:
	free(fh);
	free(fo);
	free(h);
	return false;
}

/* functions[]: a native frame of this run, its self share here and in the baselines */
struct changed {
	const cJSON *frame;
	double now, base;
};

static int by_change(const void *x, const void *y)
{
	const struct changed *a = x, *b = y;
	double da = fabs(a->now - a->base), db = fabs(b->now - b->base);
	if (da != db)
		return da > db ? -1 : 1;
	int c = strcmp(isc_doc_str(a->frame, "name", ""), isc_doc_str(b->frame, "name", ""));
	return c ? c : strcmp(isc_doc_str(a->frame, "file", ""), isc_doc_str(b->frame, "file", ""));
}

int isc_compare_native(struct isc_jb *jb, cJSON *cmp, const cJSON *cur, const cJSON *const *base, size_t nbase)
{
	struct shares cp = { 0 }, cs = { 0 }, bp = { 0 }, bs = { 0 };
	uint64_t *h = NULL, *bh = NULL;
	struct changed *ch = NULL;
	size_t n = 0, bn, k = 0;
	int rc = 0;
	if (!tree_shares(cur, &h, &n, &cp, &cs, &rc))
		goto out;
	/* the baselines: each path's share, averaged over those with native stacks */
	for (size_t b = 0; b < nbase; b++) {
		struct shares p1 = { 0 }, s1 = { 0 };
		if (tree_shares(base[b], &bh, &bn, &p1, &s1, &rc)) {
			for (size_t i = 0; i < p1.m.cap && !rc; i++)
				if (p1.m.v[i] != ISC_UMAP_NONE)
					rc = shares_add(&bp, p1.m.k[i], p1.v[p1.m.v[i]] / p1.all);
			for (size_t i = 0; i < s1.m.cap && !rc; i++)
				if (s1.m.v[i] != ISC_UMAP_NONE)
					rc = shares_add(&bs, s1.m.k[i], s1.v[s1.m.v[i]] / s1.all);
			k++;
		}
		free(bh);
		bh = NULL;
		shares_free(&p1);
		shares_free(&s1);
		if (rc)
			goto out;
	}
	if (!k)
		goto out;
	cJSON *nat = isc_jb_obj(jb, cmp, "native");
	isc_jb_num(jb, nat, "baselines", (double)k);
	isc_jb_str(jb, nat, "rule", "a frame path's share of the samples (every thread merged) here less its mean share "
		   "in the baselines with native stacks, in percentage points; functions by the change of their self "
		   "share");
	cJSON *dl = isc_jb_arr(jb, nat, "node_delta_pct");
	for (size_t i = 0; i < n; i++) {
		double now = h[i] != ROOT_PATH ? shares_get(&cp, h[i]) / cp.all : 1;
		double was = h[i] != ROOT_PATH ? shares_get(&bp, h[i]) / (double)k : 1;
		isc_jb_push_num(jb, dl, round(1e4 * (now - was)) / 100);
	}
	/* functions: this run's native frames (one it lost entirely has no name here, and is left out) */
	const cJSON *fr = isc_doc_arr(cur, "native.tree.frames"), *x;
	size_t nf = (size_t)cJSON_GetArraySize(fr), m = 0;
	ch = calloc(nf ? nf : 1, sizeof(*ch));
	if (!ch) {
		rc = -ENOMEM;
		goto out;
	}
	struct isc_umap seen = { 0 };
	cJSON_ArrayForEach(x, fr) {
		const char *kind = isc_doc_str(x, "kind", "");
		if (strcmp(kind, "native") && strcmp(kind, "unnamed") && strcmp(kind, "jit") && strcmp(kind, "kernel"))
			continue;
		uint64_t fh = frame_hash(x);
		uint32_t *slot;
		if (isc_umap_slot(&seen, fh, &slot)) {
			rc = -ENOMEM;
			break;
		}
		if (*slot != ISC_UMAP_NONE)
			continue;
		*slot = 1;
		ch[m++] = (struct changed){ x, shares_get(&cs, fh) / cs.all, shares_get(&bs, fh) / (double)k };
	}
	isc_umap_free(&seen);
	if (rc)
		goto out;
	qsort(ch, m, sizeof(*ch), by_change);
	cJSON *fa = isc_jb_arr(jb, nat, "functions");
	for (size_t i = 0; i < m && i < TOP_CHANGED; i++) {
		cJSON *o = isc_jb_push_obj(jb, fa);
		isc_jb_str(jb, o, "name", isc_doc_str(ch[i].frame, "name", "?"));
		isc_jb_str(jb, o, "library", isc_doc_str(ch[i].frame, "file", NULL));
		isc_jb_num(jb, o, "self_pct", round(1e4 * ch[i].now) / 100);
		isc_jb_num(jb, o, "base_self_pct", round(1e4 * ch[i].base) / 100);
		isc_jb_num(jb, o, "delta_pct", round(1e4 * (ch[i].now - ch[i].base)) / 100);
	}
out:
	free(h);
	free(ch);
	shares_free(&cp);
	shares_free(&cs);
	shares_free(&bp);
	shares_free(&bs);
	return rc;
}
