/*
 * rule_gpu_memory_fragmentation.c - gpu_memory_fragmentation: PyTorch's
 * caching allocator reserved far more device memory than tensors used.
 *
 * Input, per device: the allocator's own totals over the trace
 * (gpu.devices[].memory.allocator: the highest Kineto "Total Reserved" and
 * "Total Allocated"), where any device has them; else the marks
 * torch.cuda.max_memory_reserved and torch.cuda.max_memory_allocated the
 * Python agent records at exit (the current device, when torch
 * initialized CUDA).
 * Trigger: reserved >= 1.25 x allocated and reserved - allocated >=
 * 256 MiB.  Ours: PyTorch documents max_split_size_mb and
 * expandable_segments for "fragmentation" without a number; a quarter
 * more than needed, and at least 256 MiB, is memory another batch could
 * use.  Severity info (warning when the gap is >= 10 % of the device).
 * Saving (estimated_saving_bytes): reserved - allocated, an upper bound.
 */
#include "rules.h"

#define RATIO 1.25
#define MIN_GAP (256.0 * 1048576)

/* One finding when res (reserved) is far above alloc; dev the device (NULL: the marks' current device). */
static void judge(const struct rule_ctx *c, struct rule_out *o, double res, double alloc, const cJSON *dev)
{
	double gap = res - alloc, total = dev ? isc_doc_num(dev, "memory_total_bytes", 0) : 0;
	if (alloc <= 0 || res < RATIO * alloc || gap < MIN_GAP)
		return;
	cJSON *f;
	if (dev)
		f = isc_fnd_new(o, "gpu_memory_fragmentation", total > 0 && gap >= 0.1 * total ? "warning" : "info",
				c->quality,
				"PyTorch reserved %.1f GiB of GPU %.0f's memory for %.1f GiB of tensors at most (%.1fx)",
				res / 1073741824, isc_doc_num(dev, "id", 0), alloc / 1073741824, res / alloc);
	else
		f = isc_fnd_new(o, "gpu_memory_fragmentation", total > 0 && gap >= 0.1 * total ? "warning" : "info",
				c->quality,
				"PyTorch reserved %.1f GiB of device memory for %.1f GiB of tensors at most (%.1fx)",
				res / 1073741824, alloc / 1073741824, res / alloc);
	if (dev)
		isc_fnd_metric(o, f, "device", isc_doc_num(dev, "id", 0));
	isc_fnd_metric(o, f, "max_memory_reserved_bytes", res);
	isc_fnd_metric(o, f, "max_memory_allocated_bytes", alloc);
	isc_fnd_metric(o, f, "unused_reserved_bytes", gap);
	isc_fnd_suggest(c, o, f, -1,
			"Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (PyTorch 2.1+; segments grow instead of "
			"splitting), or max_split_size_mb:128 so large blocks are not split for small tensors; "
			"garbage_collection_threshold:0.8 returns unused blocks earlier. Allocate the largest tensors "
			"first and reuse buffers of one size.",
			"the reserved memory no tensor used, freed", "%.1f GiB reserved was never used by tensors at once.",
			gap / 1073741824);
	isc_fnd_saving_bytes(o, f, gap);
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *d;
	bool any = false;
	cJSON_ArrayForEach(d, isc_doc_arr(c->doc, "gpu.devices")) {
		double res, alloc;
		if (!isc_doc_have(d, "memory.allocator.reserved_peak_bytes", &res) ||
		    !isc_doc_have(d, "memory.allocator.allocated_peak_bytes", &alloc))
			continue;
		any = true;
		judge(c, o, res, alloc, d);
	}
	double res, alloc;
	if (!any && isc_rmark(c->doc, "torch.cuda.max_memory_reserved", &res) &&
	    isc_rmark(c->doc, "torch.cuda.max_memory_allocated", &alloc))
		judge(c, o, res, alloc, c->dev);
}

const struct rule isc_rule_gpu_memory_fragmentation = { "gpu_memory_fragmentation", eval };
