/*
 * order.c - the writers' walk order over a stack tree (order.h): the
 * children of every node gathered from the parent links (counting sort
 * by parent) and sorted by text.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "order.h"

void isc_stree_frame_text(const struct isc_sframe *f, char *buf, size_t cap)
{
	if (f->kind == 6) /* Python */
		snprintf(buf, cap, "%s (%s:%u)", f->name, f->file ? f->file : "", f->line);
	else if (f->kind == 4) /* kernel */
		snprintf(buf, cap, "%s_[k]", f->name);
	else
		snprintf(buf, cap, "%s", f->name);
	for (char *p = buf; *p; p++)
		if (*p == ';')
			*p = ':';
		else if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
}

/* qsort context: there is no qsort_r portable enough, so a file-level pointer */
static const struct isc_stree *sort_tree;
static char **sort_text;

static int kid_cmp(const void *a, const void *b)
{
	const struct isc_snode *x = isc_stree_node(sort_tree, *(const uint32_t *)a);
	const struct isc_snode *y = isc_stree_node(sort_tree, *(const uint32_t *)b);
	int c = strcmp(sort_text[x->frame], sort_text[y->frame]);
	if (c)
		return c;
	const struct isc_sframe *f = isc_stree_frame(sort_tree, x->frame), *g = isc_stree_frame(sort_tree, y->frame);
	if (f->kind != g->kind)
		return f->kind < g->kind ? -1 : 1;
	c = strcmp(f->file ? f->file : "", g->file ? g->file : "");
	return c ? c : (f->line > g->line) - (f->line < g->line);
}

static int thread_cmp(const void *a, const void *b)
{
	const struct isc_sthread *x = isc_stree_thread(sort_tree, *(const uint32_t *)a);
	const struct isc_sthread *y = isc_stree_thread(sort_tree, *(const uint32_t *)b);
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

int isc_sorder_build(const struct isc_stree *t, struct isc_sorder *o)
{
	uint32_t nn = isc_stree_nnodes(t), nf = isc_stree_nframes(t), nt = isc_stree_nthreads(t);
	memset(o, 0, sizeof(*o));
	o->threads = malloc((nt + 1) * sizeof(uint32_t));
	o->first = calloc((size_t)nn + 2, sizeof(uint32_t));
	o->kids = malloc((nn + 1) * sizeof(uint32_t));
	o->text = calloc(nf + 1, sizeof(char *));
	if (!o->threads || !o->first || !o->kids || !o->text)
		goto nomem;
	for (uint32_t i = 0; i < nf; i++) {
		char buf[8192];
		isc_stree_frame_text(isc_stree_frame(t, i), buf, sizeof(buf));
		if (!(o->text[i] = strdup(buf)))
			goto nomem;
	}
	/* counting sort of the nodes by parent: first[p] .. first[p + 1] */
	for (uint32_t i = 0; i < nn; i++)
		if (isc_stree_node(t, i)->parent != UINT32_MAX)
			o->first[isc_stree_node(t, i)->parent + 2]++;
	for (uint32_t i = 0; i < nn; i++)
		o->first[i + 2] += o->first[i + 1];
	for (uint32_t i = 0; i < nn; i++)
		if (isc_stree_node(t, i)->parent != UINT32_MAX)
			o->kids[o->first[isc_stree_node(t, i)->parent + 1]++] = i;
	sort_tree = t;
	sort_text = o->text;
	for (uint32_t i = 0; i < nn; i++)
		if (o->first[i + 1] - o->first[i] > 1)
			qsort(o->kids + o->first[i], o->first[i + 1] - o->first[i], sizeof(uint32_t), kid_cmp);
	for (uint32_t i = 0; i < nt; i++)
		o->threads[i] = i;
	qsort(o->threads, nt, sizeof(uint32_t), thread_cmp);
	return 0;
nomem:
	isc_sorder_free(t, o);
	return -ENOMEM;
}

void isc_sorder_free(const struct isc_stree *t, struct isc_sorder *o)
{
	if (o->text)
		for (uint32_t i = 0; i < isc_stree_nframes(t); i++)
			free(o->text[i]);
	free(o->text);
	free(o->threads);
	free(o->first);
	free(o->kids);
	memset(o, 0, sizeof(*o));
}
