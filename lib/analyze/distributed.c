/*
 * distributed.c - the map step of the job view (analyze_dist.h): one pass
 * over a job's timeline, one analysis per rank, and each rank's entry of
 * distributed.ranks[] (iscope-analyze(1), DISTRIBUTED JOBS).
 *
 *   event ──> its rank: (source, pid) through the rank facts; a record of
 *   │         no process (pid 0: pressure, memory, clock pairs, a Kineto
 *   │         file's GPU records) goes to every rank of its source
 *   ├──> the rank's analysis (analyze.c)        -> the rank's document
 *   ├──> the rank's collectives (dist_coll.c)   -> its log
 *   └──> the rank's GPU time accounting (below) -> compute, communication,
 *                                                  overlap, idle
 *
 * GPU time, HTA's definitions (so the numbers can be checked against it):
 * a kernel with "nccl" (or "rccl") in its name is communication, any other
 * kernel computation; memcpy and memset are neither.  Each kind's
 * intervals are merged; overlap is the time both run, over the
 * communication time.  Operations come in start order, so both unions are
 * built as they come and a computation segment is intersected with the
 * communication segments when it is final (the next operation starts
 * after its end):
 *
 *   comm  ====      =========          ====
 *   comp    ======     ===  ===   ==
 *   both    ^^         ^^^  ^^^          -> overlap
 *
 * Memory: the open segments and the communication segments a computation
 * segment may still reach, not the trace length.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_format.h"
#include "isc_util.h"
#include "isc_jbuild.h"
#include "analyze_pass.h"
#include "analyze_dist.h"

/* ---- GPU time of one rank ---------------------------------------------- */
struct seg {
	int64_t s, e;
};

struct gacc {
	bool any;               /* some kernel, memcpy or memset */
	int64_t first, last;    /* their span */
	struct seg all;         /* the open segment of their union */
	bool all_open;
	uint64_t busy;          /* closed segments of the union */
	struct seg comp;        /* the open computation segment */
	bool comp_open;
	uint64_t comp_ns, overlap_ns, comm_ns;
	struct seg *comm;       /* communication segments a computation segment may still reach */
	size_t ncomm, capcomm, head;
	uint64_t comm_kernels;
};

/* Length of [a.s, a.e) within [b.s, b.e). */
static uint64_t meet(struct seg a, struct seg b)
{
	int64_t s = a.s > b.s ? a.s : b.s, e = a.e < b.e ? a.e : b.e;
	return e > s ? (uint64_t)(e - s) : 0;
}

/* A computation segment is final: its overlap with the communication segments. */
static void comp_final(struct gacc *g)
{
	g->comp_ns += (uint64_t)(g->comp.e - g->comp.s);
	for (size_t i = g->head; i < g->ncomm; i++)
		g->overlap_ns += meet(g->comp, g->comm[i]);
	g->comp_open = false;
}

/* Drops the communication segments no computation segment can reach any more (all before t). */
static void comm_drop(struct gacc *g, int64_t t)
{
	while (g->head < g->ncomm && g->comm[g->head].e < t && (!g->comp_open || g->comm[g->head].e <= g->comp.s)) {
		g->comm_ns += (uint64_t)(g->comm[g->head].e - g->comm[g->head].s);
		g->head++;
	}
	if (g->head == g->ncomm)
		g->head = g->ncomm = 0;
	else if (g->head > 64 && g->head * 2 > g->ncomm) { /* compact */
		memmove(g->comm, g->comm + g->head, (g->ncomm - g->head) * sizeof(*g->comm));
		g->ncomm -= g->head;
		g->head = 0;
	}
}

static int gacc_op(struct gacc *g, const struct isc_tl_event *ev, bool comm, bool compute)
{
	struct seg x = { (int64_t)ev->ts, (int64_t)(ev->ts + ev->gpu.dur_ns) };
	if (!g->any || x.s < g->first)
		g->first = x.s;
	if (!g->any || x.e > g->last)
		g->last = x.e;
	g->any = true;
	if (g->all_open && x.s <= g->all.e) {
		if (x.e > g->all.e)
			g->all.e = x.e;
	} else {
		if (g->all_open)
			g->busy += (uint64_t)(g->all.e - g->all.s);
		g->all = x;
		g->all_open = true;
	}
	if (g->comp_open && x.s > g->comp.e)
		comp_final(g);
	comm_drop(g, x.s);
	if (comm) {
		g->comm_kernels++;
		if (g->ncomm > g->head && x.s <= g->comm[g->ncomm - 1].e) {
			if (x.e > g->comm[g->ncomm - 1].e)
				g->comm[g->ncomm - 1].e = x.e;
		} else {
			if (isc_grow(&g->comm, &g->capcomm, g->ncomm, sizeof(*g->comm)))
				return -ENOMEM;
			g->comm[g->ncomm++] = x;
		}
	} else if (compute) {
		if (g->comp_open && x.s <= g->comp.e) {
			if (x.e > g->comp.e)
				g->comp.e = x.e;
		} else {
			g->comp = x;
			g->comp_open = true;
		}
	}
	return 0;
}

static void gacc_end(struct gacc *g)
{
	if (g->comp_open)
		comp_final(g);
	for (size_t i = g->head; i < g->ncomm; i++)
		g->comm_ns += (uint64_t)(g->comm[i].e - g->comm[i].s);
	g->head = g->ncomm = 0;
	if (g->all_open)
		g->busy += (uint64_t)(g->all.e - g->all.s);
	g->all_open = false;
}

/* ---- the pass ------------------------------------------------------------- */
struct src_info {
	bool have;
	uint64_t kind, method, uncertainty, colls;
	int64_t offset;
	char *name, *host, *boot;
};

struct drank {
	struct ana a;
	struct gacc g;
	uint64_t events;
	cJSON *doc;
};

struct dist {
	struct isc_timeline *t;
	const struct isc_rank_facts *f;
	struct drank *r;
	size_t nr;
	struct isc_coll_tracker tr;
	struct src_info *src;
	size_t nsrc;
};

static const char *name_of(void *ctx, uint32_t id, uint8_t *kind)
{
	const struct isc_tl_string *s = isc_timeline_string_borrow(ctx, id);
	if (s)
		*kind = s->kind;
	return s ? s->name : NULL;
}

struct first_pass {
	struct isc_rank_facts *f;
	size_t sources, kineto; /* SOURCE_INFO records: all, of Kineto files */
	bool *timed;            /* a source's timed record seen (sources entries) */
	size_t ntimed;
};

/*
 * The rank facts from every record.  In a job merge whose sources are all
 * Kineto files (SOURCE_INFO kind 2, written first), the pass stops once
 * every source has had a timed record: a Kineto file has no calibration,
 * and its facts are in its preamble, before its first timed record.
 */
static int facts_hook(void *ctx, const struct isc_tl_event *ev)
{
	struct first_pass *fp = ctx;
	if (ev->type == ISC_REC_SOURCE_INFO && ev->nf >= 2) {
		fp->sources++;
		fp->kineto += ev->f[1] == 2;
	}
	if (ev->type < 0x80 && fp->sources && fp->sources == fp->kineto && ev->source < fp->sources) {
		if (!fp->timed && !(fp->timed = calloc(fp->sources, sizeof(*fp->timed))))
			return -ENOMEM;
		if (!fp->timed[ev->source]) {
			fp->timed[ev->source] = true;
			if (++fp->ntimed == fp->sources)
				return ISC_ANA_STOP;
		}
	}
	return isc_rankfacts_event(fp->f, ev);
}

int isc_dist_first_pass(struct isc_timeline *t, struct isc_rank_facts *f, bool facts_only,
			struct isc_analyze_calib **cals, size_t *ncals)
{
	struct first_pass fp = { f, 0, 0, NULL, 0 };
	int rc = isc_ana_first_pass(t, cals, ncals, facts_hook, &fp, facts_only);
	free(fp.timed);
	return rc;
}

bool isc_dist_is_job(const struct isc_rank_facts *f)
{
	if (f->nranks < 1) /* a rank alone (one rank's Kineto file) is one too: its entry is the map step of --job */
		return false;
	for (size_t i = 0; i < f->nranks; i++)
		if (f->ranks[i].world != ISC_RANK_NONE && f->ranks[i].world >= 2)
			return true;
	return false;
}

static int on_source(struct dist *d, const struct isc_tl_event *ev)
{
	if (ev->nf < 6 || ev->f[0] > ISC_TL_MAX_SOURCES)
		return 0;
	size_t s = (size_t)ev->f[0];
	if (s >= d->nsrc) {
		struct src_info *n = realloc(d->src, (s + 1) * sizeof(*n));
		if (!n)
			return -ENOMEM;
		memset(n + d->nsrc, 0, (s + 1 - d->nsrc) * sizeof(*n));
		d->src = n;
		d->nsrc = s + 1;
	}
	struct src_info *si = &d->src[s];
	free(si->name);
	free(si->host);
	free(si->boot);
	const uint8_t *p = ev->bytes, *e = ev->bytes + ev->nbytes;
	const uint8_t *h = memchr(p, 0, ev->nbytes), *b = h ? memchr(h + 1, 0, (size_t)(e - h - 1)) : NULL;
	si->name = isc_text_dup(p, (size_t)((h ? h : e) - p), '?', true);
	si->host = isc_text_dup(h ? h + 1 : e, h ? (size_t)((b ? b : e) - (h + 1)) : 0, '?', true);
	si->boot = isc_text_dup(b ? b + 1 : e, b ? (size_t)(e - (b + 1)) : 0, '?', true);
	si->kind = ev->f[1];
	si->offset = isc_unzigzag(ev->f[2]);
	si->uncertainty = ev->f[3];
	si->method = ev->f[4];
	si->colls = ev->f[5];
	si->have = true;
	return si->name && si->host && si->boot ? 0 : -ENOMEM;
}

/* Feeds ev to rank k: its analysis, its collectives, its GPU time. */
static int feed(struct dist *d, size_t k, const struct isc_tl_event *ev)
{
	struct drank *r = &d->r[k];
	int rc;
	r->events++;
	if ((rc = isc_ana_event(&r->a, ev)) || (rc = isc_colltrk_event(&d->tr, k, ev)))
		return rc;
	if (ev->type == ISC_REC_GPU_OP && !(ev->gpu.flags & ISC_GPU_FLAG_ANNOTATION) &&
	    (ev->gpu.kind == ISC_GPU_KERNEL || ev->gpu.kind == ISC_GPU_MEMCPY || ev->gpu.kind == ISC_GPU_MEMSET)) {
		bool comm = false, compute = false;
		if (ev->gpu.kind == ISC_GPU_KERNEL) {
			const struct isc_tl_string *s = isc_timeline_string_borrow(d->t, ev->name_id);
			const char *n = s ? s->name : "";
			comm = isc_coll_kernel(n, NULL) != ISC_COLL_NONE;
			compute = !comm && !strstr(n, "Memcpy") && !strstr(n, "Memset"); /* HTA's memory kernels */
		}
		return gacc_op(&r->g, ev, comm, compute);
	}
	return 0;
}

/* ---- the entries ----------------------------------------------------------- */
static const char *method_name(uint64_t m)
{
	return m == ISC_ALIGN_COLLECTIVES ? "collectives" : m == ISC_ALIGN_WALL_CLOCK ? "wall_clock" : "reference";
}

static void push_str(struct isc_jb *jb, cJSON *arr, const char *s)
{
	cJSON *x = arr ? isc_jb_chk(jb, cJSON_CreateString(s)) : NULL;
	if (x && !cJSON_AddItemToArray(arr, x)) {
		cJSON_Delete(x);
		jb->oom = true;
	}
}

/* The log of a rank's collectives: columns, starts as deltas (formats/findings.schema.json). */
static void emit_log(struct isc_jb *jb, cJSON *o, const struct isc_coll *c, size_t n, uint64_t seen, uint64_t dropped)
{
	cJSON *log = isc_jb_obj(jb, o, "log");
	isc_jb_num(jb, log, "count", (double)(seen));
	isc_jb_num(jb, log, "kept", (double)n);
	isc_jb_num(jb, log, "dropped", (double)dropped);
	isc_jb_str(jb, log, "view", n && c[0].gpu ? "kernel" : "call");
	bool seq = false, bytes = false;
	unsigned ops[ISC_COLL_N] = { 0 }, nops = 0, dts[ISC_DT_N] = { 0 }, ndts = 0;
	cJSON *opn = isc_jb_arr(jb, log, "ops"), *dtn = NULL;
	for (size_t i = 0; i < n; i++) {
		seq |= c[i].seq != 0;
		bytes |= c[i].bytes != 0 || c[i].dtype != 0;
		if (c[i].op < ISC_COLL_N && !ops[c[i].op]) {
			ops[c[i].op] = ++nops;
			push_str(jb, opn, isc_coll_op_name(c[i].op));
		}
	}
	cJSON *op = isc_jb_arr(jb, log, "op"), *chan = isc_jb_arr(jb, log, "chan"), *st = isc_jb_arr(jb, log, "start_delta_ns"),
	      *du = isc_jb_arr(jb, log, "dur_ns");
	cJSON *sq = seq ? isc_jb_arr(jb, log, "seq") : NULL, *pg = seq ? isc_jb_arr(jb, log, "pg") : NULL;
	cJSON *by = bytes ? isc_jb_arr(jb, log, "bytes") : NULL, *dt = bytes ? isc_jb_arr(jb, log, "dtype") : NULL;
	if (bytes)
		dtn = isc_jb_arr(jb, log, "dtypes");
	int64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		isc_jb_push_num(jb, op, ops[c[i].op < ISC_COLL_N ? c[i].op : 0] - 1.0);
		isc_jb_push_num(jb, chan, c[i].chan);
		isc_jb_push_num(jb, st, (double)(c[i].start - prev));
		prev = c[i].start;
		isc_jb_push_num(jb, du, (double)(c[i].end > c[i].start ? c[i].end - c[i].start : 0));
		if (seq) {
			isc_jb_push_num(jb, sq, (double)c[i].seq);
			isc_jb_push_num(jb, pg, c[i].pg);
		}
		if (bytes) {
			isc_jb_push_num(jb, by, (double)c[i].bytes);
			unsigned t = c[i].dtype < ISC_DT_N ? c[i].dtype : 0;
			if (t && !dts[t]) {
				dts[t] = ++ndts;
				push_str(jb, dtn, isc_dtype_name(t));
			}
			isc_jb_push_num(jb, dt, t ? dts[t] - 1.0 : -1);
		}
	}
}

/*
 * The profile a rank is compared with the others by (compare.c's
 * contributors and conditions): its document's sections the comparison
 * reads, top lists cut to 20.
 */
static cJSON *profile_of(const cJSON *doc)
{
	static const char *const keep[] = {
		"schema_version", "tool", "summary.wall_ns", "summary.start_ns", "summary.events", "environment.host",
		"environment.ncpu", "environment.cmdline", "environment.start_time", "iterations.name", "iterations.count",
		"iterations.scopes", "iterations.spans", "iterations.warmup_spans", "cpu.top_functions",
		"cpu.top_functions_in_scopes", "cpu.off_cpu_reasons", "cpu.split", "cpu.blocked_ns",
		"cpu.runnable_threads_mean", "gpu.ops", "gpu.kernels.top", "gpu.kernels.others", "gpu.kernels.count",
		"gpu.memcpy", "gpu.sync.api_calls", "memory.pressure", "recording.mode",
	};
	cJSON *p = cJSON_CreateObject();
	for (size_t i = 0; p && i < sizeof(keep) / sizeof(keep[0]); i++) {
		const cJSON *v = isc_doc_get(doc, keep[i]);
		if (!v)
			continue;
		char path[128];
		snprintf(path, sizeof(path), "%s", keep[i]);
		cJSON *at = p;
		char *k = path, *dot;
		while (at && (dot = strchr(k, '.'))) { /* the parents */
			*dot = '\0';
			cJSON *c = cJSON_GetObjectItemCaseSensitive(at, k);
			if (!c && !(c = cJSON_AddObjectToObject(at, k)))
				at = NULL;
			at = c;
			k = dot + 1;
		}
		cJSON *copy = cJSON_Duplicate(v, true);
		if (!at || !copy || !cJSON_AddItemToObject(at, k, copy)) {
			cJSON_Delete(copy);
			cJSON_Delete(p);
			return NULL;
		}
		if (cJSON_IsArray(copy)) /* top lists: the first 20 */
			while (cJSON_GetArraySize(copy) > 20 && strcmp(k, "spans") && strcmp(k, "scopes"))
				cJSON_DeleteItemFromArray(copy, cJSON_GetArraySize(copy) - 1);
	}
	/* processes: their page faults only; marks: the agent's environment facts */
	cJSON *pa = p ? cJSON_AddArrayToObject(p, "processes") : NULL;
	const cJSON *e;
	cJSON_ArrayForEach(e, isc_doc_arr(doc, "processes")) {
		cJSON *o = cJSON_CreateObject();
		if (!o || !pa || !cJSON_AddItemToArray(pa, o)) {
			cJSON_Delete(o);
			cJSON_Delete(p);
			return NULL;
		}
		if (!cJSON_AddNumberToObject(o, "pid", isc_doc_num(e, "pid", 0)) ||
		    !cJSON_AddNumberToObject(o, "minor_faults", isc_doc_num(e, "minor_faults", 0)) ||
		    !cJSON_AddNumberToObject(o, "major_faults", isc_doc_num(e, "major_faults", 0))) {
			cJSON_Delete(p);
			return NULL;
		}
	}
	cJSON *ma = p ? cJSON_AddArrayToObject(p, "marks") : NULL;
	cJSON_ArrayForEach(e, isc_doc_arr(doc, "marks"))
		if (isc_mark_is_agent(isc_doc_str(e, "name", NULL))) {
			cJSON *c = cJSON_Duplicate(e, true);
			if (!c || !ma || !cJSON_AddItemToArray(ma, c)) {
				cJSON_Delete(c);
				cJSON_Delete(p);
				return NULL;
			}
		}
	return p;
}

/* Merged length of sorted segments clipped to the window union w (both sorted by start). */
static uint64_t clipped_union(const struct seg *v, size_t n, const struct seg *w, size_t nw)
{
	uint64_t tot = 0;
	struct seg cur = { 0, 0 };
	bool open = false;
	for (size_t i = 0; i <= n; i++) {
		if (i < n && open && v[i].s <= cur.e) {
			if (v[i].e > cur.e)
				cur.e = v[i].e;
			continue;
		}
		if (open)
			for (size_t j = 0; j < nw; j++)
				tot += meet(cur, w[j]);
		if (i < n) {
			cur = v[i];
			open = true;
		}
	}
	return tot;
}

static int seg_cmp(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;
	return x->s < y->s ? -1 : x->s > y->s ? 1 : (x->e < y->e ? -1 : x->e > y->e);
}

/* Sorts and merges segments in place; returns the new count. */
static size_t seg_merge(struct seg *v, size_t n)
{
	size_t m = 0;
	isc_sort(v, n, sizeof(*v), seg_cmp);
	for (size_t i = 0; i < n; i++) {
		if (m && v[i].s <= v[m - 1].e) {
			if (v[i].e > v[m - 1].e)
				v[m - 1].e = v[i].e;
		} else {
			v[m++] = v[i];
		}
	}
	return m;
}

/*
 * Rank k's entry of distributed.ranks[] (the map's part; the reduce adds
 * its own fields): identity, clock, time split, iterations, log, profile.
 */
static cJSON *entry_of(struct dist *d, size_t k)
{
	struct drank *r = &d->r[k];
	const struct isc_rank *rk = &d->f->ranks[k];
	const struct isc_tl_header *h = isc_timeline_header_borrow(d->t);
	const struct src_info *si = rk->source < d->nsrc && d->src[rk->source].have ? &d->src[rk->source] : NULL;
	struct isc_jb jb = { false, true };
	cJSON *o = cJSON_CreateObject();
	size_t nc = 0;
	const struct isc_coll *c = isc_colltrk_get(&d->tr, k, &nc);
	if (!o)
		return NULL;
	isc_jb_num(&jb, o, "rank", rk->rank);
	isc_jb_num_or_null(&jb, o, "local_rank", rk->local != ISC_RANK_NONE, rk->local);
	isc_jb_num(&jb, o, "world_size", rk->world);
	isc_jb_str(&jb, o, "backend", rk->backend[0] ? rk->backend : NULL);
	char job[24];
	snprintf(job, sizeof(job), "%016" PRIx64, rk->job);
	isc_jb_str(&jb, o, "job", rk->job ? job : NULL);
	isc_jb_str(&jb, o, "host", si ? (*si->host ? si->host : NULL) : (*h->host ? h->host : NULL));
	isc_jb_str(&jb, o, "input", si ? si->name : NULL);
	isc_jb_num(&jb, o, "source", rk->source);
	isc_jb_str(&jb, o, "boot_id", si ? si->boot : h->boot_id);
	cJSON *pids = isc_jb_arr(&jb, o, "pids");
	for (size_t i = 0; i < rk->npids; i++)
		isc_jb_push_num(&jb, pids, rk->pids[i]);
	/* the origin of the rank's times, exact (a double holds ns since 1970 only to 256 ns) */
	isc_jb_num(&jb, o, "epoch_s", (double)(h->epoch_realtime_ns / 1000000000u));
	isc_jb_num(&jb, o, "epoch_ns", (double)(h->epoch_realtime_ns % 1000000000u));
	cJSON *ck = isc_jb_obj(&jb, o, "merge_clock");
	isc_jb_num(&jb, ck, "offset_ns", si ? (double)si->offset : 0);
	isc_jb_num(&jb, ck, "uncertainty_ns", si ? (double)si->uncertainty : 0);
	isc_jb_str(&jb, ck, "method", si ? method_name(si->method) : "reference");

	/* iterations, from the rank's own analysis */
	const cJSON *doc = r->doc;
	double start = isc_doc_num(doc, "summary.start_ns", 0);
	const cJSON *spans = isc_doc_arr(doc, "iterations.spans"), *sp;
	size_t nw = 0, nsp = (size_t)cJSON_GetArraySize(spans);
	struct seg *w = malloc((nsp + 1) * sizeof(*w));
	if (!w) {
		cJSON_Delete(o);
		return NULL;
	}
	cJSON *it = isc_jb_obj(&jb, o, "iterations");
	cJSON *ib = NULL, *id = NULL;
	const struct ana_scope *step = r->a.step_scope ? &r->a.scs[r->a.step_scope - 1] : NULL;
	if (step && step->n == 1 && step->s[0].complete) {
		/* one ProfilerStep (torch.profiler's schedule profiled one step): the iteration, though the
		 * rank's document needs two to call them iterations */
		isc_jb_str(&jb, it, "name", "ProfilerStep#*");
		isc_jb_num(&jb, it, "count", 1);
		isc_jb_num(&jb, it, "warmup", 0);
		ib = isc_jb_arr(&jb, it, "begin_ns");
		id = isc_jb_arr(&jb, it, "dur_ns");
		isc_jb_push_num(&jb, ib, (double)step->s[0].begin_ts);
		isc_jb_push_num(&jb, id, (double)step->s[0].dur);
		w[nw++] = (struct seg){ (int64_t)step->s[0].begin_ts, (int64_t)(step->s[0].begin_ts + step->s[0].dur) };
		spans = NULL;
	} else {
		isc_jb_str(&jb, it, "name", isc_doc_str(doc, "iterations.name", NULL));
		isc_jb_num(&jb, it, "count", isc_doc_num(doc, "iterations.count", 0));
		isc_jb_num(&jb, it, "warmup", isc_doc_num(doc, "iterations.warmup_spans", 0));
		ib = isc_jb_arr(&jb, it, "begin_ns");
		id = isc_jb_arr(&jb, it, "dur_ns");
	}
	cJSON_ArrayForEach(sp, spans) {
		double b = cJSON_GetArrayItem(sp, 0) ? cJSON_GetArrayItem(sp, 0)->valuedouble : 0;
		double e = cJSON_GetArrayItem(sp, 1) ? cJSON_GetArrayItem(sp, 1)->valuedouble : 0;
		isc_jb_push_num(&jb, ib, start + b);
		isc_jb_push_num(&jb, id, e - b);
		w[nw++] = (struct seg){ (int64_t)(start + b), (int64_t)(start + e) };
	}
	nw = seg_merge(w, nw);

	/* the time split */
	bool gpu = r->g.comm_kernels > 0 || (nc && c[0].gpu);
	isc_jb_str(&jb, o, "device", gpu ? "gpu" : "cpu");
	if (gpu) { /* HTA's: over the span of the GPU's operations */
		double window = r->g.any ? (double)(r->g.last - r->g.first) : 0;
		isc_jb_num(&jb, o, "window_ns", window);
		isc_jb_num(&jb, o, "compute_ns", (double)r->g.comp_ns);
		isc_jb_num(&jb, o, "comm_ns", (double)r->g.comm_ns);
		isc_jb_num(&jb, o, "exposed_comm_ns", (double)(r->g.comm_ns - r->g.overlap_ns));
		isc_jb_num(&jb, o, "idle_ns", window > (double)r->g.busy ? window - (double)r->g.busy : 0);
		isc_jb_num_or_null(&jb, o, "overlap_pct", r->g.comm_ns > 0,
				   r->g.comm_ns ? round(1e4 * (double)r->g.overlap_ns / (double)r->g.comm_ns) / 100 : 0);
	} else { /* the iterations (else the collectives' span): what is not communication is the rank's own work */
		struct seg *cs = malloc((nc + 1) * sizeof(*cs));
		if (!cs) {
			free(w);
			cJSON_Delete(o);
			return NULL;
		}
		for (size_t i = 0; i < nc; i++)
			cs[i] = (struct seg){ c[i].start, c[i].end };
		size_t ncs = seg_merge(cs, nc);
		if (!nw && ncs) {
			w[0] = (struct seg){ cs[0].s, cs[ncs - 1].e };
			nw = 1;
		}
		uint64_t window = 0;
		for (size_t i = 0; i < nw; i++)
			window += (uint64_t)(w[i].e - w[i].s);
		uint64_t comm = clipped_union(cs, ncs, w, nw);
		free(cs);
		isc_jb_num(&jb, o, "window_ns", (double)window);
		isc_jb_num(&jb, o, "compute_ns", (double)(window - comm));
		isc_jb_num(&jb, o, "comm_ns", (double)comm);
		isc_jb_num(&jb, o, "exposed_comm_ns", (double)comm);
		isc_jb_num_or_null(&jb, o, "idle_ns", false, 0);
		isc_jb_num_or_null(&jb, o, "overlap_pct", false, 0);
	}
	free(w);
	emit_log(&jb, o, c, nc, (uint64_t)nc + d->tr.units[k].dropped, d->tr.units[k].dropped);
	cJSON *prof = profile_of(doc);
	if (!prof || !cJSON_AddItemToObject(o, "profile", prof)) {
		cJSON_Delete(prof);
		jb.oom = true;
	}
	if (jb.oom) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

/* A rank's own document: what only it saw (events, drops) and its host. */
static void fix_doc(struct dist *d, size_t k)
{
	cJSON *doc = d->r[k].doc;
	const struct isc_rank *rk = &d->f->ranks[k];
	const struct src_info *si = rk->source < d->nsrc && d->src[rk->source].have ? &d->src[rk->source] : NULL;
	cJSON *s = cJSON_GetObjectItemCaseSensitive(doc, "summary");
	if (d->nr > 1 && s) {
		cJSON_ReplaceItemInObjectCaseSensitive(s, "events", cJSON_CreateNumber((double)d->r[k].events));
		cJSON_ReplaceItemInObjectCaseSensitive(s, "dropped_events", cJSON_CreateNumber((double)d->r[k].a.dropped_sum));
	}
	cJSON *env = cJSON_GetObjectItemCaseSensitive(doc, "environment");
	if (si && env && *si->host)
		cJSON_ReplaceItemInObjectCaseSensitive(env, "host", cJSON_CreateString(si->host));
}

int isc_dist_measure(struct isc_timeline *t, const struct isc_analyze_opts *o, const struct isc_rank_facts *f,
		     cJSON **out)
{
	struct dist d = { .t = t, .f = f, .nr = f->nranks };
	struct isc_tl_event ev;
	char first_err[512] = "";
	uint64_t ndamage = 0;
	cJSON **entries = NULL, *section = NULL;
	unsigned *doc_of = NULL, detail = 0;
	int rc = -ENOMEM;
	*out = NULL;
	if (!(d.r = calloc(d.nr ? d.nr : 1, sizeof(*d.r))))
		goto done;
	if ((rc = isc_colltrk_init(&d.tr, d.nr, ISC_DIST_LOG_MAX, name_of, t)))
		goto done;
	for (size_t k = 0; k < d.nr; k++)
		if ((rc = isc_ana_init(&d.r[k].a, t, o)))
			goto done;
	while ((rc = isc_ana_next(t, &ev, &ndamage, first_err, sizeof(first_err))) != 0) {
		if (rc < 0)
			goto done;
		if (ev.type == ISC_REC_SOURCE_INFO && (rc = on_source(&d, &ev)))
			goto done;
		uint32_t k = isc_rankfacts_owner(f, ev.source, ev.pid);
		if (k != ISC_RANK_NONE) {
			if ((rc = feed(&d, k, &ev)))
				goto done;
		} else if (!ev.pid) { /* the host's records: every rank of the source */
			for (size_t j = 0; j < d.nr; j++)
				if (f->ranks[j].source == ev.source && (rc = feed(&d, j, &ev)))
					goto done;
		}
		if (o && o->progress && !(isc_timeline_stats_borrow(t)->events & 0xffff))
			o->progress(o->progress_ctx, isc_timeline_stats_borrow(t)->events, ev.ts);
	}
	rc = -ENOMEM;
	if (!(entries = calloc(d.nr, sizeof(*entries))) || !(doc_of = calloc(d.nr, sizeof(*doc_of))))
		goto done;
	for (size_t k = 0; k < d.nr; k++) {
		gacc_end(&d.r[k].g);
		if (!(d.r[k].doc = isc_ana_finish(&d.r[k].a, ndamage > 0, &rc)))
			goto done;
		fix_doc(&d, k);
		if (!(entries[k] = entry_of(&d, k))) {
			rc = -ENOMEM;
			goto done;
		}
	}
	if ((rc = isc_dist_reduce((const cJSON *const *)entries, doc_of, d.nr, entries, &section, &detail)))
		goto done;
	size_t pick = 0;
	for (size_t k = 0; k < d.nr; k++)
		if (f->ranks[k].rank == detail)
			pick = k;
	*out = d.r[pick].doc;
	d.r[pick].doc = NULL;
	cJSON_AddItemToObject(*out, "distributed", section);
	section = NULL;
	rc = isc_ana_damage(t, ndamage, first_err);
done:
	if (rc == -ENOMEM)
		isc_err_push("out of memory");
	for (size_t k = 0; k < d.nr; k++) {
		if (d.r) {
			isc_ana_release(&d.r[k].a);
			cJSON_Delete(d.r[k].doc);
			free(d.r[k].g.comm);
		}
		if (entries)
			cJSON_Delete(entries[k]);
	}
	for (size_t s = 0; s < d.nsrc; s++) {
		free(d.src[s].name);
		free(d.src[s].host);
		free(d.src[s].boot);
	}
	free(d.src);
	free(d.r);
	free(entries);
	free(doc_of);
	cJSON_Delete(section);
	isc_colltrk_free(&d.tr);
	return rc;
}
