/*
 * container.c - the zstd frame container shared by traces and timelines.
 *
 * Writer: each chunk (32-byte header + records) becomes one zstd frame with
 * the content checksum on, compressed into memory and written with one
 * fwrite (so a frame is either whole in the file or cut by a crash).
 *
 * Reader: streams frames from a FILE with no seeks.  It keeps the compressed
 * bytes of the frame being decoded so that on damage it can re-synchronise
 * at the next zstd frame magic after the bad frame's first byte:
 *
 *   in: [ ..consumed.. | frame start ........ pos ....... len ]
 *                        ^ on error: search magic from here+1
 *
 * A damaged frame therefore costs only itself; a truncated last frame is
 * reported and the reader ends cleanly on the next call.
 *
 * Spool: a temporary container that one process writes and then reads
 * back (the job merge's per-source timelines).  Its chunks stay in memory
 * uncompressed (header + payload, no frame) up to a budget; past it, they
 * and all later ones go compressed into a tmpfile().  A spooled writer and
 * reader give and take the same chunks as the FILE ones.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "isc.h"

#define ZSTD_MAGIC 0xFD2FB528u

struct isc_spool {
	struct isc_buf mem; /* chunks: 32-byte header + payload each */
	size_t budget;
	int level;
	FILE *file;         /* once spilled: every chunk, compressed */
};

struct isc_writer {
	FILE *out;
	struct isc_spool *spool; /* not spilled yet: chunks go to spool->mem */
	ZSTD_CCtx *cctx;
	size_t ocap; /* zstd's recommended output step */
	struct isc_buf frame;
	uint64_t bytes;
};

static void put_le16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put_le32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put_le64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint16_t get_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t get_le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t get_le64(const uint8_t *p) { return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32; }

static void header_put(uint8_t *hb, const struct isc_chunk_header *h)
{
	put_le32(hb, ISC_CHUNK_MAGIC);
	put_le16(hb + 4, h->type);
	put_le16(hb + 6, 0);
	put_le32(hb + 8, h->pid);
	put_le32(hb + 12, h->tid);
	put_le64(hb + 16, h->base_ts);
	put_le32(hb + 24, h->seq);
	put_le32(hb + 28, h->payload_len);
}

static void header_get(const uint8_t *b, struct isc_chunk_header *h)
{
	h->magic = ISC_CHUNK_MAGIC;
	h->type = get_le16(b + 4);
	h->flags = 0;
	h->pid = get_le32(b + 8);
	h->tid = get_le32(b + 12);
	h->base_ts = get_le64(b + 16);
	h->seq = get_le32(b + 24);
	h->payload_len = get_le32(b + 28);
}

int isc_writer_new(struct isc_writer **wp, FILE *out, int level)
{
	struct isc_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->out = out;
	w->cctx = ZSTD_createCCtx();
	w->ocap = ZSTD_CStreamOutSize();
	if (!w->cctx) {
		isc_writer_free(w);
		return -ENOMEM;
	}
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
	*wp = w;
	return 0;
}

/* Compresses one chunk into one zstd frame appended to out. */
int isc_writer_encode(struct isc_writer *w, const struct isc_chunk_header *h, const void *payload,
		      struct isc_buf *out)
{
	uint8_t hb[ISC_CHUNK_HEADER_SIZE];
	header_put(hb, h);
	ZSTD_CCtx_reset(w->cctx, ZSTD_reset_session_only);
	ZSTD_CCtx_setPledgedSrcSize(w->cctx, ISC_CHUNK_HEADER_SIZE + (uint64_t)h->payload_len);
	ZSTD_inBuffer parts[2] = { { hb, sizeof(hb), 0 }, { payload, h->payload_len, 0 } };
	for (int i = 0; i < 2; i++) {
		ZSTD_EndDirective mode = i ? ZSTD_e_end : ZSTD_e_continue;
		for (;;) {
			if (isc_buf_reserve(out, w->ocap))
				return -ENOMEM;
			ZSTD_outBuffer o = { out->data + out->len, out->cap - out->len, 0 };
			size_t left = ZSTD_compressStream2(w->cctx, &o, &parts[i], mode);
			if (ZSTD_isError(left)) {
				isc_err_push("Failed to compress: %s", ZSTD_getErrorName(left));
				return -EIO;
			}
			out->len += o.pos;
			if (i ? left == 0 : parts[i].pos == parts[i].size)
				break;
		}
	}
	return 0;
}

int isc_writer_raw(struct isc_writer *w, const void *frames, size_t len)
{
	if (len && fwrite(frames, 1, len, w->out) != len) {
		int e = errno ? errno : EIO;
		isc_err_push("Failed to write: %s", strerror(e));
		return -e;
	}
	w->bytes += len;
	return 0;
}

/* The spool's chunks so far, compressed into its tmpfile: the writer writes there from now on. */
static int spool_spill(struct isc_writer *w)
{
	struct isc_spool *sp = w->spool;
	int rc;
	if (!(sp->file = tmpfile())) {
		rc = -errno;
		isc_err_push("Cannot create a temporary file: %s", strerror(errno));
		return rc;
	}
	if (!(w->cctx = ZSTD_createCCtx()))
		return -ENOMEM;
	w->ocap = ZSTD_CStreamOutSize();
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, sp->level);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
	w->out = sp->file;
	w->spool = NULL;
	for (size_t pos = 0; pos < sp->mem.len;) {
		struct isc_chunk_header h;
		header_get(sp->mem.data + pos, &h);
		pos += ISC_CHUNK_HEADER_SIZE;
		if ((rc = isc_writer_chunk(w, &h, sp->mem.data + pos)))
			return rc;
		pos += h.payload_len;
	}
	isc_buf_free(&sp->mem);
	return 0;
}

int isc_writer_chunk(struct isc_writer *w, const struct isc_chunk_header *h, const void *payload)
{
	if (w->spool) {
		struct isc_buf *m = &w->spool->mem;
		if (isc_buf_reserve(m, ISC_CHUNK_HEADER_SIZE + (size_t)h->payload_len))
			return -ENOMEM;
		header_put(m->data + m->len, h);
		if (h->payload_len)
			memcpy(m->data + m->len + ISC_CHUNK_HEADER_SIZE, payload, h->payload_len);
		m->len += ISC_CHUNK_HEADER_SIZE + (size_t)h->payload_len;
		w->bytes += ISC_CHUNK_HEADER_SIZE + (size_t)h->payload_len;
		return m->len > w->spool->budget ? spool_spill(w) : 0;
	}
	w->frame.len = 0;
	int rc = isc_writer_encode(w, h, payload, &w->frame);
	return rc ? rc : isc_writer_raw(w, w->frame.data, w->frame.len);
}

int isc_writer_flush(struct isc_writer *w)
{
	if (w->spool)
		return 0;
	if (fflush(w->out) || ferror(w->out)) {
		int e = errno ? errno : EIO;
		isc_err_push("Failed to write: %s", strerror(e));
		return -e;
	}
	return 0;
}

uint64_t isc_writer_bytes(const struct isc_writer *w)
{
	return w->bytes;
}

void isc_writer_free(struct isc_writer *w)
{
	if (!w)
		return;
	ZSTD_freeCCtx(w->cctx);
	isc_buf_free(&w->frame);
	free(w);
}

struct isc_reader {
	FILE *in;
	const struct isc_spool *spool; /* not spilled: chunks read from spool->mem at ipos */
	ZSTD_DCtx *dctx;
	uint8_t *ibuf;   /* compressed bytes [0, ilen); frame being decoded starts at fstart */
	size_t ilen, icap, ipos, fstart;
	uint64_t base_off; /* file offset of ibuf[0] */
	uint8_t *obuf;   /* decoded chunk */
	size_t olen, ocap;
	uint64_t chunks;
	bool eof, done;
};

int isc_reader_new(struct isc_reader **rp, FILE *in)
{
	struct isc_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->in = in;
	r->dctx = ZSTD_createDCtx();
	r->icap = 1 << 17;
	r->ibuf = malloc(r->icap);
	r->ocap = 1 << 16;
	r->obuf = malloc(r->ocap);
	if (!r->dctx || !r->ibuf || !r->obuf) {
		isc_reader_free(r);
		return -ENOMEM;
	}
	*rp = r;
	return 0;
}

/* Reads more compressed input; drops bytes before the current frame start. */
static int reader_fill(struct isc_reader *r)
{
	if (r->fstart > 0) {
		memmove(r->ibuf, r->ibuf + r->fstart, r->ilen - r->fstart);
		r->base_off += r->fstart;
		r->ilen -= r->fstart;
		r->ipos -= r->fstart;
		r->fstart = 0;
	}
	if (r->ilen == r->icap) {
		if (r->icap >= 64u << 20)
			return -EFBIG; /* the caller treats the frame as bad */
		uint8_t *n = realloc(r->ibuf, r->icap * 2);
		if (!n)
			return -ENOMEM;
		r->ibuf = n;
		r->icap *= 2;
	}
	size_t got = fread(r->ibuf + r->ilen, 1, r->icap - r->ilen, r->in);
	if (got == 0) {
		if (ferror(r->in)) {
			int e = errno ? errno : EIO;
			isc_err_push("Failed to read: %s", strerror(e));
			return -e;
		}
		r->eof = true;
	}
	r->ilen += got;
	return 0;
}

/*
 * After a bad frame: restart decoding at the next frame magic after
 * fstart.  Scanned bytes are dropped as the scan goes (all but the last 3,
 * which may begin a magic), so garbage of any length costs bounded memory.
 */
static int reader_resync(struct isc_reader *r)
{
	ZSTD_DCtx_reset(r->dctx, ZSTD_reset_session_only);
	r->olen = 0;
	size_t i = r->fstart + 1;
	for (;;) {
		for (; i + 4 <= r->ilen; i++) {
			if (get_le32(r->ibuf + i) == ZSTD_MAGIC) {
				r->fstart = r->ipos = i;
				return 0;
			}
		}
		if (r->eof) {
			r->done = true;
			return 0;
		}
		r->fstart = r->ipos = i; /* i >= ilen - 3 */
		int rc = reader_fill(r);
		if (rc)
			return rc;
		i = r->fstart;
	}
}

static int bad_frame(struct isc_reader *r, const char *what)
{
	isc_err_push("%s at byte %llu", what, (unsigned long long)(r->base_off + r->fstart));
	int rc = reader_resync(r);
	return rc ? rc : -EBADMSG;
}

int isc_reader_next(struct isc_reader *r, struct isc_chunk_header *h, const uint8_t **payload)
{
	if (r->spool) { /* written by this process: whole chunks */
		const struct isc_buf *m = &r->spool->mem;
		if (r->ipos + ISC_CHUNK_HEADER_SIZE > m->len)
			return 0;
		header_get(m->data + r->ipos, h);
		*payload = m->data + r->ipos + ISC_CHUNK_HEADER_SIZE;
		r->ipos += ISC_CHUNK_HEADER_SIZE + (size_t)h->payload_len;
		r->fstart = r->ipos;
		r->chunks++;
		return 1;
	}
	for (;;) {
		if (r->done)
			return 0;
		if (r->ipos == r->ilen) {
			if (r->eof) {
				r->done = true;
				if (r->ipos != r->fstart || r->olen)
					return bad_frame(r, "truncated frame");
				return 0;
			}
			int rc = reader_fill(r);
			if (rc == -EFBIG)
				return bad_frame(r, "frame larger than 64 MiB");
			if (rc)
				return rc;
			continue;
		}
		ZSTD_inBuffer in = { r->ibuf, r->ilen, r->ipos };
		if (r->olen > ISC_CHUNK_HEADER_SIZE + ISC_CHUNK_MAX_PAYLOAD)
			return bad_frame(r, "chunk larger than 16 MiB");
		if (r->ocap - r->olen < ZSTD_DStreamOutSize()) {
			uint8_t *n = realloc(r->obuf, r->ocap * 2);
			if (!n)
				return -ENOMEM;
			r->obuf = n;
			r->ocap *= 2;
		}
		ZSTD_outBuffer out = { r->obuf, r->ocap, r->olen };
		size_t ret = ZSTD_decompressStream(r->dctx, &out, &in);
		r->ipos = in.pos;
		r->olen = out.pos;
		if (ZSTD_isError(ret))
			return bad_frame(r, ZSTD_getErrorCode(ret) == ZSTD_error_checksum_wrong ?
						    "bad checksum" : "corrupt frame");
		if (ret != 0)
			continue;
		/* one whole frame decoded and verified */
		size_t len = r->olen;
		r->olen = 0;
		size_t start = r->fstart;
		r->fstart = r->ipos;
		if (len == 0)
			continue; /* skippable frame */
		const uint8_t *b = r->obuf;
		if (len < ISC_CHUNK_HEADER_SIZE || len - ISC_CHUNK_HEADER_SIZE > ISC_CHUNK_MAX_PAYLOAD ||
		    get_le32(b) != ISC_CHUNK_MAGIC ||
		    get_le16(b + 6) != 0 || get_le32(b + 28) != len - ISC_CHUNK_HEADER_SIZE) {
			isc_err_push("bad chunk header in frame at byte %llu",
				     (unsigned long long)(r->base_off + start));
			return -EBADMSG;
		}
		header_get(b, h);
		*payload = b + ISC_CHUNK_HEADER_SIZE;
		r->chunks++;
		return 1;
	}
}

uint64_t isc_reader_offset(const struct isc_reader *r)
{
	return r->base_off + r->fstart;
}

uint64_t isc_reader_chunks(const struct isc_reader *r)
{
	return r->chunks;
}

void isc_reader_free(struct isc_reader *r)
{
	if (!r)
		return;
	ZSTD_freeDCtx(r->dctx);
	free(r->ibuf);
	free(r->obuf);
	free(r);
}

int isc_spool_new(struct isc_spool **sp, size_t budget, int level)
{
	if (!(*sp = calloc(1, sizeof(**sp))))
		return -ENOMEM;
	(*sp)->budget = budget;
	(*sp)->level = level;
	return 0;
}

bool isc_spool_spilled(const struct isc_spool *sp)
{
	return sp->file != NULL;
}

void isc_spool_free(struct isc_spool *sp)
{
	if (!sp)
		return;
	isc_buf_free(&sp->mem);
	if (sp->file)
		fclose(sp->file);
	free(sp);
}

int isc_writer_new_spool(struct isc_writer **wp, struct isc_spool *sp)
{
	if (sp->file || sp->mem.len) {
		isc_err_push("a spool is written once");
		return -EINVAL;
	}
	struct isc_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->spool = sp;
	*wp = w;
	return 0;
}

int isc_reader_new_spool(struct isc_reader **rp, const struct isc_spool *sp)
{
	if (sp->file) {
		if (fflush(sp->file) || fseek(sp->file, 0, SEEK_SET)) {
			int rc = -errno;
			isc_err_push("Failed to read a temporary file: %s", strerror(errno));
			return rc;
		}
		return isc_reader_new(rp, sp->file);
	}
	struct isc_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->spool = sp;
	*rp = r;
	return 0;
}
