/*
 * rule_thermal_throttled.c - thermal_throttled: the GPU ran at reduced clocks.
 *
 * Trigger: >= 10 % of NVML samples with a throttling clock-event reason
 * (power cap, HW slowdown, SW/HW thermal, power brake: gpu.nvml[].
 * throttled_samples).  Severity critical when thermal or slowdown reasons
 * hold >= 50 % of samples, else warning.  Verdict share: the throttled
 * part of the compute time (gpu_split.c), so a busy GPU throttled most of
 * the time is thermal_throttled rather than gpu_compute_bound.
 * Evidence: samples, reasons, SM clock range, temperature, power.
 * What-if: the throttled compute at the highest SM clock seen:
 * throttled x (1 - min clock / max clock) — an upper bound (memory-bound
 * kernels do not scale with the SM clock).
 */
#include <stdio.h>
#include <string.h>

#include "rules.h"

#define TRIGGER_SHARE 0.10

static void eval(const struct rule_ctx *c, struct rule_out *o)
{
	const cJSON *n, *r;
	double samples = 0, thr = 0, lo = 0, hi = 0, temp = 0, power = 0, thermal = 0;
	cJSON_ArrayForEach(n, isc_doc_arr(c->doc, "gpu.nvml")) {
		samples += isc_doc_num(n, "samples", 0);
		thr += isc_doc_num(n, "throttled_samples", 0);
		if (isc_doc_num(n, "sm_mhz_min", 0) > 0 && (lo == 0 || isc_doc_num(n, "sm_mhz_min", 0) < lo))
			lo = isc_doc_num(n, "sm_mhz_min", 0);
		if (isc_doc_num(n, "sm_mhz_max", 0) > hi)
			hi = isc_doc_num(n, "sm_mhz_max", 0);
		if (isc_doc_num(n, "temp_c_max", 0) > temp)
			temp = isc_doc_num(n, "temp_c_max", 0);
		if (isc_doc_num(n, "power_w_max", 0) > power)
			power = isc_doc_num(n, "power_w_max", 0);
		cJSON_ArrayForEach(r, isc_doc_get(n, "throttle_reasons"))
			if (cJSON_IsNumber(r) && r->string && (strstr(r->string, "thermal") || strstr(r->string, "slowdown")))
				thermal = r->valuedouble > thermal ? r->valuedouble : thermal;
	}
	if (samples <= 0 || thr / samples < TRIGGER_SHARE)
		return;
	const struct isc_gpu_split *s = &c->split;
	double share = c->g.span > 0 ? isc_rpct(s->throttled, c->g.span) : 100 * thr / samples;
	cJSON *f = isc_fnd_new(o, "thermal_throttled", thermal / samples >= 0.5 ? "critical" : "warning",
			   thr / samples * c->quality,
			   "The GPU clocks were throttled in %.0f %% of samples (SM %.0f-%.0f MHz, up to %.0f C)",
			   100 * thr / samples, lo, hi, temp);
	isc_fnd_metric(o, f, "throttled_samples_pct", 100 * thr / samples);
	isc_fnd_metric(o, f, "sm_mhz_min", lo);
	isc_fnd_metric(o, f, "sm_mhz_max", hi);
	isc_fnd_metric(o, f, "temp_c_max", temp);
	isc_fnd_metric(o, f, "power_w_max", power);
	cJSON_ArrayForEach(n, isc_doc_arr(c->doc, "gpu.nvml"))
		cJSON_ArrayForEach(r, isc_doc_get(n, "throttle_reasons"))
			if (cJSON_IsNumber(r) && r->string && r->valuedouble > 0)
				isc_fnd_detail(o, isc_fnd_top(o, f, NULL, r->string, "gpu", -1, isc_rpct(r->valuedouble, isc_doc_num(n, "samples", 1))),
					   "GPU %.0f: %.0f samples", isc_doc_num(n, "device", 0), r->valuedouble);
	isc_fnd_suggest(c, o, f, hi > 0 && lo > 0 ? s->throttled * (1 - lo / hi) : -1,
		    "Check cooling and power: airflow, fan curves, the power limit (nvidia-smi -q -d PERFORMANCE,POWER), "
		    "other jobs on the GPU; cap clocks (nvidia-smi -lgc) for steady latency.",
		    "the throttled compute at the highest SM clock seen (upper bound)",
		    "The SM clock dropped to %.0f MHz from %.0f MHz while the GPU computed.", lo, hi);
	isc_fnd_candidate(o, f, "thermal_throttled", share, c->quality);
}

const struct rule isc_rule_thermal_throttled = { "thermal_throttled", eval };
