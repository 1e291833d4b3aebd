/*
 * tlwrite.h - the container steps of the synthetic timelines that
 * test_analyze.c and test_analyze_gpu.c write through the library's
 * writer: the file header, a chunk, a string definition (whose record
 * tracegen.h's traces use too).  Each test keeps its own event builder
 * (its spans and threads differ).
 */
#ifndef TLWRITE_H
#define TLWRITE_H

#include <stdlib.h>
#include <string.h>

#include "isc_trace_int.h"

/* Writes a chunk of type whose records are relative to base; aborts on error. */
static inline void tlw_chunk(struct isc_writer *w, uint16_t type, uint64_t base, const struct isc_buf *b)
{
	struct isc_chunk_header h = { ISC_CHUNK_MAGIC, type, 0, 0, 0, base, 0, (uint32_t)b->len };
	if (isc_writer_chunk(w, &h, b->data))
		abort();
}

/* Starts a timeline in f under header h; *w the writer. */
static inline void tlw_open(struct isc_writer **w, FILE *f, const struct isc_tl_header *h)
{
	struct isc_buf b = { 0 };
	if (isc_writer_new(w, f, 1) || isc_header_encode(&b, ISC_TIMELINE_MAGIC, h))
		abort();
	tlw_chunk(*w, ISC_CHUNK_FILE_HEADER, 0, &b);
	isc_buf_free(&b);
}

/* Appends to b a STRING_DEF record (time 0) defining string id: kind, line, name, file. */
static inline void tlw_string_def(struct isc_buf *b, uint64_t id, uint8_t kind, uint32_t line, const char *name,
				  const char *file)
{
	struct isc_buf r = { 0 };
	uint64_t ts = 0;
	isc_buf_put_varint(&r, id);
	isc_buf_put_u8(&r, kind);
	isc_buf_put_varint(&r, line);
	isc_buf_put_bytes(&r, name, strlen(name));
	isc_buf_put_bytes(&r, file, strlen(file));
	isc_buf_put_record(b, ISC_REC_STRING_DEF, 0, &ts, r.data, r.len);
	isc_buf_free(&r);
}

/* One TL_STRINGS chunk defining string id. */
static inline void tlw_string(struct isc_writer *w, uint32_t id, uint8_t kind, uint32_t line, const char *name,
			      const char *file)
{
	struct isc_buf b = { 0 };
	tlw_string_def(&b, id, kind, line, name, file);
	tlw_chunk(w, ISC_CHUNK_TL_STRINGS, 0, &b);
	isc_buf_free(&b);
}

#endif
