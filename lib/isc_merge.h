/* isc_merge.h - traces (or a Kineto JSON trace, isc_kineto.h) in, one ordered timeline out. */
#ifndef ISC_MERGE_H
#define ISC_MERGE_H

#include "isc.h"

/*
 * Where merged events go.  The merge calls strings() with every new global
 * string before the first event that uses it, event() in timeline order,
 * and end() once.  Each returns 0 or a negative errno.
 */
struct isc_sink {
	void *ctx;
	int (*begin)(void *ctx, const struct isc_tl_header *h);
	int (*string)(void *ctx, const struct isc_tl_string *s);
	int (*event)(void *ctx, const struct isc_tl_event *ev);
	int (*end)(void *ctx, const struct isc_tl_stats *st);
	void (*destroy)(void *ctx);
};

/* Binary timeline (.istl) writer sink; free with isc_sink_free. */
int isc_sink_timeline_new(struct isc_sink **s, FILE *out);
/* The same with zstd level level (isc_sink_timeline_new: 3); a temporary timeline read once takes a fast one. */
int isc_sink_timeline_new_level(struct isc_sink **s, FILE *out, int level);
/* The same into a spool (isc.h), read back with isc_timeline_open_spool. */
int isc_sink_timeline_new_spool(struct isc_sink **s, struct isc_spool *sp);
/*
 * Deterministic text dump: processes and threads numbered in order of
 * appearance (P1, T1), times printed only when with_times.
 */
int isc_sink_dump_new(struct isc_sink **s, FILE *out, bool with_times);
/*
 * Chrome Trace Event JSON (Perfetto UI, chrome://tracing): spans, GPU
 * operations and API calls as X events, flow arrows by correlation,
 * marks as instants, samples as counters.
 */
int isc_sink_chrome_new(struct isc_sink **s, FILE *out);
void isc_sink_free(struct isc_sink *s);

struct isc_merge_input {
	FILE *in;
	const char *name; /* for messages */
};

struct isc_merge_result {
	uint64_t events_in, events_out;
	uint64_t damaged_frames; /* frames lost to corruption or truncation */
	uint64_t late_events;    /* arrived after the watermark had passed them */
	uint64_t unmatched_returns; /* returns without a call (agent attached mid-call) */
	uint64_t closed_by_merge;   /* spans with no return, closed at thread end */
	uint64_t max_buffered;      /* peak events held in the reorder window */
	uint64_t out_of_range;      /* dropped: time or GPU duration >= 2^62 ns (formats/timeline.md §4) */
	/* GPU records of CUDA agents (GPU_EVENTS chunks) */
	uint64_t gpu_ops;           /* GPU_OP written */
	uint64_t gpu_linked;        /* of which linked to their launching call */
	uint64_t gpu_calls;         /* GPU_API written */
	uint64_t gpu_dropped;       /* records CUPTI lost (GPU_DROPPED) */
	int64_t min_launch_gap_ns;  /* smallest start - launching call's start; < 0: clock skew */
	bool have_launch_gap;       /* min_launch_gap_ns is set (some kernel/copy/memset linked) */
	unsigned bad_input;         /* index+1 of the first damaged input, 0 if none */
	char damage[512];           /* first damage message */
};

/*
 * Merges inputs into sink.  Returns 0 when every input was read whole, 1
 * when some input was damaged (what preceded the damage is in the output,
 * res->damage says where), negative on a fatal error (message pushed).
 */
int isc_merge(const struct isc_merge_input *inputs, size_t n, struct isc_sink *sink,
	      struct isc_merge_result *res);

enum isc_input_kind { ISC_INPUT_UNKNOWN, ISC_INPUT_TRACE, ISC_INPUT_TIMELINE, ISC_INPUT_KINETO, ISC_INPUT_FINDINGS };

/*
 * Tells what in holds by its first bytes (the header of the first zstd
 * frame; findings JSON: '{' then "schema_version" as its first key; for
 * Kineto JSON, any other '{' after white space or gzip's 1f 8b) and
 * returns in *f a stream that reads in from its start: the peeked bytes,
 * then the rest.  Close *f (before in).  No seeks: works on pipes.
 */
int isc_input_open(FILE *in, FILE **f, enum isc_input_kind *kind);
/* isc_input_open, and for a trace or a timeline its file header into *hdr (zeroed otherwise). */
int isc_input_open_hdr(FILE *in, FILE **f, enum isc_input_kind *kind, struct isc_tl_header *hdr);

/*
 * Sends an open timeline through sink (header, strings before their first
 * use, events, end): how iscope-merge converts a timeline to another
 * format.  0, 1 when the timeline is damaged (the events before the damage
 * were sent; damage[dlen] says where), negative on a sink error.
 */
int isc_timeline_replay(struct isc_timeline *t, struct isc_sink *sink, char *damage, size_t dlen);

/*
 * Opens a timeline, or a trace merged (a Kineto trace imported) on the fly,
 * from an anonymous temporary file (a timeline is copied there, so a pipe
 * can be read twice).  *owned receives that FILE, which the caller closes
 * after isc_timeline_free.  mres reports the merge or import (all zero for
 * a timeline); a damaged trace still opens, with mres->bad_input set.
 */
int isc_timeline_open_any(struct isc_timeline **t, FILE *in, FILE **owned, struct isc_merge_result *mres);

/* Frees *t and opens owned (from isc_timeline_open_any) again from its start. */
int isc_timeline_rewind(struct isc_timeline **t, FILE *owned);

#endif
