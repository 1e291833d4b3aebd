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

#define ISC_ANALYZE_TOP_DEFAULT 30

/* ---- analysis (analyze.c) ---------------------------------------------- */
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
	/* The per-event cost each process's times lose, found by
	 * isc_analyze_calibrations() in a first pass over the same timeline;
	 * NULL: a process's first CALIBRATION, from where it is read on. */
	const struct isc_analyze_calib *calibs;
	size_t ncalibs;
};

/* A process's chosen CALIBRATION record (formats/trace.md 6.1). */
struct isc_analyze_calib {
	uint32_t pid;
	uint64_t f[6]; /* mechanism per_event_ps calls plain_ns hooked_ns events */
};

/*
 * Reads the timeline t to its end (past damage, as isc_analyze_timeline
 * does) and chooses each process's calibration: of its CALIBRATION records
 * (the agent measures at start and again at exit) the one with the lowest
 * nonzero per-event cost, as a machine's slow spell inflates a measurement
 * (iscope-analyze(1)); a process with only zero costs keeps its first.
 * *out (malloc'd, the caller frees it) gets one entry per calibrated
 * process, sorted by pid.  0, or -ENOMEM.
 */
int isc_analyze_calibrations(struct isc_timeline *t, struct isc_analyze_calib **out, size_t *n);

/*
 * Reads the timeline t to its end in one pass and builds the findings
 * document (verdict and findings[] included).  Memory grows with the number
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
int isc_analyze_timeline(struct isc_timeline *t, const struct isc_analyze_opts *o, cJSON **out);

/* ---- verdict and findings (rules.c, one rule_*.c per rule) ------------- */
/*
 * Fills root.verdict and root.findings[] from the measured sections of a
 * findings document (summary, cpu, memory, iterations, gpu, timeseries).
 * Rules read only the document, never the timeline, so a saved document
 * can be re-evaluated.  Returns 0 or -ENOMEM.
 */
int isc_findings_evaluate(cJSON *root);

/* ---- run comparison and history (analyze/compare.c, analyze/history.c) - */
#define ISC_COMPARE_THRESHOLD_DEFAULT 5.0 /* percent of the baseline median */
#define ISC_COMPARE_ALPHA_DEFAULT 0.01
/* iscope-analyze --fail-on-regression exits with this when comparison.verdict is "regressed". */
#define ISC_EXIT_REGRESSED 3

struct isc_compare_opts {
	double threshold_pct; /* smallest change called regressed/improved; 0 = the default */
	double alpha;         /* significance level; 0 = the default */
};

/*
 * Sets cur.comparison from cur against nbase >= 1 baseline findings
 * documents (statistics, contributors, environment differences; the rules
 * are stated at the top of analyze/compare.c and in iscope-analyze(1)).
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
