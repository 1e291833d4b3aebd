/*
 * rule_gpu_memory_high.c - gpu_memory_high: device memory above 90 %.
 *
 * Trigger: a device's peak memory (gpu.devices[].memory_peak_bytes, from
 * allocation records or NVML; else gpu.nvml[].mem_used_max_bytes) >= 90 %
 * of its total.  Severity warning (critical from 98 %): near the limit the
 * caching allocator frees and retries (cudaFree synchronises) and the next
 * larger input fails with out-of-memory.  90 % is the common alerting
 * threshold of GPU dashboards (DCGM exporter examples).
 * What-if: none computed.
 */
#include <stdio.h>

#include "rules.h"

#define TRIGGER_PCT 90

static void one(const struct rule_ctx *c, struct rule_out *o, double dev, double peak, double total)
{
	double p = isc_rpct(peak, total);
	if (total <= 0 || p < TRIGGER_PCT)
		return;
	cJSON *f = isc_fnd_new(o, "gpu_memory_high", p >= 98 ? "critical" : "warning", c->quality,
			   "GPU %.0f memory peaked at %.0f %% of its %.1f GiB", dev, p, total / 1073741824);
	isc_fnd_metric(o, f, "device", dev);
	isc_fnd_metric(o, f, "memory_peak_bytes", peak);
	isc_fnd_metric(o, f, "memory_total_bytes", total);
	isc_fnd_metric(o, f, "memory_peak_pct", p);
	isc_fnd_suggest(c, o, f, -1,
		    "Leave headroom: smaller batches or sequence buckets, bfloat16 weights and activations, "
		    "torch.inference_mode(), free caches between phases; check torch.cuda.memory_summary().",
		    NULL, "At %.0f %% the caching allocator starts freeing and retrying, and a larger input runs out of memory.", p);
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *d;
	bool any = false;
	cJSON_ArrayForEach(d, isc_doc_arr(c->doc, "gpu.devices")) {
		double peak, total;
		if (isc_doc_have(d, "memory_peak_bytes", &peak) && isc_doc_have(d, "memory_total_bytes", &total)) {
			one(c, o, isc_doc_num(d, "id", 0), peak, total);
			any = true;
		}
	}
	if (any)
		return;
	cJSON_ArrayForEach(d, isc_doc_arr(c->doc, "gpu.nvml"))
		one(c, o, isc_doc_num(d, "device", 0), isc_doc_num(d, "mem_used_max_bytes", 0), isc_doc_num(d, "mem_total_bytes", 0));
}

const struct rule isc_rule_gpu_memory_high = { "gpu_memory_high", eval };
