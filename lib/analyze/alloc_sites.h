/*
 * alloc_sites.h - live bytes by allocation site, from the allocation
 * sampler's records (issue 25; formats/timeline.md §4.5).
 *
 * Fed in timeline order with the allocation records of a timeline
 * (TL_ALLOC, TL_FREE, TL_ALLOC_SITE, TL_ALLOC_INFO: isc_asite_event) and
 * the iteration boundaries (isc_asite_boundary: the end of each iteration,
 * in the same order), it yields per site (a process and a line: the
 * innermost Python frame's function, file and line, with the first whole
 * stack that reached it; a line reached from two callers is one site) what
 * was allocated, freed, live at the process's peak and at the end, the
 * growth over the steady-state iterations and whether it is a leak, each
 * with its sampling error, ranked by retained bytes; and, at a process's
 * death, the sites holding its memory and growing just before.
 *
 * Estimates.  A sample of size s drawn when one byte in T is sampled
 * stands for w = s / (1 - exp(-s/T)) bytes (isc_alloc_weight): an
 * unbiased (Horvitz-Thompson) estimate whose variance is w (w - s), so a
 * sum of samples has the variance of the sum of theirs.  An allocation
 * much larger than T is sampled with certainty (w = s, no error); one much
 * smaller stands for T bytes with a standard error of T, so n of them have
 * a relative error of 1 / sqrt(n).  Every *_err below is one standard
 * error, in bytes; "within the sampling error" means within 2 of them.
 *
 * Device memory (isc_asite_exact): the GPU pass feeds the exact records of
 * device memory (the CUDA agent's and Kineto's [memory] events) into the
 * same model, each weighing its size with no error.  A site is then keyed
 * by (process, memory kind, device, site), so a line that allocates host
 * and device memory is two sites.  The peak of a device site is its
 * device's (the live bytes of every process on it, gpu.devices[].memory's
 * peak_bytes), never the host's: a device allocation does not move the
 * host peak.  Device sites also keep their live bytes over time
 * (isc_asite_series: gpu.devices[].memory.over_time) and an allocation
 * that failed (isc_asite_last_failure: a CUDA out of memory's site; each
 * site's live bytes at the latest failure are its live_fail), or, when no
 * failed allocation was recorded, the time a CUDA out-of-memory error was
 * raised (isc_asite_exception: Kineto's [memory] events record no failed
 * allocation; live_fail is then each site's live bytes at the error).  The
 * RSS snapshot and a process's death concern host sites only.
 *
 * Memory: the sites, the sampled allocations still live, and per site one
 * entry per iteration boundary at which its live bytes had changed since
 * the previous one; per device site ISC_ASITE_BUCKETS values more.
 */
#ifndef ISC_ALLOC_SITES_H
#define ISC_ALLOC_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isc.h"
#include "isc_format.h"

#define ISC_ASITE_LEAK_MIN_INTERVALS 3 /* steady-state iterations needed to call a leak */
#define ISC_ASITE_LEAK_MISS 0.01        /* chance that sampling alone breaks a leak's growth (leak_window) */
#define ISC_ASITE_DEATH_WINDOW_NS 2000000000ull /* "the last seconds before a death" */
#define ISC_ASITE_SIZE_MAX (UINT64_C(1) << 53) /* isc_asite_exact: a larger size is no real one (ignored) */
#define ISC_ASITE_BUCKETS 256 /* a device site's live bytes over time (isc_asite_series) */

struct isc_asite_model;

/* One site's numbers (isc_asite_report).  Bytes are estimates; *_err one
 * standard error of the estimate before it. */
/* What a site's frames name (device sites: gpu_host.c's site kinds). */
enum isc_asite_what {
	ISC_ASITE_STACK = 0, /* a Python stack (depth 0: none, native) */
	ISC_ASITE_OP,        /* frames[0]: a torch op's name, no line */
	ISC_ASITE_SCOPE,     /* frames[0]: a scope's name, no line */
	ISC_ASITE_UNKNOWN,   /* no site known (depth 0) */
};

struct isc_asite_stats {
	uint32_t id;      /* the site's number, in the order sites were first seen (isc_asite_series) */
	uint32_t pid;
	bool device_mem;  /* device memory (isc_asite_exact), else host memory */
	uint32_t device;  /* when device_mem */
	uint8_t what;     /* enum isc_asite_what */
	uint32_t depth;
	const uint32_t *frames; /* depth (string id, line) pairs, innermost first (the site's first stack);
				 * valid until isc_asite_free */
	uint64_t alloc_count, free_count; /* samples */
	uint64_t fail_count;              /* device sites: allocations that failed (isc_asite_exact failed) */
	double alloc_bytes, alloc_err;
	double freed_bytes, freed_err;
	double live_end, live_end_err;   /* at the site's process's last record */
	double live_peak, live_peak_err; /* when the estimated live bytes of its process (host memory) or
					  * of its device (device memory, all processes) were highest */
	uint64_t peak_ts;                /* that time */
	/* over the steady-state iteration boundaries (none: all zero, leak false) */
	unsigned intervals;              /* steady-state iterations */
	double slope_per_iter, slope_err; /* least-squares slope of live bytes at the boundaries, and its error */
	double slope_per_s;              /* the same against the boundaries' times */
	double retained, retained_err;   /* floor growth (below), or live_end without iterations: the ranking key */
	bool leak;
	double leak_per_iter;            /* retained / intervals, when a leak */
	unsigned leak_window;            /* the floor grew at least once in every this many iterations */
	bool from_table;                 /* alloc, freed and live_end taken from the shim's table (records were lost) */
	uint64_t growth_ts;              /* last sample that raised its live bytes */
	double objects;                  /* allocations it stands for: the sum of weight / size over its samples */
	double alloc_steady, alloc_steady_err; /* allocated between the first and the last steady-state boundary */
	uint64_t steady_ns;              /* from the first steady-state boundary to the last (0: none) */
	uint64_t first_ts, last_ts;      /* its process's first and last allocation record */
	double live_snap, live_snap_err; /* at the snapshot (isc_asite_snapshot; 0 without one) */
	double live_fail;                /* device sites: when the latest failed allocation was made
					  * (isc_asite_last_failure), else when a CUDA out-of-memory
					  * error was raised (isc_asite_exception); 0 without either */
};

/* A site at a process's death (isc_asite_death). */
struct isc_asite_death {
	size_t index;       /* into the report's array */
	double live, live_err; /* at the death */
	double growth;      /* live at the death minus live window ns before */
	bool growing;       /* growth above 0 */
};

int isc_asite_new(struct isc_asite_model **m);
void isc_asite_free(struct isc_asite_model *m);

/*
 * Feeds one timeline event: the four allocation records change the
 * model, every other type is ignored (0).  Events must come in timeline
 * order.  0, -EBADMSG for an allocation record that does not parse
 * (ignored otherwise), -ENOMEM.
 */
int isc_asite_event(struct isc_asite_model *m, const struct isc_tl_event *ev);

/*
 * One exact record of device memory (no sampling: weight = size, no
 * error): an allocation or release of size bytes at address on device,
 * by process pid at ts, in timeline order with the events.  The site is
 * what (enum isc_asite_what) and frames[0, 2 depth) ((string id, line)
 * pairs, innermost first).  A release pairs with the live allocation of
 * (pid, device, address); address 0 (no address recorded: older Kineto
 * files) with the latest live allocation of the same size on the device
 * (a stack per size: temporaries are freed soon after they are made).  A
 * release with none is ignored (made before the trace).  An allocation at
 * an address that is live releases that allocation first (its release
 * was lost).  This is the one place device memory is paired:
 * analyze_devmem.c's totals take what *out reports.
 *
 * tag: the caller's mark for an allocation (analyze_devmem.c: the
 * iteration it was made in), kept with it while it is live and given back
 * in *out when it is released.
 *
 * failed: an allocation of size bytes (0: not recorded) that failed (out
 * of device memory): it changes no bytes; its site counts it (fail_count)
 * and it is the latest failure (isc_asite_last_failure).
 *
 * bucket, shift: the time bucket of ts in the caller's grid of
 * ISC_ASITE_BUCKETS buckets whose width has doubled shift times (pairs
 * of buckets merged: analyze_devmem.c's); a site's value at each bucket's
 * end is kept in it (isc_asite_series).  shift never decreases.  0 or
 * -ENOMEM.
 */
struct isc_asite_exact {
	uint64_t ts, address, size;
	uint32_t pid, device, depth;
	bool alloc, failed;
	uint8_t what;
	const uint32_t *frames;
	uint32_t bucket, shift;
	uint64_t tag;
};
/*
 * What a record released (out of isc_asite_exact, when not NULL):
 * released: a live allocation was released, of size bytes and tag (a
 * release that found its allocation, or an allocation at the address of a
 * live one); unmatched: a release that found none.
 */
struct isc_asite_paired {
	bool released, unmatched;
	uint64_t size, tag;
};
int isc_asite_exact(struct isc_asite_model *m, const struct isc_asite_exact *x, struct isc_asite_paired *out);

/*
 * Device site id's live bytes at the end of buckets [0, nb) of the grid
 * after shift doublings (shift at least the last record's): the value at
 * the end of the latest bucket that changed it, 0 before the first.
 * Host sites, and ids not known: all 0.
 */
void isc_asite_series(const struct isc_asite_model *m, uint32_t id, uint32_t shift, int64_t *out, size_t nb);

/* The latest allocation that failed (isc_asite_exact failed): false when none. */
struct isc_asite_failure {
	uint32_t id;            /* its site (isc_asite_stats.id) */
	uint32_t pid, device, depth;
	uint8_t what;
	const uint32_t *frames; /* the site's, valid until isc_asite_free */
	uint64_t ts, size;
	uint64_t device_live;   /* the device's live bytes then (every process's) */
};
bool isc_asite_last_failure(const struct isc_asite_model *m, struct isc_asite_failure *out);
/*
 * A CUDA out-of-memory error raised at ts in process pid (its EXCEPTION
 * record, in order with the events), on device (from its message, "GPU
 * N"; -1 when it names none: the device holding the most live bytes then,
 * the first seen on a tie).  When no failed allocation has been recorded
 * (isc_asite_exact failed), every site's live bytes now become its
 * live_fail, as at a failed allocation; a failed allocation recorded
 * later replaces it.  Nothing when a failed allocation was recorded
 * already (its own snapshot is the better one), or when the device has no
 * memory records.
 */
void isc_asite_exception(struct isc_asite_model *m, uint64_t ts, uint32_t pid, int64_t device);
/*
 * The snapshot of the latest isc_asite_exception, when it stands (no
 * failed allocation recorded): its id UINT32_MAX, depth 0, size 0; the
 * device's live bytes then in device_live.  False otherwise.
 */
bool isc_asite_exception_failure(const struct isc_asite_model *m, struct isc_asite_failure *out);
/* Whether isc_asite_exact fed an allocation. */
bool isc_asite_has_device(const struct isc_asite_model *m);

/*
 * A boundary at ts (in order with the events), numbered 1, 2, 3 ... in the
 * order of the calls: the end of an iteration.  The caller may mark more
 * boundaries than it will use (every scope's end, before it knows which
 * scope is the iteration) and name the ones that count at the report
 * (isc_asite_report_steady).  0 or -ENOMEM.
 */
int isc_asite_boundary(struct isc_asite_model *m, uint64_t ts);
/* Boundaries marked so far: the number of the latest one. */
uint32_t isc_asite_nmarks(const struct isc_asite_model *m);

/*
 * Keeps every site's live bytes at ts (in order with the events) as the
 * snapshot the report gives (live_snap); a later call replaces it.  The
 * analysis takes one at each new peak of the processes' resident memory:
 * what the sampled sites held at the RSS peak.  O(1): a site saves its
 * value when it next changes.
 */
void isc_asite_snapshot(struct isc_asite_model *m, uint64_t ts);

/*
 * The sites, ranked: retained bytes first (a leak outranks churn of any
 * size), then live at the end, then bytes allocated.  Steady state is
 * boundaries steady_from (1-based) to the last: the intervals between
 * them are the steady-state iterations (steady_from 0 or past the last:
 * none).  *out is owned by the model, valid until the next report or
 * isc_asite_free.  0 or -ENOMEM.
 *
 * retained: with at least two steady-state boundaries, the growth of the
 * site's floor, F_i = the least live bytes at boundary i or any later
 * one (the bytes of boundary i that stay), from the first steady-state
 * boundary to the last; without, live at the end.  A leak: at least
 * ISC_ASITE_LEAK_MIN_INTERVALS iterations, retained above twice its
 * error, and a floor that grows at least once in every leak_window
 * consecutive iterations, leak_window = max(2, ceil(ln(intervals /
 * ISC_ASITE_LEAK_MISS) T / g)), g = retained / intervals: plateaus of one
 * iteration (growth every other iteration) are a leak; longer ones only
 * when g is small against the sampling interval T.  An iteration that
 * allocates g bytes goes unsampled with probability e^(-g/T), so w of
 * them in a row somewhere in n iterations have a chance below n e^(-w g/T):
 * with this window, below ISC_ASITE_LEAK_MISS (a leak of 1 MiB an
 * iteration at T = 512 KiB over 59 iterations: window 5; with 3 T / g,
 * window 2, 62 % of such leaks were missed).
 */
int isc_asite_report(struct isc_asite_model *m, unsigned steady_from, const struct isc_asite_stats **out,
		     size_t *n);

/*
 * The steady state of one process: the numbers of its steady-state
 * boundaries (isc_asite_boundary), ascending: the end of its warm-up,
 * then the end of each steady-state iteration.
 */
struct isc_asite_steady {
	uint32_t pid;
	const uint32_t *marks;
	size_t n;
};

/*
 * isc_asite_report with each process's own steady state: a site of a
 * process in st[0, nst) has its iterations between that entry's marks; a
 * process without an entry (or with fewer than two marks) has none.
 */
int isc_asite_report_steady(struct isc_asite_model *m, const struct isc_asite_steady *st, size_t nst,
			    const struct isc_asite_stats **out, size_t *n);

/*
 * The sites of process pid at its death (ts, after its last record),
 * after isc_asite_report: into out (at most cap), growing ones first
 * (growth over window_ns before ts), each group by live bytes at the
 * death, highest first.  The first growing one is the site the death is
 * charged to.  Live at the death is the shim's table when the recorder
 * wrote it (TL_ALLOC_SITE), else the records'.  Returns how many.
 */
size_t isc_asite_death(struct isc_asite_model *m, uint32_t pid, uint64_t ts, uint64_t window_ns,
		       struct isc_asite_death *out, size_t cap);

/*
 * The latest report (isc_asite_report, isc_asite_report_steady): false
 * when none was made.  Valid as the report's.
 */
bool isc_asite_last(const struct isc_asite_model *m, const struct isc_asite_stats **out, size_t *n);

/* Counters of what could not be attributed (for the stated gaps). */
struct isc_asite_gaps {
	uint64_t unmatched_frees; /* FREE of no sampled allocation the model knows */
	uint64_t untracked;       /* ALLOC the shim could not remember: its release is never seen */
	uint64_t bad_records;     /* allocation records that did not parse */
	uint64_t interval;        /* the sampling interval of the last ALLOC_INFO (0: none seen) */
};
void isc_asite_gaps(const struct isc_asite_model *m, struct isc_asite_gaps *g);

#endif
