/* sampler.h - /proc, PSI, meminfo and NUMA sampling for the recorder. */
#ifndef ISC_SAMPLER_H
#define ISC_SAMPLER_H

#include <sys/types.h>

#include "isc.h"

struct isc_sampler;
int isc_sampler_new(struct isc_sampler **s);
/*
 * Samples the given processes and their threads, plus system-wide pressure
 * and meminfo, appending timed SAMPLES records (ts = now) to b.  slow: also
 * the costly files (smaps_rollup, numa_maps).  Keeps file descriptors open
 * between ticks; forgets processes that are gone.
 */
int isc_sampler_tick(struct isc_sampler *s, const pid_t *pids, size_t n, uint64_t now, bool slow,
		     struct isc_buf *b, uint64_t *last_ts);
void isc_sampler_free(struct isc_sampler *s);

#endif
