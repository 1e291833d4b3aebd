/*
 * isc_alloc.h - the allocation shim's shared-memory file and its interface
 * with the Python agent.  Header-only and dependency-free (beside
 * isc_shm.h) so the shim, the Python agent and the recorder share it
 * without linking libiscope.
 *
 * The shim (libiscope-alloc.so, LD_PRELOAD'd by iscope-record) writes
 * <session>/<pid>.alloc.shm: the layout of isc_shm.h (process header,
 * slots, string area, rings) followed by the live-site table:
 *
 *   +-------------------------+ 0
 *   | struct isc_shm_proc     |   the common process header
 *   |   ...                   |
 *   | struct isc_alloc_hdr    |   at ISC_ALLOC_HDR_OFF, inside the header page
 *   +-------------------------+ ISC_SHM_SLOTS_OFF
 *   | slot headers            |   nslots x 64
 *   +-------------------------+ str_off
 *   | string area             |   STRING_DEF records, ids from ISC_STRING_ID_ALLOC_BASE
 *   +-------------------------+ ring_off
 *   | rings                   |   nslots x ring_size (no big rings)
 *   +-------------------------+ sites_off (page aligned)
 *   | site table              |   sites_cap x struct isc_alloc_site
 *   +-------------------------+ file_size
 *
 * Rings are not per thread (as the CUDA agent's, formats/trace.md A.8):
 * every sampled allocation and release is written under the shim's one
 * sampling lock, into the current ring or the next with room, and carries
 * its thread id.  The site table is written under the same lock and read
 * by the recorder once the process has exited, so a SIGKILL (the OOM
 * killer) loses none of it.  Everything here is untrusted for the
 * recorder, which bounds-checks every field it reads (drain.c).
 */
#ifndef ISC_ALLOC_H
#define ISC_ALLOC_H

#include <math.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "isc_shm.h"

#define ISC_ALLOC_SUFFIX ".alloc.shm"
#define ISC_ALLOC_MAGIC 0x434C4149u /* "IALC" */
#define ISC_ALLOC_VERSION 1
#define ISC_ALLOC_HDR_OFF 3072u     /* inside the process header's 4096 bytes */
#define ISC_ALLOC_MAX_SITES (1u << 20)
#define ISC_ALLOC_DEFAULT_INTERVAL (512u << 10) /* one sample per 512 KiB allocated, on average */
#define ISC_ALLOC_DEFAULT_RINGS 4
#define ISC_ALLOC_DEFAULT_RING_KB 256
#define ISC_ALLOC_DEFAULT_STR_KB 1024
#define ISC_ALLOC_DEFAULT_SITES 4096

/* At ISC_ALLOC_HDR_OFF of the file. */
struct isc_alloc_hdr {
	uint32_t magic;   /* ISC_ALLOC_MAGIC */
	uint32_t version; /* ISC_ALLOC_VERSION */
	uint64_t interval;  /* mean bytes between samples */
	uint64_t sites_off; /* offset of the site table, after the rings */
	uint32_t sites_cap; /* entries, a power of two; entry 0 is the overflow site */
	uint32_t site_size; /* sizeof(struct isc_alloc_site) */
	uint32_t depth_max; /* ISC_ALLOC_MAX_DEPTH */
	_Atomic uint32_t flags;      /* ISC_ALLOC_I_* */
	_Atomic uint64_t samples;    /* sampled allocations */
	_Atomic uint64_t frees;      /* releases of sampled allocations seen */
	_Atomic uint64_t lost_sites; /* samples whose stack found no free site entry (counted in entry 0) */
	_Atomic uint64_t lost_ptrs;  /* samples the live-pointer table could not hold */
	_Atomic uint32_t sites_used; /* entries in use */
	uint32_t next_id;            /* the next string id (an image exec'ed in the same process goes on from it) */
	uint32_t images;             /* executables that sampled into this file (exec keeps the pid) */
};
_Static_assert(ISC_ALLOC_HDR_OFF >= sizeof(struct isc_shm_proc), "alloc header overlaps the process header");
_Static_assert(ISC_ALLOC_HDR_OFF + sizeof(struct isc_alloc_hdr) <= ISC_SHM_SLOTS_OFF, "alloc header too big");

/*
 * One allocation site: a Python stack (code id, line pairs, innermost
 * first; depth 0: no Python frame).  Byte counts are the sampling
 * estimates (each sample weighs isc_alloc_weight()); live = alloc - free.
 * live_var is the variance of the live estimate (the sum of
 * weight x (weight - size) over the samples still live).  Times are
 * CLOCK_MONOTONIC ns.
 */
struct isc_alloc_site {
	uint64_t key; /* hash of depth and frames; 0 = empty */
	uint64_t alloc_count, alloc_bytes, free_count, free_bytes;
	double live_var;
	uint64_t peak_live, peak_ts; /* the highest live estimate and when */
	uint64_t growth_ts;          /* the last sample that raised live */
	uint32_t depth;
	uint32_t tid; /* the first thread that allocated here */
	uint32_t frames[2 * ISC_ALLOC_MAX_DEPTH];
};

/*
 * The estimate of bytes a sampled allocation of size bytes stands for,
 * when one byte in interval is sampled (a Poisson process over the bytes
 * allocated): size / P(sampled), P = 1 - exp(-size / interval).  An
 * allocation much larger than the interval stands for itself; a small one
 * for about interval bytes.  The estimator is unbiased; its variance is
 * weight x (weight - size) (formats/trace.md, ALLOC).
 */
static inline double isc_alloc_weight(uint64_t size, uint64_t interval)
{
	if (!interval || !size)
		return (double)size;
	double p = -expm1(-(double)size / (double)interval);
	return p > 0 ? (double)size / p : (double)interval;
}

/* ---- the interface the Python agent finds with dlsym ------------------- */

/*
 * Called by the shim, holding its sampling lock, on the thread that made a
 * sampled allocation: fills frames with up to max (code id, line) pairs,
 * innermost first, and returns how many; *truncated when there were more.
 * file is the generation of the shim's file: it changes when a fork child
 * makes its own, whose string ids are its own (forget cached ids then).
 * It must not call into the interpreter; it may allocate (the shim does
 * not sample itself) and call intern().
 */
typedef unsigned isc_alloc_stack_fn(uint32_t *frames, unsigned max, int *truncated, uint32_t file);

struct isc_alloc_api {
	uint32_t version; /* 1 */
	uint32_t size;    /* sizeof(struct isc_alloc_api) */
	/* Registers the stack function (NULL: none); waits for samples in flight. */
	void (*set_stack_fn)(isc_alloc_stack_fn *fn);
	/* The string id of a code object, (k1, k2) its identity, defining it
	 * (kind CODE, name, file, first line) the first time; 0 when the string
	 * area is full.  Only from inside the stack function. */
	uint32_t (*intern)(uint64_t k1, uint64_t k2, uint32_t firstline, const char *name, size_t nlen,
			   const char *file, size_t flen);
	/* Wraps CPython's allocator domains (get and set are PyMem_GetAllocator
	 * and PyMem_SetAllocator, arena_get and arena_set
	 * PyObject_GetArenaAllocator and PyObject_SetArenaAllocator); 0, or -1
	 * when already done or when sampling is off. */
	int (*pymem_install)(void (*get)(int, void *), void (*set)(int, void *), void (*arena_get)(void *),
			     void (*arena_set)(void *));
};

#define ISC_ALLOC_API_SYMBOL "isc_alloc_api_v1"

#endif
