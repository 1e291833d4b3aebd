/*
 * rule_gpu_not_traced.c - gpu_not_traced: a CUDA driver was there, but the
 * GPU activity of the run was not (or only partly) recorded.
 *
 * Trigger: a summary.warnings[] entry whose kind says GPU tracing failed
 * although a driver was found (injection_taken, not_built, cupti_version,
 * cupti_privileges, cupti_subscriber, cupti_error) while the run has no GPU
 * operations: severity critical, because the verdict can then only name a
 * CPU class and the quality factor halves its confidence (rules.c).  Or a
 * cupti_kinds warning (some optional activity kinds unavailable): severity
 * info.  No threshold: one warning is enough, as nsys reports a CUPTI start
 * failure.  no_driver, stub_driver and no_nvml do not trigger it: on a
 * machine without a GPU they are the normal case, and the report lists
 * them under "Recording notes".  Evidence: the warning's pid (0: the
 * recorder) and counts; its message is in the rationale.  No saving: it is about the measurement.
 */
#include <string.h>

#include "rules.h"

/* What to do about a warning of kind k. */
static const char *remedy(const char *k)
{
	if (!strcmp(k, "injection_taken"))
		return "Another tool owns CUDA_INJECTION64_PATH: unset it, or run iscope-record --force to replace it.";
	if (!strcmp(k, "not_built"))
		return "Rebuild InferScope on a machine with the CUDA toolkit (/usr/local/cuda) so libiscope-cuda.so is built.";
	if (!strcmp(k, "cupti_version"))
		return "Rebuild InferScope against the CUDA toolkit that matches the installed driver.";
	if (!strcmp(k, "cupti_privileges"))
		return "Allow profiling for non-admin users (driver option NVreg_RestrictProfilingToAdminUsers=0) or "
		       "record as root.";
	if (!strcmp(k, "cupti_subscriber"))
		return "Only one CUPTI client can run: stop the other profiler (nsys, torch.profiler with CUDA "
		       "activities, DCGM profiling) and record again.";
	if (!strcmp(k, "cupti_kinds"))
		return "Update the driver or CUDA toolkit for the missing activity kinds; the rest was recorded.";
	return "Record again after fixing the error in the message.";
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *w = NULL, *x;
	bool failed = isc_rgpu_trace_failed(c->doc, &w);
	if (!failed)
		cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "summary.warnings"))
			if (!strcmp(isc_doc_str(x, "kind", ""), "cupti_kinds")) {
				w = x;
				break;
			}
	if (!w)
		return;
	const char *k = isc_doc_str(w, "kind", "other"), *msg = isc_doc_str(w, "message", "");
	cJSON *f = failed ? isc_fnd_new(o, "gpu_not_traced", "critical", 1,
				    "GPU activity was not recorded (%s): the verdict can only name a host-side cause", k)
			  : isc_fnd_new(o, "gpu_not_traced", "info", 1, "Some GPU activity kinds were not recorded");
	isc_fnd_metric(o, f, "warnings_total", isc_doc_num(c->doc, "summary.warnings_total", 0));
	isc_fnd_metric(o, f, "gpu_ops", isc_doc_num(c->doc, "gpu.ops", 0));
	isc_fnd_metric(o, f, "pid", isc_doc_num(w, "pid", 0));
	isc_fnd_suggest(c, o, f, -1, remedy(k), NULL, "The recorder or the CUDA agent said: %s", msg);
}

const struct rule isc_rule_gpu_not_traced = { "gpu_not_traced", eval };
