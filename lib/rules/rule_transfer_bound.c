/*
 * rule_transfer_bound.c - transfer_bound: copies between host and device
 * take the GPU's time.
 *
 * Trigger: memcpy time (gpu.memcpy[].total_ns summed, capped at the GPU's
 * non-compute busy time) >= 10 % of the GPU span, or pageable copies whose
 * pinned what-if saves >= 5 % of it.  Severity critical from 30 %.
 * Verdict share: the memcpy share.
 * Evidence: each copy kind with direction and host memory kind, bytes,
 * achieved bandwidth against the link (gpu.devices[].link_bw_bytes_per_s),
 * and the call site launching most bytes (memcpy[].top_call_site).
 * What-if: pageable copies at pinned bandwidth.  Pinned bandwidth = the best
 * pinned copy of the same direction in this run; else 80 % of the link
 * bandwidth (PCIe sustains ~80 % of its raw rate); else 80 % of PCIe 3.0
 * x16 (15.75 GB/s raw), the slowest link a CUDA GPU of this decade has.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_PCT 10
#define PINNED_GAIN_PCT 5
#define LINK_EFFICIENCY 0.8
#define PCIE3_X16 15.75e9

static double pinned_bw(const struct rule_ctx *c, const char *dir)
{
	const cJSON *m;
	double best = 0;
	cJSON_ArrayForEach(m, isc_doc_arr(c->doc, "gpu.memcpy")) {
		double bw = isc_doc_num(m, "bandwidth_gb_per_s", 0) * 1e9;
		if (!strcmp(isc_doc_str(m, "direction", ""), dir) &&
		    (!strcmp(isc_doc_str(m, "src_memory", ""), "pinned") || !strcmp(isc_doc_str(m, "dst_memory", ""), "pinned")) && bw > best)
			best = bw;
	}
	if (best > 0)
		return best;
	double link = isc_doc_num(c->dev, "link_bw_bytes_per_s", 0);
	return LINK_EFFICIENCY * (link > 0 ? link : PCIE3_X16);
}

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *m;
	double total = 0, saving = 0, pageable = 0;
	if (!c->dev || c->g.span <= 0)
		return;
	cJSON_ArrayForEach(m, isc_doc_arr(c->doc, "gpu.memcpy")) {
		double t = isc_doc_num(m, "total_ns", 0), bytes = isc_doc_num(m, "bytes", 0);
		total += t;
		if (!strcmp(isc_doc_str(m, "src_memory", ""), "pageable") || !strcmp(isc_doc_str(m, "dst_memory", ""), "pageable")) {
			double ideal = bytes / pinned_bw(c, isc_doc_str(m, "direction", "")) * 1e9;
			pageable += t;
			if (t > ideal)
				saving += t - ideal;
		}
	}
	double non_compute = c->g.busy - c->g.compute;
	if (total > non_compute && non_compute > 0)
		total = non_compute;
	double share = isc_rpct(total, c->g.span);
	if (share < TRIGGER_PCT && isc_rpct(saving, c->g.span) < PINNED_GAIN_PCT)
		return;
	cJSON *f = isc_fnd_new(o, "transfer_bound", share >= 30 ? "critical" : "warning", share / 100 * c->quality,
			   "Copies take %.0f %% of the GPU span%s", share,
			   pageable > 0 ? ", much of it from pageable host memory" : "");
	isc_fnd_metric(o, f, "memcpy_pct", share);
	isc_fnd_metric(o, f, "memcpy_ns", total);
	isc_fnd_metric(o, f, "pageable_memcpy_ns", pageable);
	if (isc_doc_num(c->dev, "link_bw_bytes_per_s", 0) > 0)
		isc_fnd_metric(o, f, "link_bw_gb_per_s", isc_doc_num(c->dev, "link_bw_bytes_per_s", 0) / 1e9);
	cJSON_ArrayForEach(m, isc_doc_arr(c->doc, "gpu.memcpy")) {
		char name[160];
		snprintf(name, sizeof(name), "%s %s (%s -> %s)", isc_doc_str(m, "kind", "memcpy"), isc_doc_str(m, "direction", "?"),
			 isc_doc_str(m, "src_memory", "?"), isc_doc_str(m, "dst_memory", "?"));
		const cJSON *site = isc_doc_get(m, "top_call_site"), *py = isc_doc_get(site, "python");
		cJSON *t = isc_fnd_top(o, f, cJSON_IsObject(py) ? py : NULL, name, "memcpy", isc_doc_num(m, "total_ns", 0),
				   isc_rpct(isc_doc_num(m, "total_ns", 0), c->g.span));
		isc_fnd_detail(o, t, "%.0f copies, %.1f MB, %.2f GB/s achieved%s%s", isc_doc_num(m, "count", 0),
			   isc_doc_num(m, "bytes", 0) / 1e6, isc_doc_num(m, "bandwidth_gb_per_s", 0), cJSON_IsObject(py) ? "; " : "",
			   cJSON_IsObject(py) ? name : "");
	}
	isc_fnd_suggest(c, o, f, saving,
		    "Copy from pinned memory and overlap: allocate host tensors with pin_memory=True (or "
		    "DataLoader(pin_memory=True)), call .to(device, non_blocking=True), keep tensors on the GPU between "
		    "steps, and copy fewer bytes (smaller dtypes, do preprocessing on the GPU).",
		    "pageable copies at the pinned bandwidth of this run, or 80 % of the link",
		    "Pageable copies are staged through a driver buffer at a fraction of the link bandwidth; they took "
		    "%.1f ms.", pageable / 1e6);
	isc_fnd_candidate(o, f, "transfer_bound", share, c->quality);
}

const struct rule isc_rule_transfer_bound = { "transfer_bound", eval };
