/*
 * input.c - opens "anything merge reads" as a timeline: a timeline file is
 * read directly; a trace is merged first, and a Kineto JSON trace imported
 * first, into an anonymous temporary file (so memory stays bounded as in
 * iscope-merge), then read back.
 *
 * The first bytes are peeked at to tell them apart (isc_input_open, also
 * used by iscope-merge); a FILE made with fopencookie() replays the peeked
 * bytes before the rest of the input, so stdin works and nothing is read
 * twice.  isc_timeline_replay() sends a timeline back through a sink.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "isc_util.h"      /* isc_umap, isc_grow */
#include "isc_trace_int.h"
#include "isc_kineto.h"
#include "isc_merge.h"
#include "openspans.h"

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
		if (p->pos == p->len) { /* replayed: the buffer is not needed any more */
			free(p->buf);
			p->buf = NULL;
		}
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

/* File magic of the header chunk in the first frame of buf, 0 if unknown; the header into *hdr (may be NULL). */
static uint32_t first_magic(const uint8_t *buf, size_t len, struct isc_tl_header *hdr)
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
	if (magic && hdr)
		*hdr = h;
	isc_err_clear();
	free(out);
	return magic;
}

/* Findings JSON as iscope-analyze writes it: '{' then "schema_version" first (spaces allowed). */
static bool is_findings(const uint8_t *buf, size_t len)
{
	static const char key[] = "\"schema_version\"";
	size_t i = 0;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	if (i >= len || buf[i++] != '{')
		return false;
	while (i < len && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\n' || buf[i] == '\r'))
		i++;
	return len - i >= sizeof(key) - 1 && !memcmp(buf + i, key, sizeof(key) - 1);
}

int isc_input_open(FILE *in, FILE **f, enum isc_input_kind *kind)
{
	return isc_input_open_hdr(in, f, kind, NULL);
}

int isc_input_open_hdr(FILE *in, FILE **f, enum isc_input_kind *kind, struct isc_tl_header *hdr)
{
	struct peek *p = calloc(1, sizeof(*p));
	*f = NULL;
	*kind = ISC_INPUT_UNKNOWN;
	if (!p || !(p->buf = malloc(PEEK_MAX))) {
		free(p);
		return -ENOMEM;
	}
	p->in = in;
	p->len = fread(p->buf, 1, PEEK_MAX, in);
	if (!p->len && ferror(in)) {
		int rc = -errno;
		isc_err_push("Failed to read: %s", strerror(errno));
		peek_close(p);
		return rc ? rc : -EIO;
	}
	if (hdr)
		memset(hdr, 0, sizeof(*hdr));
	uint32_t magic = first_magic(p->buf, p->len, hdr);
	if (magic == ISC_TRACE_MAGIC)
		*kind = ISC_INPUT_TRACE;
	else if (magic == ISC_TIMELINE_MAGIC)
		*kind = ISC_INPUT_TIMELINE;
	else if (is_findings(p->buf, p->len))
		*kind = ISC_INPUT_FINDINGS;
	else if (isc_kineto_sniff(p->buf, p->len))
		*kind = ISC_INPUT_KINETO;
	if (!p->len) { /* nothing to replay */
		free(p->buf);
		p->buf = NULL;
	}
	*f = fopencookie(p, "r", (cookie_io_functions_t){ .read = peek_read, .close = peek_close });
	if (!*f) {
		peek_close(p);
		return -ENOMEM;
	}
	return 0;
}

int isc_timeline_replay(struct isc_timeline *t, struct isc_sink *sink, char *damage, size_t dlen)
{
	struct isc_tl_event ev;
	struct isc_openspans open = { .free_head = ISC_UMAP_NONE };
	uint32_t sent = 0; /* strings 1..sent went to the sink; ids are dense, defined in order */
	int rc = 0, got;
	if (damage && dlen)
		damage[0] = '\0';
	if (sink->begin && (rc = sink->begin(sink->ctx, isc_timeline_header_borrow(t))))
		return rc;
	while ((got = isc_timeline_next(t, &ev)) == 1) {
		const struct isc_tl_string *s;
		struct isc_openspan o;
		while ((s = isc_timeline_string_borrow(t, sent + 1)))
			if (sink->string && (rc = sink->string(sink->ctx, s)))
				goto out;
			else
				sent++;
		if (ev.type == ISC_REC_TL_SPAN_BEGIN && (rc = isc_openspans_add(&open, ev.span_id, ev.name_id, ev.kind)))
			goto out;
		if (ev.type == ISC_REC_TL_SPAN_END && isc_openspans_take(&open, ev.span_id, &o)) {
			ev.name_id = o.name_id;
			ev.kind = o.kind;
		}
		if ((rc = sink->event(sink->ctx, &ev)))
			goto out;
	}
	isc_openspans_free(&open);
	if (got < 0 && got != -EBADMSG && got != -EFBIG)
		return got;
	if (got < 0 && damage)
		snprintf(damage, dlen, "%s", isc_err_msg());
	isc_err_clear();
	struct isc_tl_stats st = *isc_timeline_stats_borrow(t);
	if (got < 0) {
		st.lost_frames++;
		st.abrupt = true;
	}
	if (sink->end && (rc = sink->end(sink->ctx, &st)))
		return rc;
	return got < 0 ? 1 : 0;
out:
	isc_openspans_free(&open);
	return rc;
}

/* Copies the rest of in to out: 0, or a negative errno with the message pushed. */
static int copy_all(FILE *in, FILE *out)
{
	enum { N = 1 << 16 };
	char *buf = malloc(N);
	size_t got;
	int rc = 0;
	if (!buf) {
		isc_err_push("out of memory");
		return -ENOMEM;
	}
	errno = 0; /* what a failed call below sets, not an older value */
	while ((got = fread(buf, 1, N, in)) > 0)
		if (fwrite(buf, 1, got, out) != got) {
			rc = -(errno ? errno : EIO);
			isc_err_push("Failed to write a temporary file: %s", strerror(-rc));
			break;
		}
	if (!rc && ferror(in)) {
		rc = -(errno ? errno : EIO);
		isc_err_push("Failed to read: %s", strerror(-rc));
	}
	free(buf);
	return rc;
}

int isc_timeline_open_any(struct isc_timeline **t, FILE *in, FILE **owned, struct isc_merge_result *mres)
{
	FILE *f = NULL, *tmp = NULL;
	struct isc_sink *sink = NULL;
	enum isc_input_kind kind;
	int rc;
	*owned = NULL;
	memset(mres, 0, sizeof(*mres));
	if ((rc = isc_input_open(in, &f, &kind)))
		return rc;
	bool kineto = kind == ISC_INPUT_KINETO;
	if (!(tmp = tmpfile())) {
		rc = -errno;
		isc_err_push("Cannot create a temporary file: %s", strerror(errno));
		goto fail;
	}
	if (kind != ISC_INPUT_TRACE && !kineto) { /* a timeline (or an error the reader words): copied */
		if ((rc = copy_all(f, tmp)))
			goto fail;
	} else if ((rc = isc_sink_timeline_new(&sink, tmp))) {
		goto fail;
	} else if (kineto) {
		struct isc_kineto_result kr;
		rc = isc_kineto_import(f, "Kineto trace", sink, NULL, &kr);
		mres->events_in = kr.events_in;
		mres->events_out = kr.events_out;
		if (rc == 1) { /* damaged: its prefix is analyzed, like a damaged trace */
			mres->bad_input = 1;
			mres->damaged_frames = 1;
			snprintf(mres->damage, sizeof(mres->damage), "%s", kr.damage);
		}
	} else {
		struct isc_merge_input mi = { f, "trace" };
		rc = isc_merge(&mi, 1, sink, mres);
	}
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

int isc_timeline_rewind(struct isc_timeline **t, FILE *owned)
{
	isc_timeline_free(*t);
	*t = NULL;
	if (fseek(owned, 0, SEEK_SET)) {
		int rc = -errno;
		isc_err_push("Failed to read a temporary file again: %s", strerror(errno));
		return rc;
	}
	return isc_timeline_open(t, owned);
}
