/*
 * kineto.h - the parts of the Kineto importer (kineto_import.c) that are
 * units of their own, in the order the bytes meet them:
 *
 *   kineto_source.c   bytes: plain or gzip text, read forward only
 *   kineto_scan.c     the streaming scanner: the top-level object, then
 *                     traceEvents one element at a time, each element's
 *                     fields picked into a struct kt_event
 *   kineto_json.c     JSON in memory: the values of one element
 *   kineto_convert.c  the conversion: a kt_event's fields to an item
 *                     (kinds, names interned, times in ns, GPU and memory
 *                     fields), the other top-level members to header
 *                     material (devices, metadata)
 *   kineto_sort.c     the external sort of the items
 *
 * kineto_import.c drives them and writes the sorted items.  Private to
 * lib/merge.
 */
#ifndef ISC_KINETO_INTERNAL_H
#define ISC_KINETO_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

#include "isc.h"
#include "isc_kineto.h" /* struct isc_kineto_result */
#include "isc_util.h"   /* struct isc_umap */
#include "strtab.h"     /* struct isc_strtab */

/* ---- byte source (kineto_source.c) ------------------------------------- */
#define KT_SRC_IN (64u << 10)
#define KT_SRC_CAP (512u << 10) /* text buffer */

/*
 * Plain text is read straight into buf.  gzip is inflated by a producer
 * thread into a queue of KT_QN chunks while the caller parses (inflate costs
 * about as much as the parse): memory is KT_QN * KT_CHUNK more, the order and
 * the bytes are the same.  Without the thread (pthread_create failed) the
 * caller inflates itself.
 */
#define KT_QN 4
#define KT_CHUNK (256u << 10)

struct kt_src {
	FILE *f;
	bool gz, eof, threaded;
	uint8_t *buf;
	size_t pos, len;
	uint64_t base; /* offset of buf[0] in the JSON text */
	int err;
	bool gz_trunc, gz_bad; /* the gzip stream ended early or is corrupt */
	/* inflate state: the producer's (or the caller's when not threaded) */
	z_stream z;
	bool zinit, in_eof, member_end;
	uint8_t *in;
	/* the queue, under mu */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint8_t *chunk[KT_QN];
	size_t clen[KT_QN], coff; /* coff: bytes of the head chunk already taken */
	unsigned head, count;
	bool done, stop;       /* done: the producer ended (z_err, z_trunc, z_bad say how) */
	int z_err;
	bool z_trunc, z_bad;
};

/* Starts reading f (gzip when it starts with 1f 8b); 0 or a negative errno.
 * Close with isc_ksrc_close even when it failed. */
int isc_ksrc_open(struct kt_src *s, FILE *f);
/*
 * Appends text after buf[len], first moving the unread bytes to the front
 * (so the window from pos stays contiguous): 1, 0 at the end, negative on
 * an I/O error.  gzip damage ends the text early (gz_trunc, gz_bad).
 */
int isc_ksrc_more(struct kt_src *s);
void isc_ksrc_close(struct kt_src *s);

/* ---- JSON in memory (kineto_json.c) ------------------------------------ */
enum { J_NONE, J_STR, J_NUM, J_LIT, J_ARR, J_OBJ };

struct kt_jv {
	uint8_t t;
	char *s; /* J_STR: unescaped in place; J_NUM: the text */
	size_t n;
};

struct kt_jp {
	char *p, *e;
	unsigned depth, max_depth;
	char *arena; /* strings with escapes are unescaped here; NULL: in place */
	size_t aused;
};

/* Skips JSON whitespace. */
void isc_kjson_ws(struct kt_jp *j);
/*
 * A string at j->p.  Without escapes it is left where it is; with escapes
 * it is unescaped into the arena, or in place (the result is never longer).
 */
bool isc_kjson_str(struct kt_jp *j, char **s, size_t *n);
/* A number at j->p, as its text. */
bool isc_kjson_num(struct kt_jp *j, char **s, size_t *n);
/* Any value; containers are validated and skipped (v->t says which). */
bool isc_kjson_value(struct kt_jp *j, struct kt_jv *v);
/*
 * The object iterator: the members of the object at j->p ('{'), one per
 * call; *state is 0 before the first call.  1: the next key is in k/kn and
 * j->p is at its value (whitespace skipped), which the caller consumes;
 * 0: the closing '}' was consumed; -1: invalid JSON or the text ended.
 * Depth is the caller's to count.
 */
int isc_kjson_member(struct kt_jp *j, unsigned *state, char **k, size_t *kn);
/*
 * JSON number text t[0..n) times 10^scale as an int64, exactly when no
 * digit is dropped, else rounded once, half away from zero, at the first
 * dropped digit (a ts of "1.2345" µs is 1235 ns).  0, -ERANGE (does not
 * fit), -EINVAL (not a number).  *inexact: a non-zero digit was dropped.
 */
int isc_kjson_dec(const char *t, size_t n, int scale, int64_t *out, bool *inexact);

/* ---- the external sort (kineto_sort.c) --------------------------------- */
enum { IT_SPAN = 1, IT_MARK, IT_GPU_OP, IT_GPU_API };

/* One imported event, as sorted and spilled (times relative to the file). */
struct kt_item {
	int64_t ts, dur;
	uint64_t seq, correlation; /* a device memory MARK (kind 1): its "Addr", 0 when none */
	int64_t value; /* GPU_OP bytes, MARK value */
	uint64_t total[2]; /* a device memory MARK with flags 1: "Total Allocated", "Total Reserved" */
	uint32_t pid, tid, name_id, device, stream, cbid, flags;
	uint32_t launch[8]; /* grid x y z, block x y z, registers, shared memory */
	uint8_t type, kind, copy_kind, src_mem, dst_mem, has_launch;
};

/* Sort key: ts, context, span begins (longer first) before the rest, file order. */
struct kt_skey {
	int64_t ts;
	uint64_t ctx, tie, seq;
	size_t idx;
};

struct kt_run {
	uint64_t off, n, next; /* items in the file; next = items already read */
	struct kt_item *buf;
	size_t pos, len, cap;
	/* the in-memory tail: sorted keys into items[] */
	const struct kt_skey *keys;
	const struct kt_item *items;
};

/*
 * The items of a trace in (ts, pid/tid, span begins longest first, file
 * order) order, in bounded memory: a buffer of items sorted and spilled as
 * a run to a temporary file when full, then a k-way merge (a heap) of the
 * runs and the in-memory tail.
 *
 *   push ... push | begin | peek, next, peek, next ... NULL
 */
struct isc_ksort {
	struct kt_item *items;
	struct kt_skey *keys;
	size_t nitems, capitems;
	uint64_t seq;
	FILE *tmp;
	int tmpfd;
	struct kt_run *runs;
	size_t nruns, capruns;     /* nruns: runs spilled */
	struct isc_buf wbuf;
	uint64_t peak_bytes;       /* the most memory the sort held */
	struct kt_run tail, **heap;   /* the merge */
	size_t nheap;
};
/* A sort holding about budget bytes of items and keys in memory (64 items at least); 0 or -ENOMEM. */
int isc_ksort_init(struct isc_ksort *s, size_t budget);
/* Adds a copy of *it (its seq set to the file order); spills a full buffer.  0 or a negative errno (message pushed). */
int isc_ksort_push(struct isc_ksort *s, struct kt_item *it);
/* Ends the input and starts the merge; 0 or a negative errno. */
int isc_ksort_begin(struct isc_ksort *s);
/* The smallest item not yet taken (valid until the next call), NULL at the end or on error (*err). */
const struct kt_item *isc_ksort_peek(struct isc_ksort *s, int *err);
/* Takes the item isc_ksort_peek returned; 0 or a negative errno. */
int isc_ksort_next(struct isc_ksort *s);
void isc_ksort_free(struct isc_ksort *s);

/* ---- one event's fields (kineto_scan.c picks, kineto_convert.c maps) ---- */
/* The fields of one traceEvents element that the conversion reads; J_NONE when absent. */
struct kt_event {
	struct kt_jv ph, cat, name, pid, tid, ts, dur;
	/* args */
	struct kt_jv stream, correlation, bytes, device, cbid, cid, regs, shmem, aname, mem_bytes, sync_kind, event_id;
	struct kt_jv mem_dtype, mem_did; /* [memory] args "Device Type" (1: CUDA), "Device Id" */
	struct kt_jv mem_addr;           /* [memory] "Addr" (PyTorch 1.10 and later) */
	struct kt_jv mem_talloc, mem_tres; /* [memory] "Total Allocated", "Total Reserved" (PyTorch 1.10+) */
	bool graph, have_grid, have_block;
	uint32_t grid[3], block[3];
	const char *bad; /* wrong type: the event is skipped */
	char badbuf[96];
};

/* s[0..n) is the C string lit. */
static inline bool kt_keyeq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(s, lit, n);
}

/* ---- the conversion (kineto_convert.c) ---------------------------------- */
#define KT_META_MAX 64          /* top-level members kept as metadata */
#define KT_META_VALUE_MAX 4096  /* their longest value */

struct kt_dev { /* deviceProperties[i] */
	uint64_t id, sms, mem, major, minor;
	char *name;
};

struct kt_meta {
	char *key, *val;
};

/*
 * What the conversion keeps besides the items it pushes into *sort: the
 * names, the header material (epoch, command, devices, metadata) and the
 * process and thread names.  Zeroed, with res and sort set, it is ready.
 */
struct kt_conv {
	struct isc_kineto_result *res; /* counts */
	struct isc_ksort *sort;        /* where the items go */
	struct isc_strtab st;          /* the names of spans, calls, operations and marks */
	bool have_base, have_min;
	int64_t base_ns;               /* baseTimeNanoseconds */
	int64_t min_ts;                /* the earliest item: the epoch */
	struct isc_umap pid_events;    /* pid -> index in cpu_items: CPU-side items, for the command */
	uint64_t *cpu_items;
	size_t ncpu_items, capcpu_items;
	struct isc_umap pnames, tnames; /* pid, pid << 32 | tid -> index in names */
	char **names;
	size_t nnames, capnames;
	struct kt_dev *devs;
	size_t ndevs, capdevs;
	struct kt_meta metas[KT_META_MAX];
	size_t nmetas;
};

/*
 * Maps one event: an item pushed into the sort, a process or thread name
 * kept, or a count only (flows, kinds not mapped).  0, with *why set when
 * the event is bad (the caller counts it); -ENOMEM, or -E2BIG with a
 * message pushed (too many names), when the import cannot go on.
 */
int isc_kconv_event(struct kt_conv *c, struct kt_event *ev, const char **why);
/* A top-level member other than traceEvents, its value's JSON text t[0..n) (changed in place). */
void isc_kconv_top(struct kt_conv *c, const char *key, char *t, size_t n);
/* Keeps key = val[0..vlen) as a META record (at most KT_META_MAX, silently). */
void isc_kconv_meta(struct kt_conv *c, const char *key, const char *val, size_t vlen);
/* The command: the name of the named process with the most CPU-side items; NULL when none. */
const char *isc_kconv_command(const struct kt_conv *c);
/* The name a ph "M" event gave a process or a thread, NULL when none; valid until isc_kconv_free. */
const char *isc_kconv_process_name(const struct kt_conv *c, uint32_t pid);
const char *isc_kconv_thread_name(const struct kt_conv *c, uint32_t pid, uint32_t tid);
void isc_kconv_free(struct kt_conv *c);

/* ---- the streaming scanner (kineto_scan.c) ------------------------------ */
/*
 * The JSON text read front to back: every traceEvents element parsed into
 * a kt_event, in place in the source window when it fits (64 KiB), else
 * copied with a size and nesting limit first, and handed to
 * isc_kconv_event; every other top-level member to isc_kconv_top.
 * Damage (truncation, invalid JSON, bad events) is worded once into
 * res->damage.
 */
struct kt_scan {
	struct kt_src src;
	struct kt_conv *conv;
	struct isc_kineto_result *res;
	unsigned max_depth;
	struct isc_buf val;  /* the value being parsed, when not parsed in place */
	char *arena;         /* unescaped strings of the event parsed in place */
	bool stop;           /* structural damage: no more input is read */
	bool have_events;    /* traceEvents was found */
};

/* Starts reading in (s zeroed); 0 or a negative errno.  Close with isc_kscan_close even when it failed. */
int isc_kscan_open(struct kt_scan *s, FILE *in, struct kt_conv *conv, struct isc_kineto_result *res,
		   unsigned max_depth);
/*
 * Reads the whole input.  0: read, or ended early by damage (res->damaged,
 * s->stop); a negative errno with a message pushed: not a Kineto trace
 * (-EBADMSG), an I/O error, or what isc_kconv_event returned.
 */
int isc_kscan_run(struct kt_scan *s);
void isc_kscan_close(struct kt_scan *s);

#endif
