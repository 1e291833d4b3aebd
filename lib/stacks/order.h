/*
 * order.h - the fixed order in which the writers walk a stack tree
 * (order.c): threads by pid then tid, each node's children by their frame
 * text (then by frame kind, file and line), so that the same samples give
 * the same file whatever order they were added in.  Internal to lib/stacks.
 */
#ifndef ISC_STACKS_ORDER_H
#define ISC_STACKS_ORDER_H

#include "stacks.h"

struct isc_sorder {
	uint32_t *threads;  /* thread indexes in output order */
	uint32_t *first;    /* node -> index of its first child in kids; nnodes + 1 entries */
	uint32_t *kids;     /* children of every node, in output order */
	char **text;        /* frame -> isc_stree_frame_text */
};

int isc_sorder_build(const struct isc_stree *t, struct isc_sorder *o);
void isc_sorder_free(const struct isc_stree *t, struct isc_sorder *o);

#endif
