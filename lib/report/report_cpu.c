/*
 * report_cpu.c - the report's "## CPU" section: the traced time split into
 * Python, torch ops and off-CPU waiting; why the threads were blocked;
 * the threads by pool; context switches; CPU use over time; the top
 * functions by self time (all, and inside iterations; the Python samples
 * of --python=sample between them: report_pysample.c); then every
 * process's threads.
 */
#include "report.h"

/* cpu.split as one stacked bar (HTML only, after its table). */
static void cpu_split_chart(struct isc_rep *m, const cJSON *root)
{
	struct isc_rep_bar bar = { "Traced time",
				   { isc_rep_pct_seg(root, "cpu.split.python_pct", "Python interpreter", "#3b75af"),
				     isc_rep_pct_seg(root, "cpu.split.ops_pct", "torch ops", "#ef8636"),
				     isc_rep_pct_seg(root, "cpu.split.off_cpu_pct", "off-CPU waiting", "#9a9a9a") },
				   3, NULL };
	if (isc_doc_get(root, "cpu.split.torch_ops_pct")) { /* older documents: all C calls as torch ops */
		bar.seg[1] = isc_rep_pct_seg(root, "cpu.split.torch_ops_pct", "torch ops", "#ef8636");
		bar.seg[2] = isc_rep_pct_seg(root, "cpu.split.other_c_pct", "other C code", "#8c6bb1");
		bar.seg[3] = isc_rep_pct_seg(root, "cpu.split.off_cpu_pct", "off-CPU waiting", "#9a9a9a");
		bar.nseg = 4;
	}
	if (m->html && isc_rep_any_seg(&bar))
		isc_rep_chart_bars(m, "Where the traced CPU time goes", "Share of traced time (%)", 100, &bar, 1);
}

/* A function table; the total column only when with_total. */
static void fn_table(struct isc_rep *m, const cJSON *fns, bool with_total)
{
	char b[4][64];
	const cJSON *fn;
	int i = 0;
	isc_rep_put(m, with_total ? "| # | Function | Kind | Location | Calls | Self | Total | Self % |\n"
			    "|---:|---|---|---|---:|---:|---:|---:|\n"
			  : "| # | Function | Kind | Location | Calls | Self | Self % |\n"
			    "|---:|---|---|---|---:|---:|---:|\n");
	cJSON_ArrayForEach(fn, fns) {
		isc_rep_putf(m, "| %d | ", ++i);
		isc_rep_md(m, isc_doc_str(fn, "name", "?"));
		isc_rep_put(m, " | ");
		isc_rep_md(m, isc_doc_str(fn, "kind", "?"));
		isc_rep_put(m, " | ");
		isc_rep_location(m, fn, false);
		isc_rep_putf(m, " | %s | %s |", isc_rep_field(b[0], 64, fn, "calls", 'i'),
			     isc_rep_field(b[1], 64, fn, "self_ns", 'n'));
		if (with_total)
			isc_rep_putf(m, " %s |", isc_rep_field(b[2], 64, fn, "total_ns", 'n'));
		isc_rep_putf(m, " %s |\n", isc_rep_field(b[3], 64, fn, "self_pct", 'p'));
	}
}

/* cpu.off_cpu_reasons as a table: why the traced threads were blocked. */
static void off_cpu_reasons(struct isc_rep *m, const cJSON *root)
{
	const cJSON *r, *t;
	char b[3][64];
	if (cJSON_GetArraySize(isc_doc_arr(root, "cpu.off_cpu_reasons")) == 0)
		return;
	isc_rep_put(m, "\nWhy the traced threads were blocked (thread samples, what each waited in):\n\n");
	isc_rep_put(m, "| Reason | Blocked | Share | Inside torch ops | Python functions |\n|---|---:|---:|---:|---|\n");
	cJSON_ArrayForEach(r, isc_doc_arr(root, "cpu.off_cpu_reasons")) {
		isc_rep_put(m, "| ");
		isc_rep_md(m, isc_doc_str(r, "reason", "?"));
		isc_rep_putf(m, " | %s | %s | %s | ", isc_rep_field(b[0], 64, r, "ns", 'n'),
			     isc_rep_field(b[1], 64, r, "pct", 'p'),
			     isc_rep_field(b[2], 64, r, "in_torch_ops_ns", 'n'));
		int n = 0;
		cJSON_ArrayForEach(t, isc_doc_arr(r, "top")) {
			if (n++ == 3)
				break;
			if (n > 1)
				isc_rep_put(m, ", ");
			isc_rep_code(m, isc_doc_str(t, "name", "?"));
		}
		isc_rep_put(m, " |\n");
	}
}

/* cpu.thread_pools as a table: every thread, traced or not, by pool. */
static void thread_pools(struct isc_rep *m, const cJSON *root)
{
	const cJSON *p;
	char b[4][64];
	if (cJSON_GetArraySize(isc_doc_arr(root, "cpu.thread_pools")) == 0)
		return;
	/* with native stacks: what each pool ran, and for whom */
	bool nat = cJSON_IsObject(isc_doc_get(cJSON_GetArrayItem(isc_doc_arr(root, "cpu.thread_pools"), 0), "native"));
	isc_rep_put(m, "\nThreads by pool (traced or not; untraced threads grouped by the futex they wait on):\n\n");
	isc_rep_put(m, nat ? "| Pool | Traced | Threads | CPU | Runnable (mean) | Native stacks |\n|---|---|---:|---:|---:|---|\n"
			   : "| Pool | Traced | Threads | CPU | Runnable (mean) |\n|---|---|---:|---:|---:|\n");
	cJSON_ArrayForEach(p, isc_doc_arr(root, "cpu.thread_pools")) {
		isc_rep_put(m, "| ");
		isc_rep_md(m, isc_doc_str(p, "name", "?"));
		if (isc_doc_str(p, "futex", NULL)) {
			isc_rep_put(m, " (futex ");
			isc_rep_md(m, isc_doc_str(p, "futex", ""));
			isc_rep_put(m, ")");
		}
		isc_rep_putf(m, " | %s | %s | %s (%s) | %s |", cJSON_IsTrue(isc_doc_get(p, "traced")) ? "yes" : "no",
			     isc_rep_field(b[0], 64, p, "threads", 'i'), isc_rep_field(b[1], 64, p, "cpu_ns", 'n'),
			     isc_rep_field(b[2], 64, p, "cpu_pct", 'p'), isc_rep_field(b[3], 64, p, "runnable_mean", 'f'));
		if (nat)
			isc_rep_native_pool(m, isc_doc_get(p, "native"));
		isc_rep_put(m, "\n");
	}
}

void isc_rep_sec_cpu(struct isc_rep *m, const cJSON *root)
{
	char b[8][64];
	isc_rep_put(m, "\n## CPU\n\n");
	isc_rep_putf(m, "Traced time %s on %s traced threads, split into:\n\n", isc_rep_field(b[0], 64, root, "cpu.split.traced_ns", 'n'),
	     isc_rep_field(b[1], 64, root, "summary.traced_threads", 'i'));
	if (isc_doc_get(root, "cpu.split.torch_ops_pct")) {
		/* other C code: builtins, other extensions, imports */
		isc_rep_put(m, "| Python interpreter | torch ops | other C code | off-CPU waiting |\n|---:|---:|---:|---:|\n");
		isc_rep_putf(m, "| %s (%s) | %s (%s) | %s (%s) | %s (%s) |\n", isc_rep_field(b[0], 64, root, "cpu.split.python_ns", 'n'),
			     isc_rep_field(b[1], 64, root, "cpu.split.python_pct", 'p'), isc_rep_field(b[2], 64, root, "cpu.split.torch_ops_ns", 'n'),
			     isc_rep_field(b[3], 64, root, "cpu.split.torch_ops_pct", 'p'), isc_rep_field(b[4], 64, root, "cpu.split.other_c_ns", 'n'),
			     isc_rep_field(b[5], 64, root, "cpu.split.other_c_pct", 'p'), isc_rep_field(b[6], 64, root, "cpu.split.off_cpu_ns", 'n'),
			     isc_rep_field(b[7], 64, root, "cpu.split.off_cpu_pct", 'p'));
	} else {
		isc_rep_put(m, "| Python interpreter | torch ops | off-CPU waiting |\n|---:|---:|---:|\n");
		isc_rep_putf(m, "| %s (%s) | %s (%s) | %s (%s) |\n",
			     isc_rep_field(b[0], 64, root, "cpu.split.python_ns", 'n'),
			     isc_rep_field(b[1], 64, root, "cpu.split.python_pct", 'p'), isc_rep_field(b[2], 64, root, "cpu.split.ops_ns", 'n'),
			     isc_rep_field(b[3], 64, root, "cpu.split.ops_pct", 'p'), isc_rep_field(b[4], 64, root, "cpu.split.off_cpu_ns", 'n'),
			     isc_rep_field(b[5], 64, root, "cpu.split.off_cpu_pct", 'p'));
	}
	cpu_split_chart(m, root);
	if (!cJSON_IsTrue(isc_doc_get(root, "cpu.split.off_cpu_measured")))
		isc_rep_put(m, "\nOff-CPU time was not measured (no CPU samples of the traced threads).\n");
	off_cpu_reasons(m, root);
	thread_pools(m, root);
	isc_rep_putf(m, "\nContext switches: %s voluntary, %s involuntary.\n",
	     isc_rep_field(b[0], 64, root, "cpu.context_switches.voluntary_per_s", 'r'),
	     isc_rep_field(b[1], 64, root, "cpu.context_switches.involuntary_per_s", 'r'));
	static const struct isc_rep_series_def cpu_series[] = {
		{ "cpu_cores", "CPU cores used", "#3b75af", false, 'c' },
		{ "runnable_threads", "runnable threads", "#ef8636", false, 'c' },
	};
	isc_rep_over_time(m, root, "CPU use over time", cpu_series, 2, ISC_REP_UNIT_CORES);

	isc_rep_put(m, "\n### Top functions by self time\n\n");
	if (!cJSON_GetArraySize(isc_doc_arr(root, "cpu.top_functions"))) {
		isc_rep_put(m, "No function spans recorded.\n");
	} else {
		fn_table(m, isc_doc_arr(root, "cpu.top_functions"), true);
		isc_rep_put(m, "\nSelf % is of the traced time; total time counts a recursive function once (its outermost "
		       "call).\n");
		if (isc_doc_get(root, "python.samples"))
			isc_rep_put(m, "\nFrom stack samples: calls are not counted (n/a); an op row is the time in C "
				       "code called from one Python line.\n");
	}
	isc_rep_python_samples(m, root);
	isc_rep_native(m, root);
	if (cJSON_GetArraySize(isc_doc_arr(root, "cpu.top_functions_in_scopes"))) {
		isc_rep_put(m, "\n### Top functions inside iterations\n\nThe same while a `scope` was open (start-up and "
		       "imports left out); self % is of the ");
		isc_rep_put(m, isc_rep_field(b[0], 64, root, "cpu.scoped_ns", 'n'));
		isc_rep_put(m, " spent inside scopes.\n\n");
		fn_table(m, isc_doc_arr(root, "cpu.top_functions_in_scopes"), false);
	}

	isc_rep_put(m, "\n### Threads\n");
	const cJSON *p, *t;
	cJSON_ArrayForEach(p, isc_doc_arr(root, "processes")) {
		isc_rep_putf(m, "\nProcess %s", isc_rep_field(b[0], 64, p, "pid", 'i'));
		if (isc_doc_have(p, "ppid", &(double){ 0 }))
			isc_rep_putf(m, " (parent %s)", isc_rep_field(b[0], 64, p, "ppid", 'i'));
		const char *cmd = isc_doc_str(p, "command", "");
		if (*cmd) {
			isc_rep_put(m, ": ");
			isc_rep_md(m, cmd);
		}
		isc_rep_putf(m, ". CPU %s", isc_rep_field(b[0], 64, p, "cpu_ns", 'n'));
		if (isc_doc_have(p, "exit_status", &(double){ 0 }))
			isc_rep_putf(m, ", exit status %s", isc_rep_field(b[0], 64, p, "exit_status", 'i'));
		isc_rep_putf(m, ", context switches %s voluntary, %s involuntary.\n\n",
		     isc_rep_field(b[0], 64, p, "context_switches.voluntary_per_s", 'r'),
		     isc_rep_field(b[1], 64, p, "context_switches.involuntary_per_s", 'r'));
		isc_rep_put(m, "| TID | Name | CPU | Traced | Events | Python | Ops | Off-CPU |\n");
		isc_rep_put(m, "|---:|---|---:|---|---:|---:|---:|---:|\n");
		cJSON_ArrayForEach(t, isc_doc_arr(p, "threads")) {
			isc_rep_putf(m, "| %s | ", isc_rep_field(b[0], 64, t, "tid", 'i'));
			isc_rep_md(m, isc_doc_str(t, "name", ""));
			isc_rep_putf(m, " | %s | %s | %s | %s | %s | %s |\n", isc_rep_field(b[0], 64, t, "cpu_ns", 'n'),
			     cJSON_IsTrue(isc_doc_get(t, "traced")) ? "yes" : "no",
			     isc_rep_field(b[1], 64, t, "events", 'i'),
			     isc_rep_field(b[2], 64, t, "python_ns", 'n'), isc_rep_field(b[3], 64, t, "ops_ns", 'n'),
			     isc_rep_field(b[4], 64, t, "off_cpu_ns", 'n'));
		}
	}
}
