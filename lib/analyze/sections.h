/*
 * sections.h - the sections of the findings document that
 * analyze_sections.c composes (isc_ana_build), written from the state
 * analyze.c's pass leaves (analyze_pass.h).  Private to lib/analyze.
 *
 *   analyze_sections.c    isc_ana_build: the document, section by section
 *                         in order; summary, environment and marks itself
 *   sections_cpu.c        cpu.*: the CPU split (with the off-CPU estimate),
 *                         functions, off-CPU and its reasons, thread
 *                         pools, in_iterations
 *   sections_run.c        the shape of the run: processes, iterations,
 *                         memory, run
 *   sections_functions.c  one row per function, merged across processes,
 *                         which both rank (cpu.top_*, memory.growth_top)
 *
 * Calls go down this list only, and the two section files do not call each
 * other: what a later section needs from an earlier one is kept in struct
 * ana (its out member, the iteration times) by the section that computes
 * it, or passed in by the builder.
 */
#ifndef ISC_ANA_SECTIONS_H
#define ISC_ANA_SECTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "isc_jbuild.h"
#include "analyze_pass.h" /* struct ana */

/* name, file, line of a source location into o. */
static inline void isc_ana_jloc(struct ana *a, cJSON *o, const char *name, const char *file, uint32_t line)
{
	isc_jb_str(&a->jb, o, "name", name);
	isc_jb_str(&a->jb, o, "file", file);
	isc_jb_num(&a->jb, o, "line", line);
}

/* The name of string id, NULL when unknown. */
static inline const char *isc_ana_str_name(struct ana *a, uint32_t id)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, id);
	return s ? s->name : NULL;
}

/* ---- the functions table (sections_functions.c) -------------------------- */
/* One function's row: its source location and its times, summed over processes. */
struct ana_fn_row {
	const char *name, *file;
	uint32_t line;
	uint8_t kind;
	uint64_t calls, self_ns, total_ns, ops_self_ns, scoped_calls, scoped_self_ns, growth_bytes;
	uint64_t scoped_ops_self_ns;
	bool sampled; /* its time from stack samples (an operator's slot): calls not counted */
};

/* Orders source locations by name, file, line (strcmp-like). */
int isc_ana_cmp_location(const char *name1, const char *file1, uint32_t line1, const char *name2, const char *file2,
			 uint32_t line2);
/* qsort order of struct ana_fn_row by kind, then location: the tie-break of every ranking. */
int isc_ana_fn_row_identity(const void *x, const void *y);
/*
 * One row per function, those with the same (kind, name, file, line) under
 * different string ids (one per process) merged; *m gets the count.  The
 * strings are borrowed from the timeline; the caller frees the array.
 * NULL when out of memory.
 */
struct ana_fn_row *isc_ana_fn_rows(struct ana *a, size_t *m);

/* ---- cpu.* (sections_cpu.c) ---------------------------------------------- */
/* A CPU split (cpu.split, cpu.in_iterations.split): on-CPU parts, off-CPU, switches. */
struct ana_cpu_split {
	uint64_t python, ops, torch, off_py, off_ops, off_torch, vsw, ivsw;
	bool measured;
};

/* Context switch rates of the processes (processes[].context_switches), summed for cpu.context_switches. */
struct ana_switches {
	double voluntary_per_s, involuntary_per_s;
	bool have; /* some process had two samples or more */
};

/*
 * The off-CPU estimate of every thread (its off_* and it_off_* times), and
 * the whole run's split into *whole; from_samples (--python=sample, no
 * call spans): the split and each thread's times come from the stack
 * samples instead.
 */
void isc_ana_cpu_totals(struct ana *a, bool from_samples, struct ana_cpu_split *whole);
/* cpu.functions, top_functions, scoped_ns, top_functions_in_scopes, top_op_callers.  0 or -ENOMEM. */
int isc_ana_emit_functions(struct ana *a, cJSON *cpu, uint64_t traced_ns);
/* cpu.split of whole, then context_switches (cs), runnable threads, threads_max, blocked_ns, state_samples. */
void isc_ana_emit_cpu_split(struct ana *a, cJSON *cpu, const struct ana_cpu_split *whole,
			    const struct ana_switches *cs);
/* cpu.off_cpu_top and cpu.off_cpu_reasons of the whole run.  0 or -ENOMEM. */
int isc_ana_emit_off_cpu(struct ana *a, cJSON *cpu);
/* cpu.thread_pools.  0 or -ENOMEM. */
int isc_ana_emit_pools(struct ana *a, cJSON *cpu);
/* cpu.in_iterations (after isc_ana_emit_iterations; sets a->out.in_it*).  0 or -ENOMEM. */
int isc_ana_emit_in_iterations(struct ana *a, cJSON *cpu, bool from_samples);

/* ---- the run's shape (sections_run.c) ------------------------------------ */
/* processes[] with their threads (sorts a->prs and a->ths); sums their switch rates into *cs. */
void isc_ana_emit_processes(struct ana *a, cJSON *root, struct ana_switches *cs);
/* iterations (sets a->out.it_*, and the iteration times of struct ana).  0 or -ENOMEM. */
int isc_ana_emit_iterations(struct ana *a, cJSON *root);
/* memory (sets a->out.memory).  0 or -ENOMEM. */
int isc_ana_emit_memory(struct ana *a, cJSON *root);
/* ---- allocation sites (sections_alloc.c) --------------------------------- */
/*
 * memory.sampling, memory.sites, memory.growth_sites and
 * growth_sites_source (when allocation samples exist), memory.peak_composition
 * into m: nothing without allocation records.  *growth: growth_sites was
 * written (else the caller writes the RSS-tick one).  After
 * isc_ana_emit_iterations.  0 or -ENOMEM.
 */
int isc_ana_emit_alloc(struct ana *a, cJSON *m, bool *growth);
struct isc_oom_sites;
/* The allocation sites of process pid at its death at ts (after isc_ana_emit_alloc), for the oom section. */
void isc_ana_oom_sites(struct ana *a, uint32_t pid, uint64_t ts, struct isc_oom_sites *out);
struct isc_oom_gpu;
/*
 * A failed device allocation's device at the failure (g->have, after
 * isc_gpu_ana_failure), else the device of a CUDA out-of-memory error when
 * it was raised (g->at_exception): its live bytes and the device sites
 * holding the most then, from the site model.  0 or -ENOMEM.
 */
int isc_ana_oom_device_sites(struct ana *a, struct isc_oom_gpu *g);

/* run: outcome, exception, start-up, too_short (after cpu.in_iterations); traced: the traced ns. */
void isc_ana_emit_run(struct ana *a, cJSON *root, const struct isc_tl_stats *st, uint64_t traced,
		      uint64_t call_spans);

#endif
