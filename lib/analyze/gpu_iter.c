/*
 * gpu_iter.c - the steady-state iterations of the GPU analysis: which
 * scope spans are steady iterations, the time inside them, and the
 * statistics of the GPU work done there (gpu.in_iterations), so that the
 * GPU verdict classes can judge the iterations and not start-up, warm-up
 * or what runs between them (rules.c), as the CPU classes do.
 *
 * Which scope is the iteration is decided at the end of the pass
 * (sections_run.c: ProfilerStep#N, else the most frequent scope name), so
 * each scope name is followed as a candidate, in a slot (at most
 * GPU_IT_SLOTS names, the first seen; every ProfilerStep#N is one slot;
 * DataLoader annotations are never iterations).  Per slot:
 *
 *   steady     an instance that is not the first of its name in its
 *              process: the first is the warm-up (sections_run.c leaves
 *              out the first iteration of a process that ran at least 2;
 *              here the first is left out even when it was the only one)
 *   window     the union of the steady instances (all threads, all
 *              processes): a period opens when one begins with none open
 *              and is counted up to each end (an instance whose end never
 *              came counts up to the last end seen; after that, nothing)
 *
 *      scope   [-w-]   [-s-]   [-s-]        [-s-.....  (no end)
 *      window          |###|   |###|        |
 *      counted         ^^^^^   ^^^^^        not counted
 *
 *   busy, compute  of each device inside the windows: its busy and
 *              compute time (unions of every op with its exact times,
 *              it_all and it_comp, also under --hta-compat) up to the
 *              period's end minus up to its start; ops arrive by start,
 *              so at a time t the busy time up to t is final
 *   acc        the statistics of the ops whose launch call ran inside a
 *              window (an op without a call: that started inside one):
 *              streams, kernels, launches, copies, gaps (gpu_busy.c)
 *   sync       the synchronizing calls made inside a window
 *   nv         the NVML samples taken inside a window
 *   after      per device, the union of the ops launched from the first
 *              window's start on: share_pct's whole (gpu_emit.c)
 *
 * host_during_idle inside the iterations is gpu_host.c's, for the spans
 * that began inside a window (it reads it_mask).
 *
 * Memory: per slot a device table, the op statistics of gpu_busy.c, the
 * sync tables, the NVML table and a map of the pids seen; the scope
 * instances open now.  Nothing grows with the number of iterations.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

/* Busy (comp: compute) time of device hd[hi] up to t, from the union of every op (exact times). */
static int64_t busy_at(const struct isc_gpu_ana *g, size_t hi, int64_t t, bool comp)
{
	return isc_gpu_union_busy_at(comp ? &g->it_comp[hi] : &g->it_all[hi], t);
}

static bool is_dataloader(const struct isc_gpu_ana *g, uint32_t name_id)
{
	const char *s = isc_gpu_str_name(g, name_id);
	return s && !strncmp(s, "enumerate(DataLoader)", 21);
}

/* The PyTorch profiler's step annotation: "ProfilerStep#" and digits (as analyze.c). */
static bool is_profiler_step(const struct isc_gpu_ana *g, uint32_t name_id)
{
	const char *p = isc_gpu_str_name(g, name_id);
	if (!p || strncmp(p, "ProfilerStep#", 13) || !p[13])
		return false;
	for (p += 13; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

struct gpu_itslot *isc_gpu_iter_slot(struct isc_gpu_ana *g, uint32_t name_id, bool step)
{
	for (size_t k = 0; k < g->nits; k++)
		if (step ? g->its[k].step : !g->its[k].step && g->its[k].name_id == name_id)
			return &g->its[k];
	return NULL;
}

/* The slot of scope name_id, added when there is room; ISC_UMAP_NONE when not followed, -1 out of memory. */
static int64_t slot_get(struct isc_gpu_ana *g, uint32_t name_id)
{
	bool step = is_profiler_step(g, name_id);
	struct gpu_itslot *s = isc_gpu_iter_slot(g, name_id, step);
	if (s)
		return s - g->its;
	if (g->nits == GPU_IT_SLOTS || is_dataloader(g, name_id))
		return ISC_UMAP_NONE;
	if (!g->its && !(g->its = calloc(GPU_IT_SLOTS, sizeof(*g->its))))
		return -1;
	s = &g->its[g->nits];
	s->name_id = name_id;
	s->step = step;
	s->acc.delay.rng = 0x9e3779b97f4a7c15ull;
	return (int64_t)g->nits++;
}

/* A period of slot s opens at t: the devices' busy and compute time up to t. */
static void period_open(struct isc_gpu_ana *g, struct gpu_itslot *s, int64_t t)
{
	s->from = t;
	for (size_t i = 0; i < GPU_MAX_HDEV; i++) {
		s->dev[i].snap_busy = busy_at(g, i, t, false);
		s->dev[i].snap_comp = busy_at(g, i, t, true);
		if (!s->any)
			s->dev[i].first_busy = s->dev[i].snap_busy;
	}
	if (!s->any)
		s->first_from = t;
	s->any = true;
}

/* The open period of slot s is counted up to t. */
static void period_close(struct isc_gpu_ana *g, struct gpu_itslot *s, int64_t t)
{
	if (t <= s->from)
		return;
	s->window_ns += t - s->from;
	for (size_t i = 0; i < GPU_MAX_HDEV; i++) {
		s->dev[i].busy += busy_at(g, i, t, false) - s->dev[i].snap_busy;
		s->dev[i].comp += busy_at(g, i, t, true) - s->dev[i].snap_comp;
	}
}

int isc_gpu_iter_begin(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	if (ev->kind != ISC_SPAN_SCOPE)
		return 0;
	int64_t k = slot_get(g, ev->name_id);
	if (k < 0)
		return -ENOMEM;
	if (k == ISC_UMAP_NONE)
		return 0;
	struct gpu_itslot *s = &g->its[k];
	uint32_t *cnt;
	if (isc_umap_slot(&s->pids, ev->pid, &cnt) || isc_grow(&g->ito, &g->ito_cap, g->nito, sizeof(*g->ito)))
		return -ENOMEM;
	if (*cnt == ISC_UMAP_NONE)
		*cnt = 0;
	bool steady = (*cnt)++ > 0;
	g->ito[g->nito++] = (struct gpu_itopen){ ev->span_id, ev->pid, ev->tid, (uint8_t)k, steady };
	if (!steady)
		return 0;
	if (s->open++ == 0)
		period_open(g, s, (int64_t)ev->ts);
	g->it_mask |= (uint8_t)(1u << k);
	return 0;
}

/* Ends open instance j at t: the window is counted up to t, and goes on when others are open. */
static void instance_end(struct isc_gpu_ana *g, size_t j, int64_t t)
{
	const struct gpu_itopen *x = &g->ito[j];
	if (x->steady) {
		struct gpu_itslot *s = &g->its[x->slot];
		s->steady++;
		period_close(g, s, t);
		if (--s->open)
			period_open(g, s, t);
		else
			g->it_mask &= (uint8_t)~(1u << x->slot);
	}
	memmove(&g->ito[j], &g->ito[j + 1], (g->nito - j - 1) * sizeof(*g->ito));
	g->nito--;
}

/* A scope's end ends the instances of its thread opened after it too (their ends were lost). */
int isc_gpu_iter_end(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	size_t j = g->nito;
	while (j > 0 && !(g->ito[j - 1].span_id == ev->span_id && g->ito[j - 1].pid == ev->pid &&
			  g->ito[j - 1].tid == ev->tid))
		j--;
	if (!j)
		return 0;
	for (size_t i = g->nito; i-- > j - 1;)
		if (g->ito[i].pid == ev->pid && g->ito[i].tid == ev->tid)
			instance_end(g, i, (int64_t)ev->ts);
	return 0;
}

int isc_gpu_iter_op(struct isc_gpu_ana *g, const struct gpu_op *op, uint8_t mask, int64_t launch_ts, uint32_t hi)
{
	if (hi < GPU_MAX_HDEV) { /* kernels, copies, memsets: the windows' busy time, whatever the mode */
		isc_gpu_union_add(&g->it_all[hi], op->ts, op->end);
		if (op->compute)
			isc_gpu_union_add(&g->it_comp[hi], op->ts, op->end);
	}
	for (size_t k = 0; k < g->nits; k++) {
		struct gpu_itslot *s = &g->its[k];
		if (mask >> k & 1 && isc_gpu_acc_op(&s->acc, op, false))
			return -ENOMEM;
		if (s->any && launch_ts >= s->first_from && hi < GPU_MAX_HDEV &&
		    (op->kind == ISC_GPU_KERNEL || op->kind == ISC_GPU_MEMCPY || op->kind == ISC_GPU_MEMSET))
			isc_gpu_union_add(&s->dev[hi].after, op->ts, op->end);
	}
	return 0;
}

struct gpu_nvdev *isc_gpu_iter_nvdev(struct isc_gpu_ana *g, size_t k, uint32_t index)
{
	struct gpu_itslot *s = &g->its[k];
	for (size_t i = 0; i < s->nnv; i++)
		if (s->nv[i].index == index)
			return &s->nv[i];
	if (!s->nv && !(s->nv = calloc(GPU_NVML_MAX, sizeof(*s->nv)))) {
		g->oom = true;
		return NULL;
	}
	if (s->nnv == GPU_NVML_MAX)
		return NULL;
	s->nv[s->nnv] = (struct gpu_nvdev){ .index = index };
	return &s->nv[s->nnv++];
}

int64_t isc_gpu_iter_idle(const struct isc_gpu_ana *g, const struct gpu_itslot *s, size_t hi)
{
	(void)g;
	int64_t idle = s->window_ns - s->dev[hi].busy;
	return idle > 0 ? idle : 0;
}

void isc_gpu_iter_free(struct isc_gpu_ana *g)
{
	for (size_t k = 0; k < g->nits; k++) {
		isc_umap_free(&g->its[k].pids);
		isc_gpu_acc_free(&g->its[k].acc);
		isc_gpu_sync_free(&g->its[k].sync);
		free(g->its[k].nv);
	}
	free(g->its);
	free(g->ito);
}
