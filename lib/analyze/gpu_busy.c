/*
 * gpu_busy.c - the accumulator of the GPU analysis: the statistics of one
 * set of ops, fed in start order (struct gpu_acc; analyze_gpu.c keeps two,
 * every op and the ops --hta-compat's step rule keeps).  Per device: busy
 * and compute time as unions of intervals, and the gaps of at least
 * GPU_GAP_NS between them; per stream: HTA's idle breakdown and the queue
 * length; per kernel name, copy kind and sync op name: counts and times;
 * launch delays.  The definitions are those of analyze_gpu.c's top.
 *
 * Union of intervals arriving by start, as HTA's merge_kernel_intervals:
 *
 *     |----a----|                         a, b: one group, end max(a, b)
 *         |---b---|      |--c--|          c starts after every end so far
 *     ^ first       ^ cummax  ^ group 2   busy = sum of group lengths;
 *                                         span = last group end - first
 *
 * Idle breakdown of a stream, per gap before an op (cuda_sync left out):
 *
 *     op k ]........[ op k+1          host_wait    its launch call started
 *          '--gap--'                               after op k ended (of it,
 *                                                  host_wait_launch: a gap of
 *                                                  at most 50 µs before an op
 *                                                  of a launch call, the
 *                                                  host's per-launch cost)
 *                                     kernel_wait  else, gap < 30 µs
 *                                     other        else
 *
 * --hta-compat's step rule (analyze_gpu.c's top) drops, when there are two
 * or more distinct ProfilerStep#N names, the GPU ops launched from the
 * start L of the last ProfilerStep on.  L is known only at the end.  An op
 * launched before the latest step start seen so far is kept for sure; one
 * launched later is kept only if another step begins.  Ops reach the
 * "kept" accumulator through a FIFO holding what arrived since the latest
 * step start (statistics need ops in start order, so a sure op queues
 * behind unsure ones):
 *
 *   step k at L_k            step k+1 at L_k+1                  end of pass
 *   ---|------------------------|----------------------------------|
 *       ops launched >= L_k wait  L_k+1 > their launch: the FIFO  FIFO ops
 *       in the FIFO               is fed to "kept", emptied       launched
 *                                                                 >= L: gone
 *
 * The FIFO holds one step's ops at most, capped at PENDING_MAX (beyond it
 * the oldest is settled as if no further step came, and gpu.step_rule says
 * so).
 *
 * Memory: per device, stream (with the ends of its ops in flight, at most
 * QUEUE_MAX), kernel name, copy kind, sync op name and memcpy call site;
 * the GPU_TOP_GAPS longest gaps; at most GPU_SAMPLES_MAX launch delays (a
 * reservoir sample beyond); the FIFO.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_findings.h" /* ISC_LAUNCH_CALL_LONG_NS */
#include "gpu_internal.h"

#define PENDING_MAX (1u << 20)    /* --hta-compat FIFO */
#define QUEUE_MAX (1u << 16)      /* ops in flight followed per stream */
#define KERNEL_WAIT_NS 30000      /* HTA's consecutive_kernel_delay */
#define SHORT_KERNEL_NS 10000
#define LONG_DELAY_NS 100000

/* ---- union of intervals ------------------------------------------------- */
void isc_gpu_union_add(struct gpu_union *u, int64_t s, int64_t e)
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

int64_t isc_gpu_union_busy(const struct gpu_union *u)
{
	return u->any ? u->busy + u->g_e - u->g_s : 0;
}

/*
 * Intervals arrive by start, so at t no later one can cover time before
 * t: the closed groups and the part of the open group before t are final.
 */
int64_t isc_gpu_union_busy_at(const struct gpu_union *u, int64_t t)
{
	if (!u->any || t <= u->g_s)
		return u->any ? u->busy : 0;
	return u->busy + (t < u->g_e ? t : u->g_e) - u->g_s;
}

int64_t isc_gpu_union_span(const struct gpu_union *u)
{
	return u->any ? u->g_e - u->first : 0;
}

/* ---- accumulated statistics of one set of ops --------------------------- */
/* Adds x to s: kept while there is room, else in place of a uniformly drawn one. */
static int samples_add(struct gpu_samples *s, int64_t x)
{
	if (!s->seen++ || x > s->max)
		s->max = x;
	if (s->n < GPU_SAMPLES_MAX) {
		if (isc_grow(&s->v, &s->cap, s->n, sizeof(*s->v)))
			return -ENOMEM;
		s->v[s->n++] = x;
		return 0;
	}
	s->rng ^= s->rng << 13; /* xorshift64 */
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	uint64_t j = s->rng % s->seen;
	if (j < GPU_SAMPLES_MAX)
		s->v[j] = x;
	return 0;
}

/*
 * Queue length of stream s at the launch of an op that ends at end: ops
 * launched at or before launch and not finished.  Ops of one stream run in
 * launch order, so the ends of those in flight are ascending: pop the
 * finished ones from the front, push this one.
 */
static int queue_push(struct gpu_stream *s, int64_t launch, int64_t end)
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
int isc_gpu_nstat_add(struct isc_umap *m, struct gpu_nstat **arr, size_t *n, size_t *cap, uint32_t name_id,
		      uint8_t sync_kind, int64_t dur)
{
	bool fresh;
	uint32_t i = isc_gpu_map_index(m, name_id ? name_id : (uint64_t)1 << 32 | sync_kind, arr, n, cap, sizeof(**arr),
				       &fresh);
	if (i == ISC_UMAP_NONE)
		return -ENOMEM;
	(*arr)[i].name_id = name_id;
	(*arr)[i].sync_kind = sync_kind;
	(*arr)[i].count++;
	(*arr)[i].total += dur;
	return 0;
}

/* Adds op to the union of device d; a gap of at least GPU_GAP_NS before it is counted and ranked. */
static void dev_add(struct gpu_acc *a, struct gpu_dev *d, const struct gpu_op *op)
{
	struct gpu_union *u = &d->all;
	if (u->any && op->ts - u->cummax >= GPU_GAP_NS) {
		struct gpu_gap x = { d->id, u->cummax, op->ts };
		size_t i = a->ntop_gaps;
		a->gaps++;
		a->gaps_total += x.end - x.start;
		while (i > 0 && a->top_gaps[i - 1].end - a->top_gaps[i - 1].start < x.end - x.start)
			i--; /* equal lengths: the earlier gap stays first */
		if (i < GPU_TOP_GAPS) {
			size_t n = a->ntop_gaps < GPU_TOP_GAPS ? a->ntop_gaps++ : GPU_TOP_GAPS - 1;
			memmove(&a->top_gaps[i + 1], &a->top_gaps[i], (n - i) * sizeof(x));
			a->top_gaps[i] = x;
		}
	}
	isc_gpu_union_add(u, op->ts, op->end);
}

/* Counts the bytes of op for its call site in memcpy row m. */
static int mcsite_add(struct gpu_acc *a, const struct gpu_mstat *m, const struct gpu_op *op)
{
	bool fresh;
	if (op->site == ISC_UMAP_NONE)
		return 0;
	uint32_t j = isc_gpu_map_index(&a->mc_map, (uint64_t)m->id << 32 | op->site, &a->mcs, &a->nmcs, &a->mcs_cap,
				       sizeof(*a->mcs), &fresh);
	if (j == ISC_UMAP_NONE)
		return -ENOMEM;
	a->mcs[j].row = m->id;
	a->mcs[j].site = op->site;
	a->mcs[j].bytes += op->bytes;
	a->mcs[j].count++;
	return 0;
}

/* Adds one op to the statistics; hta selects which ops count as GPU time. */
int isc_gpu_acc_op(struct gpu_acc *a, const struct gpu_op *op, bool hta)
{
	int64_t dur = op->end - op->ts;
	bool fresh;
	if (op->kind == ISC_GPU_SYNC) {
		a->ops++;
		if (isc_gpu_nstat_add(&a->s_map, &a->ss, &a->nss, &a->ss_cap, op->name_id, op->copy_kind, dur))
			return -ENOMEM;
		if (!hta || op->streamless)
			return 0;
	} else if (op->kind == ISC_GPU_KERNEL || op->kind == ISC_GPU_MEMCPY || op->kind == ISC_GPU_MEMSET) {
		a->ops++;
	} else {
		return 0; /* annotations (ISC_GPU_FLAG_ANNOTATION) and unknown kinds */
	}
	uint32_t di = isc_gpu_map_index(&a->dev_map, op->device, &a->devs, &a->ndevs, &a->devs_cap, sizeof(*a->devs),
					&fresh);
	if (di == ISC_UMAP_NONE)
		return -ENOMEM;
	struct gpu_dev *d = &a->devs[di];
	d->id = op->device;
	d->ops++;
	dev_add(a, d, op);
	if (op->compute)
		isc_gpu_union_add(&d->comp, op->ts, op->end);
	if (op->kind == ISC_GPU_SYNC)
		return 0;

	uint32_t si = isc_gpu_map_index(&a->st_map, (uint64_t)op->device << 32 | op->stream, &a->sts, &a->nsts,
					&a->sts_cap, sizeof(*a->sts), &fresh);
	if (si == ISC_UMAP_NONE)
		return -ENOMEM;
	struct gpu_stream *s = &a->sts[si];
	s->device = op->device;
	s->id = op->stream;
	s->ops++;
	if (s->has_prev) {
		int64_t gap = op->ts - s->prev_end;
		if (op->has_api && op->api_ts > s->prev_end) {
			s->host_wait += gap;
			if (op->api_launch && gap <= ISC_LAUNCH_CALL_LONG_NS)
				s->host_wait_launch += gap;
		} else if (gap < KERNEL_WAIT_NS)
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
		uint32_t ki = isc_gpu_map_index(&a->k_map, op->name_id, &a->ks, &a->nks, &a->ks_cap, sizeof(*a->ks),
						&fresh);
		if (ki == ISC_UMAP_NONE)
			return -ENOMEM;
		struct gpu_kstat *k = &a->ks[ki];
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
		if (op->has_api && op->site != ISC_UMAP_NONE) { /* the kernels of each launch call site */
			uint32_t li = isc_gpu_map_index(&a->ls_map, op->site, &a->ls, &a->nls, &a->ls_cap, sizeof(*a->ls),
							&fresh);
			if (li == ISC_UMAP_NONE)
				return -ENOMEM;
			a->ls[li].site = op->site;
			a->ls[li].launches += op->first_of_call;
			a->ls[li].kernel_ns += dur;
		}
	} else {
		size_t i = 0;
		while (i < a->nms && !(a->ms[i].kind == op->kind && a->ms[i].copy_kind == op->copy_kind &&
				       a->ms[i].src_mem == op->src_mem && a->ms[i].dst_mem == op->dst_mem))
			i++;
		if (i == a->nms) {
			if (isc_grow(&a->ms, &a->ms_cap, a->nms, sizeof(*a->ms)))
				return -ENOMEM;
			a->ms[a->nms] = (struct gpu_mstat){ .id = (uint32_t)a->nms, .kind = op->kind,
							    .copy_kind = op->copy_kind, .src_mem = op->src_mem,
							    .dst_mem = op->dst_mem };
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

void isc_gpu_acc_free(struct gpu_acc *a)
{
	isc_umap_free(&a->dev_map);
	isc_umap_free(&a->st_map);
	isc_umap_free(&a->k_map);
	isc_umap_free(&a->s_map);
	isc_umap_free(&a->mc_map);
	free(a->mcs);
	isc_umap_free(&a->ls_map);
	free(a->ls);
	for (size_t i = 0; i < a->nsts; i++)
		free(a->sts[i].q);
	free(a->devs);
	free(a->sts);
	free(a->ks);
	free(a->ms);
	free(a->ss);
	free(a->delay.v);
}

/* ---- --hta-compat: the step FIFO ---------------------------------------- */
/* Appends op to the FIFO (a ring, doubled when full). */
static int pq_push(struct isc_gpu_ana *g, const struct gpu_op *op, bool sure)
{
	if (g->pq_n == g->pq_cap) {
		size_t cap = g->pq_cap ? g->pq_cap * 2 : 1024;
		struct gpu_pend *q = malloc(cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		for (size_t i = 0; i < g->pq_n; i++)
			q[i] = g->pq[(g->pq_head + i) & (g->pq_cap - 1)];
		free(g->pq);
		g->pq = q;
		g->pq_head = 0;
		g->pq_cap = cap;
	}
	g->pq[(g->pq_head + g->pq_n++) & (g->pq_cap - 1)] = (struct gpu_pend){ *op, sure };
	return 0;
}

/* Feeds the FIFO's front to the kept ops while it is sure, or all when all is set (unsure ones dropped). */
int isc_gpu_hta_settle(struct isc_gpu_ana *g, bool all)
{
	while (g->pq_n) {
		struct gpu_pend *p = &g->pq[g->pq_head];
		if (!p->sure && !all)
			break;
		if (p->sure && isc_gpu_acc_op(&g->acc[1], &p->op, true))
			return -ENOMEM;
		g->pq_head = (g->pq_head + 1) & (g->pq_cap - 1);
		g->pq_n--;
	}
	return 0;
}

/* A new ProfilerStep starts at ts: ops launched before it are kept whatever comes next. */
int isc_gpu_hta_step(struct isc_gpu_ana *g, int64_t ts)
{
	for (size_t i = 0; i < g->pq_n; i++) {
		struct gpu_pend *p = &g->pq[(g->pq_head + i) & (g->pq_cap - 1)];
		if (!p->sure && p->op.api_ts < ts)
			p->sure = true;
	}
	return isc_gpu_hta_settle(g, false);
}

/*
 * An op under --hta-compat: into the statistics of every op now, into
 * those of the kept ops now when it is sure and nothing waits, else
 * through the FIFO.
 */
int isc_gpu_hta_op(struct isc_gpu_ana *g, const struct gpu_op *op, bool has_corr)
{
	if (isc_gpu_acc_op(&g->acc[0], op, true))
		return -ENOMEM;
	if (has_corr && !op->has_api)
		return 0; /* no CPU event has its correlation: dropped when the rule applies */
	bool sure = !has_corr || !g->have_step || op->api_ts < g->last_step;
	if (sure && !g->pq_n)
		return isc_gpu_acc_op(&g->acc[1], op, true);
	if (g->pq_n == PENDING_MAX) { /* settle the oldest as if no further step came */
		struct gpu_pend *p = &g->pq[g->pq_head];
		g->pq_forced += !p->sure;
		if (p->sure && isc_gpu_acc_op(&g->acc[1], &p->op, true))
			return -ENOMEM;
		g->pq_head = (g->pq_head + 1) & (g->pq_cap - 1);
		g->pq_n--;
		if (isc_gpu_hta_settle(g, false))
			return -ENOMEM;
	}
	return pq_push(g, op, sure);
}
