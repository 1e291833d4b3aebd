/*
 * analyze_gpu.c - gpu.* of the findings document: per device and stream,
 * with the definitions of Holistic Trace Analysis (HTA) so the numbers can
 * be checked against it, computed inside analyze.c's single pass.  This
 * file holds the entry points (analyze_gpu.h): it takes the events, pairs
 * launch calls with their ops, counts the sync calls, keeps the NVML
 * samples and DEVICE records, and ends the pass; the accumulator, the host
 * spans, the output and the names are the files gpu_internal.h draws.
 *
 * Input contract: GPU operations (GPU_OP: ts = start, dur) arrive ordered
 * by start; the launch call of an operation (GPU_API, same correlation id,
 * on the launching host thread) arrives before it.
 *
 * Definitions (iscope-analyze(1), RULES, states them for users):
 *   op        default: kernels, memcpy and memset; cuda_sync operations go
 *             to gpu.sync only.  --hta-compat: cuda_sync operations that
 *             have a stream count as GPU time too (non-compute).
 *   span      end of the last op - start of the first, per device
 *   busy      length of the union of the op intervals; idle = span - busy
 *   compute   union of the kernels whose name holds none of "nccl"
 *             (any case), "Memcpy", "Memset"; non_compute = busy - compute
 *   idle breakdown, per stream, cuda_sync left out: the gap before an op
 *             (its start - the previous op's end) is host_wait when its
 *             launch call started after the previous op ended, else
 *             kernel_wait when shorter than 30 µs, else other; of
 *             host_wait, host_wait_launch: the gaps of at most 50 µs
 *             before an op of a launch call (ours: the host's per-launch
 *             overhead, dispatch and the call, the launch_bound part)
 *   launch    pairs (launch call, op) with the same correlation; calls are
 *             cudaLaunchKernel(ExC), cudaLaunchCooperativeKernel,
 *             cudaMemcpyAsync, cudaMemsetAsync, the driver's
 *             cuLaunchKernel(Ex), cuLaunchCooperativeKernel(MultiDevice),
 *             cuLaunch, cuLaunchGrid(Async) and the hip equivalents.  delay =
 *             op start - call end, 0 when negative
 *   gaps      per device, the idle intervals between union groups
 *             (gpu_busy.c) of at least 1 ms
 *   launch time  time in the calls that launched kernels (a graph launch
 *             once), and in those kernels: launch.api_total_ns and
 *             kernel_total_ns; memcpy[].launch_api_ns likewise per row
 *   sync call  a call named *Synchronize*, a synchronous copy (cudaMemcpy,
 *             cuMemcpyHtoD, hipMemcpy...: a copy call without "Async" or
 *             "Peer"), cudaMemset/hipMemset, and an async copy whose op
 *             reads or writes pageable memory (the call waits for the
 *             host); a driver call inside a runtime call of its thread is
 *             part of it.  Blocking copies are the copies among them.
 *   call site  of a call: the nearest Python function open on its thread
 *             that has a source file, and the outermost op above it
 *             (gpu_host.c)
 *   NVML      per device index, from GPU_SAMPLE and GPU_INFO; the index is
 *             taken as the CUDA device id (CUDA_VISIBLE_DEVICES can make
 *             them differ)
 *
 * --hta-compat also rounds every time as HTA's parser does (start up, end
 * down, to whole µs of the source clock, which can make sub-µs ops negative)
 * and drops, when there are two or more distinct ProfilerStep#N names, the
 * CPU events from the start L of the last ProfilerStep on and every GPU op
 * whose correlation is not among the CPU events kept (gpu_busy.c holds the
 * ops back until L is known).  A second accumulator takes every op, for
 * traces with fewer than two step names, where nothing is dropped.
 *
 * What the host did while a GPU was idle (gpu.devices[].host_during_idle)
 * always uses the default definitions (gpu_host.c).
 *
 * Memory: per device, stream, kernel name, function, thread (with its
 * open spans), call site (op, Python function) and API name, memcpy row
 * and call site, NVML device (at most GPU_NVML_MAX); the GPU_TOP_GAPS
 * longest gaps; launch calls until their op is seen (FIFO of LAUNCH_MAX,
 * oldest evicted); at most GPU_SAMPLES_MAX launch delays (a reservoir
 * sample beyond); the --hta-compat FIFO.  Nothing grows with the trace
 * length.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_gpu.h"
#include "gpu_internal.h"

#define LAUNCH_MAX (1u << 18)     /* launch calls waiting for their op */
#define NV_THROTTLE 0xECull /* sw_power_cap hw_slowdown sw_thermal hw_thermal hw_power_brake */
#define NV_IDLE 0x1ull      /* gpu_idle: the clocks are idle clocks */

static int dev_site(struct isc_gpu_ana *g, uint64_t ts, uint32_t pid, uint32_t device, uint64_t size,
		    uint64_t address, bool alloc, bool failed, enum isc_dm_site_kind kind, uint32_t id,
		    struct isc_asite_paired *paired);

int isc_gpu_ana_new(struct isc_gpu_ana **out, struct isc_timeline *t, bool hta_compat, struct isc_series *ser,
		    struct isc_asite_model *sites)
{
	struct isc_gpu_ana *g = calloc(1, sizeof(*g));
	*out = NULL;
	if (!g)
		return -ENOMEM;
	g->t = t;
	g->ser = ser;
	g->asites = sites;
	g->hta = hta_compat;
	/* Kineto times are µs relative to a whole-second base: the µs grid is
	 * where the session epoch's wall-clock time has whole µs */
	g->us_off = (int64_t)(isc_timeline_header_borrow(t)->epoch_realtime_ns % 1000);
	g->acc[0].delay.rng = g->acc[1].delay.rng = 0x9e3779b97f4a7c15ull;
	g->driver_api = -1;
	if (isc_devmem_new(&g->dm)) {
		free(g);
		return -ENOMEM;
	}
	*out = g;
	return 0;
}

/* --hta-compat rounding: start up, end down, to whole µs of the source clock. */
static int64_t ceil_us(const struct isc_gpu_ana *g, int64_t t)
{
	int64_t r = (t + g->us_off) % 1000;
	return r ? t + 1000 - r : t;
}

static int64_t floor_us(const struct isc_gpu_ana *g, int64_t t)
{
	return t - (t + g->us_off) % 1000;
}

/* ---- launch calls ------------------------------------------------------------ */
static void launch_evict_oldest(struct isc_gpu_ana *g)
{
	struct gpu_launch *l = &g->lr[g->lr_head];
	if (l->live)
		isc_umap_del(&g->l_map, l->corr);
	g->lr_head = (g->lr_head + 1) & (g->lr_cap - 1);
	g->lr_n--;
}

static int launch_put(struct isc_gpu_ana *g, const struct isc_tl_event *ev, int64_t ts, int64_t end, unsigned cls,
		      uint32_t site)
{
	uint64_t corr = ev->gpu.correlation;
	if (g->lr_n == LAUNCH_MAX)
		launch_evict_oldest(g);
	if (g->lr_n == g->lr_cap) {
		size_t cap = g->lr_cap ? g->lr_cap * 2 : 1024;
		struct gpu_launch *r = malloc(cap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		for (size_t i = 0; i < g->lr_n; i++)
			r[i] = g->lr[(g->lr_head + i) & (g->lr_cap - 1)];
		free(g->lr);
		g->lr = r;
		g->lr_head = 0;
		g->lr_cap = cap;
		for (size_t i = 0; i < g->lr_n; i++) { /* ring positions changed: re-index */
			uint32_t *slot;
			if (r[i].live && !isc_umap_slot(&g->l_map, r[i].corr, &slot))
				*slot = (uint32_t)i;
		}
	}
	uint32_t *slot;
	if (isc_umap_slot(&g->l_map, corr, &slot))
		return -ENOMEM;
	if (*slot != ISC_UMAP_NONE) {
		struct gpu_launch *o = &g->lr[*slot];
		/* the driver call a runtime call makes shares its correlation id
		 * (CUPTI with both API kinds on): the outer call is the launch,
		 * as the merge links it */
		if (o->live && o->pid == ev->pid && o->tid == ev->tid && (int64_t)ev->ts >= o->ts_exact &&
		    (int64_t)ev->ts <= o->ts_exact + (o->end - o->ts))
			return 0;
		o->live = false; /* a correlation id seen again: the newer call wins */
	}
	size_t pos = (g->lr_head + g->lr_n++) & (g->lr_cap - 1);
	g->lr[pos] = (struct gpu_launch){ .corr = corr, .ts = ts, .end = end, .ts_exact = (int64_t)ev->ts,
					  .end_exact = (int64_t)(ev->ts + ev->gpu.dur_ns), .pid = ev->pid, .tid = ev->tid,
					  .name_id = ev->name_id, .site = site, .cls = (uint16_t)cls,
					  .it_mask = g->it_mask, .py_site = ev->gpu.py_site, .live = true };
	*slot = (uint32_t)pos;
	return 0;
}

/* ---- synchronizing calls ------------------------------------------------- */
int isc_gpu_sync_call(struct gpu_sync *s, uint32_t api_id, uint32_t site, int64_t dur, bool api, bool copy)
{
	bool fresh;
	if (api && isc_gpu_nstat_add(&s->sapi_map, &s->sapi, &s->nsapi, &s->sapi_cap, api_id, 0, dur))
		return -ENOMEM;
	uint32_t i = isc_gpu_map_index(&s->cs_map, (uint64_t)api_id << 32 | site, &s->cs, &s->ncs, &s->cs_cap,
				       sizeof(*s->cs), &fresh);
	if (i == ISC_UMAP_NONE)
		return -ENOMEM;
	s->cs[i].api_id = api_id;
	s->cs[i].site = site;
	s->cs[i].count++;
	s->cs[i].total += dur;
	if (copy) {
		s->bcopies++;
		s->bcopies_ns += dur;
	}
	return 0;
}

void isc_gpu_sync_free(struct gpu_sync *s)
{
	isc_umap_free(&s->sapi_map);
	free(s->sapi);
	isc_umap_free(&s->cs_map);
	free(s->cs);
}

/* A synchronizing call into the run's statistics and those of the iteration slots of mask. */
static int sync_call(struct isc_gpu_ana *g, uint8_t mask, uint32_t api_id, uint32_t site, int64_t dur, bool api,
		     bool copy)
{
	if (isc_gpu_sync_call(&g->sy, api_id, site, dur, api, copy))
		return -ENOMEM;
	for (size_t k = 0; k < g->nits; k++)
		if (mask >> k & 1 && isc_gpu_sync_call(&g->its[k].sync, api_id, site, dur, api, copy))
			return -ENOMEM;
	return 0;
}

/* ---- events ------------------------------------------------------------------------------ */
static int on_span_begin(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	if (isc_gpu_name_class(g, ev->name_id) & GPU_NC_STEP) {
		const char *name = isc_gpu_str_name(g, ev->name_id);
		int64_t ts = g->hta ? ceil_us(g, (int64_t)ev->ts) : (int64_t)ev->ts;
		g->steps++;
		if (!g->step_name && !(g->step_name = strdup(name)))
			return -ENOMEM;
		if (strcmp(g->step_name, name))
			g->steps_distinct = true;
		if (g->hta && g->have_step && ts > g->last_step && isc_gpu_hta_step(g, ts))
			return -ENOMEM;
		if (!g->have_step || ts >= g->last_step) {
			g->last_step = ts;
			free(g->last_step_name);
			if (!(g->last_step_name = strdup(name)))
				return -ENOMEM;
		}
		g->have_step = true;
	}
	return isc_gpu_iter_begin(g, ev) ? -ENOMEM : isc_gpu_host_begin(g, ev);
}

/*
 * A runtime call (cudaMemcpy, cudaLaunchKernel) makes driver calls
 * (cuMemcpy, cuLaunchKernel), which CUPTI records too, on the same thread
 * within its time: such a nested driver call is not counted again as a
 * synchronizing call or a launch, and does not replace a runtime call of
 * the same correlation id in the pairing with an op.  One with an id of
 * its own, or whose op has taken the runtime call already, is kept for
 * the pairing (its op may carry that id), but a launch in a launching
 * runtime call is that call's launch, not another.
 */
static int on_api(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	unsigned cls = isc_gpu_name_class(g, ev->name_id);
	int64_t ts = (int64_t)ev->ts, end = ts + (int64_t)ev->gpu.dur_ns;
	struct gpu_hthread *th = isc_gpu_hthread_get(g, ev->pid, ev->tid);
	if (!th)
		return -ENOMEM;
	bool nested = ev->gpu.kind == 2 && ts < th->rt_end;
	if (nested && (!ev->gpu.correlation || isc_umap_get(&g->l_map, ev->gpu.correlation) != ISC_UMAP_NONE))
		return 0;
	if (ev->gpu.kind == 1 && end > th->rt_end) {
		th->rt_end = end;
		th->rt_launch = (cls & (GPU_NC_LAUNCH | GPU_NC_GRAPH)) != 0;
	}
	if (ev->gpu.flags & ISC_GPU_API_FLAG_ERROR && cls & GPU_NC_ALLOC) { /* out of device memory */
		uint32_t id;
		enum isc_dm_site_kind k = isc_gpu_mem_site(g, ev->pid, ev->tid, ev->gpu.py_site, &id);
		isc_devmem_failure(g->dm, ts, g->last_mem_dev, 0);
		if (dev_site(g, ev->ts, ev->pid, g->last_mem_dev, 0, 0, false, true, k, id, NULL))
			return -ENOMEM; /* the site model names its site (a CUDA out of memory's) */
	}
	if (ev->gpu.kind == 3 && isc_gpu_nstat_add(&g->ovh_map, &g->ovh, &g->novh, &g->ovh_cap, ev->name_id, 0,
						    (int64_t)ev->gpu.dur_ns))
		return -ENOMEM; /* CUPTI's overhead on a thread */
	if (cls & (GPU_NC_LAUNCH | GPU_NC_GRAPH) && !(nested && th->rt_launch))
		g->launch_calls++;
	uint32_t site = cls & (GPU_NC_SITE | GPU_NC_LAUNCH) ? isc_gpu_call_site(g, ev->pid, ev->tid, ev->gpu.py_site)
							  : ISC_UMAP_NONE;
	if (cls & GPU_NC_SYNC && !nested &&
	    sync_call(g, g->it_mask, ev->name_id, site, (int64_t)ev->gpu.dur_ns, true, cls & GPU_NC_BLOCKING_COPY))
		return -ENOMEM;
	if (!ev->gpu.correlation)
		return 0;
	if (g->hta) {
		end = floor_us(g, end);
		ts = ceil_us(g, ts);
	}
	return launch_put(g, ev, ts, end, cls, site);
}

/* Hands the current group of busy_add to timeseries.gpu_busy_pct. */
static void busy_flush(struct isc_gpu_ana *g)
{
	if (g->busy_any && g->ser) /* a time-weighted channel: cannot fail */
		(void)isc_series_interval(g->ser, ISC_SER_GPU_BUSY, (uint64_t)g->busy_s, (uint64_t)g->busy_e, 100);
}

/* timeseries.gpu_busy_pct: ops of all devices by start; a group of overlapping ones goes out when it ends. */
static void busy_add(struct isc_gpu_ana *g, int64_t ts, int64_t end)
{
	if (g->busy_any && ts <= g->busy_e) {
		if (end > g->busy_e)
			g->busy_e = end;
		return;
	}
	busy_flush(g);
	g->busy_any = true;
	g->busy_s = ts;
	g->busy_e = end;
}

static int on_op(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	const struct isc_gpu_fields *f = &ev->gpu;
	struct gpu_op op = { 0 };
	op.ts = (int64_t)ev->ts;
	op.end = op.ts + (int64_t)f->dur_ns;
	op.bytes = f->bytes;
	op.name_id = ev->name_id;
	op.device = f->device;
	op.stream = f->stream;
	op.kind = f->kind;
	op.copy_kind = f->copy_kind;
	op.src_mem = f->src_mem;
	op.dst_mem = f->dst_mem;
	/* Kineto "stream": -1, or the CUDA agent's context sync (no device, no stream) */
	op.streamless = (f->flags & ISC_GPU_FLAG_NO_STREAM) || f->device == ISC_GPU_NONE;
	op.compute = f->kind == ISC_GPU_KERNEL && !(isc_gpu_name_class(g, ev->name_id) & GPU_NC_NONCOMPUTE);
	const char *nm;
	if (f->kind == ISC_GPU_OTHER && (nm = isc_gpu_str_name(g, ev->name_id)) && !strncmp(nm, "overhead", 8) &&
	    isc_gpu_nstat_add(&g->ovh_map, &g->ovh, &g->novh, &g->ovh_cap, ev->name_id, 0, (int64_t)f->dur_ns))
		return -ENOMEM; /* CUPTI's overhead on a device */
	uint32_t li = f->correlation ? isc_umap_get(&g->l_map, f->correlation) : ISC_UMAP_NONE;
	uint32_t pid = 0;
	uint8_t mask = g->it_mask; /* without a launch call: the iterations open at its start */
	int64_t launch_ts = op.ts, launch_end = op.ts;
	/* correlation ids are per process: when the merge linked the op to its
	 * call, a call of another process with the same id is not it */
	if (li != ISC_UMAP_NONE && f->has_link &&
	    (g->lr[li].tid != f->api_tid || g->lr[li].ts_exact != (int64_t)ev->ts - f->launch_gap_ns))
		li = ISC_UMAP_NONE;
	op.site = ISC_UMAP_NONE;
	if (li != ISC_UMAP_NONE) {
		struct gpu_launch *l = &g->lr[li];
		op.has_api = true;
		op.api_ts = l->ts;
		op.api_end = l->end;
		op.api_dur = l->end_exact - l->ts_exact;
		op.api_launch = (l->cls & GPU_NC_LAUNCH) != 0;
		op.site = l->site;
		op.first_of_call = !l->used;
		l->used = true;
		pid = l->pid;
		mask = l->it_mask;
		launch_ts = l->ts_exact;
		launch_end = l->end_exact;
		/* an async copy from or to pageable memory waits for the host */
		if (l->cls & GPU_NC_ASYNC_COPY && op.kind == ISC_GPU_MEMCPY && op.first_of_call &&
		    (op.src_mem == ISC_MEM_PAGEABLE || op.dst_mem == ISC_MEM_PAGEABLE) &&
		    sync_call(g, mask, l->name_id, l->site, op.api_dur, false, true))
			return -ENOMEM;
		/* one call, one op; a graph launch owns many, kept until evicted */
		if (!(l->cls & GPU_NC_GRAPH) && !(f->flags & ISC_GPU_FLAG_GRAPH)) {
			l->live = false;
			isc_umap_del(&g->l_map, f->correlation);
		}
	}
	uint32_t hi = ISC_UMAP_NONE;
	if (op.kind == ISC_GPU_KERNEL || op.kind == ISC_GPU_MEMCPY || op.kind == ISC_GPU_MEMSET) {
		hi = isc_gpu_hdev_index(g, op.device);
		busy_add(g, op.ts, op.end);
		if (hi != ISC_UMAP_NONE) {
			isc_gpu_host_op(g, hi, op.ts, op.end);
			uint32_t *slot;
			if (li != ISC_UMAP_NONE) {
				if (isc_umap_slot(&g->pid_mask, pid, &slot))
					return -ENOMEM;
				*slot = (*slot == ISC_UMAP_NONE ? 0 : *slot) | 1u << hi;
			}
		}
	}
	struct gpu_op exact = op; /* the iterations' statistics take exact times, also under --hta-compat */
	if (exact.has_api) {
		exact.api_ts = launch_ts;
		exact.api_end = launch_end;
	}
	if (isc_gpu_iter_op(g, &exact, mask, launch_ts, hi))
		return -ENOMEM;
	if (!g->hta)
		return isc_gpu_acc_op(&g->acc[0], &op, false);
	op.end = floor_us(g, op.end);
	op.ts = ceil_us(g, op.ts);
	return isc_gpu_hta_op(g, &op, f->correlation != 0);
}

/* DEVICE: id sm_count memory_bytes cc_major cc_minor link_bw_bytes_per_s, name. */
static int on_device(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	bool fresh;
	uint32_t i = isc_gpu_map_index(&g->dname_map, ev->f[0], &g->dd, &g->ndd, &g->dd_cap, sizeof(*g->dd), &fresh);
	if (i == ISC_UMAP_NONE)
		return -ENOMEM;
	char *s = malloc(ev->nbytes + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, ev->bytes, ev->nbytes);
	s[ev->nbytes] = '\0';
	free(g->dd[i].name);
	g->dd[i].name = s;
	g->dd[i].mem = ev->nf > 2 ? ev->f[2] : 0;
	g->dd[i].link_bw = ev->nf > 5 ? ev->f[5] : 0;
	return 0;
}

/* The NVML device of index, added when there is room; NULL otherwise. */
static struct gpu_nvdev *nvdev_get(struct isc_gpu_ana *g, uint64_t index)
{
	for (size_t i = 0; i < g->nnv; i++)
		if (g->nv[i].index == index)
			return &g->nv[i];
	if (g->nnv == GPU_NVML_MAX || index > UINT32_MAX)
		return NULL;
	g->nv[g->nnv] = (struct gpu_nvdev){ .index = (uint32_t)index };
	return &g->nv[g->nnv++];
}

/* GPU_INFO: index pcie_gen pcie_width link_bw_bytes_per_s mem_total. */
static void on_gpu_info(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	struct gpu_nvdev *d = ev->nf >= 5 ? nvdev_get(g, ev->f[0]) : NULL;
	if (!d)
		return;
	d->info = true;
	d->link_bw = ev->f[3];
	d->info_total = ev->f[4];
}

/* Busy time of device id (all ops, every op's accumulator) up to t; 0 before its first op. */
static int64_t dev_busy_at(struct isc_gpu_ana *g, uint32_t id, int64_t t)
{
	uint32_t i = isc_umap_get(&g->acc[0].dev_map, id);
	return i == ISC_UMAP_NONE ? 0 : isc_gpu_union_busy_at(&g->acc[0].devs[i].all, t);
}

/*
 * GPU_SAMPLE: index util_gpu_pct util_mem_pct mem_used mem_total sm_mhz
 * mem_mhz power_mw temp_c clock_event_reasons ...; a query the sampler
 * could not make is 0.  Feeds timeseries.gpu_util_pct (each sample) and
 * gpu_mem_used_bytes (the latest used memory of every device, summed).
 *
 * Throttled work: a sample stands for the interval since the previous
 * sample of its device (its first, since the trace began).  It is a busy
 * sample when GPU work (a kernel, copy or memset of the CUDA device of the
 * same id) ran in that interval and its reasons do not include gpu_idle
 * (idle clocks, whatever ran); a busy sample with a throttle reason
 * (NV_THROTTLE) is throttled work, and the work of its interval the
 * throttled busy time.  Ops arrive by start: at the sample's time every op
 * that started before it is known.
 */
static void on_gpu_sample(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	struct gpu_nvdev *d = ev->nf >= 10 ? nvdev_get(g, ev->f[0]) : NULL;
	uint64_t used = 0;
	if (!d)
		return;
	const uint64_t *f = ev->f;
	int64_t busy = dev_busy_at(g, d->index, (int64_t)ev->ts), work = busy - d->prev_busy;
	d->prev_busy = busy;
	isc_gpu_nv_add(d, f, work);
	for (size_t k = 0; k < g->nits; k++) {
		struct gpu_nvdev *x = g->it_mask >> k & 1 ? isc_gpu_iter_nvdev(g, k, d->index) : NULL;
		if (x)
			isc_gpu_nv_add(x, f, work);
	}
	if (!g->ser)
		return;
	for (size_t i = 0; i < g->nnv; i++)
		used += g->nv[i].used_last;
	/* point channels: cannot fail */
	(void)isc_series_point(g->ser, ISC_SER_GPU_UTIL, ev->ts, (double)f[1]);
	(void)isc_series_point(g->ser, ISC_SER_GPU_MEM, ev->ts, (double)used);
}

void isc_gpu_nv_add(struct gpu_nvdev *d, const uint64_t *f, int64_t work)
{
	d->samples++;
	d->util_sum += (double)f[1];
	d->used_last = f[3];
	if (f[3] > d->used_max)
		d->used_max = f[3];
	if (f[4])
		d->total = f[4];
	if (f[5] && f[5] <= UINT32_MAX && (!d->sm_min || f[5] < d->sm_min))
		d->sm_min = (uint32_t)f[5];
	if (f[5] <= UINT32_MAX && f[5] > d->sm_max)
		d->sm_max = (uint32_t)f[5];
	if (f[7] > d->power_max)
		d->power_max = f[7];
	if (f[8] <= UINT32_MAX && f[8] > d->temp_max)
		d->temp_max = (uint32_t)f[8];
	for (size_t i = 0; i < GPU_NV_REASONS; i++)
		d->reasons[i] += (f[9] & isc_gpu_nv_reasons[i].bit) != 0;
	d->throttled += (f[9] & NV_THROTTLE) != 0;
	if (work > 0 && !(f[9] & NV_IDLE)) {
		d->busy_samples++;
		d->busy_ns += work;
		if (f[5] && f[5] <= UINT32_MAX && f[5] > d->sm_max_busy)
			d->sm_max_busy = (uint32_t)f[5];
		if (f[9] & NV_THROTTLE) {
			d->thr_busy_samples++;
			d->thr_busy_ns += work;
			if (f[5] && f[5] <= UINT32_MAX && (!d->sm_min_thr || f[5] < d->sm_min_thr))
				d->sm_min_thr = (uint32_t)f[5];
		}
	}
}

/*
 * A device memory record into the allocation site model (alloc: an
 * allocation, else a release; failed: an allocation that failed), with
 * its site (isc_gpu_mem_site's): a Python function (its string id and
 * line), an op or a scope (its name), or none; its time bucket in
 * analyze_devmem.c's grid, which the model keeps the site's series on;
 * and as its tag the iteration analyze_devmem.c is in.  *paired (NULL:
 * not wanted): what the model released.
 */
static int dev_site(struct isc_gpu_ana *g, uint64_t ts, uint32_t pid, uint32_t device, uint64_t size,
		    uint64_t address, bool alloc, bool failed, enum isc_dm_site_kind kind, uint32_t id,
		    struct isc_asite_paired *paired)
{
	const struct isc_tl_string *s = kind != ISC_DM_NONE ? isc_timeline_string_borrow(g->t, id) : NULL;
	uint32_t frames[2] = { id, kind == ISC_DM_PYTHON && s ? s->line : 0 };
	struct isc_asite_exact x = {
		.ts = ts, .address = address, .size = size, .pid = pid, .device = device,
		.depth = s ? 1 : 0, .alloc = alloc, .failed = failed, .frames = frames,
		.what = !s ? ISC_ASITE_UNKNOWN : kind == ISC_DM_OP ? ISC_ASITE_OP : kind == ISC_DM_SCOPE ? ISC_ASITE_SCOPE
											   : ISC_ASITE_STACK,
		.tag = isc_devmem_iteration(g->dm),
	};
	if (!failed)
		x.bucket = isc_devmem_bucket(g->dm, (int64_t)ts, &x.shift);
	return isc_asite_exact(g->asites, &x, paired);
}

/* GPU_MEMORY: device stream op(1 alloc, 2 free) mem_kind bytes ...: device memory allocated, net. */
static int on_gpu_memory(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	bool fresh;
	if (ev->nf < 5 || ev->f[3] != ISC_MEM_DEVICE || (ev->f[2] != 1 && ev->f[2] != 2) || ev->f[4] > ISC_ASITE_SIZE_MAX ||
	    ev->f[0] >= UINT32_MAX - 1)
		return 0; /* not a real size or device: neither analyze_devmem.c nor the site model takes it */
	uint32_t i = isc_gpu_map_index(&g->gm_map, ev->f[0], &g->gm, &g->ngm, &g->gm_cap, sizeof(*g->gm), &fresh);
	if (i == ISC_UMAP_NONE)
		return -ENOMEM;
	struct gpu_gmem *m = &g->gm[i];
	m->device = (uint32_t)ev->f[0];
	g->last_mem_dev = m->device;
	m->net += ev->f[2] == 1 ? (int64_t)ev->f[4] : -(int64_t)ev->f[4];
	if (m->net > m->peak)
		m->peak = m->net;
	/* the allocating thread: the call of the same correlation id (CUPTI), else
	 * the [memory] MARK just before (Kineto), else none */
	uint32_t pid = ev->pid, tid = 0, id = 0, li, py_site = 0;
	enum isc_dm_site_kind kind = ISC_DM_NONE;
	bool known = false;
	if (ev->nf > 6 && ev->f[6] && (li = isc_umap_get(&g->l_map, ev->f[6])) != ISC_UMAP_NONE &&
	    g->lr[li].pid == ev->pid) {
		tid = g->lr[li].tid;
		py_site = g->lr[li].py_site;
		known = true;
	} else if (g->kineto && g->mark_pid == ev->pid && g->mark_ts == ev->ts) {
		tid = g->mark_tid;
		known = true;
	}
	if (known)
		kind = isc_gpu_mem_site(g, pid, tid, py_site, &id);
	uint64_t address = ev->nf > 5 ? ev->f[5] : 0;
	bool alloc = ev->f[2] == 1;
	struct isc_asite_paired paired;
	/* the site model pairs the record (and keeps it by site); the device's totals take what it released */
	int rc = dev_site(g, ev->ts, ev->pid, (uint32_t)ev->f[0], ev->f[4], address, alloc, false, kind, id, &paired);
	if (!rc)
		rc = isc_devmem_event(g->dm, (int64_t)ev->ts, (uint32_t)ev->f[0], alloc, ev->f[4], !address, &paired,
				      g->kineto ? ISC_DM_SRC_ALLOCATOR : ISC_DM_SRC_DRIVER);
	if (!rc && ev->nf >= 10 && (ev->f[7] & ISC_GPU_MEM_TOTALS))
		rc = isc_devmem_totals(g->dm, (int64_t)ev->ts, (uint32_t)ev->f[0], ev->f[8], ev->f[9]);
	return rc;
}

/* META cuda.agent.*: the CUDA agent's own cost, written at its exit (cuda_agent.c), summed over processes. */
static void on_agent_meta(struct isc_gpu_ana *g, const char *k, size_t klen, const uint8_t *v, size_t vlen)
{
	static const struct { const char *key; size_t off; } nums[] = {
		{ "cuda.agent.cpu_ns", offsetof(struct isc_gpu_ana, agent_cpu_ns) },
		{ "cuda.agent.records", offsetof(struct isc_gpu_ana, agent_records) },
		{ "cuda.agent.callbacks", offsetof(struct isc_gpu_ana, agent_callbacks) },
		{ "cuda.agent.callback_ns", offsetof(struct isc_gpu_ana, agent_callback_ns) },
	};
	char buf[32];
	if (klen == 21 && !memcmp(k, "cuda.agent.driver_api", 21)) {
		bool on = vlen == 2 && !memcmp(v, "on", 2);
		g->driver_api = on || g->driver_api == 1 ? 1 : 0;
		return;
	}
	if (vlen == 0 || vlen >= sizeof(buf))
		return;
	memcpy(buf, v, vlen);
	buf[vlen] = '\0';
	char *end;
	unsigned long long x = strtoull(buf, &end, 10);
	if (*end)
		return;
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (strlen(nums[i].key) == klen && !memcmp(k, nums[i].key, klen)) {
			*(uint64_t *)((char *)g + nums[i].off) += x;
			g->agent_cost_procs += i == 0; /* a process's cost was written */
		}
}

/* META distributedInfo (JSON): its rank, when it has one; META source=kineto; cuda.agent.*. */
static void on_meta(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	size_t klen = (size_t)ev->f[0];
	static const char key[] = "distributedInfo", src[] = "source", kin[] = "kineto";
	if (klen <= ev->nbytes && klen > 11 && !memcmp(ev->bytes, "cuda.agent.", 11)) {
		on_agent_meta(g, (const char *)ev->bytes, klen, ev->bytes + klen, ev->nbytes - klen);
		return;
	}
	if (klen == sizeof(src) - 1 && klen <= ev->nbytes && !memcmp(ev->bytes, src, klen) &&
	    ev->nbytes - klen == sizeof(kin) - 1 && !memcmp(ev->bytes + klen, kin, sizeof(kin) - 1))
		g->kineto = true;
	if (klen != sizeof(key) - 1 || klen > ev->nbytes || memcmp(ev->bytes, key, klen))
		return;
	cJSON *v = cJSON_ParseWithLength((const char *)ev->bytes + klen, ev->nbytes - klen);
	const cJSON *r = cJSON_GetObjectItemCaseSensitive(v, "rank");
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(v, "world_size");
	if (cJSON_IsNumber(r)) {
		g->have_rank = true;
		g->rank = r->valuedouble;
	}
	if (cJSON_IsNumber(w)) {
		g->have_world = true;
		g->world_size = w->valuedouble;
	}
	cJSON_Delete(v);
}

int isc_gpu_ana_event(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	int rc = 0;
	if ((int64_t)ev->ts > g->last_ts)
		g->last_ts = (int64_t)ev->ts;
	if (!g->have_ts || ev->ts < g->first_ts)
		g->first_ts = ev->ts;
	g->have_ts = true;
	switch (ev->type) {
	case ISC_REC_TL_SPAN_BEGIN:
		rc = on_span_begin(g, ev);
		break;
	case ISC_REC_TL_SPAN_END:
		if (!(rc = isc_gpu_host_end(g, ev)))
			rc = isc_gpu_iter_end(g, ev);
		break;
	case ISC_REC_GPU_API:
		rc = on_api(g, ev);
		break;
	case ISC_REC_GPU_OP:
		rc = on_op(g, ev);
		break;
	case ISC_REC_DEVICE:
		rc = on_device(g, ev);
		break;
	case ISC_REC_META:
		on_meta(g, ev);
		break;
	case ISC_REC_MARK:
		g->mark_pid = ev->pid;
		g->mark_tid = ev->tid;
		g->mark_ts = ev->ts;
		break;
	case ISC_REC_GPU_INFO:
		on_gpu_info(g, ev);
		break;
	case ISC_REC_GPU_SAMPLE:
		on_gpu_sample(g, ev);
		break;
	case ISC_REC_GPU_MEMORY:
		rc = on_gpu_memory(g, ev);
		break;
	case ISC_REC_GPU_AGENT:
		g->agents++;
		break;
	default:
		break;
	}
	return rc ? rc : g->oom ? -ENOMEM : 0;
}

/* Ends the pass and writes root.gpu (gpu_emit.c). */
int isc_gpu_ana_emit(struct isc_gpu_ana *g, cJSON *root, const struct isc_gpu_iter *it)
{
	struct gpu_itslot *slot = it && it->samples >= 2 ? isc_gpu_iter_slot(g, it->name_id, it->step) : NULL;
	struct gpu_acc *a = &g->acc[0];
	isc_gpu_host_finish(g);
	busy_flush(g);
	g->busy_any = false;
	if (g->hta && g->steps_distinct) {
		if (isc_gpu_hta_settle(g, true))
			return -ENOMEM;
		a = &g->acc[1];
	}
	return isc_gpu_emit(g, a, root, slot, it ? it->name : NULL);
}

void isc_gpu_ana_failure(const struct isc_gpu_ana *g, struct isc_oom_gpu *out)
{
	struct isc_asite_failure f;
	memset(out, 0, sizeof(*out));
	out->have = isc_asite_last_failure(g->asites, &f); /* its site: the model's */
	out->at_exception = !out->have && isc_asite_exception_failure(g->asites, &f); /* size 0, depth 0 */
	if (out->have || out->at_exception) {
		out->device = f.device;
		out->ts = (int64_t)f.ts;
		out->bytes = f.size;
		out->site = f.depth ? isc_timeline_string_borrow(g->t, f.frames[0]) : NULL;
	}
	out->live_bytes = isc_devmem_live_total(g->dm, &out->have_live);
}

void isc_gpu_ana_free(struct isc_gpu_ana *g)
{
	if (!g)
		return;
	isc_umap_free(&g->names);
	isc_umap_free(&g->l_map);
	free(g->lr);
	isc_gpu_acc_free(&g->acc[0]);
	isc_gpu_acc_free(&g->acc[1]);
	free(g->pq);
	free(g->step_name);
	free(g->last_step_name);
	isc_umap_free(&g->dname_map);
	for (size_t i = 0; i < g->ndd; i++)
		free(g->dd[i].name);
	free(g->dd);
	isc_umap_free(&g->gm_map);
	free(g->gm);
	isc_gpu_sync_free(&g->sy);
	isc_umap_free(&g->ovh_map);
	free(g->ovh);
	isc_umap_free(&g->site_map);
	free(g->sites);
	isc_gpu_iter_free(g);
	isc_umap_free(&g->pid_mask);
	isc_umap_free(&g->th_map);
	for (size_t i = 0; i < g->nths; i++)
		free(g->ths[i].st);
	free(g->ths);
	isc_umap_free(&g->fn_map);
	free(g->fns);
	isc_devmem_free(g->dm);
	free(g);
}
