/*
 * analyze_numa.c - memory.numa: NUMA placement of the traced processes.
 *
 *   pages_by_node[k]  resident pages on node k, summed over processes, from
 *                     each process's latest NUMA_MAPS record
 *   remote_pct        share of those pages on a node where none of the
 *                     process's sampled threads ran (THREAD_SAMPLE carries
 *                     the node of the thread's last CPU)
 *   nodes             highest node index seen + 1
 *
 * A process whose threads were never sampled on any node counts no page
 * as remote (nothing to compare with).  Memory: one small entry per
 * process, at most MAX_PROCS (later processes are left out and counted in
 * processes_left_out).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze_numa.h"
#include "isc_format.h"

#define MAX_NODES 14 /* NUMA_MAPS values a timeline event holds */
#define MAX_PROCS 4096

struct nproc {
	uint32_t pid;
	bool have_maps;
	uint64_t pages[MAX_NODES];
	uint64_t ran_on; /* bit k: a thread was sampled on node k */
};

struct isc_numa {
	struct nproc *p;
	size_t n, cap;
	uint64_t left_out;
	unsigned nodes;
};

int isc_numa_new(struct isc_numa **n)
{
	return (*n = calloc(1, sizeof(**n))) ? 0 : -ENOMEM;
}

static struct nproc *proc(struct isc_numa *n, uint32_t pid, int *rc)
{
	*rc = 0;
	for (size_t i = n->n; i-- > 0;)
		if (n->p[i].pid == pid)
			return &n->p[i];
	if (n->n >= MAX_PROCS) {
		n->left_out++;
		return NULL;
	}
	if (n->n == n->cap) {
		size_t cap = n->cap ? 2 * n->cap : 8;
		struct nproc *p = realloc(n->p, cap * sizeof(*p));
		if (!p) {
			*rc = -ENOMEM;
			return NULL;
		}
		n->p = p;
		n->cap = cap;
	}
	n->p[n->n] = (struct nproc){ .pid = pid };
	return &n->p[n->n++];
}

int isc_numa_event(struct isc_numa *n, const struct isc_tl_event *ev)
{
	struct nproc *p;
	int rc;
	if (ev->type == ISC_REC_NUMA_MAPS && ev->nf >= 2) {
		if (!(p = proc(n, (uint32_t)ev->f[0], &rc)))
			return rc;
		unsigned cnt = ev->nf - 2 < MAX_NODES ? ev->nf - 2 : MAX_NODES;
		p->have_maps = true;
		memset(p->pages, 0, sizeof(p->pages));
		for (unsigned k = 0; k < cnt; k++)
			p->pages[k] = ev->f[2 + k];
		if (cnt > n->nodes)
			n->nodes = cnt;
	} else if (ev->type == ISC_REC_THREAD_SAMPLE && ev->nf > 8 && ev->f[8] > 0 && ev->f[8] <= MAX_NODES) {
		if (!(p = proc(n, (uint32_t)ev->f[0], &rc)))
			return rc;
		p->ran_on |= 1ull << (ev->f[8] - 1);
		if (ev->f[8] > n->nodes)
			n->nodes = (unsigned)ev->f[8];
	}
	return 0;
}

int isc_numa_emit(const struct isc_numa *n, cJSON *mem)
{
	double by_node[MAX_NODES] = { 0 }, total = 0, remote = 0;
	bool any = false;
	if (!mem)
		return -ENOMEM;
	for (size_t i = 0; i < n->n; i++) {
		const struct nproc *p = &n->p[i];
		if (!p->have_maps)
			continue;
		any = true;
		for (unsigned k = 0; k < MAX_NODES; k++) {
			by_node[k] += (double)p->pages[k];
			total += (double)p->pages[k];
			if (p->ran_on && !(p->ran_on & (1ull << k)))
				remote += (double)p->pages[k];
		}
	}
	cJSON_DeleteItemFromObjectCaseSensitive(mem, "numa");
	if (!any)
		return cJSON_AddNullToObject(mem, "numa") ? 0 : -ENOMEM;
	cJSON *o = cJSON_AddObjectToObject(mem, "numa");
	cJSON *arr = o ? cJSON_AddArrayToObject(o, "pages_by_node") : NULL;
	if (!arr)
		return -ENOMEM;
	for (unsigned k = 0; k < n->nodes && k < MAX_NODES; k++) {
		cJSON *x = cJSON_CreateNumber(by_node[k]);
		if (!x)
			return -ENOMEM;
		cJSON_AddItemToArray(arr, x);
	}
	if (!cJSON_AddNumberToObject(o, "nodes", n->nodes) ||
	    !cJSON_AddNumberToObject(o, "remote_pct", total > 0 ? round(1000 * remote / total) / 10 : 0) ||
	    !cJSON_AddNumberToObject(o, "processes_left_out", (double)n->left_out))
		return -ENOMEM;
	return 0;
}

void isc_numa_free(struct isc_numa *n)
{
	if (n)
		free(n->p);
	free(n);
}
