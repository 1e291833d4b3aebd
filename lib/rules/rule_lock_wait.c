/*
 * rule_lock_wait.c - lock_wait: the traced threads blocked waiting for
 * another thread: a lock, a condition or event, a queue, a join.
 *
 * Trigger: verdict share >= 10 %.  Verdict share: cpu.split.off_cpu_pct x
 * the blocked share of off-CPU time (isc_roff_cpu_blocked()) x the part of
 * the blocked time whose reason is thread_wait (a futex or eventfd wait in
 * a C call: cpu.off_cpu_reasons), less that part inside torch ops (an
 * intra-op pool's barrier: thread_contention's when the pools
 * oversubscribe the CPUs, op time otherwise) and inside a DataLoader's
 * __next__ (the dataloader finding's).  Needs the off-CPU reasons: without
 * them (an older trace) a wait cannot be told from I/O, and io_wait
 * speaks for all blocked time.  Severity critical from 30 %.
 * Evidence: where the threads waited (cpu.off_cpu_top rows of reason
 * thread_wait, with the Python function that called them), and what the
 * other blocked time was doing meanwhile (the first off-CPU row of another
 * reason: a lock's holder that sleeps or reads while holding it shows
 * there; stated as what else was blocked, not as the holder).
 * What-if: the wait removed (the lock held for less time, or the work
 * handed over without waiting): an upper bound.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_PCT 10
#define TOP 5

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double off = isc_doc_num(c->doc, "cpu.split.off_cpu_pct", 0), off_ns = isc_doc_num(c->doc, "cpu.split.off_cpu_ns", 0);
	double blocked = isc_doc_num(c->doc, "cpu.blocked_ns", 0);
	if (!isc_rhave_reasons(c->doc) || blocked <= 0)
		return;
	double wait = isc_rreason_ns(c->doc, "thread_wait", true) - isc_rreason_field(c->doc, "thread_wait", "in_torch_ops_ns");
	if (wait <= 0)
		return;
	double part = wait < blocked ? wait / blocked : 1, frac = isc_roff_cpu_blocked(c) * part, share = off * frac;
	if (share < TRIGGER_PCT)
		return;
	const cJSON *x, *site = NULL, *other = NULL;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "cpu.off_cpu_top")) {
		bool tw = !strcmp(isc_doc_str(x, "reason", ""), "thread_wait");
		if (tw && !site)
			site = x;
		if (!tw && !other)
			other = x;
	}
	char w[600] = "", pw[600] = "", ow[600] = "", opw[600] = "";
	if (site) {
		isc_doc_where(w, sizeof(w), site);
		if (cJSON_IsObject(isc_doc_get(site, "python")))
			isc_doc_where(pw, sizeof(pw), isc_doc_get(site, "python"));
	}
	if (other) {
		isc_doc_where(ow, sizeof(ow), other);
		if (cJSON_IsObject(isc_doc_get(other, "python")))
			isc_doc_where(opw, sizeof(opw), isc_doc_get(other, "python"));
	}
	/* the waiting site as the user knows it: the Python function when the innermost row is not code of its own */
	const char *where = *pw && strcmp(pw, w) ? pw : w;
	cJSON *f = isc_fnd_new(o, "lock_wait", share >= 30 ? "critical" : "warning", share / 100 * c->quality,
			   "%.0f %% of traced time the threads were blocked waiting for another thread (a lock, event, "
			   "queue or join)%s%s%s%s%s%s",
			   share, *where ? "; most in " : "", where, *ow ? "; meanwhile other threads were blocked in " : "", ow,
			   *opw && strcmp(opw, ow) ? " called from " : "", *opw && strcmp(opw, ow) ? opw : "");
	isc_fnd_metric(o, f, "wait_pct", share);
	isc_fnd_metric(o, f, "thread_wait_pct_of_blocked", 100 * part);
	isc_fnd_metric(o, f, "off_cpu_ns", off_ns);
	int n = 0;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "cpu.off_cpu_top")) {
		if (strcmp(isc_doc_str(x, "reason", ""), "thread_wait"))
			continue;
		if (n++ >= TOP)
			break;
		cJSON *t = isc_fnd_top(o, f, x, NULL, isc_doc_str(x, "kind", "op"), isc_doc_num(x, "blocked_ns", 0), -1);
		char pyw[600] = "";
		if (cJSON_IsObject(isc_doc_get(x, "python")))
			isc_doc_where(pyw, sizeof(pyw), isc_doc_get(x, "python"));
		isc_fnd_detail(o, t, "thread_wait%s%s", *pyw ? ", called from " : "", pyw);
	}
	if (other) {
		cJSON *t = isc_fnd_top(o, f, other, NULL, isc_doc_str(other, "kind", "op"), isc_doc_num(other, "blocked_ns", 0),
				       -1);
		isc_fnd_detail(o, t, "meanwhile: %s%s%s", isc_doc_str(other, "reason", "?"), *opw ? ", called from " : "",
			       opw);
	}
	isc_fnd_suggest(c, o, f, off_ns * frac,
			"Shorten the time the lock is held (move sleeps, I/O and slow work out of the critical section), "
			"use finer-grained locks, or hand work over through a queue the step does not wait on.",
			"the waiting removed (upper bound)",
			"The threads waited %.0f %% of traced time on other threads.", share);
	isc_fnd_candidate(o, f, "lock_wait", share, c->quality);
}

const struct rule isc_rule_lock_wait = { "lock_wait", eval };
