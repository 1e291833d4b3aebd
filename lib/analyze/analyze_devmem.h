/*
 * analyze_devmem.h - device memory (analyze_devmem.c): gpu.devices[].memory
 * of the findings document.  Fed by the GPU pass, which feeds the same
 * records first, each with its site (gpu_host.c resolves it from the host
 * thread that made it), to the allocation site model (alloc_sites.h):
 * what is said by site comes from there, and the model pairs each release
 * with its allocation for this file too.  The definitions are at the top
 * of analyze_devmem.c and in iscope-analyze(1), RULES, DEVICE MEMORY.
 * Private to lib/.
 */
#ifndef ANALYZE_DEVMEM_H
#define ANALYZE_DEVMEM_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "isc.h"
#include "isc_util.h"
#include "isc_jbuild.h"
#include "alloc_sites.h"

/* What a site names (isc_gpu_mem_site): a Python function, a torch op, a scope, or nothing known. */
enum isc_dm_site_kind { ISC_DM_NONE, ISC_DM_PYTHON, ISC_DM_OP, ISC_DM_SCOPE };

/* Where the records came from (one per device: the first record decides). */
enum isc_dm_source { ISC_DM_SRC_ALLOCATOR = 1, ISC_DM_SRC_DRIVER = 2 };

struct isc_devmem;

int isc_devmem_new(struct isc_devmem **m);
void isc_devmem_free(struct isc_devmem *m);

/*
 * One allocation (alloc) or release of bytes on device at ts (timeline
 * order), after the site model took the same record: paired is what the
 * model released (isc_asite_exact's out: the allocation a release pairs
 * with, or the one an allocation at a live address replaced; its tag the
 * isc_devmem_iteration given to the model with it).  by_size: the record
 * had no address (paired by size).  0 or -ENOMEM.
 */
int isc_devmem_event(struct isc_devmem *m, int64_t ts, uint32_t device, bool alloc, uint64_t bytes, bool by_size,
		     const struct isc_asite_paired *paired, enum isc_dm_source src);

/* The tag of an allocation made now (isc_asite_exact's tag): the iteration boundaries seen so far. */
uint64_t isc_devmem_iteration(const struct isc_devmem *m);

/*
 * The over_time bucket of ts (after isc_devmem_event or isc_devmem_totals
 * at ts: the grid already covers it) and, in *shift, how many times the
 * buckets' width has doubled: what the site model keeps its device sites'
 * series on (isc_asite_exact's bucket, shift).
 */
uint32_t isc_devmem_bucket(struct isc_devmem *m, int64_t ts, uint32_t *shift);

/*
 * The caching allocator's totals on device after an event at ts (Kineto
 * [memory] "Total Allocated", "Total Reserved"): reserved and allocated
 * over time and their peaks.  0 or -ENOMEM.
 */
int isc_devmem_totals(struct isc_devmem *m, int64_t ts, uint32_t device, uint64_t allocated, uint64_t reserved);

/* An iteration ended at ts (an outermost scope ended): the baseline and the churn's counts.  0 or -ENOMEM. */
int isc_devmem_boundary(struct isc_devmem *m, int64_t ts);

/* A device memory allocation of bytes (0: not recorded) failed on device at ts: memory.failures. */
void isc_devmem_failure(struct isc_devmem *m, int64_t ts, uint32_t device, uint64_t bytes);

/* Whether device had any allocation or release. */
bool isc_devmem_has(const struct isc_devmem *m, uint32_t device);
/* Devices seen, ascending, into ids[0..max); returns how many there are. */
/*
 * Bytes live at the end on every device with memory records (each one's
 * gpu.devices[].memory.end_bytes, summed); *have: some device has them.
 */
uint64_t isc_devmem_live_total(const struct isc_devmem *m, bool *have);
size_t isc_devmem_devices(const struct isc_devmem *m, uint32_t *ids, size_t max);

/*
 * Adds dev.memory for device (null members where unknown): total_bytes is
 * the device's memory (0: unknown); start_ns the document's time origin;
 * names come from t's string table.  peak_sites, over_time.sites and
 * leak_candidates come from the allocation site model (alloc_sites.c, fed
 * the same records; NULL: none) and its latest report (isc_asite_last):
 * its device sites of device, by live bytes at the peak (their series on
 * this grid), and those with leak true.
 */
void isc_devmem_emit(const struct isc_devmem *m, struct isc_jb *jb, cJSON *dev, uint32_t device, uint64_t total_bytes,
		     int64_t start_ns, const struct isc_timeline *t, const struct isc_asite_model *model);

#endif
