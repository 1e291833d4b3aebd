/*
 * rule_gpu_memory_leak.c - gpu_memory_leak: device memory allocated at one
 * site survives iterations and grows.
 *
 * Trigger: gpu.devices[].memory.leak_candidates[0] grew >= 8 MiB over the
 * steady-state iterations (the allocation site model's leak test, the
 * device sites of memory.sites: a floor that grew at least once in every 2
 * iterations, over at least 3).  8 MiB is ours: above the
 * caching allocator's rounding of small blocks (2 MiB segments, 512-byte
 * blocks) repeated a few times.  Severity warning.
 * Evidence: the candidates (Memory: the bytes each retained, growth_bytes;
 * Share: of what the candidates retained together; Detail: bytes per
 * iteration); how many more iterations the headroom lasts at that rate.
 * Saving (estimated_saving_bytes): the growth seen.  No time saving.
 */
#include <stdio.h>

#include "rules.h"

#define MIN_GROWTH (8.0 * 1048576)

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *d, *x;
	cJSON_ArrayForEach(d, isc_doc_arr(c->doc, "gpu.devices")) {
		const cJSON *top = cJSON_GetArrayItem(isc_doc_arr(d, "memory.leak_candidates"), 0);
		double growth = isc_doc_num(top, "growth_bytes", 0), per = isc_doc_num(top, "bytes_per_iteration", 0), room;
		if (!top || growth < MIN_GROWTH)
			continue;
		char w[600], when[200] = "";
		isc_doc_where(w, sizeof(w), top);
		cJSON *f = isc_fnd_new(o, "gpu_memory_leak", "warning", c->quality,
				       "GPU %.0f memory allocated by %s grows by %.1f MiB per iteration and is never freed",
				       isc_doc_num(d, "id", 0), w, per / 1048576);
		isc_fnd_metric(o, f, "device", isc_doc_num(d, "id", 0));
		isc_fnd_metric(o, f, "growth_bytes", growth);
		isc_fnd_metric(o, f, "bytes_per_iteration", per);
		isc_fnd_metric(o, f, "iterations", isc_doc_num(top, "iterations", 0));
		double all = 0;
		cJSON_ArrayForEach(x, isc_doc_arr(d, "memory.leak_candidates"))
			all += isc_doc_num(x, "growth_bytes", 0);
		cJSON_ArrayForEach(x, isc_doc_arr(d, "memory.leak_candidates")) {
			double g = isc_doc_num(x, "growth_bytes", -1);
			cJSON *t = isc_fnd_top(o, f, x, NULL, isc_doc_str(x, "kind", "site"), -1,
					       all > 0 && g >= 0 ? 100 * g / all : -1);
			isc_fnd_bytes(o, t, g);
			isc_fnd_detail(o, t, "%.1f MiB per iteration over %.0f iterations",
				       isc_doc_num(x, "bytes_per_iteration", 0) / 1048576, isc_doc_num(x, "iterations", 0));
		}
		if (isc_doc_have(d, "memory.headroom_bytes", &room) && room > 0 && per > 0) {
			isc_fnd_metric(o, f, "iterations_until_full", room / per);
			snprintf(when, sizeof(when), " At this rate the %.1f GiB of headroom is gone after about %.0f more "
				 "iterations.", room / 1073741824, room / per);
		}
		isc_fnd_suggest(c, o, f, -1,
				"Find what keeps these tensors: outputs appended to a list, a cache keyed by input, losses or "
				"outputs kept with their autograd graph (use .item(), .detach() or torch.inference_mode()), "
				"tensors stored on self.",
				"the growth seen, freed", "%.1f MiB more stayed allocated after each of %.0f iterations.%s",
				per / 1048576, isc_doc_num(top, "iterations", 0), when);
		isc_fnd_saving_bytes(o, f, growth);
	}
}

const struct rule isc_rule_gpu_memory_leak = { "gpu_memory_leak", eval };
