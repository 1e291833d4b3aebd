/*
 * alloc_sites_dump.c - the allocation site model (lib/analyze/alloc_sites.c)
 * run over a recording, for the tests (phase 1 of issue 25: the findings
 * come with the analysis refactor).
 *
 *   alloc_sites_dump [--scope NAME] [--warmup N] [--pid PID] FILE
 *
 * FILE is a trace or a timeline.  Iteration boundaries are the ends of the
 * scope spans named NAME (default "step", any thread); the first N
 * iterations (default 1) are warm-up.  Prints one JSON object per line:
 * {"site": RANK, "pid", "function", "file", "line", "stack": ["f file:line", ...],
 *  "alloc", "alloc_err", "freed", "freed_err", "live_end", "live_end_err",
 *  "live_peak", "live_peak_err", "retained", "retained_err", "intervals",
 *  "slope", "slope_err", "leak", "leak_per_iter", "leak_window", "from_table",
 *  "alloc_count", "free_count"} per site, ranked;
 * then {"death": PID, "ts", "signal", "top": [{"site", "function", "line",
 * "live", "live_err", "growth", "growing"}, ...]} for each process that died
 * of a signal; then {"gaps": {...}, "boundaries": N}.
 * Exit status 0, 1 when FILE cannot be read.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc_sites.h"
#include "isc_merge.h"

struct open_scope {
	uint64_t span;
	uint32_t pid, tid;
};

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static const struct isc_tl_string *name(struct isc_timeline *t, uint32_t id)
{
	static const struct isc_tl_string none = { .name = "?", .file = "?" };
	const struct isc_tl_string *s = isc_timeline_string_borrow(t, id);
	return s ? s : &none;
}

int main(int argc, char **argv)
{
	const char *scope = "step", *path = NULL;
	unsigned warmup = 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--scope") && i + 1 < argc)
			scope = argv[++i];
		else if (!strcmp(argv[i], "--warmup") && i + 1 < argc)
			warmup = (unsigned)atoi(argv[++i]);
		else
			path = argv[i];
	}
	FILE *in = path ? fopen(path, "rb") : NULL, *owned = NULL;
	struct isc_timeline *t = NULL;
	struct isc_merge_result mres;
	struct isc_asite_model *m = NULL;
	if (!in || isc_timeline_open_any(&t, in, &owned, &mres) < 0 || isc_asite_new(&m)) {
		fprintf(stderr, "alloc_sites_dump: %s: %s\n", path ? path : "(no file)", isc_err_msg());
		return 1;
	}
	uint32_t scope_id = 0;
	struct open_scope *open = NULL;
	size_t nopen = 0, capopen = 0;
	struct { uint32_t pid; uint64_t ts; int sig; } deaths[64];
	size_t ndeaths = 0;
	struct isc_tl_event ev;
	int rc;
	while ((rc = isc_timeline_next(t, &ev)) == 1) {
		if (ev.type == ISC_REC_TL_SPAN_BEGIN && ev.kind == ISC_SPAN_SCOPE) {
			if (!scope_id && !strcmp(name(t, ev.name_id)->name, scope))
				scope_id = ev.name_id;
			if (ev.name_id == scope_id) {
				if (nopen == capopen && !(open = realloc(open, (capopen = capopen ? capopen * 2 : 16) * sizeof(*open))))
					return 1;
				open[nopen++] = (struct open_scope){ ev.span_id, ev.pid, ev.tid };
			}
		} else if (ev.type == ISC_REC_TL_SPAN_END) {
			for (size_t i = 0; i < nopen; i++)
				if (open[i].span == ev.span_id && open[i].pid == ev.pid && open[i].tid == ev.tid) {
					open[i] = open[--nopen];
					isc_asite_boundary(m, ev.ts);
					break;
				}
		} else if (ev.type == ISC_REC_PROC_EXIT && ev.nf >= 3 && ev.f[2] == 1 && ndeaths < 64) {
			deaths[ndeaths].pid = (uint32_t)ev.f[0];
			deaths[ndeaths].ts = ev.ts;
			deaths[ndeaths++].sig = (int)ev.value - 128;
		} else if (isc_asite_event(m, &ev) == -ENOMEM) {
			return 1;
		}
	}
	if (rc < 0)
		fprintf(stderr, "alloc_sites_dump: %s: %s (the records before it are used)\n", path, isc_err_msg());
	const struct isc_asite_stats *o;
	size_t n;
	if (isc_asite_report(m, warmup ? warmup : 1, &o, &n))
		return 1;
	for (size_t i = 0; i < n; i++) {
		const struct isc_asite_stats *s = &o[i];
		const struct isc_tl_string *f = name(t, s->depth ? s->frames[0] : 0);
		printf("{\"site\": %zu, \"pid\": %u, \"function\": ", i, s->pid);
		json_str(s->depth ? f->name : "(no Python stack)");
		printf(", \"file\": ");
		json_str(s->depth ? f->file : "");
		printf(", \"line\": %u, \"stack\": [", s->depth ? s->frames[1] : 0);
		for (uint32_t k = 0; k < s->depth; k++) {
			const struct isc_tl_string *g = name(t, s->frames[2 * k]);
			char buf[2200];
			snprintf(buf, sizeof(buf), "%s %s:%u", g->name, g->file, s->frames[2 * k + 1]);
			printf("%s", k ? ", " : "");
			json_str(buf);
		}
		printf("], \"alloc\": %.0f, \"alloc_err\": %.0f, \"freed\": %.0f, \"freed_err\": %.0f, \"live_end\": %.0f, "
		       "\"live_end_err\": %.0f, \"live_peak\": %.0f, \"live_peak_err\": %.0f, \"retained\": %.0f, "
		       "\"retained_err\": %.0f, \"intervals\": %u, \"slope\": %.0f, \"slope_err\": %.0f, \"leak\": %s, "
		       "\"leak_per_iter\": %.0f, \"leak_window\": %u, \"from_table\": %s, \"alloc_count\": %llu, "
		       "\"free_count\": %llu}\n",
		       s->alloc_bytes, s->alloc_err, s->freed_bytes, s->freed_err, s->live_end, s->live_end_err,
		       s->live_peak, s->live_peak_err, s->retained, s->retained_err, s->intervals, s->slope_per_iter,
		       s->slope_err, s->leak ? "true" : "false", s->leak_per_iter, s->leak_window,
		       s->from_table ? "true" : "false", (unsigned long long)s->alloc_count,
		       (unsigned long long)s->free_count);
	}
	for (size_t d = 0; d < ndeaths; d++) {
		struct isc_asite_death top[5];
		size_t k = isc_asite_death(m, deaths[d].pid, deaths[d].ts, ISC_ASITE_DEATH_WINDOW_NS, top, 5);
		printf("{\"death\": %u, \"ts\": %llu, \"signal\": %d, \"top\": [", deaths[d].pid,
		       (unsigned long long)deaths[d].ts, deaths[d].sig);
		for (size_t j = 0; j < k; j++) {
			const struct isc_asite_stats *s = &o[top[j].index];
			printf("%s{\"site\": %zu, \"function\": ", j ? ", " : "", top[j].index);
			json_str(s->depth ? name(t, s->frames[0])->name : "(no Python stack)");
			printf(", \"line\": %u, \"live\": %.0f, \"live_err\": %.0f, \"growth\": %.0f, \"growing\": %s}",
			       s->depth ? s->frames[1] : 0, top[j].live, top[j].live_err, top[j].growth,
			       top[j].growing ? "true" : "false");
		}
		printf("]}\n");
	}
	struct isc_asite_gaps g;
	isc_asite_gaps(m, &g);
	printf("{\"gaps\": {\"unmatched_frees\": %llu, \"untracked\": %llu, \"bad_records\": %llu, \"interval\": %llu}}\n",
	       (unsigned long long)g.unmatched_frees, (unsigned long long)g.untracked,
	       (unsigned long long)g.bad_records, (unsigned long long)g.interval);
	isc_asite_free(m);
	isc_timeline_free(t);
	if (owned)
		fclose(owned);
	fclose(in);
	free(open);
	return rc < 0 ? 1 : 0;
}
