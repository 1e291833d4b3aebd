/*
 * isc.h - libiscope, the API the four tools and the tests use.
 *
 * Conventions: functions return 0 (or a positive count / "1 = got one") on
 * success and a negative errno on failure, after pushing a context message
 * with isc_err_push().  The library never exits and never writes to stdout.
 * Objects come in _new/_open and _free pairs; _free(NULL) is a no-op.
 */
#ifndef ISC_H
#define ISC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "isc_format.h"

/* ---- errors (err.c) ---------------------------------------------------- */
/* Adds one context message (innermost first); thread-local. */
void isc_err_push(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Forgets all messages. */
void isc_err_clear(void);
/* Messages joined outermost first with ": "; valid until the next push/clear. */
const char *isc_err_msg(void);

/* ---- varints and record cursor (codec.c) ------------------------------- */
/* Reads a LEB128 varint; returns 0 or -EBADMSG when truncated/overlong. */
int isc_get_varint(const uint8_t **p, const uint8_t *end, uint64_t *v);
static inline uint64_t isc_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t isc_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }
/* MurmurHash3's 64-bit finalizer: the hash of every table keyed by integers. */
static inline uint64_t isc_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

struct isc_rec {
	uint8_t type;
	uint64_t ts;        /* absolute ns (timed records), else last ts */
	const uint8_t *body; /* after the ts delta for timed records */
	size_t len;
};

struct isc_cursor {
	const uint8_t *p, *end;
	uint64_t ts;
};

static inline void isc_cursor_init(struct isc_cursor *c, const uint8_t *buf, size_t len, uint64_t base_ts)
{
	c->p = buf;
	c->end = buf + len;
	c->ts = base_ts;
}
/* Next record: 1 got one, 0 end of buffer, -EBADMSG corrupt. */
int isc_cursor_next(struct isc_cursor *c, struct isc_rec *rec);

/* Growable byte buffer used by encoders. */
struct isc_buf {
	uint8_t *data;
	size_t len, cap;
};
int isc_buf_reserve(struct isc_buf *b, size_t extra);
int isc_buf_put(struct isc_buf *b, const void *p, size_t n);
int isc_buf_put_u8(struct isc_buf *b, uint8_t v);
int isc_buf_put_varint(struct isc_buf *b, uint64_t v);
int isc_buf_put_bytes(struct isc_buf *b, const void *p, size_t n); /* varint len + bytes */
/* Appends a record: type, size, [ts delta], body.  *last_ts is updated for timed types. */
int isc_buf_put_record(struct isc_buf *b, uint8_t type, uint64_t ts, uint64_t *last_ts,
		       const void *body, size_t len);
void isc_buf_free(struct isc_buf *b);

/* ---- container (container.c) ------------------------------------------- */
struct isc_writer; /* zstd frame writer */
int isc_writer_new(struct isc_writer **w, FILE *out, int level);
/* Writes one chunk as one zstd frame with content checksum. */
int isc_writer_chunk(struct isc_writer *w, const struct isc_chunk_header *h, const void *payload);
/* Compresses one chunk into a frame appended to out (nothing written). */
int isc_writer_encode(struct isc_writer *w, const struct isc_chunk_header *h, const void *payload,
		      struct isc_buf *out);
/* Writes already-encoded frames. */
int isc_writer_raw(struct isc_writer *w, const void *frames, size_t len);
/* Flushes stdio; reports write errors. */
int isc_writer_flush(struct isc_writer *w);
uint64_t isc_writer_bytes(const struct isc_writer *w);
void isc_writer_free(struct isc_writer *w);

struct isc_reader; /* zstd frame reader, no seeks */
int isc_reader_new(struct isc_reader **r, FILE *in);
/*
 * Next chunk: 1 got one (*payload valid until the next call), 0 clean end,
 * negative on damage (message says where; everything before it was good).
 */
int isc_reader_next(struct isc_reader *r, struct isc_chunk_header *h, const uint8_t **payload);
uint64_t isc_reader_offset(const struct isc_reader *r); /* compressed bytes consumed */
uint64_t isc_reader_chunks(const struct isc_reader *r);
void isc_reader_free(struct isc_reader *r);

/*
 * A temporary container written once and read back by this process: its
 * chunks stay in memory uncompressed up to budget bytes, then all go
 * compressed at level into a tmpfile() (container.c).  The writer (one)
 * and readers (any number, one after another) see the same chunks as the
 * FILE ones; the spool outlives them.
 */
struct isc_spool;
int isc_spool_new(struct isc_spool **sp, size_t budget, int level);
bool isc_spool_spilled(const struct isc_spool *sp);
void isc_spool_free(struct isc_spool *sp);
int isc_writer_new_spool(struct isc_writer **w, struct isc_spool *sp);
int isc_reader_new_spool(struct isc_reader **r, const struct isc_spool *sp);

/* ---- timeline reader (timeline_reader.c) ------------------------------- */
struct isc_tl_string {
	uint32_t id;
	uint8_t kind; /* enum isc_string_kind */
	uint32_t line;
	const char *name;
	const char *file; /* "" when none */
};

struct isc_tl_header {
	char host[256];
	char cmdline[4096]; /* argv joined by spaces */
	char boot_id[64];
	uint64_t epoch_mono_ns;     /* session epoch: timeline ts 0 */
	uint64_t epoch_realtime_ns; /* wall clock at the epoch */
	uint64_t clock_uncertainty_ns;
	uint32_t ncpu;
	uint32_t sample_hz;
	uint32_t recorder_pid;
};

/* One timeline event; fields meaningful per type (see formats/timeline.md). */
struct isc_tl_event {
	uint8_t type;  /* ISC_REC_* */
	uint64_t ts;   /* ns since the session epoch */
	uint32_t pid, tid;
	uint32_t source; /* the input it came from (TL_CTX, formats/timeline.md §4.1): 0 for the first */
	/* SPAN_BEGIN / SPAN_END */
	uint64_t span_id, parent_id;
	uint32_t depth;
	uint8_t kind;     /* enum isc_span_kind */
	uint32_t name_id; /* SPAN_BEGIN, SPAN_END (in the merge only), MARK */
	uint32_t flags;   /* SPAN_END: 1 = closed by merge */
	int64_t value;    /* MARK value, PROC_EXIT status */
	/* sample and other records: their varint fields in order */
	uint64_t f[16];
	unsigned nf;
	const uint8_t *bytes; /* trailing bytes (names, cmdlines); valid until next call */
	size_t nbytes;
	const uint8_t *raw;   /* the whole record body after the ts delta; valid until next call */
	size_t nraw;
	/* GPU_OP and GPU_API (name_id above) */
	struct isc_gpu_fields {
		uint32_t device, stream;
		uint8_t kind;        /* enum isc_gpu_kind; GPU_API: api */
		uint64_t dur_ns;
		uint64_t correlation;
		uint64_t bytes;
		uint8_t copy_kind, src_mem, dst_mem;
		uint32_t flags;
		uint32_t cbid;       /* GPU_API */
		uint32_t grid[3], block[3], registers, shared_mem;
		bool has_launch;     /* grid..shared_mem present */
		/* GPU_OP: the call that launched it (merge, by correlation) */
		bool has_link;
		uint32_t api_tid;    /* its host thread (context pid) */
		int64_t launch_gap_ns; /* start - the call's start; < 0: clock skew */
		/* GPU_OP: innermost Python/op span open on api_tid at the call;
		 * GPU_API: the same for the call itself; 0 none or unknown */
		uint64_t launch_span_id;
		/* GPU_API: the Python line that made the call (a CODE string whose
		 * line is that line; the CUDA agent in sample mode), 0 unknown */
		uint32_t py_site;
		bool has_context;
		uint32_t context;    /* CUDA context id (CUPTI) */
	} gpu;
};

/* Encodes the body (after the ts delta) of a GPU_OP or GPU_API event. */
int isc_gpu_encode(struct isc_buf *b, const struct isc_tl_event *ev);
/* Decodes such a body into ev->gpu (and ev->name_id); 0 or -EBADMSG. */
int isc_gpu_decode(struct isc_tl_event *ev, uint8_t type, const uint8_t *p, size_t len);

struct isc_tl_stats {
	uint64_t events;
	uint64_t dropped;    /* events lost by the recorder (full rings, no slot) */
	uint64_t lost_frames;/* frames the merge could not read */
	bool abrupt;         /* recording did not end cleanly */
	bool signaled;       /* the workload was killed by a signal (exit_status = 128 + it) */
	bool window;         /* lost_frames were evicted by a flight recorder, none lost to damage */
	int exit_status;     /* workload exit status (shell convention) */
	bool have_end;
};

struct isc_timeline;
int isc_timeline_open(struct isc_timeline **t, FILE *in);
/* The same from a spool a timeline sink wrote (isc_sink_timeline_new_spool); read it as often as needed. */
int isc_timeline_open_spool(struct isc_timeline **t, const struct isc_spool *sp);
/* 1 got an event, 0 end, negative on damage (events before it were good). */
int isc_timeline_next(struct isc_timeline *t, struct isc_tl_event *ev);
const struct isc_tl_header *isc_timeline_header_borrow(const struct isc_timeline *t);
/* NULL for an unknown id; valid until isc_timeline_free. */
const struct isc_tl_string *isc_timeline_string_borrow(const struct isc_timeline *t, uint32_t id);
const struct isc_tl_stats *isc_timeline_stats_borrow(const struct isc_timeline *t);
void isc_timeline_free(struct isc_timeline *t);

#endif
