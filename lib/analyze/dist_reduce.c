/*
 * dist_reduce.c - the reduce step of the job view (analyze_dist.h): from
 * the ranks' entries alone (one timeline's, or many findings documents'
 * gathered by iscope-analyze --job), the job's `distributed` section.
 * iscope-analyze(1), DISTRIBUTED JOBS, states every rule for users.
 *
 *   entries ──> clock domains (a boot id, else one per input and source)
 *       │       ──> offsets from the ends of symmetric collectives (dist_align.c)
 *       ├──> collectives matched across ranks: by (process group, sequence
 *       │    number) when every rank's log has them, else by (channel,
 *       │    position)
 *       │       per collective: arrivals (starts on the aligned clock), each
 *       │       rank's wait = latest arrival - its own, start and end skew,
 *       │       transfer = the shortest duration, bus bandwidth
 *       ├──> per rank: wait, last arrivals, lateness (its arrival against
 *       │    the median of the others'), iteration times
 *       ├──> stragglers: late in the median and last in most collectives,
 *       │    by more than 5 % of an iteration; the time the job loses to
 *       │    them; the cause: the straggler's profile compared with the
 *       │    others' as runs are compared (compare.c's contributors)
 *       └──> the job: world size, missing ranks, hosts, spread of the
 *            iteration times, communication bound or not
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "isc_analyze.h"
#include "isc_findings.h"
#include "isc_util.h"
#include "isc_jbuild.h"
#include "analyze_dist.h"

/* A straggler is late by at least this share of the job's median iteration (or collective period). */
#define STRAGGLER_MIN_SHARE 0.05
/* ... and arrives last in at least this share of the collectives it took part in. */
#define STRAGGLER_LAST_SHARE 0.5
/* Collectives a rank must share with others before it can be called a straggler. */
#define STRAGGLER_MIN_MATCHED 3
/* Communication bound: the median rank's exposed communication is at least this share of its window. */
#define COMM_BOUND_SHARE 0.5
/* A straggler's contributor explains at least this share of its lateness per iteration, or is not a cause. */
#define CAUSE_MIN_SHARE 0.05
/* Ranks a straggler's profile is compared with. */
#define CAUSE_BASELINES 16
#define SLOWEST_MAX 20
#define BYOP_MAX 50

struct rcoll { /* one logged collective, times on the rank's own clock (ns since its epoch) */
	int64_t start, end;
	uint64_t seq, bytes, idx;
	uint32_t pg, chan;
	uint8_t op, dtype;
};

struct rk {
	const cJSON *e;
	unsigned doc;
	uint32_t rank, world;
	int64_t epoch;             /* ns since 1970 of the rank's time 0 */
	int64_t applied;           /* merge_clock.offset_ns: already in its times */
	uint64_t applied_unc;
	const char *applied_method;
	uint32_t domain;
	struct rcoll *c;
	size_t nc;
	bool all_seq;
	/* the reduce's */
	int64_t off;
	uint64_t unc;
	bool aligned;
	double wait, matched, last;
	int64_t *late;
	uint8_t *late_op; /* the operation of each late[] */
	size_t nlate;
	double iters, it_p50;
	bool have_p50;
	double loss; /* time the job lost to this rank (its lead over the next latest, where it was last) */
	double wait_op[ISC_COLL_N]; /* the others' waits in collectives where it was last, by op */
	double matched_op[ISC_COLL_N], last_op[ISC_COLL_N]; /* matched and last, by op */
};

struct member {
	uint64_t key;
	uint32_t r;
	uint32_t i; /* index in the rank's collectives */
};

static int by_key(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->r < y->r ? -1 : x->r > y->r;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int64_t med_i64(int64_t *v, size_t n)
{
	isc_sort(v, n, sizeof(*v), cmp_i64);
	int64_t a = v[(n - 1) / 2], b = v[n / 2];
	return a + (b - a) / 2;
}


/* Decodes an entry's log into r->c (formats/findings.schema.json, distributed.ranks[].log). */
static int decode_log(struct rk *r)
{
	const cJSON *log = isc_doc_get(r->e, "log");
	const cJSON *ops = isc_doc_arr(log, "ops"), *op = isc_doc_arr(log, "op"), *ch = isc_doc_arr(log, "chan"),
		    *st = isc_doc_arr(log, "start_delta_ns"), *du = isc_doc_arr(log, "dur_ns"),
		    *sq = isc_doc_arr(log, "seq"), *pg = isc_doc_arr(log, "pg"), *by = isc_doc_arr(log, "bytes"),
		    *dt = isc_doc_arr(log, "dtype"), *dts = isc_doc_arr(log, "dtypes");
	size_t n = (size_t)cJSON_GetArraySize(op);
	if ((size_t)cJSON_GetArraySize(ch) != n || (size_t)cJSON_GetArraySize(st) != n || (size_t)cJSON_GetArraySize(du) != n)
		n = 0; /* a log whose columns disagree is not used */
	r->all_seq = n > 0 && (size_t)cJSON_GetArraySize(sq) == n && (size_t)cJSON_GetArraySize(pg) == n;
	bool have_b = (size_t)cJSON_GetArraySize(by) == n && (size_t)cJSON_GetArraySize(dt) == n;
	if (!(r->c = calloc(n ? n : 1, sizeof(*r->c))))
		return -ENOMEM;
	struct isc_umap chan_n = { 0 };
	const cJSON *a = op ? op->child : NULL, *b = ch ? ch->child : NULL, *c = st ? st->child : NULL,
		    *d = du ? du->child : NULL, *s = sq ? sq->child : NULL, *p = pg ? pg->child : NULL,
		    *y = by ? by->child : NULL, *z = dt ? dt->child : NULL;
	int64_t t = 0;
	for (size_t i = 0; i < n; i++) {
		struct rcoll *x = &r->c[i];
		double chn = cJSON_IsNumber(b) ? b->valuedouble : 0, dl = cJSON_IsNumber(c) ? c->valuedouble : 0,
		       dur = cJSON_IsNumber(d) ? d->valuedouble : 0;
		const cJSON *on = cJSON_GetArrayItem(ops, cJSON_IsNumber(a) ? a->valueint : -1);
		x->op = (uint8_t)isc_coll_op_parse(cJSON_IsString(on) ? on->valuestring : NULL);
		x->chan = chn >= 0 && chn < 1e6 ? (uint32_t)chn : 0;
		t += fabs(dl) < 4e18 ? (int64_t)dl : 0;
		x->start = t;
		x->end = t + (dur >= 0 && dur < 4e18 ? (int64_t)dur : 0);
		if (r->all_seq) {
			double q = cJSON_IsNumber(s) ? s->valuedouble : 0, g = cJSON_IsNumber(p) ? p->valuedouble : 0;
			x->seq = q >= 1 && q < 1e15 ? (uint64_t)q : 0;
			x->pg = g >= 0 && g < 1e6 ? (uint32_t)g : 0;
			r->all_seq = r->all_seq && x->seq;
		}
		if (have_b) {
			double v = cJSON_IsNumber(y) ? y->valuedouble : 0, k = cJSON_IsNumber(z) ? z->valuedouble : -1;
			const cJSON *dn = k >= 0 ? cJSON_GetArrayItem(dts, (int)k) : NULL;
			x->bytes = v >= 0 && v < 1e18 ? (uint64_t)v : 0;
			x->dtype = cJSON_IsString(dn) ? (uint8_t)isc_dtype_parse(dn->valuestring, strlen(dn->valuestring)) : 0;
		}
		uint32_t *slot;
		if (isc_umap_slot(&chan_n, x->chan, &slot)) {
			isc_umap_free(&chan_n);
			return -ENOMEM;
		}
		if (*slot == ISC_UMAP_NONE)
			*slot = 0;
		x->idx = (*slot)++;
		a = a ? a->next : NULL;
		b = b ? b->next : NULL;
		c = c ? c->next : NULL;
		d = d ? d->next : NULL;
		s = s ? s->next : NULL;
		p = p ? p->next : NULL;
		y = y ? y->next : NULL;
		z = z ? z->next : NULL;
	}
	isc_umap_free(&chan_n);
	r->nc = n;
	return 0;
}

/* The steady-state iterations' median (the entries after `warmup`), when there are some. */
static void iteration_p50(struct rk *r)
{
	const cJSON *it = isc_doc_get(r->e, "iterations"), *d;
	size_t warm = (size_t)isc_doc_num(it, "warmup", 0), n = 0, i = 0;
	r->iters = isc_doc_num(it, "count", 0);
	const cJSON *durs = isc_doc_arr(it, "dur_ns");
	double *v = malloc(((size_t)cJSON_GetArraySize(durs) + 1) * sizeof(*v));
	if (!v)
		return;
	cJSON_ArrayForEach(d, durs)
		if (i++ >= warm && cJSON_IsNumber(d))
			v[n++] = d->valuedouble;
	if (n) {
		isc_sort(v, n, sizeof(*v), cmp_dbl);
		r->it_p50 = (v[(n - 1) / 2] + v[n / 2]) / 2;
		r->have_p50 = true;
	}
	free(v);
}

/* A contributor that is the collective itself (its wait), not extra work of the rank. */
static bool collective_item(const cJSON *c)
{
	const char *n = isc_doc_str(c, "name", ""), *f = isc_doc_str(c, "file", "");
	return !strcmp(n, "(other time in iterations)") || strstr(f, "distributed_c10d.py") ||
	       strstr(f, "/iscope-record/python/") || strstr(f, "sitecustomize.py") || isc_coll_scope(n) ||
	       isc_coll_kernel(n, NULL) || !strncmp(n, "c10d::", 6) || strstr(n, "record_param_comms") ||
	       strstr(n, "ProcessGroup") || strstr(n, "distributed_c10d");
}

/*
 * The straggler's extra work: its profile compared with up to
 * CAUSE_BASELINES other ranks' as compare.c compares runs; the
 * contributors that grew by at least CAUSE_MIN_SHARE of its lateness per
 * iteration (smaller ones do not explain it), the collectives themselves
 * left out.  None: a straggler late for no work of its own that the
 * profiles show (cause [] says so).
 */
static int cause_of(struct isc_jb *jb, cJSON *s, const struct rk *rs, size_t nr, size_t who, const bool *strag,
		    double lateness)
{
	double min_delta = CAUSE_MIN_SHARE * (lateness > 0 ? lateness : 0);
	isc_jb_num(jb, s, "cause_min_ns_per_iter", round(min_delta));
	const cJSON *base[CAUSE_BASELINES];
	size_t nb = 0;
	for (size_t i = 0; i < nr && nb < CAUSE_BASELINES; i++)
		if (i != who && !strag[i] && isc_doc_get(rs[i].e, "profile"))
			base[nb++] = isc_doc_get(rs[i].e, "profile");
	cJSON *cur = cJSON_Duplicate(isc_doc_get(rs[who].e, "profile"), true);
	cJSON *cause = isc_jb_arr(jb, s, "cause"), *brk = isc_jb_arr(jb, s, "cause_breakdown");
	if (!cur || !nb) {
		cJSON_Delete(cur);
		isc_jb_num_or_null(jb, s, "cpu_pressure_pct", false, 0);
		isc_jb_num_or_null(jb, s, "others_cpu_pressure_pct", false, 0);
		return cur || !nb ? 0 : -ENOMEM;
	}
	isc_jb_num(jb, s, "compared_with", (double)nb);
	struct isc_compare_opts co = { .growth_first = true };
	int rc = isc_findings_compare(cur, base, nb, &co);
	if (rc) {
		cJSON_Delete(cur);
		return rc;
	}
	const cJSON *c;
	size_t ncpu = 0, nbr = 0;
	cJSON_ArrayForEach(c, isc_doc_arr(cur, "comparison.contributors")) {
		double delta = isc_doc_num(c, "delta_ns_per_iter", 0);
		const char *view = isc_doc_str(c, "view", "");
		bool breakdown = !strcmp(view, "breakdown");
		if (delta <= 0 || delta < min_delta || (!breakdown && collective_item(c)) || (breakdown ? nbr >= 3 : ncpu >= 5))
			continue;
		cJSON *o = isc_jb_push_obj(jb, breakdown ? brk : cause);
		static const char *const keys[] = { "name", "kind", "view", "file" };
		for (size_t k = 0; k < 4; k++)
			isc_jb_str(jb, o, keys[k], isc_doc_str(c, keys[k], NULL));
		isc_jb_num(jb, o, "line", isc_doc_num(c, "line", 0));
		isc_jb_str(jb, o, "change", isc_doc_str(c, "change", NULL));
		isc_jb_num(jb, o, "delta_ns_per_iter", delta);
		isc_jb_num(jb, o, "ns_per_iter", isc_doc_num(c, "ns_per_iter", 0));
		isc_jb_num(jb, o, "others_ns_per_iter", isc_doc_num(c, "base_ns_per_iter", 0));
		isc_jb_num(jb, o, "calls_per_iter", isc_doc_num(c, "calls_per_iter", 0));
		isc_jb_num(jb, o, "others_calls_per_iter", isc_doc_num(c, "base_calls_per_iter", 0));
		breakdown ? nbr++ : ncpu++;
	}
	/* CPU pressure on its host against the others' (compare.c's conditions) */
	double p, q = -1, v;
	bool hp = isc_doc_have(cur, "comparison.conditions.cpu_pressure_pct", &p);
	const cJSON *b;
	cJSON_ArrayForEach(b, isc_doc_arr(cur, "comparison.conditions.base_cpu_pressure_pct"))
		if (cJSON_IsNumber(b) && (v = b->valuedouble) > q)
			q = v;
	isc_jb_num_or_null(jb, s, "cpu_pressure_pct", hp, hp ? p : 0);
	isc_jb_num_or_null(jb, s, "others_cpu_pressure_pct", q >= 0, q);
	cJSON_Delete(cur);
	return 0;
}

static void free_ranks(struct rk *rs, size_t n)
{
	for (size_t i = 0; rs && i < n; i++) {
		free(rs[i].c);
		free(rs[i].late);
		free(rs[i].late_op);
	}
	free(rs);
}

static int rank_cmp(const void *a, const void *b)
{
	const struct rk *x = a, *y = b;
	return x->rank < y->rank ? -1 : x->rank > y->rank;
}

struct byop {
	uint8_t op, dtype;
	uint64_t bytes;
	double count, transfer, skew, skew_max, end_skew, wait, members, busbw_sum, algbw_sum, bw_n;
};

struct slow {
	uint8_t op;
	uint64_t key;
	bool by_seq;
	double start, skew, end_skew, transfer;
	uint32_t last_rank, members;
	bool have_last;
};

/* The members of a rank's entry that the reduce writes (the rest is the map's). */
static const char *const reduced_keys[] = {
	"clock_offset_ns", "clock_uncertainty_ns", "clock_method", "origin_ns", "matched", "wait_ns",
	"wait_per_iteration_ns", "last_arrivals", "last_pct", "lateness_ns", "iteration_p50_ns", "straggler",
	"exposed_comm_pct",
};

int isc_dist_reduce(const cJSON *const *entries, const unsigned *doc_of, size_t n, cJSON **owned, cJSON **section,
		    unsigned *detail)
{
	struct isc_jb jb = { false, true };
	struct rk *rs = calloc(n ? n : 1, sizeof(*rs));
	struct member *mem = NULL;
	struct isc_align_end *ends = NULL;
	struct isc_align_result *al = NULL;
	char (*dom)[96] = NULL;
	struct byop *bo = NULL;
	struct slow slowest[SLOWEST_MAX];
	size_t nbo = 0, capbo = 0, nslow = 0, ndom = 0, nmem = 0, nends = 0;
	bool *strag = NULL;
	double *scratch = NULL; /* 2 n doubles: the ranks' iteration medians, then periods or exposed shares */
	int rc = -ENOMEM;
	*section = NULL;
	*detail = 0;
	if (!rs || !(dom = calloc(n ? n : 1, sizeof(*dom))) || !(strag = calloc(n ? n : 1, sizeof(*strag))) ||
	    !(scratch = calloc(2 * n + 2, sizeof(*scratch))))
		goto out;
	/* ---- the ranks, their clock domains ---- */
	for (size_t i = 0; i < n; i++) {
		struct rk *r = &rs[i];
		r->e = entries[i];
		r->doc = doc_of ? doc_of[i] : 0;
		double rank = isc_doc_num(r->e, "rank", -1), world = isc_doc_num(r->e, "world_size", 0);
		if (!(rank >= 0 && rank < UINT32_MAX) || !(world >= 1 && world < UINT32_MAX)) {
			isc_err_push("a distributed.ranks[] entry without a valid rank and world size");
			rc = -EINVAL;
			goto out;
		}
		r->rank = (uint32_t)rank;
		r->world = (uint32_t)world;
		double es = isc_doc_num(r->e, "epoch_s", 0), en = isc_doc_num(r->e, "epoch_ns", 0);
		r->epoch = es >= 0 && es < 9e9 && en >= 0 && en < 1e9 ? (int64_t)es * 1000000000 + (int64_t)en : 0;
		double ao = isc_doc_num(r->e, "merge_clock.offset_ns", 0), au = isc_doc_num(r->e, "merge_clock.uncertainty_ns", 0);
		r->applied = fabs(ao) < 4e18 ? (int64_t)ao : 0;
		r->applied_unc = au >= 0 && au < 4e18 ? (uint64_t)au : 0;
		r->applied_method = isc_doc_str(r->e, "merge_clock.method", "reference");
		char key[96];
		const char *boot = isc_doc_str(r->e, "boot_id", "");
		if (*boot)
			snprintf(key, sizeof(key), "b:%.80s", boot);
		else
			snprintf(key, sizeof(key), "d%u:s%.0f", r->doc, isc_doc_num(r->e, "source", 0));
		size_t d = 0;
		while (d < ndom && strcmp(dom[d], key))
			d++;
		if (d == ndom)
			snprintf(dom[ndom++], sizeof(dom[0]), "%s", key);
		r->domain = (uint32_t)d;
		if ((rc = decode_log(r)))
			goto out;
		iteration_p50(r);
		rc = -ENOMEM;
	}
	isc_sort(rs, n, sizeof(*rs), rank_cmp);
	for (size_t i = 1; i < n; i++) {
		if (rs[i].rank == rs[i - 1].rank) {
			isc_err_push("rank %u is given twice (inputs %u and %u)", rs[i].rank, rs[i - 1].doc + 1, rs[i].doc + 1);
			rc = -EINVAL;
			goto out;
		}
		const char *j0 = isc_doc_str(rs[0].e, "job", NULL), *ji = isc_doc_str(rs[i].e, "job", NULL);
		const char *b0 = isc_doc_str(rs[0].e, "backend", NULL), *bi = isc_doc_str(rs[i].e, "backend", NULL);
		if (rs[i].world != rs[0].world || (j0 && ji && strcmp(j0, ji)) || (b0 && bi && strcmp(b0, bi))) {
			isc_err_push("mixed jobs: rank %u (world size %u, backend %s%s%s) and rank %u (world size %u, backend %s%s%s)",
				     rs[0].rank, rs[0].world, b0 ? b0 : "?", j0 ? ", rendezvous " : "", j0 ? j0 : "",
				     rs[i].rank, rs[i].world, bi ? bi : "?", ji ? ", rendezvous " : "", ji ? ji : "");
			rc = -EINVAL;
			goto out;
		}
	}
	if (n && rs[n - 1].rank >= rs[0].world) {
		isc_err_push("rank %u is not below the world size %u", rs[n - 1].rank, rs[0].world);
		rc = -EINVAL;
		goto out;
	}
	/* ---- collectives matched across ranks ---- */
	bool by_seq = n > 0;
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		total += rs[i].nc;
		if (rs[i].nc && !rs[i].all_seq)
			by_seq = false;
	}
	if (!(mem = malloc((total ? total : 1) * sizeof(*mem))) || !(ends = malloc((total ? total : 1) * sizeof(*ends))))
		goto out;
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < rs[i].nc; k++) {
			const struct rcoll *x = &rs[i].c[k];
			mem[nmem++] = (struct member){ by_seq ? (uint64_t)x->pg << 40 | x->seq : (uint64_t)x->chan << 40 | x->idx,
						       (uint32_t)i, (uint32_t)k };
		}
	isc_sort(mem, nmem, sizeof(*mem), by_key);
	/* clocks: the ends of symmetric collectives shared by two domains or more */
	for (size_t a = 0; a < nmem;) {
		size_t b = a;
		bool multi = false, sym = true;
		while (b < nmem && mem[b].key == mem[a].key) {
			multi |= rs[mem[b].r].domain != rs[mem[a].r].domain;
			sym &= isc_coll_symmetric(rs[mem[b].r].c[mem[b].i].op);
			b++;
		}
		for (size_t q = a; multi && sym && q < b; q++) {
			const struct rk *r = &rs[mem[q].r];
			ends[nends++] = (struct isc_align_end){ mem[q].key, r->domain, r->epoch + r->c[mem[q].i].end };
		}
		a = b;
	}
	if (!(al = calloc(ndom ? ndom : 1, sizeof(*al))))
		goto out;
	if (n && (rc = isc_clock_align(ends, nends, ndom, rs[0].domain, al)))
		goto out;
	rc = -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct isc_align_result *x = &al[rs[i].domain];
		rs[i].off = x->offset_ns;
		rs[i].aligned = x->aligned;
		rs[i].unc = rs[i].domain == rs[0].domain ? 0 : x->aligned ? x->uncertainty_ns : rs[i].applied_unc;
		if (!(rs[i].late = malloc((rs[i].nc ? rs[i].nc : 1) * sizeof(*rs[i].late))) ||
		    !(rs[i].late_op = malloc(rs[i].nc ? rs[i].nc : 1)))
			goto out;
	}
	/* per collective: arrivals on the aligned clock */
	size_t matched = 0, mismatched = 0, symmetric = 0;
	int64_t t0 = INT64_MAX;
	int64_t *starts = malloc((n ? n : 1) * sizeof(*starts)), *tmp = malloc((n ? n : 1) * sizeof(*tmp));
	if (!starts || !tmp) {
		free(starts);
		free(tmp);
		goto out;
	}
	for (size_t a = 0; a < nmem;) {
		size_t b = a;
		while (b < nmem && mem[b].key == mem[a].key)
			b++;
		size_t m = b - a;
		unsigned votes[ISC_COLL_N] = { 0 };
		int64_t smin = INT64_MAX, smax = INT64_MIN, emin = INT64_MAX, emax = INT64_MIN, dmin = INT64_MAX;
		uint64_t bytes = 0;
		uint8_t dtype = 0;
		size_t lastq = SIZE_MAX, nmax = 0;
		for (size_t q = a; q < b; q++) {
			const struct rk *r = &rs[mem[q].r];
			const struct rcoll *x = &r->c[mem[q].i];
			int64_t s = r->epoch + x->start + r->off, e = r->epoch + x->end + r->off;
			starts[q - a] = s;
			votes[x->op < ISC_COLL_N ? x->op : 0]++;
			if (s > smax) {
				smax = s;
				lastq = q;
				nmax = 1;
			} else if (s == smax) {
				nmax++;
			}
			smin = s < smin ? s : smin;
			emin = e < emin ? e : emin;
			emax = e > emax ? e : emax;
			dmin = x->end - x->start < dmin ? x->end - x->start : dmin;
			bytes = x->bytes > bytes ? x->bytes : bytes;
			dtype = dtype ? dtype : x->dtype;
			t0 = s < t0 ? s : t0;
		}
		uint8_t op = 0;
		for (unsigned o = 1; o < ISC_COLL_N; o++)
			if (votes[o] > votes[op])
				op = (uint8_t)o;
		if (votes[op] != m)
			mismatched++;
		if (m < 2) {
			a = b;
			continue;
		}
		matched++;
		symmetric += isc_coll_symmetric(op);
		for (size_t q = a; q < b; q++) { /* waits and lateness against the median of the others */
			struct rk *r = &rs[mem[q].r];
			r->wait += (double)(smax - starts[q - a]);
			r->matched++;
			r->matched_op[op]++;
			size_t k = 0;
			for (size_t u = a; u < b; u++)
				if (u != q)
					tmp[k++] = starts[u - a];
			r->late_op[r->nlate] = op;
			r->late[r->nlate++] = starts[q - a] - med_i64(tmp, k);
		}
		if (nmax == 1) { /* one rank arrived last: what the job lost to it */
			struct rk *r = &rs[mem[lastq].r];
			int64_t second = INT64_MIN;
			for (size_t q = a; q < b; q++)
				if (q != lastq && starts[q - a] > second)
					second = starts[q - a];
			r->last++;
			r->last_op[op]++;
			r->loss += (double)(smax - second);
			for (size_t q = a; q < b; q++)
				if (q != lastq)
					r->wait_op[op] += (double)(smax - starts[q - a]);
		}
		/* by operation, size and type */
		size_t g = 0;
		while (g < nbo && !(bo[g].op == op && bo[g].bytes == bytes && bo[g].dtype == dtype))
			g++;
		if (g == nbo && nbo < BYOP_MAX) {
			if (isc_grow(&bo, &capbo, nbo, sizeof(*bo))) {
				free(starts);
				free(tmp);
				goto out;
			}
			bo[nbo++] = (struct byop){ op, dtype, bytes, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
		}
		if (g < nbo) {
			struct byop *x = &bo[g];
			double wait = 0;
			for (size_t q = 0; q < m; q++)
				wait += (double)(smax - starts[q]);
			x->count++;
			x->members += (double)m;
			x->transfer += (double)dmin;
			x->skew += (double)(smax - smin);
			x->skew_max = fmax(x->skew_max, (double)(smax - smin));
			x->end_skew += (double)(emax - emin);
			x->wait += wait;
			unsigned gn = rs[mem[a].r].world; /* the group: the world (a sub-group's size is not logged) */
			double size = isc_coll_size_bytes(op, gn, (double)bytes), fac = isc_coll_bus_factor(op, gn);
			if (bytes && dmin > 0 && fac > 0) {
				x->algbw_sum += size / ((double)dmin / 1e9);
				x->busbw_sum += size / ((double)dmin / 1e9) * fac;
				x->bw_n++;
			}
		}
		/* the most skewed collectives */
		struct slow sl = { op, by_seq ? mem[a].key & ((1ull << 40) - 1) : mem[a].key & ((1ull << 40) - 1), by_seq,
				   (double)smin, (double)(smax - smin), (double)(emax - emin), (double)dmin,
				   nmax == 1 ? rs[mem[lastq].r].rank : 0, (uint32_t)m, nmax == 1 };
		size_t pos = nslow;
		while (pos > 0 && slowest[pos - 1].skew < sl.skew)
			pos--;
		if (pos < SLOWEST_MAX) {
			memmove(&slowest[pos + 1], &slowest[pos], (nslow - pos - (nslow == SLOWEST_MAX)) * sizeof(*slowest));
			slowest[pos] = sl;
			if (nslow < SLOWEST_MAX)
				nslow++;
		}
		a = b;
	}
	free(starts);
	free(tmp);
	/* ---- stragglers ---- */
	double *p50s = scratch, med_it = 0;
	size_t np50 = 0;
	for (size_t i = 0; i < n; i++)
		if (rs[i].have_p50)
			p50s[np50++] = rs[i].it_p50;
	if (np50) {
		isc_sort(p50s, np50, sizeof(*p50s), cmp_dbl);
		med_it = (p50s[(np50 - 1) / 2] + p50s[np50 / 2]) / 2;
	}
	/*
	 * lmed: the median lateness over a rank's collectives; opmed: over its
	 * collectives of one operation (3 or more), the latest such operation
	 * (op_of).  A rank late in one collective of each step (the first
	 * after its extra work) and on time in the others (which every rank
	 * then enters together) is late in that operation's median, not in
	 * the median over all of them.  named: the lateness it is judged by.
	 */
	int64_t *lmed = calloc(n ? n : 1, sizeof(*lmed)), *opmed = calloc(n ? n : 1, sizeof(*opmed)),
		*named = calloc(n ? n : 1, sizeof(*named));
	uint8_t *op_of = calloc(n ? n : 1, 1);
	if (!lmed || !opmed || !named || !op_of) {
		free(lmed);
		free(opmed);
		free(named);
		free(op_of);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct rk *r = &rs[i];
		int64_t *buf = r->nlate ? malloc(r->nlate * sizeof(*buf)) : NULL;
		if (r->nlate && !buf) {
			free(lmed);
			free(opmed);
			free(named);
			free(op_of);
			goto out;
		}
		for (unsigned o = 1; buf && o < ISC_COLL_N; o++) {
			size_t k = 0;
			for (size_t q = 0; q < r->nlate; q++)
				if (r->late_op[q] == o)
					buf[k++] = r->late[q];
			if (k < STRAGGLER_MIN_MATCHED)
				continue;
			int64_t m = med_i64(buf, k);
			if (!op_of[i] || m > opmed[i]) {
				opmed[i] = m;
				op_of[i] = (uint8_t)o;
			}
		}
		free(buf);
		lmed[i] = r->nlate ? med_i64(r->late, r->nlate) : 0;
	}
	/* without iterations: the median period between a rank's consecutive collectives */
	double period = 0;
	if (!np50) {
		double *per = scratch + n;
		size_t npe = 0;
		for (size_t i = 0; i < n; i++)
			if (rs[i].nc >= 2)
				per[npe++] = (double)(rs[i].c[rs[i].nc - 1].start - rs[i].c[0].start) / (double)(rs[i].nc - 1);
		if (npe) {
			isc_sort(per, npe, sizeof(*per), cmp_dbl);
			period = (per[(npe - 1) / 2] + per[npe / 2]) / 2;
		}
	}
	double base = np50 ? med_it : period, thresh = STRAGGLER_MIN_SHARE * base;
	size_t nstrag = 0;
	for (size_t i = 0; i < n; i++) {
		struct rk *r = &rs[i];
		/* late over all its collectives and last in half of them, else late in one operation's and last in half of those */
		bool all = (double)lmed[i] >= thresh && r->last >= STRAGGLER_LAST_SHARE * r->matched,
		     one = op_of[i] && (double)opmed[i] >= thresh &&
			   r->last_op[op_of[i]] >= STRAGGLER_LAST_SHARE * r->matched_op[op_of[i]];
		named[i] = all || !one ? lmed[i] : opmed[i];
		strag[i] = n >= 2 && r->matched >= STRAGGLER_MIN_MATCHED && base > 0 && (all || one);
		nstrag += strag[i];
	}

	/* ---- the section ---- */
	cJSON *sec = cJSON_CreateObject();
	if (!sec) {
		free(lmed);
		free(opmed);
		free(named);
		free(op_of);
		goto out;
	}
	*section = sec;
	uint32_t world = n ? rs[0].world : 0;
	isc_jb_num(&jb, sec, "world_size", world);
	isc_jb_str(&jb, sec, "backend", n ? isc_doc_str(rs[0].e, "backend", NULL) : NULL);
	isc_jb_num(&jb, sec, "ranks_present", (double)n);
	uint32_t *miss = malloc(((size_t)world + 1) * sizeof(*miss));
	size_t nmiss = 0;
	for (uint32_t w = 0, i = 0; miss && w < world; w++) {
		while (i < n && rs[i].rank < w)
			i++;
		if (i >= n || rs[i].rank != w)
			miss[nmiss++] = w;
	}
	char rbuf[512];
	isc_rank_ranges(rbuf, sizeof(rbuf), miss, nmiss);
	free(miss);
	isc_jb_num(&jb, sec, "ranks_missing", (double)nmiss);
	isc_jb_str(&jb, sec, "missing", nmiss ? rbuf : NULL);
	/* hosts */
	cJSON *hosts = isc_jb_arr(&jb, sec, "hosts");
	for (size_t i = 0; i < n; i++) {
		const char *h = isc_doc_str(rs[i].e, "host", NULL);
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++) {
			const char *hj = isc_doc_str(rs[j].e, "host", NULL);
			seen = (h && hj && !strcmp(h, hj)) || (!h && !hj);
		}
		if (seen)
			continue;
		cJSON *ho = isc_jb_push_obj(&jb, hosts);
		isc_jb_str(&jb, ho, "host", h);
		cJSON *hr = isc_jb_arr(&jb, ho, "ranks");
		for (size_t j = i; j < n; j++) {
			const char *hj = isc_doc_str(rs[j].e, "host", NULL);
			if ((h && hj && !strcmp(h, hj)) || (!h && !hj))
				isc_jb_push_num(&jb, hr, rs[j].rank);
		}
	}
	/* the detail rank: the latest straggler, else the lowest rank */
	size_t det = 0;
	for (size_t i = 0; i < n; i++)
		if (strag[i] && (!strag[det] || named[i] > named[det]))
			det = i;
	*detail = n ? rs[det].rank : 0;
	isc_jb_num(&jb, sec, "detail_rank", *detail);
	isc_jb_str(&jb, sec, "match_by", by_seq ? "sequence" : "order");
	/* clocks */
	cJSON *clk = isc_jb_obj(&jb, sec, "clock");
	isc_jb_num(&jb, clk, "reference_rank", n ? rs[0].rank : 0);
	isc_jb_num(&jb, clk, "domains", (double)ndom);
	uint64_t worst = 0;
	size_t unaligned = 0;
	for (size_t i = 0; i < n; i++) {
		worst = rs[i].unc > worst ? rs[i].unc : worst;
		unaligned += !rs[i].aligned;
	}
	isc_jb_num(&jb, clk, "uncertainty_ns", (double)worst);
	isc_jb_num(&jb, clk, "unaligned_ranks", (double)unaligned);
	isc_jb_num(&jb, clk, "t0_s", t0 != INT64_MAX ? (double)(t0 / 1000000000) : 0);
	isc_jb_num(&jb, clk, "t0_ns", t0 != INT64_MAX ? (double)(t0 % 1000000000) : 0);
	/* the ranks */
	cJSON *ra = isc_jb_arr(&jb, sec, "ranks");
	double *exp_share = scratch + n;
	size_t nexp = 0;
	for (size_t i = 0; i < n; i++) {
		struct rk *r = &rs[i];
		size_t own = SIZE_MAX; /* the caller's entry to move, when it gives it */
		for (size_t k = 0; owned && k < n && own == SIZE_MAX; k++)
			if (owned[k] && owned[k] == r->e)
				own = k;
		cJSON *o = own != SIZE_MAX ? owned[own] : isc_jb_chk(&jb, cJSON_Duplicate(r->e, true));
		if (!o || !cJSON_AddItemToArray(ra, o)) {
			if (own == SIZE_MAX)
				cJSON_Delete(o);
			jb.oom = true;
			break;
		}
		if (own != SIZE_MAX)
			owned[own] = NULL;
		/* an entry reduced before (a rank's own findings, gathered by --job): what this reduce says instead */
		for (size_t k = 0; k < sizeof(reduced_keys) / sizeof(reduced_keys[0]); k++)
			cJSON_DeleteItemFromObjectCaseSensitive(o, reduced_keys[k]);
		isc_jb_num(&jb, o, "clock_offset_ns", (double)(r->applied + r->off));
		isc_jb_num(&jb, o, "clock_uncertainty_ns", (double)r->unc);
		isc_jb_str(&jb, o, "clock_method",
			   r->domain == rs[0].domain ? "reference" : r->aligned ? "collectives" : "wall_clock");
		/* where the rank's time 0 lies on the job's aligned clock, relative to clock.t0 */
		isc_jb_num(&jb, o, "origin_ns", t0 != INT64_MAX ? (double)(r->epoch + r->off - t0) : 0);
		isc_jb_num(&jb, o, "matched", r->matched);
		isc_jb_num(&jb, o, "wait_ns", r->wait);
		isc_jb_num_or_null(&jb, o, "wait_per_iteration_ns", r->iters >= 1, r->iters >= 1 ? round(r->wait / r->iters) : 0);
		isc_jb_num(&jb, o, "last_arrivals", r->last);
		isc_jb_num_or_null(&jb, o, "last_pct", r->matched > 0, r->matched > 0 ? round(1e4 * r->last / r->matched) / 100 : 0);
		isc_jb_num_or_null(&jb, o, "lateness_ns", r->nlate > 0, (double)lmed[i]);
		isc_jb_num_or_null(&jb, o, "iteration_p50_ns", r->have_p50, r->it_p50);
		isc_jb_bool(&jb, o, "straggler", strag[i]);
		double win = isc_doc_num(r->e, "window_ns", 0), ex = isc_doc_num(r->e, "exposed_comm_ns", 0);
		isc_jb_num_or_null(&jb, o, "exposed_comm_pct", win > 0, win > 0 ? round(1e4 * ex / win) / 100 : 0);
		if (win > 0)
			exp_share[nexp++] = ex / win;
	}
	/* collectives */
	cJSON *co = isc_jb_obj(&jb, sec, "collectives");
	isc_jb_num(&jb, co, "matched", (double)matched);
	isc_jb_num(&jb, co, "symmetric", (double)symmetric);
	isc_jb_num(&jb, co, "mismatched", (double)mismatched);
	isc_jb_num(&jb, co, "aligned_on", (double)nends);
	cJSON *ops = isc_jb_arr(&jb, co, "by_op");
	for (size_t g = 0; g < nbo; g++) {
		const struct byop *x = &bo[g];
		cJSON *o = isc_jb_push_obj(&jb, ops);
		isc_jb_str(&jb, o, "op", isc_coll_op_name(x->op));
		isc_jb_num_or_null(&jb, o, "bytes", x->bytes > 0, (double)x->bytes);
		isc_jb_str(&jb, o, "dtype", isc_dtype_name(x->dtype));
		isc_jb_num(&jb, o, "count", x->count);
		isc_jb_num(&jb, o, "ranks_mean", round(100 * x->members / x->count) / 100);
		isc_jb_num(&jb, o, "transfer_ns_mean", round(x->transfer / x->count));
		isc_jb_num(&jb, o, "start_skew_ns_mean", round(x->skew / x->count));
		isc_jb_num(&jb, o, "start_skew_ns_max", x->skew_max);
		isc_jb_num(&jb, o, "end_skew_ns_mean", round(x->end_skew / x->count));
		isc_jb_num(&jb, o, "wait_ns_total", x->wait);
		isc_jb_num_or_null(&jb, o, "algbw_gbps", x->bw_n > 0, round(100 * x->algbw_sum / x->bw_n / 1e9) / 100);
		isc_jb_num_or_null(&jb, o, "busbw_gbps", x->bw_n > 0, round(100 * x->busbw_sum / x->bw_n / 1e9) / 100);
	}
	cJSON *sla = isc_jb_arr(&jb, co, "most_skewed");
	for (size_t s = 0; s < nslow; s++) {
		cJSON *o = isc_jb_push_obj(&jb, sla);
		isc_jb_str(&jb, o, "op", isc_coll_op_name(slowest[s].op));
		isc_jb_num(&jb, o, slowest[s].by_seq ? "seq" : "index", (double)slowest[s].key);
		isc_jb_num(&jb, o, "start_ns", t0 != INT64_MAX ? slowest[s].start - (double)t0 : 0);
		isc_jb_num(&jb, o, "start_skew_ns", slowest[s].skew);
		isc_jb_num(&jb, o, "end_skew_ns", slowest[s].end_skew);
		isc_jb_num(&jb, o, "transfer_ns", slowest[s].transfer);
		isc_jb_num(&jb, o, "ranks", slowest[s].members);
		isc_jb_num_or_null(&jb, o, "last_rank", slowest[s].have_last, slowest[s].last_rank);
	}
	/* iterations across ranks */
	cJSON *its = isc_jb_obj(&jb, sec, "iterations");
	isc_jb_num(&jb, its, "ranks_with", (double)np50);
	isc_jb_num_or_null(&jb, its, "p50_ns_min", np50 > 0, np50 ? p50s[0] : 0);
	isc_jb_num_or_null(&jb, its, "p50_ns_median", np50 > 0, med_it);
	isc_jb_num_or_null(&jb, its, "p50_ns_max", np50 > 0, np50 ? p50s[np50 - 1] : 0);
	isc_jb_num_or_null(&jb, its, "spread_pct", np50 > 0 && p50s[0] > 0,
			   np50 && p50s[0] > 0 ? round(1e4 * (p50s[np50 - 1] - p50s[0]) / p50s[0]) / 100 : 0);
	/* communication */
	cJSON *cm = isc_jb_obj(&jb, sec, "communication");
	double exp_med = 0;
	if (nexp) {
		isc_sort(exp_share, nexp, sizeof(*exp_share), cmp_dbl);
		exp_med = (exp_share[(nexp - 1) / 2] + exp_share[nexp / 2]) / 2;
	}
	isc_jb_num_or_null(&jb, cm, "exposed_pct_median", nexp > 0, round(1e4 * exp_med) / 100);
	isc_jb_num_or_null(&jb, cm, "exposed_pct_max", nexp > 0, nexp ? round(1e4 * exp_share[nexp - 1]) / 100 : 0);
	isc_jb_bool(&jb, cm, "bound", n >= 2 && !nstrag && nexp > 0 && exp_med >= COMM_BOUND_SHARE);
	isc_jb_num(&jb, cm, "bound_share_pct", COMM_BOUND_SHARE * 100);
	/* stragglers, latest first */
	cJSON *sa = isc_jb_arr(&jb, sec, "stragglers");
	isc_jb_str(&jb, sec, "straggler_rule",
		   "late against the median of the other ranks' arrivals by at least 5 % of the median iteration "
		   "(without iterations: of the median time between a rank's collectives), in the median over its "
		   "collectives and last to arrive in at least half of them, or in the median over its collectives of "
		   "one operation (3 or more) and last to arrive in at least half of those (3 or more shared in all)");
	for (size_t done = 0; done < nstrag; done++) {
		size_t who = SIZE_MAX;
		for (size_t i = 0; i < n; i++) {
			bool taken = false;
			const cJSON *x;
			cJSON_ArrayForEach(x, sa)
				taken |= isc_doc_num(x, "rank", -1) == rs[i].rank;
			if (strag[i] && !taken && (who == SIZE_MAX || named[i] > named[who]))
				who = i;
		}
		if (who == SIZE_MAX)
			break;
		const struct rk *r = &rs[who];
		cJSON *s = isc_jb_push_obj(&jb, sa);
		isc_jb_num(&jb, s, "rank", r->rank);
		isc_jb_str(&jb, s, "host", isc_doc_str(r->e, "host", NULL));
		isc_jb_num(&jb, s, "lateness_ns", (double)lmed[who]);
		isc_jb_str(&jb, s, "late_in", op_of[who] ? isc_coll_op_name(op_of[who]) : NULL);
		isc_jb_num_or_null(&jb, s, "late_in_ns", op_of[who], (double)opmed[who]);
		isc_jb_num(&jb, s, "judged_lateness_ns", (double)named[who]);
		isc_jb_num(&jb, s, "last_pct", r->matched > 0 ? round(1e4 * r->last / r->matched) / 100 : 0);
		isc_jb_num_or_null(&jb, s, "late_in_last_pct", op_of[who] && r->matched_op[op_of[who]] > 0,
				   op_of[who] && r->matched_op[op_of[who]] > 0
					   ? round(1e4 * r->last_op[op_of[who]] / r->matched_op[op_of[who]]) / 100
					   : 0);
		isc_jb_num(&jb, s, "loss_ns", r->loss);
		double iters = r->iters;
		isc_jb_num_or_null(&jb, s, "loss_per_iteration_ns", iters >= 1, iters >= 1 ? round(r->loss / iters) : 0);
		isc_jb_num_or_null(&jb, s, "loss_pct_of_iteration", iters >= 1 && med_it > 0,
				   iters >= 1 && med_it > 0 ? round(1e4 * r->loss / iters / med_it) / 100 : 0);
		unsigned top = 0;
		for (unsigned o = 1; o < ISC_COLL_N; o++)
			if (r->wait_op[o] > r->wait_op[top])
				top = o;
		isc_jb_str(&jb, s, "waited_in", top ? isc_coll_op_name(top) : NULL);
		isc_jb_num(&jb, s, "others_wait_ns", r->wait_op[top]);
		cJSON *wr = isc_jb_arr(&jb, s, "waiting_ranks");
		for (size_t i = 0; i < n; i++)
			if (!strag[i])
				isc_jb_push_num(&jb, wr, rs[i].rank);
		if ((rc = cause_of(&jb, s, rs, n, who, strag, (double)named[who]))) {
			free(lmed);
			free(opmed);
			free(named);
			free(op_of);
			goto out;
		}
		rc = -ENOMEM;
	}
	free(lmed);
	free(opmed);
	free(named);
	free(op_of);
	rc = jb.oom ? -ENOMEM : 0;
out:
	if (rc && *section) {
		cJSON_Delete(*section);
		*section = NULL;
	}
	if (rc == -ENOMEM)
		isc_err_push("out of memory");
	free_ranks(rs, n);
	free(mem);
	free(ends);
	free(al);
	free(dom);
	free(bo);
	free(strag);
	free(scratch);
	return rc;
}

/* ---- iscope-analyze --job ------------------------------------------------- */
int isc_analyze_job(const cJSON *const *docs, size_t n, cJSON **out)
{
	const cJSON **entries = NULL;
	unsigned *doc_of = NULL;
	size_t ne = 0, cap = 0;
	cJSON *section = NULL;
	unsigned detail = 0;
	int rc = -ENOMEM;
	*out = NULL;
	for (size_t d = 0; d < n; d++) {
		const cJSON *e;
		size_t before = ne;
		cJSON_ArrayForEach(e, isc_doc_arr(docs[d], "distributed.ranks")) {
			if (isc_grow(&entries, &cap, ne, sizeof(*entries)))
				goto out;
			unsigned *nd = realloc(doc_of, cap * sizeof(*doc_of));
			if (!nd)
				goto out;
			doc_of = nd;
			entries[ne] = e;
			doc_of[ne++] = (unsigned)d;
		}
		if (ne == before) {
			isc_err_push("input %zu is not the analysis of a rank of a distributed job (no distributed.ranks)", d + 1);
			rc = -EINVAL;
			goto out;
		}
	}
	if ((rc = isc_dist_reduce(entries, doc_of, ne, NULL, &section, &detail)))
		goto out;
	/* the document that holds the detail rank, with the job's section */
	size_t pick = 0;
	for (size_t i = 0; i < ne; i++)
		if (isc_doc_num(entries[i], "rank", -1) == detail)
			pick = doc_of[i];
	rc = -ENOMEM;
	if (!(*out = cJSON_Duplicate(docs[pick], true)))
		goto out;
	cJSON_DeleteItemFromObjectCaseSensitive(*out, "distributed");
	cJSON_DeleteItemFromObjectCaseSensitive(*out, "comparison");
	cJSON_AddItemToObject(*out, "distributed", section);
	section = NULL;
	if ((rc = isc_findings_evaluate(*out))) {
		cJSON_Delete(*out);
		*out = NULL;
	}
out:
	if (rc == -ENOMEM)
		isc_err_push("out of memory");
	cJSON_Delete(section);
	free(entries);
	free(doc_of);
	return rc;
}
