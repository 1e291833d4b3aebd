/*
 * nstacks - test helper (and the shape of phase 2's analysis call): reads
 * a timeline, unwinds every native sample (lib/native), optionally mixes
 * it with the same thread's nearest Python sample, and prints the stacks:
 *
 *   nstacks [--cut BYTES] [--mix] [--folded | --speedscope] TIMELINE
 *
 * Default: one line per sample, "TID;root;...;leaf", in timeline order
 * (with --mix, in the order stacks leave the pairing queue).  --folded and
 * --speedscope aggregate into a stack tree (lib/stacks) and write it.
 * --cut emulates a smaller stack copy.  Totals go to stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h"
#include "stacks.h"
#include "unwind.h"

struct ctx {
	bool lines;
	struct isc_stree *tree;
	uint64_t mixed, paired, elided;
};

static void out_stack(void *arg, uint32_t pid, uint32_t tid, uint64_t ts, const struct isc_stack *st, bool paired,
		      unsigned elided, uint64_t tag)
{
	struct ctx *c = arg;
	(void)ts;
	(void)tag;
	c->mixed++;
	c->paired += paired;
	c->elided += elided;
	if (c->lines) {
		printf("%u", tid);
		for (unsigned i = st->n; i-- > 0;)
			if (st->f[i].kind == ISC_FRAME_PYTHON)
				printf(";%s (%s:%u)", st->f[i].name, st->f[i].lib, st->f[i].line);
			else
				printf(";%s", st->f[i].name);
		printf("\n");
		return;
	}
	struct isc_sframe f[ISC_STACK_MAX];
	for (unsigned i = 0; i < st->n; i++)
		f[i] = (struct isc_sframe){ st->f[i].name, st->f[i].lib, st->f[i].line, st->f[i].kind };
	isc_stree_add(c->tree, pid, tid, f, st->n, 1);
}

int main(int argc, char **argv)
{
	size_t cut = 0;
	bool mix = false, folded = false, speedscope = false;
	int a = 1;
	for (; a < argc - 1; a++) {
		if (!strcmp(argv[a], "--cut") && a + 1 < argc - 1)
			cut = (size_t)atol(argv[++a]);
		else if (!strcmp(argv[a], "--mix"))
			mix = true;
		else if (!strcmp(argv[a], "--folded"))
			folded = true;
		else if (!strcmp(argv[a], "--speedscope"))
			speedscope = true;
	}
	if (a != argc - 1) {
		fprintf(stderr, "usage: nstacks [--cut BYTES] [--mix] [--folded | --speedscope] TIMELINE\n");
		return 2;
	}
	FILE *f = fopen(argv[a], "rb");
	struct isc_timeline *t = NULL;
	struct isc_unwinder *u = NULL;
	struct isc_mixq *q = NULL;
	struct isc_tl_event ev;
	static struct isc_stack st;
	static struct isc_native_sample s;
	static struct isc_frame py[256];
	struct ctx c = { !folded && !speedscope, NULL, 0, 0, 0 };
	uint64_t period = 0;
	int rc;
	if (!f || isc_timeline_open(&t, f) || isc_unwinder_new(&u, NULL) || isc_stree_new(&c.tree) ||
	    isc_mixq_new(&q, 10000000, out_stack, &c)) {
		fprintf(stderr, "nstacks: cannot open %s\n", argv[a]);
		return 1;
	}
	while ((rc = isc_timeline_next(t, &ev)) == 1) {
		if (mix)
			isc_mixq_advance(q, ev.ts);
		if (mix && ev.type == ISC_REC_PY_SAMPLE && ev.nf == 5) {
			/* pid tid state flags depth, then depth x (code id, line) */
			const uint8_t *p = ev.bytes, *e = ev.bytes + ev.nbytes;
			uint64_t id, line;
			unsigned n = 0;
			while (n < 256 && p < e && !isc_get_varint(&p, e, &id) && !isc_get_varint(&p, e, &line)) {
				const struct isc_tl_string *str = isc_timeline_string_borrow(t, (uint32_t)id);
				py[n++] = (struct isc_frame){ str ? str->name : "?", str ? str->file : "?", (uint32_t)line,
							      ISC_FRAME_PYTHON, false, false };
			}
			isc_mixq_python(q, ev.pid, ev.tid, ev.ts, ev.f[2] != 'R' && ev.f[2] != '?', py, n);
			continue;
		}
		if (ev.type < ISC_REC_NATIVE_SAMPLER || ev.type > ISC_REC_NATIVE_STATS)
			continue;
		if (isc_unwinder_record(u, ev.type, ev.raw, ev.nraw))
			return 1;
		if (ev.type == ISC_REC_NATIVE_SAMPLER && ev.nf >= 4)
			period = ev.f[3];
		if (ev.type != ISC_REC_NATIVE_SAMPLE || isc_native_sample_parse(ev.raw, ev.nraw, &s))
			continue;
		if (cut && s.stack_len > cut)
			s.stack_len = cut;
		isc_unwinder_unwind(u, &s, &st);
		if (mix)
			isc_mixq_native(q, ev.pid, ev.tid, ev.ts, &st, 0);
		else
			out_stack(&c, ev.pid, ev.tid, ev.ts, &st, false, 0, 0);
	}
	isc_mixq_free(q);
	if (folded)
		isc_stree_write_folded(c.tree, stdout, true);
	if (speedscope)
		isc_stree_write_speedscope(c.tree, stdout, argv[a], period);
	const struct isc_unwind_stats *x = isc_unwinder_stats(u);
	fprintf(stderr,
		"samples %" PRIu64 " frames %" PRIu64 " unnamed %" PRIu64 " jit %" PRIu64 " kernel %" PRIu64
		" truncated %" PRIu64 " missing %" PRIu64 " changed %" PRIu64 " paired %" PRIu64 " elided %" PRIu64 "\n",
		x->samples, x->frames, x->unnamed, x->jit, x->kernel, x->truncated, x->files_missing, x->files_changed,
		c.paired, c.elided);
	isc_stree_free(c.tree);
	isc_unwinder_free(u);
	isc_timeline_free(t);
	fclose(f);
	return rc < 0;
}
