/*
 * report_compare.c - the report's first section when the findings carry a
 * comparison (iscope-analyze --baseline) or a history (--history):
 *
 *   ## Comparison with 3 baseline runs
 *   **Regressed**: step median 100.0 ms -> 110.2 ms (+10.2 %, 95 % interval ...)
 *   Environment differences (table)       <- first: they explain many changes
 *   Latency before / after (quantile table, or a bar chart in HTML)
 *   What changed, per iteration (contributors table, or a bar chart in HTML)
 *
 *   ## History over N runs: the change points per metric
 *
 * Workload strings (function, kernel, file names) go through
 * isc_md_escape(); the charts escape their own text.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

#define MAX_ROWS 15

/* Signed duration: "+1.2 ms", "-350 µs". */
static const char *fmt_delta(char *buf, size_t cap, double ns)
{
	char b[48];
	isc_rep_fmt_ns(b, sizeof(b), fabs(ns));
	snprintf(buf, cap, "%s%s", ns < 0 ? "−" : "+", b);
	return buf;
}

static const char *verdict_word(const char *v)
{
	return !strcmp(v, "regressed") ? "Regressed" : !strcmp(v, "improved") ? "Improved"
		: !strcmp(v, "unchanged") ? "Unchanged" : "Inconclusive";
}

/* The one-sentence answer for the first scope. */
static void answer(struct isc_rep *m, const cJSON *cmp, const cJSON *sc)
{
	char a[64], b[64];
	const char *v = isc_doc_str(cmp, "verdict", NULL);
	double lo = isc_doc_num(sc, "ci_low_pct", NAN), hi = isc_doc_num(sc, "ci_high_pct", NAN), p = isc_doc_num(sc, "p_value", NAN);
	isc_rep_putf(m, "**%s**: ", verdict_word(v ? v : ""));
	isc_rep_md(m, isc_doc_str(sc, "name", NULL) ? isc_doc_str(sc, "name", NULL) : "iterations");
	isc_rep_putf(m, " median %s → %s", isc_rep_fmt_ns(a, sizeof(a), isc_doc_num(sc, "base_p50_ns", NAN)),
		     isc_rep_fmt_ns(b, sizeof(b), isc_doc_num(sc, "p50_ns", NAN)));
	if (isfinite(isc_doc_num(sc, "change_pct", NAN)))
		isc_rep_putf(m, " (shift %+.1f %%", isc_doc_num(sc, "change_pct", 0));
	else
		isc_rep_put(m, " (");
	if (isfinite(lo) && isfinite(hi))
		/* the run-level interval is 95 % whatever alpha, the U test's level (compare.c, RUNS_LEVEL) */
		isc_rep_putf(m, ", 95 %% interval %+.1f … %+.1f %%", lo, hi);
	if (isfinite(p))
		isc_rep_putf(m, ", p = %.2g", p);
	isc_rep_putf(m, "; %.0f vs %.0f iterations; threshold %.1f %%).\n", isc_doc_num(sc, "samples", 0),
		     isc_doc_num(sc, "base_samples", 0), isc_doc_num(cmp, "threshold_pct", 5));
	const char *why = isc_doc_str(cmp, "conditions.reason", NULL);
	if (v && !strcmp(v, "inconclusive") && why) {
		isc_rep_put(m, "\nNot comparable: ");
		isc_rep_md(m, why);
		isc_rep_put(m, ". Record again on a quiet machine (or record the baselines under the same load).\n");
	} else if (v && !strcmp(v, "inconclusive")) {
		if (isc_doc_num(sc, "samples", 0) < isc_doc_num(cmp, "min_samples", 5) ||
		    isc_doc_num(sc, "base_samples", 0) < isc_doc_num(cmp, "min_samples", 5))
			isc_rep_putf(m, "\nToo few iterations to decide (at least %.0f a side).\n",
				     isc_doc_num(cmp, "min_samples", 5));
		else
			isc_rep_put(m, "\nThe interval still allows a change larger than the threshold: more "
				       "iterations or baseline runs would decide.\n");
	}
	if (!isfinite(isc_doc_num(cmp, "runs_spread_pct", NAN)))
		isc_rep_putf(m, "\nOne baseline run: run-to-run variation is not known, so a spread of %.0f %% between "
				"identical runs was assumed; record three or more baselines for a gate.\n",
			     isc_doc_num(cmp, "assumed_runs_spread_pct", 25));
	else
		isc_rep_putf(m, "\nThe baseline runs' medians differ by %.1f %% (SD beyond their sampling error); the "
				"interval is for a new run, from %.0f runs.\n", isc_doc_num(cmp, "runs_spread_pct", 0),
			     isc_doc_num(cmp, "baselines", 0));
}

static void environment(struct isc_rep *m, const cJSON *cmp)
{
	const cJSON *e, *arr = isc_doc_get(cmp, "environment");
	if (!cJSON_GetArraySize(arr))
		return;
	isc_rep_put(m, "\n### Environment differences\n\nThese often explain a change by themselves.\n\n"
		       "| Setting | Baseline | This run |\n|---|---|---|\n");
	cJSON_ArrayForEach(e, arr) {
		isc_rep_put(m, "| ");
		isc_rep_md(m, isc_doc_str(e, "key", NULL));
		isc_rep_put(m, " | ");
		isc_rep_md(m, isc_doc_str(e, "base", NULL));
		isc_rep_put(m, " | ");
		isc_rep_md(m, isc_doc_str(e, "current", NULL));
		isc_rep_put(m, " |\n");
	}
}

/* Before/after quantiles: p5, p25, p50, p75, p95 and the extremes. */
static void distributions(struct isc_rep *m, const cJSON *sc)
{
	static const int idx[] = { 0, 1, 5, 10, 15, 19, 20 };
	static const char *const names[] = { "min", "p5", "p25", "p50", "p75", "p95", "max" };
	const cJSON *bq = isc_doc_get(sc, "base_quantiles_ns"), *cq = isc_doc_get(sc, "quantiles_ns");
	char a[64], b[64], note[14][64], label[14][32];
	if (cJSON_GetArraySize(bq) != 21 || cJSON_GetArraySize(cq) != 21)
		return;
	isc_rep_put(m, "\n### Iteration latency, before and after\n");
	if (m->html) {
		struct isc_rep_bar bars[14];
		size_t n = 0;
		for (size_t i = 0; i < 7; i++)
			for (int side = 0; side < 2; side++) {
				double v = isc_rep_value(cJSON_GetArrayItem(side ? cq : bq, idx[i]));
				if (isnan(v))
					continue;
				snprintf(note[n], sizeof(note[n]), "%s", isc_rep_fmt_ns(a, sizeof(a), v));
				snprintf(label[n], sizeof(label[n]), "%s, %s", names[i], side ? "this run" : "baseline");
				bars[n] = (struct isc_rep_bar){ label[n], { { NULL, v / 1e6, side ? "#1f77b4" : "#9e9e9e" } }, 1,
								note[n] };
				n++;
			}
		isc_rep_put(m, ISC_REP_CHART_BEGIN);
		isc_svg_bars(m, "Iteration latency quantiles: baseline (grey) and this run (blue)",
			     "Iteration latency (ms)", 0, bars, n);
		isc_rep_put(m, ISC_REP_CHART_END);
		return;
	}
	isc_rep_put(m, "\n| Quantile | Baseline | This run | Change |\n|---|---:|---:|---:|\n");
	for (size_t i = 0; i < 7; i++) {
		double x = isc_rep_value(cJSON_GetArrayItem(bq, idx[i])), y = isc_rep_value(cJSON_GetArrayItem(cq, idx[i]));
		isc_rep_putf(m, "| %s | %s | %s | ", names[i], isc_rep_fmt_ns(a, sizeof(a), x), isc_rep_fmt_ns(b, sizeof(b), y));
		if (x > 0 && isfinite(y))
			isc_rep_putf(m, "%+.1f %%", 100 * (y - x) / x);
		isc_rep_put(m, " |\n");
	}
}

static void contributors(struct isc_rep *m, const cJSON *cmp)
{
	const cJSON *c, *arr = isc_doc_get(cmp, "contributors");
	char a[64], b[64], d[64], e[64], f[64];
	size_t n = 0;
	if (!cJSON_GetArraySize(arr))
		return;
	isc_rep_putf(m, "\n### What changed, per iteration\n\nMean iteration %s → %s (%s); the CPU rows add up "
			"to that change, GPU rows are the devices' time, breakdown rows overlap the others.\n",
		     isc_rep_fmt_ns(a, sizeof(a), isc_doc_num(cmp, "base_ns_per_iter", NAN)),
		     isc_rep_fmt_ns(b, sizeof(b), isc_doc_num(cmp, "ns_per_iter", NAN)),
		     fmt_delta(d, sizeof(d), isc_doc_num(cmp, "delta_ns_per_iter", 0)));
	if (m->html) {
		struct isc_rep_bar bars[MAX_ROWS];
		char note[MAX_ROWS][96];
		const char *labels[MAX_ROWS];
		cJSON_ArrayForEach(c, arr) {
			if (n == MAX_ROWS)
				break;
			double dl = isc_doc_num(c, "delta_ns_per_iter", 0);
			labels[n] = isc_doc_str(c, "name", NULL) ? isc_doc_str(c, "name", NULL) : "?";
			snprintf(note[n], sizeof(note[n]), "%s/iter%s%s", fmt_delta(d, sizeof(d), dl),
				 isc_doc_str(c, "change", NULL) && strcmp(isc_doc_str(c, "change", NULL), "changed") ? ", " : "",
				 isc_doc_str(c, "change", NULL) && strcmp(isc_doc_str(c, "change", NULL), "changed")
					 ? isc_doc_str(c, "change", NULL) : "");
			bars[n] = (struct isc_rep_bar){ labels[n], { { NULL, fabs(dl) / 1e6, dl > 0 ? "#d62728" : "#2e8b57" } },
							1, note[n] };
			n++;
		}
		isc_rep_put(m, ISC_REP_CHART_BEGIN);
		isc_svg_bars(m, "Contributors to the change (red: slower, green: faster)",
			     "Change of time per iteration (ms, absolute)", 0, bars, n);
		isc_rep_put(m, ISC_REP_CHART_END);
		n = 0;
	}
	isc_rep_put(m, "\n| Contributor | Kind | Change/iter | Baseline | This run | Calls/iter | More calls | "
		       "Slower calls |\n|---|---|---:|---:|---:|---:|---:|---:|\n");
	cJSON_ArrayForEach(c, arr) {
		if (n++ == MAX_ROWS)
			break;
		const char *file = isc_doc_str(c, "file", NULL), *chg = isc_doc_str(c, "change", NULL);
		isc_rep_put(m, "| ");
		isc_rep_md(m, isc_doc_str(c, "name", NULL));
		if (file && *file && strcmp(file, isc_doc_str(c, "name", NULL) ? isc_doc_str(c, "name", NULL) : "")) {
			isc_rep_put(m, " ");
			isc_rep_location(m, c, true);
		}
		if (chg && strcmp(chg, "changed"))
			isc_rep_putf(m, " — %s", chg);
		isc_rep_put(m, " | ");
		isc_rep_md(m, isc_doc_str(c, "kind", NULL));
		/* a count a run did not make (sample mode, an operator's slot) is n/a, never 0 */
		char cb[2][32];
		const cJSON *bc = isc_doc_get(c, "base_calls_per_iter"), *cc = isc_doc_get(c, "calls_per_iter");
		const cJSON *mc = isc_doc_get(c, "more_calls_ns_per_iter"), *sc = isc_doc_get(c, "slower_calls_ns_per_iter");
		snprintf(cb[0], sizeof(cb[0]), cJSON_IsNumber(bc) ? "%.3g" : "n/a", cJSON_IsNumber(bc) ? bc->valuedouble : 0);
		snprintf(cb[1], sizeof(cb[1]), cJSON_IsNumber(cc) ? "%.3g" : "n/a", cJSON_IsNumber(cc) ? cc->valuedouble : 0);
		isc_rep_putf(m, " (%s) | %s | %s | %s | %s → %s | %s | %s |\n",
			     isc_doc_str(c, "view", NULL) ? isc_doc_str(c, "view", NULL) : "?",
			     fmt_delta(d, sizeof(d), isc_doc_num(c, "delta_ns_per_iter", 0)),
			     isc_rep_fmt_ns(a, sizeof(a), fabs(isc_doc_num(c, "base_ns_per_iter", 0))),
			     isc_rep_fmt_ns(b, sizeof(b), fabs(isc_doc_num(c, "ns_per_iter", 0))), cb[0], cb[1],
			     cJSON_IsNumber(mc) ? fmt_delta(e, sizeof(e), mc->valuedouble) : "n/a",
			     cJSON_IsNumber(sc) ? fmt_delta(f, sizeof(f), sc->valuedouble) : "n/a");
	}
}

static void history(struct isc_rep *m, const cJSON *h)
{
	const cJSON *mt, *cp;
	char a[64], b[64];
	isc_rep_putf(m, "## History over %.0f runs\n\n", isc_doc_num(h, "runs", 0));
	if (cJSON_IsFalse(isc_doc_get(h, "tested"))) {
		isc_rep_putf(m, "Not tested: a change point needs at least %.0f runs of a metric, and no headline metric "
			     "has them.\n\n", isc_doc_num(h, "min_runs", 8));
		return;
	}
	size_t found = 0;
	cJSON_ArrayForEach(mt, isc_doc_get(h, "metrics"))
		found += (size_t)cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(mt, "change_points"));
	if (!found) {
		isc_rep_putf(m, "No change point larger than %.1f %% in any headline metric.\n\n",
			     isc_doc_num(h, "threshold_pct", 5));
		return;
	}
	isc_rep_put(m, "| Metric | From run | File | Before | After | Change |\n|---|---:|---|---:|---:|---:|\n");
	cJSON_ArrayForEach(mt, isc_doc_get(h, "metrics")) {
		const char *path = isc_doc_str(mt, "path", NULL);
		bool ns = path && strstr(path, "_ns");
		cJSON_ArrayForEach(cp, cJSON_GetObjectItemCaseSensitive(mt, "change_points")) {
			isc_rep_put(m, "| ");
			isc_rep_md(m, isc_doc_str(mt, "metric", NULL));
			isc_rep_putf(m, " | %.0f | ", isc_doc_num(cp, "run", 0));
			isc_rep_md(m, isc_doc_str(cp, "file", NULL));
			if (ns)
				isc_rep_putf(m, " | %s | %s", isc_rep_fmt_ns(a, sizeof(a), isc_doc_num(cp, "before", NAN)),
					     isc_rep_fmt_ns(b, sizeof(b), isc_doc_num(cp, "after", NAN)));
			else
				isc_rep_putf(m, " | %.4g | %.4g", isc_doc_num(cp, "before", NAN), isc_doc_num(cp, "after", NAN));
			double pts;
			if (isc_doc_have(cp, "change_points", &pts))
				isc_rep_putf(m, " | %+.1f points (%s) |\n", pts,
					     isc_doc_str(cp, "direction", NULL) ? isc_doc_str(cp, "direction", NULL) : "?");
			else
				isc_rep_putf(m, " | %+.1f %% (%s) |\n", isc_doc_num(cp, "change_pct", 0),
					     isc_doc_str(cp, "direction", NULL) ? isc_doc_str(cp, "direction", NULL) : "?");
		}
	}
	isc_rep_put(m, "\n");
}

void isc_rep_comparison(struct isc_rep *m, const cJSON *root)
{
	const cJSON *cmp = isc_doc_get(root, "comparison"), *h = isc_doc_get(root, "history");
	if (cJSON_IsObject(cmp)) {
		const cJSON *sc = cJSON_GetArrayItem(isc_doc_get(cmp, "scopes"), 0);
		double k = isc_doc_num(cmp, "baselines", 1);
		isc_rep_putf(m, "## Comparison with %.0f baseline run%s\n\n", k, k == 1 ? "" : "s");
		answer(m, cmp, sc);
		environment(m, cmp);
		distributions(m, sc);
		contributors(m, cmp);
		isc_rep_put(m, "\n");
	}
	if (cJSON_IsObject(h))
		history(m, h);
}
