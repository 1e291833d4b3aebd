/*
 * speedscope.c - speedscope's file format (its file-format-spec.ts and
 * the JSON schema generated from it, draft-06): shared frames, one
 * "sampled" profile per thread.
 *
 *   {"$schema": "https://www.speedscope.app/file-format-schema.json",
 *    "shared": {"frames": [{"name": "sgemm_kernel", "file": "libopenblas.so"}, ...]},
 *    "profiles": [{"type": "sampled", "name": "MainThread", "unit": "nanoseconds",
 *                  "startValue": 0, "endValue": 450000000,
 *                  "samples": [[0, 3, 5], ...], "weights": [400000000, ...]}, ...],
 *    "name": "...", "activeProfileIndex": 0, "exporter": "inferscope"}
 *
 * Each distinct stack is one sample, weighted by its samples (times the
 * period): speedscope's "left heavy" and sandwich views are the same as
 * for one sample per tick; its time-order view shows the stacks in the
 * writers' fixed order, not in time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "order.h"

/* A JSON string: escapes, and U+FFFD for bytes that are not UTF-8. */
static void put_json(FILE *out, const char *s)
{
	const unsigned char *p = (const unsigned char *)(s ? s : "");
	fputc('"', out);
	while (*p) {
		unsigned c = *p, n = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : 9;
		if (n == 0) {
			if (c == '"' || c == '\\')
				fprintf(out, "\\%c", c);
			else if (c < 0x20 || c == 0x7f)
				fprintf(out, "\\u%04x", c);
			else
				fputc((int)c, out);
			p++;
			continue;
		}
		unsigned k = 1;
		while (n != 9 && k <= n && (p[k] & 0xc0) == 0x80)
			k++;
		/* overlong two-byte forms and surrogates are not UTF-8 either */
		bool good = n != 9 && k == n + 1 && !(n == 1 && c < 0xc2) && !(n == 2 && c == 0xe0 && p[1] < 0xa0) &&
			    !(n == 2 && c == 0xed && p[1] >= 0xa0) && !(n == 3 && (c == 0xf0 ? p[1] < 0x90 : c > 0xf4 || (c == 0xf4 && p[1] >= 0x90)));
		if (good) {
			fwrite(p, 1, n + 1, out);
			p += n + 1;
		} else {
			fputs("\\ufffd", out);
			p++;
		}
	}
	fputc('"', out);
}

static void profile(const struct isc_stree *t, const struct isc_sorder *o, const struct isc_sthread *th,
		    uint64_t period_ns, FILE *out)
{
	uint32_t stack[1100], iter[1100];
	unsigned depth = 0;
	uint64_t sum = 0;
	bool first = true;
	char label[64];
	fputs("{\"type\":\"sampled\",\"name\":", out);
	if (th->name) {
		put_json(out, th->name);
	} else {
		snprintf(label, sizeof(label), "%" PRIu32 "/%" PRIu32, th->pid, th->tid);
		put_json(out, label);
	}
	fprintf(out, ",\"unit\":\"%s\",\"startValue\":0,\"samples\":[", period_ns ? "nanoseconds" : "none");
	/* two passes over the same walk: the stacks, then their weights */
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			fputs("],\"weights\":[", out);
		first = true;
		depth = 0;
		stack[0] = th->root;
		iter[0] = o->first[th->root];
		for (;;) {
			uint32_t n = stack[depth];
			const struct isc_snode *nd = isc_stree_node(t, n);
			if (iter[depth] == o->first[n] && nd->self && depth) {
				if (!first)
					fputc(',', out);
				first = false;
				if (pass) {
					uint64_t w = period_ns ? nd->self * period_ns : nd->self;
					sum += w;
					fprintf(out, "%" PRIu64, w);
				} else {
					fputc('[', out);
					for (unsigned i = 1; i <= depth; i++)
						fprintf(out, "%s%" PRIu32, i > 1 ? "," : "", isc_stree_node(t, stack[i])->frame);
					fputc(']', out);
				}
			}
			if (iter[depth] < o->first[n + 1] && depth + 1 < sizeof(stack) / sizeof(stack[0])) {
				uint32_t c = o->kids[iter[depth]++];
				stack[++depth] = c;
				iter[depth] = o->first[c];
				continue;
			}
			if (depth == 0)
				break;
			depth--;
		}
	}
	fprintf(out, "],\"endValue\":%" PRIu64 "}", sum);
}

int isc_stree_write_speedscope(const struct isc_stree *t, FILE *out, const char *name, uint64_t period_ns)
{
	struct isc_sorder o;
	if (isc_sorder_build(t, &o))
		return -ENOMEM;
	fputs("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{\"frames\":[", out);
	for (uint32_t i = 0; i < isc_stree_nframes(t); i++) {
		const struct isc_sframe *f = isc_stree_frame(t, i);
		fputs(i ? ",{\"name\":" : "{\"name\":", out);
		put_json(out, f->kind == 6 ? f->name : o.text[i]); /* a Python frame's file and line are fields */
		if (f->file && *f->file) {
			fputs(",\"file\":", out);
			put_json(out, f->file);
		}
		if (f->line)
			fprintf(out, ",\"line\":%" PRIu32, f->line);
		fputc('}', out);
	}
	fputs("]},\"profiles\":[", out);
	for (uint32_t k = 0; k < isc_stree_nthreads(t); k++) {
		if (k)
			fputc(',', out);
		profile(t, &o, isc_stree_thread(t, o.threads[k]), period_ns, out);
	}
	fputs("],\"name\":", out);
	put_json(out, name);
	fputs(",\"activeProfileIndex\":0,\"exporter\":\"inferscope\"}\n", out);
	isc_sorder_free(t, &o);
	return ferror(out) ? -EIO : 0;
}
