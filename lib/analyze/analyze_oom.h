/*
 * analyze_oom.h - the oom section of the findings document: did the
 * workload die of out-of-memory, and what was it doing (analyze_oom.c).
 * Fed by analyze.c during its pass.  Private to lib/analyze.
 */
#ifndef ISC_ANALYZE_OOM_H
#define ISC_ANALYZE_OOM_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "isc.h"
#include "isc_util.h"
#include "isc_jbuild.h"

struct isc_oom;

int isc_oom_new(struct isc_oom **o);
void isc_oom_free(struct isc_oom *o);

/* A PROC_SAMPLE of pid: its RSS, and fn (a string id, 0: none) the innermost Python function of its main thread. */
int isc_oom_rss(struct isc_oom *o, uint64_t ts, uint32_t pid, uint64_t rss, uint32_t fn);
/* An SMAPS record of pid (smaps_rollup: rss, pss, swap, anonymous bytes). */
int isc_oom_smaps(struct isc_oom *o, uint64_t ts, uint32_t pid, uint64_t rss, uint64_t pss, uint64_t swap,
		  uint64_t anon);

/* What a process held at its end (isc_oom_mem_at). */
struct isc_oom_mem {
	bool have_rss, have_smaps;
	uint64_t ts, rss;            /* the highest RSS reading of the window, and when */
	uint64_t s_rss, pss, swap, anon; /* the smaps_rollup record of it */
};
/*
 * The memory pid held at its end: the highest RSS reading (PROC_SAMPLE
 * RSS or smaps_rollup Rss) of the 2 s ending at its last reading at or
 * before end (0: its last reading of all; ties: the later), with the
 * composition of the latest smaps_rollup record at or before that reading
 * (else the first after it, up to the last reading).  1 when pid has a
 * reading, else 0 (and *m all zero/false).
 */
int isc_oom_mem_at(const struct isc_oom *o, uint32_t pid, uint64_t end, struct isc_oom_mem *m);
struct isc_exception;
/* An EXCEPTION record of pid (the Python agent: an unhandled exception) raised at line.  0 or -ENOMEM. */
int isc_oom_exception(struct isc_oom *o, uint64_t ts, uint32_t pid, const struct isc_exception *x, uint64_t line);
/*
 * Whether x is a CUDA out-of-memory error (as isc_oom_exception decides:
 * a type ending in OutOfMemoryError, or "CUDA out of memory" in the
 * message) and its device: the N of the first "GPU N" in the message
 * (torch's wording: "(GPU 0; 15.90 GiB total capacity; ...)" or "GPU 0 has
 * a total capacity of ..."), -1 when it names none; -2 when x is not one.
 */
int64_t isc_oom_exception_gpu(const struct isc_exception *x);
/* A WARNING record (code, message bytes) of pid. */
int isc_oom_warning(struct isc_oom *o, uint64_t ts, uint32_t pid, uint64_t code, const uint8_t *msg, size_t n);

#define ISC_OOM_SITES_MAX 5

/*
 * A device allocation that failed (the CUDA agent), for cuda_oom when
 * nothing else explains the death, and what its device held then.
 */
struct isc_oom_gpu {
	bool have;
	uint32_t device;
	int64_t ts;
	uint64_t bytes;
	const struct isc_tl_string *site; /* NULL: unknown */
	bool have_live;      /* some device has memory records */
	uint64_t live_bytes; /* live at the end on those devices, summed */
	/* no failed allocation recorded, a CUDA out-of-memory error raised
	 * (isc_asite_exception): device and ts are the error's; have stays false */
	bool at_exception;
	/* when have or at_exception: the failing device then (isc_ana_oom_device_sites) */
	uint64_t fail_live_bytes; /* its live bytes, every process's */
	size_t nsites;
	struct isc_oom_dsite {
		uint32_t pid, line;
		const char *name, *file, *kind; /* borrowed from the timeline; kind as memory.sites' */
		uint64_t live;                  /* its bytes live then */
	} sites[ISC_OOM_SITES_MAX];         /* by those bytes, highest first (ties: memory.sites' order) */
};

/*
 * The process a host out-of-memory death took (the OOM killer's victim,
 * or the process that raised MemoryError) and when: false when there was
 * none (no death, or only a device one).
 */
bool isc_oom_host_death(const struct isc_oom *o, uint32_t *pid, uint64_t *ts);

/* The allocation sites of the dead process at its death (sections_alloc.c, from the site model). */
struct isc_oom_sites {
	bool sampled;       /* the process had allocation samples */
	uint64_t window_ns; /* "growing": live bytes rose over this window before the death */
	size_t n;
	struct isc_oom_site {
		const char *name, *file; /* borrowed from the timeline */
		uint32_t line;
		double live, live_err, growth; /* bytes at the death, one standard error, growth over the window */
		bool growing;
	} top[ISC_OOM_SITES_MAX]; /* growing ones first, each group by live bytes */
};

/*
 * Adds root.oom: null, or the out-of-memory death of the run (kinds and
 * their evidence at the top of analyze_oom.c).  exit_status is the
 * workload's (summary), start_ns the document's time origin; command(pid)
 * names a process (may return NULL); sites (may be NULL) the dead
 * process's allocation sites (isc_oom_host_death).  0 or -ENOMEM.
 */
int isc_oom_emit(const struct isc_oom *o, struct isc_jb *jb, cJSON *root, uint64_t start_ns, int exit_status,
		 const struct isc_oom_gpu *gpu, const struct isc_oom_sites *sites, const struct isc_timeline *t,
		 const char *(*command)(void *ctx, uint32_t pid), void *ctx);

#endif
