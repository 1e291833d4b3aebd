/*
 * rule_thread_contention.c - thread_contention: runnable, but no CPU free.
 *
 * Trigger: off-CPU time of the traced threads (cpu.split.off_cpu_pct) with
 * more involuntary context switches (preemptions) than voluntary ones
 * (blocking), or more runnable threads on average than CPUs
 * (cpu.runnable_threads_mean > ncpu); and a verdict share >= 10 %.
 * Verdict share: off_cpu_pct x (1 - blocked share), the part of off-CPU
 * time spent waiting for a CPU rather than blocked: blocked share =
 * cpu.blocked_ns / cpu.split.off_cpu_ns (thread samples in state S or D),
 * or, with too few thread samples, voluntary / (voluntary + involuntary)
 * switches (isc_roff_cpu_blocked(); switch counts alone flip under outside
 * load, and threads handing the GIL to each other switch voluntarily).
 * When the process had more runnable threads than CPUs and the trace says
 * why threads blocked (cpu.off_cpu_reasons), the blocked time in
 * thread_wait inside torch ops (an intra-op pool's caller waiting at the
 * pool's barrier for workers that wait for a CPU) counts too:
 * share += off_cpu_pct x blocked share x thread_wait.in_torch_ops_ns /
 * cpu.blocked_ns.
 * Quality x 0.8 without CPU samples.  Severity critical from 30 %.
 * Evidence: switch counts, runnable threads vs cores, torch intra-op x
 * inter-op threads vs cores, the largest pool of threads the agent does
 * not trace (cpu.thread_pools: OpenMP and BLAS workers, named like the
 * process, grouped by the futex they park on) and its size, CPU pressure
 * (PSI), the hottest functions.
 * What-if: no more threads runnable than cores removes that waiting time.
 * The 10 % floor: below it preemption is the normal noise of a shared
 * machine (measured here: 2-6 % on an idle 2-core VM).
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_PCT 10

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double off = isc_doc_num(c->doc, "cpu.split.off_cpu_pct", 0), off_ns = isc_doc_num(c->doc, "cpu.split.off_cpu_ns", 0);
	double vol = isc_doc_num(c->doc, "cpu.split.voluntary_switches", 0), inv = isc_doc_num(c->doc, "cpu.split.involuntary_switches", 0);
	double runnable = isc_doc_num(c->doc, "cpu.runnable_threads_mean", 0), threads = 0, interop = 0, psi = 0;
	bool over = c->ncpu > 0 && runnable > c->ncpu;
	if (inv <= vol && !over)
		return;
	double blocked_frac = isc_roff_cpu_blocked(c), frac = 1 - blocked_frac, blocked = isc_doc_num(c->doc, "cpu.blocked_ns", 0);
	double pool_wait = 0;
	if (over && isc_rhave_reasons(c->doc) && blocked > 0) {
		pool_wait = isc_rreason_field(c->doc, "thread_wait", "in_torch_ops_ns") / blocked;
		frac += blocked_frac * (pool_wait < 1 ? pool_wait : 1);
	}
	double share = off * frac;
	if (share < TRIGGER_PCT)
		return;
	const cJSON *fn = isc_rtop_fn(c->doc, NULL), *caller = cJSON_GetArrayItem(isc_doc_arr(c->doc, "cpu.top_op_callers"), 0);
	char w[1300] = "?";
	if (fn)
		isc_doc_where(w, sizeof(w), fn);
	if (fn && caller && strcmp(isc_doc_str(fn, "kind", ""), "python")) {
		size_t n = strlen(w);
		snprintf(w + n, sizeof(w) - n, " called mostly from ");
		n = strlen(w);
		isc_doc_where(w + n, sizeof(w) - n, caller);
	}
	double q = c->quality * (cJSON_IsTrue(isc_doc_get(c->doc, "cpu.split.off_cpu_measured")) ? 1 : 0.8);
	/*
	 * The pool: the largest untraced pool parked on one futex (an OpenMP
	 * team, a BLAS pool), else the largest group of untraced threads; and
	 * how many such pools of its name there are (one team per calling
	 * thread), with their threads.
	 */
	const cJSON *pool = NULL, *p;
	double npools = 0, pool_threads = 0;
	for (int pass = 0; pass < 2 && !pool; pass++)
		cJSON_ArrayForEach(p, isc_doc_arr(c->doc, "cpu.thread_pools")) {
			if (cJSON_IsTrue(isc_doc_get(p, "traced")) || isc_doc_num(p, "threads", 0) < 2 ||
			    (pass == 0 && !cJSON_IsString(isc_doc_get(p, "futex"))))
				continue;
			if (!pool || isc_doc_num(p, "threads", 0) > isc_doc_num(pool, "threads", 0) ||
			    (isc_doc_num(p, "threads", 0) == isc_doc_num(pool, "threads", 0) &&
			     isc_doc_num(p, "runnable_mean", 0) > isc_doc_num(pool, "runnable_mean", 0)))
				pool = p;
		}
	bool parked = pool && cJSON_IsString(isc_doc_get(pool, "futex"));
	cJSON_ArrayForEach(p, isc_doc_arr(c->doc, "cpu.thread_pools"))
		if (pool && !cJSON_IsTrue(isc_doc_get(p, "traced")) && isc_doc_num(p, "threads", 0) > 1 &&
		    cJSON_IsString(isc_doc_get(p, "futex")) == parked && !strcmp(isc_doc_str(p, "name", ""), isc_doc_str(pool, "name", ""))) {
			npools++;
			pool_threads += isc_doc_num(p, "threads", 0);
		}
	char cause[400], pw[200] = "";
	if (pool && npools > 1)
		snprintf(pw, sizeof(pw), "; %.0f untraced pools named %s of up to %.0f threads, %.0f threads in all", npools,
			 isc_doc_str(pool, "name", "?"), isc_doc_num(pool, "threads", 0), pool_threads);
	else if (pool)
		snprintf(pw, sizeof(pw), "; an untraced pool named %s of %.0f threads", isc_doc_str(pool, "name", "?"),
			 isc_doc_num(pool, "threads", 0));
	if (over)
		snprintf(cause, sizeof(cause), "%.1f runnable threads on average for %.0f CPUs%s", runnable, c->ncpu, pw);
	else
		snprintf(cause, sizeof(cause), "%.0f involuntary vs %.0f voluntary context switches%s", inv, vol, pw);
	cJSON *f = isc_fnd_new(o, "thread_contention", share >= 30 ? "critical" : "warning", share / 100 * q,
			   "%.0f %% of traced time the threads were %s (%s): the CPUs are "
			   "oversubscribed; the hottest function is %s",
			   share, pool_wait > 0 ? "waiting for a CPU, runnable or at a thread pool's barrier inside torch ops"
						: "runnable but not running",
			   cause, w);
	isc_fnd_metric(o, f, "preempted_pct", share);
	isc_fnd_metric(o, f, "off_cpu_pct", off);
	isc_fnd_metric(o, f, "involuntary_switches", inv);
	isc_fnd_metric(o, f, "voluntary_switches", vol);
	if (isc_doc_have(c->doc, "cpu.runnable_threads_mean", &runnable))
		isc_fnd_metric(o, f, "runnable_threads_mean", runnable);
	if (c->ncpu > 0)
		isc_fnd_metric(o, f, "ncpu", c->ncpu);
	if (pool_wait > 0)
		isc_fnd_metric(o, f, "pool_wait_in_torch_ops_pct", 100 * (pool_wait < 1 ? pool_wait : 1));
	if (pool) {
		isc_fnd_metric(o, f, "pool_threads", isc_doc_num(pool, "threads", 0));
		isc_fnd_metric(o, f, "pools_of_that_name", npools);
		isc_fnd_metric(o, f, "pool_runnable_mean", isc_doc_num(pool, "runnable_mean", 0));
	}
	bool have_t = isc_rmark(c->doc, "torch.num_threads", &threads);
	bool have_i = isc_rmark(c->doc, "torch.num_interop_threads", &interop);
	if (have_t)
		isc_fnd_metric(o, f, "torch_num_threads", threads);
	if (have_i)
		isc_fnd_metric(o, f, "torch_num_interop_threads", interop);
	if (isc_doc_have(c->doc, "memory.pressure.cpu.some_avg10_max", &psi))
		isc_fnd_metric(o, f, "cpu_pressure_some_avg10_max", psi);
	const cJSON *x;
	int n = 0;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "cpu.top_functions"))
		if (n++ < 3)
			isc_fnd_top(o, f, x, NULL, isc_doc_str(x, "kind", "python"), isc_doc_num(x, "self_ns", 0), isc_doc_num(x, "self_pct", -1));
	if (caller)
		isc_fnd_detail(o, isc_fnd_top(o, f, caller, NULL, "python", isc_doc_num(caller, "ops_ns", -1), -1),
			   "the Python line calling ops most");
	char why[256] = "";
	if (have_t && c->ncpu > 0 && threads * (have_i && interop > 1 ? interop : 1) > c->ncpu)
		snprintf(why, sizeof(why), " torch may run %.0f intra-op x %.0f inter-op threads on %.0f CPUs.", threads,
			 have_i ? interop : 1, c->ncpu);
	isc_fnd_suggest(c, o, f, off_ns * frac,
		    "Run no more busy threads than cores: torch.set_num_threads(cores / processes), "
		    "OMP_NUM_THREADS, fewer worker processes, or move other jobs off the machine.",
		    "no more runnable threads than cores, so no time waiting for a CPU",
		    "The scheduler preempted the traced threads %.0f times against %.0f voluntary waits.%s", inv, vol, why);
	isc_fnd_candidate(o, f, "thread_contention", share, q);
}

const struct rule isc_rule_thread_contention = { "thread_contention", eval };
