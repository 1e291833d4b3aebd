/*
 * openspans.h - open spans by span_id (openspans.c): a SPAN_END read from
 * a timeline has no name or kind, the events a sink receives do, so a
 * replay of a timeline (input.c) or a merge of timelines (job_merge.c)
 * keeps each span's name and kind from its begin to its end.  Private to
 * lib/merge.
 */
#ifndef ISC_MERGE_OPENSPANS_H
#define ISC_MERGE_OPENSPANS_H

#include <stdbool.h>
#include <stdint.h>

#include "isc_util.h" /* struct isc_umap */

struct isc_openspan {
	uint32_t name_id;
	uint8_t kind;
};

/* span_id -> index in v; the entries of ended spans are chained from free_head (through name_id) and reused. */
struct isc_openspans {
	struct isc_umap byid;
	struct isc_openspan *v;
	size_t n, cap;
	uint32_t free_head; /* ISC_UMAP_NONE: none free; initialize to it */
};

/* Remembers span id (0 is no span: ignored); 0 or -ENOMEM. */
int isc_openspans_add(struct isc_openspans *o, uint64_t id, uint32_t name_id, uint8_t kind);
/* The name and kind of span id, forgotten; false when it is not open. */
bool isc_openspans_take(struct isc_openspans *o, uint64_t id, struct isc_openspan *out);
void isc_openspans_free(struct isc_openspans *o);

#endif
