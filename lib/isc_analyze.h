/*
 * isc_analyze.h - analysis (timeline -> findings JSON) and report rendering
 * (findings JSON -> Markdown / HTML).  Part of the tool tier: iscope-analyze,
 * iscope-report and the tests use it.
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

/* Version of the findings document layout (formats/findings.schema.json). */
#define ISC_FINDINGS_SCHEMA_VERSION 2
/*
 * The CPU classes judge the time inside iterations (cpu.in_iterations)
 * when the iterations hold at least this share of the traced time from the
 * first iteration on (in_iterations.share_pct); iscope-analyze(1), Verdict.
 */
#define ISC_ITER_SHARE_MIN_PCT 50
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

/* ---- order statistics (quantile.c) --------------------------------- */
/*
 * Nearest-rank quantile of n sorted values: x[k-1] with k = ceil(p*n),
 * 1 <= k <= n.  n must be > 0.
 */
uint64_t isc_quantile_sorted(const uint64_t *x, size_t n, double p);

/*
 * Distribution-free confidence interval for the p-quantile from n samples:
 * 1-based ranks (lo, hi) of the order statistics with
 * P(x_(lo) <= q_p <= x_(hi)) >= level, from the exact binomial Bin(n, p).
 * lo = max{k : F(k-1) <= a/2}, hi = min{k : F(k-1) >= 1-a/2}, a = 1-level;
 * a bound that needs more samples than n is returned as 0.
 */
void isc_quantile_ci(size_t n, double p, double level, size_t *lo, size_t *hi);

/*
 * Linear histogram of n > 0 sorted values: k bins of equal width from x[0]
 * to x[n-1] (one bin when they are equal or k < 2).  edges (k+1 entries,
 * integers rounded up) and counts (k entries) are the caller's; bin i holds
 * edges[i] <= x < edges[i+1], the last one also x[n-1].  Returns the number
 * of bins filled in.
 */
unsigned isc_histogram_linear(const uint64_t *x, size_t n, unsigned k, uint64_t *edges, uint64_t *counts);

/* ---- streaming least squares (lsq.c) --------------------------- */
/*
 * Least-squares slope of (t, y) points arriving in time order, restricted at
 * the end to a time range chosen then (after the first 10 % of the run),
 * in memory independent of the number of points: points are kept as
 * per-bucket moments in ISC_LSQ_BUCKETS time buckets whose width doubles
 * whenever the run outgrows them.  The range is rounded inwards to bucket
 * boundaries, so no point outside it is used (and at most 2/ISC_LSQ_BUCKETS
 * of the run inside it is dropped at each end).
 */
#define ISC_LSQ_BUCKETS 512
struct isc_lsq;
int isc_lsq_new(struct isc_lsq **l);
/* t in ns, non-decreasing; y any unit.  Returns 0 or -EINVAL for t going back. */
int isc_lsq_add(struct isc_lsq *l, uint64_t t_ns, double y);
/*
 * Slope in y units per second of the points with from_ns <= t < to_ns
 * (UINT64_MAX: no end), both rounded inwards to bucket boundaries; false
 * when fewer than 2 distinct times remain.  *npoints gets the points used.
 */
bool isc_lsq_slope(const struct isc_lsq *l, uint64_t from_ns, uint64_t to_ns, double *per_s, uint64_t *npoints);
void isc_lsq_free(struct isc_lsq *l);

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

/* 0 when doc looks like a findings document (schema_version, tool.name), else -EINVAL with a message. */
int isc_findings_check(const cJSON *doc);

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

/* ---- reading findings documents (findings_json.c) --------------------- */
/* Item at a dotted path ("cpu.split.python_pct"); NULL when any step is missing. */
const cJSON *isc_json_get(const cJSON *root, const char *path);
/* Number at path into *v; false when missing, null or not a number. */
bool isc_json_num(const cJSON *root, const char *path, double *v);
/* String at path (borrowed from root); NULL when missing or not a string. */
const char *isc_json_str(const cJSON *root, const char *path);
/* Is verdict class cls (may be NULL) one of the GPU classes, whose share is of the GPU span? */
bool isc_verdict_class_is_gpu(const char *cls);

/* ---- report (report_md.c) ---------------------------------------------- */
enum isc_report_format {
	ISC_REPORT_MD = 0,
	ISC_REPORT_HTML = 1, /* the Markdown rendered by cmark (safe mode; tables converted here) in one page */
};

/*
 * Renders a findings document.  Missing or mistyped fields are tolerated
 * (shown as "n/a" or left out).  *out is a malloc'd NUL-terminated string
 * the caller frees.  Returns 0, -EINVAL when root is not a JSON object, or
 * -ENOMEM.
 */
int isc_report_render(const cJSON *root, enum isc_report_format f, char **out);

/* ---- terminal summary (report_term.c) ---------------------------------- */
struct isc_summary_opts {
	bool color;        /* ANSI SGR colours */
	const char *input; /* the findings file named in the hint line; NULL for stdin */
};
/*
 * The short summary for a terminal: the verdict with its confidence, the
 * headline numbers, the top 3 findings with their estimated savings, and a
 * hint line naming -o report.md / -o report.html.  Control characters in
 * the document's strings are dropped.  *out is malloc'd; 0, -EINVAL (not
 * an object) or -ENOMEM.
 */
int isc_report_summary(const cJSON *root, const struct isc_summary_opts *o, char **out);

/*
 * Appends s to b escaped for Markdown text: ASCII punctuation that CommonMark
 * or GFM could read as markup is backslash-escaped (including '|', so the
 * result is safe inside a table cell), control characters are dropped.
 * Returns 0 or -ENOMEM.
 */
int isc_md_escape(struct isc_buf *b, const char *s);

#endif
