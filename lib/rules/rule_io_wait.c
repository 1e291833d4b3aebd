/*
 * rule_io_wait.c - io_wait: the traced threads blocked waiting for I/O.
 *
 * Trigger: verdict share >= 10 %.  Verdict share: cpu.split.off_cpu_pct x
 * the blocked share of off-CPU time (isc_roff_cpu_blocked(): thread samples in
 * state S or D, else voluntary / all context switches) x, when the trace
 * says why threads blocked (cpu.off_cpu_reasons), the I/O part of the
 * blocked time: io_file, io_network, io_pipe and sleep (a step
 * that sleeps waits for something outside the CPU: a poll loop, a rate
 * limiter, a retry back-off), less the time inside a DataLoader's __next__
 * (waiting for a batch is the dataloader finding's).  Waits on other
 * threads (thread_wait: thread_contention's when the pools oversubscribe
 * the CPUs), the GIL (gil_contention) and other waits are not I/O.
 * Without reasons (an older trace) all blocked time counts, as before.
 * Severity critical from 30 %.  Same 10 % floor as thread_contention.
 * Evidence: the blocking call sites of those reasons (cpu.off_cpu_top:
 * innermost function seen blocked, with its enclosing Python function and
 * its reason), each I/O reason's share, I/O pressure (PSI).
 * What-if: the blocked time overlapped with compute (a prefetching thread,
 * DataLoader workers, asynchronous I/O) — an upper bound, reached when
 * there is as much compute to overlap with.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_PCT 10
#define TOP 5

static const char *const io_reasons[] = { "io_file", "io_network", "io_pipe", "sleep" };
#define NIO (sizeof(io_reasons) / sizeof(io_reasons[0]))

static bool is_io(const char *reason)
{
	for (size_t i = 0; i < NIO; i++)
		if (!strcmp(reason, io_reasons[i]))
			return true;
	return false;
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double off = isc_doc_num(c->doc, "cpu.split.off_cpu_pct", 0), off_ns = isc_doc_num(c->doc, "cpu.split.off_cpu_ns", 0);
	double vol = isc_doc_num(c->doc, "cpu.split.voluntary_switches", 0), inv = isc_doc_num(c->doc, "cpu.split.involuntary_switches", 0);
	double frac = isc_roff_cpu_blocked(c), psi, blocked = isc_doc_num(c->doc, "cpu.blocked_ns", 0), io = 0;
	bool reasons = isc_rhave_reasons(c->doc);
	const char *most = NULL;
	double most_ns = 0;
	if (reasons) {
		for (size_t i = 0; i < NIO; i++) {
			double ns = isc_rreason_ns(c->doc, io_reasons[i], true);
			io += ns;
			if (ns > most_ns) {
				most_ns = ns;
				most = io_reasons[i];
			}
		}
		frac *= blocked > 0 ? (io < blocked ? io / blocked : 1) : 0;
	}
	double share = off * frac;
	const cJSON *x, *site = NULL;
	char w[600] = "", pw[600] = "";
	if (share < TRIGGER_PCT)
		return;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "cpu.off_cpu_top"))
		if (!reasons || is_io(isc_doc_str(x, "reason", ""))) {
			site = x;
			break;
		}
	if (site) {
		isc_doc_where(w, sizeof(w), site);
		if (cJSON_IsObject(isc_doc_get(site, "python")))
			isc_doc_where(pw, sizeof(pw), isc_doc_get(site, "python"));
	} else if (!reasons && (x = isc_rtop_fn(c->doc, NULL))) {
		isc_doc_where(w, sizeof(w), x);
	}
	char why[64] = "";
	if (most)
		snprintf(why, sizeof(why), " (%s %.0f %% of the blocked time)", most, isc_rpct(most_ns, blocked));
	cJSON *f = isc_fnd_new(o, "io_wait", share >= 30 ? "critical" : "warning", share / 100 * c->quality,
			   "%.0f %% of traced time the threads were off-CPU, blocked %s%s%s%s%s%s", share,
			   !reasons ? "inside calls" : strcmp(most ? most : "", "sleep") ? "waiting for I/O" : "in sleeps and timers", why,
			   *w ? "; most in " : "", w, *pw ? " called from " : "", pw);
	isc_fnd_metric(o, f, "blocked_pct", share);
	isc_fnd_metric(o, f, "off_cpu_ns", off_ns);
	isc_fnd_metric(o, f, "voluntary_switches", vol);
	isc_fnd_metric(o, f, "involuntary_switches", inv);
	if (reasons) {
		for (size_t i = 0; i < NIO; i++) {
			char key[32];
			snprintf(key, sizeof(key), "%s_pct", io_reasons[i]);
			isc_fnd_metric(o, f, key, isc_rpct(isc_rreason_ns(c->doc, io_reasons[i], true), blocked));
		}
		double dl = 0;
		for (size_t i = 0; i < NIO; i++)
			dl += isc_rreason_field(c->doc, io_reasons[i], "in_dataloader_ns");
		if (dl > 0)
			isc_fnd_metric(o, f, "in_dataloader_ns_left_out", dl);
	}
	if (isc_doc_have(c->doc, "memory.pressure.io.some_avg10_max", &psi))
		isc_fnd_metric(o, f, "io_pressure_some_avg10_max", psi);
	int n = 0;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "cpu.off_cpu_top")) {
		if (reasons && !is_io(isc_doc_str(x, "reason", "")))
			continue;
		if (n++ >= TOP)
			break;
		cJSON *t = isc_fnd_top(o, f, x, NULL, isc_doc_str(x, "kind", "op"), isc_doc_num(x, "blocked_ns", 0), -1);
		const cJSON *py = isc_doc_get(x, "python");
		char pyw[600] = "";
		if (cJSON_IsObject(py))
			isc_doc_where(pyw, sizeof(pyw), py);
		if (*pyw || reasons)
			isc_fnd_detail(o, t, "%s%s%s%s", reasons ? isc_doc_str(x, "reason", "") : "", *pyw && reasons ? ", " : "",
				   *pyw ? "called from " : "", pyw);
	}
	isc_fnd_suggest(c, o, f, off_ns * frac,
		    "Overlap the blocking call with compute: load or read ahead in a background thread, use DataLoader "
		    "workers (num_workers > 0, pin_memory) or asynchronous I/O, and keep sleeps and waits out of the step.",
		    "all blocked time hidden behind compute (upper bound)",
		    "The threads gave up the CPU voluntarily %.0f times; %.0f %% of traced time went to waiting.", vol, share);
	isc_fnd_candidate(o, f, "io_wait", share, c->quality);
}

const struct rule isc_rule_io_wait = { "io_wait", eval };
