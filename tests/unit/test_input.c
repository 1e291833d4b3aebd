/*
 * test_input.c - isc_input_open (lib/merge/input.c): what an input is,
 * told by its first bytes, and a stream that gives back every byte (the
 * peeked ones, then the rest) without seeking, from a pipe too.  The
 * inputs: the saved recording of tests/data/golden, a timeline merged from
 * it by the library, findings and Kineto JSON text, gzip, garbage, nothing.
 *
 *   test_input DATA_DIR   (tests/data)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "isc.h"
#include "isc_merge.h"
#include "tap.h"

static unsigned char *slurp(FILE *f, size_t *n)
{
	size_t cap = 1 << 16;
	unsigned char *b = malloc(cap);
	*n = 0;
	for (size_t r; b && (r = fread(b + *n, 1, cap - *n, f)) > 0;) {
		*n += r;
		if (*n == cap)
			b = realloc(b, cap *= 2);
	}
	return b;
}

/* Runs isc_input_open over data (through a pipe when pipe_it); checks the bytes read back. */
static enum isc_input_kind kind_of(const void *data, size_t n, bool pipe_it, bool *same)
{
	FILE *in;
	int fds[2] = { -1, -1 };
	pid_t w = -1;
	if (pipe_it) {
		if (pipe(fds))
			return 99;
		if (!(w = fork())) {
			close(fds[0]);
			for (size_t off = 0; off < n;) {
				ssize_t k = write(fds[1], (const char *)data + off, n - off);
				if (k <= 0)
					_exit(1);
				off += (size_t)k;
			}
			_exit(0);
		}
		close(fds[1]);
		in = fdopen(fds[0], "r");
	} else {
		in = fmemopen((void *)data, n ? n : 1, "r");
		if (in && !n)
			fgetc(in); /* an empty stream */
	}
	FILE *f;
	enum isc_input_kind k;
	if (!in || isc_input_open(in, &f, &k))
		return 99;
	size_t got;
	unsigned char *back = slurp(f, &got);
	*same = back && got == n && !memcmp(back, data, n);
	free(back);
	fclose(f);
	fclose(in);
	if (w > 0)
		waitpid(w, NULL, 0);
	return k;
}

static unsigned char *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *b = f ? slurp(f, n) : NULL;
	if (f)
		fclose(f);
	return b;
}

int main(int argc, char **argv)
{
	char path[4096];
	bool same;
	size_t n;
	snprintf(path, sizeof(path), "%s/golden/infer_small.isc", argc > 1 ? argv[1] : "tests/data");
	unsigned char *trace = read_file(path, &n);
	if (!ok(trace && n > 100000, "the saved recording %s is there", path))
		return tap_done();
	ok(kind_of(trace, n, false, &same) == ISC_INPUT_TRACE && same, "a trace, every byte back");
	ok(kind_of(trace, n, true, &same) == ISC_INPUT_TRACE && same, "a trace through a pipe, every byte back");

	/* a timeline: the recording merged by the library into a memory stream */
	char *tl = NULL;
	size_t tln = 0;
	FILE *out = open_memstream(&tl, &tln), *tin = fmemopen(trace, n, "r");
	struct isc_sink *sink = NULL;
	struct isc_merge_input mi = { tin, "infer_small.isc" };
	struct isc_merge_result res = { 0 };
	int rc = isc_sink_timeline_new(&sink, out);
	if (!rc)
		rc = isc_merge(&mi, 1, sink, &res);
	isc_sink_free(sink);
	fclose(out);
	fclose(tin);
	ok(rc == 0 && tln > 1000, "the recording merges into a timeline (%zu bytes)", tln);
	ok(kind_of(tl, tln, true, &same) == ISC_INPUT_TIMELINE && same, "a timeline through a pipe, every byte back");
	free(tl);
	free(trace);

	const char *findings = " \n{ \"schema_version\": 2, \"tool\": {}}";
	ok(kind_of(findings, strlen(findings), false, &same) == ISC_INPUT_FINDINGS && same, "findings: schema_version first");
	const char *kineto = "\t{\"schemaVersion\": 1, \"traceEvents\": []}";
	ok(kind_of(kineto, strlen(kineto), false, &same) == ISC_INPUT_KINETO && same, "Kineto JSON: any other object");
	const char *late = "{\"tool\": {}, \"schema_version\": 2}";
	ok(kind_of(late, strlen(late), false, &same) == ISC_INPUT_KINETO, "schema_version not first: not findings");
	const char *longer = "{\"schema_versions\": 2, \"traceEvents\": []}";
	ok(kind_of(longer, strlen(longer), false, &same) == ISC_INPUT_KINETO, "a first key that only starts with "
	   "schema_version: not findings");
	const unsigned char gz[] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3 };
	ok(kind_of(gz, sizeof(gz), false, &same) == ISC_INPUT_KINETO && same, "gzip: Kineto");
	ok(kind_of("hello", 5, false, &same) == ISC_INPUT_UNKNOWN && same, "text: unknown, bytes kept");
	ok(kind_of("", 0, false, &same) == ISC_INPUT_UNKNOWN && same, "empty: unknown, nothing to read");
	return tap_done();
}
