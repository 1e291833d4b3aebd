/*
 * kineto_import.c - PyTorch profiler (Kineto) Chrome-trace JSON in,
 * timeline events out (formats/timeline.md §10 is the mapping): the
 * importer's control flow and its output.
 *
 *   bytes (plain, or gzip inflated on the fly; no seeks)    kineto_source.c
 *     -> scanner: the top-level object, then traceEvents one
 *        element at a time, in place or copied with a size
 *        and nesting limit; the fields we map, as text       kineto_scan.c, kineto_json.c
 *     -> conversion: kinds, names interned, times in ns
 *        exactly, GPU and memory fields -> items             kineto_convert.c
 *     -> items (fixed size) in the sort buffer; buffer full:
 *        sort it, append it as a run to a tmpfile()          kineto_sort.c
 *   end of input (here)
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
#include <stdlib.h>
#include <string.h>

#include "isc_util.h"      /* isc_umap, isc_grow */
#include "isc_format.h"    /* ISC_REC_*, ISC_TL_TIME_LIMIT */
#include "isc_kineto.h"
#include "kineto.h"

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
	const char *name;
	struct isc_sink *sink;
	struct isc_kineto_result *res;
	struct kt_scan scan;   /* kineto_scan.c */
	struct kt_conv conv;   /* kineto_convert.c: names, header material */
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
	return (uint64_t)ts - (uint64_t)k->conv.min_ts;
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
		const char *pn = isc_kconv_process_name(&k->conv, t->pid);
		uint64_t f[2] = { t->pid, 0 };
		if (pn && (rc = emit_raw(k, ISC_REC_PROC_INFO, ts, t->pid, 0, f, 2, true, pn, strlen(pn))))
			return rc;
	}
	const char *tn = isc_kconv_thread_name(&k->conv, t->pid, t->tid);
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
	for (size_t i = 0; i < k->conv.ndevs && !rc; i++) {
		const struct kt_dev *d = &k->conv.devs[i];
		uint64_t f[6] = { d->id, d->sms, d->mem, d->major, d->minor, 0 };
		rc = emit_raw(k, ISC_REC_DEVICE, 0, 0, 0, f, 6, false, d->name, strlen(d->name));
	}
	for (size_t i = 0; i < k->conv.nmetas && !rc; i++) {
		const struct kt_meta *m = &k->conv.metas[i];
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
	const char *pn = isc_kconv_command(&k->conv);
	snprintf(h.cmdline, sizeof(h.cmdline), "%s", pn ? pn : "");
	h.epoch_realtime_ns = (uint64_t)(k->conv.have_base ? k->conv.base_ns : 0) + (uint64_t)k->conv.min_ts;
	h.recorder_pid = 0;
	if (k->sink->begin && (rc = k->sink->begin(k->sink->ctx, &h)))
		return rc;
	for (size_t i = 1; i < k->conv.st.n; i++)
		if (k->sink->string && (rc = k->sink->string(k->sink->ctx, &k->conv.st.v[i])))
			return rc;
	if ((rc = emit_preamble(k)) || (rc = emit_all(k)))
		return rc;
	struct isc_tl_stats st = { 0 };
	st.events = k->res->events_out;
	st.lost_frames = k->res->bad_events;
	st.abrupt = k->scan.stop;
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
	k->conv.res = res;
	k->conv.sort = &k->sort;
	size_t budget = o && o->sort_budget ? o->sort_budget : ISC_KINETO_SORT_BUDGET;
	if ((rc = isc_ksort_init(&k->sort, budget)))
		goto out;
	if ((rc = isc_kscan_open(&k->scan, in, &k->conv, res,
				 o && o->max_depth ? o->max_depth : ISC_KINETO_MAX_DEPTH)))
		goto out;
	isc_kconv_meta(&k->conv, "source", "kineto", 6); /* the first META record */
	if ((rc = isc_kscan_run(&k->scan)) < 0)
		goto out;
	if (res->bad_events) {
		size_t l = strlen(res->damage);
		snprintf(res->damage + l, sizeof(res->damage) - l, "; %llu bad event%s skipped",
			 (unsigned long long)res->bad_events, res->bad_events == 1 ? "" : "s");
	}
	if (!k->scan.have_events) {
		if (k->scan.stop)
			isc_err_push("%s, before any traceEvents", res->damage);
		else
			isc_err_push("not a Kineto trace: no traceEvents array");
		rc = -EBADMSG;
		goto out;
	}
	if (!k->conv.have_min) { /* nothing to write: an error, not an empty timeline */
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
	isc_kscan_close(&k->scan);
	res->runs = k->sort.nruns;
	res->peak_sort_bytes = k->sort.peak_bytes;
	isc_ksort_free(&k->sort);
	isc_buf_free(&k->wbuf);
	isc_kconv_free(&k->conv);
	for (size_t i = 0; i < k->nthrs; i++) {
		free(k->thrs[i]->s[0].v);
		free(k->thrs[i]->s[1].v);
		free(k->thrs[i]);
	}
	free(k->thrs);
	isc_umap_free(&k->threads);
	isc_umap_free(&k->procs);
	free(k->heap);
	free(k);
	return rc;
}
