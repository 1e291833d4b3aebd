/*
 * containers.c - the u64 -> u32 hash map, the hash index and growing
 * arrays (sorted and copied even when empty) every stage uses (isc_util.h).
 *
 * Both tables keep keys and values in two arrays of a power-of-two
 * capacity, at most half full; a key lives at hash(key) & mask or after it:
 *
 *     slot:  0    1    2    3    4    5    6    7
 *     key:   -    A    B    C    -    -    D    -     A, B hash to 1: B probes on;
 *                                                     C hashes to 2, after B
 *
 * Deleting B shifts C back into slot 2 when its home allows, so a lookup
 * never meets a hole inside a probe run and no tombstones are needed.  The
 * map holds a key once; the index (isc_hindex) may hold a key many times,
 * each with its own value, all in the probe run from the key's home.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h"      /* isc_mix64 */
#include "isc_util.h"

#define NONE ISC_UMAP_NONE

/* Room for one more entry: at most half full after it (the check inline, the growth not). */
#define HAS_ROOM(n, cap) (2 * ((n) + 1) <= (cap))

/* Doubles the arrays of a table, its entries rehashed in slot order. */
static int table_grow(uint64_t **k, uint32_t **v, size_t *cap)
{
	size_t gcap = *cap ? *cap * 2 : 64;
	uint64_t *gk = malloc(gcap * sizeof(uint64_t));
	uint32_t *gv = malloc(gcap * sizeof(uint32_t));
	if (!gk || !gv) {
		free(gk);
		free(gv);
		return -ENOMEM;
	}
	memset(gv, 0xff, gcap * sizeof(uint32_t));
	for (size_t i = 0; i < *cap; i++) {
		if ((*v)[i] == NONE)
			continue;
		size_t j = isc_mix64((*k)[i]) & (gcap - 1);
		while (gv[j] != NONE)
			j = (j + 1) & (gcap - 1);
		gk[j] = (*k)[i];
		gv[j] = (*v)[i];
	}
	free(*k);
	free(*v);
	*k = gk;
	*v = gv;
	*cap = gcap;
	return 0;
}

/* Empties slot i, shifting the rest of its probe run back where their homes allow. */
static void table_remove(uint64_t *k, uint32_t *v, size_t mask, size_t i)
{
	for (size_t j = i;;) {
		v[i] = NONE;
		for (;;) {
			j = (j + 1) & mask;
			if (v[j] == NONE)
				return;
			size_t home = isc_mix64(k[j]) & mask;
			/* j's entry may move to i when its home is not in (i, j] */
			if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
				break;
		}
		k[i] = k[j];
		v[i] = v[j];
		i = j;
	}
}

int isc_umap_slot(struct isc_umap *m, uint64_t key, uint32_t **slot)
{
	if (!HAS_ROOM(m->n, m->cap) && table_grow(&m->k, &m->v, &m->cap))
		return -ENOMEM;
	size_t i = isc_mix64(key) & (m->cap - 1);
	while (m->v[i] != NONE && m->k[i] != key)
		i = (i + 1) & (m->cap - 1);
	if (m->v[i] == NONE) {
		m->k[i] = key;
		m->n++;
	}
	*slot = &m->v[i];
	return 0;
}

void isc_umap_del(struct isc_umap *m, uint64_t key)
{
	if (!m->cap)
		return;
	size_t mask = m->cap - 1, i = isc_mix64(key) & mask;
	while (m->v[i] != NONE && m->k[i] != key)
		i = (i + 1) & mask;
	if (m->v[i] == NONE)
		return;
	m->n--;
	table_remove(m->k, m->v, mask, i);
}

bool isc_umap_each(const struct isc_umap *m, size_t *pos, uint64_t *key, uint32_t *val)
{
	for (size_t i = *pos; i < m->cap; i++)
		if (m->v[i] != NONE) {
			*key = m->k[i];
			*val = m->v[i];
			*pos = i + 1;
			return true;
		}
	*pos = m->cap;
	return false;
}

void isc_umap_free(struct isc_umap *m)
{
	free(m->k);
	free(m->v);
	*m = (struct isc_umap){ 0 }; /* empty again: finds nothing, can be filled anew */
}

int isc_hindex_add(struct isc_hindex *x, uint64_t h, uint32_t id)
{
	if (!HAS_ROOM(x->n, x->cap) && table_grow(&x->k, &x->v, &x->cap))
		return -ENOMEM;
	size_t i = isc_mix64(h) & (x->cap - 1);
	while (x->v[i] != NONE)
		i = (i + 1) & (x->cap - 1);
	x->k[i] = h;
	x->v[i] = id;
	x->n++;
	return 0;
}

void isc_hindex_del(struct isc_hindex *x, uint64_t h, uint32_t id)
{
	if (!x->cap)
		return;
	size_t mask = x->cap - 1, i = isc_mix64(h) & mask;
	while (x->v[i] != NONE && (x->k[i] != h || x->v[i] != id))
		i = (i + 1) & mask;
	if (x->v[i] == NONE)
		return;
	x->n--;
	table_remove(x->k, x->v, mask, i);
}

void isc_hindex_free(struct isc_hindex *x)
{
	free(x->k);
	free(x->v);
}

int isc_grow(void *arr, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 16;
	while (c <= n)
		c *= 2;
	void *p = realloc(*(void **)arr, c * sz);
	if (!p)
		return -ENOMEM;
	*(void **)arr = p;
	*cap = c;
	return 0;
}

void isc_sort(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, sz, cmp);
}

void isc_copy_n(void *dst, const void *src, size_t n, size_t sz)
{
	if (n)
		memcpy(dst, src, n * sz);
}
