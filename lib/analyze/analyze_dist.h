/*
 * analyze_dist.h - the job view of a distributed run (iscope-analyze(1),
 * DISTRIBUTED JOBS), in two steps that meet in the findings document:
 *
 *   map     distributed.c: one pass over a timeline feeds one analysis per
 *           rank (the rank's processes; the host's records to each of its
 *           ranks) and writes, per rank, its entry of distributed.ranks[]:
 *           who it is, its clock, its time split, its iterations, a
 *           compact log of its collectives and a profile for comparing
 *           ranks
 *   reduce  dist_reduce.c: from the entries alone (of one timeline, or
 *           gathered from many findings documents by iscope-analyze --job):
 *           clocks aligned, collectives matched across ranks, waits,
 *           stragglers and their cause, the job's section
 *
 * Private to lib/analyze.
 */
#ifndef ISC_ANALYZE_DIST_H
#define ISC_ANALYZE_DIST_H

#include <stdbool.h>
#include <stddef.h>

#include <cjson/cJSON.h>

#include "isc_analyze.h"
#include "isc_dist.h"

/*
 * The first pass over t (read to its end, past damage): each process's
 * calibration (isc_analyze_calibrations' rule) and the rank facts into f
 * (initialized by the caller); with facts_only, only the records before the
 * first timed one (a Kineto import's and a job merge's preamble, where
 * their facts are), and no calibrations.  0 or -ENOMEM.
 */
int isc_dist_first_pass(struct isc_timeline *t, struct isc_rank_facts *f, bool facts_only,
			struct isc_analyze_calib **cals, size_t *ncals);

/*
 * Whether the resolved facts make a job, or a part of one, to analyze rank
 * by rank: some rank with a world size of 2 or more.  One rank's file
 * alone is one: its document is analyzed as any single trace and gets a
 * distributed section with its one entry (the map step of --job).
 */
bool isc_dist_is_job(const struct isc_rank_facts *f);

/*
 * The measuring pass of a job's timeline t: one analysis per rank of f
 * (resolved), then the reduce.  *out is the document of the detail rank
 * (the first straggler, else the lowest rank) with `distributed` set; the
 * rules are the caller's.  Returns as isc_analyze_measure does.
 */
int isc_dist_measure(struct isc_timeline *t, const struct isc_analyze_opts *o, const struct isc_rank_facts *f,
		     cJSON **out);

/*
 * The reduce: the job's section from rank entries (map outputs; entries[i]
 * came from document doc_of[i], which tells clock domains apart when they
 * have no boot id).  Entries are copied; with owned (may be NULL: owned[i]
 * is entries[i], the caller's to give) they are moved into the section
 * instead, and owned[i] set to NULL.  *section gets the new object;
 * *detail the rank whose analysis the document should show.  0, -ENOMEM,
 * or -EINVAL with a message pushed (a rank given twice, mixed jobs).
 */
int isc_dist_reduce(const cJSON *const *entries, const unsigned *doc_of, size_t n, cJSON **owned, cJSON **section,
		    unsigned *detail);

/* iscope-analyze --job is isc_analyze_job (isc_analyze.h), in dist_reduce.c. */

#endif
