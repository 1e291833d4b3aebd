/*
 * rule_dataloader.c - dataloader: fetching batches takes a share of the step.
 *
 * Trigger: iterations.dataloader.pct_of_step > 5 (as
 * HTA and the PyTorch profiler's TensorBoard plugin flag DataLoader time
 * the same way).  Severity warning, critical from 25 %.
 * Evidence: the share, the time, the calls, the DataLoader's __next__.
 * What-if: loading fully overlapped with the step by worker processes
 * (num_workers > 0, pin_memory=True, prefetch_factor) — an upper bound.
 * Input-bound: when the trace says why threads blocked
 * (cpu.off_cpu_reasons), the time blocked while a DataLoader's __next__
 * was open (waiting on the queue its workers feed, or on their pipes) is
 * left out of io_wait and nominated here for the io_wait class (the run
 * waits for its input), with the share off_cpu_pct x blocked share x
 * sum of in_dataloader_ns / cpu.blocked_ns; the verdict then names this
 * finding.
 */
#include "rules.h"

#define TRIGGER_PCT 5

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *dl = isc_doc_get(c->doc, "iterations.dataloader");
	double pct;
	if (!cJSON_IsObject(dl) || !isc_doc_have(dl, "pct_of_step", &pct) || pct <= TRIGGER_PCT)
		return;
	double total = isc_doc_num(dl, "total_ns", 0);
	cJSON *f = isc_fnd_new(o, "dataloader", pct >= 25 ? "critical" : "warning", c->quality,
			   "The DataLoader takes %.0f %% of each step (%.0f calls, %.1f ms each)", pct,
			   isc_doc_num(dl, "calls", 0), isc_doc_num(dl, "calls", 0) > 0 ? total / isc_doc_num(dl, "calls", 1) / 1e6 : 0);
	isc_fnd_metric(o, f, "pct_of_step", pct);
	isc_fnd_metric(o, f, "total_ns", total);
	isc_fnd_metric(o, f, "calls", isc_doc_num(dl, "calls", 0));
	isc_fnd_top(o, f, isc_doc_get(dl, "function"), "DataLoader.__next__", "python", total, pct);
	isc_fnd_suggest(c, o, f, total,
		    "Load batches in worker processes: DataLoader(num_workers=N, pin_memory=True, persistent_workers=True), "
		    "and move per-sample Python transforms into batched tensor code.",
		    "data loading fully overlapped with the step (upper bound)",
		    "The step waits %.0f %% of its time for the next batch.", pct);
	double blocked = isc_doc_num(c->doc, "cpu.blocked_ns", 0), waiting = 0;
	const cJSON *r;
	cJSON_ArrayForEach(r, isc_doc_arr(c->doc, "cpu.off_cpu_reasons"))
		waiting += isc_doc_num(r, "in_dataloader_ns", 0);
	if (blocked > 0 && waiting > 0) {
		double share = isc_doc_num(c->doc, "cpu.split.off_cpu_pct", 0) * isc_roff_cpu_blocked(c) *
			       (waiting < blocked ? waiting / blocked : 1);
		isc_fnd_metric(o, f, "blocked_waiting_for_batches_pct", share);
		isc_fnd_candidate(o, f, "io_wait", share, c->quality);
	}
}

const struct rule isc_rule_dataloader = { "dataloader", eval };
