/*
 * tracegen.h - builds synthetic traces (.isc) for unit tests, byte by byte
 * through the library's writer, so merge behaviour can be checked against
 * exactly known input.
 */
#ifndef TRACEGEN_H
#define TRACEGEN_H

#include <stdlib.h>
#include <string.h>

#include "isc_trace_int.h"
#include "isc_shm.h"
#include "tlwrite.h" /* tlw_string_def */

struct tg {
	struct isc_writer *w;
	struct isc_buf b;  /* records of the chunk being built */
	uint64_t base, last;
};

static inline void tg_open(struct tg *g, FILE *f, uint64_t epoch, const char *boot)
{
	struct isc_tl_header h;
	memset(g, 0, sizeof(*g));
	memset(&h, 0, sizeof(h));
	strcpy(h.host, "testhost");
	strcpy(h.cmdline, "python3 test.py");
	snprintf(h.boot_id, sizeof(h.boot_id), "%s", boot);
	h.epoch_mono_ns = epoch;
	h.epoch_realtime_ns = 1700000000000000000ull + epoch;
	h.ncpu = 2;
	h.sample_hz = 10;
	isc_writer_new(&g->w, f, 3);
	isc_header_encode(&g->b, ISC_TRACE_MAGIC, &h);
	struct isc_chunk_header ch = { ISC_CHUNK_MAGIC, ISC_CHUNK_FILE_HEADER, 0, 0, 0, 0, 0, (uint32_t)g->b.len };
	isc_writer_chunk(g->w, &ch, g->b.data);
	g->b.len = 0;
}

/* Starts a chunk's record list with timestamps relative to base. */
static inline void tg_begin(struct tg *g, uint64_t base)
{
	g->b.len = 0;
	g->base = g->last = base;
}

/* Appends a record with up to 8 varint fields. */
static inline void tg_rec(struct tg *g, uint8_t type, uint64_t ts, int n, ...)
{
	uint8_t body[100];
	unsigned len = 0;
	va_list ap;
	va_start(ap, n);
	for (int i = 0; i < n; i++)
		len += isc_put_varint(body + len, va_arg(ap, uint64_t));
	va_end(ap);
	isc_buf_put_record(&g->b, type, ts, &g->last, body, len);
}

static inline void tg_string(struct tg *g, uint64_t id, uint8_t kind, uint32_t line, const char *name,
			     const char *file)
{
	tlw_string_def(&g->b, id, kind, line, name, file);
}

/* Writes the records built since tg_begin as one chunk. */
static inline void tg_chunk(struct tg *g, uint16_t type, uint32_t pid, uint32_t tid)
{
	struct isc_chunk_header h = { ISC_CHUNK_MAGIC, type, 0, pid, tid, g->base, 0, (uint32_t)g->b.len };
	isc_writer_chunk(g->w, &h, g->b.data);
	g->b.len = 0;
}

static inline void tg_round(struct tg *g, uint64_t w)
{
	struct isc_chunk_header h = { ISC_CHUNK_MAGIC, ISC_CHUNK_ROUND, 0, 0, 0, w, 0, 0 };
	isc_writer_chunk(g->w, &h, "");
}

static inline void tg_close(struct tg *g, bool with_end)
{
	if (with_end) {
		tg_begin(g, 0);
		tg_rec(g, ISC_REC_END_STATS, 0, 5, (uint64_t)0, (uint64_t)0, (uint64_t)0, (uint64_t)0, (uint64_t)0);
		tg_chunk(g, ISC_CHUNK_END, 0, 0);
	}
	isc_writer_flush(g->w);
	isc_writer_free(g->w);
	isc_buf_free(&g->b);
}

#endif
