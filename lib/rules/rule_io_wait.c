/*
 * rule_io_wait.c - io_wait: the traced threads blocked inside calls.
 *
 * Trigger: verdict share >= 10 %.  Verdict share: cpu.split.off_cpu_pct x
 * the blocked share of off-CPU time (isc_roff_cpu_blocked(): thread samples in
 * state S or D, else voluntary / all context switches) — the part spent
 * blocked (sleeping, reading, waiting on a lock or a pipe) rather than
 * preempted.  Severity critical from 30 %.  Same 10 %
 * floor as thread_contention.
 * Evidence: the blocking call sites (cpu.off_cpu_top: innermost function
 * seen blocked in CPU samples, with its enclosing Python function), I/O
 * pressure (PSI).
 * What-if: the blocked time overlapped with compute (a prefetching thread,
 * DataLoader workers, asynchronous I/O) — an upper bound, reached when
 * there is as much compute to overlap with.
 */
#include <stdio.h>

#include "rules.h"

#define TRIGGER_PCT 10
#define TOP 5

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double off = isc_rnum(c->doc, "cpu.split.off_cpu_pct", 0), off_ns = isc_rnum(c->doc, "cpu.split.off_cpu_ns", 0);
	double vol = isc_rnum(c->doc, "cpu.split.voluntary_switches", 0), inv = isc_rnum(c->doc, "cpu.split.involuntary_switches", 0);
	double frac = isc_roff_cpu_blocked(c), share = off * frac, psi;
	const cJSON *x, *site = cJSON_GetArrayItem(isc_rarr(c->doc, "cpu.off_cpu_top"), 0);
	char w[600] = "", pw[600] = "";
	if (share < TRIGGER_PCT)
		return;
	if (site) {
		isc_rwhere(w, sizeof(w), site);
		if (cJSON_IsObject(isc_json_get(site, "python")))
			isc_rwhere(pw, sizeof(pw), isc_json_get(site, "python"));
	} else if ((x = isc_rtop_fn(c->doc, NULL))) {
		isc_rwhere(w, sizeof(w), x);
	}
	cJSON *f = isc_fnd_new(o, "io_wait", share >= 30 ? "critical" : "warning", share / 100 * c->quality,
			   "%.0f %% of traced time the threads were off-CPU, blocked inside calls%s%s%s%s", share,
			   *w ? "; most in " : "", w, *pw ? " called from " : "", pw);
	isc_fnd_metric(o, f, "blocked_pct", share);
	isc_fnd_metric(o, f, "off_cpu_ns", off_ns);
	isc_fnd_metric(o, f, "voluntary_switches", vol);
	isc_fnd_metric(o, f, "involuntary_switches", inv);
	if (isc_rhave(c->doc, "memory.pressure.io.some_avg10_max", &psi))
		isc_fnd_metric(o, f, "io_pressure_some_avg10_max", psi);
	int n = 0;
	cJSON_ArrayForEach(x, isc_rarr(c->doc, "cpu.off_cpu_top")) {
		if (n++ >= TOP)
			break;
		cJSON *t = isc_fnd_top(o, f, x, NULL, isc_rstr(x, "kind", "op"), isc_rnum(x, "blocked_ns", 0), -1);
		const cJSON *py = isc_json_get(x, "python");
		if (cJSON_IsObject(py)) {
			char pyw[600];
			isc_rwhere(pyw, sizeof(pyw), py);
			isc_fnd_detail(o, t, "called from %s", pyw);
		}
	}
	isc_fnd_suggest(c, o, f, off_ns * frac,
		    "Overlap the blocking call with compute: load or read ahead in a background thread, use DataLoader "
		    "workers (num_workers > 0, pin_memory) or asynchronous I/O, and keep sleeps and waits out of the step.",
		    "all blocked time hidden behind compute (upper bound)",
		    "The threads gave up the CPU voluntarily %.0f times; %.0f %% of traced time went to waiting.", vol, share);
	isc_fnd_candidate(o, f, "io_wait", share, c->quality);
}

const struct rule isc_rule_io_wait = { "io_wait", eval };
