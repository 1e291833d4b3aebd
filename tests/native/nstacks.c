/*
 * nstacks - test helper: reads a timeline and prints every native sample's
 * unwound stack, one line per sample, root first, frames joined by ';'
 * (what tests/native checks against the known call chains).
 *
 *   nstacks [--raw] TIMELINE
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc.h"
#include "unwind.h"

int main(int argc, char **argv)
{
	size_t cut = 0;
	if (argc > 3 && !strcmp(argv[1], "--cut"))
		cut = (size_t)atol(argv[2]); /* emulate a smaller stack copy */
	if (argc < 2) {
		fprintf(stderr, "usage: nstacks TIMELINE\n");
		return 2;
	}
	FILE *f = fopen(argv[argc - 1], "rb");
	struct isc_timeline *t = NULL;
	struct isc_unwinder *u = NULL;
	struct isc_tl_event ev;
	static struct isc_stack st;
	static struct isc_native_sample s;
	int rc;
	if (!f || isc_timeline_open(&t, f) || isc_unwinder_new(&u, NULL)) {
		fprintf(stderr, "nstacks: cannot open %s\n", argv[argc - 1]);
		return 1;
	}
	while ((rc = isc_timeline_next(t, &ev)) == 1) {
		if (ev.type < ISC_REC_NATIVE_SAMPLER || ev.type > ISC_REC_NATIVE_STATS)
			continue;
		if (isc_unwinder_record(u, ev.type, ev.raw, ev.nraw))
			return 1;
		if (ev.type != ISC_REC_NATIVE_SAMPLE || isc_native_sample_parse(ev.raw, ev.nraw, &s))
			continue;
		if (cut && s.stack_len > cut)
			s.stack_len = cut;
		isc_unwinder_unwind(u, &s, &st);
		printf("%u", s.tid);
		for (unsigned i = st.n; i-- > 0;)
			printf(";%s", st.f[i].name);
		printf("\n");
	}
	const struct isc_unwind_stats *x = isc_unwinder_stats(u);
	fprintf(stderr, "samples %llu frames %llu unnamed %llu jit %llu kernel %llu truncated %llu missing %llu changed %llu\n",
		(unsigned long long)x->samples, (unsigned long long)x->frames, (unsigned long long)x->unnamed,
		(unsigned long long)x->jit, (unsigned long long)x->kernel, (unsigned long long)x->truncated,
		(unsigned long long)x->files_missing, (unsigned long long)x->files_changed);
	isc_unwinder_free(u);
	isc_timeline_free(t);
	fclose(f);
	return rc < 0;
}
