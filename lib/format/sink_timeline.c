/*
 * sink_timeline.c - writes merged events as a timeline (.istl): a header
 * chunk, then TL_STRINGS chunks (new strings, always before the events
 * chunk that first uses them) and TL_EVENTS chunks of up to CHUNK_MAX
 * bytes, each starting with a TL_CTX record, then an END chunk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_trace_int.h"
#include "isc_merge.h"
#include "isc_shm.h"

#define CHUNK_MAX (256u << 10)

struct tl_sink {
	struct isc_sink base;
	struct isc_writer *w;
	struct isc_buf strings, events, tmp;
	uint64_t chunk_base, last;
	uint32_t pid, tid, source, seq;
	bool ctx_valid;
};

static int tl_flush(struct tl_sink *s)
{
	int rc = 0;
	if (s->strings.len) {
		struct isc_chunk_header h = { ISC_CHUNK_MAGIC, ISC_CHUNK_TL_STRINGS, 0, 0, 0, 0, s->seq,
					      (uint32_t)s->strings.len };
		rc = isc_writer_chunk(s->w, &h, s->strings.data);
		s->strings.len = 0;
	}
	if (!rc && s->events.len) {
		struct isc_chunk_header h = { ISC_CHUNK_MAGIC, ISC_CHUNK_TL_EVENTS, 0, 0, 0, s->chunk_base,
					      s->seq++, (uint32_t)s->events.len };
		rc = isc_writer_chunk(s->w, &h, s->events.data);
		s->events.len = 0;
	}
	return rc;
}

static int tl_begin(void *ctx, const struct isc_tl_header *h)
{
	struct tl_sink *s = ctx;
	struct isc_buf b = { 0 };
	int rc = isc_header_encode(&b, ISC_TIMELINE_MAGIC, h);
	if (!rc) {
		struct isc_chunk_header ch = { ISC_CHUNK_MAGIC, ISC_CHUNK_FILE_HEADER, 0, 0, 0, 0, 0, (uint32_t)b.len };
		rc = isc_writer_chunk(s->w, &ch, b.data);
	}
	isc_buf_free(&b);
	return rc;
}

static int tl_string(void *ctx, const struct isc_tl_string *str)
{
	struct tl_sink *s = ctx;
	uint64_t ts = 0;
	size_t nl = strlen(str->name), fl = strlen(str->file);
	s->tmp.len = 0;
	int rc = isc_buf_put_varint(&s->tmp, str->id);
	rc |= isc_buf_put_u8(&s->tmp, str->kind);
	rc |= isc_buf_put_varint(&s->tmp, str->line);
	rc |= isc_buf_put_bytes(&s->tmp, str->name, nl);
	rc |= isc_buf_put_bytes(&s->tmp, str->file, fl);
	rc |= isc_buf_put_record(&s->strings, ISC_REC_STRING_DEF, 0, &ts, s->tmp.data, s->tmp.len);
	if (rc)
		return -ENOMEM;
	if (s->strings.len >= CHUNK_MAX) { /* early is fine: before first use is the rule */
		struct isc_chunk_header h = { ISC_CHUNK_MAGIC, ISC_CHUNK_TL_STRINGS, 0, 0, 0, 0, s->seq,
					      (uint32_t)s->strings.len };
		rc = isc_writer_chunk(s->w, &h, s->strings.data);
		s->strings.len = 0;
	}
	return rc;
}

static int tl_event(void *ctx, const struct isc_tl_event *ev)
{
	struct tl_sink *s = ctx;
	int rc = 0;
	if (s->events.len >= CHUNK_MAX && (rc = tl_flush(s)))
		return rc;
	if (!s->events.len) {
		s->chunk_base = s->last = ev->ts;
		s->ctx_valid = false;
	}
	if (!s->ctx_valid || ev->pid != s->pid || ev->tid != s->tid || ev->source != s->source) {
		s->tmp.len = 0;
		rc |= isc_buf_put_varint(&s->tmp, ev->pid);
		rc |= isc_buf_put_varint(&s->tmp, ev->tid);
		if (ev->source) /* 1.6: written only for a source other than the first */
			rc |= isc_buf_put_varint(&s->tmp, ev->source);
		rc |= isc_buf_put_record(&s->events, ISC_REC_TL_CTX, ev->ts, &s->last, s->tmp.data, s->tmp.len);
		s->pid = ev->pid;
		s->tid = ev->tid;
		s->source = ev->source;
		s->ctx_valid = true;
	}
	s->tmp.len = 0;
	switch (ev->type) {
	case ISC_REC_TL_SPAN_BEGIN:
		rc |= isc_buf_put_varint(&s->tmp, ev->span_id);
		rc |= isc_buf_put_varint(&s->tmp, ev->parent_id);
		rc |= isc_buf_put_varint(&s->tmp, ev->depth);
		rc |= isc_buf_put_varint(&s->tmp, ev->kind);
		rc |= isc_buf_put_varint(&s->tmp, ev->name_id);
		break;
	case ISC_REC_TL_SPAN_END:
		rc |= isc_buf_put_varint(&s->tmp, ev->span_id);
		rc |= isc_buf_put_varint(&s->tmp, ev->flags);
		break;
	case ISC_REC_MARK:
		rc |= isc_buf_put_varint(&s->tmp, ev->name_id);
		rc |= isc_buf_put_varint(&s->tmp, isc_zigzag(ev->value));
		break;
	case ISC_REC_GPU_OP:
	case ISC_REC_GPU_API:
		rc |= isc_gpu_encode(&s->tmp, ev);
		break;
	default: /* passed through as recorded */
		rc |= isc_buf_put(&s->tmp, ev->raw, ev->nraw);
		break;
	}
	rc |= isc_buf_put_record(&s->events, ev->type, ev->ts, &s->last, s->tmp.data, s->tmp.len);
	return rc ? -ENOMEM : 0;
}

static int tl_end(void *ctx, const struct isc_tl_stats *st)
{
	struct tl_sink *s = ctx;
	int rc = tl_flush(s);
	if (rc)
		return rc;
	uint8_t body[60];
	struct isc_end_stats e = { st->events, st->dropped, st->lost_frames,
				   (st->abrupt ? ISC_END_ABRUPT : 0) | (st->signaled ? ISC_END_SIGNALED : 0) |
					   (st->window ? ISC_END_WINDOW : 0), st->exit_status };
	unsigned n = isc_end_stats_encode(body, &e);
	uint64_t ts = 0;
	s->tmp.len = 0;
	if (isc_buf_put_record(&s->tmp, ISC_REC_END_STATS, 0, &ts, body, n))
		return -ENOMEM;
	struct isc_chunk_header h = { ISC_CHUNK_MAGIC, ISC_CHUNK_END, 0, 0, 0, 0, 0, (uint32_t)s->tmp.len };
	rc = isc_writer_chunk(s->w, &h, s->tmp.data);
	return rc ? rc : isc_writer_flush(s->w);
}

static void tl_destroy(void *ctx)
{
	struct tl_sink *s = ctx;
	isc_writer_free(s->w);
	isc_buf_free(&s->strings);
	isc_buf_free(&s->events);
	isc_buf_free(&s->tmp);
	free(s);
}

int isc_sink_timeline_new(struct isc_sink **out, FILE *f)
{
	return isc_sink_timeline_new_level(out, f, 3);
}

/* A timeline sink writing to FILE f at level, or (f NULL) to spool sp. */
static int sink_new(struct isc_sink **out, FILE *f, int level, struct isc_spool *sp)
{
	struct tl_sink *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	int rc = f ? isc_writer_new(&s->w, f, level) : isc_writer_new_spool(&s->w, sp);
	if (rc) {
		free(s);
		return rc;
	}
	s->base = (struct isc_sink){ s, tl_begin, tl_string, tl_event, tl_end, tl_destroy };
	*out = &s->base;
	return 0;
}

int isc_sink_timeline_new_level(struct isc_sink **out, FILE *f, int level)
{
	return sink_new(out, f, level, NULL);
}

int isc_sink_timeline_new_spool(struct isc_sink **out, struct isc_spool *sp)
{
	return sink_new(out, NULL, 0, sp);
}

void isc_sink_free(struct isc_sink *s)
{
	if (s)
		s->destroy(s->ctx);
}
