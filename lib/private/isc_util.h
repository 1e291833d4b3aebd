/*
 * isc_util.h - what the common stage offers every other stage of lib/ (not
 * the tools): a u64 -> u32 hash map, a hash index (u64 -> several u32, for
 * keys that do not fit 64 bits), arrays that grow by doubling and are
 * sorted and copied even when empty, and workload bytes copied into C
 * strings.
 */
#ifndef ISC_UTIL_H
#define ISC_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isc.h" /* isc_mix64 */

/* ---- u64 -> u32 map: open addressing, linear probing ------------------- */
#define ISC_UMAP_NONE UINT32_MAX /* the value of an empty slot: never stored */

struct isc_umap {
	uint64_t *k;
	uint32_t *v;
	size_t cap, n;
};

/*
 * Sets *slot to the value slot of key, inserting key with the value
 * ISC_UMAP_NONE when absent (the caller stores the value).  The pointer is
 * valid until the next insertion.  0 or -ENOMEM (the map is unchanged).
 */
int isc_umap_slot(struct isc_umap *m, uint64_t key, uint32_t **slot);
/* Value of key, ISC_UMAP_NONE when absent (never inserts).  Inline: the lookups are the hot paths. */
static inline uint32_t isc_umap_get(const struct isc_umap *m, uint64_t key)
{
	if (!m->cap)
		return ISC_UMAP_NONE;
	size_t mask = m->cap - 1, i = isc_mix64(key) & mask;
	while (m->v[i] != ISC_UMAP_NONE && m->k[i] != key)
		i = (i + 1) & mask;
	return m->v[i];
}
/* Removes key if present; later entries of its probe run shift back (no tombstones). */
void isc_umap_del(struct isc_umap *m, uint64_t key);
/*
 * The entries one per call, in slot order (not insertion order: it changes
 * when the map grows): *pos is 0 before the first call; false after the
 * last.  The map must not change between calls.
 */
bool isc_umap_each(const struct isc_umap *m, size_t *pos, uint64_t *key, uint32_t *val);
void isc_umap_free(struct isc_umap *m);

/* ---- hash index: u64 hash -> several u32 ids --------------------------- */
/*
 * For entries whose key does not fit 64 bits (strings, tuples): the caller
 * keeps the entries in its own array, hashes each key to 64 bits and adds
 * (hash, index); a lookup walks the indexes stored under a hash and
 * compares each entry's key itself.  Same layout as isc_umap; an id is
 * never ISC_UMAP_NONE.
 */
struct isc_hindex {
	uint64_t *k;
	uint32_t *v;
	size_t cap, n;
};

/* Adds id under h (another id under the same hash, or the same one, is kept too).  0 or -ENOMEM. */
int isc_hindex_add(struct isc_hindex *x, uint64_t h, uint32_t id);
/*
 * The ids stored under h, one per call, ISC_UMAP_NONE after the last:
 *
 *     size_t pos = 0;
 *     for (uint32_t i; (i = isc_hindex_next(x, h, &pos)) != ISC_UMAP_NONE;)
 *             if (same_key(&entries[i], ...)) ...
 *
 * Adding or deleting ends a walk (start again with pos = 0).  Inline, like
 * isc_umap_get.
 */
static inline uint32_t isc_hindex_next(const struct isc_hindex *x, uint64_t h, size_t *pos)
{
	if (!x->cap)
		return ISC_UMAP_NONE;
	/* *pos: 0 before the first call, else 1 + the slot to look at next */
	size_t mask = x->cap - 1, i = *pos ? *pos - 1 : isc_mix64(h) & mask;
	while (x->v[i] != ISC_UMAP_NONE && x->k[i] != h)
		i = (i + 1) & mask;
	*pos = (x->v[i] != ISC_UMAP_NONE ? (i + 1) & mask : i) + 1; /* an empty slot ends every later call too */
	return x->v[i];
}
/* Removes the pair (h, id) if present; later entries of its probe run shift back. */
void isc_hindex_del(struct isc_hindex *x, uint64_t h, uint32_t id);
void isc_hindex_free(struct isc_hindex *x);

/*
 * Grows *arr, an array of elements of sz bytes with room for *cap, so that
 * index n fits (doubling).  0 or -ENOMEM (*arr and *cap unchanged).
 */
int isc_grow(void *arr, size_t *cap, size_t n, size_t sz);

/*
 * qsort and memcpy of n elements of sz bytes that take an empty table:
 * base, dst and src may be NULL when n is 0 (an array isc_grow never
 * grew), where the C library's own are undefined even for 0 elements.
 */
void isc_sort(void *base, size_t n, size_t sz, int (*cmp)(const void *, const void *));
void isc_copy_n(void *dst, const void *src, size_t n, size_t sz);

/* ---- text ---------------------------------------------------------------- */
/* Copies at most cap-1 bytes, replacing NULs by sep, always terminating. */
void isc_copy_bytes(char *dst, size_t cap, const uint8_t *src, size_t len, char sep);
/*
 * Copies n workload bytes into a new C string: NUL bytes become nul (a
 * trailing run of them is dropped when nul is a space: argv lists), invalid
 * UTF-8 '?'; with ctl, control characters '?' too.  Caller frees; NULL when
 * out of memory.
 */
char *isc_text_dup(const uint8_t *p, size_t n, char nul, bool ctl);
/* Whether s[0..n) is well-formed UTF-8 (s NUL-terminated at n or later). */
bool isc_utf8_valid(const char *s, size_t n);
/* The ranks a sorted list covers, as ranges into buf: "2-5, 9" (cut at cap; common/text.c). */
void isc_rank_ranges(char *buf, size_t cap, const uint32_t *v, size_t n);

#endif
