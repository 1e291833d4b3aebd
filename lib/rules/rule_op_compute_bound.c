/*
 * rule_op_compute_bound.c - op_compute_bound: time inside torch ops dominates.
 *
 * Trigger: cpu.split.torch_ops_pct minus the page-fault share (isc_rfault_pct():
 * faults on fresh tensors are kernel time inside ops, and belong to
 * host_memory_bound) >= 20 (on-CPU time inside torch ops and tensor
 * methods, by the callable's module; builtins and other extensions are
 * Python-side work, python_bound's).  Severity critical from 50 %.  Verdict
 * share: that difference.  A document from before the split in three
 * (no torch_ops_pct) uses ops_pct.  Quality x 0.8 when off-CPU time was not measured (no
 * CPU samples: blocked time inside ops then counts as op time).
 * Evidence: the top 5 ops by self time, the Python lines calling ops most
 * (cpu.top_op_callers), torch's thread counts (marks torch.num_threads,
 * torch.num_interop_threads) against environment.ncpu.
 * What-if: when torch.get_num_threads() < cores and at least half a CPU
 * was idle (the traced processes' CPU time / wall time, when sampled, is
 * the CPUs they kept busy: a BLAS library's own thread pool can fill the
 * cores torch leaves free), the op time scaling perfectly from the CPUs
 * used to all of them (an upper bound: Amdahl's law, memory-bound ops
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
#define IDLE_CPU_MIN 0.5

/*
 * CPUs the traced processes kept busy on average (their CPU time / wall
 * time), and the CPU time of their untraced threads; false without
 * process samples.
 */
static bool cpus_used(const struct rule_ctx *c, double *used, double *untraced_ns)
{
	const cJSON *p, *t;
	double cpu = 0, v;
	bool have = false;
	*untraced_ns = 0;
	cJSON_ArrayForEach(p, isc_doc_arr(c->doc, "processes")) {
		if (isc_doc_have(p, "cpu_ns", &v)) {
			cpu += v;
			have = true;
		}
		cJSON_ArrayForEach(t, isc_doc_arr(p, "threads"))
			if (!cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(t, "traced")))
				*untraced_ns += isc_doc_num(t, "cpu_ns", 0);
	}
	*used = c->wall_ns > 0 ? cpu / c->wall_ns : 0;
	return have && c->wall_ns > 0;
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double ops = isc_rtorch_ops_pct(c->doc), ops0 = ops, ops_ns;
	double dummy;
	bool split3 = isc_doc_have(c->doc, "cpu.split.torch_ops_pct", &dummy); /* torch ops apart from other C code */
	if (!isc_doc_have(c->doc, split3 ? "cpu.split.torch_ops_ns" : "cpu.split.ops_ns", &ops_ns))
		ops_ns = isc_doc_num(c->doc, "cpu.split.traced_ns", 0) * ops0 / 100;
	double faults = isc_rfault_pct(c, NULL); /* kernel time on faults, inside ops: memory's share */
	ops = ops > faults ? ops - faults : 0;
	ops_ns *= ops0 > 0 ? ops / ops0 : 0;
	double threads = 0, interop = 0;
	const cJSON *fn, *top = isc_rtop_torch_op(c->doc), *caller = cJSON_GetArrayItem(isc_doc_arr(c->doc, "cpu.top_op_callers"), 0);
	char w[600] = "", cw[600] = "";
	if (ops < TRIGGER_PCT || !top || c->gpu)
		return;
	isc_doc_where(w, sizeof(w), top);
	/* no call spans (--python=sample): the heaviest op row's own calling function */
	if (!caller && cJSON_IsObject(isc_doc_get(top, "caller")))
		caller = isc_doc_get(top, "caller");
	if (caller)
		isc_doc_where(cw, sizeof(cw), caller);
	double q = c->quality * (cJSON_IsTrue(isc_doc_get(c->doc, "cpu.split.off_cpu_measured")) ? 1 : 0.8);
	cJSON *f = isc_fnd_new(o, "op_compute_bound", ops >= 50 ? "critical" : "warning", ops / 100 * q,
			   "%.0f %% of traced CPU time is inside torch ops; the heaviest is %s%s%s", ops, w,
			   caller ? ", called mostly from " : "", cw);
	isc_fnd_metric(o, f, "ops_pct", ops);
	if (faults > 0)
		isc_fnd_metric(o, f, "page_fault_pct_left_out", faults);
	isc_fnd_metric(o, f, "ops_ns", ops_ns);
	bool have_t = isc_rmark(c->doc, "torch.num_threads", &threads);
	if (have_t)
		isc_fnd_metric(o, f, "torch_num_threads", threads);
	if (isc_rmark(c->doc, "torch.num_interop_threads", &interop))
		isc_fnd_metric(o, f, "torch_num_interop_threads", interop);
	if (c->ncpu > 0)
		isc_fnd_metric(o, f, "ncpu", c->ncpu);
	int n = 0;
	cJSON_ArrayForEach(fn, isc_doc_arr(c->doc, "cpu.top_functions")) {
		if (strcmp(isc_doc_str(fn, "kind", ""), "op") ||
		    (split3 && !isc_rrow_torch(fn)) ||
		    n++ >= TOP)
			continue;
		cJSON *t = isc_fnd_top(o, f, fn, NULL, "op", isc_doc_num(fn, "self_ns", 0), isc_doc_num(fn, "self_pct", -1));
		if (cJSON_IsNumber(cJSON_GetObjectItem(fn, "calls")))
			isc_fnd_detail(o, t, "%.0f calls, %.1f us each", isc_doc_num(fn, "calls", 0),
				       isc_doc_num(fn, "calls", 0) > 0 ? isc_doc_num(fn, "self_ns", 0) / isc_doc_num(fn, "calls", 1) / 1e3 : 0);
		else if (cJSON_IsObject(isc_doc_get(fn, "caller"))) { /* --python=sample: C time by callee, from stack samples */
			char fw[600];
			isc_doc_where(fw, sizeof(fw), isc_doc_get(fn, "caller"));
			isc_fnd_detail(o, t, "calls not counted (sampled); called from %s", fw);
		} else /* an operator's slot in exact mode */
			isc_fnd_detail(o, t, "calls not counted (sampled)");
	}
	if (caller)
		isc_fnd_detail(o, isc_fnd_top(o, f, caller, NULL, "python", isc_doc_num(caller, "ops_ns", -1), -1), "the Python line calling ops most");
	double used = 0, untraced_ns = 0;
	bool have_used = cpus_used(c, &used, &untraced_ns);
	if (have_used)
		isc_fnd_metric(o, f, "cpus_used", used);
	double busy = have_used && used > threads ? used : threads;
	if (have_t && threads > 0 && c->ncpu - busy >= IDLE_CPU_MIN) {
		char busy_s[48];
		snprintf(busy_s, sizeof(busy_s), have_used ? "%.1f of them" : "about %.0f of them", busy);
		isc_fnd_suggest(c, o, f, ops_ns * (1 - busy / c->ncpu),
			    "Let torch use every core: torch.set_num_threads(os.cpu_count()) or unset a low OMP_NUM_THREADS.",
			    "op time scaling perfectly from the CPUs used to all of them (upper bound)",
			    "torch ran its ops on %.0f thread%s on a machine with %.0f CPUs, and the run kept %s busy "
			    "(logical CPUs: where two are SMT siblings of one core the gain is far smaller).", threads,
			    threads == 1 ? "" : "s", c->ncpu, busy_s);
	} else {
		/* no idle CPU to give torch: say why (busy < ncpu here only when the process samples said so) */
		char why[300];
		if (!have_t)
			snprintf(why, sizeof(why), " (thread count not recorded)");
		else if (threads >= c->ncpu)
			snprintf(why, sizeof(why), " and torch already uses every core");
		else
			snprintf(why, sizeof(why),
				 "; torch uses %.0f of %.0f CPUs, but the run kept %.1f busy (%.2f s on threads the agent "
				 "did not trace: a BLAS or OpenMP pool of its own), so more torch threads would only compete",
				 threads, c->ncpu, busy, untraced_ns / 1e9);
		isc_fnd_suggest(c, o, f, -1,
			    "Do less op work per result: batch requests together, run under torch.inference_mode(), "
			    "try bfloat16 or dynamic int8 quantization (torch.ao.quantization.quantize_dynamic) for Linear layers.",
			    NULL, "%s holds %.0f %% of traced time%s; op time only shrinks with less or cheaper arithmetic.", w,
			    isc_doc_num(top, "self_pct", 0), why);
	}
	isc_fnd_candidate(o, f, "op_compute_bound", ops, q);
}

const struct rule isc_rule_op_compute_bound = { "op_compute_bound", eval };
