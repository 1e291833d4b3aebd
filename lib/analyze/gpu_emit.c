/*
 * gpu_emit.c - gpu.* of the findings document, written once at the end of
 * the pass from the state the other GPU files left (gpu_internal.h); the
 * statistics are those of one accumulator (every op, or the ops
 * --hta-compat's step rule kept).  Rows of the same name under several
 * string ids (one per process) are merged, then ranked:
 *
 *   gpu        mode, step_rule, profiler_steps, rank, world_size, ops
 *   ├ devices[]  busy, temporal_breakdown, memory (analyze_devmem.c),
 *   │            streams[] (idle_breakdown, queue_length),
 *   │            host_during_idle (the TOP_HOST ops and Python functions)
 *   ├ kernels    the fewest by total time that cover 80 % (TOP_KERNELS_MAX
 *   │            at most), then the others summed
 *   ├ launch     launch delay quantiles, launch counts and times
 *   ├ memcpy[]   per kind, direction and memories, with its top call site
 *   ├ sync       sync ops and calls by name, the TOP_SITES call sites
 *   ├ gaps       the longest device gaps
 *   ├ nvml[]     per NVML device with samples
 *   └ in_iterations  the same inside the steady-state iterations of the
 *                iteration scope (gpu_iter.c), null without 2 of them:
 *                devices[] (the windows' breakdown, the streams of the ops
 *                launched inside, host_during_idle of the spans begun
 *                inside), kernels, launch, memcpy, sync, gaps, nvml
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc_jbuild.h"
#include "gpu_internal.h"

#define TOP_KERNELS_MAX 50
#define TOP_HOST 10
#define TOP_SITES 5

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
	return a < b ? -1 : a > b;
}

/*
 * Quantile p of sorted x[0..n) by linear interpolation between order
 * statistics (numpy's default; p = 0.5 is the median as pandas gives it,
 * which HTA reports), rounded to 0.01 ns.
 */
static double quantile_lin(const int64_t *x, size_t n, double p)
{
	double h = (double)(n - 1) * p;
	size_t lo = (size_t)floor(h);
	if (lo + 1 >= n)
		return (double)x[n - 1];
	return round(100 * ((double)x[lo] + (h - (double)lo) * (double)(x[lo + 1] - x[lo]))) / 100;
}

/* The writer: the pass's state and the document builder. */
struct out {
	struct isc_gpu_ana *g;
	struct isc_jb jb; /* strings lose control characters too */
};

static double pct2(int64_t part, int64_t whole)
{
	return whole > 0 ? round(10000.0 * (double)part / (double)whole) / 100 : 0;
}

static const char *dev_name(const struct isc_gpu_ana *g, uint32_t id)
{
	uint32_t i = isc_umap_get(&g->dname_map, id);
	return i == ISC_UMAP_NONE ? NULL : g->dd[i].name;
}

static int cmp_dev(const void *x, const void *y)
{
	const struct gpu_dev *a = x, *b = y;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int cmp_stream(const void *x, const void *y)
{
	const struct gpu_stream *a = *(struct gpu_stream *const *)x, *b = *(struct gpu_stream *const *)y;
	if (a->device != b->device)
		return a->device < b->device ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* Rows merged by name: one kernel or function under several string ids counts once. */
struct row {
	const char *name, *file;
	uint32_t line;
	uint8_t kind;
	uint64_t count;
	int64_t total, min, max, self;
};

static int row_by_identity(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	int c;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if ((c = strcmp(a->name, b->name)) || (c = strcmp(a->file, b->file)))
		return c;
	return a->line < b->line ? -1 : a->line > b->line;
}

static int row_by_total(const void *x, const void *y)
{
	const struct row *a = x, *b = y;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return row_by_identity(x, y);
}

/*
 * Sorts a[0..n) (elements of sz bytes) by identity same, merges equal
 * neighbours with add(into, from), then sorts by order; returns the new count.
 */
static size_t merge_by(void *a, size_t n, size_t sz, int (*same)(const void *, const void *),
		       void (*add)(void *, const void *), int (*order)(const void *, const void *))
{
	char *p = a;
	size_t m = 0;
	isc_sort(a, n, sz, same);
	for (size_t i = 0; i < n; i++) {
		if (m && !same(p + (m - 1) * sz, p + i * sz))
			add(p + (m - 1) * sz, p + i * sz);
		else
			memmove(p + m++ * sz, p + i * sz, sz);
	}
	isc_sort(a, m, sz, order);
	return m;
}

static void row_add(void *into, const void *from)
{
	struct row *r = into;
	const struct row *x = from;
	if (x->min < r->min)
		r->min = x->min;
	if (x->max > r->max)
		r->max = x->max;
	r->count += x->count;
	r->total += x->total;
	r->self += x->self;
}

/* Rows merged by identity, by total time. */
static size_t merge_rows(struct row *rows, size_t n)
{
	return merge_by(rows, n, sizeof(*rows), row_by_identity, row_add, row_by_total);
}

/* A call site by its names (several string ids can share them); op, py NULL when none. */
struct srow {
	const char *api, *op, *py, *file;
	uint32_t line;
	uint64_t count, bytes;
	int64_t total;
};

static int cmp_nstr(const char *a, const char *b)
{
	return a == b ? 0 : !a ? -1 : !b ? 1 : strcmp(a, b);
}

static int srow_identity(const void *x, const void *y)
{
	const struct srow *a = x, *b = y;
	int c;
	if ((c = cmp_nstr(a->api, b->api)) || (c = cmp_nstr(a->op, b->op)) || (c = cmp_nstr(a->py, b->py)) ||
	    (c = cmp_nstr(a->file, b->file)))
		return c;
	return a->line < b->line ? -1 : a->line > b->line;
}

static void srow_add(void *into, const void *from)
{
	struct srow *r = into;
	const struct srow *x = from;
	r->count += x->count;
	r->bytes += x->bytes;
	r->total += x->total;
}

static int srow_by_total(const void *x, const void *y)
{
	const struct srow *a = x, *b = y;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return srow_identity(x, y);
}

static int srow_by_bytes(const void *x, const void *y)
{
	const struct srow *a = x, *b = y;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return srow_identity(x, y);
}

/* The names of call site site (ISC_UMAP_NONE: none) into r. */
static void srow_site(const struct isc_gpu_ana *g, uint32_t site, struct srow *r)
{
	if (site == ISC_UMAP_NONE)
		return;
	const struct gpu_site *s = &g->sites[site];
	const struct isc_tl_string *py = s->py_id ? isc_timeline_string_borrow(g->t, s->py_id) : NULL;
	r->op = s->op_id ? isc_gpu_str_name(g, s->op_id) : NULL;
	if (py) {
		r->py = py->name;
		r->file = py->file;
		r->line = py->line;
	}
}

/* Adds "op" and "python" ({name, file, line} or null) of r to x. */
static void emit_site(struct out *o, cJSON *x, const struct srow *r)
{
	isc_jb_str(&o->jb, x, "op", r->op);
	if (!r->py) {
		isc_jb_chk(&o->jb, x ? cJSON_AddNullToObject(x, "python") : NULL);
		return;
	}
	cJSON *p = isc_jb_obj(&o->jb, x, "python");
	isc_jb_str(&o->jb, p, "name", r->py);
	isc_jb_str(&o->jb, p, "file", r->file);
	isc_jb_num(&o->jb, p, "line", r->line);
}

/* gpu.devices[].host_during_idle of device hd[hi]: the rows of slot (0: the run), of idle ns of idle time. */
static int emit_host(struct out *o, cJSON *d, size_t hi, unsigned slot, int64_t idle)
{
	struct isc_gpu_ana *g = o->g;
	cJSON *hd = isc_jb_obj(&o->jb, d, "host_during_idle");
	isc_jb_num(&o->jb, hd, "idle_ns", (double)idle);
	for (int k = 0; k < 2; k++) {
		uint8_t kind = k ? ISC_SPAN_PYTHON : ISC_SPAN_OP;
		struct row *rows = calloc(g->nfns ? g->nfns : 1, sizeof(*rows));
		size_t n = 0;
		if (!rows)
			return -ENOMEM;
		for (size_t i = 0; i < g->nfns; i++) {
			const struct gpu_hfn *f = &g->fns[i];
			if (f->hdev != hi || f->kind != kind || f->slot != slot)
				continue;
			const struct isc_tl_string *s = isc_timeline_string_borrow(g->t, f->name_id);
			rows[n++] = (struct row){ .name = s ? s->name : "?", .file = s ? s->file : "",
						  .line = s ? s->line : 0, .kind = kind, .count = 1,
						  .total = f->idle, .self = f->self };
		}
		n = merge_rows(rows, n);
		cJSON *a = isc_jb_arr(&o->jb, hd, k ? "python" : "ops");
		for (size_t i = 0; i < n && i < TOP_HOST && rows[i].total > 0; i++) {
			cJSON *x = isc_jb_push_obj(&o->jb, a);
			isc_jb_str(&o->jb, x, "name", rows[i].name);
			if (k) {
				isc_jb_str(&o->jb, x, "file", rows[i].file);
				isc_jb_num(&o->jb, x, "line", rows[i].line);
			}
			isc_jb_num(&o->jb, x, "idle_ns", (double)rows[i].total);
			isc_jb_num(&o->jb, x, "self_idle_ns", (double)rows[i].self);
			isc_jb_num(&o->jb, x, "idle_pct", pct2(rows[i].total, idle));
		}
		free(rows);
	}
	return 0;
}

/* The NVML device whose index is CUDA device id (NVML numbers all GPUs of the machine), or NULL. */
static const struct gpu_nvdev *nvdev_of(const struct isc_gpu_ana *g, uint32_t id)
{
	for (size_t i = 0; i < g->nnv; i++)
		if (g->nv[i].index == id)
			return &g->nv[i];
	return NULL;
}

/* Device memory of id: its DEVICE record, else NVML's; 0 when unknown. */
static uint64_t dev_total(const struct isc_gpu_ana *g, uint32_t id)
{
	uint32_t di = isc_umap_get(&g->dname_map, id);
	const struct gpu_ddev *dd = di == ISC_UMAP_NONE ? NULL : &g->dd[di];
	const struct gpu_nvdev *nv = nvdev_of(g, id);
	return dd && dd->mem ? dd->mem : nv ? (nv->total ? nv->total : nv->info_total) : 0;
}

/* gpu.devices[]: link bandwidth and memory of device id, from its DEVICE record, GPU_MEMORY and NVML. */
static void emit_dev_memory(struct out *o, cJSON *d, uint32_t id)
{
	const struct isc_gpu_ana *g = o->g;
	uint32_t di = isc_umap_get(&g->dname_map, id), mi = isc_umap_get(&g->gm_map, id);
	const struct gpu_ddev *dd = di == ISC_UMAP_NONE ? NULL : &g->dd[di];
	const struct gpu_nvdev *nv = nvdev_of(g, id);
	uint64_t bw = nv && nv->link_bw ? nv->link_bw : dd ? dd->link_bw : 0;
	uint64_t total = dd && dd->mem ? dd->mem : nv ? (nv->total ? nv->total : nv->info_total) : 0;
	isc_jb_num_or_null(&o->jb, d, "link_bw_bytes_per_s", bw, (double)bw);
	isc_jb_num_or_null(&o->jb, d, "memory_total_bytes", total, (double)total);
	if (mi != ISC_UMAP_NONE) {
		isc_jb_num(&o->jb, d, "memory_peak_bytes", (double)g->gm[mi].peak);
		isc_jb_str(&o->jb, d, "memory_peak_source", "allocations");
	} else if (nv && nv->samples) {
		isc_jb_num(&o->jb, d, "memory_peak_bytes", (double)nv->used_max);
		isc_jb_str(&o->jb, d, "memory_peak_source", "nvml");
	} else {
		isc_jb_num_or_null(&o->jb, d, "memory_peak_bytes", false, 0);
		isc_jb_str(&o->jb, d, "memory_peak_source", NULL);
	}
}

/* The streams of a, by device and id; NULL when out of memory.  Freed by the caller. */
static struct gpu_stream **sorted_streams(struct gpu_acc *a)
{
	struct gpu_stream **sts = calloc(a->nsts ? a->nsts : 1, sizeof(*sts));
	if (!sts)
		return NULL;
	for (size_t i = 0; i < a->nsts; i++)
		sts[i] = &a->sts[i];
	isc_sort(sts, a->nsts, sizeof(*sts), cmp_stream);
	return sts;
}

/* d.streams[]: the streams sts[0..n) of device id. */
static void emit_streams(struct out *o, cJSON *d, struct gpu_stream **sts, size_t n, uint32_t id)
{
	cJSON *ss = isc_jb_arr(&o->jb, d, "streams");
	for (size_t j = 0; j < n; j++) {
		const struct gpu_stream *s = sts[j];
		if (s->device != id)
			continue;
		cJSON *x = isc_jb_push_obj(&o->jb, ss);
		isc_jb_num(&o->jb, x, "id", s->id);
		isc_jb_num(&o->jb, x, "ops", (double)s->ops);
		cJSON *ib = isc_jb_obj(&o->jb, x, "idle_breakdown");
		isc_jb_num(&o->jb, ib, "host_wait_ns", (double)s->host_wait);
		isc_jb_num(&o->jb, ib, "host_wait_launch_ns", (double)s->host_wait_launch);
		isc_jb_num(&o->jb, ib, "kernel_wait_ns", (double)s->kernel_wait);
		isc_jb_num(&o->jb, ib, "other_ns", (double)s->other);
		cJSON *q = isc_jb_obj(&o->jb, x, "queue_length");
		int64_t w = s->q_last - s->q_first;
		isc_jb_num_or_null(&o->jb, q, "mean", s->q_any && w > 0, w > 0 ? round(100 * (double)s->q_sum / (double)w) / 100 : 0);
		isc_jb_num_or_null(&o->jb, q, "max", s->q_any, (double)s->q_max);
	}
}

/* d.temporal_breakdown of a span with busy and comp ns of it busy, computing. */
static void emit_breakdown(struct out *o, cJSON *d, int64_t span, int64_t busy, int64_t comp)
{
	cJSON *tb = isc_jb_obj(&o->jb, d, "temporal_breakdown");
	isc_jb_num(&o->jb, tb, "span_ns", (double)span);
	isc_jb_num(&o->jb, tb, "idle_ns", (double)(span - busy));
	isc_jb_num(&o->jb, tb, "compute_ns", (double)comp);
	isc_jb_num(&o->jb, tb, "non_compute_ns", (double)(busy - comp));
	isc_jb_num(&o->jb, tb, "idle_pct", pct2(span - busy, span));
	isc_jb_num(&o->jb, tb, "compute_pct", pct2(comp, span));
	isc_jb_num(&o->jb, tb, "non_compute_pct", pct2(busy - comp, span));
}

static int emit_devices(struct out *o, cJSON *gpu, struct gpu_acc *a)
{
	struct isc_gpu_ana *g = o->g;
	struct gpu_stream **sts = sorted_streams(a);
	if (!sts)
		return -ENOMEM;
	/* a device with memory records but no GPU op still has its entry (ops 0) */
	size_t nm = isc_devmem_devices(g->dm, NULL, 0);
	uint32_t *mids = malloc((nm ? nm : 1) * sizeof(*mids));
	if (!mids) {
		free(sts);
		return -ENOMEM;
	}
	isc_devmem_devices(g->dm, mids, nm);
	for (size_t i = 0; i < nm; i++) {
		bool fresh;
		uint32_t di = isc_gpu_map_index(&a->dev_map, mids[i], &a->devs, &a->ndevs, &a->devs_cap,
						sizeof(*a->devs), &fresh);
		if (di == ISC_UMAP_NONE) {
			free(mids);
			free(sts);
			return -ENOMEM;
		}
		a->devs[di].id = mids[i];
	}
	free(mids);
	isc_sort(a->devs, a->ndevs, sizeof(*a->devs), cmp_dev); /* dev_map is not used after this */
	cJSON *ds = isc_jb_arr(&o->jb, gpu, "devices");
	for (size_t i = 0; i < a->ndevs; i++) {
		const struct gpu_dev *dv = &a->devs[i];
		int64_t span = isc_gpu_union_span(&dv->all), busy = isc_gpu_union_busy(&dv->all);
		int64_t comp = isc_gpu_union_busy(&dv->comp);
		cJSON *d = isc_jb_push_obj(&o->jb, ds);
		isc_jb_num(&o->jb, d, "id", dv->id);
		isc_jb_str(&o->jb, d, "name", dev_name(g, dv->id));
		isc_jb_num(&o->jb, d, "ops", (double)dv->ops);
		isc_jb_num(&o->jb, d, "busy_ns", (double)busy);
		emit_dev_memory(o, d, dv->id);
		/* by site: the allocation site model's report, made by the memory section (isc_ana_emit_alloc) */
		isc_devmem_emit(g->dm, &o->jb, d, dv->id, dev_total(g, dv->id), (int64_t)g->first_ts, g->t, g->asites);
		emit_breakdown(o, d, span, busy, comp);
		emit_streams(o, d, sts, a->nsts, dv->id);
		uint32_t hi = ISC_UMAP_NONE;
		for (size_t j = 0; j < g->nhd; j++)
			if (g->hd[j].id == dv->id)
				hi = (uint32_t)j;
		if (hi != ISC_UMAP_NONE && emit_host(o, d, hi, 0, g->hd[hi].closed)) {
			free(sts);
			return -ENOMEM;
		}
	}
	free(sts);
	return 0;
}

static int emit_kernels(struct out *o, cJSON *gpu, const struct gpu_acc *a)
{
	struct isc_gpu_ana *g = o->g;
	struct row *rows = calloc(a->nks ? a->nks : 1, sizeof(*rows));
	int64_t total = 0;
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < a->nks; i++) {
		const struct gpu_kstat *k = &a->ks[i];
		const char *name = isc_gpu_str_name(g, k->name_id);
		rows[i] = (struct row){ .name = name ? name : "?", .file = "", .count = k->count, .total = k->total,
					.min = k->min, .max = k->max };
		total += k->total;
	}
	size_t n = merge_rows(rows, a->nks);
	cJSON *ks = isc_jb_obj(&o->jb, gpu, "kernels");
	isc_jb_num(&o->jb, ks, "count", (double)a->kernels);
	isc_jb_num(&o->jb, ks, "distinct", (double)n);
	isc_jb_num(&o->jb, ks, "total_ns", (double)total);
	cJSON *top = isc_jb_arr(&o->jb, ks, "top");
	int64_t cum = 0;
	uint64_t cnt = 0;
	size_t i = 0;
	/* the fewest kernels (by total time) that cover 80 % of it */
	for (; i < n && i < TOP_KERNELS_MAX && (i == 0 || 5 * cum < 4 * total); i++) {
		const struct row *r = &rows[i];
		cJSON *x = isc_jb_push_obj(&o->jb, top);
		isc_jb_str(&o->jb, x, "name", r->name);
		isc_jb_num(&o->jb, x, "count", (double)r->count);
		isc_jb_num(&o->jb, x, "total_ns", (double)r->total);
		isc_jb_num(&o->jb, x, "mean_ns", round((double)r->total / (double)r->count));
		isc_jb_num(&o->jb, x, "min_ns", (double)r->min);
		isc_jb_num(&o->jb, x, "max_ns", (double)r->max);
		isc_jb_num(&o->jb, x, "pct", pct2(r->total, total));
		cum += r->total;
		cnt += r->count;
	}
	isc_jb_num(&o->jb, ks, "top_pct", pct2(cum, total));
	cJSON *oth = isc_jb_obj(&o->jb, ks, "others");
	isc_jb_num(&o->jb, oth, "distinct", (double)(n - i));
	isc_jb_num(&o->jb, oth, "count", (double)(a->kernels - cnt));
	isc_jb_num(&o->jb, oth, "total_ns", (double)(total - cum));
	free(rows);
	return 0;
}

static const char *copy_name(uint8_t k)
{
	static const char *const n[] = { NULL, "HtoD", "DtoH", "DtoD", "HtoH", "PtoP" };
	return k < sizeof(n) / sizeof(n[0]) ? n[k] : NULL;
}

static const char *mem_name(uint8_t k)
{
	static const char *const n[] = { "unknown", "pageable", "pinned", "device", "managed" };
	return k < sizeof(n) / sizeof(n[0]) ? n[k] : "unknown";
}

static int cmp_mstat(const void *x, const void *y)
{
	const struct gpu_mstat *a = x, *b = y;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->copy_kind != b->copy_kind)
		return a->copy_kind < b->copy_kind ? -1 : 1;
	if (a->src_mem != b->src_mem)
		return a->src_mem < b->src_mem ? -1 : 1;
	return a->dst_mem < b->dst_mem ? -1 : a->dst_mem > b->dst_mem;
}

static int cmp_nstat(const void *x, const void *y)
{
	const struct gpu_nstat *a = x, *b = y;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return a->name_id < b->name_id ? -1 : a->name_id > b->name_id;
}

static void emit_nstats(struct out *o, cJSON *parent, const char *k, struct gpu_nstat *s, size_t n, const char *tk)
{
	static const char *const sync_kind[] = { "Sync", "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync" };
	int64_t total = 0;
	isc_sort(s, n, sizeof(*s), cmp_nstat);
	cJSON *a = isc_jb_arr(&o->jb, parent, k);
	for (size_t i = 0; i < n; i++) {
		cJSON *x = isc_jb_push_obj(&o->jb, a);
		uint8_t sk = s[i].sync_kind < sizeof(sync_kind) / sizeof(sync_kind[0]) ? s[i].sync_kind : 0;
		isc_jb_str(&o->jb, x, "name", s[i].name_id ? isc_gpu_str_name(o->g, s[i].name_id) : sync_kind[sk]);
		isc_jb_num(&o->jb, x, "count", (double)s[i].count);
		isc_jb_num(&o->jb, x, "total_ns", (double)s[i].total);
		total += s[i].total;
	}
	if (tk)
		isc_jb_num(&o->jb, parent, tk, (double)total);
}

/* gpu.gaps: the device gaps of at least GPU_GAP_NS, longest first. */
static void emit_gaps(struct out *o, cJSON *gpu, const struct gpu_acc *a)
{
	cJSON *gp = isc_jb_obj(&o->jb, gpu, "gaps");
	isc_jb_num(&o->jb, gp, "threshold_ns", GPU_GAP_NS);
	isc_jb_num(&o->jb, gp, "count", (double)a->gaps);
	isc_jb_num(&o->jb, gp, "total_ns", (double)a->gaps_total);
	cJSON *top = isc_jb_arr(&o->jb, gp, "top");
	for (size_t i = 0; i < a->ntop_gaps; i++) {
		const struct gpu_gap *x = &a->top_gaps[i];
		cJSON *y = isc_jb_push_obj(&o->jb, top);
		isc_jb_num(&o->jb, y, "device", x->device);
		isc_jb_num(&o->jb, y, "start_ns", (double)(x->start - (int64_t)o->g->first_ts));
		isc_jb_num(&o->jb, y, "end_ns", (double)(x->end - (int64_t)o->g->first_ts));
		isc_jb_num(&o->jb, y, "dur_ns", (double)(x->end - x->start));
	}
}

/* memcpy[].top_call_site of row m: the named call site that launched the most bytes, or null. */
static void emit_top_site(struct out *o, cJSON *x, const struct gpu_acc *a, const struct gpu_mstat *m,
			  struct srow *rows)
{
	size_t n = 0;
	for (size_t i = 0; i < a->nmcs; i++) {
		const struct gpu_mcsite *c = &a->mcs[i];
		if (c->row != m->id)
			continue;
		rows[n] = (struct srow){ .count = c->count, .bytes = c->bytes };
		srow_site(o->g, c->site, &rows[n]);
		n += rows[n].op || rows[n].py;
	}
	n = merge_by(rows, n, sizeof(*rows), srow_identity, srow_add, srow_by_bytes);
	if (!n) {
		isc_jb_chk(&o->jb, x ? cJSON_AddNullToObject(x, "top_call_site") : NULL);
		return;
	}
	emit_site(o, isc_jb_obj(&o->jb, x, "top_call_site"), &rows[0]);
}

/* gpu.sync.call_sites (the TOP_SITES longest) and gpu.sync.blocking_copies of y. */
static int emit_call_sites(struct out *o, cJSON *sy, const struct gpu_sync *y)
{
	struct isc_gpu_ana *g = o->g;
	struct srow *rows = calloc(y->ncs ? y->ncs : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < y->ncs; i++) {
		const char *api = isc_gpu_str_name(g, y->cs[i].api_id);
		rows[i] = (struct srow){ .api = api ? api : "?", .count = y->cs[i].count, .total = y->cs[i].total };
		srow_site(g, y->cs[i].site, &rows[i]);
	}
	int64_t total = 0;
	for (size_t i = 0; i < y->ncs; i++)
		total += y->cs[i].total;
	size_t n = merge_by(rows, y->ncs, sizeof(*rows), srow_identity, srow_add, srow_by_total);
	cJSON *cs = isc_jb_arr(&o->jb, sy, "call_sites");
	for (size_t i = 0; i < n && i < TOP_SITES; i++) {
		cJSON *x = isc_jb_push_obj(&o->jb, cs);
		isc_jb_str(&o->jb, x, "api", rows[i].api);
		emit_site(o, x, &rows[i]);
		isc_jb_num(&o->jb, x, "count", (double)rows[i].count);
		isc_jb_num(&o->jb, x, "total_ns", (double)rows[i].total);
	}
	free(rows);
	isc_jb_num(&o->jb, sy, "call_sites_total_ns", (double)total);
	cJSON *bc = isc_jb_obj(&o->jb, sy, "blocking_copies");
	isc_jb_num(&o->jb, bc, "count", (double)y->bcopies);
	isc_jb_num(&o->jb, bc, "total_ns", (double)y->bcopies_ns);
	return 0;
}

static int cmp_nvdev(const void *x, const void *y)
{
	const struct gpu_nvdev *a = x, *b = y;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* gpu.nvml: one entry per NVML device of nv[0..n) with samples, by index. */
static void emit_nvml(struct out *o, cJSON *gpu, struct gpu_nvdev *nv, size_t n)
{
	isc_sort(nv, n, sizeof(*nv), cmp_nvdev);
	cJSON *a = isc_jb_arr(&o->jb, gpu, "nvml");
	for (size_t i = 0; i < n; i++) {
		const struct gpu_nvdev *d = &nv[i];
		uint64_t total = d->total ? d->total : d->info_total;
		if (!d->samples)
			continue;
		cJSON *x = isc_jb_push_obj(&o->jb, a);
		isc_jb_num(&o->jb, x, "device", d->index);
		isc_jb_num(&o->jb, x, "samples", (double)d->samples);
		isc_jb_num(&o->jb, x, "util_gpu_pct_mean", round(100 * d->util_sum / (double)d->samples) / 100);
		isc_jb_num(&o->jb, x, "mem_used_max_bytes", (double)d->used_max);
		isc_jb_num_or_null(&o->jb, x, "mem_total_bytes", total, (double)total);
		isc_jb_num_or_null(&o->jb, x, "sm_mhz_min", d->sm_min, d->sm_min);
		isc_jb_num_or_null(&o->jb, x, "sm_mhz_max", d->sm_max, d->sm_max);
		isc_jb_num_or_null(&o->jb, x, "temp_c_max", d->temp_max, d->temp_max);
		isc_jb_num_or_null(&o->jb, x, "power_w_max", d->power_max, (double)d->power_max / 1000);
		isc_jb_num(&o->jb, x, "throttled_samples", (double)d->throttled);
		isc_jb_num(&o->jb, x, "busy_samples", (double)d->busy_samples);
		isc_jb_num(&o->jb, x, "throttled_busy_samples", (double)d->thr_busy_samples);
		isc_jb_num(&o->jb, x, "busy_ns", (double)d->busy_ns);
		isc_jb_num(&o->jb, x, "throttled_busy_ns", (double)d->thr_busy_ns);
		isc_jb_num_or_null(&o->jb, x, "sm_mhz_min_throttled", d->sm_min_thr, d->sm_min_thr);
		isc_jb_num_or_null(&o->jb, x, "sm_mhz_max_busy", d->sm_max_busy, d->sm_max_busy);
		cJSON *r = isc_jb_obj(&o->jb, x, "throttle_reasons");
		for (size_t k = 0; k < GPU_NV_REASONS; k++)
			if (d->reasons[k])
				isc_jb_num(&o->jb, r, isc_gpu_nv_reasons[k].name, (double)d->reasons[k]);
	}
}

/*
 * gpu.launch.call_sites: the TOP_SITES call sites whose calls launched the
 * most kernel time (the op and the Python function that made the call: in
 * exact mode the nearest Python function, in sample mode the Python line
 * the CUDA agent read at the call), with their launches and that time.
 */
static int emit_launch_sites(struct out *o, cJSON *l, const struct gpu_acc *a)
{
	struct srow *rows = calloc(a->nls ? a->nls : 1, sizeof(*rows));
	size_t n = 0;
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < a->nls; i++) {
		rows[n] = (struct srow){ .count = a->ls[i].launches, .total = a->ls[i].kernel_ns };
		srow_site(o->g, a->ls[i].site, &rows[n]);
		n += rows[n].op || rows[n].py;
	}
	n = merge_by(rows, n, sizeof(*rows), srow_identity, srow_add, srow_by_total);
	cJSON *cs = isc_jb_arr(&o->jb, l, "call_sites");
	for (size_t i = 0; i < n && i < TOP_SITES; i++) {
		cJSON *x = isc_jb_push_obj(&o->jb, cs);
		emit_site(o, x, &rows[i]);
		isc_jb_num(&o->jb, x, "launches", (double)rows[i].count);
		isc_jb_num(&o->jb, x, "kernel_ns", (double)rows[i].total);
	}
	free(rows);
	return 0;
}

/* launch, memcpy, sync, gaps and nvml of gpu: the ops of a, the calls of y, the samples nv[0..nnv). */
static int emit_rest(struct out *o, cJSON *gpu, struct gpu_acc *a, const struct gpu_sync *y, struct gpu_nvdev *nv,
		     size_t nnv)
{
	cJSON *l = isc_jb_obj(&o->jb, gpu, "launch");
	isc_jb_num(&o->jb, l, "launches", (double)a->launches);
	cJSON *dl = isc_jb_obj(&o->jb, l, "delay_ns");
	struct gpu_samples *s = &a->delay;
	isc_sort(s->v, s->n, sizeof(*s->v), cmp_i64);
	isc_jb_num_or_null(&o->jb, dl, "p50", s->n, s->n ? quantile_lin(s->v, s->n, 0.5) : 0);
	isc_jb_num_or_null(&o->jb, dl, "p90", s->n, s->n ? quantile_lin(s->v, s->n, 0.9) : 0);
	isc_jb_num_or_null(&o->jb, dl, "max", s->n, (double)s->max);
	isc_jb_chk(&o->jb, l ? cJSON_AddBoolToObject(l, "delay_exact", s->seen <= GPU_SAMPLES_MAX) : NULL);
	isc_jb_num(&o->jb, l, "gpu_op_shorter_than_launch", (double)a->shorter);
	isc_jb_num(&o->jb, l, "launch_call_over_50us", (double)a->long_call);
	isc_jb_num(&o->jb, l, "delay_over_100us", (double)a->long_delay);
	isc_jb_num(&o->jb, l, "short_kernels_under_10us", (double)a->short_kernels);
	isc_jb_num(&o->jb, l, "kernels", (double)a->kernels);
	isc_jb_num(&o->jb, l, "ops_without_launch_call", (double)a->no_api);
	isc_jb_num(&o->jb, l, "api_total_ns", (double)a->launch_api);
	isc_jb_num(&o->jb, l, "kernel_total_ns", (double)a->launch_kernels);
	if (emit_launch_sites(o, l, a))
		return -ENOMEM;

	struct srow *rows = calloc(a->nmcs ? a->nmcs : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	isc_sort(a->ms, a->nms, sizeof(*a->ms), cmp_mstat);
	cJSON *mc = isc_jb_arr(&o->jb, gpu, "memcpy");
	for (size_t i = 0; i < a->nms; i++) {
		const struct gpu_mstat *m = &a->ms[i];
		cJSON *x = isc_jb_push_obj(&o->jb, mc);
		isc_jb_str(&o->jb, x, "kind", m->kind == ISC_GPU_MEMSET ? "memset" : "memcpy");
		isc_jb_str(&o->jb, x, "direction", m->kind == ISC_GPU_MEMSET ? NULL : copy_name(m->copy_kind));
		isc_jb_str(&o->jb, x, "src_memory", m->kind == ISC_GPU_MEMSET ? NULL : mem_name(m->src_mem));
		isc_jb_str(&o->jb, x, "dst_memory", mem_name(m->dst_mem));
		isc_jb_num(&o->jb, x, "count", (double)m->count);
		isc_jb_num(&o->jb, x, "bytes", (double)m->bytes);
		isc_jb_num(&o->jb, x, "total_ns", (double)m->total);
		/* bytes per ns = GB/s */
		isc_jb_num_or_null(&o->jb, x, "bandwidth_gb_per_s", m->total > 0,
			    m->total > 0 ? round(1000 * (double)m->bytes / (double)m->total) / 1000 : 0);
		isc_jb_num(&o->jb, x, "launch_api_ns", (double)m->api);
		emit_top_site(o, x, a, m, rows);
	}
	free(rows);
	cJSON *sy = isc_jb_obj(&o->jb, gpu, "sync");
	emit_nstats(o, sy, "ops", a->ss, a->nss, "ops_total_ns");
	emit_nstats(o, sy, "api_calls", y->sapi, y->nsapi, "api_total_ns");
	if (emit_call_sites(o, sy, y))
		return -ENOMEM;
	emit_gaps(o, gpu, a);
	emit_nvml(o, gpu, nv, nnv);
	return 0;
}

/*
 * gpu.agent: what the CUDA agent cost the workload, as far as the trace
 * knows it: CUPTI's OVERHEAD records (buffer flushes, instrumentation...)
 * summed by kind, the agent's CPU time converting records and in its
 * launch callbacks (its META cuda.agent.*, written at exit: null when no
 * process wrote them), and that per launch call (runtime or driver calls
 * that launch work: the agent's cost grows with them).  CUPTI's own cost
 * inside each CUDA call is in no record: it shows only against a run
 * without the agent (tests/device/check.sh).  Null without a GPU_AGENT.
 */
static void emit_agent(struct out *o, cJSON *gpu)
{
	struct isc_gpu_ana *g = o->g;
	if (!g->agents) {
		isc_jb_chk(&o->jb, gpu ? cJSON_AddNullToObject(gpu, "agent") : NULL);
		return;
	}
	int64_t ovh = 0;
	uint64_t novh = 0;
	for (size_t i = 0; i < g->novh; i++) {
		ovh += g->ovh[i].total;
		novh += g->ovh[i].count;
	}
	bool known = g->agent_cost_procs > 0;
	cJSON *a = isc_jb_obj(&o->jb, gpu, "agent");
	isc_jb_num(&o->jb, a, "agents", (double)g->agents);
	if (g->driver_api < 0)
		isc_jb_chk(&o->jb, a ? cJSON_AddNullToObject(a, "driver_api") : NULL);
	else
		isc_jb_bool(&o->jb, a, "driver_api", g->driver_api == 1);
	isc_jb_num(&o->jb, a, "cupti_overhead_ns", (double)ovh);
	isc_jb_num(&o->jb, a, "cupti_overhead_records", (double)novh);
	emit_nstats(o, a, "overhead_kinds", g->ovh, g->novh, NULL);
	isc_jb_num_or_null(&o->jb, a, "agent_cpu_ns", known, (double)g->agent_cpu_ns);
	isc_jb_num_or_null(&o->jb, a, "records", known, (double)g->agent_records);
	isc_jb_num_or_null(&o->jb, a, "callbacks", known, (double)g->agent_callbacks);
	isc_jb_num_or_null(&o->jb, a, "callback_ns", known, (double)g->agent_callback_ns);
	isc_jb_num(&o->jb, a, "launches", (double)g->launch_calls);
	double all = (double)ovh + (double)g->agent_cpu_ns + (double)g->agent_callback_ns;
	isc_jb_num_or_null(&o->jb, a, "per_launch_ns", known && g->launch_calls, g->launch_calls ? round(all / (double)g->launch_calls) : 0);
}

/*
 * gpu.in_iterations from slot s (gpu_iter.c): each followed device with
 * work inside the windows or ops launched there, its breakdown over the
 * windows, the streams of the ops launched inside, host_during_idle of the
 * spans begun inside; the tables of those ops; share_pct: of the GPU work
 * launched from the first window's start on, the part the windows hold.
 */
static int emit_in_iterations(struct out *o, cJSON *gpu, struct gpu_itslot *s, const char *name)
{
	struct isc_gpu_ana *g = o->g;
	if (!s || s->steady < 2 || s->window_ns <= 0) {
		isc_jb_chk(&o->jb, gpu ? cJSON_AddNullToObject(gpu, "in_iterations") : NULL);
		return 0;
	}
	cJSON *it = isc_jb_obj(&o->jb, gpu, "in_iterations");
	isc_jb_str(&o->jb, it, "scope", name);
	isc_jb_str(&o->jb, it, "rule", "inside the steady-state iterations: the union of the iteration scope's spans "
		   "after the first of each process (the warm-up), all threads; the device's busy and compute time "
		   "inside them; the statistics of the ops launched inside them; host_during_idle of the spans begun "
		   "inside them");
	isc_jb_num(&o->jb, it, "iterations", (double)s->steady);
	isc_jb_num(&o->jb, it, "window_ns", (double)s->window_ns);
	int64_t in = 0, after = 0;
	for (size_t i = 0; i < g->nhd && i < GPU_MAX_HDEV; i++) {
		in += s->dev[i].busy;
		after += isc_gpu_union_busy(&s->dev[i].after);
	}
	isc_jb_num(&o->jb, it, "share_pct", pct2(in, after > in ? after : in));
	isc_jb_num(&o->jb, it, "ops", (double)s->acc.ops);
	struct gpu_stream **sts = sorted_streams(&s->acc);
	if (!sts)
		return -ENOMEM;
	size_t order[GPU_MAX_HDEV], n = 0; /* the followed devices by id */
	for (size_t i = 0; i < g->nhd && i < GPU_MAX_HDEV; i++) {
		size_t j = n++;
		for (; j > 0 && g->hd[order[j - 1]].id > g->hd[i].id; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	cJSON *ds = isc_jb_arr(&o->jb, it, "devices");
	for (size_t k = 0; k < n; k++) {
		size_t i = order[k];
		uint32_t id = g->hd[i].id, ai = isc_umap_get(&s->acc.dev_map, id);
		const struct gpu_dev *dv = ai == ISC_UMAP_NONE ? NULL : &s->acc.devs[ai];
		if (!s->dev[i].busy && !dv)
			continue;
		cJSON *d = isc_jb_push_obj(&o->jb, ds);
		isc_jb_num(&o->jb, d, "id", id);
		isc_jb_str(&o->jb, d, "name", dev_name(g, id));
		isc_jb_num(&o->jb, d, "ops", dv ? (double)dv->ops : 0);
		isc_jb_num(&o->jb, d, "busy_ns", (double)s->dev[i].busy);
		emit_breakdown(o, d, s->window_ns, s->dev[i].busy, s->dev[i].comp);
		emit_streams(o, d, sts, s->acc.nsts, id);
		if (emit_host(o, d, i, (unsigned)(s - g->its) + 1, isc_gpu_iter_idle(g, s, i))) {
			free(sts);
			return -ENOMEM;
		}
	}
	free(sts);
	if (emit_kernels(o, it, &s->acc) || emit_rest(o, it, &s->acc, &s->sync, s->nv, s->nnv))
		return -ENOMEM;
	return 0;
}

/* gpu.step_rule: which ops the statistics hold (all: ops seen, kept: ops in them), into buf. */
static void step_rule(struct isc_gpu_ana *g, char *buf, size_t cap, uint64_t all, uint64_t kept)
{
	char steps[96];
	snprintf(steps, sizeof(steps), "%llu ProfilerStep annotation%s, %s", (unsigned long long)g->steps,
		 g->steps == 1 ? "" : "s", g->steps_distinct ? "2 or more names" : g->steps ? "1 name" : "no names");
	if (!g->hta)
		snprintf(buf, cap,
			 "all GPU ops kept (%s); HTA would drop the ops launched from the last ProfilerStep on "
			 "when there are 2 or more names (--hta-compat)", steps);
	else if (!g->steps_distinct)
		snprintf(buf, cap, "hta-compat: fewer than 2 ProfilerStep names (%s): all GPU ops kept", steps);
	else
		snprintf(buf, cap,
			 "hta-compat: CPU events from the start of the last ProfilerStep (%s) on dropped, with the "
			 "GPU ops they launched and those no CPU event launched: %llu of %llu GPU ops dropped%s",
			 g->last_step_name ? g->last_step_name : "?", (unsigned long long)(all - kept),
			 (unsigned long long)all,
			 g->pq_forced ? " (the step was too long to hold: some ops were dropped before it ended)" : "");
}

int isc_gpu_emit(struct isc_gpu_ana *g, struct gpu_acc *a, cJSON *root, struct gpu_itslot *it, const char *it_name)
{
	struct out o = { g, { .ctl = true } };
	char rule[512];
	step_rule(g, rule, sizeof(rule), g->acc[0].ops, a->ops);
	cJSON *gpu = isc_jb_obj(&o.jb, root, "gpu");
	isc_jb_str(&o.jb, gpu, "mode", g->hta ? "hta-compat" : "exact");
	isc_jb_str(&o.jb, gpu, "step_rule", rule);
	isc_jb_num(&o.jb, gpu, "profiler_steps", (double)g->steps);
	isc_jb_num_or_null(&o.jb, gpu, "rank", g->have_rank, g->rank);
	isc_jb_num_or_null(&o.jb, gpu, "world_size", g->have_world, g->world_size);
	isc_jb_num(&o.jb, gpu, "ops", (double)a->ops);
	isc_jb_num(&o.jb, gpu, "dropped_ops", (double)(g->acc[0].ops - a->ops));
	if (emit_devices(&o, gpu, a) || emit_kernels(&o, gpu, a) || emit_rest(&o, gpu, a, &g->sy, g->nv, g->nnv) ||
	    emit_in_iterations(&o, gpu, it, it_name))
		return -ENOMEM;
	emit_agent(&o, gpu);
	return o.jb.oom || g->oom ? -ENOMEM : 0;
}
