/*
 * analyze_numa.h - memory.numa of the findings document (analyze_numa.c):
 * where the traced processes' pages live against where their threads run.
 * Called by analyze.c only.
 */
#ifndef ANALYZE_NUMA_H
#define ANALYZE_NUMA_H

#include <cjson/cJSON.h>

#include "isc.h"

struct isc_numa;

int isc_numa_new(struct isc_numa **n);
/* Feeds one timeline event (NUMA_MAPS and THREAD_SAMPLE are used).  0 or -ENOMEM. */
int isc_numa_event(struct isc_numa *n, const struct isc_tl_event *ev);
/*
 * Sets mem.numa (mem: the document's memory object; NULL after an earlier
 * allocation failure) to the page placement, null without numa_maps
 * records.  0 or -ENOMEM.
 */
int isc_numa_emit(const struct isc_numa *n, cJSON *mem);
void isc_numa_free(struct isc_numa *n);

#endif
