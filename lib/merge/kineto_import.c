/*
 * kineto_import.c - PyTorch profiler (Kineto) Chrome-trace JSON in,
 * timeline events out (formats/timeline.md §10 is the mapping).
 *
 *   bytes (plain, or gzip inflated on the fly; no seeks)
 *     -> scanner: the top-level object, then traceEvents one element at a
 *        time, copied with a size and nesting limit
 *     -> event parser: the fields we map, numbers kept as text and
 *        converted to integer ns exactly
 *     -> items (fixed size, names interned) in the sort buffer;
 *        buffer full: sort it, append it as a run to a tmpfile()
 *   end of input
 *     -> header (epoch = earliest event), strings, DEVICE and META records
 *     -> k-way merge (heap) of the runs and the in-memory tail, merged with
 *        the span ends (a heap of per-thread stacks) -> sink, in order
 *
 * Memory bound: the text window (512 KiB; gzip: plus 1 MiB of inflated
 * chunks queued by the inflating thread), the sort buffer
 * (opts->sort_budget, 64 MiB by default:
 * items plus their sort keys), one read buffer per spilled run (together
 * at most another sort_budget, each at least 4 KiB), the string and name
 * tables, the device and metadata lists, and the open spans of each thread.
 * Not the file size: a 2 GB trace is read in runs of sort_budget bytes.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <zlib.h>
#include <cjson/cJSON.h>

#include "isc_util.h"      /* isc_umap, isc_grow */
#include "isc_trace_int.h"
#include "isc_kineto.h"
#include "kineto.h"
#include "strtab.h"

#define WINDOW (64u << 10)   /* events up to this size are parsed in place */
#define VALUE_MAX (16u << 20) /* largest event or top-level value kept */
#define META_MAX 64
#define META_VALUE_MAX 4096

/* ---- strings, names, devices ------------------------------------------ */

struct dev {
	uint64_t id, sms, mem, major, minor;
	char *name;
};

struct meta {
	char *key, *val;
};

/* ---- output state ------------------------------------------------------ */

struct ospan {
	int64_t end;
	uint64_t id;
	uint32_t name_id;
	uint8_t kind;
};

struct thr;
struct stk { /* one stack of open spans: 0 calls (python, op), 1 scopes */
	struct thr *t;
	uint8_t which;
	struct ospan *v;
	size_t n, cap, hpos; /* hpos: index in the ends heap, SIZE_MAX if not in it */
};

struct thr {
	uint32_t pid, tid;
	bool announced;
	struct stk s[2];
};

/* ---- the importer ------------------------------------------------------ */

struct kin {
	struct kt_src src;
	const char *name;
	struct isc_sink *sink;
	struct isc_kineto_result *res;
	unsigned max_depth;
	/* scanner */
	struct isc_buf val;   /* the value being parsed, when not parsed in place */
	char *arena;          /* unescaped strings of the event parsed in place */
	bool stop;            /* structural damage: no more input is read */
	bool have_events;     /* traceEvents was found */
	uint64_t bad_first_idx;
	/* header material */
	bool have_base;
	int64_t base_ns;
	bool have_min;
	int64_t min_ts;
	struct isc_umap pid_events; /* pid -> index in cpu_items: CPU-side items, for the header's command line */
	uint64_t *cpu_items;
	size_t ncpu_items, capcpu_items;
	struct dev *devs;
	size_t ndevs, capdevs;
	struct meta metas[META_MAX];
	size_t nmetas;
	/* tables */
	struct isc_strtab st; /* the names */
	struct isc_umap pnames, tnames; /* pid, pid << 32 | tid -> index in names */
	char **names;
	size_t nnames, capnames;
	struct isc_ksort sort; /* kineto_sort.c */
	struct isc_buf wbuf;   /* emit_raw's record body */
	/* output */
	struct isc_umap threads; /* pid << 32 | tid -> index in thrs */
	struct thr **thrs;
	size_t nthrs, capthrs;
	struct isc_umap procs; /* the pids announced */
	struct stk **heap;
	size_t nheap, capheap;
	uint64_t next_span;
};

static void damage(struct kin *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void damage(struct kin *k, const char *fmt, ...)
{
	if (k->res->damaged)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(k->res->damage, sizeof(k->res->damage), fmt, ap);
	va_end(ap);
	k->res->damaged = true;
}

static uint64_t text_offset(const struct kin *k)
{
	return k->src.base + k->src.pos;
}

/* ---- one event --------------------------------------------------------- */

struct kev {
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

static bool keyeq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(s, lit, n);
}

/* An array of up to three non-negative integers (grid, block). */
static bool jdim3(struct kt_jp *j, uint32_t d[3], bool *ok)
{
	char *save = j->p;
	struct kt_jv v;
	*ok = false;
	if (j->p >= j->e || *j->p != '[')
		return isc_kjson_value(j, &v);
	j->p++;
	d[0] = d[1] = d[2] = 1;
	for (int i = 0;; i++) {
		isc_kjson_ws(j);
		char *s;
		size_t n;
		int64_t x;
		bool inexact;
		if (i == 0 && j->p < j->e && *j->p == ']')
			break;
		if (i >= 3 || !isc_kjson_num(j, &s, &n) || isc_kjson_dec(s, n, 0, &x, &inexact) || x < 0 || x > UINT32_MAX) {
			j->p = save; /* not the shape we know: validate and skip */
			return isc_kjson_value(j, &v);
		}
		d[i] = (uint32_t)x;
		isc_kjson_ws(j);
		if (j->p < j->e && *j->p == ',') {
			j->p++;
			continue;
		}
		break;
	}
	if (j->p >= j->e || *j->p++ != ']')
		return false;
	*ok = true;
	return true;
}

static bool parse_args(struct kt_jp *j, struct kev *ev)
{
	unsigned st = 0;
	char *k;
	size_t kn;
	int rc;
	if (++j->depth > j->max_depth)
		return false;
	while ((rc = isc_kjson_member(j, &st, &k, &kn)) == 1) {
		struct kt_jv v, *dst = NULL;
		if (keyeq(k, kn, "grid")) {
			if (!jdim3(j, ev->grid, &ev->have_grid))
				return false;
		} else if (keyeq(k, kn, "block")) {
			if (!jdim3(j, ev->block, &ev->have_block))
				return false;
		} else {
			if (!isc_kjson_value(j, &v))
				return false;
			switch (kn) {
			case 4:
				if (keyeq(k, kn, "name"))
					dst = &ev->aname;
				else if (keyeq(k, kn, "Addr"))
					dst = &ev->mem_addr;
				break;
			case 5:
				if (keyeq(k, kn, "bytes"))
					dst = &ev->bytes;
				else if (keyeq(k, kn, "Bytes"))
					dst = &ev->mem_bytes;
				break;
			case 3:
				if (keyeq(k, kn, "cid"))
					dst = &ev->cid;
				break;
			case 6:
				if (keyeq(k, kn, "stream"))
					dst = &ev->stream;
				else if (keyeq(k, kn, "device"))
					dst = &ev->device;
				else if (keyeq(k, kn, "labels"))
					dst = NULL;
				break;
			default:
				if (keyeq(k, kn, "correlation"))
					dst = &ev->correlation;
				else if (keyeq(k, kn, "cbid"))
					dst = &ev->cbid;
				else if (keyeq(k, kn, "registers per thread"))
					dst = &ev->regs;
				else if (keyeq(k, kn, "shared memory"))
					dst = &ev->shmem;
				else if (keyeq(k, kn, "cuda_sync_kind"))
					dst = &ev->sync_kind;
				else if (keyeq(k, kn, "Device Type"))
					dst = &ev->mem_dtype;
				else if (keyeq(k, kn, "Device Id"))
					dst = &ev->mem_did;
				else if (keyeq(k, kn, "Total Allocated"))
					dst = &ev->mem_talloc;
				else if (keyeq(k, kn, "Total Reserved"))
					dst = &ev->mem_tres;
				else if (keyeq(k, kn, "wait_on_cuda_event_id"))
					dst = &ev->event_id;
				else if (keyeq(k, kn, "graph id") || keyeq(k, kn, "graph node id") ||
					 keyeq(k, kn, "graphId") || keyeq(k, kn, "graph_id"))
					ev->graph = true;
				break;
			}
			if (dst)
				*dst = v;
		}
	}
	if (rc < 0)
		return false;
	j->depth--;
	return true;
}

/*
 * Parses one traceEvents element at j->p, leaving j->p after it; false =
 * invalid JSON or the end of the text came first.  Wrong types set ev->bad.
 */
static bool parse_object(struct kt_jp *j, struct kev *ev)
{
	memset(ev, 0, offsetof(struct kev, badbuf));
	isc_kjson_ws(j);
	if (j->p >= j->e || *j->p != '{') {
		struct kt_jv v;
		ev->bad = "not an object";
		return isc_kjson_value(j, &v);
	}
	unsigned st = 0;
	char *key;
	size_t kn;
	int rc;
	j->depth = 1;
	while ((rc = isc_kjson_member(j, &st, &key, &kn)) == 1) {
		struct kt_jv v, *dst = NULL;
		if (kn == 4 && keyeq(key, kn, "args") && j->p < j->e && *j->p == '{') {
			if (!parse_args(j, ev))
				return false;
		} else {
			if (!isc_kjson_value(j, &v))
				return false;
			uint8_t want = 0; /* 0: string or number */
			if (keyeq(key, kn, "ph"))
				dst = &ev->ph, want = J_STR;
			else if (keyeq(key, kn, "cat"))
				dst = &ev->cat, want = J_STR;
			else if (keyeq(key, kn, "name"))
				dst = &ev->name, want = J_STR;
			else if (keyeq(key, kn, "ts"))
				dst = &ev->ts, want = J_NUM;
			else if (keyeq(key, kn, "dur"))
				dst = &ev->dur, want = J_NUM;
			else if (keyeq(key, kn, "pid"))
				dst = &ev->pid;
			else if (keyeq(key, kn, "tid"))
				dst = &ev->tid;
			else if (keyeq(key, kn, "args"))
				ev->bad = "\"args\" is not an object";
			if (dst) {
				static const char *tn[] = { "absent", "a string", "a number", "a literal", "an array", "an object" };
				if ((want && v.t != want) || (!want && v.t != J_STR && v.t != J_NUM)) {
					snprintf(ev->badbuf, sizeof(ev->badbuf), "\"%.*s\" is %s, not %s", (int)kn, key,
						 tn[v.t], want == J_STR ? "a string" : want == J_NUM ? "a number"
								     : "a number or a string");
					ev->bad = ev->badbuf;
				}
				*dst = v;
			}
		}
	}
	return rc == 0;
}

/* A whole captured element (unescaped in place). */
static bool parse_event(struct kin *k, char *b, size_t n, struct kev *ev)
{
	struct kt_jp j = { b, b + n, 0, k->max_depth, NULL, 0 };
	if (!parse_object(&j, ev))
		return false;
	isc_kjson_ws(&j);
	return j.p == j.e;
}

/* ---- converting fields ------------------------------------------------- */

/* A pid or tid: integers wrap to 32 bits (Kineto writes truncated pthread ids), other text is hashed. */
static bool id32(const struct kt_jv *v, uint32_t *out)
{
	int64_t x;
	bool inexact;
	*out = 0;
	if (v->t == J_NONE)
		return true;
	if (v->t == J_NUM || (v->n && ((v->s[0] >= '0' && v->s[0] <= '9') || v->s[0] == '-'))) {
		int rc = isc_kjson_dec(v->s, v->n, 0, &x, &inexact);
		if (rc == -ERANGE || (!rc && inexact))
			return false;
		if (!rc) {
			*out = x >= INT32_MIN && x <= (int64_t)UINT32_MAX ? (uint32_t)x : (uint32_t)(x ^ (x >> 32));
			return true;
		}
		if (v->t == J_NUM)
			return false;
	}
	uint32_t h = 2166136261u; /* FNV-1a of a name such as "stream 7" */
	for (size_t i = 0; i < v->n; i++)
		h = (h ^ (uint8_t)v->s[i]) * 16777619u;
	*out = h | 0x80000000u;
	return true;
}

/* An optional unsigned argument; absent, non-numeric or out of range -> dflt. */
static uint64_t arg_u64(const struct kt_jv *v, uint64_t dflt)
{
	int64_t x;
	bool inexact;
	if ((v->t != J_NUM && v->t != J_STR) || !v->n || isc_kjson_dec(v->s, v->n, 0, &x, &inexact) || x < 0)
		return dflt;
	return (uint64_t)x;
}

/* A numeric argument that does not fit 64 bits (then the event is bad, not the number 0). */
static bool too_big(const struct kt_jv *v)
{
	int64_t x;
	bool inexact;
	return v->t == J_NUM && isc_kjson_dec(v->s, v->n, 0, &x, &inexact) == -ERANGE;
}

/* A device or stream argument: like a tid, -1 ("all streams": context and device syncs) wraps to 2^32 - 1. */
static uint32_t arg_u32(const struct kt_jv *v, uint32_t dflt)
{
	uint32_t x;
	if (v->t != J_NUM || !id32(v, &x))
		return dflt;
	return x;
}

static bool cat_is(const struct kt_jv *c, const char *lit)
{
	return c->t == J_STR && strlen(lit) == c->n && !strncasecmp(c->s, lit, c->n);
}

static const struct catmap {
	const char *cat;
	uint8_t type, kind;
} cats[] = { /* case-insensitive: legacy files write "Kernel", "Runtime", "Operator" */
	{ "kernel", IT_GPU_OP, ISC_GPU_KERNEL },
	{ "gpu_memcpy", IT_GPU_OP, ISC_GPU_MEMCPY },
	{ "memcpy", IT_GPU_OP, ISC_GPU_MEMCPY },
	{ "gpu_memset", IT_GPU_OP, ISC_GPU_MEMSET },
	{ "memset", IT_GPU_OP, ISC_GPU_MEMSET },
	{ "cuda_sync", IT_GPU_OP, ISC_GPU_SYNC },
	{ "gpu_user_annotation", IT_GPU_OP, ISC_GPU_OTHER },
	{ "cuda_runtime", IT_GPU_API, 1 },
	{ "runtime", IT_GPU_API, 1 },
	{ "hip_runtime", IT_GPU_API, 1 },
	{ "cuda_driver", IT_GPU_API, 2 },
	{ "driver", IT_GPU_API, 2 },
	{ "hip_driver", IT_GPU_API, 2 },
	{ "cpu_op", IT_SPAN, ISC_SPAN_OP },
	{ "operator", IT_SPAN, ISC_SPAN_OP },
	{ "user_annotation", IT_SPAN, ISC_SPAN_SCOPE },
	{ "python_function", IT_SPAN, ISC_SPAN_PYTHON },
	{ "python", IT_SPAN, ISC_SPAN_PYTHON },
	{ "trace", 0, 0 }, /* the profiler's own span: skipped */
};

/*
 * The names torch.profiler gives its own record_function ranges:
 * "ProfilerStep#N", "enumerate(DataLoader)#...", "Optimizer.step#SGD.step",
 * "Optimizer.zero_grad#...".  Newer files put them under "user_annotation";
 * legacy ones (PyTorch 1.8-1.9) under "Operator", where they would pass for
 * ops.
 */
static bool record_function_name(const char *s, size_t n)
{
	static const char *const pre[] = { "ProfilerStep#", "enumerate(DataLoader)", "Optimizer." };
	for (size_t i = 0; i < sizeof(pre) / sizeof(pre[0]); i++) {
		size_t m = strlen(pre[i]);
		if (n >= m && !memcmp(s, pre[i], m) && (i != 2 || memchr(s, '#', n)))
			return true;
	}
	return false;
}

/* "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync", "Device Sync" */
static uint8_t sync_kind(const char *s, size_t n)
{
	if (memmem(s, n, "Wait Event", 10))
		return ISC_SYNC_STREAM_WAIT_EVENT;
	if (memmem(s, n, "Event", 5))
		return ISC_SYNC_EVENT;
	if (memmem(s, n, "Stream", 6))
		return ISC_SYNC_STREAM;
	if (memmem(s, n, "Context", 7) || memmem(s, n, "Device", 6))
		return ISC_SYNC_CONTEXT;
	return ISC_SYNC_UNKNOWN;
}

/* "Memcpy HtoD (Pageable -> Device)", "Memset (Device)" */
static void copy_kinds(const char *s, size_t n, struct kt_item *it)
{
	static const char *dirs[] = { NULL, "HtoD", "DtoH", "DtoD", "HtoH", "PtoP" };
	static const struct { const char *w; uint8_t k; } mems[] = {
		{ "Pageable", ISC_MEM_PAGEABLE }, { "Pinned", ISC_MEM_PINNED },
		{ "Device", ISC_MEM_DEVICE }, { "Managed", ISC_MEM_MANAGED },
	};
	for (uint8_t d = 1; d < 6; d++)
		if (memmem(s, n, dirs[d], 4))
			it->copy_kind = d;
	const char *lp = memchr(s, '(', n);
	if (!lp)
		return;
	size_t rest = n - (size_t)(lp - s);
	const char *arrow = memmem(lp, rest, "->", 2);
	for (size_t i = 0; i < sizeof(mems) / sizeof(mems[0]); i++) {
		size_t l = strlen(mems[i].w);
		const char *at = memmem(lp, rest, mems[i].w, l);
		if (!at)
			continue;
		if (arrow && at < arrow)
			it->src_mem = mems[i].k;
		else if (arrow || it->kind == ISC_GPU_MEMSET)
			it->dst_mem = mems[i].k;
		const char *at2 = memmem(at + l, rest - (size_t)(at + l - lp), mems[i].w, l);
		if (at2 && arrow && at2 > arrow) /* "Device -> Device" */
			it->dst_mem = mems[i].k;
	}
}

/* ---- strings ------------------------------------------------------------ */

/*
 * Interns (kind, line, name, file) like the merge does: dense ids from 1
 * in order of first appearance, deduplicated by content.  The caller has
 * replaced NULs by '?' (names come from JSON, where \u0000 is legal).
 */
static int intern(struct kin *k, uint8_t kind, uint32_t line, const char *name, size_t nl, const char *file,
		  size_t fl, uint32_t *id)
{
	int rc = isc_strtab_intern(&k->st, kind, line, name, nl, file, fl, id);
	return rc < 0 ? rc : 0;
}

/* "torch/nn/modules/module.py(1501): _call_impl" -> name, file, line */
static int intern_python(struct kin *k, const char *s, size_t n, uint32_t *id)
{
	const char *colon = memmem(s, n, "): ", 3);
	if (colon) {
		const char *lp = colon;
		while (lp > s && lp[-1] >= '0' && lp[-1] <= '9')
			lp--;
		if (lp > s && lp < colon && lp[-1] == '(' && colon - lp <= 9) {
			uint32_t line = 0;
			for (const char *p = lp; p < colon; p++)
				line = line * 10 + (uint32_t)(*p - '0');
			return intern(k, ISC_STR_CODE, line, colon + 3, n - (size_t)(colon + 3 - s), s,
				      (size_t)(lp - 1 - s), id);
		}
	}
	return intern(k, ISC_STR_CODE, 0, s, n, "", 0, id);
}

/* ---- the sort ---------------------------------------------------------- */

/* Keeps the earliest time for the header's epoch, then hands the item to the sort. */
static int push_item(struct kin *k, struct kt_item *it)
{
	if (!k->have_min || it->ts < k->min_ts) {
		k->min_ts = it->ts;
		k->have_min = true;
	}
	return isc_ksort_push(&k->sort, it);
}

/* ---- mapping one event ------------------------------------------------- */

static char *dup_n(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static int on_meta(struct kin *k, struct kev *ev)
{
	uint32_t pid, tid;
	k->res->metadata++;
	if (ev->name.t != J_STR || ev->aname.t != J_STR)
		return 0; /* sort indexes, labels */
	bool proc = keyeq(ev->name.s, ev->name.n, "process_name");
	if (!proc && !keyeq(ev->name.s, ev->name.n, "thread_name"))
		return 0;
	if (!id32(&ev->pid, &pid) || !id32(&ev->tid, &tid))
		return 0;
	size_t n = ev->aname.n;
	while (n && ev->aname.s[n - 1] == ' ') /* "stream 7 " */
		n--;
	char *name = dup_n(ev->aname.s, n);
	uint32_t *slot;
	if (!name || isc_grow(&k->names, &k->capnames, k->nnames, sizeof(*k->names)) ||
	    isc_umap_slot(proc ? &k->pnames : &k->tnames, proc ? pid : (uint64_t)pid << 32 | tid, &slot)) {
		free(name);
		return -ENOMEM;
	}
	if (*slot == ISC_UMAP_NONE) /* a new pid or thread; else the later name replaces the earlier */
		*slot = (uint32_t)k->nnames++;
	else
		free(k->names[*slot]);
	k->names[*slot] = name;
	return 0;
}

/* The process or thread name of key in map (pnames, tnames), NULL when none. */
static const char *name_of(const struct kin *k, const struct isc_umap *map, uint64_t key)
{
	uint32_t i = isc_umap_get(map, key);
	return i == ISC_UMAP_NONE ? NULL : k->names[i];
}

static void bad_event(struct kin *k, const char *why)
{
	k->res->bad_events++;
	if (!k->bad_first_idx)
		k->bad_first_idx = k->res->events_in;
	damage(k, "event #%llu: %s", (unsigned long long)k->res->events_in, why);
}

/* A time field (µs text) to ns, rounded once below 1 ns; false with the reason in *why. */
static bool time_ns(const struct kt_jv *v, const char *field, int64_t *ns, const char **why)
{
	bool inexact;
	if (isc_kjson_dec(v->s, v->n, 3, ns, &inexact)) {
		*why = field[0] == 't' ? "\"ts\" out of range" : "\"dur\" out of range";
		return false;
	}
	return true;
}

static int count_pid(struct kin *k, uint32_t pid)
{
	uint32_t i = isc_umap_get(&k->pid_events, pid), *slot;
	if (i == ISC_UMAP_NONE) {
		if (isc_grow(&k->cpu_items, &k->capcpu_items, k->ncpu_items, sizeof(*k->cpu_items)) ||
		    isc_umap_slot(&k->pid_events, pid, &slot))
			return -ENOMEM;
		*slot = i = (uint32_t)k->ncpu_items++;
		k->cpu_items[i] = 0;
	}
	k->cpu_items[i]++;
	return 0;
}

static int on_event(struct kin *k, struct kev *ev)
{
	struct kt_item it;
	const char *why = NULL;
	int rc;
	if (ev->ph.t != J_STR || ev->ph.n != 1) {
		bad_event(k, ev->ph.t == J_NONE ? "no \"ph\"" : "\"ph\" is not a one-letter string");
		return 0;
	}
	char ph = ev->ph.s[0];
	if (ph == 'M')
		return on_meta(k, ev);
	if (ph == 's' || ph == 'f' || ph == 't') {
		k->res->flows++;
		return 0;
	}
	const struct catmap *cm = NULL;
	if (ph == 'X') {
		for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]) && !cm && ev->cat.t == J_STR; i++)
			if (ev->cat.n == strlen(cats[i].cat) && cat_is(&ev->cat, cats[i].cat))
				cm = &cats[i];
		if (!cm) {
			k->res->unknown++;
			return 0;
		}
		if (!cm->type) {
			k->res->skipped++;
			return 0;
		}
	} else if (ph == 'i' || ph == 'I') {
		if (ev->name.t != J_STR || !keyeq(ev->name.s, ev->name.n, "[memory]")) {
			k->res->skipped++; /* global instants: "Iteration Start", "Record Window End" */
			return 0;
		}
	} else {
		k->res->unknown++;
		return 0;
	}
	memset(&it, 0, sizeof(it));
	if (ev->ts.t != J_NUM) {
		bad_event(k, "no \"ts\"");
		return 0;
	}
	if (!time_ns(&ev->ts, "ts", &it.ts, &why))
		goto bad;
	if (ph == 'X') {
		if (ev->dur.t != J_NUM) {
			bad_event(k, "a complete event (ph X) without \"dur\"");
			return 0;
		}
		if (!time_ns(&ev->dur, "dur", &it.dur, &why))
			goto bad;
		if (it.dur < 0) {
			why = "negative \"dur\"";
			goto bad;
		}
		if (it.ts > INT64_MAX - it.dur) {
			why = "\"ts\" + \"dur\" out of range";
			goto bad;
		}
	}
	if (!id32(&ev->pid, &it.pid) || !id32(&ev->tid, &it.tid)) {
		why = "\"pid\" or \"tid\" out of range";
		goto bad;
	}
	const char *name = ev->name.t == J_STR ? ev->name.s : "";
	size_t nl = ev->name.t == J_STR ? ev->name.n : 0;
	for (size_t i = 0; i < nl; i++)
		if (!ev->name.s[i])
			ev->name.s[i] = '?';
	if (ph != 'X') { /* [memory] */
		it.type = IT_MARK;
		if (ev->mem_bytes.t == J_NUM) {
			bool inexact;
			if (isc_kjson_dec(ev->mem_bytes.s, ev->mem_bytes.n, 0, &it.value, &inexact)) {
				why = "\"Bytes\" out of range";
				goto bad;
			}
		}
		/* CUDA device memory (Device Type 1, a device id): also a GPU_MEMORY record */
		int64_t dtype, did;
		bool inexact;
		if (ev->mem_dtype.t == J_NUM && ev->mem_did.t == J_NUM &&
		    !isc_kjson_dec(ev->mem_dtype.s, ev->mem_dtype.n, 0, &dtype, &inexact) && dtype == 1 &&
		    !isc_kjson_dec(ev->mem_did.s, ev->mem_did.n, 0, &did, &inexact) && did >= 0 && did <= UINT32_MAX &&
		    it.value != 0 && it.value != INT64_MIN) {
			int64_t addr;
			it.kind = 1;
			it.device = (uint32_t)did;
			if (ev->mem_addr.t == J_NUM && !isc_kjson_dec(ev->mem_addr.s, ev->mem_addr.n, 0, &addr, &inexact) &&
			    addr > 0 && !inexact)
				it.correlation = (uint64_t)addr;
			/* the caching allocator's totals after this event, when both are exact and >= 0 */
			int64_t ta, tr;
			bool ia, ir;
			if (ev->mem_talloc.t == J_NUM && ev->mem_tres.t == J_NUM &&
			    !isc_kjson_dec(ev->mem_talloc.s, ev->mem_talloc.n, 0, &ta, &ia) &&
			    !isc_kjson_dec(ev->mem_tres.s, ev->mem_tres.n, 0, &tr, &ir) && !ia && !ir && ta >= 0 &&
			    tr >= 0) {
				it.flags = 1;
				it.total[0] = (uint64_t)ta;
				it.total[1] = (uint64_t)tr;
			}
			k->res->gpu_memory++;
		}
		if ((rc = intern(k, ISC_STR_MARK, 0, name, nl, "", 0, &it.name_id)))
			return rc;
		k->res->marks++;
		return push_item(k, &it);
	}
	it.type = cm->type;
	it.kind = cm->kind;
	if (it.kind == ISC_SPAN_OP && record_function_name(name, nl))
		it.kind = ISC_SPAN_SCOPE; /* legacy files file annotations under "Operator" */
	if (cm->type == IT_SPAN) {
		if (cm->kind == ISC_SPAN_PYTHON)
			rc = intern_python(k, name, nl, &it.name_id);
		else
			rc = intern(k, it.kind == ISC_SPAN_SCOPE ? ISC_STR_SCOPE : ISC_STR_CFUNC, 0, name, nl, "", 0,
				    &it.name_id);
		if (rc)
			return rc;
		if (it.kind == ISC_SPAN_OP)
			k->res->cpu_ops++;
		else if (it.kind == ISC_SPAN_PYTHON)
			k->res->python_functions++;
		else
			k->res->annotations++;
		if ((rc = count_pid(k, it.pid)))
			return rc;
		return push_item(k, &it);
	}
	if (too_big(&ev->correlation) || too_big(&ev->bytes)) {
		why = "\"correlation\" or \"bytes\" out of range";
		goto bad;
	}
	if ((rc = intern(k, ISC_STR_CFUNC, 0, name, nl, "", 0, &it.name_id)))
		return rc;
	it.correlation = arg_u64(&ev->correlation, 0);
	if (cm->type == IT_GPU_API) {
		it.cbid = (uint32_t)arg_u64(ev->cbid.t ? &ev->cbid : &ev->cid, 0);
		k->res->api_calls++;
		if (cm->kind == 1)
			k->res->runtime_calls++;
		else
			k->res->driver_calls++;
		if ((rc = count_pid(k, it.pid)))
			return rc;
		return push_item(k, &it);
	}
	/* a GPU operation: context 0/0, the device and stream in the record */
	it.device = arg_u32(&ev->device, it.pid);
	it.stream = arg_u32(&ev->stream, ev->tid.t == J_NUM ? it.tid : 0);
	if (ev->stream.t == J_NUM && ev->stream.s[0] == '-') { /* -1: context and device syncs */
		it.stream = ISC_GPU_NONE;
		it.flags |= ISC_GPU_FLAG_NO_STREAM;
	}
	it.pid = it.tid = 0;
	it.value = (int64_t)arg_u64(&ev->bytes, 0);
	if (ev->graph)
		it.flags |= ISC_GPU_FLAG_GRAPH;
	if (cm->kind == ISC_GPU_OTHER)
		it.flags |= ISC_GPU_FLAG_ANNOTATION;
	if (cm->kind == ISC_GPU_MEMCPY || cm->kind == ISC_GPU_MEMSET)
		copy_kinds(name, nl, &it);
	if (cm->kind == ISC_GPU_SYNC) { /* copy_kind: the sync type; bytes: the event waited for */
		const struct kt_jv *sk = ev->sync_kind.t == J_STR ? &ev->sync_kind : &ev->name;
		it.copy_kind = sync_kind(sk->t == J_STR ? sk->s : "", sk->t == J_STR ? sk->n : 0);
		it.value = (int64_t)arg_u64(&ev->event_id, 0);
	}
	if (ev->have_grid && ev->have_block) {
		it.has_launch = 1;
		memcpy(it.launch, ev->grid, sizeof(ev->grid));
		memcpy(it.launch + 3, ev->block, sizeof(ev->block));
		it.launch[6] = (uint32_t)arg_u64(&ev->regs, 0);
		it.launch[7] = (uint32_t)arg_u64(&ev->shmem, 0);
	}
	switch (cm->kind) {
	case ISC_GPU_KERNEL: k->res->kernels++; break;
	case ISC_GPU_MEMCPY: k->res->memcpys++; break;
	case ISC_GPU_MEMSET: k->res->memsets++; break;
	case ISC_GPU_SYNC: k->res->syncs++; break;
	default: k->res->gpu_annotations++; break;
	}
	if (cm->kind != ISC_GPU_OTHER)
		k->res->gpu_ops++;
	return push_item(k, &it);
bad:
	bad_event(k, why);
	return 0;
}

/* ---- the streaming scanner ---------------------------------------------- */

static int peekc(struct kin *k)
{
	struct kt_src *s = &k->src;
	if (s->pos == s->len && isc_ksrc_more(s) <= 0)
		return -1;
	return s->buf[s->pos];
}

static int skip_ws(struct kin *k)
{
	int c;
	while ((c = peekc(k)) == ' ' || c == '\n' || c == '\r' || c == '\t')
		k->src.pos++;
	return c;
}

/* The reason the input ended: I/O error, gzip damage or plain truncation. */
static int ended(struct kin *k, const char *where)
{
	if (k->src.err) {
		isc_err_push("Failed to read: %s", strerror(-k->src.err));
		return k->src.err;
	}
	if (k->src.gz_bad)
		damage(k, "corrupt gzip data after byte %llu of JSON text %s", (unsigned long long)text_offset(k), where);
	else if (k->src.gz_trunc)
		damage(k, "truncated gzip data after byte %llu of JSON text %s", (unsigned long long)text_offset(k), where);
	else
		damage(k, "truncated JSON at byte %llu %s", (unsigned long long)text_offset(k), where);
	k->stop = true;
	return 0;
}

static int syntax(struct kin *k, const char *what, const char *where)
{
	damage(k, "invalid JSON at byte %llu %s: %s", (unsigned long long)text_offset(k), where, what);
	k->stop = true;
	return 0;
}

enum { CAP_OK, CAP_DEEP = 1, CAP_BIG = 2 };

/*
 * Copies the JSON value at the cursor into out (NULL: skip it) and
 * consumes it.  Only the bracket structure is followed (strings and
 * escapes respected, depth counted, no recursion); a value deeper than
 * max_depth or longer than VALUE_MAX is consumed but not kept (*flags).
 * 1 = a value, 0 = the input ended or is not a value (damage set), <0 I/O.
 */
static int capture(struct kin *k, struct isc_buf *out, unsigned *flags, const char *where)
{
	struct kt_src *s = &k->src;
	uint64_t depth = 0;
	bool in_str = false, esc = false, scalar;
	int c = skip_ws(k);
	*flags = CAP_OK;
	if (out)
		out->len = 0;
	if (c < 0)
		return ended(k, where);
	if (c == '{' || c == '[' || c == '"')
		scalar = false;
	else if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n')
		scalar = true;
	else
		return syntax(k, "expected a value", where);
	for (;;) {
		if (s->pos == s->len && isc_ksrc_more(s) <= 0) {
			if (scalar && !s->err)
				return 1; /* a number at the very end: the caller finds the missing bracket */
			return ended(k, where);
		}
		const uint8_t *p = s->buf + s->pos, *e = s->buf + s->len, *q = p;
		bool done = false;
		if (scalar) {
			while (q < e && ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') || *q == '.' || *q == '-' ||
					 *q == '+' || *q == 'E'))
				q++;
			done = q < e;
		} else {
			for (; q < e; q++) {
				uint8_t ch = *q;
				if (in_str) {
					if (esc)
						esc = false;
					else if (ch == '\\')
						esc = true;
					else if (ch == '"')
						in_str = false;
					if (!in_str && depth == 0) {
						q++;
						done = true;
						break;
					}
					continue;
				}
				if (ch == '"') {
					in_str = true;
				} else if (ch == '{' || ch == '[') {
					if (++depth > k->max_depth)
						*flags |= CAP_DEEP;
				} else if (ch == '}' || ch == ']') {
					if (depth == 0 || --depth == 0) {
						q++;
						done = true;
						break;
					}
				}
			}
		}
		size_t n = (size_t)(q - p);
		if (out && !*flags) {
			if (out->len + n > VALUE_MAX)
				*flags |= CAP_BIG;
			else if (isc_buf_put(out, p, n))
				return -ENOMEM;
		}
		s->pos += n;
		if (done)
			return 1;
	}
}

/* A key string at the cursor (consumed); at most cap-1 bytes kept, raw. */
static int read_key(struct kin *k, char *key, size_t cap, const char *where)
{
	size_t n = 0;
	bool esc = false;
	if (skip_ws(k) != '"')
		return peekc(k) < 0 ? ended(k, where) : syntax(k, "expected a key", where);
	k->src.pos++;
	for (;;) {
		int c = peekc(k);
		if (c < 0)
			return ended(k, where);
		k->src.pos++;
		if (esc) {
			esc = false;
		} else if (c == '\\') {
			esc = true;
			continue;
		} else if (c == '"') {
			key[n] = '\0';
			return 1;
		}
		if (n + 1 < cap)
			key[n++] = (char)c;
	}
}

static void add_meta(struct kin *k, const char *key, const char *val, size_t vlen)
{
	if (k->nmetas == META_MAX || vlen > META_VALUE_MAX)
		return;
	char *kk = strdup(key), *vv = dup_n(val, vlen);
	if (!kk || !vv) {
		free(kk);
		free(vv);
		return;
	}
	k->metas[k->nmetas++] = (struct meta){ kk, vv };
}

static void on_devices(struct kin *k, const char *text, size_t n)
{
	cJSON *a = cJSON_ParseWithLength(text, n), *d, *arr = cJSON_IsArray(a) ? a : NULL;
	cJSON_ArrayForEach(d, arr)
	{
		const cJSON *f[6] = { cJSON_GetObjectItemCaseSensitive(d, "id"),
				      cJSON_GetObjectItemCaseSensitive(d, "numSms"),
				      cJSON_GetObjectItemCaseSensitive(d, "totalGlobalMem"),
				      cJSON_GetObjectItemCaseSensitive(d, "computeMajor"),
				      cJSON_GetObjectItemCaseSensitive(d, "computeMinor"),
				      cJSON_GetObjectItemCaseSensitive(d, "name") };
		struct dev v = { 0 };
		uint64_t *dst[5] = { &v.id, &v.sms, &v.mem, &v.major, &v.minor };
		if (!cJSON_IsNumber(f[0]))
			continue;
		for (int i = 0; i < 5; i++) /* exact for integers below 2^53, as every value here is */
			if (cJSON_IsNumber(f[i]) && f[i]->valuedouble >= 0 && f[i]->valuedouble < 1.8e19)
				*dst[i] = (uint64_t)f[i]->valuedouble;
		if (isc_grow(&k->devs, &k->capdevs, k->ndevs, sizeof(*k->devs)))
			break;
		v.name = strdup(cJSON_IsString(f[5]) ? f[5]->valuestring : "");
		if (!v.name)
			break;
		k->devs[k->ndevs++] = v;
	}
	cJSON_Delete(a);
}

static void on_distributed(struct kin *k, const char *text, size_t n)
{
	cJSON *o = cJSON_ParseWithLength(text, n);
	if (!cJSON_IsObject(o)) {
		cJSON_Delete(o);
		return;
	}
	char *flat = cJSON_PrintUnformatted(o);
	if (flat)
		add_meta(k, "distributedInfo", flat, strlen(flat));
	free(flat);
	static const char *keys[] = { "rank", "world_size", "backend" };
	for (int i = 0; i < 3; i++) {
		const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
		char num[32];
		if (cJSON_IsNumber(v)) {
			snprintf(num, sizeof(num), "%.0f", v->valuedouble);
			add_meta(k, keys[i], num, strlen(num));
		} else if (cJSON_IsString(v)) {
			add_meta(k, keys[i], v->valuestring, strlen(v->valuestring));
		}
	}
	cJSON_Delete(o);
}

/* A top-level member other than traceEvents, captured in k->val. */
static void on_top(struct kin *k, const char *key)
{
	char *t = (char *)k->val.data;
	size_t n = k->val.len;
	if (!n)
		return;
	if (!strcmp(key, "baseTimeNanoseconds")) {
		bool inexact;
		int64_t v;
		if (!isc_kjson_dec(t, n, 0, &v, &inexact) && !inexact) {
			k->base_ns = v;
			k->have_base = true;
		}
	} else if (!strcmp(key, "deviceProperties")) {
		on_devices(k, t, n);
	} else if (!strcmp(key, "distributedInfo")) {
		on_distributed(k, t, n);
	} else if (t[0] == '"' && n >= 2) { /* other scalars: kept as metadata */
		struct kt_jp j = { t, t + n, 0, 1, NULL, 0 };
		char *s;
		size_t sl;
		char mk[300];
		if (isc_kjson_str(&j, &s, &sl)) {
			snprintf(mk, sizeof(mk), "kineto.%s", key);
			add_meta(k, mk, s, sl);
		}
	} else if (t[0] != '{' && t[0] != '[') {
		char mk[300];
		snprintf(mk, sizeof(mk), "kineto.%s", key);
		add_meta(k, mk, t, n);
	}
}

/* The traceEvents array, element by element. */
static int read_events(struct kin *k)
{
	const char *where = "in traceEvents";
	int c = skip_ws(k), rc;
	if (c < 0)
		return ended(k, where);
	if (c != '[') {
		isc_err_push("not a Kineto trace: traceEvents is not an array");
		return -EBADMSG;
	}
	k->have_events = true;
	k->src.pos++;
	if ((c = skip_ws(k)) == ']') {
		k->src.pos++;
		return 0;
	}
	for (;;) {
		unsigned flags = 0;
		struct kev ev;
		struct kt_src *s = &k->src;
		bool parsed = false;
		/* fast path: the element parsed in place in a window of at least WINDOW bytes */
		if (skip_ws(k) == '{') {
			while (s->len - s->pos < WINDOW && !s->eof)
				if (isc_ksrc_more(s) <= 0)
					break;
			struct kt_jp j = { (char *)s->buf + s->pos, (char *)s->buf + s->len, 0, k->max_depth, k->arena, 0 };
			if ((parsed = parse_object(&j, &ev)))
				s->pos = (size_t)((uint8_t *)j.p - s->buf);
		}
		/* else (larger, deeper, invalid, or not an object): copied with limits, then parsed */
		if (!parsed && (rc = capture(k, &k->val, &flags, where)) <= 0)
			return rc;
		k->res->events_in++;
		if (parsed) {
			if (ev.bad)
				bad_event(k, ev.bad);
			else if ((rc = on_event(k, &ev)))
				return rc;
		} else if (flags & CAP_DEEP) {
			char why[64];
			snprintf(why, sizeof(why), "nested deeper than %u levels", k->max_depth);
			bad_event(k, why);
		} else if (flags & CAP_BIG) {
			bad_event(k, "larger than 16 MiB");
		} else if (!parse_event(k, (char *)k->val.data, k->val.len, &ev)) {
			bad_event(k, "invalid JSON");
		} else if (ev.bad) {
			bad_event(k, ev.bad);
		} else if ((rc = on_event(k, &ev))) {
			return rc;
		}
		c = skip_ws(k);
		if (c == ',') {
			k->src.pos++;
			continue;
		}
		if (c == ']') {
			k->src.pos++;
			return 0;
		}
		return c < 0 ? ended(k, where) : syntax(k, "expected ',' or ']' after an event", where);
	}
}

/* The whole input: the top-level object. */
static int read_input(struct kin *k)
{
	const char *where = "at the top level";
	char key[256];
	int c = skip_ws(k), rc;
	if (c != '{') {
		if (k->src.err)
			return ended(k, where);
		isc_err_push(c < 0 ? (k->src.gz ? "empty or damaged gzip stream" : "empty input")
				   : "not a Kineto trace: not a JSON object");
		return -EBADMSG;
	}
	k->src.pos++;
	if (skip_ws(k) == '}') {
		k->src.pos++;
		return 0;
	}
	for (;;) {
		unsigned flags;
		if ((rc = read_key(k, key, sizeof(key), where)) <= 0)
			return rc;
		if ((c = skip_ws(k)) != ':')
			return c < 0 ? ended(k, where) : syntax(k, "expected ':'", where);
		k->src.pos++;
		if (!strcmp(key, "traceEvents")) {
			if ((rc = read_events(k)) < 0 || k->stop)
				return rc;
		} else {
			bool keep = strcmp(key, "INFO") != 0;
			if ((rc = capture(k, keep ? &k->val : NULL, &flags, where)) <= 0)
				return rc;
			if (keep && !flags)
				on_top(k, key);
		}
		c = skip_ws(k);
		if (c == ',') {
			k->src.pos++;
			continue;
		}
		if (c == '}') {
			k->src.pos++;
			break;
		}
		return c < 0 ? ended(k, where) : syntax(k, "expected ',' or '}'", where);
	}
	if (skip_ws(k) >= 0)
		damage(k, "data after the JSON object at byte %llu", (unsigned long long)text_offset(k));
	else if (k->src.err)
		return ended(k, where);
	else if (k->src.gz_bad || k->src.gz_trunc)
		ended(k, "after the JSON object");
	return 0;
}

/* ---- output --------------------------------------------------------------- */

static int emit(struct kin *k, struct isc_tl_event *ev)
{
	if (ev->ts >= ISC_TL_TIME_LIMIT || ((ev->type == ISC_REC_GPU_OP || ev->type == ISC_REC_GPU_API) &&
					    ev->gpu.dur_ns >= ISC_TL_TIME_LIMIT)) {
		k->res->bad_events++; /* a timeline cannot hold it (formats/timeline.md §4) */
		return 0;
	}
	int rc = k->sink->event(k->sink->ctx, ev);
	k->res->events_out++;
	return rc;
}

static uint64_t out_ts(const struct kin *k, int64_t ts)
{
	return (uint64_t)ts - (uint64_t)k->min_ts;
}

/* An untimed or pass-through record: body of varints then bytes, as the reader decodes it. */
static int emit_raw(struct kin *k, uint8_t type, uint64_t ts, uint32_t pid, uint32_t tid, const uint64_t *f,
		    unsigned nf, bool lenprefix, const void *bytes, size_t nbytes)
{
	struct isc_tl_event ev;
	int rc = 0;
	k->wbuf.len = 0;
	for (unsigned i = 0; i < nf; i++)
		rc |= isc_buf_put_varint(&k->wbuf, f[i]);
	if (lenprefix)
		rc |= isc_buf_put_varint(&k->wbuf, nbytes);
	size_t boff = k->wbuf.len;
	rc |= isc_buf_put(&k->wbuf, bytes, nbytes);
	if (rc)
		return -ENOMEM;
	memset(&ev, 0, sizeof(ev));
	ev.type = type;
	ev.ts = ts;
	ev.pid = pid;
	ev.tid = tid;
	for (unsigned i = 0; i < nf; i++)
		ev.f[i] = f[i];
	ev.nf = nf;
	ev.raw = k->wbuf.data;
	ev.nraw = k->wbuf.len;
	ev.bytes = k->wbuf.data + boff;
	ev.nbytes = nbytes;
	return emit(k, &ev);
}

/* ends heap: stacks keyed by (end of their innermost span, pid, tid, calls before scopes) */
static int stk_cmp(const struct stk *a, const struct stk *b)
{
	int64_t x = a->v[a->n - 1].end, y = b->v[b->n - 1].end;
	if (x != y)
		return x < y ? -1 : 1;
	if (a->t->pid != b->t->pid)
		return a->t->pid < b->t->pid ? -1 : 1;
	if (a->t->tid != b->t->tid)
		return a->t->tid < b->t->tid ? -1 : 1;
	return (int)a->which - (int)b->which;
}

static void heap_swap(struct kin *k, size_t i, size_t j)
{
	struct stk *t = k->heap[i];
	k->heap[i] = k->heap[j];
	k->heap[j] = t;
	k->heap[i]->hpos = i;
	k->heap[j]->hpos = j;
}

static void heap_fix(struct kin *k, size_t i)
{
	while (i > 0 && stk_cmp(k->heap[i], k->heap[(i - 1) / 2]) < 0) {
		heap_swap(k, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < k->nheap && stk_cmp(k->heap[l], k->heap[m]) < 0)
			m = l;
		if (r < k->nheap && stk_cmp(k->heap[r], k->heap[m]) < 0)
			m = r;
		if (m == i)
			return;
		heap_swap(k, i, m);
		i = m;
	}
}

static void heap_remove(struct kin *k, struct stk *s)
{
	size_t i = s->hpos;
	s->hpos = SIZE_MAX;
	if (i != --k->nheap) {
		k->heap[i] = k->heap[k->nheap];
		k->heap[i]->hpos = i;
		heap_fix(k, i);
	}
}

static struct thr *thread_of(struct kin *k, uint32_t pid, uint32_t tid, int *err)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	uint32_t i = isc_umap_get(&k->threads, key), *slot;
	if (i != ISC_UMAP_NONE)
		return k->thrs[i];
	struct thr *t = calloc(1, sizeof(*t));
	if (!t || isc_grow(&k->thrs, &k->capthrs, k->nthrs, sizeof(*k->thrs)) ||
	    isc_umap_slot(&k->threads, key, &slot)) {
		free(t);
		*err = -ENOMEM;
		return NULL;
	}
	t->pid = pid;
	t->tid = tid;
	for (int j = 0; j < 2; j++)
		t->s[j] = (struct stk){ .t = t, .which = (uint8_t)j, .hpos = SIZE_MAX };
	*slot = (uint32_t)k->nthrs;
	k->thrs[k->nthrs++] = t;
	return t;
}

/* First record of a context: its process's name (PROC_INFO) and its thread's (THREAD_BEGIN). */
static int announce(struct kin *k, struct thr *t, uint64_t ts)
{
	int rc = 0;
	t->announced = true;
	uint32_t *slot;
	if (isc_umap_get(&k->procs, t->pid) == ISC_UMAP_NONE) {
		if (isc_umap_slot(&k->procs, t->pid, &slot))
			return -ENOMEM;
		*slot = 0;
		const char *pn = name_of(k, &k->pnames, t->pid);
		uint64_t f[2] = { t->pid, 0 };
		if (pn && (rc = emit_raw(k, ISC_REC_PROC_INFO, ts, t->pid, 0, f, 2, true, pn, strlen(pn))))
			return rc;
	}
	const char *tn = name_of(k, &k->tnames, (uint64_t)t->pid << 32 | t->tid);
	if (!rc && tn && t->tid)
		rc = emit_raw(k, ISC_REC_THREAD_BEGIN, ts, t->pid, t->tid, NULL, 0, false, tn, strlen(tn));
	return rc;
}

static int end_span(struct kin *k, struct stk *s)
{
	struct ospan *o = &s->v[--s->n];
	struct isc_tl_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = ISC_REC_TL_SPAN_END;
	ev.ts = out_ts(k, o->end);
	ev.pid = s->t->pid;
	ev.tid = s->t->tid;
	ev.span_id = o->id;
	ev.name_id = o->name_id;
	ev.kind = o->kind;
	if (s->n)
		heap_fix(k, s->hpos);
	else
		heap_remove(k, s);
	return emit(k, &ev);
}

static int begin_span(struct kin *k, struct thr *t, const struct kt_item *it)
{
	struct stk *s = &t->s[it->kind == ISC_SPAN_SCOPE];
	struct isc_tl_event ev;
	int64_t end = it->ts + it->dur;
	if (isc_grow(&s->v, &s->cap, s->n, sizeof(*s->v)))
		return -ENOMEM;
	if (s->n && end > s->v[s->n - 1].end) { /* overlaps its parent's end: cut */
		end = s->v[s->n - 1].end;
		k->res->clamped++;
	}
	memset(&ev, 0, sizeof(ev));
	ev.type = ISC_REC_TL_SPAN_BEGIN;
	ev.ts = out_ts(k, it->ts);
	ev.pid = t->pid;
	ev.tid = t->tid;
	ev.span_id = ++k->next_span;
	ev.parent_id = s->n ? s->v[s->n - 1].id : 0;
	ev.depth = (uint32_t)s->n;
	ev.kind = it->kind;
	ev.name_id = it->name_id;
	s->v[s->n++] = (struct ospan){ end, ev.span_id, it->name_id, it->kind };
	if (s->hpos == SIZE_MAX) {
		if (isc_grow(&k->heap, &k->capheap, k->nheap, sizeof(*k->heap)))
			return -ENOMEM;
		k->heap[k->nheap] = s;
		s->hpos = k->nheap++;
	}
	heap_fix(k, s->hpos);
	return emit(k, &ev);
}

static int emit_item(struct kin *k, const struct kt_item *it)
{
	struct isc_tl_event ev;
	int rc = 0;
	if (it->type != IT_GPU_OP) {
		struct thr *t = thread_of(k, it->pid, it->tid, &rc);
		if (!t)
			return rc;
		if (!t->announced && (rc = announce(k, t, out_ts(k, it->ts))))
			return rc;
		if (it->type == IT_SPAN)
			return begin_span(k, t, it);
	}
	memset(&ev, 0, sizeof(ev));
	ev.ts = out_ts(k, it->ts);
	ev.pid = it->pid;
	ev.tid = it->tid;
	ev.name_id = it->name_id;
	if (it->type == IT_MARK) {
		ev.type = ISC_REC_MARK;
		ev.value = it->value;
		if ((rc = emit(k, &ev)) || it->kind != 1)
			return rc;
		/* device stream op(1 alloc, 2 free) mem_kind bytes address correlation flags
		 * [total_allocated total_reserved] (flags bit 1) */
		uint64_t f[10] = { it->device, 0, it->value > 0 ? 1 : 2, ISC_MEM_DEVICE,
				   it->value > 0 ? (uint64_t)it->value : (uint64_t)-it->value, it->correlation,
				   0, it->flags & 1 ? ISC_GPU_MEM_TOTALS : 0, it->total[0], it->total[1] };
		return emit_raw(k, ISC_REC_GPU_MEMORY, ev.ts, it->pid, 0, f, it->flags & 1 ? 10 : 8, false, NULL, 0);
	}
	struct isc_gpu_fields *g = &ev.gpu;
	ev.type = it->type == IT_GPU_OP ? ISC_REC_GPU_OP : ISC_REC_GPU_API;
	g->kind = it->kind;
	g->dur_ns = (uint64_t)it->dur;
	g->correlation = it->correlation;
	g->cbid = it->cbid;
	g->device = it->device;
	g->stream = it->stream;
	g->bytes = (uint64_t)it->value;
	g->copy_kind = it->copy_kind;
	g->src_mem = it->src_mem;
	g->dst_mem = it->dst_mem;
	g->flags = it->flags;
	if (it->has_launch) {
		g->has_launch = true;
		memcpy(g->grid, it->launch, sizeof(g->grid));
		memcpy(g->block, it->launch + 3, sizeof(g->block));
		g->registers = it->launch[6];
		g->shared_mem = it->launch[7];
	}
	/* raw body too, for sinks that pass records through */
	k->wbuf.len = 0;
	if ((rc = isc_gpu_encode(&k->wbuf, &ev)))
		return rc;
	ev.raw = k->wbuf.data;
	ev.nraw = k->wbuf.len;
	return emit(k, &ev);
}

/*
 * The sorted items (k-way merge of the runs and the in-memory tail),
 * interleaved with the span ends: an end goes first when its (ts, pid,
 * tid) is at or before the item's.
 */
static int emit_all(struct kin *k)
{
	int rc = isc_ksort_begin(&k->sort);
	while (!rc) {
		const struct kt_item *it = isc_ksort_peek(&k->sort, &rc);
		if (rc)
			break;
		struct stk *s = k->nheap ? k->heap[0] : NULL;
		if (!it && !s)
			break;
		if (s) {
			int64_t end = s->v[s->n - 1].end;
			if (!it || end < it->ts ||
			    (end == it->ts && ((uint64_t)s->t->pid << 32 | s->t->tid) <= ((uint64_t)it->pid << 32 | it->tid))) {
				rc = end_span(k, s);
				continue;
			}
		}
		if (!(rc = emit_item(k, it)))
			rc = isc_ksort_next(&k->sort);
	}
	return rc;
}

static int emit_preamble(struct kin *k)
{
	int rc = 0;
	for (size_t i = 0; i < k->ndevs && !rc; i++) {
		const struct dev *d = &k->devs[i];
		uint64_t f[6] = { d->id, d->sms, d->mem, d->major, d->minor, 0 };
		rc = emit_raw(k, ISC_REC_DEVICE, 0, 0, 0, f, 6, false, d->name, strlen(d->name));
	}
	for (size_t i = 0; i < k->nmetas && !rc; i++) {
		const struct meta *m = &k->metas[i];
		size_t kl = strlen(m->key), vl = strlen(m->val);
		char *kv = malloc(kl + vl + 1);
		if (!kv)
			return -ENOMEM;
		memcpy(kv, m->key, kl);
		memcpy(kv + kl, m->val, vl);
		uint64_t f[1] = { kl };
		rc = emit_raw(k, ISC_REC_META, 0, 0, 0, f, 1, false, kv, kl + vl);
		free(kv);
	}
	return rc;
}

static int finish(struct kin *k)
{
	struct isc_tl_header h;
	int rc;
	memset(&h, 0, sizeof(h));
	const char *pn = NULL; /* the command: the name of the named process with most CPU events */
	uint64_t best = 0, pid;
	uint32_t i;
	for (size_t pos = 0; isc_umap_each(&k->pid_events, &pos, &pid, &i);) { /* ties: the first in slot order */
		const char *nm = name_of(k, &k->pnames, pid);
		if (nm && k->cpu_items[i] > best) {
			best = k->cpu_items[i];
			pn = nm;
		}
	}
	snprintf(h.cmdline, sizeof(h.cmdline), "%s", pn ? pn : "");
	h.epoch_realtime_ns = (uint64_t)(k->have_base ? k->base_ns : 0) + (uint64_t)k->min_ts;
	h.recorder_pid = 0;
	if (k->sink->begin && (rc = k->sink->begin(k->sink->ctx, &h)))
		return rc;
	for (size_t j = 1; j < k->st.n; j++)
		if (k->sink->string && (rc = k->sink->string(k->sink->ctx, &k->st.v[j])))
			return rc;
	if ((rc = emit_preamble(k)) || (rc = emit_all(k)))
		return rc;
	struct isc_tl_stats st = { 0 };
	st.events = k->res->events_out;
	st.lost_frames = k->res->bad_events;
	st.abrupt = k->stop;
	st.have_end = true;
	return k->sink->end ? k->sink->end(k->sink->ctx, &st) : 0;
}

bool isc_kineto_sniff(const uint8_t *buf, size_t len)
{
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b)
		return true;
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '{')
			return true;
		if (buf[i] != ' ' && buf[i] != '\n' && buf[i] != '\r' && buf[i] != '\t')
			return false;
	}
	return false;
}

int isc_kineto_import(FILE *in, const char *name, struct isc_sink *sink, const struct isc_kineto_opts *o,
		      struct isc_kineto_result *res)
{
	struct isc_kineto_result local;
	struct kin *k = calloc(1, sizeof(*k));
	int rc;
	if (!res)
		res = &local;
	memset(res, 0, sizeof(*res));
	if (!k)
		return -ENOMEM;
	k->name = name;
	k->sink = sink;
	k->res = res;
	k->max_depth = o && o->max_depth ? o->max_depth : ISC_KINETO_MAX_DEPTH;
	size_t budget = o && o->sort_budget ? o->sort_budget : ISC_KINETO_SORT_BUDGET;
	if ((rc = isc_ksort_init(&k->sort, budget)))
		goto out;
	if (!(k->arena = malloc(KT_SRC_CAP))) {
		rc = -ENOMEM;
		goto out;
	}
	if ((rc = isc_ksrc_open(&k->src, in)))
		goto out;
	add_meta(k, "source", "kineto", 6); /* the first META record */
	if ((rc = read_input(k)) < 0)
		goto out;
	if (res->bad_events) {
		size_t l = strlen(res->damage);
		snprintf(res->damage + l, sizeof(res->damage) - l, "; %llu bad event%s skipped",
			 (unsigned long long)res->bad_events, res->bad_events == 1 ? "" : "s");
	}
	if (!k->have_events) {
		if (k->stop)
			isc_err_push("%s, before any traceEvents", res->damage);
		else
			isc_err_push("not a Kineto trace: no traceEvents array");
		rc = -EBADMSG;
		goto out;
	}
	if (!k->have_min) { /* nothing to write: an error, not an empty timeline */
		if (res->damaged)
			isc_err_push("%s; no event imported", res->damage);
		else if (!res->events_in)
			isc_err_push("no events: traceEvents is empty");
		else
			isc_err_push("no events: none of the %llu elements of traceEvents is of a kind this importer maps",
				     (unsigned long long)res->events_in);
		rc = -EBADMSG;
		goto out;
	}
	if ((rc = finish(k)))
		goto out;
	rc = res->damaged ? 1 : 0;
out:
	isc_ksrc_close(&k->src);
	free(k->arena);
	res->runs = k->sort.nruns;
	res->peak_sort_bytes = k->sort.peak_bytes;
	isc_ksort_free(&k->sort);
	isc_buf_free(&k->val);
	isc_buf_free(&k->wbuf);
	isc_strtab_free(&k->st);
	isc_umap_free(&k->pnames);
	isc_umap_free(&k->tnames);
	for (size_t i = 0; i < k->nnames; i++)
		free(k->names[i]);
	free(k->names);
	isc_umap_free(&k->pid_events);
	free(k->cpu_items);
	for (size_t i = 0; i < k->nthrs; i++) {
		free(k->thrs[i]->s[0].v);
		free(k->thrs[i]->s[1].v);
		free(k->thrs[i]);
	}
	free(k->thrs);
	isc_umap_free(&k->threads);
	isc_umap_free(&k->procs);
	free(k->heap);
	for (size_t i = 0; i < k->ndevs; i++)
		free(k->devs[i].name);
	free(k->devs);
	for (size_t i = 0; i < k->nmetas; i++) {
		free(k->metas[i].key);
		free(k->metas[i].val);
	}
	free(k);
	return rc;
}
