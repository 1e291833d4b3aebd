/*
 * analyze_util.c - the hash map, growing arrays and JSON builder shared by
 * the analysis pass (analyze_util.h).
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

#include "analyze_util.h"
#include "../format/format.h" /* header, string defs, ring record checks */

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

/* ---- text ---------------------------------------------------------------- */
/* Length of the valid UTF-8 sequence at q (NUL-terminated), 0 when invalid. */
static unsigned utf8_len(const unsigned char *q)
{
	unsigned len;
	unsigned char lo = 0x80, hi = 0xbf;
	if (*q < 0x80)
		return 1;
	if (*q >= 0xc2 && *q <= 0xdf)
		len = 2;
	else if (*q >= 0xe0 && *q <= 0xef)
		len = 3;
	else if (*q >= 0xf0 && *q <= 0xf4)
		len = 4;
	else
		return 0;
	if (*q == 0xe0)
		lo = 0xa0; /* overlong */
	else if (*q == 0xed)
		hi = 0x9f; /* surrogates */
	else if (*q == 0xf0)
		lo = 0x90;
	else if (*q == 0xf4)
		hi = 0x8f; /* > U+10FFFF */
	if (q[1] < lo || q[1] > hi)
		return 0;
	for (unsigned i = 2; i < len; i++)
		if ((q[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

char *isc_text_dup(const uint8_t *p, size_t n, char nul, bool ctl)
{
	char *s = malloc(n + 1);
	if (!s)
		return NULL;
	if (nul == ' ')
		isc_copy_bytes(s, n + 1, p, n, nul);
	else
		for (size_t i = 0; i <= n; i++)
			s[i] = i == n ? '\0' : p[i] ? (char)p[i] : nul;
	for (unsigned char *q = (unsigned char *)s; *q;) {
		unsigned len = utf8_len(q);
		if (!len || (ctl && len == 1 && (*q < 0x20 || *q == 0x7f)))
			*q++ = '?';
		else
			q += len;
	}
	return s;
}

/* ---- JSON builder -------------------------------------------------------- */
cJSON *isc_jb_chk(struct isc_jb *b, cJSON *x)
{
	if (!x)
		b->oom = true;
	return x;
}

void isc_jb_num(struct isc_jb *b, cJSON *o, const char *k, double v)
{
	isc_jb_chk(b, o ? cJSON_AddNumberToObject(o, k, v) : NULL);
}

void isc_jb_num_or_null(struct isc_jb *b, cJSON *o, const char *k, bool have, double v)
{
	isc_jb_chk(b, !o ? NULL : have ? cJSON_AddNumberToObject(o, k, v) : cJSON_AddNullToObject(o, k));
}

void isc_jb_bool(struct isc_jb *b, cJSON *o, const char *k, bool v)
{
	isc_jb_chk(b, o ? cJSON_AddBoolToObject(o, k, v) : NULL);
}

void isc_jb_str(struct isc_jb *b, cJSON *o, const char *k, const char *v)
{
	if (!o || !v) {
		isc_jb_chk(b, o ? cJSON_AddNullToObject(o, k) : NULL);
		return;
	}
	char *clean = isc_text_dup((const uint8_t *)v, strlen(v), '?', b->ctl);
	isc_jb_chk(b, clean ? cJSON_AddStringToObject(o, k, clean) : NULL);
	free(clean);
}

cJSON *isc_jb_obj(struct isc_jb *b, cJSON *o, const char *k)
{
	return isc_jb_chk(b, o ? cJSON_AddObjectToObject(o, k) : NULL);
}

cJSON *isc_jb_arr(struct isc_jb *b, cJSON *o, const char *k)
{
	return isc_jb_chk(b, o ? cJSON_AddArrayToObject(o, k) : NULL);
}

cJSON *isc_jb_push_obj(struct isc_jb *b, cJSON *arr)
{
	cJSON *x = cJSON_CreateObject();
	if (!x || !arr || !cJSON_AddItemToArray(arr, x)) {
		cJSON_Delete(x);
		b->oom = true;
		return NULL;
	}
	return x;
}

void isc_jb_push_num(struct isc_jb *b, cJSON *arr, double v)
{
	cJSON *x = cJSON_CreateNumber(v);
	if (!x || !arr || !cJSON_AddItemToArray(arr, x)) {
		cJSON_Delete(x);
		b->oom = true;
	}
}
