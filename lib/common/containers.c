/*
 * containers.c - the u64 -> u32 hash map and growing arrays every stage
 * uses (isc_util.h).
 *
 * The map keeps keys and values in two arrays of a power-of-two capacity,
 * at most half full; a key lives at hash(key) & mask or after it:
 *
 *     slot:  0    1    2    3    4    5    6    7
 *     key:   -    A    B    C    -    -    D    -     A, B hash to 1: B probes on;
 *                                                     C hashes to 2, after B
 *
 * Deleting B shifts C back into slot 2 when its home allows, so a lookup
 * never meets a hole inside a probe run and no tombstones are needed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h"      /* isc_mix64 */
#include "isc_util.h"

#define NONE ISC_UMAP_NONE

int isc_umap_slot(struct isc_umap *m, uint64_t key, uint32_t **slot)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct isc_umap g = { malloc(cap * sizeof(uint64_t)), malloc(cap * sizeof(uint32_t)), cap, 0 };
		if (!g.k || !g.v) {
			free(g.k);
			free(g.v);
			return -ENOMEM;
		}
		memset(g.v, 0xff, cap * sizeof(uint32_t));
		for (size_t i = 0; i < m->cap; i++) {
			if (m->v[i] == NONE)
				continue;
			size_t j = isc_mix64(m->k[i]) & (cap - 1);
			while (g.v[j] != NONE)
				j = (j + 1) & (cap - 1);
			g.k[j] = m->k[i];
			g.v[j] = m->v[i];
		}
		g.n = m->n;
		free(m->k);
		free(m->v);
		*m = g;
	}
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

uint32_t isc_umap_get(const struct isc_umap *m, uint64_t key)
{
	if (!m->cap)
		return NONE;
	size_t i = isc_mix64(key) & (m->cap - 1);
	while (m->v[i] != NONE && m->k[i] != key)
		i = (i + 1) & (m->cap - 1);
	return m->v[i];
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
	for (size_t j = i;;) {
		m->v[i] = NONE;
		for (;;) {
			j = (j + 1) & mask;
			if (m->v[j] == NONE)
				return;
			size_t home = isc_mix64(m->k[j]) & mask;
			/* j's entry may move to i when its home is not in (i, j] */
			if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
				break;
		}
		m->k[i] = m->k[j];
		m->v[i] = m->v[j];
		i = j;
	}
}

void isc_umap_free(struct isc_umap *m)
{
	free(m->k);
	free(m->v);
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

