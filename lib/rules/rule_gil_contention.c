/*
 * rule_gil_contention.c - gil_contention: Python threads waiting for the GIL.
 *
 * Trigger: verdict share >= 10 % (the floor of io_wait and
 * thread_contention).  Verdict share: cpu.split.off_cpu_pct x the blocked
 * share of off-CPU time (isc_roff_cpu_blocked()) x the gil reason's part of the
 * blocked time (cpu.off_cpu_reasons: a thread sampled blocked in a futex
 * while its innermost traced frame was Python code, no C call open; see
 * iscope-analyze(1), OFF-CPU REASONS, for the method and its limits).
 * Severity critical from 30 %.  Only with off-CPU reasons (a trace whose
 * sampler wrote THREAD_WAIT records).
 * It is a verdict class: threads of pure Python on a machine with CPUs to
 * spare run one at a time, so waiting for the GIL can be most of their
 * traced time, and neither more CPUs nor fewer threads per pool help.
 * Evidence: the share, the threads that waited (processes[].threads[]
 * gil_wait_ns, most first) and how many, the Python functions that waited
 * (the gil reason's top[]).
 * What-if: the waiting removed by running the Python work in processes
 * (or in torch ops, which release the GIL): an upper bound, reached when
 * there are CPUs for every thread.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_PCT 10
#define TOP 5
#define THREADS_NAMED 4

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double blocked = isc_doc_num(c->doc, "cpu.blocked_ns", 0), gil = isc_rreason_ns(c->doc, "gil", false);
	if (!isc_rhave_reasons(c->doc) || blocked <= 0 || gil <= 0)
		return;
	double off = isc_doc_num(c->doc, "cpu.split.off_cpu_pct", 0), off_ns = isc_doc_num(c->doc, "cpu.split.off_cpu_ns", 0);
	double frac = isc_roff_cpu_blocked(c) * (gil < blocked ? gil / blocked : 1), share = off * frac;
	if (share < TRIGGER_PCT)
		return;
	/* the threads that waited, most first (a small selection sort over few threads) */
	const cJSON *p, *t, *named[THREADS_NAMED] = { 0 };
	double nthreads = 0;
	cJSON_ArrayForEach(p, isc_doc_arr(c->doc, "processes"))
		cJSON_ArrayForEach(t, isc_doc_arr(p, "threads")) {
			double ns = isc_doc_num(t, "gil_wait_ns", 0);
			if (ns <= 0)
				continue;
			nthreads++;
			for (int i = 0; i < THREADS_NAMED; i++)
				if (!named[i] || ns > isc_doc_num(named[i], "gil_wait_ns", 0)) {
					for (int j = THREADS_NAMED - 1; j > i; j--)
						named[j] = named[j - 1];
					named[i] = t;
					break;
				}
		}
	const cJSON *top = cJSON_GetArrayItem(isc_doc_get(cJSON_GetArrayItem(isc_doc_arr(c->doc, "cpu.off_cpu_reasons"), 0), "top"), 0);
	const cJSON *r;
	cJSON_ArrayForEach(r, isc_doc_arr(c->doc, "cpu.off_cpu_reasons"))
		if (!strcmp(isc_doc_str(r, "reason", ""), "gil"))
			top = cJSON_GetArrayItem(isc_doc_get(r, "top"), 0);
	char w[600] = "", names[300] = "";
	if (top)
		isc_doc_where(w, sizeof(w), top);
	for (int i = 0; i < THREADS_NAMED && named[i]; i++) {
		size_t n = strlen(names);
		snprintf(names + n, sizeof(names) - n, "%s%s", i ? ", " : "", isc_doc_str(named[i], "name", "?"));
	}
	cJSON *f = isc_fnd_new(o, "gil_contention", share >= 30 ? "critical" : "warning", share / 100 * c->quality,
			   "%.0f %% of traced time %.0f Python threads waited for the GIL (%s%s)%s%s", share, nthreads, names,
			   nthreads > THREADS_NAMED ? ", ..." : "", *w ? "; most in " : "", w);
	isc_fnd_metric(o, f, "gil_wait_pct", share);
	isc_fnd_metric(o, f, "gil_wait_ns", gil);
	isc_fnd_metric(o, f, "threads_waiting", nthreads);
	isc_fnd_metric(o, f, "gil_pct_of_blocked", isc_rpct(gil, blocked));
	if (c->ncpu > 0)
		isc_fnd_metric(o, f, "ncpu", c->ncpu);
	int n = 0;
	cJSON_ArrayForEach(r, isc_doc_arr(c->doc, "cpu.off_cpu_reasons")) {
		if (strcmp(isc_doc_str(r, "reason", ""), "gil"))
			continue;
		cJSON_ArrayForEach(t, isc_doc_arr(r, "top"))
			if (n++ < TOP)
				isc_fnd_detail(o, isc_fnd_top(o, f, t, NULL, "python", isc_doc_num(t, "ns", 0), -1),
					   "waited for the GIL in this function's own code");
	}
	for (int i = 0; i < THREADS_NAMED && named[i]; i++)
		isc_fnd_detail(o, isc_fnd_top(o, f, NULL, isc_doc_str(named[i], "name", "?"), "thread", isc_doc_num(named[i], "gil_wait_ns", 0), -1),
			   "thread %.0f", isc_doc_num(named[i], "tid", 0));
	isc_fnd_suggest(c, o, f, off_ns * frac,
		    "Run the Python-heavy work in processes instead of threads (multiprocessing, "
		    "concurrent.futures.ProcessPoolExecutor, DataLoader workers), move per-element loops into torch ops "
		    "(which release the GIL), or use a free-threaded Python (3.13t).",
		    "no thread waiting for the GIL (upper bound: needs a CPU per thread)",
		    "Only one thread runs Python bytecode at a time; %.0f threads took turns and waited %.0f %% of traced time.",
		    nthreads, share);
	isc_fnd_candidate(o, f, "gil_contention", share, c->quality);
}

const struct rule isc_rule_gil_contention = { "gil_contention", eval };
