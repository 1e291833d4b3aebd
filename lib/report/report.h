/*
 * report.h - what the report modules (lib/report/report_*.c) share; not
 * for the tools.
 *
 * The data readers below validate what a findings document says before a
 * chart or a table uses it: a value that is missing, null, not a number,
 * not finite, negative or above ISC_REP_MAX_VALUE is "no data", so no
 * NaN, infinity or absurd coordinate ever reaches the output.
 */
#ifndef ISC_REPORT_INT_H
#define ISC_REPORT_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "isc_findings.h"
#include "isc_report.h"

/* ---- output buffer (report_data.c) ------------------------------------- */
/* Text being built; the first error sticks and later writes do nothing. */
struct isc_rep {
	struct isc_buf b;
	int err;
	bool html; /* Markdown meant for the HTML page: charts instead of their tables */
	unsigned charts; /* SVG charts written so far (their element ids) */
};

void isc_rep_put(struct isc_rep *r, const char *s);
void isc_rep_putn(struct isc_rep *r, const char *s, size_t n);
void isc_rep_putf(struct isc_rep *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * s escaped for XML text and attribute values (& < > " '), control
 * characters dropped, cut after about max bytes (at a UTF-8 boundary) with
 * an ellipsis; max 0 = no limit.
 */
void isc_rep_xml(struct isc_rep *r, const char *s, size_t max);
/* s (NULL: "") escaped for Markdown text and tables (isc_md_escape). */
void isc_rep_md(struct isc_rep *m, const char *s);
/* s escaped, cut to about max bytes (at a UTF-8 boundary) with an ellipsis: kernel names run to kilobytes. */
void isc_rep_md_cut(struct isc_rep *m, const char *s, size_t max);
/*
 * `s` when s holds nothing a renderer could misread, else the escaped text
 * (isc_rep_md).  For prose only: a code span is not a table cell.
 */
void isc_rep_code(struct isc_rep *m, const char *s);

/* ---- numbers ------------------------------------------------------------ */
/* Largest value a chart or table takes from a document (ns, bytes, counts). */
#define ISC_REP_MAX_VALUE 1e18
/*
 * Numbers at or above this are shown in exponent form: "%.0f" of 1e300 does
 * not fit the callers' 64-byte buffers, and a cut number would be a wrong one.
 */
#define ISC_REP_FIXED_MAX 1e15
/* v when it is a usable measurement (finite, 0 <= v <= ISC_REP_MAX_VALUE), else NAN. */
double isc_rep_value(const cJSON *item);
/* "12 ns", "3.4 µs", "5.6 ms", "7.89 s"; exponent form for absurd values.  Returns buf. */
const char *isc_rep_fmt_ns(char *buf, size_t cap, double ns);
/* "512 B", "1.5 KiB", ... "2.0 TiB".  Returns buf. */
const char *isc_rep_fmt_bytes(char *buf, size_t cap, double bytes);
/*
 * The number at path of o formatted by kind: 'n' ns, 'b' bytes, 'p'
 * percent, 'r' rate, 'f' a mean count, 'i' (any other) integer; "n/a" when
 * missing, not finite, or a negative duration or size.  Returns buf.
 */
const char *isc_rep_field(char *buf, size_t cap, const cJSON *o, const char *path, char kind);
/* "(file:line)" / "(file)" of o (without the parentheses unless parens) escaped; nothing when file is empty. */
void isc_rep_location(struct isc_rep *m, const cJSON *o, bool parens);

/* ---- the HTML page (report_html.c) ------------------------------------- */
/*
 * For the HTML page a chart's SVG stands in the Markdown between a line
 * "\x01" and a line "\x02", which the HTML page copies verbatim.  No
 * workload string can forge the markers: isc_rep_md (isc_md_escape) and
 * isc_rep_code() drop control characters, and the SVG escapes its text.
 */
#define ISC_REP_CHART_BEGIN "\n\x01\n"
#define ISC_REP_CHART_END "\x02\n"

/* Appends to h the self-contained HTML page of the report's Markdown md. */
void isc_rep_html_page(struct isc_rep *h, const char *md);

/* ---- the Markdown report's sections, one file each ---------------------- */
/*
 * Each appends its section of the findings document root to m, in the
 * order report_md.c lists; a section whose data is missing says so or is
 * left out.
 */
/* report_compare.c: "## Comparison ..." and "## History ..." when root has them; nothing otherwise. */
void isc_rep_comparison(struct isc_rep *m, const cJSON *root);
/* report_latency.c: "## End-to-end latency" (with the recording's cost and notes), then "### Marks". */
void isc_rep_sec_latency(struct isc_rep *m, const cJSON *root);
void isc_rep_sec_marks(struct isc_rep *m, const cJSON *root);
/* report_cpu.c: "## CPU". */
void isc_rep_sec_cpu(struct isc_rep *m, const cJSON *root);
/* report_pysample.c: python.samples as a CPU subsection; recording.sampler's cost line. */
void isc_rep_python_samples(struct isc_rep *m, const cJSON *root);
void isc_rep_sampler_cost(struct isc_rep *m, const cJSON *root);
/* The CUDA agent's own cost (gpu.agent), when it ran (report_gpu.c). */
void isc_rep_cuda_agent_cost(struct isc_rep *m, const cJSON *root);
/* report_gpu.c: "## GPU". */
void isc_rep_sec_gpu(struct isc_rep *m, const cJSON *root);
/* report_memory.c: "## Memory", host then device memory. */
void isc_rep_sec_memory(struct isc_rep *m, const cJSON *root);
/* report_findings.c: "## Findings", then "## Suggestions" (the findings' suggestions alone). */
void isc_rep_sec_findings(struct isc_rep *m, const cJSON *root);
void isc_rep_sec_suggestions(struct isc_rep *m, const cJSON *root);
/* report_native.c: native.* as a CPU subsection "### Native stacks" (flame graphs in HTML). */
void isc_rep_native(struct isc_rep *m, const cJSON *root);
/* report_native.c: a thread pool's native stacks (cpu.thread_pools[].native) as a table cell and its "|". */
void isc_rep_native_pool(struct isc_rep *m, const cJSON *nat);
/*
 * report_native.c: native.tree as Brendan Gregg's folded stacks, or as
 * speedscope's file format, into *out (malloc'd).  0; -EINVAL (message
 * pushed) when the findings have no native stacks or the tree is
 * malformed; -ENOMEM.
 */
int isc_rep_stacks(const cJSON *root, bool speedscope, char **out);
/* report_environment.c: "## Environment". */
void isc_rep_sec_environment(struct isc_rep *m, const cJSON *root);

/* ---- timeseries and iterations (report_data.c) ------------------------- */
#define ISC_REP_MAX_BUCKETS 4096
#define ISC_REP_MAX_SPANS 1000
#define ISC_REP_MAX_BINS 256

/* The time axis of root.timeseries: bucket i covers [t0 + i*bucket, t0 + (i+1)*bucket). */
struct isc_rep_ts {
	double t0_ns, bucket_ns;
	size_t n;
	double ncpu; /* timeseries.ncpu, else environment.ncpu; 0 when unknown */
};
/* false when timeseries is missing or its axis unusable (no bucket, > ISC_REP_MAX_BUCKETS). */
bool isc_rep_ts_get(const cJSON *root, struct isc_rep_ts *ts);
/*
 * timeseries.<name> as ts->n values into v (caller's array of ts->n), NAN
 * where a bucket has no (usable) value; returns how many are usable.
 */
size_t isc_rep_series(const cJSON *root, const struct isc_rep_ts *ts, const char *name, double *v);

/* iterations.spans: the first ISC_REP_MAX_SPANS well-formed [start, end] pairs. */
struct isc_rep_span {
	double start_ns, end_ns;
	bool warmup;
};
/* Fills s (ISC_REP_MAX_SPANS entries); returns the count. */
size_t isc_rep_spans(const cJSON *root, struct isc_rep_span *s);

/* iterations.histogram with the p50 / p99 of iterations.latency_ns (NAN when absent). */
struct isc_rep_hist {
	size_t k;
	double edges[ISC_REP_MAX_BINS + 1], counts[ISC_REP_MAX_BINS];
	double p50, p99;
};
/*
 * false when the histogram is absent or not usable: k counts and k+1 edges
 * (1 <= k <= ISC_REP_MAX_BINS), edges non-decreasing.
 */
bool isc_rep_hist_get(const cJSON *root, struct isc_rep_hist *h);

/* ---- findings (report_data.c) ------------------------------------------ */
/*
 * One finding in either shape: schema 2 (suggestion object, evidence with
 * metrics / time_ranges / top) or schema 1 (suggestion a string,
 * estimated_saving_pct beside it, evidence a flat object of numbers and
 * strings, returned as metrics).  Strings are borrowed from f; NULL or NAN
 * when absent.
 */
struct isc_rep_finding {
	const char *id, *title, *severity, *action, *rationale, *estimate;
	double confidence, saving_ns, saving_pct;
	double saving_bytes; /* memory rules: estimated_saving_bytes, NAN when absent */
	const cJSON *metrics, *time_ranges, *top;
};
void isc_rep_finding_get(const cJSON *f, struct isc_rep_finding *out);

/* ---- SVG charts (report_svg.c) ----------------------------------------- */
/*
 * Each writes one <svg> element (explicit width, height and viewBox,
 * role="img", a <title> and a <desc>, axis labels with units, no script,
 * no link, no external reference) to r, from data the caller validated
 * with the readers above.  Text from the workload is XML-escaped.
 */

/* A series over the timeseries axis; v has ts->n values, NAN = no data. */
struct isc_rep_line {
	const char *name;
	const double *v;
	const char *color;
};
enum isc_rep_unit { ISC_REP_UNIT_CORES, ISC_REP_UNIT_PCT, ISC_REP_UNIT_BYTES };
/*
 * A step chart of the lines over time, y from 0 to the largest value (to
 * 100 for percent; to at least ncpu for cores, with a dashed line there),
 * iterations as a strip of bars under the plot (warm-up ones in orange).
 */
void isc_svg_timeseries(struct isc_rep *r, const char *title, const struct isc_rep_ts *ts,
			const struct isc_rep_line *lines, size_t nlines, enum isc_rep_unit unit,
			const struct isc_rep_span *spans, size_t nspans);

/*
 * A stacked area chart over ts: band k's height at bucket i is
 * bands[k].v[i] (NAN or negative: 0), stacked in order from the axis up;
 * y in bytes from 0 to the highest stack.
 */
void isc_svg_stacked(struct isc_rep *r, const char *title, const struct isc_rep_ts *ts,
		     const struct isc_rep_line *bands, size_t nbands);

/* Iteration latency histogram with the p50 and p99 marked. */
void isc_svg_histogram(struct isc_rep *r, const char *title, const struct isc_rep_hist *h);

/* Horizontal bars of segments (a stacked breakdown, or one segment a bar). */
struct isc_rep_seg {
	const char *name; /* legend entry; NULL: no legend */
	double value;     /* in the chart's x unit; NAN = left out */
	const char *color;
};
struct isc_rep_bar {
	const char *label; /* may come from the workload */
	struct isc_rep_seg seg[4];
	size_t nseg;
	const char *note; /* text after the bar ("12.3 ms"), or NULL */
};
/* Bars on an x axis from 0 to xmax (0: the widest bar, rounded up) labelled xlabel. */
void isc_svg_bars(struct isc_rep *r, const char *title, const char *xlabel, double xmax,
		  const struct isc_rep_bar *bars, size_t n);

/* A distributed job's per-rank swimlanes: each lane a rank's iterations and collectives on the job's clock (ns from its t0). */
struct isc_rep_iv {
	double s, e;
	bool last; /* a collective the rank arrived at last, alone */
};
struct isc_rep_lane {
	const char *label;
	const struct isc_rep_iv *it, *coll;
	size_t nit, ncoll;
};
void isc_svg_swimlanes(struct isc_rep *r, const char *title, const struct isc_rep_lane *lanes, size_t n, double t_end);
/* A heatmap of v (nrows x ncols, row-major, ns; NAN: no cell), rows labelled. */
void isc_svg_heatmap(struct isc_rep *r, const char *title, const char *const *rows, size_t nrows, size_t ncols,
		     const double *v);

/* report_job.c: "## Job", a distributed job's view (world size, straggler or balance, ranks, collectives), first. */
void isc_rep_sec_job(struct isc_rep *m, const cJSON *root);

/* ---- charts in the Markdown (report_chart.c) ----------------------------- */
/* isc_svg_bars between the chart markers (callers write it for the HTML page only). */
void isc_rep_chart_bars(struct isc_rep *m, const char *title, const char *xlabel, double xmax,
			const struct isc_rep_bar *bars, size_t n);
/* A breakdown in percent at path of o as a stacked bar chart segment (NAN when missing). */
struct isc_rep_seg isc_rep_pct_seg(const cJSON *o, const char *path, const char *name, const char *color);
/* Does bar b have a segment with a value? */
bool isc_rep_any_seg(const struct isc_rep_bar *b);

/* A series of root.timeseries: key, legend name, colour, per-row aggregate and unit in tables. */
struct isc_rep_series_def {
	const char *key, *name, *color;
	bool max;  /* tables: the largest value of a row's buckets, else their mean */
	char kind; /* 'c' count (cores, threads), 'p' percent, 'b' bytes */
};
/*
 * "### heading" and the series of root.timeseries named by def (at most 4
 * used) that have data: a chart in the HTML page, in Markdown a table of
 * at most ten rows, each a tenth of the run.  Nothing when none has data.
 */
void isc_rep_over_time(struct isc_rep *m, const cJSON *root, const char *heading, const struct isc_rep_series_def *def,
		       size_t ndef, enum isc_rep_unit unit);

#endif
