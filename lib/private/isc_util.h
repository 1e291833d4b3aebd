/*
 * isc_util.h - what the common stage offers every other stage of lib/ (not
 * the tools): a u64 -> u32 hash map, arrays that grow by doubling, and
 * workload bytes copied into C strings.
 */
#ifndef ISC_UTIL_H
#define ISC_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
/* Value of key, ISC_UMAP_NONE when absent (never inserts). */
uint32_t isc_umap_get(const struct isc_umap *m, uint64_t key);
/* Removes key if present; later entries of its probe run shift back (no tombstones). */
void isc_umap_del(struct isc_umap *m, uint64_t key);
void isc_umap_free(struct isc_umap *m);

/*
 * Grows *arr, an array of elements of sz bytes with room for *cap, so that
 * index n fits (doubling).  0 or -ENOMEM (*arr and *cap unchanged).
 */
int isc_grow(void *arr, size_t *cap, size_t n, size_t sz);

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

#endif
