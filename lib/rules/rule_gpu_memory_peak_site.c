/*
 * rule_gpu_memory_peak_site.c - gpu_memory_peak_site: one allocation site
 * holds most of a device's memory peak.
 *
 * Trigger: gpu.devices[].memory.peak_sites[0] holds >= 50 % of the peak
 * (memory.peak_bytes) and the peak is >= 64 MiB.  Severity info, warning
 * when the peak is >= 75 % of the device (memory.total_bytes).  Both
 * thresholds are ours: half the peak in one place is where shrinking pays;
 * below 64 MiB no device runs short.
 * Evidence: the peak sites (Memory: their bytes live at the peak; Share:
 * of the peak).
 * Saving (memory, estimated_saving_bytes): half the site's bytes, what
 * float32 tensors become in bfloat16/float16 (assumed float32: the dtype is
 * not recorded).  No time saving.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define SHARE_PCT 50
#define MIN_PEAK (64.0 * 1048576)
#define WARN_PCT 75

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *d, *x;
	cJSON_ArrayForEach(d, isc_doc_arr(c->doc, "gpu.devices")) {
		const cJSON *top = cJSON_GetArrayItem(isc_doc_arr(d, "memory.peak_sites"), 0);
		double peak = isc_doc_num(d, "memory.peak_bytes", 0), total = isc_doc_num(d, "memory.total_bytes", 0);
		double bytes = isc_doc_num(top, "bytes", 0), share = isc_rpct(bytes, peak);
		if (!top || peak < MIN_PEAK || share < SHARE_PCT)
			continue;
		char w[600];
		isc_doc_where(w, sizeof(w), top);
		const char *kind = isc_doc_str(top, "kind", "");
		cJSON *f = isc_fnd_new(o, "gpu_memory_peak_site",
				       total > 0 && isc_rpct(peak, total) >= WARN_PCT ? "warning" : "info", c->quality,
				       "%.0f %% of GPU %.0f's memory peak (%.1f GiB) was allocated by %s", share,
				       isc_doc_num(d, "id", 0), peak / 1073741824, w);
		isc_fnd_metric(o, f, "device", isc_doc_num(d, "id", 0));
		isc_fnd_metric(o, f, "peak_bytes", peak);
		isc_fnd_metric(o, f, "site_bytes", bytes);
		isc_fnd_metric(o, f, "site_pct", share);
		if (total > 0)
			isc_fnd_metric(o, f, "total_bytes", total);
		cJSON_ArrayForEach(x, isc_doc_arr(d, "memory.peak_sites"))
			isc_fnd_bytes(o, isc_fnd_top(o, f, x, NULL, isc_doc_str(x, "kind", "site"), -1,
						     isc_doc_num(x, "pct_of_peak", 0)),
				      isc_doc_num(x, "bytes", -1));
		char act[1400];
		snprintf(act, sizeof(act),
			 "Shrink what %s keeps alive at the peak: run inference under torch.inference_mode() (no autograd "
			 "graph holds activations), drop references to tensors no longer needed (del, overwrite, return "
			 "only what the caller uses) before the next large allocation, lower the batch or sequence length "
			 "there, or keep its tensors in bfloat16/float16.%s",
			 w, !strcmp(kind, "op") ? " Set with_stack or record with the Python agent to see the Python line." : "");
		isc_fnd_suggest(c, o, f, -1, act, "the site's tensors in a 2-byte dtype instead of float32 (assumed)",
				"%s held %.1f GiB of the %.1f GiB live at the peak; half of it is %.1f GiB.", w,
				bytes / 1073741824, peak / 1073741824, bytes / 2 / 1073741824);
		isc_fnd_saving_bytes(o, f, bytes / 2);
	}
}

const struct rule isc_rule_gpu_memory_peak_site = { "gpu_memory_peak_site", eval };
