/*
 * gpu_host.c - the host side of the GPU analysis: the CPU spans open on
 * each thread (Python functions, ops, scopes), from which come what the
 * host did while a device was idle (gpu.devices[].host_during_idle), the
 * call site of a CUDA call, the site of a device memory allocation, and
 * the end of each iteration for the device memory analysis
 * (analyze_devmem.c's baseline and churn).
 *
 * Host during idle always uses the default definitions (exact times, every
 * op): idle_cum(t), the idle time of the device from its first op up to t,
 * is known for any t up to the current event, so a CPU span [B, E]
 * overlaps idle_cum(E) - idle_cum(B) of idle time (snapshot at the span's
 * begin).  The part after the device's latest op end (its "tail") counts
 * only once a later op shows the device was still in use: it stays pending
 * per function until then, and is dropped at the end of the pass.
 *
 *   device   |=op=|.........idle.........|=op=|.........tail........
 *   span          [B ------------------------------------------ E]
 *                  idle overlap, counted  busy   pending: counted when
 *                                                a later op comes
 *
 * A span counts for the devices its process launched work on (pid_mask),
 * for at most GPU_MAX_HDEV devices.  A function's inclusive overlap counts
 * at its outermost activation only; its self overlap leaves out what its
 * children (scopes pass theirs up) overlapped.  A span that began while a
 * steady iteration of an iteration slot was open (gpu_iter.c) counts
 * again in that slot's rows: gpu.in_iterations' host_during_idle.
 *
 * Memory: per thread its open spans, per function and device one row.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_internal.h"

/* idle_cum(t) of device h: its idle time from its first op up to t. */
static int64_t idle_cum(const struct gpu_hdev *h, int64_t t)
{
	if (!h->any)
		return 0;
	return h->closed + (t > h->cur_end ? t - h->cur_end : 0);
}

struct gpu_hthread *isc_gpu_hthread_get(struct isc_gpu_ana *g, uint32_t pid, uint32_t tid)
{
	bool fresh;
	uint32_t i = isc_gpu_map_index(&g->th_map, (uint64_t)pid << 32 | tid, &g->ths, &g->nths, &g->ths_cap,
				       sizeof(*g->ths), &fresh);
	if (i == ISC_UMAP_NONE)
		return NULL;
	g->ths[i].pid = pid;
	return &g->ths[i];
}

int isc_gpu_host_begin(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	struct gpu_hthread *th = isc_gpu_hthread_get(g, ev->pid, ev->tid);
	if (!th || isc_grow(&th->st, &th->cap, th->depth, sizeof(*th->st)))
		return -ENOMEM;
	struct gpu_hframe *f = &th->st[th->depth];
	memset(f, 0, sizeof(*f));
	f->span_id = ev->span_id;
	f->name_id = ev->name_id;
	f->kind = ev->kind;
	f->begin = (int64_t)ev->ts;
	f->it_mask = g->it_mask;
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
static void hfn_add(struct gpu_hfn *f, bool outer, int64_t incl, int64_t tail, int64_t self, int64_t stail,
		    uint64_t seq)
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
static int host_pop(struct isc_gpu_ana *g, struct gpu_hthread *th, int64_t end)
{
	struct gpu_hframe *f = &th->st[th->depth - 1], *parent = th->depth > 1 ? f - 1 : NULL;
	/* ProfilerStep#N (an op in old Kineto files) is transparent like a scope */
	bool fn = (f->kind == ISC_SPAN_PYTHON || f->kind == ISC_SPAN_OP) &&
		  !(isc_gpu_name_class(g, f->name_id) & GPU_NC_STEP);
	uint32_t mask = isc_umap_get(&g->pid_mask, th->pid);
	if (mask == ISC_UMAP_NONE)
		mask = 0;
	for (size_t i = 0; i < g->nhd; i++) {
		const struct gpu_hdev *h = &g->hd[i];
		int64_t incl = idle_cum(h, end) - f->snap[i];
		int64_t from = f->begin > h->cur_end ? f->begin : h->cur_end;
		int64_t tail = h->any && end > from ? end - from : 0;
		int64_t ctail = f->cseq[i] == h->seq ? f->ctail[i] : 0;
		int64_t up = fn ? incl : f->cidle[i], uptail = fn ? tail : ctail;
		/* the run's row (slot 0), then the row of each iteration slot open at its begin */
		for (unsigned slot = 0; fn && (mask >> i & 1) && incl > 0 && slot <= GPU_IT_SLOTS; slot++) {
			bool fresh;
			if (slot && !(f->it_mask >> (slot - 1) & 1))
				continue;
			uint64_t key = (uint64_t)slot << 44 | (uint64_t)i << 40 | (uint64_t)f->kind << 32 | f->name_id;
			uint32_t k = isc_gpu_map_index(&g->fn_map, key, &g->fns, &g->nfns, &g->fns_cap, sizeof(*g->fns),
						       &fresh);
			if (k == ISC_UMAP_NONE)
				return -ENOMEM;
			struct gpu_hfn *s = &g->fns[k];
			if (fresh) {
				s->name_id = f->name_id;
				s->kind = f->kind;
				s->hdev = (uint8_t)i;
				s->slot = (uint8_t)slot;
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
static bool is_iteration_scope(struct isc_gpu_ana *g, const struct gpu_hthread *th, size_t k)
{
	if (th->st[k].kind != ISC_SPAN_SCOPE)
		return false;
	for (size_t i = 0; i < k; i++)
		if (th->st[i].kind == ISC_SPAN_SCOPE)
			return false;
	const char *s = isc_gpu_str_name(g, th->st[k].name_id);
	return !s || strncmp(s, "enumerate(DataLoader)", 21);
}

int isc_gpu_host_end(struct isc_gpu_ana *g, const struct isc_tl_event *ev)
{
	struct gpu_hthread *th = isc_gpu_hthread_get(g, ev->pid, ev->tid);
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
 * not an op).  Without a Python function with a file (the sampled Python
 * mode records no call spans), the Python line the CUDA agent read at the
 * call (py_site).  Returns its index in sites[], ISC_UMAP_NONE when out of
 * memory.
 */
uint32_t isc_gpu_call_site(struct isc_gpu_ana *g, uint32_t pid, uint32_t tid, uint32_t py_site)
{
	uint32_t op = 0, py = 0, ti = isc_umap_get(&g->th_map, (uint64_t)pid << 32 | tid);
	bool fresh;
	if (ti != ISC_UMAP_NONE) {
		const struct gpu_hthread *th = &g->ths[ti];
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
			if (th->st[i].kind == ISC_SPAN_OP && !(isc_gpu_name_class(g, th->st[i].name_id) & GPU_NC_STEP))
				op = th->st[i].name_id;
	}
	const struct isc_tl_string *ps = py ? isc_timeline_string_borrow(g->t, py) : NULL;
	if (py_site && (!ps || !ps->file[0]))
		py = py_site; /* no Python function with a file open (sample mode): the call's own line */
	uint32_t s = isc_gpu_map_index(&g->site_map, (uint64_t)op << 32 | py, &g->sites, &g->nsites, &g->sites_cap,
				       sizeof(*g->sites), &fresh);
	if (s == ISC_UMAP_NONE) {
		g->oom = true;
		return ISC_UMAP_NONE;
	}
	g->sites[s] = (struct gpu_site){ op, py };
	return s;
}

/*
 * The allocation site of device memory allocated now on thread (pid, tid):
 * the nearest Python function with a source file open on it, else the
 * Python line of the allocating call (py_site, 0: none; the CUDA agent in
 * sample mode), else its outermost op (ProfilerStep#N is not one), else
 * its innermost scope.
 */
enum isc_dm_site_kind isc_gpu_mem_site(struct isc_gpu_ana *g, uint32_t pid, uint32_t tid, uint32_t py_site,
				       uint32_t *id)
{
	uint32_t ti = isc_umap_get(&g->th_map, (uint64_t)pid << 32 | tid);
	*id = py_site;
	if (ti == ISC_UMAP_NONE)
		return py_site ? ISC_DM_PYTHON : ISC_DM_NONE;
	const struct gpu_hthread *th = &g->ths[ti];
	for (size_t i = th->depth; i > 0; i--) {
		const struct gpu_hframe *f = &th->st[i - 1];
		const struct isc_tl_string *s;
		if (f->kind == ISC_SPAN_PYTHON && (s = isc_timeline_string_borrow(g->t, f->name_id)) && s->file[0]) {
			*id = f->name_id;
			return ISC_DM_PYTHON;
		}
	}
	if (py_site) /* no Python function with a file open (sample mode): the call's own line */
		return ISC_DM_PYTHON;
	for (size_t i = 0; i < th->depth; i++)
		if (th->st[i].kind == ISC_SPAN_OP && !(isc_gpu_name_class(g, th->st[i].name_id) & GPU_NC_STEP)) {
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

/* Index of device id in hd[], added when there is room; ISC_UMAP_NONE otherwise. */
uint32_t isc_gpu_hdev_index(struct isc_gpu_ana *g, uint32_t id)
{
	for (size_t i = 0; i < g->nhd; i++)
		if (g->hd[i].id == id)
			return (uint32_t)i;
	if (g->nhd == GPU_MAX_HDEV)
		return ISC_UMAP_NONE;
	g->hd[g->nhd] = (struct gpu_hdev){ .id = id };
	return (uint32_t)g->nhd++;
}

void isc_gpu_host_op(struct isc_gpu_ana *g, uint32_t hi, int64_t ts, int64_t end)
{
	struct gpu_hdev *h = &g->hd[hi];
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

/* Drops pending tails that no later op confirmed, confirms the others. */
void isc_gpu_host_finish(struct isc_gpu_ana *g)
{
	for (size_t i = 0; i < g->nths; i++)
		while (g->ths[i].depth)
			if (host_pop(g, &g->ths[i], g->last_ts))
				g->oom = true;
	for (size_t i = 0; i < g->nfns; i++) {
		struct gpu_hfn *f = &g->fns[i];
		if (f->pseq != g->hd[f->hdev].seq) {
			f->idle += f->ptail;
			f->self += f->pself;
		}
		f->ptail = f->pself = 0;
	}
}
