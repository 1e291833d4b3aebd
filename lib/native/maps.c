/*
 * maps.c - each process's executable mappings over time (maps.h).
 *
 *   before:  [ A ........... )[ B ...... )
 *   add C:          [ C ..... )
 *   after:   [ A  )[ C ..... )[B')            A cut, B trimmed from the left
 *
 * Processes sit in a hash table by pid; each keeps its mappings in a
 * sorted array (a few hundred for a torch process), so a lookup is a
 * binary search and an insertion a memmove.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h" /* isc_mix64 */
#include "maps.h"

#define NBUCKETS 1024

struct isc_nmaps {
	struct isc_nproc *b[NBUCKETS];
};

int isc_nmaps_new(struct isc_nmaps **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void isc_nmaps_free(struct isc_nmaps *m, void (*drop)(void *dwfl))
{
	if (!m)
		return;
	for (size_t i = 0; i < NBUCKETS; i++)
		for (struct isc_nproc *p = m->b[i], *next; p; p = next) {
			next = p->next;
			if (p->dwfl && drop)
				drop(p->dwfl);
			free(p->maps);
			free(p);
		}
	free(m);
}

struct isc_nproc *isc_nmaps_proc(struct isc_nmaps *m, uint32_t pid, bool create)
{
	struct isc_nproc **slot = &m->b[isc_mix64(pid) % NBUCKETS];
	for (struct isc_nproc *p = *slot; p; p = p->next)
		if (p->pid == pid)
			return p;
	if (!create)
		return NULL;
	struct isc_nproc *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->next = *slot;
	*slot = p;
	return p;
}

/* Index of the first mapping ending after addr. */
static size_t first_after(const struct isc_nproc *p, uint64_t addr)
{
	size_t lo = 0, hi = p->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->maps[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int reserve(struct isc_nproc *p, size_t extra)
{
	if (p->n + extra <= p->cap)
		return 0;
	size_t cap = p->cap ? p->cap * 2 : 64;
	while (cap < p->n + extra)
		cap *= 2;
	struct isc_nmap *n = realloc(p->maps, cap * sizeof(*n));
	if (!n)
		return -ENOMEM;
	p->maps = n;
	p->cap = cap;
	return 0;
}

int isc_nmaps_add(struct isc_nmaps *m, uint32_t pid, const struct isc_nmap *map, bool *invalidated)
{
	struct isc_nproc *p = isc_nmaps_proc(m, pid, true);
	*invalidated = false;
	if (!p || reserve(p, 2))
		return -ENOMEM;
	size_t i = first_after(p, map->start);
	/* a mapping that starts before the new one and ends inside or after it */
	if (i < p->n && p->maps[i].start < map->start) {
		struct isc_nmap *o = &p->maps[i];
		*invalidated |= o->state == 1;
		if (o->end > map->end) { /* split: keep the tail too */
			memmove(&p->maps[i + 2], &p->maps[i + 1], (p->n - i - 1) * sizeof(*o));
			p->maps[i + 1] = *o;
			p->maps[i + 1].pgoff += map->end - o->start;
			p->maps[i + 1].start = map->end;
			p->n++;
		}
		o->end = map->start;
		i++;
	}
	/* mappings inside the new one go; one reaching past its end is trimmed */
	size_t j = i;
	while (j < p->n && p->maps[j].start < map->end) {
		*invalidated |= p->maps[j].state == 1;
		if (p->maps[j].end > map->end) {
			p->maps[j].pgoff += map->end - p->maps[j].start;
			p->maps[j].start = map->end;
			break;
		}
		j++;
	}
	memmove(&p->maps[i + 1], &p->maps[j], (p->n - j) * sizeof(p->maps[0]));
	p->n = p->n - (j - i) + 1;
	p->maps[i] = *map;
	p->maps[i].state = 0;
	p->gen += *invalidated;
	return 0;
}

int isc_nmaps_fork(struct isc_nmaps *m, uint32_t child, uint32_t parent)
{
	struct isc_nproc *pp = isc_nmaps_proc(m, parent, false);
	struct isc_nproc *c = isc_nmaps_proc(m, child, true);
	if (!c)
		return -ENOMEM;
	if (!pp || pp == c)
		return 0;
	c->n = 0;
	if (reserve(c, pp->n))
		return -ENOMEM;
	memcpy(c->maps, pp->maps, pp->n * sizeof(*c->maps));
	c->n = pp->n;
	for (size_t i = 0; i < c->n; i++)
		c->maps[i].state = 0;
	c->gen++;
	return 0;
}

void *isc_nmaps_reset(struct isc_nproc *p)
{
	void *d = p->dwfl;
	p->dwfl = NULL;
	for (size_t i = 0; i < p->n; i++)
		p->maps[i].state = 0;
	p->gen++;
	return d;
}

void isc_nmaps_exec(struct isc_nmaps *m, uint32_t pid, void **dwfl)
{
	struct isc_nproc *p = isc_nmaps_proc(m, pid, false);
	*dwfl = NULL;
	if (!p)
		return;
	*dwfl = isc_nmaps_reset(p);
	p->n = 0;
}

struct isc_nmap *isc_nmaps_find(const struct isc_nproc *p, uint64_t addr)
{
	size_t i = first_after(p, addr);
	return i < p->n && p->maps[i].start <= addr ? &p->maps[i] : NULL;
}
