/*
 * fuzz_native.c - any bytes through the readers of the native sampler's
 * records (a trace's or timeline's bytes are untrusted): the input is a
 * chunk payload of records (formats/trace.md §5) whose native ones
 * (0x30-0x36) go through the body checks (native_codec.c), the unwinder
 * (maps, files named by the records, libdw on the stack bytes and
 * registers given: lib/native), the pairing with Python frames, the
 * stack tree and both writers (lib/stacks); the whole input is also read
 * as an ELF image by the recorder's build-id reader (lib/record/buildid.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "native.h" /* lib/record: isc_build_id_read */
#include "stacks.h"
#include "unwind.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct img {
	const uint8_t *p;
	size_t len;
};

static int img_read(void *ctx, uint64_t off, void *buf, size_t len)
{
	const struct img *m = ctx;
	if (off > m->len || len > m->len - off)
		return -1;
	memcpy(buf, m->p + off, len);
	return 0;
}

static void to_tree(void *ctx, uint32_t pid, uint32_t tid, uint64_t ts, const struct isc_stack *st, bool paired,
		    unsigned elided, uint64_t tag)
{
	struct isc_sframe f[ISC_STACK_MAX];
	char op[64];
	(void)ts;
	(void)paired;
	(void)elided;
	(void)tag;
	/* what the analysis asks of every mixed stack */
	(void)isc_native_op(st, true, op, sizeof(op));
	(void)isc_native_op(st, false, op, sizeof(op));
	(void)isc_native_class(st);
	for (unsigned i = 0; i < st->n; i++)
		f[i] = (struct isc_sframe){ st->f[i].name, st->f[i].lib, st->f[i].line, st->f[i].kind };
	isc_stree_add(ctx, pid, tid, f, st->n, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct isc_native_sample s;
	static struct isc_stack st;
	struct img m = { data, size };
	uint8_t id[20];
	isc_build_id_read(img_read, &m, size, id, sizeof(id));

	struct isc_unwinder *u = NULL;
	struct isc_stree *tree = NULL;
	struct isc_mixq *q = NULL;
	struct isc_frame py[2] = { { "f", "a.py", 1, ISC_FRAME_PYTHON, false, false },
				   { "<module>", "a.py", 9, ISC_FRAME_PYTHON, false, false } };
	if (isc_unwinder_new(&u, NULL) || isc_stree_new(&tree) || isc_mixq_new(&q, 10000000, to_tree, tree))
		goto out;
	struct isc_cursor c;
	struct isc_rec r;
	isc_cursor_init(&c, data, size, 0);
	while (isc_cursor_next(&c, &r) == 1) {
		if (r.type < ISC_REC_NATIVE_SAMPLER || r.type > ISC_REC_NATIVE_STATS ||
		    !isc_native_record_ok(r.type, r.body, r.len))
			continue;
		if (isc_unwinder_record(u, r.type, r.body, r.len))
			continue;
		if (r.type != ISC_REC_NATIVE_SAMPLE || isc_native_sample_parse(r.body, r.len, &s))
			continue;
		isc_mixq_advance(q, r.ts);
		if (isc_unwinder_unwind(u, &s, &st) == 0)
			isc_mixq_native(q, s.pid, s.tid, r.ts, &st, 0);
		if (s.flags & 8) /* let some inputs have a Python sample too, some off CPU */
			isc_mixq_python(q, s.pid, s.tid, r.ts + 1, (s.flags & 16) != 0, py, 2);
	}
	isc_mixq_free(q);
	q = NULL;
	FILE *null = fopen("/dev/null", "w");
	if (null) {
		isc_stree_write_folded(tree, null, true);
		isc_stree_write_speedscope(tree, null, "fuzz", 1000);
		fclose(null);
	}
out:
	isc_mixq_free(q);
	isc_stree_free(tree);
	isc_unwinder_free(u);
	isc_err_clear();
	return 0;
}
