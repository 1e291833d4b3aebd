/*
 * stacktree.c - the stack tree of stacks.h: frames interned in a table
 * (hash on kind, name, file, line), nodes in an array, a node's child for
 * a frame found through one hash table keyed by (parent, frame).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "stacks.h"

struct fent {
	uint64_t h;
	uint32_t idx;
	struct fent *next;
};

struct cent {
	uint64_t key; /* parent << 32 | frame */
	uint32_t node;
	struct cent *next;
};

struct isc_stree {
	struct isc_sframe *frames;
	uint32_t nframes, capframes;
	struct isc_snode *nodes;
	uint32_t nnodes, capnodes;
	struct isc_sthread *threads;
	uint32_t nthreads, capthreads;
	struct fent **fhash;
	struct cent **chash;
	size_t fbuckets, cbuckets;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static uint64_t str_hash(const char *s, uint64_t h)
{
	for (; s && *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ULL;
	return (h ^ 0xff) * 1099511628211ULL;
}

int isc_stree_new(struct isc_stree **out)
{
	struct isc_stree *t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->fbuckets = t->cbuckets = 4096;
	t->fhash = calloc(t->fbuckets, sizeof(*t->fhash));
	t->chash = calloc(t->cbuckets, sizeof(*t->chash));
	if (!t->fhash || !t->chash) {
		isc_stree_free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

void isc_stree_free(struct isc_stree *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nframes; i++) {
		free((char *)t->frames[i].name);
		free((char *)t->frames[i].file);
	}
	for (uint32_t i = 0; i < t->nthreads; i++)
		free((char *)t->threads[i].name);
	for (size_t i = 0; t->fhash && i < t->fbuckets; i++)
		for (struct fent *e = t->fhash[i], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	for (size_t i = 0; t->chash && i < t->cbuckets; i++)
		for (struct cent *e = t->chash[i], *n; e; e = n) {
			n = e->next;
			free(e);
		}
	free(t->fhash);
	free(t->chash);
	free(t->frames);
	free(t->nodes);
	free(t->threads);
	free(t);
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The index of frame f in the table, added (strings copied) if new. */
static int frame_index(struct isc_stree *t, const struct isc_sframe *f, uint32_t *idx)
{
	uint64_t h = str_hash(f->file, str_hash(f->name, 1469598103934665603ULL ^ f->kind)) ^ f->line;
	struct fent **slot = &t->fhash[mix(h) % t->fbuckets];
	for (struct fent *e = *slot; e; e = e->next) {
		const struct isc_sframe *g = &t->frames[e->idx];
		if (e->h == h && g->kind == f->kind && g->line == f->line && same(g->name, f->name) && same(g->file, f->file)) {
			*idx = e->idx;
			return 0;
		}
	}
	if (t->nframes == t->capframes) {
		uint32_t cap = t->capframes ? t->capframes * 2 : 256;
		struct isc_sframe *n = realloc(t->frames, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->frames = n;
		t->capframes = cap;
	}
	struct fent *e = malloc(sizeof(*e));
	char *name = strdup(f->name ? f->name : "");
	char *file = f->file ? strdup(f->file) : NULL;
	if (!e || !name || (f->file && !file)) {
		free(e);
		free(name);
		free(file);
		return -ENOMEM;
	}
	t->frames[t->nframes] = (struct isc_sframe){ name, file, f->line, f->kind };
	*e = (struct fent){ h, t->nframes, *slot };
	*slot = e;
	*idx = t->nframes++;
	return 0;
}

static int node_new(struct isc_stree *t, uint32_t frame, uint32_t parent, uint32_t *idx)
{
	if (t->nnodes == t->capnodes) {
		uint32_t cap = t->capnodes ? t->capnodes * 2 : 1024;
		struct isc_snode *n = realloc(t->nodes, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->nodes = n;
		t->capnodes = cap;
	}
	t->nodes[t->nnodes] = (struct isc_snode){ frame, parent, 0, 0 };
	*idx = t->nnodes++;
	return 0;
}

/* The child of parent for frame, created if new. */
static int child(struct isc_stree *t, uint32_t parent, uint32_t frame, uint32_t *idx)
{
	uint64_t key = (uint64_t)parent << 32 | frame;
	struct cent **slot = &t->chash[mix(key) % t->cbuckets];
	for (struct cent *e = *slot; e; e = e->next)
		if (e->key == key) {
			*idx = e->node;
			return 0;
		}
	struct cent *e = malloc(sizeof(*e));
	if (!e || node_new(t, frame, parent, idx)) {
		free(e);
		return -ENOMEM;
	}
	*e = (struct cent){ key, *idx, *slot };
	*slot = e;
	return 0;
}

int isc_stree_thread_index(struct isc_stree *t, uint32_t pid, uint32_t tid, uint32_t *idx)
{
	for (uint32_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].pid == pid && t->threads[i].tid == tid) {
			*idx = i;
			return 0;
		}
	if (t->nthreads == t->capthreads) {
		uint32_t cap = t->capthreads ? t->capthreads * 2 : 16;
		struct isc_sthread *n = realloc(t->threads, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		t->threads = n;
		t->capthreads = cap;
	}
	uint32_t root;
	if (node_new(t, UINT32_MAX, UINT32_MAX, &root))
		return -ENOMEM;
	t->threads[t->nthreads] = (struct isc_sthread){ pid, tid, NULL, root };
	*idx = t->nthreads++;
	return 0;
}

int isc_stree_name_thread(struct isc_stree *t, uint32_t pid, uint32_t tid, const char *name)
{
	uint32_t i;
	char *n = strdup(name);
	if (!n || isc_stree_thread_index(t, pid, tid, &i)) {
		free(n);
		return -ENOMEM;
	}
	free((char *)t->threads[i].name);
	t->threads[i].name = n;
	return 0;
}

int isc_stree_intern(struct isc_stree *t, const struct isc_sframe *f, uint32_t *idx)
{
	return frame_index(t, f, idx);
}

int isc_stree_add(struct isc_stree *t, uint32_t pid, uint32_t tid, const struct isc_sframe *frames, unsigned n,
		  uint64_t count)
{
	return isc_stree_add_at(t, pid, tid, frames, n, count, NULL);
}

int isc_stree_add_at(struct isc_stree *t, uint32_t pid, uint32_t tid, const struct isc_sframe *frames, unsigned n,
		     uint64_t count, uint32_t *leaf)
{
	uint32_t ti, node, fi;
	if (isc_stree_thread_index(t, pid, tid, &ti))
		return -ENOMEM;
	node = t->threads[ti].root;
	uint32_t path[1024];
	unsigned depth = 0;
	path[depth++] = node;
	for (unsigned i = n; i-- > 0 && depth < 1024;) {
		if (frame_index(t, &frames[i], &fi) || child(t, node, fi, &node))
			return -ENOMEM;
		path[depth++] = node;
	}
	for (unsigned i = 0; i < depth; i++)
		t->nodes[path[i]].total += count;
	t->nodes[node].self += count;
	if (leaf)
		*leaf = node;
	return 0;
}

uint32_t isc_stree_nframes(const struct isc_stree *t) { return t->nframes; }
const struct isc_sframe *isc_stree_frame(const struct isc_stree *t, uint32_t i) { return &t->frames[i]; }
uint32_t isc_stree_nnodes(const struct isc_stree *t) { return t->nnodes; }
const struct isc_snode *isc_stree_node(const struct isc_stree *t, uint32_t i) { return &t->nodes[i]; }
uint32_t isc_stree_nthreads(const struct isc_stree *t) { return t->nthreads; }
const struct isc_sthread *isc_stree_thread(const struct isc_stree *t, uint32_t i) { return &t->threads[i]; }
