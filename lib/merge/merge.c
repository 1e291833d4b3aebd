/*
 * merge.c - traces in, one timeline out (DESIGN §5, formats/timeline.md).
 *
 * Each input is read front to back.  EVENTS chunks are decoded into the
 * queue of their thread (pairing calls and returns into spans on the way);
 * each SAMPLES (or NATIVE) chunk becomes a short-lived queue of its own.  Queues are
 * sorted by construction, so a binary heap of queue heads yields the
 * global order:
 *
 *   input 0: ...EVENTS(t1) EVENTS(t2) SAMPLES ROUND(W0) ...
 *   input 1: ...EVENTS(t7) ROUND(W1) ...
 *
 *   queues   t1:[e e e]  t2:[e e]  s:[s s]  t7:[e e e e]
 *                 \         |        |       /
 *                  +------ heap (by key) ---+---> sink, while head.ts < W
 *
 * W = min over unfinished inputs of their last ROUND watermark: a ROUND
 * promises that no later frame of that input holds an older event, so
 * everything below W can go.  Memory is the reorder window (events between
 * two rounds), the string table and one call stack per thread.
 *
 * Tie-break chain for equal keys (tested one by one in test_merge.c):
 *   1. ts            2. input index       3. pid         4. tid
 *   5. source rank: agent events before recorder records
 *   6. queue creation order     7. arrival order within the queue
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_util.h"
#include "isc_log.h"
#include "isc_trace_int.h"
#include "isc_native_codec.h" /* native sampler records */
#include "isc_merge.h"
#include "strtab.h"

struct mev {
	uint64_t ts;
	uint64_t span_id, parent_id;
	int64_t value;
	uint32_t pid, tid, depth, name_id, flags;
	uint8_t type, kind;
	uint8_t *body; /* pass-through records: malloc'd body */
	uint32_t body_len;
};

struct queue {
	struct mev *ev;
	size_t head, len, cap; /* ring of cap entries */
	unsigned input;
	uint8_t rank;     /* 0 agent thread, 1 recorder samples, 2 GPU records */
	uint32_t pid, tid;
	uint64_t order;   /* creation order */
	bool transient;   /* samples chunk: freed when drained */
	bool in_heap;
	bool sorted;      /* GPU queue: events are inserted in time order */
	struct thread *owner; /* the thread whose spans it holds, or whose calls (GPU) */
	uint64_t gkey;    /* GPU queue: what it holds (see gpu_queue) */
	struct queue *next_free;
};

struct frame_entry { /* one open span */
	uint64_t span_id;
	uint32_t name_id;
	uint8_t kind;
};

struct thread {
	unsigned input;
	uint32_t pid, tid;
	struct queue q;
	struct frame_entry *calls, *scopes;
	size_t ncalls, nscopes, capcalls, capscopes;
	uint64_t last_ts;
	uint64_t *open;      /* ids of its python/op spans open in the output so far */
	size_t nopen, capopen;
};

struct pexit { /* a process exit decoded but not yet applied */
	unsigned input;
	uint32_t pid;
	uint64_t ts;
};

struct input {
	const struct isc_merge_input *in;
	struct isc_reader *rd;
	struct isc_tl_header hdr;
	int64_t offset; /* output ts = trace ts + offset */
	uint64_t watermark; /* output time base */
	uint64_t max_ts; /* latest event time decoded */
	bool done, have_end;
	uint64_t end_dropped, end_lost, drop_records;
	int end_status;
	uint64_t end_flags;
	uint64_t gpu_lag; /* GPU records start up to this long before their trace time */
	struct isc_umap threads; /* pid << 32 | tid -> index in merge.threads */
};

struct merge {
	struct input *inputs;
	size_t ninputs;
	struct isc_sink *sink;
	struct isc_merge_result *res;
	struct thread **threads; /* in order of creation; by (pid, tid) in each input's map */
	size_t nthreads, capthreads;
	struct isc_strtab st;    /* the output's strings, by gid */
	struct isc_umap local;   /* local_key(input, pid, id) -> gid */
	uint64_t next_span, next_order, last_out;
	struct queue **heap;
	size_t nheap, capheap;
	struct pexit *exits;
	size_t nexits, capexits;
	uint64_t buffered;
	struct queue **gpuqs;          /* GPU queues, in order of creation */
	size_t ngpuqs, capgpuqs;
	struct isc_hindex gpuq_index;  /* hash of (input, pid, gkey) -> index in gpuqs */
	struct link *links;            /* launching calls (link_*): a ring of MERGE_LINK_MAX */
	struct isc_hindex link_index;  /* hash of (input, pid, correlation) -> index in links */
	size_t nlinks;
	bool have_gap;
	uint32_t unnamed_frame; /* the global string of a PY_SAMPLE frame of code_id 0, once made */
};

/* ---- strings ------------------------------------------------------------ */

/* What isc_copy_bytes leaves as it is: no NUL byte, no trailing '?' (it trims those). */
static bool copied_as_is(const uint8_t *p, size_t n)
{
	return !memchr(p, 0, n) && !(n && p[n - 1] == '?');
}

/*
 * The gid of a string, sent to the sink when new.  The table holds the
 * bytes isc_copy_bytes makes of it ('?' for NUL bytes, trailing '?'
 * trimmed); a string that copy changes is never found again by its bytes,
 * so each of its definitions gets a gid of its own.
 */
static int strings_add(struct merge *m, uint8_t kind, uint32_t line, const uint8_t *name, size_t nlen,
		       const uint8_t *file, size_t flen, uint32_t *gid)
{
	int rc;
	if (copied_as_is(name, nlen) && copied_as_is(file, flen)) {
		rc = isc_strtab_intern(&m->st, kind, line, (const char *)name, nlen, (const char *)file, flen, gid);
	} else {
		char *n = malloc(nlen + 1), *f = malloc(flen + 1);
		rc = -ENOMEM;
		if (n && f) {
			isc_copy_bytes(n, nlen + 1, name, nlen, '?');
			isc_copy_bytes(f, flen + 1, file, flen, '?');
			rc = isc_strtab_add(&m->st, kind, line, n, strlen(n), f, strlen(f), gid);
		}
		free(n);
		free(f);
	}
	if (rc <= 0)
		return rc;
	return m->sink->string ? m->sink->string(m->sink->ctx, &m->st.v[*gid]) : 0;
}

static uint64_t local_key(unsigned input, uint32_t pid, uint64_t id)
{
	return (uint64_t)input << 58 | (uint64_t)pid << 26 | (id & ((1u << 26) - 1));
}

static uint32_t strings_lookup(struct merge *m, unsigned input, uint32_t pid, uint64_t id, uint8_t kind)
{
	uint64_t key = local_key(input, pid, id);
	uint32_t gid = isc_umap_get(&m->local, key), *slot;
	if (gid != ISC_UMAP_NONE)
		return gid;
	/* undefined (lost with a damaged frame or a full string area) */
	char name[40];
	int n = snprintf(name, sizeof(name), "<unknown #%llu>", (unsigned long long)id);
	if (strings_add(m, kind, 0, (const uint8_t *)name, (size_t)n, (const uint8_t *)"", 0, &gid))
		return 0;
	if (!isc_umap_slot(&m->local, key, &slot))
		*slot = gid;
	return gid;
}

static int read_strings(struct merge *m, unsigned input, uint32_t pid, const uint8_t *p, size_t len)
{
	struct isc_cursor c;
	struct isc_rec r;
	int rc;
	isc_cursor_init(&c, p, len, 0);
	while ((rc = isc_cursor_next(&c, &r)) == 1) {
		struct isc_string_def d;
		if (r.type != ISC_REC_STRING_DEF)
			continue;
		if (isc_string_def_parse(r.body, r.len, &d))
			return -EBADMSG;
		uint64_t id = d.id;
		uint32_t gid;
		if ((rc = strings_add(m, d.kind, d.line > UINT32_MAX ? 0 : (uint32_t)d.line, d.name, d.nlen, d.file,
				      d.flen, &gid)))
			return rc;
		uint32_t *slot;
		if (isc_umap_slot(&m->local, local_key(input, pid, id), &slot))
			return -ENOMEM;
		*slot = gid; /* a later definition of the same id wins */
	}
	return rc;
}

/* ---- queues and the heap ------------------------------------------------ */

static int queue_push(struct merge *m, struct queue *q, const struct mev *ev);

static int key_cmp(const struct queue *a, const struct queue *b)
{
	const struct mev *x = &a->ev[a->head], *y = &b->ev[b->head];
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (a->input != b->input)
		return a->input < b->input ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->order != b->order)
		return a->order < b->order ? -1 : 1;
	return 0; /* same queue: arrival order is the queue order */
}

static void heap_up(struct merge *m, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (key_cmp(m->heap[i], m->heap[p]) >= 0)
			break;
		struct queue *t = m->heap[i];
		m->heap[i] = m->heap[p];
		m->heap[p] = t;
		i = p;
	}
}

static void heap_down(struct merge *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, s = i;
		if (l < m->nheap && key_cmp(m->heap[l], m->heap[s]) < 0)
			s = l;
		if (r < m->nheap && key_cmp(m->heap[r], m->heap[s]) < 0)
			s = r;
		if (s == i)
			return;
		struct queue *t = m->heap[i];
		m->heap[i] = m->heap[s];
		m->heap[s] = t;
		i = s;
	}
}

static int heap_insert(struct merge *m, struct queue *q)
{
	if (isc_grow(&m->heap, &m->capheap, m->nheap, sizeof(*m->heap)))
		return -ENOMEM;
	m->heap[m->nheap] = q;
	q->in_heap = true;
	heap_up(m, m->nheap++);
	return 0;
}

static int queue_push(struct merge *m, struct queue *q, const struct mev *ev)
{
	if (q->len == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 64;
		struct mev *n = malloc(cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		for (size_t i = 0; i < q->len; i++)
			n[i] = q->ev[(q->head + i) % q->cap];
		free(q->ev);
		q->ev = n;
		q->cap = cap;
		q->head = 0;
	}
	/* a GPU queue keeps time order: its records come in completion order
	 * (stable: equal times keep their arrival order) */
	size_t i = q->len;
	for (; q->sorted && i > 0 && q->ev[(q->head + i - 1) % q->cap].ts > ev->ts; i--)
		q->ev[(q->head + i) % q->cap] = q->ev[(q->head + i - 1) % q->cap];
	q->ev[(q->head + i) % q->cap] = *ev;
	q->len++;
	if (++m->buffered > m->res->max_buffered)
		m->res->max_buffered = m->buffered;
	if (!q->in_heap) /* other heads only change by popping, so order holds */
		return heap_insert(m, q);
	if (i == 0) /* a GPU queue's new head: it can only move up */
		for (size_t k = 0; k < m->nheap; k++)
			if (m->heap[k] == q) {
				heap_up(m, k);
				break;
			}
	return 0;
}

static void queue_free(struct queue *q)
{
	for (size_t i = 0; i < q->len; i++)
		free(q->ev[(q->head + i) % q->cap].body);
	free(q->ev);
}

/* ---- GPU: launch links, made as the timeline is written ----------------- */

/*
 * A launching call, by (input, pid, correlation id): its thread, its
 * start, and once it is written the innermost python/op span open on its
 * thread when it started.  Entries are made when the call is read, so an
 * operation written before its call (clock skew) still finds it.  One
 * CUDA-graph launch owns many operations, so a lookup does not consume an
 * entry; entries are kept in a ring of MERGE_LINK_MAX, the oldest forgotten
 * first: an operation outlives its entry only when MERGE_LINK_MAX calls were
 * read between its call and its start (a stream queues about a thousand).
 */
#define MERGE_LINK_MAX (1u << 16)
struct link {
	uint64_t corr, span, ts;
	unsigned input;
	uint32_t pid, tid;
	struct thread *owner; /* the call's thread */
	bool known;           /* span is set: the call was written */
};

static uint64_t link_hash(unsigned input, uint32_t pid, uint64_t corr)
{
	return (uint64_t)input << 58 ^ (uint64_t)pid << 32 ^ corr;
}

static struct link *link_find(struct merge *m, unsigned input, uint32_t pid, uint64_t corr)
{
	size_t pos = 0;
	for (uint32_t i; (i = isc_hindex_next(&m->link_index, link_hash(input, pid, corr), &pos)) != ISC_UMAP_NONE;)
		if (m->links[i].corr == corr && m->links[i].pid == pid && m->links[i].input == input)
			return &m->links[i];
	return NULL;
}

/* Remembers a call; the first call of a correlation id read (usually the
 * runtime call: it starts before the driver call it makes) is kept. */
static int link_put(struct merge *m, const struct link *l)
{
	if (!m->links && !(m->links = malloc(MERGE_LINK_MAX * sizeof(*m->links))))
		return -ENOMEM;
	if (link_find(m, l->input, l->pid, l->corr))
		return 0;
	uint32_t slot = (uint32_t)(m->nlinks % MERGE_LINK_MAX);
	struct link *old = &m->links[slot];
	if (m->nlinks >= MERGE_LINK_MAX) /* the ring is full: this slot's entry is forgotten */
		isc_hindex_del(&m->link_index, link_hash(old->input, old->pid, old->corr), slot);
	if (isc_hindex_add(&m->link_index, link_hash(l->input, l->pid, l->corr), slot))
		return -ENOMEM;
	m->nlinks++;
	*old = *l;
	return 0;
}

/*
 * Called for each event as it is written: follows every thread's open
 * python/op spans in output order, and fills in what the merge knows of
 * GPU records then: a call's span_id (innermost span open on its thread
 * at its start), an operation's launch link (the call with its
 * correlation id: thread, span, gap).  Both sides are in the output in
 * time order, so a call is written before the operations it launched
 * unless the clocks disagree; calls are remembered as they are read, so
 * such an operation still finds its call (read_gpu).
 */
static int emit_links(struct merge *m, struct queue *q, struct isc_tl_event *ev)
{
	struct thread *t = q->owner;
	struct isc_gpu_fields *g = &ev->gpu;
	switch (ev->type) {
	case ISC_REC_TL_SPAN_BEGIN:
		if (t && q == &t->q && ev->kind != ISC_SPAN_SCOPE) {
			if (isc_grow(&t->open, &t->capopen, t->nopen, sizeof(*t->open)))
				return -ENOMEM;
			t->open[t->nopen++] = ev->span_id;
		}
		return 0;
	case ISC_REC_TL_SPAN_END:
		if (t && q == &t->q && ev->kind != ISC_SPAN_SCOPE && t->nopen)
			t->nopen--;
		return 0;
	case ISC_REC_GPU_API: {
		if (isc_gpu_decode(ev, ev->type, ev->raw, ev->nraw))
			return 0; /* cannot happen: the merge encoded it */
		g->launch_span_id = t && t->nopen ? t->open[t->nopen - 1] : 0;
		m->res->gpu_calls++;
		struct link *l = g->correlation ? link_find(m, q->input, ev->pid, g->correlation) : NULL;
		if (l && !l->known && l->tid == ev->tid && l->ts == ev->ts) { /* this call */
			l->span = g->launch_span_id;
			l->known = true;
		}
		return 0;
	}
	case ISC_REC_GPU_OP: {
		if (isc_gpu_decode(ev, ev->type, ev->raw, ev->nraw))
			return 0;
		struct link *l = g->correlation ? link_find(m, q->input, ev->pid, g->correlation) : NULL;
		m->res->gpu_ops++;
		g->has_link = l != NULL;
		g->api_tid = l ? l->tid : 0;
		g->launch_gap_ns = l ? (int64_t)(ev->ts - l->ts) : 0;
		/* a call not written yet (skew): what is open on its thread now */
		g->launch_span_id = !l ? 0 : l->known ? l->span : l->owner && l->owner->nopen ? l->owner->open[l->owner->nopen - 1] : 0;
		if (!l)
			return 0;
		m->res->gpu_linked++;
		if ((g->kind == ISC_GPU_KERNEL || g->kind == ISC_GPU_MEMCPY || g->kind == ISC_GPU_MEMSET) &&
		    (!m->res->have_launch_gap || g->launch_gap_ns < m->res->min_launch_gap_ns)) {
			m->res->min_launch_gap_ns = g->launch_gap_ns;
			m->res->have_launch_gap = true;
		}
		return 0;
	}
	default:
		return 0;
	}
}

/* Sends every queued event older than w to the sink, in key order. */
static int emit_until(struct merge *m, uint64_t w)
{
	while (m->nheap) {
		struct queue *q = m->heap[0];
		struct mev *e = &q->ev[q->head];
		if (e->ts >= w)
			return 0;
		struct isc_tl_event ev;
		memset(&ev, 0, sizeof(ev));
		ev.type = e->type;
		ev.ts = e->ts;
		ev.pid = e->pid;
		ev.tid = e->tid;
		ev.span_id = e->span_id;
		ev.parent_id = e->parent_id;
		ev.depth = e->depth;
		ev.kind = e->kind;
		ev.name_id = e->name_id;
		ev.flags = e->flags;
		ev.value = e->value;
		ev.raw = e->body;
		ev.nraw = e->body_len;
		if (e->body) {
			const uint8_t *p = e->body, *end = e->body + e->body_len;
			unsigned n = isc_record_nvarints(e->type);
			for (unsigned i = 0; i < n && !isc_get_varint(&p, end, &ev.f[i]); i++)
				ev.nf = i + 1;
			if (e->type == ISC_REC_NUMA_MAPS && ev.nf == 2)
				for (uint64_t i = 0; i < ev.f[1] && ev.nf < 16 &&
						     !isc_get_varint(&p, end, &ev.f[ev.nf]); i++)
					ev.nf++;
			uint64_t blen = (uint64_t)(end - p);
			if (e->type == ISC_REC_PROC_INFO && (isc_get_varint(&p, end, &blen) || blen > (uint64_t)(end - p)))
				blen = 0;
			ev.bytes = p;
			ev.nbytes = (size_t)blen;
		}
		int rc = emit_links(m, q, &ev);
		bool is_gpu = ev.type == ISC_REC_GPU_OP || ev.type == ISC_REC_GPU_API;
		bool keep = ev.ts < ISC_TL_TIME_LIMIT && !(is_gpu && ev.gpu.dur_ns >= ISC_TL_TIME_LIMIT);
		if (!keep)
			m->res->out_of_range++; /* a timeline cannot hold it (formats/timeline.md §4) */
		else if (e->ts < m->last_out)
			m->res->late_events++;
		else
			m->last_out = e->ts;
		if (!rc && keep)
			rc = m->sink->event(m->sink->ctx, &ev);
		free(e->body);
		m->res->events_out += keep;
		m->buffered--;
		q->head = (q->head + 1) % q->cap;
		q->len--;
		if (q->len) {
			heap_down(m, 0);
		} else {
			m->heap[0] = m->heap[--m->nheap];
			q->in_heap = false;
			if (m->nheap)
				heap_down(m, 0);
			if (q->transient) {
				queue_free(q);
				free(q);
			}
		}
		if (rc)
			return rc;
	}
	return 0;
}

/* ---- threads and span pairing ------------------------------------------- */

static struct thread *thread_get(struct merge *m, unsigned input, uint32_t pid, uint32_t tid)
{
	struct isc_umap *map = &m->inputs[input].threads;
	uint64_t key = (uint64_t)pid << 32 | tid;
	uint32_t i = isc_umap_get(map, key), *slot;
	if (i != ISC_UMAP_NONE)
		return m->threads[i];
	struct thread *t = calloc(1, sizeof(*t));
	if (!t || isc_grow(&m->threads, &m->capthreads, m->nthreads, sizeof(*m->threads)) ||
	    isc_umap_slot(map, key, &slot)) {
		free(t);
		return NULL;
	}
	*slot = (uint32_t)m->nthreads;
	m->threads[m->nthreads++] = t;
	t->input = input;
	t->pid = pid;
	t->tid = tid;
	t->q.input = input;
	t->q.pid = pid;
	t->q.tid = tid;
	t->q.order = m->next_order++;
	t->q.owner = t;
	return t;
}

static int push_frame(struct frame_entry **st, size_t *n, size_t *cap, struct frame_entry f)
{
	if (isc_grow(st, cap, *n, sizeof(**st)))
		return -ENOMEM;
	(*st)[(*n)++] = f;
	return 0;
}

static int span_end(struct merge *m, struct thread *t, struct frame_entry *f, uint64_t ts, uint32_t flags)
{
	struct mev e = { .ts = ts, .span_id = f->span_id, .pid = t->pid, .tid = t->tid,
			 .name_id = f->name_id, .kind = f->kind, .flags = flags, .type = ISC_REC_TL_SPAN_END };
	if (flags)
		m->res->closed_by_merge++;
	return queue_push(m, &t->q, &e);
}

static int span_begin(struct merge *m, struct thread *t, uint64_t ts, uint8_t kind, uint32_t gid)
{
	bool scope = kind == ISC_SPAN_SCOPE;
	struct frame_entry *st = scope ? t->scopes : t->calls;
	size_t n = scope ? t->nscopes : t->ncalls;
	struct frame_entry f = { ++m->next_span, gid, kind };
	struct mev e = { .ts = ts, .span_id = f.span_id, .parent_id = n ? st[n - 1].span_id : 0,
			 .pid = t->pid, .tid = t->tid, .depth = (uint32_t)n, .name_id = gid, .kind = kind,
			 .type = ISC_REC_TL_SPAN_BEGIN };
	int rc = scope ? push_frame(&t->scopes, &t->nscopes, &t->capscopes, f)
		       : push_frame(&t->calls, &t->ncalls, &t->capcalls, f);
	return rc ? rc : queue_push(m, &t->q, &e);
}

/* Closes every open span of t at ts (thread ended or its trace ended). */
static int close_all(struct merge *m, struct thread *t, uint64_t ts)
{
	int rc = 0;
	while (!rc && t->ncalls)
		rc = span_end(m, t, &t->calls[--t->ncalls], ts, 1);
	while (!rc && t->nscopes)
		rc = span_end(m, t, &t->scopes[--t->nscopes], ts, 1);
	return rc;
}

/*
 * Spans a process left open (killed, os._exit) end at its exit.  That is
 * done once the watermark passes the exit: no event of the process can
 * come later, and nothing at or after the exit has been emitted yet.
 */
static int close_exited(struct merge *m, uint64_t w)
{
	for (size_t i = 0; i < m->nexits;) {
		struct pexit x = m->exits[i];
		if (x.ts >= w) {
			i++;
			continue;
		}
		for (size_t j = 0; j < m->nthreads; j++) {
			struct thread *t = m->threads[j];
			if (t->input == x.input && t->pid == x.pid && (t->ncalls || t->nscopes)) {
				int rc = close_all(m, t, t->last_ts > x.ts ? t->last_ts : x.ts);
				if (rc)
					return rc;
			}
		}
		m->exits[i] = m->exits[--m->nexits];
	}
	return 0;
}

static uint64_t out_ts(const struct input *in, uint64_t ts)
{
	int64_t v = (int64_t)(ts + (uint64_t)in->offset); /* wraps where a signed sum would overflow */
	return v < 0 ? 0 : (uint64_t)v;
}

/* Decodes one thread's EVENTS chunk; returns 0, or -EBADMSG after keeping what parsed. */
static int read_events(struct merge *m, unsigned ii, const struct isc_chunk_header *h, const uint8_t *p)
{
	struct input *in = &m->inputs[ii];
	struct thread *t = thread_get(m, ii, h->pid, h->tid);
	struct isc_cursor c;
	struct isc_rec r;
	int rc;
	if (!t)
		return -ENOMEM;
	isc_cursor_init(&c, p, h->payload_len, h->base_ts);
	while ((rc = isc_cursor_next(&c, &r)) == 1) {
		const uint8_t *q = r.body, *e = r.body + r.len;
		uint64_t ts = out_ts(in, r.ts), v = 0, v2 = 0;
		struct mev ev = { .ts = ts, .pid = t->pid, .tid = t->tid, .type = r.type };
		int err = 0;
		m->res->events_in++;
		t->last_ts = ts;
		if (ts > in->max_ts)
			in->max_ts = ts;
		switch (r.type) {
		case ISC_REC_PY_CALL:
		case ISC_REC_C_CALL:
			if (isc_get_varint(&q, e, &v))
				return -EBADMSG;
			err = span_begin(m, t, ts, r.type == ISC_REC_PY_CALL ? ISC_SPAN_PYTHON : ISC_SPAN_OP,
					strings_lookup(m, ii, t->pid, v,
						       r.type == ISC_REC_PY_CALL ? ISC_STR_CODE : ISC_STR_CFUNC));
			break;
		case ISC_REC_PY_RETURN:
			if (!t->ncalls) {
				m->res->unmatched_returns++;
				break;
			}
			/* a C call whose return was lost (dropped) ends with its caller */
			while (!err && t->ncalls && t->calls[t->ncalls - 1].kind != ISC_SPAN_PYTHON)
				err = span_end(m, t, &t->calls[--t->ncalls], ts, 1);
			if (!err && t->ncalls)
				err = span_end(m, t, &t->calls[--t->ncalls], ts, 0);
			break;
		case ISC_REC_C_RETURN:
			if (t->ncalls && t->calls[t->ncalls - 1].kind == ISC_SPAN_OP)
				err = span_end(m, t, &t->calls[--t->ncalls], ts, 0);
			else
				m->res->unmatched_returns++;
			break;
		case ISC_REC_SCOPE_BEGIN:
			if (isc_get_varint(&q, e, &v))
				return -EBADMSG;
			err = span_begin(m, t, ts, ISC_SPAN_SCOPE, strings_lookup(m, ii, t->pid, v, ISC_STR_SCOPE));
			break;
		case ISC_REC_SCOPE_END:
			if (t->nscopes)
				err = span_end(m, t, &t->scopes[--t->nscopes], ts, 0);
			else
				m->res->unmatched_returns++;
			break;
		case ISC_REC_MARK:
			if (isc_get_varint(&q, e, &v) || isc_get_varint(&q, e, &v2))
				return -EBADMSG;
			ev.name_id = strings_lookup(m, ii, t->pid, v, ISC_STR_MARK);
			ev.value = isc_unzigzag(v2);
			err = queue_push(m, &t->q, &ev);
			break;
		case ISC_REC_EXCEPTION_REF: { /* its string ids become the timeline's */
			uint64_t f[4];
			uint8_t body[40];
			unsigned bl = 0;
			static const uint8_t kinds[4] = { 0, ISC_STR_CODE, ISC_STR_TEXT, ISC_STR_TEXT };
			for (int i = 0; i < 4; i++) {
				if (isc_get_varint(&q, e, &f[i]))
					return -EBADMSG;
				bl += isc_put_varint(body + bl, i ? strings_lookup(m, ii, t->pid, f[i], kinds[i]) : f[i]);
			}
			if (!(ev.body = malloc(bl)))
				return -ENOMEM;
			memcpy(ev.body, body, bl);
			ev.body_len = bl;
			err = queue_push(m, &t->q, &ev);
			break;
		}
		case ISC_REC_THREAD_END:
			err = close_all(m, t, ts);
			if (!err)
				err = queue_push(m, &t->q, &ev);
			break;
		case ISC_REC_DROPPED:
			if (isc_get_varint(&q, e, &v))
				return -EBADMSG;
			in->drop_records += v;
			/* kept as a record */
			__attribute__((fallthrough));
		case ISC_REC_THREAD_BEGIN:
		default:
			if (r.type >= 0x80)
				break;
			ev.body = malloc(r.len ? r.len : 1);
			if (!ev.body)
				return -ENOMEM;
			memcpy(ev.body, r.body, r.len);
			ev.body_len = (uint32_t)r.len;
			err = queue_push(m, &t->q, &ev);
			break;
		}
		if (err)
			return err;
	}
	return rc;
}

/*
 * A PY_SAMPLE body with global string ids: pid tid state flags depth, then
 * depth (code id, line) pairs, then (flags bit 4, 1.4) the callee's id (of
 * kind CFUNC) and kind, then (flags bit 5, 1.9) the thread's run and wait
 * times.  A body that does not parse is corrupt.
 */
static int py_sample_body(struct merge *m, unsigned ii, uint32_t pid, const uint8_t *p, size_t len, struct mev *ev)
{
	const uint8_t *e = p + len;
	uint64_t f[5], id, line;
	struct isc_buf b = { 0 };
	for (int i = 0; i < 5; i++)
		if (isc_get_varint(&p, e, &f[i]) || isc_buf_put_varint(&b, f[i]))
			goto bad;
	for (uint64_t k = 0; k < f[4]; k++) {
		if (isc_get_varint(&p, e, &id) || isc_get_varint(&p, e, &line))
			goto bad;
		/* code_id 0: a frame whose code object the sampler could not name (formats/trace.md) */
		if (!id && !m->unnamed_frame) {
			static const char un[] = "(a Python frame the sampler could not name)";
			if (strings_add(m, ISC_STR_CODE, 0, (const uint8_t *)un, sizeof(un) - 1, (const uint8_t *)"", 0,
					&m->unnamed_frame))
				goto bad;
		}
		if (isc_buf_put_varint(&b, id ? strings_lookup(m, ii, pid, id, ISC_STR_CODE) : m->unnamed_frame) ||
		    isc_buf_put_varint(&b, line))
			goto bad;
	}
	if (f[3] & ISC_PY_SAMPLE_CALLEE) {
		uint64_t kind;
		if (isc_get_varint(&p, e, &id) || isc_get_varint(&p, e, &kind) || id > UINT32_MAX ||
		    isc_buf_put_varint(&b, id ? strings_lookup(m, ii, pid, (uint32_t)id, ISC_STR_CFUNC) : 0) ||
		    isc_buf_put_varint(&b, kind))
			goto bad;
	}
	if (f[3] & ISC_PY_SAMPLE_SCHED) { /* 1.9: run_ns wait_ns, copied */
		uint64_t run, wait;
		if (isc_get_varint(&p, e, &run) || isc_get_varint(&p, e, &wait) || isc_buf_put_varint(&b, run) ||
		    isc_buf_put_varint(&b, wait))
			goto bad;
	}
	if (p != e)
		goto bad;
	ev->body = b.data ? b.data : malloc(1);
	ev->body_len = (uint32_t)b.len;
	return ev->body ? 0 : -ENOMEM;
bad:
	isc_buf_free(&b);
	return -EBADMSG;
}

/*
 * A SAMPLES chunk: records passed through, in short-lived queues, one per
 * (pid, tid) of the chunk, so that records with equal times still follow
 * the pid/tid rules of the tie-break chain.
 */
static int read_samples(struct merge *m, unsigned ii, const struct isc_chunk_header *h, const uint8_t *p)
{
	struct input *in = &m->inputs[ii];
	struct queue **qs = NULL;
	size_t nq = 0, capq = 0;
	struct isc_cursor c;
	struct isc_rec r;
	int rc;
	isc_cursor_init(&c, p, h->payload_len, h->base_ts);
	while ((rc = isc_cursor_next(&c, &r)) == 1) {
		if (r.type >= 0x80 && r.type != ISC_REC_META) /* META: the recorder's environment */
			continue;
		const uint8_t *b = r.body, *e = r.body + r.len;
		uint64_t pid = 0, tid = 0;
		struct mev ev = { .ts = out_ts(in, r.ts), .type = r.type };
		if (isc_record_nvarints(r.type) >= 1 && r.type != ISC_REC_META && r.type != ISC_REC_PRESSURE && r.type != ISC_REC_MEMINFO &&
		    r.type != ISC_REC_CLOCK_PAIR && r.type != ISC_REC_DROPPED && r.type != ISC_REC_GPU_SAMPLE &&
		    r.type != ISC_REC_GPU_INFO && r.type != ISC_REC_PY_SAMPLER &&
		    (r.type < ISC_REC_GPU_OP || r.type > ISC_REC_GPU_AGENT))
			isc_get_varint(&b, e, &pid); /* the record's first field is its process */
		bool native = r.type >= ISC_REC_NATIVE_SAMPLER && r.type <= ISC_REC_NATIVE_STATS;
		if (h->type == ISC_CHUNK_NATIVE ? !native : r.type >= ISC_REC_NATIVE_SAMPLER && r.type <= 0x37)
			continue; /* the native sampler's types live in NATIVE chunks, and only they */
		if (native && !isc_native_record_ok(r.type, r.body, r.len)) {
			rc = -EBADMSG; /* a reader of the timeline could not parse it either */
			break;
		}
		if (r.type == ISC_REC_THREAD_SAMPLE || r.type == ISC_REC_THREAD_NAME || r.type == ISC_REC_THREAD_WAIT ||
		    r.type == ISC_REC_PY_SAMPLE || native)
			isc_get_varint(&b, e, &tid);
		ev.pid = (uint32_t)pid;
		ev.tid = (uint32_t)tid;
		if (r.type == ISC_REC_PROC_EXIT) {
			uint64_t st = 0;
			isc_get_varint(&b, e, &st);
			ev.value = isc_unzigzag(st);
			if (isc_grow(&m->exits, &m->capexits, m->nexits, sizeof(*m->exits))) {
				rc = -ENOMEM;
				break;
			}
			m->exits[m->nexits++] = (struct pexit){ ii, ev.pid, ev.ts };
		}
		if (ev.ts > in->max_ts)
			in->max_ts = ev.ts;
		struct queue *q = NULL; /* a chunk holds a few (pid, tid): a search beats a map */
		for (size_t i = 0; i < nq && !q; i++)
			if (qs[i]->pid == ev.pid && qs[i]->tid == ev.tid)
				q = qs[i];
		if (!q) {
			if (isc_grow(&qs, &capq, nq, sizeof(*qs)) || !(q = calloc(1, sizeof(*q)))) {
				rc = -ENOMEM;
				break;
			}
			qs[nq++] = q;
			*q = (struct queue){ .input = ii, .rank = 1, .pid = ev.pid, .tid = ev.tid,
					     .order = m->next_order++, .transient = true };
		}
		if (r.type == ISC_REC_PY_SAMPLE) {
			/* the frames' code ids are the process's: make them global */
			if ((rc = py_sample_body(m, ii, ev.pid, r.body, r.len, &ev)))
				break;
		} else {
			ev.body = malloc(r.len ? r.len : 1);
			if (!ev.body) {
				rc = -ENOMEM;
				break;
			}
			memcpy(ev.body, r.body, r.len);
			ev.body_len = (uint32_t)r.len;
		}
		m->res->events_in++;
		if ((rc = queue_push(m, q, &ev))) {
			free(ev.body);
			break;
		}
	}
	for (size_t i = 0; i < nq; i++)
		if (!qs[i]->in_heap) {
			queue_free(qs[i]);
			free(qs[i]);
		}
	free(qs);
	return rc;
}

/* ---- GPU_EVENTS chunks: the CUDA agent's records ------------------------ */

/* A META record (key, decimal value) after the last event. */
static int emit_meta(struct merge *m, const char *key, int64_t value)
{
	struct isc_buf b = { 0 };
	char val[24];
	size_t kl = strlen(key);
	int vl = snprintf(val, sizeof(val), "%lld", (long long)value);
	if (isc_buf_put_varint(&b, kl) || isc_buf_put(&b, key, kl) || isc_buf_put(&b, val, (size_t)vl)) {
		isc_buf_free(&b);
		return -ENOMEM;
	}
	struct isc_tl_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = ISC_REC_META;
	ev.ts = m->last_out;
	ev.raw = b.data;
	ev.nraw = b.len;
	ev.f[0] = kl;
	ev.nf = 1;
	ev.bytes = b.data + (b.len - kl - (size_t)vl);
	ev.nbytes = kl + (size_t)vl;
	m->res->events_out++;
	int rc = m->sink->event(m->sink->ctx, &ev);
	isc_buf_free(&b);
	return rc;
}

/*
 * The clock check, after the last event: gpu.min_launch_gap_ns is the
 * smallest (start - launching call's start) over the linked kernels,
 * copies and memsets; negative, it is clock skew between the GPU's times
 * and the CPU's, also written as gpu.clock_skew_ns and said on stderr.
 */
static int gpu_summary(struct merge *m)
{
	const struct isc_merge_result *r = m->res;
	int rc = 0;
	if (r->gpu_ops || r->gpu_calls || r->gpu_dropped)
		isc_log(ISC_LOG_INFO, "GPU: %llu operations, %llu of them linked to their launching call; %llu calls; "
				      "%llu records lost by CUPTI",
			(unsigned long long)r->gpu_ops, (unsigned long long)r->gpu_linked,
			(unsigned long long)r->gpu_calls, (unsigned long long)r->gpu_dropped);
	if (!m->res->have_launch_gap)
		return 0;
	rc = emit_meta(m, "gpu.min_launch_gap_ns", m->res->min_launch_gap_ns);
	if (!rc && m->res->min_launch_gap_ns < 0) {
		isc_log(ISC_LOG_WARN, "clock skew: a GPU operation starts %lld ns before the call that launched it; "
				      "GPU times are off by at least that much",
			-(long long)m->res->min_launch_gap_ns);
		rc = emit_meta(m, "gpu.clock_skew_ns", -m->res->min_launch_gap_ns);
	}
	return rc;
}

#define GPU_LAG_MAX 60000000000ull /* the reorder delay never grows past 60 s */
#define GKEY_CALLS (1ull << 63)    /* | tid: a thread's calls and NVTX ranges */
#define GKEY_MISC (1ull << 62)     /* the process's other records */
#define GKEY_ALLOC (1ull << 61)    /* | tid: allocation records (ALLOC chunks) of a thread; tid 0 the rest */

/*
 * The GPU queue of (input, pid, gkey): device << 32 | stream for the
 * operations and memory records of a stream, GKEY_CALLS | tid, GKEY_MISC;
 * and the allocation queues, GKEY_ALLOC | tid (rank 3).  Queues live until
 * the end of the merge.  Records of a queue share its context: (pid, tid)
 * for calls and allocation records, (pid, 0) for the rest.
 */
static struct queue *gpu_queue(struct merge *m, unsigned ii, uint32_t pid, uint64_t gkey)
{
	uint64_t h = (uint64_t)ii << 58 ^ (uint64_t)pid << 26 ^ gkey;
	size_t pos = 0;
	for (uint32_t i; (i = isc_hindex_next(&m->gpuq_index, h, &pos)) != ISC_UMAP_NONE;)
		if (m->gpuqs[i]->input == ii && m->gpuqs[i]->pid == pid && m->gpuqs[i]->gkey == gkey)
			return m->gpuqs[i];
	struct queue *q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	uint32_t tid = gkey & (GKEY_CALLS | GKEY_ALLOC) ? (uint32_t)gkey : 0;
	*q = (struct queue){ .input = ii, .rank = gkey & GKEY_ALLOC ? 3 : 2, .pid = pid, .tid = tid,
			     .order = m->next_order++, .sorted = true, .gkey = gkey };
	if ((tid && (gkey & GKEY_CALLS) && !(q->owner = thread_get(m, ii, pid, tid))) ||
	    isc_grow(&m->gpuqs, &m->capgpuqs, m->ngpuqs, sizeof(*m->gpuqs)) ||
	    isc_hindex_add(&m->gpuq_index, h, (uint32_t)m->ngpuqs)) {
		free(q);
		return NULL;
	}
	m->gpuqs[m->ngpuqs++] = q;
	return q;
}

/*
 * The timeline body of a trace GPU record (the part after start offset and
 * tid) with the process's string ids made global; *gkey its queue.
 */
static int gpu_body(struct merge *m, unsigned ii, uint32_t pid, uint8_t type, const uint8_t *p, const uint8_t *e,
		    uint32_t tid, struct isc_buf *out, uint64_t *gkey)
{
	uint64_t v[8];
	int rc = 0;
	if (type == ISC_REC_GPU_OP || type == ISC_REC_GPU_API) {
		struct isc_tl_event t;
		memset(&t, 0, sizeof(t));
		t.type = type;
		if (isc_gpu_decode(&t, type, p, (size_t)(e - p)))
			return -EBADMSG;
		t.name_id = strings_lookup(m, ii, pid, t.name_id, ISC_STR_CFUNC);
		if (t.gpu.py_site) /* the Python line of the call (the CUDA agent, sample mode) */
			t.gpu.py_site = strings_lookup(m, ii, pid, t.gpu.py_site, ISC_STR_CODE);
		t.gpu.has_link = false; /* links are the merge's to make */
		t.gpu.launch_span_id = 0;
		*gkey = type == ISC_REC_GPU_API ? GKEY_CALLS | tid : (uint64_t)t.gpu.device << 32 | t.gpu.stream;
		return isc_gpu_encode(out, &t);
	}
	unsigned n = isc_record_nvarints(type);
	for (unsigned i = 0; i < n; i++)
		if (isc_get_varint(&p, e, &v[i]))
			return -EBADMSG;
	if (type == ISC_REC_NVTX_RANGE) { /* name_id dur domain_id color category flags */
		v[0] = strings_lookup(m, ii, pid, v[0], ISC_STR_SCOPE);
		v[2] = v[2] ? strings_lookup(m, ii, pid, v[2], ISC_STR_SCOPE) : 0;
		*gkey = GKEY_CALLS | tid;
	} else { /* GPU_MEMORY: device stream ... flags */
		*gkey = (v[0] & 0xffffffffu) << 32 | (v[1] & 0xffffffffu);
		v[7] &= ~(uint64_t)ISC_GPU_MEM_TOTALS; /* a timeline-only flag: no totals follow here */
	}
	for (unsigned i = 0; i < n; i++)
		rc |= isc_buf_put_varint(out, v[i]);
	return rc ? -ENOMEM : 0;
}

/*
 * Decodes a GPU_EVENTS chunk.  Its records carry the time the agent wrote
 * them; a GPU_OP, GPU_API, NVTX_RANGE or GPU_MEMORY also its start, as an
 * offset, and goes into its queue at that start, in time order.  Because
 * a start can be older than the watermark that preceded its record, the
 * merge releases this input's events only lag ns behind its watermark
 * (see isc_merge): lag is the delay the agent announced (GPU_AGENT), and
 * grows to the largest delay seen, up to GPU_LAG_MAX; a record later than
 * that is a late event.
 */
static int read_gpu(struct merge *m, unsigned ii, const struct isc_chunk_header *h, const uint8_t *p)
{
	struct input *in = &m->inputs[ii];
	struct isc_buf body = { 0 };
	struct isc_cursor c;
	struct isc_rec r;
	int rc;
	isc_cursor_init(&c, p, h->payload_len, h->base_ts);
	while ((rc = isc_cursor_next(&c, &r)) == 1) {
		const uint8_t *q = r.body, *e = r.body + r.len;
		uint64_t ts = out_ts(in, r.ts), gkey = GKEY_MISC, v = 0, tid = 0;
		struct mev ev = { .ts = ts, .pid = h->pid, .type = r.type };
		body.len = 0;
		m->res->events_in++;
		if (ts > in->max_ts)
			in->max_ts = ts;
		switch (r.type) {
		case ISC_REC_GPU_OP:
		case ISC_REC_GPU_API:
		case ISC_REC_NVTX_RANGE:
		case ISC_REC_GPU_MEMORY: {
			uint64_t off;
			if (isc_get_varint(&q, e, &off) || isc_get_varint(&q, e, &tid) || tid > UINT32_MAX) {
				rc = -EBADMSG;
				goto out;
			}
			int64_t d = isc_unzigzag(off);
			uint64_t start = d < 0 && (uint64_t)-d > r.ts ? 0 : r.ts + (uint64_t)d;
			if (start <= r.ts && r.ts - start > in->gpu_lag) /* later than announced: wait longer */
				in->gpu_lag = r.ts - start < GPU_LAG_MAX ? r.ts - start : GPU_LAG_MAX;
			ev.ts = out_ts(in, start);
			if (r.type == ISC_REC_GPU_API || r.type == ISC_REC_NVTX_RANGE)
				ev.tid = (uint32_t)tid;
			if ((rc = gpu_body(m, ii, h->pid, r.type, q, e, (uint32_t)tid, &body, &gkey)))
				goto out;
			break;
		}
		case ISC_REC_GPU_AGENT: { /* cupti_version built lag_ms flush_ms */
			uint64_t f[3];
			if (isc_get_varint(&q, e, &f[0]) || isc_get_varint(&q, e, &f[1]) || isc_get_varint(&q, e, &f[2])) {
				rc = -EBADMSG;
				goto out;
			}
			if (f[2] * 1000000u > in->gpu_lag)
				in->gpu_lag = f[2] < GPU_LAG_MAX / 1000000u ? f[2] * 1000000u : GPU_LAG_MAX;
			break;
		}
		case ISC_REC_GPU_DROPPED:
		case ISC_REC_DROPPED: /* the agent's ring was full: written by the recorder */
			if (isc_get_varint(&q, e, &v)) {
				rc = -EBADMSG;
				goto out;
			}
			if (r.type == ISC_REC_DROPPED)
				in->drop_records += v;
			else
				m->res->gpu_dropped += v;
			break;
		default:
			if (r.type >= 0x80 && r.type != ISC_REC_DEVICE && r.type != ISC_REC_META)
				continue; /* untimed records other than those are not events */
			break;
		}
		if (!body.len && (rc = isc_buf_put(&body, r.body, r.len)))
			goto out;
		struct queue *gq = gpu_queue(m, ii, h->pid, gkey);
		ev.body = malloc(body.len ? body.len : 1);
		if (!gq || !ev.body) {
			free(ev.body);
			rc = -ENOMEM;
			goto out;
		}
		if (body.len) /* an empty record has no buffer */
			memcpy(ev.body, body.data, body.len);
		ev.body_len = (uint32_t)body.len;
		if ((rc = queue_push(m, gq, &ev))) {
			free(ev.body);
			goto out;
		}
		if (r.type == ISC_REC_GPU_API) { /* remembered now: its operations may be written first */
			struct isc_tl_event api;
			memset(&api, 0, sizeof(api));
			if (!isc_gpu_decode(&api, r.type, body.data, body.len) && api.gpu.correlation &&
			    (rc = link_put(m, &(struct link){ .corr = api.gpu.correlation, .ts = ev.ts, .input = ii,
							      .pid = h->pid, .tid = ev.tid, .owner = gq->owner })))
				goto out;
		}
	}
out:
	isc_buf_free(&body);
	return rc;
}

/* ---- ALLOC chunks: the allocation shim's records ----------------------- */

/*
 * An ALLOC or ALLOC_SITE body with the process's code ids made global
 * (the timeline body, formats/timeline.md §4.5); -EBADMSG when it does
 * not parse.
 */
static int alloc_body(struct merge *m, unsigned ii, uint32_t pid, uint8_t type, const uint8_t *p, size_t len,
		      struct isc_buf *out)
{
	const uint8_t *pairs, *e = p + len;
	uint64_t f[12], depth, id, line;
	unsigned n = isc_record_nvarints(type);
	int rc = 0;
	if (isc_alloc_stack_parse(type, p, len, &pairs, &depth, f))
		return -EBADMSG;
	for (unsigned i = 0; i < n; i++)
		rc |= isc_buf_put_varint(out, f[i]);
	for (uint64_t k = 0; k < depth; k++) {
		isc_get_varint(&pairs, e, &id); /* parsed above */
		isc_get_varint(&pairs, e, &line);
		rc |= isc_buf_put_varint(out, strings_lookup(m, ii, pid, id, ISC_STR_CODE));
		rc |= isc_buf_put_varint(out, line);
	}
	rc |= isc_buf_put(out, pairs, (size_t)(e - pairs)); /* native frames, fields of a later version */
	return rc ? -ENOMEM : 0;
}

/*
 * Decodes an ALLOC chunk (formats/trace.md §6.6): the shim's rings, whose
 * records each name their thread, and the recorder's site table of a dead
 * process (tid 0).  Records go to one queue per (pid, thread), in time
 * order (rings are not per thread, so a thread's records may come from
 * two chunks), rank 3: after the agents' records, the samples and the GPU
 * records of the same time.
 */
static int read_alloc(struct merge *m, unsigned ii, const struct isc_chunk_header *h, const uint8_t *p)
{
	struct input *in = &m->inputs[ii];
	struct isc_buf body = { 0 };
	struct isc_cursor c;
	struct isc_rec r;
	int rc;
	isc_cursor_init(&c, p, h->payload_len, h->base_ts);
	while ((rc = isc_cursor_next(&c, &r)) == 1) {
		const uint8_t *q = r.body, *e = r.body + r.len;
		uint64_t ts = out_ts(in, r.ts), v = 0, tid = 0;
		struct mev ev = { .ts = ts, .pid = h->pid, .type = r.type };
		if (r.type >= 0x80)
			continue;
		body.len = 0;
		m->res->events_in++;
		if (ts > in->max_ts)
			in->max_ts = ts;
		switch (r.type) {
		case ISC_REC_ALLOC:
		case ISC_REC_ALLOC_SITE:
			if (r.type == ISC_REC_ALLOC && (isc_get_varint(&q, e, &tid) || tid > UINT32_MAX)) {
				rc = -EBADMSG;
				goto out;
			}
			if ((rc = alloc_body(m, ii, h->pid, r.type, r.body, r.len, &body)))
				goto out;
			ev.type = r.type == ISC_REC_ALLOC ? ISC_REC_TL_ALLOC : ISC_REC_TL_ALLOC_SITE;
			break;
		case ISC_REC_FREE:
			if (isc_get_varint(&q, e, &tid) || tid > UINT32_MAX) {
				rc = -EBADMSG;
				goto out;
			}
			ev.type = ISC_REC_TL_FREE;
			break;
		case ISC_REC_ALLOC_INFO:
			ev.type = ISC_REC_TL_ALLOC_INFO;
			break;
		case ISC_REC_WARNING: /* context: the record's process */
			if (isc_get_varint(&q, e, &v) || v > UINT32_MAX) {
				rc = -EBADMSG;
				goto out;
			}
			ev.pid = (uint32_t)v;
			break;
		case ISC_REC_DROPPED: /* the shim's rings were full: written by the recorder */
			if (isc_get_varint(&q, e, &v)) {
				rc = -EBADMSG;
				goto out;
			}
			in->drop_records += v;
			break;
		default:
			break;
		}
		ev.tid = (uint32_t)tid;
		if (!body.len && (rc = isc_buf_put(&body, r.body, r.len)))
			goto out;
		struct queue *aq = gpu_queue(m, ii, ev.pid, GKEY_ALLOC | tid);
		ev.body = malloc(body.len ? body.len : 1);
		if (!aq || !ev.body) {
			free(ev.body);
			rc = -ENOMEM;
			goto out;
		}
		if (body.len)
			memcpy(ev.body, body.data, body.len);
		ev.body_len = (uint32_t)body.len;
		if ((rc = queue_push(m, aq, &ev))) {
			free(ev.body);
			goto out;
		}
	}
out:
	isc_buf_free(&body);
	return rc;
}

static void read_end(struct input *in, const uint8_t *p, size_t len)
{
	struct isc_end_stats e;
	bool found;
	isc_end_stats_read(p, len, &e, &found); /* damage: what parsed counts */
	if (found) {
		in->end_dropped = e.dropped;
		in->end_lost = e.lost_frames;
		in->end_status = e.status;
		in->end_flags = e.flags;
		in->have_end = true;
	}
}

static void note_damage(struct merge *m, unsigned ii, const char *what)
{
	m->res->damaged_frames++;
	if (!m->res->bad_input) {
		m->res->bad_input = ii + 1;
		snprintf(m->res->damage, sizeof(m->res->damage), "%s", what);
	}
}

/* Reads input ii up to its next ROUND (or its end).  Fatal errors only are returned. */
static int read_round(struct merge *m, unsigned ii)
{
	struct input *in = &m->inputs[ii];
	for (;;) {
		struct isc_chunk_header h;
		const uint8_t *p;
		isc_err_clear();
		int rc = isc_reader_next(in->rd, &h, &p);
		if (rc == 0) {
			in->done = true;
			in->watermark = UINT64_MAX;
			return 0;
		}
		if (rc == -EBADMSG || rc == -EFBIG) {
			note_damage(m, ii, isc_err_msg());
			continue;
		}
		if (rc < 0)
			return rc;
		switch (h.type) {
		case ISC_CHUNK_EVENTS:
			rc = read_events(m, ii, &h, p);
			break;
		case ISC_CHUNK_SAMPLES:
		case ISC_CHUNK_NATIVE: /* the native sampler's records, passed through the same way */
			rc = read_samples(m, ii, &h, p);
			break;
		case ISC_CHUNK_GPU_EVENTS:
			rc = read_gpu(m, ii, &h, p);
			break;
		case ISC_CHUNK_ALLOC:
			rc = read_alloc(m, ii, &h, p);
			break;
		case ISC_CHUNK_STRINGS:
			rc = read_strings(m, ii, h.pid, p, h.payload_len);
			break;
		case ISC_CHUNK_ROUND:
			if (h.base_ts == UINT64_MAX) {
				in->watermark = UINT64_MAX - 1;
			} else {
				uint64_t w = out_ts(in, h.base_ts);
				if (w > in->watermark)
					in->watermark = w;
			}
			return 0;
		case ISC_CHUNK_END:
			read_end(in, p, h.payload_len);
			break;
		case ISC_CHUNK_FILE_HEADER:
			note_damage(m, ii, "a second file header (concatenated traces must be given as separate inputs)");
			break;
		default:
			break; /* unknown chunk types are skipped */
		}
		if (rc == -EBADMSG) {
			char msg[128];
			snprintf(msg, sizeof(msg), "corrupt record in chunk %llu",
				 (unsigned long long)isc_reader_chunks(in->rd));
			note_damage(m, ii, msg);
		} else if (rc < 0) {
			return rc;
		}
	}
}

static int open_input(struct merge *m, unsigned ii)
{
	struct input *in = &m->inputs[ii];
	struct isc_chunk_header h;
	const uint8_t *p;
	uint32_t magic = 0;
	int rc;
	if ((rc = isc_reader_new(&in->rd, in->in->in)))
		return rc;
	rc = isc_reader_next(in->rd, &h, &p);
	if (rc == 0) {
		isc_err_push("empty input");
		return -EBADMSG;
	}
	if (rc < 0) {
		if (isc_reader_offset(in->rd) == 0 || rc == -EBADMSG)
			isc_err_push("not an InferScope trace");
		return rc;
	}
	if (h.type != ISC_CHUNK_FILE_HEADER) {
		isc_err_push("not an InferScope trace");
		return -EBADMSG;
	}
	if ((rc = isc_header_parse(p, h.payload_len, &in->hdr, &magic)))
		return rc;
	if (magic != ISC_TRACE_MAGIC) {
		isc_err_push(magic == ISC_TIMELINE_MAGIC ? "already a timeline, not a trace" : "not a trace");
		return -EBADMSG;
	}
	if (!in->hdr.epoch_mono_ns && !in->hdr.epoch_realtime_ns) {
		isc_err_push("the trace has no clock information: cannot align it");
		return -EPROTO;
	}
	return 0;
}

int isc_merge(const struct isc_merge_input *inputs, size_t n, struct isc_sink *sink,
	      struct isc_merge_result *res)
{
	struct merge m;
	int rc = 0;
	memset(&m, 0, sizeof(m));
	memset(res, 0, sizeof(*res));
	m.sink = sink;
	m.res = res;
	m.ninputs = n;
	m.inputs = calloc(n, sizeof(*m.inputs));
	if (!m.inputs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		m.inputs[i].in = &inputs[i];
		if ((rc = open_input(&m, (unsigned)i))) {
			isc_err_push("%s", inputs[i].name);
			goto out;
		}
	}
	/* one clock: same boot = same CLOCK_MONOTONIC; otherwise align by wall clock */
	struct isc_tl_header out = m.inputs[0].hdr;
	for (size_t i = 1; i < n; i++)
		if (!strcmp(m.inputs[i].hdr.boot_id, out.boot_id) &&
		    m.inputs[i].hdr.epoch_mono_ns < out.epoch_mono_ns) {
			out.epoch_mono_ns = m.inputs[i].hdr.epoch_mono_ns;
			out.epoch_realtime_ns = m.inputs[i].hdr.epoch_realtime_ns;
		}
	for (size_t i = 0; i < n; i++) {
		struct input *in = &m.inputs[i];
		if (!strcmp(in->hdr.boot_id, out.boot_id)) {
			in->offset = -(int64_t)out.epoch_mono_ns;
		} else {
			in->offset = -(int64_t)in->hdr.epoch_mono_ns +
				     ((int64_t)in->hdr.epoch_realtime_ns - (int64_t)out.epoch_realtime_ns);
			if (in->hdr.clock_uncertainty_ns > out.clock_uncertainty_ns)
				out.clock_uncertainty_ns = in->hdr.clock_uncertainty_ns;
			isc_log(ISC_LOG_WARN, "%s: recorded on another boot or host; aligned by wall clock (as good as its NTP sync)",
				     inputs[i].name);
		}
	}
	out.epoch_mono_ns = 0; /* timeline times are relative to the epoch */
	if (sink->begin && (rc = sink->begin(sink->ctx, &out)))
		goto out;
	for (;;) {
		unsigned pick = 0;
		bool any = false;
		for (unsigned i = 0; i < n; i++)
			if (!m.inputs[i].done && (!any || m.inputs[i].watermark < m.inputs[pick].watermark)) {
				pick = i;
				any = true;
			}
		if (!any)
			break;
		if ((rc = read_round(&m, pick))) {
			isc_err_push("%s", inputs[pick].name);
			goto out;
		}
		/* an input with GPU records is released lag ns behind its watermark:
		 * their starts may be that much older than their trace times */
		uint64_t w = UINT64_MAX;
		for (unsigned i = 0; i < n; i++) {
			const struct input *in = &m.inputs[i];
			uint64_t wi = in->watermark;
			if (wi < UINT64_MAX - 1)
				wi = wi > in->gpu_lag ? wi - in->gpu_lag : 0;
			if (!in->done && wi < w)
				w = wi;
		}
		if ((rc = close_exited(&m, w)))
			goto out;
		if (m.inputs[pick].done) { /* still open: alive until the end of its data */
			struct input *in = &m.inputs[pick];
			for (size_t i = 0; i < m.nthreads; i++) {
				struct thread *t = m.threads[i];
				if (t->input == pick &&
				    (rc = close_all(&m, t, t->last_ts > in->max_ts ? t->last_ts : in->max_ts)))
					goto out;
			}
		}
		if ((rc = emit_until(&m, w)))
			goto out;
	}
	if ((rc = emit_until(&m, UINT64_MAX)) || (rc = gpu_summary(&m)))
		goto out;
	/* the last event itself (ts == UINT64_MAX never happens: out_ts clamps) */
	struct isc_tl_stats st = { 0 };
	st.events = res->events_out;
	for (size_t i = 0; i < n; i++) {
		struct input *in = &m.inputs[i];
		st.dropped += in->have_end ? in->end_dropped : in->drop_records;
		st.lost_frames += in->end_lost;
		if (!in->have_end)
			st.abrupt = true;
	}
	/* frames a flight recorder evicted are its design, not damage */
	st.window = st.lost_frames > 0 && res->damaged_frames == 0;
	st.lost_frames += res->damaged_frames;
	st.exit_status = m.inputs[0].end_status;
	st.signaled = (m.inputs[0].end_flags & ISC_END_SIGNALED) != 0;
	st.have_end = true;
	if (sink->end && (rc = sink->end(sink->ctx, &st)))
		goto out;
	rc = res->bad_input ? 1 : 0;
out:
	for (size_t i = 0; i < n; i++) {
		isc_reader_free(m.inputs[i].rd);
		isc_umap_free(&m.inputs[i].threads);
	}
	free(m.inputs);
	for (size_t i = 0; i < m.nthreads; i++) {
		struct thread *t = m.threads[i];
		queue_free(&t->q);
		free(t->calls);
		free(t->scopes);
		free(t->open);
		free(t);
	}
	free(m.threads);
	for (size_t i = 0; i < m.ngpuqs; i++) {
		queue_free(m.gpuqs[i]);
		free(m.gpuqs[i]);
	}
	free(m.gpuqs);
	isc_hindex_free(&m.gpuq_index);
	free(m.links);
	isc_hindex_free(&m.link_index);
	for (size_t i = 0; i < m.nheap; i++)
		if (m.heap[i]->transient) {
			queue_free(m.heap[i]);
			free(m.heap[i]);
		}
	free(m.heap);
	free(m.exits);
	isc_strtab_free(&m.st);
	isc_umap_free(&m.local);
	return rc;
}
