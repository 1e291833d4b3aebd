/* openspans.c - open spans by span_id (openspans.h). */
#include <errno.h>
#include <stdlib.h>

#include "openspans.h"

int isc_openspans_add(struct isc_openspans *o, uint64_t id, uint32_t name_id, uint8_t kind)
{
	uint32_t *slot;
	if (!id) /* never an open span: 0 is no span */
		return 0;
	if (isc_grow(&o->v, &o->cap, o->n, sizeof(*o->v)) || isc_umap_slot(&o->byid, id, &slot))
		return -ENOMEM;
	if (*slot == ISC_UMAP_NONE) {
		if (o->free_head != ISC_UMAP_NONE) {
			*slot = o->free_head;
			o->free_head = o->v[*slot].name_id;
		} else {
			*slot = (uint32_t)o->n++;
		}
	}
	o->v[*slot] = (struct isc_openspan){ name_id, kind };
	return 0;
}

bool isc_openspans_take(struct isc_openspans *o, uint64_t id, struct isc_openspan *out)
{
	uint32_t i = id ? isc_umap_get(&o->byid, id) : ISC_UMAP_NONE;
	if (i == ISC_UMAP_NONE)
		return false;
	*out = o->v[i];
	isc_umap_del(&o->byid, id);
	o->v[i].name_id = o->free_head;
	o->free_head = i;
	return true;
}

void isc_openspans_free(struct isc_openspans *o)
{
	isc_umap_free(&o->byid);
	free(o->v);
	*o = (struct isc_openspans){ .free_head = ISC_UMAP_NONE };
}
