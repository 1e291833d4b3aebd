/*
 * rule_memory_leak.c - memory_leak: host memory allocated at one line
 * grows in every steady-state iteration and is never freed (Stormlog's
 * leak detector, from the allocation samples: memory.sites[].leak).
 *
 * Trigger: a site with leak true (analysis: its floor of live bytes grew
 * at least once in every leak_window iterations over >= 3 steady-state
 * iterations, retained above twice its error) that retained at least
 * MIN_RETAINED.  Severity warning; critical when the projection below
 * says the memory runs out within the time the run itself lasted.
 * Evidence: every leaking site (bytes per iteration, retained, its
 * error; Share: of what the leaking sites retained), the leak's rate,
 * the projection.
 * Projection: the leaking sites' bytes per second together
 * (leak_bytes_per_s) against the room left: the memory limit
 * (memory.limit_bytes, iscope-record --memory-limit: its cgroup) less the
 * RSS peak, else the least MemAvailable the sampler saw
 * (memory.mem_available_bytes_min); time = room / rate.
 * Saving (estimated_saving_bytes): what the leaking sites retained.  No
 * time saving.
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define MIN_RETAINED (1.0 * 1048576)
#define SHOWN 5

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *x, *top = NULL;
	double rate = 0, retained = 0;
	int n = 0;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "memory.sites")) {
		if (!isc_rhost_site(x) || !cJSON_IsTrue(isc_doc_get(x, "leak")) ||
		    isc_doc_num(x, "retained_bytes", 0) < MIN_RETAINED)
			continue;
		if (!top)
			top = x; /* the sites are ranked by retained bytes */
		n++;
		rate += isc_doc_num(x, "leak_bytes_per_s", 0);
		retained += isc_doc_num(x, "retained_bytes", 0);
	}
	if (!top)
		return;
	double per = isc_doc_num(top, "leak_per_iteration_bytes", 0), its = isc_doc_num(top, "iterations", 0);
	double limit, avail, peak = isc_doc_num(c->doc, "memory.rss_peak_bytes", 0), room = -1;
	const char *of = NULL;
	if (isc_doc_have(c->doc, "memory.limit_bytes", &limit) && limit > 0) {
		room = limit > peak ? limit - peak : 0;
		of = "below the memory limit (--memory-limit) after the RSS peak";
	} else if (isc_doc_have(c->doc, "memory.mem_available_bytes_min", &avail)) {
		room = avail;
		of = "of MemAvailable at its lowest";
	}
	double secs = room >= 0 && rate > 0 ? room / rate : -1;
	char w[600], when[320] = "";
	isc_doc_where(w, sizeof(w), top);
	cJSON *f = isc_fnd_new(o, "memory_leak", secs >= 0 && secs * 1e9 <= c->wall_ns ? "critical" : "warning",
			       c->quality, "Memory leak: %s keeps %.1f MiB per iteration (%.0f iterations, growing in each)",
			       w, per / 1048576, its);
	isc_fnd_metric(o, f, "leak_per_iteration_bytes", per);
	isc_fnd_metric(o, f, "retained_bytes", isc_doc_num(top, "retained_bytes", 0));
	isc_fnd_metric(o, f, "retained_err_bytes", isc_doc_num(top, "retained_err_bytes", 0));
	isc_fnd_metric(o, f, "iterations", its);
	isc_fnd_metric(o, f, "leaking_sites", n);
	isc_fnd_metric(o, f, "leak_bytes_per_s", rate);
	if (room >= 0) {
		isc_fnd_metric(o, f, "room_bytes", room);
		isc_fnd_metric(o, f, "room_is_limit", of[0] == 'b');
	}
	if (secs >= 0) {
		isc_fnd_metric(o, f, "time_to_limit_s", secs);
		snprintf(when, sizeof(when), " At %.1f MiB/s the %.0f MiB left %s last about %.0f s.", rate / 1048576,
			 room / 1048576, of, secs);
	}
	int k = 0;
	cJSON_ArrayForEach(x, isc_doc_arr(c->doc, "memory.sites")) {
		if (k >= SHOWN || !isc_rhost_site(x) || !cJSON_IsTrue(isc_doc_get(x, "leak")) ||
		    isc_doc_num(x, "retained_bytes", 0) < MIN_RETAINED)
			continue;
		k++;
		cJSON *t = isc_fnd_top(o, f, x, NULL, !strcmp(isc_doc_str(x, "kind", ""), "python") ? "python" : "unknown", -1,
				       100 * isc_doc_num(x, "retained_bytes", 0) / retained);
		isc_fnd_bytes(o, t, isc_doc_num(x, "retained_bytes", -1));
		isc_fnd_detail(o, t, "%.1f MiB per iteration, %.1f MiB retained (± %.1f MiB)",
			       isc_doc_num(x, "leak_per_iteration_bytes", 0) / 1048576,
			       isc_doc_num(x, "retained_bytes", 0) / 1048576, isc_doc_num(x, "retained_err_bytes", 0) / 1048576);
	}
	isc_fnd_suggest(c, o, f, -1,
			"Find what keeps these objects: outputs or tensors appended to a list, a cache keyed by input "
			"(bound it: functools.lru_cache(maxsize=...)), results kept with their autograd graph (use .item(), "
			".detach() or torch.inference_mode()), objects stored on self or in a global.",
			"what the leaking sites retained, freed",
			"%.1f MiB more stayed allocated at %s after each of %.0f steady-state iterations (%.1f MiB in all, "
			"%d leaking site%s).%s",
			per / 1048576, w, its, retained / 1048576, n, n == 1 ? "" : "s", when);
	isc_fnd_saving_bytes(o, f, retained);
}

const struct rule isc_rule_memory_leak = { "memory_leak", eval };
