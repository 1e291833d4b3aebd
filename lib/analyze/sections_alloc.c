/*
 * sections_alloc.c - where the memory went, from the allocation sampler's
 * records (issue 25): the site model (alloc_sites.c), fed during the pass
 * by analyze.c, written into the memory section and handed to the oom
 * section.
 *
 *   memory.sampling           the sampler: interval, samples, what could
 *                             not be attributed
 *   memory.sites[]            live bytes by site (process, innermost
 *                             Python line), ranked by retained bytes, each
 *                             estimate with its standard error; with the
 *                             device memory sites the GPU pass fed
 *                             (memory "device", exact: no error)
 *   memory.growth_sites[]     the sites that retained bytes (replaces the
 *                             RSS-tick attribution when there are samples)
 *   memory.peak_composition   which sites held the RSS peak
 *   oom.growth_before.top     the sites of a process at its death
 *                             (isc_ana_oom_sites, for analyze_oom.c);
 *                             a failed device allocation's device sites
 *                             (isc_ana_oom_device_sites)
 *
 * Steady state per process: the boundaries of the iteration scope
 * (isc_ana_emit_iterations names them in a->asteady: its warm-up's end,
 * then each complete steady-state iteration's end); a process without
 * iterations has none, and its retained bytes are its live bytes at the
 * end.  Nothing is written without allocation records, so documents of
 * recordings without the sampler keep their old shape; with device memory
 * records (addressed) and no sampler, memory.sites alone.  The sampling
 * counts, growth_sites, peak_composition and the OOM killer's sites are
 * host memory only.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_oom.h"  /* struct isc_oom_sites */
#include "sections.h"

#define SITES_MAX 20       /* memory.sites, of each memory kind (host, device) */
#define STACK_MAX 8        /* frames of a site's stack written */
#define GROWTH_MAX 5       /* memory.growth_sites */
#define PEAK_SITES_MAX 10  /* memory.peak_composition.sites */

static const char NO_STACK[] = "(no Python stack)";
static const char NO_DEVICE_SITE[] = "(no site: no Python function, op or scope open)"; /* analyze_devmem.c's */

/* An estimate, rounded to a byte, never negative. */
static double bytes(double v)
{
	return v > 0 ? round(v) : 0;
}

/* The innermost frame of a site: name and file of its code object, the line it was executing. */
static void site_loc(struct ana *a, const struct isc_asite_stats *s, const char **name, const char **file,
		     uint32_t *line)
{
	const struct isc_tl_string *f = s->depth ? isc_timeline_string_borrow(a->t, s->frames[0]) : NULL;
	*name = s->depth ? (f ? f->name : "?") : s->what == ISC_ASITE_UNKNOWN ? NO_DEVICE_SITE : NO_STACK;
	*file = f ? f->file : "";
	*line = s->depth ? s->frames[1] : 0;
}

/* pid, name, file, line of site s into o. */
static void put_site(struct ana *a, cJSON *o, const struct isc_asite_stats *s)
{
	const char *name, *file;
	uint32_t line;
	site_loc(a, s, &name, &file, &line);
	isc_jb_num(&a->jb, o, "pid", s->pid);
	isc_ana_jloc(a, o, name, file, line);
}

/* Bytes allocated per second: over the steady state, else over the process's allocation records. */
static bool alloc_rate(const struct isc_asite_stats *s, double *rate)
{
	if (s->intervals && s->steady_ns) {
		*rate = s->alloc_steady / ((double)s->steady_ns / 1e9);
		return true;
	}
	if (s->last_ts > s->first_ts) {
		*rate = s->alloc_bytes / ((double)(s->last_ts - s->first_ts) / 1e9);
		return true;
	}
	return false;
}

/* What the site names: python or native (host), python, op, scope or unknown (device). */
static const char *site_kind(const struct isc_asite_stats *s)
{
	switch (s->what) {
	case ISC_ASITE_OP: return "op";
	case ISC_ASITE_SCOPE: return "scope";
	case ISC_ASITE_UNKNOWN: return "unknown";
	default: return s->depth ? "python" : "native";
	}
}

static void emit_sites(struct ana *a, cJSON *m, const struct isc_asite_stats *o, size_t n)
{
	cJSON *arr = isc_jb_arr(&a->jb, m, "sites");
	size_t shown[2] = { 0, 0 }; /* host, device: device sites do not push host ones out */
	for (size_t i = 0; i < n; i++) {
		const struct isc_asite_stats *s = &o[i];
		if (s->device_mem && !s->alloc_count)
			continue; /* a device site whose allocations all failed (a CUDA out of memory's): nothing held */
		if (shown[s->device_mem]++ >= SITES_MAX)
			continue;
		cJSON *x = isc_jb_push_obj(&a->jb, arr);
		if (!x)
			return;
		put_site(a, x, s);
		isc_jb_str(&a->jb, x, "kind", site_kind(s));
		isc_jb_str(&a->jb, x, "memory", s->device_mem ? "device" : "host");
		isc_jb_num_or_null(&a->jb, x, "device", s->device_mem, s->device);
		cJSON *st = isc_jb_arr(&a->jb, x, "stack");
		for (uint32_t k = 0; s->what == ISC_ASITE_STACK && k < s->depth && k < STACK_MAX; k++) {
			const struct isc_tl_string *f = isc_timeline_string_borrow(a->t, s->frames[2 * k]);
			isc_ana_jloc(a, isc_jb_push_obj(&a->jb, st), f ? f->name : "?", f ? f->file : "", s->frames[2 * k + 1]);
		}
		isc_jb_num(&a->jb, x, "samples", (double)s->alloc_count);
		isc_jb_num(&a->jb, x, "allocations", round(s->objects));
		isc_jb_num(&a->jb, x, "allocated_bytes", bytes(s->alloc_bytes));
		isc_jb_num(&a->jb, x, "allocated_err_bytes", bytes(s->alloc_err));
		isc_jb_num(&a->jb, x, "freed_bytes", bytes(s->freed_bytes));
		isc_jb_num(&a->jb, x, "freed_err_bytes", bytes(s->freed_err));
		isc_jb_num(&a->jb, x, "live_peak_bytes", bytes(s->live_peak));
		isc_jb_num(&a->jb, x, "live_peak_err_bytes", bytes(s->live_peak_err));
		isc_jb_num(&a->jb, x, "live_end_bytes", bytes(s->live_end));
		isc_jb_num(&a->jb, x, "live_end_err_bytes", bytes(s->live_end_err));
		isc_jb_num(&a->jb, x, "retained_bytes", bytes(s->retained));
		isc_jb_num(&a->jb, x, "retained_err_bytes", bytes(s->retained_err));
		isc_jb_num(&a->jb, x, "iterations", s->intervals);
		bool it = s->intervals >= 1;
		isc_jb_num_or_null(&a->jb, x, "growth_per_iteration_bytes", it, round(s->slope_per_iter));
		isc_jb_num_or_null(&a->jb, x, "growth_per_iteration_err_bytes", it && s->intervals >= 2, bytes(s->slope_err));
		isc_jb_num_or_null(&a->jb, x, "growth_bytes_per_s", it && s->steady_ns, round(s->slope_per_s));
		isc_jb_num_or_null(&a->jb, x, "allocated_per_iteration_bytes", it, it ? bytes(s->alloc_steady / s->intervals) : 0);
		double rate = 0;
		bool have = alloc_rate(s, &rate);
		isc_jb_num_or_null(&a->jb, x, "allocation_rate_bytes_per_s", have, bytes(rate));
		isc_jb_bool(&a->jb, x, "leak", s->leak);
		isc_jb_num_or_null(&a->jb, x, "leak_per_iteration_bytes", s->leak, bytes(s->leak_per_iter));
		isc_jb_num_or_null(&a->jb, x, "leak_bytes_per_s", s->leak && s->steady_ns,
				   s->steady_ns ? bytes(s->retained / ((double)s->steady_ns / 1e9)) : 0);
		isc_jb_num_or_null(&a->jb, x, "leak_window", s->leak, s->leak_window);
		isc_jb_bool(&a->jb, x, "from_table", s->from_table);
	}
}

/* memory.growth_sites from the samples: the sites that retained bytes (above twice the error), ranked. */
static void emit_growth(struct ana *a, cJSON *m, const struct isc_asite_stats *o, size_t n)
{
	cJSON *arr = isc_jb_arr(&a->jb, m, "growth_sites");
	for (size_t i = 0, k = 0; i < n && k < GROWTH_MAX; i++) {
		const struct isc_asite_stats *s = &o[i];
		if (s->device_mem || !(s->retained > 0 && s->retained > 2 * s->retained_err))
			continue; /* host memory only */
		const char *name, *file;
		uint32_t line;
		site_loc(a, s, &name, &file, &line);
		cJSON *x = isc_jb_push_obj(&a->jb, arr);
		if (!x)
			return;
		k++;
		isc_ana_jloc(a, x, name, file, line);
		isc_jb_str(&a->jb, x, "kind", s->depth ? "python" : "native");
		isc_jb_str(&a->jb, x, "scope", NULL);
		isc_jb_num(&a->jb, x, "bytes", bytes(s->retained));
		isc_jb_num(&a->jb, x, "bytes_err", bytes(s->retained_err));
		isc_jb_bool(&a->jb, x, "leak", s->leak);
		isc_jb_num(&a->jb, x, "pid", s->pid);
	}
	isc_jb_str(&a->jb, m, "growth_sites_source", "allocation_samples");
}

static int by_snap(const void *x, const void *y)
{
	const struct isc_asite_stats *p = *(const struct isc_asite_stats *const *)x;
	const struct isc_asite_stats *q = *(const struct isc_asite_stats *const *)y;
	if (p->live_snap != q->live_snap)
		return p->live_snap > q->live_snap ? -1 : 1;
	return p < q ? -1 : p > q;
}

/* memory.peak_composition: what the sampled sites held at the RSS peak (the model's snapshot). */
static int emit_peak(struct ana *a, cJSON *m, const struct isc_asite_stats *o, size_t n)
{
	if (!a->have_rss || !a->rss_peak_ts)
		return 0;
	const struct isc_asite_stats **v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	double live = 0, var = 0, rss = (double)a->rss_total_peak, shown = 0;
	size_t nv = 0;
	for (size_t i = 0; i < n; i++) {
		if (o[i].device_mem)
			continue; /* the RSS peak: host memory */
		v[nv++] = &o[i];
		live += o[i].live_snap;
		var += o[i].live_snap_err * o[i].live_snap_err;
	}
	n = nv;
	qsort(v, n, sizeof(*v), by_snap);
	cJSON *p = isc_jb_obj(&a->jb, m, "peak_composition");
	isc_jb_num(&a->jb, p, "at_ns", (double)(a->rss_peak_ts > a->first_ts ? a->rss_peak_ts - a->first_ts : 0));
	isc_jb_num(&a->jb, p, "rss_bytes", rss);
	isc_jb_num(&a->jb, p, "sampled_live_bytes", bytes(live));
	isc_jb_num(&a->jb, p, "sampled_live_err_bytes", bytes(sqrt(var)));
	isc_jb_num(&a->jb, p, "unattributed_bytes", bytes(rss - live));
	cJSON *arr = isc_jb_arr(&a->jb, p, "sites");
	for (size_t i = 0; i < n && i < PEAK_SITES_MAX && v[i]->live_snap > 0; i++) {
		cJSON *x = isc_jb_push_obj(&a->jb, arr);
		if (!x)
			break;
		put_site(a, x, v[i]);
		isc_jb_num(&a->jb, x, "live_bytes", bytes(v[i]->live_snap));
		isc_jb_num(&a->jb, x, "live_err_bytes", bytes(v[i]->live_snap_err));
		isc_jb_num(&a->jb, x, "pct_of_rss", rss > 0 ? round(1e4 * v[i]->live_snap / rss) / 100 : 0);
		shown += v[i]->live_snap;
	}
	isc_jb_num(&a->jb, p, "other_sites_bytes", bytes(live - shown));
	free(v);
	return 0;
}

int isc_ana_emit_alloc(struct ana *a, cJSON *m, bool *growth)
{
	const struct isc_asite_stats *o;
	size_t n;
	*growth = false;
	if (!a->alloc_records && !isc_asite_has_device(a->asites))
		return 0;
	if (isc_asite_report_steady(a->asites, a->asteady, a->nasteady, &o, &n))
		return -ENOMEM;
	if (!a->alloc_records) { /* device memory only */
		emit_sites(a, m, o, n);
		return 0;
	}
	struct isc_asite_gaps g;
	isc_asite_gaps(a->asites, &g);
	uint64_t samples = 0, nhost = 0;
	for (size_t i = 0; i < n; i++)
		if (!o[i].device_mem) {
			samples += o[i].alloc_count;
			nhost++;
		}
	cJSON *sm = isc_jb_obj(&a->jb, m, "sampling");
	isc_jb_num_or_null(&a->jb, sm, "interval_bytes", g.interval > 0, (double)g.interval);
	isc_jb_num(&a->jb, sm, "samples", (double)samples);
	isc_jb_num(&a->jb, sm, "sites", (double)nhost);
	isc_jb_num(&a->jb, sm, "unmatched_releases", (double)g.unmatched_frees);
	isc_jb_num(&a->jb, sm, "untracked_samples", (double)g.untracked);
	isc_jb_num(&a->jb, sm, "bad_records", (double)g.bad_records);
	emit_sites(a, m, o, n);
	if (samples) {
		emit_growth(a, m, o, n);
		*growth = true;
	} else {
		isc_jb_str(&a->jb, m, "growth_sites_source", "rss_samples");
	}
	return nhost ? emit_peak(a, m, o, n) : 0;
}

void isc_ana_oom_sites(struct ana *a, uint32_t pid, uint64_t ts, struct isc_oom_sites *out)
{
	struct isc_asite_death d[ISC_OOM_SITES_MAX];
	const struct isc_asite_stats *o;
	size_t n;
	memset(out, 0, sizeof(*out));
	if (!a->alloc_records || isc_asite_report_steady(a->asites, a->asteady, a->nasteady, &o, &n))
		return;
	size_t k = isc_asite_death(a->asites, pid, ts, ISC_ASITE_DEATH_WINDOW_NS, d, ISC_OOM_SITES_MAX);
	out->window_ns = ISC_ASITE_DEATH_WINDOW_NS;
	for (size_t i = 0; i < k; i++) {
		struct isc_oom_site *x = &out->top[out->n];
		const struct isc_asite_stats *s = &o[d[i].index];
		if (!(d[i].live > 0) && !d[i].growing)
			continue; /* holds nothing */
		site_loc(a, s, &x->name, &x->file, &x->line);
		x->live = bytes(d[i].live);
		x->live_err = bytes(d[i].live_err);
		x->growth = d[i].growth;
		x->growing = d[i].growing;
		out->n++;
	}
	out->sampled = k > 0;
}

int isc_ana_oom_device_sites(struct ana *a, struct isc_oom_gpu *g)
{
	const struct isc_asite_stats *o, *pick[ISC_OOM_SITES_MAX];
	struct isc_asite_failure f;
	size_t n, k = 0;
	if (!(g->have && isc_asite_last_failure(a->asites, &f)) &&
	    !(g->at_exception && isc_asite_exception_failure(a->asites, &f)))
		return 0;
	if (isc_asite_report_steady(a->asites, a->asteady, a->nasteady, &o, &n))
		return -ENOMEM;
	g->fail_live_bytes = f.device_live;
	for (size_t i = 0; i < n; i++) { /* the first ISC_OOM_SITES_MAX by live_fail, stable */
		if (!o[i].device_mem || o[i].device != f.device || !(o[i].live_fail > 0))
			continue;
		size_t j = k < ISC_OOM_SITES_MAX ? k++ : ISC_OOM_SITES_MAX;
		for (; j > 0 && pick[j - 1]->live_fail < o[i].live_fail; j--)
			if (j < ISC_OOM_SITES_MAX)
				pick[j] = pick[j - 1];
		if (j < ISC_OOM_SITES_MAX)
			pick[j] = &o[i];
	}
	for (size_t i = 0; i < k; i++) {
		struct isc_oom_dsite *x = &g->sites[i];
		site_loc(a, pick[i], &x->name, &x->file, &x->line);
		x->pid = pick[i]->pid;
		x->kind = site_kind(pick[i]);
		x->live = (uint64_t)bytes(pick[i]->live_fail);
	}
	g->nsites = k;
	return 0;
}
