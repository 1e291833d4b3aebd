/*
 * report_job.c - "## Job": a distributed job's view, first in the report
 * (issue 27): who the job is (world size, ranks present and missing,
 * backend, hosts), the straggler with its cause or the balance, exposed
 * communication; then a table of the ranks and a table of the collectives
 * by operation; in the HTML page, per-rank swimlanes (iterations and
 * collectives on the job's aligned clock) and a heatmap of the iteration
 * times (rank x iteration).  The sections after it are the detail rank's
 * own analysis.  Nothing for a document without a distributed section, or
 * with one rank alone (a rank's own findings, the map step of --job): it
 * has no job to show.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "isc_util.h"
#include "report.h"

#define LANES_MAX 64
#define COLLS_MAX 4000
#define HEAT_ROWS_MAX 256
#define HEAT_COLS_MAX 200

/* "ranks 0-2, 5" of a JSON array of ranks. */
static void rank_list(struct isc_rep *m, const cJSON *arr)
{
	uint32_t v[512] = { 0 };
	size_t n = 0;
	const cJSON *x;
	cJSON_ArrayForEach(x, arr)
		if (n < sizeof(v) / sizeof(v[0]) && cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < UINT32_MAX)
			v[n++] = (uint32_t)x->valuedouble;
	char buf[600];
	isc_rank_ranges(buf, sizeof(buf), v, n);
	isc_rep_putf(m, "%s %s%s", n == 1 ? "rank" : "ranks", buf, (size_t)cJSON_GetArraySize(arr) > n ? " and more" : "");
}

static void straggler_line(struct isc_rep *m, const cJSON *s)
{
	char b[4][64];
	const cJSON *c;
	isc_rep_putf(m, "**Straggler: rank %.0f**", isc_doc_num(s, "rank", 0));
	if (isc_doc_str(s, "host", NULL)) {
		isc_rep_put(m, " on ");
		isc_rep_md(m, isc_doc_str(s, "host", NULL));
	}
	isc_rep_putf(m, ", %s late to its collectives (median), last in %.0f %% of them; ",
		     isc_rep_field(b[0], 64, s, "lateness_ns", 'n'), isc_doc_num(s, "last_pct", 0));
	rank_list(m, isc_doc_arr(s, "waiting_ranks"));
	isc_rep_put(m, " wait for it in ");
	isc_rep_md(m, isc_doc_str(s, "waited_in", "its collectives"));
	double per;
	if (isc_doc_have(s, "loss_per_iteration_ns", &per))
		isc_rep_putf(m, ": the job loses %s per iteration (%s of an iteration).",
			     isc_rep_field(b[1], 64, s, "loss_per_iteration_ns", 'n'),
			     isc_rep_field(b[2], 64, s, "loss_pct_of_iteration", 'p'));
	else
		isc_rep_putf(m, ": the job loses %s.", isc_rep_field(b[1], 64, s, "loss_ns", 'n'));
	if (!cJSON_GetArraySize(isc_doc_arr(s, "cause"))) {
		isc_rep_putf(m, " Its profile shows no extra work against the other ranks' (compared with %.0f).\n\n",
			     isc_doc_num(s, "compared_with", 0));
		return;
	}
	isc_rep_put(m, " Its extra work, against the other ranks':\n\n");
	cJSON_ArrayForEach(c, isc_doc_arr(s, "cause")) {
		isc_rep_put(m, "- ");
		isc_rep_code(m, isc_doc_str(c, "name", "?"));
		isc_rep_location(m, c, true);
		isc_rep_putf(m, " (%s): %s per iteration against %s, +%s\n", isc_doc_str(c, "view", "?"),
			     isc_rep_field(b[0], 64, c, "ns_per_iter", 'n'), isc_rep_field(b[1], 64, c, "others_ns_per_iter", 'n'),
			     isc_rep_field(b[2], 64, c, "delta_ns_per_iter", 'n'));
	}
	isc_rep_put(m, "\n");
}

/* A signed duration at path of o ("-6.0 µs"), "n/a" when missing. */
static const char *signed_ns(char *buf, size_t cap, const cJSON *o, const char *path)
{
	double v;
	if (!isc_doc_have(o, path, &v) || !isfinite(v) || fabs(v) > ISC_REP_MAX_VALUE)
		return snprintf(buf, cap, "n/a"), buf;
	char t[48];
	isc_rep_fmt_ns(t, sizeof(t), fabs(v));
	snprintf(buf, cap, "%s%s", v < 0 ? "-" : "", t);
	return buf;
}

static void ranks_table(struct isc_rep *m, const cJSON *d)
{
	const cJSON *r;
	char b[12][64];
	isc_rep_put(m, "### Ranks\n\n| Rank | Host | Iteration p50 | Compute | Communication | Exposed comm. | Idle | Overlap "
		       "| Wait in collectives | Last | Lateness | Clock offset |\n"
		       "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	cJSON_ArrayForEach(r, isc_doc_arr(d, "ranks")) {
		isc_rep_putf(m, "| %.0f%s | ", isc_doc_num(r, "rank", 0),
			     cJSON_IsTrue(isc_doc_get(r, "straggler")) ? " (straggler)" : "");
		isc_rep_md(m, isc_doc_str(r, "host", "n/a"));
		isc_rep_putf(m, " | %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s ± %s |\n",
			     isc_rep_field(b[0], 64, r, "iteration_p50_ns", 'n'), isc_rep_field(b[1], 64, r, "compute_ns", 'n'),
			     isc_rep_field(b[2], 64, r, "comm_ns", 'n'), isc_rep_field(b[3], 64, r, "exposed_comm_ns", 'n'),
			     isc_rep_field(b[4], 64, r, "exposed_comm_pct", 'p'), isc_rep_field(b[5], 64, r, "idle_ns", 'n'),
			     isc_rep_field(b[6], 64, r, "overlap_pct", 'p'), isc_rep_field(b[7], 64, r, "wait_ns", 'n'),
			     isc_rep_field(b[8], 64, r, "last_arrivals", 'i'), signed_ns(b[9], 64, r, "lateness_ns"),
			     signed_ns(b[10], 64, r, "clock_offset_ns"), isc_rep_field(b[11], 64, r, "clock_uncertainty_ns", 'n'));
	}
	isc_rep_put(m, "\n");
}

static void collectives_table(struct isc_rep *m, const cJSON *d)
{
	const cJSON *o;
	char b[9][64];
	const cJSON *ops = isc_doc_arr(d, "collectives.by_op");
	isc_rep_putf(m, "### Collectives\n\n%.0f collectives matched across ranks (by %s), %.0f of them not of one "
		     "operation on every rank.\n\n", isc_doc_num(d, "collectives.matched", 0),
		     !strcmp(isc_doc_str(d, "match_by", ""), "sequence") ? "process group and sequence number" : "order",
		     isc_doc_num(d, "collectives.mismatched", 0));
	if (!cJSON_GetArraySize(ops))
		return;
	isc_rep_put(m, "| Operation | Size | Type | Count | Ranks | Transfer (mean) | Start skew (mean) | Start skew (max) "
		       "| End skew (mean) | Wait (total) | Bus bandwidth |\n"
		       "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	cJSON_ArrayForEach(o, ops) {
		isc_rep_put(m, "| ");
		isc_rep_md(m, isc_doc_str(o, "op", "?"));
		isc_rep_putf(m, " | %s | ", isc_rep_field(b[0], 64, o, "bytes", 'b'));
		isc_rep_md(m, isc_doc_str(o, "dtype", "n/a"));
		isc_rep_putf(m, " | %s | %s | %s | %s | %s | %s | %s | ", isc_rep_field(b[1], 64, o, "count", 'i'),
			     isc_rep_field(b[2], 64, o, "ranks_mean", 'f'), isc_rep_field(b[3], 64, o, "transfer_ns_mean", 'n'),
			     isc_rep_field(b[4], 64, o, "start_skew_ns_mean", 'n'), isc_rep_field(b[5], 64, o, "start_skew_ns_max", 'n'),
			     isc_rep_field(b[6], 64, o, "end_skew_ns_mean", 'n'), isc_rep_field(b[7], 64, o, "wait_ns_total", 'n'));
		double bw;
		if (isc_doc_have(o, "busbw_gbps", &bw) && isfinite(bw) && bw >= 0 && bw < 1e9)
			isc_rep_putf(m, "%.2f GB/s |\n", bw);
		else
			isc_rep_put(m, "n/a |\n");
		(void)b[8];
	}
	isc_rep_put(m, "\n");
}

/* A rank's collectives from its log: starts and ends on its own clock, channel and position in it. */
struct lcoll {
	double s, e;
	uint32_t chan, idx;
};

static size_t read_log(const cJSON *e, struct lcoll *c, size_t cap)
{
	const cJSON *st = isc_doc_arr(e, "log.start_delta_ns"), *du = isc_doc_arr(e, "log.dur_ns"), *ch = isc_doc_arr(e, "log.chan");
	const cJSON *a = st ? st->child : NULL, *b = du ? du->child : NULL, *k = ch ? ch->child : NULL;
	double t = 0;
	size_t n = 0;
	uint32_t per[64] = { 0 };
	for (; a && b && n < cap; a = a->next, b = b->next, k = k ? k->next : NULL) {
		double dl = cJSON_IsNumber(a) ? a->valuedouble : 0, dur = cJSON_IsNumber(b) ? b->valuedouble : 0;
		if (!isfinite(dl) || fabs(dl) > ISC_REP_MAX_VALUE || !(dur >= 0 && dur < ISC_REP_MAX_VALUE))
			break;
		t += dl;
		double chn = k && cJSON_IsNumber(k) ? k->valuedouble : 0;
		uint32_t cc = chn >= 0 && chn < 64 ? (uint32_t)chn : 63;
		c[n++] = (struct lcoll){ t, t + dur, cc, per[cc]++ };
	}
	return n;
}

/* The HTML page's charts: per-rank swimlanes, and the iteration-time heatmap. */
static void job_charts(struct isc_rep *m, const cJSON *d)
{
	const cJSON *ranks = isc_doc_arr(d, "ranks"), *r;
	size_t n = (size_t)cJSON_GetArraySize(ranks), nl = n < LANES_MAX ? n : LANES_MAX;
	struct isc_rep_lane *lanes = calloc(nl ? nl : 1, sizeof(*lanes));
	struct lcoll **lc = calloc(nl ? nl : 1, sizeof(*lc));
	size_t *nlc = calloc(nl ? nl : 1, sizeof(*nlc));
	char (*labels)[32] = calloc(n ? n : 1, sizeof(*labels));
	if (!lanes || !lc || !nlc || !labels)
		goto out;
	double t_end = 0;
	size_t i = 0;
	cJSON_ArrayForEach(r, ranks) {
		snprintf(labels[i], sizeof(labels[i]), "rank %.0f", isc_doc_num(r, "rank", 0));
		if (i >= nl) {
			i++;
			continue;
		}
		double origin = isc_doc_num(r, "origin_ns", 0);
		origin = isfinite(origin) && fabs(origin) < ISC_REP_MAX_VALUE ? origin : 0;
		const cJSON *bs = isc_doc_arr(r, "iterations.begin_ns"), *ds = isc_doc_arr(r, "iterations.dur_ns");
		size_t ni = (size_t)cJSON_GetArraySize(bs);
		struct isc_rep_iv *it = calloc(ni ? ni : 1, sizeof(*it));
		struct lcoll *c = malloc(COLLS_MAX * sizeof(*c));
		struct isc_rep_iv *co = malloc(COLLS_MAX * sizeof(*co));
		if (!it || !c || !co) {
			free(it);
			free(c);
			free(co);
			goto out;
		}
		size_t k = 0;
		for (const cJSON *a = bs ? bs->child : NULL, *b = ds ? ds->child : NULL; a && b; a = a->next, b = b->next) {
			double s = isc_rep_value(a), du = isc_rep_value(b);
			if (isnan(s) || isnan(du))
				continue;
			it[k++] = (struct isc_rep_iv){ origin + s, origin + s + du, false };
			t_end = fmax(t_end, origin + s + du);
		}
		size_t nc = read_log(r, c, COLLS_MAX);
		for (size_t q = 0; q < nc; q++) {
			c[q].s += origin;
			c[q].e += origin;
			co[q] = (struct isc_rep_iv){ c[q].s, c[q].e, false };
			t_end = fmax(t_end, c[q].e);
		}
		lanes[i] = (struct isc_rep_lane){ labels[i], it, co, k, nc };
		lc[i] = c;
		nlc[i] = nc;
		i++;
	}
	/* the last to arrive at each collective (matched by channel and position, as the reduce does without sequence numbers) */
	for (size_t a = 0; a < nl; a++)
		for (size_t q = 0; q < nlc[a]; q++) {
			bool last = true, shared = false;
			for (size_t b = 0; b < nl && last; b++)
				for (size_t u = 0; b != a && u < nlc[b]; u++)
					if (lc[b][u].chan == lc[a][q].chan && lc[b][u].idx == lc[a][q].idx) {
						shared = true;
						last = lc[b][u].s < lc[a][q].s;
						break;
					}
			((struct isc_rep_iv *)lanes[a].coll)[q].last = shared && last;
		}
	isc_rep_put(m, ISC_REP_CHART_BEGIN);
	isc_svg_swimlanes(m, nl < n ? "Ranks over time (the first 64)" : "Ranks over time", lanes, nl, t_end);
	isc_rep_put(m, ISC_REP_CHART_END);
	/* heatmap: rank x steady iteration */
	size_t rows = n < HEAT_ROWS_MAX ? n : HEAT_ROWS_MAX, cols = 0;
	cJSON_ArrayForEach(r, ranks) {
		size_t c = (size_t)cJSON_GetArraySize(isc_doc_arr(r, "iterations.dur_ns"));
		cols = c > cols ? c : cols;
	}
	cols = cols < HEAT_COLS_MAX ? cols : HEAT_COLS_MAX;
	if (rows && cols) {
		double *v = malloc(rows * cols * sizeof(*v));
		const char **rl = malloc(rows * sizeof(*rl));
		if (v && rl) {
			size_t y = 0;
			cJSON_ArrayForEach(r, ranks) {
				if (y >= rows)
					break;
				rl[y] = labels[y];
				const cJSON *x = isc_doc_arr(r, "iterations.dur_ns")->child;
				for (size_t k = 0; k < cols; k++, x = x ? x->next : NULL)
					v[y * cols + k] = x ? isc_rep_value(x) : NAN;
				y++;
			}
			isc_rep_put(m, ISC_REP_CHART_BEGIN);
			isc_svg_heatmap(m, "Iteration time by rank", rl, rows, cols, v);
			isc_rep_put(m, ISC_REP_CHART_END);
		}
		free(v);
		free(rl);
	}
out:
	for (size_t k = 0; lanes && k < nl; k++) {
		free((void *)lanes[k].it);
		free((void *)lanes[k].coll);
	}
	for (size_t k = 0; lc && k < nl; k++)
		free(lc[k]);
	free(lanes);
	free(lc);
	free(nlc);
	free(labels);
}

void isc_rep_sec_job(struct isc_rep *m, const cJSON *root)
{
	const cJSON *d = isc_doc_get(root, "distributed"), *s;
	char b[4][64];
	if (!cJSON_IsObject(d) || isc_doc_num(d, "ranks_present", 0) < 2)
		return;
	isc_rep_putf(m, "## Job\n\nA job of **%.0f ranks**", isc_doc_num(d, "world_size", 0));
	if (isc_doc_num(d, "ranks_missing", 0) > 0) {
		isc_rep_putf(m, ", %.0f present (missing: ", isc_doc_num(d, "ranks_present", 0));
		isc_rep_md(m, isc_doc_str(d, "missing", "?"));
		isc_rep_put(m, ")");
	}
	if (isc_doc_str(d, "backend", NULL)) {
		isc_rep_put(m, ", backend ");
		isc_rep_md(m, isc_doc_str(d, "backend", NULL));
	}
	isc_rep_putf(m, ", %d host%s; clocks aligned on %.0f collective ends (uncertainty up to %s). The sections after this "
		     "one are rank %.0f's own analysis.\n\n", cJSON_GetArraySize(isc_doc_arr(d, "hosts")),
		     cJSON_GetArraySize(isc_doc_arr(d, "hosts")) == 1 ? "" : "s", isc_doc_num(d, "collectives.aligned_on", 0),
		     isc_rep_field(b[0], 64, d, "clock.uncertainty_ns", 'n'), isc_doc_num(d, "detail_rank", 0));
	cJSON_ArrayForEach(s, isc_doc_arr(d, "stragglers"))
		straggler_line(m, s);
	if (!cJSON_GetArraySize(isc_doc_arr(d, "stragglers")))
		isc_rep_putf(m, "**Balanced**: no rank is late to the collectives by 5 %% of an iteration or more. Median "
			     "iteration time from %s to %s across ranks (spread %s).\n\n",
			     isc_rep_field(b[0], 64, d, "iterations.p50_ns_min", 'n'),
			     isc_rep_field(b[1], 64, d, "iterations.p50_ns_max", 'n'),
			     isc_rep_field(b[2], 64, d, "iterations.spread_pct", 'p'));
	isc_rep_putf(m, "Exposed communication: %s of the median rank's time, at most %s%s.\n\n",
		     isc_rep_field(b[0], 64, d, "communication.exposed_pct_median", 'p'),
		     isc_rep_field(b[1], 64, d, "communication.exposed_pct_max", 'p'),
		     cJSON_IsTrue(isc_doc_get(d, "communication.bound")) ? ": **communication bound**" : "");
	if (m->html)
		job_charts(m, d);
	ranks_table(m, d);
	collectives_table(m, d);
}
