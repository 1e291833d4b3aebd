/*
 * analyze_gpu.c - gpu.* of the findings document: per device and stream,
 * with the definitions of Holistic Trace Analysis (HTA) so the numbers can
 * be checked against it, computed inside analyze.c's single pass.
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
 *             kernel_wait when shorter than 30 µs, else other
 *   launch    pairs (launch call, op) with the same correlation; calls are
 *             cudaLaunchKernel(ExC), cudaMemcpyAsync, cudaMemsetAsync, the
 *             driver cuLaunchKernel(Ex) and their hip equivalents.  delay =
 *             op start - call end, 0 when negative
 *   queue     per stream, ops launched (call started) and not finished
 *   gaps      per device, the idle intervals between union groups (below)
 *             of at least 1 ms
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
 *             (call_site() below)
 *   NVML      per device index, from GPU_SAMPLE and GPU_INFO; the index is
 *             taken as the CUDA device id (CUDA_VISIBLE_DEVICES can make
 *             them differ)
 *
 * Union of intervals arriving by start, as HTA's merge_kernel_intervals:
 *
 *     |----a----|                         a, b: one group, end max(a, b)
 *         |---b---|      |--c--|          c starts after every end so far
 *     ^ first       ^ cummax  ^ group 2   busy = sum of group lengths;
 *                                         span = last group end - first
 *
 * --hta-compat also rounds every time as HTA's parser does (start up, end
 * down, to whole µs of the source clock, which can make sub-µs ops negative)
 * and drops, when there are two or more distinct ProfilerStep#N names, the
 * CPU events from the start L of the last ProfilerStep on and every GPU op
 * whose correlation is not among the CPU events kept.  L is known only at
 * the end.  An op launched before the latest step start seen so far is
 * kept for sure; one launched later is kept only if another step begins.
 * Ops reach the "kept" accumulator through a FIFO holding what arrived
 * since the latest step start (statistics need ops in start order, so a
 * sure op queues behind unsure ones):
 *
 *   step k at L_k            step k+1 at L_k+1                  end of pass
 *   ---|------------------------|----------------------------------|
 *       ops launched >= L_k wait  L_k+1 > their launch: the FIFO  FIFO ops
 *       in the FIFO               is fed to "kept", emptied       launched
 *                                                                 >= L: gone
 *
 * The FIFO holds one step's ops at most, capped at PENDING_MAX (beyond it
 * the oldest is settled as if no further step came, and step_rule says
 * so).  A second accumulator takes every op, for traces with fewer than two
 * step names, where nothing is dropped.
 *
 * What the host did while a GPU was idle (gpu.devices[].host_during_idle)
 * always uses the default definitions: idle_cum(t), the idle time of the
 * device from its first op up to t, is known for any t up to the current
 * event, so a CPU span [B, E] overlaps idle_cum(E) - idle_cum(B) of idle
 * time (snapshot at the span's begin).  The part after the device's latest
 * op end (its "tail") counts only once a later op shows the device was
 * still in use: it stays pending per function until then, and is dropped
 * at the end of the pass.  A span counts for the devices its process
 * launched work on.
 *
 * Memory: per device, stream, kernel name, function, thread (with its
 * open spans), call site (op, Python function) and API name, memcpy row
 * and call site, NVML device (at most NVML_MAX); the TOP_GAPS longest gaps;
 * launch calls until their op is seen (FIFO of LAUNCH_MAX, oldest
 * evicted); at most SAMPLES_MAX launch delays (a reservoir sample beyond);
 * the FIFO above.  Nothing grows with the trace length.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_devmem.h"
#include "analyze_gpu.h"
#include "isc_findings.h" /* ISC_LAUNCH_CALL_LONG_NS */
#include "isc_util.h"
#include "isc_jbuild.h"

#define GNONE ISC_UMAP_NONE
#define MAX_HDEV 8                /* devices followed for host_during_idle */
#define LAUNCH_MAX (1u << 18)     /* launch calls waiting for their op */
#define PENDING_MAX (1u << 20)    /* --hta-compat FIFO */
#define SAMPLES_MAX (1u << 20)    /* launch delays kept for the quantiles */
#define QUEUE_MAX (1u << 16)      /* ops in flight followed per stream */
#define KERNEL_WAIT_NS 30000      /* HTA's consecutive_kernel_delay */
#define SHORT_KERNEL_NS 10000
#define LONG_DELAY_NS 100000
#define TOP_KERNELS_MAX 50
#define TOP_HOST 10
#define GAP_NS 1000000            /* gpu.gaps threshold */
#define TOP_GAPS 5
#define TOP_SITES 5
#define NVML_MAX 64               /* NVML devices followed (as the sampler) */

/* qsort, which must not be given a NULL array even when empty. */
static void sort_n(void *p, size_t n, size_t sz, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(p, n, sz, cmp);
}

/* Index stored in map m for key, or a new element of *arr (zeroed) at index *n. */
static uint32_t map_index(struct isc_umap *m, uint64_t key, void *arr, size_t *n, size_t *cap, size_t sz, bool *fresh)
{
	uint32_t *slot;
	*fresh = false;
	if (isc_umap_slot(m, key, &slot))
		return GNONE;
	if (*slot != GNONE)
		return *slot;
	if (isc_grow(arr, cap, *n, sz))
		return GNONE; /* the key stays with GNONE: looked up again next time */
	memset((char *)*(void **)arr + *n * sz, 0, sz);
	*slot = (uint32_t)*n;
	*fresh = true;
	return (uint32_t)(*n)++;
}

/* ---- names --------------------------------------------------------------- */
enum {
	NC_KNOWN = 1,
	NC_STEP = 2,          /* ProfilerStep#N */
	NC_LAUNCH = 4,        /* a launch call of the launch statistics */
	NC_GRAPH = 8,         /* a graph launch: one call, many ops */
	NC_SYNC = 16,         /* a call that blocks the host on the GPU */
	NC_NONCOMPUTE = 32,   /* an op name HTA does not count as compute */
	NC_BLOCKING_COPY = 64, /* a synchronous copy call (cudaMemcpy, cuMemcpyHtoD, hipMemcpy...) */
	NC_ASYNC_COPY = 128,  /* an asynchronous copy call: blocking when host memory is pageable */
	NC_SITE = 256,        /* a call whose call site is kept: syncs, copies, memsets, graph launches */
	NC_ALLOC = 512,       /* a device memory allocation call (cudaMalloc, cuMemAlloc, hipMalloc...) */
};

/* s is name or name + "_suffix" (cudaLaunchKernel_ptsz, ..._v11060). */
static bool is_api(const char *s, const char *name)
{
	size_t n = strlen(name);
	return !strncmp(s, name, n) && (s[n] == '\0' || s[n] == '_');
}

static unsigned classify(const char *s)
{
	static const char *const launch[] = {
		"cudaLaunchKernel", "cudaLaunchKernelExC", "cudaMemcpyAsync", "cudaMemsetAsync",
		"cuLaunchKernel", "cuLaunchKernelEx", "hipLaunchKernel", "hipExtLaunchKernel",
		"hipModuleLaunchKernel", "hipExtModuleLaunchKernel", "hipMemcpyAsync", "hipMemsetAsync",
	};
	static const char *const blocking[] = { "cudaMemset", "hipMemset" };
	unsigned c = NC_KNOWN;
	if (!strncmp(s, "ProfilerStep", 12))
		c |= NC_STEP;
	for (size_t i = 0; i < sizeof(launch) / sizeof(launch[0]); i++)
		if (is_api(s, launch[i]))
			c |= NC_LAUNCH;
	if (strstr(s, "GraphLaunch"))
		c |= NC_GRAPH;
	if (strstr(s, "Synchronize"))
		c |= NC_SYNC;
	for (size_t i = 0; i < sizeof(blocking) / sizeof(blocking[0]); i++)
		if (is_api(s, blocking[i]))
			c |= NC_SYNC;
	/* copy calls; a peer copy does not wait for the host, async or not */
	if ((!strncmp(s, "cudaMemcpy", 10) || !strncmp(s, "cuMemcpy", 8) || !strncmp(s, "hipMemcpy", 9)) &&
	    !strstr(s, "Peer"))
		c |= strstr(s, "Async") ? NC_ASYNC_COPY : NC_BLOCKING_COPY | NC_SYNC;
	if (strstr(s, "Memcpy") || strstr(s, "Memset") || strcasestr(s, "nccl"))
		c |= NC_NONCOMPUTE;
	if (c & (NC_SYNC | NC_GRAPH) || strstr(s, "Memcpy") || strstr(s, "Memset"))
		c |= NC_SITE;
	if (!strncmp(s, "cudaMalloc", 10) || !strncmp(s, "cuMemAlloc", 10) || !strncmp(s, "cuMemCreate", 11) ||
	    !strncmp(s, "hipMalloc", 9))
		c |= NC_ALLOC;
	return c;
}

/* ---- accumulated statistics of one set of ops ----------------------------- */
/* One op as the statistics see it; times in ns (--hta-compat: rounded). */
struct gop {
	int64_t ts, end;
	int64_t api_ts, api_end; /* launch call, when has_api */
	int64_t api_dur;         /* its exact duration */
	uint64_t bytes;
	uint32_t name_id, device, stream;
	uint32_t site;           /* the call's call site (struct site), GNONE when not kept */
	uint8_t kind, copy_kind, src_mem, dst_mem;
	bool has_api, api_launch, compute, streamless;
	bool first_of_call;      /* the first op of its call (a graph launch has many) */
};

struct ustate { /* union of intervals arriving by start */
	bool any;
	int64_t first, g_s, g_e, cummax, busy;
};

struct adev {
	uint32_t id;
	uint64_t ops;
	struct ustate all, comp;
};

struct astream {
	uint32_t device, id;
	uint64_t ops;
	bool has_prev;
	int64_t prev_end, host_wait, kernel_wait, other;
	/* ends of the ops in flight (ascending, a ring), for the queue length */
	int64_t *q;
	size_t qh, qn, qcap;
	uint64_t q_max;
	bool q_any;
	int64_t q_first, q_last, q_sum;
};

struct kstat {
	uint32_t name_id;
	uint64_t count;
	int64_t total, min, max;
};

struct mstat {
	uint32_t id; /* its index before the output sorts the rows */
	uint8_t kind, copy_kind, src_mem, dst_mem;
	uint64_t count, bytes;
	int64_t total, api; /* api: time in the launching calls */
};

struct mcsite { /* bytes a call site launched in one memcpy row */
	uint32_t row, site;
	uint64_t bytes, count;
};

struct gap { /* an idle interval of a device */
	uint32_t device;
	int64_t start, end;
};

struct nstat { /* count and time by name */
	uint32_t name_id;   /* 0: an unnamed sync op, by sync_kind */
	uint8_t sync_kind;  /* enum isc_sync_kind */
	uint64_t count;
	int64_t total;
};

/* Up to SAMPLES_MAX values; a uniform reservoir sample beyond (fixed seed). */
struct samples {
	int64_t *v;
	size_t n, cap;
	uint64_t seen, rng;
	int64_t max;
};

struct acc {
	struct isc_umap dev_map, st_map, k_map, s_map, mc_map;
	struct adev *devs;
	size_t ndevs, devs_cap;
	struct astream *sts;
	size_t nsts, sts_cap;
	struct kstat *ks;
	size_t nks, ks_cap;
	struct mstat *ms;
	size_t nms, ms_cap;
	struct nstat *ss;
	size_t nss, ss_cap;
	struct mcsite *mcs;
	size_t nmcs, mcs_cap;
	uint64_t ops, kernels, short_kernels, no_api;
	uint64_t launches, shorter, long_call, long_delay;
	int64_t launch_api, launch_kernels; /* kernels with a launch call: time in the calls, in the kernels */
	struct samples delay;
	uint64_t gaps;
	int64_t gaps_total;
	struct gap top_gaps[TOP_GAPS]; /* longest first */
	size_t ntop_gaps;
};

static void u_add(struct ustate *u, int64_t s, int64_t e)
{
	if (!u->any) {
		u->any = true;
		u->first = u->g_s = s;
		u->g_e = u->cummax = e;
		return;
	}
	if (s > u->cummax) {
		u->busy += u->g_e - u->g_s;
		u->g_s = s;
		u->g_e = e;
	} else if (e > u->g_e) {
		u->g_e = e;
	}
	if (e > u->cummax)
		u->cummax = e;
}

static int64_t u_busy(const struct ustate *u)
{
	return u->any ? u->busy + u->g_e - u->g_s : 0;
}

static int64_t u_span(const struct ustate *u)
{
	return u->any ? u->g_e - u->first : 0;
}

static int samples_add(struct samples *s, int64_t x)
{
	if (!s->seen++ || x > s->max)
		s->max = x;
	if (s->n < SAMPLES_MAX) {
		if (isc_grow(&s->v, &s->cap, s->n, sizeof(*s->v)))
			return -ENOMEM;
		s->v[s->n++] = x;
		return 0;
	}
	s->rng ^= s->rng << 13; /* xorshift64 */
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	uint64_t j = s->rng % s->seen;
	if (j < SAMPLES_MAX)
		s->v[j] = x;
	return 0;
}

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

/*
 * Queue length of stream s at the launch of an op that ends at end: ops
 * launched at or before launch and not finished.  Ops of one stream run in
 * launch order, so the ends of those in flight are ascending: pop the
 * finished ones from the front, push this one.
 */
static int queue_push(struct astream *s, int64_t launch, int64_t end)
{
	while (s->qn && s->q[s->qh] <= launch) {
		s->qh = (s->qh + 1) & (s->qcap - 1);
		s->qn--;
	}
	if (s->qn == QUEUE_MAX) { /* forget the oldest: the max may then be low */
		s->qh = (s->qh + 1) & (s->qcap - 1);
		s->qn--;
	}
	if (s->qn == s->qcap) {
		size_t cap = s->qcap ? s->qcap * 2 : 64;
		int64_t *q = malloc(cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		for (size_t i = 0; i < s->qn; i++)
			q[i] = s->q[(s->qh + i) & (s->qcap - 1)];
		free(s->q);
		s->q = q;
		s->qh = 0;
		s->qcap = cap;
	}
	s->q[(s->qh + s->qn++) & (s->qcap - 1)] = end;
	if (s->qn > s->q_max)
		s->q_max = s->qn;
	if (!s->q_any || launch < s->q_first)
		s->q_first = launch;
	if (!s->q_any || end > s->q_last)
		s->q_last = end;
	s->q_any = true;
	if (end > launch)
		s->q_sum += end - launch;
	return 0;
}

/* Adds dur to the row of name_id, or of sync_kind when name_id is 0 (a sync op with no name). */
static int add_nstat(struct isc_umap *m, struct nstat **arr, size_t *n, size_t *cap, uint32_t name_id, uint8_t sync_kind,
		     int64_t dur)
{
	bool fresh;
	uint32_t i = map_index(m, name_id ? name_id : (uint64_t)1 << 32 | sync_kind, arr, n, cap, sizeof(**arr), &fresh);
	if (i == GNONE)
		return -ENOMEM;
	(*arr)[i].name_id = name_id;
	(*arr)[i].sync_kind = sync_kind;
	(*arr)[i].count++;
	(*arr)[i].total += dur;
	return 0;
}

/* Adds op to the union of device d; a gap of at least GAP_NS before it is counted and ranked. */
static void dev_add(struct acc *a, struct adev *d, const struct gop *op)
{
	struct ustate *u = &d->all;
	if (u->any && op->ts - u->cummax >= GAP_NS) {
		struct gap x = { d->id, u->cummax, op->ts };
		size_t i = a->ntop_gaps;
		a->gaps++;
		a->gaps_total += x.end - x.start;
		while (i > 0 && a->top_gaps[i - 1].end - a->top_gaps[i - 1].start < x.end - x.start)
			i--; /* equal lengths: the earlier gap stays first */
		if (i < TOP_GAPS) {
			size_t n = a->ntop_gaps < TOP_GAPS ? a->ntop_gaps++ : TOP_GAPS - 1;
			memmove(&a->top_gaps[i + 1], &a->top_gaps[i], (n - i) * sizeof(x));
			a->top_gaps[i] = x;
		}
	}
	u_add(u, op->ts, op->end);
}

/* Counts the bytes of op for its call site in memcpy row m. */
static int mcsite_add(struct acc *a, const struct mstat *m, const struct gop *op)
{
	bool fresh;
	if (op->site == GNONE)
		return 0;
	uint32_t j = map_index(&a->mc_map, (uint64_t)m->id << 32 | op->site, &a->mcs, &a->nmcs, &a->mcs_cap,
			       sizeof(*a->mcs), &fresh);
	if (j == GNONE)
		return -ENOMEM;
	a->mcs[j].row = m->id;
	a->mcs[j].site = op->site;
	a->mcs[j].bytes += op->bytes;
	a->mcs[j].count++;
	return 0;
}

/* Adds one op to the statistics; hta selects which ops count as GPU time. */
static int acc_op(struct acc *a, const struct gop *op, bool hta)
{
	int64_t dur = op->end - op->ts;
	bool fresh;
	if (op->kind == ISC_GPU_SYNC) {
		a->ops++;
		if (add_nstat(&a->s_map, &a->ss, &a->nss, &a->ss_cap, op->name_id, op->copy_kind, dur))
			return -ENOMEM;
		if (!hta || op->streamless)
			return 0;
	} else if (op->kind == ISC_GPU_KERNEL || op->kind == ISC_GPU_MEMCPY || op->kind == ISC_GPU_MEMSET) {
		a->ops++;
	} else {
		return 0; /* annotations (ISC_GPU_FLAG_ANNOTATION) and unknown kinds */
	}
	uint32_t di = map_index(&a->dev_map, op->device, &a->devs, &a->ndevs, &a->devs_cap, sizeof(*a->devs), &fresh);
	if (di == GNONE)
		return -ENOMEM;
	struct adev *d = &a->devs[di];
	d->id = op->device;
	d->ops++;
	dev_add(a, d, op);
	if (op->compute)
		u_add(&d->comp, op->ts, op->end);
	if (op->kind == ISC_GPU_SYNC)
		return 0;

	uint32_t si = map_index(&a->st_map, (uint64_t)op->device << 32 | op->stream, &a->sts, &a->nsts, &a->sts_cap,
				sizeof(*a->sts), &fresh);
	if (si == GNONE)
		return -ENOMEM;
	struct astream *s = &a->sts[si];
	s->device = op->device;
	s->id = op->stream;
	s->ops++;
	if (s->has_prev) {
		int64_t gap = op->ts - s->prev_end;
		if (op->has_api && op->api_ts > s->prev_end)
			s->host_wait += gap;
		else if (gap < KERNEL_WAIT_NS)
			s->kernel_wait += gap;
		else
			s->other += gap;
	}
	s->has_prev = true;
	s->prev_end = op->end;
	if (op->has_api && queue_push(s, op->api_ts, op->end))
		return -ENOMEM;
	if (!op->has_api)
		a->no_api++;

	if (op->kind == ISC_GPU_KERNEL) {
		uint32_t ki = map_index(&a->k_map, op->name_id, &a->ks, &a->nks, &a->ks_cap, sizeof(*a->ks), &fresh);
		if (ki == GNONE)
			return -ENOMEM;
		struct kstat *k = &a->ks[ki];
		k->name_id = op->name_id;
		if (fresh || dur < k->min)
			k->min = dur;
		if (fresh || dur > k->max)
			k->max = dur;
		k->count++;
		k->total += dur;
		a->kernels++;
		a->short_kernels += dur < SHORT_KERNEL_NS;
		if (op->has_api) {
			a->launch_kernels += dur;
			a->launch_api += op->first_of_call ? op->api_dur : 0;
		}
	} else {
		size_t i = 0;
		while (i < a->nms && !(a->ms[i].kind == op->kind && a->ms[i].copy_kind == op->copy_kind &&
				       a->ms[i].src_mem == op->src_mem && a->ms[i].dst_mem == op->dst_mem))
			i++;
		if (i == a->nms) {
			if (isc_grow(&a->ms, &a->ms_cap, a->nms, sizeof(*a->ms)))
				return -ENOMEM;
			a->ms[a->nms] = (struct mstat){ .id = (uint32_t)a->nms, .kind = op->kind, .copy_kind = op->copy_kind,
							.src_mem = op->src_mem, .dst_mem = op->dst_mem };
			a->nms++;
		}
		a->ms[i].count++;
		a->ms[i].bytes += op->bytes;
		a->ms[i].total += dur;
		a->ms[i].api += op->has_api && op->first_of_call ? op->api_dur : 0;
		if (mcsite_add(a, &a->ms[i], op))
			return -ENOMEM;
	}

	if (op->has_api && op->api_launch) {
		int64_t call = op->api_end - op->api_ts, delay = op->ts - op->api_end;
		if (delay < 0)
			delay = 0;
		a->launches++;
		a->shorter += dur < call;
		a->long_call += call > ISC_LAUNCH_CALL_LONG_NS;
		a->long_delay += delay > LONG_DELAY_NS;
		if (samples_add(&a->delay, delay))
			return -ENOMEM;
	}
	return 0;
}

static void acc_free(struct acc *a)
{
	isc_umap_free(&a->dev_map);
	isc_umap_free(&a->st_map);
	isc_umap_free(&a->k_map);
	isc_umap_free(&a->s_map);
	isc_umap_free(&a->mc_map);
	free(a->mcs);
	for (size_t i = 0; i < a->nsts; i++)
		free(a->sts[i].q);
	free(a->devs);
	free(a->sts);
	free(a->ks);
	free(a->ms);
	free(a->ss);
	free(a->delay.v);
}

/* ---- host activity while a device is idle ---------------------------------- */
struct hdev { /* default-definition union of one device, live */
	uint32_t id;
	bool any;
	int64_t cur_end, closed;
	uint64_t seq; /* ops seen: a pending tail is real once seq moves on */
};

struct hframe {
	uint64_t span_id;
	uint32_t name_id;
	uint8_t kind;
	bool outermost;
	int64_t begin;
	int64_t snap[MAX_HDEV];  /* idle_cum at the begin */
	int64_t cidle[MAX_HDEV]; /* idle overlap of the direct children */
	int64_t ctail[MAX_HDEV]; /* the pending part of it, as of cseq */
	uint64_t cseq[MAX_HDEV];
};

struct hthread {
	uint32_t pid;
	struct hframe *st;
	size_t depth, cap;
	int64_t rt_end; /* end of its latest runtime API call */
};

struct hfn { /* one function on one device */
	uint32_t name_id;
	uint8_t kind, hdev;
	int64_t idle, self, ptail, pself; /* confirmed; pending since pseq */
	uint64_t pseq;
};

/* ---- the analysis ----------------------------------------------------------- */
struct pend {
	struct gop op;
	bool sure; /* launched before the latest step start */
};

struct launch {
	uint64_t corr;
	int64_t ts, end;   /* rounded under --hta-compat */
	int64_t ts_exact, end_exact;
	uint32_t pid, tid, name_id;
	uint32_t site;     /* its call site when NC_SITE, else GNONE */
	uint16_t cls;      /* NC_* bits of the call's name */
	bool live, used;   /* used: an op was paired with it */
};

/* A call site: the op a Python function called, and that function (name ids, 0 = none). */
struct site {
	uint32_t op_id, py_id;
};

struct csite { /* synchronizing calls of one name at one call site */
	uint32_t api_id, site;
	uint64_t count;
	int64_t total;
};

struct ddev { /* a DEVICE record */
	char *name;
	uint64_t mem, link_bw; /* 0: unknown */
};

/* NVML clock-event reasons (nvmlClocksEventReason* / nvmlClocksThrottleReason* of nvml.h). */
static const struct {
	uint64_t bit;
	const char *name;
} nv_reasons[] = {
	{ 0x1, "gpu_idle" },       { 0x2, "applications_clocks" }, { 0x4, "sw_power_cap" },
	{ 0x8, "hw_slowdown" },    { 0x10, "sync_boost" },         { 0x20, "sw_thermal" },
	{ 0x40, "hw_thermal" },    { 0x80, "hw_power_brake" },     { 0x100, "display_clocks" },
};
#define NV_REASONS (sizeof(nv_reasons) / sizeof(nv_reasons[0]))
#define NV_THROTTLE 0xECull /* sw_power_cap hw_slowdown sw_thermal hw_thermal hw_power_brake */

struct nvdev { /* the NVML samples of one device index */
	uint32_t index;
	bool info;                  /* a GPU_INFO was seen */
	uint64_t link_bw, info_total; /* from GPU_INFO */
	uint64_t samples, used_last, used_max, total, power_max, throttled, reasons[NV_REASONS];
	uint32_t sm_min, sm_max, temp_max; /* sm_min: 0 until a nonzero clock is seen */
	double util_sum;
};

struct gmem { /* GPU_MEMORY device allocations of one device */
	uint32_t device;
	int64_t net, peak;
};

struct isc_gpu_ana {
	struct isc_timeline *t;
	struct isc_series *ser; /* timeseries.gpu_* (borrowed, may be NULL) */
	bool hta, oom;
	int64_t us_off; /* --hta-compat: ns offset of the source µs grid */
	struct isc_umap names; /* name_id -> NC_* */
	/* launch calls in arrival order (a ring), indexed by correlation */
	struct launch *lr;
	size_t lr_head, lr_n, lr_cap;
	struct isc_umap l_map;
	/* acc[0]: every op; acc[1]: --hta-compat, the ops kept by the step rule */
	struct acc acc[2];
	struct pend *pq;
	size_t pq_head, pq_n, pq_cap;
	uint64_t pq_forced;
	/* ProfilerStep annotations */
	uint64_t steps;
	char *step_name;       /* the first name seen */
	bool steps_distinct;   /* a second name was seen */
	bool have_step;
	int64_t last_step;     /* start of the latest (rounded under --hta-compat) */
	char *last_step_name;
	/* devices and metadata */
	struct isc_umap dname_map; /* device id -> dd[] */
	struct ddev *dd;
	size_t ndd, dd_cap;
	struct nvdev nv[NVML_MAX];
	size_t nnv;
	struct isc_umap gm_map; /* device id -> gm[] */
	struct gmem *gm;
	size_t ngm, gm_cap;
	bool have_rank, have_world;
	double rank, world_size;
	/* device memory by site (analyze_devmem.c) */
	struct isc_devmem *dm;
	bool kineto;               /* META source=kineto: GPU_MEMORY records follow their [memory] MARK */
	uint32_t mark_pid, mark_tid; /* the latest MARK */
	uint32_t last_mem_dev;     /* device of the latest GPU_MEMORY: a failed allocation's (API records have none) */
	uint64_t mark_ts;
	/* synchronising calls */
	struct isc_umap sapi_map;
	struct nstat *sapi;
	size_t nsapi, sapi_cap;
	struct isc_umap site_map; /* op_id << 32 | py_id -> sites[] */
	struct site *sites;
	size_t nsites, sites_cap;
	struct isc_umap cs_map;   /* api name_id << 32 | site -> cs[] */
	struct csite *cs;
	size_t ncs, cs_cap;
	uint64_t bcopies;     /* blocking copies: calls, time in them */
	int64_t bcopies_ns;
	/* timeseries.gpu_busy_pct: the union of all devices' ops, current group */
	bool busy_any;
	int64_t busy_s, busy_e;
	bool have_ts;
	uint64_t first_ts; /* summary.start_ns */
	/* host during idle */
	struct hdev hd[MAX_HDEV];
	size_t nhd;
	struct isc_umap pid_mask; /* pid -> bit set of hd[] it launched on */
	struct isc_umap th_map;
	struct hthread *ths;
	size_t nths, ths_cap;
	struct isc_umap fn_map;
	struct hfn *fns;
	size_t nfns, fns_cap;
	int64_t last_ts;
};

static const char *str_name(const struct isc_gpu_ana *g, uint32_t id)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(g->t, id);
	return s ? s->name : NULL;
}

static unsigned name_class(struct isc_gpu_ana *g, uint32_t id)
{
	uint32_t *slot;
	if (isc_umap_slot(&g->names, id, &slot)) {
		g->oom = true;
		return 0;
	}
	if (*slot == GNONE) {
		const char *s = str_name(g, id);
		*slot = s ? classify(s) : NC_KNOWN;
	}
	return *slot;
}

int isc_gpu_ana_new(struct isc_gpu_ana **out, struct isc_timeline *t, bool hta_compat, struct isc_series *ser)
{
	struct isc_gpu_ana *g = calloc(1, sizeof(*g));
	*out = NULL;
	if (!g)
		return -ENOMEM;
	g->t = t;
	g->ser = ser;
	g->hta = hta_compat;
	/* Kineto times are µs relative to a whole-second base: the µs grid is
	 * where the session epoch's wall-clock time has whole µs */
	g->us_off = (int64_t)(isc_timeline_header_borrow(t)->epoch_realtime_ns % 1000);
	g->acc[0].delay.rng = g->acc[1].delay.rng = 0x9e3779b97f4a7c15ull;
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
	struct launch *l = &g->lr[g->lr_head];
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
		struct launch *r = malloc(cap * sizeof(*r));
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
	if (*slot != GNONE) {
		struct launch *o = &g->lr[*slot];
		/* the driver call a runtime call makes shares its correlation id
		 * (CUPTI with both API kinds on): the outer call is the launch,
		 * as the merge links it */
		if (o->live && o->pid == ev->pid && o->tid == ev->tid && (int64_t)ev->ts >= o->ts_exact &&
		    (int64_t)ev->ts <= o->ts_exact + (o->end - o->ts))
			return 0;
		o->live = false; /* a correlation id seen again: the newer call wins */
	}
	size_t pos = (g->lr_head + g->lr_n++) & (g->lr_cap - 1);
	g->lr[pos] = (struct launch){ .corr = corr, .ts = ts, .end = end, .ts_exact = (int64_t)ev->ts,
				      .end_exact = (int64_t)(ev->ts + ev->gpu.dur_ns), .pid = ev->pid, .tid = ev->tid,
				      .name_id = ev->name_id, .site = site, .cls = (uint16_t)cls, .live = true };
	*slot = (uint32_t)pos;
	return 0;
}

/* ---- host spans ------------------------------------------------------------------- */
static int64_t idle_cum(const struct hdev *h, int64_t t)
{
	if (!h->any)
		return 0;
	return h->closed + (t > h->cur_end ? t - h->cur_end : 0);
}

static struct hthread *hthread_get(struct isc_gpu_ana *g, uint32_t pid, uint32_t tid)
{
	bool fresh;
	uint32_t i = map_index(&g->th_map, (uint64_t)pid << 32 | tid, &g->ths, &g->nths, &g->ths_cap, sizeof(*g->ths),
			       &fresh);
	if (i == GNONE)
		return NULL;
	g->ths[i].pid = pid;
	return &g->ths[i];
}

static int host_begin(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	struct hthread *th = hthread_get(g, ev->pid, ev->tid);
	if (!th || isc_grow(&th->st, &th->cap, th->depth, sizeof(*th->st)))
		return -ENOMEM;
	struct hframe *f = &th->st[th->depth];
	memset(f, 0, sizeof(*f));
	f->span_id = ev->span_id;
	f->name_id = ev->name_id;
	f->kind = ev->kind;
	f->begin = (int64_t)ev->ts;
	f->outermost = true;
	for (size_t i = 0; i < th->depth && f->outermost; i++)
		if (th->st[i].name_id == ev->name_id && th->st[i].kind == ev->kind)
			f->outermost = false;
	for (size_t i = 0; i < g->nhd; i++)
		f->snap[i] = idle_cum(&g->hd[i], f->begin);
	th->depth++;
	return 0;
}

/* Adds an overlap to function fn, of which tail (and stail of the self part) is pending as of seq. */
static void hfn_add(struct hfn *f, bool outer, int64_t incl, int64_t tail, int64_t self, int64_t stail, uint64_t seq)
{
	if (f->pseq != seq) { /* an op came since: the pending part was idle time */
		f->idle += f->ptail;
		f->self += f->pself;
		f->ptail = f->pself = 0;
		f->pseq = seq;
	}
	if (outer) {
		f->idle += incl - tail;
		f->ptail += tail;
	}
	f->self += self - stail;
	f->pself += stail;
}

/* Pops the top frame of th at end. */
static int host_pop(struct isc_gpu_ana *g, struct hthread *th, int64_t end)
{
	struct hframe *f = &th->st[th->depth - 1], *parent = th->depth > 1 ? f - 1 : NULL;
	/* ProfilerStep#N (an op in old Kineto files) is transparent like a scope */
	bool fn = (f->kind == ISC_SPAN_PYTHON || f->kind == ISC_SPAN_OP) && !(name_class(g, f->name_id) & NC_STEP);
	uint32_t mask = isc_umap_get(&g->pid_mask, th->pid);
	if (mask == GNONE)
		mask = 0;
	for (size_t i = 0; i < g->nhd; i++) {
		const struct hdev *h = &g->hd[i];
		int64_t incl = idle_cum(h, end) - f->snap[i];
		int64_t from = f->begin > h->cur_end ? f->begin : h->cur_end;
		int64_t tail = h->any && end > from ? end - from : 0;
		int64_t ctail = f->cseq[i] == h->seq ? f->ctail[i] : 0;
		int64_t up = fn ? incl : f->cidle[i], uptail = fn ? tail : ctail;
		if (fn && (mask >> i & 1) && incl > 0) {
			bool fresh;
			uint64_t key = (uint64_t)i << 40 | (uint64_t)f->kind << 32 | f->name_id;
			uint32_t k = map_index(&g->fn_map, key, &g->fns, &g->nfns, &g->fns_cap, sizeof(*g->fns), &fresh);
			if (k == GNONE)
				return -ENOMEM;
			struct hfn *s = &g->fns[k];
			if (fresh) {
				s->name_id = f->name_id;
				s->kind = f->kind;
				s->hdev = (uint8_t)i;
				s->pseq = h->seq;
			}
			hfn_add(s, f->outermost, incl, tail, incl - f->cidle[i], tail - ctail, h->seq);
		}
		if (parent) { /* scopes and unknown kinds pass their children's overlap up */
			parent->cidle[i] += up;
			if (parent->cseq[i] != h->seq) {
				parent->ctail[i] = 0;
				parent->cseq[i] = h->seq;
			}
			parent->ctail[i] += uptail;
		}
	}
	th->depth--;
	return 0;
}

/*
 * Whether frame k of th ends an iteration for the device memory analysis:
 * a scope with no scope below it on its thread (ProfilerStep#N,
 * scope("step")), DataLoader annotations left out.
 */
static bool is_iteration_scope(struct isc_gpu_ana *g, const struct hthread *th, size_t k)
{
	if (th->st[k].kind != ISC_SPAN_SCOPE)
		return false;
	for (size_t i = 0; i < k; i++)
		if (th->st[i].kind == ISC_SPAN_SCOPE)
			return false;
	const char *s = str_name(g, th->st[k].name_id);
	return !s || strncmp(s, "enumerate(DataLoader)", 21);
}

static int host_end(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	struct hthread *th = hthread_get(g, ev->pid, ev->tid);
	if (!th)
		return -ENOMEM;
	size_t i = th->depth;
	while (i > 0 && th->st[i - 1].span_id != ev->span_id)
		i--;
	bool iter = i > 0 && is_iteration_scope(g, th, i - 1);
	while (i > 0 && th->depth >= i) /* inner spans whose end was lost end here too */
		if (host_pop(g, th, (int64_t)ev->ts))
			return -ENOMEM;
	return iter ? isc_devmem_boundary(g->dm, (int64_t)ev->ts) : 0;
}

/*
 * The call site of a call made now on thread (pid, tid): the nearest Python
 * function open on it that has a source file (Kineto also names C functions
 * as Python ones, "<built-in method ...>"; without such a function, the
 * nearest Python function), and the op that function called (the outermost
 * op above it; with no Python function, the outermost op; ProfilerStep#N is
 * not an op).  Returns its index in sites[], GNONE when out of memory.
 */
static uint32_t call_site(struct isc_gpu_ana *g, uint32_t pid, uint32_t tid)
{
	uint32_t op = 0, py = 0, ti = isc_umap_get(&g->th_map, (uint64_t)pid << 32 | tid);
	bool fresh;
	if (ti != GNONE) {
		const struct hthread *th = &g->ths[ti];
		size_t i = th->depth, first = 0; /* 1 + index of the nearest Python frame */
		for (; i > 0; i--) {
			if (th->st[i - 1].kind != ISC_SPAN_PYTHON)
				continue;
			const struct isc_tl_string *s = isc_timeline_string_borrow(g->t, th->st[i - 1].name_id);
			if (s && s->file[0])
				break;
			if (!first)
				first = i;
		}
		if (!i)
			i = first;
		if (i > 0)
			py = th->st[i - 1].name_id;
		for (; i < th->depth && !op; i++)
			if (th->st[i].kind == ISC_SPAN_OP && !(name_class(g, th->st[i].name_id) & NC_STEP))
				op = th->st[i].name_id;
	}
	uint32_t s = map_index(&g->site_map, (uint64_t)op << 32 | py, &g->sites, &g->nsites, &g->sites_cap,
			       sizeof(*g->sites), &fresh);
	if (s == GNONE) {
		g->oom = true;
		return GNONE;
	}
	g->sites[s] = (struct site){ op, py };
	return s;
}

/*
 * The allocation site of device memory allocated now on thread (pid, tid):
 * the nearest Python function with a source file open on it, else its
 * outermost op (ProfilerStep#N is not one), else its innermost scope.
 */
static enum isc_dm_site_kind mem_site(struct isc_gpu_ana *g, uint32_t pid, uint32_t tid, uint32_t *id)
{
	uint32_t ti = isc_umap_get(&g->th_map, (uint64_t)pid << 32 | tid);
	*id = 0;
	if (ti == GNONE)
		return ISC_DM_NONE;
	const struct hthread *th = &g->ths[ti];
	for (size_t i = th->depth; i > 0; i--) {
		const struct hframe *f = &th->st[i - 1];
		const struct isc_tl_string *s;
		if (f->kind == ISC_SPAN_PYTHON && (s = isc_timeline_string_borrow(g->t, f->name_id)) && s->file[0]) {
			*id = f->name_id;
			return ISC_DM_PYTHON;
		}
	}
	for (size_t i = 0; i < th->depth; i++)
		if (th->st[i].kind == ISC_SPAN_OP && !(name_class(g, th->st[i].name_id) & NC_STEP)) {
			*id = th->st[i].name_id;
			return ISC_DM_OP;
		}
	for (size_t i = th->depth; i > 0; i--)
		if (th->st[i - 1].kind == ISC_SPAN_SCOPE) {
			*id = th->st[i - 1].name_id;
			return ISC_DM_SCOPE;
		}
	return ISC_DM_NONE;
}

/* Counts a synchronizing call api_id of dur ns at site; a blocking copy also in sync.blocking_copies. */
static int sync_call(struct isc_gpu_ana *g, uint32_t api_id, uint32_t site, int64_t dur, bool copy)
{
	bool fresh;
	uint32_t i = map_index(&g->cs_map, (uint64_t)api_id << 32 | site, &g->cs, &g->ncs, &g->cs_cap, sizeof(*g->cs),
			       &fresh);
	if (i == GNONE)
		return -ENOMEM;
	g->cs[i].api_id = api_id;
	g->cs[i].site = site;
	g->cs[i].count++;
	g->cs[i].total += dur;
	if (copy) {
		g->bcopies++;
		g->bcopies_ns += dur;
	}
	return 0;
}

/* Index of device id in hd[], added when there is room; GNONE otherwise. */
static uint32_t hdev_index(struct isc_gpu_ana *g, uint32_t id)
{
	for (size_t i = 0; i < g->nhd; i++)
		if (g->hd[i].id == id)
			return (uint32_t)i;
	if (g->nhd == MAX_HDEV)
		return GNONE;
	g->hd[g->nhd] = (struct hdev){ .id = id };
	return (uint32_t)g->nhd++;
}

static void host_op(struct isc_gpu_ana *g, uint32_t hi, int64_t ts, int64_t end)
{
	struct hdev *h = &g->hd[hi];
	if (!h->any) {
		h->any = true;
		h->cur_end = end;
	} else {
		if (ts > h->cur_end)
			h->closed += ts - h->cur_end;
		if (end > h->cur_end)
			h->cur_end = end;
	}
	h->seq++;
}

/* ---- --hta-compat FIFO ---------------------------------------------------------------- */
static int pq_push(struct isc_gpu_ana *g, const struct gop *op, bool sure)
{
	if (g->pq_n == g->pq_cap) {
		size_t cap = g->pq_cap ? g->pq_cap * 2 : 1024;
		struct pend *q = malloc(cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		for (size_t i = 0; i < g->pq_n; i++)
			q[i] = g->pq[(g->pq_head + i) & (g->pq_cap - 1)];
		free(g->pq);
		g->pq = q;
		g->pq_head = 0;
		g->pq_cap = cap;
	}
	g->pq[(g->pq_head + g->pq_n++) & (g->pq_cap - 1)] = (struct pend){ *op, sure };
	return 0;
}

/* Feeds the FIFO's front to the kept ops while it is sure, or all when all is set (unsure ones dropped). */
static int pq_settle(struct isc_gpu_ana *g, bool all)
{
	while (g->pq_n) {
		struct pend *p = &g->pq[g->pq_head];
		if (!p->sure && !all)
			break;
		if (p->sure && acc_op(&g->acc[1], &p->op, true))
			return -ENOMEM;
		g->pq_head = (g->pq_head + 1) & (g->pq_cap - 1);
		g->pq_n--;
	}
	return 0;
}

/* A new ProfilerStep starts at ts: ops launched before it are kept whatever comes next. */
static int hta_step(struct isc_gpu_ana *g, int64_t ts)
{
	for (size_t i = 0; i < g->pq_n; i++) {
		struct pend *p = &g->pq[(g->pq_head + i) & (g->pq_cap - 1)];
		if (!p->sure && p->op.api_ts < ts)
			p->sure = true;
	}
	return pq_settle(g, false);
}

static int hta_op(struct isc_gpu_ana *g, const struct gop *op, bool has_corr)
{
	if (acc_op(&g->acc[0], op, true))
		return -ENOMEM;
	if (has_corr && !op->has_api)
		return 0; /* no CPU event has its correlation: dropped when the rule applies */
	bool sure = !has_corr || !g->have_step || op->api_ts < g->last_step;
	if (sure && !g->pq_n)
		return acc_op(&g->acc[1], op, true);
	if (g->pq_n == PENDING_MAX) { /* settle the oldest as if no further step came */
		struct pend *p = &g->pq[g->pq_head];
		g->pq_forced += !p->sure;
		if (p->sure && acc_op(&g->acc[1], &p->op, true))
			return -ENOMEM;
		g->pq_head = (g->pq_head + 1) & (g->pq_cap - 1);
		g->pq_n--;
		if (pq_settle(g, false))
			return -ENOMEM;
	}
	return pq_push(g, op, sure);
}

/* ---- events ------------------------------------------------------------------------------ */
static int on_span_begin(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	if (name_class(g, ev->name_id) & NC_STEP) {
		const char *name = str_name(g, ev->name_id);
		int64_t ts = g->hta ? ceil_us(g, (int64_t)ev->ts) : (int64_t)ev->ts;
		g->steps++;
		if (!g->step_name && !(g->step_name = strdup(name)))
			return -ENOMEM;
		if (strcmp(g->step_name, name))
			g->steps_distinct = true;
		if (g->hta && g->have_step && ts > g->last_step && hta_step(g, ts))
			return -ENOMEM;
		if (!g->have_step || ts >= g->last_step) {
			g->last_step = ts;
			free(g->last_step_name);
			if (!(g->last_step_name = strdup(name)))
				return -ENOMEM;
		}
		g->have_step = true;
	}
	return host_begin(g, ev);
}

/*
 * A runtime call (cudaMemcpy) makes driver calls (cuMemcpy), which CUPTI
 * records too, on the same thread within its time: such a nested driver
 * call is not counted again as a synchronizing call, and does not replace
 * a runtime call of the same correlation id in the pairing with an op.
 */
static int on_api(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	unsigned cls = name_class(g, ev->name_id);
	int64_t ts = (int64_t)ev->ts, end = ts + (int64_t)ev->gpu.dur_ns;
	struct hthread *th = hthread_get(g, ev->pid, ev->tid);
	if (!th)
		return -ENOMEM;
	bool nested = ev->gpu.kind == 2 && ts < th->rt_end;
	if (nested && (!ev->gpu.correlation || isc_umap_get(&g->l_map, ev->gpu.correlation) != GNONE))
		return 0;
	if (ev->gpu.kind == 1 && end > th->rt_end)
		th->rt_end = end;
	if (ev->gpu.flags & ISC_GPU_API_FLAG_ERROR && cls & NC_ALLOC) { /* out of device memory */
		uint32_t id;
		enum isc_dm_site_kind k = mem_site(g, ev->pid, ev->tid, &id);
		isc_devmem_failure(g->dm, ts, g->last_mem_dev, 0, k, id);
	}
	uint32_t site = cls & NC_SITE ? call_site(g, ev->pid, ev->tid) : GNONE;
	if (cls & NC_SYNC && !nested &&
	    (add_nstat(&g->sapi_map, &g->sapi, &g->nsapi, &g->sapi_cap, ev->name_id, 0, (int64_t)ev->gpu.dur_ns) ||
	     sync_call(g, ev->name_id, site, (int64_t)ev->gpu.dur_ns, cls & NC_BLOCKING_COPY)))
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
	struct gop op = { 0 };
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
	op.compute = f->kind == ISC_GPU_KERNEL && !(name_class(g, ev->name_id) & NC_NONCOMPUTE);
	uint32_t li = f->correlation ? isc_umap_get(&g->l_map, f->correlation) : GNONE;
	uint32_t pid = 0;
	/* correlation ids are per process: when the merge linked the op to its
	 * call, a call of another process with the same id is not it */
	if (li != GNONE && f->has_link &&
	    (g->lr[li].tid != f->api_tid || g->lr[li].ts_exact != (int64_t)ev->ts - f->launch_gap_ns))
		li = GNONE;
	op.site = GNONE;
	if (li != GNONE) {
		struct launch *l = &g->lr[li];
		op.has_api = true;
		op.api_ts = l->ts;
		op.api_end = l->end;
		op.api_dur = l->end_exact - l->ts_exact;
		op.api_launch = (l->cls & NC_LAUNCH) != 0;
		op.site = l->site;
		op.first_of_call = !l->used;
		l->used = true;
		pid = l->pid;
		/* an async copy from or to pageable memory waits for the host */
		if (l->cls & NC_ASYNC_COPY && op.kind == ISC_GPU_MEMCPY && op.first_of_call &&
		    (op.src_mem == ISC_MEM_PAGEABLE || op.dst_mem == ISC_MEM_PAGEABLE) &&
		    sync_call(g, l->name_id, l->site, op.api_dur, true))
			return -ENOMEM;
		/* one call, one op; a graph launch owns many, kept until evicted */
		if (!(l->cls & NC_GRAPH) && !(f->flags & ISC_GPU_FLAG_GRAPH)) {
			l->live = false;
			isc_umap_del(&g->l_map, f->correlation);
		}
	}
	if (op.kind == ISC_GPU_KERNEL || op.kind == ISC_GPU_MEMCPY || op.kind == ISC_GPU_MEMSET) {
		uint32_t hi = hdev_index(g, op.device);
		busy_add(g, op.ts, op.end);
		if (hi != GNONE) {
			host_op(g, hi, op.ts, op.end);
			uint32_t *slot;
			if (li != GNONE) {
				if (isc_umap_slot(&g->pid_mask, pid, &slot))
					return -ENOMEM;
				*slot = (*slot == GNONE ? 0 : *slot) | 1u << hi;
			}
		}
	}
	if (!g->hta)
		return acc_op(&g->acc[0], &op, false);
	op.end = floor_us(g, op.end);
	op.ts = ceil_us(g, op.ts);
	return hta_op(g, &op, f->correlation != 0);
}

/* DEVICE: id sm_count memory_bytes cc_major cc_minor link_bw_bytes_per_s, name. */
static int on_device(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	bool fresh;
	uint32_t i = map_index(&g->dname_map, ev->f[0], &g->dd, &g->ndd, &g->dd_cap, sizeof(*g->dd), &fresh);
	if (i == GNONE)
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
static struct nvdev *nvdev_get(struct isc_gpu_ana *g, uint64_t index)
{
	for (size_t i = 0; i < g->nnv; i++)
		if (g->nv[i].index == index)
			return &g->nv[i];
	if (g->nnv == NVML_MAX || index > UINT32_MAX)
		return NULL;
	g->nv[g->nnv] = (struct nvdev){ .index = (uint32_t)index };
	return &g->nv[g->nnv++];
}

/* GPU_INFO: index pcie_gen pcie_width link_bw_bytes_per_s mem_total. */
static void on_gpu_info(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	struct nvdev *d = ev->nf >= 5 ? nvdev_get(g, ev->f[0]) : NULL;
	if (!d)
		return;
	d->info = true;
	d->link_bw = ev->f[3];
	d->info_total = ev->f[4];
}

/*
 * GPU_SAMPLE: index util_gpu_pct util_mem_pct mem_used mem_total sm_mhz
 * mem_mhz power_mw temp_c clock_event_reasons ...; a query the sampler
 * could not make is 0.  Feeds timeseries.gpu_util_pct (each sample) and
 * gpu_mem_used_bytes (the latest used memory of every device, summed).
 */
static void on_gpu_sample(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	struct nvdev *d = ev->nf >= 10 ? nvdev_get(g, ev->f[0]) : NULL;
	uint64_t used = 0;
	if (!d)
		return;
	const uint64_t *f = ev->f;
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
	for (size_t i = 0; i < NV_REASONS; i++)
		d->reasons[i] += (f[9] & nv_reasons[i].bit) != 0;
	d->throttled += (f[9] & NV_THROTTLE) != 0;
	if (!g->ser)
		return;
	for (size_t i = 0; i < g->nnv; i++)
		used += g->nv[i].used_last;
	/* point channels: cannot fail */
	(void)isc_series_point(g->ser, ISC_SER_GPU_UTIL, ev->ts, (double)f[1]);
	(void)isc_series_point(g->ser, ISC_SER_GPU_MEM, ev->ts, (double)used);
}

/* GPU_MEMORY: device stream op(1 alloc, 2 free) mem_kind bytes ...: device memory allocated, net. */
static int on_gpu_memory(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	bool fresh;
	if (ev->nf < 5 || ev->f[3] != ISC_MEM_DEVICE || (ev->f[2] != 1 && ev->f[2] != 2) || ev->f[4] > INT64_MAX)
		return 0;
	uint32_t i = map_index(&g->gm_map, ev->f[0], &g->gm, &g->ngm, &g->gm_cap, sizeof(*g->gm), &fresh);
	if (i == GNONE)
		return -ENOMEM;
	struct gmem *m = &g->gm[i];
	m->device = (uint32_t)ev->f[0];
	g->last_mem_dev = m->device;
	m->net += ev->f[2] == 1 ? (int64_t)ev->f[4] : -(int64_t)ev->f[4];
	if (m->net > m->peak)
		m->peak = m->net;
	/* the allocating thread: the call of the same correlation id (CUPTI), else
	 * the [memory] MARK just before (Kineto), else none */
	uint32_t pid = ev->pid, tid = 0, id = 0, li;
	enum isc_dm_site_kind kind = ISC_DM_NONE;
	bool known = false;
	if (ev->nf > 6 && ev->f[6] && (li = isc_umap_get(&g->l_map, ev->f[6])) != GNONE && g->lr[li].pid == ev->pid) {
		tid = g->lr[li].tid;
		known = true;
	} else if (g->kineto && g->mark_pid == ev->pid && g->mark_ts == ev->ts) {
		tid = g->mark_tid;
		known = true;
	}
	if (known)
		kind = mem_site(g, pid, tid, &id);
	int rc = isc_devmem_event(g->dm, (int64_t)ev->ts, ev->pid, (uint32_t)ev->f[0], ev->f[2] == 1, ev->f[4],
				  ev->nf > 5 ? ev->f[5] : 0, g->kineto ? ISC_DM_SRC_ALLOCATOR : ISC_DM_SRC_DRIVER, kind,
				  id);
	if (!rc && ev->nf >= 10 && (ev->f[7] & ISC_GPU_MEM_TOTALS))
		rc = isc_devmem_totals(g->dm, (int64_t)ev->ts, (uint32_t)ev->f[0], ev->f[8], ev->f[9]);
	return rc;
}

/* META distributedInfo (JSON): its rank, when it has one; META source=kineto. */
static void on_meta(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	size_t klen = (size_t)ev->f[0];
	static const char key[] = "distributedInfo", src[] = "source", kin[] = "kineto";
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
		rc = host_end(g, ev);
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
	default:
		break;
	}
	return rc ? rc : g->oom ? -ENOMEM : 0;
}

/* ---- output ------------------------------------------------------------------------------------ */
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
	return i == GNONE ? NULL : g->dd[i].name;
}

static int cmp_dev(const void *x, const void *y)
{
	const struct adev *a = x, *b = y;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int cmp_stream(const void *x, const void *y)
{
	const struct astream *a = *(struct astream *const *)x, *b = *(struct astream *const *)y;
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
	sort_n(a, n, sz, same);
	for (size_t i = 0; i < n; i++) {
		if (m && !same(p + (m - 1) * sz, p + i * sz))
			add(p + (m - 1) * sz, p + i * sz);
		else
			memmove(p + m++ * sz, p + i * sz, sz);
	}
	sort_n(a, m, sz, order);
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

/* The names of call site site (GNONE: none) into r. */
static void srow_site(const struct isc_gpu_ana *g, uint32_t site, struct srow *r)
{
	if (site == GNONE)
		return;
	const struct site *s = &g->sites[site];
	const struct isc_tl_string *py = s->py_id ? isc_timeline_string_borrow(g->t, s->py_id) : NULL;
	r->op = s->op_id ? str_name(g, s->op_id) : NULL;
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

/* gpu.devices[].host_during_idle of device hd[hi]. */
static int emit_host(struct out *o, cJSON *d, size_t hi)
{
	struct isc_gpu_ana *g = o->g;
	const struct hdev *h = &g->hd[hi];
	cJSON *hd = isc_jb_obj(&o->jb, d, "host_during_idle");
	isc_jb_num(&o->jb, hd, "idle_ns", (double)h->closed);
	for (int k = 0; k < 2; k++) {
		uint8_t kind = k ? ISC_SPAN_PYTHON : ISC_SPAN_OP;
		struct row *rows = calloc(g->nfns ? g->nfns : 1, sizeof(*rows));
		size_t n = 0;
		if (!rows)
			return -ENOMEM;
		for (size_t i = 0; i < g->nfns; i++) {
			const struct hfn *f = &g->fns[i];
			if (f->hdev != hi || f->kind != kind)
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
			isc_jb_num(&o->jb, x, "idle_pct", pct2(rows[i].total, h->closed));
		}
		free(rows);
	}
	return 0;
}

/* The NVML device whose index is CUDA device id (NVML numbers all GPUs of the machine), or NULL. */
static const struct nvdev *nvdev_of(const struct isc_gpu_ana *g, uint32_t id)
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
	const struct ddev *dd = di == GNONE ? NULL : &g->dd[di];
	const struct nvdev *nv = nvdev_of(g, id);
	return dd && dd->mem ? dd->mem : nv ? (nv->total ? nv->total : nv->info_total) : 0;
}

/* gpu.devices[]: link bandwidth and memory of device id, from its DEVICE record, GPU_MEMORY and NVML. */
static void emit_dev_memory(struct out *o, cJSON *d, uint32_t id)
{
	const struct isc_gpu_ana *g = o->g;
	uint32_t di = isc_umap_get(&g->dname_map, id), mi = isc_umap_get(&g->gm_map, id);
	const struct ddev *dd = di == GNONE ? NULL : &g->dd[di];
	const struct nvdev *nv = nvdev_of(g, id);
	uint64_t bw = nv && nv->link_bw ? nv->link_bw : dd ? dd->link_bw : 0;
	uint64_t total = dd && dd->mem ? dd->mem : nv ? (nv->total ? nv->total : nv->info_total) : 0;
	isc_jb_num_or_null(&o->jb, d, "link_bw_bytes_per_s", bw, (double)bw);
	isc_jb_num_or_null(&o->jb, d, "memory_total_bytes", total, (double)total);
	if (mi != GNONE) {
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

static int emit_devices(struct out *o, cJSON *gpu, struct acc *a)
{
	struct isc_gpu_ana *g = o->g;
	struct astream **sts = calloc(a->nsts ? a->nsts : 1, sizeof(*sts));
	if (!sts)
		return -ENOMEM;
	for (size_t i = 0; i < a->nsts; i++)
		sts[i] = &a->sts[i];
	sort_n(sts, a->nsts, sizeof(*sts), cmp_stream);
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
		uint32_t di = map_index(&a->dev_map, mids[i], &a->devs, &a->ndevs, &a->devs_cap, sizeof(*a->devs),
					&fresh);
		if (di == GNONE) {
			free(mids);
			free(sts);
			return -ENOMEM;
		}
		a->devs[di].id = mids[i];
	}
	free(mids);
	sort_n(a->devs, a->ndevs, sizeof(*a->devs), cmp_dev); /* dev_map is not used after this */
	cJSON *ds = isc_jb_arr(&o->jb, gpu, "devices");
	for (size_t i = 0; i < a->ndevs; i++) {
		const struct adev *dv = &a->devs[i];
		int64_t span = u_span(&dv->all), busy = u_busy(&dv->all), comp = u_busy(&dv->comp);
		cJSON *d = isc_jb_push_obj(&o->jb, ds);
		isc_jb_num(&o->jb, d, "id", dv->id);
		isc_jb_str(&o->jb, d, "name", dev_name(g, dv->id));
		isc_jb_num(&o->jb, d, "ops", (double)dv->ops);
		isc_jb_num(&o->jb, d, "busy_ns", (double)busy);
		emit_dev_memory(o, d, dv->id);
		isc_devmem_emit(g->dm, &o->jb, d, dv->id, dev_total(g, dv->id), (int64_t)g->first_ts, g->t);
		cJSON *tb = isc_jb_obj(&o->jb, d, "temporal_breakdown");
		isc_jb_num(&o->jb, tb, "span_ns", (double)span);
		isc_jb_num(&o->jb, tb, "idle_ns", (double)(span - busy));
		isc_jb_num(&o->jb, tb, "compute_ns", (double)comp);
		isc_jb_num(&o->jb, tb, "non_compute_ns", (double)(busy - comp));
		isc_jb_num(&o->jb, tb, "idle_pct", pct2(span - busy, span));
		isc_jb_num(&o->jb, tb, "compute_pct", pct2(comp, span));
		isc_jb_num(&o->jb, tb, "non_compute_pct", pct2(busy - comp, span));
		cJSON *ss = isc_jb_arr(&o->jb, d, "streams");
		for (size_t j = 0; j < a->nsts; j++) {
			const struct astream *s = sts[j];
			if (s->device != dv->id)
				continue;
			cJSON *x = isc_jb_push_obj(&o->jb, ss);
			isc_jb_num(&o->jb, x, "id", s->id);
			isc_jb_num(&o->jb, x, "ops", (double)s->ops);
			cJSON *ib = isc_jb_obj(&o->jb, x, "idle_breakdown");
			isc_jb_num(&o->jb, ib, "host_wait_ns", (double)s->host_wait);
			isc_jb_num(&o->jb, ib, "kernel_wait_ns", (double)s->kernel_wait);
			isc_jb_num(&o->jb, ib, "other_ns", (double)s->other);
			cJSON *q = isc_jb_obj(&o->jb, x, "queue_length");
			int64_t w = s->q_last - s->q_first;
			isc_jb_num_or_null(&o->jb, q, "mean", s->q_any && w > 0, w > 0 ? round(100 * (double)s->q_sum / (double)w) / 100 : 0);
			isc_jb_num_or_null(&o->jb, q, "max", s->q_any, (double)s->q_max);
		}
		uint32_t hi = GNONE;
		for (size_t j = 0; j < g->nhd; j++)
			if (g->hd[j].id == dv->id)
				hi = (uint32_t)j;
		if (hi != GNONE && emit_host(o, d, hi)) {
			free(sts);
			return -ENOMEM;
		}
	}
	free(sts);
	return 0;
}

static int emit_kernels(struct out *o, cJSON *gpu, const struct acc *a)
{
	struct isc_gpu_ana *g = o->g;
	struct row *rows = calloc(a->nks ? a->nks : 1, sizeof(*rows));
	int64_t total = 0;
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < a->nks; i++) {
		const struct kstat *k = &a->ks[i];
		const char *name = str_name(g, k->name_id);
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
	const struct mstat *a = x, *b = y;
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
	const struct nstat *a = x, *b = y;
	if (a->total != b->total)
		return a->total > b->total ? -1 : 1;
	return a->name_id < b->name_id ? -1 : a->name_id > b->name_id;
}

static void emit_nstats(struct out *o, cJSON *parent, const char *k, struct nstat *s, size_t n, const char *tk)
{
	static const char *const sync_kind[] = { "Sync", "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync" };
	int64_t total = 0;
	sort_n(s, n, sizeof(*s), cmp_nstat);
	cJSON *a = isc_jb_arr(&o->jb, parent, k);
	for (size_t i = 0; i < n; i++) {
		cJSON *x = isc_jb_push_obj(&o->jb, a);
		uint8_t sk = s[i].sync_kind < sizeof(sync_kind) / sizeof(sync_kind[0]) ? s[i].sync_kind : 0;
		isc_jb_str(&o->jb, x, "name", s[i].name_id ? str_name(o->g, s[i].name_id) : sync_kind[sk]);
		isc_jb_num(&o->jb, x, "count", (double)s[i].count);
		isc_jb_num(&o->jb, x, "total_ns", (double)s[i].total);
		total += s[i].total;
	}
	isc_jb_num(&o->jb, parent, tk, (double)total);
}

/* gpu.gaps: the device gaps of at least GAP_NS, longest first. */
static void emit_gaps(struct out *o, cJSON *gpu, const struct acc *a)
{
	cJSON *gp = isc_jb_obj(&o->jb, gpu, "gaps");
	isc_jb_num(&o->jb, gp, "threshold_ns", GAP_NS);
	isc_jb_num(&o->jb, gp, "count", (double)a->gaps);
	isc_jb_num(&o->jb, gp, "total_ns", (double)a->gaps_total);
	cJSON *top = isc_jb_arr(&o->jb, gp, "top");
	for (size_t i = 0; i < a->ntop_gaps; i++) {
		const struct gap *x = &a->top_gaps[i];
		cJSON *y = isc_jb_push_obj(&o->jb, top);
		isc_jb_num(&o->jb, y, "device", x->device);
		isc_jb_num(&o->jb, y, "start_ns", (double)(x->start - (int64_t)o->g->first_ts));
		isc_jb_num(&o->jb, y, "end_ns", (double)(x->end - (int64_t)o->g->first_ts));
		isc_jb_num(&o->jb, y, "dur_ns", (double)(x->end - x->start));
	}
}

/* memcpy[].top_call_site of row m: the named call site that launched the most bytes, or null. */
static void emit_top_site(struct out *o, cJSON *x, const struct acc *a, const struct mstat *m, struct srow *rows)
{
	size_t n = 0;
	for (size_t i = 0; i < a->nmcs; i++) {
		const struct mcsite *c = &a->mcs[i];
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

/* gpu.sync.call_sites (the TOP_SITES longest) and gpu.sync.blocking_copies. */
static int emit_call_sites(struct out *o, cJSON *sy)
{
	struct isc_gpu_ana *g = o->g;
	struct srow *rows = calloc(g->ncs ? g->ncs : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (size_t i = 0; i < g->ncs; i++) {
		const char *api = str_name(g, g->cs[i].api_id);
		rows[i] = (struct srow){ .api = api ? api : "?", .count = g->cs[i].count, .total = g->cs[i].total };
		srow_site(g, g->cs[i].site, &rows[i]);
	}
	int64_t total = 0;
	for (size_t i = 0; i < g->ncs; i++)
		total += g->cs[i].total;
	size_t n = merge_by(rows, g->ncs, sizeof(*rows), srow_identity, srow_add, srow_by_total);
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
	isc_jb_num(&o->jb, bc, "count", (double)g->bcopies);
	isc_jb_num(&o->jb, bc, "total_ns", (double)g->bcopies_ns);
	return 0;
}

static int cmp_nvdev(const void *x, const void *y)
{
	const struct nvdev *a = x, *b = y;
	return a->index < b->index ? -1 : a->index > b->index;
}

/* gpu.nvml: one entry per NVML device with samples, by index. */
static void emit_nvml(struct out *o, cJSON *gpu)
{
	struct isc_gpu_ana *g = o->g;
	sort_n(g->nv, g->nnv, sizeof(*g->nv), cmp_nvdev);
	cJSON *a = isc_jb_arr(&o->jb, gpu, "nvml");
	for (size_t i = 0; i < g->nnv; i++) {
		const struct nvdev *d = &g->nv[i];
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
		cJSON *r = isc_jb_obj(&o->jb, x, "throttle_reasons");
		for (size_t k = 0; k < NV_REASONS; k++)
			if (d->reasons[k])
				isc_jb_num(&o->jb, r, nv_reasons[k].name, (double)d->reasons[k]);
	}
}

static int emit_rest(struct out *o, cJSON *gpu, struct acc *a)
{
	cJSON *l = isc_jb_obj(&o->jb, gpu, "launch");
	isc_jb_num(&o->jb, l, "launches", (double)a->launches);
	cJSON *dl = isc_jb_obj(&o->jb, l, "delay_ns");
	struct samples *s = &a->delay;
	sort_n(s->v, s->n, sizeof(*s->v), cmp_i64);
	isc_jb_num_or_null(&o->jb, dl, "p50", s->n, s->n ? quantile_lin(s->v, s->n, 0.5) : 0);
	isc_jb_num_or_null(&o->jb, dl, "p90", s->n, s->n ? quantile_lin(s->v, s->n, 0.9) : 0);
	isc_jb_num_or_null(&o->jb, dl, "max", s->n, (double)s->max);
	isc_jb_chk(&o->jb, l ? cJSON_AddBoolToObject(l, "delay_exact", s->seen <= SAMPLES_MAX) : NULL);
	isc_jb_num(&o->jb, l, "gpu_op_shorter_than_launch", (double)a->shorter);
	isc_jb_num(&o->jb, l, "launch_call_over_50us", (double)a->long_call);
	isc_jb_num(&o->jb, l, "delay_over_100us", (double)a->long_delay);
	isc_jb_num(&o->jb, l, "short_kernels_under_10us", (double)a->short_kernels);
	isc_jb_num(&o->jb, l, "kernels", (double)a->kernels);
	isc_jb_num(&o->jb, l, "ops_without_launch_call", (double)a->no_api);
	isc_jb_num(&o->jb, l, "api_total_ns", (double)a->launch_api);
	isc_jb_num(&o->jb, l, "kernel_total_ns", (double)a->launch_kernels);

	struct srow *rows = calloc(a->nmcs ? a->nmcs : 1, sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	sort_n(a->ms, a->nms, sizeof(*a->ms), cmp_mstat);
	cJSON *mc = isc_jb_arr(&o->jb, gpu, "memcpy");
	for (size_t i = 0; i < a->nms; i++) {
		const struct mstat *m = &a->ms[i];
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
	emit_nstats(o, sy, "api_calls", o->g->sapi, o->g->nsapi, "api_total_ns");
	if (emit_call_sites(o, sy))
		return -ENOMEM;
	emit_gaps(o, gpu, a);
	emit_nvml(o, gpu);
	return 0;
}

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

/* Drops pending tails that no later op confirmed, confirms the others. */
static void host_finish(struct isc_gpu_ana *g)
{
	for (size_t i = 0; i < g->nths; i++)
		while (g->ths[i].depth)
			if (host_pop(g, &g->ths[i], g->last_ts))
				g->oom = true;
	for (size_t i = 0; i < g->nfns; i++) {
		struct hfn *f = &g->fns[i];
		if (f->pseq != g->hd[f->hdev].seq) {
			f->idle += f->ptail;
			f->self += f->pself;
		}
		f->ptail = f->pself = 0;
	}
}

int isc_gpu_ana_emit(struct isc_gpu_ana *g, cJSON *root)
{
	struct out o = { g, { .ctl = true } };
	char rule[512];
	struct acc *a = &g->acc[0];
	host_finish(g);
	busy_flush(g);
	g->busy_any = false;
	if (g->hta && g->steps_distinct) {
		if (pq_settle(g, true))
			return -ENOMEM;
		a = &g->acc[1];
	}
	step_rule(g, rule, sizeof(rule), g->acc[0].ops, a->ops);
	cJSON *gpu = isc_jb_obj(&o.jb, root, "gpu");
	isc_jb_str(&o.jb, gpu, "mode", g->hta ? "hta-compat" : "exact");
	isc_jb_str(&o.jb, gpu, "step_rule", rule);
	isc_jb_num(&o.jb, gpu, "profiler_steps", (double)g->steps);
	isc_jb_num_or_null(&o.jb, gpu, "rank", g->have_rank, g->rank);
	isc_jb_num_or_null(&o.jb, gpu, "world_size", g->have_world, g->world_size);
	isc_jb_num(&o.jb, gpu, "ops", (double)a->ops);
	isc_jb_num(&o.jb, gpu, "dropped_ops", (double)(g->acc[0].ops - a->ops));
	if (emit_devices(&o, gpu, a) || emit_kernels(&o, gpu, a) || emit_rest(&o, gpu, a))
		return -ENOMEM;
	return o.jb.oom || g->oom ? -ENOMEM : 0;
}

void isc_gpu_ana_failure(const struct isc_gpu_ana *g, struct isc_oom_gpu *out)
{
	enum isc_dm_site_kind kind;
	uint32_t id;
	memset(out, 0, sizeof(*out));
	out->have = isc_devmem_last_failure(g->dm, &out->device, &out->ts, &out->bytes, &kind, &id);
	out->site = out->have && kind != ISC_DM_NONE ? isc_timeline_string_borrow(g->t, id) : NULL;
	out->live_bytes = isc_devmem_live_total(g->dm, &out->have_live);
}

void isc_gpu_ana_free(struct isc_gpu_ana *g)
{
	if (!g)
		return;
	isc_umap_free(&g->names);
	isc_umap_free(&g->l_map);
	free(g->lr);
	acc_free(&g->acc[0]);
	acc_free(&g->acc[1]);
	free(g->pq);
	free(g->step_name);
	free(g->last_step_name);
	isc_umap_free(&g->dname_map);
	for (size_t i = 0; i < g->ndd; i++)
		free(g->dd[i].name);
	free(g->dd);
	isc_umap_free(&g->gm_map);
	free(g->gm);
	isc_umap_free(&g->sapi_map);
	free(g->sapi);
	isc_umap_free(&g->site_map);
	free(g->sites);
	isc_umap_free(&g->cs_map);
	free(g->cs);
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
