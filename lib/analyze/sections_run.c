/*
 * sections_run.c - the shape of the run in the findings document, from
 * the state of analyze.c's pass: processes[] with their threads,
 * iterations (which scope is the iteration, warm-up, latency quantiles
 * with their confidence intervals, histogram, DataLoader share), memory
 * (RSS peak and growth, faults, swap, pressure, what grew it, what it was
 * made of), and run (outcome, exception, start-up, too_short).
 *
 * Iterations, warm-up and the steady state, per process:
 *
 *   process A  [-w-][-s-][-s-][-s-][-s-][-i-     w  warm-up: the first
 *   process B       [-w-][-s-][-s-]                 iteration of a process
 *                       |                           that ran 2 or more
 *                  warm_end_ts                    s  steady state: latency_ns,
 *                                                    histogram, samples
 *                                                 i  incomplete: its end was
 *                                                    never recorded, left out
 *
 * memory.rss_growth_after_warmup_bytes_per_s is the least-squares slope of
 * RSS from the end of the last warm-up iteration (warm_end_ts, or 10 % into
 * the run when later) to the end of the last iteration: growth without
 * start-up and teardown.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc_findings.h" /* ISC_ITER_SHARE_MIN_PCT */
#include "isc_stats.h"    /* isc_quantile_sorted, isc_quantile_ci, isc_lsq_slope, isc_histogram_linear, isc_median_mad */
#include "analyze_oom.h"  /* isc_oom_mem_at */
#include "sections.h"

/* Name of a scope as reported: ProfilerStep#N merged as "ProfilerStep#*". */
static const char *scope_name(struct ana *a, const struct ana_scope *sc)
{
	return sc->profiler_step ? "ProfilerStep#*" : isc_ana_str_name(a, sc->name_id);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

static int cmp_iter(const void *x, const void *y)
{
	const struct ana_iter *a = x, *b = y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->begin_ts < b->begin_ts ? -1 : a->begin_ts > b->begin_ts;
}

/* iterations.spans rows: warm-up first, then by start */
struct span_out {
	uint64_t begin, end;
	bool warm;
	bool have_wait;   /* wait is known (isc_pysamp_cpu_wait) */
	uint64_t wait;    /* its thread's time waiting for a CPU inside it */
};

static int cmp_span_out(const void *x, const void *y)
{
	const struct span_out *a = x, *b = y;
	if (a->warm != b->warm)
		return a->warm ? -1 : 1;
	return a->begin < b->begin ? -1 : a->begin > b->begin;
}

/*
 * iterations.dataloader: outermost DataLoader spans over the whole run, and
 * their share of the steady-state period [first steady start, last steady
 * end], from the dl_time() stamps of the iterations that bound it.
 */
static void emit_dataloader(struct ana *a, cJSON *it, bool steady, uint64_t from, uint64_t to, uint64_t dl_ns)
{
	if (!a->dl_calls) {
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(it, "dataloader"));
		return;
	}
	uint32_t name_id = 0;
	uint64_t best = 0;
	bool found = false;
	for (size_t i = 0; i < a->nfns; i++)
		if (a->fns[i].dataloader && (!found || a->fns[i].total_ns > best)) {
			found = true;
			best = a->fns[i].total_ns;
			name_id = a->fns[i].name_id;
		}
	for (size_t i = 0; i < a->nscs; i++)
		if (a->scs[i].dataloader && (!found || a->scs[i].total_ns > best)) {
			found = true;
			best = a->scs[i].total_ns;
			name_id = a->scs[i].name_id;
		}
	cJSON *o = isc_jb_obj(&a->jb, it, "dataloader");
	isc_jb_num(&a->jb, o, "total_ns", (double)a->dl_closed_ns);
	isc_jb_num(&a->jb, o, "calls", (double)a->dl_calls);
	bool have = steady && to > from;
	isc_jb_num_or_null(&a->jb, o, "pct_of_step", have, have ? round(1e4 * (double)dl_ns / (double)(to - from)) / 100 : 0);
	const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, name_id);
	isc_ana_jloc(a, isc_jb_obj(&a->jb, o, "function"), s ? s->name : "?", s ? s->file : "", s ? s->line : 0);
}

#define ITER_SPANS_MAX 1000
#define ITER_HIST_BINS 20

/* iterations.histogram of the sorted steady-state latencies; null without any. */
static void emit_histogram(struct ana *a, cJSON *it, const uint64_t *lat, size_t n)
{
	uint64_t edges[ITER_HIST_BINS + 1], counts[ITER_HIST_BINS];
	if (!n) {
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(it, "histogram"));
		return;
	}
	unsigned k = isc_histogram_linear(lat, n, ITER_HIST_BINS, edges, counts);
	cJSON *h = isc_jb_obj(&a->jb, it, "histogram");
	cJSON *e = isc_jb_arr(&a->jb, h, "edges_ns"), *c = isc_jb_arr(&a->jb, h, "counts");
	for (unsigned i = 0; i <= k && e && c; i++) {
		isc_jb_push_num(&a->jb, e, (double)edges[i]);
		if (i < k)
			isc_jb_push_num(&a->jb, c, (double)counts[i]);
	}
}

/*
 * Overhead compensation (iscope-analyze(1)) estimates what an iteration
 * would have lasted unrecorded, assuming its work is fixed: each recorded
 * event cost the calibrated per-event time, which recording added.  The
 * measured latency stays the headline (iterations.latency_ns); the
 * estimate goes beside it (latency_ns_estimated), and is withheld when it
 * removes more than COMP_MAX_PCT of the measured time, or takes an
 * iteration to nothing: then the loop's time is not made of its events
 * (a loop that polls, or works until a deadline, lasts the deadline
 * however many events it makes), or recording more than doubled it, and
 * the subtraction would not be a latency the workload can have.
 * It is withheld too, whatever it removes, when the iterations' times
 * agree more closely than the work in them: over 3 or more steady
 * iterations, the median absolute deviation of the times removed is at
 * least COMP_VARY_PERMYRIAD per ten thousand of the median iteration and
 * over COMP_VARY_X times that of the measured times.  Work that is fixed
 * repeats its events (the removals agree); work that varies makes the
 * times vary at least as much as the events' cost, which is part of them;
 * a loop bounded by a deadline does the work that fits, and lasts the
 * deadline (a loop polling until 60 ms: polls varying 0.9-19 %, times
 * 0.004 %).  Median deviations, not standard ones: an iteration whose
 * thread got the CPU back late after its deadline (0.9 ms in one CI run)
 * is one outlier, not the spread.
 */
#define COMP_MAX_PCT 50
#define COMP_VARY_PERMYRIAD 2
#define COMP_VARY_X 4

/* The steady iterations' median time and the median absolute deviations of their times and of the times removed. */
struct comp_spread {
	size_t n;
	double med_d, mad_d, mad_r;
};

/* comp_spread of the measured times dur[0..n) and their estimates est[0..n) (the same order); -ENOMEM */
static int comp_spread_of(struct comp_spread *sp, const uint64_t *dur, const uint64_t *est, size_t n)
{
	*sp = (struct comp_spread){ .n = n };
	if (n < 3)
		return 0;
	double *d = malloc(2 * n * sizeof(*d)), med_r;
	if (!d)
		return -ENOMEM;
	double *r = d + n;
	for (size_t i = 0; i < n; i++) {
		d[i] = (double)dur[i];
		r[i] = (double)(dur[i] - est[i]);
	}
	isc_median_mad(d, n, &sp->med_d, &sp->mad_d);
	isc_median_mad(r, n, &med_r, &sp->mad_r);
	free(d);
	return 0;
}

/* iterations.latency_estimate and latency_ns_estimated, from the sorted compensated latencies est[0..n). */
static void emit_estimate(struct ana *a, cJSON *it, bool compensated, bool clipped, const uint64_t *est, size_t n,
			  uint64_t measured, const struct comp_spread *sp)
{
	if (!compensated) {
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(it, "latency_ns_estimated"));
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(it, "latency_estimate"));
		return;
	}
	uint64_t kept = 0;
	for (size_t i = 0; i < n; i++)
		kept += est[i];
	double removed = measured > kept ? 100.0 * (double)(measured - kept) / (double)measured : 0;
	bool deadline = sp->n >= 3 && sp->mad_r * 10000 >= COMP_VARY_PERMYRIAD * sp->med_d &&
			sp->mad_r > COMP_VARY_X * sp->mad_d;
	bool withheld = removed > COMP_MAX_PCT || clipped || deadline;
	char why[400];
	if (deadline)
		snprintf(why, sizeof(why), "the iterations' times agree within %.4f %% of their median (median "
			 "deviation) while the recording cost of their events varied %.3f %%: their time is not made "
			 "of their events (a loop that polls or works until a deadline lasts the deadline however many "
			 "events it makes); it would remove "
			 "%.1f %%", 100 * sp->mad_d / sp->med_d, 100 * sp->mad_r / sp->med_d, round(removed * 100) / 100);
	else
		snprintf(why, sizeof(why), "the recording cost would remove %.1f %% of the measured iteration time%s: "
			 "the iterations' time is not made of their events (a loop that polls or works until a deadline "
			 "lasts the deadline however many events it makes), or recording more than doubled it",
			 round(removed * 100) / 100, clipped ? ", all of some iterations" : "");
	if (withheld) {
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(it, "latency_ns_estimated"));
	} else {
		static const struct { const char *k; double p; } qs[] = { { "p50", .5 }, { "p90", .9 }, { "p99", .99 } };
		cJSON *e = isc_jb_obj(&a->jb, it, "latency_ns_estimated");
		for (size_t i = 0; i < 3; i++)
			isc_jb_num(&a->jb, e, qs[i].k, (double)isc_quantile_sorted(est, n, qs[i].p));
		isc_jb_num(&a->jb, e, "mean", round((double)kept / (double)n));
		isc_jb_num(&a->jb, e, "min", (double)est[0]);
		isc_jb_num(&a->jb, e, "max", (double)est[n - 1]);
	}
	cJSON *x = isc_jb_obj(&a->jb, it, "latency_estimate");
	isc_jb_str(&a->jb, x, "assumption", "each recorded Python event cost the calibrated per-event time "
		   "(recording.per_event_ns), which recording added to the iteration that holds it; without it the "
		   "iteration does the same work, faster");
	isc_jb_num(&a->jb, x, "removed_pct", round(removed * 100) / 100);
	isc_jb_num(&a->jb, x, "max_removed_pct", COMP_MAX_PCT);
	isc_jb_bool(&a->jb, x, "withheld", withheld);
	isc_jb_str(&a->jb, x, "reason", withheld ? why : NULL);
}

/*
 * The iteration scope is the PyTorch profiler's step (ProfilerStep#N, one
 * scope) when it has 2 or more spans: torch.profiler's schedule and HTA
 * call that the iteration, and an inner annotation that repeats more often
 * (nccl:all_reduce five times a step) is not one.  Otherwise the scope name
 * with the most spans (ties: the larger total time, then the first seen),
 * DataLoader annotations left out.
 * Warm-up: the earliest iteration of each process that ran at least 2 is
 * excluded from the latency stats, as are iterations whose end was never
 * recorded; the rest are the steady-state iterations.  In a flight
 * recording only processes that started inside the window have their
 * warm-up left out: the others' first iterations were evicted.
 */
static bool started_in_window(const struct ana *a, uint32_t pid);

int isc_ana_emit_iterations(struct ana *a, cJSON *root)
{
	cJSON *it = isc_jb_obj(&a->jb, root, "iterations");
	struct ana_scope *best = NULL;
	bool coll = false; /* some scope is a collective call (said in the rule only then) */
	for (size_t i = 0; i < a->nscs; i++) {
		struct ana_scope *s = &a->scs[i];
		coll |= s->collective;
		if (s->dataloader || s->collective)
			continue;
		if (s->profiler_step && s->n >= 2) {
			best = s;
			break;
		}
		if (!best || s->n > best->n || (s->n == best->n && s->total_ns > best->total_ns))
			best = s;
	}
	a->out.it_name = best ? scope_name(a, best) : NULL;
	a->out.it_name_id = best ? best->name_id : 0;
	a->out.it_step = best && best->profiler_step;
	a->out.it_count = best ? best->n : 0;
	isc_jb_str(&a->jb, it, "name", a->out.it_name);
	isc_jb_num(&a->jb, it, "count", (double)a->out.it_count);
	char rule[512];
	snprintf(rule, sizeof(rule), "iterations = ProfilerStep#N when it has 2 or more spans, else spans of the most frequent "
		 "scope name (DataLoader annotations%s left out); warm-up = %s", coll ? " and collective calls" : "",
		 isc_timeline_stats_borrow(a->t)->window
		 ? "the first iteration of each process that started inside the window of this flight recording "
		   "(--ring) and ran at least 2; the others' first iterations were evicted"
		 : "the first iteration of each process that ran at least 2");
	isc_jb_str(&a->jb, it, "rule", rule);
	uint64_t *lat = NULL, *est = NULL, measured = 0;
	bool compensated = false, clipped = false;
	struct comp_spread spread = { 0 };
	int err = 0;
	struct span_out *spans = NULL;
	size_t nlat = 0, warm = 0, incomplete = 0, nspans = 0;
	/* the steady-state period and the DataLoader time stamps at its ends */
	uint64_t st_from = UINT64_MAX, st_to = 0, dl_from = 0, dl_to = 0;
	/* a flight recording evicted the first iterations of the processes it did not see start */
	bool window = isc_timeline_stats_borrow(a->t)->window;
	if (best && best->n) {
		if (!(lat = malloc(best->n * sizeof(*lat))) || !(est = malloc(best->n * sizeof(*est))) ||
		    !(spans = malloc(best->n * sizeof(*spans))) || !(a->amarks = malloc(best->n * sizeof(*a->amarks))) ||
		    !(a->asteady = calloc(best->n, sizeof(*a->asteady)))) {
			free(lat);
			free(est);
			free(spans);
			return -ENOMEM;
		}
		size_t nmarks = 0;
		qsort(best->s, best->n, sizeof(*best->s), cmp_iter);
		for (size_t i = 0, j; i < best->n; i = j) {
			for (j = i; j < best->n && best->s[j].pid == best->s[i].pid; j++)
				;
			bool warm_rule = !window || started_in_window(a, best->s[i].pid);
			/* the process's steady state for the site model: its warm-up's end, its steady iterations' ends */
			struct isc_asite_steady *sd = &a->asteady[a->nasteady++];
			sd->pid = best->s[i].pid;
			sd->marks = a->amarks + nmarks;
			for (size_t k = i; k < j; k++)
				if ((k == i && j - i >= 2 && warm_rule) || best->s[k].complete)
					a->amarks[nmarks + sd->n++] = best->s[k].mark;
			qsort(a->amarks + nmarks, sd->n, sizeof(*a->amarks), cmp_u32);
			nmarks += sd->n;
			for (size_t k = i; k < j; k++) {
				const struct ana_iter *x = &best->s[k];
				uint64_t end = x->begin_ts + x->dur;
				if (end > a->iter_end_ts)
					a->iter_end_ts = end;
				if (!a->iter_begin_ts || x->begin_ts < a->iter_begin_ts)
					a->iter_begin_ts = x->begin_ts;
				if (k == i && j - i >= 2 && warm_rule && end > a->warm_end_ts)
					a->warm_end_ts = end;
				uint64_t w = 0;
				bool hw = isc_pysamp_cpu_wait(a->pys, x->pid, x->tid, x->begin_ts, end, &w);
				if (k == i && j - i >= 2 && warm_rule) {
					warm++;
					spans[nspans++] = (struct span_out){ x->begin_ts, end, true, hw, w };
				} else if (!x->complete) {
					incomplete++;
				} else {
					/* the measured time is the latency; the compensated one an estimate beside it */
					est[nlat] = x->lat;
					lat[nlat++] = x->dur;
					measured += x->dur;
					compensated |= x->lat != x->dur;
					clipped |= x->lat == 0 && x->dur > 0;
					a->removed_iter_ns += x->dur - x->lat;
					spans[nspans++] = (struct span_out){ x->begin_ts, end, false, hw, w };
					if (x->begin_ts < st_from) {
						st_from = x->begin_ts;
						dl_from = x->dl_begin;
					}
					if (end >= st_to) {
						st_to = end;
						dl_to = x->dl_end;
					}
				}
			}
		}
		err = comp_spread_of(&spread, lat, est, nlat); /* before the sorts: lat[i] and est[i] one iteration */
		qsort(lat, nlat, sizeof(*lat), cmp_u64);
		qsort(est, nlat, sizeof(*est), cmp_u64);
		qsort(spans, nspans, sizeof(*spans), cmp_span_out);
	}
	if (err) {
		free(lat);
		free(est);
		free(spans);
		return err;
	}
	isc_jb_num(&a->jb, it, "warmup_excluded", (double)warm);
	isc_jb_num(&a->jb, it, "incomplete_excluded", (double)incomplete);
	a->out.it_samples = nlat;
	isc_jb_num(&a->jb, it, "samples", (double)nlat);
	cJSON *l = isc_jb_obj(&a->jb, it, "latency_ns");
	cJSON *ci = isc_jb_obj(&a->jb, it, "latency_ci95_ns");
	static const struct { const char *k; double p; } qs[] = { { "p50", .5 }, { "p90", .9 }, { "p99", .99 } };
	for (size_t i = 0; i < 3; i++) {
		size_t lo = 0, hi = 0;
		isc_jb_num_or_null(&a->jb, l, qs[i].k, nlat, nlat ? (double)isc_quantile_sorted(lat, nlat, qs[i].p) : 0);
		isc_quantile_ci(nlat, qs[i].p, 0.95, &lo, &hi);
		cJSON *c = isc_jb_obj(&a->jb, ci, qs[i].k);
		isc_jb_num_or_null(&a->jb, c, "low", lo, lo ? (double)lat[lo - 1] : 0);
		isc_jb_num_or_null(&a->jb, c, "high", hi, hi ? (double)lat[hi - 1] : 0);
	}
	double sum = 0;
	for (size_t i = 0; i < nlat; i++)
		sum += (double)lat[i];
	isc_jb_num_or_null(&a->jb, l, "mean", nlat, nlat ? round(sum / (double)nlat) : 0);
	isc_jb_num_or_null(&a->jb, l, "min", nlat, nlat ? (double)lat[0] : 0);
	isc_jb_num_or_null(&a->jb, l, "max", nlat, nlat ? (double)lat[nlat - 1] : 0);
	emit_estimate(a, it, compensated && nlat, clipped, est, nlat, measured, &spread);
	emit_histogram(a, it, lat, nlat);
	free(lat);
	free(est);
	cJSON *sc = isc_jb_arr(&a->jb, it, "scopes");
	for (size_t i = 0; i < a->nscs && i < 20; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, sc);
		if (!o)
			break;
		isc_jb_str(&a->jb, o, "name", scope_name(a, &a->scs[i]));
		isc_jb_num(&a->jb, o, "count", (double)a->scs[i].n);
		isc_jb_num(&a->jb, o, "total_ns", (double)a->scs[i].total_ns);
	}
	cJSON *sp = isc_jb_arr(&a->jb, it, "spans");
	for (size_t i = 0; i < nspans && i < ITER_SPANS_MAX && sp; i++) {
		cJSON *pair = cJSON_CreateArray();
		if (!isc_jb_chk(&a->jb, pair) || !cJSON_AddItemToArray(sp, pair)) {
			cJSON_Delete(pair);
			a->jb.oom = true;
			break;
		}
		isc_jb_push_num(&a->jb, pair, (double)(spans[i].begin - a->first_ts));
		isc_jb_push_num(&a->jb, pair, (double)(spans[i].end - a->first_ts));
	}
	isc_jb_bool(&a->jb, it, "spans_truncated", nspans > ITER_SPANS_MAX);
	/* each span's run-queue wait (its thread's schedstat in the samples, 1.9): when all are known */
	bool all_wait = nspans > 0;
	for (size_t i = 0; i < nspans && i < ITER_SPANS_MAX; i++)
		all_wait = all_wait && spans[i].have_wait;
	if (all_wait) {
		cJSON *cw = isc_jb_arr(&a->jb, it, "cpu_wait_ns");
		for (size_t i = 0; i < nspans && i < ITER_SPANS_MAX && cw; i++)
			isc_jb_push_num(&a->jb, cw, (double)spans[i].wait);
	} else {
		isc_jb_num_or_null(&a->jb, it, "cpu_wait_ns", false, 0);
	}
	isc_jb_num(&a->jb, it, "warmup_spans", (double)(warm < ITER_SPANS_MAX ? warm : ITER_SPANS_MAX));
	free(spans);
	emit_dataloader(a, it, nlat > 0, st_from, st_to, dl_to > dl_from ? dl_to - dl_from : 0);
	return 0;
}

/*
 * Did process pid start inside a flight recording's window (its PROC_INFO,
 * never evicted, stamped after the first agent event kept)?  Its first
 * iteration is then in the trace, and is its warm-up.
 */
static bool started_in_window(const struct ana *a, uint32_t pid)
{
	uint32_t i = isc_umap_get(&a->pr_map, pid);
	const struct ana_proc *p = i == ISC_UMAP_NONE ? NULL : a->prs[i];
	return p && p->have_info && a->first_agent_ts && p->info_ts > a->first_agent_ts;
}

static int cmp_proc(const void *x, const void *y)
{
	const struct ana_proc *a = *(struct ana_proc *const *)x, *b = *(struct ana_proc *const *)y;
	return a->pid < b->pid ? -1 : a->pid > b->pid;
}

/* Threads of a process: the main thread (tid == pid) first, then by tid. */
static int cmp_thread(const void *x, const void *y)
{
	const struct ana_thread *a = *(struct ana_thread *const *)x, *b = *(struct ana_thread *const *)y;
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	bool ma = a->tid == a->pid, mb = b->tid == b->pid;
	if (ma != mb)
		return ma ? -1 : 1;
	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/* processes[].context_switches of p, its rates added to *sw. */
static void emit_rates(struct ana *a, cJSON *o, const struct ana_proc *p, struct ana_switches *sw)
{
	cJSON *cs = isc_jb_obj(&a->jb, o, "context_switches");
	bool have = p->nsamples >= 2 && p->s_ts1 > p->s_ts0;
	double s = have ? (double)(p->s_ts1 - p->s_ts0) / 1e9 : 1;
	double v = have && p->vcsw1 >= p->vcsw0 ? round(100 * (double)(p->vcsw1 - p->vcsw0) / s) / 100 : 0;
	double iv = have && p->ivcsw1 >= p->ivcsw0 ? round(100 * (double)(p->ivcsw1 - p->ivcsw0) / s) / 100 : 0;
	isc_jb_num_or_null(&a->jb, cs, "voluntary_per_s", have, v);
	isc_jb_num_or_null(&a->jb, cs, "involuntary_per_s", have, iv);
	sw->voluntary_per_s += v;
	sw->involuntary_per_s += iv;
}

static const char *exit_how_name(uint64_t how)
{
	return how == 0 ? "exited" : how == 1 ? "signaled" : "lost";
}

void isc_ana_emit_processes(struct ana *a, cJSON *root, struct ana_switches *sw)
{
	const struct isc_tl_header *h = isc_timeline_header_borrow(a->t);
	cJSON *ps = isc_jb_arr(&a->jb, root, "processes");
	/* NULL arrays when a timeline has no process (only GPU operations) */
	isc_sort(a->prs, a->nprs, sizeof(*a->prs), cmp_proc);
	isc_sort(a->ths, a->nths, sizeof(*a->ths), cmp_thread);
	size_t ti = 0;
	for (size_t i = 0; i < a->nprs; i++) {
		const struct ana_proc *p = a->prs[i];
		cJSON *o = isc_jb_push_obj(&a->jb, ps);
		if (!o)
			return;
		isc_jb_num(&a->jb, o, "pid", p->pid);
		isc_jb_num_or_null(&a->jb, o, "ppid", p->have_info, p->ppid);
		/* without PROC_INFO, a lone process is the recorded command */
		isc_jb_str(&a->jb, o, "command", p->command ? p->command : a->nprs == 1 ? h->cmdline : "");
		isc_jb_num_or_null(&a->jb, o, "exit_status", p->have_exit, (double)p->exit_status);
		isc_jb_str(&a->jb, o, "exit_how", p->have_exit ? exit_how_name(p->exit_how) : NULL);
		isc_jb_num_or_null(&a->jb, o, "cpu_ns", p->nsamples, (double)p->cpu_ns);
		isc_jb_num_or_null(&a->jb, o, "system_ns", p->nsamples, (double)p->sys_ns);
		isc_jb_num_or_null(&a->jb, o, "rss_peak_bytes", p->have_rss, (double)p->rss_peak);
		isc_jb_num_or_null(&a->jb, o, "minor_faults", p->nsamples, (double)p->minflt);
		isc_jb_num_or_null(&a->jb, o, "major_faults", p->nsamples, (double)p->majflt);
		emit_rates(a, o, p, sw);
		sw->have |= p->nsamples >= 2 && p->s_ts1 > p->s_ts0;
		cJSON *ts = isc_jb_arr(&a->jb, o, "threads");
		while (ti < a->nths && a->ths[ti]->pid < p->pid)
			ti++;
		for (; ti < a->nths && a->ths[ti]->pid == p->pid; ti++) {
			const struct ana_thread *th = a->ths[ti];
			cJSON *t = isc_jb_push_obj(&a->jb, ts);
			if (!t)
				return;
			isc_jb_num(&a->jb, t, "tid", th->tid);
			isc_jb_str(&a->jb, t, "name", th->name ? th->name : th->comm ? th->comm : "");
			isc_jb_str(&a->jb, t, "comm", th->comm);
			isc_jb_num_or_null(&a->jb, t, "cpu_ns", th->have_cpu, (double)th->cpu_ns);
			isc_jb_num_or_null(&a->jb, t, "system_ns", th->have_cpu, (double)th->sys_ns);
			isc_jb_bool(&a->jb, t, "traced", th->traced);
			isc_jb_num(&a->jb, t, "events", (double)th->events);
			isc_jb_num(&a->jb, t, "python_ns", (double)(th->python_ns - th->off_py_ns));
			isc_jb_num(&a->jb, t, "ops_ns", (double)(th->ops_ns - th->off_ops_ns));
			isc_jb_num(&a->jb, t, "torch_ops_ns", (double)(th->torch_ns - th->off_torch_ns));
			isc_jb_num_or_null(&a->jb, t, "gil_wait_ns", a->have_wait, (double)th->gil_ns);
			isc_jb_num(&a->jb, t, "off_cpu_ns", (double)(th->off_ops_ns + th->off_py_ns));
			if (th->have_cpu) {
				char st[2] = { th->state, 0 };
				isc_jb_str(&a->jb, t, "state", st);
				isc_jb_num(&a->jb, t, "last_cpu", (double)th->last_cpu);
			}
			if (th->have_numa)
				isc_jb_num(&a->jb, t, "numa_node", (double)th->numa_node);
		}
	}
}

#define GROWTH_TOP 5

static int row_by_growth(const void *x, const void *y)
{
	const struct ana_fn_row *a = x, *b = y;
	if (a->growth_bytes != b->growth_bytes)
		return a->growth_bytes > b->growth_bytes ? -1 : 1;
	return isc_ana_fn_row_identity(x, y);
}

static int cmp_gsite(const void *x, const void *y)
{
	const struct gsite *p = x, *q = y;
	if (p->bytes != q->bytes)
		return p->bytes > q->bytes ? -1 : 1;
	return p->fn != q->fn ? (p->fn < q->fn ? -1 : 1) : (p->scope < q->scope ? -1 : p->scope > q->scope);
}

/* memory.growth_sites: the GROWTH_TOP (Python function, scope) pairs RSS grew in most. */
static void emit_growth_sites(struct ana *a, cJSON *m)
{
	isc_sort(a->gs, a->ngs, sizeof(*a->gs), cmp_gsite); /* gs_map is not used after the pass */
	cJSON *arr = isc_jb_arr(&a->jb, m, "growth_sites");
	for (size_t i = 0; i < a->ngs && i < GROWTH_TOP; i++) {
		const struct gsite *g = &a->gs[i];
		const struct isc_tl_string *fn = g->fn ? isc_timeline_string_borrow(a->t, g->fn) : NULL;
		const struct isc_tl_string *sc = g->scope ? isc_timeline_string_borrow(a->t, g->scope) : NULL;
		cJSON *o = isc_jb_push_obj(&a->jb, arr);
		isc_jb_str(&a->jb, o, "name", fn ? fn->name : sc ? sc->name : "?");
		isc_jb_str(&a->jb, o, "file", fn ? fn->file : "");
		isc_jb_num(&a->jb, o, "line", fn ? fn->line : 0);
		isc_jb_str(&a->jb, o, "kind", fn ? "python" : "scope");
		isc_jb_str(&a->jb, o, "scope", sc ? sc->name : NULL);
		isc_jb_num(&a->jb, o, "bytes", (double)g->bytes);
	}
}

int isc_ana_emit_memory(struct ana *a, cJSON *root)
{
	cJSON *m = a->out.memory = isc_jb_obj(&a->jb, root, "memory");
	uint64_t majflt = 0, minflt = 0, pswap = 0;
	bool have_faults = false, have_smaps = false;
	for (size_t i = 0; i < a->nprs; i++) {
		majflt += a->prs[i]->majflt;
		minflt += a->prs[i]->minflt;
		have_faults |= a->prs[i]->nsamples > 0;
		if (a->prs[i]->have_smaps) {
			have_smaps = true;
			if (a->prs[i]->swap_max > pswap)
				pswap = a->prs[i]->swap_max;
		}
	}
	double slope = 0;
	uint64_t npts = 0;
	uint64_t cut = a->first_ts + (a->last_ts - a->first_ts) / 10;
	bool have_slope = isc_lsq_slope(a->rss_lsq, cut, UINT64_MAX, &slope, &npts);
	isc_jb_num_or_null(&a->jb, m, "rss_peak_bytes", a->have_rss, (double)a->rss_total_peak);
	isc_jb_num_or_null(&a->jb, m, "rss_growth_bytes_per_s", have_slope, round(slope));
	isc_jb_num(&a->jb, m, "rss_growth_samples", (double)npts);
	/* the same between the end of the warm-up iterations and the last
	 * iteration's end: steady-state growth, without start-up and teardown */
	if (a->warm_end_ts > cut)
		cut = a->warm_end_ts;
	have_slope = a->warm_end_ts && isc_lsq_slope(a->rss_lsq, cut, a->iter_end_ts, &slope, &npts);
	isc_jb_num_or_null(&a->jb, m, "rss_growth_after_warmup_bytes_per_s", have_slope, round(slope));
	isc_jb_num_or_null(&a->jb, m, "after_warmup_span_ns", a->warm_end_ts && a->iter_end_ts > a->warm_end_ts,
		     (double)(a->iter_end_ts - a->warm_end_ts));
	isc_jb_num_or_null(&a->jb, m, "major_faults", have_faults, (double)majflt);
	isc_jb_num_or_null(&a->jb, m, "minor_faults", have_faults, (double)minflt);
	isc_jb_num_or_null(&a->jb, m, "swap_used_bytes_max", a->have_meminfo, (double)a->swap_used_max);
	isc_jb_num_or_null(&a->jb, m, "mem_available_bytes_min", a->have_meminfo, (double)a->mem_avail_min);
	isc_jb_num_or_null(&a->jb, m, "process_swap_bytes_max", have_smaps, (double)pswap);
	cJSON *pr = isc_jb_obj(&a->jb, m, "pressure");
	static const char *const res[3] = { "cpu", "memory", "io" };
	for (int i = 0; i < 3; i++) {
		const struct ana_pressure *ps = &a->psi[i];
		cJSON *o = isc_jb_obj(&a->jb, pr, res[i]);
		bool span = ps->n >= 2 && ps->ts1 > ps->ts0 && ps->tot1 >= ps->tot0;
		isc_jb_num_or_null(&a->jb, o, "some_avg10_max", ps->have, (double)ps->avg10_max_x100 / 100);
		isc_jb_num_or_null(&a->jb, o, "some_stall_pct", span,
			     span ? round(1e4 * (double)(ps->tot1 - ps->tot0) * 1e3 / (double)(ps->ts1 - ps->ts0)) / 100 : 0);
	}
	size_t n;
	struct ana_fn_row *rows = isc_ana_fn_rows(a, &n);
	if (!rows)
		return -ENOMEM;
	qsort(rows, n, sizeof(*rows), row_by_growth);
	cJSON *g = isc_jb_arr(&a->jb, m, "growth_top");
	for (size_t i = 0; i < n && i < GROWTH_TOP && rows[i].growth_bytes; i++) {
		cJSON *o = isc_jb_push_obj(&a->jb, g);
		if (!o)
			break;
		isc_ana_jloc(a, o, rows[i].name, rows[i].file, rows[i].line);
		isc_jb_num(&a->jb, o, "growth_bytes", (double)rows[i].growth_bytes);
	}
	free(rows);
	bool from_alloc;
	if (isc_ana_emit_alloc(a, m, &from_alloc))
		return -ENOMEM;
	if (!from_alloc) /* no allocation samples: RSS increases charged at the sampler's ticks */
		emit_growth_sites(a, m);
	if (a->memory_limit)
		isc_jb_num(&a->jb, m, "limit_bytes", (double)a->memory_limit);
	/*
	 * what the resident memory was made of at the end: per process, the
	 * smaps_rollup record of its highest RSS of the last 2 s
	 * (isc_oom_mem_at: the last record is often taken after the
	 * interpreter freed its memory on the way out)
	 */
	uint64_t c[4] = { 0 }; /* rss pss anon swap */
	for (size_t i = 0; i < a->nprs; i++) {
		struct isc_oom_mem pm;
		if (a->prs[i]->have_smaps && isc_oom_mem_at(a->oom, a->prs[i]->pid, 0, &pm) && pm.have_smaps) {
			c[0] += pm.s_rss;
			c[1] += pm.pss;
			c[2] += pm.anon;
			c[3] += pm.swap;
		}
	}
	if (have_smaps) {
		cJSON *co = isc_jb_obj(&a->jb, m, "composition");
		isc_jb_num(&a->jb, co, "rss_bytes", (double)c[0]);
		isc_jb_num(&a->jb, co, "pss_bytes", (double)c[1]);
		isc_jb_num(&a->jb, co, "anon_bytes", (double)c[2]);
		isc_jb_num(&a->jb, co, "file_bytes", (double)(c[0] > c[2] ? c[0] - c[2] : 0));
		isc_jb_num(&a->jb, co, "swap_bytes", (double)c[3]);
	} else {
		isc_jb_chk(&a->jb, cJSON_AddNullToObject(m, "composition"));
	}
	return 0;
}

/*
 * run: what the run was, before why it was slow (issue 18).  outcome is
 * truncated (no end record), killed (by a signal), failed (a non-zero exit
 * status, or an unhandled exception in a main thread), window (a flight
 * recorder kept only the last part: frames were evicted) or completed, in
 * that order of precedence.  startup_ns: with iterations, from the first
 * traced event to the first iteration (with no call spans, call_spans 0 as
 * in --python=sample, from the start of the recording); without, the time
 * inside the import machinery (importlib's _find_and_load, outermost
 * calls).  too_short:
 * fewer than RUN_MIN_ITERATIONS steady-state iterations, or less than
 * RUN_MIN_TRACED_NS of traced time (one sampler period at the default
 * 20 Hz: below it no thread state was sampled), of the time inside
 * iterations when the CPU classes judge it (cpu.in_iterations, share_pct
 * at least ISC_ITER_SHARE_MIN_PCT).
 */
#define RUN_MIN_ITERATIONS 5
#define RUN_MIN_TRACED_NS 50000000ull
void isc_ana_emit_run(struct ana *a, cJSON *root, const struct isc_tl_stats *st, uint64_t traced,
		      uint64_t call_spans)
{
	cJSON *r = isc_jb_obj(&a->jb, root, "run");
	bool cut = !st->have_end || st->abrupt;
	const struct ana_exc *x = NULL;
	/* the exception that ended a main thread (tid == pid) wins over a worker thread's */
	for (size_t i = 0; i < a->nexcs; i++)
		if (!x || (a->excs[i].tid == a->excs[i].pid && x->tid != x->pid))
			x = &a->excs[i];
	bool main_exc = x && x->tid == x->pid;
	const char *outcome = cut ? "truncated" : st->signaled ? "killed"
			      : st->exit_status != 0 || main_exc ? "failed" : st->window ? "window" : "completed";
	isc_jb_str(&a->jb, r, "outcome", outcome);
	isc_jb_num_or_null(&a->jb, r, "exit_status", !cut, st->exit_status);
	isc_jb_num_or_null(&a->jb, r, "signal", !cut && st->signaled, st->exit_status - 128);
	if (x) {
		cJSON *e = isc_jb_obj(&a->jb, r, "exception");
		const char *tname = NULL;
		for (size_t i = 0; i < a->nths; i++)
			if (a->ths[i]->pid == x->pid && a->ths[i]->tid == x->tid)
				tname = a->ths[i]->name;
		isc_jb_str(&a->jb, e, "type", x->type);
		isc_jb_str(&a->jb, e, "message", x->msg);
		isc_jb_str(&a->jb, e, "file", x->file);
		isc_jb_num(&a->jb, e, "line", (double)x->line);
		isc_jb_str(&a->jb, e, "function", x->func);
		isc_jb_num(&a->jb, e, "pid", x->pid);
		isc_jb_num(&a->jb, e, "tid", x->tid);
		isc_jb_str(&a->jb, e, "thread", tname);
		isc_jb_bool(&a->jb, e, "main_thread", x->tid == x->pid);
		isc_jb_num(&a->jb, e, "at_ns", (double)x->ts);
	} else {
		isc_jb_str(&a->jb, r, "exception", NULL);
	}
	isc_jb_num(&a->jb, r, "exceptions_total", (double)a->excs_total);
	/* a window's span: from the first agent event it kept */
	uint64_t from = a->first_agent_ts ? a->first_agent_ts : a->first_ts;
	isc_jb_bool(&a->jb, r, "window", st->window);
	isc_jb_num_or_null(&a->jb, r, "window_ns", st->window && a->last_ts > from, (double)(a->last_ts - from));
	uint64_t startup = 0, imports = 0;
	const char *rule;
	for (size_t i = 0; i < a->nfns; i++) {
		const struct isc_tl_string *s = isc_timeline_string_borrow(a->t, a->fns[i].name_id);
		if (s && !strcmp(s->name, "_find_and_load") && strstr(s->file, "importlib._bootstrap"))
			imports += a->fns[i].total_ns;
	}
	if (st->window) {
		rule = "not known: a flight recording lacks the run's start";
	} else if (!call_spans && a->iter_begin_ts && a->iter_begin_ts > a->first_ts) {
		/* no call spans (--python=sample): the first agent event is a scope */
		startup = a->iter_begin_ts - a->first_ts;
		rule = "from the start of the recording to the first iteration (no call spans: --python=sample)";
	} else if (a->iter_begin_ts && a->iter_begin_ts > from) {
		startup = a->iter_begin_ts - from;
		rule = "from the first traced event to the first iteration";
	} else {
		startup = imports;
		rule = "time inside the import machinery (importlib _find_and_load, outermost calls): no iterations";
	}
	isc_jb_num_or_null(&a->jb, r, "startup_ns", !st->window, (double)startup);
	isc_jb_str(&a->jb, r, "startup_rule", rule);
	isc_jb_num(&a->jb, r, "import_ns", (double)imports);
	double samples = (double)a->out.it_samples, count = (double)a->out.it_count;
	char why[160] = "";
	/* the CPU classes judge the iterations when cpu.in_iterations is there: their traced time counts */
	double it_traced = (double)a->out.in_it_traced_ns;
	bool in_it = a->out.in_it && a->out.in_it_share_pct >= ISC_ITER_SHARE_MIN_PCT;
	if (count > 0 && samples < RUN_MIN_ITERATIONS)
		snprintf(why, sizeof(why), "%.0f steady-state iterations (fewer than %d)", samples, RUN_MIN_ITERATIONS);
	else if (in_it && it_traced < (double)RUN_MIN_TRACED_NS)
		snprintf(why, sizeof(why), "%.1f ms of traced time inside iterations (less than %llu ms, one sampler "
			 "period at 20 Hz)", it_traced / 1e6, RUN_MIN_TRACED_NS / 1000000);
	else if (!in_it && traced < RUN_MIN_TRACED_NS)
		snprintf(why, sizeof(why), "%.1f ms of traced time (less than %llu ms, one sampler period at 20 Hz)",
			 (double)traced / 1e6, RUN_MIN_TRACED_NS / 1000000);
	isc_jb_bool(&a->jb, r, "too_short", *why);
	isc_jb_str(&a->jb, r, "too_short_reason", *why ? why : NULL);
}
