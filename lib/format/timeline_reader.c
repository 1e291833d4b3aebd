/*
 * timeline_reader.c - decodes a timeline (.istl) into isc_tl_event values.
 * Strings (TL_STRINGS chunks) are kept for the reader's lifetime; events
 * are decoded one record at a time from the current TL_EVENTS chunk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_util.h"
#include "isc_trace_int.h"
#include "isc_native_codec.h" /* native sampler records */

struct isc_timeline {
	struct isc_reader *rd;
	struct isc_tl_header hdr;
	struct isc_tl_stats stats;
	struct isc_tl_string *strings; /* indexed by id */
	size_t nstrings;
	size_t ndefs;  /* STRING_DEF records read */
	struct isc_cursor cur; /* within the current events chunk */
	bool in_events;
	uint32_t pid, tid, source; /* TL_CTX */
	uint8_t *chunk;    /* copy of the current events chunk payload */
	size_t chunk_cap;
};

/*
 * The table is indexed by id.  Ids are 1, 2, 3 ... in order of definition
 * (formats/timeline.md §3), with gaps only where a TL_STRINGS chunk was
 * lost.  An id beyond what the definitions and the bytes read so far can
 * explain (a lost chunk held at most a few definitions per compressed
 * byte) is refused as corrupt, so that one record with id 2^26 - 1 cannot
 * cost a 2 GiB table: the table stays within 128 bytes per byte of input.
 */
#define ID_SLACK(t) (16 * (uint64_t)(t)->ndefs + 4 * isc_reader_offset((t)->rd) + 65536)

static int add_string(struct isc_timeline *t, const struct isc_rec *r)
{
	struct isc_string_def d;
	if (isc_string_def_parse(r->body, r->len, &d))
		return -EBADMSG;
	if (d.id > ID_SLACK(t))
		return -EBADMSG;
	t->ndefs++;
	if (d.id >= t->nstrings) {
		size_t n = t->nstrings ? t->nstrings : 256;
		while (n <= d.id)
			n *= 2;
		struct isc_tl_string *s = realloc(t->strings, n * sizeof(*s));
		if (!s)
			return -ENOMEM;
		memset(s + t->nstrings, 0, (n - t->nstrings) * sizeof(*s));
		t->strings = s;
		t->nstrings = n;
	}
	struct isc_tl_string *s = &t->strings[d.id];
	char *mem = malloc(d.nlen + d.flen + 2);
	if (!mem)
		return -ENOMEM;
	free((char *)s->name); /* a redefinition replaces */
	isc_copy_bytes(mem, d.nlen + 1, d.name, d.nlen, '?');
	isc_copy_bytes(mem + d.nlen + 1, d.flen + 1, d.file, d.flen, '?');
	s->id = (uint32_t)d.id;
	s->kind = d.kind;
	s->line = d.line > UINT32_MAX ? 0 : (uint32_t)d.line;
	s->name = mem;
	s->file = mem + d.nlen + 1;
	return 0;
}

/* Opens a timeline from FILE in, or (in NULL) from spool sp. */
static int open_from(struct isc_timeline **tp, FILE *in, const struct isc_spool *sp)
{
	struct isc_timeline *t = calloc(1, sizeof(*t));
	struct isc_chunk_header h;
	const uint8_t *p;
	uint32_t magic = 0;
	int rc;
	if (!t)
		return -ENOMEM;
	if ((rc = in ? isc_reader_new(&t->rd, in) : isc_reader_new_spool(&t->rd, sp)))
		goto fail;
	rc = isc_reader_next(t->rd, &h, &p);
	if (rc == 0) {
		isc_err_push("empty input");
		rc = -EBADMSG;
	}
	if (rc < 0)
		goto fail;
	if (h.type != ISC_CHUNK_FILE_HEADER) {
		isc_err_push("not an InferScope file (first chunk is not a header)");
		rc = -EBADMSG;
		goto fail;
	}
	if ((rc = isc_header_parse(p, h.payload_len, &t->hdr, &magic)))
		goto fail;
	if (magic != ISC_TIMELINE_MAGIC) {
		isc_err_push(magic == ISC_TRACE_MAGIC ? "a raw trace, not a timeline (run iscope-merge first)"
						       : "not a timeline");
		rc = -EBADMSG;
		goto fail;
	}
	*tp = t;
	return 0;
fail:
	isc_timeline_free(t);
	return rc;
}

int isc_timeline_open(struct isc_timeline **tp, FILE *in)
{
	return open_from(tp, in, NULL);
}

int isc_timeline_open_spool(struct isc_timeline **tp, const struct isc_spool *sp)
{
	return open_from(tp, NULL, sp);
}

static int read_end(struct isc_timeline *t, const uint8_t *p, size_t len)
{
	struct isc_end_stats e;
	bool found;
	int rc = isc_end_stats_read(p, len, &e, &found);
	if (found) {
		t->stats.dropped = e.dropped;
		t->stats.lost_frames = e.lost_frames;
		t->stats.abrupt = e.flags & ISC_END_ABRUPT;
		t->stats.signaled = e.flags & ISC_END_SIGNALED;
		t->stats.window = e.flags & ISC_END_WINDOW;
		t->stats.exit_status = e.status;
		t->stats.have_end = true;
	}
	return rc;
}

/* Decodes one record of an events chunk into ev; 1 = an event, 0 = skip it. */
static int decode(struct isc_timeline *t, const struct isc_rec *r, struct isc_tl_event *ev)
{
	const uint8_t *p = r->body, *e = r->body + r->len;
	uint64_t v[6] = { 0 };
	memset(ev, 0, offsetof(struct isc_tl_event, f));
	ev->nf = 0;
	ev->bytes = NULL;
	ev->nbytes = 0;
	ev->type = r->type;
	ev->ts = r->ts;
	ev->raw = r->body;
	ev->nraw = r->len;
	ev->pid = t->pid;
	ev->tid = t->tid;
	ev->source = t->source;
	if (r->ts >= ISC_TL_TIME_LIMIT)
		return -EBADMSG;
	switch (r->type) {
	case ISC_REC_TL_CTX:
		if (isc_get_varint(&p, e, &v[0]) || isc_get_varint(&p, e, &v[1]))
			return -EBADMSG;
		t->pid = (uint32_t)v[0];
		t->tid = (uint32_t)v[1];
		/* 1.6: the source, when the merge had several (absent: the first) */
		if (p < e && (isc_get_varint(&p, e, &v[2]) || v[2] > ISC_TL_MAX_SOURCES))
			return -EBADMSG;
		t->source = (uint32_t)v[2];
		return 0;
	case ISC_REC_TL_SPAN_BEGIN:
		for (int i = 0; i < 5; i++)
			if (isc_get_varint(&p, e, &v[i]))
				return -EBADMSG;
		ev->span_id = v[0];
		ev->parent_id = v[1];
		ev->depth = (uint32_t)v[2];
		ev->kind = (uint8_t)v[3];
		ev->name_id = (uint32_t)v[4];
		return 1;
	case ISC_REC_TL_SPAN_END:
		if (isc_get_varint(&p, e, &v[0]) || isc_get_varint(&p, e, &v[1]))
			return -EBADMSG;
		ev->span_id = v[0];
		ev->flags = (uint32_t)v[1];
		return 1;
	case ISC_REC_MARK:
		if (isc_get_varint(&p, e, &v[0]) || isc_get_varint(&p, e, &v[1]))
			return -EBADMSG;
		ev->name_id = (uint32_t)v[0];
		ev->value = isc_unzigzag(v[1]);
		return 1;
	case ISC_REC_THREAD_BEGIN:
		ev->bytes = p;
		ev->nbytes = (size_t)(e - p);
		return 1;
	case ISC_REC_THREAD_END:
		return 1;
	case ISC_REC_GPU_OP:
	case ISC_REC_GPU_API:
		if (isc_gpu_decode(ev, r->type, p, (size_t)(e - p)) || ev->gpu.dur_ns >= ISC_TL_TIME_LIMIT)
			return -EBADMSG;
		return 1;
	default:
		break;
	}
	unsigned n = isc_record_nvarints(r->type);
	if (n == 0)
		return 0; /* unknown to this reader: skipped by size */
	for (unsigned i = 0; i < n; i++)
		if (isc_get_varint(&p, e, &ev->f[i]))
			return -EBADMSG;
	ev->nf = n;
	if (r->type == ISC_REC_GPU_MEMORY && (ev->f[7] & ISC_GPU_MEM_TOTALS)) {
		for (unsigned i = 0; i < 2; i++)
			if (isc_get_varint(&p, e, &ev->f[ev->nf++]))
				return -EBADMSG;
	} else if (r->type == ISC_REC_NUMA_MAPS) {
		uint64_t cnt = ev->f[1];
		for (uint64_t i = 0; i < cnt && ev->nf < 16; i++)
			if (isc_get_varint(&p, e, &ev->f[ev->nf++]))
				return -EBADMSG;
	} else if (r->type == ISC_REC_PROC_INFO) {
		uint64_t len;
		if (isc_get_varint(&p, e, &len) || len > (uint64_t)(e - p))
			return -EBADMSG;
		ev->bytes = p;
		ev->nbytes = (size_t)len;
	} else if (r->type == ISC_REC_TL_ALLOC || r->type == ISC_REC_TL_ALLOC_SITE) {
		const uint8_t *pairs;
		uint64_t f[12], depth;
		if (isc_alloc_stack_parse(r->type, r->body, r->len, &pairs, &depth, f))
			return -EBADMSG; /* the frames (and native frames) must parse */
		ev->bytes = p;
		ev->nbytes = (size_t)(e - p);
	} else if (r->type == ISC_REC_SOURCE_INFO) {
		if (ev->f[0] > ISC_TL_MAX_SOURCES)
			return -EBADMSG;
		ev->bytes = p;
		ev->nbytes = (size_t)(e - p);
	} else if (r->type == ISC_REC_THREAD_NAME || r->type == ISC_REC_DEVICE || r->type == ISC_REC_META ||
		   r->type == ISC_REC_GPU_INFO || r->type == ISC_REC_WARNING || r->type == ISC_REC_GPU_AGENT ||
		   r->type == ISC_REC_THREAD_WAIT || r->type == ISC_REC_EXCEPTION || r->type == ISC_REC_PY_SAMPLE) {
		ev->bytes = p;
		ev->nbytes = (size_t)(e - p);
	} else if (r->type == ISC_REC_PROC_EXIT) {
		ev->value = isc_unzigzag(ev->f[1]);
	}
	if (r->type == ISC_REC_PROC_SAMPLE || r->type == ISC_REC_THREAD_SAMPLE ||
	    r->type == ISC_REC_PROC_INFO || r->type == ISC_REC_PROC_EXIT ||
	    r->type == ISC_REC_THREAD_NAME || r->type == ISC_REC_SMAPS || r->type == ISC_REC_NUMA_MAPS ||
	    r->type == ISC_REC_THREAD_WAIT)
		ev->pid = (uint32_t)ev->f[0];
	if (r->type == ISC_REC_THREAD_SAMPLE || r->type == ISC_REC_THREAD_NAME || r->type == ISC_REC_THREAD_WAIT)
		ev->tid = (uint32_t)ev->f[1];
	if (r->type >= ISC_REC_NATIVE_SAMPLER && r->type <= ISC_REC_NATIVE_STATS) {
		/* checked whole (the merge wrote only bodies that parse); the
		 * bytes after the leading varints are the record's to parse */
		if (!isc_native_record_ok(r->type, r->body, r->len))
			return -EBADMSG;
		ev->bytes = p;
		ev->nbytes = (size_t)(e - p);
	}
	return 1;
}

int isc_timeline_next(struct isc_timeline *t, struct isc_tl_event *ev)
{
	for (;;) {
		if (t->in_events) {
			struct isc_rec r;
			int rc = isc_cursor_next(&t->cur, &r);
			if (rc < 0) {
				t->in_events = false;
				isc_err_push("corrupt record in events chunk %llu",
					     (unsigned long long)isc_reader_chunks(t->rd));
				return -EBADMSG;
			}
			if (rc == 0) {
				t->in_events = false;
				continue;
			}
			rc = decode(t, &r, ev);
			if (rc < 0) {
				t->in_events = false;
				isc_err_push("corrupt record (type 0x%02x) in events chunk %llu", r.type,
					     (unsigned long long)isc_reader_chunks(t->rd));
				return rc;
			}
			if (rc == 0)
				continue;
			t->stats.events++;
			return 1;
		}
		struct isc_chunk_header h;
		const uint8_t *p;
		int rc = isc_reader_next(t->rd, &h, &p);
		if (rc <= 0)
			return rc;
		if (h.type == ISC_CHUNK_TL_STRINGS) {
			struct isc_cursor c;
			struct isc_rec r;
			isc_cursor_init(&c, p, h.payload_len, 0);
			while ((rc = isc_cursor_next(&c, &r)) == 1)
				if (r.type == ISC_REC_STRING_DEF && (rc = add_string(t, &r)) < 0)
					break;
			if (rc < 0) {
				isc_err_push("corrupt string table chunk %llu",
					     (unsigned long long)isc_reader_chunks(t->rd));
				return rc;
			}
		} else if (h.type == ISC_CHUNK_TL_EVENTS && h.payload_len) { /* an empty one holds nothing */
			if (h.payload_len > t->chunk_cap) {
				uint8_t *n = realloc(t->chunk, h.payload_len);
				if (!n)
					return -ENOMEM;
				t->chunk = n;
				t->chunk_cap = h.payload_len;
			}
			memcpy(t->chunk, p, h.payload_len);
			isc_cursor_init(&t->cur, t->chunk, h.payload_len, h.base_ts);
			t->pid = t->tid = 0;
			t->in_events = true;
		} else if (h.type == ISC_CHUNK_END) {
			if (read_end(t, p, h.payload_len) < 0) {
				isc_err_push("corrupt end chunk");
				return -EBADMSG;
			}
		}
		/* other chunk types are skipped */
	}
}

const struct isc_tl_header *isc_timeline_header_borrow(const struct isc_timeline *t)
{
	return &t->hdr;
}

const struct isc_tl_string *isc_timeline_string_borrow(const struct isc_timeline *t, uint32_t id)
{
	if (id >= t->nstrings || !t->strings[id].name)
		return NULL;
	return &t->strings[id];
}

const struct isc_tl_stats *isc_timeline_stats_borrow(const struct isc_timeline *t)
{
	return &t->stats;
}

void isc_timeline_free(struct isc_timeline *t)
{
	if (!t)
		return;
	isc_reader_free(t->rd);
	for (size_t i = 0; i < t->nstrings; i++)
		free((char *)t->strings[i].name);
	free(t->strings);
	free(t->chunk);
	free(t);
}
