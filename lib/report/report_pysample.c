/*
 * report_pysample.c - the "Python samples" part of the CPU section and the
 * sampler's cost line (python.samples, recording.sampler of the findings),
 * when the run was recorded with iscope-record --python=sample.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report.h"

/* "1.2 s (1.1-1.3 s)": an estimate and its 95 % interval. */
static void est(struct isc_rep *m, const cJSON *o, const char *key)
{
	char b[3][64], k[48];
	snprintf(k, sizeof(k), "%s_low", key);
	isc_rep_fmt_ns(b[1], 64, isc_doc_num(o, k, 0));
	snprintf(k, sizeof(k), "%s_high", key);
	isc_rep_fmt_ns(b[2], 64, isc_doc_num(o, k, 0));
	isc_rep_putf(m, "%s (%s – %s)", isc_rep_fmt_ns(b[0], 64, isc_doc_num(o, key, 0)), b[1], b[2]);
}

#define ROWS 10

void isc_rep_python_samples(struct isc_rep *m, const cJSON *root)
{
	const cJSON *s = isc_doc_get(root, "python.samples"), *o;
	char b[2][64];
	int i;
	if (!s)
		return;
	isc_rep_putf(m, "\n### Python samples\n\nPython stacks sampled from outside the process (`--python=sample`): "
			"%.0f stacks at %.0f Hz, one sample standing for %s of a thread's time.  Times are estimates "
			"from sample counts; the range is the 95 %% Wilson interval.  No call counts.\n",
		     isc_doc_num(s, "samples", 0), isc_doc_num(s, "hz", 0), isc_rep_fmt_ns(b[0], 64, isc_doc_num(s, "period_ns", 0)));
	isc_rep_putf(m, "\nOf all samples: %.1f %% running bytecode, %.1f %% in C calls (%.0f of them counted as torch "
			"ops), %.1f %% off CPU.\n",
		     isc_doc_num(s, "split.interpreter_pct", 0), isc_doc_num(s, "split.native_pct", 0), isc_doc_num(s, "split.torch_op_samples", 0),
		     isc_doc_num(s, "split.off_cpu_pct", 0));
	isc_rep_put(m, "\n| # | Function | Location | Samples (self / total) | Self | Total |\n"
		       "|---:|---|---|---:|---:|---:|\n");
	i = 0;
	cJSON_ArrayForEach(o, isc_doc_get(s, "functions")) {
		if (i >= ROWS)
			break;
		isc_rep_putf(m, "| %d | ", ++i);
		isc_rep_md(m, isc_doc_str(o, "name", NULL));
		isc_rep_put(m, " | ");
		isc_rep_location(m, o, false);
		isc_rep_putf(m, " | %.0f / %.0f | ", isc_doc_num(o, "self_samples", 0), isc_doc_num(o, "total_samples", 0));
		est(m, o, "self_ns");
		isc_rep_put(m, " | ");
		est(m, o, "total_ns");
		isc_rep_put(m, " |\n");
	}
	isc_rep_put(m, "\n#### Lines\n\n| # | Line | Function | Samples | of them in C | Time |\n"
		       "|---:|---|---|---:|---:|---:|\n");
	i = 0;
	cJSON_ArrayForEach(o, isc_doc_get(s, "lines")) {
		if (i >= ROWS)
			break;
		isc_rep_putf(m, "| %d | ", ++i);
		isc_rep_location(m, o, false);
		isc_rep_put(m, " | ");
		isc_rep_md(m, isc_doc_str(o, "name", NULL));
		isc_rep_putf(m, " | %.0f | %.0f | ", isc_doc_num(o, "self_samples", 0), isc_doc_num(o, "native_samples", 0));
		est(m, o, "self_ns");
		isc_rep_put(m, " |\n");
	}
	if (cJSON_GetArraySize(isc_doc_get(s, "native_calls"))) {
		isc_rep_put(m, "\n#### Time in C calls, by callee and calling function\n\n"
			       "| # | Callee | Kind | Called from | Samples (on CPU) | Time | torch |\n"
			       "|---:|---|---|---|---:|---:|---|\n");
		i = 0;
		cJSON_ArrayForEach(o, isc_doc_get(s, "native_calls")) {
			const cJSON *c = isc_doc_get(o, "caller");
			if (i >= ROWS)
				break;
			isc_rep_putf(m, "| %d | ", ++i);
			isc_rep_md(m, isc_doc_str(o, "name", NULL));
			isc_rep_put(m, " | ");
			isc_rep_md(m, isc_doc_str(o, "callee_kind", NULL));
			isc_rep_put(m, " | ");
			isc_rep_md(m, isc_doc_str(c, "name", NULL));
			isc_rep_put(m, " (");
			isc_rep_location(m, c, false);
			isc_rep_putf(m, ") | %.0f (%.0f) | ", isc_doc_num(o, "samples", 0), isc_doc_num(o, "on_cpu_samples", 0));
			est(m, o, "ns");
			isc_rep_putf(m, " | %s |\n", cJSON_IsTrue(isc_doc_get(o, "torch")) ? "yes" : "no");
		}
		if (isc_doc_num(s, "split.unidentified_samples", 0) > 0)
			isc_rep_putf(m, "\n%.0f samples in C calls whose callee the sampler could not read are counted as "
					"\"(a C call the sampler could not name)\".\n",
				     isc_doc_num(s, "split.unidentified_samples", 0));
	}
	isc_rep_put(m, "\n#### Sampled threads\n\n| Process | Thread | Samples | On CPU | Bytecode | C calls | Off CPU |\n"
		       "|---:|---:|---:|---:|---:|---:|---:|\n");
	cJSON_ArrayForEach(o, isc_doc_get(s, "threads"))
		isc_rep_putf(m, "| %.0f | %.0f | %.0f | %.1f %% | %.0f | %.0f | %.0f |\n", isc_doc_num(o, "pid", 0), isc_doc_num(o, "tid", 0),
			     isc_doc_num(o, "samples", 0), isc_doc_num(o, "on_cpu_pct", 0), isc_doc_num(o, "interpreter_samples", 0),
			     isc_doc_num(o, "native_samples", 0), isc_doc_num(o, "off_cpu_samples", 0));
}

void isc_rep_sampler_cost(struct isc_rep *m, const cJSON *root)
{
	const cJSON *s = isc_doc_get(root, "recording.sampler");
	const char *mode = isc_doc_str(root, "recording.python_mode", "");
	char b[2][64];
	if (!s)
		return;
	if (!strcmp(mode, "exact")) { /* the samples only place operator time: the agent's calls are the measure */
		if (isc_doc_get(s, "cpu_ns") && !cJSON_IsNull(isc_doc_get(s, "cpu_ns")))
			isc_rep_putf(m, "\nThe stack sampler (%.0f Hz: which share of a function's time sat in an operator "
					"on an extension's object, such as `x @ w` on tensors) used %s of CPU in the recorder.\n",
				     isc_doc_num(s, "hz", 0), isc_rep_fmt_ns(b[0], 64, isc_doc_num(s, "cpu_ns", 0)));
		return;
	}
	if (!isc_doc_get(s, "cpu_ns") || cJSON_IsNull(isc_doc_get(s, "cpu_ns"))) {
		isc_rep_put(m, "\nRecording (sampled Python mode): the sampler's cost is unknown (the trace ended before "
			       "its totals).\n");
		return;
	}
	/* the sampler adds no code to the workload; the CUDA agent, when it ran, does (isc_rep_cuda_agent_cost) */
	isc_rep_putf(m, "\nRecording (sampled Python mode, %.0f Hz): %s; the sampler "
			"thread used %s of CPU (%.2f %% of one CPU over the run, %s per tick).  Figures are not "
			"corrected.\n",
		     isc_doc_num(s, "hz", 0),
		     cJSON_IsObject(isc_doc_get(root, "gpu.agent")) ? "the Python sampler ran no code in the workload "
								     "(the CUDA agent did: below)"
								   : "the workload ran no extra code",
		     isc_rep_fmt_ns(b[0], 64, isc_doc_num(s, "cpu_ns", 0)), isc_doc_num(s, "cpu_pct", 0),
		     isc_rep_fmt_ns(b[1], 64, isc_doc_num(s, "per_tick_ns", 0)));
}
