/*
 * compare.c - `comparison`: this run against one or more baseline runs,
 * from findings documents alone (iscope-analyze --baseline).
 *
 * The basis: an iteration's time less the time its thread waited for a
 * CPU (runnable, not running: schedstat's run-queue wait, carried by the
 * Python samples from format 1.9, iterations.cpu_wait_ns) when every run
 * has it and no run's own threads outnumbered its CPUs
 * (comparison.latency_basis "wall_less_cpu_wait"); else the wall time
 * ("wall").  Other programs' load lengthens iterations by exactly that
 * wait: on the shared 2-core machine identical runs of a CPU-bound step
 * took 4.8-38 ms of wall time and 3.0-4.4 ms less their waits.  A sleep,
 * I/O, a lock or more work stays in; only the waits for a CPU go.
 *
 * Latency: runs are the unit.  Iterations of one run share its
 * conditions (the machine's speed state, its load, clocks, memory
 * layout), so identical code in two runs differs by more than the
 * iterations suggest: on the shared 2-core machine, identical runs'
 * medians 13.3 and 22.8 ms.  Each run r is summarized by the log of its
 * steady-state iterations' median, with that median's sampling variance:
 *
 *   y_r = ln(median_r)               w_r = (SE(median_r) / median_r)^2
 *
 * against k baselines:
 *
 *   D = y_cur - mean(y_b)                          the change, on the log scale
 *   v = max(var(y_b), mean(w_b))                   a run's variance (k >= 2, k - 1 df):
 *                                                  between runs and sampling together
 *   V = v (1 + 1/k) + max(0, w_cur - mean(w_b))    a new run against k runs
 *   interval  D +- t(RUNS_LEVEL, k - 1) sqrt(V)    a prediction interval
 *
 * (runs_spread_pct reports the part beyond sampling, sqrt(max(0, var(y_b)
 * - mean(w_b)))), and reported on the ratio scale: change_pct = 100 (e^D - 1), its
 * interval 100 (e^(D -+ ...) - 1), never below -100 %.  One baseline shows
 * no run-to-run spread: ONE_BASELINE_SPREAD is assumed for it (stated in
 * comparison.assumed_runs_spread_pct), so one baseline calls only a change
 * larger than identical runs differ on such a machine.  Significant: the
 * interval excludes 0 and the iterations differ (Mann-Whitney U, p <
 * alpha; the Hodges-Lehmann shift of the pooled iterations is shown
 * beside, in ns).
 *
 * Why: per-iteration costs of functions in iterations, kernels, copies,
 * synchronizations, GPU idle by cause, off-CPU time and page faults, each
 * change split into more calls (calls delta x old cost per call) and slower
 * calls (the rest); functions plus "(other time in iterations)" add up to
 * the change of the mean iteration time.  Environment differences first.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc_util.h"
#include "isc_jbuild.h"
#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_stats.h"
#include "compare_native.h" /* isc_compare_native */

#define MIN_SAMPLES 5     /* per side: 5 vs 5 is the least where exact p < 0.01 is possible */
#define MAX_CONTRIB 30
#define MAX_BREAKDOWN 10  /* of the 30: at most 20 cpu/gpu rows (the recording's one of them), then 10 breakdown rows */
#define RECORDING_ROW "(recording's estimated cost)"
#define NQUANT 21         /* p0, p5, ..., p100 */
#define RUNS_LEVEL 0.95   /* the run-level interval: two-sided, one side 2.5 % (the report says "95 %") */
/*
 * Between-run spread (sd on the log scale) assumed with one baseline: the
 * shared 2-core test machine's identical runs of tests/regression/workload.py
 * differed by up to +70 % in step median (13.3 against 22.8 ms), a spread
 * of about 0.25 on the log scale.
 */
#define ONE_BASELINE_SPREAD 0.25

/* A run's summary on the log scale: y = ln(median), w = its sampling variance. */
struct run_sum {
	double y, w;
};

static struct run_sum run_sum(const int64_t *v, size_t n)
{
	struct run_sum s = { 0, 0 };
	double med = n ? isc_median_sorted(v, n) : 0, se = isc_median_se(v, n);
	if (med > 0) {
		s.y = log(med);
		s.w = (se / med) * (se / med);
	}
	return s;
}

/* ---- reading the documents --------------------------------------------- */

/* Whether doc has a run-queue wait for each of its iteration spans (iterations.cpu_wait_ns). */
static bool has_cpu_wait(const cJSON *doc)
{
	const cJSON *w = isc_doc_get(doc, "iterations.cpu_wait_ns"), *spans = isc_doc_get(doc, "iterations.spans");
	return cJSON_IsArray(w) && cJSON_GetArraySize(spans) > 0 && cJSON_GetArraySize(w) == cJSON_GetArraySize(spans);
}

/*
 * Steady-state iteration durations of doc into a malloc'd sorted array,
 * less_wait: each less its thread's wait for a CPU; with no iterations,
 * the run's wall time as one sample (*wall = true).
 */
static int run_samples(const cJSON *doc, bool less_wait, int64_t **out, size_t *n, bool *wall)
{
	const cJSON *spans = isc_doc_get(doc, "iterations.spans"), *waits = isc_doc_get(doc, "iterations.cpu_wait_ns");
	double ws = isc_doc_num(doc, "iterations.warmup_spans", 0);
	size_t skip = ws > 0 && ws < 1e9 ? (size_t)ws : 0, m = 0, cap = (size_t)cJSON_GetArraySize(spans);
	int64_t *v = malloc((cap ? cap : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	const cJSON *s;
	size_t i = 0;
	cJSON_ArrayForEach(s, spans) {
		if (i++ < skip || cJSON_GetArraySize(s) != 2)
			continue;
		double a = cJSON_GetArrayItem(s, 0)->valuedouble, b = cJSON_GetArrayItem(s, 1)->valuedouble;
		const cJSON *wv = less_wait ? cJSON_GetArrayItem(waits, (int)i - 1) : NULL;
		double w = cJSON_IsNumber(wv) && wv->valuedouble > 0 && wv->valuedouble <= b - a ? wv->valuedouble : 0;
		/* a hand-edited document may hold anything: below 2e18 ns (63 years), the
		 * pairwise differences and their bisection (stats.c) stay inside int64 */
		if (b >= a && b - a < 2e18)
			v[m++] = (int64_t)(b - a - w);
	}
	*wall = !m;
	if (!m) {
		double w;
		if (isc_doc_have(doc, "summary.wall_ns", &w) && w > 0 && w < 2e18)
			v[m++] = (int64_t)w;
	}
	isc_sort_i64(v, m);
	*out = v;
	*n = m;
	return 0;
}

/* Nearest-rank quantiles p0, p5, ..., p100 of n > 0 sorted values. */
static void push_quantiles(struct isc_jb *jb, cJSON *o, const char *key, const int64_t *v, size_t n)
{
	cJSON *a = isc_jb_arr(jb, o, key);
	for (int i = 0; i < NQUANT; i++)
		isc_jb_push_num(jb, a, (double)(i ? isc_quantile_sorted((const uint64_t *)v, n, i / 20.0) : (uint64_t)v[0]));
}

/* ---- contributors ------------------------------------------------------ */

struct item {
	char *key;          /* kind '\t' name '\t' file ':' line: identity across runs */
	char *name, *file;  /* owned */
	const char *kind;   /* static, or borrowed from a document (they outlive the table) */
	double line;
	const char *view;   /* "cpu", "gpu" or "breakdown" */
	double ns[2], calls[2]; /* per iteration: [0] baseline (mean over runs), [1] current */
	bool seen[2];
	bool counted[2];    /* a row of that side counted its calls (sample mode and sampled slots do not) */
	double toward;      /* the change of this item in the direction of the whole change (sort key) */
};

struct items {
	struct item *v;
	size_t n, cap;
};

static struct item *item_get(struct items *it, const char *kind, const char *name, const char *file, double line,
			     const char *view)
{
	char key[1024];
	snprintf(key, sizeof(key), "%s\t%s\t%s:%.0f", kind, name, file ? file : "", line);
	for (size_t i = 0; i < it->n; i++)
		if (!strcmp(it->v[i].key, key))
			return &it->v[i];
	if (isc_grow(&it->v, &it->cap, it->n, sizeof(*it->v)))
		return NULL;
	struct item *x = &it->v[it->n];
	memset(x, 0, sizeof(*x));
	x->key = strdup(key);
	x->name = strdup(name);
	x->file = file ? strdup(file) : NULL;
	it->n++; /* freed by the caller even when a copy failed */
	if (!x->key || !x->name || (file && !x->file))
		return NULL;
	x->kind = kind;
	x->line = line;
	x->view = view;
	return x;
}

/* Adds ns and calls (per iteration, already weighted; NAN: not counted) of one item of run side s. */
static int add(struct items *it, int s, const char *kind, const char *name, const char *file, double line,
	       const char *view, double ns, double calls)
{
	struct item *x = item_get(it, kind, name ? name : "?", file, line, view);
	if (!x)
		return -ENOMEM;
	x->ns[s] += ns;
	if (!isnan(calls)) {
		x->calls[s] += calls;
		x->counted[s] = true;
	}
	x->seen[s] = true;
	return 0;
}

/* A function row's calls times w, NAN when its mode did not count them (null). */
static double row_calls(const cJSON *e, double w)
{
	const cJSON *c = cJSON_GetObjectItemCaseSensitive(e, "calls");
	return cJSON_IsNumber(c) ? c->valuedouble * w : NAN;
}

/* Whether a run counts calls: a function row of it has a count.  A run
 * that does not (sample mode) has no call count for a name it lacks either. */
static bool counts_calls(const cJSON *doc)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, isc_doc_get(doc, "cpu.top_functions"))
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "calls")))
			return true;
	cJSON_ArrayForEach(e, isc_doc_get(doc, "cpu.top_functions_in_scopes"))
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(e, "calls")))
			return true;
	return false;
}

/* Whether side s of x has a call count: its rows counted, or (no row) its runs count calls. */
static bool calls_known(const struct item *x, int s, const bool doc_counts[2])
{
	return x->seen[s] ? x->counted[s] : doc_counts[s];
}

/* Iterations of a run, the divisor of every per-iteration cost (1 without iterations). */
static double iters(const cJSON *doc)
{
	double c = isc_doc_num(doc, "iterations.count", 0);
	return c >= 1 ? c : 1;
}

/*
 * Mean wall time of one iteration (all of them, warm-up included), as
 * measured, or the run's wall time.
 */
static double iter_mean_ns(const cJSON *doc)
{
	const char *name = isc_doc_str(doc, "iterations.name", NULL);
	const cJSON *s;
	cJSON_ArrayForEach(s, isc_doc_get(doc, "iterations.scopes")) {
		const char *n = isc_doc_str(s, "name", NULL);
		if (name && n && !strcmp(n, name))
			return isc_doc_num(s, "total_ns", 0) / iters(doc);
	}
	return isc_doc_num(doc, "summary.wall_ns", 0);
}

/*
 * The part of that mean (mean_ns) the recording cost by its own estimate
 * (iterations.latency_estimate.removed_pct), withheld or not: the
 * functions' self times are compensated either way (exact mode), so the
 * cpu view shows the estimate as a row of its own and "(other time in
 * iterations)" is what neither explains.  0 without an estimate.
 */
static double iter_recording_ns(const cJSON *doc, double mean_ns)
{
	const cJSON *est = isc_doc_get(doc, "iterations.latency_estimate");
	if (!cJSON_IsObject(est))
		return 0;
	double pct = isc_doc_num(est, "removed_pct", 0);
	return pct > 0 && pct <= 100 ? mean_ns * pct / 100 : 0;
}

static const char *idle_names[][2] = {
	{ "host_wait_ns", "GPU idle: waiting for the host" },
	{ "kernel_wait_ns", "GPU idle: between kernels (<30 us)" },
	{ "other_ns", "GPU idle: other" },
};

/*
 * Every cost of one run, per iteration and scaled by w (1/k for each of k
 * baselines, 1 for the current run), into side s of the table.
 */
static int collect(struct items *it, int s, const cJSON *doc, double w)
{
	double per = w / iters(doc);
	bool scoped = isc_doc_num(doc, "iterations.count", 0) >= 1;
	const cJSON *e;
	int rc = 0;
	double listed = 0;
	cJSON_ArrayForEach(e, isc_doc_get(doc, scoped ? "cpu.top_functions_in_scopes" : "cpu.top_functions")) {
		double ns = isc_doc_num(e, "self_ns", 0);
		listed += ns;
		rc |= add(it, s, isc_doc_str(e, "kind", NULL) ? isc_doc_str(e, "kind", NULL) : "op", isc_doc_str(e, "name", NULL),
			  isc_doc_str(e, "file", NULL), isc_doc_num(e, "line", 0), "cpu", ns * per, row_calls(e, per));
	}
	/* the recording's own cost and the rest, so that the cpu view adds up to the measured mean iteration */
	double mean = iter_mean_ns(doc), rec = iter_recording_ns(doc, mean);
	if (rec > 0)
		rc |= add(it, s, "recording", RECORDING_ROW, NULL, 0, "cpu", rec * w, NAN);
	rc |= add(it, s, "other", "(other time in iterations)", NULL, 0, "cpu",
		  (mean - rec) * w - listed * per, 0);
	cJSON_ArrayForEach(e, isc_doc_get(doc, "gpu.kernels.top"))
		rc |= add(it, s, "kernel", isc_doc_str(e, "name", NULL), NULL, 0, "gpu", isc_doc_num(e, "total_ns", 0) * per,
			  isc_doc_num(e, "count", 0) * per);
	if (isc_doc_num(doc, "gpu.kernels.others.count", 0) > 0)
		rc |= add(it, s, "kernel", "(other kernels)", NULL, 0, "gpu", isc_doc_num(doc, "gpu.kernels.others.total_ns", 0) * per,
			  isc_doc_num(doc, "gpu.kernels.others.count", 0) * per);
	cJSON_ArrayForEach(e, isc_doc_get(doc, "gpu.memcpy")) {
		char name[160];
		const char *d = isc_doc_str(e, "direction", NULL), *sm = isc_doc_str(e, "src_memory", NULL),
			   *dm = isc_doc_str(e, "dst_memory", NULL);
		snprintf(name, sizeof(name), "%s%s%s %s->%s", isc_doc_str(e, "kind", NULL) ? isc_doc_str(e, "kind", NULL) : "copy",
			 d ? " " : "", d ? d : "", sm ? sm : "-", dm ? dm : "-");
		rc |= add(it, s, "copy", name, NULL, 0, "gpu", isc_doc_num(e, "total_ns", 0) * per, isc_doc_num(e, "count", 0) * per);
	}
	cJSON_ArrayForEach(e, isc_doc_get(doc, "gpu.sync.api_calls"))
		rc |= add(it, s, "sync", isc_doc_str(e, "name", NULL), NULL, 0, "breakdown", isc_doc_num(e, "total_ns", 0) * per,
			  isc_doc_num(e, "count", 0) * per);
	const cJSON *dev, *st;
	cJSON_ArrayForEach(dev, isc_doc_get(doc, "gpu.devices"))
		cJSON_ArrayForEach(st, cJSON_GetObjectItemCaseSensitive(dev, "streams"))
			for (size_t i = 0; i < sizeof(idle_names) / sizeof(idle_names[0]); i++) {
				char path[64];
				snprintf(path, sizeof(path), "idle_breakdown.%s", idle_names[i][0]);
				rc |= add(it, s, "gpu_idle", idle_names[i][1], NULL, 0, "gpu", isc_doc_num(st, path, 0) * per, 0);
			}
	/* off-CPU: by reason when the sampler said what blocked threads waited in, the rest preemption */
	const cJSON *reasons = isc_doc_get(doc, "cpu.off_cpu_reasons");
	if (cJSON_IsArray(reasons)) {
		cJSON_ArrayForEach(e, reasons) {
			char name[96];
			snprintf(name, sizeof(name), "off-CPU: %s",
				 isc_doc_str(e, "reason", NULL) ? isc_doc_str(e, "reason", NULL) : "?");
			rc |= add(it, s, "off_cpu", name, NULL, 0, "breakdown", isc_doc_num(e, "ns", 0) * per, 0);
		}
		rc |= add(it, s, "off_cpu", "off-CPU: preempted (runnable, not running)", NULL, 0, "breakdown",
			  fmax(0, isc_doc_num(doc, "cpu.split.off_cpu_ns", 0) - isc_doc_num(doc, "cpu.blocked_ns", 0)) * per, 0);
	} else if (isc_doc_get(doc, "cpu.split.off_cpu_ns")) {
		rc |= add(it, s, "off_cpu", "off-CPU time of the traced threads", NULL, 0, "breakdown",
			  isc_doc_num(doc, "cpu.split.off_cpu_ns", 0) * per, 0);
	}
	double faults = 0;
	cJSON_ArrayForEach(e, isc_doc_get(doc, "processes"))
		faults += isc_doc_num(e, "minor_faults", 0) + isc_doc_num(e, "major_faults", 0);
	rc |= add(it, s, "page_faults", "page faults (minor + major)", NULL, 0, "breakdown", 0, faults * per);
	return rc ? -ENOMEM : 0;
}

/*
 * Additive views (cpu, gpu) first, then the recording's estimated cost (a
 * cost of measuring, not of the program: a planted cause comes before it
 * even when recording its calls cost more), then breakdown rows (they
 * overlap the others: a sleep is both time.sleep and off-CPU sleep), each
 * by share of the change (see the sort below).
 */
static int rank_class(const struct item *x)
{
	return !strcmp(x->view, "breakdown") ? 2 : !strcmp(x->kind, "recording") ? 1 : 0;
}

static int by_delta(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	int cx = rank_class(x), cy = rank_class(y);
	if (cx != cy)
		return cx > cy ? 1 : -1;
	if (x->toward != y->toward)
		return x->toward > y->toward ? -1 : 1;
	return strcmp(x->key ? x->key : "", y->key ? y->key : "");
}

/*
 * Whole-run call counts by name, for the ops diff (HTA's TraceDiff lists
 * ops that appear or disappear, by name and count): functions and ops of
 * cpu.top_functions, scopes and annotations of iterations.scopes, kernels
 * of gpu.kernels.top and the count of all kernels.  Baselines are
 * averaged (weight w).
 */
static int collect_names(struct items *it, int s, const cJSON *doc, double w)
{
	const cJSON *e;
	int rc = 0;
	cJSON_ArrayForEach(e, isc_doc_get(doc, "cpu.top_functions"))
		rc |= add(it, s, isc_doc_str(e, "kind", NULL) ? isc_doc_str(e, "kind", NULL) : "op", isc_doc_str(e, "name", NULL), NULL, 0,
			  "names", 0, row_calls(e, w));
	cJSON_ArrayForEach(e, isc_doc_get(doc, "iterations.scopes"))
		rc |= add(it, s, "scope", isc_doc_str(e, "name", NULL), NULL, 0, "names", 0, isc_doc_num(e, "count", 0) * w);
	cJSON_ArrayForEach(e, isc_doc_get(doc, "gpu.kernels.top"))
		rc |= add(it, s, "kernel", isc_doc_str(e, "name", NULL), NULL, 0, "names", 0, isc_doc_num(e, "count", 0) * w);
	if (isc_doc_num(doc, "gpu.kernels.count", 0) > 0) /* every kernel, the ones below the top list included */
		rc |= add(it, s, "kernel", "(all kernels)", NULL, 0, "names", 0, isc_doc_num(doc, "gpu.kernels.count", 0) * w);
	return rc ? -ENOMEM : 0;
}

static int ops_diff(struct isc_jb *jb, cJSON *cmp, const cJSON *cur, const cJSON *const *base, size_t nbase)
{
	struct items it = { NULL, 0, 0 };
	int rc = 0;
	for (size_t k = 0; k < nbase && !rc; k++)
		rc = collect_names(&it, 0, base[k], 1.0 / (double)nbase);
	if (!rc)
		rc = collect_names(&it, 1, cur, 1);
	cJSON *o = isc_jb_obj(jb, cmp, "ops_diff");
	isc_jb_str(jb, o, "scope", "whole run, every thread, by name: cpu.top_functions, iterations.scopes and "
				 "gpu.kernels.top (each a top list: a name near its cut-off may just have crossed it)");
	cJSON *add_a = isc_jb_arr(jb, o, "added"), *rem = isc_jb_arr(jb, o, "removed"),
	      *chg = isc_jb_arr(jb, o, "count_changed");
	bool dc[2] = { true, counts_calls(cur) };
	for (size_t k = 0; k < nbase; k++)
		dc[0] = dc[0] && counts_calls(base[k]);
	for (size_t i = 0; i < it.n && !rc; i++) {
		struct item *x = &it.v[i];
		bool k0 = calls_known(x, 0, dc), k1 = calls_known(x, 1, dc);
		cJSON *arr = !x->seen[0] ? add_a : !x->seen[1] ? rem
			     : k0 && k1 && fabs(x->calls[1] - x->calls[0]) > 1e-9 * fmax(1, x->calls[0]) ? chg : NULL;
		if (!arr || cJSON_GetArraySize(arr) >= 50)
			continue;
		cJSON *r = isc_jb_push_obj(jb, arr);
		isc_jb_str(jb, r, "name", x->name);
		isc_jb_str(jb, r, "kind", x->kind);
		isc_jb_num_or_null(jb, r, "base_calls", k0, round(x->calls[0] * 1000) / 1000);
		isc_jb_num_or_null(jb, r, "calls", k1, round(x->calls[1] * 1000) / 1000);
	}
	for (size_t i = 0; i < it.n; i++) {
		free(it.v[i].key);
		free(it.v[i].name);
		free(it.v[i].file);
	}
	free(it.v);
	return rc;
}

/* ---- environment ------------------------------------------------------- */

/* One environment value of a run as text into buf ("" when the run does not have it). */
static void env_value(const cJSON *doc, const char *key, char *buf, size_t n)
{
	double v;
	buf[0] = '\0';
	if (!strcmp(key, "torch threads") || !strcmp(key, "torch interop threads")) {
		const char *mk = key[6] == 't' ? "torch.num_threads" : "torch.num_interop_threads";
		const cJSON *m;
		cJSON_ArrayForEach(m, isc_doc_get(doc, "marks")) {
			const char *name = isc_doc_str(m, "name", NULL);
			if (name && !strcmp(name, mk) && isc_doc_num(m, "count", 0) > 0)
				snprintf(buf, n, "%.0f", isc_doc_num(m, "sum", 0) / isc_doc_num(m, "count", 0));
		}
	} else if (!strcmp(key, "torch version") || !strcmp(key, "Python version")) {
		/* the agent's marks torch.version (major*10000 + minor*100 + patch) and python.hexversion */
		bool torch = key[0] == 't';
		const cJSON *m;
		cJSON_ArrayForEach(m, isc_doc_get(doc, "marks")) {
			const char *name = isc_doc_str(m, "name", NULL);
			double c = isc_doc_num(m, "count", 0), x = c > 0 ? isc_doc_num(m, "sum", 0) / c : 0;
			if (!name || strcmp(name, torch ? "torch.version" : "python.hexversion") || c <= 0 || !(x >= 0 && x < 1e15))
				continue;
			long long iv = (long long)x;
			if (torch)
				snprintf(buf, n, "%lld.%lld.%lld", iv / 10000, iv / 100 % 100, iv % 100);
			else
				snprintf(buf, n, "%lld.%lld.%lld", iv >> 24 & 0xff, iv >> 16 & 0xff, iv >> 8 & 0xff);
		}
	} else if (!strcmp(key, "GPU model")) {
		const cJSON *d;
		size_t used = 0;
		cJSON_ArrayForEach(d, isc_doc_get(doc, "gpu.devices")) {
			const char *name = isc_doc_str(d, "name", NULL);
			if (name && used < n)
				used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", name);
		}
	} else if (!strcmp(key, "GPU SM clock min MHz") || !strcmp(key, "GPU throttled samples")) {
		const cJSON *d;
		double acc = 0;
		bool have = false;
		cJSON_ArrayForEach(d, isc_doc_get(doc, "gpu.nvml")) {
			if (isc_doc_have(d, key[4] == 'S' ? "sm_mhz_min" : "throttled_samples", &v)) {
				acc = have && key[4] == 'S' ? fmin(acc, v) : key[4] == 'S' ? v : acc + v;
				have = true;
			}
		}
		if (have)
			snprintf(buf, n, "%.0f", acc);
	} else {
		static const char *const paths[][2] = {
			{ "host", "environment.host" },
			{ "CPUs", "environment.ncpu" },
			{ "command", "environment.cmdline" },
			{ "rank", "gpu.rank" },
			{ "world size", "gpu.world_size" },
			{ "iteration scope", "iterations.name" },
			{ "Python recording mode", "recording.mode" },
		};
		const cJSON *x = NULL;
		for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
			if (!strcmp(key, paths[i][0]))
				x = isc_doc_get(doc, paths[i][1]);
		if (!x && !strncmp(key, "env ", 4)) { /* environment.meta.<KEY>: env.NAME, host.NAME */
			x = cJSON_GetObjectItemCaseSensitive(isc_doc_get(doc, "environment.meta"), key + 4);
			if (!x && !strncmp(key + 4, "env.", 4))
				snprintf(buf, n, "(unset)");
		}
		if (cJSON_IsString(x))
			snprintf(buf, n, "%s", x->valuestring);
		else if (cJSON_IsNumber(x))
			snprintf(buf, n, "%.0f", x->valuedouble);
	}
}

static int env_diff(struct isc_jb *jb, cJSON *cmp, const cJSON *cur, const cJSON *const *base, size_t nbase)
{
	static const char *const keys[] = { "host", "CPUs", "Python version", "torch version", "torch threads", "torch interop threads", "GPU model",
					    "rank", "world size", "GPU SM clock min MHz", "GPU throttled samples",
					    "Python recording mode", "iteration scope", "command" };
	cJSON *arr = isc_jb_arr(jb, cmp, "environment");
	char a[512], b[512], all[1024];
	/* the fixed keys, then every environment.meta key either side has */
	size_t nk = sizeof(keys) / sizeof(keys[0]);
	const cJSON *metas[2] = { isc_doc_get(cur, "environment.meta"), NULL };
	for (int pass = 0; pass < 2 + (int)nbase; pass++) {
		const cJSON *meta = pass == 0 ? NULL : pass == 1 ? metas[0] : isc_doc_get(base[pass - 2], "environment.meta");
		const cJSON *m = meta ? meta->child : NULL;
		for (size_t i = 0; pass == 0 ? i < nk : m != NULL; i++) {
			char key[300];
			if (pass == 0) {
				snprintf(key, sizeof(key), "%s", keys[i]);
			} else {
				snprintf(key, sizeof(key), "env %s", m->string ? m->string : "");
				m = m->next;
				bool dup = false; /* a meta key listed already (seen in an earlier document) */
				cJSON *e;
				cJSON_ArrayForEach(e, arr)
					if (!strcmp(isc_doc_str(e, "key", NULL) ? isc_doc_str(e, "key", NULL) : "", key + 4))
						dup = true;
				if (dup)
					continue;
			}
			env_value(cur, key, b, sizeof(b));
			all[0] = '\0';
			bool differs = false;
			size_t used = 0;
			for (size_t k = 0; k < nbase; k++) {
				env_value(base[k], key, a, sizeof(a));
				if (strcmp(a, b))
					differs = true;
				if (!strstr(all, a) && used < sizeof(all))
					used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s", used ? " | " : "", a);
			}
			if (!differs)
				continue;
			cJSON *o = isc_jb_push_obj(jb, arr);
			isc_jb_str(jb, o, "key", pass == 0 ? key : key + 4);
			isc_jb_str(jb, o, "base", all);
			isc_jb_str(jb, o, "current", b);
		}
	}
	return 0;
}

/* ---- what was run ------------------------------------------------------ */

/*
 * The program a run ran, from environment.cmdline (argv joined by spaces):
 * the basename of the first argument ending in ".py", else the module after
 * "-m", else the basename of argv[0].  "" when the document has no command.
 * A script moved to another directory is the same program; other
 * arguments may differ (they are listed as an environment difference).
 */
static void program_of(const cJSON *doc, char *buf, size_t n)
{
	const char *cmd = isc_doc_str(doc, "environment.cmdline", ""), *p = cmd;
	char first[200] = "", word[200];
	bool module = false;
	buf[0] = '\0';
	while (*p) {
		size_t len = strcspn(p, " ");
		snprintf(word, sizeof(word), "%.*s", (int)(len < sizeof(word) - 1 ? len : sizeof(word) - 1), p);
		p += len + (p[len] == ' ');
		if (!len)
			continue;
		const char *base = strrchr(word, '/') ? strrchr(word, '/') + 1 : word;
		if (!first[0])
			snprintf(first, sizeof(first), "%s", base);
		if (module) {
			snprintf(buf, n, "-m %s", word);
			return;
		}
		module = !strcmp(word, "-m");
		if (len > 3 && !strcmp(word + len - 3, ".py")) {
			snprintf(buf, n, "%s", base);
			return;
		}
	}
	snprintf(buf, n, "%s", first);
}

/* Whether two findings documents are of the same recording (a baseline given twice). */
static bool same_run(const cJSON *a, const cJSON *b)
{
	static const char *const keys[] = { "environment.start_time", "environment.host", "summary.wall_ns",
					     "summary.events", "iterations.spans" };
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		const cJSON *x = isc_doc_get(a, keys[i]), *y = isc_doc_get(b, keys[i]);
		if (!x && !y && i > 0) /* neither has it: no difference there; a run without start_time is never a duplicate */
			continue;
		if (!x || !y || !cJSON_Compare(x, y, true))
			return false;
	}
	return true;
}

/* ---- machine conditions ------------------------------------------------ */

/*
 * Was the machine as busy during this run as during the baselines?  Other
 * processes' load lengthens every iteration, and a run on a busier machine
 * looks regressed however many baselines were quiet (measured on the
 * shared 2-core machine: an A/A run at +344 % while builds ran).  The
 * measure is the CPU pressure of the run (PSI "some": the share of the
 * run in which some runnable task waited for a CPU,
 * memory.pressure.cpu.some_stall_pct).  The run's own threads can cause
 * it as well (more threads than CPUs is a change worth calling), so it
 * counts as the machine's only while the run's mean runnable threads
 * (cpu.runnable_threads_mean) stayed within its CPUs.  Not comparable:
 * the current run's pressure more than PRESSURE_GAP points above every
 * baseline's (then a regression cannot be told from the load), or every
 * baseline's that far above the current run's (an improvement cannot).
 * Measured on the shared machine: identical runs at 40 % and 85 %
 * pressure differed by +117 %, so "twice as busy" was not required.
 */
#define PRESSURE_GAP 20.0

static bool pressure_of(const cJSON *doc, double *p)
{
	return isc_doc_have(doc, "memory.pressure.cpu.some_stall_pct", p) && *p >= 0 && *p <= 100;
}

static bool own_load_within_cpus(const cJSON *doc)
{
	double r, n;
	return isc_doc_have(doc, "cpu.runnable_threads_mean", &r) && isc_doc_have(doc, "environment.ncpu", &n) &&
	       n >= 1 && r <= n;
}

/*
 * Writes comparison.conditions; *busier / *quieter: the current run's
 * machine was; *other: the runs are of another program than the current
 * one, or the current run is one of the baselines (*comparable false then).
 */
static void conditions(struct isc_jb *jb, cJSON *cmp, const cJSON *cur, const cJSON *const *base, size_t nbase,
		       bool less_wait, bool *busier, bool *quieter, bool *other)
{
	cJSON *c = isc_jb_obj(jb, cmp, "conditions");
	double pc = 0, lo = 101, hi = -1, r = 0;
	bool have = pressure_of(cur, &pc), all = have;
	isc_jb_num_or_null(jb, c, "cpu_pressure_pct", have, pc);
	cJSON *bp = isc_jb_arr(jb, c, "base_cpu_pressure_pct");
	for (size_t k = 0; k < nbase; k++) {
		double p = 0;
		bool h = pressure_of(base[k], &p);
		if (h)
			isc_jb_push_num(jb, bp, p);
		else if (bp && !cJSON_AddItemToArray(bp, isc_jb_chk(jb, cJSON_CreateNull())))
			jb->oom = true;
		all = all && h && own_load_within_cpus(base[k]);
		lo = h && p < lo ? p : lo;
		hi = h && p > hi ? p : hi;
	}
	bool have_r = isc_doc_have(cur, "cpu.runnable_threads_mean", &r);
	isc_jb_num_or_null(jb, c, "runnable_threads_mean", have_r, r);
	all = all && own_load_within_cpus(cur);
	/* on the wall_less_cpu_wait basis the other programs' share of the CPUs is taken out already */
	*busier = all && !less_wait && pc > hi + PRESSURE_GAP;
	*quieter = all && !less_wait && lo > pc + PRESSURE_GAP;
	char prog[256], bprog[256], why[600];
	bool itself = false, differs = false;
	program_of(cur, prog, sizeof(prog));
	for (size_t k = 0; k < nbase; k++) {
		itself = itself || same_run(cur, base[k]);
		program_of(base[k], bprog, sizeof(bprog));
		if (!differs && strcmp(prog, bprog)) {
			differs = true;
			snprintf(why, sizeof(why), "a different program: %s against %s in the baselines", *prog ? prog : "(none)",
				 *bprog ? bprog : "(none)");
		}
	}
	*other = itself || differs;
	isc_jb_bool(jb, c, "comparable", !*busier && !*quieter && !*other);
	if (itself)
		snprintf(why, sizeof(why), "the run compared is one of its baselines");
	else if (differs)
		; /* why says which programs */
	else if (*busier)
		snprintf(why, sizeof(why), "the machine was busier during this run: CPU pressure %.0f %% against at most "
			 "%.0f %% in the baselines, with the run's own threads within its CPUs", pc, hi);
	else if (*quieter)
		snprintf(why, sizeof(why), "the machine was quieter during this run: CPU pressure %.0f %% against at least "
			 "%.0f %% in the baselines", pc, lo);
	isc_jb_str(jb, c, "reason", *busier || *quieter || *other ? why : NULL);
}

/* ---- the section ------------------------------------------------------- */

static const char *scope_verdict(size_t nx, size_t ny, bool sig, double chg, bool have_ci, double lo, double hi,
				 double thr)
{
	if (nx < MIN_SAMPLES || ny < MIN_SAMPLES)
		return "inconclusive";
	if (sig && chg > thr)
		return "regressed";
	if (sig && chg < -thr)
		return "improved";
	if (sig || (have_ci && lo >= -thr && hi <= thr))
		return "unchanged";
	return "inconclusive";
}

int isc_findings_compare(cJSON *cur, const cJSON *const *base, size_t nbase, const struct isc_compare_opts *o)
{
	struct isc_jb jb = { false, true };
	double thr = o && o->threshold_pct > 0 ? o->threshold_pct : ISC_COMPARE_THRESHOLD_DEFAULT;
	double alpha = o && o->alpha > 0 ? o->alpha : ISC_COMPARE_ALPHA_DEFAULT;
	int64_t *ys = NULL, *xs = NULL, *one = NULL;
	double *meds = NULL;
	struct run_sum *rs = NULL, rc_cur = { 0, 0 };
	struct items it = { NULL, 0, 0 };
	size_t ny = 0, nx = 0;
	bool wall, bwall;
	int rc;
	if (!nbase)
		return -EINVAL;
	/* a baseline given twice is one run: counted once (comparison.duplicate_baselines) */
	const cJSON **ub = malloc(nbase * sizeof(*ub));
	size_t nub = 0;
	if (!ub) {
		isc_err_push("out of memory comparing runs");
		return -ENOMEM;
	}
	for (size_t k = 0; k < nbase; k++) {
		bool dup = false;
		for (size_t j = 0; j < nub && !dup; j++)
			dup = same_run(base[k], ub[j]);
		if (!dup)
			ub[nub++] = base[k];
	}
	size_t ndup = nbase - nub;
	base = ub;
	nbase = nub;
	cJSON_DeleteItemFromObjectCaseSensitive(cur, "comparison");
	/*
	 * The latency's basis: each iteration less its thread's wait for a CPU
	 * when every run measured it and no run's own threads outnumbered its
	 * CPUs (then the waits are the other programs' doing, not the code's:
	 * more threads than CPUs is a change the comparison must see).
	 */
	bool less_wait = !(o && o->wall_only) && has_cpu_wait(cur) && own_load_within_cpus(cur);
	for (size_t k = 0; k < nbase; k++)
		less_wait = less_wait && has_cpu_wait(base[k]) && own_load_within_cpus(base[k]);
	if ((rc = run_samples(cur, less_wait, &ys, &ny, &wall)))
		goto out;
	rc = -ENOMEM;
	if (!(meds = calloc(nbase, sizeof(*meds))) || !(rs = calloc(nbase, sizeof(*rs))))
		goto out;
	cJSON *cmp = isc_jb_obj(&jb, cur, "comparison");
	cJSON *runs = NULL;
	for (size_t k = 0; k < nbase; k++) {
		size_t n1;
		if ((rc = run_samples(base[k], less_wait, &one, &n1, &bwall)))
			goto out;
		int64_t *grown = realloc(xs, (nx + n1 + 1) * sizeof(*xs));
		if (!grown) {
			rc = -ENOMEM;
			goto out;
		}
		xs = grown;
		memcpy(xs + nx, one, n1 * sizeof(*one));
		nx += n1;
		meds[k] = n1 ? isc_median_sorted(one, n1) : 0;
		rs[k] = run_sum(one, n1);
		free(one);
		one = NULL;
		wall = wall || bwall;
	}
	isc_sort_i64(xs, nx);
	rc_cur = run_sum(ys, ny);
	/* filled below in document order: verdict first for readers of the JSON */
	isc_jb_str(&jb, cmp, "verdict", "inconclusive");
	isc_jb_num(&jb, cmp, "threshold_pct", thr);
	isc_jb_num(&jb, cmp, "alpha", alpha);
	isc_jb_num(&jb, cmp, "min_samples", MIN_SAMPLES);
	isc_jb_str(&jb, cmp, "method",
		   "runs as the unit: the log of each run's steady-state median against the baselines' mean, the "
		   "interval a prediction interval for a new run from the baselines' spread, never below their "
		   "medians' sampling error (Student's t, k - 1 df; one baseline: an assumed spread, normal), "
		   "reported as a ratio; regressed/improved = the 95 % interval excluding 0, "
		   "the iterations differing (Mann-Whitney U, p < alpha) and |change| > threshold");
	isc_jb_num(&jb, cmp, "baselines", (double)nbase);
	isc_jb_num(&jb, cmp, "duplicate_baselines", (double)ndup);
	isc_jb_str(&jb, cmp, "latency_basis", less_wait ? "wall_less_cpu_wait" : "wall");
	runs = isc_jb_arr(&jb, cmp, "baseline_runs");
	for (size_t k = 0; k < nbase; k++) {
		cJSON *r = isc_jb_push_obj(&jb, runs);
		isc_jb_str(&jb, r, "start_time", isc_doc_str(base[k], "environment.start_time", NULL));
		isc_jb_num(&jb, r, "p50_ns", round(meds[k]));
	}
	/* the run-level change (the top of this file) */
	double ybar = 0, wbar = 0, var = 0, s_runs = ONE_BASELINE_SPREAD, vtot, df;
	bool have_spread = nbase >= 2;
	for (size_t k = 0; k < nbase; k++) {
		ybar += rs[k].y / (double)nbase;
		wbar += rs[k].w / (double)nbase;
	}
	for (size_t k = 0; have_spread && k < nbase; k++)
		var += (rs[k].y - ybar) * (rs[k].y - ybar) / (double)(nbase - 1);
	double D = rc_cur.y - ybar;
	if (have_spread) {
		/*
		 * A new run against k: the variance of a run's y (between-run
		 * and sampling together) estimated by the baselines' own, k - 1
		 * df, never below their sampling variance; the current run's
		 * sampling variance where it exceeds theirs.  Not the
		 * between-run part alone beyond sampling with Welch-Satterthwaite
		 * df: three runs agreeing by chance set that part to 0 and the df
		 * to the iterations', and the interval then covered less than it
		 * said (identical runs with a between-run spread twice their
		 * medians' sampling error: 37 of 600 regressed, 6.2 %, where a
		 * 95 % interval allows 2.5 %; test_compare.c,
		 * test_interval_coverage).
		 */
		s_runs = var > wbar ? sqrt(var - wbar) : 0;
		vtot = (var > wbar ? var : wbar) * (1 + 1.0 / (double)nbase) + (rc_cur.w > wbar ? rc_cur.w - wbar : 0);
		df = (double)(nbase - 1);
	} else {
		/* one baseline: the assumed spread, known (the normal quantile) */
		vtot = s_runs * s_runs * (1 + 1.0 / (double)nbase) + rc_cur.w + wbar / (double)nbase;
		df = 1e9;
	}
	double half = vtot > 0 ? isc_t_isf((1 - RUNS_LEVEL) / 2, df) * sqrt(vtot) : 0;

	/* latency of the iteration scope */
	cJSON *scopes = isc_jb_arr(&jb, cmp, "scopes");
	cJSON *sc = isc_jb_push_obj(&jb, scopes);
	const char *verdict = "inconclusive";
	isc_jb_str(&jb, sc, "name", wall ? "(wall time)" : isc_doc_str(cur, "iterations.name", NULL));
	isc_jb_num(&jb, sc, "base_samples", (double)nx);
	isc_jb_num(&jb, sc, "samples", (double)ny);
	if (nx && ny) {
		struct isc_mwu u;
		struct isc_hl h;
		if ((rc = isc_mwu_test(xs, nx, ys, ny, &u)) || (rc = isc_hl_shift(xs, nx, ys, ny, 1 - alpha, &h)))
			goto out;
		double bm = isc_median_sorted(xs, nx);
		/* the ratio scale: e^D - 1 and its interval, never below -100 % */
		double chg = 100 * expm1(D), lo = 100 * expm1(D - half), hi = 100 * expm1(D + half);
		bool have_ci = bm > 0;
		bool sig = u.p < alpha && have_ci && (lo > 0 || hi < 0);
		verdict = scope_verdict(nx, ny, sig, chg, have_ci, lo, hi, thr);
		isc_jb_num(&jb, sc, "base_p50_ns", round(bm));
		isc_jb_num(&jb, sc, "p50_ns", round(isc_median_sorted(ys, ny)));
		isc_jb_num(&jb, sc, "shift_ns", round(h.shift));
		isc_jb_num(&jb, sc, "change_pct", round(chg * 100) / 100);
		isc_jb_num(&jb, sc, "ci_low_pct", round(lo * 100) / 100);
		isc_jb_num(&jb, sc, "ci_high_pct", round(hi * 100) / 100);
		isc_jb_num(&jb, sc, "p_value", u.p);
		isc_jb_bool(&jb, sc, "exact", u.exact);
		isc_jb_bool(&jb, sc, "significant", sig);
		push_quantiles(&jb, sc, "base_quantiles_ns", xs, nx);
		push_quantiles(&jb, sc, "quantiles_ns", ys, ny);
	} else {
		isc_jb_num_or_null(&jb, sc, "base_p50_ns", false, 0);
		isc_jb_num_or_null(&jb, sc, "p50_ns", false, 0);
		isc_jb_num_or_null(&jb, sc, "change_pct", false, 0);
		isc_jb_num_or_null(&jb, sc, "ci_low_pct", false, 0);
		isc_jb_num_or_null(&jb, sc, "ci_high_pct", false, 0);
		isc_jb_num_or_null(&jb, sc, "p_value", false, 0);
	}
	bool busier, quieter, other;
	conditions(&jb, cmp, cur, base, nbase, less_wait, &busier, &quieter, &other);
	if ((busier && !strcmp(verdict, "regressed")) || (quieter && !strcmp(verdict, "improved")) || other)
		verdict = "inconclusive";
	isc_jb_str(&jb, sc, "verdict", verdict);
	cJSON_ReplaceItemInObjectCaseSensitive(cmp, "verdict", cJSON_CreateString(verdict));
	/* the between-run spread, as a percent of a run's median (sd on the log scale x 100) */
	isc_jb_num_or_null(&jb, cmp, "runs_spread_pct", have_spread, round(s_runs * 10000) / 100);
	isc_jb_num_or_null(&jb, cmp, "assumed_runs_spread_pct", !have_spread, ONE_BASELINE_SPREAD * 100);

	/* why: contributors */
	for (size_t k = 0; k < nbase; k++)
		if ((rc = collect(&it, 0, base[k], 1.0 / (double)nbase)))
			goto out;
	if ((rc = collect(&it, 1, cur, 1)))
		goto out;
	double b_iter = 0, c_iter = iter_mean_ns(cur);
	for (size_t k = 0; k < nbase; k++)
		b_iter += iter_mean_ns(base[k]) / (double)nbase;
	isc_jb_num(&jb, cmp, "base_ns_per_iter", round(b_iter));
	isc_jb_num(&jb, cmp, "ns_per_iter", round(c_iter));
	isc_jb_num(&jb, cmp, "delta_ns_per_iter", round(c_iter - b_iter));
	env_diff(&jb, cmp, cur, base, nbase);
	if ((rc = ops_diff(&jb, cmp, cur, base, nbase)) || (rc = isc_compare_native(&jb, cmp, cur, base, nbase)))
		goto out;
	/*
	 * Ranked by share of the change, largest first: an item that moved
	 * against the change (say, time taken off "other" by a compensation
	 * that over-corrected) has a negative share and comes after every item
	 * that made the change; with no change, by size either way.
	 */
	double d = c_iter - b_iter;
	for (size_t i = 0; i < it.n; i++) {
		double delta = it.v[i].ns[1] - it.v[i].ns[0];
		it.v[i].toward = o && o->growth_first ? delta : d > 0 ? delta : d < 0 ? -delta : fabs(delta);
	}
	isc_sort(it.v, it.n, sizeof(*it.v), by_delta); /* it.v is NULL when no item was seen */
	cJSON *con = isc_jb_arr(&jb, cmp, "contributors");
	bool dc[2] = { true, counts_calls(cur) }; /* whether each side's runs count calls */
	for (size_t k = 0; k < nbase; k++)
		dc[0] = dc[0] && counts_calls(base[k]);
	/* per rank class: the causes (one place kept for the recording's row), the recording, breakdown */
	size_t shown[3] = { 0, 0, 0 }, cap[3] = { MAX_CONTRIB - MAX_BREAKDOWN - 1, 1, MAX_BREAKDOWN };
	for (size_t i = 0; i < it.n; i++) {
		struct item *x = &it.v[i];
		int cl = rank_class(x);
		if (shown[cl] == cap[cl])
			continue;
		double delta = x->ns[1] - x->ns[0];
		if (fabs(delta) < 1 && fabs(x->calls[1] - x->calls[0]) <= 1e-9 * fmax(1, x->calls[0]))
			continue; /* unchanged (baselines are averaged in floating point) */
		shown[cl]++;
		cJSON *c = isc_jb_push_obj(&jb, con);
		isc_jb_str(&jb, c, "name", x->name);
		isc_jb_str(&jb, c, "kind", x->kind);
		isc_jb_str(&jb, c, "view", x->view);
		isc_jb_str(&jb, c, "file", x->file);
		isc_jb_num(&jb, c, "line", x->line);
		isc_jb_str(&jb, c, "change", !x->seen[0] ? "appeared" : !x->seen[1] ? "disappeared" : "changed");
		isc_jb_num(&jb, c, "delta_ns_per_iter", round(delta));
		isc_jb_num(&jb, c, "base_ns_per_iter", round(x->ns[0]));
		isc_jb_num(&jb, c, "ns_per_iter", round(x->ns[1]));
		/* a count a mode did not make (sample mode, an operator's slot) is null, never 0 */
		bool k0 = calls_known(x, 0, dc), k1 = calls_known(x, 1, dc);
		isc_jb_num_or_null(&jb, c, "base_calls_per_iter", k0, round(x->calls[0] * 1000) / 1000);
		isc_jb_num_or_null(&jb, c, "calls_per_iter", k1, round(x->calls[1] * 1000) / 1000);
		/* more calls at the old cost per call; the rest is each call being slower */
		double more = x->calls[0] > 0 ? (x->calls[1] - x->calls[0]) * (x->ns[0] / x->calls[0])
			      : x->calls[1] > 0 ? delta : 0;
		isc_jb_num_or_null(&jb, c, "more_calls_ns_per_iter", k0 && k1, round(more));
		isc_jb_num_or_null(&jb, c, "slower_calls_ns_per_iter", k0 && k1, round(delta - more));
		isc_jb_num_or_null(&jb, c, "share_pct", d != 0, d != 0 ? round(1e4 * delta / d) / 100 : 0);
	}
	rc = jb.oom ? -ENOMEM : 0;
out:
	for (size_t i = 0; i < it.n; i++) {
		free(it.v[i].key);
		free(it.v[i].name);
		free(it.v[i].file);
	}
	free(it.v);
	free(one);
	free(xs);
	free(ys);
	free(meds);
	free(rs);
	free(ub);
	if (rc == -ENOMEM)
		isc_err_push("out of memory comparing runs");
	return rc;
}
