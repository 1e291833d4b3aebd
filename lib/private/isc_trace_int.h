/*
 * isc_trace_int.h - the format stage's declarations shared with the other stages
 * (not the tools): file header records, STRING_DEF parsing, ring record
 * checks.
 */
#ifndef ISC_FORMAT_INTERNAL_H
#define ISC_FORMAT_INTERNAL_H

#include "isc.h"

/*
 * File header chunk payload (formats/trace.md §4): HDR_* records.  encode
 * appends them to b; parse fills *h and *file_magic, tolerating unknown
 * records.  Both return 0 or a negative errno.
 */
int isc_header_encode(struct isc_buf *b, uint32_t file_magic, const struct isc_tl_header *h);
int isc_header_parse(const uint8_t *p, size_t len, struct isc_tl_header *h, uint32_t *file_magic);

/* A STRING_DEF record body, pointing into the record. */
struct isc_string_def {
	uint64_t id, line;
	uint8_t kind;
	const uint8_t *name, *file;
	size_t nlen, flen;
};
/* Parses a STRING_DEF body; 0 or -EBADMSG (id 0 or >= ISC_STRING_ID_LIMIT too). */
int isc_string_def_parse(const uint8_t *body, size_t len, struct isc_string_def *d);

/* An EXCEPTION record's strings (after its line varint), pointing into the record. */
struct isc_exception {
	const uint8_t *type, *file, *func, *msg;
	size_t ntype, nfile, nfunc, nmsg;
};
/* Parses the bytes after an EXCEPTION's line varint; 0 or -EBADMSG. */
int isc_exception_parse(const uint8_t *p, size_t len, struct isc_exception *x);
/* The END chunk's END_STATS record (formats/trace.md). */
struct isc_end_stats {
	uint64_t events, dropped, lost_frames, flags; /* flags: ISC_END_* */
	int status;                                   /* exit status (128 + signal when killed) */
};
/* Writes the END_STATS body into body (at least 50 bytes); returns its length. */
unsigned isc_end_stats_encode(uint8_t *body, const struct isc_end_stats *e);
/*
 * The last END_STATS record among the records of an END chunk payload into
 * *e (*found says whether there was one).  0, -EBADMSG when an END_STATS
 * body does not parse (the records before it were taken), or the cursor's
 * error.
 */
int isc_end_stats_read(const uint8_t *p, size_t len, struct isc_end_stats *e, bool *found);

/*
 * The leading varints of an ALLOC or ALLOC_SITE body (trace or timeline
 * type) into f (8 or 12 of them), and where its depth (code id, line)
 * pairs start.  Checks the pairs, and for ALLOC the native frames after
 * them, parse within len; depth at most ISC_ALLOC_MAX_DEPTH.  0,
 * -EBADMSG, or -EINVAL for another type.
 */
int isc_alloc_stack_parse(uint8_t type, const uint8_t *p, size_t len, const uint8_t **pairs, uint64_t *depth,
			  uint64_t f[12]);

/* Number of leading varint fields of a sample-class record type (0 if none). */
unsigned isc_record_nvarints(uint8_t type);
/*
 * True when r is a record an agent may write into a ring whose records go
 * into chunks of type chunk (EVENTS: the Python agent's PY_CALL..DROPPED;
 * GPU_EVENTS: the CUDA agent's GPU, NVTX, device, warning, metadata and
 * string records) and its fields parse within its body.  The recorder
 * copies ring records only when this holds, so a hostile agent cannot
 * plant records of another kind or unreadable bodies in the trace.
 */
bool isc_ring_record_ok(const struct isc_rec *r, uint16_t chunk);

#endif
