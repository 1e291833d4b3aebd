/*
 * dist_facts.c - which process is which rank of a distributed job
 * (isc_dist.h), from what a timeline says:
 *
 *   MARK dist.rank, dist.world_size, dist.local_rank, dist.job,
 *        dist.backend.NAME     the Python agent, as torch.distributed's
 *                              init_process_group returns
 *   MARK dist.env.*            the Python agent at start, from RANK,
 *                              LOCAL_RANK, WORLD_SIZE and the launchers'
 *                              equivalents (formats/trace.md)
 *   META rank, world_size,     a Kineto file's distributedInfo (context
 *        backend               0/0 of its source): the whole source
 *   PROC_INFO                  the parent of each process
 *
 * Resolution, per process: its own torch.distributed facts; else, when
 * no process of its source initialized torch.distributed, its
 * environment's; else its parent's (a DataLoader worker, a helper the
 * rank started).  A process with none belongs to no rank (the launcher).
 * Then the ranks: one entry per rank number, the processes that resolved
 * to it; two processes of one rank that are not parent and child, two
 * sources with one rank, or ranks that disagree on world size, backend or
 * rendezvous are not one job.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc_dist.h"
#include "isc_format.h" /* ISC_REC_*, ISC_STR_MARK */

void isc_rankfacts_init(struct isc_rank_facts *f, const char *(*name_of)(void *ctx, uint32_t id, uint8_t *kind),
			void *ctx)
{
	memset(f, 0, sizeof(*f));
	f->name_of = name_of;
	f->ctx = ctx;
}

static struct isc_rank_proc *proc_get(struct isc_rank_facts *f, uint32_t source, uint32_t pid)
{
	uint32_t *slot;
	if (isc_umap_slot(&f->byproc, (uint64_t)source << 32 | pid, &slot))
		return NULL;
	if (*slot == ISC_UMAP_NONE) {
		if (isc_grow(&f->procs, &f->capprocs, f->nprocs, sizeof(*f->procs))) {
			isc_umap_del(&f->byproc, (uint64_t)source << 32 | pid);
			return NULL;
		}
		f->procs[f->nprocs] = (struct isc_rank_proc){ source, pid, 0, ISC_RANK_NONE, ISC_RANK_NONE, ISC_RANK_NONE,
							      ISC_RANK_NONE, ISC_RANK_NONE, ISC_RANK_NONE, 0, 0, "", false };
		*slot = (uint32_t)f->nprocs++;
	}
	return &f->procs[*slot];
}

/* A META value as an unsigned number below 2^32, or ISC_RANK_NONE. */
static uint32_t meta_u32(const uint8_t *p, size_t n)
{
	uint64_t v = 0;
	if (!n || n > 10)
		return ISC_RANK_NONE;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return ISC_RANK_NONE;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	return v < UINT32_MAX ? (uint32_t)v : ISC_RANK_NONE;
}

static uint32_t val_u32(int64_t v)
{
	return v >= 0 && v < (int64_t)UINT32_MAX ? (uint32_t)v : ISC_RANK_NONE;
}

int isc_rankfacts_event(struct isc_rank_facts *f, const struct isc_tl_event *ev)
{
	struct isc_rank_proc *p;
	switch (ev->type) {
	case ISC_REC_MARK: {
		uint8_t kind = 0;
		const char *name = f->name_of(f->ctx, ev->name_id, &kind), *be = NULL;
		unsigned m = name && kind == ISC_STR_MARK ? isc_dist_mark(name, NULL, &be) : ISC_DM_NONE;
		if (m == ISC_DM_NONE || m == ISC_DM_SEQ || m == ISC_DM_PG || m == ISC_DM_BYTES)
			return 0;
		if (!(p = proc_get(f, ev->source, ev->pid)))
			return -ENOMEM;
		switch (m) {
		case ISC_DM_RANK:
			p->rank = val_u32(ev->value);
			p->init = p->rank != ISC_RANK_NONE;
			break;
		case ISC_DM_WORLD:
			p->world = val_u32(ev->value);
			break;
		case ISC_DM_LOCAL_RANK:
			p->local = val_u32(ev->value);
			break;
		case ISC_DM_JOB:
			p->job = (uint64_t)ev->value;
			break;
		case ISC_DM_BACKEND:
			snprintf(p->backend, sizeof(p->backend), "%s", be);
			break;
		case ISC_DM_ENV_RANK:
			p->env_rank = val_u32(ev->value);
			break;
		case ISC_DM_ENV_WORLD:
			p->env_world = val_u32(ev->value);
			break;
		case ISC_DM_ENV_LOCAL:
			p->env_local = val_u32(ev->value);
			break;
		case ISC_DM_ENV_JOB:
			p->env_job = (uint64_t)ev->value;
			break;
		}
		return 0;
	}
	case ISC_REC_META: {
		size_t kl = ev->nf ? (size_t)ev->f[0] : 0;
		if (!ev->nf || kl > ev->nbytes || ev->pid)
			return 0;
		const uint8_t *k = ev->bytes, *v = ev->bytes + kl;
		size_t vl = ev->nbytes - kl;
		bool rank = kl == 4 && !memcmp(k, "rank", 4), world = kl == 10 && !memcmp(k, "world_size", 10),
		     backend = kl == 7 && !memcmp(k, "backend", 7);
		if (!rank && !world && !backend)
			return 0;
		if (!(p = proc_get(f, ev->source, 0)))
			return -ENOMEM;
		if (rank) {
			p->rank = meta_u32(v, vl);
			p->init = p->rank != ISC_RANK_NONE;
		} else if (world) {
			p->world = meta_u32(v, vl);
		} else {
			size_t n = vl < sizeof(p->backend) - 1 ? vl : sizeof(p->backend) - 1;
			for (size_t i = 0; i < n; i++)
				p->backend[i] = v[i] >= 0x20 && v[i] < 0x7f ? (char)v[i] : '?';
			p->backend[n] = '\0';
		}
		return 0;
	}
	case ISC_REC_PROC_INFO:
		if (ev->nf < 2 || !ev->pid)
			return 0;
		if (!(p = proc_get(f, ev->source, ev->pid)))
			return -ENOMEM;
		p->ppid = (uint32_t)ev->f[1];
		return 0;
	default:
		return 0;
	}
}

/* What rank a process resolves to (its own facts, or its parent's), following at most 64 parents. */
static const struct isc_rank_proc *resolve_one(const struct isc_rank_facts *f, const struct isc_rank_proc *p,
					       const bool *init_src, size_t nsrc)
{
	for (int hops = 0; p && hops < 64; hops++) {
		bool src_init = p->source < nsrc && init_src[p->source];
		if (p->init || (!src_init && p->env_rank != ISC_RANK_NONE))
			return p;
		if (!p->ppid || p->ppid == p->pid)
			return NULL;
		uint32_t i = isc_umap_get(&f->byproc, (uint64_t)p->source << 32 | p->ppid);
		p = i != ISC_UMAP_NONE ? &f->procs[i] : NULL;
	}
	return NULL;
}

static int rank_cmp(const void *a, const void *b)
{
	const struct isc_rank *x = a, *y = b;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* Is a an ancestor of b (through PROC_INFO parents, same source)? */
static bool ancestor(const struct isc_rank_facts *f, const struct isc_rank_proc *a, const struct isc_rank_proc *b)
{
	for (int hops = 0; b && hops < 64; hops++) {
		if (b->ppid == a->pid && b->source == a->source)
			return true;
		uint32_t i = b->ppid ? isc_umap_get(&f->byproc, (uint64_t)b->source << 32 | b->ppid) : ISC_UMAP_NONE;
		b = i != ISC_UMAP_NONE ? &f->procs[i] : NULL;
	}
	return false;
}

int isc_rankfacts_resolve(struct isc_rank_facts *f)
{
	size_t nsrc = 0;
	for (size_t i = 0; i < f->nprocs; i++)
		if (f->procs[i].source + 1 > nsrc)
			nsrc = f->procs[i].source + 1;
	bool *init_src = calloc(nsrc ? nsrc : 1, sizeof(*init_src));
	const struct isc_rank_proc **root = calloc(f->nprocs ? f->nprocs : 1, sizeof(*root));
	int rc = -ENOMEM;
	if (!init_src || !root)
		goto out;
	for (size_t i = 0; i < f->nprocs; i++)
		if (f->procs[i].init)
			init_src[f->procs[i].source] = true;
	f->conflict[0] = '\0';
	for (size_t i = 0; i < f->nprocs; i++) {
		root[i] = resolve_one(f, &f->procs[i], init_src, nsrc);
		if (!root[i])
			continue;
		const struct isc_rank_proc *r = root[i];
		uint32_t rk = r->init ? r->rank : r->env_rank;
		size_t j = 0;
		for (; j < f->nranks && f->ranks[j].rank != rk; j++)
			;
		if (j == f->nranks) {
			if (isc_grow(&f->ranks, &f->capranks, f->nranks, sizeof(*f->ranks)))
				goto out;
			struct isc_rank *n = &f->ranks[f->nranks++];
			memset(n, 0, sizeof(*n));
			n->rank = rk;
			n->world = r->init ? r->world : r->env_world;
			n->local = r->local != ISC_RANK_NONE ? r->local : r->env_local;
			n->source = r->source;
			n->job = r->init ? r->job : r->env_job;
			snprintf(n->backend, sizeof(n->backend), "%s", r->backend);
		}
		struct isc_rank *k = &f->ranks[j];
		/* the process that gave the rank: another one with the same rank must be its relative */
		if (root[i] == &f->procs[i]) {
			for (size_t q = 0; q < i && !f->conflict[0]; q++) {
				const struct isc_rank_proc *o = root[q];
				if (o != &f->procs[q] || (o->init ? o->rank : o->env_rank) != rk)
					continue;
				if (o->source != r->source)
					snprintf(f->conflict, sizeof(f->conflict), "rank %u is in two inputs (%u and %u)", rk,
						 o->source + 1, r->source + 1);
				else if (!ancestor(f, o, r) && !ancestor(f, r, o))
					snprintf(f->conflict, sizeof(f->conflict),
						 "rank %u is claimed by two processes (pids %u and %u) that are not parent and child",
						 rk, o->pid, r->pid);
			}
			uint32_t w = r->init ? r->world : r->env_world;
			uint64_t job = r->init ? r->job : r->env_job;
			if (!f->conflict[0] && w != ISC_RANK_NONE && k->world != ISC_RANK_NONE && w != k->world)
				snprintf(f->conflict, sizeof(f->conflict), "rank %u says world size %u and %u", rk, k->world, w);
			if (k->world == ISC_RANK_NONE)
				k->world = w;
			if (!k->job)
				k->job = job;
			if (!k->backend[0])
				snprintf(k->backend, sizeof(k->backend), "%s", r->backend);
		}
		if (isc_grow(&k->pids, &k->cappids, k->npids, sizeof(*k->pids)))
			goto out;
		k->pids[k->npids++] = f->procs[i].pid;
	}
	/* one job: the ranks agree on world size, backend and rendezvous */
	for (size_t j = 1; j < f->nranks && !f->conflict[0]; j++) {
		const struct isc_rank *a = &f->ranks[0], *b = &f->ranks[j];
		if (a->world != ISC_RANK_NONE && b->world != ISC_RANK_NONE && a->world != b->world)
			snprintf(f->conflict, sizeof(f->conflict), "mixed jobs: world size %u (rank %u) and %u (rank %u)",
				 a->world, a->rank, b->world, b->rank);
		else if (a->backend[0] && b->backend[0] && strcmp(a->backend, b->backend))
			snprintf(f->conflict, sizeof(f->conflict), "mixed jobs: backend %s (rank %u) and %s (rank %u)",
				 a->backend, a->rank, b->backend, b->rank);
		else if (a->job && b->job && a->job != b->job)
			snprintf(f->conflict, sizeof(f->conflict),
				 "mixed jobs: ranks %u and %u joined different rendezvous (dist.job differs)", a->rank, b->rank);
	}
	for (size_t j = 0; j < f->nranks && !f->conflict[0]; j++)
		if (f->ranks[j].world != ISC_RANK_NONE && f->ranks[j].rank >= f->ranks[j].world)
			snprintf(f->conflict, sizeof(f->conflict), "rank %u is not below its world size %u", f->ranks[j].rank,
				 f->ranks[j].world);
	if (f->nranks > 1) /* qsort may not be given NULL, which an empty list can be */
		qsort(f->ranks, f->nranks, sizeof(*f->ranks), rank_cmp);
	for (size_t j = 0; j < f->nranks; j++)
		for (size_t q = 0; q < f->ranks[j].npids; q++) {
			uint32_t *slot;
			if (isc_umap_slot(&f->owner, (uint64_t)f->ranks[j].source << 32 | f->ranks[j].pids[q], &slot))
				goto out;
			*slot = (uint32_t)j;
		}
	rc = f->conflict[0] ? -EINVAL : 0;
out:
	free(init_src);
	free(root);
	return rc;
}

uint32_t isc_rankfacts_owner(const struct isc_rank_facts *f, uint32_t source, uint32_t pid)
{
	uint32_t i = isc_umap_get(&f->owner, (uint64_t)source << 32 | pid);
	if (i == ISC_UMAP_NONE && pid) /* a Kineto source: every process of it */
		i = isc_umap_get(&f->owner, (uint64_t)source << 32);
	return i;
}

void isc_rankfacts_free(struct isc_rank_facts *f)
{
	for (size_t j = 0; j < f->nranks; j++)
		free(f->ranks[j].pids);
	free(f->ranks);
	free(f->procs);
	isc_umap_free(&f->byproc);
	isc_umap_free(&f->owner);
	memset(f, 0, sizeof(*f));
}
