/*
 * input.c - opens "anything merge reads" as a timeline: a timeline file is
 * read directly; a trace is merged first, into an anonymous temporary file
 * (so memory stays bounded as in iscope-merge), then read back.
 *
 * The first frame is peeked at to tell the two apart; a FILE made with
 * fopencookie() replays the peeked bytes before the rest of the input, so
 * stdin works and nothing is read twice.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "isc_internal.h"
#include "isc_merge.h"

#define PEEK_MAX (256u << 10)

struct peek {
	FILE *in;
	uint8_t *buf;
	size_t len, pos;
};

static ssize_t peek_read(void *cookie, char *out, size_t n)
{
	struct peek *p = cookie;
	if (p->pos < p->len) {
		size_t k = p->len - p->pos < n ? p->len - p->pos : n;
		memcpy(out, p->buf + p->pos, k);
		p->pos += k;
		return (ssize_t)k;
	}
	size_t got = fread(out, 1, n, p->in);
	if (!got && ferror(p->in))
		return -1;
	return (ssize_t)got;
}

static int peek_close(void *cookie)
{
	struct peek *p = cookie;
	free(p->buf);
	free(p);
	return 0;
}

/* File magic of the header chunk in the first frame of buf, 0 if unknown. */
static uint32_t first_magic(const uint8_t *buf, size_t len)
{
	size_t fsize = ZSTD_findFrameCompressedSize(buf, len);
	unsigned long long dsize = ZSTD_getFrameContentSize(buf, len);
	uint32_t magic = 0;
	if (ZSTD_isError(fsize) || dsize == ZSTD_CONTENTSIZE_ERROR || dsize == ZSTD_CONTENTSIZE_UNKNOWN ||
	    dsize < ISC_CHUNK_HEADER_SIZE || dsize > PEEK_MAX)
		return 0;
	uint8_t *out = malloc(dsize);
	if (!out)
		return 0;
	size_t got = ZSTD_decompress(out, dsize, buf, fsize);
	struct isc_tl_header h;
	if (!ZSTD_isError(got) && got == dsize &&
	    isc_header_parse(out + ISC_CHUNK_HEADER_SIZE, got - ISC_CHUNK_HEADER_SIZE, &h, &magic))
		magic = 0;
	isc_err_clear();
	free(out);
	return magic;
}

int isc_timeline_open_any(struct isc_timeline **t, FILE *in, FILE **owned, struct isc_merge_result *mres)
{
	struct peek *p = calloc(1, sizeof(*p));
	FILE *f = NULL, *tmp = NULL;
	struct isc_sink *sink = NULL;
	int rc;
	*owned = NULL;
	memset(mres, 0, sizeof(*mres));
	if (!p || !(p->buf = malloc(PEEK_MAX))) {
		free(p);
		return -ENOMEM;
	}
	p->in = in;
	p->len = fread(p->buf, 1, PEEK_MAX, in);
	uint32_t magic = first_magic(p->buf, p->len);
	f = fopencookie(p, "r", (cookie_io_functions_t){ .read = peek_read, .close = peek_close });
	if (!f) {
		peek_close(p);
		return -ENOMEM;
	}
	if (magic != ISC_TRACE_MAGIC) { /* a timeline, or an error the reader words */
		*owned = f;
		return isc_timeline_open(t, f);
	}
	struct isc_merge_input mi = { f, "trace" };
	if (!(tmp = tmpfile())) {
		rc = -errno;
		isc_err_push("Cannot create a temporary file: %s", strerror(errno));
		goto fail;
	}
	if ((rc = isc_sink_timeline_new(&sink, tmp)))
		goto fail;
	rc = isc_merge(&mi, 1, sink, mres);
	isc_sink_free(sink);
	if (rc < 0)
		goto fail;
	fclose(f);
	f = NULL;
	if (fflush(tmp) || fseek(tmp, 0, SEEK_SET)) {
		rc = -errno;
		isc_err_push("Failed to write a temporary file: %s", strerror(errno));
		goto fail;
	}
	*owned = tmp;
	return isc_timeline_open(t, tmp);
fail:
	if (f)
		fclose(f);
	if (tmp)
		fclose(tmp);
	return rc;
}
