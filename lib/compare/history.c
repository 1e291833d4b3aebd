/*
 * history.c - `history`: change points over a series of findings (oldest
 * first), per headline metric (iscope-analyze --history).
 *
 * Each metric x_1..x_n (one value per run) is judged against a robust
 * baseline of the runs before it:
 *
 *   baseline   median m and sigma = 1.4826 MAD of the runs of the current
 *              segment so far, its first 20 at most (none judged before 5)
 *   z_i        (x_i - m) / max(sigma, 1 % of |m|)      (the floor keeps a
 *              perfectly flat series from turning noise into infinity)
 *   CUSUM      S+_i = max(0, S+_{i-1} + z_i - k), S-_i likewise downwards,
 *              k = 0.5; an alarm when S > h = 5 (Page's tabular CUSUM)
 *   EWMA       lambda = 0.2 over every run of the series, reported for
 *              the last run
 *
 * An alarm alone is not a change point: the run where the shift begins is
 * searched from the first run of the alarm's excursion (the last run where
 * S was 0, plus one) back 10 runs, as the split that best separates the
 * runs around it (refine()), and it is a change point only when the median
 * of the runs from there on (at least 3 of them: one outlier run is never
 * a change point, up to 10) differs from the median of the runs before it
 * (up to 20) by more than the threshold (percent) and by more than 3 sigma.
 * After a change point the baseline restarts at it.  Shares (percentages,
 * unit "pct") change by points, not by a percent of themselves: a share
 * going from 10 % to 58 % is +48 points, and the threshold is in points
 * for them.  A metric with fewer than BASE_RUNS + MIN_AFTER runs is not
 * tested, and the history says so (history.tested).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "isc_util.h"
#include "isc_jbuild.h"
#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_stats.h"

#define BASE_RUNS 5   /* runs of a segment before it is judged */
#define BASE_MAX 20   /* runs of a segment its baseline is taken from, at most */
#define REFINE 10     /* runs before the CUSUM's start searched for a better split */
#define MIN_AFTER 3
#define CUSUM_K 0.5
#define CUSUM_H 5.0
#define EWMA_LAMBDA 0.2

struct metric {
	const char *name, *path, *unit;
	bool lower_is_better;
};

static const struct metric metrics[] = {
	{ "iteration p50", "iterations.latency_ns.p50", "ns", true },
	{ "iteration p90", "iterations.latency_ns.p90", "ns", true },
	{ "iteration p99", "iterations.latency_ns.p99", "ns", true },
	{ "wall time", "summary.wall_ns", "ns", true },
	{ "CPU python share", "cpu.split.python_pct", "pct", true },
	{ "off-CPU share", "cpu.split.off_cpu_pct", "pct", true },
	{ "RSS peak", "memory.rss_peak_bytes", "bytes", true },
};

static double med_of(const double *x, size_t n, double *mad)
{
	double *t = malloc(n * sizeof(*t)), m = 0;
	*mad = 0;
	if (!t)
		return NAN;
	memcpy(t, x, n * sizeof(*t));
	isc_median_mad(t, n, &m, mad);
	free(t);
	return m;
}

/*
 * Where the shift of an alarm at run `alarm` begins: the split t in
 * [start - REFINE, alarm] (not before seg + 2) that minimizes the absolute
 * deviations of the runs around the medians of each side (up to BASE_MAX
 * runs before t, up to 2 * BASE_RUNS from t): the CUSUM's own start lags
 * or leads by a run or two when the noise is large.
 */
static size_t refine(const double *v, size_t seg, size_t start, size_t alarm, size_t m)
{
	size_t lo = start > seg + 2 + REFINE ? start - REFINE : seg + 2, best = start;
	double best_cost = INFINITY, tmp[BASE_MAX + 2 * BASE_RUNS];
	for (size_t t = lo; t <= alarm && t < m; t++) {
		size_t a = t - seg > BASE_MAX ? t - BASE_MAX : seg, b = t + 2 * BASE_RUNS < m ? t + 2 * BASE_RUNS : m;
		double cost = 0, mad;
		for (int side = 0; side < 2; side++) {
			size_t from = side ? t : a, to = side ? b : t, k = 0;
			for (size_t j = from; j < to; j++)
				tmp[k++] = v[j];
			double med = med_of(tmp, k, &mad);
			for (size_t j = from; j < to; j++)
				cost += fabs(v[j] - med);
		}
		cost /= (double)(b - a);
		if (cost < best_cost) {
			best_cost = cost;
			best = t;
		}
	}
	return best;
}

/*
 * One metric over the series into an object of arr; left out with fewer
 * than BASE_RUNS + MIN_AFTER values (*tested stays as it was).
 */
static int one_metric(struct isc_jb *jb, cJSON *arr, const struct metric *mt, const double *x, const bool *have,
		      size_t n, const char *const *names, double thr, bool *tested)
{
	double *v = malloc((n ? n : 1) * sizeof(*v));
	size_t *run = malloc((n ? n : 1) * sizeof(*run)), m = 0;
	if (!v || !run) {
		free(v);
		free(run);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (have[i]) {
			v[m] = x[i];
			run[m++] = i;
		}
	if (m < BASE_RUNS + MIN_AFTER) {
		free(v);
		free(run);
		return 0;
	}
	*tested = true;
	cJSON *o = isc_jb_push_obj(jb, arr);
	isc_jb_str(jb, o, "metric", mt->name);
	isc_jb_str(jb, o, "unit", mt->unit);
	isc_jb_str(jb, o, "path", mt->path);
	isc_jb_num(jb, o, "runs", (double)m);
	cJSON *cps = isc_jb_arr(jb, o, "change_points");
	size_t seg = 0; /* first run of the current segment */
	double base = 0, mad = 0, sig = 1, sp = 0, sn = 0, ewma = v[0];
	size_t zero_p = 0, zero_n = 0; /* last index where S+ / S- was 0 */
	bool points = !strcmp(mt->unit, "pct");
	for (size_t i = 0; i < m; i++) /* apart from the segments: a change point skips runs below */
		ewma = EWMA_LAMBDA * v[i] + (1 - EWMA_LAMBDA) * ewma;
	for (size_t i = 0; i < m; i++) {
		if (i < seg + BASE_RUNS)
			continue;
		if (i <= seg + BASE_MAX) { /* the baseline grows with the segment up to BASE_MAX runs */
			base = med_of(v + seg, i - seg, &mad);
			sig = fmax(1.4826 * mad, 0.01 * fabs(base));
			if (sig <= 0)
				sig = 1;
		}
		if (i == seg + BASE_RUNS) {
			sp = sn = 0;
			zero_p = zero_n = i - 1;
		}
		double z = (v[i] - base) / sig;
		sp = fmax(0, sp + z - CUSUM_K);
		sn = fmax(0, sn - z - CUSUM_K);
		if (sp == 0)
			zero_p = i;
		if (sn == 0)
			zero_n = i;
		if (sp <= CUSUM_H && sn <= CUSUM_H)
			continue;
		size_t start = (sp > CUSUM_H ? zero_p : zero_n) + 1;
		if (m - start < MIN_AFTER) /* wait for more runs: one outlier is not a change */
			continue;
		start = refine(v, seg, start, i, m);
		size_t nafter = m - start < 2 * BASE_RUNS ? m - start : 2 * BASE_RUNS;
		double before_mad, after_mad;
		size_t from = start - seg > BASE_MAX ? start - BASE_MAX : seg;
		double before = med_of(v + from, start - from, &before_mad), after = med_of(v + start, nafter, &after_mad);
		double chg = points ? after - before : before != 0 ? 100 * (after - before) / fabs(before) : 0;
		if (fabs(chg) > thr && fabs(after - before) > 3 * sig) {
			cJSON *c = isc_jb_push_obj(jb, cps);
			isc_jb_num(jb, c, "run", (double)run[start]);
			isc_jb_str(jb, c, "file", names ? names[run[start]] : NULL);
			isc_jb_num(jb, c, "before", before);
			isc_jb_num(jb, c, "after", after);
			isc_jb_num_or_null(jb, c, "change_pct", !points, round(chg * 100) / 100);
			isc_jb_num_or_null(jb, c, "change_points", points, round(chg * 100) / 100);
			bool worse = mt->lower_is_better ? after > before : after < before;
			isc_jb_str(jb, c, "direction", worse ? "regressed" : "improved");
			seg = start; /* the next baseline: the runs from the change on */
			i = start + BASE_RUNS - 1 > i ? start + BASE_RUNS - 1 : i;
			continue;
		}
		/* an excursion smaller than the threshold: a drift too small to report; start over */
		sp = sn = 0;
		zero_p = zero_n = i;
	}
	double lastmad, last = med_of(v + seg, m - seg < BASE_RUNS ? m - seg : BASE_RUNS, &lastmad);
	isc_jb_num(jb, o, "baseline_median", last);
	isc_jb_num(jb, o, "baseline_mad", lastmad);
	isc_jb_num(jb, o, "last", v[m - 1]);
	isc_jb_num(jb, o, "ewma", round(ewma * 1000) / 1000);
	isc_jb_num(jb, o, "cusum_up", round(sp * 1000) / 1000);
	isc_jb_num(jb, o, "cusum_down", round(sn * 1000) / 1000);
	free(v);
	free(run);
	return 0;
}

int isc_findings_history(cJSON *out, const cJSON *const *series, const char *const *names, size_t n,
			 const struct isc_compare_opts *o)
{
	struct isc_jb jb = { false, true };
	double thr = o && o->threshold_pct > 0 ? o->threshold_pct : ISC_COMPARE_THRESHOLD_DEFAULT;
	double *x = malloc((n ? n : 1) * sizeof(*x));
	bool *have = malloc((n ? n : 1) * sizeof(*have));
	int rc = -ENOMEM;
	if (!x || !have)
		goto out;
	cJSON_DeleteItemFromObjectCaseSensitive(out, "history");
	cJSON *h = isc_jb_obj(&jb, out, "history");
	isc_jb_num(&jb, h, "runs", (double)n);
	isc_jb_num(&jb, h, "threshold_pct", thr);
	isc_jb_num(&jb, h, "min_runs", BASE_RUNS + MIN_AFTER);
	isc_jb_str(&jb, h, "method",
		   "per metric: baseline = median and 1.4826 MAD of the first runs (5 to 20) of a segment; tabular "
		   "CUSUM (k = 0.5, h = 5) on the robust z; the change point is the split that best separates the "
		   "runs around the alarm's excursion, kept when 3 or more runs follow and their median moved by "
		   "more than the threshold (in points for shares) and 3 sigma; EWMA lambda 0.2; a metric is tested "
		   "with 8 or more runs");
	cJSON *arr = isc_jb_arr(&jb, h, "metrics");
	bool tested = false;
	for (size_t k = 0; k < sizeof(metrics) / sizeof(metrics[0]); k++) {
		for (size_t i = 0; i < n; i++)
			have[i] = isc_doc_have(series[i], metrics[k].path, &x[i]);
		if ((rc = one_metric(&jb, arr, &metrics[k], x, have, n, names, thr, &tested)))
			goto out;
	}
	isc_jb_bool(&jb, h, "tested", tested);
	rc = jb.oom ? -ENOMEM : 0;
out:
	free(x);
	free(have);
	if (rc == -ENOMEM)
		isc_err_push("out of memory in the history");
	return rc;
}
