/*
 * rule_python_bound.c - python_bound: interpreter self time dominates.
 *
 * Trigger: Python-side share >= 20: cpu.split.python_pct (time the traced
 * threads ran Python bytecode, outside any C call, on a CPU) plus
 * other_c_pct (C calls that are not torch ops: builtins such as len,
 * list.append, str.join, other extension modules, import machinery; the
 * work a Python program does around the model).  Severity critical from
 * 50 %.  Verdict share: that sum, less the page-fault share (isc_rfault_pct())
 * that torch ops do not account for: kernel time on faults in Python code
 * or other C calls is host_memory_bound's, as op_compute_bound leaves out
 * the faults inside ops.  The 20 % floor is ours: below it a profile
 * of an inference loop is normally dominated by ops, and Scalene and
 * py-spy users read a 20 % Python share as the point where per-element
 * Python starts to matter.
 * Evidence: the top 5 Python functions by self time, with file:line.
 * What-if: those functions' self time ran 10x faster, as batched torch
 * operations typically do against per-element Python (an assumption,
 * stated in the estimate).
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_PCT 20
#define TOP 5
#define VECTOR_SPEEDUP 10.0

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	double interp = isc_doc_num(c->doc, "cpu.split.python_pct", 0), traced = isc_doc_num(c->doc, "cpu.split.traced_ns", 0);
	double other_c = isc_doc_num(c->doc, "cpu.split.other_c_pct", 0), py = interp + other_c;
	/* kernel time on page faults that torch ops do not account for happened in Python code or
	 * other C calls: memory's share (host_memory_bound), as op_compute_bound leaves out its part */
	double faults = isc_rfault_pct(c, NULL) - isc_rtorch_ops_pct(c->doc);
	if (faults > 0)
		py = py > faults ? py - faults : 0;
	const cJSON *fn, *top = isc_rtop_fn(c->doc, "python");
	char w[600];
	if (py < TRIGGER_PCT || !top || traced <= 0)
		return;
	isc_doc_where(w, sizeof(w), top);
	char less[64] = "";
	if (faults > 0)
		snprintf(less, sizeof(less), ", less %.0f %% kernel time taken as page faults", faults);
	cJSON *f = isc_fnd_new(o, "python_bound", py >= 50 ? "critical" : "warning", py / 100 * c->quality,
			   "%.0f %% of traced CPU time is Python-side work (interpreter %.0f %%, C builtins and other "
			   "extensions %.0f %%%s); the hottest function is %s, %.0f %% self time",
			   py, interp, other_c, less, w, isc_doc_num(top, "self_pct", 0));
	isc_fnd_metric(o, f, "python_pct", interp);
	isc_fnd_metric(o, f, "other_c_pct", other_c);
	isc_fnd_metric(o, f, "python_side_pct", py);
	if (faults > 0)
		isc_fnd_metric(o, f, "page_fault_pct_left_out", faults);
	isc_fnd_metric(o, f, "torch_ops_pct", isc_rtorch_ops_pct(c->doc));
	isc_fnd_metric(o, f, "ops_pct", isc_doc_num(c->doc, "cpu.split.ops_pct", 0));
	isc_fnd_metric(o, f, "traced_ns", traced);
	double self = 0, user_self = 0;
	const cJSON *user_top = NULL;
	int n = 0;
	cJSON_ArrayForEach(fn, isc_doc_arr(c->doc, "cpu.top_functions")) {
		if (strcmp(isc_doc_str(fn, "kind", ""), "python") || n >= TOP)
			continue;
		n++;
		self += isc_doc_num(fn, "self_ns", 0);
		if (isc_ruser_code(fn)) { /* the suggestion targets the user's code only */
			user_self += isc_doc_num(fn, "self_ns", 0);
			if (!user_top)
				user_top = fn;
		}
		cJSON *t = isc_fnd_top(o, f, fn, NULL, "python", isc_doc_num(fn, "self_ns", 0), isc_doc_num(fn, "self_pct", -1));
		if (cJSON_IsNumber(cJSON_GetObjectItem(fn, "calls")))
			isc_fnd_detail(o, t, "%.0f calls", isc_doc_num(fn, "calls", 0));
		else /* --python=sample: estimated from stack samples */
			isc_fnd_detail(o, t, "calls not counted (sampled)");
	}
	(void)self;
	if (user_top) {
		char uw[600];
		isc_doc_where(uw, sizeof(uw), user_top);
		isc_fnd_suggest(c, o, f, user_self * (1 - 1 / VECTOR_SPEEDUP),
			    "Replace the per-element Python work in your functions listed here with batched torch "
			    "operations, or move it out of the per-request path.",
			    "your top Python functions' interpreter time running 10x faster as batched tensor code "
			    "(typical, assumed)",
			    "The interpreter executes bytecode one element at a time; %s alone holds %.0f %% of traced "
			    "time.", uw, isc_doc_num(user_top, "self_pct", 0));
	} else { /* the time is in the standard library's or packages' code: nothing of the user's to rewrite */
		isc_fnd_suggest(c, o, f, -1,
			    "The Python time is in the standard library's or installed packages' code (imports "
			    "included), not in your functions: import less at start-up, or run more iterations per "
			    "process so that start-up weighs less.",
			    NULL, "%s is not code of yours; no rewrite of it is suggested.", w);
	}
	isc_fnd_candidate(o, f, "python_bound", py, c->quality);
}

const struct rule isc_rule_python_bound = { "python_bound", eval };
