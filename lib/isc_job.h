/*
 * isc_job.h - the inputs of one distributed job merged into one timeline
 * (lib/merge/job_merge.c): every rank's Kineto file, or the recordings of
 * several hosts, each on its own clock, aligned on the collectives every
 * rank leaves together (formats/timeline.md §11, iscope-merge(1)).
 */
#ifndef ISC_JOB_H
#define ISC_JOB_H

#include "isc_kineto.h"

/* One source of the merged timeline: a Kineto file, or the recorded traces of one boot. */
struct isc_job_source {
	char name[256];          /* its input, or its first input */
	unsigned inputs;         /* inputs it holds */
	bool kineto;
	int64_t offset_ns;       /* added to its times (on top of its own epoch) */
	uint64_t uncertainty_ns;
	uint64_t collectives;    /* the offset rests on that many */
	int method;              /* ISC_ALIGN_REFERENCE, _COLLECTIVES, _WALL_CLOCK (isc_format.h) */
	char ranks[128];         /* the ranks it holds, as ranges ("" for none) */
};

struct isc_job_result {
	struct isc_job_source *sources; /* malloc'd: isc_job_result_free */
	size_t nsources;
	uint32_t world_size;     /* 0 unknown */
	size_t nranks;           /* ranks present */
	char missing[256];       /* ranks of the world missing, as ranges */
	size_t nmissing;
	char conflict[256];      /* -EINVAL: why the inputs are not one job */
	uint64_t events_out;
	unsigned bad_input;      /* index + 1 of the first damaged input, 0 if none */
	char damage[512];        /* its first damage */
	uint64_t kept;           /* events kept of it */
};

/*
 * Merges the n inputs of one job into sink (kinds[i] from
 * isc_input_open_hdr; hdrs[i] their headers, for the boot ids of traces):
 * each Kineto file is a source of its own, traces are grouped by boot id
 * into one source each (merged as isc_merge does), every source is first
 * written to a temporary timeline while its rank facts and collectives are
 * collected, the sources' clocks are aligned, and the sources are merged
 * in time order.  ko may be NULL.  Returns 0; 1 when an input was damaged
 * (what preceded the damage is in the output, res says where); -EINVAL
 * when the inputs are not one job (res->conflict: a rank twice, different
 * world sizes, backends or rendezvous), nothing written; another negative
 * errno with a message pushed.
 */
int isc_job_merge(const struct isc_merge_input *in, const enum isc_input_kind *kinds, const struct isc_tl_header *hdrs,
		  size_t n, struct isc_sink *sink, const struct isc_kineto_opts *ko, struct isc_job_result *res);
void isc_job_result_free(struct isc_job_result *res);

#endif
