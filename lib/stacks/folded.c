/*
 * folded.c - Brendan Gregg's folded stacks (the input of flamegraph.pl,
 * inferno, speedscope and most flame-graph tools): one line per distinct
 * stack, frames root first joined by ';', a space and the sample count.
 *
 *   MainThread;<module> (run.py:3);forward (m.py:12);sgemm_kernel 40
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "order.h"

/* Prints the lines of the subtree of node; prefix holds the path text. */
static void walk(const struct isc_stree *t, const struct isc_sorder *o, uint32_t root, const char *label, FILE *out)
{
	uint32_t stack[1100], iter[1100];
	unsigned depth = 0;
	stack[0] = root;
	iter[0] = o->first[root];
	for (;;) {
		uint32_t n = stack[depth];
		if (iter[depth] == o->first[n]) { /* first visit: its own samples */
			const struct isc_snode *nd = isc_stree_node(t, n);
			if (nd->self && (depth || label)) {
				bool sep = false;
				if (label) {
					fputs(label, out);
					sep = true;
				}
				for (unsigned i = 1; i <= depth; i++) {
					if (sep)
						fputc(';', out);
					fputs(o->text[isc_stree_node(t, stack[i])->frame], out);
					sep = true;
				}
				fprintf(out, " %" PRIu64 "\n", nd->self);
			}
		}
		if (iter[depth] < o->first[n + 1] && depth + 1 < sizeof(stack) / sizeof(stack[0])) {
			uint32_t c = o->kids[iter[depth]++];
			depth++;
			stack[depth] = c;
			iter[depth] = o->first[c];
			continue;
		}
		if (depth == 0)
			break;
		depth--;
	}
}

int isc_stree_write_folded(const struct isc_stree *t, FILE *out, bool threads)
{
	struct isc_sorder o;
	if (isc_sorder_build(t, &o))
		return -ENOMEM;
	for (uint32_t k = 0; k < isc_stree_nthreads(t); k++) {
		const struct isc_sthread *th = isc_stree_thread(t, o.threads[k]);
		char label[256];
		if (threads) {
			snprintf(label, sizeof(label), "%s", th->name ? th->name : "");
			if (!th->name)
				snprintf(label, sizeof(label), "%" PRIu32 "/%" PRIu32, th->pid, th->tid);
			for (char *p = label; *p; p++)
				if (*p == ';' || (unsigned char)*p < 0x20)
					*p = *p == ';' ? ':' : ' ';
		}
		walk(t, &o, th->root, threads ? label : NULL, out);
	}
	isc_sorder_free(t, &o);
	return ferror(out) ? -EIO : 0;
}
