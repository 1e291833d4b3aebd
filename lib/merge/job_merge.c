/*
 * job_merge.c - the inputs of one distributed job into one timeline
 * (isc_job.h; formats/timeline.md §11):
 *
 *   input ──┬─ Kineto file ─────────> import ─┐   each source: a temporary
 *           └─ traces of one boot ──> merge  ─┤   timeline, its rank facts and
 *                                             │   collectives collected on the way
 *   sources ──> ranks resolved (dist_facts.c): one job, or refused
 *           ──> clocks aligned on the ends of symmetric collectives (dist_align.c)
 *           ──> k-way merge of the sources' timelines (heap by time, then
 *               source), each record's context given its source, string ids
 *               made global, span ids made unique, times shifted by the
 *               source's offset
 *
 * Memory: the sources' string tables and, per source, one chunk of its
 * timeline and its collectives (at most ISC_DIST_LOG_MAX per process);
 * the events go through spools (container.c): uncompressed in memory up
 * to SPOOL_BUDGET bytes for all the sources together, past a source's
 * share compressed into a temporary file.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "isc_util.h"
#include "isc_format.h"
#include "isc_trace_int.h" /* isc_alloc_stack_parse */
#include "isc_dist.h"
#include "isc_job.h"
#include "openspans.h"
#include "strtab.h"

/* zstd level of a source's temporary timeline once its spool spills to a file */
#define TMP_LEVEL (-5)
/* The sources' spools in memory together (each its share, at least SPOOL_MIN); 8 DLRM
 * ranks take 1.1 MB: kept in memory, their timelines are neither compressed nor
 * decompressed (8 DLRM ranks: 22 M fewer instructions than at level -5) */
#define SPOOL_BUDGET ((size_t)128 << 20)
#define SPOOL_MIN ((size_t)1 << 20)

/* ---- one source, collected while its temporary timeline is written ------ */
struct src {
	uint32_t index;
	bool kineto;
	size_t first_input, ninputs;
	struct isc_spool *tmp;          /* its temporary timeline */
	struct isc_sink *tl;            /* the temporary timeline's writer */
	struct isc_tl_header hdr;       /* its header, as written */
	char **names;                   /* its strings, by id */
	uint8_t *kinds;
	size_t nnames;
	bool have_first;
	int64_t first;                  /* its first timed record */
	struct isc_coll_tracker tr;     /* per process (pid) */
	struct isc_rank_facts *facts;   /* shared by the sources */
	int64_t offset;
	struct isc_align_result al;
	/* the final merge */
	struct isc_timeline *t;
	uint32_t *gid;                  /* local string id -> global */
	size_t ngid;
	uint64_t span_base;             /* added to its span ids */
	uint64_t span_max;
	struct isc_openspans open;
	struct isc_tl_event ev;         /* its next event */
	bool have_ev, done;
	uint64_t ts;                    /* ev's output time */
	int err;
	char damage[512];
};

static const char *src_name(void *ctx, uint32_t id, uint8_t *kind)
{
	struct src *s = ctx;
	if (id >= s->nnames || !s->names[id])
		return NULL;
	*kind = s->kinds[id];
	return s->names[id];
}

static int c_begin(void *ctx, const struct isc_tl_header *h)
{
	struct src *s = ctx;
	s->hdr = *h;
	return s->tl->begin(s->tl->ctx, h);
}

static int c_string(void *ctx, const struct isc_tl_string *str)
{
	struct src *s = ctx;
	if (str->id >= s->nnames) {
		size_t n = s->nnames ? s->nnames : 256;
		while (n <= str->id)
			n *= 2;
		char **nn = realloc(s->names, n * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		s->names = nn;
		uint8_t *nk = realloc(s->kinds, n);
		if (!nk)
			return -ENOMEM;
		s->kinds = nk;
		memset(s->names + s->nnames, 0, (n - s->nnames) * sizeof(*nn));
		memset(s->kinds + s->nnames, 0, n - s->nnames);
		s->nnames = n;
	}
	free(s->names[str->id]);
	if (!(s->names[str->id] = strdup(str->name)))
		return -ENOMEM;
	s->kinds[str->id] = str->kind;
	return s->tl->string(s->tl->ctx, str);
}

static int c_event(void *ctx, const struct isc_tl_event *ev)
{
	struct src *s = ctx;
	struct isc_tl_event e = *ev;
	size_t u;
	int rc;
	e.source = s->index;
	if (ev->type == ISC_REC_TL_SPAN_BEGIN && ev->span_id > s->span_max) /* the next source's span ids start above */
		s->span_max = ev->span_id;
	if (ev->type < 0x80 && (!s->have_first || (int64_t)ev->ts < s->first)) {
		s->first = (int64_t)ev->ts;
		s->have_first = true;
	}
	s->facts->ctx = s;
	if ((rc = isc_rankfacts_event(s->facts, &e)) || (rc = isc_colltrk_unit(&s->tr, ev->pid, &u)) ||
	    (rc = isc_colltrk_event(&s->tr, u, &e)))
		return rc;
	return s->tl->event(s->tl->ctx, ev); /* its own timeline: source 0 */
}

static int c_end(void *ctx, const struct isc_tl_stats *st)
{
	struct src *s = ctx;
	return s->tl->end(s->tl->ctx, st);
}

/* Writes source s's temporary timeline from its inputs (budget: its spool's in memory); 0, 1 (damaged) or negative. */
static int collect(struct src *s, const struct isc_merge_input *in, const struct isc_kineto_opts *ko, size_t budget,
		   struct isc_job_result *res)
{
	int rc;
	/* read back once, by this merge: a spilled one compressed fast (8 DLRM ranks: 17 M fewer instructions than level 3) */
	if ((rc = isc_spool_new(&s->tmp, budget, TMP_LEVEL)) || (rc = isc_sink_timeline_new_spool(&s->tl, s->tmp)))
		return rc;
	struct isc_sink c = { s, c_begin, c_string, c_event, c_end, NULL };
	if (s->kineto) {
		struct isc_kineto_result kr;
		rc = isc_kineto_import(in[s->first_input].in, in[s->first_input].name, &c, ko, &kr);
		if (rc == 1 && !res->bad_input) {
			res->bad_input = (unsigned)s->first_input + 1;
			snprintf(res->damage, sizeof(res->damage), "%s", kr.damage);
			res->kept = kr.events_out;
		}
	} else {
		struct isc_merge_result mr;
		rc = isc_merge(in + s->first_input, s->ninputs, &c, &mr);
		if (rc == 1 && !res->bad_input) {
			res->bad_input = (unsigned)(s->first_input + mr.bad_input);
			snprintf(res->damage, sizeof(res->damage), "%s", mr.damage);
			res->kept = mr.events_out;
		}
	}
	if (rc < 0)
		isc_err_push("%s", in[s->first_input].name);
	isc_sink_free(s->tl);
	s->tl = NULL;
	return rc;
}

/* ---- clocks ------------------------------------------------------------------ */
/* The collectives of rank k (of f): its process with kernels, else the one with the most calls. */
static const struct isc_coll *rank_colls(struct src *s, const struct isc_rank *rk, size_t *n)
{
	const struct isc_coll *best = NULL;
	size_t bn = 0;
	bool bk = false;
	for (size_t u = 0; u < s->tr.nunits; u++) {
		uint64_t pid = 0;
		uint32_t val;
		bool mine = rk->npids == 1 && rk->pids[0] == 0; /* a Kineto file: all its processes */
		for (size_t pos = 0; !mine && isc_umap_each(&s->tr.bykey, &pos, &pid, &val);)
			if (val == u)
				for (size_t q = 0; q < rk->npids; q++)
					mine |= rk->pids[q] == pid;
		if (!mine)
			continue;
		size_t m;
		const struct isc_coll *c = isc_colltrk_get(&s->tr, u, &m);
		bool k = m && c[0].gpu;
		if (m && ((k && !bk) || (k == bk && m > bn))) {
			best = c;
			bn = m;
			bk = k;
		}
	}
	*n = bn;
	return best;
}

struct key_end {
	uint64_t key;
	uint32_t source;
	int64_t end;
	bool sym;
};

static int key_cmp(const void *a, const void *b)
{
	const struct key_end *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int align(struct src *srcs, size_t ns, const struct isc_rank_facts *f)
{
	size_t total = 0, ne = 0;
	const struct isc_coll **cs = calloc(f->nranks ? f->nranks : 1, sizeof(*cs));
	size_t *nc = calloc(f->nranks ? f->nranks : 1, sizeof(*nc));
	struct isc_align_result *al = calloc(ns, sizeof(*al));
	struct isc_align_end *ends = NULL;
	int rc = -ENOMEM;
	if (!cs || !nc || !al)
		goto out;
	bool by_seq = f->nranks > 0;
	for (size_t k = 0; k < f->nranks; k++) {
		cs[k] = rank_colls(&srcs[f->ranks[k].source], &f->ranks[k], &nc[k]);
		total += nc[k];
		for (size_t i = 0; i < nc[k] && by_seq; i++)
			by_seq = cs[k][i].seq != 0;
	}
	struct key_end *ke = malloc((total ? total : 1) * sizeof(*ke));
	if (!ke || !(ends = malloc((total ? total : 1) * sizeof(*ends)))) {
		free(ke);
		goto out;
	}
	size_t nk = 0;
	for (size_t k = 0; k < f->nranks; k++)
		for (size_t i = 0; i < nc[k]; i++) {
			const struct isc_coll *c = &cs[k][i];
			ke[nk++] = (struct key_end){ by_seq ? (uint64_t)c->pg << 40 | c->seq : (uint64_t)c->chan << 40 | c->idx,
						     f->ranks[k].source,
						     (int64_t)srcs[f->ranks[k].source].hdr.epoch_realtime_ns + c->end,
						     isc_coll_symmetric(c->op) };
		}
	/* the ends of symmetric collectives two sources share (dist_reduce.c reads them alike) */
	if (nk > 1) /* qsort may not be given NULL, which an empty list can be */
		qsort(ke, nk, sizeof(*ke), key_cmp);
	for (size_t a = 0; a < nk;) {
		size_t b = a;
		bool multi = false, sym = true;
		while (b < nk && ke[b].key == ke[a].key) {
			multi |= ke[b].source != ke[a].source;
			sym &= ke[b].sym;
			b++;
		}
		for (size_t q = a; multi && sym && q < b; q++)
			ends[ne++] = (struct isc_align_end){ ke[q].key, ke[q].source, ke[q].end };
		a = b;
	}
	free(ke);
	uint32_t ref = f->nranks ? f->ranks[0].source : 0;
	if ((rc = isc_clock_align(ends, ne, ns, ref, al)))
		goto out;
	for (size_t s = 0; s < ns; s++) {
		srcs[s].al = al[s];
		srcs[s].offset = al[s].aligned ? al[s].offset_ns : 0;
	}
out:
	free(cs);
	free(nc);
	free(al);
	free(ends);
	return rc;
}

/* ---- the merge of the sources' timelines ------------------------------------- */
struct jm {
	struct src *srcs;
	size_t ns;
	struct isc_sink *sink;
	struct isc_strtab st;
	struct isc_buf body;
	int64_t epoch; /* the output's time 0, ns since 1970 */
	struct src **heap;
	size_t nheap;
};

/* The global id of source s's string id (sent to the sink when new); 0 for id 0 or an unknown id. */
static int gid_of(struct jm *m, struct src *s, uint64_t id, uint32_t *out)
{
	*out = 0;
	if (!id || id > UINT32_MAX)
		return 0;
	if (id >= s->ngid) {
		size_t n = s->ngid ? s->ngid : 256;
		while (n <= id)
			n *= 2;
		uint32_t *g = realloc(s->gid, n * sizeof(*g));
		if (!g)
			return -ENOMEM;
		memset(g + s->ngid, 0, (n - s->ngid) * sizeof(*g));
		s->gid = g;
		s->ngid = n;
	}
	if (!s->gid[id]) {
		const struct isc_tl_string *str = isc_timeline_string_borrow(s->t, (uint32_t)id);
		if (!str)
			return 0;
		int rc = isc_strtab_intern(&m->st, str->kind, str->line, str->name, strlen(str->name), str->file,
					   strlen(str->file), &s->gid[id]);
		if (rc < 0)
			return rc;
		if (rc == 1 && m->sink->string && (rc = m->sink->string(m->sink->ctx, &m->st.v[s->gid[id]])))
			return rc;
	}
	*out = s->gid[id];
	return 0;
}

/*
 * The body of a record that names strings in its fields, rewritten with
 * global ids: the first nv varints (ids at the positions in idpos, nid of
 * them), then (pairs at the pair count varint pc, < 0 none) the (id, line)
 * pairs, then the rest as it is.  ev's f, bytes and raw then describe it.
 */
static int rewrite(struct jm *m, struct src *s, struct isc_tl_event *ev, unsigned nv, const unsigned *idpos,
		   unsigned nid, int pc)
{
	const uint8_t *p = ev->raw, *e = ev->raw + ev->nraw;
	uint64_t f[16], v, line;
	int rc;
	m->body.len = 0;
	for (unsigned i = 0; i < nv; i++)
		if (isc_get_varint(&p, e, &f[i]))
			return 0; /* the reader checked it: cannot happen */
	for (unsigned k = 0; k < nid; k++) {
		uint32_t g;
		if ((rc = gid_of(m, s, f[idpos[k]], &g)))
			return rc;
		f[idpos[k]] = g;
	}
	for (unsigned i = 0; i < nv; i++)
		if (isc_buf_put_varint(&m->body, f[i]))
			return -ENOMEM;
	size_t boff = m->body.len;
	for (uint64_t k = 0; pc >= 0 && k < f[pc]; k++) {
		uint32_t g;
		if (isc_get_varint(&p, e, &v) || isc_get_varint(&p, e, &line))
			return 0;
		if ((rc = gid_of(m, s, v, &g)) || isc_buf_put_varint(&m->body, g) || isc_buf_put_varint(&m->body, line))
			return rc ? rc : -ENOMEM;
	}
	if (isc_buf_put(&m->body, p, (size_t)(e - p)))
		return -ENOMEM;
	for (unsigned i = 0; i < nv && i < 16; i++)
		ev->f[i] = f[i];
	ev->raw = m->body.data;
	ev->nraw = m->body.len;
	if (ev->bytes) {
		ev->bytes = m->body.data + boff;
		ev->nbytes = m->body.len - boff;
	}
	return 0;
}

/* Source s's event ev made the output's: its source, global string ids, unique span ids, its time. */
static int convert(struct jm *m, struct src *s, struct isc_tl_event *ev)
{
	static const unsigned exc[] = { 1, 2, 3 }, nvtx[] = { 0, 2 };
	uint32_t g;
	int rc = 0;
	struct isc_openspan o;
	ev->source = s->index;
	switch (ev->type) {
	case ISC_REC_TL_SPAN_BEGIN:
		if ((rc = gid_of(m, s, ev->name_id, &g)))
			return rc;
		ev->name_id = g;
		ev->span_id += s->span_base;
		ev->parent_id += ev->parent_id ? s->span_base : 0;
		return isc_openspans_add(&s->open, ev->span_id, ev->name_id, ev->kind);
	case ISC_REC_TL_SPAN_END:
		ev->span_id += s->span_base;
		if (isc_openspans_take(&s->open, ev->span_id, &o)) {
			ev->name_id = o.name_id;
			ev->kind = o.kind;
		}
		return 0;
	case ISC_REC_MARK:
		rc = gid_of(m, s, ev->name_id, &g);
		ev->name_id = g;
		return rc;
	case ISC_REC_GPU_OP:
	case ISC_REC_GPU_API:
		rc = gid_of(m, s, ev->name_id, &g);
		ev->name_id = g;
		ev->gpu.launch_span_id += ev->gpu.launch_span_id ? s->span_base : 0;
		m->body.len = 0; /* the sinks encode GPU records from their fields; raw for the others */
		if (!rc && (rc = isc_gpu_encode(&m->body, ev)) == 0) {
			ev->raw = m->body.data;
			ev->nraw = m->body.len;
		}
		return rc;
	case ISC_REC_EXCEPTION_REF:
		return rewrite(m, s, ev, 4, exc, 3, -1);
	case ISC_REC_NVTX_RANGE:
		return rewrite(m, s, ev, 6, nvtx, 2, -1);
	case ISC_REC_PY_SAMPLE:
		return rewrite(m, s, ev, 5, NULL, 0, 4);
	case ISC_REC_TL_ALLOC:
		return rewrite(m, s, ev, 8, NULL, 0, 7);
	case ISC_REC_TL_ALLOC_SITE:
		return rewrite(m, s, ev, 12, NULL, 0, 11);
	default:
		return 0;
	}
}

/* Reads source s's next event into s->ev (s->have_ev), with its output time. */
static int advance(struct jm *m, struct src *s)
{
	int rc = isc_timeline_next(s->t, &s->ev);
	s->have_ev = rc == 1;
	if (rc < 0) { /* the temporary timeline cannot be damaged; an I/O error ends the source */
		snprintf(s->damage, sizeof(s->damage), "%s", isc_err_msg());
		isc_err_clear();
		s->done = true;
		return 0;
	}
	if (!s->have_ev) {
		s->done = true;
		return 0;
	}
	int64_t t = (int64_t)s->hdr.epoch_realtime_ns + (int64_t)s->ev.ts + s->offset - m->epoch;
	s->ts = t < 0 ? 0 : (uint64_t)t;
	return 0;
}

static bool before(const struct src *a, const struct src *b)
{
	return a->ts != b->ts ? a->ts < b->ts : a->index < b->index;
}

static void sift_down(struct jm *m, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, b = i;
		if (l < m->nheap && before(m->heap[l], m->heap[b]))
			b = l;
		if (r < m->nheap && before(m->heap[r], m->heap[b]))
			b = r;
		if (b == i)
			return;
		struct src *t = m->heap[i];
		m->heap[i] = m->heap[b];
		m->heap[b] = t;
		i = b;
	}
}

static int emit_source_info(struct jm *m, struct src *s, const char *name)
{
	int64_t off = s->offset;
	uint64_t f[6] = { s->index, s->kineto ? ISC_SOURCE_KINETO : ISC_SOURCE_TRACES, isc_zigzag(off),
			  s->al.aligned ? s->al.uncertainty_ns : s->hdr.clock_uncertainty_ns,
			  !s->al.aligned ? ISC_ALIGN_WALL_CLOCK : s->al.used ? ISC_ALIGN_COLLECTIVES : ISC_ALIGN_REFERENCE,
			  s->al.used };
	m->body.len = 0;
	for (int i = 0; i < 6; i++)
		if (isc_buf_put_varint(&m->body, f[i]))
			return -ENOMEM;
	size_t boff = m->body.len;
	if (isc_buf_put(&m->body, name, strlen(name) + 1) || isc_buf_put(&m->body, s->hdr.host, strlen(s->hdr.host) + 1) ||
	    isc_buf_put(&m->body, s->hdr.boot_id, strlen(s->hdr.boot_id)))
		return -ENOMEM;
	struct isc_tl_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.type = ISC_REC_SOURCE_INFO;
	ev.source = s->index;
	memcpy(ev.f, f, sizeof(f));
	ev.nf = 6;
	ev.raw = m->body.data;
	ev.nraw = m->body.len;
	ev.bytes = m->body.data + boff;
	ev.nbytes = m->body.len - boff;
	return m->sink->event(m->sink->ctx, &ev);
}

static int merge_sources(struct jm *m, struct isc_job_result *res)
{
	int rc;
	struct isc_tl_header h = m->srcs[0].hdr;
	struct isc_tl_stats st = { 0 };
	uint64_t base = 0;
	bool have = false;
	/* time 0: the earliest timed record of any source, on the aligned clock */
	for (size_t i = 0; i < m->ns; i++) {
		struct src *s = &m->srcs[i];
		int64_t t = (int64_t)s->hdr.epoch_realtime_ns + (s->have_first ? s->first : 0) + s->offset;
		if (s->have_first && (!have || t < m->epoch)) {
			m->epoch = t;
			have = true;
		}
		uint64_t u = s->al.aligned && s->al.used ? s->al.uncertainty_ns : s->hdr.clock_uncertainty_ns;
		if (u > h.clock_uncertainty_ns)
			h.clock_uncertainty_ns = u;
		s->span_base = base;
		base += s->span_max;
		if ((rc = isc_timeline_open_spool(&s->t, s->tmp)))
			return rc;
	}
	h.epoch_realtime_ns = have ? (uint64_t)m->epoch : 0;
	h.epoch_mono_ns = 0;
	if (m->sink->begin && (rc = m->sink->begin(m->sink->ctx, &h)))
		return rc;
	for (size_t i = 0; i < m->ns; i++)
		if ((rc = emit_source_info(m, &m->srcs[i], res->sources[i].name)))
			return rc;
	if (!(m->heap = calloc(m->ns, sizeof(*m->heap))))
		return -ENOMEM;
	for (size_t i = 0; i < m->ns; i++) {
		if ((rc = advance(m, &m->srcs[i])))
			return rc;
		if (m->srcs[i].have_ev)
			m->heap[m->nheap++] = &m->srcs[i];
	}
	for (size_t i = m->nheap; i-- > 0;)
		sift_down(m, i);
	while (m->nheap) {
		struct src *s = m->heap[0];
		struct isc_tl_event ev = s->ev;
		ev.ts = s->ts;
		if ((rc = convert(m, s, &ev)) || (rc = m->sink->event(m->sink->ctx, &ev)))
			return rc;
		res->events_out++;
		if ((rc = advance(m, s)))
			return rc;
		if (!s->have_ev)
			m->heap[0] = m->heap[--m->nheap];
		sift_down(m, 0);
	}
	for (size_t i = 0; i < m->ns; i++) {
		const struct isc_tl_stats *ss = isc_timeline_stats_borrow(m->srcs[i].t);
		st.dropped += ss->dropped;
		st.lost_frames += ss->lost_frames;
		st.abrupt |= ss->abrupt || !ss->have_end;
		st.signaled |= i == 0 && ss->signaled;
		if (i == 0)
			st.exit_status = ss->exit_status;
	}
	st.events = res->events_out;
	st.have_end = true;
	return m->sink->end ? m->sink->end(m->sink->ctx, &st) : 0;
}

/* ---- the whole ------------------------------------------------------------------ */

int isc_job_merge(const struct isc_merge_input *in, const enum isc_input_kind *kinds, const struct isc_tl_header *hdrs,
		  size_t n, struct isc_sink *sink, const struct isc_kineto_opts *ko, struct isc_job_result *res)
{
	struct isc_rank_facts facts;
	struct jm m = { .sink = sink };
	size_t *input_src = calloc(n ? n : 1, sizeof(*input_src));
	bool damaged = false;
	int rc = -ENOMEM;
	memset(res, 0, sizeof(*res));
	isc_rankfacts_init(&facts, src_name, NULL);
	if (!input_src || !(m.srcs = calloc(n ? n : 1, sizeof(*m.srcs))))
		goto out;
	/* the sources: a Kineto file each; the traces of one boot together (in the order of their first input) */
	for (size_t i = 0; i < n; i++) {
		size_t s = m.ns;
		if (kinds[i] == ISC_INPUT_TRACE)
			for (size_t j = 0; j < i; j++)
				if (kinds[j] == ISC_INPUT_TRACE && !strcmp(hdrs[j].boot_id, hdrs[i].boot_id) && hdrs[i].boot_id[0])
					s = input_src[j];
		input_src[i] = s;
		if (s == m.ns) {
			m.srcs[s] = (struct src){ .index = (uint32_t)s, .kineto = kinds[i] == ISC_INPUT_KINETO, .first_input = i,
						  .facts = &facts, .open = { .free_head = ISC_UMAP_NONE } };
			if ((rc = isc_colltrk_init(&m.srcs[s].tr, 0, ISC_DIST_LOG_MAX, src_name, &m.srcs[s])))
				goto out;
			m.ns++;
		}
		m.srcs[s].ninputs++;
	}
	/* traces of one boot are merged together: they must be adjacent inputs of isc_merge */
	struct isc_merge_input *ordered = calloc(n ? n : 1, sizeof(*ordered));
	if (!ordered)
		goto out;
	for (size_t s = 0, k = 0; s < m.ns; s++) {
		m.srcs[s].first_input = k;
		for (size_t i = 0; i < n; i++)
			if (input_src[i] == s)
				ordered[k++] = in[i];
	}
	size_t budget = SPOOL_BUDGET / (m.ns ? m.ns : 1);
	for (size_t s = 0; s < m.ns; s++) {
		struct src *x = &m.srcs[s];
		rc = collect(x, ordered, ko, budget < SPOOL_MIN ? SPOOL_MIN : budget, res);
		if (rc < 0) {
			free(ordered);
			goto out;
		}
		damaged |= rc == 1;
	}
	free(ordered);
	/* one job? */
	if ((rc = isc_rankfacts_resolve(&facts)) == -EINVAL) {
		snprintf(res->conflict, sizeof(res->conflict), "%s", facts.conflict);
		goto out;
	}
	if (rc)
		goto out;
	if ((rc = align(m.srcs, m.ns, &facts)))
		goto out;
	/* what each source holds and what the job lacks */
	uint32_t world = 0, *present = calloc(facts.nranks + 1, sizeof(*present));
	if (!present) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; k < facts.nranks; k++) {
		present[k] = facts.ranks[k].rank;
		if (facts.ranks[k].world != ISC_RANK_NONE)
			world = facts.ranks[k].world;
	}
	res->world_size = world;
	res->nranks = facts.nranks;
	if (!(res->sources = calloc(m.ns, sizeof(*res->sources)))) {
		free(present);
		rc = -ENOMEM;
		goto out;
	}
	res->nsources = m.ns;
	for (size_t s = 0; s < m.ns; s++) {
		struct isc_job_source *js = &res->sources[s];
		uint32_t mine[128];
		size_t nm = 0;
		for (size_t k = 0; k < facts.nranks && nm < 128; k++)
			if (facts.ranks[k].source == s)
				mine[nm++] = facts.ranks[k].rank;
		isc_rank_ranges(js->ranks, sizeof(js->ranks), mine, nm);
		js->inputs = (unsigned)m.srcs[s].ninputs;
		js->kineto = m.srcs[s].kineto;
		js->offset_ns = m.srcs[s].offset;
		js->uncertainty_ns = m.srcs[s].al.aligned ? m.srcs[s].al.uncertainty_ns : m.srcs[s].hdr.clock_uncertainty_ns;
		js->collectives = m.srcs[s].al.used;
		js->method = !m.srcs[s].al.aligned ? ISC_ALIGN_WALL_CLOCK : m.srcs[s].al.used ? ISC_ALIGN_COLLECTIVES
												 : ISC_ALIGN_REFERENCE;
		for (size_t i = 0; i < n; i++)
			if (input_src[i] == s) {
				snprintf(js->name, sizeof(js->name), "%s", in[i].name);
				break;
			}
	}
	uint32_t *missing = calloc((size_t)world + 1, sizeof(*missing));
	if (!missing) {
		free(present);
		rc = -ENOMEM;
		goto out;
	}
	for (uint32_t w = 0, k = 0; w < world; w++) {
		while (k < facts.nranks && present[k] < w)
			k++;
		if (k >= facts.nranks || present[k] != w)
			missing[res->nmissing++] = w;
	}
	isc_rank_ranges(res->missing, sizeof(res->missing), missing, res->nmissing);
	free(missing);
	free(present);
	rc = merge_sources(&m, res);
	if (!rc && damaged)
		rc = 1;
out:
	for (size_t s = 0; m.srcs && s < m.ns; s++) {
		struct src *x = &m.srcs[s];
		isc_sink_free(x->tl);
		if (x->t)
			isc_timeline_free(x->t);
		isc_spool_free(x->tmp);
		for (size_t i = 0; i < x->nnames; i++)
			free(x->names[i]);
		free(x->names);
		free(x->kinds);
		isc_colltrk_free(&x->tr);
		free(x->gid);
		isc_openspans_free(&x->open);
	}
	free(m.srcs);
	free(m.heap);
	free(input_src);
	isc_buf_free(&m.body);
	isc_strtab_free(&m.st);
	isc_rankfacts_free(&facts);
	return rc;
}

void isc_job_result_free(struct isc_job_result *res)
{
	free(res->sources);
	res->sources = NULL;
	res->nsources = 0;
}
