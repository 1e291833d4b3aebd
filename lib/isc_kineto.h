/*
 * isc_kineto.h - PyTorch profiler (Kineto) Chrome-trace JSON in, timeline
 * events out, through the same sinks as the merge (isc_merge.h).  The
 * mapping is specified in formats/timeline.md §10.
 */
#ifndef ISC_KINETO_H
#define ISC_KINETO_H

#include "isc_merge.h"

#define ISC_KINETO_SORT_BUDGET (64u << 20) /* default opts.sort_budget */
#define ISC_KINETO_MAX_DEPTH 64            /* default opts.max_depth */

struct isc_kineto_opts {
	size_t sort_budget; /* bytes of events sorted in memory before a run is spilled; 0 = default */
	unsigned max_depth; /* JSON nesting limit (arrays and objects); 0 = default */
};

struct isc_kineto_result {
	uint64_t events_in;  /* elements of traceEvents read */
	uint64_t events_out; /* records sent to the sink (END_STATS.events) */
	uint64_t gpu_ops, kernels, memcpys, memsets, syncs, gpu_annotations;
	uint64_t api_calls, runtime_calls, driver_calls;
	uint64_t cpu_ops, python_functions, annotations, marks;
	uint64_t gpu_memory; /* of the marks, CUDA device memory events: also GPU_MEMORY records */
	uint64_t flows;    /* flow events (ac2g, async, fwdbwd): counted, not used */
	uint64_t metadata; /* ph M events */
	uint64_t skipped;  /* known but not imported: the profiler's own spans, global instants */
	uint64_t unknown;  /* unknown categories or phases: skipped */
	uint64_t bad_events; /* wrong types, numbers out of range, too deep or too large: skipped */
	uint64_t clamped;  /* spans that overlapped their parent's end, cut to it */
	uint64_t runs;     /* sorted runs spilled to the temporary file (0: sorted in memory) */
	uint64_t peak_sort_bytes; /* largest memory held by the sort buffers */
	bool damaged;      /* truncated or invalid JSON, or bad events: see damage */
	char damage[512];  /* first damage, one line */
};

/*
 * True when the first bytes of a stream look like Kineto input: gzip
 * magic (1f 8b) or, after JSON white space, '{'.  buf may be short.
 */
bool isc_kineto_sniff(const uint8_t *buf, size_t len);

/*
 * Reads Kineto JSON (plain or gzip) from in, front to back without
 * seeking, and feeds sink: begin, every string before its first use, the
 * events in timeline order, end.  name is for messages only; o may be NULL
 * (defaults).  Returns 0 when the whole input was imported; 1 when it was
 * damaged (truncated or invalid JSON, or events skipped for wrong types,
 * overflowing numbers or nesting): what was read is in the output and
 * res->damage says what went wrong; negative when nothing could be
 * imported (not a trace, no events, I/O or sink error), message pushed.
 */
int isc_kineto_import(FILE *in, const char *name, struct isc_sink *sink, const struct isc_kineto_opts *o,
		      struct isc_kineto_result *res);

#endif
