/*
 * analyze_devmem.c - device memory: gpu.devices[].memory.
 *
 * Input: the GPU_MEMORY records of device memory, in timeline order.  The
 * same records, each with the site gpu_host.c found for it (the nearest
 * Python function with a source file open on the allocating thread, else
 * its outermost torch op, else its innermost scope), feed the allocation
 * site model (alloc_sites.c, isc_asite_exact): everything said here by
 * site (peak_sites, over_time.sites, leak_candidates) is read from that
 * model's device sites, and this file keeps only each device's totals.
 * Where the records come from decides what "allocated" means
 * (memory.source):
 *   allocator  Kineto [memory] events: tensor allocations of PyTorch's
 *              caching allocator (profile_memory=True)
 *   driver     CUPTI memory records (cudaMalloc / cudaFree...): with
 *              PyTorch these are the caching allocator's segments, i.e.
 *              its reserved memory
 *
 * Pairing a release with its allocation is the site model's
 * (isc_asite_exact): by (process, device, address) when the record has an
 * address; otherwise (older Kineto files carry only Bytes) with the most
 * recent live allocation of the same size on the device.  The GPU pass
 * feeds each record to the model first and hands this file what the
 * model released (isc_asite_paired: the allocation's size and the
 * iteration it was made in, which this file gave it as its tag).  A
 * release with no live allocation (made before the trace) is counted and
 * otherwise ignored: live bytes are the bytes allocated during the trace
 * and not yet released.
 *
 * What was live at the peak, per site: the model's live_peak of the
 * device's sites, whose peak is the device's (every process's), as
 * peak_bytes here.
 *
 * Iterations: an outermost scope ending (ProfilerStep#N, scope("step"))
 * marks the baseline (the least live bytes at an iteration end after the
 * first) and the churn: allocations made between the end of the first and
 * of the last iteration, per iteration, and the share of them released in
 * the iteration that made them.  Leak candidates are not computed here:
 * the same records feed the allocation site model (alloc_sites.c, through
 * isc_asite_exact), whose device sites with leak true they are, so
 * memory.sites[] and gpu_memory_leak read the same numbers.
 *
 * Over time: BUCKETS buckets, 1 ms wide at first, doubling (pairs merged)
 * when the run outgrows them, as analyze_series.c; per device the live
 * bytes at each bucket's end and the highest within it.  The grid is
 * this file's (isc_devmem_bucket): the model keeps each device site's live
 * bytes at the ends of the same buckets (over_time.sites).
 *
 * Allocator totals (isc_devmem_totals): Kineto [memory] events of PyTorch
 * 1.10+ also carry the caching allocator's own "Total Allocated" and
 * "Total Reserved" after the event (memory allocated before the trace
 * included); per device their peaks, their values at the end and, over
 * time, both at each bucket's end and the highest reserved within it.
 * Memory: per device its bucket arrays (the live allocations are the
 * model's).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_devmem.h"

#define NONE ISC_UMAP_NONE
#define BUCKETS ISC_ASITE_BUCKETS
#define MIN_NS 1000000
#define TOP_SITES 10
#define CHART_SITES 5
#define TOP_LEAKS 5
#define UNSET INT64_MIN

struct ddev {
	uint32_t id;
	uint8_t src;
	bool by_size; /* some record had no address */
	int64_t live, peak, peak_ts;
	uint64_t allocs, releases, unmatched, alloc_bytes, cum_allocs, cum_bytes, cum_short;
	uint64_t first_allocs, first_bytes, first_short, last_allocs, last_bytes, last_short; /* at first/last boundary */
	bool have_base;
	int64_t base_min; /* least live bytes at a boundary after the first */
	int64_t ser_end[BUCKETS], ser_max[BUCKETS];
	/* the caching allocator's own totals (Kineto "Total Allocated", "Total Reserved") */
	bool have_tot;
	int64_t ta_max, tr_max, tr_max_ts, ta_at_tr_max, ta_end, tr_end;
	int64_t ta_ser[BUCKETS], tr_ser[BUCKETS], tr_ser_max[BUCKETS]; /* at the bucket's end; highest in it */
	uint64_t failures, failure_bytes;
	int64_t failure_ts;
};

struct isc_devmem {
	struct isc_umap dev_map;
	struct ddev *devs;
	size_t ndevs, devs_cap;
	uint64_t nb;      /* boundaries seen */
	bool started;
	int64_t origin, width, last_bucket;
	uint32_t shift; /* doublings of width */
};

int isc_devmem_new(struct isc_devmem **out)
{
	struct isc_devmem *m = calloc(1, sizeof(*m));
	*out = m;
	if (!m)
		return -ENOMEM;
	m->width = MIN_NS;
	return 0;
}

void isc_devmem_free(struct isc_devmem *m)
{
	if (!m)
		return;
	isc_umap_free(&m->dev_map);
	free(m->devs);
	free(m);
}

static struct ddev *dev_get(struct isc_devmem *m, uint32_t id)
{
	uint32_t *slot;
	if (isc_umap_slot(&m->dev_map, id, &slot))
		return NULL;
	if (*slot != NONE)
		return &m->devs[*slot];
	if (isc_grow(&m->devs, &m->devs_cap, m->ndevs, sizeof(*m->devs)))
		return NULL; /* the key stays NONE: looked up again next time */
	struct ddev *d = &m->devs[m->ndevs];
	memset(d, 0, sizeof(*d));
	d->id = id;
	for (size_t i = 0; i < BUCKETS; i++)
		d->ser_end[i] = d->ser_max[i] = d->ta_ser[i] = d->tr_ser[i] = d->tr_ser_max[i] = UNSET;
	*slot = (uint32_t)m->ndevs++;
	return d;
}

/* Merges pairs of buckets of a series of values at bucket ends (v) and, when x, of highest values. */
static void merge_pairs(int64_t *v, int64_t *x)
{
	for (size_t b = 0; b < BUCKETS / 2; b++) {
		v[b] = v[2 * b + 1] != UNSET ? v[2 * b + 1] : v[2 * b];
		if (x)
			x[b] = x[2 * b + 1] > x[2 * b] ? x[2 * b + 1] : x[2 * b];
	}
	for (size_t b = BUCKETS / 2; b < BUCKETS; b++) {
		v[b] = UNSET;
		if (x)
			x[b] = UNSET;
	}
}

/* Bucket of ts, doubling the width (merging pairs) until it fits. */
static size_t bucket(struct isc_devmem *m, int64_t ts)
{
	if (!m->started) {
		m->started = true;
		m->origin = ts;
	}
	if (ts < m->origin)
		ts = m->origin;
	while ((ts - m->origin) / m->width >= BUCKETS) {
		for (size_t i = 0; i < m->ndevs; i++) {
			struct ddev *d = &m->devs[i];
			merge_pairs(d->ser_end, d->ser_max);
			merge_pairs(d->ta_ser, NULL);
			merge_pairs(d->tr_ser, d->tr_ser_max);
		}
		m->width *= 2;
		m->shift++;
	}
	size_t b = (size_t)((ts - m->origin) / m->width);
	if ((int64_t)b > m->last_bucket)
		m->last_bucket = (int64_t)b;
	return b;
}

uint32_t isc_devmem_bucket(struct isc_devmem *m, int64_t ts, uint32_t *shift)
{
	uint32_t b = (uint32_t)bucket(m, ts);
	*shift = m->shift;
	return b;
}

static void dev_change(struct ddev *d, int64_t delta, int64_t ts, size_t b)
{
	d->live += delta;
	if (d->live > d->peak) {
		d->peak = d->live;
		d->peak_ts = ts;
	}
	d->ser_end[b] = d->live;
	if (d->live > d->ser_max[b])
		d->ser_max[b] = d->live;
}

uint64_t isc_devmem_iteration(const struct isc_devmem *m)
{
	return m->nb;
}

/* A live allocation of bytes made in iteration iter (isc_devmem_iteration then) released at ts, bucket b. */
static void release(struct isc_devmem *m, struct ddev *d, uint64_t bytes, uint64_t iter, int64_t ts, size_t b)
{
	if (iter == m->nb && m->nb >= 1)
		d->cum_short++;
	dev_change(d, -(int64_t)bytes, ts, b);
}

int isc_devmem_event(struct isc_devmem *m, int64_t ts, uint32_t device, bool alloc, uint64_t bytes, bool by_size,
		     const struct isc_asite_paired *paired, enum isc_dm_source src)
{
	struct ddev *d = dev_get(m, device);
	if (!d)
		return -ENOMEM;
	if (bytes > INT64_MAX / 4 || paired->size > INT64_MAX / 4)
		return 0; /* not a real size: would overflow the sums */
	if (!d->src)
		d->src = (uint8_t)src;
	size_t b = bucket(m, ts);
	if (by_size)
		d->by_size = true;
	if (!alloc)
		d->releases++;
	if (paired->released) /* a release, or an allocation at a live address (its release was lost) */
		release(m, d, paired->size, paired->tag, ts, b);
	else if (!alloc)
		d->unmatched++;
	if (!alloc)
		return 0;
	d->allocs++;
	d->alloc_bytes += bytes;
	d->cum_allocs++;
	d->cum_bytes += bytes;
	dev_change(d, (int64_t)bytes, ts, b);
	return 0;
}

int isc_devmem_totals(struct isc_devmem *m, int64_t ts, uint32_t device, uint64_t allocated, uint64_t reserved)
{
	struct ddev *d = dev_get(m, device);
	if (!d)
		return -ENOMEM;
	if (allocated > INT64_MAX / 4 || reserved > INT64_MAX / 4)
		return 0; /* not a real size */
	int64_t ta = (int64_t)allocated, tr = (int64_t)reserved;
	size_t b = bucket(m, ts);
	if (!d->have_tot || ta > d->ta_max)
		d->ta_max = ta;
	if (!d->have_tot || tr > d->tr_max) {
		d->tr_max = tr;
		d->tr_max_ts = ts;
		d->ta_at_tr_max = ta;
	}
	d->have_tot = true;
	d->ta_end = ta;
	d->tr_end = tr;
	d->ta_ser[b] = ta;
	d->tr_ser[b] = tr;
	if (tr > d->tr_ser_max[b])
		d->tr_ser_max[b] = tr;
	return 0;
}

int isc_devmem_boundary(struct isc_devmem *m, int64_t ts)
{
	(void)ts;
	if (!m->ndevs)
		return 0; /* iterations before the first allocation do not count */
	m->nb++;
	for (size_t i = 0; i < m->ndevs; i++) {
		struct ddev *d = &m->devs[i];
		if (m->nb == 1) {
			d->first_allocs = d->cum_allocs;
			d->first_bytes = d->cum_bytes;
			d->first_short = d->cum_short;
		} else if (!d->have_base || d->live < d->base_min) {
			d->have_base = true;
			d->base_min = d->live;
		}
		d->last_allocs = d->cum_allocs;
		d->last_bytes = d->cum_bytes;
		d->last_short = d->cum_short;
	}
	return 0;
}

void isc_devmem_failure(struct isc_devmem *m, int64_t ts, uint32_t device, uint64_t bytes)
{
	struct ddev *d = dev_get(m, device);
	if (d) {
		d->failures++;
		d->failure_bytes = bytes;
		d->failure_ts = ts;
	}
}

bool isc_devmem_has(const struct isc_devmem *m, uint32_t device)
{
	return isc_umap_get(&m->dev_map, device) != NONE;
}

uint64_t isc_devmem_live_total(const struct isc_devmem *m, bool *have)
{
	uint64_t live = 0;
	for (size_t i = 0; i < m->ndevs; i++)
		live += m->devs[i].live;
	*have = m->ndevs > 0;
	return live;
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	return a < b ? -1 : a > b;
}

size_t isc_devmem_devices(const struct isc_devmem *m, uint32_t *ids, size_t max)
{
	size_t n = 0;
	for (size_t i = 0; i < m->ndevs; i++)
		if (n < max)
			ids[n++] = m->devs[i].id;
	if (n > 1)
		qsort(ids, n, sizeof(*ids), cmp_u32);
	return m->ndevs;
}

/* ---- output ----------------------------------------------------------------------------------- */
static const char *kind_name(uint8_t k)
{
	switch (k) {
	case ISC_DM_PYTHON: return "python";
	case ISC_DM_OP: return "op";
	case ISC_DM_SCOPE: return "scope";
	default: return "unknown";
	}
}

/* name, file, line and kind of a site. */
static void emit_site(struct isc_jb *jb, cJSON *o, uint8_t kind, uint32_t name_id, const struct isc_timeline *t)
{
	const struct isc_tl_string *s = kind == ISC_DM_NONE ? NULL : isc_timeline_string_borrow(t, name_id);
	isc_jb_str(jb, o, "name", s ? s->name : "(no site: no Python function, op or scope open)");
	isc_jb_str(jb, o, "file", s ? s->file : "");
	isc_jb_num(jb, o, "line", s ? s->line : 0);
	isc_jb_str(jb, o, "kind", kind_name(kind));
}

/* A device site of the model at the device's peak: by bytes, then in the order the sites were first seen. */
struct rank {
	const struct isc_asite_stats *s;
	int64_t v;
};

static int cmp_rank(const void *x, const void *y)
{
	const struct rank *a = x, *b = y;
	if (a->v != b->v)
		return a->v > b->v ? -1 : 1;
	return a->s->id < b->s->id ? -1 : a->s->id > b->s->id;
}

/* A device site of the site model: its kind as emit_site's. */
static uint8_t asite_kind(const struct isc_asite_stats *s)
{
	switch (s->what) {
	case ISC_ASITE_OP: return ISC_DM_OP;
	case ISC_ASITE_SCOPE: return ISC_DM_SCOPE;
	case ISC_ASITE_STACK: return s->depth ? ISC_DM_PYTHON : ISC_DM_NONE;
	default: return ISC_DM_NONE;
	}
}

static void emit_over_time(const struct isc_devmem *m, struct isc_jb *jb, cJSON *mem, const struct ddev *d,
			   const struct rank *top, size_t ntop, int64_t start_ns, const struct isc_timeline *t,
			   const struct isc_asite_model *model)
{
	cJSON *ot = isc_jb_obj(jb, mem, "over_time");
	size_t nb = m->started ? (size_t)m->last_bucket + 1 : 0;
	isc_jb_num(jb, ot, "start_ns", (double)(m->origin > start_ns ? m->origin - start_ns : 0));
	isc_jb_num(jb, ot, "bucket_ns", (double)m->width);
	cJSON *al = isc_jb_arr(jb, ot, "allocated_bytes"), *mx = isc_jb_arr(jb, ot, "allocated_max_bytes");
	int64_t cur = 0;
	for (size_t b = 0; b < nb; b++) {
		if (d->ser_end[b] != UNSET)
			cur = d->ser_end[b];
		isc_jb_push_num(jb, al, (double)cur);
		isc_jb_push_num(jb, mx, (double)(d->ser_max[b] != UNSET ? d->ser_max[b] : cur));
	}
	/* the allocator's totals: null without them; before the first, 0 */
	cJSON *ta = d->have_tot ? isc_jb_arr(jb, ot, "total_allocated_bytes") : NULL;
	cJSON *tr = d->have_tot ? isc_jb_arr(jb, ot, "reserved_bytes") : NULL;
	cJSON *trx = d->have_tot ? isc_jb_arr(jb, ot, "reserved_max_bytes") : NULL;
	if (!d->have_tot) {
		isc_jb_chk(jb, cJSON_AddNullToObject(ot, "total_allocated_bytes"));
		isc_jb_chk(jb, cJSON_AddNullToObject(ot, "reserved_bytes"));
		isc_jb_chk(jb, cJSON_AddNullToObject(ot, "reserved_max_bytes"));
	}
	int64_t ca = 0, cr = 0;
	for (size_t b = 0; b < nb && d->have_tot; b++) {
		if (d->ta_ser[b] != UNSET)
			ca = d->ta_ser[b];
		if (d->tr_ser[b] != UNSET)
			cr = d->tr_ser[b];
		isc_jb_push_num(jb, ta, (double)ca);
		isc_jb_push_num(jb, tr, (double)cr);
		isc_jb_push_num(jb, trx, (double)(d->tr_ser_max[b] != UNSET ? d->tr_ser_max[b] : cr));
	}
	cJSON *ss = isc_jb_arr(jb, ot, "sites");
	int64_t ser[BUCKETS];
	for (size_t i = 0; i < ntop && i < CHART_SITES; i++) {
		const struct isc_asite_stats *s = top[i].s;
		cJSON *o = isc_jb_push_obj(jb, ss);
		emit_site(jb, o, asite_kind(s), s->depth ? s->frames[0] : 0, t);
		cJSON *v = isc_jb_arr(jb, o, "bytes");
		isc_asite_series(model, s->id, m->shift, ser, nb);
		for (size_t b = 0; b < nb; b++)
			isc_jb_push_num(jb, v, (double)ser[b]);
	}
}

void isc_devmem_emit(const struct isc_devmem *m, struct isc_jb *jb, cJSON *dev, uint32_t device, uint64_t total_bytes,
		     int64_t start_ns, const struct isc_timeline *t, const struct isc_asite_model *model)
{
	const struct isc_asite_stats *sites = NULL;
	size_t nsites = 0;
	if (model)
		isc_asite_last(model, &sites, &nsites);
	uint32_t di = isc_umap_get(&m->dev_map, device);
	if (di == NONE) {
		isc_jb_chk(jb, cJSON_AddNullToObject(dev, "memory"));
		return;
	}
	const struct ddev *d = &m->devs[di];
	cJSON *mem = isc_jb_obj(jb, dev, "memory");
	isc_jb_str(jb, mem, "source", d->src == ISC_DM_SRC_DRIVER ? "driver" : "allocator");
	isc_jb_str(jb, mem, "pairing", d->by_size ? "size" : "address");
	isc_jb_num(jb, mem, "allocations", (double)d->allocs);
	isc_jb_num(jb, mem, "releases", (double)d->releases);
	isc_jb_num(jb, mem, "releases_unmatched", (double)d->unmatched);
	isc_jb_num(jb, mem, "allocated_bytes_total", (double)d->alloc_bytes);
	isc_jb_num(jb, mem, "peak_bytes", (double)d->peak);
	isc_jb_num(jb, mem, "peak_ns", (double)(d->peak_ts > start_ns ? d->peak_ts - start_ns : 0));
	isc_jb_num(jb, mem, "end_bytes", (double)d->live);
	isc_jb_num_or_null(jb, mem, "total_bytes", total_bytes > 0, (double)total_bytes);
	bool hr = total_bytes > 0;
	isc_jb_num_or_null(jb, mem, "headroom_bytes", hr, hr ? (double)total_bytes - (double)d->peak : 0);
	isc_jb_num_or_null(jb, mem, "headroom_pct", hr,
			   hr ? (double)((int64_t)(10000.0 * ((double)total_bytes - (double)d->peak) / (double)total_bytes)) / 100
			      : 0);
	isc_jb_num_or_null(jb, mem, "baseline_bytes", d->have_base, (double)d->base_min);
	if (d->have_tot) {
		cJSON *al = isc_jb_obj(jb, mem, "allocator");
		isc_jb_num(jb, al, "allocated_peak_bytes", (double)d->ta_max);
		isc_jb_num(jb, al, "reserved_peak_bytes", (double)d->tr_max);
		isc_jb_num(jb, al, "reserved_peak_ns", (double)(d->tr_max_ts > start_ns ? d->tr_max_ts - start_ns : 0));
		isc_jb_num(jb, al, "allocated_at_reserved_peak_bytes", (double)d->ta_at_tr_max);
		isc_jb_num(jb, al, "allocated_end_bytes", (double)d->ta_end);
		isc_jb_num(jb, al, "reserved_end_bytes", (double)d->tr_end);
	} else {
		isc_jb_chk(jb, cJSON_AddNullToObject(mem, "allocator"));
	}

	/* peak_sites: what was live at the peak, the model's device sites (their peak is the device's) */
	struct rank *r = calloc(nsites ? nsites : 1, sizeof(*r));
	if (!r) {
		jb->oom = true;
		return;
	}
	size_t n = 0;
	for (size_t i = 0; i < nsites; i++)
		if (sites[i].device_mem && sites[i].device == device && sites[i].live_peak > 0)
			r[n++] = (struct rank){ &sites[i], (int64_t)sites[i].live_peak };
	if (n > 1)
		qsort(r, n, sizeof(*r), cmp_rank);
	cJSON *ps = isc_jb_arr(jb, mem, "peak_sites");
	int64_t other = 0;
	for (size_t i = 0; i < n; i++) {
		const struct isc_asite_stats *s = r[i].s;
		if (i >= TOP_SITES) {
			other += r[i].v;
			continue;
		}
		cJSON *o = isc_jb_push_obj(jb, ps);
		emit_site(jb, o, asite_kind(s), s->depth ? s->frames[0] : 0, t);
		isc_jb_num(jb, o, "bytes", (double)r[i].v);
		isc_jb_num(jb, o, "pct_of_peak", d->peak > 0 ? (double)(int64_t)(10000.0 * (double)r[i].v / (double)d->peak) / 100 : 0);
		isc_jb_num(jb, o, "allocations", (double)s->alloc_count);
	}
	isc_jb_num(jb, mem, "peak_sites_other_bytes", (double)other);
	emit_over_time(m, jb, mem, d, r, n, start_ns, t, model);

	free(r);

	/* leak candidates: the site model's (ranked by retained bytes), exact */
	cJSON *lk = isc_jb_arr(jb, mem, "leak_candidates");
	for (size_t i = 0, k = 0; i < nsites && k < TOP_LEAKS; i++) {
		const struct isc_asite_stats *s = &sites[i];
		if (!s->device_mem || s->device != device || !s->leak || !s->intervals)
			continue;
		k++;
		cJSON *o = isc_jb_push_obj(jb, lk);
		emit_site(jb, o, asite_kind(s), s->depth ? s->frames[0] : 0, t);
		isc_jb_num(jb, o, "growth_bytes", s->retained);
		isc_jb_num(jb, o, "iterations", s->intervals);
		isc_jb_num(jb, o, "bytes_per_iteration", floor(s->retained / s->intervals));
		isc_jb_num(jb, o, "live_bytes_end", s->live_end);
	}

	/* churn between the end of the first and of the last iteration */
	cJSON *ch = isc_jb_obj(jb, mem, "churn");
	uint64_t it = m->nb >= 2 ? m->nb - 1 : 0, na = d->last_allocs - d->first_allocs;
	isc_jb_num(jb, ch, "iterations", (double)it);
	isc_jb_num_or_null(jb, ch, "allocations_per_iteration", it > 0, it ? (double)na / (double)it : 0);
	isc_jb_num_or_null(jb, ch, "bytes_per_iteration", it > 0,
			   it ? (double)(uint64_t)((double)(d->last_bytes - d->first_bytes) / (double)it) : 0);
	isc_jb_num_or_null(jb, ch, "short_lived_pct", it > 0 && na > 0,
			   na ? (double)(int64_t)(10000.0 * (double)(d->last_short - d->first_short) / (double)na) / 100 : 0);

	cJSON *fl = isc_jb_obj(jb, mem, "failures");
	isc_jb_num(jb, fl, "count", (double)d->failures);
	isc_jb_num_or_null(jb, fl, "last_bytes", d->failure_bytes > 0, (double)d->failure_bytes); /* 0: not recorded */
	isc_jb_num_or_null(jb, fl, "last_ns", d->failures > 0,
			   (double)(d->failure_ts > start_ns ? d->failure_ts - start_ns : 0));
}
