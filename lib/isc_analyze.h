/*
 * isc_analyze.h - what iscope-analyze runs: the measuring pass over a
 * timeline (lib/analyze), the rules that add the verdict and findings
 * (lib/rules), and the comparison and history of findings documents
 * (lib/compare).  The document itself: isc_findings.h.
 *
 * Same conventions as isc.h: 0 or a negative errno plus isc_err_push(); the
 * library never exits and never writes to stdout.  cJSON documents returned
 * through an out-parameter belong to the caller (cJSON_Delete).
 *
 * The rules (iteration choice, warm-up, CPU split, off-CPU estimate) are
 * stated in man/iscope-analyze.1.in; the comments below say where each lives.
 */
#ifndef ISC_ANALYZE_H
#define ISC_ANALYZE_H

#include <cjson/cJSON.h>

#include "isc.h"
#include "isc_merge.h" /* struct isc_merge_result, enum isc_input_kind */

#define ISC_ANALYZE_TOP_DEFAULT 30
#define ISC_COMPARE_THRESHOLD_DEFAULT 5.0 /* percent of the baseline median */
#define ISC_COMPARE_ALPHA_DEFAULT 0.01
/* iscope-analyze --fail-on-regression exits with this when comparison.verdict is "regressed". */
#define ISC_EXIT_REGRESSED 3

struct isc_compare_opts {
	double threshold_pct; /* smallest change called regressed/improved; 0 = the default */
	double alpha;         /* significance level; 0 = the default */
	/*
	 * contributors ranked by their own growth, the largest increase first,
	 * instead of by their part in the whole change: what one rank does
	 * more than the others (the job view's straggler cause), whatever its
	 * iterations did
	 */
	bool growth_first;
	/* latencies compared as wall time even when every run has its waits for a CPU (--latency-basis=wall) */
	bool wall_only;
};

/* ---- iscope-analyze's whole job (analyze_run.c) ----------------------- */
#define ISC_ANALYZE_NATIVE_NODES_DEFAULT 4096
struct isc_analyze_opts {
	unsigned top_n; /* length of cpu.top_functions; 0 = ISC_ANALYZE_TOP_DEFAULT */
	/* Called every 2^16 events and once at the end when set (progress display). */
	void (*progress)(void *ctx, uint64_t events, uint64_t ts_ns);
	void *progress_ctx;
	/* GPU: HTA's rules (last ProfilerStep dropped, cuda_sync as GPU time, whole µs)
	 * instead of the exact ones; see analyze_gpu.c */
	bool hta_compat;
	/* keep the recorder's measured per-event cost in the times (no overhead
	 * compensation; see iscope-analyze(1)) */
	bool raw_times;
	/* native.tree: at most this many nodes; 0 = ISC_ANALYZE_NATIVE_NODES_DEFAULT */
	unsigned native_nodes;
	/* The per-event cost each process's times lose, found by
	 * isc_analyze_calibrations() in a first pass over the same timeline;
	 * NULL: a process's first CALIBRATION, from where it is read on. */
	const struct isc_analyze_calib *calibs;
	size_t ncalibs;
	/* isc_analyze_run: the findings of earlier runs to compare with (none: no comparison) */
	const cJSON *const *baselines;
	size_t nbaselines;
	struct isc_compare_opts compare;
};

/* What isc_analyze_run read, for the tool's messages. */
struct isc_analyze_result {
	enum isc_input_kind kind;      /* what the input held */
	struct isc_merge_result merge; /* a trace merged (Kineto imported) on the fly; all zero otherwise */
};

/*
 * The whole analysis of one input, as iscope-analyze runs it: tells what
 * in holds (isc_input_open: no seek, a pipe works); a findings document is
 * taken as it is, a trace merged or a Kineto trace imported on the fly, a
 * timeline read; then the first pass (isc_analyze_calibrations; not for
 * Kineto, which has no calibration), the measuring pass
 * (isc_analyze_measure), the rules (isc_findings_evaluate) and, with
 * o->nbaselines, the comparison (isc_findings_compare).  o may not be NULL.
 *
 * 0 with *out set.  -EBADMSG with *out set: the timeline was damaged and
 * its readable part analyzed (message pushed).  A damaged trace merged on
 * the fly is r->merge.bad_input, not an error: its prefix is analyzed.  Any
 * other negative (unreadable input, not findings, out of memory, a failed
 * comparison) leaves *out NULL, with a message pushed.
 */
int isc_analyze_run(FILE *in, const struct isc_analyze_opts *o, cJSON **out, struct isc_analyze_result *r);

/*
 * The same for the n inputs of one distributed job (Kineto traces, or the
 * traces of several hosts, opened with isc_input_open_hdr): merged as
 * iscope-merge does (isc_job_merge, *jr its result; jr->conflict set and
 * -EINVAL when they are not one job) into a timeline kept in memory, then
 * analysed as that timeline would be.  A damaged input: r->merge says so.
 */
struct isc_job_result;
int isc_analyze_run_job(const struct isc_merge_input *in, const enum isc_input_kind *kinds,
			const struct isc_tl_header *hdrs, size_t n, const struct isc_analyze_opts *o, cJSON **out,
			struct isc_analyze_result *r, struct isc_job_result *jr);

/*
 * iscope-analyze --job, the reduce of a job view from findings alone: the
 * distributed.ranks[] entries of n findings documents (each rank's own
 * analysis, or job views) reduced as one job (clocks aligned on the
 * collectives' ends, collectives matched, waits, stragglers and their
 * cause).  *out is a copy of the document that holds the detail rank (the
 * latest straggler, else the lowest rank) with the job's distributed
 * section and its rules evaluated again.  0, or a negative errno with a
 * message pushed (a document without ranks, a rank twice, mixed jobs).
 */
int isc_analyze_job(const cJSON *const *docs, size_t n, cJSON **out);

/* A process's chosen CALIBRATION record (formats/trace.md 6.1). */
struct isc_analyze_calib {
	uint32_t pid;
	uint64_t f[6]; /* mechanism per_event_ps calls plain_ns hooked_ns events */
};

/*
 * Reads the timeline t to its end (past damage, as isc_analyze_measure
 * does) and chooses each process's calibration: of its CALIBRATION records
 * (the agent measures at start and again at exit) the one with the lowest
 * nonzero per-event cost, as a machine's slow spell inflates a measurement
 * (iscope-analyze(1)); a process with only zero costs keeps its first.
 * *out (malloc'd, the caller frees it) gets one entry per calibrated
 * process, sorted by pid.  0, or -ENOMEM.
 */
int isc_analyze_calibrations(struct isc_timeline *t, struct isc_analyze_calib **out, size_t *n);

/*
 * The measuring pass (analyze.c): reads the timeline t to its end and
 * writes the measured sections of a findings document (no verdict, no
 * findings[]: the rules add those).  Memory grows with the number
 * of distinct functions, threads, processes, (span, Python function) pairs
 * blocked off CPU and iterations, not with the trace length.  o may be NULL
 * (defaults).
 *
 * Returns 0 with *out set.  Damaged input (corrupt or truncated chunks) is
 * read past where the container allows; the function then returns -EBADMSG
 * with *out still set (summary.damaged = true) and one pushed message naming
 * the first damage and how many events were analyzed.  Any other negative
 * (-ENOMEM, read error) leaves *out NULL.
 */
int isc_analyze_measure(struct isc_timeline *t, const struct isc_analyze_opts *o, cJSON **out);

/* isc_analyze_measure, then the rules (isc_findings_evaluate): the document with its verdict. */
int isc_analyze_timeline(struct isc_timeline *t, const struct isc_analyze_opts *o, cJSON **out);

/* ---- verdict and findings (lib/rules: rules.c, one rule_*.c per rule) --- */
/*
 * Fills root.verdict and root.findings[] from the measured sections of a
 * findings document (summary, cpu, memory, iterations, gpu, timeseries).
 * Rules read only the document, never the timeline, so a saved document
 * can be re-evaluated.  Returns 0 or -ENOMEM.
 */
int isc_findings_evaluate(cJSON *root);

/* ---- run comparison and history (lib/compare: compare.c, history.c) --- */
/*
 * Sets cur.comparison from cur against nbase >= 1 baseline findings
 * documents (statistics, contributors, environment differences; the rules
 * are stated at the top of compare/compare.c and in iscope-analyze(1)).
 * The baselines are only read.  0, -EINVAL (no baseline) or -ENOMEM.
 */
int isc_findings_compare(cJSON *cur, const cJSON *const *base, size_t nbase, const struct isc_compare_opts *o);

/*
 * Sets out.history from n >= 1 findings documents of a series, oldest
 * first (names[i] identifies series[i] in the output): per headline
 * metric a robust baseline (median, MAD), EWMA and CUSUM, and the change
 * points with the run where each begins.  0, -EINVAL or -ENOMEM.
 */
int isc_findings_history(cJSON *out, const cJSON *const *series, const char *const *names, size_t n,
			 const struct isc_compare_opts *o);

#endif
