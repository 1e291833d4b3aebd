/*
 * analyze_util.h - what the analysis pass modules (analyze.c,
 * analyze_gpu.c) share: a u64 -> u32 hash map, arrays that grow by
 * doubling, and a JSON builder that remembers an allocation failure
 * instead of returning it from every call.  Private to lib/.
 */
#ifndef ANALYZE_UTIL_H
#define ANALYZE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

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

/* ---- JSON builder -------------------------------------------------------- */
/*
 * Every call tolerates a NULL parent (an earlier allocation failed) and
 * sets oom when anything it needed could not be allocated; the pass checks
 * oom once at the end.
 */
struct isc_jb {
	bool oom;
	bool ctl; /* isc_jb_str also replaces control characters */
};

cJSON *isc_jb_chk(struct isc_jb *b, cJSON *x); /* x, noting oom when NULL */
void isc_jb_num(struct isc_jb *b, cJSON *o, const char *k, double v);
void isc_jb_num_or_null(struct isc_jb *b, cJSON *o, const char *k, bool have, double v);
void isc_jb_bool(struct isc_jb *b, cJSON *o, const char *k, bool v);
/* String v (NULL: null) with invalid UTF-8 (and control characters when b->ctl) replaced by '?'. */
void isc_jb_str(struct isc_jb *b, cJSON *o, const char *k, const char *v);
cJSON *isc_jb_obj(struct isc_jb *b, cJSON *o, const char *k);
cJSON *isc_jb_arr(struct isc_jb *b, cJSON *o, const char *k);
/* A new object appended to array arr; NULL on failure. */
cJSON *isc_jb_push_obj(struct isc_jb *b, cJSON *arr);
void isc_jb_push_num(struct isc_jb *b, cJSON *arr, double v);

/*
 * Copies n workload bytes into a new C string: NUL bytes become nul (a
 * trailing run of them is dropped when nul is a space: argv lists), invalid
 * UTF-8 '?'; with ctl, control characters '?' too.  Caller frees; NULL when
 * out of memory.
 */
char *isc_text_dup(const uint8_t *p, size_t n, char nul, bool ctl);

#endif
