/*
 * rule_op_compute_bound.c - op_compute_bound: time inside torch ops dominates.
 *
 * Trigger: cpu.split.ops_pct minus the page-fault share (rfault_pct():
 * faults on fresh tensors are kernel time inside ops, and belong to
 * host_memory_bound) >= 20 (on-CPU time inside C calls: torch ops, tensor
 * methods, other builtins).  Severity critical from 50 %.  Verdict
 * share: ops_pct.  Quality x 0.8 when off-CPU time was not measured (no
 * CPU samples: blocked time inside ops then counts as op time).
 * Evidence: the top 5 ops by self time, the Python lines calling ops most
 * (cpu.top_op_callers), torch's thread counts (marks torch.num_threads,
 * torch.num_interop_threads) against environment.ncpu.
 * What-if: when torch.get_num_threads() < cores, the op time scaling
 * perfectly to all cores (an upper bound: Amdahl's law, memory-bound ops
 * scale less).  Otherwise no what-if is computed: batch size and dtype
 * changes need a measurement.
 * Not evaluated on GPU runs: there, host time inside ops is mostly launch
 * and synchronisation, which the GPU rules split.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_PCT 20
#define TOP 5

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double ops = rnum(c->doc, "cpu.split.ops_pct", 0), ops_ns = rnum(c->doc, "cpu.split.ops_ns", 0);
	double faults = rfault_pct(c, NULL); /* kernel time on faults, inside ops: memory's share */
	ops = ops > faults ? ops - faults : 0;
	ops_ns *= rnum(c->doc, "cpu.split.ops_pct", 0) > 0 ? ops / rnum(c->doc, "cpu.split.ops_pct", 0) : 0;
	double threads = 0, interop = 0;
	const cJSON *fn, *top = rtop_fn(c->doc, "op"), *caller = cJSON_GetArrayItem(rarr(c->doc, "cpu.top_op_callers"), 0);
	char w[600] = "", cw[600] = "";
	if (ops < TRIGGER_PCT || !top || c->gpu)
		return;
	rwhere(w, sizeof(w), top);
	if (caller)
		rwhere(cw, sizeof(cw), caller);
	double q = c->quality * (cJSON_IsTrue(isc_json_get(c->doc, "cpu.split.off_cpu_measured")) ? 1 : 0.8);
	cJSON *f = fnd_new(o, "op_compute_bound", ops >= 50 ? "critical" : "warning", ops / 100 * q,
			   "%.0f %% of traced CPU time is inside torch ops; the heaviest is %s%s%s", ops, w,
			   caller ? ", called mostly from " : "", cw);
	fnd_metric(o, f, "ops_pct", ops);
	if (faults > 0)
		fnd_metric(o, f, "page_fault_pct_left_out", faults);
	fnd_metric(o, f, "ops_ns", ops_ns);
	bool have_t = rmark(c->doc, "torch.num_threads", &threads);
	if (have_t)
		fnd_metric(o, f, "torch_num_threads", threads);
	if (rmark(c->doc, "torch.num_interop_threads", &interop))
		fnd_metric(o, f, "torch_num_interop_threads", interop);
	if (c->ncpu > 0)
		fnd_metric(o, f, "ncpu", c->ncpu);
	int n = 0;
	cJSON_ArrayForEach(fn, rarr(c->doc, "cpu.top_functions")) {
		if (strcmp(rstr(fn, "kind", ""), "op") || n++ >= TOP)
			continue;
		fnd_detail(o, fnd_top(o, f, fn, NULL, "op", rnum(fn, "self_ns", 0), rnum(fn, "self_pct", -1)),
			   "%.0f calls, %.1f us each", rnum(fn, "calls", 0),
			   rnum(fn, "calls", 0) > 0 ? rnum(fn, "self_ns", 0) / rnum(fn, "calls", 1) / 1e3 : 0);
	}
	if (caller)
		fnd_detail(o, fnd_top(o, f, caller, NULL, "python", rnum(caller, "ops_ns", -1), -1), "the Python line calling ops most");
	if (have_t && c->ncpu > threads && threads > 0)
		fnd_suggest(c, o, f, ops_ns * (1 - threads / c->ncpu),
			    "Let torch use every core: torch.set_num_threads(os.cpu_count()) or unset a low OMP_NUM_THREADS.",
			    "op time scaling perfectly from the threads used to all cores (upper bound)",
			    "torch ran its ops on %.0f threads on a machine with %.0f CPUs (logical CPUs: where two are "
			    "SMT siblings of one core the gain is far smaller).", threads, c->ncpu);
	else
		fnd_suggest(c, o, f, -1,
			    "Do less op work per result: batch requests together, run under torch.inference_mode(), "
			    "try bfloat16 or dynamic int8 quantization (torch.ao.quantization.quantize_dynamic) for Linear layers.",
			    NULL, "%s holds %.0f %% of traced time%s%s; op time only shrinks with less or cheaper arithmetic.", w,
			    rnum(top, "self_pct", 0), have_t ? " and torch already uses every core" : "",
			    have_t ? "" : " (thread count not recorded)");
	fnd_candidate(o, f, "op_compute_bound", ops, q);
}

const struct rule rule_op_compute_bound = { "op_compute_bound", eval };
