/*
 * analyze_gpu.h - the GPU part of the analysis pass (analyze_gpu.c), called
 * by analyze.c only.  The definitions it applies are stated at the top of
 * analyze_gpu.c and in iscope-analyze(1), RULES, GPU.
 */
#ifndef ANALYZE_GPU_H
#define ANALYZE_GPU_H

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "isc.h"
#include "analyze_oom.h"
#include "analyze_series.h"

struct isc_gpu_ana;
struct isc_asite_model;

/*
 * New GPU analysis of the timeline t, whose string table and header are
 * borrowed (t must outlive it).  hta_compat selects HTA's rules (drop from
 * the last ProfilerStep on, cuda_sync counted as GPU time, times rounded to
 * whole µs) instead of the exact ones.  ser (borrowed, may be NULL) gets
 * the GPU channels of timeseries.*.  Device memory records go, with their
 * site, into the allocation site model sites (borrowed, required:
 * isc_asite_exact), which pairs each release with its allocation for
 * gpu.devices[].memory too.  0 or -ENOMEM.
 */
int isc_gpu_ana_new(struct isc_gpu_ana **g, struct isc_timeline *t, bool hta_compat, struct isc_series *ser,
		    struct isc_asite_model *sites);

/* Feeds one timeline event of any type, in timeline order.  0 or -ENOMEM. */
int isc_gpu_ana_event(struct isc_gpu_ana *g, const struct isc_tl_event *ev);

/* The iteration scope of iterations.* (sections_run.c): its name id, or every ProfilerStep#N when step. */
struct isc_gpu_iter {
	uint32_t name_id;
	bool step;
	const char *name;  /* iterations.name */
	uint64_t samples;  /* iterations.samples: steady-state iterations */
};

/*
 * Ends the pass and adds root.gpu (always present; no devices without GPU
 * operations); gpu.in_iterations from the iteration scope it (NULL: none;
 * null with fewer than 2 steady-state iterations).  0 or -ENOMEM.
 */
int isc_gpu_ana_emit(struct isc_gpu_ana *g, cJSON *root, const struct isc_gpu_iter *it);

/* The latest device allocation that failed (out of memory), with its site: out->have false when none. */
void isc_gpu_ana_failure(const struct isc_gpu_ana *g, struct isc_oom_gpu *out);

void isc_gpu_ana_free(struct isc_gpu_ana *g);

#endif
