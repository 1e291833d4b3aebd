/*
 * rule_gpu_memory_headroom.c - gpu_memory_headroom: how much larger a
 * batch (or sequence) the device's memory would hold.
 *
 * What-if: the working set of an iteration, peak - baseline
 * (gpu.devices[].memory.peak_bytes - baseline_bytes: what stays between
 * iterations, weights and caches), scales with the batch; the usable
 * memory is 90 % of the device (the CUDA context, the caching allocator's
 * reserve and fragmentation take the rest: gpu_memory_high's threshold).
 * factor = (0.9 x total - baseline) / (peak - baseline).
 * Trigger: factor >= 1.5 (ours: a half larger batch is worth trying).
 * Evidence: the sizes, and what held the peak (memory.peak_sites; Memory:
 * each site's bytes at the peak, Share: of the peak).
 * Severity info.  Needs memory.total_bytes and baseline_bytes (two
 * iterations).  No time saving: a larger batch raises throughput only
 * where the GPU is not already busy, which the GPU rules judge.
 */
#include <math.h>
#include <string.h>

#include "rules.h"

#define USABLE 0.9
#define MIN_FACTOR 1.5

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *d;
	cJSON_ArrayForEach(d, isc_doc_arr(c->doc, "gpu.devices")) {
		double peak, total, base;
		if (!isc_doc_have(d, "memory.peak_bytes", &peak) || !isc_doc_have(d, "memory.total_bytes", &total) ||
		    !isc_doc_have(d, "memory.baseline_bytes", &base) || total <= 0 || peak <= base)
			continue;
		double factor = (USABLE * total - base) / (peak - base);
		if (!(factor >= MIN_FACTOR) || !isfinite(factor))
			continue;
		double fl = floor(factor * 10) / 10;
		cJSON *f = isc_fnd_new(o, "gpu_memory_headroom", "info", c->quality,
				       "GPU %.0f could hold about %.1fx this batch or sequence length: the peak used "
				       "%.1f of %.1f GiB",
				       isc_doc_num(d, "id", 0), fl, peak / 1073741824, total / 1073741824);
		isc_fnd_metric(o, f, "device", isc_doc_num(d, "id", 0));
		isc_fnd_metric(o, f, "peak_bytes", peak);
		isc_fnd_metric(o, f, "baseline_bytes", base);
		isc_fnd_metric(o, f, "total_bytes", total);
		isc_fnd_metric(o, f, "working_set_bytes", peak - base);
		isc_fnd_metric(o, f, "batch_factor", fl);
		const cJSON *x;
		cJSON_ArrayForEach(x, isc_doc_arr(d, "memory.peak_sites"))
			isc_fnd_bytes(o, isc_fnd_top(o, f, x, NULL, isc_doc_str(x, "kind", "site"), -1,
						     isc_doc_num(x, "pct_of_peak", -1)),
				      isc_doc_num(x, "bytes", -1));
		isc_fnd_suggest(c, o, f, -1,
				"If the GPU has idle time, try a larger batch (or longer sequences, a larger KV cache) up "
				"to the factor shown, and watch gpu_memory_high.",
				"the working set (peak - baseline) grows in proportion to the batch; 90 % of the device "
				"usable",
				"An iteration needs %.2f GiB on top of the %.2f GiB kept between iterations; 90 %% of the "
				"%.1f GiB device fits %.1f times that.%s",
				(peak - base) / 1073741824, base / 1073741824, total / 1073741824, fl,
				strcmp(isc_doc_str(d, "memory.source", ""), "allocator")
					? ""
					: " Memory allocated before the trace began (weights loaded before profiling "
					  "started) is not counted: the factor is an upper bound.");
	}
}

const struct rule isc_rule_gpu_memory_headroom = { "gpu_memory_headroom", eval };
